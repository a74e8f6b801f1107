//! Tests of the `robust` profile: each rule against a hand-computed window
//! sequence, beside what the default rules do with the same windows, so
//! every test fails if the rule is removed.

use super::super::{Control, Decision, Evidence, HoldReason, Params, Profile, ThrottleGovernor};
use super::*;

/// A rate governor (no rounding) of `profile` at `current` with `last_bad`.
pub(super) fn rate_governor(
    profile: Profile,
    current: f64,
    last_bad: Option<f64>,
) -> ThrottleGovernor {
    let p = Params::new(Control::Rate, Some(10_000.0), 1.0, None, 0.05, None).unwrap();
    let mut g = ThrottleGovernor::with_profile(p, profile);
    g.set_current(current);
    g.restore_memory(last_bad, 0);
    g
}

/// A rate governor settled at `current` under a wall last seen at
/// `last_bad`, whose next additive probe waits for 8 clean verdicts in a
/// row.
pub(super) fn settled_rate_governor(
    profile: Profile,
    current: f64,
    last_bad: f64,
) -> ThrottleGovernor {
    let mut g = rate_governor(profile, current, Some(last_bad));
    g.robust.dwell = 8;
    g
}

/// A robust rate governor (no rounding) at `current` with `last_bad`.
fn robust(current: f64, last_bad: Option<f64>) -> ThrottleGovernor {
    rate_governor(Profile::Robust, current, last_bad)
}

/// The same, under the default rules.
fn default(current: f64, last_bad: Option<f64>) -> ThrottleGovernor {
    rate_governor(Profile::Seed, current, last_bad)
}

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[track_caller]
pub(super) fn assert_to(o: &Outcome, decision: &str, to: f64) {
    assert_eq!(o.decision_str(), decision, "{o:?}");
    assert!(close(o.to, to), "to {} != {to}: {o:?}", o.to);
}

#[track_caller]
pub(super) fn assert_hold(o: &Outcome, reason: HoldReason) {
    assert_eq!(o.decision, Decision::Hold, "{o:?}");
    assert_eq!(o.reason, Some(reason), "{o:?}");
}

/// `P(X >= f)` by direct summation, for small `n`.
fn tail_direct(f: u64, n: u64, p: f64) -> f64 {
    let mut below = 0.0;
    for k in 0..f {
        let mut c = 1.0;
        for i in 0..k {
            c *= (n - i) as f64 / (i + 1) as f64;
        }
        below += c * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32);
    }
    1.0 - below
}

#[test]
fn binomial_tail_is_exact() {
    assert_eq!(binomial_tail(0.0, 30.0, 0.05), 1.0);
    assert!(close(binomial_tail(1.0, 1.0, 0.05), 0.05));
    for (f, n, p) in [
        (2, 30, 0.05),
        (4, 30, 0.05),
        (6, 30, 0.05),
        (11, 100, 0.05),
        (3, 10, 0.05),
        (1, 100, 0.05),
        (5, 100, 0.05),
        (40, 120, 0.3),
        (30, 120, 0.3),
        (25, 60, 0.01),
    ] {
        let exact = tail_direct(f, n, p);
        let got = binomial_tail(f as f64, n as f64, p);
        assert!(
            (got - exact).abs() < 1e-10,
            "{f}/{n} at {p}: {got} vs {exact}"
        );
    }
    // Huge windows: no underflow, and the tail behaves.
    assert!(binomial_tail(1_000.0, 20_000.0, 0.05) > 0.4);
    assert!(binomial_tail(1_200.0, 20_000.0, 0.05) < 1e-6);
    assert_eq!(binomial_tail(500_000.0, 1e6, 0.05), 0.0);
    assert!(binomial_tail(10.0, 1e6, 0.05) > 1.0 - 1e-12);
    // Stirling's series matches the exact sum where they meet.
    let exact: f64 = (2..=25).map(|k| f64::ln(k as f64)).sum();
    assert!((ln_factorial(25.0) - exact).abs() < 1e-11);
}

