//! Property tests for the exposition parser and selectors.
//!
//! - Round trip: any samples (any name, any label names and values including
//!   quotes, backslashes, newlines, braces, control characters and unicode,
//!   any `f64`) rendered as valid exposition text, in several layouts, parse
//!   back to exactly the same samples.
//! - Fuzz: arbitrary strings, arbitrary bytes (lossy UTF-8) and mutated valid
//!   expositions never panic, and whenever the parse succeeds, every line
//!   that is not blank and not a comment became exactly one sample.
//! - Selectors: a selector written for any series matches it after the round
//!   trip through exposition text, and its `Display` form parses back to it.

use std::collections::HashSet;

use proptest::prelude::*;
use throttle_governor::promtext::exposition::{
    self, for_each_sample, is_label_name, is_metric_name, Limits, Sample,
};
use throttle_governor::promtext::selector::{sum_many, Selector};

/// Characters that stress the grammar, mixed into generated strings.
const TRICKY: &[char] = &[
    '"', '\\', '\n', '\r', '\t', ' ', '{', '}', ',', '=', '#', '\'', '`', 'n', 'a', 'é', '🚦',
    '\u{0}', '\u{7f}', '\u{2028}',
];

fn tricky_string(max: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(prop::sample::select(TRICKY), 0..max)
            .prop_map(|chars| chars.into_iter().collect::<String>()),
        any::<String>(),
        "[a-zA-Z0-9_/.:-]{0,12}",
    ]
}

fn metric_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z_:][a-zA-Z0-9_:]{0,15}",
        1 => tricky_string(10).prop_filter("non-empty", |s| !s.is_empty()),
    ]
}

fn label_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-zA-Z_][a-zA-Z0-9_]{0,10}",
        1 => tricky_string(8).prop_filter("non-empty", |s| !s.is_empty()),
    ]
    .prop_filter("reserved", |name| name != "__name__")
}

fn labels() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((label_name(), tricky_string(16)), 0..6).prop_map(|pairs| {
        let mut seen = HashSet::new();
        pairs
            .into_iter()
            .filter(|(name, _)| seen.insert(name.clone()))
            .collect()
    })
}

fn sample() -> impl Strategy<Value = Sample> {
    (metric_name(), labels(), any::<f64>()).prop_map(|(name, labels, value)| Sample {
        name,
        labels,
        value,
    })
}

/// Optional layout features, all valid per the format.
#[derive(Debug, Clone)]
struct Layout {
    blanks: &'static str,
    trailing_comma: bool,
    crlf: bool,
    comments: bool,
    timestamp: Option<i64>,
    exemplar: bool,
    eof: bool,
}

fn layout() -> impl Strategy<Value = Layout> {
    (
        prop::sample::select(vec!["", " ", "\t", "  "]),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(any::<i64>()),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(blanks, trailing_comma, crlf, comments, timestamp, exemplar, eof)| Layout {
                blanks,
                trailing_comma,
                crlf,
                comments,
                timestamp,
                exemplar,
                eof,
            },
        )
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn value_text(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value == f64::INFINITY {
        "+Inf".into()
    } else if value == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{value:?}")
    }
}

/// Renders samples with an independent writer in the given layout.
fn render(samples: &[Sample], layout: &Layout) -> String {
    let b = layout.blanks;
    let eol = if layout.crlf { "\r\n" } else { "\n" };
    let mut text = String::new();
    for sample in samples {
        if layout.comments {
            text.push_str(&format!("# HELP x {{}} \"quoted\" {}{eol}{eol}", b));
        }
        let mut items: Vec<String> = sample
            .labels
            .iter()
            .map(|(name, value)| {
                let name = if is_label_name(name) {
                    name.clone()
                } else {
                    quote(name)
                };
                format!("{name}{b}={b}{}", quote(value))
            })
            .collect();
        text.push_str(b);
        if is_metric_name(&sample.name) {
            text.push_str(&sample.name);
        } else {
            items.insert(0, quote(&sample.name));
        }
        if !items.is_empty() || !is_metric_name(&sample.name) {
            text.push('{');
            text.push_str(b);
            text.push_str(&items.join(&format!("{b},{b}")));
            if layout.trailing_comma && !items.is_empty() {
                text.push(',');
            }
            text.push_str(b);
            text.push('}');
        }
        text.push(' ');
        text.push_str(b);
        text.push_str(&value_text(sample.value));
        if let Some(ts) = layout.timestamp {
            text.push_str(&format!(" {b}{ts}"));
        }
        if layout.exemplar {
            text.push_str(&format!(" # {{trace_id={}}} 0.5", quote("a{b}\"c")));
        }
        text.push_str(b);
        text.push_str(eol);
    }
    if layout.eof {
        text.push_str("# EOF");
        text.push_str(eol);
    }
    text
}

fn same_samples(got: &[Sample], want: &[Sample]) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len());
    for (got, want) in got.iter().zip(want) {
        prop_assert_eq!(&got.name, &want.name);
        prop_assert_eq!(&got.labels, &want.labels);
        if want.value.is_nan() {
            prop_assert!(got.value.is_nan());
        } else {
            prop_assert_eq!(got.value.to_bits(), want.value.to_bits());
        }
    }
    Ok(())
}

/// How many samples a successful parse must report: one per line that is not
/// blank and not a `#` comment (after a leading byte order mark).
fn sample_lines(text: &str) -> usize {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
        .map(|line| line.trim_matches([' ', '\t']))
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .count()
}

