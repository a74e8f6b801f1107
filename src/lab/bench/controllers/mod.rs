//! The controllers that `bench` compares: the governor (every profile), four
//! published baselines, and the oracle.
//!
//! Why it exists: "how does it compare with AIMD?" needs AIMD written down,
//! with its update rule pinned by a test against the formula its source
//! documents, not an impression of it. Every baseline here sees exactly
//! what the governor sees (one window's resolved attempts and failures) and
//! owns the same knob (workers, between `floor` and `ceiling`), and each one
//! calls a window a *breach* by the same declared bound: `frac > high`.
//!
//! What it may touch: [`crate::governor`] (the governor controllers drive the
//! real [`ThrottleGovernor`](crate::governor::ThrottleGovernor)). Nothing
//! here does I/O or reads a clock.
//!
//! The rules, in one place (`n` resolved attempts, `f` failures,
//! `frac = f / n`; a window with `n = 0` changes nothing anywhere):
//!
//! | controller | on a breach (`frac > high`) | otherwise |
//! |---|---|---|
//! | `governor` | `docs/GOVERNOR.md`, exactly (`profile = "seed"`) | |
//! | `governor-robust` | [`crate::governor::robust`] | |
//! | `governor-gentle` | the default profile: robust's rules with [`crate::governor::robust::Tunables::GENTLE`] | |
//! | `governor-latency`, `governor-robust-latency`, `governor-gentle-latency` | the same three, through [`ThrottleGovernor::step_with_latency`](crate::governor::ThrottleGovernor::step_with_latency) with the latency bound on: the window's p99 at most [`LATENCY_BOUND`] base latencies (clean below 80 % of it) | |
//! | `aimd` | `L = floor(0.9 L)` | `L = L + 1` |
//! | `cubic` | `W_max = W` (or `W (1 + β) / 2` if `W < W_max`), `W = β W`, `K = cbrt(W_max (1 - β) / C)`, `t = 0` | slow start `W = 2 W` until the first breach; then `t += 1`, `W = max(min(max(W_cubic(t), W), 1.5 W), W_est)` |
//! | `gradient` | `L = clamp((1 - frac) / (1 - high), 0.5, 2) L`, then `L = L + sqrt(L)` | (the same rule) |
//! | `findmax` | stepped search: see [`Findmax`] | |
//! | `oracle` | `0.95 C_t` (reads the true capacity) | |
//!
//! All offers are clamped into `[floor, ceiling]`; the load tool runs
//! `floor(offer)` whole workers (see [`Controller::offer`]).
//!
//! Only the three `-latency` governors read a window's latency; every other
//! controller (the governors without the bound, AIMD, CUBIC, gradient,
//! findmax) sees attempts and failures only, as it would in front of a tool
//! that exports no histogram. The `-latency` ones run only on models that
//! have a latency (`queueing`): elsewhere there is nothing to bound.

mod aimd;
mod cubic;
mod findmax;
mod governor;
mod gradient;
mod oracle;
#[cfg(test)]
mod tests;

use std::fmt;

use serde::Serialize;

use crate::governor::latency_bound::DEFAULT_LOW_FRACTION;
use crate::governor::{Params, Profile};
pub use aimd::{Aimd, AIMD_BACKOFF};
pub use cubic::{Cubic, CUBIC_BETA, CUBIC_C};
pub use findmax::{
    Findmax, FINDMAX_BESTRATE_CUTOFF, FINDMAX_RATE_INCR, FINDMAX_RATE_STEP, FINDMAX_SAMPLE,
    FINDMAX_SAMPLE_INCR, FINDMAX_SAMPLE_MAX,
};
pub use governor::Governor;
pub use gradient::{Gradient, GRADIENT_MAX, GRADIENT_MIN};
pub use oracle::{Oracle, ORACLE_SHARE};

/// The quantile that the latency bound holds: p99.
pub const LATENCY_QUANTILE: f64 = 0.99;
/// The latency bound, in base latencies (the model's light-load service
/// time): p99 at most 2.5 base. The bench hands the governor latencies in
/// this unit; its rules only compare the quantile with the bound, so the
/// unit cancels.
pub const LATENCY_BOUND: f64 = 2.5;

