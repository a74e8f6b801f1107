//! The governor as a bench controller: the real governor, every profile,
//! with or without the latency bound.
//!
//! Why it exists: the bench must measure the governor the live loop runs,
//! not a model of it, and feed the live capacity estimate as the engine does.
//!
//! What it may touch: [`crate::governor`] and [`crate::report::live`]; no I/O, no clock.

use super::{Controller, LatencyBound, StepNote, WindowResult};
use crate::governor::latency_bound::LatencyWindow;
use crate::governor::{Outcome, Params, Profile, ThrottleGovernor};
use crate::report::live::LiveCapacity;
use crate::report::SteadyRule;
use crate::telemetry::{CapacityEstimate, LatencyBoundStatus, WindowRecord};

/// The real [`ThrottleGovernor`], fed one window's deltas at a time. The
/// committed offer is what it decided (the simulated tool never refuses a
/// write), so it never needs `set_current`. With a latency bound it steps
/// through [`ThrottleGovernor::step_with_latency`]. Each window's outcome
/// also feeds the live capacity estimate ([`LiveCapacity`], the code the
/// engine feeds), as the engine would, with one window a second.
#[derive(Debug, Clone)]
pub struct Governor {
    inner: ThrottleGovernor,
    latency: Option<LatencyBound>,
    clears: u64,
    /// The live estimate, once [`Controller::keep_figures`] asked for it.
    live: Option<LiveCapacity>,
    /// The live estimate after the last window.
    estimate: CapacityEstimate,
    /// What the last window decided.
    note: Option<StepNote>,
    window: u64,
}

impl Governor {
    /// A governor with `profile`, without a latency bound.
    pub fn new(params: Params, profile: Profile) -> Self {
        Governor {
            inner: ThrottleGovernor::with_profile(params, profile),
            latency: None,
            clears: 0,
            live: None,
            estimate: CapacityEstimate::None,
            note: None,
            window: 0,
        }
    }

    /// The same governor with a latency bound.
    pub fn with_latency(mut self, bound: LatencyBound) -> Self {
        self.latency = Some(bound);
        self
    }

    /// The last outcome's memory, for tests.
    pub fn governor(&self) -> &ThrottleGovernor {
        &self.inner
    }
}

impl Controller for Governor {
    fn offer(&mut self, _capacity: f64) -> f64 {
        self.inner.state().current
    }

    fn observe(&mut self, w: WindowResult) {
        let latency = self.latency.map(|b| LatencyWindow {
            quantile: b.quantile,
            observed: w.latency,
            bound: b.bound,
            low: b.low,
        });
        let o: Outcome =
            self.inner
                .step_with_latency(w.attempts as f64, w.failures as f64, latency);
        if o.memory_cleared {
            self.clears += 1;
        }
        let record = WindowRecord::of_outcome(&o, self.window as f64, 1.0, false, None);
        self.window += 1;
        self.note = Some(StepNote {
            decision: record.decision,
            rule: record.label,
            last_bad: o.last_bad,
        });
        if let Some(live) = self.live.as_mut() {
            self.estimate = live.push(&record);
        }
    }

    fn keep_figures(&mut self) {
        // The bound in the unit of the window's quantile: the estimate only
        // compares the two.
        let latency = self.latency.map(|b| LatencyBoundStatus {
            quantile: b.quantile,
            bound_secs: b.bound,
            low_secs: b.low,
        });
        let high = self.inner.params().high;
        self.live = Some(LiveCapacity::new(SteadyRule::default(), high, latency));
    }

    fn memory_clears(&self) -> Option<u64> {
        Some(self.clears)
    }

    fn capacity_figure(&self) -> Option<Option<f64>> {
        self.live
            .as_ref()
            .map(|_| self.estimate.figure().map(|f| f.offer))
    }

    fn last_step(&self) -> Option<StepNote> {
        self.note
    }

    fn capacity_claim(&self) -> Option<f64> {
        match self.estimate {
            CapacityEstimate::Steady(f) if !f.lower_bound => Some(f.offer),
            _ => None,
        }
    }

    fn reads_latency(&self) -> bool {
        self.latency.is_some()
    }
}
