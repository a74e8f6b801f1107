//! A Python harness governed by rate through the pull control: the harness
//! (run by the `.venv` Python) paces its requests with the documented
//! helper, `docs/tools/clients/throttle_pull.py` (a token bucket driven by
//! the pulled offer), counts attempts and failures with `prometheus_client`,
//! and serves them on 127.0.0.1 for a `kind = "prometheus"` signal. The
//! target answers 429 above a known request rate. The offer must climb,
//! back off, and settle within ±20 % of that rate; the target's own count
//! gives the rate it actually received, and the report its capacity figure. Bounded to 120 s; the harness is
//! killed on every exit path (a Drop guard).

use crate::support;

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use support::pull::{assert_within_20, documented_client, repo, wait_http, RateLimitedTarget};
use support::{
    assert_governed, free_port, offers, require_installed, scratch_dir, watch_governed, ChildGuard,
};
use throttle_governor::config::Config;
use throttle_governor::report::{SteadyRule, TargetReport};
use throttle_governor::supervisor::{self, RunOptions};

/// Requests per second the target admits.
const LIMIT_RPS: usize = 40;

const HARNESS: &str = r#"
import sys, time, urllib.error, urllib.request
from concurrent.futures import ThreadPoolExecutor
from prometheus_client import Counter, start_http_server
from throttle_pull import Offer, TokenBucket

offer_url, target_url, port, duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
attempts = Counter("harness_attempts", "Resolved attempts")
failures = Counter("harness_failures", "Failed attempts")
start_http_server(port, addr="127.0.0.1")
bucket = TokenBucket(Offer(offer_url, client="py-harness"))
pool = ThreadPoolExecutor(max_workers=32)


def hit():
    try:
        with urllib.request.urlopen(target_url, timeout=2) as res:
            res.read()
        ok = True
    except OSError:  # HTTPError (the 429s) included
        ok = False
    attempts.inc()
    if not ok:
        failures.inc()


end = time.monotonic() + duration
while time.monotonic() < end:
    bucket.take()
    pool.submit(hit)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_harness_is_governed_by_rate_through_pulls() {
    let Some(python) = require_installed(
        "python (.venv)",
        &repo().join(".venv/bin/python"),
        "scripts/setup creates .venv/ with prometheus_client",
    ) else {
        return;
    };
    let helper = documented_client("throttle_pull.py");
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(105);
    let target = RateLimitedTarget::start(LIMIT_RPS).await;
    let dir = scratch_dir("pull-python");
    std::fs::copy(&helper, dir.join("throttle_pull.py")).unwrap();
    std::fs::write(dir.join("harness.py"), HARNESS).unwrap();

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ctl = listener.local_addr().unwrap();
    let port = free_port();
    let mut cmd = Command::new(&python);
    cmd.current_dir(&dir)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .arg("harness.py")
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

[targets.signal]
kind = "prometheus"
url = "{metrics_url}"
attempts = 'harness_attempts_total'
failures = 'harness_failures_total'

[targets.control]
kind = "pull"
"#
    ))
    .unwrap();
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
