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
//! real [`ThrottleGovernor`]). Nothing here does I/O or reads a clock.
//!
//! The rules, in one place (`n` resolved attempts, `f` failures,
//! `frac = f / n`; a window with `n = 0` changes nothing anywhere):
//!
//! | controller | on a breach (`frac > high`) | otherwise |
//! |---|---|---|
//! | `governor` | `GOVERNOR.md`, exactly (`profile = "seed"`) | |
//! | `governor-robust` | [`crate::governor::robust`] | |
//! | `governor-gentle` | the default profile: robust's rules with [`crate::governor::robust::Tunables::GENTLE`] | |
//! | `governor-latency`, `governor-robust-latency`, `governor-gentle-latency` | the same three, through [`ThrottleGovernor::step_with_latency`] with the latency bound on: the window's p99 at most [`LATENCY_BOUND`] base latencies (clean below 80 % of it) | |
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

use std::fmt;

use serde::Serialize;

use crate::governor::latency_bound::{LatencyWindow, DEFAULT_LOW_FRACTION};
use crate::governor::{Outcome, Params, Profile, ThrottleGovernor};
use crate::report::live::LiveCapacity;
use crate::report::SteadyRule;
use crate::telemetry::{LatencyBoundStatus, WindowRecord};

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
    /// The governor with the seed rules of GOVERNOR.md (`profile = "seed"`).
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
    figure: Option<f64>,
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
            figure: None,
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
        if let Some(live) = self.live.as_mut() {
            let record = WindowRecord::of_outcome(&o, self.window as f64, 1.0, false, None);
            self.window += 1;
            self.figure = live.push(&record).figure().map(|f| f.offer);
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
        self.live.as_ref().map(|_| self.figure)
    }

    fn reads_latency(&self) -> bool {
        self.latency.is_some()
    }
}

/// AIMD after Netflix concurrency-limits' `AIMDLimit`
/// (<https://github.com/Netflix/concurrency-limits>,
/// `com.netflix.concurrency.limits.limit.AIMDLimit`): on a drop,
/// `limit = (int) (limit * backoffRatio)` with `backoffRatio = 0.9`;
/// otherwise `limit = limit + 1` (the "inflight * 2 >= limit" guard always
/// holds, since a load tool keeps every worker busy); then clamped into
/// `[minLimit, maxLimit]`.
///
/// Adaptation: AIMDLimit sees one request at a time; here a window is a
/// "drop" when its attempt-failure fraction breaches `high`, the same bound
/// the governor is given. It opens at `start`, like the governor (Netflix's
/// default initial limit is 20).
#[derive(Debug, Clone)]
pub struct Aimd {
    b: Bounds,
    limit: f64,
}

/// AIMDLimit's default `backoffRatio`.
pub const AIMD_BACKOFF: f64 = 0.9;

impl Aimd {
    /// Opens at `b.start`.
    pub fn new(b: Bounds) -> Self {
        Aimd { limit: b.start, b }
    }
}

impl Controller for Aimd {
    fn offer(&mut self, _capacity: f64) -> f64 {
        self.limit
    }

    fn observe(&mut self, w: WindowResult) {
        let Some(frac) = w.frac() else { return };
        let next = if frac > self.b.high {
            (self.limit * AIMD_BACKOFF).floor()
        } else {
            self.limit + 1.0
        };
        self.limit = self.b.clamp(next);
    }
}

/// A CUBIC-like window after RFC 9438 (CUBIC for fast and long-distance
/// networks, 2023), with one window of the bench as one RTT:
///
/// - slow start until the first breach: `W = max(2 W, W + 1)`;
/// - on a breach (§4.6, §4.7): with fast convergence,
///   `W_max = W (1 + β) / 2` when `W < W_max` (the previous one), else
///   `W_max = W`; then `W = β W` with `β = 0.7`, `t = 0`,
///   `K = cbrt(W_max (1 - β) / C)` with `C = 0.4`, and `W_est = W`;
/// - otherwise (§4.2, §4.3): `t += 1`,
///   `target = W_cubic(t) = C (t - K)^3 + W_max`, clamped into
///   `[W, 1.5 W]`; the Reno-friendly estimate grows by
///   `α = 3 (1 - β) / (1 + β)` per window; `W = max(target, W_est)`.
///
/// `W` is in workers instead of segments, so `C = 0.4` means 0.4 workers per
/// window cubed. Clamped into `[floor, ceiling]`.
#[derive(Debug, Clone)]
pub struct Cubic {
    b: Bounds,
    w: f64,
    w_max: Option<f64>,
    w_est: f64,
    k: f64,
    t: f64,
}

