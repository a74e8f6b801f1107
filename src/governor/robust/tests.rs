//! Tests of the `robust` profile: each rule against a hand-computed window
//! sequence, beside what the default rules do with the same windows, so
//! every test fails if the rule is removed.

use super::super::{Control, Decision, Evidence, HoldReason, Params, Profile, ThrottleGovernor};
use super::*;

/// A robust rate governor (no rounding) at `current` with `last_bad`.
fn robust(current: f64, last_bad: Option<f64>) -> ThrottleGovernor {
    let p = Params::new(Control::Rate, Some(10_000.0), 1.0, None, 0.05, None).unwrap();
    let mut g = ThrottleGovernor::with_profile(p, Profile::Robust);
    g.set_current(current);
    g.restore_memory(last_bad, 0);
    g
}

/// The same, under the default rules.
fn default(current: f64, last_bad: Option<f64>) -> ThrottleGovernor {
    let p = Params::new(Control::Rate, Some(10_000.0), 1.0, None, 0.05, None).unwrap();
    let mut g = ThrottleGovernor::new(p);
    g.set_current(current);
    g.restore_memory(last_bad, 0);
    g
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[track_caller]
fn assert_to(o: &Outcome, decision: &str, to: f64) {
    assert_eq!(o.decision_str(), decision, "{o:?}");
    assert!(close(o.to, to), "to {} != {to}: {o:?}", o.to);
}

#[track_caller]
fn assert_hold(o: &Outcome, reason: HoldReason) {
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

#[test]
fn a_dead_band_the_counts_show_for_sure_steps_down_at_once() {
    // 1.5 % of 1,000: one or two windows are no proof; three (45 of
    // 3,000 against 1 %) are, so robust steps down a probe at the third
    // verdict.
    assert!(!significantly_above(30.0, 2000.0, 0.01));
    assert!(significantly_above(45.0, 3000.0, 0.01));
    let mut g = robust(100.0, Some(150.0));
    assert_hold(&g.step(1000.0, 15.0), HoldReason::DeadBand);
    assert_hold(&g.step(1000.0, 15.0), HoldReason::DeadBand);
    assert_to(&g.step(1000.0, 15.0), "down", 97.0);
    // At 4 % the first window is proof enough.
    let mut g = robust(100.0, Some(150.0));
    assert_to(&g.step(1000.0, 40.0), "down", 97.0);
}

#[test]
fn a_probe_that_sits_in_the_dead_band_for_sure_goes_back_and_counts_as_failed() {
    let mut g = robust(100.0, Some(120.0));
    // Clean at 100: a probe of 2 % of last_bad (2.4).
    let up = g.step(1000.0, 0.0);
    assert_to(&up, "up", 102.4);
    // 1.5 % at the probe: held (not proof yet), then proof: back to 100.
    assert_hold(&g.step(1000.0, 15.0), HoldReason::DeadBand);
    assert_hold(&g.step(1000.0, 15.0), HoldReason::DeadBand);
    let back = g.step(1000.0, 15.0);
    assert_to(&back, "down", 100.0);
    // A failed probe: the next one waits for two clean verdicts.
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Dwelling);
}

#[test]
fn a_step_down_that_does_not_lower_the_failures_excuses_them_as_background() {
    // 1.5 % at 100 for sure: a step down to 97; 1.5 % there too: the
    // failures do not follow the load. They become the background, and
    // 1.5 % is then clean: the governor climbs again.
    let mut g = robust(100.0, Some(150.0));
    g.step(1000.0, 15.0);
    g.step(1000.0, 15.0);
    assert_to(&g.step(1000.0, 15.0), "down", 97.0);
    assert_hold(&g.step(1000.0, 15.0), HoldReason::Settling);
    let mut excused = None;
    for i in 0..8 {
        let o = g.step(1000.0, 15.0);
        assert_ne!(o.decision_str(), "down", "window {i}: {o:?}");
        if let Some(b) = o.confidence.and_then(|c| c.background) {
            excused = Some(b);
        }
        if o.decision_str() == "up" {
            break;
        }
    }
    let b = excused.expect("a background estimate from the excused counts");
    assert!((b.rate - 0.015).abs() < 1e-9, "{b:?}");
}

#[test]
fn a_one_window_burst_returns_to_the_offer_and_the_memory() {
    let mut g = at_ceiling();
    assert_hold(&g.step(1000.0, 0.0), HoldReason::AtCeiling);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::AtCeiling);
    // 40 % out of the blue: a Down, as congestion would get.
    let down = g.step(1000.0, 400.0);
    assert_to(&down, "down", 60.0);
    // Clean at once: the burst is over; back to 100, memory as before.
    let back = g.step(1000.0, 0.0);
    assert_to(&back, "up", 100.0);
    assert_eq!(back.last_bad, None);
    // The default keeps last_bad = 100 and reclimbs to 75 first.
    let p = Params::new(Control::Rate, Some(100.0), 1.0, None, 0.05, None).unwrap();
    let mut d = ThrottleGovernor::new(p);
    let _ = d.set_current(100.0);
    d.step(1000.0, 400.0);
    let o = d.step(1000.0, 0.0);
    assert_to(&o, "up", 75.0);
    assert_eq!(o.last_bad, Some(100.0));
}

