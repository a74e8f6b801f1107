//! Python harnesses governed through the pull control, pacing themselves
//! with the documented helper, `docs/tools/clients/throttle_pull.py`, and
//! counting attempts and failures with `prometheus_client` on 127.0.0.1 for
//! a `kind = "prometheus"` signal (both run by the `.venv` Python):
//!
//! - by concurrency (the helper's `Offer.allows(n)`: worker n works while
//!   n is within the offer), with the config a new user writes (no
//!   `profile` key, window 3 s) against a loopback wall of 10 concurrent
//!   requests: the fast tier at the 10 ms wall, the goal runs at both walls
//!   (full tier), judged by `support::goals`;
//! - by rate (the helper's `TokenBucket`) against a target that answers 429
//!   above a known request rate: the offer must climb, back off, and settle
//!   within ±20 % of that rate; the target's own count gives the rate it
//!   actually received, and the report its capacity figure. Bounded to
//!   120 s.
//!
//! Each harness is killed on every exit path (a Drop guard).

use crate::support;

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use support::goals::{run_path, Length, Rig, Wall, CEILING};
use support::pull::{assert_within_20, documented_client, repo, wait_http, RateLimitedTarget};
use support::{
    assert_governed, free_port, offers, require_installed, scratch_dir, watch_governed, ChildGuard,
    TempDir,
};
use throttle_governor::config::Config;
use throttle_governor::report::{SteadyRule, TargetReport};
use throttle_governor::runtime::supervisor::{self, RunOptions};

/// Requests per second the target admits.
const LIMIT_RPS: usize = 40;

/// What both harnesses share: their arguments (the offer's URL, the
/// target's, the port of their `/metrics`, and one more), their counters,
/// and one counted request to the target.
const COUNTED_HITS: &str = r#"
import sys, threading, time, urllib.request
from prometheus_client import Counter, start_http_server
from throttle_pull import Offer, TokenBucket

offer_url, target_url, port, arg = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
attempts = Counter("harness_attempts", "Resolved attempts")
failures = Counter("harness_failures", "Failed attempts")
start_http_server(port, addr="127.0.0.1")


def hit():
    try:
        with urllib.request.urlopen(target_url, timeout=2) as res:
            res.read()
        ok = True
    except OSError:  # HTTPError (the 429s and 503s) included
        ok = False
    attempts.inc()
    if not ok:
        failures.inc()
"#;

/// By rate: a request per permit of the pulled offer's token bucket, for
/// argv[4] seconds.
const BY_RATE: &str = r#"
from concurrent.futures import ThreadPoolExecutor

bucket = TokenBucket(Offer(offer_url, client="py-harness"))
pool = ThreadPoolExecutor(max_workers=32)
end = time.monotonic() + arg
while time.monotonic() < end:
    bucket.take()
    pool.submit(hit)
"#;

/// By concurrency: worker n (1..=argv[4]) sends requests back to back, with
/// no think time, while n is within the pulled offer.
const BY_CONCURRENCY: &str = r#"
offer = Offer(offer_url, client="py-workers")


def work(n):
    while True:
        if offer.allows(n):
            hit()
        else:
            time.sleep(0.05)


for n in range(1, int(arg) + 1):
    threading.Thread(target=work, args=(n,), daemon=True).start()
while True:
    time.sleep(60)
"#;

/// Writes a harness (`COUNTED_HITS` and `body`) and the documented helper
/// into `dir`; returns the harness's file name.
fn write_harness(dir: &std::path::Path, body: &str) -> &'static str {
    std::fs::copy(
        documented_client("throttle_pull.py"),
        dir.join("throttle_pull.py"),
    )
    .unwrap();
    std::fs::write(dir.join("harness.py"), format!("{COUNTED_HITS}{body}")).unwrap();
    "harness.py"
}

/// The signal (a harness's `/metrics` at `metrics_url`) and the control
/// (pulled) of either harness.
fn harness_tables(metrics_url: &str) -> String {
    format!(
        r#"[targets.signal]
kind = "prometheus"
url = "{metrics_url}"
attempts = 'harness_attempts_total'
failures = 'harness_failures_total'

[targets.control]
kind = "pull"
"#
    )
}

