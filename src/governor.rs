//! The governor: the pure decision rules of `GOVERNOR.md`.
//!
//! Why it is separate: the rules are the product's contract, so they live in
//! one place with no clock, no I/O and no async. Every input is a value (a
//! window's attempts and failures, the committed offer) and every output is a
//! value ([`Outcome`]), which makes the rules exhaustively testable and lets
//! `replay`, `bench`, the live loop and embedding programs share them.
//!
//! What it may touch: [`crate::window`] only (for cumulative readings).
//!
//! The five names of the library interface (`MEMORY_CLEAR_STREAK`,
//! [`Decision`], [`decide`], [`memory_clear_step`], [`ThrottleGovernor`]) keep
//! the signatures given in `GOVERNOR.md`; the richer types beside them carry
//! the mode, the hold reason and the signal for the log line.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::window::{Reading, WindowError, WindowOutcome, WindowTracker};

/// Consecutive evidence windows that clear the congestion memory.
pub const MEMORY_CLEAR_STREAK: u32 = 3;

/// What one window decided, as a raw (unrounded) target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    /// Lower the offer to this value.
    Down(f64),
    /// Raise the offer to this value.
    Up(f64),
    /// Keep the offer.
    Hold,
}

/// Step 4 of `GOVERNOR.md`: decide from one window's attempt-failure fraction.
///
/// `current` is the committed offer and `last_bad` the offer at which
/// congestion was last seen (`None`: unexplored, slow start).
pub fn decide(
    frac: f64,
    current: f64,
    high: f64,
    low: f64,
    floor: f64,
    ceiling: f64,
    last_bad: Option<f64>,
) -> Decision {
    if frac > high {
        let target = (current * (1.0 - frac).clamp(0.25, 0.9)).max(floor);
        return if target < current {
            Decision::Down(target)
        } else {
            Decision::Hold
        };
    }
    if frac < low && current < ceiling {
        let target = match last_bad {
            None => (current * 2.0).max(current + 1.0),
            Some(bad) => {
                let safe = (0.75 * bad).max(floor);
                let fast = (current * 1.5).min(safe);
                if fast > current {
                    fast
                } else {
                    current + (0.02 * bad).max(1.0)
                }
            }
        };
        let target = target.min(ceiling);
        return if target > current {
            Decision::Up(target)
        } else {
            Decision::Hold
        };
    }
    Decision::Hold
}

/// Step 3 of `GOVERNOR.md`: fold one window's evidence into the clean streak.
///
/// Returns the new streak and whether the memory clears on this window.
pub fn memory_clear_step(streak: u32, evidence: bool) -> (u32, bool) {
    if !evidence {
        return (0, false);
    }
    let streak = streak.saturating_add(1);
    if streak >= MEMORY_CLEAR_STREAK {
        (0, true)
    } else {
        (streak, false)
    }
}

/// Which knob of the load tool is governed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Control {
    /// Workers, users or VUs: an integer knob.
    #[default]
    Concurrency,
    /// Requests or iterations per second: a float knob, never rounded.
    Rate,
}

impl Control {
    /// Whether the knob only takes whole numbers.
    pub fn is_integer(self) -> bool {
        matches!(self, Control::Concurrency)
    }

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Control::Concurrency => "concurrency",
            Control::Rate => "rate",
        }
    }
}

impl fmt::Display for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The label of a movement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Up in slow start (no congestion memory).
    Climbing,
    /// Up well below the last congestion point (`target < 0.75 * last_bad`).
    Reclimbing,
    /// Up near the last congestion point.
    Probing,
    /// Down.
    BackingOff,
}

