//! Tests of the bench: determinism, the plan, and the output shapes. The
//! fast run (one seed, few windows, every model and controller) is the one
//! `.ci/run` executes; the full table is produced by the documented command.

use super::goals::goals_of;
use super::*;

fn fast_plan() -> BenchPlan {
    BenchArgs {
        seeds: 1,
        windows: 120,
        ..BenchArgs::default()
    }
    .plan()
    .unwrap()
}

#[test]
fn same_seed_gives_the_same_table() {
    let plan = BenchArgs {
        seeds: 2,
        windows: 150,
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    let a = run(&plan);
    let b = run(&plan);
    assert_eq!(a, b);
    assert_eq!(render_table(&a), render_table(&b));
    assert_eq!(render_json(&a), render_json(&b));
    // And the seeds matter: other seeds give another table.
    let other = BenchPlan {
        seeds: 3,
        ..plan.clone()
    };
    assert_ne!(render_json(&run(&other)), render_json(&a));
}

#[test]
fn fast_run_covers_every_model_and_controller() {
    let plan = fast_plan();
    let report = run(&plan);
    // The `-latency` governors run only on the models with a latency.
    let latency_models = ModelKind::ALL.iter().filter(|m| m.has_latency()).count();
    let latency_controllers = ControllerKind::ALL
        .iter()
        .filter(|c| c.needs_latency())
        .count();
    assert_eq!(
        report.rows.len(),
        ModelKind::ALL.len() * ControllerKind::ALL.len()
            - (ModelKind::ALL.len() - latency_models) * latency_controllers
    );
    assert!(report
        .rows
        .iter()
        .all(|r| !r.controller.needs_latency() || r.model.has_latency()));
    for row in &report.rows {
        assert_eq!(row.runs.len(), 1);
        let m = row.runs[0];
        assert!(m.goodput.is_finite() && m.goodput > 0.0, "{row:?}");
        assert!(m.failed >= 0.0 && m.excess >= 0.0 && m.cv >= 0.0);
        if row.controller == ControllerKind::Oracle {
            assert_eq!(m.goodput, 1.0);
            assert_eq!(m.converge, Some(0.0), "the oracle is its own reference");
            assert_eq!(m.excess, 0.0);
        }
    }
    // The oracle never overloads a rejector, so it fails nothing there.
    let oracle_rejector = report
        .rows
        .iter()
        .find(|r| r.model == ModelKind::Rejector && r.controller == ControllerKind::Oracle)
        .unwrap();
    assert_eq!(oracle_rejector.runs[0].failed, 0.0);
}

#[test]
fn the_governor_finds_a_rejectors_capacity() {
    let plan = BenchArgs {
        models: vec![ModelKind::Rejector],
        controllers: vec![ControllerKind::Governor],
        seeds: 3,
        windows: 200,
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    let report = run(&plan);
    let row = &report.rows[0];
    let goodput = row.goodput().median.unwrap();
    assert!(goodput > 0.9, "goodput {goodput}");
    assert!(row.converge().median.is_some());
}

#[test]
fn simulate_rounds_offers_down_and_records_the_truth() {
    struct Fixed(f64);
    impl Controller for Fixed {
        fn offer(&mut self, _capacity: f64) -> f64 {
            self.0
        }
        fn observe(&mut self, _w: WindowResult) {}
    }
    let cfg = model_config(ModelKind::Rejector, 1, 10);
    let cap = cfg.capacity;
    let trace = simulate(&mut Fixed(cap + 10.7), cfg, 10);
    assert!(trace.offers.iter().all(|&o| o == cap + 10.0));
    assert!(trace.capacity.iter().all(|&c| c == cap));
    // The excess is rejected: 10 of cap + 10 workers, with Poisson attempts
    // and binomial failures around that share.
    let (n, f): (u64, u64) = (trace.attempts.iter().sum(), trace.failures.iter().sum());
    let share = 10.0 / (cap + 10.0);
    assert!(
        (f as f64 / n as f64 - share).abs() < 0.3 * share,
        "{f} of {n}: {:?}",
        trace.failures
    );
    assert!(
        trace.attempts.windows(2).any(|w| w[0] != w[1]),
        "Poisson attempts vary: {:?}",
        trace.attempts
    );
    assert_eq!(trace.memory_clears, None);
}

#[test]
fn seeds_draw_capacities_in_range() {
    let caps: Vec<f64> = (1..=50).map(capacity_of).collect();
    assert!(caps
        .iter()
        .all(|&c| (CAPACITY_MIN as f64..=CAPACITY_MAX as f64).contains(&c) && c.fract() == 0.0));
    let distinct: std::collections::BTreeSet<u64> = caps.iter().map(|&c| c as u64).collect();
    assert!(distinct.len() > 30, "{distinct:?}");
    let noisy = model_config(ModelKind::Noisy, 4, 100);
    assert!((noisy.attempts_per_worker * noisy.capacity - 30.0).abs() < 1e-9);
    assert_eq!(noisy.run_ticks, 100);
    assert_eq!(
        model_config(ModelKind::Cliff, 4, 100).attempts_per_worker,
        10.0
    );
}

#[test]
fn plan_validates_and_orders() {
    assert_eq!(
        BenchArgs {
            seeds: 0,
            ..BenchArgs::default()
        }
        .plan(),
        Err(BenchError::NoSeeds)
    );
    assert_eq!(
        BenchArgs {
            windows: 10,
            ..BenchArgs::default()
        }
        .plan(),
        Err(BenchError::TooFewWindows(10))
    );
    let plan = BenchArgs::default().plan().unwrap();
    assert_eq!(plan.models, ModelKind::ALL.to_vec());
    assert_eq!(plan.controllers, ControllerKind::ALL.to_vec());
    let plan = BenchArgs {
        controllers: vec![
            ControllerKind::Oracle,
            ControllerKind::Aimd,
            ControllerKind::Aimd,
        ],
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    assert_eq!(
        plan.controllers,
        vec![ControllerKind::Aimd, ControllerKind::Oracle]
    );
}

#[test]
fn profile_keeps_one_governor() {
    let plan = BenchArgs {
        profile: Some(Profile::Robust),
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    assert!(plan.controllers.contains(&ControllerKind::GovernorRobust));
    assert!(!plan.controllers.contains(&ControllerKind::Governor));
    let plan = BenchArgs {
        profile: Some(Profile::Robust),
        controllers: vec![ControllerKind::Governor, ControllerKind::Aimd],
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    assert_eq!(
        plan.controllers,
        vec![ControllerKind::GovernorRobust, ControllerKind::Aimd]
    );
    let plan = BenchArgs {
        profile: Some(Profile::Seed),
        controllers: vec![ControllerKind::Aimd],
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    assert_eq!(plan.controllers, vec![ControllerKind::Aimd]);
}

#[test]
fn json_has_one_object_per_row_with_every_metric() {
    let report = run(&fast_plan());
    let text = render_json(&report);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), report.rows.len());
    for (obj, row) in rows.iter().zip(&report.rows) {
        assert_eq!(obj["model"], row.model.to_string());
        assert_eq!(obj["controller"], row.controller.name());
        assert_eq!(obj["seeds"], 1);
        for metric in ["converge", "failed", "excess", "goodput", "cv", "reversals"] {
            for suffix in ["median", "p90"] {
                let key = format!("{metric}_{suffix}");
                assert!(obj.get(&key).is_some(), "{key} missing in {obj}");
            }
        }
        assert!(obj["goodput_median"].is_number());
        // Only the governors keep a live figure, so only they can be wrong.
        assert_eq!(
            obj["wrong_figures"].is_u64(),
            row.controller.profile().is_some(),
            "{obj}"
        );
    }
    // One object per line inside the array.
    assert_eq!(text.lines().count(), report.rows.len() + 2);
}

#[test]
fn table_names_every_row_and_the_goals() {
    let report = run(&fast_plan());
    let text = render_table(&report);
    for row in &report.rows {
        let found = text.lines().any(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            cells.len() > 3
                && cells[1] == row.model.to_string()
                && cells[2] == row.controller.name()
        });
        assert!(found, "{} {} missing:\n{text}", row.model, row.controller);
    }
    assert!(text.contains("The robust profile's goals"));
    assert!(text.contains("The gentle profile's goals"));
    assert!(text.contains("Wall touches"));
    let g = goals(&report);
    assert_eq!(g.len(), 2 * ModelKind::ALL.len(), "robust's, then gentle's");
    for goal in &g {
        // Only robust is held to the seed's goodput.
        let robust = goal.profile == Profile::Robust;
        assert_eq!(goal.within_slack.is_some(), robust, "{goal:?}");
        assert_eq!(
            goal.met,
            goal.has_fewest_failed && goal.within_slack != Some(false)
        );
    }
    // The figure time is shown for the governors only.
    for row in &report.rows {
        assert_eq!(
            row.to_figure().is_some(),
            row.controller.is_governor(),
            "{row:?}"
        );
    }
}

/// A run's metrics with only these set.
fn metrics(goodput: f64, failed: f64, stalled: f64) -> RunMetrics {
    RunMetrics {
        converge: Some(1.0),
        failed,
        unexplained: failed,
        excess: 0.0,
        goodput,
        cv: 0.0,
        reversals: 0.0,
        downs: 0.0,
        false_downs: 0.0,
        memory_clears: None,
        over_bound: None,
        latency_ratio: None,
        to_figure: None,
        touches: 0.0,
        failed_per_touch: 0.0,
        stalled,
        wrong_figure: None,
    }
}

/// On a model with a background, raw failures grow with goodput: the
/// issue's goal gives the model to a rival with less goodput and more
/// failures of its own making, the second reading to the profile.
#[test]
fn the_second_reading_counts_only_the_failures_the_background_does_not_explain() {
    let m = BenchModel::with(ModelKind::Rejector, 1000.0, 0.03);
    // (goodput, raw failed, unexplained)
    let row = |controller, goodput: f64, failed: f64, unexplained: f64| Row {
        model: m,
        controller,
        seeds: 1,
        runs: vec![RunMetrics {
            unexplained,
            ..metrics(goodput, failed, 0.0)
        }],
    };
    let report = Report {
        plan: BenchPlan {
            models: vec![m],
            family: Some(Family::Noise),
            controllers: vec![],
            seeds: 1,
            windows: 150,
            figures: false,
        },
        rows: vec![
            row(ControllerKind::Governor, 0.92, 4300.0, 200.0),
            row(ControllerKind::GovernorRobust, 0.99, 4500.0, 250.0),
            row(ControllerKind::GovernorGentle, 1.0, 4520.0, 90.0),
            row(ControllerKind::Aimd, 0.91, 4250.0, 300.0),
        ],
    };
    let literal = &goals_of(&report, Profile::Gentle)[0];
    assert_eq!(literal.fewest_failed, Some((ControllerKind::Aimd, 4250.0)));
    assert!(!literal.met);
    let second = &super::goals::goals_unexplained(&report, Profile::Gentle)[0];
    assert_eq!(
        second.fewest_failed,
        Some((ControllerKind::GovernorGentle, 90.0))
    );
    assert!(second.met);
    let line = super::family::unexplained_line(&report);
    assert!(
        line.ends_with(
            "robust meets it on 0 of 1 (missed: rejector n=1000 bg=3%); gentle meets it on 1 of 1."
        ),
        "{line}"
    );
}

/// Where a rival fails fewer attempts than the background alone costs a
/// run at the capacity, the report says only a run below it can win.
#[test]
fn the_family_says_where_the_background_at_the_capacity_is_more_than_a_rival_fails() {
    let heavy = BenchModel::with(ModelKind::Rejector, 1000.0, 0.03);
    let light = BenchModel::with(ModelKind::Rejector, 1000.0, 0.01);
    let none = BenchModel::with(ModelKind::Rejector, 1000.0, 0.0);
    let row = |model, controller, goodput: f64, failed: f64| Row {
        model,
        controller,
        seeds: 1,
        runs: vec![metrics(goodput, failed, 0.0)],
    };
    let mut rows = Vec::new();
    for m in [heavy, light, none] {
        rows.push(row(m, ControllerKind::GovernorGentle, 1.0, 10.0));
    }
    // 150 windows: the floors are 4,500 (3 %) and 1,500 (1 %).
    rows.push(row(heavy, ControllerKind::Aimd, 0.91, 4250.0));
    // Under the floor, but short of the goodput bar: no rival.
    rows.push(row(heavy, ControllerKind::Cubic, 0.80, 100.0));
    rows.push(row(light, ControllerKind::Aimd, 0.91, 1600.0));
    rows.push(row(none, ControllerKind::Aimd, 0.91, 5.0));
    let mut report = Report {
        plan: BenchPlan {
            models: vec![heavy, light, none],
            family: Some(Family::Noise),
            controllers: vec![],
            seeds: 1,
            windows: 150,
            figures: false,
        },
        rows,
    };
    let line = super::family::background_floor_line(&report);
    assert!(
        line.contains(
            "rival's failed attempts on rejector n=1000 bg=3% (4500, against aimd 4250): there"
        ),
        "{line}"
    );
    assert!(!line.contains("bg=1%"), "{line}");
    report.rows.retain(|r| r.model != heavy);
    let line = super::family::background_floor_line(&report);
    assert!(line.ends_with("on no model."), "{line}");
}

#[test]
fn goals_pick_the_fewest_failures_among_those_reaching_ninety_percent() {
    let m = |goodput: f64, failed: f64| metrics(goodput, failed, 0.0);
    let row = |controller, goodput, failed| Row {
        model: ModelKind::Cliff.into(),
        controller,
        seeds: 1,
        runs: vec![m(goodput, failed)],
    };
    let report = Report {
        plan: BenchPlan {
            models: vec![ModelKind::Cliff.into()],
            family: None,
            controllers: vec![],
            seeds: 1,
            windows: 100,
            figures: false,
        },
        rows: vec![
            row(ControllerKind::Governor, 0.95, 1000.0),
            row(ControllerKind::GovernorRobust, 0.93, 1040.0),
            row(ControllerKind::GovernorGentle, 0.92, 850.0),
            row(ControllerKind::Aimd, 0.80, 10.0), // below 0.90: not a rival
            row(ControllerKind::Cubic, 0.91, 900.0),
            row(ControllerKind::Oracle, 1.0, 0.0), // the reference: not a rival
        ],
    };
    let g = &goals_of(&report, Profile::Robust)[0];
    assert!(g.reaches_goodput);
    // Gentle came after robust's goal was set: not robust's rival.
    assert_eq!(g.fewest_failed, Some((ControllerKind::Cubic, 900.0)));
    assert!(!g.has_fewest_failed);
    let (dg, df) = g.vs_seed.unwrap();
    assert!((dg - (0.93 / 0.95 - 1.0)).abs() < 1e-12);
    assert!((df - 0.04).abs() < 1e-12);
    // 0.93 is 2.1 % below the seed's 0.95: outside the 2 % slack.
    assert_eq!(g.within_slack, Some(false));
    assert!(!g.met);
    // Gentle's rivals include robust; it has the fewest failures, and no
    // slack applies.
    let g = &goals_of(&report, Profile::Gentle)[0];
    assert_eq!(
        g.fewest_failed,
        Some((ControllerKind::GovernorGentle, 850.0))
    );
    assert_eq!(g.within_slack, None);
    assert!(g.met);
    assert_eq!(goals(&report).len(), 2);
}

#[test]
fn trace_prints_every_window_of_one_seed() {
    let plan = BenchArgs {
        models: vec![ModelKind::Step],
        controllers: vec![ControllerKind::Oracle, ControllerKind::Governor],
        windows: 90,
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    let text = render_trace(&plan, 5);
    let rows: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2 * 90);
    let cap = capacity_of(5);
    // The step model halves at a third of the run: the oracle follows.
    let oracle: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["controller"] == "oracle")
        .collect();
    assert_eq!(oracle[0]["capacity"], cap);
    assert_eq!(oracle[30]["capacity"], cap / 2.0);
    assert_eq!(oracle[30]["offer"], (0.95 * cap / 2.0).floor());
    assert_eq!(oracle[89]["window"], 89);
    assert_eq!(text, render_trace(&plan, 5), "deterministic");
}

/// The goals per model of a full bench run (every model, every
/// controller), robust's then gentle's; without the live estimate, which
/// the goals do not read.
fn goals_at(windows: usize, seeds: u64) -> Vec<Goal> {
    let plan = BenchPlan {
        figures: false,
        ..BenchArgs {
            seeds,
            windows,
            ..BenchArgs::default()
        }
        .plan()
        .unwrap()
    };
    goals(&run(&plan))
}

/// Which models miss a profile's goal, with the numbers that say why.
fn misses(goals: &[Goal]) -> Vec<String> {
    goals
        .iter()
        .filter(|g| !g.met)
        .map(|g| {
            format!(
                "{} {}: goodput {:.3}, failed {:.0}, fewest {:?}, vs seed {:?}",
                g.profile, g.model, g.goodput, g.failed, g.fewest_failed, g.vs_seed
            )
        })
        .collect()
}

/// Issue 14's goal, from the bench itself: at 150 windows, on every model,
/// the robust profile reaches 0.90 of the oracle's goodput, has the fewest
/// failed attempts of all controllers that do, and stays within 2 % of the
/// seed's goodput. Issue 26's for gentle, the default: 0.90 and the fewest
/// failed attempts of all controllers that reach it, robust included.
#[test]
fn the_robust_and_gentle_profiles_meet_the_goal_on_every_model_at_150_windows() {
    for seeds in [30, 100] {
        let goals = goals_at(150, seeds);
        assert_eq!(goals.len(), 2 * ModelKind::ALL.len());
        let missed = misses(&goals);
        assert!(missed.is_empty(), "150 windows, {seeds} seeds: {missed:#?}");
    }
}

/// At 600 windows AIMD's slow additive climb reaches 0.90 too, and its
/// `+1` a window never overshoots: the five models where it used to fail
/// less than robust (`warming`, `metastable`, `retry-churn`, `fast-fail`,
/// `queueing`) are the ones this test watches most, but the goal must hold
/// on every model, for robust and for gentle.
#[test]
fn the_robust_and_gentle_profiles_meet_the_goal_on_every_model_at_600_windows() {
    for seeds in [30, 100] {
        let goals = goals_at(600, seeds);
        assert_eq!(goals.len(), 2 * ModelKind::ALL.len());
        let missed = misses(&goals);
        assert!(missed.is_empty(), "600 windows, {seeds} seeds: {missed:#?}");
    }
}

/// The advice detector, fed the default governor's windows on each bench
/// model: what it says, per model, for seeds 1..=10.
fn advice_on(model: ModelKind) -> Vec<Option<crate::governor::advice::Signature>> {
    use crate::governor::advice::{AdviceWindow, Advisor};
    use crate::governor::ThrottleGovernor;
    use crate::lab::sim::model::TargetModel;
    (1..=10)
        .map(|seed| {
            let cfg = model_config(model, seed, 150);
            let mut m = TargetModel::new(cfg).unwrap();
            let mut g = ThrottleGovernor::new(params());
            let mut a = Advisor::new(g.params());
            let mut said = None;
            for _ in 0..150 {
                let offer = g.state().current;
                let r = m.tick(offer.floor());
                let o = g.step(r.attempts as f64, r.failures as f64);
                if let Some(advice) = a.observe(AdviceWindow {
                    attempts: r.attempts as f64,
                    failures: r.failures as f64,
                    offer,
                    decision: o.decision,
                }) {
                    said.get_or_insert(advice.signature);
                }
            }
            said
        })
        .collect()
}

#[test]
fn advice_names_the_signatures_robust_handles_and_is_quiet_elsewhere() {
    use crate::governor::advice::Signature;
    // Where robust does not help, the default is left alone.
    for model in [
        ModelKind::Cliff,
        ModelKind::Rejector,
        ModelKind::Knee,
        ModelKind::Warming,
        ModelKind::Drift,
    ] {
        let said = advice_on(model);
        assert!(said.iter().all(Option::is_none), "{model}: {said:?}");
    }
    // Where it does, the advice comes in at least 8 of 10 seeds, and the
    // model's own signature is the one named most.
    for (model, sig) in [
        (ModelKind::Noisy, Signature::TinySamples),
        (ModelKind::Lagged, Signature::LaggedFailures),
        (ModelKind::Bursts, Signature::LoadIndependentBursts),
    ] {
        let said = advice_on(model);
        let given = said.iter().filter(|s| s.is_some()).count();
        let named = said.iter().filter(|s| **s == Some(sig)).count();
        assert!(given >= 8 && 2 * named > given, "{model}: {said:?}");
    }
}

/// A queueing-only report of `windows` x `seeds`.
fn queueing_report(windows: usize, seeds: u64) -> Report {
    let plan = BenchArgs {
        models: vec![ModelKind::Queueing],
        seeds,
        windows,
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    run(&plan)
}

/// Item 5's goal: on `queueing`, with the latency bound on, every profile
/// settle within ±20 % of the latency capacity (1.678 C for p99 <= 2.5
/// base) and spend at most 5 % of windows over the bound; with it off they
/// climb on to the client timeout, far past the bound. Ratios only.
#[test]
fn the_latency_bound_meets_its_goal_on_queueing() {
    for (windows, seeds) in [(150, 30), (150, 100), (600, 30), (600, 100)] {
        let report = queueing_report(windows, seeds);
        let goals = latency_goals(&report);
        assert_eq!(goals.len(), 3, "every profile");
        for g in &goals {
            assert!(g.met, "{windows} x {seeds}: {g:?}");
        }
        let row = |c: ControllerKind| report.rows.iter().find(|r| r.controller == c).unwrap();
        let med = |s: Summary| s.median.unwrap();
        for (off, on) in [
            (ControllerKind::Governor, ControllerKind::GovernorLatency),
            (
                ControllerKind::GovernorRobust,
                ControllerKind::GovernorRobustLatency,
            ),
            (
                ControllerKind::GovernorGentle,
                ControllerKind::GovernorGentleLatency,
            ),
        ] {
            let (off, on) = (row(off), row(on));
            let ratio = med(off.latency_ratio());
            if off.controller == ControllerKind::Governor {
                // Off: about the timeout's 5 % offer, 2.76 C = 1.64
                // capacities.
                assert!((1.4..1.7).contains(&ratio), "{}: {ratio}", off.controller);
                assert!(med(off.failed()) > 0.0);
            } else {
                // Robust and gentle, off: the plateau rule stops the climb once more
                // workers add no successes (past C), well before the
                // timeout: no failure, but still over the latency bound.
                assert!((1.0..1.4).contains(&ratio), "{}: {ratio}", off.controller);
                assert_eq!(med(off.failed()), 0.0, "{off:?}");
            }
            assert!(med(off.over_bound()) > 0.5, "{off:?}");
            // On: no timeouts, and no goodput lost (past C a queue adds
            // latency, not goodput; robust's plateau is past C as well, so
            // the two are equal within the noise).
            assert_eq!(med(on.failed()), 0.0);
            assert!(
                med(on.goodput()) >= med(off.goodput()) - 0.005,
                "{}",
                on.controller
            );
            assert!(med(on.goodput()) >= GOAL_GOODPUT);
        }
        // The failure-only controllers are not held to the latency goal.
        assert!(goals.iter().all(|g| g.controller.needs_latency()));
    }
}

#[test]
fn latency_capacity_is_the_formulas() {
    let cfg = model_config(ModelKind::Queueing, 3, 100);
    let w = latency_capacity(&cfg).unwrap();
    assert!((w / cfg.capacity - 2.5 / 1.49).abs() < 1e-12);
    assert_eq!(
        latency_capacity(&model_config(ModelKind::Rejector, 3, 100)),
        None
    );
    // Every queueing window has a p99 (in base latencies); others have none.
    let mut g = ControllerKind::GovernorLatency.build(&params());
    let t = simulate(g.as_mut(), cfg, 100);
    assert_eq!(t.latency.len(), 100);
    assert!(t
        .latency
        .iter()
        .all(|q| q.is_some_and(|q| q >= 1.49 - 1e-12)));
    assert_eq!((t.latency_bound, t.latency_capacity), (Some(2.5), Some(w)));
    let mut g = ControllerKind::Governor.build(&params());
    let t = simulate(g.as_mut(), model_config(ModelKind::Knee, 3, 100), 100);
    assert!(t.latency.is_empty() && t.latency_bound.is_none());
}

#[test]
fn profile_keeps_one_latency_governor_too() {
    let plan = BenchArgs {
        profile: Some(Profile::Robust),
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    assert!(plan
        .controllers
        .contains(&ControllerKind::GovernorRobustLatency));
    assert!(!plan.controllers.contains(&ControllerKind::GovernorLatency));
    let plan = BenchArgs {
        profile: Some(Profile::Seed),
        controllers: vec![ControllerKind::GovernorRobustLatency],
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    assert_eq!(plan.controllers, vec![ControllerKind::GovernorLatency]);
    let plan = BenchArgs {
        profile: Some(Profile::Gentle),
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    let governors: Vec<ControllerKind> = plan
        .controllers
        .iter()
        .copied()
        .filter(|c| c.is_governor())
        .collect();
    assert_eq!(
        governors,
        vec![
            ControllerKind::GovernorGentle,
            ControllerKind::GovernorGentleLatency
        ]
    );
}

#[test]
fn the_table_json_and_trace_show_the_latency_on_queueing_only() {
    let plan = BenchArgs {
        models: vec![ModelKind::Rejector, ModelKind::Queueing],
        seeds: 1,
        windows: 80,
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    let report = run(&plan);
    let text = render_table(&report);
    assert!(
        text.contains("The latency bound: p99 <= 2.5 base latencies"),
        "{text}"
    );
    assert!(text.contains("The latency bound's goals"));
    assert!(text.contains("| queueing | governor-robust-latency |"));
    assert!(!text.contains("| rejector | governor-latency"));
    let json: serde_json::Value = serde_json::from_str(&render_json(&report)).unwrap();
    for obj in json.as_array().unwrap() {
        let queueing = obj["model"] == "queueing";
        assert_eq!(obj.get("over_bound_median").is_some(), queueing, "{obj}");
        assert_eq!(obj.get("latency_ratio_median").is_some(), queueing, "{obj}");
    }
    let trace = render_trace(&plan, 1);
    for line in trace.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v.get("latency").is_some(), v["model"] == "queueing", "{v}");
    }
    // Without a latency model, no latency section.
    let text = render_table(&run(&fast_plan_of(vec![ModelKind::Cliff])));
    assert!(!text.contains("latency bound"), "{text}");
}

fn fast_plan_of(models: Vec<ModelKind>) -> BenchPlan {
    BenchArgs {
        models,
        seeds: 1,
        windows: 80,
        ..BenchArgs::default()
    }
    .plan()
    .unwrap()
}

/// Issue 30's real stall in closed loop: the sim's `rejector` at a capacity
/// of 10 workers, 15 attempts per worker per window (what real k6 makes at
/// the 1 ms wall with 3 s windows), 3 % of the attempts failing whatever
/// the offer. The family's capacities are 50 to 200 workers, so no family
/// row has only offers 1 and 2 below the wall, and a goal on medians would
/// not see a stall on a few seeds anyway (the median tail offer here is 10).
///
/// A KNOWN MISS, recorded as one (issue 30 is open; docs/BENCHMARKS.md,
/// "The opening's one witness"): gentle stalls at 3 on 1 of 30 seeds
/// (seed 12; seeds 22 and 30 too until the opening stopped backing off a
/// doubling into the dead band). Offers 1 and 2's clean windows say the
/// background is 0, and every 3 % window at 4 after them is a dead band,
/// until the patience steps it down and sets `last_bad` there. When the
/// rules reach the wall on every seed it fails by passing: remove
/// `should_panic`.
#[test]
#[should_panic(expected = "stalled below half the capacity")]
fn gentle_reaches_a_small_wall_through_a_3_percent_background_known_miss() {
    use crate::lab::sim::model::ModelKind;
    use crate::lab::sim::ModelConfig;
    const WINDOWS: usize = 100;
    let mut stalled = Vec::new();
    for seed in 1..=30u64 {
        let mut cfg = ModelConfig::new(ModelKind::Rejector, 10.0);
        cfg.attempts_per_worker = 15.0;
        cfg.noise = 0.03;
        cfg.seed = seed;
        cfg.run_ticks = WINDOWS as u64;
        cfg.poisson = true;
        let mut c = ControllerKind::GovernorGentle.build(&params());
        let t = simulate(c.as_mut(), cfg, WINDOWS);
        let tail_low = t.offers[WINDOWS - 30..]
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        if tail_low <= 5.0 {
            stalled.push((seed, tail_low));
        }
    }
    assert!(
        stalled.is_empty(),
        "gentle stalled below half the capacity on {} of 30 seeds (seed, lowest offer of the last 30 windows): {stalled:?}",
        stalled.len()
    );
}

/// One (model, controller) row of these runs, one seed each.
fn row_of(
    model: ModelKind,
    controller: ControllerKind,
    runs: impl Iterator<Item = RunMetrics>,
) -> Row {
    let runs: Vec<RunMetrics> = runs.collect();
    Row {
        model: model.into(),
        controller,
        seeds: runs.len() as u64,
        runs,
    }
}

/// A report of `rows` on one model, with as many seeds as its first row.
fn report_of(model: ModelKind, rows: Vec<Row>) -> Report {
    Report {
        plan: BenchPlan {
            models: vec![model.into()],
            family: None,
            controllers: vec![],
            seeds: rows.first().map_or(0, |r| r.seeds),
            windows: 100,
            figures: true,
        },
        rows,
    }
}

/// The family's stall line names each controller that stalled on some
/// seeds, with how many; no stall says "none".
#[test]
fn the_stall_line_counts_stalled_seeds_per_controller() {
    let run = |stalled: f64| metrics(1.0, 0.0, stalled);
    let row = |controller, stalls: &[f64]| {
        row_of(
            ModelKind::Rejector,
            controller,
            stalls.iter().map(|&s| run(s)),
        )
    };
    let mut report = report_of(
        ModelKind::Rejector,
        vec![
            row(ControllerKind::GovernorGentle, &[1.0, 0.0, 1.0]),
            row(ControllerKind::Aimd, &[0.0, 0.0, 0.0]),
        ],
    );
    let all = [ControllerKind::GovernorGentle, ControllerKind::Aimd];
    assert_eq!(
        crate::lab::bench::family::stalls_line(&report, &all),
        "Stalled seeds (the median offer of the last 40 windows at most half the capacity), of 3: rejector: governor-gentle 2."
    );
    report.rows[0] = row(ControllerKind::GovernorGentle, &[0.0, 0.0, 0.0]);
    assert!(crate::lab::bench::family::stalls_line(&report, &all).ends_with("of 3: none."));
}

/// The family's wrong-figure line names each governor whose last figure
/// was wrong on some seeds, with how many; a controller without an
/// estimate is left out; no wrong figure says "none".
#[test]
fn the_wrong_figures_line_counts_seeds_per_governor() {
    let run = |wrong: Option<f64>| RunMetrics {
        wrong_figure: wrong,
        ..metrics(1.0, 0.0, 0.0)
    };
    let row = |controller, wrong: &[Option<f64>]| {
        row_of(ModelKind::Bursts, controller, wrong.iter().map(|&w| run(w)))
    };
    let mut report = report_of(
        ModelKind::Bursts,
        vec![
            row(
                ControllerKind::GovernorGentle,
                &[Some(1.0), Some(0.0), Some(1.0)],
            ),
            row(ControllerKind::Aimd, &[None, None, None]),
        ],
    );
    let all = [ControllerKind::GovernorGentle, ControllerKind::Aimd];
    assert_eq!(report.rows[1].wrong_figures(), None);
    assert_eq!(
        crate::lab::bench::family::wrong_figures_line(&report, &all),
        "Wrong figures (the last live figure says the bound binds there, but lies more than \
         15 % from the true capacity), of 3: bursts: governor-gentle 2."
    );
    report.rows[0] = row(ControllerKind::GovernorGentle, &[Some(0.0); 3]);
    assert!(crate::lab::bench::family::wrong_figures_line(&report, &all).ends_with("of 3: none."));
}

/// The live figure must not name a wrong capacity: a figure that says the
/// failure bound binds there lies within 15 % of the true capacity.
///
/// A KNOWN MISS, recorded as one (issue 30 is open; docs/BENCHMARKS.md,
/// "Wrong figures"): on `bursts` at 150 windows, gentle ends 1 of 30 seeds
/// on a figure that a load-independent burst bracketed (seed 6: figure 7
/// at a capacity of 62; seeds 5 and 21, figures 3 and 24 at 150 and 80,
/// until the fifteenth round's breach-size reading; the level above
/// breached in a burst and the run held below it for longer than the live
/// figure's evidence reaches, so no higher level held within the bound
/// contradicts it, as one does on seeds 26 and 27 since
/// `report::held_above`). When the report tells such a bracket from a wall
/// it fails by passing: remove `should_panic`.
#[test]
#[should_panic(expected = "wrong capacity figure")]
fn gentle_names_no_wrong_capacity_on_bursts_known_miss() {
    const WINDOWS: usize = 150;
    let mut wrong = Vec::new();
    for seed in 1..=30u64 {
        let mut c = ControllerKind::GovernorGentle.build(&params());
        c.keep_figures();
        let t = simulate(
            c.as_mut(),
            model_config(ModelKind::Bursts, seed, WINDOWS),
            WINDOWS,
        );
        let truth = t.capacity[WINDOWS - 1];
        if let Some(claim) = t.claim.filter(|&f| metrics::wrong_figure(f, truth)) {
            wrong.push((seed, claim, truth));
        }
    }
    assert!(
        wrong.is_empty(),
        "gentle ended on a wrong capacity figure on {} of 30 seeds (seed, figure, capacity): {wrong:?}",
        wrong.len()
    );
}

/// A governor's trace rows say what each window decided, by which rule (the
/// report's words) and with which congestion memory; other controllers'
/// rows carry none of it.
#[test]
fn a_governors_trace_names_the_rule_of_every_window() {
    let plan = BenchArgs {
        models: vec![ModelKind::Rejector],
        controllers: vec![ControllerKind::GovernorGentle, ControllerKind::Aimd],
        seeds: 1,
        windows: 60,
        ..BenchArgs::default()
    }
    .plan()
    .unwrap();
    let rows: Vec<serde_json::Value> = render_trace(&plan, 1)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let gentle: Vec<&serde_json::Value> = rows
        .iter()
        .filter(|r| r["controller"] == "governor-gentle")
        .collect();
    assert_eq!(gentle.len(), 60);
    // The opening doubles from 1: up, climbing, no memory yet.
    assert_eq!(
        (
            &gentle[0]["decision"],
            &gentle[0]["rule"],
            gentle[0].get("last_bad")
        ),
        (&"up".into(), &"climbing".into(), None),
        "{}",
        gentle[0]
    );
    // The first back-off sets the memory to the offer it backed off from,
    // and the next window's offer is lower.
    let down = gentle
        .iter()
        .position(|r| r["decision"] == "down")
        .expect("the opening overshoots the wall and backs off");
    assert_eq!(gentle[down]["rule"], "backing-off", "{}", gentle[down]);
    assert_eq!(gentle[down]["last_bad"], gentle[down]["offer"]);
    assert!(gentle[down + 1]["offer"].as_f64() < gentle[down]["offer"].as_f64());
    // Every window has a decision and a rule, and they agree with the next
    // window's offer.
    for w in gentle.windows(2) {
        let (now, next) = (w[0]["offer"].as_f64(), w[1]["offer"].as_f64());
        let expect = match w[0]["decision"].as_str() {
            Some("up") => next > now,
            Some("down") => next < now,
            Some("hold") => next == now,
            other => panic!("decision {other:?} in {}", w[0]),
        };
        assert!(expect && w[0]["rule"].is_string(), "{} then {}", w[0], w[1]);
    }
    for r in rows.iter().filter(|r| r["controller"] == "aimd") {
        for key in ["decision", "rule", "last_bad"] {
            assert!(r.get(key).is_none(), "{r}");
        }
    }
}