/// RFC 9438's multiplicative decrease factor.
pub const CUBIC_BETA: f64 = 0.7;
/// RFC 9438's scaling constant `C`.
pub const CUBIC_C: f64 = 0.4;

impl Cubic {
    /// Opens at `b.start` in slow start.
    pub fn new(b: Bounds) -> Self {
        Cubic {
            w: b.start,
            w_max: None,
            w_est: b.start,
            k: 0.0,
            t: 0.0,
            b,
        }
    }

    /// `W_cubic(t)` of RFC 9438 §4.2 (after the first breach).
    pub fn w_cubic(&self, t: f64) -> f64 {
        let w_max = self.w_max.unwrap_or(self.w);
        CUBIC_C * (t - self.k).powi(3) + w_max
    }
}

impl Controller for Cubic {
    fn offer(&mut self, _capacity: f64) -> f64 {
        self.w
    }

    fn observe(&mut self, win: WindowResult) {
        let Some(frac) = win.frac() else { return };
        if frac > self.b.high {
            let w_max = match self.w_max {
                Some(prev) if self.w < prev => self.w * (1.0 + CUBIC_BETA) / 2.0,
                _ => self.w,
            };
            self.w_max = Some(w_max);
            self.w = self.b.clamp(self.w * CUBIC_BETA);
            self.k = (w_max * (1.0 - CUBIC_BETA) / CUBIC_C).cbrt();
            self.t = 0.0;
            self.w_est = self.w;
            return;
        }
        if self.w_max.is_none() {
            self.w = self.b.clamp((self.w * 2.0).max(self.w + 1.0));
            return;
        }
        self.t += 1.0;
        let target = self.w_cubic(self.t).clamp(self.w, 1.5 * self.w);
        let alpha = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
        self.w_est += alpha;
        self.w = self.b.clamp(target.max(self.w_est));
    }
}

/// Envoy's adaptive-concurrency gradient controller
/// (<https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/adaptive_concurrency_filter>,
/// `source/extensions/filters/http/adaptive_concurrency/controller/gradient_controller.h`):
/// `gradient = clamp((minRTT + B) / sampleRTT, 0.5, 2.0)`,
/// `limit = gradient * limit`, `limit = limit + sqrt(limit)` (the headroom,
/// "the square-root of the new limit").
///
/// On the success ratio: the "latency" is the cost of one success,
/// `1 / (1 - frac)` attempts, whose ideal (`minRTT`) is 1; the buffer `B`
/// is the declared bound, `B = high / (1 - high)`, so that
/// `gradient = (1 - frac) / (1 - high)`: 1 exactly at `frac = high`.
/// Envoy's periodic minRTT re-measurement (pinning the limit low) has no
/// counterpart here, since the ideal is known.
#[derive(Debug, Clone)]
pub struct Gradient {
    b: Bounds,
    limit: f64,
}

/// Envoy's gradient bounds.
pub const GRADIENT_MIN: f64 = 0.5;
/// Envoy's default `max_gradient`.
pub const GRADIENT_MAX: f64 = 2.0;

impl Gradient {
    /// Opens at `b.start`.
    pub fn new(b: Bounds) -> Self {
        Gradient { limit: b.start, b }
    }

    /// The gradient for one window's failure fraction.
    pub fn gradient(&self, frac: f64) -> f64 {
        ((1.0 - frac) / (1.0 - self.b.high)).clamp(GRADIENT_MIN, GRADIENT_MAX)
    }
}