impl Mode {
    /// The spelling used in logs, metrics and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Climbing => "climbing",
            Mode::Reclimbing => "reclimbing",
            Mode::Probing => "probing",
            Mode::BackingOff => "backing-off",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a window held the offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HoldReason {
    /// The window resolved no attempts.
    NoTraffic,
    /// `low <= frac <= high`.
    DeadBand,
    /// Clean, but the offer is already at (or above) the ceiling.
    AtCeiling,
    /// Over the bound, but the offer is already at the floor.
    AtFloor,
    /// The first reading only sets the baseline.
    Baseline,
    /// A counter went down: the window was discarded and the baseline rebased.
    CounterReset,
    /// The signal could not be read or was invalid for this window.
    SignalError,
    /// `robust` and `gentle` only: the window right after a movement, whose failures may
    /// still belong to the previous offer.
    Settling,
    /// `robust` and `gentle` only: too few attempts since the last decision to tell a
    /// breach from noise; the window is pooled with the next ones.
    Gathering,
    /// `robust` and `gentle` only: clean, but the next additive probe waits for more
    /// clean windows, because the last probes found the limit.
    Dwelling,
    /// The window straddled a change of the offer in effect (or fell within
    /// the signal's lag after one), so its attempts belong to no one offer:
    /// it is not decided on (the engine's attribution, not a rule).
    OfferChange,
    /// Latency bound only: failures clean, but the window's latency
    /// quantile is between its clean level and the bound ([`latency_bound`]).
    LatencyBand,
    /// Latency bound only: the window has no latency quantile (no
    /// observations, or the latency source failed), so it cannot be clean.
    NoLatency,
}

impl HoldReason {
    /// The spelling used in logs, metrics and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            HoldReason::NoTraffic => "no-traffic",
            HoldReason::DeadBand => "dead-band",
            HoldReason::AtCeiling => "at-ceiling",
            HoldReason::AtFloor => "at-floor",
            HoldReason::Baseline => "baseline",
            HoldReason::CounterReset => "counter-reset",
            HoldReason::SignalError => "signal-error",
            HoldReason::Settling => "settling",
            HoldReason::Gathering => "gathering",
            HoldReason::Dwelling => "dwelling",
            HoldReason::OfferChange => "offer-change",
            HoldReason::LatencyBand => "latency-band",
            HoldReason::NoLatency => "no-latency",
        }
    }
}

impl fmt::Display for HoldReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The threshold a window's fraction crossed, for the log line.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum Threshold {
    /// `frac > high`.
    High(f64),
    /// `frac < low`.
    Low(f64),
    /// `low <= frac <= high`.
    Band(f64, f64),
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::High(h) => write!(f, "> high {}", pct(*h)),
            Threshold::Low(l) => write!(f, "< low {}", pct(*l)),
            Threshold::Band(l, h) => write!(f, "within [{}, {}]", pct(*l), pct(*h)),
        }
    }
}

/// Formats a fraction as a percentage with up to two decimals.
pub fn pct(frac: f64) -> String {
    let p = frac * 100.0;
    let s = format!("{p:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// The window that caused a decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Signal {
    /// Resolved attempts in the window.
    pub attempts: f64,
    /// Failed attempts in the window.
    pub failures: f64,
    /// `failures / attempts`; `None` without traffic.
    pub frac: Option<f64>,
    /// The threshold that the fraction crossed, if any.
    pub threshold: Option<Threshold>,
}

/// The full result of folding one window into a [`ThrottleGovernor`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Outcome {
    /// The decision with the knob's rounding applied (`Up`/`Down` carry `to`).
    #[serde(skip)]
    pub decision: Decision,
    /// The committed offer before the decision.
    pub from: f64,
    /// The offer after the decision (equal to `from` on hold).
    pub to: f64,
    /// Set on Up and Down.
    pub mode: Option<Mode>,
    /// Set on Hold.
    pub reason: Option<HoldReason>,
    /// The window; `None` for a baseline or reset reading.
    pub signal: Option<Signal>,
    /// The congestion memory after this window.
    pub last_bad: Option<f64>,
    /// The clean streak after this window.
    pub clean_streak: u32,
    /// Whether the memory cleared on this window.
    pub memory_cleared: bool,
    /// `robust` and `gentle` only: the pooled sample a decision used when it spans more
    /// than this window (`None` under the seed rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// The window's latency against its bound, when one is set
    /// ([`latency_bound`]); `None` without a latency bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<latency_bound::LatencySignal>,
}