/// Starts the harness by concurrency against `target`, pulling from a
/// controller that will listen on a port chosen now.
async fn pulled_workers(target: String) -> Option<Rig> {
    let python = require_installed(
        "python (.venv)",
        &repo().join(".venv/bin/python"),
        "scripts/setup creates .venv/ with prometheus_client",
    )?;
    let dir = TempDir::new("pull-workers");
    let listen = format!("127.0.0.1:{}", free_port());
    let port = free_port();
    let mut cmd = Command::new(&python);
    cmd.current_dir(&dir.0)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(write_harness(&dir.0, BY_CONCURRENCY))
        .arg(format!("http://{listen}/api/v1/targets/pull/offer"))
        .arg(target)
        .arg(port.to_string())
        .arg(CEILING.to_string());
    let harness = ChildGuard::spawn("python workers", cmd, dir.path("harness.log"));
    let metrics_url = format!("http://127.0.0.1:{port}/metrics");
    let up = wait_http(&metrics_url, Duration::from_secs(20)).await;
    assert!(up, "the harness never served /metrics:\n{}", harness.tail());
    Some(Rig {
        name: "pull",
        path: "Python workers by concurrency through the pull control".to_string(),
        tables: harness_tables(&metrics_url),
        listen: Some(listen),
        procs: vec![Box::new(harness)],
        keep: vec![Box::new(dir)],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulled_workers_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Fast, pulled_workers).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulled_workers_goals_at_the_1ms_wall() {
    run_path(Wall::OneMs, Length::Goals { live: false }, pulled_workers).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulled_workers_goals_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Goals { live: false }, pulled_workers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_harness_is_governed_by_rate_through_pulls() {
    let Some(python) = require_installed(
        "python (.venv)",
        &repo().join(".venv/bin/python"),
        "scripts/setup creates .venv/ with prometheus_client",
    ) else {
        return;
    };
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(105);
    let target = RateLimitedTarget::start(LIMIT_RPS).await;
    let dir = scratch_dir("pull-python");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ctl = listener.local_addr().unwrap();
    let port = free_port();
    let mut cmd = Command::new(&python);
    cmd.current_dir(&dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg(write_harness(&dir, BY_RATE))
        .arg(format!("http://{ctl}/api/v1/targets/py/offer"))
        .arg(target.url())
        .arg(port.to_string())
        .arg("150");
    let mut harness = ChildGuard::spawn("python harness", cmd, dir.join("harness.log"));
    let metrics_url = format!("http://127.0.0.1:{port}/metrics");
    let up = wait_http(&metrics_url, Duration::from_secs(20)).await;
    assert!(up, "the harness never served /metrics:\n{}", harness.tail());

    let config = Config::parse(&format!(
        r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "py"
knob = "rate"
ceiling = 200
floor = 1
start = 3
high = 0.05
window = "3s"

{}"#,
        harness_tables(&metrics_url)
    ))
    .unwrap();
    support::real::decision_log("python harness, by rate");
    let running = supervisor::start(&config, RunOptions::default(), Some(listener))
        .await
        .unwrap();
    // A rate's back-off may land a hair above the limit (48 × (1 - frac)
    // with a measured frac): the crossing line is 5 % above it; the ±20 %
    // verdict below is against the limit itself.
    let line = LIMIT_RPS as f64 * 1.05;
    let seen = watch_governed(ctl, "py", line, Duration::from_secs(40), deadline).await;
    let (s0, r0) = (
        target.served.load(Ordering::Relaxed),
        target.rejected.load(Ordering::Relaxed),
    );
    let tail_t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(6)).await;
    let (s1, r1) = (
        target.served.load(Ordering::Relaxed),
        target.rejected.load(Ordering::Relaxed),
    );
    let received = ((s1 - s0) + (r1 - r0)) as f64 / tail_t0.elapsed().as_secs_f64();
    assert!(harness.running(), "the harness died:\n{}", harness.tail());
    let history = running.telemetry.history("py");
    let status = support::target_status(ctl, "py").await;
    let confirmed = support::metric(
        ctl,
        "throttle_control_writes_total{target=\"py\",result=\"confirmed\"}",
    )
    .await
    .unwrap_or(0.0);
    running.shutdown(Duration::from_secs(5)).await;
    drop(harness);
    let _ = std::fs::remove_dir_all(&dir);

    let (min, max, mean) = assert_governed(&seen, line, Duration::from_secs(18));
    assert_within_20(&seen, LIMIT_RPS as f64, Duration::from_secs(18));
    let report = TargetReport::new(
        "py",
        "rate",
        0.05,
        status["last_bad"].as_f64(),
        history,
        &SteadyRule::default(),
    );
    eprintln!(
        "pull python: limit {LIMIT_RPS}/s; path {:?}; last 18 s {min:.1}..{max:.1} (mean {mean:.1}, {:+.0}% of the limit); \
         received at the target over the last 6 s {received:.1}/s; {confirmed} confirmed offers; report: {}; total {:.1}s; served {s1} rejected {r1}",
        offers(&seen),
        (mean / LIMIT_RPS as f64 - 1.0) * 100.0,
        report.verdict,
        t0.elapsed().as_secs_f64(),
    );
    let capacity = report
        .steady_offer
        .filter(|_| report.within_bound)
        .unwrap_or_else(|| panic!("the report gives no capacity: {}", report.verdict));
    assert!(
        (capacity - LIMIT_RPS as f64).abs() <= 0.2 * LIMIT_RPS as f64,
        "capacity {capacity:.1}/s is not within 20% of {LIMIT_RPS}/s"
    );
    assert!(
        confirmed >= 3.0,
        "offers were not confirmed by pulls: {confirmed}"
    );
    assert!(
        (received - LIMIT_RPS as f64).abs() <= 0.2 * LIMIT_RPS as f64,
        "the target received {received:.1}/s, not within 20% of {LIMIT_RPS}/s"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(120),
        "took {:?}",
        t0.elapsed()
    );
}