#[test]
fn a_breach_needs_significance_on_few_attempts() {
    // One or two background failures among 30 attempts are no breach...
    assert!(!significant_breach(1.0, 30.0, 0.05));
    assert!(!significant_breach(2.0, 30.0, 0.05));
    // ...six are (P = 0.003 under 5 %).
    assert!(significant_breach(6.0, 30.0, 0.05));
    // One failure of one attempt is not (P = 0.05).
    assert!(!significant_breach(1.0, 1.0, 0.05));
    // Large windows: 6 % of 1000 could be 5 %; 10 % cannot.
    assert!(!significant_breach(60.0, 1000.0, 0.05));
    assert!(significant_breach(100.0, 1000.0, 0.05));
    // Never at or below the bound.
    assert!(!significant_breach(5.0, 100.0, 0.05));
    assert!(significantly_above(30.0, 1000.0, 0.01));
    assert!(!significantly_above(2.0, 100.0, 0.01));
}

#[test]
fn thin_windows_are_pooled_until_there_is_evidence() {
    // Default: 2 of 30 is 6.7 % > 5 %: a Down on no evidence.
    let mut d = default(100.0, Some(120.0));
    assert_to(&d.step(30.0, 2.0), "down", 90.0);

    let mut g = robust(100.0, Some(120.0));
    assert_hold(&g.step(30.0, 2.0), HoldReason::Gathering);
    assert_hold(&g.step(30.0, 1.0), HoldReason::Gathering);
    assert_hold(&g.step(30.0, 0.0), HoldReason::Gathering);
    // 120 attempts >= 1 / low: a verdict on 3 / 120 = 2.5 %, the dead band.
    let o = g.step(30.0, 0.0);
    assert_hold(&o, HoldReason::DeadBand);
    assert_eq!(
        o.evidence,
        Some(Evidence {
            attempts: 120.0,
            failures: 3.0,
            windows: 4
        })
    );
    // The signal stays the window's own (telemetry counts it once).
    assert_eq!(o.signal.unwrap().attempts, 30.0);
    // The pool starts again after a verdict.
    assert_hold(&g.step(30.0, 0.0), HoldReason::Gathering);
}

#[test]
fn a_significant_breach_acts_on_few_attempts() {
    let mut g = robust(100.0, Some(120.0));
    let o = g.step(30.0, 10.0);
    assert_to(&o, "down", 100.0 * (1.0 - 10.0 / 30.0));
    assert_eq!(o.last_bad, Some(100.0));
}

#[test]
fn slow_start_still_climbs_on_one_thin_clean_window() {
    let mut g = robust(1.0, None);
    assert_to(&g.step(1.0, 0.0), "up", 2.0);
    assert_to(&g.step(2.0, 0.0), "up", 4.0);
    // A thin window with a failure gathers instead of climbing.
    assert_hold(&g.step(3.0, 1.0), HoldReason::Gathering);
}

#[test]
fn slow_start_doubles_like_the_default_while_small() {
    let mut g = robust(32.0, None);
    assert_to(&g.step(1000.0, 0.0), "up", 64.0);
    let mut d = default(32.0, None);
    assert_to(&d.step(1000.0, 0.0), "up", 64.0);
}

#[test]
fn the_opening_slow_start_slows_down_once_the_offer_is_large() {
    // From SLOW_START_DOUBLING_BELOW (64) on: x1.5, x1.25, then x1.125 for
    // good; the default keeps doubling (64, 128, 256, 512).
    let mut g = robust(64.0, None);
    let mut d = default(64.0, None);
    for (to, default_to) in [(96.0, 128.0), (120.0, 256.0), (135.0, 512.0)] {
        // Attempts follow the offer, as a tool's do.
        let n = 100.0 * g.state().current;
        assert_to(&g.step(n, 0.0), "up", to);
        assert_to(&d.step(n, 0.0), "up", default_to);
    }
    assert_to(&g.step(100.0 * 135.0, 0.0), "up", 135.0 * 1.125);
    // Small offers are untouched: 1, 2, 4, ... as the real tools climb.
    let mut g = robust(1.0, None);
    for to in [2.0, 4.0, 8.0, 16.0, 32.0, 64.0] {
        let n = 100.0 * g.state().current;
        assert_to(&g.step(n, 0.0), "up", to);
    }
}

