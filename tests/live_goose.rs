//! Live Goose: a tiny Goose load test (tests/goose-harness, its own package,
//! built by scripts/setup) runs with its WebSocket controller on 127.0.0.1
//! against a loopback target that answers 503 above a known concurrency;
//! the controller governs it through `kind = "goose"` and must climb, back
//! off, and settle near the limit. Bounded to 90 s; Goose is killed on
//! every exit path (a Drop guard).

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::{
    assert_governed, free_port, get_text, offers, require_installed, wait_until, watch_governed,
    ChildGuard, LimitedTarget, TempDir,
};
use throttle_governor::adapters::goose;
use throttle_governor::config::Config;
use throttle_governor::supervisor::{self, RunOptions};

/// Concurrent requests the target admits.
const LIMIT: usize = 12;

/// Where scripts/setup puts the harness binary.
fn harness_path(repo: &Path) -> PathBuf {
    if let Ok(bin) = std::env::var("GOOSE_HARNESS") {
        return PathBuf::from(bin);
    }
    let dir = std::env::var("GOOSE_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo.join("target/goose-harness"));
    dir.join("debug/goose-harness")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goose_is_governed_to_the_target_limit() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(harness) = require_installed(
        "goose-harness",
        &harness_path(repo),
        "scripts/setup builds tests/goose-harness (set GOOSE_TARGET_DIR to its target dir)",
    ) else {
        return;
    };
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(85);
    let target = LimitedTarget::start(LIMIT, Duration::from_millis(100)).await;
    let tmp = TempDir::new("goose");
    let dir = tmp.0.clone();
    let port = free_port();
    let mut cmd = Command::new(&harness);
    cmd.current_dir(&dir).args([
        "--host",
        &target.url(),
        "--users",
        "1",
        // Also the decrease rate: without --decrease-rate, Goose stops users
        // at the increase rate (and --decrease-rate alone, with no
        // --run-time, ramps the test down at once).
        "--increase-rate",
        "20",
        "--websocket",
        "--websocket-host",
        "127.0.0.1",
        "--websocket-port",
        &port.to_string(),
        "--no-telnet",
        "--no-reset-metrics",
        "--no-print-metrics",
        "--quiet",
    ]);
    let mut goose_proc = ChildGuard::spawn("goose", cmd, dir.join("goose.log"));
    let ws = format!("ws://127.0.0.1:{port}");
    let up = wait_until(Duration::from_secs(30), || {
        let ws = ws.clone();
        async move {
            goose::request(&ws, "config-json", Duration::from_secs(1))
                .await
                .is_ok()
        }
    })
    .await;
    assert!(
        up,
        "Goose's WebSocket controller never came up:\n{}",
        goose_proc.tail()
    );
    let startup = t0.elapsed();

    let config = Config::parse(&format!(
        r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "goose"
knob = "concurrency"
ceiling = 40
floor = 1
high = 0.05
window = "2s"

[targets.signal]
kind = "goose"
url = "{ws}"

[targets.control]
kind = "goose"
url = "{ws}"
"#
    ))
    .unwrap();
    let running = supervisor::start(&config, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let seen = watch_governed(
        ctl,
        "goose",
        LIMIT as f64,
        Duration::from_secs(20),
        deadline,
    )
    .await;
    assert!(
        goose_proc.running(),
        "Goose died (path {:?}):\n{}",
        offers(&seen),
        goose_proc.tail()
    );
    let metrics = get_text(&format!("http://{ctl}/metrics")).await;
    running.shutdown(Duration::from_secs(5)).await;
    drop(goose_proc);

    let (min, max, mean) = assert_governed(&seen, LIMIT as f64, Duration::from_secs(10));
    eprintln!(
        "live goose: limit {LIMIT}; path {:?}; settled {min}..{max} (mean {mean:.1}) over the last 10 s; \
         startup {:.1}s, governed {:.1}s, total {:.1}s; target served {} and rejected {}, peak in flight {}",
        offers(&seen),
        startup.as_secs_f64(),
        seen.last().unwrap().at,
        t0.elapsed().as_secs_f64(),
        target.served.load(std::sync::atomic::Ordering::Relaxed),
        target.rejected.load(std::sync::atomic::Ordering::Relaxed),
        target.peak.load(std::sync::atomic::Ordering::Relaxed),
    );
    assert!(
        support::sum_in(
            &metrics,
            "throttle_decisions_total{target=\"goose\",decision=\"down\",mode=\"backing-off\"}"
        )
        .unwrap_or(0.0)
            >= 1.0,
        "{metrics}"
    );
    assert!(
        support::sum_in(
            &metrics,
            "throttle_control_writes_total{target=\"goose\",result=\"confirmed\"}"
        )
        .unwrap_or(0.0)
            >= 1.0,
        "{metrics}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(90),
        "took {:?}",
        t0.elapsed()
    );
}
