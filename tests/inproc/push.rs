//! `signal.kind = "push"`: real push clients (`curl`, and Python's
//! `prometheus_client.push_to_gateway`) push to the controller's own
//! listener, and the pushed sequences form the expected windows, both as
//! cumulative counters and as per-push deltas.

use crate::support;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{get_text, FakeTool};
use throttle_governor::config::Config;
use throttle_governor::runtime::supervisor::{self, RunOptions};
use throttle_governor::telemetry::{Telemetry, WindowRecord};

pub(crate) fn push_target(name: &str, tool: &FakeTool, signal: &str) -> String {
    format!(
        r#"
[[targets]]
name = "{name}"
knob = "concurrency"
ceiling = 1000
floor = 1
high = 0.5
window = "1s"
# These tests check what pushes add up to; each push is the load at once.
signal_lag = "0s"

[targets.signal]
kind = "push"
max_age = "1m"
{signal}

[targets.control]
kind = "http"
url = "{admin}"
body = '{{"workers": {{{{value}}}}}}'
[targets.control.read_back]
url = "{admin}"
json_pointer = "/workers"
"#,
        admin = tool.url("/admin/workers"),
    )
}

/// Pushes `body` with curl; returns the HTTP status.
pub(crate) fn curl(method: &str, url: &str, body: &str, extra: &[&str]) -> u16 {
    let out = Command::new("curl")
        .args([
            "-s",
            "-m",
            "5",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-X",
            method,
        ])
        .args(extra)
        .args(["--data-binary", "@-", url])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(body.as_bytes())?;
            child.wait_with_output()
        })
        .expect("curl");
    String::from_utf8_lossy(&out.stdout).parse().unwrap_or(0)
}

pub(crate) fn counters(attempts: f64, failures: f64) -> String {
    format!(
        "# TYPE nb_ops_total counter\nnb_ops_total{{result=\"ok\"}} {}\nnb_ops_total{{result=\"error\"}} {failures}\n",
        attempts - failures
    )
}

/// The target's history without the windows discarded for straddling an
/// offer change (after each movement; the engine's attribution).
pub(crate) fn attributable(tel: &Arc<Telemetry>, name: &str) -> Vec<WindowRecord> {
    tel.history(name)
        .into_iter()
        .filter(|r| !r.discarded)
        .collect()
}

