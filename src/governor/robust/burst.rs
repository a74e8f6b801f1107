//! Telling a burst from congestion: which breaches the settle window
//! tests, and the return when it shows a burst.
//!
//! Why it exists: fix 3 of [`super`]. A load-independent burst backs off
//! like congestion, and taken for a wall it lowers `last_bad`, so each
//! burst that lands on a reclimb or a probe leaves the run a little lower
//! (issue 30: `bursts n=40` ended at 1 to 4 workers on a third of its
//! seeds). The test decides which Downs are provisional; the settle window
//! ([`super::evidence`]) judges them; [`ThrottleGovernor::burst_over`]
//! undoes one that was a burst, with the memory as it was.

use super::state::{Burst, Judgement, Move};
use super::stats::one_worker_ruled_out;
use super::tunables::{BURST_MIN_FRAC, BURST_STEADY, BURST_TEST_WAITS};
use crate::governor::{probe_step, Decision, HoldReason, Outcome, Signal, ThrottleGovernor};

/// What a Down's burst test reads of the verdict and the memory before it.
pub(super) struct BeforeDown {
    /// The robust decision's kind.
    pub(super) kind: Move,
    /// Whether an Up came just before this verdict.
    pub(super) fresh_up: bool,
    /// Verdicts at the offer without a breach, before this one.
    pub(super) steady: u32,
    /// The cost owed and the probe dwell before this verdict's Down.
    pub(super) owed: Option<(f64, f64)>,
    pub(super) dwell: u32,
}

impl ThrottleGovernor {
    /// The burst a Down from `from` on `judgement` is tested for, if any,
    /// and what a breach that is not one says about the offer held clean.
    ///
    /// - A large breach (at least [`BURST_MIN_FRAC`]) after
    ///   [`BURST_STEADY`] verdicts without one, with no move that could
    ///   have caused it, may not be congestion at all.
    /// - `gentle`: so may one at least a probe below the highest offer
    ///   held clean, even right after an Up: the target carried more since
    ///   the last breach that said otherwise. That test waits at the lower
    ///   offer while the failures go on ([`BURST_TEST_WAITS`]), and a
    ///   breach where it returned is congestion.
    /// - `gentle`, a concurrency knob: so may one at an offer whose windows
    ///   before it ruled out one worker over a wall (no failure among about
    ///   `3 offer` attempts), even on a probe.
    /// - `gentle`: so may the opening's first breach on fewer than
    ///   `1 / high` failures; but only failures that go on at the lower
    ///   offer, as a significant breach there, show it a burst
    ///   (`Burst::needs_ongoing`): a clean window there is congestion's
    ///   answer too.
    pub(super) fn burst_test(
        &mut self,
        judgement: Judgement,
        from: f64,
        before: BeforeDown,
    ) -> Option<Burst> {
        let r = &self.robust;
        let held = r.held_clean.is_some_and(|h| from + probe_step(h) <= h);
        let tested = r.burst_tested.is_some_and(|t| self.at_or_above(from, t));
        let contradicted = r.tunables.test_breaches_below_held
            && held
            && !tested
            && matches!(before.kind, Move::Plain | Move::Retreat);
        let unprovoked =
            before.steady >= BURST_STEADY && before.kind == Move::Plain && !before.fresh_up;
        // `gentle`, an integer knob: the windows at this offer before the
        // breach showed it is not one worker over a wall (no failure among
        // about 3 attempts a worker); a large breach now is a change, not
        // this offer's doing, even on a probe.
        let (calm_n, calm_f) = r.offer_all;
        let grain_calm = r.tunables.worker_grain
            && self.params.control.is_integer()
            && calm_f == 0.0
            && one_worker_ruled_out(calm_n, from);
        // `gentle`: the opening's first breach, on so few failures that a
        // return to test it costs less than the climb a wall there would
        // make slow (fewer than `1 / high`).
        let thin_opening = r.tunables.test_breaches_below_held
            && self.state.last_bad.is_none()
            && r.reprobe.is_none()
            && !tested
            && r.offer_failures * self.params.high < 1.0;
        self.robust.burst_tested = None;
        let Judgement::Breach(frac) = judgement else {
            return None;
        };
        if frac >= BURST_MIN_FRAC && (unprovoked || contradicted || grain_calm || thin_opening) {
            return Some(Burst {
                from,
                frac,
                last_bad: self.state.last_bad,
                clean_streak: self.state.clean_streak,
                owed: before.owed,
                dwell: before.dwell,
                waits: if contradicted { BURST_TEST_WAITS } else { 0 },
                needs_ongoing: !(unprovoked || contradicted || grain_calm),
            });
        }
        if held {
            // Congestion at or below the offer held clean: it holds no
            // more there, and only offers a probe lower count.
            self.robust.held_clean = Some(from);
        }
        None
    }

    /// Returns to the offer before a burst's Down, with the memory as it
    /// was: the failures were not the offer's doing.
    pub(super) fn burst_over(&mut self, burst: Burst, ongoing: bool, signal: Signal) -> Outcome {
        let p = self.params;
        let from = self.state.current;
        self.state.last_bad = burst.last_bad;
        self.state.clean_streak = burst.clean_streak;
        if self.robust.tunables.test_breaches_below_held {
            self.robust.owed = burst.owed;
            self.robust.dwell = burst.dwell;
            self.robust.retreated = false;
            self.robust.burst_tested = Some(burst.from);
        }
        self.robust.in_episode = false;
        self.robust.empty_pool();
        let target = burst.from.min(p.ceiling);
        let decision = p.round(Decision::Up(target), from);
        let Decision::Up(to) = decision else {
            return self.hold(HoldReason::Settling, Some(signal), false);
        };
        let outcome = self.move_up(from, to, signal, false);
        self.robust.moved();
        if ongoing {
            // A burst shown not to follow the offer: its next window at the
            // old offer is tested again, not taken as congestion.
            self.robust.calm_run = BURST_STEADY;
            self.robust.ongoing_returns += 1;
        }
        outcome
    }
}
