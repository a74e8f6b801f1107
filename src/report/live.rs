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
//! Besides the ring, the evidence that left it is pooled per offer (at most
//! [`OLDER_OFFERS`] offers, 32 bytes each, none older than `MAX_PERIOD`
//! windows), and read only to tell whether a steady figure is a lower
//! bound: a settled run probes a costly wall less often than the ring is
//! long. And one number a target: the clean level of the governor's latest
//! verdict, against which a lower bound's dead band is judged (the
//! report's "it held in the dead band" sentence, carried live as
//! [`crate::telemetry::DeadBand`]; the ring marks the windows held
//! `at-ceiling`, where a lower bound is the ceiling's, in a flag bit).
//!
//! The cost is bounded per window and independent of the run's length: one
//! pass over the ring, the steady-state search (quadratic in the ring, at
//! most about 2,000 level comparisons at 64 windows) and one or two
//! poolings. Measured (`cargo bench --bench governor live_capacity`, a
//! full ring of a sawtooth; first measured at opt-level 3): 8.3 µs a window, so 10,000 targets
//! at 2 s windows spend about 4 % of one core on it. Pooling the evidence
//! that left the ring for the lower-bound test costs 15 % more (5.4 µs
//! before it, 6.2 µs with it, the same build machine, 2026-12-04). No scrape computes
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

use super::{estimate_remembering, SteadyRule, MAX_PERIOD};
use crate::telemetry::{CapacityEstimate, LatencyBoundStatus, WindowRecord};

/// Windows the live estimate keeps per target.
pub const LIVE_WINDOWS: usize = 64;

/// Offers whose evidence, once it left the ring, the estimate still pools
/// for the lower-bound test ([`LiveCapacity::push`]).
pub const OLDER_OFFERS: usize = 32;

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
/// The governor held at its ceiling (`at-ceiling`): a steady lower bound
/// there is the ceiling's, not the dead band's.
const AT_CEILING: u8 = 4;

impl LiveWindow {
    fn of(r: &WindowRecord) -> Self {
        let nan = |x: Option<f64>| x.unwrap_or(f64::NAN);
        LiveWindow {
            offer: r.offer,
            attempts: nan(r.attempts),
            failures: nan(r.failures),
            latency_secs: r.latency_secs.map(|v| v as f32).unwrap_or(f32::NAN),
            flags: if r.discarded { DISCARDED } else { 0 }
                | if r.unconfirmed { UNCONFIRMED } else { 0 }
                | if r.label == "at-ceiling" {
                    AT_CEILING
                } else {
                    0
                },
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
            label: if self.flags & AT_CEILING != 0 {
                "at-ceiling"
            } else {
                ""
            },
            discarded: self.flags & DISCARDED != 0,
            unconfirmed: self.flags & UNCONFIRMED != 0,
            latency_secs: (!self.latency_secs.is_nan()).then_some(f64::from(self.latency_secs)),
            latency_drove: false,
            confidence: None,
        }
    }
}

/// Evidence that left the ring at one offer, pooled.
#[derive(Debug, Clone, Copy)]
struct Older {
    offer: f64,
    attempts: f64,
    failures: f64,
    /// The count of windows pushed when it was last added to.
    last: u64,
}

/// One target's live capacity estimate, fed each window.
#[derive(Debug, Clone)]
pub struct LiveCapacity {
    windows: VecDeque<LiveWindow>,
    /// Evidence that left the ring, pooled per offer: at most
    /// [`OLDER_OFFERS`] offers, none last added to more than
    /// [`MAX_PERIOD`] windows ago.
    older: Vec<Older>,
    pushed: u64,
    rule: SteadyRule,
    high: f64,
    latency: Option<LatencyBoundStatus>,
    /// The clean level of the latest verdict that carried one (`robust`
    /// and `gentle`): what the dead band of a lower bound is judged
    /// against. One value a target, not one a window: the report reads
    /// the latest too.
    clean_below: Option<f64>,
}

impl LiveCapacity {
    /// An estimate with no evidence yet, under `rule` at the failure bound
    /// `high` (and the latency bound, when one is set).
    pub fn new(rule: SteadyRule, high: f64, latency: Option<LatencyBoundStatus>) -> Self {
        LiveCapacity {
            windows: VecDeque::with_capacity(LIVE_WINDOWS),
            older: Vec::new(),
            pushed: 0,
            rule,
            high,
            latency,
            clean_below: None,
        }
    }

