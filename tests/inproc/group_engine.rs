//! What groups gained from the one engine, over real sockets: the profile,
//! the state file (memory restored after a controller restart), the
//! signal-loss policy, tool-restart detection, and the write-generation guard
//! with window attribution (late writes), each on a group of two
//! fake tools on 127.0.0.1.

use crate::support;

use std::time::Duration;

use support::{get_json, metric, target_status, wait_until, FakeTool, Fault};
use throttle_governor::config::Config;
use throttle_governor::runtime::supervisor::{self, RunOptions};

/// A group of `tools`, scraped and written over HTTP.
fn group_config(tools: &[&FakeTool], extra: &str, server: &str) -> Config {
    let instances: String = tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            format!(
                "[[targets.instances]]\nname = \"w{i}\"\naddress = \"{}\"\n",
                t.addr
            )
        })
        .collect();
    let text = format!(
        r#"
[server]
listen = "127.0.0.1:0"
{server}

[[targets]]
name = "g"
knob = "concurrency"
ceiling = 100
floor = 2
high = 0.05
window = "150ms"
{extra}

[targets.signal]
kind = "prometheus"
url = "http://{{{{address}}}}/metrics"
attempts = 'fake_attempts_total'
failures = 'fake_requests_total{{outcome="failure"}}'
timeout = "300ms"

[targets.control]
kind = "http"
url = "http://{{{{address}}}}/admin/workers"
body = '{{"workers": {{{{value}}}}}}'
timeout = "300ms"
confirm_interval = "20ms"
[targets.control.read_back]
url = "http://{{{{address}}}}/admin/workers"
json_pointer = "/workers"

{instances}
"#
    );
    Config::parse(&text).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_keeps_its_profile_and_its_memory_across_restarts() {
    let a = FakeTool::start(15.0, 1.0).await;
    let b = FakeTool::start(15.0, 1.0).await;
    let dir = support::TempDir::new("group-state");
    let state = dir.path("state.json");
    let server = format!("state_file = \"{}\"", state.display());
    let cfg = group_config(&[&a, &b], "profile = \"robust\"", &server);

    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    assert_eq!(target_status(ctl, "g").await["profile"], "robust");
    let learned = wait_until(Duration::from_secs(20), || async {
        target_status(ctl, "g").await["last_bad"].as_f64().is_some()
    })
    .await;
    assert!(
        learned,
        "no congestion seen: {}",
        target_status(ctl, "g").await
    );
    running.shutdown(Duration::from_secs(5)).await;
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).unwrap()).unwrap();
    let last_bad = saved["targets"]["g"]["last_bad"]
        .as_f64()
        .unwrap_or_else(|| panic!("group memory not saved: {saved}"));

    // A new controller on the same state file starts with that memory.
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let status = target_status(running.addr, "g").await;
    assert_eq!(status["last_bad"].as_f64(), Some(last_bad), "{status}");
    running.shutdown(Duration::from_secs(5)).await;
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_applies_the_signal_loss_policy() {
    let a = FakeTool::start(40.0, 1.0).await;
    let b = FakeTool::start(40.0, 1.0).await;
    let cfg = group_config(
        &[&a, &b],
        "signal_loss_windows = 2\non_signal_loss = \"floor\"\n[targets.group]\ndown_after_windows = 50",
        "",
    );
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let climbed = wait_until(Duration::from_secs(10), || async {
        target_status(ctl, "g").await["offer"]
            .as_f64()
            .unwrap_or(0.0)
            >= 16.0
    })
    .await;
    assert!(climbed, "{}", target_status(ctl, "g").await);
    a.set_fault(Fault::MetricsStatus(500));
    b.set_fault(Fault::MetricsStatus(500));
    let lost = wait_until(Duration::from_secs(5), || async {
        metric(ctl, "throttle_signal_lost{target=\"g\"}").await == Some(1.0)
    })
    .await;
    assert!(lost, "{}", target_status(ctl, "g").await);
    // The floor (2) is split across the two instances: 1 each.
    let floored = wait_until(Duration::from_secs(5), || async {
        a.workers() + b.workers() == 2.0
    })
    .await;
    assert!(floored, "workers {} + {}", a.workers(), b.workers());
    a.set_fault(Fault::None);
    b.set_fault(Fault::None);
    let back = wait_until(Duration::from_secs(5), || async {
        metric(ctl, "throttle_signal_lost{target=\"g\"}").await == Some(0.0)
    })
    .await;
    assert!(back);
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_instance_gets_its_share_back() {
    let a = FakeTool::start(40.0, 1.0).await;
    let b = FakeTool::start(40.0, 1.0).await;
    // A signal-loss patience of 20 rounds (3 s): on a loaded machine every
    // read can time out for a few 150 ms rounds, and the default 3 would
    // floor the group, whose floor write then hides the restart. Signal
    // loss has its own test above.
    let cfg = group_config(&[&a, &b], "signal_loss_windows = 20", "");
    let mut cfg = cfg;
    cfg.targets[0].ceiling = Some(20.0);
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let at_ceiling = wait_until(Duration::from_secs(10), || async {
        a.workers() == 10.0 && b.workers() == 10.0
    })
    .await;
    assert!(at_ceiling, "{} {}", a.workers(), b.workers());
    // Instance a restarts: its counters go to zero and it runs 1 worker.
    a.restart(1.0);
    // 10 s: rounds of 150 ms stretch on a loaded machine.
    let republished = wait_until(Duration::from_secs(10), || async {
        metric(ctl, "throttle_tool_restarts_total{target=\"g\"}")
            .await
            .unwrap_or(0.0)
            >= 1.0
            && a.workers() == 10.0
    })
    .await;
    let groups = get_json(&format!("http://{ctl}/api/v1/groups")).await;
    let restarts = metric(ctl, "throttle_tool_restarts_total{target=\"g\"}").await;
    assert!(
        republished,
        "a runs {}, restarts seen {restarts:?}: {groups} {}",
        a.workers(),
        target_status(ctl, "g").await
    );
    // Not mistaken for an outside change of the group's offer.
    assert_eq!(target_status(ctl, "g").await["offer"].as_f64(), Some(20.0));
    running.shutdown(Duration::from_secs(5)).await;
}

/// The write-generation guard and window attribution, on a group: members
/// that apply our writes 300 ms late (window 150 ms) never have them taken
/// for changes from outside, and no window straddling a change is decided.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_never_takes_its_own_late_writes_for_outside_changes() {
    let a = FakeTool::start(12.0, 1.0).await;
    let b = FakeTool::start(12.0, 1.0).await;
    a.set_fault(Fault::LateApply(Duration::from_millis(300)));
    b.set_fault(Fault::LateApply(Duration::from_millis(300)));
    // The seed rules: attribution without early verdicts (which, by design,
    // decide on the straddle after an Up when it is a certain breach).
    let cfg = group_config(&[&a, &b], "profile = \"seed\"", "");
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    // Climb into the wall (24 in all) and back off at least once.
    let moved = wait_until(Duration::from_secs(20), || async {
        let s = target_status(ctl, "g").await;
        s["last_bad"].as_f64().is_some() && s["windows"].as_f64().unwrap_or(0.0) >= 20.0
    })
    .await;
    let status = target_status(ctl, "g").await;
    let outside = metric(ctl, "throttle_outside_changes_total{target=\"g\"}").await;
    let discarded = metric(
        ctl,
        "throttle_windows_discarded_total{target=\"g\",reason=\"offer_change\"}",
    )
    .await;
    let confirmed = metric(
        ctl,
        "throttle_control_writes_total{target=\"g\",result=\"confirmed\"}",
    )
    .await;
    running.shutdown(Duration::from_secs(5)).await;
    assert!(moved, "{status}");
    assert!(confirmed.unwrap_or(0.0) >= 4.0, "{confirmed:?}: {status}");
    assert_eq!(
        outside.unwrap_or(0.0),
        0.0,
        "our own writes taken for outside changes: {status}"
    );
    assert!(
        discarded.unwrap_or(0.0) >= 1.0,
        "no straddling window discarded: {status}"
    );
}