/// The pooled windows behind a `robust` decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Evidence {
    /// Resolved attempts over the pooled windows.
    pub attempts: f64,
    /// Failed attempts over the pooled windows.
    pub failures: f64,
    /// How many windows were pooled.
    pub windows: u32,
}

impl Outcome {
    /// Whether the offer moves.
    pub fn is_movement(&self) -> bool {
        !matches!(self.decision, Decision::Hold)
    }

    /// "up", "down" or "hold".
    pub fn decision_str(&self) -> &'static str {
        match self.decision {
            Decision::Up(_) => "up",
            Decision::Down(_) => "down",
            Decision::Hold => "hold",
        }
    }
}

/// Invalid governor parameters.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ParamError {
    /// A value is NaN, infinite where it must be finite, or negative.
    #[error("`{field}` must be a finite, non-negative number (got {value})")]
    NotFiniteNonNegative {
        /// The parameter's name.
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// `high` outside (0, 1).
    #[error("`high` must be a fraction in (0, 1), e.g. 0.05 (got {0})")]
    HighOutOfRange(f64),
    /// `low` outside (0, high).
    #[error("`low` must be greater than 0 and less than `high` ({high}) (got {low})")]
    LowOutOfRange {
        /// The value of `low`.
        low: f64,
        /// The value of `high`.
        high: f64,
    },
    /// `floor > ceiling`.
    #[error("`floor` ({floor}) must not exceed `ceiling` ({ceiling})")]
    FloorAboveCeiling {
        /// The value of `floor`.
        floor: f64,
        /// The value of `ceiling`.
        ceiling: f64,
    },
    /// `start` outside [floor, ceiling].
    #[error("`start` ({start}) must lie in [floor, ceiling] = [{floor}, {ceiling}]")]
    StartOutOfRange {
        /// The value of `start`.
        start: f64,
        /// The value of `floor`.
        floor: f64,
        /// The value of `ceiling`.
        ceiling: f64,
    },
    /// A concurrency parameter that is not a whole number.
    #[error("`{field}` must be a whole number for control = \"concurrency\" (got {value})")]
    NotInteger {
        /// The parameter's name.
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// A floor of zero: at an offer of 0 there is no traffic, so no window
    /// could ever show that the target recovered.
    #[error("`floor` must be greater than 0: at an offer of 0 there is no traffic, so the governor could never see the target recover")]
    ZeroFloor,
    /// A resolution that is not a finite number above 0.
    #[error("`resolution` must be a finite number > 0, e.g. 0.01 for a rate rounded to 2 decimals (got {0})")]
    ResolutionNotPositive(f64),
    /// `ceiling` missing for concurrency.
    #[error("`ceiling` is required for control = \"concurrency\" (the authored concurrency)")]
    CeilingRequired,
}

/// The validated parameters of one governed target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Params {
    /// Which knob is governed.
    pub control: Control,
    /// The authored offer; `f64::INFINITY` for an unbounded rate.
    pub ceiling: f64,
    /// The offer never goes below this.
    pub floor: f64,
    /// The opening offer.
    pub start: f64,
    /// Back off when `frac > high`.
    pub high: f64,
    /// A window is clean when `frac < low`.
    pub low: f64,
    /// The knob's resolution, when configured ([`Params::with_resolution`]);
    /// `None`: 1 for concurrency, relative
    /// [`exact::RATE_RELATIVE_RESOLUTION`] for rate.
    pub resolution: Option<f64>,
}