#[test]
fn the_opening_overshoot_goes_back_to_the_last_clean_offer() {
    let mut g = robust(32.0, None);
    assert_to(&g.step(3200.0, 0.0), "up", 64.0);
    // 75 % fail: the default factor (x0.25) would go to 16, below 32, the
    // offer just judged clean.
    let o = g.step(6400.0, 4800.0);
    assert_to(&o, "down", 32.0);
    assert_eq!(o.last_bad, Some(64.0));
    let mut d = default(64.0, None);
    assert_to(&d.step(6400.0, 4800.0), "down", 16.0);
}

#[test]
fn an_offer_that_adds_no_successes_does_not_climb() {
    // 1000 attempts at 10, then 1000 at 20: twice the offer, no more
    // successes (a queue: the target completes what it can, later).
    let mut g = robust(10.0, None);
    assert_to(&g.step(1000.0, 0.0), "up", 20.0);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Dwelling);
    let mut d = default(20.0, None);
    assert_to(&d.step(1000.0, 0.0), "up", 40.0);
    // When the successes follow the offer again, it climbs.
    assert_to(&g.step(2000.0, 0.0), "up", 40.0);
    // A small drop is noise, not a plateau.
    let mut g = robust(10.0, None);
    g.step(1000.0, 0.0);
    assert_to(&g.step(1600.0, 0.0), "up", 40.0);
}

#[test]
fn a_window_that_spans_two_is_no_plateau_for_the_next() {
    // Offer 1's window spans two nominal windows (a read failed in
    // between): 600 attempts in twice the time. Then 600 a window at 2:
    // the same yield per window of time, so the successes follow the
    // offer. Taken as one window, offer 1's yield was 600, 2's is 300:
    // a "plateau", and every later window held there (a live run, under
    // load, sat at 2 for 120 s with every window clean).
    for profile in [Profile::Gentle, Profile::Robust] {
        let mut g = rate_governor(profile, 1.0, None);
        g.set_window_span(2.0);
        assert_to(&g.step(600.0, 0.0), "up", 2.0);
        assert_to(&g.step(600.0, 0.0), "up", 4.0);
        // Without the span, the same counts hold at 2 for good.
        let mut blind = rate_governor(profile, 1.0, None);
        assert_to(&blind.step(600.0, 0.0), "up", 2.0);
        for _ in 0..5 {
            assert_hold(&blind.step(600.0, 0.0), HoldReason::Dwelling);
        }
    }
    // The span is the next window's only, and nonsense counts as 1.
    let mut g = rate_governor(Profile::Gentle, 1.0, None);
    g.set_window_span(f64::NAN);
    assert_to(&g.step(600.0, 0.0), "up", 2.0);
    assert_hold(&g.step(600.0, 0.0), HoldReason::Dwelling);
}

#[test]
fn late_failures_after_a_down_settle_instead_of_moving_last_bad() {
    // Default: the lagged failures cause a second Down and last_bad drops.
    let mut d = default(100.0, None);
    assert_to(&d.step(1000.0, 200.0), "down", 80.0);
    let o = d.step(1000.0, 200.0);
    assert_to(&o, "down", 64.0);
    assert_eq!(o.last_bad, Some(80.0));

    let mut g = robust(100.0, None);
    assert_to(&g.step(1000.0, 200.0), "down", 80.0);
    let o = g.step(1000.0, 200.0);
    assert_hold(&o, HoldReason::Settling);
    assert_eq!(o.last_bad, Some(100.0));
    // The next window is judged on its own.
    let o = g.step(1000.0, 0.0);
    assert_eq!(o.decision_str(), "up", "{o:?}");
    assert_eq!(o.last_bad, Some(100.0));
}

#[test]
fn a_growing_overload_backs_off_again_and_keeps_the_highest_last_bad() {
    let mut g = robust(100.0, None);
    assert_to(&g.step(1000.0, 200.0), "down", 80.0);
    // Worse than the 20 % that caused the Down: retries, say.
    let o = g.step(1000.0, 400.0);
    assert_to(&o, "down", 48.0);
    assert_eq!(o.last_bad, Some(100.0), "same episode: the highest offer");
}

