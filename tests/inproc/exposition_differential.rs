//! Differential test: our exposition parser against `prometheus-parse` 0.2.5.
//!
//! On *simple* valid expositions (names without `:`, label values without
//! `{ } , = " \` or newlines, no blanks inside braces, no empty `{}`, no
//! histogram or summary types) both parsers must agree on every
//! (name, labels, value). Outside that family they legitimately differ, and
//! each difference has its own test below. Most are `prometheus-parse`
//! dropping or mangling valid data without an error, which is why the
//! governor has its own parser:
//! - a label value with `{` or `}`, an empty label set `a{} 1`, or a metric
//!   name with `:` → the sample is dropped;
//! - a label value with `,` or `=` → that label is dropped;
//! - blanks inside braces → the label keeps the blanks and quotes in its
//!   name and value, so no selector on it matches;
//! - escaped quotes → not decoded;
//! - a value that is not a number, or trailing junk → skipped or ignored
//!   (ours fails the scrape with the line number);
//! - binary garbage → `Ok` with zero samples (ours: an error).
//!
//! The rest are modelling choices: `prometheus-parse` folds histogram and
//! summary series into one sample per series, and ours keeps every line as a
//! flat sample. Both keep an OpenMetrics `_created` series as its own sample.

use std::collections::BTreeMap;

use proptest::prelude::*;
use throttle_governor::promtext::exposition::{self, Limits, Sample};

/// A sample reduced to what both parsers report: name, sorted labels, value
/// bits (every NaN folded into one).
type Key = (String, Vec<(String, String)>, u64);

fn value_key(value: f64) -> u64 {
    if value.is_nan() {
        f64::NAN.to_bits()
    } else {
        value.to_bits()
    }
}

fn ours(text: &str) -> Result<Vec<Key>, exposition::ExpositionError> {
    let mut keys: Vec<Key> = exposition::parse(text, &Limits::default())?
        .into_iter()
        .map(
            |Sample {
                 name,
                 mut labels,
                 value,
             }| {
                labels.sort();
                (name, labels, value_key(value))
            },
        )
        .collect();
    keys.sort();
    Ok(keys)
}

fn theirs(text: &str) -> Vec<Key> {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|line| Ok(line.to_owned())))
        .expect("prometheus-parse only fails on I/O errors");
    let mut keys: Vec<Key> = scrape
        .samples
        .into_iter()
        .map(|sample| {
            let value = match sample.value {
                prometheus_parse::Value::Counter(v)
                | prometheus_parse::Value::Gauge(v)
                | prometheus_parse::Value::Untyped(v) => v,
                other => panic!("the simple family has no histograms: {other:?}"),
            };
            let mut labels: Vec<(String, String)> = sample
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            labels.sort();
            (sample.metric, labels, value_key(value))
        })
        .collect();
    keys.sort();
    keys
}

fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => (0u64..1_000_000_000).prop_map(|v| v as f64),
        2 => any::<f64>().prop_filter("finite", |v| v.is_finite()),
        1 => -1e6f64..1e6,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
    ]
}

/// Label pairs with unique names and values outside the known-drop set.
fn simple_labels() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::btree_map(
        "[a-z_][a-z0-9_]{0,8}".prop_filter("reserved", |k| k != "__name__"),
        "[a-zA-Z0-9 _./:;!?@%+|*^~-]{0,12}",
        0..5,
    )
    .prop_map(|labels: BTreeMap<String, String>| labels.into_iter().collect())
}

/// One metric family: optional HELP and TYPE, then its samples.
fn family() -> impl Strategy<Value = (String, Option<&'static str>, Vec<Sample>, bool)> {
    (
        "[a-z_][a-z0-9_]{0,12}",
        prop::option::of(prop::sample::select(vec!["counter", "gauge", "untyped"])),
        prop::collection::vec((simple_labels(), value()), 1..5),
        any::<bool>(),
    )
        .prop_map(|(name, kind, series, help)| {
            let samples = series
                .into_iter()
                .map(|(labels, value)| Sample {
                    name: name.clone(),
                    labels,
                    value,
                })
                .collect();
            (name, kind, samples, help)
        })
}