    /// Records one window and returns the estimate over the windows kept.
    ///
    /// The figure comes from the ring alone. Whether a steady figure is a
    /// lower bound also reads the evidence that left the ring, pooled per
    /// offer: a settled `gentle` run probes a costly wall about once every
    /// 192 windows, three times the ring, and between probes the ring alone
    /// would call every figure a lower bound.
    pub fn push(&mut self, record: &WindowRecord) -> CapacityEstimate {
        self.pushed += 1;
        if self.windows.len() >= LIVE_WINDOWS {
            if let Some(w) = self.windows.pop_front() {
                self.remember(w);
            }
        }
        self.windows.push_back(LiveWindow::of(record));
        if let Some(c) = &record.confidence {
            self.clean_below = Some(c.clean_below);
        }
        let history = self.ring();
        let older: Vec<WindowRecord> = self
            .older
            .iter()
            .map(|o| {
                LiveWindow {
                    offer: o.offer,
                    attempts: o.attempts,
                    failures: o.failures,
                    latency_secs: f32::NAN,
                    flags: 0,
                }
                .record(0)
            })
            .map(|r| WindowRecord {
                time_secs: -1.0,
                ..r
            })
            .collect();
        estimate_remembering(
            &history,
            &older,
            self.clean_below,
            &self.rule,
            self.high,
            self.latency,
        )
    }

    /// The ring as the records the estimate reads, oldest first.
    fn ring(&self) -> Vec<WindowRecord> {
        self.windows
            .iter()
            .enumerate()
            .map(|(i, w)| w.record(i))
            .collect()
    }

    /// Pools a window that left the ring into [`Self::older`], when it was
    /// evidence.
    fn remember(&mut self, w: LiveWindow) {
        // Kept oldest first: an offer added to moves to the end.
        if w.flags & (DISCARDED | UNCONFIRMED) == 0 && w.attempts > 0.0 && w.failures >= 0.0 {
            let mut o = match self.older.iter().position(|o| o.offer == w.offer) {
                Some(i) => self.older.remove(i),
                None => Older {
                    offer: w.offer,
                    attempts: 0.0,
                    failures: 0.0,
                    last: 0,
                },
            };
            o.attempts += w.attempts;
            o.failures += w.failures;
            o.last = self.pushed;
            self.older.push(o);
        }
        let now = self.pushed;
        self.older.retain(|o| now - o.last <= MAX_PERIOD as u64);
        if self.older.len() > OLDER_OFFERS {
            self.older.remove(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_window_is_small() {
        assert!(size_of::<LiveWindow>() <= 32, "{}", size_of::<LiveWindow>());
    }

    fn window(offer: f64, attempts: f64, failures: f64) -> WindowRecord {
        WindowRecord {
            time_secs: 0.0,
            offer,
            attempts: Some(attempts),
            failures: Some(failures),
            frac: Some(failures / attempts),
            window_secs: Some(1.0),
            decision: "hold",
            to: offer,
            label: "",
            discarded: false,
            unconfirmed: false,
            latency_secs: None,
            latency_drove: false,
            confidence: None,
        }
    }

    /// A settled run at 10 whose last failed probe to 11 left the ring a
    /// hundred windows ago is still bracketed; a run held at 4 whose offers
    /// just above it failed no more than the bound is a lower bound however
    /// long ago they left the ring.
    #[test]
    fn a_probe_that_left_the_ring_still_brackets_the_figure() {
        let mut live = LiveCapacity::new(SteadyRule::default(), 0.05, None);
        for _ in 0..3 {
            for _ in 0..4 {
                live.push(&window(10.0, 100.0, 0.0));
            }
            live.push(&window(11.0, 110.0, 60.0));
        }
        let mut last = CapacityEstimate::None;
        for _ in 0..100 {
            last = live.push(&window(10.0, 100.0, 0.0));
        }
        let CapacityEstimate::Steady(f) = last else {
            panic!("{last:?}")
        };
        assert!(f.offer == 10.0 && !f.lower_bound, "{f:?}");
        // The ring alone forgot the probe.
        let ring = live.ring();
        let CapacityEstimate::Steady(f) =
            super::super::estimate(&ring, &SteadyRule::default(), 0.05, None)
        else {
            panic!()
        };
        assert!(f.offer == 10.0 && f.lower_bound, "{f:?}");

        let mut live = LiveCapacity::new(SteadyRule::default(), 0.05, None);
        for _ in 0..10 {
            for _ in 0..3 {
                live.push(&window(4.0, 60.0, 2.0));
            }
            // 3 % at 5: several windows over 5 % alone, pooled within it.
            live.push(&window(5.0, 75.0, 5.0));
            live.push(&window(5.0, 75.0, 0.0));
        }
        for _ in 0..100 {
            last = live.push(&window(4.0, 60.0, 2.0));
        }
        let CapacityEstimate::Steady(f) = last else {
            panic!("{last:?}")
        };
        assert!(f.offer == 4.0 && f.lower_bound, "{f:?}");
        assert!(live.older.len() <= OLDER_OFFERS);
    }

    #[test]
    fn the_ring_is_bounded() {
        let mut live = LiveCapacity::new(SteadyRule::default(), 0.05, None);
        for i in 0..3 * LIVE_WINDOWS {
            live.push(&window(5.0 + (i % 40) as f64, 100.0, 0.0));
        }
        assert_eq!(live.windows.len(), LIVE_WINDOWS);
        // 40 offers left the ring: only the latest 32 are pooled.
        assert_eq!(live.older.len(), OLDER_OFFERS);
    }
}
