//! Capacity at a declared SLO, live: real load tools governed against a
//! loopback target that queues and never fails, with a latency bound.
//!
//! The target ([`QueueingTarget`]) holds each request for
//! `base * max(1, in_flight / slots)`: 200 ms up to 5 in flight, then 40 ms
//! more per request. A p99 bound of 620 ms is reached at 15.5 concurrent
//! users; nothing ever fails, so the attempt plane alone would climb to the
//! ceiling (the last test shows it does). With the bound, each run must
//! settle within ±20 % of 15.5, the report must give a capacity within
//! ±20 % of it, and name latency as the binding constraint. Two paths:
//!
//! - real Locust 2.47 (signal and control over its web UI), the latency
//!   from the target's own Prometheus histogram (`histogram`, windowed from
//!   bucket deltas), and from Locust's own rolling percentile
//!   (`locust = true`);
//! - real k6 1.1.0 (signal and control over its REST API), the latency from
//!   k6's own `http_req_duration`, remote-written as a native histogram into
//!   a real Prometheus 2.42 and read with a PromQL `query`;
//! - a real Goose 0.19 load test (tests/goose-harness; signal and control
//!   over its WebSocket controller), the latency from Goose's own
//!   response-time buckets (`goose = true`).
//!
//! Each run is bounded in time and stops every process it started.

use crate::support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use support::queueing::QueueingTarget;
use support::real::{full_tier, record_run, serial, target_head, Goose, Locust, K6, LOCUSTFILE};
use support::{require_tool, Prometheus};
use throttle_governor::config::Config;
use throttle_governor::report::{SteadyRule, TargetReport};
use throttle_governor::runtime::supervisor::{self, RunOptions};

const SLOTS: usize = 5;
/// 200 ms: a real tool measures on the client, and on a loaded 2-core
/// machine scheduling adds tens of milliseconds to each request; at 100 ms
/// (bound 310 ms) that pushed p99 at 14 users over the bound in a CI run
/// that shared the machine (16 -> 14 -> 12, capacity 12, -23 %). At 200 ms
/// the same delay is half the share of the margin below the bound.
const BASE: Duration = Duration::from_millis(200);
const BOUND: Duration = Duration::from_millis(620);
const RUN_LIMIT: Duration = Duration::from_secs(200);

fn locust_config(web: &str, latency: Option<&str>) -> String {
    let head = target_head("slo", 40, "3s", None);
    format!(
        r#"{head}
[targets.signal]
kind = "locust"
url = "{web}"

[targets.control]
kind = "locust"
url = "{web}"
{}"#,
        latency.unwrap_or("")
    )
}

