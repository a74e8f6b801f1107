use super::*;
use crate::governor::{Control, Params, Profile};
use proptest::prelude::*;

fn gov(ceiling: f64) -> ThrottleGovernor {
    let p = Params::new(Control::Concurrency, Some(ceiling), 1.0, None, 0.05, None).unwrap();
    ThrottleGovernor::new(p)
}

fn lat(observed: Option<f64>) -> Option<LatencyWindow> {
    Some(LatencyWindow {
        quantile: 0.99,
        observed,
        bound: 0.25,
        low: 0.2,
    })
}

#[test]
fn a_latency_breach_backs_off_in_proportion_and_names_latency() {
    let mut g = gov(100.0);
    g.set_current(40.0);
    // 0.3125 s against 0.25 s: factor 0.8 -> 32.
    let o = g.step_with_latency(1000.0, 0.0, lat(Some(0.3125)));
    assert_eq!(o.decision, Decision::Down(32.0));
    assert_eq!(o.mode, Some(Mode::BackingOff));
    assert_eq!(o.last_bad, Some(40.0));
    let l = o.latency.unwrap();
    assert!(l.drove);
    assert_eq!(l.threshold, Some(Threshold::High(0.25)));
    // Far over the bound: clamped at 0.25.
    let mut g = gov(100.0);
    g.set_current(40.0);
    let o = g.step_with_latency(1000.0, 0.0, lat(Some(5.0)));
    assert_eq!(o.decision, Decision::Down(10.0));
    // Just over: clamped at 0.9 (and integer rounding lowers strictly).
    let mut g = gov(100.0);
    g.set_current(40.0);
    let o = g.step_with_latency(1000.0, 0.0, lat(Some(0.251)));
    assert_eq!(o.decision, Decision::Down(36.0));
}

#[test]
fn the_more_severe_breach_drives_the_back_off() {
    // frac 0.5 (factor 0.5) beats latency 0.3 s (factor 0.83).
    let mut g = gov(100.0);
    g.set_current(40.0);
    let o = g.step_with_latency(100.0, 50.0, lat(Some(0.3)));
    assert_eq!(o.decision, Decision::Down(20.0));
    assert!(!o.latency.unwrap().drove);
    // frac 0.07 (factor 0.9) loses to latency 1 s (factor 0.25).
    let mut g = gov(100.0);
    g.set_current(40.0);
    let o = g.step_with_latency(100.0, 7.0, lat(Some(1.0)));
    assert_eq!(o.decision, Decision::Down(10.0));
    assert!(o.latency.unwrap().drove);
}

#[test]
fn only_a_window_clean_on_both_signals_climbs() {
    let mut g = gov(100.0);
    g.set_current(8.0);
    let o = g.step_with_latency(100.0, 0.0, lat(Some(0.1)));
    assert_eq!(o.decision, Decision::Up(16.0));
    // In the band with no breach seen, the band approaches the bound.
    let o = g.step_with_latency(100.0, 0.0, lat(Some(0.22)));
    assert_eq!(o.decision, Decision::Up(17.0));
    assert_eq!(o.mode, Some(Mode::Probing));
    assert!(o.latency.unwrap().drove);
    let o = g.step_with_latency(100.0, 0.0, lat(None));
    assert_eq!(o.reason, Some(HoldReason::NoLatency));
    // The failures' dead band is still the failures' hold.
    let o = g.step_with_latency(100.0, 3.0, lat(Some(0.1)));
    assert_eq!(o.reason, Some(HoldReason::DeadBand));
    assert!(!o.latency.unwrap().drove);
}

/// Issue 26: the band approaches the bound one step at a time until the
/// first breach, then holds one step under the offer that breached, so
/// the figure is the highest offer within the bound, wherever slow
/// start entered the band.
#[test]
fn the_band_approaches_the_bound_then_holds_under_the_breach() {
    for robust in [false, true] {
        let p = Params::new(Control::Concurrency, Some(100.0), 1.0, None, 0.05, None).unwrap();
        let profile = if robust {
            Profile::Robust
        } else {
            Profile::Seed
        };
        let mut g = ThrottleGovernor::with_profile(p, profile);
        g.set_current(16.0);
        // A queue whose p99 crosses the bound (0.25 s) above 21.
        let p99 = |n: f64| 0.2 + (n - 16.0) * 0.01;
        let mut offers = vec![g.state().current];
        for _ in 0..30 {
            let n = g.state().current;
            g.step_with_latency(1000.0, 0.0, lat(Some(p99(n))));
            offers.push(g.state().current);
        }
        // 16 .. 21 in the band (0.20 .. 0.25 s), 22 over (0.26 s).
        assert_eq!(
            &offers[..7],
            &[16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0],
            "{profile:?}"
        );
        assert_eq!(g.state().last_bad, Some(22.0), "{profile:?}");
        // Backed off by bound / obs (0.25 / 0.26, clamped at 0.9) to 19,
        // then up the band to 21, one under the breach, and held there.
        let tail = &offers[offers.len() - 10..];
        assert!(tail.iter().all(|&o| o == 21.0), "{profile:?}: {offers:?}");
    }
}

