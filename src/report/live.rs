//! The live capacity estimate: the report's figure while the run goes.
//!
//! Why it exists: a user should see the capacity in `/api/v1/targets`, in
//! `throttle_capacity` and in the log as soon as the evidence brackets the
//! wall, not only in the report after the run. The figure comes from the
//! report's own code ([`super::estimate`]), so the live figure and the
//! report's can only differ by the windows each was given.
//!
//! # Where the evidence lives
//! A plain `run` keeps one window of history per target (memory at 10,000
//! targets, see BENCHMARKS "Third pass"), which is no evidence at all. So
//! each target's loop keeps its own compact ring of its last
//! [`LIVE_WINDOWS`] windows: only what the estimate reads (the offer, the
//! attempts and failures, the latency quantile, whether it was evidence),
//! 32 bytes a window, 2 kB a target (20 MB at 10,000 targets), against the
//! 104-byte records of the report's history. Sixty-four windows is the
//! history `--until-steady` keeps, about six sawtooth cycles of the default
//! profile: enough for the steady-state rule's shortest period (10 windows)
//! and for a provisional bracket (a level held twice below a breach).
//!
//! The cost is bounded per window and independent of the run's length: one
//! pass over the ring, the steady-state search (quadratic in the ring, at
//! most about 2,000 level comparisons at 64 windows) and one or two
//! poolings. Measured (`cargo bench --bench governor live_capacity`, a
//! full ring of a sawtooth; first measured at opt-level 3): 8.3 µs a window, so 10,000 targets
//! at 2 s windows spend about 4 % of one core on it. No scrape computes
//! anything: `/api/v1/targets` serialises the value stored at the last
//! window, and the metric and the log move only when the figure or its
//! state changes.
//!
//! What is given up: a settled period longer than the ring. When the
//! report's history holds a longer settled period than [`LIVE_WINDOWS`], the
//! report pools more windows and its figure may differ from the live one by
//! the levels those older windows add. Within the ring the two are the same
//! computation.
//!
//! What it may touch: nothing; it is fed one record per window.

use std::collections::VecDeque;

use super::{estimate, SteadyRule};
use crate::telemetry::{CapacityEstimate, LatencyBoundStatus, WindowRecord};

/// Windows the live estimate keeps per target.
pub const LIVE_WINDOWS: usize = 64;

/// One window as the live estimate keeps it. An absent value is NaN.
#[derive(Debug, Clone, Copy)]
struct LiveWindow {
    offer: f64,
    attempts: f64,
    failures: f64,
    latency_secs: f32,
    flags: u8,
}

const DISCARDED: u8 = 1;
const UNCONFIRMED: u8 = 2;

impl LiveWindow {
    fn of(r: &WindowRecord) -> Self {
        let nan = |x: Option<f64>| x.unwrap_or(f64::NAN);
        LiveWindow {
            offer: r.offer,
            attempts: nan(r.attempts),
            failures: nan(r.failures),
            latency_secs: r.latency_secs.map(|v| v as f32).unwrap_or(f32::NAN),
            flags: if r.discarded { DISCARDED } else { 0 }
                | if r.unconfirmed { UNCONFIRMED } else { 0 },
        }
    }

    /// The record the estimate reads (`i` stands in for the time: only the
    /// order of windows matters to the figure).
    fn record(&self, i: usize) -> WindowRecord {
        let back = |x: f64| (!x.is_nan()).then_some(x);
        let attempts = back(self.attempts);
        let failures = back(self.failures);
        WindowRecord {
            time_secs: i as f64,
            offer: self.offer,
            attempts,
            failures,
            frac: attempts
                .zip(failures)
                .and_then(|(a, f)| (a > 0.0).then(|| f / a)),
            window_secs: None,
            decision: "hold",
            to: self.offer,
            label: "",
            discarded: self.flags & DISCARDED != 0,
            unconfirmed: self.flags & UNCONFIRMED != 0,
            latency_secs: (!self.latency_secs.is_nan()).then_some(f64::from(self.latency_secs)),
            latency_drove: false,
            confidence: None,
        }
    }
}

/// One target's live capacity estimate, fed each window.
#[derive(Debug, Clone)]
pub struct LiveCapacity {
    windows: VecDeque<LiveWindow>,
    rule: SteadyRule,
    high: f64,
    latency: Option<LatencyBoundStatus>,
}

impl LiveCapacity {
    /// An estimate with no evidence yet, under `rule` at the failure bound
    /// `high` (and the latency bound, when one is set).
    pub fn new(rule: SteadyRule, high: f64, latency: Option<LatencyBoundStatus>) -> Self {
        LiveCapacity {
            windows: VecDeque::with_capacity(LIVE_WINDOWS),
            rule,
            high,
            latency,
        }
    }

    /// Records one window and returns the estimate over the windows kept.
    pub fn push(&mut self, record: &WindowRecord) -> CapacityEstimate {
        if self.windows.len() >= LIVE_WINDOWS {
            self.windows.pop_front();
        }
        self.windows.push_back(LiveWindow::of(record));
        let history: Vec<WindowRecord> = self
            .windows
            .iter()
            .enumerate()
            .map(|(i, w)| w.record(i))
            .collect();
        estimate(&history, &self.rule, self.high, self.latency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_window_is_small() {
        assert!(size_of::<LiveWindow>() <= 32, "{}", size_of::<LiveWindow>());
    }

    #[test]
    fn the_ring_is_bounded() {
        let mut live = LiveCapacity::new(SteadyRule::default(), 0.05, None);
        let r = WindowRecord {
            time_secs: 0.0,
            offer: 5.0,
            attempts: Some(100.0),
            failures: Some(0.0),
            frac: Some(0.0),
            window_secs: Some(1.0),
            decision: "up",
            to: 6.0,
            label: "",
            discarded: false,
            unconfirmed: false,
            latency_secs: None,
            latency_drove: false,
            confidence: None,
        };
        for _ in 0..3 * LIVE_WINDOWS {
            live.push(&r);
        }
        assert_eq!(live.windows.len(), LIVE_WINDOWS);
    }
}
