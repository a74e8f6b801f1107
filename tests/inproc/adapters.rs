//! The tool adapters against in-process fakes of the tools' APIs, over real
//! sockets: the k6 1.x contract (bodies reproduced from k6's source),
//! including k6 v2's refusal and the vus-max ceiling, and each adapter's
//! handling of its tool going down, restarting (a counter reset) and
//! answering garbage: counted in the metrics, never a panic.

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use support::tools::{fake_goose, fake_k6, fake_locust, Served};
use support::{get_text, target_status, wait_until};
use throttle_governor::adapters::k6::{K6Control, K6Source};
use throttle_governor::config::{Config, K6SignalConfig, ToolControlConfig};
use throttle_governor::control::{ControlError, WriteOutcome};
use throttle_governor::engine::build;
use throttle_governor::runtime::supervisor::{self, RunOptions, Running};

/// Parses a config and shortens every window to `window_ms` (the Locust
/// signal refuses windows below its 2 s stats cache, which the fake lacks).
fn config(targets: &str, window_ms: u64) -> Config {
    let mut c = Config::parse(&format!("[server]\nlisten = \"127.0.0.1:0\"\n{targets}")).unwrap();
    for t in &mut c.targets {
        t.window = Duration::from_millis(window_ms);
        // The fakes serve live counters (no stats cache): no signal lag.
        t.signal_lag = Some(Duration::ZERO);
    }
    c
}

fn target(name: &str, kind: &str, url: &str, ceiling: u32, extra_signal: &str) -> String {
    format!(
        r#"
[[targets]]
name = "{name}"
knob = "concurrency"
ceiling = {ceiling}
floor = 1
high = 0.05
window = "2s"

[targets.signal]
kind = "{kind}"
url = "{url}"
timeout = "500ms"
{extra_signal}

[targets.control]
kind = "{kind}"
url = "{url}"
timeout = "500ms"
confirm_interval = "20ms"
"#
    )
}

