//! The fault matrix: every way a load tool can fail the controller, over
//! real sockets on 127.0.0.1. For each fault: no panic, no Up decided on an
//! invalid window, the right `error_type` counted, the signal-loss policy
//! applied (default: floor after 3 invalid windows), and recovery once the
//! fault clears. docs/RELIABILITY.md lists the matrix.

use crate::support;

use std::future::Future;
use std::time::{Duration, Instant};

use support::{metric, raw_server, target_status, FakeTool, Fault, RawMode};
use throttle_governor::config::Config;
use throttle_governor::runtime::supervisor::{self, RunOptions, Running};

const WINDOW_MS: u64 = 100;

async fn wait_for<F, Fut>(limit: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

async fn start(tool: &FakeTool, extra: &str, signal_url: Option<String>) -> Running {
    let mut toml = tool.target_toml("t", 200, WINDOW_MS, extra);
    if let Some(url) = signal_url {
        toml = toml.replace(&tool.url("/metrics"), &url);
    }
    let cfg = Config::parse(&format!("[server]\nlisten = \"127.0.0.1:0\"\n{toml}")).unwrap();
    supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap()
}

async fn ups(ctl: std::net::SocketAddr) -> f64 {
    metric(ctl, r#"throttle_decisions_total{target="t",decision="up"}"#)
        .await
        .unwrap_or(0.0)
}

async fn errors(ctl: std::net::SocketAddr, error_type: &str) -> f64 {
    metric(
        ctl,
        &format!(r#"throttle_signal_errors_total{{target="t",error_type="{error_type}"}}"#),
    )
    .await
    .unwrap_or(0.0)
}

/// A signal fault injected mid-run into the fake tool, then cleared.
async fn signal_fault(fault: Fault, error_type: &str, extra: &str) {
    let tool = FakeTool::start(1000.0, 1.0).await;
    let running = start(&tool, extra, None).await;
    let ctl = running.addr;
    assert!(
        wait_for(Duration::from_secs(5), || async { tool.workers() >= 16.0 }).await,
        "never climbed before the fault"
    );

    tool.set_fault(fault.clone());
    assert!(
        wait_for(Duration::from_secs(5), || async {
            errors(ctl, error_type).await >= 1.0
        })
        .await,
        "{fault:?}: error_type {error_type} never counted"
    );
    let ups_at_fault = ups(ctl).await;
    assert!(
        wait_for(Duration::from_secs(5), || async {
            metric(ctl, r#"throttle_signal_lost{target="t"}"#).await == Some(1.0)
        })
        .await,
        "{fault:?}: signal loss never declared"
    );
    // The policy: floor.
    assert!(
        wait_for(Duration::from_secs(3), || async { tool.workers() == 1.0 }).await,
        "{fault:?}: floor not applied, tool at {}",
        tool.workers()
    );
    assert_eq!(target_status(ctl, "t").await["signal_lost"], true);
    tokio::time::sleep(Duration::from_millis(3 * WINDOW_MS)).await;
    assert_eq!(
        ups(ctl).await,
        ups_at_fault,
        "{fault:?}: an Up was decided on an invalid window"
    );
    assert!(errors(ctl, error_type).await >= 3.0);

    // Recovery: the first window after the fault clears is valid again.
    tool.set_fault(Fault::None);
    let cleared = Instant::now();
    assert!(
        wait_for(Duration::from_secs(3), || async {
            metric(ctl, r#"throttle_signal_lost{target="t"}"#).await == Some(0.0)
        })
        .await,
        "{fault:?}: never recovered"
    );
    let took = cleared.elapsed();
    assert!(
        took <= Duration::from_millis(5 * WINDOW_MS),
        "{fault:?}: recovery took {took:?}"
    );
    // Memory intact and climbing resumes from the committed floor.
    assert!(wait_for(Duration::from_secs(3), || async { tool.workers() > 1.0 }).await);
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_500() {
    signal_fault(Fault::MetricsStatus(500), "http_status", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_503() {
    signal_fault(Fault::MetricsStatus(503), "http_status", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_text() {
    signal_fault(Fault::Garbage, "parse", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_scrape_times_out() {
    signal_fault(Fault::SlowMetrics(Duration::from_secs(2)), "timeout", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_series() {
    signal_fault(Fault::MissingFailures, "missing_series", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nan_counters() {
    signal_fault(Fault::NanCounters, "non_finite", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inf_counters() {
    signal_fault(Fault::InfCounters, "non_finite", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_counters() {
    signal_fault(Fault::NegativeCounters, "negative", "").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_body() {
    // The limit is lowered so the test stays small; the default is 16 MiB.
    let extra_signal = "max_body_bytes = 4096";
    let tool = FakeTool::start(1000.0, 1.0).await;
    let mut toml = tool.target_toml("t", 200, WINDOW_MS, "");
    toml = toml.replace(
        "timeout = \"500ms\"\n\n[targets.control]",
        &format!("timeout = \"500ms\"\n{extra_signal}\n\n[targets.control]"),
    );
    let cfg = Config::parse(&format!("[server]\nlisten = \"127.0.0.1:0\"\n{toml}")).unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    assert!(wait_for(Duration::from_secs(5), || async { tool.workers() >= 16.0 }).await);
    tool.set_fault(Fault::OversizeBody(10_000));
    assert!(
        wait_for(Duration::from_secs(5), || async {
            metric(ctl, r#"throttle_signal_lost{target="t"}"#).await == Some(1.0)
        })
        .await
    );
    assert!(errors(ctl, "too_large").await >= 3.0);
    assert!(wait_for(Duration::from_secs(3), || async { tool.workers() == 1.0 }).await);
    tool.set_fault(Fault::None);
    assert!(
        wait_for(Duration::from_secs(3), || async {
            metric(ctl, r#"throttle_signal_lost{target="t"}"#).await == Some(0.0)
        })
        .await
    );
    running.shutdown(Duration::from_secs(5)).await;
}

/// A signal that never answers at all: the policy still applies.
async fn dead_signal(url: String, error_type: &str) {
    let tool = FakeTool::start(1000.0, 1.0).await;
    let running = start(&tool, "start = 20", Some(url)).await;
    let ctl = running.addr;
    assert!(
        wait_for(Duration::from_secs(8), || async {
            errors(ctl, error_type).await >= 3.0
        })
        .await,
        "error_type {error_type} not counted"
    );
    assert!(
        wait_for(Duration::from_secs(3), || async { tool.workers() == 1.0 }).await,
        "floor not applied: {}",
        tool.workers()
    );
    assert_eq!(ups(ctl).await, 0.0, "an Up without any valid window");
    assert_eq!(target_status(ctl, "t").await["has_baseline"], false);
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_refused() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    dead_signal(format!("http://127.0.0.1:{port}/metrics"), "connect").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_but_never_answered() {
    let addr = raw_server(RawMode::Hang).await;
    dead_signal(format!("http://{addr}/metrics"), "timeout").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_body() {
    let addr = raw_server(RawMode::SlowBody).await;
    dead_signal(format!("http://{addr}/metrics"), "timeout").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counter_reset_holds_and_rebases() {
    let tool = FakeTool::start(1000.0, 1.0).await;
    let running = start(&tool, "", None).await;
    let ctl = running.addr;
    // Run at the ceiling for a while, so the totals are far above one
    // window's worth: a reset is only visible when the counters, restarted
    // from zero, are still below the baseline at the next read.
    assert!(wait_for(Duration::from_secs(5), || async { tool.workers() >= 200.0 }).await);
    tokio::time::sleep(Duration::from_millis(5 * WINDOW_MS)).await;
    {
        // Counters go to zero, the knob is untouched: a reset, not a restart.
        let mut st = tool.state.lock().unwrap();
        st.attempts = 0.0;
        st.failures = 0.0;
    }
    assert!(
        wait_for(Duration::from_secs(3), || async {
            metric(ctl, r#"throttle_signal_resets_total{target="t"}"#).await >= Some(1.0)
        })
        .await,
        "reset not detected: {}",
        support::get_text(&format!("http://{ctl}/metrics")).await
    );
    let resets = metric(
        ctl,
        r#"throttle_decisions_total{target="t",decision="hold",reason="counter-reset"}"#,
    )
    .await;
    assert_eq!(resets, Some(1.0));
    assert_eq!(
        metric(ctl, r#"throttle_tool_restarts_total{target="t"}"#).await,
        Some(0.0)
    );
    // Governing goes on from the rebased baseline: valid windows again.
    let holds = metric(
        ctl,
        r#"throttle_decisions_total{target="t",decision="hold",reason="at-ceiling"}"#,
    )
    .await
    .unwrap_or(0.0);
    assert!(
        wait_for(Duration::from_secs(3), || async {
            metric(
                ctl,
                r#"throttle_decisions_total{target="t",decision="hold",reason="at-ceiling"}"#,
            )
            .await
            .unwrap_or(0.0)
                > holds
        })
        .await
    );
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_restart_republishes_the_committed_offer() {
    let tool = FakeTool::start(40.0, 1.0).await;
    let running = start(&tool, "", None).await;
    let ctl = running.addr;
    // Settle near capacity with congestion memory.
    assert!(
        wait_for(Duration::from_secs(10), || async {
            target_status(ctl, "t").await["last_bad"].is_number() && tool.workers() <= 50.0
        })
        .await
    );
    tokio::time::sleep(Duration::from_millis(10 * WINDOW_MS)).await;
    let before = tool.workers();
    let last_bad = target_status(ctl, "t").await["last_bad"].as_f64().unwrap();
    // The tool restarts: counters to zero and its own default of 200 workers.
    tool.restart(200.0);
    assert!(
        wait_for(Duration::from_secs(3), || async {
            metric(ctl, r#"throttle_tool_restarts_total{target="t"}"#).await == Some(1.0)
        })
        .await,
        "restart not detected"
    );
    assert!(
        wait_for(Duration::from_secs(3), || async {
            (tool.workers() - before).abs() <= 2.0
        })
        .await,
        "committed offer {before} not re-published; tool at {}",
        tool.workers()
    );
    // No silent slow start: memory intact, no outside-change adoption of 200.
    let st = target_status(ctl, "t").await;
    assert_eq!(st["last_bad"].as_f64(), Some(last_bad), "{st}");
    assert_eq!(
        metric(ctl, r#"throttle_outside_changes_total{target="t"}"#).await,
        Some(0.0)
    );
    running.shutdown(Duration::from_secs(5)).await;
}

/// A control fault: the write is refused or lost; counted, never a panic,
/// and writes are confirmed again once the fault clears.
async fn control_fault(fault: Fault, selector: &str) {
    let tool = FakeTool::start(1000.0, 1.0).await;
    let running = start(&tool, "", None).await;
    let ctl = running.addr;
    assert!(wait_for(Duration::from_secs(5), || async { tool.workers() >= 4.0 }).await);
    tool.set_fault(fault.clone());
    assert!(
        wait_for(Duration::from_secs(8), || async {
            metric(ctl, selector).await.unwrap_or(0.0) >= 1.0
        })
        .await,
        "{fault:?}: {selector} never counted"
    );
    // The signal stays valid throughout.
    assert_eq!(
        metric(ctl, r#"throttle_signal_lost{target="t"}"#).await,
        Some(0.0)
    );
    tool.set_fault(Fault::None);
    let confirmed = metric(
        ctl,
        r#"throttle_control_writes_total{target="t",result="confirmed"}"#,
    )
    .await
    .unwrap();
    assert!(
        wait_for(Duration::from_secs(5), || async {
            metric(
                ctl,
                r#"throttle_control_writes_total{target="t",result="confirmed"}"#,
            )
            .await
            .unwrap()
                > confirmed
        })
        .await,
        "{fault:?}: writes never confirmed again"
    );
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_4xx() {
    control_fault(
        Fault::AdminStatus(403),
        r#"throttle_control_errors_total{target="t",error_type="http_4xx"}"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_5xx() {
    control_fault(
        Fault::AdminStatus(502),
        r#"throttle_control_errors_total{target="t",error_type="http_5xx"}"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_timeout() {
    control_fault(
        Fault::SlowWrites(Duration::from_secs(2)),
        r#"throttle_control_errors_total{target="t",error_type="timeout"}"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_accepted_but_never_applied() {
    control_fault(
        Fault::IgnoreWrites,
        r#"throttle_control_writes_total{target="t",result="unconfirmed"}"#,
    )
    .await;
}
