//! Hot reload while running: add, remove and change targets; an invalid
//! reload is rejected and the old config keeps running; SIGHUP reloads the
//! real binary.

use crate::support;

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{free_port, write_atomic, ChildGuard, TempDir, BIN};
use support::{get_json, get_text, target_status, FakeTool};
use throttle_governor::config::Config;
use throttle_governor::runtime::supervisor::{self, RunOptions};
use tokio_util::sync::CancellationToken;

fn config(targets: &[String]) -> String {
    format!("[server]\nlisten = \"127.0.0.1:0\"\n{}", targets.concat())
}

async fn wait_for<F, Fut>(limit: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
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

async fn names(ctl: SocketAddr) -> Vec<String> {
    let v = get_json(&format!("http://{ctl}/api/v1/targets")).await;
    v["targets"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| t["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_adds_removes_and_changes_targets() {
    let a = FakeTool::start(20.0, 1.0).await;
    let b = FakeTool::start(1e6, 1.0).await;
    let c = FakeTool::start(1e6, 1.0).await;
    let a2 = FakeTool::start(1e6, 1.0).await;
    let target_a = a.target_toml("a", 100, 100, "");
    let target_b = b
        .target_toml("b", 50, 100, "on_exit = \"floor\"\nfloor = 3\nstart = 5")
        .replace("floor = 1\n", "");
    let cfg = Config::parse(&config(&[target_a.clone(), target_b])).unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;

    // A learns where its target fails; B climbs.
    assert!(
        wait_for(Duration::from_secs(10), || async {
            target_status(ctl, "a").await["last_bad"].is_number() && b.workers() >= 20.0
        })
        .await,
        "no congestion memory yet: {}",
        target_status(ctl, "a").await
    );
    let last_bad = target_status(ctl, "a").await["last_bad"].as_f64().unwrap();

    // Reload: A tuned (high 5% -> 8%), B removed, C added.
    let tuned_a = target_a.replace("high = 0.05", "high = 0.08");
    let target_c = c.target_toml("c", 64, 100, "");
    let summary = running
        .reload(Config::parse(&config(&[tuned_a.clone(), target_c.clone()])).unwrap())
        .await
        .unwrap();
    assert_eq!(summary.added, ["c"]);
    assert_eq!(summary.removed, ["b"]);
    assert_eq!(summary.kept_state, ["a"]);
    assert!(summary.restarted.is_empty() && summary.unchanged.is_empty());

    // B's on_exit wrote its floor; it is gone from the API.
    assert_eq!(
        b.workers(),
        3.0,
        "on_exit = floor not applied to the removed target"
    );
    assert!(!names(ctl).await.contains(&"b".to_string()));
    // C starts with its opening offer and climbs.
    assert!(wait_for(Duration::from_secs(5), || async { c.workers() >= 8.0 }).await);
    // A kept its state: no opening offer republished, memory still set.
    let mut a_seen = Vec::new();
    let kept = wait_for(Duration::from_secs(3), || {
        a_seen.push(a.workers());
        async {
            target_status(ctl, "a").await["windows"]
                .as_u64()
                .unwrap_or(0)
                >= 3
        }
    })
    .await;
    assert!(kept, "A did not resume");
    assert!(
        !a_seen.contains(&1.0),
        "A republished its opening offer: {a_seen:?}"
    );
    let st = target_status(ctl, "a").await;
    assert!(
        st["last_bad"].is_number(),
        "A lost its memory ({last_bad}): {st}"
    );
    assert_eq!(st["high"], 0.08, "{st}");

    // Reload: A's signal now reads another tool: a fresh start.
    let moved_a = tuned_a.replace(&a.url("/metrics"), &a2.url("/metrics"));
    let summary = running
        .reload(Config::parse(&config(&[moved_a, target_c.clone()])).unwrap())
        .await
        .unwrap();
    assert_eq!(summary.restarted, ["a"]);
    assert_eq!(summary.unchanged, ["c"]);
    assert!(
        wait_for(Duration::from_secs(5), || async {
            let st = target_status(ctl, "a").await;
            st["windows"].as_u64().unwrap_or(0) >= 2 && st["last_bad"].is_null()
        })
        .await,
        "A did not start fresh: {}",
        target_status(ctl, "a").await
    );
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_reload_is_rejected_and_the_old_config_keeps_running() {
    let a = FakeTool::start(1e6, 1.0).await;
    let b = FakeTool::start(1e6, 1.0).await;
    let dir = TempDir::new("reload-file");
    let path = dir.path("tg.toml");
    let target_a = a.target_toml("a", 64, 100, "");
    write_atomic(&path, &config(std::slice::from_ref(&target_a)));
    let running = supervisor::start(&Config::load(&path).unwrap(), RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let cancel = CancellationToken::new();
    let watcher = tokio::spawn(throttle_governor::runtime::reload::watch(
        path.clone(),
        running.reloader(),
        Some(Duration::from_millis(100)),
        cancel.clone(),
    ));

    // An invalid config: rejected, and A keeps being governed.
    let invalid = config(&[target_a.replace("high = 0.05", "high = 2.0\nflor = 1")]);
    write_atomic(&path, &invalid);
    let metrics = format!("http://{ctl}/metrics");
    assert!(
        wait_for(Duration::from_secs(5), || async {
            get_text(&metrics)
                .await
                .contains("throttle_config_reloads_total{result=\"rejected\"} 1")
        })
        .await,
        "the invalid reload was not counted (watcher finished: {}):\n{}",
        watcher.is_finished(),
        get_text(&metrics).await
    );
    let before = target_status(ctl, "a").await["windows"].as_u64().unwrap();
    assert!(
        wait_for(Duration::from_secs(3), || async {
            target_status(ctl, "a").await["windows"].as_u64().unwrap() > before + 3
        })
        .await,
        "A stopped after a rejected reload"
    );
    assert_eq!(target_status(ctl, "a").await["high"], 0.05);

    // A valid config adds B.
    write_atomic(&path, &config(&[target_a, b.target_toml("b", 64, 100, "")]));
    assert!(
        wait_for(Duration::from_secs(5), || async {
            names(ctl).await.contains(&"b".to_string()) && b.workers() >= 2.0
        })
        .await,
        "B was not added"
    );
    assert!(get_text(&metrics)
        .await
        .contains("throttle_config_reloads_total{result=\"applied\"} 1"));
    cancel.cancel();
    watcher.await.unwrap();
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_the_running_binary() {
    if !support::require_tool("kill") {
        return;
    }
    let a = FakeTool::start(1e6, 1.0).await;
    let b = FakeTool::start(1e6, 1.0).await;
    let dir = TempDir::new("reload-sighup");
    let path = dir.path("tg.toml");
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let file =
        |targets: &[String]| format!("[server]\nlisten = \"{listen}\"\n{}", targets.concat());
    let target_a = a.target_toml("a", 64, 100, "");
    write_atomic(&path, &file(std::slice::from_ref(&target_a)));
    let log = std::fs::File::create(dir.path("controller.log")).unwrap();
    let child = Command::new(BIN)
        .args([
            "run",
            "--config",
            path.to_str().unwrap(),
            "--config-poll",
            "0s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let guard = ChildGuard::new(child, "controller");
    let client = reqwest::Client::new();
    let up = wait_for(Duration::from_secs(10), || async {
        client
            .get(format!("http://{listen}/api/v1/targets"))
            .send()
            .await
            .is_ok()
    })
    .await;
    assert!(up, "the controller did not start");
    assert!(wait_for(Duration::from_secs(5), || async { a.workers() >= 2.0 }).await);

    // The file changes, but polling is off: nothing happens until SIGHUP.
    write_atomic(&path, &file(&[target_a, b.target_toml("b", 64, 100, "")]));
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(names(listen).await, ["a"]);
    let status = Command::new("kill")
        .args(["-HUP", &guard.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let added = wait_for(Duration::from_secs(5), || async {
        names(listen).await.contains(&"b".to_string())
    })
    .await;
    let log = std::fs::read_to_string(dir.path("controller.log")).unwrap_or_default();
    assert!(added, "SIGHUP did not add b; controller log:\n{log}");
    assert!(wait_for(Duration::from_secs(5), || async { b.workers() >= 2.0 }).await);
    let log = std::fs::read_to_string(dir.path("controller.log")).unwrap_or_default();
    assert!(log.contains("Config reloaded (SIGHUP)"), "{log}");
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_group_keeps_its_state_and_shares() {
    let tools = [
        FakeTool::start(1e6, 1.0).await,
        FakeTool::start(1e6, 1.0).await,
    ];
    let group = |high: &str| {
        let instances: String = tools
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "[[targets.instances]]\nname = \"i{i}\"\naddress = \"{}\"\n",
                    t.addr
                )
            })
            .collect();
        format!(
            r#"
[[targets]]
name = "g"
knob = "concurrency"
ceiling = 40
floor = 2
high = {high}
window = "100ms"

[targets.signal]
kind = "prometheus"
url = "http://{{{{address}}}}/metrics"
attempts = 'fake_attempts_total'
failures = 'fake_requests_total{{outcome="failure"}}'

[targets.control]
kind = "http"
url = "http://{{{{address}}}}/admin/workers"
body = '{{"workers": {{{{value}}}}}}'
confirm_interval = "20ms"
[targets.control.read_back]
url = "http://{{{{address}}}}/admin/workers"
json_pointer = "/workers"

{instances}"#
        )
    };
    let running = supervisor::start(
        &Config::parse(&config(&[group("0.05")])).unwrap(),
        RunOptions::default(),
        None,
    )
    .await
    .unwrap();
    let ctl = running.addr;
    assert!(
        wait_for(Duration::from_secs(10), || async {
            tools[0].workers() == 20.0 && tools[1].workers() == 20.0
        })
        .await,
        "the group did not reach its ceiling 40 as 20/20"
    );
    let writes: Vec<u64> = tools.iter().map(|t| t.writes()).collect();
    let summary = running
        .reload(Config::parse(&config(&[group("0.1")])).unwrap())
        .await
        .unwrap();
    assert_eq!(summary.kept_state, ["g"]);
    assert!(
        wait_for(Duration::from_secs(3), || async {
            target_status(ctl, "g").await["windows"]
                .as_u64()
                .unwrap_or(0)
                >= 3
        })
        .await
    );
    // Resumed at 40: the shares stay 20/20; the opening offer 2 was not
    // published again (at most the same share was rewritten).
    assert_eq!((tools[0].workers(), tools[1].workers()), (20.0, 20.0));
    for (t, before) in tools.iter().zip(writes) {
        assert!(
            t.writes() <= before + 1,
            "{} writes after the reload",
            t.writes() - before
        );
    }
    let st = target_status(ctl, "g").await;
    assert_eq!(
        (st["offer"].as_f64(), st["high"].as_f64()),
        (Some(40.0), Some(0.1)),
        "{st}"
    );
    running.shutdown(Duration::from_secs(5)).await;
}