#[test]
fn the_band_holds_where_the_next_step_reaches_last_bad() {
    let mut g = gov(100.0);
    g.set_current(40.0);
    g.step_with_latency(1000.0, 0.0, lat(Some(0.3125)));
    assert_eq!(g.state().last_bad, Some(40.0));
    g.set_current(39.0);
    let o = g.step_with_latency(1000.0, 0.0, lat(Some(0.22)));
    assert_eq!(o.decision, Decision::Hold);
    assert_eq!(o.reason, Some(HoldReason::LatencyBand));
    g.set_current(37.0);
    let o = g.step_with_latency(1000.0, 0.0, lat(Some(0.22)));
    assert_eq!(o.decision, Decision::Up(38.0));
    // Failures in their dead band never probe.
    g.set_current(37.0);
    let o = g.step_with_latency(1000.0, 30.0, lat(Some(0.22)));
    assert_eq!(o.reason, Some(HoldReason::DeadBand));
}

#[test]
fn a_failure_breach_backs_off_even_without_a_quantile() {
    let mut g = gov(100.0);
    g.set_current(40.0);
    let o = g.step_with_latency(100.0, 50.0, lat(None));
    assert_eq!(o.decision, Decision::Down(20.0));
}

#[test]
fn latency_breaches_set_the_memory_and_only_clean_windows_clear_it() {
    let mut g = gov(100.0);
    g.set_current(40.0);
    g.step_with_latency(1000.0, 0.0, lat(Some(0.3125)));
    assert_eq!(g.state().last_bad, Some(40.0));
    g.set_current(40.0);
    // Latency in its band at last_bad: no evidence, the streak resets.
    g.step_with_latency(1000.0, 0.0, lat(Some(0.22)));
    assert_eq!(g.state().clean_streak, 0);
    for _ in 0..2 {
        g.set_current(40.0);
        g.step_with_latency(1000.0, 0.0, lat(Some(0.1)));
    }
    assert_eq!(g.state().clean_streak, 2);
    g.set_current(40.0);
    let o = g.step_with_latency(1000.0, 0.0, lat(Some(0.1)));
    assert!(o.memory_cleared);
    assert_eq!(o.last_bad, None);
}

#[test]
fn at_the_floor_a_breach_holds() {
    let mut g = gov(100.0);
    let o = g.step_with_latency(100.0, 0.0, lat(Some(1.0)));
    assert_eq!(o.reason, Some(HoldReason::AtFloor));
}

#[test]
fn names_and_units() {
    assert_eq!(quantile_name(0.99), "p99");
    assert_eq!(quantile_name(0.999), "p99.9");
    assert_eq!(quantile_name(0.5), "p50");
    assert_eq!(seconds(0.3125), "312.5ms");
    assert_eq!(seconds(0.25), "250ms");
    assert_eq!(seconds(1.5), "1.5s");
}

proptest! {
    /// With no latency bound, every decision is today's, window by window.
    #[test]
    fn without_a_bound_decisions_are_unchanged(
        robust in any::<bool>(),
        windows in proptest::collection::vec((0.0f64..500.0, 0.0f64..1.0, proptest::option::of(1.0f64..200.0)), 1..80),
    ) {
        let p = Params::new(Control::Concurrency, Some(150.0), 1.0, None, 0.05, None).unwrap();
        let profile = if robust { Profile::Robust } else { Profile::Seed };
        let mut a = ThrottleGovernor::with_profile(p, profile);
        let mut b = a.clone();
        for (n, share, outside) in windows {
            let n = n.floor();
            let f = (n * share).floor();
            if let Some(v) = outside {
                a.set_current(v);
                b.set_current(v);
            }
            let oa = a.step(n, f);
            let ob = b.step_with_latency(n, f, None);
            prop_assert_eq!(oa, ob);
            prop_assert_eq!(a.state(), b.state());
        }
    }

    /// With a bound that is never approached, decisions are today's too.
    #[test]
    fn a_bound_never_approached_changes_nothing(
        windows in proptest::collection::vec((1.0f64..500.0, 0.0f64..1.0), 1..80),
    ) {
        let p = Params::new(Control::Concurrency, Some(150.0), 1.0, None, 0.05, None).unwrap();
        let mut a = ThrottleGovernor::new(p);
        let mut b = a.clone();
        for (n, share) in windows {
            let n = n.floor().max(1.0);
            let f = (n * share).floor();
            let oa = a.step(n, f);
            let mut ob = b.step_with_latency(n, f, lat(Some(0.01)));
            prop_assert!(ob.latency.take().is_some());
            prop_assert_eq!(oa, ob);
        }
    }
}