#[test]
fn the_window_after_an_up_is_judged_at_once() {
    let mut g = robust(16.0, None);
    assert_to(&g.step(1600.0, 0.0), "up", 32.0);
    assert_to(&g.step(3200.0, 0.0), "up", 64.0);
    assert_to(&g.step(6400.0, 3200.0), "down", 32.0);
}

/// A robust rate governor held at its ceiling of 100, so clean windows hold.
fn at_ceiling() -> ThrottleGovernor {
    let p = Params::new(Control::Rate, Some(100.0), 1.0, None, 0.05, None).unwrap();
    let mut g = ThrottleGovernor::with_profile(p, Profile::Robust);
    let _ = g.set_current(100.0);
    g
}

#[test]
fn early_clean_windows_do_not_hide_a_breach_now() {
    let mut g = at_ceiling();
    for _ in 0..20 {
        assert_hold(&g.step(1000.0, 5.0), HoldReason::AtCeiling);
    }
    // 8 % now: pooled with the 20 clean windows it would be 0.8 %; alone
    // it is a significant breach.
    assert_to(&g.step(1000.0, 80.0), "down", 90.0);
    // The recent windows at the offer pool too: 9 failures of 100 are no
    // significant breach alone, a few such windows together are.
    assert!(!significant_breach(9.0, 100.0, 0.05));
    // (The first such window already shows failures above the clean level
    // for sure: it steps down one probe, not a back-off.)
    let mut g = at_ceiling();
    let first = g.step(100.0, 9.0);
    assert!(first.to >= 99.0, "{first:?}");
    let breach = (0..8).find(|_| {
        let o = g.step(100.0, 9.0);
        o.decision_str() == "down" && o.to <= 0.92 * o.from
    });
    assert!(breach.is_some(), "a back-off within 8 windows");
}

#[test]
fn a_lasting_dead_band_steps_down_a_probe() {
    // 1.1 % for good: not significantly above low for a long while, so
    // the patience decides: the default holds, robust steps down 2 % of
    // last_bad after BAND_PATIENCE verdicts.
    let mut g = robust(100.0, Some(150.0));
    let mut d = default(100.0, Some(150.0));
    for i in 1..BAND_PATIENCE {
        assert_hold(&g.step(1000.0, 11.0), HoldReason::DeadBand);
        assert_hold(&d.step(1000.0, 11.0), HoldReason::DeadBand);
        assert!(i < BAND_PATIENCE);
    }
    assert_to(&g.step(1000.0, 11.0), "down", 97.0);
    assert_hold(&d.step(1000.0, 11.0), HoldReason::DeadBand);
}

/// A gentle rate governor (no rounding) at `current` with `last_bad`.
fn gentle(current: f64, last_bad: Option<f64>) -> ThrottleGovernor {
    rate_governor(Profile::Gentle, current, last_bad)
}

/// The same, after a clean climb from 40 (400 attempts, no failure):
/// the background at offers from 80 on rests on them, so the counts can
/// prove a dead band.
fn gentle_with_reference(current: f64, last_bad: Option<f64>) -> ThrottleGovernor {
    let mut g = gentle(40.0, last_bad);
    assert_eq!(g.step(400.0, 0.0).decision_str(), "up");
    g.set_current(current);
    g
}

/// How many windows of 15 failures in 1,000 it takes to prove, at
/// [`BAND_PROOF_ALPHA`], a failure probability above 1 %.
fn windows_to_prove_1_5_percent() -> usize {
    let k = (1..=12)
        .find(|&k| {
            let k = k as f64;
            significantly_above_at(15.0 * k, 1000.0 * k, 0.01, BAND_PROOF_ALPHA)
        })
        .expect("proven within the patience");
    assert!(k >= 2, "one window of 1.5 % is no proof");
    k
}

