//! The latency histogram reader: `_bucket` series in an exposition body,
//! summed by `le`, then windowed and turned into a quantile.
//!
//! Why it exists: a histogram comes from the network, and an invalid one
//! (counts decreasing as `le` grows, a negative or NaN `le`, a repeated
//! bucket) read as a clean latency drove climbs (issue 27). Any input must
//! give either a bounded error or a valid histogram whose quantile is a
//! latency: finite, >= 0, at most the highest finite bound. The input is
//! two readings separated by a line `#---`.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use throttle_governor::window::{LatencyOutcome, LatencySample, LatencyTracker};
use throttle_governor::signal::latency::histogram_in;
use throttle_governor::promtext::selector::Selector;

static BUCKETS: LazyLock<Selector> = LazyLock::new(|| "h_bucket".parse().unwrap());

/// A reading's invariants; returns its highest finite bound.
fn check(sample: &LatencySample) -> f64 {
    let LatencySample::Histogram(b) = sample else {
        panic!("a histogram read gave {sample:?}");
    };
    let pairs = b.pairs();
    assert!(pairs.len() >= 2, "{pairs:?}");
    assert_eq!(pairs.last().map(|p| p.0), Some(f64::INFINITY), "{pairs:?}");
    for w in pairs.windows(2) {
        assert!(w[0].0 < w[1].0, "bounds not increasing: {pairs:?}");
        assert!(w[0].1 <= w[1].1, "counts decreasing: {pairs:?}");
    }
    for &(le, count) in pairs {
        assert!(le >= 0.0 && count.is_finite() && count >= 0.0, "{pairs:?}");
    }
    let top = pairs[pairs.len() - 2].0;
    if let Some(q) = b.quantile(0.99) {
        assert!(q.is_finite() && q >= 0.0 && q <= top, "p99 {q} of {pairs:?}");
    }
    top
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (first, second) = text.split_once("\n#---\n").unwrap_or((text, text));
    let mut tracker = LatencyTracker::default();
    let mut top = 0.0_f64;
    for body in [first, second] {
        match histogram_in(&BUCKETS, body) {
            Ok(sample) => {
                top = top.max(check(&sample));
                if let LatencyOutcome::Window(Some(q)) = tracker.observe(0.99, sample) {
                    assert!(q.is_finite() && q >= 0.0 && q <= top, "window p99 {q}");
                }
            }
            Err(e) => {
                assert!(!e.to_string().is_empty());
                assert!(!e.error_type().is_empty());
            }
        }
    }
});
