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
//!
//! `gentle` also reads a breach's size ([`Tunables::test_unexplained_breaches`]):
//! a rejecting wall fails only the share of the offer above it, so a breach
//! far larger than the step from the last clean offer could cause is tested
//! as a burst, and a clean verdict far under the breach that set `last_bad`
//! refutes it ([`ThrottleGovernor::breach_refuted`]). Both only on windows
//! whose attempts follow the offer (a target that rejects in a millisecond
//! makes a worker over its wall loop fast, and the share means nothing),
//! on breaches a return would pay little for (fewer than `1 / high`
//! failures, counting those that arrive after the verdict:
//! [`ThrottleGovernor::charge_late`] drops the test, and the refutation
//! of its breach with it), and never at or above a cliff: an offer where
//! such a breach came back.
//!
//! A return to a failed probe, on a clean window where it started, is that
//! probe again (`gentle`): a breach there goes back where it started, as a
//! failed probe, and owes its cost. By the breach's share it fell from 11
//! to 2 on JMeter at a 1 ms wall, where the worker over the wall makes
//! most of the attempts and the share means nothing.

use super::state::{Burst, Judgement, Move};
use super::stats::{one_worker_ruled_out, significantly_above_at};
#[cfg(doc)]
use super::tunables::Tunables;
use super::tunables::{BURST_MIN_FRAC, BURST_STEADY, BURST_TEST_WAITS, EVIDENCE_ALPHA};
use crate::governor::{
    probe_step, wilson_interval, Decision, HoldReason, Outcome, Signal, ThrottleGovernor,
};

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
    /// The deciding window's (attempts, failures).
    pub(super) window: (f64, f64),
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
        // `gentle`: a failure share the step from the last offer judged
        // clean cannot explain. A rejecting wall between that offer and
        // this one fails at most the step's share of this offer's
        // attempts (plus the clean level): a probe of one worker over 70
        // fails 1.4 %, not the 40 % of a burst.
        let unexplained = r.tunables.test_unexplained_breaches
            && r.last_clean.is_some_and(|clean| {
                from >= clean
                    && self.attempts_follow_the_offer(before.window.0, from)
                    && self.unexplained_by_a_wall(clean, from, before.window)
            });
        self.robust.burst_tested = None;
        let Judgement::Breach(frac) = judgement else {
            return None;
        };
        if unexplained && tested && frac >= BURST_MIN_FRAC {
            // Tested, and back where it was: not a burst but a cliff.
            self.robust.cliff = Some(self.robust.cliff.map_or(from, |c| c.min(from)));
        }
        let unexplained = unexplained && !tested;
        if frac >= BURST_MIN_FRAC
            && (unprovoked || contradicted || grain_calm || thin_opening || unexplained)
        {
            return Some(Burst {
                from,
                frac,
                last_bad: self.state.last_bad,
                clean_streak: self.state.clean_streak,
                owed: before.owed,
                dwell: before.dwell,
                waits: if contradicted || unexplained {
                    BURST_TEST_WAITS
                } else {
                    0
                },
                needs_ongoing: !(unprovoked || contradicted || grain_calm || unexplained),
                pays: (!(unprovoked || contradicted || grain_calm))
                    .then_some(before.window.1.max(self.robust.offer_failures)),
                undid_a_probe: before.kind == Move::Retreat,
            });
        }
        if held {
            // Congestion at or below the offer held clean: it holds no
            // more there, and only offers a probe lower count.
            self.robust.held_clean = Some(from);
        }
        None
    }

    /// `gentle`: whether a clean verdict at `from` refutes the breach that
    /// set `last_bad`: a wall at or above what this verdict's counts allow
    /// would explain far fewer failures there than that window showed.
    pub(super) fn breach_refuted(&self, from: f64) -> bool {
        let r = &self.robust;
        let (Some(bad), Some((at, n, f))) = (self.state.last_bad, r.last_breach) else {
            return false;
        };
        r.tunables.test_unexplained_breaches
            && at == bad
            && from < bad
            && self.unexplained_by_a_wall(from, bad, (n, f))
    }

    /// Whether a window of `attempts` at `offer` holds no more attempts
    /// than the pool that judged the last clean offer predicts (at its
    /// rate per unit of offer, three standard deviations up): the share
    /// reading below holds only when a failed attempt takes as long as a
    /// served one. On a concurrency knob whose target rejects in a
    /// millisecond, one worker over the wall makes most of the attempts
    /// (k6 at 11 over a wall of 10: 77 % of them failed), and a burst
    /// test there returned into the wall and then backed off to 2.
    pub(super) fn attempts_follow_the_offer(&self, attempts: f64, offer: f64) -> bool {
        let expected = self.robust.clean_rate * offer * self.robust.window_span;
        expected > 0.0 && attempts <= expected + 3.0 * expected.sqrt() + 1.0
    }

    /// Whether the breach window `(attempts, failures)` at `offer` fails
    /// significantly more (at [`EVIDENCE_ALPHA`]) than a rejecting wall at
    /// or above what the counts at the last clean offer `clean` allow
    /// (their 95 % Wilson bound) would make it fail, plus the clean level;
    /// only on a breach a return would pay little for (fewer than
    /// `1 / high` failures), below any cliff.
    fn unexplained_by_a_wall(&self, clean: f64, offer: f64, (n, f): (f64, f64)) -> bool {
        let r = &self.robust;
        if n <= 0.0
            || f * self.params.high >= 1.0
            || r.cliff.is_some_and(|c| offer + probe_step(c) > c)
        {
            return false;
        }
        let (cn, cf) = r.clean_counts;
        let wall_at_least = clean * (1.0 - wilson_interval(cf, cn).1);
        let explained = (offer - wall_at_least) / offer + r.thresholds.clean_below;
        explained < 1.0 && significantly_above_at(f, n, explained, EVIDENCE_ALPHA)
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
        if self.robust.tunables.test_breaches_below_held && !ongoing && burst.undid_a_probe {
            // `gentle`: a return to a failed probe, on a clean window where
            // it started, is that probe again. If the breach was the wall's
            // after all, the return's breach goes back here as the probe
            // did, and pays as one; by the breach's share it went to 2 from
            // 11 (JMeter at a 1 ms wall, where the worker over the wall
            // makes most of the attempts).
            self.robust.additive_from = Some(from);
            self.robust.probing_from = Some(from);
        }
        if ongoing {
            // A burst shown not to follow the offer: its next window at the
            // old offer is tested again, not taken as congestion.
            self.robust.calm_run = BURST_STEADY;
            self.robust.ongoing_returns += 1;
        }
        outcome
    }
}
