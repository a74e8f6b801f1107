//! The `robust` layer's memory and vocabulary: [`RobustState`] (the pools,
//! the runs, the dwell and the cost owed, kept beside the seed's
//! `State`), and the values its steps pass between them ([`Judgement`],
//! [`Verdict`], [`Burst`], [`Move`]).
//!
//! Why it exists: the layer is a small machine whose every rule reads and
//! sets this memory; the fields, with what each one means, are its
//! reference, and keeping them apart from the rules keeps both readable.

use super::background::{Background, Thresholds};
use super::silence::Silence;
#[cfg(doc)]
use super::tunables::SLOW_START_DOUBLING_BELOW;
use super::tunables::{Tunables, BREACH_WINDOWS, MAX_DWELL, SLOW_START_GAIN};
use crate::governor::{Evidence, HoldReason};

/// The robust layer's own memory, beside the default [`State`](crate::governor::State).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RobustState {
    /// Attempts pooled since the last verdict.
    pub(super) pool_attempts: f64,
    /// Failures pooled since the last verdict.
    pub(super) pool_failures: f64,
    /// Windows pooled since the last verdict.
    pub(super) pool_windows: u32,
    /// The nominal windows they span (a window over a failed read spans
    /// two): the plateau test's unit of time.
    pub(super) pool_span: f64,
    /// The span of the next window, in nominal windows
    /// ([`set_window_span`](crate::governor::ThrottleGovernor::set_window_span));
    /// back to 1 after each step.
    pub(crate) window_span: f64,
    /// Attempts at the current offer (since the last movement, settle
    /// windows excluded): the evidence for a breach.
    pub(super) offer_attempts: f64,
    /// Failures at the current offer.
    pub(super) offer_failures: f64,
    /// The last [`BREACH_WINDOWS`] windows at the current offer, as
    /// (attempts, failures), oldest overwritten first.
    pub(super) offer_recent: [(f64, f64); BREACH_WINDOWS],
    /// How many of `offer_recent` are filled.
    pub(super) offer_len: usize,
    /// `gentle`: attempts at the current offer since its last failure, or
    /// since the last verdict the run gave: the worker grain's run. A
    /// verdict on a full pool leaves it running (measured: consuming it
    /// there too cost `bursts n=40` 0.901 → 0.839 of the oracle's goodput
    /// at 600 × 30).
    pub(super) clean_run_attempts: f64,
    /// Set right after a Down: the next window settles.
    pub(super) settle: bool,
    /// The fraction that caused the last Down.
    pub(super) last_down_frac: f64,
    /// The next re-probe increment, while re-probing after a memory clear.
    pub(super) reprobe: Option<f64>,
    /// The offer of the most recent clean verdict.
    pub(super) last_clean: Option<f64>,
    /// The counts at the offer of `last_clean`, all told, at its verdict:
    /// how far under that offer a wall could be.
    pub(super) clean_counts: (f64, f64),
    /// Attempts per unit of offer per window in the pool that judged
    /// `last_clean`: what a window's attempts are when they follow the
    /// offer.
    pub(super) clean_rate: f64,
    /// `last_clean` as it was at the last Down.
    pub(super) clean_before_down: Option<f64>,
    /// Set by an additive Up until its first verdict: the offer it left.
    pub(super) additive_from: Option<f64>,
    /// Set by an additive Up until a clean verdict or the next movement:
    /// the offer it left (a probe in the dead band is still a probe).
    pub(super) probing_from: Option<f64>,
    /// Every pooled window at the current offer since it was reached, as
    /// (attempts, failures): the evidence that an offer fails for good.
    pub(super) offer_all: (f64, f64),
    /// Set by a step down out of a lasting dead band, until an Up, a clean
    /// verdict or a breach: the counts at the offer it left.
    pub(super) stepped_down: Option<(f64, f64)>,
    /// Set by a [`Move::ThinSettle`], until an Up or a breach: the counts
    /// at the offer it left. Unlike `stepped_down`, a clean verdict does
    /// not clear it: under a background read low, clean verdicts come
    /// between the band's, and the excuse needs the lower offer's counts
    /// all told.
    pub(super) thin_stepped: Option<(f64, f64)>,
    /// Set by any Up until its first verdict.
    pub(super) fresh_up: bool,
    /// Set by a retreat until its first verdict.
    pub(super) retreated: bool,
    /// Set by a Down, cleared by an Up or a clean verdict: further Downs
    /// belong to the same congestion episode.
    pub(super) in_episode: bool,
    /// Consecutive clean verdicts at the current offer.
    pub(super) clean_run: u32,
    /// Set by a Down on an unprovoked breach, until its settle window.
    pub(super) burst: Option<Burst>,
    /// Consecutive verdicts at the current offer that were no breach.
    pub(super) calm_run: u32,
    /// Returns into a burst shown to go on, since the last clean verdict.
    pub(super) ongoing_returns: u32,
    /// Consecutive dead-band verdicts at the current offer.
    pub(super) band_run: u32,
    /// Clean verdicts the next additive probe waits for.
    pub(super) dwell: u32,
    /// Attempts of the clean verdicts at the current offer.
    pub(super) clean_attempts: f64,
    /// The last failed additive probe: the offer it started from, and the
    /// clean attempts a probe from there (or higher) waits for: its
    /// failures over `high`.
    pub(super) owed: Option<(f64, f64)>,
    /// Whether the last step was a failed probe's Down: until the next
    /// step, discarded windows' failures are that probe's
    /// ([`super::late`]).
    pub(super) late_cost: bool,
    /// The opening slow start's gain from [`SLOW_START_DOUBLING_BELOW`] on.
    pub(super) opening_gain: f64,
    /// The best lower confidence bound seen of the successes per unit of
    /// offer per window, over clean verdicts.
    pub(super) best_yield: f64,
    /// The profile's numbers.
    pub(super) tunables: Tunables,
    /// The counts at every offer, for the background estimate.
    pub(super) background: Background,
    /// The verdict levels of the last pooled window.
    pub(super) thresholds: Thresholds,
    /// The tool's attempt rate and the silence since its last attempt.
    pub(super) silence: Silence,
    /// The highest offer with a clean verdict since the last breach that
    /// contradicted it.
    pub(super) held_clean: Option<f64>,
    /// The offer a burst's test returned to, until the next clean verdict
    /// or Up: a breach there is congestion.
    pub(super) burst_tested: Option<f64>,
    /// `gentle`: the lowest offer where a breach the step could not
    /// explain came back when tested: the target falls off a cliff there,
    /// so such breaches at or above it are the load's.
    pub(super) cliff: Option<f64>,
    /// `gentle`: the breach that set `last_bad`, as (offer, attempts,
    /// failures) of its window.
    pub(super) last_breach: Option<(f64, f64, f64)>,
}

