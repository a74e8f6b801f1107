//! Live Locust: the real tool (installed by scripts/setup into `.venv/`)
//! runs with its web UI on 127.0.0.1 against a loopback target that answers
//! 503 above a known concurrency; the controller governs it through
//! `kind = "locust"` and must climb, back off, and settle near the limit.
//! Bounded to 90 s; Locust is killed on every exit path (a Drop guard).

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{
    assert_governed, free_port, get_text, offers, require_installed, wait_until, watch_governed,
    ChildGuard, LimitedTarget, TempDir,
};
use throttle_governor::config::Config;
use throttle_governor::supervisor::{self, RunOptions};

/// Concurrent requests the target admits.
const LIMIT: usize = 12;

const LOCUSTFILE: &str = r#"
from locust import FastHttpUser, constant, task


class Hit(FastHttpUser):
    # No think time: each user keeps one request in flight, so the
    # target's concurrency equals the user count.
    wait_time = constant(0)

    @task
    def hit(self):
        self.client.get("/")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locust_is_governed_to_the_target_limit() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let Some(locust) = require_installed(
        "locust",
        &repo.join(".venv/bin/locust"),
        "scripts/setup installs Locust from PyPI into .venv/",
    ) else {
        return;
    };
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(85);
    let target = LimitedTarget::start(LIMIT, Duration::from_millis(100)).await;
    let tmp = TempDir::new("locust");
    let dir = tmp.0.clone();
    let file = dir.join("locustfile.py");
    std::fs::write(&file, LOCUSTFILE).unwrap();
    let port = free_port();
    let mut cmd = Command::new(&locust);
    cmd.current_dir(&dir).args([
        "-f",
        file.to_str().unwrap(),
        "--web-host",
        "127.0.0.1",
        "--web-port",
        &port.to_string(),
        "--autostart",
        "--users",
        "1",
        "--spawn-rate",
        "10",
        "--host",
        &target.url(),
        "--loglevel",
        "WARNING",
    ]);
    let mut locust = ChildGuard::spawn("locust", cmd, dir.join("locust.log"));
    let web = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let up = wait_until(Duration::from_secs(30), || {
        let c = client.clone();
        let url = format!("{web}/stats/requests");
        async move {
            matches!(
                tokio::time::timeout(Duration::from_secs(2), c.get(&url).send()).await,
                Ok(Ok(r)) if r.status().is_success()
            )
        }
    })
    .await;
    assert!(up, "Locust's web UI never came up:\n{}", locust.tail());
    let startup = t0.elapsed();

    let config = Config::parse(&format!(
        r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "locust"
knob = "concurrency"
ceiling = 40
floor = 1
high = 0.05
window = "3s"

[targets.signal]
kind = "locust"
url = "{web}"

[targets.control]
kind = "locust"
url = "{web}"
"#
    ))
    .unwrap();
    let running = supervisor::start(&config, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let seen = watch_governed(
        ctl,
        "locust",
        LIMIT as f64,
        Duration::from_secs(24),
        deadline,
    )
    .await;
    assert!(locust.running(), "Locust died:\n{}", locust.tail());
    let metrics = get_text(&format!("http://{ctl}/metrics")).await;
    running.shutdown(Duration::from_secs(5)).await;
    drop(locust);

    let (min, max, mean) = assert_governed(&seen, LIMIT as f64, Duration::from_secs(12));
    eprintln!(
        "live locust: limit {LIMIT}; path {:?}; settled {min}..{max} (mean {mean:.1}) over the last 12 s; \
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
        metrics.contains(
            "throttle_decisions_total{target=\"locust\",decision=\"down\",mode=\"backing-off\""
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains("throttle_control_writes_total{target=\"locust\",result=\"confirmed\"}"),
        "{metrics}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(90),
        "took {:?}",
        t0.elapsed()
    );
}
