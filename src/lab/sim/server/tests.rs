//! The simulated tool's exposition, admin bodies, state and config.

use axum::http::StatusCode;

use super::exposition::render;
use super::routes::{do_reset, parse_rate, parse_workers};
use super::state::{lock, Sim, Snapshot};
use super::*;
use crate::lab::sim::model::ModelKind;

fn snapshot() -> Snapshot {
    Snapshot {
        successes: 10,
        failures: 2,
        ticks: 3,
        workers: 4,
        rate: None,
        capacity: 120.0,
        latency: None,
    }
}

#[test]
fn render_single_tool() {
    let text = render(&[(None, snapshot())]);
    assert!(text.contains("# TYPE sim_requests_total counter\n"));
    assert!(text.contains("sim_requests_total{outcome=\"success\"} 10\n"));
    assert!(text.contains("sim_requests_total{outcome=\"failure\"} 2\n"));
    assert!(text.contains("sim_attempts_total 12\n"));
    assert!(text.contains("sim_ticks_total 3\n"));
    assert!(text.contains("sim_workers 4\n"));
    assert!(text.contains("sim_rate_limit +Inf\n"));
    assert!(text.contains("sim_capacity 120\n"));
}

#[test]
fn render_many_tools_groups_families() {
    let mut other = snapshot();
    other.rate = Some(2.5);
    let text = render(&[(Some(0), snapshot()), (Some(1), other)]);
    assert_eq!(text.matches("# TYPE sim_workers gauge").count(), 1);
    assert!(text.contains("sim_requests_total{tool=\"1\",outcome=\"failure\"} 2\n"));
    assert!(text.contains("sim_rate_limit{tool=\"1\"} 2.5\n"));
    assert!(text.contains("sim_rate_limit{tool=\"0\"} +Inf\n"));
}