impl Params {
    /// Validates parameters, filling the defaults of `GOVERNOR.md`:
    /// `low = high / 5`, `start = floor`, an unbounded ceiling for rate.
    ///
    /// Returns every problem found, not just the first.
    pub fn new(
        control: Control,
        ceiling: Option<f64>,
        floor: f64,
        start: Option<f64>,
        high: f64,
        low: Option<f64>,
    ) -> Result<Params, Vec<ParamError>> {
        let mut errors = Vec::new();
        let mut finite = |field: &'static str, v: f64| {
            let ok = v.is_finite() && v >= 0.0;
            if !ok {
                errors.push(ParamError::NotFiniteNonNegative { field, value: v });
            }
            ok
        };
        let ceiling_ok = match ceiling {
            Some(c) => finite("ceiling", c),
            None => true,
        };
        let floor_ok = finite("floor", floor);
        let start_ok = start.map(|s| finite("start", s)).unwrap_or(true);
        let high_ok = finite("high", high);
        let low_ok = low.map(|l| finite("low", l)).unwrap_or(true);

        let ceiling = match (ceiling, control) {
            (Some(c), _) => c,
            (None, Control::Rate) => f64::INFINITY,
            (None, Control::Concurrency) => {
                errors.push(ParamError::CeilingRequired);
                f64::NAN
            }
        };
        if floor_ok && floor == 0.0 {
            errors.push(ParamError::ZeroFloor);
        }
        if high_ok && !(high > 0.0 && high < 1.0) {
            errors.push(ParamError::HighOutOfRange(high));
        }
        let low = low.unwrap_or(high / 5.0);
        if high_ok && low_ok && !(low > 0.0 && low < high) {
            errors.push(ParamError::LowOutOfRange { low, high });
        }
        if control.is_integer() {
            for (field, v, ok) in [
                ("ceiling", ceiling, ceiling_ok),
                ("floor", floor, floor_ok),
                ("start", start.unwrap_or(0.0), start_ok),
            ] {
                if ok && v.is_finite() && v.fract() != 0.0 {
                    errors.push(ParamError::NotInteger { field, value: v });
                }
            }
        }
        let bounds_ok = ceiling_ok && floor_ok && !ceiling.is_nan();
        if bounds_ok && floor > ceiling {
            errors.push(ParamError::FloorAboveCeiling { floor, ceiling });
        }
        let start = match start {
            Some(s) => {
                if bounds_ok && start_ok && floor <= ceiling && !(floor..=ceiling).contains(&s) {
                    errors.push(ParamError::StartOutOfRange {
                        start: s,
                        floor,
                        ceiling,
                    });
                }
                s
            }
            // "`floor`, clamped into [floor, ceiling]"
            None => floor.min(ceiling),
        };
        if errors.is_empty() {
            Ok(Params {
                control,
                ceiling,
                floor,
                start,
                high,
                low,
                resolution: None,
            })
        } else {
            Err(errors)
        }
    }

    /// Applies the knob's integer rules to a raw decision.
    ///
    /// Concurrency: a Down strictly lowers the integer value unless at the
    /// floor, an Up strictly raises it unless at the ceiling, and nothing
    /// leaves [floor, ceiling]. Rate: values pass through unrounded.
    pub fn round(&self, decision: Decision, current: f64) -> Decision {
        if !self.control.is_integer() {
            return decision;
        }
        match decision {
            Decision::Down(t) => {
                let v = t.floor().min(current.ceil() - 1.0).max(self.floor);
                if v < current {
                    Decision::Down(v)
                } else {
                    Decision::Hold
                }
            }
            Decision::Up(t) => {
                let v = t.floor().max(current.floor() + 1.0).min(self.ceiling);
                if v > current {
                    Decision::Up(v)
                } else {
                    Decision::Hold
                }
            }
            Decision::Hold => Decision::Hold,
        }
    }
}

/// The mutable state of `GOVERNOR.md`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The committed offer.
    pub current: f64,
    /// The offer at which congestion was last seen.
    pub last_bad: Option<f64>,
    /// Consecutive clean windows at or above `last_bad`.
    pub clean_streak: u32,
}