/// Parses without panicking; on success nothing may have been dropped.
fn check_no_panic_no_drop(text: &str) -> Result<(), TestCaseError> {
    let limits = Limits::default();
    let parsed = exposition::parse(text, &limits);
    let mut streamed = 0usize;
    let counted = for_each_sample(text, &limits, |_| streamed += 1);
    if let Ok(samples) = &parsed {
        prop_assert_eq!(
            samples.len(),
            sample_lines(text),
            "dropped a sample in {:?}",
            text
        );
        prop_assert_eq!(counted.as_ref().ok(), Some(&samples.len()));
        prop_assert_eq!(streamed, samples.len());
    } else {
        prop_assert!(counted.is_err());
        let error = parsed.unwrap_err();
        prop_assert!(
            !error.to_string().contains('\n'),
            "multi-line error {}",
            error
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn display_round_trips(samples in prop::collection::vec(sample(), 1..8)) {
        let text: String = samples.iter().map(|s| format!("{s}\n")).collect();
        let parsed = exposition::parse(&text, &Limits::default())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text:?}")))?;
        same_samples(&parsed, &samples)?;
    }

    #[test]
    fn every_layout_round_trips(
        samples in prop::collection::vec(sample(), 1..8),
        layout in layout(),
    ) {
        let text = render(&samples, &layout);
        let parsed = exposition::parse(&text, &Limits::default())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text:?}")))?;
        same_samples(&parsed, &samples)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>()) {
        check_no_panic_no_drop(&text)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check_no_panic_no_drop(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn grammar_soup_never_panics(
        pieces in prop::collection::vec(
            prop::sample::select(vec![
                "a", "b_c", ":", "{", "}", "\"", "\\", "=", ",", " ", "\t", "\n", "\r\n", "#",
                "# EOF", "1", "-2.5e3", "NaN", "+Inf", "é", "🚦", "\\n", "\\\"", "x=\"y\"",
                "\na 1\n", "\nc{d=\"e\"} 3\n", "\n# c\n", "\u{feff}",
            ]),
            0..64,
        ),
    ) {
        check_no_panic_no_drop(&pieces.concat())?;
    }

    #[test]
    fn mutated_expositions_never_panic(
        samples in prop::collection::vec(sample(), 1..5),
        layout in layout(),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), 0u8..3, prop::sample::select(TRICKY)),
            1..6,
        ),
    ) {
        let mut chars: Vec<char> = render(&samples, &layout).chars().collect();
        for (at, kind, c) in edits {
            let i = at.index(chars.len() + 1);
            match kind {
                0 => chars.insert(i, c),
                1 if i < chars.len() => {
                    chars.remove(i);
                }
                _ => {
                    let end = (i + 8).min(chars.len());
                    let chunk: Vec<char> = chars[i..end].to_vec();
                    chars.splice(i..i, chunk);
                }
            }
        }
        check_no_panic_no_drop(&chars.into_iter().collect::<String>())?;
    }
}

/// A PromQL string literal for `s` (double quotes, Go escapes).
fn promql_string(s: &str) -> String {
    quote(s)
}

fn selector_for(sample: &Sample, ops: &[u8]) -> String {
    let mut items = vec![promql_string(&sample.name)];
    for ((name, value), op) in sample.labels.iter().zip(ops.iter().cycle()) {
        let name = if is_label_name(name) {
            name.clone()
        } else {
            promql_string(name)
        };
        items.push(match op % 3 {
            0 => format!("{name}={}", promql_string(value)),
            1 => format!("{name}=~{}", promql_string(&regex::escape(value))),
            _ => format!("{name}!={}", promql_string(&format!("{value}x"))),
        });
    }
    format!("{{{}}}", items.join(", "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn selectors_match_round_tripped_series(
        sample in sample(),
        ops in prop::collection::vec(any::<u8>(), 1..6),
    ) {
        let text = format!("{sample}\n");
        let source = selector_for(&sample, &ops);
        let selector: Selector = source
            .parse()
            .map_err(|e| TestCaseError::fail(format!("{e}\n{source}")))?;
        let sums = sum_many(&text, &[&selector], &Limits::default())
            .map_err(|e| TestCaseError::fail(format!("{e}")))?;
        prop_assert!(sums[0].is_some(), "{} did not match {}", source, text);

        // Display is canonical and parses back to the same selector.
        let canonical = selector.to_string();
        let reparsed: Selector = canonical
            .parse()
            .map_err(|e| TestCaseError::fail(format!("{e}\n{canonical}")))?;
        prop_assert_eq!(&reparsed, &selector);
        prop_assert_eq!(reparsed.to_string(), canonical);

        // Changing one wanted value makes it miss.
        if let Some((name, value)) = sample.labels.first() {
            let mut other = sample.clone();
            other.labels[0] = (name.clone(), format!("{value}-other"));
            let miss = selector_for(&other, &[0]).parse::<Selector>().unwrap();
            prop_assert_eq!(miss.sum(std::slice::from_ref(&sample)), None);
        }
    }

    #[test]
    fn selector_parser_never_panics(src in any::<String>()) {
        let _ = src.parse::<Selector>();
    }

    #[test]
    fn selector_soup_never_panics(
        pieces in prop::collection::vec(
            prop::sample::select(vec![
                "a", "{", "}", "\"", "'", "`", "\\", "=", "!=", "=~", "!~", ",", " ", "\n",
                "#", "__name__", "\\x", "\\u", "\\U", "\\0", "ff", "7", "(", "[5m]", "é",
            ]),
            0..40,
        ),
    ) {
        let _ = pieces.concat().parse::<Selector>();
    }
}
