//! Thin windows over real sockets (issue 30, thirteenth round), under the
//! default profile with 1 s windows: a fake tool whose workers make one
//! attempt a second each (counted whole, as a real tool counts them).
//!
//! **A climb by the worker grain.** Against a rejecting wall of 12
//! workers, the opening overshoots to 16 (a quarter of the attempts fail)
//! and backs off onto the wall, 12. There a run of attempts without a
//! failure that rules out one worker over a wall (35 at 12 workers: 3 s)
//! is a clean verdict, so the probe to 13 comes 4 s after the Down (the
//! settle window, then the run). Before, a verdict needed 100 attempts,
//! 8.3 s at 12 workers (checked with the rule switched off: the probe
//! came 10.1 s after the Down, and the test's bound of 6 s fails).
//!
//! **A burst in the opening.** The fake tool's workers make one attempt a second each (counted whole,
//! as a real tool counts them), against a capacity it never reaches. When
//! the opening first reaches 16 workers, 60 % of every attempt fail for a
//! while whatever the load: a burst. The governor backs off on it, to 8,
//! the last offer judged clean. The burst goes on there: the opening's
//! test takes a lower offer failing as much, for sure, as a burst, and
//! returns to 16 with no wall remembered, so the opening climbs on to the
//! ceiling: 16 at 4.9 s, 8 at 5.4 s, 16 at 6.4 s, then 32 and 64 (8.5 s).
//! Without the test (checked by switching it off) the Down stood, with
//! `last_bad` at 16; the burst's next windows at 8 chased the offer to 4,
//! and from there it climbed one worker a verdict (a run that ruled out
//! one worker over a wall, about 3 s each): 17 workers at 42.8 s. The test
//! fails on the chase and on the missing return.

use crate::support;

use std::time::{Duration, Instant};

use support::FakeTool;

/// Attempts a second of one worker (100 ticks a second).
const PER_WORKER_PER_SEC: f64 = 1.0;
/// The burst's failure share.
const BURST: f64 = 0.6;
/// The burst ends at the latest this long after it began.
const BURST_MAX: Duration = Duration::from_secs(4);

/// A fake tool at `capacity` whose workers make [`PER_WORKER_PER_SEC`]
/// attempts a second each, served in whole attempts.
async fn thin_tool(capacity: f64) -> FakeTool {
    let tool = FakeTool::start(capacity, 1.0).await;
    {
        let mut st = tool.state.lock().unwrap();
        st.per_worker = PER_WORKER_PER_SEC / 100.0;
        st.whole = true;
    }
    tool
}

/// Stops the controller and returns the fake's changes of the workers and
/// its trajectory in seconds (printed, for a failure's context).
async fn stop(
    running: throttle_governor::runtime::supervisor::Running,
    tool: &FakeTool,
) -> (Vec<(Instant, f64)>, Vec<(f64, f64)>) {
    running.shutdown(Duration::from_secs(5)).await;
    let (changes, path) = {
        let st = tool.state.lock().unwrap();
        (st.changes.clone(), st.path())
    };
    eprintln!("(s, workers) {path:.1?}");
    (changes, path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opening_burst_on_thin_windows_does_not_cap_the_climb() {
    let tool = thin_tool(1_000.0).await;
    let running = tool.govern(64, 1000, "").await;
    let deadline = Instant::now() + Duration::from_secs(45);
    // The burst begins when the workers first reach 16, and ends when they
    // rise again after falling (the test's return), or after BURST_MAX.
    let mut began: Option<Instant> = None;
    let mut fell = false;
    let mut ended: Option<Instant> = None;
    loop {
        let workers = tool.workers();
        {
            let mut st = tool.state.lock().unwrap();
            match (began, ended) {
                (None, _) if workers >= 16.0 => {
                    began = Some(Instant::now());
                    st.soft = Some((0.0, BURST));
                }
                (Some(at), None) => {
                    fell |= workers < 16.0;
                    if (fell && workers >= 16.0) || at.elapsed() >= BURST_MAX {
                        ended = Some(Instant::now());
                        st.soft = None;
                    }
                }
                _ => {}
            }
        }
        if workers >= 64.0 || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (changes, path) = stop(running, &tool).await;
    let began = began.unwrap_or_else(|| panic!("the opening never reached 16: {path:.1?}"));
    assert!(fell, "the burst was not backed off: {path:.1?}");
    // The back-off's lowest point during the burst: the last clean offer,
    // not the floor (one Down, no chase on the settle window).
    let lowest = changes
        .iter()
        .filter(|c| c.0 >= began && ended.is_none_or(|e| c.0 <= e))
        .map(|c| c.1)
        .fold(f64::INFINITY, f64::min);
    assert!(
        lowest >= 8.0,
        "the burst chased the offer down to {lowest}: {path:.1?}"
    );
    // The test's return: the change after the fall to 8 goes back to 16.
    let fall = changes
        .iter()
        .position(|c| c.0 >= began && c.1 < 16.0)
        .expect("fell");
    assert!(
        changes.get(fall + 1).is_some_and(|c| c.1 >= 16.0),
        "the burst's Down stood: no return from {} to 16: {path:.1?}",
        changes[fall].1
    );
    let top = changes.iter().map(|c| c.1).fold(0.0, f64::max);
    assert!(
        top >= 64.0,
        "an opening burst on thin windows capped the run at {top} workers (the test's return did not come): {path:.1?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_a_wall_thin_windows_climb_by_runs_that_rule_out_one_worker() {
    const WALL: f64 = 12.0;
    let tool = thin_tool(WALL).await;
    let running = tool.govern(64, 1000, "").await;
    let deadline = Instant::now() + Duration::from_secs(60);
    // Until the probes reached the wall's first offer over it after the
    // opening (13), or the deadline.
    let reached = |changes: &[(Instant, f64)]| {
        let back = changes
            .iter()
            .position(|c| c.1 < 16.0 && c.1 > 1.0 && c.0 > changes[0].0);
        back.is_some_and(|b| changes[b..].iter().any(|c| c.1 > WALL && c.1 < 16.0))
    };
    loop {
        let changes = tool.state.lock().unwrap().changes.clone();
        if (changes.iter().any(|c| c.1 >= 16.0) && reached(&changes)) || Instant::now() >= deadline
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (changes, path) = stop(running, &tool).await;
    let peak = changes
        .iter()
        .position(|c| c.1 >= 16.0)
        .unwrap_or_else(|| panic!("the opening never overshot the wall: {path:.1?}"));
    // The stays below the wall after the opening's Down, each ended by an
    // Up: a clean verdict each.
    let stays: Vec<(f64, f64)> = changes[peak + 1..]
        .windows(2)
        .take_while(|w| w[0].1 <= WALL)
        .filter(|w| w[1].1 > w[0].1)
        .map(|w| (w[0].1, (w[1].0 - w[0].0).as_secs_f64()))
        .collect();
    assert!(
        !stays.is_empty(),
        "no climb at or below the wall after the opening: {path:.1?}"
    );
    // 3 attempts a worker at one attempt a worker a second: about 3 s, plus
    // the settle window after the Down (1 s), where 100 attempts take
    // 100 / workers seconds (8.3 s at 12).
    for &(at, secs) in &stays {
        assert!(
            secs <= 6.0,
            "the stay at {at} workers lasted {secs:.1} s: no verdict on a run that ruled out one worker: {path:.1?}"
        );
    }
}
