//! Artillery 2.0.34 (npm, pinned in `clients/artillery/`) governed through
//! the pull control by the shipped gate, `clients/artillery/throttle-gate.js`
//! (included verbatim in docs/tools/artillery.md), running the shipped
//! scenario, `clients/artillery/governed.yml`: 40 VUs (the ceiling) arrive
//! at once in one Artillery worker and loop on one request with no think
//! time; the gate holds at most the offer's requests in flight and serves
//! the attempts and failures it counted on 127.0.0.1, read with
//! `kind = "prometheus"`. The config is the one a new user writes (no
//! `profile` key, window 3 s) against a loopback wall of 10 concurrent
//! requests: the fast tier at the 10 ms wall, the goal runs at both walls
//! (full tier), judged by `support::goals`. Artillery is killed on every
//! exit path (a Drop guard).

use crate::support;

use std::process::Command;

use support::gated::{self, shipped};
use support::goals::{run_path, Length, Rig, Wall, CEILING};
use support::pull::repo;
use support::{free_port, require_installed, ChildGuard, TempDir};

/// Starts the shipped Artillery scenario against `target`, asking a
/// controller that will listen on a port chosen now.
async fn artillery(target: String) -> Option<Rig> {
    let bin = require_installed(
        "artillery",
        &repo().join("clients/artillery/node_modules/artillery/bin/run"),
        "scripts/setup installs artillery 2.0.34 from npm into clients/artillery/",
    )?;
    shipped("artillery/throttle-gate.js", "artillery.md");
    let scenario = shipped("artillery/governed.yml", "artillery.md");
    let dir = TempDir::new("artillery");
    let listen = format!("127.0.0.1:{}", free_port());
    let port = free_port();
    // The ceiling from the harness, whatever the shipped file says.
    let phases =
        format!(r#"{{"config":{{"phases":[{{"arrivalCount":{CEILING},"duration":1}}]}}}}"#);
    let mut cmd = Command::new("node");
    cmd.current_dir(&dir.0)
        .env("ARTILLERY_DISABLE_TELEMETRY", "true")
        .env("NO_COLOR", "1")
        .env(
            "THROTTLE_OFFER_URL",
            format!("http://{listen}/api/v1/targets/artillery/offer"),
        )
        .env("THROTTLE_CLIENT", "artillery-test")
        .env("THROTTLE_METRICS", format!("127.0.0.1:{port}"))
        .env("THROTTLE_DURATION", "900")
        .arg(&bin)
        .args(["run", "--target"])
        .arg(target.trim_end_matches('/'))
        .arg("--overrides")
        .arg(phases)
        .arg(&scenario);
    let tool = ChildGuard::spawn("artillery", cmd, dir.path("artillery.log"));
    let metrics_url = format!("http://127.0.0.1:{port}/metrics");
    Some(
        gated::rig(
            "artillery",
            "Artillery 2.0.34, the shipped gate through the pull control",
            metrics_url,
            listen,
            tool,
            dir,
        )
        .await,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artillery_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Fast, artillery).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artillery_goals_at_the_1ms_wall() {
    run_path(Wall::OneMs, Length::Goals { live: false }, artillery).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artillery_goals_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Goals { live: false }, artillery).await;
}