fn simple_exposition() -> impl Strategy<Value = String> {
    (
        prop::collection::vec(family(), 1..6),
        any::<bool>(),
        prop::option::of(1_500_000_000_000i64..1_800_000_000_000),
    )
        .prop_map(|(families, crlf, timestamp)| {
            let eol = if crlf { "\r\n" } else { "\n" };
            let mut text = String::new();
            for (name, kind, samples, help) in families {
                if help {
                    text.push_str(&format!("# HELP {name} Some help text.{eol}"));
                }
                if let Some(kind) = kind {
                    text.push_str(&format!("# TYPE {name} {kind}{eol}"));
                }
                for sample in samples {
                    text.push_str(&sample.to_string());
                    if let Some(ts) = timestamp {
                        text.push_str(&format!(" {ts}"));
                    }
                    text.push_str(eol);
                }
                text.push_str(eol);
            }
            text
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// On the simple family both parsers see exactly the same samples.
    #[test]
    fn agrees_with_prometheus_parse_on_simple_expositions(text in simple_exposition()) {
        let ours = ours(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(&ours, &theirs(&text), "{}", text);
        // Every sample line became a sample: nothing dropped.
        let sample_lines = text
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
            .count();
        prop_assert_eq!(ours.len(), sample_lines);
    }
}

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// The reason this parser exists: `prometheus-parse` drops a failure sample
/// whose route label is templated, so the failure fraction is undercounted.
#[test]
fn templated_route_is_dropped_by_prometheus_parse_and_kept_by_ours() {
    let text = "# TYPE reqs counter\n\
                reqs{op=\"read\",result=\"success\",route=\"/health\"} 90\n\
                reqs{op=\"read\",result=\"failure\",route=\"/users/{id}\"} 10\n";
    let theirs = theirs(text);
    assert_eq!(theirs.len(), 1, "prometheus-parse kept {theirs:?}");
    assert_eq!(
        theirs[0].1,
        labels(&[("op", "read"), ("result", "success"), ("route", "/health")])
    );

    let ours = ours(text).unwrap();
    assert_eq!(ours.len(), 2);
    assert_eq!(
        ours[0].1,
        labels(&[
            ("op", "read"),
            ("result", "failure"),
            ("route", "/users/{id}")
        ])
    );
    assert_eq!(f64::from_bits(ours[0].2), 10.0);
}

/// PROMETHEUS-PARSE.md lists this as dropped; 0.2.5 actually keeps the
/// sample with the blanks and quotes inside the label, so a selector on
/// `op="read"` still never matches it.
#[test]
fn blanks_inside_braces_mangle_the_label_in_prometheus_parse() {
    let text = "a{ op = \"read\" } 10\n";
    assert_eq!(theirs(text)[0].1, labels(&[(" op ", " \"read\" ")]));
    assert_eq!(ours(text).unwrap()[0].1, labels(&[("op", "read")]));
}

#[test]
fn empty_braces_and_colon_names_are_dropped_by_prometheus_parse() {
    for text in ["a{} 1\n", "job:reqs:rate5m 1\n"] {
        assert!(theirs(text).is_empty(), "{text}");
        assert_eq!(ours(text).unwrap().len(), 1, "{text}");
    }
}

#[test]
fn commas_and_equals_in_values_lose_labels_in_prometheus_parse() {
    let text = "a{route=\"/x?ids=1,2\",op=\"read\",result=\"failure\"} 10\n\
                b{op=\"read\",q=\"a=b\"} 10\n";
    let theirs = theirs(text);
    assert_eq!(
        theirs[0].1,
        labels(&[("op", "read"), ("result", "failure")])
    );
    assert_eq!(theirs[1].1, labels(&[("op", "read")]));

    let ours = ours(text).unwrap();
    assert_eq!(
        ours[0].1,
        labels(&[
            ("op", "read"),
            ("result", "failure"),
            ("route", "/x?ids=1,2")
        ])
    );
    assert_eq!(ours[1].1, labels(&[("op", "read"), ("q", "a=b")]));
}

#[test]
fn escapes_are_decoded_only_by_ours() {
    let text = "a{msg=\"say \\\"hi\\\"\"} 10\n";
    assert_eq!(theirs(text)[0].1, labels(&[("msg", "say \\\"hi\\")]));
    assert_eq!(ours(text).unwrap()[0].1, labels(&[("msg", "say \"hi\"")]));
}

#[test]
fn binary_garbage_is_ok_for_prometheus_parse_and_an_error_for_ours() {
    let text = String::from_utf8_lossy(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe");
    assert!(theirs(&text).is_empty());
    assert_eq!(ours(&text).unwrap_err().error_type(), "parse");
    assert_eq!(ours("").unwrap_err().error_type(), "no_samples");
}

#[test]
fn bad_values_and_trailing_junk_are_silent_in_prometheus_parse() {
    // An unparsable value: silently skipped there, an error here.
    let text = "a 1\nb twelve\n";
    assert_eq!(theirs(text).len(), 1);
    let error = ours(text).unwrap_err().to_string();
    assert!(
        error.starts_with("line 2, column 3: invalid sample value `twelve`"),
        "{error}"
    );
    // Trailing junk: ignored there, an error here.
    let text = "a 1 1000 junk\n";
    assert_eq!(theirs(text).len(), 1);
    assert!(ours(text).is_err());
}

/// Not a drop: both keep `_created` as a sample of its own. A selector on the
/// exact name `f_total` never sums it.
#[test]
fn openmetrics_created_is_its_own_sample_in_both() {
    let text = "# TYPE f counter\n# UNIT f requests\nf_total 17.0\nf_created 1.7e9\n# EOF\n";
    assert_eq!(ours(text).unwrap(), theirs(text));
    assert_eq!(ours(text).unwrap().len(), 2);
}

/// A modelling difference: histogram buckets stay flat samples here.
#[test]
fn histograms_stay_flat_in_ours() {
    let text = "# TYPE h histogram\n\
                h_bucket{le=\"0.1\"} 1\nh_bucket{le=\"+Inf\"} 3\nh_sum 0.7\nh_count 3\n";
    let scrape =
        prometheus_parse::Scrape::parse(text.lines().map(|line| Ok(line.to_owned()))).unwrap();
    assert_eq!(scrape.samples.len(), 3, "sum, count and one histogram");
    let ours = exposition::parse(text, &Limits::default()).unwrap();
    assert_eq!(ours.len(), 4);
    assert_eq!(ours[1].label("le"), Some("+Inf"));
}