/// The bounds and thresholds every controller shares.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// The offer never goes below this.
    pub floor: f64,
    /// The offer never goes above this.
    pub ceiling: f64,
    /// The opening offer.
    pub start: f64,
    /// A window breaches when `frac > high`.
    pub high: f64,
}

impl Bounds {
    /// The bounds of validated governor parameters.
    pub fn of(p: &Params) -> Self {
        Bounds {
            floor: p.floor,
            ceiling: p.ceiling,
            start: p.start,
            high: p.high,
        }
    }

    fn clamp(&self, offer: f64) -> f64 {
        offer.clamp(self.floor, self.ceiling)
    }
}

/// What one window resolved, as every controller sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowResult {
    /// Resolved attempts.
    pub attempts: u64,
    /// Failed attempts among them.
    pub failures: u64,
    /// The window's [`LATENCY_QUANTILE`], in base latencies (`None` when
    /// the model has no latency). Only the `-latency` governors read it.
    pub latency: Option<f64>,
}

impl WindowResult {
    /// `failures / attempts`, or `None` without traffic.
    pub fn frac(&self) -> Option<f64> {
        (self.attempts > 0).then(|| self.failures as f64 / self.attempts as f64)
    }
}

/// What one governor window decided and by which rule: the report's
/// history words, so a trace reads like a run's report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepNote {
    /// `up`, `down` or `hold`.
    pub decision: &'static str,
    /// The mode (`climbing`, `probing`, `backing-off`, ...) or the hold
    /// reason (`gathering`, `dwelling`, `dead-band`, ...).
    pub rule: &'static str,
    /// The congestion memory after the window.
    pub last_bad: Option<f64>,
}

/// A controller of one knob, one window at a time.
pub trait Controller {
    /// The offer for the coming window, in workers (within the bounds; the
    /// bench runs `floor(offer)` whole workers). `capacity` is the coming
    /// window's true capacity: only the oracle may read it.
    fn offer(&mut self, capacity: f64) -> f64;

    /// Folds the window that the last offer produced.
    fn observe(&mut self, window: WindowResult);

    /// How many times the congestion memory cleared (governors only).
    fn memory_clears(&self) -> Option<u64> {
        None
    }

    /// Keep the live capacity estimate from now on (governors only; it
    /// costs about 8 µs a window, so the goal checks leave it off).
    fn keep_figures(&mut self) {}

    /// The live capacity figure after the last window observed: `None`
    /// for a controller that keeps no estimate, `Some(None)` while the
    /// estimate has no figure.
    fn capacity_figure(&self) -> Option<Option<f64>> {
        None
    }

    /// The live figure after the last window observed when it says a
    /// bound binds there (steady, and not a lower bound): what a user
    /// reading it takes for the target's capacity. `None` otherwise, and
    /// for a controller that keeps no estimate.
    fn capacity_claim(&self) -> Option<f64> {
        None
    }

    /// What the last window decided and by which rule, in the words of
    /// the report's history (governors only: `bench --trace` prints it).
    fn last_step(&self) -> Option<StepNote> {
        None
    }

    /// Whether the controller reads the latency: its capacity figure is
    /// then the latency capacity's.
    fn reads_latency(&self) -> bool {
        false
    }
}

/// The controllers by name, as on the command line and in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum ControllerKind {
    /// The governor with the seed rules of docs/GOVERNOR.md (`profile = "seed"`).
    Governor,
    /// The governor with `profile = "robust"`.
    GovernorRobust,
    /// The governor with `profile = "gentle"`, the default.
    GovernorGentle,
    /// The seed governor with the latency bound on (latency models only).
    GovernorLatency,
    /// The robust governor with the latency bound on (latency models only).
    GovernorRobustLatency,
    /// The gentle governor with the latency bound on (latency models only).
    GovernorGentleLatency,
    /// Netflix concurrency-limits AIMDLimit: x0.9 on a breach, +1 otherwise.
    Aimd,
    /// CUBIC (RFC 9438): beta 0.7, cubic growth toward W_max, fast convergence.
    Cubic,
    /// Envoy's adaptive-concurrency gradient, on the success ratio.
    Gradient,
    /// NoSQLBench findmax: a stepped search for the highest passing offer.
    Findmax,
    /// Offers 95 % of the true capacity: the reference.
    Oracle,
}