#[test]
fn a_dead_band_the_counts_show_for_sure_steps_down_at_once() {
    // 1.5 % of 1,000 a window: gentle steps down a probe (2 % of
    // last_bad) at the first verdict whose pooled windows prove it, long
    // before the patience; robust holds until the patience.
    let k = windows_to_prove_1_5_percent();
    let mut g = gentle_with_reference(100.0, Some(150.0));
    let mut r = robust(100.0, Some(150.0));
    for _ in 1..k {
        assert_hold(&g.step(1000.0, 15.0), HoldReason::DeadBand);
        assert_hold(&r.step(1000.0, 15.0), HoldReason::DeadBand);
    }
    assert_to(&g.step(1000.0, 15.0), "down", 97.0);
    assert_hold(&r.step(1000.0, 15.0), HoldReason::DeadBand);
    // At 4 % the first window is proof enough.
    let mut g = gentle_with_reference(100.0, Some(150.0));
    assert_to(&g.step(1000.0, 40.0), "down", 97.0);
}

#[test]
fn a_probe_that_sits_in_the_dead_band_for_sure_goes_back_and_counts_as_failed() {
    let mut g = gentle_with_reference(100.0, Some(120.0));
    // Clean at 100: a probe of 2 % of last_bad (2.4).
    assert_to(&g.step(1000.0, 0.0), "up", 102.4);
    // 1.5 % at the probe, against 0 of 1,000 at 100 just below: the load's
    // at once, back to 100. (Until the eleventh round it was held for the
    // windows that prove 1.5 % above the clean level, 1 %.)
    assert_to(&g.step(1000.0, 15.0), "down", 100.0);
    // A failed probe: the next one waits for two clean verdicts.
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Dwelling);
}

/// A gentle governor that proved 1.5 % at 100 a lasting band and stepped
/// down to 97, with the windows that took.
fn stepped_down_from_100_on_1_5_percent() -> (ThrottleGovernor, usize) {
    let k = windows_to_prove_1_5_percent();
    let mut g = gentle_with_reference(100.0, Some(150.0));
    for _ in 1..k {
        g.step(1000.0, 15.0);
    }
    assert_to(&g.step(1000.0, 15.0), "down", 97.0);
    (g, k)
}

#[test]
fn a_step_down_that_does_not_lower_the_failures_excuses_them_as_background() {
    // 1.5 % at 100, proven: a step down to 97; 1.5 % there too, proven:
    // the failures do not follow the load. They become the background,
    // 1.5 % is then clean, and the governor climbs again.
    let (mut g, k) = stepped_down_from_100_on_1_5_percent();
    assert_hold(&g.step(1000.0, 15.0), HoldReason::Settling);
    let mut excused = None;
    let mut climbed = false;
    for i in 0..2 * k + 2 {
        let o = g.step(1000.0, 15.0);
        assert_ne!(o.decision_str(), "down", "window {i}: {o:?}");
        if let Some(b) = o.confidence.and_then(|c| c.background) {
            excused = Some(b);
        }
        if o.decision_str() == "up" {
            climbed = true;
            break;
        }
    }
    assert!(climbed, "climbs once the background explains 1.5 %");
    // The estimate: the excused windows at 100 and 97 (k each, 15 of
    // 1,000 failed); they already hold more than ENOUGH_REFERENCE, so the
    // clean witnesses at 40 are not read.
    let b = excused.expect("a background estimate from the excused counts");
    let n = 2000.0 * k as f64;
    assert_eq!(b.attempts, n, "{b:?}");
    assert!((b.rate - 30.0 * k as f64 / n).abs() < 1e-9, "{b:?}");
}