#[test]
fn failures_that_do_not_fall_with_the_offer_are_a_burst() {
    let mut g = at_ceiling();
    g.step(1000.0, 0.0);
    g.step(1000.0, 0.0);
    assert_to(&g.step(1000.0, 400.0), "down", 60.0);
    // Still 40 % at 60 % of the offer: not congestion. Back to 100.
    assert_to(&g.step(1000.0, 400.0), "up", 100.0);
    // The burst goes on at 100: tested again, not taken as congestion.
    assert_to(&g.step(1000.0, 450.0), "down", 55.0);
    let back = g.step(1000.0, 0.0);
    assert_to(&back, "up", 100.0);
    assert_eq!(back.last_bad, None);
}

#[test]
fn a_real_capacity_drop_shows_itself_again_and_is_backed_off() {
    let mut g = at_ceiling();
    g.step(1000.0, 0.0);
    g.step(1000.0, 0.0);
    assert_to(&g.step(1000.0, 500.0), "down", 50.0);
    // Clean at half the offer: could be a burst that ended. Back to 100...
    assert_to(&g.step(1000.0, 0.0), "up", 100.0);
    // ...where it fails again, right after an Up: congestion.
    let o = g.step(1000.0, 500.0);
    assert_to(&o, "down", 50.0);
    assert_eq!(o.last_bad, Some(100.0));
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    let o = g.step(1000.0, 0.0);
    assert_to(&o, "up", 75.0);
}

#[test]
fn the_reclimb_stops_at_the_last_offer_seen_clean() {
    let mut g = robust(48.0, Some(200.0));
    assert_to(&g.step(4800.0, 0.0), "up", 72.0);
    let o = g.step(7200.0, 5400.0);
    assert_to(&o, "down", 18.0);
    assert_eq!(o.last_bad, Some(72.0));
    assert_hold(&g.step(1800.0, 0.0), HoldReason::Settling);
    assert_to(&g.step(1800.0, 0.0), "up", 27.0);
    assert_to(&g.step(2700.0, 0.0), "up", 40.5);
    // Default would reclimb to min(60.75, 0.75 * 72 = 54); 48 was the last
    // clean offer.
    assert_to(&g.step(4050.0, 0.0), "up", 48.0);
    let mut d = default(40.5, Some(72.0));
    assert_to(&d.step(4050.0, 0.0), "up", 54.0);
}

