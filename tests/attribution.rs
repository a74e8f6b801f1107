//! Writes that never land (issue 13), over real sockets against the
//! in-process fake tool (`tests/support`), for the cases
//! `tests/engine_faults.rs` does not cover:
//!
//! - a whole admin API (writes and read-backs) that hangs: the offer the
//!   controller reports in its metrics is, window after window, what the
//!   tool runs;
//! - `run --until-steady --report-json` on the binary (the issue's own
//!   reproduction), against an admin API whose writes hang, whose whole API
//!   hangs, or whose writes are never applied: no capacity, never steady.
//!
//! Late writes, and the in-process never-applied and hanging-write cases,
//! are in `tests/engine_faults.rs`.
//!
//! Each run is bounded (at most 25 s) and stops what it started.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::real::capacity_of;
use support::{metric, FakeTool, Fault, TempDir, BIN};
use throttle_governor::config::Config;
use throttle_governor::report::SteadyRule;
use throttle_governor::supervisor::{self, RunOptions};

fn config(tool: &FakeTool, window_ms: u64) -> String {
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}",
        tool.target_toml("t", 200, window_ms, "")
    )
}

/// Governs a fake whose writes never land (`fault`), starting at 3 workers
/// the tool chose itself: the reported offer must always be what it runs.
async fn offer_is_what_the_tool_runs(fault: Fault) {
    let tool = FakeTool::start(50.0, 3.0).await;
    tool.set_fault(fault.clone());
    let cfg = Config::parse(&config(&tool, 500)).unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    // Until the first window the gauge shows the opening offer being
    // published (nothing has been read yet), so sampling starts once the
    // first window has been recorded.
    let first = support::wait_until(Duration::from_secs(15), || async {
        !running.telemetry.history("t").is_empty()
    })
    .await;
    assert!(first, "{fault:?}: no window within 15 s");
    let deadline = Instant::now() + Duration::from_secs(8);
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        let offer = metric(running.addr, "throttle_offer{target=\"t\"}").await;
        let runs = tool.workers();
        seen.push((offer, runs));
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    let report = running.report(&SteadyRule::default());
    running.shutdown(Duration::from_secs(5)).await;
    let entry = serde_json::to_value(&report).unwrap()["targets"][0].clone();
    eprintln!(
        "{fault:?}: (reported offer, tool's workers) over time: {seen:?}; verdict: {}",
        entry["verdict"]
    );
    assert!(
        seen.iter().all(|(offer, runs)| *offer == Some(*runs)),
        "{fault:?}: the reported offer is not what the tool runs: {seen:?}"
    );
    assert_eq!(tool.workers(), 3.0, "the fault let a write through");
    assert_eq!(
        capacity_of(&entry),
        None,
        "{fault:?}: a capacity for a target whose writes never landed: {entry}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wholly_hanging_admin_api_reports_the_offer_the_tool_runs() {
    offer_is_what_the_tool_runs(Fault::HangAdmin(Duration::from_secs(30))).await;
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
