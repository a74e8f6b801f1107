//! Each controller against the formula its source documents.

use super::*;
use crate::governor::{Control, ThrottleGovernor};

const HIGH: f64 = 0.05;

fn bounds(start: f64) -> Bounds {
    Bounds {
        floor: 1.0,
        ceiling: 1000.0,
        start,
        high: HIGH,
    }
}

/// A window of 1000 attempts with failure fraction `frac`.
fn win(frac: f64) -> WindowResult {
    WindowResult {
        attempts: 1000,
        failures: (frac * 1000.0).round() as u64,
        latency: None,
    }
}

const EMPTY: WindowResult = WindowResult {
    attempts: 0,
    failures: 0,
    latency: None,
};

#[test]
fn aimd_is_times_point_nine_on_breach_and_plus_one_otherwise() {
    let mut a = Aimd::new(bounds(100.0));
    a.observe(win(0.06));
    assert_eq!(a.offer(0.0), 90.0, "(int) (100 * 0.9)");
    a.observe(win(0.05));
    assert_eq!(a.offer(0.0), 91.0, "frac = high is no breach: +1");
    a.observe(win(0.0));
    assert_eq!(a.offer(0.0), 92.0);
    a.observe(win(0.5));
    assert_eq!(a.offer(0.0), 82.0, "(int) (92 * 0.9) = (int) 82.8");
    a.observe(EMPTY);
    assert_eq!(a.offer(0.0), 82.0, "no traffic: no change");
}

#[test]
fn aimd_truncates_like_the_java_int_cast_and_respects_bounds() {
    let mut a = Aimd::new(bounds(5.0));
    a.observe(win(1.0));
    assert_eq!(a.offer(0.0), 4.0, "(int) 4.5 = 4");
    let mut a = Aimd::new(bounds(1.0));
    a.observe(win(1.0));
    assert_eq!(a.offer(0.0), 1.0, "never below minLimit");
    let mut a = Aimd::new(bounds(1000.0));
    a.observe(win(0.0));
    assert_eq!(a.offer(0.0), 1000.0, "never above maxLimit");
}

#[test]
fn cubic_slow_starts_then_applies_beta_and_fast_convergence() {
    let mut c = Cubic::new(bounds(1.0));
    c.observe(win(0.0));
    assert_eq!(c.offer(0.0), 2.0, "slow start doubles");
    c.observe(win(0.0));
    assert_eq!(c.offer(0.0), 4.0);
    let mut c = Cubic::new(bounds(100.0));
    c.observe(win(0.2));
    assert_eq!(c.offer(0.0), 70.0, "W = beta W");
    assert_eq!(c.w_max, Some(100.0));
    let k = (100.0_f64 * 0.3 / 0.4).cbrt();
    assert!((c.k - k).abs() < 1e-12, "K = cbrt(W_max (1 - beta) / C)");
    // A second breach below W_max: fast convergence.
    c.observe(win(0.2));
    assert_eq!(c.w_max, Some(70.0 * 1.7 / 2.0));
    assert!((c.offer(0.0) - 49.0).abs() < 1e-9);
}

#[test]
fn cubic_grows_along_w_cubic_after_a_breach() {
    let mut c = Cubic::new(bounds(100.0));
    c.observe(win(0.2));
    let k = (100.0_f64 * 0.3 / 0.4).cbrt();
    let mut expected_w = 70.0_f64;
    let mut w_est = 70.0;
    for t in 1..=10 {
        c.observe(win(0.0));
        let cubic = 0.4 * (f64::from(t) - k).powi(3) + 100.0;
        w_est += 3.0 * 0.3 / 1.7;
        expected_w = cubic.clamp(expected_w, 1.5 * expected_w).max(w_est);
        assert!(
            (c.offer(0.0) - expected_w).abs() < 1e-9,
            "t = {t}: {} vs {expected_w}",
            c.offer(0.0)
        );
    }
    // Concave below W_max, then convex above it.
    assert!(expected_w > 100.0);
    // A dead-band window (0 < frac <= high) is no breach.
    let before = c.offer(0.0);
    c.observe(win(0.03));
    assert!(c.offer(0.0) > before);
}

#[test]
fn gradient_follows_envoys_formula_on_the_success_ratio() {
    let mut g = Gradient::new(bounds(100.0));
    // frac = high: gradient 1, plus the headroom sqrt(100) = 10.
    g.observe(win(HIGH));
    assert!((g.offer(0.0) - 110.0).abs() < 1e-9, "{}", g.offer(0.0));
    let mut g = Gradient::new(bounds(100.0));
    g.observe(win(0.0));
    let limit = 100.0 / 0.95;
    assert!((g.offer(0.0) - (limit + f64::sqrt(limit))).abs() < 1e-9);
    // The gradient is clamped to [0.5, 2].
    let mut g = Gradient::new(bounds(100.0));
    g.observe(win(0.9));
    assert!((g.offer(0.0) - (50.0 + f64::sqrt(50.0))).abs() < 1e-9);
    assert_eq!(g.gradient(0.0), 1.0 / 0.95);
    assert_eq!(g.gradient(1.0), 0.5);
    let mut g = Gradient::new(Bounds {
        high: 0.6,
        ..bounds(10.0)
    });
    assert_eq!(g.gradient(0.0), 2.0, "clamped at max_gradient");
    g.observe(EMPTY);
    assert_eq!(g.offer(0.0), 10.0);
}

