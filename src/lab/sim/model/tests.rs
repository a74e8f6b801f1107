//! Each model against its definition in the module docs.

use clap::ValueEnum;
use proptest::prelude::*;

use super::curves::{knee, queueing};
use super::*;

const C: f64 = 100.0;

fn model(kind: ModelKind) -> TargetModel {
    TargetModel::new(ModelConfig::new(kind, C)).expect("valid config")
}

/// Mean attempt-failure fraction over `ticks` ticks at a constant offer.
fn frac_over(m: &mut TargetModel, offer: f64, ticks: u32) -> f64 {
    let (mut n, mut f) = (0u64, 0u64);
    for _ in 0..ticks {
        let r = m.tick(offer);
        n += r.attempts;
        f += r.failures;
    }
    f as f64 / n as f64
}

#[test]
fn names_are_kebab_case_in_clap_and_serde() {
    for kind in ModelKind::ALL {
        let value = kind.to_possible_value().expect("no skipped variants");
        assert_eq!(value.get_name(), kind.name());
        let json = serde_json::to_string(&kind).unwrap();
        assert_eq!(json, format!("\"{}\"", kind.name()));
        let back: ModelKind = serde_json::from_str(&json).unwrap();
        assert_eq!(back, kind);
        assert_eq!(ModelKind::from_str(kind.name(), false), Ok(kind));
    }
}

#[test]
fn rejector_rejects_exactly_the_excess() {
    let mut m = model(ModelKind::Rejector);
    let r = m.tick(0.5 * C);
    assert_eq!((r.attempts, r.failures, r.capacity), (500, 0, C));
    let r = m.tick(C);
    assert_eq!((r.attempts, r.failures), (1_000, 0));
    let r = m.tick(2.0 * C);
    assert_eq!((r.attempts, r.failures), (2_000, 1_000));
    let r = m.tick(4.0 * C);
    assert_eq!((r.attempts, r.failures), (4_000, 3_000));
    // Successes never exceed capacity.
    assert_eq!(r.successes(), 1_000);
}

#[test]
fn cliff_collapses_past_capacity() {
    let mut m = model(ModelKind::Cliff);
    assert_eq!(m.tick(0.9 * C).failures, 0);
    assert_eq!(m.tick(C).failures, 0);
    // x = 1.1: goodput 0.6 C, so 1 - 0.6/1.1 of attempts fail.
    let r = m.tick(1.1 * C);
    assert!((r.frac() - (1.0 - 0.6 / 1.1)).abs() < 1e-3, "{r:?}");
    assert_eq!(r.successes(), 600);
    // Goodput is zero from x = 1.25.
    for x in [1.25, 1.5, 2.0, 10.0] {
        let r = m.tick(x * C);
        assert_eq!(r.failures, r.attempts, "x = {x}");
    }
}

#[test]
fn knee_is_small_below_and_steep_around_capacity() {
    let mut m = model(ModelKind::Knee);
    assert_eq!(frac_over(&mut m, 0.5 * C, 10), 0.0);
    let at_08 = frac_over(&mut m, 0.8 * C, 100);
    assert!(at_08 > 0.0 && at_08 < 0.01, "{at_08}");
    let at_10 = frac_over(&mut m, C, 10);
    assert!((at_10 - 0.5).abs() < 1e-3, "{at_10}");
    let at_12 = frac_over(&mut m, 1.2 * C, 10);
    assert!(at_12 > 0.99, "{at_12}");
    let mut last = 0.0;
    for i in 1..=30 {
        let p = knee(i as f64 * 0.05 * C, C);
        assert!(p >= last);
        last = p;
    }
}

#[test]
fn step_halves_at_one_third_and_recovers_at_two_thirds() {
    let mut cfg = ModelConfig::new(ModelKind::Step, C);
    cfg.run_ticks = 30;
    let mut m = TargetModel::new(cfg).unwrap();
    let caps: Vec<f64> = (0..40).map(|_| m.tick(C).capacity).collect();
    assert!(caps[..10].iter().all(|&c| c == C));
    assert!(caps[10..20].iter().all(|&c| c == C / 2.0));
    assert!(caps[20..].iter().all(|&c| c == C));
    // Rejector shape against the halved capacity.
    let mut cfg = ModelConfig::new(ModelKind::Step, C);
    cfg.run_ticks = 3;
    let mut m = TargetModel::new(cfg).unwrap();
    assert_eq!(m.tick(C).failures, 0);
    let r = m.tick(C);
    assert_eq!((r.capacity, r.frac()), (C / 2.0, 0.5));
    assert_eq!(m.tick(C).failures, 0);
}

