//! A failed probe's late failures are charged to it, over real sockets
//! (issue 30, twelfth round), under the default profile with 1 s windows.
//!
//! The fake tool serves its counters 2 s late (a stats cache, as Locust's)
//! and rejects every attempt of the workers above 10 (100 a second each).
//! The target says `signal_lag = "2s"`, so the windows in the 2 s after each
//! write are discarded. A probe from 10 to 11 is seen to fail only when its
//! failures reach the counters, 2 s after it began; its early verdict
//! decides on the first few of them, and the ~200 it made until the Down
//! reached the counters fall in discarded windows. Charged to the probe
//! (`throttle_probe_late_failures_total`), they are worth `failures / (0.5
//! × 5 %)` clean attempts: about 8,000, 8 s of the 1,000 a second that 10
//! workers make. Without the charge the next probe waited for its dwell:
//! two clean windows after the settle window, 5.0 s after the return
//! (measured with the charge switched off; 12.0 s with it).

use crate::support;

use std::time::{Duration, Instant};

use support::{metric, FakeTool};

const CAPACITY: f64 = 10.0;
/// Attempts a second of one worker (one per 10 ms tick).
const PER_WORKER_PER_SEC: f64 = 100.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_next_probe_waits_for_the_late_failures_of_the_last() {
    let tool = FakeTool::start(CAPACITY, 1.0).await;
    tool.state.lock().unwrap().stats_lag = Some(Duration::from_secs(2));
    let running = tool.govern(64, 1000, "signal_lag = \"2s\"").await;
    let ctl = running.addr;
    let deadline = Instant::now() + Duration::from_secs(75);
    // Until a probe above the capacity came back and went up again (or the
    // deadline): the stays above the capacity after the opening's.
    let over_stays = |changes: &[(Instant, f64)]| -> Vec<(Instant, Option<Instant>)> {
        let mut stays = Vec::new();
        for (i, c) in changes.iter().enumerate() {
            if c.1 > CAPACITY && (i == 0 || changes[i - 1].1 <= CAPACITY) {
                let left = changes[i..].iter().find(|n| n.1 <= CAPACITY).map(|n| n.0);
                stays.push((c.0, left));
            }
        }
        stays
    };
    loop {
        let changes = tool.state.lock().unwrap().changes.clone();
        if over_stays(&changes).len() >= 3 || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let late = metric(ctl, "throttle_probe_late_failures_total{target=\"t\"}")
        .await
        .expect("throttle_probe_late_failures_total is exported from the start");
    running.shutdown(Duration::from_secs(5)).await;
    let (changes, failures, path) = {
        let st = tool.state.lock().unwrap();
        (st.changes.clone(), st.failures, st.path())
    };
    let stays = over_stays(&changes);
    eprintln!(
        "late failures charged {late:.0}; the fake failed {failures:.0}; (s, workers) {path:.1?}"
    );
    // The opening's overshoot, then the first probe.
    assert!(
        stays.len() >= 2,
        "no probe past the capacity after the opening: {path:.1?}"
    );
    let (_, Some(returned)) = stays[1] else {
        panic!("the first probe never came back: {path:.1?}");
    };
    assert!(
        late >= 100.0 && late <= failures,
        "the first probe made about 200 failures after its verdict; charged {late:.0} (the fake failed {failures:.0} in all): {path:.1?}"
    );
    // What the charge alone makes the next probe wait for, at the clean
    // attempts 10 workers make. The metric was read within 50 ms of the
    // next probe's start, long before its own failures reach the counters:
    // it holds the first probe's charge only.
    let owed_secs = late / (0.5 * 0.05) / (CAPACITY * PER_WORKER_PER_SEC);
    let next = stays.get(2).map_or_else(Instant::now, |s| s.0);
    let waited = (next - returned).as_secs_f64();
    // The windows of the signal's lag after the return are discarded, and
    // then clean windows carry what is owed (the dwell alone: about 5 s).
    assert!(
        waited >= 2.0 + 0.9 * owed_secs.min(16.0),
        "the next probe came {waited:.1} s after the first came back; its late failures owed {owed_secs:.1} s of clean attempts: {path:.1?}"
    );
}
