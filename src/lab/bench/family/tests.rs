//! Tests of the model families: each model of the `noise` family does what
//! its name says (attempts per window, background failures, bursts, lag),
//! measured over seeds, and the family runs with every controller.

use super::*;
use crate::lab::bench::{lag_of, model_config, run, BenchArgs, BenchPlan};
use crate::lab::sim::model::{TargetModel, TickResult};

const SEEDS: u64 = 30;

/// `ticks` windows of `model` at `share` of each seed's capacity, for
/// every seed.
fn windows_at(model: BenchModel, share: f64, ticks: usize) -> Vec<TickResult> {
    let mut out = Vec::new();
    for seed in 1..=SEEDS {
        let cfg = model_config(model, seed, 150);
        let offer = (cfg.capacity * share).floor();
        let mut m = TargetModel::new(cfg).unwrap();
        out.extend((0..ticks).map(|_| m.tick(offer)));
    }
    out
}

fn family_model(kind: ModelKind, n: f64, bg: f64) -> BenchModel {
    let m = BenchModel::with(kind, n, bg);
    assert!(Family::Noise.models().contains(&m), "{m} is in the family");
    m
}

#[test]
fn names_keep_the_defaults_and_say_the_parameters() {
    assert_eq!(BenchModel::from(ModelKind::Cliff).to_string(), "cliff");
    assert_eq!(
        BenchModel::with(ModelKind::Rejector, 40.0, 0.02).to_string(),
        "rejector n=40 bg=2%"
    );
    assert_eq!(
        BenchModel::with(ModelKind::Bursts, 10_000.0, 0.0).to_string(),
        "bursts n=10000"
    );
    assert_eq!(
        BenchModel::with(ModelKind::Rejector, 150.0, 0.03)
            .at_capacity(10.0)
            .to_string(),
        "rejector C=10 n=150 bg=3%"
    );
    let models = Family::Noise.models();
    assert_eq!(
        models.len(),
        NOISE_ATTEMPTS.len() * NOISE_BACKGROUNDS.len()
            + 2 * NOISE_EVENT_ATTEMPTS.len()
            + NOISE_SMALL_WALL.2.len()
            + NOISE_MOVING.0.len() * NOISE_MOVING.1.len()
    );
    assert_eq!(models.len(), 32);
    assert!(models.contains(&BenchModel::with(ModelKind::Warming, 1_000.0, 0.01)));
    let mut names: Vec<String> = models.iter().map(|m| m.to_string()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), models.len(), "every name is distinct");
}

#[test]
fn each_model_makes_its_attempts_per_window_at_capacity() {
    for &n in &NOISE_ATTEMPTS {
        let w = windows_at(family_model(ModelKind::Rejector, n, 0.0), 1.0, 20);
        let mean = w.iter().map(|r| r.attempts as f64).sum::<f64>() / w.len() as f64;
        assert!((mean / n - 1.0).abs() < 0.05, "n={n}: mean {mean}");
        // At capacity the rejector rejects nothing.
        assert!(w.iter().all(|r| r.failures == 0), "n={n}");
    }
    // Proportional to the offer: half the capacity, half the attempts.
    let w = windows_at(family_model(ModelKind::Rejector, 1_000.0, 0.0), 0.5, 20);
    let mean = w.iter().map(|r| r.attempts as f64).sum::<f64>() / w.len() as f64;
    assert!((mean / 500.0 - 1.0).abs() < 0.03, "mean {mean}");
}

#[test]
fn each_model_fails_its_background_share_at_a_low_offer() {
    for &bg in &NOISE_BACKGROUNDS {
        let w = windows_at(family_model(ModelKind::Rejector, 1_000.0, bg), 0.5, 20);
        let attempts: u64 = w.iter().map(|r| r.attempts).sum();
        let failures: u64 = w.iter().map(|r| r.failures).sum();
        let frac = failures as f64 / attempts as f64;
        assert!((frac - bg).abs() < 0.002, "bg={bg}: {frac}");
    }
}

