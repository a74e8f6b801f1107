//! The `robust` and `gentle` openings climb through windows with no
//! traffic that the tool's own attempt rate explains (issue 30).
//!
//! Why it exists: on a tool whose workers make far fewer than one attempt
//! a window (long think times, short windows), the opening offers see
//! nothing. The seed's rule 1 holds on a window without attempts, so offer
//! 1 waits for its first attempt, offer 2 for the next, and so on: with
//! 10 attempts a window at a capacity of `C` workers that is about
//! `2 C / 10` windows before the opening reaches the capacity, 15 % of a
//! 150-window run at the median capacity of the bench's `rejector n=10`.
//!
//! Once attempts have come, the tool is alive and its rate per unit of
//! offer is known: `r` = the attempts over the offer × windows up to the
//! last window that had any. A silent window at offer `x` is then what `r`
//! predicts whenever `r x` is well under one, and it says as much about
//! the target as a clean window at that offer would: nothing fails where
//! nothing is sent. So the opening doubles on it, while:
//! - the run is in its opening (no `last_bad`, no re-probe), below
//!   [`SLOW_START_DOUBLING_BELOW`] (the gain that takes over there needs
//!   counts), and the pool at the offer holds no failure;
//! - at least one attempt has come ([`Silence::alive`]), or the offer is
//!   still under [`BLIND_CLIMB_BELOW`] (8). Before the first attempt there
//!   is no rate to weigh the silence against: the tool may be slow, or
//!   not started yet (no attempts in its first seconds). Three blind
//!   doublings (1, 2, 4, 8) cut a slow tool's wait for its first attempt
//!   from `C / n` windows at offer 1 (15 at the median of the bench's
//!   `rejector n=10`) to about `3 + C / 8n`; a tool that has not started starts at
//!   8 workers at most, never at the ceiling, and a user's start of 8 or
//!   more is not climbed blind;
//! - the silence since the last attempt is still likely at the rate seen
//!   before it: its expected attempts `r × (offer × windows silent)` stay
//!   under [`SILENCE_EXPECTED`] (3: the chance of that much silence is
//!   about 5 %). A tool that dies after its first attempts is climbed
//!   through a few doublings at most (never past 64), then held. The rate
//!   counts the silent windows before the first attempt too (a slow
//!   start-up lowers it), so it errs towards climbing, within that cap.
//!
//! The blind climb was measured at 4, 8 and 16 (docs/BENCHMARKS.md): 8
//! met the goal on as many noise-family models as either, or more, at
//! every size.
//!
//! What it may touch: nothing outside the governor; no clock, no I/O.

use super::tunables::{BLIND_CLIMB_BELOW, SILENCE_EXPECTED, SLOW_START_DOUBLING_BELOW};
use crate::governor::{no_traffic, Decision, Outcome, ThrottleGovernor};

/// The attempt rate of the tool per unit of offer, from the windows up to
/// the last one with attempts, and the offer × windows since then.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Silence {
    /// Attempts in every window up to the last one with attempts.
    heard: f64,
    /// Offer × nominal windows over those windows.
    heard_work: f64,
    /// Offer × nominal windows since the last window with attempts.
    silent_work: f64,
}

impl Silence {
    /// A window of `attempts` at `work` (offer × its nominal windows).
    pub fn window(&mut self, attempts: f64, work: f64) {
        if attempts > 0.0 {
            self.heard += attempts;
            self.heard_work += self.silent_work + work;
            self.silent_work = 0.0;
        } else {
            self.silent_work += work;
        }
    }

    /// Whether the tool has made any attempt.
    pub fn alive(&self) -> bool {
        self.heard > 0.0
    }

    /// The attempts the silence since the last attempt should have held at
    /// the rate seen before it (`None` before any attempt).
    pub fn expected(&self) -> Option<f64> {
        (self.alive() && self.heard_work > 0.0)
            .then(|| self.heard / self.heard_work * self.silent_work)
    }
}