#[test]
fn workers_bodies() {
    assert_eq!(parse_workers(br#"{"workers": 7}"#).unwrap(), 7);
    assert_eq!(parse_workers(br#"{"workers": 7.0}"#).unwrap(), 7);
    assert_eq!(parse_workers(br#"{"workers": 0}"#).unwrap(), 0);
    for bad in [
        &br#"{"workers": -1}"#[..],
        br#"{"workers": 1.5}"#,
        br#"{"workers": "3"}"#,
        br#"{"workers": null}"#,
        br#"{"workers": 1e300}"#,
        br#"{"workers": 1000000001}"#,
        br#"{"worker": 3}"#,
        br#"[3]"#,
        br#"3"#,
        b"not json",
        b"",
    ] {
        let err = parse_workers(bad).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST, "{bad:?}");
    }
}

#[test]
fn rate_bodies() {
    assert_eq!(parse_rate(br#"{"rate": null}"#).unwrap(), None);
    assert_eq!(parse_rate(br#"{"rate": 12.5}"#).unwrap(), Some(12.5));
    assert_eq!(parse_rate(br#"{"rate": 0}"#).unwrap(), Some(0.0));
    for bad in [
        &br#"{"rate": -1}"#[..],
        br#"{"rate": 1e300}"#,
        br#"{"rate": "5"}"#,
        br#"{}"#,
    ] {
        assert!(parse_rate(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn rate_caps_the_offer() {
    let cfg = SimConfig::new(ModelConfig::new(ModelKind::Rejector, 100.0));
    let sim = Sim::new(&cfg).unwrap();
    {
        let mut tool = lock(&sim.tools[0]);
        tool.workers = 50;
        // 100 attempts/s at 0.1 s ticks and 10 attempts per worker:
        // one worker's worth.
        tool.rate = Some(100.0);
    }
    sim.tick_all();
    let s = lock(&sim.tools[0]).snapshot();
    assert_eq!((s.successes, s.failures, s.ticks), (10, 0, 1));
    lock(&sim.tools[0]).rate = None;
    sim.tick_all();
    assert_eq!(lock(&sim.tools[0]).snapshot().successes, 510);
}

#[test]
fn queueing_exports_a_latency_histogram_that_reads_back_its_p99() {
    use crate::window::Buckets;
    let cfg = SimConfig::new(ModelConfig::new(ModelKind::Queueing, 100.0));
    let sim = Sim::new(&cfg).unwrap();
    // Twice capacity: L = 2 base = 20 ms at 100 ms ticks and a = 10;
    // p99 = 1.49 L = 29.8 ms; nothing times out (1.5 L < 40 ms).
    lock(&sim.tools[0]).workers = 200;
    for _ in 0..10 {
        sim.tick_all();
    }
    let text = render(&[(None, lock(&sim.tools[0]).snapshot())]);
    assert_eq!(
        text.matches("# TYPE sim_request_duration_seconds histogram")
            .count(),
        1
    );
    assert!(text.contains("sim_request_duration_seconds_bucket{le=\"+Inf\"} 10000\n"));
    assert!(text.contains("sim_request_duration_seconds_count 10000\n"));
    // Uniform on [10, 30] ms: half by 20 ms, all by 30 ms.
    assert!(
        text.contains("sim_request_duration_seconds_bucket{le=\"0.02\"} 5000\n"),
        "{text}"
    );
    assert!(text.contains("sim_request_duration_seconds_bucket{le=\"0.03\"} 10000\n"));
    assert!(text.contains("sim_request_duration_seconds_bucket{le=\"0.005\"} 0\n"));
    let sum: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("sim_request_duration_seconds_sum "))
        .unwrap()
        .parse()
        .unwrap();
    assert!((sum - 10_000.0 * 0.02).abs() < 1e-6, "{sum}");
    // The governor's histogram_quantile over the buckets gives the p99.
    let pairs = text.lines().filter_map(|l| {
        let rest = l.strip_prefix("sim_request_duration_seconds_bucket{le=\"")?;
        let (le, count) = rest.split_once("\"} ")?;
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().ok()?
        };
        Some((le, count.parse::<f64>().ok()?))
    });
    let p99 = Buckets::new(pairs).unwrap().quantile(0.99).unwrap();
    assert!((p99 - 0.0298).abs() < 1e-9, "{p99}");
    // Other models export none; a reset clears it; many tools are labelled.
    let rejector = Sim::new(&SimConfig::new(ModelConfig::new(
        ModelKind::Rejector,
        100.0,
    )))
    .unwrap();
    rejector.tick_all();
    let text = render(&[(None, lock(&rejector.tools[0]).snapshot())]);
    assert!(!text.contains("sim_request_duration_seconds"));
    do_reset(&sim, 0).unwrap();
    let s = lock(&sim.tools[0]).snapshot();
    assert_eq!(s.latency.as_ref().map(|h| h.count), Some(0));
    sim.tick_all();
    let text = render(&[
        (Some(0), lock(&sim.tools[0]).snapshot()),
        (Some(1), snapshot()),
    ]);
    assert!(
        text.contains("sim_request_duration_seconds_bucket{tool=\"0\",le=\"+Inf\"} 10\n"),
        "{text}"
    );
    assert!(text.contains("sim_request_duration_seconds_count{tool=\"0\"} 10\n"));
}

#[test]
fn tools_get_distinct_seeds() {
    let mut model = ModelConfig::new(ModelKind::Noisy, 100.0);
    model.seed = 5;
    let mut cfg = SimConfig::new(model);
    cfg.tools = 3;
    let sim = Sim::new(&cfg).unwrap();
    let seeds: Vec<u64> = sim
        .tools
        .iter()
        .map(|t| lock(t).model.config().seed)
        .collect();
    assert_eq!(seeds, vec![5, 6, 7]);
}

#[test]
fn config_validation() {
    let base = SimConfig::new(ModelConfig::new(ModelKind::Rejector, 100.0));
    assert!(base.validate().is_ok());
    let mut c = base.clone();
    c.tools = 0;
    assert!(matches!(c.validate(), Err(SimError::Tools(0))));
    let mut c = base.clone();
    c.tick = Duration::ZERO;
    assert!(matches!(c.validate(), Err(SimError::Tick(_))));
    let mut c = base.clone();
    c.initial_rate = Some(f64::NAN);
    assert!(matches!(c.validate(), Err(SimError::Rate(_))));
    let mut c = base.clone();
    c.initial_workers = MAX_WORKERS + 1;
    assert!(matches!(c.validate(), Err(SimError::Workers(_))));
    let mut c = base;
    c.model.capacity = -1.0;
    assert!(matches!(c.validate(), Err(SimError::Model(_))));
}
