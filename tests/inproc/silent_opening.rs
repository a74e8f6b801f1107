//! The opening through silence over real sockets (issue 30, third round):
//! a fake tool whose workers make about a quarter of an attempt per 1 s
//! window each, served as whole attempts as a real tool counts them, under
//! the default profile. Once the first attempt has come, the opening
//! doubles through a window with no attempts in it: the fake sees two Ups
//! with no attempt between them. A tool that never sends is held at its
//! first offer, never climbed.

use crate::support;

use std::time::{Duration, Instant};

use support::FakeTool;
use throttle_governor::config::Config;
use throttle_governor::runtime::supervisor::{self, RunOptions};

/// Attempts per worker per 10 ms tick: 0.25 per worker per 1 s window.
const PER_WORKER: f64 = 0.0025;

/// Governs a fake that makes `per_worker` attempts per worker per tick
/// until `enough` says so of the (workers, whole attempts) seen at each
/// change of the workers, or `limit` passes; returns those changes.
async fn govern(
    per_worker: f64,
    limit: Duration,
    enough: impl Fn(&[(f64, f64)]) -> bool,
) -> Vec<(f64, f64)> {
    let tool = FakeTool::start(1_000.0, 1.0).await;
    {
        let mut st = tool.state.lock().unwrap();
        st.per_worker = per_worker;
        st.whole = true;
    }
    let cfg = Config::parse(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}",
        tool.target_toml("t", 64, 1000, "")
    ))
    .unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let deadline = Instant::now() + limit;
    let mut changes: Vec<(f64, f64)> = vec![(1.0, 0.0)];
    while Instant::now() < deadline && !enough(&changes) {
        let (workers, attempts) = {
            let st = tool.state.lock().unwrap();
            (st.workers, st.attempts.floor())
        };
        if changes.last().is_some_and(|c| c.0 != workers) {
            changes.push((workers, attempts));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    running.shutdown(Duration::from_secs(5)).await;
    changes
}

/// Two Ups in a row with no attempt between them, after the first attempt.
fn climbed_through_silence(changes: &[(f64, f64)]) -> bool {
    changes
        .windows(2)
        .any(|w| w[1].0 > w[0].0 && w[0].0 > 1.0 && w[1].1 == w[0].1 && w[0].1 >= 1.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_opening_climbs_through_silence_once_the_tool_has_sent() {
    let changes = govern(PER_WORKER, Duration::from_secs(25), climbed_through_silence).await;
    assert!(
        climbed_through_silence(&changes),
        "no Up without an attempt since the last Up, as (workers, whole attempts): {changes:?}"
    );
    // It climbed through silence, not blindly: the first Up came with the
    // first attempt.
    assert_eq!(changes.get(1).map(|c| c.1), Some(1.0), "{changes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_never_sends_is_held_at_its_first_offer() {
    let changes = govern(0.0, Duration::from_secs(5), |c| c.len() > 1).await;
    assert_eq!(
        changes,
        vec![(1.0, 0.0)],
        "the workers moved without traffic"
    );
}