/// The floor the family's report compares the goal with: at exactly the
/// capacity, the background alone fails `b x n` attempts a window.
#[test]
fn at_the_capacity_the_background_alone_fails_b_times_n_a_window() {
    for (n, bg) in [(200.0, 0.02), (10_000.0, 0.03)] {
        let m = family_model(ModelKind::Rejector, n, bg);
        let w = windows_at(m, 1.0, 20);
        let per_window = w.iter().map(|r| r.failures).sum::<u64>() as f64 / w.len() as f64;
        let floor = crate::lab::bench::goals::background_at_capacity(m, 1).unwrap();
        assert!(
            (per_window / floor - 1.0).abs() < 0.1,
            "{m}: {per_window} against {floor}"
        );
    }
    let none = BenchModel::with(ModelKind::Rejector, 200.0, 0.0);
    assert_eq!(
        crate::lab::bench::goals::background_at_capacity(none, 600),
        None
    );
    // A capacity that moves takes its attempts with it: no fixed floor.
    let (kinds, _) = NOISE_MOVING;
    for k in kinds {
        let moving = BenchModel::with(k, 200.0, 0.02);
        assert_eq!(
            crate::lab::bench::goals::background_at_capacity(moving, 600),
            None
        );
    }
}

#[test]
fn small_samples_with_a_background_are_rarely_clean() {
    // 40 attempts at 2 %: a window at capacity has no failure with
    // probability exp(-40 * 0.02) = 0.449 (Poisson attempts), and one
    // failure is already 2.5 %, above `low`.
    let w = windows_at(family_model(ModelKind::Rejector, 40.0, 0.02), 1.0, 20);
    let clean = w.iter().filter(|r| r.failures == 0).count() as f64 / w.len() as f64;
    assert!(
        (clean - (-0.8f64).exp()).abs() < 0.06,
        "clean share {clean}"
    );
}

#[test]
fn bursts_fail_about_six_percent_of_windows_whatever_the_offer() {
    for &n in &NOISE_EVENT_ATTEMPTS {
        let w = windows_at(family_model(ModelKind::Bursts, n, 0.0), 0.5, 100);
        // Below capacity only a burst fails an attempt (30 % to 60 % of
        // them, so a burst window without a failure is rare).
        let failing = w.iter().filter(|r| r.failures > 0);
        let burst = failing.clone().count() as f64 / w.len() as f64;
        assert!((0.03..0.09).contains(&burst), "n={n}: {burst}");
        assert!(failing.clone().all(|r| r.frac() > 0.1), "n={n}");
    }
}

#[test]
fn lagged_failures_resolve_one_or_two_windows_late() {
    for &n in &NOISE_EVENT_ATTEMPTS {
        for seed in [1, 2] {
            let cfg = model_config(family_model(ModelKind::Lagged, n, 0.0), seed, 150);
            let c = cfg.capacity;
            let mut m = TargetModel::new(cfg).unwrap();
            // One window at twice the capacity, then half of it.
            let failures: Vec<u64> = [2.0, 0.5, 0.5, 0.5]
                .iter()
                .map(|x| m.tick(x * c).failures)
                .collect();
            let lag = lag_of(seed) as usize;
            for (i, f) in failures.iter().enumerate() {
                assert_eq!(*f > 0, i == lag, "n={n} seed {seed}: {failures:?}");
            }
        }
    }
}

fn family_plan(seeds: u64, windows: usize) -> BenchPlan {
    BenchArgs {
        family: Some(Family::Noise),
        seeds,
        windows,
        ..BenchArgs::default()
    }
    .plan()
    .unwrap()
}

