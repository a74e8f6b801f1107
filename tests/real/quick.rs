//! `run` without a file (issue 29): the binary itself, started the way a
//! new user starts it (`run --locust URL --ceiling 40`, `run --k6 URL
//! --ceiling 40`, with `--until-steady --report-json`), governs a real
//! Locust and a real k6 against the fast tier's 1 ms wall of 10 concurrent
//! requests; the report's capacity must lie within ±15 % of the wall, as in
//! the fast tier of `support::goals`. Then `--print-config` graduates to a
//! file: the printed text passes `check`, and the same Locust run driven by
//! `run --config` of that file reaches the same figure within the same
//! tolerance.
//!
//! Every process (the tool, the controller) is stopped on every exit path
//! (their guards); the controller's run is bounded by `--max-duration`, and
//! waiting for it by a little more.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::goals::{Wall, CEILING, LIMIT};
use support::real::{record_run, serial, Locust, K6, LOCUSTFILE, RUN_LIMIT};
use support::{free_port, ChildGuard, TempDir, BIN};

/// Runs the controller binary with `args` plus a loopback listen address,
/// `--until-steady`, `--max-duration` and `--report-json`; waits for it to
/// exit (bounded) and returns the report's entry for `name`.
async fn governed_by_the_binary(label: &str, args: &[String], name: &str) -> serde_json::Value {
    let dir = TempDir::new("quick");
    let report = dir.path("report.json");
    let mut cmd = Command::new(BIN);
    cmd.arg("run")
        .args(args)
        .args(["--until-steady", "--max-duration"])
        .arg(format!("{}s", RUN_LIMIT.as_secs()))
        .arg("--report-json")
        .arg(&report)
        .env("RUST_LOG", "info");
    if !args.iter().any(|a| a == "--config") {
        cmd.args(["--listen", &format!("127.0.0.1:{}", free_port())]);
    }
    let mut controller = ChildGuard::spawn("throttle-governor", cmd, dir.path("controller.log"));
    let deadline = Instant::now() + RUN_LIMIT + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = controller.child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let log = controller.tail();
    assert!(
        status.is_some_and(|s| s.success()),
        "{label}: the controller did not exit 0 in time ({status:?}):\n{log}"
    );
    let text = std::fs::read_to_string(&report)
        .unwrap_or_else(|e| panic!("{label}: no report ({e}):\n{log}"));
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut entry = json["targets"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["name"] == name).cloned())
        .unwrap_or_else(|| panic!("{label}: no target {name} in the report:\n{text}"));
    if let Some(o) = entry.as_object_mut() {
        o.remove("history");
    }
    entry
}

/// Asserts the report's capacity figure is within ±15 % of the wall (the
/// fast tier's band), after recording it.
fn assert_capacity(label: &str, entry: &serde_json::Value) {
    let limit = LIMIT as f64;
    let capacity = entry["capacity"].as_f64();
    record_run(&format!(
        "{label}: limit {limit}; capacity {}; verdict {}",
        capacity.map_or("none".to_string(), |c| format!("{c:.1}")),
        entry["verdict"]
    ));
    match capacity {
        Some(c) if (c - limit).abs() <= 0.15 * limit => {}
        _ => panic!("{label}: the report's capacity is not within ±15% of {limit}: {entry}"),
    }
}

/// The flags a new user types for `tool` at `url`.
fn flags(tool: &str, url: &str) -> Vec<String> {
    vec![
        format!("--{tool}"),
        url.to_string(),
        "--ceiling".into(),
        CEILING.to_string(),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locust_without_a_file_at_the_1ms_wall() {
    let _serial = serial().await;
    let target = Wall::OneMs.start().await;
    let Some(mut locust) = Locust::start(LOCUSTFILE, &target.url(), 0, &[]).await else {
        return;
    };
    let label = "run --locust URL --ceiling 40, 1 ms wall";
    let entry = governed_by_the_binary(label, &flags("locust", &locust.web), "locust").await;
    assert!(locust.all_running(), "Locust died:\n{}", locust.tails());
    assert_capacity(label, &entry);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_without_a_file_at_the_1ms_wall() {
    let _serial = serial().await;
    let target = Wall::OneMs.start().await;
    let Some(mut k6) = K6::start(&target.url(), &[], &[]).await else {
        return;
    };
    let label = "run --k6 URL --ceiling 40, 1 ms wall";
    let entry = governed_by_the_binary(label, &flags("k6", &k6.api), "k6").await;
    assert!(k6.proc.running(), "k6 died:\n{}", k6.proc.tail());
    assert_capacity(label, &entry);
}

/// `--print-config` of the Locust flags passes `check`, and governs the
/// same real Locust to the same figure from the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locust_from_the_printed_config_at_the_1ms_wall() {
    let _serial = serial().await;
    let target = Wall::OneMs.start().await;
    let Some(mut locust) = Locust::start(LOCUSTFILE, &target.url(), 0, &[]).await else {
        return;
    };
    let dir = TempDir::new("quick-printed");
    let mut print = flags("locust", &locust.web);
    print.extend([
        "--listen".to_string(),
        format!("127.0.0.1:{}", free_port()),
        "--print-config".to_string(),
    ]);
    let printed = Command::new(BIN).arg("run").args(&print).output().unwrap();
    assert!(
        printed.status.success(),
        "{}",
        String::from_utf8_lossy(&printed.stderr)
    );
    let file = dir.path("locust.toml");
    std::fs::write(&file, &printed.stdout).unwrap();
    check_passes(&file);
    let label = "run --config (printed by --print-config), 1 ms wall";
    let args = vec!["--config".to_string(), file.display().to_string()];
    let entry = governed_by_the_binary(label, &args, "locust").await;
    assert!(locust.all_running(), "Locust died:\n{}", locust.tails());
    assert_capacity(label, &entry);
}

fn check_passes(file: &Path) {
    let out = Command::new(BIN)
        .args(["check", "--config"])
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "check of the printed config failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
