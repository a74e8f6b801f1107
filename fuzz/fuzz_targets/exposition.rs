//! The exposition parser against the streaming selector sum, and the
//! `Display` round trip of every parsed sample.
//!
//! Why it exists: every scrape of a tool's `/metrics` goes through this
//! parser; a panic would stop a target, and a disagreement between the two
//! passes would be a wrong failure fraction.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use throttle_governor::promtext::exposition::{self, Limits, Sample};
use throttle_governor::promtext::selector::{sum_many, Selector};

// Compiled once, not per input.
static ALL: LazyLock<Selector> = LazyLock::new(|| "{__name__=~\".+\"}".parse().unwrap());
static FAILURES: LazyLock<Selector> =
    LazyLock::new(|| "a_total{result=\"failure\"}".parse().unwrap());

const LIMITS: Limits = Limits {
    max_samples: 10_000,
};

fn same_value(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

fn same_sample(a: &Sample, b: &Sample) -> bool {
    a.name == b.name && a.labels == b.labels && same_value(a.value, b.value)
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = exposition::parse(text, &LIMITS);
    let sums = sum_many(text, &[&FAILURES, &ALL], &LIMITS);
    match (&parsed, &sums) {
        (Ok(samples), Ok(s)) => {
            let total: f64 = samples.iter().map(|x| x.value).sum();
            // sum_many keeps one sample per series (the first, or the latest
            // timestamp), so the plain total only compares without repeats.
            let mut series = std::collections::HashSet::new();
            let repeats = !samples.iter().all(|x| {
                let mut labels = x.labels.clone();
                labels.sort();
                series.insert((x.name.clone(), labels))
            });
            match s[1] {
                Some(_) if repeats => {}
                Some(v) => assert!(
                    same_value(v, total) || (v - total).abs() <= 1e-9 * total.abs().max(1.0),
                    "sum_many {v} != parse {total}"
                ),
                None => assert!(
                    samples.is_empty(),
                    "sum_many saw nothing, parse saw samples"
                ),
            }
            for sample in samples {
                let line = sample.to_string();
                let again = exposition::parse(&line, &LIMITS).unwrap_or_else(|e| {
                    panic!("Display of {sample:?} ({line:?}) does not parse: {e}")
                });
                assert!(
                    again.len() == 1 && same_sample(&again[0], sample),
                    "round trip of {sample:?} via {line:?} gave {again:?}"
                );
            }
        }
        (Err(a), Err(b)) => {
            assert_eq!(a.error_type(), b.error_type());
            assert!(!a.to_string().is_empty());
        }
        _ => panic!("parse and sum_many disagree: {parsed:?} vs {sums:?}"),
    }
});