/// The value of the first sample whose line starts with `prefix`.
fn sample(metrics: &str, prefix: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn metric_reaches(ctl: SocketAddr, prefix: &str, at_least: f64, limit: Duration) -> bool {
    let url = format!("http://{ctl}/metrics");
    let prefix = prefix.to_string();
    wait_until(limit, || {
        let (url, prefix) = (url.clone(), prefix.clone());
        async move { sample(&get_text(&url).await, &prefix).is_some_and(|v| v >= at_least) }
    })
    .await
}

async fn windows(ctl: SocketAddr, name: &str) -> u64 {
    target_status(ctl, name).await["windows"]
        .as_u64()
        .unwrap_or(0)
}

async fn start(cfg: &Config) -> Running {
    supervisor::start(cfg, RunOptions::default(), None)
        .await
        .unwrap()
}

// ------------------------------------------------------------- k6 contract

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_governs_vus_through_the_rest_api() {
    let k6 = fake_k6(20.0, 1.0, 60).await;
    let cfg = config(&target("k6", "k6", &k6.http(), 60, ""), 100);
    let running = start(&cfg).await;
    let ctl = running.addr;
    let mut path = Vec::new();
    let backed_off = wait_until(Duration::from_secs(20), || {
        let u = k6.users();
        if path.last() != Some(&u) {
            path.push(u);
        }
        let crossed = path.iter().any(|u| *u > 20.0);
        async move { crossed && u <= 20.0 }
    })
    .await;
    assert!(backed_off, "never crossed 20 VUs and backed off: {path:?}");
    assert!(
        path.starts_with(&[1.0, 2.0, 4.0, 8.0, 16.0]),
        "slow start did not double: {path:?}"
    );
    let st = target_status(ctl, "k6").await;
    assert!(st["last_bad"].as_f64().unwrap() > 20.0, "{st}");
    let m = get_text(&format!("http://{ctl}/metrics")).await;
    assert!(
        sample(
            &m,
            "throttle_control_writes_total{target=\"k6\",result=\"confirmed\"}"
        )
        .unwrap()
            >= 5.0,
        "{m}"
    );
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_failures_exact_from_a_counter_or_approximate_from_the_rate() {
    let k6 = fake_k6(10.0, 10.0, 100).await;
    let client = reqwest::Client::new();
    let source = |failures: Option<&str>| {
        K6Source::new(
            &K6SignalConfig {
                url: k6.http(),
                attempts: None,
                failures: failures.map(str::to_string),
                timeout: Duration::from_secs(1),
            },
            client.clone(),
        )
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    // No failure yet: k6 answers 404 for the script's counter until it is
    // first added to, and for a rate with no samples; both read as zero.
    let exact = source(Some("failed_attempts")).read().await.unwrap();
    assert!(exact.first > 0.0 && exact.failures == 0.0, "{exact:?}");
    let approx = source(None).read().await.unwrap();
    assert_eq!(approx.failures, 0.0, "{approx:?}");

    // Half the VUs over capacity: half the attempts fail.
    k6.load.lock().unwrap().users = 20.0;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for c in [
        source(Some("failed_attempts")).read().await.unwrap(),
        source(None).read().await.unwrap(),
    ] {
        assert!(c.failures > 0.0 && c.failures <= c.first, "{c:?}");
        assert!(!c.successes_form);
    }
    // The wrong metric type is named, not misread.
    let e = source(Some("http_req_duration")).read().await.unwrap_err();
    assert!(e.to_string().contains("trend"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_v2_refusal_names_the_version_constraint() {
    let k6 = fake_k6(100.0, 1.0, 50).await;
    k6.load.lock().unwrap().k6_v2 = true;
    let ctl_cfg = ToolControlConfig {
        url: k6.http(),
        timeout: Duration::from_secs(1),
        confirm_attempts: 3,
        confirm_interval: Duration::from_millis(20),
        write_attempts: 1,
    };
    let control = K6Control::new(&ctl_cfg, reqwest::Client::new());
    let e = control.write(5.0).await.unwrap_err();
    assert_eq!(e.error_type(), "unsupported", "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("k6 v2 removed live VU updates") && msg.contains("k6 1.x"),
        "{msg}"
    );

    // Through the controller: counted, reported in the status, no panic.
    let cfg = config(&target("v2", "k6", &k6.http(), 50, ""), 100);
    let running = start(&cfg).await;
    let ctl = running.addr;
    assert!(
        metric_reaches(
            ctl,
            "throttle_control_errors_total{target=\"v2\",error_type=\"unsupported\"}",
            1.0,
            Duration::from_secs(5)
        )
        .await
    );
    let ok = wait_until(Duration::from_secs(5), || async {
        target_status(ctl, "v2").await["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("k6 1.x"))
    })
    .await;
    assert!(ok, "{}", target_status(ctl, "v2").await);
    assert_eq!(k6.users(), 1.0, "k6 v2 must not have changed");
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_vus_max_is_respected_as_a_ceiling() {
    let k6 = fake_k6(1000.0, 1.0, 24).await;
    let ctl_cfg = ToolControlConfig {
        url: k6.http(),
        timeout: Duration::from_secs(1),
        confirm_attempts: 3,
        confirm_interval: Duration::from_millis(20),
        write_attempts: 1,
    };
    // Unknown vus-max: k6's own 400 is turned into the same clear error.
    let control = K6Control::new(&ctl_cfg, reqwest::Client::new());
    let e = control.write(30.0).await.unwrap_err();
    assert!(
        matches!(
            e,
            ControlError::AboveMax {
                wanted: 30,
                max: 24
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("set `ceiling` to at most 24"), "{e}");

    let cfg = config(&target("vmax", "k6", &k6.http(), 100, ""), 100);
    let running = start(&cfg).await;
    let ctl = running.addr;
    let mut max_seen = 0.0_f64;
    let hit = wait_until(Duration::from_secs(10), || {
        max_seen = max_seen.max(k6.users());
        async move {
            sample(
                &get_text(&format!("http://{ctl}/metrics")).await,
                "throttle_control_errors_total{target=\"vmax\",error_type=\"above_max\"}",
            )
            .is_some_and(|v| v >= 1.0)
        }
    })
    .await;
    assert!(hit, "no above_max error counted");
    assert!(max_seen <= 24.0, "k6 went above vus-max: {max_seen}");
    running.shutdown(Duration::from_secs(5)).await;
    assert!(k6.users() <= 24.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_without_an_externally_controlled_executor_is_explained() {
    let k6 = fake_k6(100.0, 1.0, 50).await;
    k6.load.lock().unwrap().k6_no_external = true;
    let control = K6Control::new(
        &ToolControlConfig {
            url: k6.http(),
            timeout: Duration::from_secs(1),
            confirm_attempts: 1,
            confirm_interval: Duration::from_millis(20),
            write_attempts: 1,
        },
        reqwest::Client::new(),
    );
    let e = control.write(5.0).await.unwrap_err();
    assert_eq!(e.error_type(), "refused");
    assert!(
        e.to_string().contains("executor: 'externally-controlled'"),
        "{e}"
    );
    // The read-back still works, and reports what k6 runs.
    assert_eq!(control.committed().await.unwrap(), 1.0);
}

// ------------------------------------------------- down, restart, garbage

/// Drives one adapter's tool through garbage, down and a restart, and
/// checks each is counted and survived.
async fn survives_faults(mut tool: Served, name: &str, kind: &str, url: String) {
    let cfg = config(&target(name, kind, &url, 8, ""), 150);
    let running = start(&cfg).await;
    let ctl = running.addr;
    let healthy = wait_until(Duration::from_secs(5), || async {
        windows(ctl, name).await >= 3
    })
    .await;
    assert!(
        healthy,
        "{kind}: no windows: {}",
        target_status(ctl, name).await
    );

    // Garbage: a format error, counted by type.
    tool.set_garbage(true);
    assert!(
        metric_reaches(
            ctl,
            &format!("throttle_signal_errors_total{{target=\"{name}\",error_type=\"format\"}}"),
            1.0,
            Duration::from_secs(5)
        )
        .await,
        "{kind}: garbage not counted as a format error:\n{}",
        get_text(&format!("http://{ctl}/metrics")).await
    );
    tool.set_garbage(false);

    // Down: connections refused, counted, the loop holds.
    tool.down().await;
    assert!(
        metric_reaches(
            ctl,
            &format!("throttle_signal_errors_total{{target=\"{name}\",error_type=\"connect\"}}"),
            1.0,
            Duration::from_secs(5)
        )
        .await,
        "{kind}: down not counted:\n{}",
        get_text(&format!("http://{ctl}/metrics")).await
    );
    // A write while down fails as `connect` (the label of
    // throttle_control_errors_total), after bounded retries.
    let t = &cfg.targets[0];
    let client = reqwest::Client::new();
    let source = build::source(&t.signal, client.clone()).unwrap();
    let actuator = build::actuator(&t.control, true, &source, client).unwrap();
    match actuator.write_confirmed(2.0).await {
        WriteOutcome::Failed(e) => assert_eq!(e.error_type(), "connect", "{kind}: {e}"),
        other => panic!("{kind}: a write to a down tool did not fail: {other:?}"),
    }
    let up = sample(
        &get_text(&format!("http://{ctl}/metrics")).await,
        &format!("throttle_signal_up{{target=\"{name}\"}}"),
    );
    assert_eq!(up, Some(0.0), "{kind}: signal_up while down");

    // Restart: counters back at zero is a counter reset, then recovery.
    tool.restart(1.0).await;
    assert!(
        metric_reaches(
            ctl,
            &format!("throttle_signal_resets_total{{target=\"{name}\"}}"),
            1.0,
            Duration::from_secs(5)
        )
        .await,
        "{kind}: restart not seen as a counter reset:\n{}",
        get_text(&format!("http://{ctl}/metrics")).await
    );
    let before = windows(ctl, name).await;
    let recovered = wait_until(Duration::from_secs(5), || async {
        windows(ctl, name).await >= before + 3
    })
    .await;
    assert!(recovered, "{kind}: no valid windows after the restart");
    let m = get_text(&format!("http://{ctl}/metrics")).await;
    assert_eq!(
        sample(&m, &format!("throttle_signal_up{{target=\"{name}\"}}")),
        Some(1.0)
    );
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locust_adapter_survives_down_restart_and_garbage() {
    let tool = fake_locust(100.0, 1.0).await;
    let url = tool.http();
    survives_faults(tool, "locust", "locust", url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_adapter_survives_down_restart_and_garbage() {
    let tool = fake_k6(100.0, 1.0, 100).await;
    let url = tool.http();
    survives_faults(tool, "k6", "k6", url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goose_adapter_survives_down_restart_and_garbage() {
    let tool = fake_goose(100.0, 1.0).await;
    let url = tool.ws();
    survives_faults(tool, "goose", "goose", url).await;
}
