//! Early verdicts over real sockets (issue 26, item 1): a fake tool whose
//! failures grow as soon as its workers pass a known capacity, governed at
//! 1 s windows. With `early_verdicts = true` the window after the Up that
//! crosses the capacity closes before its end (`throttle_early_verdicts_total`
//! counts it, the reads within it are counted too) and the offer backs off;
//! with it off, the same climb backs off at a full window and neither
//! counter moves. Both expositions pass promtool.

use crate::support;

use std::time::{Duration, Instant};

use support::{get_text, metric, FakeTool};

const CAPACITY: f64 = 6.0;

/// Governs the fake until its workers went over the capacity and came back
/// down (or 30 s); returns (early verdicts, early reads, failed attempts
/// while over the capacity, the fake's worker history).
async fn climb_into_the_wall(early: bool) -> (f64, f64, f64, Vec<f64>) {
    let tool = FakeTool::start(CAPACITY, 1.0).await;
    let extra = format!("profile = \"robust\"\nearly_verdicts = {early}");
    let running = tool.govern(40, 1000, &extra).await;
    let ctl = running.addr;
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(30);
    let mut over_at: Option<f64> = None;
    let mut failed_over = 0.0;
    while Instant::now() < deadline {
        let (workers, failures) = {
            let st = tool.state.lock().unwrap();
            (st.workers, st.failures)
        };
        match over_at {
            None if workers > CAPACITY => over_at = Some(failures),
            Some(start) if workers <= CAPACITY => {
                failed_over = failures - start;
                break;
            }
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let exposition = get_text(&format!("http://{ctl}/metrics")).await;
    support::promtool_check_metrics(&exposition);
    let verdicts = metric(ctl, "throttle_early_verdicts_total{target=\"t\"}").await;
    let reads = metric(ctl, "throttle_early_reads_total{target=\"t\"}").await;
    running.shutdown(Duration::from_secs(5)).await;
    let history = tool
        .state
        .lock()
        .unwrap()
        .workers_between(t0, Instant::now());
    assert!(
        over_at.is_some() && failed_over > 0.0,
        "early {early}: the climb never crossed the capacity and came back: {history:?}"
    );
    (
        verdicts.expect("throttle_early_verdicts_total is exported from the start"),
        reads.expect("throttle_early_reads_total is exported from the start"),
        failed_over,
        history,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certain_breach_closes_the_window_early_and_only_when_asked() {
    let (verdicts, reads, failed_on, history) = climb_into_the_wall(true).await;
    assert!(verdicts >= 1.0, "no early verdict: {history:?}");
    assert!(reads >= 1.0, "no reads within the watched window");
    let (verdicts_off, reads_off, failed_off, history_off) = climb_into_the_wall(false).await;
    assert_eq!(
        (verdicts_off, reads_off),
        (0.0, 0.0),
        "early verdicts are off unless asked: {history_off:?}"
    );
    // Reported, not asserted: what the touch of the wall cost each way.
    eprintln!(
        "early verdicts: failed attempts over the capacity {failed_on} (on) against {failed_off} (off); {history:?} / {history_off:?}"
    );
}