#[test]
fn a_failed_probe_is_undone_and_the_next_one_waits_longer() {
    let mut g = robust(100.0, Some(104.0));
    // Clean below last_bad in the probe zone: +2 % of last_bad.
    let probe = g.step(1000.0, 0.0);
    assert_to(&probe, "up", 102.08);
    // 3 % is the dead band: the default would hold at 102.08 for good.
    let mut d = default(102.08, Some(104.0));
    assert_hold(&d.step(1000.0, 30.0), HoldReason::DeadBand);
    // Robust goes back to where the probe started.
    let back = g.step(1000.0, 30.0);
    assert_to(&back, "down", 100.0);
    assert_eq!(back.last_bad, Some(102.08));
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    // The next probe waits for two clean verdicts.
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Dwelling);
    assert_to(&g.step(1000.0, 0.0), "up", 100.0 + 0.02 * 102.08);
}

#[test]
fn a_successful_probe_resets_the_wait() {
    let mut g = robust(100.0, Some(104.0));
    g.step(1000.0, 0.0); // probe to 102.08
    g.step(1000.0, 30.0); // undone: dwell 2
    g.step(1000.0, 0.0); // settling
    g.step(1000.0, 0.0); // dwelling
    let up = g.step(1000.0, 0.0);
    assert_eq!(up.decision_str(), "up");
    // This probe is clean: the next one goes after a single clean verdict.
    let again = g.step(1000.0, 0.0);
    assert_eq!(again.decision_str(), "up", "{again:?}");
}

#[test]
fn a_failed_probe_that_breaches_goes_back_no_further_than_its_start() {
    let mut g = robust(100.0, Some(104.0));
    g.step(1000.0, 0.0); // probe to 102.08
                         // 10 % fails: the default factor would go to 91.872; the start was clean.
    assert_to(&g.step(1000.0, 100.0), "down", 100.0);
}

#[test]
fn a_large_up_into_the_dead_band_backs_off_a_step() {
    let mut g = robust(32.0, None);
    assert_to(&g.step(1000.0, 0.0), "up", 64.0);
    assert_to(&g.step(2000.0, 60.0), "down", 64.0 * BAND_BACK_OFF);
    let mut d = default(64.0, None);
    assert_hold(&d.step(2000.0, 60.0), HoldReason::DeadBand);
    // Below 40 % of high, the band is held like the default holds it.
    let mut g = robust(32.0, None);
    g.step(1000.0, 0.0);
    assert_hold(&g.step(2000.0, 30.0), HoldReason::DeadBand);
}

#[test]
fn failing_where_it_was_clean_after_a_retreat_is_a_breach() {
    let mut g = robust(100.0, Some(104.0));
    g.step(1000.0, 0.0); // probe to 102.08
    g.step(1000.0, 30.0); // undone, back at 100
    assert_hold(&g.step(1000.0, 30.0), HoldReason::Settling);
    // 3 % at an offer that was clean: retries or a backlog. Back off.
    assert_to(&g.step(1000.0, 30.0), "down", 90.0);
}

#[test]
fn after_a_memory_clear_the_reprobe_adds_doubling_increments() {
    let mut g = robust(1000.0, Some(1000.0));
    assert_to(&g.step(1000.0, 0.0), "up", 1020.0);
    assert_to(&g.step(1000.0, 0.0), "up", 1040.0);
    let clear = g.step(1000.0, 0.0);
    assert!(clear.memory_cleared);
    // +10 % of the clearing offer, then 20 %, 40 %, ... (Attempts follow
    // the offer, as a tool's do.)
    assert_to(&clear, "up", 1040.0 + 104.0);
    assert_to(&g.step(1144.0, 0.0), "up", 1144.0 + 208.0);
    assert_to(&g.step(1352.0, 0.0), "up", 1352.0 + 416.0);
    assert_to(&g.step(1768.0, 0.0), "up", 1768.0 + 832.0);
    assert_to(&g.step(2600.0, 0.0), "up", 2600.0 + 1664.0);

    let mut d = default(1000.0, Some(1000.0));
    d.step(1000.0, 0.0);
    d.step(1000.0, 0.0);
    let clear = d.step(1000.0, 0.0);
    assert!(clear.memory_cleared);
    assert_to(&clear, "up", 2080.0);
}

