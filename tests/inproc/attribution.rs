//! Writes that never land (issue 13), over real sockets against the
//! in-process fake tool (`tests/support`), for the cases
//! `tests/inproc/engine_faults.rs` does not cover:
//!
//! - a whole admin API (writes and read-backs) that hangs: the controller
//!   cannot learn what the tool runs, so it decides on no window and the
//!   offer it shows never climbs;
//! - `run --until-steady --report-json` on the binary (the issue's own
//!   reproduction), against an admin API whose writes hang, whose whole API
//!   hangs, or whose writes are never applied: no capacity, never steady.
//!
//! Late writes, and the in-process never-applied and hanging-write cases,
//! are in `tests/inproc/engine_faults.rs`.
//!
//! Each run is bounded (at most 25 s) and stops what it started.

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::real::capacity_of;
use support::{metric, FakeTool, Fault, TempDir, BIN};
use throttle_governor::config::Config;
use throttle_governor::report::SteadyRule;
use throttle_governor::runtime::supervisor::{self, RunOptions};

fn config(tool: &FakeTool, window_ms: u64) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}",
        tool.target_toml("t", 200, window_ms, "")
    )
}

/// A whole admin API that hangs (writes and read-backs), on a tool that
/// runs 3 workers it chose itself: the controller cannot learn what the
/// tool runs, so it must not step from the values it asked for. No window
/// is decided on, the offer it shows never climbs, and there is no
/// capacity. (Before the fix it showed 1, 2, 4, 8, 16 while the tool ran 3.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wholly_hanging_admin_api_never_steps_from_writes_that_did_not_land() {
    let tool = FakeTool::start(50.0, 3.0).await;
    tool.set_fault(Fault::HangAdmin(Duration::from_secs(30)));
    let cfg = Config::parse(&config(&tool, 500)).unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(9);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        seen.push(metric(running.addr, "throttle_offer{target=\"t\"}").await);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let discarded = metric(
        running.addr,
        "throttle_windows_discarded_total{target=\"t\",reason=\"offer_unknown\"}",
    )
    .await;
    let history = running.telemetry.history("t");
    let report = running.report(&SteadyRule::default());
    running.shutdown(Duration::from_secs(5)).await;
    let entry = serde_json::to_value(&report).unwrap()["targets"][0].clone();
    eprintln!(
        "HangAdmin: offers shown {seen:?}; decisions {:?}; discarded (offer_unknown) {discarded:?}; verdict: {}",
        history.iter().map(|r| r.decision).collect::<Vec<_>>(),
        entry["verdict"]
    );
    assert!(history.len() >= 5, "too few windows to judge: {history:?}");
    let stepped: Vec<_> = history
        .iter()
        .filter(|r| r.decision == "up" || r.decision == "down")
        .collect();
    assert!(
        stepped.is_empty(),
        "decided on windows at an unknown offer: {stepped:?}"
    );
    let shown: Vec<f64> = seen.iter().flatten().copied().collect();
    assert!(
        shown.windows(2).all(|w| w[1] <= w[0]),
        "the offer shown climbed on writes that never landed: {seen:?}"
    );
    assert!(
        discarded.unwrap_or(0.0) >= 1.0,
        "no offer_unknown discard counted"
    );
    assert_eq!(tool.workers(), 3.0, "the fault let a write through");
    assert_eq!(
        capacity_of(&entry),
        None,
        "a capacity for a target whose writes never landed: {entry}"
    );
}

/// `run --until-steady --report-json` on the binary, against a fake whose
/// writes never land: the report gives no capacity.
async fn until_steady_gives_no_capacity(fault: Fault) {
    let tool = FakeTool::start(50.0, 3.0).await;
    tool.set_fault(fault.clone());
    let dir = TempDir::new("unconfirmed");
    let path = dir.path("config.toml");
    std::fs::write(&path, config(&tool, 250)).unwrap();
    let json = dir.path("report.json");
    let child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(&path)
        .args(["--until-steady", "--max-duration", "15s", "--report-json"])
        .arg(&json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut guard = support::ChildGuard::new(child, "throttle-governor run");
    let deadline = Instant::now() + Duration::from_secs(25);
    let status = loop {
        if let Some(s) = guard.child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        status.is_some(),
        "{fault:?}: run --until-steady did not stop within 25 s"
    );
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("{fault:?}: no report written ({e}), exit {status:?}"));
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let entry = &report["targets"][0];
    eprintln!("{fault:?}: exit {status:?}; verdict {}", entry["verdict"]);
    assert_eq!(
        capacity_of(entry),
        None,
        "{fault:?}: --until-steady reported a capacity for a target whose writes never landed: {}",
        entry["verdict"]
    );
    assert_ne!(
        entry["steady"], true,
        "{fault:?}: reported steady: {}",
        entry["verdict"]
    );
    assert_eq!(tool.workers(), 3.0, "the fault let a write through");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_steady_never_gives_a_capacity_when_the_admin_api_hangs() {
    until_steady_gives_no_capacity(Fault::SlowWrites(Duration::from_secs(30))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_steady_never_gives_a_capacity_when_the_whole_admin_api_hangs() {
    until_steady_gives_no_capacity(Fault::HangAdmin(Duration::from_secs(30))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_steady_never_gives_a_capacity_when_writes_are_never_applied() {
    until_steady_gives_no_capacity(Fault::IgnoreWrites).await;
}
