//! Findmax: a stepped capacity search after NoSQLBench's `findmax`.
//!
//! Why it exists: the search baseline the governor is compared with (find
//! the best rate once, then hold it), its steps pinned by tests.
//!
//! What it may touch: nothing; it does no I/O and reads no clock.

use super::{Bounds, Controller, WindowResult};

/// A stepped search after NoSQLBench's `findmax` scenario
/// (<https://github.com/nosqlbench/nosqlbench>, `findmax.js`; "Set target
/// rate to base + step * (incr ^ iter) for each iteration accepted in a
/// row"):
///
/// - each iteration offers `base + step` for a sample of `sample` windows,
///   then `step *= rate_incr` (2);
/// - it is accepted when the sample's failure fraction is at most `high`
///   (the latency check's counterpart) and its successes per window reach
///   `bestrate_cutoff` (90 %) of the best accepted iteration's (the best is
///   the one with the most successes per window; ties go to the later one);
/// - a rejection remembers the lowest rejected offer (`too_fast`) and zooms
///   the sample out by `sample_incr` (capped at `sample_max`). If
///   `base + step >= too_fast` and `best + rate_step < too_fast`, the search
///   restarts from `base = best` with `step = rate_step` after settling one
///   sample at `base`; otherwise it is complete;
/// - once complete, it holds the best accepted offer for the rest of the run,
///   as NoSQLBench reports its result and stops searching.
///
/// Units: `rate_base = 0`, `rate_step = 1` worker (the knob's resolution),
/// `sample_time = 2` windows, `sample_incr = 1.333`, `sample_max = 20`.
#[derive(Debug, Clone)]
pub struct Findmax {
    b: Bounds,
    base: f64,
    step: f64,
    pub(super) sample: f64,
    /// The offer under test and how many windows it has run.
    pub(super) testing: f64,
    pub(super) ran: u32,
    settling: u32,
    pub(super) acc_attempts: u64,
    pub(super) acc_failures: u64,
    /// The best accepted offer and its successes per window.
    pub(super) best: Option<(f64, f64)>,
    pub(super) too_fast: Option<f64>,
    done: bool,
}

/// findmax's step growth per accepted iteration.
pub const FINDMAX_RATE_INCR: f64 = 2.0;
/// findmax's initial step, in workers.
pub const FINDMAX_RATE_STEP: f64 = 1.0;
/// findmax's initial sample, in windows.
pub const FINDMAX_SAMPLE: f64 = 2.0;
/// findmax's sample growth per rejection.
pub const FINDMAX_SAMPLE_INCR: f64 = 1.333;
/// findmax's longest sample, in windows.
pub const FINDMAX_SAMPLE_MAX: f64 = 20.0;
/// findmax's `bestrate_cutoff`.
pub const FINDMAX_BESTRATE_CUTOFF: f64 = 0.9;

impl Findmax {
    /// Starts the search at `rate_base = 0`.
    pub fn new(b: Bounds) -> Self {
        let mut f = Findmax {
            b,
            base: 0.0,
            step: FINDMAX_RATE_STEP,
            sample: FINDMAX_SAMPLE,
            testing: 0.0,
            ran: 0,
            settling: 0,
            acc_attempts: 0,
            acc_failures: 0,
            best: None,
            too_fast: None,
            done: false,
        };
        f.next_iteration();
        f
    }

    fn next_iteration(&mut self) {
        self.testing = self.b.clamp(self.base + self.step);
        self.step *= FINDMAX_RATE_INCR;
        self.ran = 0;
        self.acc_attempts = 0;
        self.acc_failures = 0;
    }

    fn sample_windows(&self) -> u32 {
        self.sample.round().max(1.0) as u32
    }

    /// Whether the search has completed.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The best accepted offer so far.
    pub fn best(&self) -> Option<f64> {
        self.best.map(|(o, _)| o)
    }

    pub(super) fn finish_iteration(&mut self) {
        let n = self.acc_attempts;
        let frac = if n == 0 {
            0.0
        } else {
            self.acc_failures as f64 / n as f64
        };
        let rate = (n - self.acc_failures) as f64 / f64::from(self.ran.max(1));
        let best_rate = self.best.map_or(rate, |(_, r)| r);
        let accepted = frac <= self.b.high && rate >= FINDMAX_BESTRATE_CUTOFF * best_rate;
        if accepted {
            // Ties go to the later (higher) offer, so that a saturated
            // target's flat success rate cannot restart the search forever.
            if self.best.is_none_or(|(_, r)| rate >= r) {
                self.best = Some((self.testing, rate));
            }
            if self.testing >= self.b.ceiling {
                self.done = true;
                return;
            }
            self.next_iteration();
            return;
        }
        self.sample = (self.sample * FINDMAX_SAMPLE_INCR).min(FINDMAX_SAMPLE_MAX);
        let too_fast = self.too_fast.map_or(self.testing, |t| t.min(self.testing));
        self.too_fast = Some(too_fast);
        let best = self.best.map_or(self.b.floor, |(o, _)| o);
        if self.base + self.step >= too_fast && best + FINDMAX_RATE_STEP < too_fast {
            self.base = best;
            self.step = FINDMAX_RATE_STEP;
            self.settling = self.sample_windows();
            self.next_iteration();
        } else {
            self.done = true;
        }
    }
}

impl Controller for Findmax {
    fn offer(&mut self, _capacity: f64) -> f64 {
        if self.done {
            self.best.map_or(self.b.floor, |(o, _)| o)
        } else if self.settling > 0 {
            self.b.clamp(self.base)
        } else {
            self.testing
        }
    }

    fn observe(&mut self, w: WindowResult) {
        if self.done {
            return;
        }
        if self.settling > 0 {
            self.settling -= 1;
            return;
        }
        self.acc_attempts += w.attempts;
        self.acc_failures += w.failures;
        self.ran += 1;
        if self.ran >= self.sample_windows() {
            self.finish_iteration();
        }
    }
}