#[test]
fn an_outside_change_drops_the_pooled_evidence() {
    let mut g = robust(100.0, Some(120.0));
    assert_hold(&g.step(30.0, 2.0), HoldReason::Gathering);
    g.set_current(90.0);
    // 80 attempts alone are not enough; with the old 30 they would be.
    assert_hold(&g.step(80.0, 0.0), HoldReason::Gathering);
    // Setting the same value is no change.
    g.set_current(90.0);
    let o = g.step(30.0, 0.0);
    assert_eq!(o.evidence.map(|e| e.windows), Some(2), "{o:?}");
}

#[test]
fn no_traffic_holds_and_keeps_the_pool() {
    let mut g = robust(100.0, Some(120.0));
    g.step(60.0, 1.0);
    assert_hold(&g.step(0.0, 0.0), HoldReason::NoTraffic);
    let o = g.step(60.0, 0.0);
    assert_eq!(o.evidence.map(|e| e.attempts), Some(120.0), "{o:?}");
}

#[test]
fn the_default_profile_never_touches_the_robust_layer() {
    let mut d = default(100.0, Some(120.0));
    for (n, f) in [(30.0, 2.0), (1000.0, 0.0), (1000.0, 200.0), (1000.0, 200.0)] {
        let o = d.step(n, f);
        assert_eq!(o.evidence, None);
        assert!(!matches!(
            o.reason,
            Some(HoldReason::Gathering | HoldReason::Settling | HoldReason::Dwelling)
        ));
    }
    assert_eq!(d.robust, RobustState::default());
    assert_eq!(d.profile(), Profile::Seed);
}

/// Probes to 102.08 from 100 and fails it with `failed` of 1000 attempts:
/// back at 100, past the settle window.
fn after_a_failed_probe(failed: f64) -> ThrottleGovernor {
    let mut g = robust(100.0, Some(104.0));
    assert_to(&g.step(1000.0, 0.0), "up", 102.08);
    assert_to(&g.step(1000.0, failed), "down", 100.0);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    g
}

#[test]
fn a_probe_past_a_fast_failing_wall_waits_until_it_has_paid_for_itself() {
    // 600 of 1000 failed (a wall whose rejections come back fast): the next
    // probe to that offer waits for 600 / (PROBE_COST_SHARE high) = 24,000
    // clean attempts, 24 verdicts of 1000, not the 2 of the doubling dwell
    // alone (nor the 12 of paying at high).
    let mut g = after_a_failed_probe(600.0);
    for _ in 1..24 {
        assert_hold(&g.step(1000.0, 0.0), HoldReason::Dwelling);
    }
    assert_to(&g.step(1000.0, 0.0), "up", 100.0 + 0.02 * 102.08);
    // A probe on a knee that fails a few attempts pays in one verdict, so
    // only the doubling dwell (2) holds it.
    let mut g = after_a_failed_probe(30.0);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Dwelling);
    assert_to(&g.step(1000.0, 0.0), "up", 100.0 + 0.02 * 102.08);
}

#[test]
fn a_failed_probes_cost_waits_at_most_max_cost_dwell_verdicts() {
    // 3000 of 5000 failed: 120,000 clean attempts owed, and verdicts of
    // 1000 attempts would take 120 of them.
    let mut g = robust(100.0, Some(104.0));
    assert_to(&g.step(1000.0, 0.0), "up", 102.08);
    assert_to(&g.step(5000.0, 3000.0), "down", 100.0);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Settling);
    for _ in 1..MAX_COST_DWELL {
        assert_hold(&g.step(1000.0, 0.0), HoldReason::Dwelling);
    }
    assert_to(&g.step(1000.0, 0.0), "up", 100.0 + 0.02 * 102.08);
}

