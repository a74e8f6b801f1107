//! Windows belong to one offer (issue 13), over real sockets against the
//! in-process fake tool (`tests/support`):
//!
//! - a tool that applies writes late (3 s, window 1 s): no Up is decided on
//!   a window whose traffic ran at another offer than the one recorded;
//! - an admin API that hangs, and one that accepts writes but never applies
//!   them: the offer the controller reports in its metrics is what the tool
//!   runs, and `run --until-steady` never reports a capacity for it.
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_writes_never_lead_to_an_up_on_a_window_at_the_old_offer() {
    let tool = FakeTool::start(50.0, 1.0).await;
    tool.set_fault(Fault::LateWrites(Duration::from_secs(3)));
    let cfg = Config::parse(&config(&tool, 1000)).unwrap();
    let t0 = Instant::now();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(16)).await;
    let report = running.report(&SteadyRule::default());
    running.shutdown(Duration::from_secs(5)).await;
    let history = &report.targets[0].history;
    let st = tool.state.lock().unwrap();
    // The loop's clock starts a little after t0: trim each window's ends
    // by a margin, so only traffic surely inside it is judged.
    let margin = 0.25;
    let mut ups = 0;
    let mut wrong = Vec::new();
    for r in history.iter().filter(|r| r.decision == "up") {
        ups += 1;
        let len = r.window_secs.unwrap_or(0.0);
        let (from, to) = (r.time_secs - len + margin, r.time_secs - margin);
        if to <= from {
            continue;
        }
        let ran = st.workers_between(
            t0 + Duration::from_secs_f64(from),
            t0 + Duration::from_secs_f64(to),
        );
        if ran != [r.offer] {
            wrong.push(format!(
                "Up {} -> {} at {:.1}s on a window the tool ran at {ran:?}",
                r.offer, r.to, r.time_secs
            ));
        }
    }
    eprintln!(
        "late writes: {ups} Ups, {} on a window at another offer; the tool's workers: {:?}",
        wrong.len(),
        st.changes.iter().map(|c| c.1).collect::<Vec<_>>()
    );
    assert!(
        wrong.is_empty(),
        "{}\n(the tool's workers over time: {:?})",
        wrong.join("\n"),
        st.changes
            .iter()
            .map(|(at, w)| (format!("{:.1}s", at.duration_since(t0).as_secs_f64()), *w))
            .collect::<Vec<_>>()
    );
    // The run must have moved at all, or the check above proves nothing.
    assert!(
        st.changes.len() >= 3,
        "the tool never moved: {:?}",
        st.changes
    );
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
    // The first read-back (the first confirmation attempt, 20 ms apart)
    // comes a moment after start; before it the controller cannot know
    // what the tool runs, so only samples from 1 s on are judged.
    tokio::time::sleep(Duration::from_secs(1)).await;
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
async fn a_hanging_admin_api_reports_the_offer_the_tool_runs() {
    offer_is_what_the_tool_runs(Fault::SlowWrites(Duration::from_secs(30))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_never_applied_report_the_offer_the_tool_runs() {
    offer_is_what_the_tool_runs(Fault::IgnoreWrites).await;
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
