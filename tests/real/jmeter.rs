//! Apache JMeter 5.6.2 (installed by scripts/setup into `clients/jmeter/`)
//! governed through the pull control by the shipped gate,
//! `clients/jmeter/src/dev/throttlegovernor/jmeter/ThrottleGate.java`
//! (built into `clients/jmeter/target/throttle-gate.jar`), running the
//! shipped plan, `clients/jmeter/governed.jmx`, in non-GUI mode: 40 threads
//! (the ceiling) loop on one HTTP request with no think time; a JSR223
//! PreProcessor takes a slot of the gate (at most the offer's samples in
//! flight) and a JSR223 Listener frees it and counts the attempt and the
//! failure, served on 127.0.0.1 and read with `kind = "prometheus"`. Both
//! files are included verbatim in docs/tools/jmeter.md. The config is the
//! one a new user writes (no `profile` key, window 3 s) against a loopback
//! wall of 10 concurrent requests: the fast tier at the 10 ms wall, the
//! goal runs at both walls (full tier), judged by `support::goals`. JMeter
//! is killed on every exit path (a Drop guard).

use crate::support;

use std::process::Command;

use support::gated::{self, shipped};
use support::goals::{run_path, Length, Rig, Wall, CEILING};
use support::pull::repo;
use support::{free_port, require_installed, require_tool, ChildGuard, TempDir};

/// Where scripts/setup puts JMeter.
const JMETER_JAR: &str = "clients/jmeter/.jmeter/apache-jmeter-5.6.2/bin/ApacheJMeter.jar";
/// Where scripts/setup builds the gate.
const GATE_JAR: &str = "clients/jmeter/target/throttle-gate.jar";

/// Starts the shipped JMeter plan against `target`, asking a controller
/// that will listen on a port chosen now.
async fn jmeter(target: String) -> Option<Rig> {
    let how = "scripts/setup installs JMeter 5.6.2 into clients/jmeter/ and builds the gate";
    let jmeter = require_installed("JMeter", &repo().join(JMETER_JAR), how)?;
    let gate = require_installed("the JMeter gate", &repo().join(GATE_JAR), how)?;
    if !require_tool("java") {
        return None;
    }
    shipped(
        "jmeter/src/dev/throttlegovernor/jmeter/ThrottleGate.java",
        "jmeter.md",
    );
    let plan = shipped("jmeter/governed.jmx", "jmeter.md");
    let (host, port) = target
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .rsplit_once(':')
        .expect("the wall's URL has a port");
    let dir = TempDir::new("jmeter");
    let listen = format!("127.0.0.1:{}", free_port());
    let metrics = free_port();
    let mut cmd = Command::new("java");
    cmd.current_dir(&dir.0)
        .args(["-Xms256m", "-Xmx512m", "-Djava.awt.headless=true", "-jar"])
        .arg(&jmeter)
        .arg("-n")
        .arg("-t")
        .arg(&plan)
        .arg("-j")
        .arg(dir.path("jmeter.log"))
        .arg(format!("-Juser.classpath={}", gate.display()))
        .arg(format!(
            "-Jthrottle.offer_url=http://{listen}/api/v1/targets/jmeter/offer"
        ))
        .arg("-Jthrottle.client=jmeter-test")
        .arg(format!("-Jthrottle.metrics=127.0.0.1:{metrics}"))
        .arg(format!("-Jthreads={CEILING}"))
        .arg("-Jduration=900")
        .arg(format!("-Jtarget_host={host}"))
        .arg(format!("-Jtarget_port={port}"))
        // No shutdown listener on UDP 4445: several runs may share the machine.
        .arg("-Jjmeterengine.nongui.port=0");
    let tool = ChildGuard::spawn("jmeter", cmd, dir.path("jmeter.out"));
    let metrics_url = format!("http://127.0.0.1:{metrics}/metrics");
    Some(
        gated::rig(
            "jmeter",
            "JMeter 5.6.2, the shipped gate through the pull control",
            metrics_url,
            listen,
            tool,
            dir,
        )
        .await,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jmeter_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Fast, jmeter).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jmeter_goals_at_the_1ms_wall() {
    run_path(Wall::OneMs, Length::Goals { live: false }, jmeter).await;
}

#[ignore = "full tier: scripts/test --full"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jmeter_goals_at_the_10ms_wall() {
    run_path(Wall::TenMs, Length::Goals { live: false }, jmeter).await;
}
