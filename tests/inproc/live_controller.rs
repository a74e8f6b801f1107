//! The live controller over real sockets: a fake load tool with a known
//! capacity on 127.0.0.1, the real supervisor, real HTTP both ways.

use crate::support;

use std::time::{Duration, Instant};

use support::{get_text, target_status, FakeTool};
use throttle_governor::config::Config;
use throttle_governor::runtime::supervisor::{self, RunOptions};

fn config(server: &str, targets: &str) -> Config {
    Config::parse(&format!("[server]\nlisten = \"{server}\"\n{targets}")).unwrap()
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
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn climbs_backs_off_and_settles_near_capacity() {
    let tool = FakeTool::start(40.0, 100.0).await;
    let cfg = config("127.0.0.1:0", &tool.target_toml("checkout", 200, 100, ""));
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;

    // The opening offer (start = floor = 1) is published before any window.
    assert!(
        wait_for(Duration::from_secs(3), || async { tool.workers() == 1.0 }).await,
        "the opening offer was not published; tool at {}",
        tool.workers()
    );

    // Climb by doubling, cross capacity, back off, record last_bad.
    let mut offers = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut backed_off = false;
    while Instant::now() < deadline {
        let w = tool.workers();
        if offers.last() != Some(&w) {
            offers.push(w);
        }
        let st = target_status(ctl, "checkout").await;
        if st["last_bad"].is_number() && w <= 50.0 {
            backed_off = true;
        }
        if backed_off && offers.len() > 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(backed_off, "never backed off; offers {offers:?}");
    let doubling: Vec<f64> = offers.iter().copied().take_while(|w| *w <= 64.0).collect();
    assert!(
        doubling.starts_with(&[1.0, 2.0, 4.0, 8.0, 16.0, 32.0]),
        "slow start did not double from 1: {offers:?}"
    );
    let peak = offers.iter().copied().fold(0.0, f64::max);
    assert!(peak > 40.0, "never crossed capacity: {offers:?}");
    let st = target_status(ctl, "checkout").await;
    // The first window after a Down may still hold load at the old offer,
    // so last_bad can land exactly on the capacity; it never lands below.
    assert!(st["last_bad"].as_f64().unwrap() >= 40.0, "last_bad {st}");

    // Settle within ±25 % of capacity, and stay there.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut seen = Vec::new();
    for _ in 0..30 {
        seen.push(tool.workers());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        seen.iter().all(|w| (30.0..=50.0).contains(w)),
        "did not stay within ±25% of 40: {seen:?} (history {offers:?})"
    );

    // The exported metrics tell the same story.
    let m = get_text(&format!("http://{ctl}/metrics")).await;
    assert!(
        support::sum_in(
            &m,
            "throttle_decisions_total{target=\"checkout\",decision=\"down\",mode=\"backing-off\"}"
        )
        .unwrap_or(0.0)
            >= 1.0,
        "{m}"
    );
    assert!(
        support::sum_in(
            &m,
            "throttle_control_writes_total{target=\"checkout\",result=\"confirmed\"}"
        )
        .unwrap_or(0.0)
            >= 1.0
    );
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_writer_is_stepped_from() {
    let tool = FakeTool::start(1000.0, 1.0).await;
    let cfg = config("127.0.0.1:0", &tool.target_toml("ext", 100, 100, ""));
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    // Let it climb to the ceiling (100): 1,2,4,...,64,100.
    assert!(
        wait_for(Duration::from_secs(10), || async {
            tool.workers() == 100.0
        })
        .await,
        "never reached the ceiling: {}",
        tool.workers()
    );
    // Let the write of 100 be confirmed first: a change that lands while our
    // own write is still being confirmed is re-asserted by the writer's retry.
    let ctl = running.addr;
    assert!(
        wait_for(Duration::from_secs(5), || async {
            let st = target_status(ctl, "ext").await;
            st["pending_write"].is_null() && st["last_label"] == "at-ceiling"
        })
        .await
    );
    // An operator sets 10 by hand; the governor must step from 10 (to 20),
    // not fight back to 100.
    tool.state.lock().unwrap().set_workers(10.0);
    let mut seen = Vec::new();
    let ok = wait_for(Duration::from_secs(5), || {
        let w = tool.workers();
        seen.push(w);
        async move { w == 20.0 }
    })
    .await;
    assert!(ok, "did not step from the outside value 10 to 20: {seen:?}");
    assert!(
        !seen.contains(&100.0)
            || seen.iter().position(|w| *w == 100.0) < seen.iter().position(|w| *w == 20.0)
    );
    let m = get_text(&format!("http://{}/metrics", running.addr)).await;
    assert!(
        m.contains("throttle_outside_changes_total{target=\"ext\"} 1"),
        "{m}"
    );
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_never_writes() {
    let tool = FakeTool::start(40.0, 7.0).await;
    // The seed rules: its first clean window climbs (gentle pools 100
    // attempts first).
    let cfg = config(
        "127.0.0.1:0",
        &tool.target_toml("dry", 200, 100, "profile = \"seed\""),
    );
    let running = supervisor::start(
        &cfg,
        RunOptions {
            dry_run: true,
            ..Default::default()
        },
        None,
    )
    .await
    .unwrap();
    let ctl = running.addr;
    assert!(
        wait_for(Duration::from_secs(5), || async {
            target_status(ctl, "dry").await["windows"]
                .as_u64()
                .unwrap_or(0)
                >= 5
        })
        .await
    );
    // It decided to climb from the tool's 7 (its offer moved: 14, 28, ...;
    // on a loaded machine the poll may first see it at the ceiling, where
    // the last decision is a hold) but never wrote.
    let st = target_status(ctl, "dry").await;
    assert!(st["offer"].as_f64().unwrap_or(0.0) >= 14.0, "{st}");
    assert_eq!(tool.writes(), 0);
    assert_eq!(tool.workers(), 7.0);
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_exit_floor_is_written_at_shutdown() {
    let tool = FakeTool::start(1000.0, 1.0).await;
    let cfg = config(
        "127.0.0.1:0",
        &tool
            .target_toml("bye", 50, 100, "on_exit = \"floor\"\nfloor = 3\nstart = 5")
            .replace("floor = 1\n", ""),
    );
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    assert!(wait_for(Duration::from_secs(5), || async { tool.workers() >= 20.0 }).await);
    running.shutdown(Duration::from_secs(5)).await;
    assert_eq!(
        tool.workers(),
        3.0,
        "on_exit = floor did not write the floor"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_waits_for_baseline_and_metrics_pass_promtool() {
    let tool = FakeTool::start(40.0, 1.0).await;
    // With a latency bound, so that its series pass promtool too.
    let cfg = config(
        "127.0.0.1:0",
        &tool.target_toml(
            "ready",
            100,
            100,
            r#"latency = { quantile = 0.99, bound = "250ms", histogram = "h_seconds", url = "http://127.0.0.1:1/metrics" }"#,
        ),
    );
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let client = reqwest::Client::new();
    assert_eq!(
        client
            .get(format!("http://{ctl}/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert!(
        wait_for(Duration::from_secs(5), || async {
            client
                .get(format!("http://{ctl}/readyz"))
                .send()
                .await
                .map(|r| r.status() == 200)
                .unwrap_or(false)
        })
        .await,
        "never ready"
    );
    tokio::time::sleep(Duration::from_millis(600)).await;
    let text = get_text(&format!("http://{ctl}/metrics")).await;
    for name in [
        "throttle_offer",
        "throttle_ceiling",
        "throttle_floor",
        "throttle_last_bad",
        "throttle_attempt_failure_ratio",
        "throttle_window_attempts",
        "throttle_window_failures",
        "throttle_attempts_total",
        "throttle_attempt_failures_total",
        "throttle_decisions_total",
        "throttle_memory_clears_total",
        "throttle_clean_streak",
        "throttle_signal_resets_total",
        "throttle_control_writes_total",
        "throttle_signal_read_duration_seconds_bucket",
        "throttle_control_write_duration_seconds_bucket",
        "throttle_build_info",
        "throttle_window_latency_seconds",
        "throttle_latency_bound_seconds",
        "throttle_latency_errors_total",
    ] {
        assert!(text.contains(name), "{name} missing from /metrics:\n{text}");
    }
    support::promtool_check_metrics(&text);
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_file_keeps_memory_across_restarts() {
    let dir = std::env::temp_dir().join(format!("tg-state-live-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let state = dir.join("state.json");
    let _ = std::fs::remove_file(&state);
    let tool = FakeTool::start(40.0, 1.0).await;
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nstate_file = \"{}\"\n{}",
        state.display(),
        tool.target_toml("mem", 200, 100, "profile = \"seed\"")
    );
    let cfg = Config::parse(&text).unwrap();

    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    assert!(
        wait_for(Duration::from_secs(10), || async {
            target_status(ctl, "mem").await["last_bad"].is_number()
        })
        .await
    );
    let last_bad = target_status(ctl, "mem").await["last_bad"]
        .as_f64()
        .unwrap();
    running.shutdown(Duration::from_secs(5)).await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    assert!(saved["targets"]["mem"]["last_bad"].is_number(), "{saved}");

    // A restarted controller remembers the wall: it reclimbs (at most 1.5x
    // toward 0.75 * last_bad), it does not slow-start by doubling into it.
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    assert!(target_status(ctl, "mem").await["last_bad"]
        .as_f64()
        .is_some());
    assert!(
        wait_for(Duration::from_secs(5), || async {
            support::metric(
                ctl,
                "throttle_decisions_total{target=\"mem\",decision=\"up\",mode=\"reclimbing\"}",
            )
            .await
            .unwrap_or(0.0)
                >= 1.0
        })
        .await
    );
    let m = get_text(&format!("http://{ctl}/metrics")).await;
    assert!(
        support::sum_in(
            &m,
            "throttle_decisions_total{target=\"mem\",decision=\"up\",mode=\"climbing\"}"
        )
        .unwrap_or(0.0)
            == 0.0,
        "slow start after a restart with memory (last_bad was {last_bad}):\n{m}"
    );
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_are_cut_off() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tool = FakeTool::start(40.0, 1.0).await;
    let cfg = config("127.0.0.1:0", &tool.target_toml("srv", 100, 100, ""));
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;

    // A client that promises a body and never sends it gets 408.
    let mut sock = tokio::net::TcpStream::connect(ctl).await.unwrap();
    sock.write_all(b"PUT /metrics/job/slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        .await
        .unwrap();
    let mut buf = vec![0u8; 256];
    let n = tokio::time::timeout(Duration::from_secs(20), sock.read(&mut buf))
        .await
        .expect("the controller held a slow request open")
        .unwrap();
    let head = String::from_utf8_lossy(&buf[..n]);
    assert!(head.starts_with("HTTP/1.1 408"), "{head}");

    // (Body-size refusals of the push endpoint are tested in tests/inproc/push.rs.)
    running.shutdown(Duration::from_secs(5)).await;
}
