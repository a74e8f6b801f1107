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
//! control) with the config a new user writes (no `profile` key, window
//! 3 s), against a loopback wall of 10 concurrent requests: the fast tier
//! runs the push signal at the 1 ms wall and the Pushgateway at the 10 ms
//! wall; the full tier runs the push signal's goal runs at both walls. Every
//! process is stopped on every exit path (Drop guards). Think time is zero.

use crate::support;

use std::time::Duration;

use support::goals::{run_path, Length, Rig, Wall};
use support::real::{wait_http_ok, Locust};
use support::{free_port, require_installed, ChildGuard, TempDir};

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

/// Locust pushing its counters to the controller (`kind = "push"`).
async fn push_signal(target: String) -> Option<Rig> {
    let listen = format!("127.0.0.1:{}", free_port());
    let locust = Locust::start(LOCUSTFILE, &target, 0, &[("PUSH_ADDR", listen.clone())]).await?;
    let web = &locust.web;
    let tables = format!(
        r#"[targets.signal]
kind = "push"
job = "locust"
cumulative = true
attempts = 'locust_attempts_total'
failures = 'locust_failed_attempts_total'

[targets.control]
kind = "locust"
url = "{web}"
"#
    );
    Some(Rig {
        name: "pushed",
        path: "Locust -> push signal".to_string(),
        tables,
        listen: Some(listen),
        procs: vec![Box::new(locust)],
        keep: Vec::new(),
    })
}

/// Locust pushing its counters to Debian's Pushgateway, which the
/// controller scrapes (`kind = "prometheus"`).
async fn pushgateway(target: String) -> Option<Rig> {
    let bin = require_installed(
        "prometheus-pushgateway",
        std::path::Path::new("/usr/bin/prometheus-pushgateway"),
        "scripts/setup installs Debian's prometheus-pushgateway",
    )?;
    let dir = TempDir::new("pushgateway");
    let gateway_addr = format!("127.0.0.1:{}", free_port());
    let mut cmd = std::process::Command::new(bin);
    cmd.arg(format!("--web.listen-address={gateway_addr}"));
    let gateway = ChildGuard::spawn("pushgateway", cmd, dir.path("pushgateway.log"));
    let up = wait_http_ok(
        &format!("http://{gateway_addr}/-/ready"),
        Duration::from_secs(20),
    )
    .await;
    assert!(up, "the Pushgateway never came up:\n{}", gateway.tail());
    let locust = Locust::start(
        LOCUSTFILE,
        &target,
        0,
        &[("PUSH_ADDR", gateway_addr.clone())],
    )
    .await?;
    let web = &locust.web;
    let tables = format!(
        r#"[targets.signal]
kind = "prometheus"
url = "http://{gateway_addr}/metrics"
attempts = 'locust_attempts_total{{job="locust"}}'
failures = 'locust_failed_attempts_total{{job="locust"}}'

[targets.control]
kind = "locust"
url = "{web}"
"#
    );
    Some(Rig {
        name: "pushed",
        path: "Locust -> Pushgateway (scraped)".to_string(),
        tables,
        listen: None,
        procs: vec![Box::new(locust), Box::new(gateway)],
        keep: vec![Box::new(dir)],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_signal_at_the_1ms_wall() {
    run_path(Wall::OneMs, Length::Fast, push_signal).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushgateway_scraped_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Fast, pushgateway).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_signal_goals_at_the_1ms_wall() {
    run_path(Wall::OneMs, Length::Goals { live: false }, push_signal).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_signal_goals_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Goals { live: false }, push_signal).await;
}
