//! Tests of breaches the step cannot explain (`gentle`): a probe's breach
//! far larger than a wall between the last clean offer and the probe could
//! cause is tested as a burst, and a clean verdict far under the breach
//! that set `last_bad` refutes it; beside what `robust` does with the same
//! windows, so each test fails if its rule is removed.

use super::super::{Control, HoldReason, Params, Profile, ThrottleGovernor};
use super::tests::{assert_hold, assert_to, rate_governor};
use super::*;

/// A rate governor of `profile` under a `last_bad` of 120 that held 100
/// clean (1,000 attempts, no failure) and probed to 102.4.
fn probing_from_100(profile: Profile) -> ThrottleGovernor {
    let mut g = rate_governor(profile, 100.0, Some(120.0));
    assert_to(&g.step(1000.0, 0.0), "up", 102.4);
    g
}

/// A gentle concurrency governor (ceiling 40, as the real-tool runs) at
/// `current` with `last_bad`.
fn concurrency_governor(current: f64, last_bad: Option<f64>) -> ThrottleGovernor {
    let p = Params::new(Control::Concurrency, Some(40.0), 1.0, None, 0.05, None).unwrap();
    let mut g = ThrottleGovernor::with_profile(p, Profile::Gentle);
    g.set_current(current);
    g.restore_memory(last_bad, 0);
    g
}

/// A gentle concurrency governor that held 10 clean (150 attempts a
/// window, `last_bad` 11), reclimbed to 11, and failed `failures` of
/// `attempts` there on an early verdict of a fiftieth of a window (JMeter
/// at a 1 ms wall, 2026-12-07): back at 10, in the settle window.
fn reclimbed_into_a_fast_wall(attempts: f64, failures: f64) -> ThrottleGovernor {
    let mut g = concurrency_governor(10.0, Some(11.0));
    assert_to(&g.step(150.0, 0.0), "up", 11.0);
    g.set_window_span(0.02);
    assert_to(&g.step(attempts, failures), "down", 10.0);
    g
}

#[test]
fn a_probes_breach_the_step_cannot_explain_is_tested_as_a_burst() {
    // 8 of 20 at 102.4: a wall at or above 99.6 (what 0 failures in 1,000
    // at 100 allow) fails at most 2.7 % there, plus the clean level.
    let mut g = probing_from_100(Profile::Gentle);
    let mut r = probing_from_100(Profile::Robust);
    assert_to(&g.step(20.0, 8.0), "down", 100.0);
    assert_to(&r.step(20.0, 8.0), "down", 100.0);
    // Clean at 100: gentle returns with the memory as it was; robust takes
    // the breach for a wall at 102.4.
    assert_to(&g.step(1000.0, 0.0), "up", 102.4);
    assert_eq!(g.state.last_bad, Some(120.0));
    assert_hold(&r.step(1000.0, 0.0), HoldReason::Settling);
    assert_eq!(r.state.last_bad, Some(102.4));
}

#[test]
fn the_test_waits_while_the_failures_go_on() {
    let mut g = probing_from_100(Profile::Gentle);
    assert_to(&g.step(20.0, 8.0), "down", 100.0);
    for _ in 0..BURST_TEST_WAITS {
        assert_hold(&g.step(20.0, 8.0), HoldReason::Settling);
    }
    // The burst ends while it waits: back to the probe.
    assert_to(&g.step(1000.0, 0.0), "up", 102.4);
}

#[test]
fn a_breach_a_return_would_cost_much_is_congestion() {
    // 40 of 100 at 102.4 is just as unexplained, but a return into a wall
    // there would cost 40 failed attempts again: at least `1 / high` (20).
    let mut g = probing_from_100(Profile::Gentle);
    assert_to(&g.step(100.0, 40.0), "down", 100.0);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    assert_eq!(g.state.last_bad, Some(102.4));
}