/// Runs findmax against a rejector-like target with capacity `cap`
/// (10 attempts per worker) and returns its offers.
fn findmax_run(cap: f64, windows: usize) -> (Findmax, Vec<f64>) {
    let mut f = Findmax::new(bounds(1.0));
    let mut offers = Vec::new();
    for _ in 0..windows {
        let w = f.offer(0.0).floor();
        offers.push(w);
        let attempts = (w * 10.0) as u64;
        let failures = ((w - cap).max(0.0) * 10.0) as u64;
        f.observe(WindowResult {
            attempts,
            failures,
            latency: None,
        });
    }
    (f, offers)
}

#[test]
fn findmax_steps_grow_geometrically_then_restart_from_the_best() {
    let (f, offers) = findmax_run(100.0, 400);
    // base + step * 2^i, each held for a 2-window sample: 1, 2, 4, 8, ...
    assert_eq!(&offers[..8], &[1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 8.0, 8.0]);
    assert!(offers.contains(&128.0), "the doubling overshoots to 128");
    // 128 is rejected (22 % failed): the search restarts at base 64 + 1.
    let after = offers.iter().position(|&o| o == 128.0).unwrap();
    assert!(offers[after..].contains(&65.0));
    assert!(f.is_done(), "the search completes");
    let best = f.best().unwrap();
    // frac <= 5 % holds up to 105 workers (5/105 = 4.8 %).
    assert!((100.0..=105.0).contains(&best), "best {best}");
    assert_eq!(*offers.last().unwrap(), best, "then holds the best");
}

#[test]
fn findmax_rejects_a_rate_below_the_best_rate_cutoff() {
    let mut f = Findmax::new(bounds(1.0));
    f.best = Some((50.0, 500.0));
    f.testing = 60.0;
    f.ran = 2;
    // No failures, but only 400 successes per window (< 90 % of 500).
    f.acc_attempts = 800;
    f.acc_failures = 0;
    f.finish_iteration();
    assert_eq!(f.too_fast, Some(60.0));
    assert!(
        f.sample > FINDMAX_SAMPLE,
        "a rejection zooms the sample out"
    );
}

#[test]
fn oracle_offers_ninety_five_percent_of_the_truth() {
    let mut o = Oracle::new(bounds(1.0));
    assert_eq!(o.offer(100.0), 95.0);
    assert_eq!(o.offer(0.5), 1.0, "within the bounds");
}

#[test]
fn governor_controller_is_the_real_governor() {
    let p = Params::new(Control::Concurrency, Some(100.0), 1.0, None, HIGH, None).unwrap();
    let mut g = Governor::new(p, Profile::Seed);
    let mut reference = ThrottleGovernor::new(p);
    for frac in [0.0, 0.0, 0.0, 0.5, 0.0, 0.02, 0.0] {
        g.observe(win(frac));
        reference.step(1000.0, (frac * 1000.0).round());
        assert_eq!(g.offer(0.0), reference.state().current);
    }
    assert_eq!(g.memory_clears(), Some(0));
    assert_eq!(Oracle::new(bounds(1.0)).memory_clears(), None);
}

#[test]
fn the_latency_governor_steps_with_the_latency_bound() {
    use crate::governor::latency_bound::LatencyWindow;
    let p = Params::new(Control::Concurrency, Some(100.0), 1.0, None, HIGH, None).unwrap();
    let mut g = Governor::new(p, Profile::Seed).with_latency(LatencyBound::bench());
    let mut reference = ThrottleGovernor::new(p);
    // Clean, in the band (2.0..=2.5), over it, unknown.
    for latency in [Some(1.5), Some(1.5), Some(2.2), Some(3.0), None, Some(1.0)] {
        g.observe(WindowResult {
            latency,
            ..win(0.0)
        });
        reference.step_with_latency(
            1000.0,
            0.0,
            Some(LatencyWindow {
                quantile: 0.99,
                observed: latency,
                bound: 2.5,
                low: 2.0,
            }),
        );
        assert_eq!(g.offer(0.0), reference.state().current);
    }
    // Over the bound it backs off although nothing failed.
    let mut g = Governor::new(p, Profile::Robust).with_latency(LatencyBound::bench());
    for _ in 0..5 {
        g.observe(WindowResult {
            latency: Some(1.5),
            ..win(0.0)
        });
    }
    assert!(g.offer(0.0) > 1.0, "a clean p99 climbs");
    // With the bound on, a window without a quantile never climbs.
    let before = g.offer(0.0);
    g.observe(win(0.0));
    assert_eq!(g.offer(0.0), before);
    let before = g.offer(0.0);
    g.observe(WindowResult {
        latency: Some(5.0),
        ..win(0.0)
    });
    assert!(g.offer(0.0) < before, "{} -> {}", before, g.offer(0.0));
    assert!(ControllerKind::GovernorLatency.needs_latency());
    assert!(!ControllerKind::Governor.needs_latency());
    assert_eq!(
        ControllerKind::GovernorRobustLatency.profile(),
        Some(Profile::Robust)
    );
    assert_eq!(ControllerKind::Aimd.profile(), None);
}

#[test]
fn names_round_trip() {
    use clap::ValueEnum;
    for kind in ControllerKind::ALL {
        assert_eq!(ControllerKind::from_str(kind.name(), false), Ok(kind));
        assert_eq!(kind.to_string(), kind.name());
    }
}