#[test]
fn warming_rises_threefold_then_stays() {
    let mut cfg = ModelConfig::new(ModelKind::Warming, C);
    cfg.run_ticks = 100;
    let mut m = TargetModel::new(cfg).unwrap();
    let caps: Vec<f64> = (0..150).map(|_| m.tick(C).capacity).collect();
    assert_eq!(caps[0], C);
    assert!((caps[50] - 2.0 * C).abs() < 1e-9);
    assert!(caps.windows(2).all(|w| w[1] >= w[0]));
    assert!(caps[100..].iter().all(|&c| (c - 3.0 * C).abs() < 1e-9));
    // An offer of 2 C fails at first and is clean once capacity has grown.
    let mut cfg = ModelConfig::new(ModelKind::Warming, C);
    cfg.run_ticks = 100;
    let mut m = TargetModel::new(cfg).unwrap();
    assert_eq!(m.tick(2.0 * C).frac(), 0.5);
    for _ in 0..60 {
        m.tick(0.0);
    }
    assert_eq!(m.tick(2.0 * C).failures, 0);
}

#[test]
fn noisy_has_tiny_samples_and_background_failures() {
    let mut m = model(ModelKind::Noisy);
    // About 30 attempts per 20-tick window at capacity.
    let window: u64 = (0..20).map(|_| m.tick(C).attempts).sum();
    assert!((29..=31).contains(&window), "{window}");
    // About 2 % background failures below capacity.
    let bg = frac_over(&mut m, C, 40_000);
    assert!((bg - 0.02).abs() < 0.004, "{bg}");
    // Rejector behaviour above capacity: 1 - 0.5 * 0.98 = 51 %.
    let over = frac_over(&mut m, 2.0 * C, 20_000);
    assert!((over - 0.51).abs() < 0.01, "{over}");
}

#[test]
fn noisy_windows_vary() {
    let mut m = model(ModelKind::Noisy);
    let windows: Vec<u64> = (0..50)
        .map(|_| (0..20).map(|_| m.tick(C).failures).sum())
        .collect();
    assert!(windows.contains(&0));
    assert!(windows.iter().any(|&f| f > 0));
}

#[test]
fn lagged_failures_resolve_one_tick_late() {
    let mut m = model(ModelKind::Lagged);
    // Overload: only the successes resolve now.
    let r = m.tick(2.0 * C);
    assert_eq!((r.attempts, r.failures), (1_000, 0));
    // The next tick resolves its own successes plus the deferred failures.
    let r = m.tick(0.5 * C);
    assert_eq!((r.attempts, r.failures), (500 + 1_000, 1_000));
    let r = m.tick(0.5 * C);
    assert_eq!((r.attempts, r.failures), (500, 0));
    // A deferred failure still resolves when the offer drops to zero.
    m.tick(2.0 * C);
    let r = m.tick(0.0);
    assert_eq!((r.attempts, r.failures), (1_000, 1_000));
}

#[test]
fn metastable_degrades_after_heavy_overload() {
    let mut m = model(ModelKind::Metastable);
    assert_eq!(m.tick(C).failures, 0);
    assert_eq!(m.capacity(), C);
    // Mild overload (not heavy): no degradation.
    let r = m.tick(1.2 * C);
    assert_eq!(r.failures, 200);
    assert_eq!(m.capacity(), C);
    // Drain the retries of that tick.
    m.tick(0.0);
    m.tick(0.0);
    // Heavy overload: capacity halves for the next ten ticks.
    let r = m.tick(2.0 * C);
    assert_eq!((r.attempts, r.failures), (2_000, 1_000));
    assert_eq!(m.capacity(), C / 2.0);
    // A deep back-off drains the retries and the target recovers.
    let caps: Vec<f64> = (0..12).map(|_| m.tick(0.3 * C).capacity).collect();
    assert!(caps[..10].iter().all(|&c| c == C / 2.0), "{caps:?}");
    assert_eq!(caps[10], C);
    assert_eq!(m.tick(0.3 * C).failures, 0);
}

#[test]
fn metastable_retries_sustain_failure_below_capacity() {
    let mut m = model(ModelKind::Metastable);
    m.tick(2.0 * C);
    // Back at 0.8 C, below nominal capacity: retries keep the load heavy.
    for _ in 0..50 {
        let r = m.tick(0.8 * C);
        assert!(r.frac() > 0.5, "{r:?}");
        assert!(r.attempts > 800);
        assert_eq!(r.capacity, C / 2.0);
    }
}

