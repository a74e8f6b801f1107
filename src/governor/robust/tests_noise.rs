//! Tests of `gentle`'s rule that a dead-band verdict which is the offer's
//! own noise leaves the clean run standing
//! ([`Tunables::noise_keeps_the_run`]). Each sets gentle against `robust`
//! on the same windows, or against what the rule must not excuse, so that
//! each test fails if its part of the rule goes.

use super::super::Profile;
use super::tests::settled_rate_governor;
use super::*;

/// The offer held, the wall last seen just above it, and a probe dwell of
/// eight clean verdicts: the next additive probe waits for eight in a row.
fn settled(profile: Profile) -> ThrottleGovernor {
    settled_rate_governor(profile, 100.0, 104.0)
}

/// Feeds windows of 1,000 attempts failing `pattern` in turn, up to
/// `windows`; returns the window of the first Up, if any.
fn first_up(g: &mut ThrottleGovernor, pattern: &[f64], windows: usize) -> Option<usize> {
    (0..windows).find(|&i| g.step(1000.0, pattern[i % pattern.len()]).decision_str() == "up")
}

#[test]
fn a_band_verdict_that_is_the_offers_noise_does_not_restart_the_wait_for_a_probe() {
    // 0.8 %, 0.8 %, 1.3 %, ...: every third pool is over `low` (1 %) and,
    // with no background estimate, in the dead band. All told the
    // offer fails 0.97 % (clean), and 13 in 1,000 is no more than the 16
    // in 2,000 before it. Gentle counts on and probes after its eight
    // clean verdicts; robust restarts the count at every third pool and
    // never reaches eight.
    let pattern = [8.0, 8.0, 13.0];
    let mut gentle = settled(Profile::Gentle);
    let up = first_up(&mut gentle, &pattern, 24);
    assert_eq!(up, Some(10), "the eighth clean verdict is the 11th window");
    let mut robust = settled(Profile::Robust);
    assert_eq!(first_up(&mut robust, &pattern, 24), None);
}

#[test]
fn a_band_pool_that_fails_more_than_the_offer_did_still_restarts_the_count() {
    // 0.5 % four times, then 1.6 %: all told 0.72 % (clean), but 16 in
    // 1,000 against 20 in 4,000 is significantly more: something changed
    // at this offer (a wall coming down onto it), not noise.
    let mut g = settled(Profile::Gentle);
    assert_eq!(first_up(&mut g, &[5.0, 5.0, 5.0, 5.0, 16.0], 25), None);
}

#[test]
fn an_offer_whose_counts_all_told_are_not_clean_is_not_noise() {
    // A background of 2 % (40 in 2,000 at offer 40) puts the clean level
    // at 3 %. 2.9 %, 2.9 %, 4 %, ...: each 4 % pool is no more than the
    // offer's history would give, but the offer fails 3.27 % all told,
    // over the clean level: the load's failures on top of the background,
    // as one worker over a wall makes them. The count restarts.
    let mut g = settled(Profile::Gentle);
    g.robust.background.hold(40.0, 2000.0, 40.0);
    g.robust.background.climbed();
    let windows = 24;
    assert_eq!(first_up(&mut g, &[29.0, 29.0, 40.0], windows), None);
    // With 2.5 %, 2.5 %, 3.3 %, ... the offer fails 2.77 % all told
    // (clean), and the 3.3 % pools, in the band on their own, are its
    // noise: gentle probes.
    let mut g = settled(Profile::Gentle);
    g.robust.background.hold(40.0, 2000.0, 40.0);
    g.robust.background.climbed();
    assert!(first_up(&mut g, &[25.0, 25.0, 33.0], windows).is_some());
}
