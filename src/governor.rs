//! The governor: the pure decision rules of `docs/GOVERNOR.md`.
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
//! the signatures given in `docs/GOVERNOR.md`; the richer types beside them carry
//! the mode, the hold reason and the signal for the log line.
//!
//! # Layout
//! - this file: the seed rules of `docs/GOVERNOR.md` ([`decide`],
//!   [`memory_clear_step`]) and the per-target [`ThrottleGovernor`] that
//!   applies them;
//! - `params`: [`Params`] (validation, defaults, the knob's rounding) and
//!   [`Control`]; `outcome`: [`Outcome`] and its parts; `profile`:
//!   [`Profile`];
//! - [`exact`]: the knob's resolution and the bounds of the committed offer;
//! - [`robust`]: the `robust` and `gentle` profiles' layer;
//! - [`latency_bound`]: the optional latency bound beside the failure bound;
//! - [`advice`]: which windows of the seed profile another profile would
//!   handle better.

use serde::{Deserialize, Serialize};

use crate::window::{Reading, WindowError, WindowOutcome, WindowTracker};

/// Consecutive evidence windows that clear the congestion memory.
pub const MEMORY_CLEAR_STREAK: u32 = 3;

/// The safe zone below the last congestion point, as a share of it: below
/// `SAFE_ZONE * last_bad` the offer climbs multiplicatively (the fast
/// reclimb, x1.5 a window), and an Up that stays below it is a reclimb; at
/// or above it the offer only probes additively. One number for both
/// rules, so the mode label always says which zone the Up was in.
pub const SAFE_ZONE: f64 = 0.75;

/// The top of the safe zone: `max(SAFE_ZONE * last_bad, floor)`, where the
/// fast reclimb stops.
pub(crate) fn safe_zone_top(last_bad: f64, floor: f64) -> f64 {
    (SAFE_ZONE * last_bad).max(floor)
}

/// The back-off factor for a failure fraction `frac` over `high`:
/// `clamp(1 - frac, 0.25, 0.9)`.
pub(crate) fn back_off_factor(frac: f64) -> f64 {
    (1.0 - frac).clamp(0.25, 0.9)
}

/// The additive probe near the congestion point `last_bad`:
/// `max(1, 0.02 last_bad)`.
pub(crate) fn probe_step(last_bad: f64) -> f64 {
    (0.02 * last_bad).max(1.0)
}

/// The label of an Up to `to` under the memory `last_bad`: `climbing`
/// without one (slow start), `reclimbing` below the [`SAFE_ZONE`], else
/// `probing`.
pub(crate) fn up_mode(to: f64, last_bad: Option<f64>) -> Mode {
    match last_bad {
        None => Mode::Climbing,
        Some(bad) if to < SAFE_ZONE * bad => Mode::Reclimbing,
        Some(_) => Mode::Probing,
    }
}

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

/// Step 4 of `docs/GOVERNOR.md`: decide from one window's attempt-failure fraction.
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
        let target = (current * back_off_factor(frac)).max(floor);
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
                let safe = safe_zone_top(bad, floor);
                let fast = (current * 1.5).min(safe);
                if fast > current {
                    fast
                } else {
                    current + probe_step(bad)
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

/// Step 3 of `docs/GOVERNOR.md`: fold one window's evidence into the clean streak.
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

/// The mutable state of `docs/GOVERNOR.md`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The committed offer.
    pub current: f64,
    /// The offer at which congestion was last seen.
    pub last_bad: Option<f64>,
    /// Consecutive clean windows at or above `last_bad`.
    pub clean_streak: u32,
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
    /// seed rules of `docs/GOVERNOR.md`, exactly.
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

    /// Says that the next window's counts span `windows` nominal windows
    /// (a window that ran long, or over a read that failed in between, spans
    /// its time in windows: 6 s of a 3 s cadence spans two; an early
    /// verdict spans less than one).
    /// The verdict rules read ratios and do not care; `robust`'s plateau
    /// test measures successes per unit of offer per window, and a window
    /// twice as long looks like a yield twice as high: after it, no offer
    /// ever matched it, and the governor held for good (seen under load:
    /// stuck at 2 with every window clean). Consumed by the next
    /// [`Self::step`]; a value that is not finite and positive counts as 1.
    pub fn set_window_span(&mut self, windows: f64) {
        self.robust.window_span = if windows.is_finite() && windows > 0.0 {
            windows
        } else {
            1.0
        };
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
        // The span was this window's only.
        self.robust.window_span = 1.0;
        self.last_up = match outcome.decision {
            Decision::Up(to) => Some((outcome.from, to)),
            _ => None,
        };
        outcome
    }

    /// [`Self::step`] under the rules of `docs/GOVERNOR.md`, exactly.
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
            Decision::Down(to) => self.back_off(from, to, from, signal, memory_cleared),
            Decision::Up(to) => self.move_up(from, to, signal, memory_cleared),
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

    /// docs/GOVERNOR.md's step 3, while `last_bad` is set: a window that is
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

    /// docs/GOVERNOR.md's step 4 ([`decide`]) at `from`, with this governor's
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
        Signal {
            attempts,
            failures,
            frac: Some(frac),
            threshold: Some(Threshold::of(frac, p.low, p.high)),
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
            memory_refuted: false,
            evidence: None,
            confidence: None,
            latency: None,
        }
    }

    /// A Down from `from` to `to`, whatever drove it: records `bad` as the
    /// congestion point, commits `to`, and labels the outcome
    /// `backing-off`.
    fn back_off(
        &mut self,
        from: f64,
        to: f64,
        bad: f64,
        signal: Signal,
        memory_cleared: bool,
    ) -> Outcome {
        self.state.last_bad = Some(bad);
        self.state.current = to;
        self.movement(
            Decision::Down(to),
            from,
            to,
            Mode::BackingOff,
            signal,
            memory_cleared,
        )
    }

    /// An Up from `from` to `to`: commits `to`, labelled by [`up_mode`].
    fn move_up(&mut self, from: f64, to: f64, signal: Signal, memory_cleared: bool) -> Outcome {
        let mode = up_mode(to, self.state.last_bad);
        self.state.current = to;
        self.movement(Decision::Up(to), from, to, mode, signal, memory_cleared)
    }

    /// A movement's outcome: `decision` (Up or Down to `to`) from `from`,
    /// labelled `mode`, with the memory as it now is.
    fn movement(
        &self,
        decision: Decision,
        from: f64,
        to: f64,
        mode: Mode,
        signal: Signal,
        memory_cleared: bool,
    ) -> Outcome {
        Outcome {
            decision,
            from,
            to,
            mode: Some(mode),
            reason: None,
            signal: Some(signal),
            last_bad: self.state.last_bad,
            clean_streak: self.state.clean_streak,
            memory_cleared,
            memory_refuted: false,
            evidence: None,
            confidence: None,
            latency: None,
        }
    }
}

pub mod advice;
pub mod exact;
pub mod latency_bound;
mod outcome;
mod params;
mod profile;
pub mod robust;

pub use exact::{Committed, RATE_RELATIVE_RESOLUTION};
use outcome::no_traffic;
pub use outcome::{
    pct, wilson_interval, Confidence, Evidence, HoldReason, Mode, Outcome, Signal, Threshold,
    VerdictClass,
};
pub use params::{Control, ParamError, Params};
pub use profile::Profile;

#[cfg(test)]
mod tests;
