//! The opening through silence over real sockets (issue 30, third and
//! tenth rounds), under the default profile, with 1 s windows. Before any
//! attempt the opening climbs blind to 8 workers, and no further: a tool
//! that never sends is held there. Once an attempt has come, the opening
//! doubles through a window with no attempts in it while the tool's rate
//! explains the silence: a fake that makes exactly one attempt (as a real
//! tool counts it), after the first blind Up, sees two Ups with no attempt
//! between them after it, and then a hold.

use crate::support;

use std::time::{Duration, Instant};

use support::FakeTool;

/// Governs a fake that makes no attempt of its own (one, if `one_at`
/// says at which workers) until `enough` says so of the (workers, whole
/// attempts) seen at each change of the workers, or `limit` passes;
/// returns those changes.
async fn govern(
    one_at: Option<f64>,
    limit: Duration,
    enough: impl Fn(&[(f64, f64)]) -> bool,
) -> Vec<(f64, f64)> {
    let tool = FakeTool::start(1_000.0, 1.0).await;
    {
        let mut st = tool.state.lock().unwrap();
        st.per_worker = 0.0;
        st.whole = true;
    }
    let running = tool.govern(64, 1000, "").await;
    let deadline = Instant::now() + limit;
    let mut changes: Vec<(f64, f64)> = vec![(1.0, 0.0)];
    while Instant::now() < deadline && !enough(&changes) {
        let (workers, attempts) = {
            let mut st = tool.state.lock().unwrap();
            let seen = (st.workers, st.attempts.floor());
            if one_at == Some(st.workers) && st.attempts == 0.0 {
                st.attempts = 1.0;
            }
            seen
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

/// The blind climb: 1, 2, 4, 8 with no attempt yet.
const BLIND: [(f64, f64); 4] = [(1.0, 0.0), (2.0, 0.0), (4.0, 0.0), (8.0, 0.0)];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_opening_climbs_through_silence_once_the_tool_has_sent() {
    let changes = govern(Some(2.0), Duration::from_secs(8), |_| false).await;
    // The first Up is blind: no attempt yet.
    assert_eq!(changes.get(1), Some(&(2.0, 0.0)), "{changes:?}");
    assert!(
        climbed_through_silence(&changes),
        "no Up without an attempt since the last Up, as (workers, whole attempts): {changes:?}"
    );
    // The one attempt's rate explains only so much silence: a hold at 8
    // or 16 (the attempt came at 2 or, late, at 4), never the ceiling.
    let last = changes.last().map_or(0.0, |c| c.0);
    assert!(last == 8.0 || last == 16.0, "{changes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_never_sends_climbs_blind_to_8_and_is_held_there() {
    // Three 1 s windows climb to 8; the next three hold.
    let changes = govern(None, Duration::from_secs(7), |c| c.len() > BLIND.len()).await;
    assert_eq!(changes, BLIND, "the workers without traffic");
}