#[test]
fn rejector_at_fractional_offers_is_exact_over_time() {
    let mut m = model(ModelKind::Rejector);
    let total: u64 = (0..100).map(|_| m.tick(0.25).attempts).sum();
    assert_eq!(total, 250);
    // Error diffusion of failures: 1.5 C gives a third of failures.
    let mut m = model(ModelKind::Rejector);
    let (mut n, mut f) = (0, 0);
    for _ in 0..99 {
        let r = m.tick(1.5 * C);
        n += r.attempts;
        f += r.failures;
    }
    assert_eq!(n, 99 * 1_500);
    assert_eq!(f, 99 * 500);
}

#[test]
fn noise_adds_binomial_background() {
    let mut cfg = ModelConfig::new(ModelKind::Rejector, C);
    cfg.noise = 0.05;
    let mut m = TargetModel::new(cfg).unwrap();
    let frac = frac_over(&mut m, 0.5 * C, 200);
    assert!((frac - 0.05).abs() < 0.005, "{frac}");
    let per_tick: Vec<u64> = (0..10).map(|_| m.tick(0.5 * C).failures).collect();
    assert!(per_tick.windows(2).any(|w| w[0] != w[1]), "{per_tick:?}");
}

#[test]
fn same_seed_same_sequence() {
    for kind in ModelKind::ALL {
        let mut cfg = ModelConfig::new(kind, C);
        cfg.noise = 0.03;
        cfg.seed = 99;
        let run = |cfg: &ModelConfig| {
            let mut m = TargetModel::new(cfg.clone()).unwrap();
            (0..200)
                .map(|i| m.tick((i % 7) as f64 * 0.4 * C))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(&cfg), run(&cfg), "{kind}");
        let mut other = cfg.clone();
        other.seed = 100;
        assert_ne!(run(&cfg), run(&other), "{kind}");
    }
}

#[test]
fn without_noise_the_seed_does_not_matter() {
    let mut a = ModelConfig::new(ModelKind::Knee, C);
    let mut b = a.clone();
    a.seed = 1;
    b.seed = 2;
    let mut ma = TargetModel::new(a).unwrap();
    let mut mb = TargetModel::new(b).unwrap();
    for i in 0..100 {
        let offer = i as f64 * 0.02 * C;
        assert_eq!(ma.tick(offer), mb.tick(offer));
    }
}

#[test]
fn bad_offers_do_not_panic() {
    for kind in ModelKind::ALL {
        let mut m = model(kind);
        for offer in [f64::NAN, -1.0, f64::NEG_INFINITY, 0.0] {
            let r = m.tick(offer);
            assert!(r.failures <= r.attempts);
        }
        let r = m.tick(f64::INFINITY);
        assert!(r.attempts > 0 && r.failures <= r.attempts, "{kind}: {r:?}");
    }
}

#[test]
fn invalid_configs_are_rejected_with_every_error() {
    let mut cfg = ModelConfig::new(ModelKind::Rejector, 0.0);
    cfg.attempts_per_worker = f64::NAN;
    cfg.noise = 1.0;
    cfg.run_ticks = 0;
    let errors = TargetModel::new(cfg).unwrap_err();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert_eq!(errors[0], ModelError::Capacity(0.0));
    assert!(matches!(errors[1], ModelError::AttemptsPerWorker(v) if v.is_nan()));
    assert_eq!(errors[2], ModelError::Noise(1.0));
    assert_eq!(errors[3], ModelError::RunTicks);
    assert!(TargetModel::new(ModelConfig::new(ModelKind::Cliff, f64::INFINITY)).is_err());
    assert!(errors[0].to_string().contains("capacity"));
}

#[test]
fn lagged_failures_can_resolve_two_ticks_late() {
    let mut cfg = ModelConfig::new(ModelKind::Lagged, C);
    cfg.lag_ticks = 2;
    let mut m = TargetModel::new(cfg).unwrap();
    let r = m.tick(2.0 * C);
    assert_eq!((r.attempts, r.failures), (1_000, 0));
    let r = m.tick(0.5 * C);
    assert_eq!((r.attempts, r.failures), (500, 0), "not yet");
    let r = m.tick(0.5 * C);
    assert_eq!(
        (r.attempts, r.failures),
        (500 + 1_000, 1_000),
        "two ticks late"
    );
    let mut bad = ModelConfig::new(ModelKind::Lagged, C);
    bad.lag_ticks = 0;
    assert_eq!(
        TargetModel::new(bad).unwrap_err(),
        vec![ModelError::LagTicks]
    );
}