impl ThrottleGovernor {
    /// After a window with no attempts has been counted: the opening's
    /// doubling, if the silence is the load's own (module docs), else
    /// `None` (the seed's hold).
    pub(super) fn climb_on_silence(&mut self, failures: f64) -> Option<Outcome> {
        let p = self.params;
        let from = self.state.current;
        let r = &self.robust;
        let opening = self.state.last_bad.is_none() && r.reprobe.is_none();
        let quiet = r.pool_failures <= 0.0 && failures <= 0.0;
        // Before any attempt there is no rate to test the silence
        // against: a few blind doublings only.
        let blind = !r.silence.alive() && from < BLIND_CLIMB_BELOW;
        let likely = blind || r.silence.expected().is_some_and(|e| e < SILENCE_EXPECTED);
        if !(opening && quiet && likely && from < SLOW_START_DOUBLING_BELOW) {
            return None;
        }
        let raw = Decision::Up((from * 2.0).max(from + 1.0).min(p.ceiling));
        let Decision::Up(to) = p.round(self.exact_up(raw, from), from) else {
            return None;
        };
        let outcome = self.move_up(from, to, no_traffic(failures), false);
        self.robust.moved();
        self.robust.fresh_up = true;
        Some(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::{Control, HoldReason, Params, Profile};

    fn governor(profile: Profile, current: f64) -> ThrottleGovernor {
        let p = Params::new(Control::Concurrency, Some(1000.0), 1.0, None, 0.05, None).unwrap();
        let mut g = ThrottleGovernor::with_profile(p, profile);
        g.set_current(current);
        g
    }

    #[track_caller]
    fn assert_up(o: &Outcome, to: f64) {
        assert_eq!(o.decision, Decision::Up(to), "{o:?}");
    }

    #[track_caller]
    fn assert_no_traffic(o: &Outcome) {
        assert_eq!(o.decision, Decision::Hold, "{o:?}");
        assert_eq!(o.reason, Some(HoldReason::NoTraffic), "{o:?}");
    }

    #[test]
    fn the_rate_is_read_up_to_the_last_attempt() {
        let mut s = Silence::default();
        assert!(!s.alive());
        assert_eq!(s.expected(), None);
        // 16 windows at offer 1, the last with an attempt: 1 in 16.
        for _ in 0..15 {
            s.window(0.0, 1.0);
        }
        assert_eq!(s.expected(), None, "no attempt yet");
        s.window(1.0, 1.0);
        assert_eq!(s.expected(), Some(0.0));
        // Silence at offers 2, 4 and 8: 14 units of work, 14/16 expected.
        for w in [2.0, 4.0, 8.0] {
            s.window(0.0, w);
        }
        assert!((s.expected().unwrap() - 14.0 / 16.0).abs() < 1e-12);
        // An attempt folds the silence into the rate: 2 in 30.
        s.window(1.0, 0.0);
        assert_eq!(s.expected(), Some(0.0));
        s.window(0.0, 15.0);
        assert!((s.expected().unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_silent_opening_doubles_while_the_tools_own_rate_explains_the_silence() {
        for profile in [Profile::Gentle, Profile::Robust] {
            let mut g = governor(profile, 1.0);
            // Before any attempt: three blind doublings, then a hold.
            assert_up(&g.step(0.0, 0.0), 2.0);
            assert_up(&g.step(0.0, 0.0), 4.0);
            assert_up(&g.step(0.0, 0.0), 8.0);
            assert_no_traffic(&g.step(0.0, 0.0));
            // Two attempts at 8: 2 in 1 + 2 + 4 + 8 + 8 = 23 offer-windows.
            assert_up(&g.step(2.0, 0.0), 16.0);
            // Silence at 16 expects 32/23 attempts, then at 32 96/23.
            assert_up(&g.step(0.0, 0.0), 32.0);
            // 96/23 > 3 expected, none came: the tool may have stopped.
            assert_no_traffic(&g.step(0.0, 0.0));
            assert_no_traffic(&g.step(0.0, 0.0));
            assert_eq!(g.state().current, 32.0, "{profile:?}");
            // Attempts again: the rate now counts the silence.
            assert_up(&g.step(10.0, 0.0), 64.0);
        }
        // The seed rules hold on every window without attempts.
        let mut g = governor(Profile::Seed, 1.0);
        assert_up(&g.step(1.0, 0.0), 2.0);
        assert_no_traffic(&g.step(0.0, 0.0));
        assert_eq!(g.state().current, 2.0);
    }

    #[test]
    fn a_tool_that_never_sent_climbs_blind_to_8_at_most() {
        for (profile, held) in [
            (Profile::Gentle, BLIND_CLIMB_BELOW),
            (Profile::Robust, BLIND_CLIMB_BELOW),
            (Profile::Seed, 1.0),
        ] {
            let mut g = governor(profile, 1.0);
            let mut ups = 0;
            for _ in 0..200 {
                let o = g.step(0.0, 0.0);
                match o.decision {
                    Decision::Up(_) => ups += 1,
                    _ => assert_no_traffic(&o),
                }
            }
            assert_eq!(g.state().current, held, "{profile:?}");
            assert_eq!(ups, if held > 1.0 { 3 } else { 0 }, "{profile:?}");
        }
        // A start at or above 8 is the user's: no blind climb from it.
        let mut g = governor(Profile::Gentle, 10.0);
        for _ in 0..20 {
            assert_no_traffic(&g.step(0.0, 0.0));
        }
        assert_eq!(g.state().current, 10.0);
        // Nor past the ceiling.
        let p = Params::new(Control::Concurrency, Some(5.0), 1.0, None, 0.05, None).unwrap();
        let mut g = ThrottleGovernor::with_profile(p, Profile::Gentle);
        g.set_current(1.0);
        for _ in 0..20 {
            g.step(0.0, 0.0);
        }
        assert_eq!(g.state().current, 5.0);
    }

    #[test]
    fn no_silent_climb_after_a_wall_with_a_failure_pooled_or_from_the_gain_on() {
        // After a wall (last_bad), silence is the seed's hold.
        let mut g = governor(Profile::Gentle, 4.0);
        g.restore_memory(Some(100.0), 0);
        assert_eq!(g.step(1.0, 0.0).reason, Some(HoldReason::Gathering));
        assert_no_traffic(&g.step(0.0, 0.0));
        assert_eq!(g.state().current, 4.0);
        // A failure pooled at the offer, not yet judged: no climb past it.
        let mut g = governor(Profile::Gentle, 1.0);
        assert_up(&g.step(1.0, 0.0), 2.0);
        let o = g.step(1.0, 1.0);
        assert_eq!(o.decision, Decision::Hold, "{o:?}");
        assert_no_traffic(&g.step(0.0, 0.0));
        assert_eq!(g.state().current, 2.0);
        // From 64 on, the gain needs counts: silence holds however likely.
        let mut g = governor(Profile::Gentle, 32.0);
        for _ in 0..100 {
            assert_no_traffic(&g.step(0.0, 0.0));
        }
        assert_up(&g.step(1.0, 0.0), 64.0);
        assert_no_traffic(&g.step(0.0, 0.0));
        assert_eq!(g.state().current, 64.0);
    }
}