#[test]
fn a_tested_breach_that_comes_back_is_a_cliff() {
    let mut g = probing_from_100(Profile::Gentle);
    assert_to(&g.step(20.0, 8.0), "down", 100.0);
    assert_to(&g.step(1000.0, 0.0), "up", 102.4);
    // Back at 102.4, the same breach: congestion, and a cliff from 102.4.
    // The return was the failed probe again, so it goes back to 100 as
    // the probe did (the back-off's x0.6 would go to 61.4), and owes the
    // probe's cost.
    assert_to(&g.step(20.0, 8.0), "down", 100.0);
    assert_eq!(g.robust.cliff, Some(102.4));
    assert!(g.robust.owed.is_some_and(|(at, _)| at == 100.0));
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    assert_eq!(g.state.last_bad, Some(102.4));
}

#[test]
fn a_return_into_the_wall_on_a_fast_failing_target_goes_back_one_worker() {
    // JMeter at a 1 ms wall of 10 (full tier): 10 held clean on about 150
    // attempts a 3 s window; the reclimb to 11 failed 7 of 7 in 0.06 s (an
    // early verdict, too short for its attempts to outrun the offer), was
    // tested as a burst, returned on a clean window at 10, and failed 17
    // of 20 in 0.04 s: the breach's x0.25 sent it to 2.
    let mut g = reclimbed_into_a_fast_wall(7.0, 7.0);
    g.set_window_span(1.0);
    assert_to(&g.step(147.0, 0.0), "up", 11.0);
    g.set_window_span(0.015);
    assert_to(&g.step(20.0, 17.0), "down", 10.0);
    assert!(g.robust.owed.is_some());
    g.set_window_span(1.0);
    assert_hold(&g.step(150.0, 0.0), HoldReason::Settling);
    assert_eq!(g.state.last_bad, Some(11.0));
}

#[test]
fn late_failures_that_make_a_return_costly_drop_the_test() {
    // The same reclimb's 7 of 7, but 274 more failed before the Down
    // reached the tool (windows the engine discards): a return would pay
    // that again, far over `1 / high`, so the Down stands.
    let mut g = reclimbed_into_a_fast_wall(7.0, 7.0);
    g.charge_late(300.0, 274.0);
    g.set_window_span(1.0);
    assert_hold(&g.step(147.0, 0.0), HoldReason::Settling);
    assert_eq!(g.state.last_bad, Some(11.0));
    // Nor does a clean verdict at 10 refute the breach: that would clear
    // the memory and re-probe 11 at the same cost (a touch of about 300
    // failed attempts on JMeter, 2026-12-07).
    let o = g.step(150.0, 0.0);
    assert!(!o.memory_refuted, "{o:?}");
    assert_eq!(g.state.last_bad, Some(11.0));
    // A few late failures leave the test standing.
    let mut g = reclimbed_into_a_fast_wall(7.0, 7.0);
    g.charge_late(10.0, 5.0);
    g.set_window_span(1.0);
    assert_to(&g.step(147.0, 0.0), "up", 11.0);
}

/// A gentle or robust rate governor whose opening doubled from 50 (clean,
/// 1,000 attempts) to 100, where `failures` of `attempts` failed; after
/// the settle window it is back at 50 with `last_bad` 100.
fn after_an_opening_breach(profile: Profile, attempts: f64, failures: f64) -> ThrottleGovernor {
    let mut g = rate_governor(profile, 50.0, None);
    assert_to(&g.step(1000.0, 0.0), "up", 100.0);
    assert_to(&g.step(attempts, failures), "down", 50.0);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    assert_eq!(g.state.last_bad, Some(100.0));
    g
}

/// Clean windows of 1,000 attempts until the offer reaches `up_to` or the
/// memory clears: the offer it cleared at, if it did.
fn climb_clean(g: &mut ThrottleGovernor, up_to: f64) -> Option<f64> {
    for _ in 0..200 {
        let from = g.state.current;
        let o = g.step(1000.0, 0.0);
        if g.state.last_bad.is_none() {
            return Some(from);
        }
        if o.to >= up_to {
            return None;
        }
    }
    None
}