#[test]
fn a_failed_probes_cost_holds_a_probe_that_would_pass_its_start() {
    let mut g = after_a_failed_probe(600.0);
    // The tool runs 99 now: a probe from there (+2.04) would pass 100,
    // where the failed probe started, so it pays the cost too.
    g.set_current(99.0);
    for _ in 1..24 {
        assert_hold(&g.step(1000.0, 0.0), HoldReason::Dwelling);
    }
    assert_to(&g.step(1000.0, 0.0), "up", 99.0 + 0.02 * 102.08);
}

#[test]
fn failing_on_where_a_failed_probe_returned_makes_the_next_one_wait_longest() {
    let mut g = robust(100.0, Some(104.0));
    g.step(1000.0, 0.0); // probe to 102.08
    g.step(1000.0, 30.0); // undone, back at 100: 30 failures owe 1200
    assert_hold(&g.step(1000.0, 30.0), HoldReason::Settling);
    // Still failing where it was clean: retries left by the probe.
    assert_to(&g.step(1000.0, 30.0), "down", 90.0);
    // Back at 100 (the tool's own doing), a probe from there waits the
    // longest cost dwell, not the 2 verdicts its 30 failures would owe.
    g.set_current(100.0);
    for _ in 1..MAX_COST_DWELL {
        assert_hold(&g.step(1000.0, 0.0), HoldReason::Dwelling);
    }
    assert_to(&g.step(1000.0, 0.0), "up", 100.0 + 0.02 * 102.08);
}

#[test]
fn only_nearly_failure_free_verdicts_clear_the_memory() {
    // 0.5 % fails: clean (below low = 1 %), but not evidence that the wall
    // at last_bad is gone.
    let mut g = robust(100.0, Some(100.0));
    let mut d = default(100.0, Some(100.0));
    for _ in 0..3 {
        assert!(!g.step(1000.0, 5.0).memory_cleared);
    }
    let mut cleared = false;
    for _ in 0..3 {
        cleared |= d.step(1000.0, 5.0).memory_cleared;
    }
    assert!(cleared, "the default clears on any clean verdict");
    // Two failures in 1000 (0.2 %) count.
    let mut g = robust(100.0, Some(100.0));
    let mut cleared = false;
    for _ in 0..3 {
        let n = 10.0 * g.state().current;
        cleared |= g.step(n, n * 0.002).memory_cleared;
    }
    assert!(cleared, "the memory never cleared");
}

#[test]
fn a_failed_probes_cost_holds_no_probe_below_its_offer() {
    let mut g = after_a_failed_probe(600.0);
    // The tool runs 90 now: a probe from below where the failed probe
    // started (100) is held by the doubling dwell (2 clean verdicts) only.
    g.set_current(90.0);
    assert_hold(&g.step(1000.0, 0.0), HoldReason::Dwelling);
    assert_to(&g.step(1000.0, 0.0), "up", 92.0416);
}

#[test]
fn a_memory_clear_forgets_a_failed_probes_cost() {
    let mut g = after_a_failed_probe(600.0);
    // Clean at last_bad (102.08) and above clears the memory; the offer
    // came back there from outside.
    g.set_current(102.08);
    let mut cleared = false;
    for _ in 0..20 {
        let o = g.step(1000.0, 0.0);
        if o.memory_cleared {
            cleared = true;
            break;
        }
    }
    assert!(cleared, "the memory never cleared");
    assert_eq!(g.robust.owed, None);
}

#[test]
fn the_probe_dwell_keeps_doubling_past_32_verdicts() {
    // A wall that stays put: every failed probe doubles the wait, up to
    // MAX_DWELL (128) clean verdicts, where 32 used to be the most.
    let mut g = robust(100.0, Some(104.0));
    for _ in 0..6 {
        g.robust.probe_failed();
    }
    assert_eq!(g.robust.dwell, 64);
    for _ in 0..4 {
        g.robust.probe_failed();
    }
    assert_eq!(g.robust.dwell, MAX_DWELL);
    assert_eq!(MAX_DWELL, 128);
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
