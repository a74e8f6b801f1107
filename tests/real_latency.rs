//! Capacity at a declared SLO, live: a real Locust 2.47 governed against a
//! loopback target that queues and never fails, with a latency bound read
//! from the target's own Prometheus histogram.
//!
//! The target ([`QueueingTarget`]) holds each request for
//! `base * max(1, users / slots)`: 100 ms up to 5 users, then 20 ms more per
//! user. A p99 bound of 310 ms is reached at 15.5 users; nothing ever fails,
//! so the attempt plane alone would climb to the ceiling (the second test
//! shows it does). With the bound, the offer must settle within ±20 % of
//! 15.5, the report must give a capacity within ±20 % of it, and name
//! latency as the binding constraint.
//!
//! Each run is bounded in time and stops every process it started.

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::queueing::QueueingTarget;
use support::real::{serial, target_head, Locust};
use throttle_governor::config::Config;
use throttle_governor::report::SteadyRule;
use throttle_governor::supervisor::{self, RunOptions};

const LOCUSTFILE: &str = r#"
from locust import FastHttpUser, constant, task


class Hit(FastHttpUser):
    # No think time: each user keeps one request in flight.
    wait_time = constant(0)

    @task
    def hit(self):
        self.client.get("/work")
"#;

const SLOTS: usize = 5;
const BASE: Duration = Duration::from_millis(100);
const BOUND: Duration = Duration::from_millis(310);

fn config(web: &str, target: &str, latency: bool) -> String {
    let head = target_head("slo", 40, "3s", "default");
    let latency = if latency {
        format!(
            r#"
[targets.latency]
quantile = 0.99
bound = "{}ms"
histogram = "queue_request_duration_seconds"
url = "{target}/metrics"
"#,
            BOUND.as_millis()
        )
    } else {
        String::new()
    };
    format!(
        r#"{head}
[targets.signal]
kind = "locust"
url = "{web}"

[targets.control]
kind = "locust"
url = "{web}"
{latency}"#
    )
}

async fn offer(ctl: SocketAddr) -> Option<f64> {
    tokio::time::timeout(Duration::from_secs(3), support::target_status(ctl, "slo"))
        .await
        .ok()?["offer"]
        .as_f64()
}

fn trajectory(points: &[(f64, f64)]) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for &(_, o) in points {
        if out.last() != Some(&o) {
            out.push(o);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latency_bound_finds_the_capacity_of_a_queueing_target_under_real_locust() {
    let _serial = serial().await;
    let t0 = Instant::now();
    let target = QueueingTarget::start(SLOTS, BASE).await;
    let want = target.concurrency_at(BOUND);
    let Some(mut locust) = Locust::start(LOCUSTFILE, &target.url(), 0, &[]).await else {
        return;
    };
    let cfg = Config::parse(&config(&locust.web, &target.url(), true)).unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .expect("the controller starts");
    let ctl = running.addr;
    let deadline = t0 + Duration::from_secs(200);
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut peak = 0.0_f64;
    let mut first_backoff: Option<f64> = None;
    while Instant::now() < deadline {
        if let Some(o) = offer(ctl).await {
            let at = t0.elapsed().as_secs_f64();
            if first_backoff.is_none() && o < peak {
                first_backoff = Some(at);
            }
            peak = peak.max(o);
            points.push((at, o));
        }
        let settled = first_backoff.is_some_and(|b| t0.elapsed().as_secs_f64() - b >= 45.0);
        if settled && points.len() % 8 == 0 {
            let r = running.report(&SteadyRule::default());
            if r.targets.iter().any(|t| t.capacity.is_some()) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let window_latency = support::metric(
        ctl,
        "throttle_window_latency_seconds{target=\"slo\",quantile=\"0.99\"}",
    )
    .await;
    let bound_metric = support::metric(
        ctl,
        "throttle_latency_bound_seconds{target=\"slo\",quantile=\"0.99\"}",
    )
    .await;
    let report = running.report(&SteadyRule::default());
    running.shutdown(Duration::from_secs(5)).await;
    assert!(locust.all_running(), "Locust died:\n{}", locust.tails());
    drop(locust);
    let t = report
        .targets
        .iter()
        .find(|t| t.name == "slo")
        .expect("the target is reported");
    let end = points.last().map_or(0.0, |p| p.0);
    let tail: Vec<f64> = points
        .iter()
        .filter(|p| p.0 >= end - 30.0)
        .map(|p| p.1)
        .collect();
    let tail = (
        tail.iter().copied().fold(f64::INFINITY, f64::min),
        tail.iter().copied().fold(0.0, f64::max),
    );
    let line = format!(
        "locust 1 process, latency bound p99 <= {}ms on a queueing target: concurrency at the bound {want}; trajectory {:?}; first back-off {:?}; tail {}..{}; capacity {:?}; binding {:?}; verdict: {}; {:.0}s",
        BOUND.as_millis(),
        trajectory(&points),
        first_backoff.map(|b| (b * 10.0).round() / 10.0),
        tail.0,
        tail.1,
        t.capacity,
        t.binding,
        t.verdict,
        t0.elapsed().as_secs_f64()
    );
    eprintln!("REAL-TOOL RUN {line}");
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-tool-runs.log");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        use std::io::Write as _;
        let _ = writeln!(f, "{line}");
    }
    let (lo, hi) = (0.8 * want, 1.2 * want);
    assert!(first_backoff.is_some(), "never backed off: {line}");
    assert!(
        tail.0 >= lo && tail.1 <= hi,
        "the offer did not settle within ±20% of {want}: {line}"
    );
    let c = t.capacity.unwrap_or_else(|| panic!("no capacity: {line}"));
    assert!(
        (lo..=hi).contains(&c),
        "capacity {c} not within ±20% of {want}: {line}"
    );
    assert_eq!(t.binding, Some("latency"), "{line}");
    assert!(t.verdict.contains("latency binds"), "{line}");
    assert!(t.verdict.contains("p99 <= 310ms"), "{line}");
    assert_eq!(t.observed_failure_ratio, Some(0.0), "{line}");
    assert_eq!(bound_metric, Some(0.31));
    let w = window_latency.expect("throttle_window_latency_seconds is exported");
    assert!(w.is_finite() && w > 0.0 && w < 1.0, "window latency {w}");
    // The HTML report charts latency against its bound.
    let html = report.to_html();
    assert!(html.contains("id=\"latency-slo\""));
    assert!(html.contains("class=\"latency-bound\""));
}

/// The control experiment: without the bound, the same queueing target
/// never fails, so the attempt plane climbs to the ceiling while every
/// request takes 800 ms. This is what the latency bound exists for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_latency_bound_the_same_target_is_driven_to_the_ceiling() {
    let _serial = serial().await;
    let target = QueueingTarget::start(SLOTS, BASE).await;
    let Some(locust) = Locust::start(LOCUSTFILE, &target.url(), 0, &[]).await else {
        return;
    };
    let cfg = Config::parse(&config(&locust.web, &target.url(), false)).unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .expect("the controller starts");
    let ctl = running.addr;
    let reached = support::wait_until(Duration::from_secs(90), || async move {
        offer(ctl).await == Some(40.0)
    })
    .await;
    running.shutdown(Duration::from_secs(5)).await;
    drop(locust);
    assert!(
        reached,
        "without a latency bound the offer should climb to the ceiling of 40 on a target that never fails"
    );
}