/// A named set of governor rules.
///
/// `seed` is exactly `GOVERNOR.md`, and the library's
/// [`ThrottleGovernor::new`] keeps it. `robust` ([`robust`]) is an opt-in
/// layer on top of it; `gentle` is robust's rules with rarer probes of a
/// wall that a probe found costly ([`robust::Tunables::GENTLE`]), chosen by
/// measurement (docs/BENCHMARKS.md, "The `gentle` profile"), and the
/// engine's early verdicts ([`Profile::early_verdicts`]). A config
/// without `profile` gets `gentle`; one that names a profile keeps its
/// meaning (`"default"` is an old spelling of `seed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Exactly the rules of GOVERNOR.md: assume the most fragile target.
    /// Spelled `"default"` before issue 26; that spelling still means it.
    #[serde(alias = "default")]
    Seed,
    /// The seed rules plus the evidence, lag and re-probe fixes of
    /// [`robust`], for noisy, lagged and drifting targets and long runs:
    /// pooled evidence before a verdict, a slow start that slows down from
    /// 64 on, probes that pay for their failures, and no climb while the
    /// successes stop following the offer (a plateau).
    Robust,
    /// Robust's rules, gentler on a wall that rejects fast: rarer probes of
    /// a wall that a probe found costly ([`robust::Tunables::GENTLE`]), and
    /// early verdicts on breaching windows in the engine. What a config
    /// without `profile` gets.
    #[default]
    Gentle,
}

impl Profile {
    /// Every profile, in the order they were introduced.
    pub const ALL: [Profile; 3] = [Profile::Seed, Profile::Robust, Profile::Gentle];