#[test]
fn the_noise_family_runs_every_controller_on_every_model() {
    let plan = family_plan(1, 60);
    assert_eq!(plan.models, Family::Noise.models());
    let report = run(&plan);
    let controllers: Vec<ControllerKind> = ControllerKind::ALL
        .into_iter()
        .filter(|c| !c.needs_latency())
        .collect();
    assert_eq!(report.rows.len(), plan.models.len() * controllers.len());
    for &m in &plan.models {
        let mut seen: Vec<ControllerKind> = report
            .rows
            .iter()
            .filter(|r| r.model == m)
            .map(|r| r.controller)
            .collect();
        seen.sort();
        assert_eq!(seen, controllers, "{m}");
    }
    let text = crate::lab::bench::render_table(&report);
    for m in &plan.models {
        let cell = format!("| {m} ");
        assert!(text.contains(&cell), "{m} missing:\n{text}");
    }
    assert!(
        text.contains("Wins (ties count for each) over 32 models"),
        "{text}"
    );
    assert!(text.contains("The gentle profile's goals"), "{text}");
    assert!(
        text.contains(
            "Stalled seeds (the median offer of the last 40 windows at most half the capacity), of 1: "
        ),
        "{text}"
    );
    // One winner set per model; a winner reaches the goodput goal.
    let wins = winners(&report);
    assert_eq!(wins.len(), plan.models.len());
    for (m, w) in &wins {
        for c in w {
            let row = report
                .rows
                .iter()
                .find(|r| r.model == *m && r.controller == *c);
            let goodput = row.unwrap().goodput().median.unwrap();
            assert!(goodput >= GOAL_GOODPUT, "{m} {c}: {goodput}");
        }
    }
    let json = crate::lab::bench::render_json(&report);
    assert!(json.contains("\"model\":\"rejector n=40 bg=2%\""), "{json}");
}

/// Issue 30: with 200 or more attempts a window and a background of 2 or
/// 3 % (above `low`), every window used to sit in the dead band, and the
/// default profile stalled at 0.01 to 0.46 of the oracle's goodput. With
/// the background estimate it climbs to the capacity: at least 0.90 of the
/// oracle's goodput at 600 windows (measured 0.93 to 1.04 on 30 and 100
/// seeds), where the seed rules, which know no background, stay below it
/// on most of these models.
#[test]
fn the_default_profile_does_not_stall_on_a_background_above_low() {
    let models: Vec<BenchModel> = [200.0, 1_000.0, 10_000.0]
        .into_iter()
        .flat_map(|n| [0.02, 0.03].map(|bg| family_model(ModelKind::Rejector, n, bg)))
        .collect();
    let plan = BenchPlan {
        models: models.clone(),
        family: None,
        controllers: vec![
            ControllerKind::GovernorGentle,
            ControllerKind::Governor,
            ControllerKind::Oracle,
        ],
        seeds: 30,
        windows: 600,
        figures: false,
    };
    let report = run(&plan);
    let goodput = |m: BenchModel, c: ControllerKind| {
        let row = report
            .rows
            .iter()
            .find(|r| r.model == m && r.controller == c)
            .expect("a row per model and controller");
        row.goodput().median.expect("a median")
    };
    let mut seed_below = 0;
    for &m in &models {
        let gentle = goodput(m, ControllerKind::GovernorGentle);
        assert!(
            gentle >= 0.90,
            "{m}: gentle reaches {gentle:.3} of the oracle"
        );
        if goodput(m, ControllerKind::Governor) < 0.90 {
            seed_below += 1;
        }
    }
    assert!(
        seed_below >= models.len() / 2,
        "the seed rules stall on most of these models ({seed_below} of {})",
        models.len()
    );
}

/// The small wall runs at its fixed capacity on every seed, and a run held
/// at a third of it counts as stalled in the family's stall line.
#[test]
fn the_small_wall_is_fixed_and_a_stall_is_listed() {
    use crate::lab::bench::metrics::measure;
    use crate::lab::bench::metrics::Trace;
    let (capacity, attempts, _) = NOISE_SMALL_WALL;
    let m = BenchModel::with(ModelKind::Rejector, attempts, 0.03).at_capacity(capacity);
    assert!(Family::Noise.models().contains(&m));
    for seed in 1..=5 {
        let cfg = model_config(m, seed, 60);
        assert_eq!(cfg.capacity, capacity);
        assert!((cfg.attempts_per_worker - attempts / capacity).abs() < 1e-12);
    }
    let trace = |offer: f64| Trace {
        offers: vec![offer; 60],
        capacity: vec![capacity; 60],
        attempts: vec![100; 60],
        failures: vec![3; 60],
        memory_clears: None,
        ..Trace::default()
    };
    let oracle = trace(capacity);
    assert_eq!(measure(&trace(3.0), &oracle).stalled, 1.0);
    assert_eq!(measure(&trace(5.0), &oracle).stalled, 1.0);
    assert_eq!(measure(&trace(6.0), &oracle).stalled, 0.0);
}