fn histogram_bound(target: &str) -> String {
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

/// The run's windows, one compact entry each (time, offer, attempts,
/// failures, p-quantile, decision and why), for a failure's diagnosis.
fn windows(history: &[throttle_governor::telemetry::WindowRecord]) -> String {
    let ms = |s: Option<f64>| s.map_or("-".to_string(), |s| format!("{:.0}ms", s * 1e3));
    history
        .iter()
        .map(|w| {
            format!(
                "{:.1}s({:.1}s)@{} {}/{} {} {}->{} {}",
                w.time_secs,
                w.window_secs.unwrap_or(f64::NAN),
                w.offer,
                w.attempts.unwrap_or(f64::NAN),
                w.failures.unwrap_or(f64::NAN),
                ms(w.latency_secs),
                w.decision,
                w.to,
                w.label
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What one governed SLO run showed.
struct SloRun {
    line: String,
    tail: (f64, f64),
    /// The highest offer after the first back-off.
    top_after_backoff: f64,
    first_backoff: Option<f64>,
    target: TargetReport,
    window_latency: Option<f64>,
    bound_metric: Option<f64>,
    html: String,
}

/// Governs target `slo` of `config` until a capacity figure, 45 s after the
/// first back-off in the full tier and at once in the fast tier (or until
/// the deadline), and collects the figures.
async fn govern_slo(label: &str, config: &str, want: f64, bound: Duration, t0: Instant) -> SloRun {
    let cfg = Config::parse(config).unwrap_or_else(|e| panic!("{e}\n{config}"));
    support::real::decision_log(label);
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .expect("the controller starts");
    let ctl = running.addr;
    let deadline = t0 + RUN_LIMIT;
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
        // The full tier governs 45 s past the first back-off; the fast tier
        // stops at the first capacity figure.
        let settle = if full_tier() { 45.0 } else { 0.0 };
        let settled = first_backoff.is_some_and(|b| t0.elapsed().as_secs_f64() - b >= settle);
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
        "throttle_window_latency_seconds{target=\"slo\",slo_quantile=\"0.99\"}",
    )
    .await;
    let bound_metric = support::metric(
        ctl,
        "throttle_latency_bound_seconds{target=\"slo\",slo_quantile=\"0.99\"}",
    )
    .await;
    let report = running.report(&SteadyRule::default());
    running.shutdown(Duration::from_secs(5)).await;
    let html = report.to_html();
    let target = report
        .targets
        .into_iter()
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
    let top_after_backoff = points
        .iter()
        .filter(|p| first_backoff.is_some_and(|b| p.0 >= b))
        .fold(0.0_f64, |m, p| m.max(p.1));
    let line = format!(
        "{label}, latency bound p99 <= {}ms on a queueing target: concurrency at the bound {want}; trajectory {:?}; first back-off {:?}; tail {}..{}; capacity {:?}; binding {:?}; verdict: {}; {:.0}s",
        bound.as_millis(),
        trajectory(&points),
        first_backoff.map(|b| (b * 10.0).round() / 10.0),
        tail.0,
        tail.1,
        target.capacity,
        target.binding,
        target.verdict,
        t0.elapsed().as_secs_f64()
    );
    record_run(&line);
    record_run(&format!("{label} windows: {}", windows(&target.history)));
    SloRun {
        line,
        tail,
        top_after_backoff,
        first_backoff,
        target,
        window_latency,
        bound_metric,
        html,
    }
}

impl SloRun {
    /// The issue's criteria for a latency-bound run (the settled tail in the
    /// full tier only).
    fn assert_latency_binds(&self, want: f64, bound: Duration) {
        let line = &self.line;
        let t = &self.target;
        let (lo, hi) = (0.8 * want, 1.2 * want);
        assert!(self.first_backoff.is_some(), "never backed off: {line}");
        if full_tier() {
            assert!(
                self.tail.0 >= lo && self.tail.1 <= hi,
                "the offer did not settle within ±20% of {want}: {line}"
            );
        } else {
            // The fast tier stops at the first figure: its tail may still
            // hold the overshoot; after the back-off the offer stays within.
            assert!(
                self.top_after_backoff <= hi,
                "after the first back-off the offer went above {hi}: {line}"
            );
        }
        let c = t.capacity.unwrap_or_else(|| panic!("no capacity: {line}"));
        assert!(
            (lo..=hi).contains(&c),
            "capacity {c} not within ±20% of {want}: {line}"
        );
        assert_eq!(t.binding, Some("latency"), "{line}");
        assert!(t.verdict.contains("latency binds"), "{line}");
        let says = format!("p99 <= {}ms", bound.as_millis());
        assert!(t.verdict.contains(&says), "{line}");
        assert_eq!(t.observed_failure_ratio, Some(0.0), "{line}");
        assert_eq!(self.bound_metric, Some(bound.as_secs_f64()));
        let w = self
            .window_latency
            .expect("throttle_window_latency_seconds is exported");
        assert!(w.is_nan() || (w > 0.0 && w < 2.0), "window latency {w}");
        assert!(self.html.contains("id=\"latency-slo\""));
        assert!(self.html.contains("class=\"latency-bound\""));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locust_with_the_targets_histogram_finds_the_latency_capacity() {
    let _serial = serial().await;
    let t0 = Instant::now();
    let target = QueueingTarget::start(SLOTS, BASE).await;
    let want = target.concurrency_at(BOUND);
    let Some(mut locust) = Locust::start(LOCUSTFILE, &target.url(), 0, &[]).await else {
        return;
    };
    let config = locust_config(&locust.web, Some(&histogram_bound(&target.url())));
    let run = govern_slo("locust 1 process, histogram", &config, want, BOUND, t0).await;
    assert!(locust.all_running(), "Locust died:\n{}", locust.tails());
    drop(locust);
    run.assert_latency_binds(want, BOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_with_its_remote_written_native_histogram_finds_the_latency_capacity() {
    let _serial = serial().await;
    if !require_tool("prometheus") {
        return;
    }
    let t0 = Instant::now();
    let prom = Prometheus::start_receiver_with(&["--enable-feature=native-histograms"]);
    let target = QueueingTarget::start(SLOTS, BASE).await;
    let want = target.concurrency_at(BOUND);
    let env = [
        ("K6_PROMETHEUS_RW_SERVER_URL", prom.write_url()),
        ("K6_PROMETHEUS_RW_PUSH_INTERVAL", "1s".to_string()),
        (
            "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM",
            "true".to_string(),
        ),
    ];
    let work = format!("{}/work", target.url());
    let Some(mut k6) = K6::start(&work, &["-o", "experimental-prometheus-rw"], &env).await else {
        return;
    };
    let head = target_head("slo", 40, "3s", None);
    let (api, prom_url) = (&k6.api, prom.url());
    let config = format!(
        r#"{head}
[targets.signal]
kind = "k6"
url = "{api}"
failures = "failed_attempts"

[targets.control]
kind = "k6"
url = "{api}"

[targets.latency]
quantile = 0.99
bound = "{}ms"
query = 'histogram_quantile(0.99, sum(rate(k6_http_req_duration_seconds[{{{{window}}}}])))'
url = "{prom_url}"
"#,
        BOUND.as_millis()
    );
    let run = govern_slo(
        "k6 REST, native histogram via PromQL",
        &config,
        want,
        BOUND,
        t0,
    )
    .await;
    assert!(k6.proc.running(), "k6 died:\n{}", k6.proc.tail());
    drop(k6);
    drop(prom);
    run.assert_latency_binds(want, BOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goose_with_its_own_response_times_finds_the_latency_capacity() {
    let _serial = serial().await;
    let t0 = Instant::now();
    // Goose measures on the client, tens of milliseconds above the
    // target's own time on this shared machine: a slower target keeps that
    // a small share of the bound (200 ms base, bound 620 ms: 15.5 users).
    let bound = BOUND;
    let target = QueueingTarget::start(SLOTS, BASE).await;
    let want = target.concurrency_at(bound);
    let Some(mut goose) = Goose::start(&target.url()).await else {
        return;
    };
    let head = target_head("slo", 40, "3s", None);
    let ws = &goose.ws;
    // signal_lag: without it, one run's first window at 14 users after the
    // back-off from 16 read a p99 of 647 ms (settled, 14 users read 565 ms),
    // so it backed off again to 12 and settled at 13; Goose's users drop at
    // once, so the old offer's latencies reach its metrics later than its
    // counters suggest. One window of lag keeps them out.
    let config = format!(
        r#"{head}
signal_lag = "3s"

[targets.signal]
kind = "goose"
url = "{ws}"

[targets.control]
kind = "goose"
url = "{ws}"

[targets.latency]
quantile = 0.99
bound = "{}ms"
goose = true
"#,
        bound.as_millis()
    );
    let run = govern_slo("goose, its response-time buckets", &config, want, bound, t0).await;
    assert!(goose.proc.running(), "Goose died:\n{}", goose.proc.tail());
    drop(goose);
    run.assert_latency_binds(want, bound);
}

/// Locust with p99 added to its charted percentiles, so that its rolling
/// `current_response_time_percentiles` can bound p99.
const LOCUSTFILE_P99: &str = r#"
import locust.stats
from locust import FastHttpUser, constant, task

locust.stats.PERCENTILES_TO_CHART = [0.5, 0.99]


class Hit(FastHttpUser):
    wait_time = constant(0)

    @task
    def hit(self):
        self.client.get("/")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locust_with_its_own_rolling_percentile_finds_the_latency_capacity() {
    let _serial = serial().await;
    let t0 = Instant::now();
    let target = QueueingTarget::start(SLOTS, BASE).await;
    let want = target.concurrency_at(BOUND);
    let Some(mut locust) = Locust::start(LOCUSTFILE_P99, &target.url(), 0, &[]).await else {
        return;
    };
    let bound = format!(
        "\n[targets.latency]\nquantile = 0.99\nbound = \"{}ms\"\nlocust = true\n",
        BOUND.as_millis()
    );
    let config = locust_config(&locust.web, Some(&bound));
    let run = govern_slo(
        "locust 1 process, its rolling percentile",
        &config,
        want,
        BOUND,
        t0,
    )
    .await;
    assert!(locust.all_running(), "Locust died:\n{}", locust.tails());
    drop(locust);
    run.assert_latency_binds(want, BOUND);
}

/// The control experiment: without the bound, the same queueing target
/// never fails, so the seed rules' attempt plane climbs to the ceiling
/// while every request takes 800 ms. This is what the latency bound exists
/// for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_latency_bound_the_same_target_is_driven_to_the_ceiling() {
    let _serial = serial().await;
    let target = QueueingTarget::start(SLOTS, BASE).await;
    let Some(locust) = Locust::start(LOCUSTFILE, &target.url(), 0, &[]).await else {
        return;
    };
    // The seed rules see failures only: a queue that never fails is climbed
    // to the ceiling. (The default profile's plateau rule stops where the
    // successes stop following the offer; the bound is for an SLO.)
    let text =
        locust_config(&locust.web, None).replace("floor = 1\n", "floor = 1\nprofile = \"seed\"\n");
    assert!(text.contains("profile = \"seed\""), "{text}");
    let cfg = Config::parse(&text).unwrap();
    support::real::decision_log("latency: no bound");
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
        "without a latency bound the seed rules should climb to the ceiling of 40 on a target that never fails"
    );
}