#[test]
fn a_breach_at_the_excused_offer_withdraws_the_excuse() {
    // As above: 1.5 % at 100 and at 97 is excused as background, and the
    // governor climbs from 97.
    let (mut g, k) = stepped_down_from_100_on_1_5_percent();
    let mut climbed = false;
    for _ in 0..3 * k + 3 {
        if g.step(1000.0, 15.0).decision_str() == "up" {
            climbed = true;
            break;
        }
    }
    assert!(climbed, "climbs once the background explains 1.5 %");
    let excused = g.robust.background.at(97.0, false).expect("excused");
    assert!((excused.rate - 0.015).abs() < 1e-9, "{excused:?}");
    // The wall falls: breaches until one backs off from 97 or lower.
    let mut withdrawn = false;
    for i in 0..12 {
        let o = g.step(1000.0, 200.0);
        if o.decision_str() == "down" && o.from <= 97.0 {
            withdrawn = true;
            break;
        }
        let still = g.robust.background.at(97.0, false);
        assert_eq!(still, Some(excused), "window {i}: kept above 97: {o:?}");
    }
    assert!(withdrawn, "backs off from 97 or lower");
    // What witnesses the background now is the clean windows at 40: no
    // failure in 400 attempts.
    let now = g.robust.background.at(97.0, false).expect("the low offers");
    assert_eq!((now.attempts, now.failures), (400.0, 0.0), "{now:?}");
}

/// A gentle governor at 8 that climbed there from 4, where 100 attempts
/// failed 2 % (2): the background at 8 is 2 %.
fn gentle_with_background() -> ThrottleGovernor {
    let p = Params::new(Control::Concurrency, Some(1000.0), 1.0, None, 0.05, None).unwrap();
    let mut g = ThrottleGovernor::with_profile(p, Profile::Gentle);
    let _ = g.set_current(4.0);
    // The first window at the opening offer has nothing to compare with,
    // and too few attempts for a verdict of its own.
    assert_hold(&g.step(50.0, 1.0), HoldReason::Gathering);
    // Then the opening offer's own failures are the background as far as
    // anything can tell: 2 % is clean there, and the governor climbs.
    assert_to(&g.step(50.0, 1.0), "up", 8.0);
    g
}

#[test]
fn one_failure_in_40_with_a_2_percent_background_is_no_breach_and_climbs() {
    let mut g = gentle_with_background();
    let o = g.step(40.0, 1.0);
    assert_to(&o, "up", 16.0);
    let c = o.confidence.expect("a verdict has a confidence");
    assert_eq!(c.verdict, VerdictClass::Clean);
    assert_eq!((c.attempts, c.failures), (40.0, 1.0));
    let b = c.background.expect("a background estimate");
    assert_eq!((b.attempts, b.failures), (100.0, 2.0));
    assert!((c.clean_below - 0.03).abs() < 1e-12, "{c:?}");
    assert!(c.lower < 0.025 && 0.025 < c.upper, "{c:?}");
    // Without the background (the seed rules), the same window is in the
    // dead band: 2.5 % is above low.
    let p = Params::new(Control::Concurrency, Some(1000.0), 1.0, None, 0.05, None).unwrap();
    let mut seed = ThrottleGovernor::with_profile(p, Profile::Seed);
    let _ = seed.set_current(8.0);
    assert_hold(&seed.step(40.0, 1.0), HoldReason::DeadBand);
}

#[test]
fn thirty_failures_in_40_are_a_breach_with_a_background() {
    let mut g = gentle_with_background();
    let o = g.step(40.0, 30.0);
    assert_eq!(o.decision_str(), "down", "{o:?}");
    assert_eq!(o.confidence.unwrap().verdict, VerdictClass::Breach);
}

#[test]
fn at_4000_attempts_the_same_counts_decide_as_the_point_estimate() {
    // 2.5 % (100 of 4,000) is below background + low (3 %): clean.
    let mut g = gentle_with_background();
    assert_to(&g.step(4000.0, 100.0), "up", 16.0);
    // 75 % is a breach.
    let mut g = gentle_with_background();
    let o = g.step(4000.0, 3000.0);
    assert_eq!(o.confidence.unwrap().verdict, VerdictClass::Breach);
    assert_eq!(o.decision_str(), "down");
    // 3.5 % is above 3 %, and 4,000 attempts make it sure: the dead band.
    let mut g = gentle_with_background();
    let o = g.step(4000.0, 140.0);
    assert_eq!(o.confidence.unwrap().verdict, VerdictClass::DeadBand);
    assert_ne!(o.decision_str(), "up");
}