impl ControllerKind {
    /// Every controller, in table order.
    pub const ALL: [ControllerKind; 11] = [
        ControllerKind::Governor,
        ControllerKind::GovernorRobust,
        ControllerKind::GovernorGentle,
        ControllerKind::GovernorLatency,
        ControllerKind::GovernorRobustLatency,
        ControllerKind::GovernorGentleLatency,
        ControllerKind::Aimd,
        ControllerKind::Cubic,
        ControllerKind::Gradient,
        ControllerKind::Findmax,
        ControllerKind::Oracle,
    ];

    /// The kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            ControllerKind::Governor => "governor",
            ControllerKind::GovernorRobust => "governor-robust",
            ControllerKind::GovernorGentle => "governor-gentle",
            ControllerKind::GovernorLatency => "governor-latency",
            ControllerKind::GovernorRobustLatency => "governor-robust-latency",
            ControllerKind::GovernorGentleLatency => "governor-gentle-latency",
            ControllerKind::Aimd => "aimd",
            ControllerKind::Cubic => "cubic",
            ControllerKind::Gradient => "gradient",
            ControllerKind::Findmax => "findmax",
            ControllerKind::Oracle => "oracle",
        }
    }

    /// Whether this controller reads the latency (and so runs only on
    /// models that have one).
    pub fn needs_latency(self) -> bool {
        matches!(
            self,
            ControllerKind::GovernorLatency
                | ControllerKind::GovernorRobustLatency
                | ControllerKind::GovernorGentleLatency
        )
    }

    /// Whether this is one of the governors.
    pub fn is_governor(self) -> bool {
        self.profile().is_some()
    }

    /// The governor's profile, for the governors.
    pub fn profile(self) -> Option<Profile> {
        match self {
            ControllerKind::Governor | ControllerKind::GovernorLatency => Some(Profile::Seed),
            ControllerKind::GovernorRobust | ControllerKind::GovernorRobustLatency => {
                Some(Profile::Robust)
            }
            ControllerKind::GovernorGentle | ControllerKind::GovernorGentleLatency => {
                Some(Profile::Gentle)
            }
            _ => None,
        }
    }

    /// The governor of `profile`, without the latency bound (`latency`
    /// false) or with it.
    pub fn governor(profile: Profile, latency: bool) -> ControllerKind {
        match (profile, latency) {
            (Profile::Seed, false) => ControllerKind::Governor,
            (Profile::Robust, false) => ControllerKind::GovernorRobust,
            (Profile::Gentle, false) => ControllerKind::GovernorGentle,
            (Profile::Seed, true) => ControllerKind::GovernorLatency,
            (Profile::Robust, true) => ControllerKind::GovernorRobustLatency,
            (Profile::Gentle, true) => ControllerKind::GovernorGentleLatency,
        }
    }

    /// A fresh controller of this kind.
    pub fn build(self, params: &Params) -> Box<dyn Controller> {
        let b = Bounds::of(params);
        match self {
            ControllerKind::Aimd => Box::new(Aimd::new(b)),
            ControllerKind::Cubic => Box::new(Cubic::new(b)),
            ControllerKind::Gradient => Box::new(Gradient::new(b)),
            ControllerKind::Findmax => Box::new(Findmax::new(b)),
            ControllerKind::Oracle => Box::new(Oracle::new(b)),
            governor => {
                // Every other kind is a governor: it has a profile.
                let profile = governor.profile().unwrap_or_default();
                let g = Governor::new(*params, profile);
                if governor.needs_latency() {
                    Box::new(g.with_latency(LatencyBound::bench()))
                } else {
                    Box::new(g)
                }
            }
        }
    }
}

impl fmt::Display for ControllerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A latency bound on one quantile, in the unit of [`WindowResult::latency`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyBound {
    /// The quantile bounded.
    pub quantile: f64,
    /// Back off above this.
    pub bound: f64,
    /// Clean below this.
    pub low: f64,
}

impl LatencyBound {
    /// The bench's bound: p99 at most [`LATENCY_BOUND`], clean below 80 %
    /// of it (the governor's default clean level).
    pub fn bench() -> Self {
        LatencyBound {
            quantile: LATENCY_QUANTILE,
            bound: LATENCY_BOUND,
            low: DEFAULT_LOW_FRACTION * LATENCY_BOUND,
        }
    }
}