#[test]
fn retry_churn_retries_every_failure_once_as_load() {
    let mut m = model(ModelKind::RetryChurn);
    assert_eq!(m.tick(C).failures, 0);
    // 2 C fresh: 2000 attempts, the 1000 above capacity fail.
    let r = m.tick(2.0 * C);
    assert_eq!((r.attempts, r.failures), (2_000, 1_000));
    // Back at 0.8 C: 800 fresh + 800 retries (one per fresh at most) meet
    // capacity 1000, so 600 fail although the fresh load is below capacity.
    let r = m.tick(0.8 * C);
    assert_eq!((r.attempts, r.failures), (1_600, 600));
    // The 600 retried: 1400 attempts, 400 fail; then 1200/200; 1000/0.
    let r = m.tick(0.8 * C);
    assert_eq!((r.attempts, r.failures), (1_400, 400));
    let r = m.tick(0.8 * C);
    assert_eq!((r.attempts, r.failures), (1_200, 200));
    let r = m.tick(0.8 * C);
    assert_eq!((r.attempts, r.failures), (1_000, 0));
    assert_eq!(m.tick(0.8 * C).attempts, 800);
}

#[test]
fn drift_follows_one_sinusoid_per_run() {
    let mut cfg = ModelConfig::new(ModelKind::Drift, C);
    cfg.run_ticks = 400;
    let mut m = TargetModel::new(cfg).unwrap();
    let mut caps = Vec::new();
    for _ in 0..400 {
        caps.push(m.tick(C).capacity);
    }
    assert!((caps[0] - C).abs() < 1e-9);
    assert!(
        (caps[100] - 1.3 * C).abs() < 1e-9,
        "a quarter period: {}",
        caps[100]
    );
    assert!((caps[200] - C).abs() < 1e-6);
    assert!(
        (caps[300] - 0.7 * C).abs() < 1e-9,
        "three quarters: {}",
        caps[300]
    );
    // Slow: never more than 2 pi 0.3 / 400 of C per tick.
    let max_step = caps
        .windows(2)
        .map(|w| (w[1] - w[0]).abs())
        .fold(0.0, f64::max);
    assert!(
        max_step <= 2.0 * std::f64::consts::PI * 0.3 / 400.0 * C + 1e-9,
        "{max_step}"
    );
    // Failures are the rejector's at the drifted capacity.
    let mut m = TargetModel::new(ModelConfig {
        run_ticks: 4,
        ..ModelConfig::new(ModelKind::Drift, C)
    })
    .unwrap();
    m.tick(C);
    let r = m.tick(1.3 * C * 2.0);
    assert_eq!((r.capacity, r.failures), (1.3 * C, 1_300));
}

#[test]
fn bursts_fail_whatever_the_load() {
    let mut m = model(ModelKind::Bursts);
    let ticks = 20_000;
    let (mut burst_ticks, mut runs, mut in_burst) = (0u32, Vec::new(), 0u32);
    for _ in 0..ticks {
        // Far below capacity: every failure is load-independent.
        let r = m.tick(0.5 * C);
        if r.failures > 0 {
            burst_ticks += 1;
            in_burst += 1;
            let frac = r.frac();
            assert!(
                (0.25..0.65).contains(&frac),
                "a burst fails 30-60 %: {frac}"
            );
        } else if in_burst > 0 {
            runs.push(in_burst);
            in_burst = 0;
        }
    }
    let share = f64::from(burst_ticks) / f64::from(ticks);
    assert!(
        (0.045..0.075).contains(&share),
        "about 6 % of ticks: {share}"
    );
    // Runs are 1 to 3 ticks (two bursts can touch, so allow up to 6).
    assert!(runs.iter().all(|&r| (1..=6).contains(&r)), "{runs:?}");
    let mean = runs.iter().sum::<u32>() as f64 / runs.len() as f64;
    assert!((1.7..2.4).contains(&mean), "mean burst {mean}");
    // The same seed gives the same bursts whatever the offers.
    let (mut a, mut b) = (model(ModelKind::Bursts), model(ModelKind::Bursts));
    for i in 0..500 {
        let (ra, rb) = (
            a.tick(0.5 * C),
            b.tick(if i % 2 == 0 { 0.2 * C } else { 0.9 * C }),
        );
        assert_eq!(ra.failures > 0, rb.failures > 0, "tick {i}");
    }
}