impl Default for RobustState {
    fn default() -> Self {
        RobustState::new(None)
    }
}

impl RobustState {
    /// A fresh memory under `tunables` (`None`, for the seed profile,
    /// which never reads it: robust's).
    pub fn new(tunables: Option<Tunables>) -> Self {
        RobustState {
            pool_attempts: 0.0,
            pool_failures: 0.0,
            pool_windows: 0,
            pool_span: 0.0,
            window_span: 1.0,
            offer_attempts: 0.0,
            offer_failures: 0.0,
            offer_recent: [(0.0, 0.0); BREACH_WINDOWS],
            offer_len: 0,
            clean_run_attempts: 0.0,
            settle: false,
            last_down_frac: 0.0,
            reprobe: None,
            last_clean: None,
            clean_counts: (0.0, 0.0),
            clean_rate: 0.0,
            clean_before_down: None,
            additive_from: None,
            probing_from: None,
            stepped_down: None,
            thin_stepped: None,
            offer_all: (0.0, 0.0),
            fresh_up: false,
            retreated: false,
            in_episode: false,
            clean_run: 0,
            burst: None,
            calm_run: 0,
            ongoing_returns: 0,
            band_run: 0,
            dwell: 1,
            clean_attempts: 0.0,
            owed: None,
            late_cost: false,
            opening_gain: SLOW_START_GAIN,
            best_yield: 0.0,
            tunables: tunables.unwrap_or(Tunables::ROBUST),
            background: Background::default(),
            thresholds: Thresholds::new(0.0, 0.0, None),
            silence: Silence::default(),
            held_clean: None,
            burst_tested: None,
            cliff: None,
            last_breach: None,
        }
    }

    pub(super) fn empty_pool(&mut self) {
        self.pool_attempts = 0.0;
        self.pool_failures = 0.0;
        self.pool_windows = 0;
        self.pool_span = 0.0;
    }