#[test]
fn a_clean_verdict_far_under_a_breach_refutes_it() {
    // 9 of 18 at 100 is what a wall at 50 does; but clean at 85 (0 of
    // 1,000) leaves a wall there at most 15 % of 100, plus the clean level:
    // 9 of 18 is significantly more. The breach was not the wall's.
    let mut g = after_an_opening_breach(Profile::Gentle, 18.0, 9.0);
    let cleared = climb_clean(&mut g, 99.0).expect("the memory clears");
    assert!((75.0..=90.0).contains(&cleared), "{cleared}");
    assert!(g.robust.reprobe.is_some());
    // robust climbs in probes of 2 to 99 with the memory kept.
    let mut r = after_an_opening_breach(Profile::Robust, 18.0, 9.0);
    assert_eq!(climb_clean(&mut r, 99.0), None);
    assert_eq!(r.state.last_bad, Some(100.0));
}

#[test]
fn a_breach_that_failed_many_attempts_is_not_refuted() {
    // The same share on 180 of 360: a re-probe into a wall there would
    // cost that many again, so gentle keeps the memory too.
    let mut g = after_an_opening_breach(Profile::Gentle, 360.0, 180.0);
    assert_eq!(climb_clean(&mut g, 99.0), None);
    assert_eq!(g.state.last_bad, Some(100.0));
}

#[test]
fn a_breach_whose_attempts_outrun_the_offer_is_congestion() {
    // A window a hundredth as long as the clean pool's holds about 10
    // attempts at 102.4 when failed attempts take as long as served ones:
    // 8 of 20 is tested as above. 16 of 40 has as large a share, but twice
    // the attempts the offer makes: failed attempts come faster (a target
    // that rejects in a millisecond, where one worker over a wall makes
    // most of the attempts), so the share says nothing about a burst.
    let mut g = probing_from_100(Profile::Gentle);
    g.set_window_span(0.01);
    assert_to(&g.step(20.0, 8.0), "down", 100.0);
    assert_to(&g.step(1000.0, 0.0), "up", 102.4);
    assert_eq!(g.state.last_bad, Some(120.0));
    let mut g = probing_from_100(Profile::Gentle);
    g.set_window_span(0.01);
    assert_to(&g.step(40.0, 16.0), "down", 100.0);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    assert_eq!(g.state.last_bad, Some(102.4));
}

#[test]
fn a_thin_clean_verdict_explains_more() {
    // 5 of 25 at 102.4. After 0 failures in 1,000 at 100 a wall is at
    // least 99.6, and explains 3.7 %: a burst test. After 0 in 100 it may
    // be as low as 96.3, and explains 7 %: congestion.
    let mut g = probing_from_100(Profile::Gentle);
    assert_to(&g.step(25.0, 5.0), "down", 100.0);
    assert_to(&g.step(1000.0, 0.0), "up", 102.4);
    let mut g = rate_governor(Profile::Gentle, 100.0, Some(120.0));
    assert_to(&g.step(100.0, 0.0), "up", 102.4);
    assert_to(&g.step(25.0, 5.0), "down", 100.0);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    assert_eq!(g.state.last_bad, Some(102.4));
}

#[test]
fn a_breach_whose_attempts_outran_the_offer_is_not_refuted() {
    // The opening's breach at 100, on a window a thousandth as long as the
    // clean pool's at 50 yet with 18 attempts: the failed attempts came
    // faster than the offer makes them, so the share bounds nothing.
    let mut g = rate_governor(Profile::Gentle, 50.0, None);
    assert_to(&g.step(1000.0, 0.0), "up", 100.0);
    g.set_window_span(0.001);
    assert_to(&g.step(18.0, 9.0), "down", 50.0);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    assert_eq!(climb_clean(&mut g, 99.0), None);
    assert_eq!(g.state.last_bad, Some(100.0));
}
