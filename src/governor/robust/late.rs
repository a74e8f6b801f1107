//! A failed probe's late failures: what it cost after its verdict.
//!
//! Why it exists: a probe pays for itself ([`super`], "A probe pays for
//! itself"): the next probe from where a failed one started waits until
//! clean attempts carry the failed probe's failures at
//! [`PROBE_COST_SHARE`] of `high`. The governor counted only the failures
//! it was shown before it decided. Outside a simulation that is the
//! smaller part: an early verdict decides on the first certain look, a
//! fraction of a second after the Up, and the failures made until the
//! tool takes the Down and its counters show it (the signal's lag) fall in
//! windows that straddle the write, which the engine discards as no
//! offer's evidence. Seen on the pull path at a 1 ms wall: the target
//! failed about 350 attempts a probe and the governor was charged a few
//! dozen, so the probes came as often as the dwell allowed (after 2, 4, 8
//! and 16 windows) and failed 14.6 % of the run's attempts after the first
//! back-off, where the cost rule aims at 2.5 % over a long run.
//!
//! So the engine hands the counts of the windows it discards to
//! [`ThrottleGovernor::charge_late`]. Right after a failed probe's Down,
//! and until the governor is next given a window, their failures above the
//! clean level are that probe's too, and are added to what it owes. At any
//! other time they are nobody's, and nothing is charged. The seed rules
//! have no cost owed and ignore them.

use super::tunables::PROBE_COST_SHARE;
use crate::governor::ThrottleGovernor;

impl ThrottleGovernor {
    /// Counts from windows that straddled a write and were discarded
    /// (`attempts` resolved, `failures` failed). Right after a failed
    /// probe's Down (before the next window is stepped), the failures above
    /// the clean level are added to that probe's cost; otherwise, and
    /// under the seed rules, nothing is owed. A burst test the Down took
    /// because a return would pay little is dropped once they make the
    /// breach cost `1 / high` failures, and the breach can then no longer
    /// be refuted (by a clean verdict below it). Counts that are not finite,
    /// or negative, are ignored. Returns the failures charged.
    pub fn charge_late(&mut self, attempts: f64, failures: f64) -> f64 {
        let high = self.params.high;
        let r = &mut self.robust;
        if !(attempts.is_finite() && failures.is_finite()) {
            return 0.0;
        }
        let excess = failures - r.thresholds.clean_below * attempts.max(0.0);
        // A burst test taken because a return would pay little: the
        // failures that came after its verdict are the breach's too, and a
        // return would pay them again (JMeter at a 1 ms wall: 7 failed
        // attempts decided, 274 more came before the Down reached the
        // tool). At `1 / high` the test is dropped, and the Down stands;
        // so does the memory: a clean verdict below no longer refutes the
        // breach, whose re-probe would pay as much (it cleared the memory
        // and touched the wall again for about 300 failed attempts).
        if r.settle {
            if let Some(burst) = r.burst.as_mut() {
                if let Some(pays) = burst.pays.as_mut() {
                    *pays += excess.max(0.0);
                    if *pays * high >= 1.0 {
                        r.burst = None;
                        r.last_breach = None;
                    }
                }
            }
        }
        if !r.late_cost {
            return 0.0;
        }
        let Some((_, owed)) = r.owed.as_mut() else {
            return 0.0;
        };
        if excess <= 0.0 {
            return 0.0;
        }
        *owed += excess / (PROBE_COST_SHARE * self.params.high);
        excess
    }

    /// The clean attempts the next probe from the last failed one's start
    /// waits for, if a failed probe left a cost owed.
    pub fn owed(&self) -> Option<f64> {
        self.robust.owed.map(|(_, owed)| owed)
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::Profile;
    use super::super::tests::{assert_to, rate_governor as governor};

    /// Under a wall remembered at 120, climbs from 40 with no failure to
    /// the first probe (97.2 from 94.8), which fails 200 of 972: a Down
    /// back to 94.8, owing `200 / (0.5 × 0.05)` = 8,000 clean attempts.
    fn after_a_failed_probe(profile: Profile) -> super::ThrottleGovernor {
        let mut g = governor(profile, 40.0, Some(120.0));
        for to in [60.0, 90.0, 92.4, 94.8, 97.2] {
            let n = (10.0 * g.state.current).round();
            assert_to(&g.step(n, 0.0), "up", to);
        }
        assert_to(&g.step(972.0, 200.0), "down", 94.8);
        g
    }

    fn owed(g: &super::ThrottleGovernor) -> f64 {
        g.robust.owed.expect("a failed probe owes").1
    }

    #[test]
    fn failures_after_a_failed_probes_verdict_add_to_its_cost() {
        for profile in [Profile::Robust, Profile::Gentle] {
            let mut g = after_a_failed_probe(profile);
            let before = owed(&g);
            assert!((before - 8_000.0).abs() < 1.0, "{profile:?}: {before}");
            // 1,000 attempts, 310 failed: 300 over the clean level of 1 %
            // (no background below), 12,000 attempts more.
            let charged = g.charge_late(1_000.0, 310.0);
            assert!((charged - 300.0).abs() < 1e-9, "{profile:?}: {charged}");
            assert!(
                (owed(&g) - 20_000.0).abs() < 1.0,
                "{profile:?}: {}",
                owed(&g)
            );
            // A second discarded window before the next verdict counts too.
            g.charge_late(100.0, 51.0);
            assert!(
                (owed(&g) - 22_000.0).abs() < 1.0,
                "{profile:?}: {}",
                owed(&g)
            );
        }
    }

    #[test]
    fn late_counts_are_nobodys_once_a_window_was_stepped_or_without_a_failed_probe() {
        let mut g = after_a_failed_probe(Profile::Gentle);
        let settle = (10.0 * g.state.current).round();
        g.step(settle, 0.0);
        let before = owed(&g);
        assert_eq!(g.charge_late(1_000.0, 500.0), 0.0);
        assert_eq!(owed(&g), before);

        // A climb with no probe, and the seed rules: nothing is owed.
        let mut fresh = governor(Profile::Gentle, 40.0, Some(120.0));
        assert_eq!(fresh.charge_late(1_000.0, 500.0), 0.0);
        assert_eq!(fresh.robust.owed, None);
        let mut seed = governor(Profile::Seed, 40.0, Some(120.0));
        assert_eq!(seed.charge_late(1_000.0, 500.0), 0.0);
    }

    #[test]
    fn a_late_window_at_the_clean_level_or_garbage_charges_nothing() {
        let mut g = after_a_failed_probe(Profile::Gentle);
        let before = owed(&g);
        assert_eq!(g.charge_late(1_000.0, 10.0), 0.0);
        assert_eq!(g.charge_late(f64::NAN, 5.0), 0.0);
        assert_eq!(g.charge_late(100.0, f64::INFINITY), 0.0);
        assert_eq!(owed(&g), before);
    }
}