    /// The spelling used in the config, on the command line and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Seed => "seed",
            Profile::Robust => "robust",
            Profile::Gentle => "gentle",
        }
    }

    /// Whether the engine may close a breaching window early (before its
    /// full length) and decide on it: `gentle` only. The seed and robust
    /// profiles keep their exact meaning: whole windows.
    pub fn early_verdicts(self) -> bool {
        matches!(self, Profile::Gentle)
    }

    /// The tunables of robust's code path, for the profiles that take it
    /// (`None` for the seed rules).
    pub fn robust_tunables(self) -> Option<robust::Tunables> {
        match self {
            Profile::Seed => None,
            Profile::Robust => Some(robust::Tunables::ROBUST),
            Profile::Gentle => Some(robust::Tunables::GENTLE),
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The per-target governor: parameters, state and window bookkeeping.
#[derive(Debug, Clone)]
pub struct ThrottleGovernor {
    params: Params,
    state: State,
    window: WindowTracker,
    profile: Profile,
    /// The `robust` layer's own memory (robust and gentle); untouched by
    /// the seed profile.
    robust: robust::RobustState,
    /// The knob's resolution as learned from read-backs that swallowed an
    /// Up ([`exact`]); 0 until one does.
    learned_resolution: f64,
    /// The last Up decided, `(from, to)`, until the next read-back.
    last_up: Option<(f64, f64)>,
}

impl ThrottleGovernor {
    /// A governor that opens at `params.start` in slow start, with the
    /// seed rules of `GOVERNOR.md`, exactly.
    pub fn new(params: Params) -> Self {
        Self::with_profile(params, Profile::Seed)
    }

    /// A governor that opens at `params.start` in slow start, with the rules
    /// of `profile`.
    pub fn with_profile(params: Params, profile: Profile) -> Self {
        ThrottleGovernor {
            state: State {
                current: params.start,
                last_bad: None,
                clean_streak: 0,
            },
            params,
            window: WindowTracker::default(),
            profile,
            robust: robust::RobustState::new(profile.robust_tunables()),
            learned_resolution: 0.0,
            last_up: None,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The rule set in use.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Restores memory (`last_bad`, streak), e.g. from a state file.
    ///
    /// A `last_bad` outside [floor, ceiling] is clamped into it; a
    /// non-finite or negative one is refused and the memory stays unset
    /// (slow start). The result says which.
    pub fn restore_memory(&mut self, last_bad: Option<f64>, clean_streak: u32) -> Committed {
        let (last_bad, verdict) = match last_bad {
            None => (None, Committed::Adopted),
            Some(bad) => match self.bound(bad) {
                Committed::Invalid { .. } => (None, Committed::Invalid { value: bad }),
                Committed::Clamped { from, to } => (Some(to), Committed::Clamped { from, to }),
                Committed::Adopted => (Some(bad), Committed::Adopted),
            },
        };
        self.state.last_bad = last_bad;
        self.state.clean_streak = if last_bad.is_some() { clean_streak } else { 0 };
        self.robust = robust::RobustState::new(self.profile.robust_tunables());
        verdict
    }

    /// Sets the committed offer, as read back from the tool. The next window
    /// steps from this value; an outside writer is not fought.
    ///
    /// The offer stays within [floor, ceiling]: a value outside is clamped
    /// into it, and a non-finite or negative one is refused (the offer is
    /// unchanged). The result says which, so the caller can count and log it.
    pub fn set_current(&mut self, committed: f64) -> Committed {
        let verdict = self.bound(committed);
        let value = match verdict {
            Committed::Invalid { .. } => return verdict,
            Committed::Clamped { to, .. } => to,
            Committed::Adopted => committed,
        };
        self.learn_from_read_back(value);
        if value != self.state.current {
            self.robust_offer_changed();
        }
        self.state.current = value;
        verdict
    }

    /// Folds one window's deltas (`attempts` resolved, `failures` failed)
    /// into the state and returns the decision. The caller guarantees
    /// `0 <= failures <= attempts`, both finite (the [`crate::window`]
    /// module checks this for cumulative readings).
    ///
    /// After an Up or Down, `current` becomes the decided value until the
    /// caller reports a different committed value with [`Self::set_current`].
    pub fn step(&mut self, attempts: f64, failures: f64) -> Outcome {
        let outcome = match self.profile.robust_tunables() {
            None => self.step_default(attempts, failures),
            Some(_) => self.step_robust(attempts, failures),
        };
        self.last_up = match outcome.decision {
            Decision::Up(to) => Some((outcome.from, to)),
            _ => None,
        };
        outcome
    }

    /// [`Self::step`] under the rules of `GOVERNOR.md`, exactly.
    fn step_default(&mut self, attempts: f64, failures: f64) -> Outcome {
        let p = self.params;
        let from = self.state.current;
        if attempts <= 0.0 {
            return self.hold(HoldReason::NoTraffic, Some(no_traffic(failures)), false);
        }
        let frac = failures / attempts;

        let memory_cleared = self.memory_step(frac < p.low, from);

        let raw = self.decide_at(frac, from);
        let decision = p.round(self.exact_up(raw, from), from);
        let signal = self.signal_of(attempts, failures);
        match decision {
            Decision::Down(to) => {
                self.state.last_bad = Some(from);
                self.state.current = to;
                self.outcome(
                    decision,
                    from,
                    to,
                    Some(Mode::BackingOff),
                    None,
                    signal,
                    memory_cleared,
                )
            }
            Decision::Up(to) => {
                let mode = match self.state.last_bad {
                    None => Mode::Climbing,
                    Some(bad) if to < 0.75 * bad => Mode::Reclimbing,
                    Some(_) => Mode::Probing,
                };
                self.state.current = to;
                self.outcome(decision, from, to, Some(mode), None, signal, memory_cleared)
            }
            Decision::Hold => {
                let reason = if frac > p.high {
                    HoldReason::AtFloor
                } else if frac < p.low {
                    HoldReason::AtCeiling
                } else {
                    HoldReason::DeadBand
                };
                self.hold(reason, Some(signal), memory_cleared)
            }
        }
    }

    /// GOVERNOR.md's step 3, while `last_bad` is set: a window that is
    /// `clean` at or above `last_bad` adds to the streak, any other resets
    /// it, and the third in a row clears the memory. Returns whether it
    /// cleared on this window.
    fn memory_step(&mut self, clean: bool, from: f64) -> bool {
        let Some(bad) = self.state.last_bad else {
            return false;
        };
        let evidence = clean && self.at_or_above(from, bad);
        let (streak, clear) = memory_clear_step(self.state.clean_streak, evidence);
        self.state.clean_streak = streak;
        if clear {
            self.state.last_bad = None;
        }
        clear
    }

    /// GOVERNOR.md's step 4 ([`decide`]) at `from`, with this governor's
    /// parameters and memory.
    fn decide_at(&self, frac: f64, from: f64) -> Decision {
        let p = self.params;
        decide(
            frac,
            from,
            p.high,
            p.low,
            p.floor,
            p.ceiling,
            self.state.last_bad,
        )
    }

    /// The window behind a decision (`attempts > 0`), with the threshold its
    /// fraction crossed.
    fn signal_of(&self, attempts: f64, failures: f64) -> Signal {
        let p = self.params;
        let frac = failures / attempts;
        let threshold = if frac > p.high {
            Threshold::High(p.high)
        } else if frac < p.low {
            Threshold::Low(p.low)
        } else {
            Threshold::Band(p.low, p.high)
        };
        Signal {
            attempts,
            failures,
            frac: Some(frac),
            threshold: Some(threshold),
        }
    }

    /// Folds one cumulative reading: the first sets the baseline, a counter
    /// reset rebases, and otherwise the window's deltas go to [`Self::step`].
    pub fn observe(&mut self, reading: Reading) -> Result<Outcome, WindowError> {
        match self.window.observe(reading)? {
            WindowOutcome::Baseline => Ok(self.hold(HoldReason::Baseline, None, false)),
            WindowOutcome::CounterReset => Ok(self.hold(HoldReason::CounterReset, None, false)),
            WindowOutcome::Window(w) => Ok(self.step(w.attempts, w.failures)),
        }
    }

    /// Access to the window bookkeeping (e.g. to rebase after a restart).
    pub fn window_mut(&mut self) -> &mut WindowTracker {
        &mut self.window
    }

    /// A hold outcome that does not touch the memory.
    pub fn hold(&self, reason: HoldReason, signal: Option<Signal>, cleared: bool) -> Outcome {
        let from = self.state.current;
        let signal = signal.unwrap_or(Signal {
            attempts: 0.0,
            failures: 0.0,
            frac: None,
            threshold: None,
        });
        let signal = match reason {
            HoldReason::Baseline
            | HoldReason::CounterReset
            | HoldReason::SignalError
            | HoldReason::OfferChange => None,
            _ => Some(signal),
        };
        Outcome {
            decision: Decision::Hold,
            from,
            to: from,
            mode: None,
            reason: Some(reason),
            signal,
            last_bad: self.state.last_bad,
            clean_streak: self.state.clean_streak,
            memory_cleared: cleared,
            evidence: None,
            latency: None,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn outcome(
        &self,
        decision: Decision,
        from: f64,
        to: f64,
        mode: Option<Mode>,
        reason: Option<HoldReason>,
        signal: Signal,
        memory_cleared: bool,
    ) -> Outcome {
        Outcome {
            decision,
            from,
            to,
            mode,
            reason,
            signal: Some(signal),
            last_bad: self.state.last_bad,
            clean_streak: self.state.clean_streak,
            memory_cleared,
            evidence: None,
            latency: None,
        }
    }
}

fn no_traffic(failures: f64) -> Signal {
    Signal {
        attempts: 0.0,
        failures,
        frac: None,
        threshold: None,
    }
}

pub mod advice;
pub mod exact;
pub mod latency_bound;
pub mod robust;

pub use exact::{Committed, RATE_RELATIVE_RESOLUTION};

#[cfg(test)]
mod tests;