impl Controller for Gradient {
    fn offer(&mut self, _capacity: f64) -> f64 {
        self.limit
    }

    fn observe(&mut self, w: WindowResult) {
        let Some(frac) = w.frac() else { return };
        let limit = self.gradient(frac) * self.limit;
        self.limit = self.b.clamp(limit + limit.sqrt());
    }
}

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
    sample: f64,
    /// The offer under test and how many windows it has run.
    testing: f64,
    ran: u32,
    settling: u32,
    acc_attempts: u64,
    acc_failures: u64,
    /// The best accepted offer and its successes per window.
    best: Option<(f64, f64)>,
    too_fast: Option<f64>,
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

    fn finish_iteration(&mut self) {
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

/// The reference: 95 % of the window's true capacity, which no real
/// controller can know.
#[derive(Debug, Clone)]
pub struct Oracle {
    b: Bounds,
}

/// The share of the true capacity that the oracle offers.
pub const ORACLE_SHARE: f64 = 0.95;

impl Oracle {
    /// The oracle within `b`.
    pub fn new(b: Bounds) -> Self {
        Oracle { b }
    }
}

impl Controller for Oracle {
    fn offer(&mut self, capacity: f64) -> f64 {
        self.b.clamp(ORACLE_SHARE * capacity)
    }

    fn observe(&mut self, _w: WindowResult) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::Control;

    const HIGH: f64 = 0.05;

    fn bounds(start: f64) -> Bounds {
        Bounds {
            floor: 1.0,
            ceiling: 1000.0,
            start,
            high: HIGH,
        }
    }

    /// A window of 1000 attempts with failure fraction `frac`.
    fn win(frac: f64) -> WindowResult {
        WindowResult {
            attempts: 1000,
            failures: (frac * 1000.0).round() as u64,
            latency: None,
        }
    }

    const EMPTY: WindowResult = WindowResult {
        attempts: 0,
        failures: 0,
        latency: None,
    };

    #[test]
    fn aimd_is_times_point_nine_on_breach_and_plus_one_otherwise() {
        let mut a = Aimd::new(bounds(100.0));
        a.observe(win(0.06));
        assert_eq!(a.offer(0.0), 90.0, "(int) (100 * 0.9)");
        a.observe(win(0.05));
        assert_eq!(a.offer(0.0), 91.0, "frac = high is no breach: +1");
        a.observe(win(0.0));
        assert_eq!(a.offer(0.0), 92.0);
        a.observe(win(0.5));
        assert_eq!(a.offer(0.0), 82.0, "(int) (92 * 0.9) = (int) 82.8");
        a.observe(EMPTY);
        assert_eq!(a.offer(0.0), 82.0, "no traffic: no change");
    }

    #[test]
    fn aimd_truncates_like_the_java_int_cast_and_respects_bounds() {
        let mut a = Aimd::new(bounds(5.0));
        a.observe(win(1.0));
        assert_eq!(a.offer(0.0), 4.0, "(int) 4.5 = 4");
        let mut a = Aimd::new(bounds(1.0));
        a.observe(win(1.0));
        assert_eq!(a.offer(0.0), 1.0, "never below minLimit");
        let mut a = Aimd::new(bounds(1000.0));
        a.observe(win(0.0));
        assert_eq!(a.offer(0.0), 1000.0, "never above maxLimit");
    }

    #[test]
    fn cubic_slow_starts_then_applies_beta_and_fast_convergence() {
        let mut c = Cubic::new(bounds(1.0));
        c.observe(win(0.0));
        assert_eq!(c.offer(0.0), 2.0, "slow start doubles");
        c.observe(win(0.0));
        assert_eq!(c.offer(0.0), 4.0);
        let mut c = Cubic::new(bounds(100.0));
        c.observe(win(0.2));
        assert_eq!(c.offer(0.0), 70.0, "W = beta W");
        assert_eq!(c.w_max, Some(100.0));
        let k = (100.0_f64 * 0.3 / 0.4).cbrt();
        assert!((c.k - k).abs() < 1e-12, "K = cbrt(W_max (1 - beta) / C)");
        // A second breach below W_max: fast convergence.
        c.observe(win(0.2));
        assert_eq!(c.w_max, Some(70.0 * 1.7 / 2.0));
        assert!((c.offer(0.0) - 49.0).abs() < 1e-9);
    }

    #[test]
    fn cubic_grows_along_w_cubic_after_a_breach() {
        let mut c = Cubic::new(bounds(100.0));
        c.observe(win(0.2));
        let k = (100.0_f64 * 0.3 / 0.4).cbrt();
        let mut expected_w = 70.0_f64;
        let mut w_est = 70.0;
        for t in 1..=10 {
            c.observe(win(0.0));
            let cubic = 0.4 * (f64::from(t) - k).powi(3) + 100.0;
            w_est += 3.0 * 0.3 / 1.7;
            expected_w = cubic.clamp(expected_w, 1.5 * expected_w).max(w_est);
            assert!(
                (c.offer(0.0) - expected_w).abs() < 1e-9,
                "t = {t}: {} vs {expected_w}",
                c.offer(0.0)
            );
        }
        // Concave below W_max, then convex above it.
        assert!(expected_w > 100.0);
        // A dead-band window (0 < frac <= high) is no breach.
        let before = c.offer(0.0);
        c.observe(win(0.03));
        assert!(c.offer(0.0) > before);
    }

    #[test]
    fn gradient_follows_envoys_formula_on_the_success_ratio() {
        let mut g = Gradient::new(bounds(100.0));
        // frac = high: gradient 1, plus the headroom sqrt(100) = 10.
        g.observe(win(HIGH));
        assert!((g.offer(0.0) - 110.0).abs() < 1e-9, "{}", g.offer(0.0));
        let mut g = Gradient::new(bounds(100.0));
        g.observe(win(0.0));
        let limit = 100.0 / 0.95;
        assert!((g.offer(0.0) - (limit + f64::sqrt(limit))).abs() < 1e-9);
        // The gradient is clamped to [0.5, 2].
        let mut g = Gradient::new(bounds(100.0));
        g.observe(win(0.9));
        assert!((g.offer(0.0) - (50.0 + f64::sqrt(50.0))).abs() < 1e-9);
        assert_eq!(g.gradient(0.0), 1.0 / 0.95);
        assert_eq!(g.gradient(1.0), 0.5);
        let mut g = Gradient::new(Bounds {
            high: 0.6,
            ..bounds(10.0)
        });
        assert_eq!(g.gradient(0.0), 2.0, "clamped at max_gradient");
        g.observe(EMPTY);
        assert_eq!(g.offer(0.0), 10.0);
    }

    /// Runs findmax against a rejector-like target with capacity `cap`
    /// (10 attempts per worker) and returns its offers.
    fn findmax_run(cap: f64, windows: usize) -> (Findmax, Vec<f64>) {
        let mut f = Findmax::new(bounds(1.0));
        let mut offers = Vec::new();
        for _ in 0..windows {
            let w = f.offer(0.0).floor();
            offers.push(w);
            let attempts = (w * 10.0) as u64;
            let failures = ((w - cap).max(0.0) * 10.0) as u64;
            f.observe(WindowResult {
                attempts,
                failures,
                latency: None,
            });
        }
        (f, offers)
    }

    #[test]
    fn findmax_steps_grow_geometrically_then_restart_from_the_best() {
        let (f, offers) = findmax_run(100.0, 400);
        // base + step * 2^i, each held for a 2-window sample: 1, 2, 4, 8, ...
        assert_eq!(&offers[..8], &[1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 8.0, 8.0]);
        assert!(offers.contains(&128.0), "the doubling overshoots to 128");
        // 128 is rejected (22 % failed): the search restarts at base 64 + 1.
        let after = offers.iter().position(|&o| o == 128.0).unwrap();
        assert!(offers[after..].contains(&65.0));
        assert!(f.is_done(), "the search completes");
        let best = f.best().unwrap();
        // frac <= 5 % holds up to 105 workers (5/105 = 4.8 %).
        assert!((100.0..=105.0).contains(&best), "best {best}");
        assert_eq!(*offers.last().unwrap(), best, "then holds the best");
    }

    #[test]
    fn findmax_rejects_a_rate_below_the_best_rate_cutoff() {
        let mut f = Findmax::new(bounds(1.0));
        f.best = Some((50.0, 500.0));
        f.testing = 60.0;
        f.ran = 2;
        // No failures, but only 400 successes per window (< 90 % of 500).
        f.acc_attempts = 800;
        f.acc_failures = 0;
        f.finish_iteration();
        assert_eq!(f.too_fast, Some(60.0));
        assert!(
            f.sample > FINDMAX_SAMPLE,
            "a rejection zooms the sample out"
        );
    }

    #[test]
    fn oracle_offers_ninety_five_percent_of_the_truth() {
        let mut o = Oracle::new(bounds(1.0));
        assert_eq!(o.offer(100.0), 95.0);
        assert_eq!(o.offer(0.5), 1.0, "within the bounds");
    }

    #[test]
    fn governor_controller_is_the_real_governor() {
        let p = Params::new(Control::Concurrency, Some(100.0), 1.0, None, HIGH, None).unwrap();
        let mut g = Governor::new(p, Profile::Seed);
        let mut reference = ThrottleGovernor::new(p);
        for frac in [0.0, 0.0, 0.0, 0.5, 0.0, 0.02, 0.0] {
            g.observe(win(frac));
            reference.step(1000.0, (frac * 1000.0).round());
            assert_eq!(g.offer(0.0), reference.state().current);
        }
        assert_eq!(g.memory_clears(), Some(0));
        assert_eq!(Oracle::new(bounds(1.0)).memory_clears(), None);
    }

    #[test]
    fn the_latency_governor_steps_with_the_latency_bound() {
        use crate::governor::latency_bound::LatencyWindow;
        let p = Params::new(Control::Concurrency, Some(100.0), 1.0, None, HIGH, None).unwrap();
        let mut g = Governor::new(p, Profile::Seed).with_latency(LatencyBound::bench());
        let mut reference = ThrottleGovernor::new(p);
        // Clean, in the band (2.0..=2.5), over it, unknown.
        for latency in [Some(1.5), Some(1.5), Some(2.2), Some(3.0), None, Some(1.0)] {
            g.observe(WindowResult {
                latency,
                ..win(0.0)
            });
            reference.step_with_latency(
                1000.0,
                0.0,
                Some(LatencyWindow {
                    quantile: 0.99,
                    observed: latency,
                    bound: 2.5,
                    low: 2.0,
                }),
            );
            assert_eq!(g.offer(0.0), reference.state().current);
        }
        // Over the bound it backs off although nothing failed.
        let mut g = Governor::new(p, Profile::Robust).with_latency(LatencyBound::bench());
        for _ in 0..5 {
            g.observe(WindowResult {
                latency: Some(1.5),
                ..win(0.0)
            });
        }
        assert!(g.offer(0.0) > 1.0, "a clean p99 climbs");
        // With the bound on, a window without a quantile never climbs.
        let before = g.offer(0.0);
        g.observe(win(0.0));
        assert_eq!(g.offer(0.0), before);
        let before = g.offer(0.0);
        g.observe(WindowResult {
            latency: Some(5.0),
            ..win(0.0)
        });
        assert!(g.offer(0.0) < before, "{} -> {}", before, g.offer(0.0));
        assert!(ControllerKind::GovernorLatency.needs_latency());
        assert!(!ControllerKind::Governor.needs_latency());
        assert_eq!(
            ControllerKind::GovernorRobustLatency.profile(),
            Some(Profile::Robust)
        );
        assert_eq!(ControllerKind::Aimd.profile(), None);
    }

    #[test]
    fn names_round_trip() {
        use clap::ValueEnum;
        for kind in ControllerKind::ALL {
            assert_eq!(ControllerKind::from_str(kind.name(), false), Ok(kind));
            assert_eq!(kind.to_string(), kind.name());
        }
    }
}