#[test]
fn fast_fail_overstates_the_overload() {
    let mut m = model(ModelKind::FastFail);
    assert_eq!(m.tick(C).failures, 0);
    // r = 1.01: p = 0.2 / 1.2; each worker makes 10 / (1 - p + p / 20).
    let p: f64 = 0.2 / 1.2;
    let n = 1.01 * C * 10.0 / (1.0 - p + p / 20.0);
    let r = m.tick(1.01 * C);
    assert!((r.attempts as f64 - n).abs() <= 1.0, "{r:?} vs {n}");
    assert!(
        (r.frac() - p).abs() < 2e-3,
        "1 % over fails 16.7 %: {}",
        r.frac()
    );
    // Served attempts stay at capacity at any overload.
    let f = frac_over(&mut m, 2.0 * C, 100);
    let p2 = 20.0 / 21.0;
    assert!((f - p2).abs() < 1e-3, "{f}");
    let r = m.tick(2.0 * C);
    assert!((r.successes() as f64 - 1_000.0).abs() <= 1.0, "{r:?}");
}

#[test]
fn poisson_attempts_vary_around_the_mean() {
    let mut cfg = ModelConfig::new(ModelKind::Rejector, C);
    cfg.poisson = true;
    let mut m = TargetModel::new(cfg.clone()).unwrap();
    let xs: Vec<f64> = (0..2_000).map(|_| m.tick(C).attempts as f64).collect();
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
    assert!((mean - 1_000.0).abs() < 5.0, "{mean}");
    assert!(
        (var / 1_000.0 - 1.0).abs() < 0.15,
        "Poisson: variance = mean, got {var}"
    );
    // Failures are binomial around the rejector's half at 2 C.
    let f = frac_over(&mut m, 2.0 * C, 200);
    assert!((f - 0.5).abs() < 0.01, "{f}");
    // The same seed, the same windows.
    let (mut a, mut b) = (
        TargetModel::new(cfg.clone()).unwrap(),
        TargetModel::new(cfg).unwrap(),
    );
    for _ in 0..100 {
        assert_eq!(a.tick(1.3 * C), b.tick(1.3 * C));
    }
}

proptest! {
    #[test]
    fn failures_never_exceed_attempts(
        kind_index in 0usize..ModelKind::ALL.len(),
        noise in 0.0f64..0.5,
        seed in any::<u64>(),
        offers in proptest::collection::vec(0.0f64..500.0, 1..60),
    ) {
        let mut cfg = ModelConfig::new(ModelKind::ALL[kind_index], C);
        cfg.noise = noise;
        cfg.seed = seed;
        cfg.run_ticks = 30;
        let mut m = TargetModel::new(cfg).unwrap();
        for offer in offers {
            let r = m.tick(offer);
            prop_assert!(r.failures <= r.attempts);
            prop_assert!(r.capacity > 0.0 && r.capacity.is_finite());
        }
    }
}

#[test]
fn queueing_serves_capacity_and_queues_the_rest() {
    let mut m = model(ModelKind::Queueing);
    let base = 0.1; // 1 / a ticks
                    // Light load: every worker makes a attempts, the service time is base.
    let r = m.tick(0.5 * C);
    assert_eq!((r.attempts, r.failures, r.capacity), (500, 0, C));
    let l = r.latency.expect("queueing has a latency");
    assert_eq!((l.base, l.mean, l.timeout), (base, base, 4.0 * base));
    // p99 = 1.49 mean, p50 = mean, p0 = 0.5 mean.
    assert!((l.quantile(0.99) - 1.49 * base).abs() < 1e-12);
    assert!((l.quantile(0.5) - base).abs() < 1e-12);
    assert!((l.quantile(0.0) - 0.5 * base).abs() < 1e-12);
    // Twice capacity: the same C a attempts, twice the latency, no failure.
    let r = m.tick(2.0 * C);
    assert_eq!((r.attempts, r.failures), (1_000, 0));
    let l = r.latency.unwrap();
    assert!((l.mean - 2.0 * base).abs() < 1e-12);
    assert!((l.quantile(0.99) - 2.98 * base).abs() < 1e-12);
    // Up to x = 8/3 nothing times out: 1.5 L = 4 base.
    let r = m.tick(8.0 / 3.0 * C);
    assert_eq!((r.attempts, r.failures), (1_000, 0));
    // x = 4: p = 1.5 - 4/4 = 50 %; the quantile is capped at the timeout.
    let r = m.tick(4.0 * C);
    assert_eq!((r.attempts, r.failures), (1_000, 500));
    let l = r.latency.unwrap();
    assert_eq!(l.quantile(0.99), 4.0 * base);
    assert!((l.quantile(0.25) - 4.0 * 0.75 * base).abs() < 1e-12);
    // x = 8 and beyond: everything times out.
    let r = m.tick(8.0 * C);
    assert_eq!(r.failures, r.attempts);
}