/// Waits for the target's next attributable record after `after` of them
/// and returns it.
async fn next_record(tel: &Arc<Telemetry>, name: &str, after: usize) -> WindowRecord {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let h = attributable(tel, name);
        if h.len() > after {
            return h[after].clone();
        }
        assert!(Instant::now() < deadline, "no window recorded for {name}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sums (attempts, failures) over the target's windows from `after` on until
/// the attempts reach `want` (bounded); returns the sums and the index of
/// the first window after them.
async fn traffic_since(
    tel: &Arc<Telemetry>,
    name: &str,
    after: usize,
    want: f64,
) -> ((f64, f64), usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let h = attributable(tel, name);
        let (mut a, mut f) = (0.0, 0.0);
        for (i, r) in h.iter().enumerate().skip(after) {
            a += r.attempts.unwrap_or(0.0);
            f += r.failures.unwrap_or(0.0);
            if a >= want {
                return ((a, f), i + 1);
            }
        }
        assert!(
            Instant::now() < deadline,
            "{name}: {a} of {want} attempts counted: {:?}",
            &h[after.min(h.len())..]
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until the target has recorded its baseline; returns the history length.
async fn wait_baseline(tel: &Arc<Telemetry>, name: &str) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let h = attributable(tel, name);
        if h.iter().any(|r| r.label == "baseline") {
            return h.len();
        }
        assert!(
            Instant::now() < deadline,
            "{name} never set its baseline: {h:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub(crate) async fn start(targets: &str, server_extra: &str) -> supervisor::Running {
    let cfg = Config::parse(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{server_extra}\n{targets}"
    ))
    .unwrap();
    supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_pushes_form_cumulative_and_per_push_delta_windows() {
    if !support::require_tool("curl") {
        return;
    }
    let (t1, t2) = (
        FakeTool::start(1e6, 1.0).await,
        FakeTool::start(1e6, 1.0).await,
    );
    let targets = push_target(
        "cum",
        &t1,
        "job = \"nb\"\nattempts = 'nb_ops_total'\nfailures = 'nb_ops_total{result=\"error\"}'\ncumulative = true",
    ) + &push_target(
        "delta",
        &t2,
        "job = \"artillery\"\nlabels = { env = \"ci\" }\nattempts = 'nb_ops_total'\nfailures = 'nb_ops_total{result=\"error\"}'\ncumulative = false",
    );
    let running = start(&targets, "").await;
    let ctl: SocketAddr = running.addr;
    let tel = running.telemetry.clone();
    let url = |path: &str| format!("http://{ctl}/metrics/job/{path}");

    // Nothing pushed yet: no signal.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(tel.history("cum").iter().all(|r| r.label == "signal-error"));

    // First pushes set the baselines.
    assert_eq!(
        curl("PUT", &url("nb/instance/w1"), &counters(100.0, 5.0), &[]),
        200
    );
    assert_eq!(
        curl(
            "POST",
            &url("artillery/env/ci/pod/p1"),
            &counters(50.0, 5.0),
            &[]
        ),
        200
    );
    let n_cum = wait_baseline(&tel, "cum").await;
    let n_delta = wait_baseline(&tel, "delta").await;

    // Cumulative: the window is the difference of the two pushes. Two
    // pushers of one job are summed.
    assert_eq!(
        curl("PUT", &url("nb/instance/w1"), &counters(300.0, 15.0), &[]),
        200
    );
    // Per-push deltas: two pushes in one window add up.
    assert_eq!(
        curl(
            "POST",
            &url("artillery/env/ci/pod/p1"),
            &counters(20.0, 2.0),
            &[]
        ),
        200
    );
    assert_eq!(
        curl(
            "POST",
            &url("artillery/env/ci/pod/p2"),
            &counters(30.0, 3.0),
            &[]
        ),
        200
    );
    // (Under load a window may close between two pushes, or between the
    // baseline and the next push: the pushes are summed over the windows
    // that carry them, and nothing else may be counted.)
    let (counts, n_cum) = traffic_since(&tel, "cum", n_cum, 200.0).await;
    assert_eq!(counts, (200.0, 10.0));
    let (counts, n_delta) = traffic_since(&tel, "delta", n_delta, 50.0).await;
    assert_eq!(counts, (50.0, 5.0));

    // A window without pushes: cumulative sees no traffic, deltas see none.
    let w = next_record(&tel, "cum", n_cum).await;
    assert_eq!(w.attempts, Some(0.0), "{w:?}");
    let w = next_record(&tel, "delta", n_delta).await;
    assert_eq!(w.attempts, Some(0.0), "{w:?}");

    // Refusals: unknown job, other grouping labels, garbage, protobuf.
    assert_eq!(curl("PUT", &url("other"), &counters(1.0, 0.0), &[]), 404);
    assert_eq!(
        curl("PUT", &url("artillery/env/prod"), &counters(1.0, 0.0), &[]),
        404
    );
    assert_eq!(curl("PUT", &url("nb/instance/w1"), "<html>", &[]), 400);
    assert_eq!(
        curl(
            "PUT",
            &url("nb"),
            "x",
            &["-H", "Content-Type: application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"]
        ),
        415
    );
    // A delta push lacking the failure series cannot be split: refused.
    assert_eq!(
        curl(
            "POST",
            &url("artillery/env/ci"),
            "nb_ops_total{result=\"ok\"} 5\n",
            &[]
        ),
        422
    );
    // Bodies beyond the server's 64 KiB default for other routes are fine
    // up to [server.push] max_body_bytes (1 MiB by default).
    let big: String = (0..4000)
        .map(|i| format!("nb_ops_total{{result=\"ok\",shard=\"{i}\"}} 1\n"))
        .collect::<String>()
        + "nb_ops_total{result=\"error\"} 0\n";
    assert!(big.len() > 128 * 1024);
    assert_eq!(curl("PUT", &url("nb/instance/w2"), &big, &[]), 200);
    let m = get_text(&format!("http://{ctl}/metrics")).await;
    assert!(
        m.contains("throttle_push_requests_total{result=\"accepted\"} 6"),
        "{m}"
    );
    assert!(
        m.contains("throttle_push_requests_total{result=\"no_target\"} 2"),
        "{m}"
    );
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_token_and_size_limit_guard_the_push_endpoint() {
    if !support::require_tool("curl") {
        return;
    }
    let dir = support::TempDir::new("push-token");
    let token = dir.path("token");
    std::fs::write(&token, "s3cret\n").unwrap();
    let tool = FakeTool::start(1e6, 1.0).await;
    let targets = push_target(
        "guarded",
        &tool,
        "job = \"nb\"\nattempts = 'nb_ops_total'\nfailures = 'nb_ops_total{result=\"error\"}'\ncumulative = true",
    );
    let server = format!(
        "[server.push]\nmax_body_bytes = 4096\nbearer_token_file = \"{}\"",
        token.display()
    );
    let running = start(&targets, &server).await;
    let url = format!("http://{}/metrics/job/nb", running.addr);
    let body = counters(10.0, 1.0);
    assert_eq!(curl("PUT", &url, &body, &[]), 401);
    assert_eq!(
        curl("PUT", &url, &body, &["-H", "Authorization: Bearer wrong"]),
        401
    );
    assert_eq!(
        curl("PUT", &url, &body, &["-H", "Authorization: Bearer s3cret"]),
        200
    );
    let big = "nb_ops_total{result=\"ok\"} 1\n".repeat(400);
    assert_eq!(
        curl("PUT", &url, &big, &["-H", "Authorization: Bearer s3cret"]),
        413
    );
    let m = get_text(&format!("http://{}/metrics", running.addr)).await;
    assert!(
        m.contains("throttle_push_requests_total{result=\"unauthorized\"} 2"),
        "{m}"
    );
    assert!(
        m.contains("throttle_push_requests_total{result=\"too_large\"} 1"),
        "{m}"
    );
    running.shutdown(Duration::from_secs(5)).await;
}

/// The repo's `.venv` Python with prometheus_client (scripts/setup makes it).
fn python() -> Option<PathBuf> {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    let ok = Command::new(&py)
        .args(["-c", "import prometheus_client"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if ok {
        return Some(py);
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "{} with prometheus_client is required when CI=true; scripts/setup creates it",
            py.display()
        );
    }
    eprintln!("SKIP: .venv/bin/python with prometheus_client missing (run scripts/setup)");
    None
}

const PUSH_SCRIPT: &str = r#"
import sys
from prometheus_client import CollectorRegistry, Counter, push_to_gateway
gateway, attempts, failures = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
registry = CollectorRegistry()
a = Counter("bench_attempts", "Resolved attempts", registry=registry)
f = Counter("bench_failures", "Failed attempts", registry=registry)
a.inc(attempts)
f.inc(failures)
# A grouping value with a slash goes over the wire base64-encoded.
push_to_gateway(gateway, job="bench", registry=registry, grouping_key={"worker": "host/1"})
"#;

fn python_push(py: &PathBuf, gateway: &str, attempts: f64, failures: f64) {
    let out = Command::new(py)
        .args([
            "-c",
            PUSH_SCRIPT,
            gateway,
            &attempts.to_string(),
            &failures.to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "push_to_gateway failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_push_to_gateway_forms_windows() {
    let Some(py) = python() else { return };
    let tool = FakeTool::start(1e6, 1.0).await;
    let targets = push_target(
        "bench",
        &tool,
        "job = \"bench\"\nlabels = { worker = \"host/1\" }\nattempts = 'bench_attempts_total'\nfailures = 'bench_failures_total'\ncumulative = true",
    );
    let running = start(&targets, "").await;
    let tel = running.telemetry.clone();
    let gateway = running.addr.to_string();
    python_push(&py, &gateway, 1000.0, 10.0);
    let n = wait_baseline(&tel, "bench").await;
    python_push(&py, &gateway, 1600.0, 40.0);
    // Python takes about a second to start: windows before the second push
    // see no traffic; the first one with traffic holds the push's delta.
    let mut i = n;
    let w = loop {
        let w = next_record(&tel, "bench", i).await;
        if w.attempts != Some(0.0) {
            break w;
        }
        i += 1;
    };
    assert_eq!((w.attempts, w.failures), (Some(600.0), Some(30.0)), "{w:?}");
    assert_eq!(w.frac, Some(0.05));
    running.shutdown(Duration::from_secs(5)).await;
}
