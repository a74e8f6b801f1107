//! Pushed counters from a real tool: Locust 2.47 (one process) runs a
//! locustfile that counts every resolved attempt and every failure in
//! `prometheus_client` counters (from Locust's `request` event, so no
//! stats cache is involved) and pushes them with `push_to_gateway` every
//! second, either
//!
//! - to Debian's Pushgateway 1.5.1 (`/usr/bin/prometheus-pushgateway`),
//!   which the controller scrapes (`kind = "prometheus"`), or
//! - to the controller itself (`kind = "push"`).
//!
//! The users are governed over Locust's REST API (`kind = "locust"`
//! control) against a fast-failing loopback target of known limit, with
//! both profiles. Window 2 s. Each run asserts the issue's three criteria
//! (see `tests/support/real.rs`), is bounded to 150 s, and stops every
//! process it started (Drop guards). Think time is zero.

use crate::support;

use std::time::{Duration, Instant};

use support::real::{
    govern, serial, settle_for, target_head, wait_http_ok, Locust, Watch, RUN_LIMIT,
};
use support::{free_port, require_installed, ChildGuard, LimitedTarget, TempDir};

/// Concurrent requests the target admits.
const LIMIT: usize = 10;

/// Pushes cumulative counters to `$PUSH_ADDR` (host:port) every second.
const LOCUSTFILE: &str = r#"
import os

import gevent
from locust import FastHttpUser, constant, events, task
from prometheus_client import CollectorRegistry, Counter, push_to_gateway

registry = CollectorRegistry()
attempts = Counter("locust_attempts", "Resolved attempts.", registry=registry)
failures = Counter("locust_failed_attempts", "Failed attempts.", registry=registry)


@events.request.add_listener
def count(exception=None, **_kwargs):
    attempts.inc()
    if exception is not None:
        failures.inc()


def push_forever():
    while True:
        gevent.sleep(1.0)
        try:
            push_to_gateway(os.environ["PUSH_ADDR"], job="locust", registry=registry, timeout=2)
        except Exception as e:  # the receiver may not be up yet
            print("push failed:", e)


@events.init.add_listener
def start_pushing(environment, **_kwargs):
    gevent.spawn(push_forever)


class Hit(FastHttpUser):
    # No think time: each user keeps one request in flight.
    wait_time = constant(0)

    @task
    def hit(self):
        self.client.get("/")
"#;

/// Where the counters go.
#[derive(Clone, Copy, PartialEq)]
enum Path {
    Pushgateway,
    Controller,
}

async fn push_run(path: Path, profile: &str) {
    let _serial = serial().await;
    let t0 = Instant::now();
    let mut gateway = None;
    let _gateway_dir;
    let listen = format!("127.0.0.1:{}", free_port());
    let push_addr = match path {
        Path::Pushgateway => {
            let Some(bin) = require_installed(
                "prometheus-pushgateway",
                std::path::Path::new("/usr/bin/prometheus-pushgateway"),
                "scripts/setup installs Debian's prometheus-pushgateway",
            ) else {
                return;
            };
            let dir = TempDir::new("pushgateway");
            let addr = format!("127.0.0.1:{}", free_port());
            let mut cmd = std::process::Command::new(bin);
            cmd.arg(format!("--web.listen-address={addr}"));
            gateway = Some(ChildGuard::spawn(
                "pushgateway",
                cmd,
                dir.path("pushgateway.log"),
            ));
            _gateway_dir = dir;
            let up = wait_http_ok(&format!("http://{addr}/-/ready"), Duration::from_secs(20)).await;
            assert!(
                up,
                "the Pushgateway never came up:\n{}",
                gateway.as_ref().unwrap().tail()
            );
            addr
        }
        Path::Controller => listen.clone(),
    };
    let target = LimitedTarget::fast_fail(LIMIT).await;
    let Some(mut locust) = Locust::start(
        LOCUSTFILE,
        &target.url(),
        0,
        &[("PUSH_ADDR", push_addr.clone())],
    )
    .await
    else {
        return;
    };
    let web = &locust.web;
    let signal = match path {
        Path::Pushgateway => format!(
            r#"kind = "prometheus"
url = "http://{push_addr}/metrics"
attempts = 'locust_attempts_total{{job="locust"}}'
failures = 'locust_failed_attempts_total{{job="locust"}}'
"#
        ),
        Path::Controller => r#"kind = "push"
job = "locust"
cumulative = true
attempts = 'locust_attempts_total'
failures = 'locust_failed_attempts_total'
"#
        .to_string(),
    };
    let config = format!(
        r#"{head}
[targets.signal]
{signal}
[targets.control]
kind = "locust"
url = "{web}"
"#,
        head = target_head("pushed", 40, "2s", profile).replace("127.0.0.1:0", &listen)
    );
    let label = match path {
        Path::Pushgateway => format!("Locust -> Pushgateway (scraped), profile {profile}"),
        Path::Controller => format!("Locust -> push signal, profile {profile}"),
    };
    let watch = Watch {
        settle: settle_for(profile, 50),
        tail: Duration::from_secs(25),
        deadline: t0 + RUN_LIMIT,
    };
    let m = govern(&label, &config, "pushed", &target, watch).await;
    assert!(locust.all_running(), "Locust died:\n{}", locust.tails());
    if let Some(g) = gateway.as_mut() {
        assert!(g.running(), "the Pushgateway died:\n{}", g.tail());
    }
    drop(locust);
    drop(gateway);
    m.assert_criteria();
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushgateway_scraped_default_profile() {
    push_run(Path::Pushgateway, "default").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushgateway_scraped_robust_profile() {
    push_run(Path::Pushgateway, "robust").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_signal_default_profile() {
    push_run(Path::Controller, "default").await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_signal_robust_profile() {
    push_run(Path::Controller, "robust").await;
}