    pub(super) fn moved(&mut self) {
        self.background.left();
        self.probing_from = None;
        self.offer_all = (0.0, 0.0);
        self.calm_run = 0;
        self.band_run = 0;
        self.empty_pool();
        self.offer_attempts = 0.0;
        self.offer_failures = 0.0;
        self.offer_len = 0;
        self.clean_run_attempts = 0.0;
        self.clean_run = 0;
        self.clean_attempts = 0.0;
    }

    /// The mean attempts of the recent windows at the current offer (the
    /// breach test's last [`BREACH_WINDOWS`]); 0 before the first.
    pub(super) fn recent_window_attempts(&self) -> f64 {
        let filled = self.offer_len.min(BREACH_WINDOWS);
        if filled == 0 {
            0.0
        } else {
            self.offer_attempts / filled as f64
        }
    }

    /// Whether `gentle`'s rules that trust the counts apply (the dead-band
    /// proof, the reclimb on one clean window): the profile has them, and
    /// the background estimate rests on at least `1 / low` attempts, so a
    /// background above `low` cannot pass for a lasting band.
    pub(super) fn counts_decide(&self, low: f64) -> bool {
        self.tunables.prove_the_band
            && self
                .thresholds
                .estimate
                .is_some_and(|e| e.attempts * low >= 1.0)
    }

    pub(super) fn probe_failed(&mut self) {
        self.dwell = (self.dwell * 2).min(MAX_DWELL);
    }
}

/// What the evidence says about the current offer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Judgement {
    /// A significant breach, at this failure fraction.
    Breach(f64),
    /// Neither clean nor a significant breach, at this fraction.
    Band(f64),
    /// Below `low`, at this fraction.
    Clean(f64),
}

impl Judgement {
    pub(super) fn frac(self) -> f64 {
        match self {
            Judgement::Breach(f) | Judgement::Band(f) | Judgement::Clean(f) => f,
        }
    }
}

/// Where a window's evidence stands.
pub(super) enum Verdict {
    /// Decide on this judgement (of a pool, or of a settle window).
    Decide {
        judgement: Judgement,
        evidence: Option<Evidence>,
    },
    /// Hold with this reason; nothing else changes.
    Hold(HoldReason),
    /// The settle window after a Down on a burst: the failures did not
    /// fall with the offer, or vanished at once. Return to the offer
    /// before the burst, with the memory as it was.
    /// `true` when the failures were seen not to fall: the burst may go on,
    /// and its next window is tested again.
    BurstOver(Burst, bool),
}

/// A Down on a breach that came without more load, pending its test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Burst {
    /// The offer before the Down.
    pub(super) from: f64,
    /// The breach's fraction.
    pub(super) frac: f64,
    /// `last_bad` and the clean streak before the Down.
    pub(super) last_bad: Option<f64>,
    pub(super) clean_streak: u32,
    /// The cost owed and the probe dwell before the Down.
    pub(super) owed: Option<(f64, f64)>,
    pub(super) dwell: u32,
    /// Windows the test still waits at the lower offer while the failures
    /// go on (a breach below an offer held clean), 0 for the older test.
    pub(super) waits: u32,
    /// Only failures that go on at the lower offer show this one a burst:
    /// a clean settle window is congestion's answer too (the opening's).
    pub(super) needs_ongoing: bool,
    /// On a test taken only because a return would pay little (fewer than
    /// `1 / high` failures): the breach's failures so far, with those that
    /// arrived after its verdict ([`ThrottleGovernor::charge_late`]).
    ///
    /// [`ThrottleGovernor::charge_late`]: crate::governor::ThrottleGovernor::charge_late
    pub(super) pays: Option<f64>,
    /// The Down undid a failed probe: the lower offer is where the probe
    /// started, judged clean.
    pub(super) undid_a_probe: bool,
}

/// What the robust decision does besides the raw decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Move {
    /// The default rules' decision.
    Plain,
    /// An additive Up (probe or re-probe).
    Additive,
    /// A failed additive probe, undone.
    Retreat,
    /// A step down out of a lasting dead band.
    Settle,
    /// A step down out of a dead band that the offer's own counts prove,
    /// where the offers just below are too thin to test: as
    /// [`Move::Settle`], and the counts it left wait for the excuse through
    /// clean verdicts ([`RobustState::thin_stepped`]).
    ThinSettle,
    /// A hold: the step down out of a lasting dead band did not lower the
    /// failures, so they are the background's.
    Excuse,
}
