//! The engine against tools that misbehave, over real sockets on 127.0.0.1:
//! writes applied late, never applied, or hanging; read-backs beyond the
//! bounds or impossible; and a second governor on the same tool.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{get_text, metric, target_status, wait_until, FakeTool, Fault};
use throttle_governor::config::Config;
use throttle_governor::report::SteadyRule;
use throttle_governor::runtime::supervisor::{self, Ended, RunOptions, Running, StopWhen};
use tokio_util::sync::CancellationToken;

fn config(tool: &FakeTool, name: &str, ceiling: u32, window_ms: u64, extra: &str) -> Config {
    Config::parse(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}",
        tool.target_toml(name, ceiling, window_ms, extra)
    ))
    .unwrap()
}

async fn start(cfg: &Config) -> Running {
    supervisor::start(cfg, RunOptions::default(), None)
        .await
        .unwrap()
}

/// Samples the tool's workers every 10 ms: (seconds since `t0`, workers).
fn sample_workers(
    tool: &FakeTool,
    t0: Instant,
    stop: CancellationToken,
) -> Arc<Mutex<Vec<(f64, f64)>>> {
    let samples = Arc::new(Mutex::new(Vec::new()));
    let (s, state) = (samples.clone(), tool.state.clone());
    tokio::spawn(async move {
        let mut iv = tokio::time::interval(Duration::from_millis(10));
        while !stop.is_cancelled() {
            iv.tick().await;
            let w = state.lock().unwrap().workers;
            s.lock().unwrap().push((t0.elapsed().as_secs_f64(), w));
        }
    });
    samples
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_applies_writes_late_gets_no_up_on_a_window_at_the_old_offer() {
    let tool = FakeTool::start(1e6, 1.0).await;
    tool.set_fault(Fault::LateApply(Duration::from_millis(900)));
    let window = 0.4;
    let cfg = config(&tool, "late", 64, 400, "");
    let t0 = Instant::now();
    let stop = CancellationToken::new();
    let samples = sample_workers(&tool, t0, stop.clone());
    let running = start(&cfg).await;
    tokio::time::sleep(Duration::from_secs(9)).await;
    let history = running.telemetry.history("late");
    running.shutdown(Duration::from_secs(5)).await;
    stop.cancel();
    let samples = samples.lock().unwrap().clone();
    let ups: Vec<_> = history.iter().filter(|r| r.decision == "up").collect();
    assert!(ups.len() >= 3, "too few Ups to judge: {history:?}");
    for up in &ups {
        // The tool's workers over the window that decided this Up (with a
        // margin for the two clocks) must all be the offer it stepped from.
        let (from, to) = (up.time_secs - window + 0.05, up.time_secs - 0.05);
        let ran: Vec<f64> = samples
            .iter()
            .filter(|(t, _)| (from..=to).contains(t))
            .map(|(_, w)| *w)
            .collect();
        assert!(!ran.is_empty());
        assert!(
            ran.iter().all(|w| *w == up.offer),
            "Up at {:.2}s stepped from {} but the tool ran {ran:?}",
            up.time_secs,
            up.offer
        );
    }
}

/// A tool whose writes never take effect: the offer shown is what it runs,
/// and the run is never steady nor given a capacity.
async fn never_confirmed(fault: Fault, name: &str) {
    let tool = FakeTool::start(1e6, 1.0).await;
    tool.set_fault(fault);
    let cfg = config(&tool, name, 200, 200, "");
    let running = start(&cfg).await;
    let rule = SteadyRule {
        windows: 5,
        band: 0.1,
    };
    let ended = running
        .wait(
            StopWhen {
                steady: Some(rule),
                after: Some(Duration::from_secs(6)),
            },
            &CancellationToken::new(),
        )
        .await;
    let ctl = running.addr;
    let offer = metric(ctl, &format!("throttle_offer{{target=\"{name}\"}}")).await;
    let status = target_status(ctl, name).await;
    let report = running.report(&rule);
    running.shutdown(Duration::from_secs(5)).await;
    assert_eq!(ended, Ended::Deadline, "{name}: reported steady: {status}");
    assert_eq!(tool.workers(), 1.0);
    assert_eq!(
        offer,
        Some(1.0),
        "{name}: the offer shown is not the tool's: {status}"
    );
    let t = &report.targets[0];
    assert!(
        !t.steady && !t.within_bound,
        "{name}: a capacity from unconfirmed writes: {}",
        report.to_json()
    );
    assert_eq!(status["writes_confirmed"], false, "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_api_that_never_applies_a_write_yields_no_capacity() {
    never_confirmed(Fault::IgnoreWrites, "ignores").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_api_that_hangs_yields_no_capacity() {
    never_confirmed(Fault::SlowWrites(Duration::from_secs(30)), "hangs").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offers_stay_within_floor_and_ceiling_whatever_the_tool_reports() {
    let tool = FakeTool::start(1e6, 1.0).await;
    let cfg = config(&tool, "bounds", 20, 150, "");
    let running = start(&cfg).await;
    let ctl = running.addr;
    let at_ceiling = wait_until(Duration::from_secs(10), || async { tool.workers() == 20.0 }).await;
    assert!(at_ceiling, "{}", target_status(ctl, "bounds").await);
    let offer = || async {
        metric(ctl, "throttle_offer{target=\"bounds\"}")
            .await
            .unwrap_or(f64::NAN)
    };

    // An outside write of 1,000 workers: stepped from at the ceiling, and
    // the ceiling written back; never 250.
    tool.state.lock().unwrap().workers = 1000.0;
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        seen.push(offer().await);
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    assert!(seen.iter().all(|o| (1.0..=20.0).contains(o)), "{seen:?}");
    assert_eq!(tool.workers(), 20.0, "the ceiling was not restored");

    // Read-backs that cannot be offers, or lie beyond the ceiling.
    for bad in [-5.0, 1e12] {
        tool.set_fault(Fault::ReadBack(bad));
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            let o = offer().await;
            assert!((1.0..=20.0).contains(&o), "read-back {bad}: offer {o}");
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    }
    let invalid = metric(
        ctl,
        "throttle_control_invalid_readings_total{target=\"bounds\"}",
    )
    .await;
    assert!(
        invalid.unwrap_or(0.0) >= 1.0,
        "{}",
        get_text(&format!("http://{ctl}/metrics")).await
    );
    tool.set_fault(Fault::None);
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_governors_on_one_tool_are_detected_and_do_not_race() {
    // Two governors that disagree: `a` may climb to 100, `b` holds the
    // tool at or below 10. Each sees the other's writes as changes from
    // outside, and without detection they would fight for ever.
    let tool = FakeTool::start(30.0, 1.0).await;
    let a = start(&config(&tool, "a", 100, 200, "")).await;
    let b = start(&config(&tool, "b", 10, 330, "")).await;
    let conflict = |ctl, name: &'static str| async move {
        metric(
            ctl,
            &format!("throttle_outside_writer_conflict{{target=\"{name}\"}}"),
        )
        .await
            == Some(1.0)
    };
    let flagged = |ctl| async move {
        let (ca, cb) = (conflict(ctl, "a").await, conflict(ctl, "b").await);
        ca || cb
    };
    let detected = wait_until(Duration::from_secs(30), || async {
        flagged(a.addr).await || flagged(b.addr).await
    })
    .await;
    let (sa, sb) = (
        target_status(a.addr, "a").await,
        target_status(b.addr, "b").await,
    );
    // The flagged governor stops writing: its write count stays put.
    let (who, ctl) = if conflict(a.addr, "a").await {
        ("a", a.addr)
    } else {
        ("b", b.addr)
    };
    let writes = |ctl| async move {
        let text = get_text(&format!("http://{ctl}/metrics")).await;
        text.lines()
            .filter(|l| {
                l.starts_with("throttle_control_writes_total{")
                    && l.contains(&format!("target=\"{who}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>()
    };
    let before = writes(ctl).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let still = conflict(ctl, who).await;
    let after = writes(ctl).await;
    a.shutdown(Duration::from_secs(5)).await;
    b.shutdown(Duration::from_secs(5)).await;
    assert!(detected, "no conflict flagged:\n{sa}\n{sb}");
    if still {
        assert_eq!(before, after, "{who} kept writing while flagged");
    }
}