#[test]
fn queueing_failure_probability_is_the_timeout_share() {
    for (x, p) in [(1.0, 0.0), (2.5, 0.0), (3.0, 1.5 - 4.0 / 3.0), (5.0, 0.7)] {
        assert!((queueing(x * C, C) - p).abs() < 1e-12, "x = {x}");
    }
    assert_eq!(queueing(0.0, C), 0.0);
    // 5 % at x = 4 / 1.45.
    let w5 = queueing_failure_capacity(C, 0.05);
    assert!((w5 / C - 4.0 / 1.45).abs() < 1e-12);
    assert!((queueing(w5, C) - 0.05).abs() < 1e-12);
    let mut m = model(ModelKind::Queueing);
    let f = frac_over(&mut m, w5, 100);
    assert!((f - 0.05).abs() < 1e-3, "{f}");
}

#[test]
fn queueing_latency_capacity_is_where_the_quantile_meets_the_bound() {
    let base = 0.1;
    // p99 <= 2.5 base: w = 2.5 / 1.49 C.
    let w = latency_capacity(C, base, 0.99, 2.5 * base).unwrap();
    assert!((w / C - 2.5 / 1.49).abs() < 1e-12, "{w}");
    let mut m = model(ModelKind::Queueing);
    let at = m.tick(w).latency.unwrap().quantile(0.99);
    assert!((at - 2.5 * base).abs() < 1e-12, "{at}");
    assert!(m.tick(w + 1.0).latency.unwrap().quantile(0.99) > 2.5 * base);
    assert!(m.tick(w - 1.0).latency.unwrap().quantile(0.99) < 2.5 * base);
    // Far below the failure bound's offer.
    assert!(queueing_failure_capacity(C, 0.05) > 1.6 * w);
    // No offer meets a bound under the idle p99, every offer one at the timeout.
    assert_eq!(latency_capacity(C, base, 0.99, 1.4 * base), None);
    assert_eq!(latency_capacity(C, base, 0.99, 4.0 * base), None);
}

#[test]
fn queueing_cdf_matches_its_quantiles() {
    let l = TickLatency {
        base: 0.1,
        mean: 0.3,
        timeout: 0.4,
    };
    for q in [0.0, 0.1, 0.25, 0.5, 1.0 / 6.0] {
        let t = l.quantile(q);
        assert!((l.share_within(t) - q).abs() < 1e-12, "q = {q}");
    }
    // A sixth of the attempts (1.5 - 0.4 / 0.3) are slower than the
    // timeout: observed there.
    assert!((l.share_within(0.4 - 1e-9) - 5.0 / 6.0).abs() < 1e-6);
    assert_eq!(l.share_within(0.4), 1.0);
    assert_eq!(l.share_within(0.1), 0.0);
    assert_eq!(l.quantile(0.9), 0.4);
    // The observed mean: 5/6 uniform on [0.15, 0.4], 1/6 at 0.4.
    let expected = 5.0 / 6.0 * 0.275 + 1.0 / 6.0 * 0.4;
    assert!((l.observed_mean() - expected).abs() < 1e-12);
    let fast = TickLatency { mean: 0.1, ..l };
    assert_eq!(fast.observed_mean(), 0.1);
}

#[test]
fn only_queueing_reports_a_latency() {
    for kind in ModelKind::ALL {
        let mut m = model(kind);
        let r = m.tick(C);
        assert_eq!(r.latency.is_some(), kind.has_latency(), "{kind}");
        assert_eq!(kind.has_latency(), kind == ModelKind::Queueing);
    }
}

#[test]
fn queueing_with_poisson_attempts_keeps_the_closed_loop_mean() {
    let mut cfg = ModelConfig::new(ModelKind::Queueing, C);
    cfg.poisson = true;
    let mut m = TargetModel::new(cfg).unwrap();
    let n: u64 = (0..1_000).map(|_| m.tick(2.0 * C).attempts).sum();
    assert!((n as f64 / 1_000.0 - 1_000.0).abs() < 5.0, "{n}");
}
