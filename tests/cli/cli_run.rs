//! The binary end to end: `demo`, `check`, `sim` + `run --until-steady`,
//! and the HTML report in headless Chromium. Real processes, real sockets.

use crate::support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{free_port, ChildGuard, BIN};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tg-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Runs a command with a hard time limit; returns (status, stdout, stderr).
fn run_bounded(cmd: &mut Command, limit: Duration) -> (Option<i32>, String, String) {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            return (
                status.code(),
                String::from_utf8_lossy(&out.stdout).into(),
                String::from_utf8_lossy(&out.stderr).into(),
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "timed out after {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn demo_report(model: &str, capacity: f64) -> serde_json::Value {
    let json = tmp(&format!("demo-{model}.json"));
    let (code, stdout, stderr) = run_bounded(
        Command::new(BIN).args([
            "demo",
            "--model",
            model,
            "--capacity",
            &capacity.to_string(),
            "--window",
            "200ms",
            "--duration",
            "25s",
            "--report-json",
            json.to_str().unwrap(),
        ]),
        Duration::from_secs(60),
    );
    assert_eq!(
        code,
        Some(0),
        "demo failed\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(stdout.contains("Capacity report"), "{stdout}");
    assert!(
        stderr.contains("backing-off"),
        "no back-off in the movement log:\n{stderr}"
    );
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

fn assert_steady_near(report: &serde_json::Value, capacity: f64) {
    let t = &report["targets"][0];
    assert_eq!(t["steady"], true, "{t:#}");
    assert_eq!(t["within_bound"], true, "{t:#}");
    let offer = t["steady_offer"].as_f64().unwrap();
    assert!(
        (offer - capacity).abs() <= 0.25 * capacity,
        "steady offer {offer} not within ±25% of {capacity}"
    );
    let history = t["history"].as_array().unwrap();
    assert!(history.len() as u64 == t["windows"].as_u64().unwrap() && history.len() >= 10);
    for key in [
        "time_secs",
        "offer",
        "attempts",
        "failures",
        "frac",
        "decision",
    ] {
        assert!(history[0].get(key).is_some(), "history lacks {key}");
    }
    assert!(t["observed_failure_ratio"].as_f64().unwrap() <= 0.05);
    assert!(t["throughput_per_sec"].as_f64().unwrap() > 0.0);
    // The capacity figure and its evidence.
    let cap = t["capacity"].as_f64().unwrap();
    assert!(
        (cap - capacity).abs() <= 0.25 * capacity,
        "capacity {cap} not within ±25% of {capacity}"
    );
    let at = &t["evidence"]["capacity"];
    assert!(at["windows"].as_u64().unwrap() >= 2, "{at:#}");
    assert!(at["failure_ratio"].as_f64().unwrap() <= 0.05, "{at:#}");
    let (lo, hi) = (
        at["interval"]["low"].as_f64().unwrap(),
        at["interval"]["high"].as_f64().unwrap(),
    );
    assert!(
        lo <= at["failure_ratio"].as_f64().unwrap() && hi >= lo,
        "{at:#}"
    );
    assert!(t["why_not_steady"].is_null() && t["settled"]["windows"].as_u64().unwrap() >= 10);
}

#[test]
fn demo_cliff_finds_capacity() {
    assert_steady_near(&demo_report("cliff", 120.0), 120.0);
}

#[test]
fn demo_rejector_finds_capacity() {
    assert_steady_near(&demo_report("rejector", 60.0), 60.0);
}

#[test]
fn demo_reports_not_steady_honestly() {
    // Too short to become steady: the report must say so, with no figure.
    let json = tmp("short.json");
    let (code, stdout, _) = run_bounded(
        Command::new(BIN).args([
            "demo",
            "--window",
            "200ms",
            "--duration",
            "1s",
            "--report-json",
            json.to_str().unwrap(),
        ]),
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(0));
    assert!(stdout.contains("never became steady"), "{stdout}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    assert_eq!(r["targets"][0]["steady"], false);
    assert!(r["targets"][0]["steady_offer"].is_null());
    assert!(r["targets"][0]["capacity"].is_null());
    assert_eq!(r["targets"][0]["not_steady_reason"], "too-few-windows");
    assert!(
        stdout.contains("too few windows"),
        "the report must say why: {stdout}"
    );
}

#[test]
fn check_names_every_bad_field_and_exits_2() {
    let good = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/example.toml"))
        .unwrap();
    let path = tmp("good.toml");
    std::fs::write(&path, &good).unwrap();
    let (code, stdout, stderr) = run_bounded(
        Command::new(BIN).args(["check", "--config", path.to_str().unwrap()]),
        Duration::from_secs(10),
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("valid, 1 target"), "{stdout}");

    let bad = good
        .replace("high = 0.05", "high = 1.5")
        .replace("floor = 1\n", "floor = -1\n")
        .replace("window = \"2s\"", "window = \"soon\"")
        .replace(
            "url = \"http://127.0.0.1:9100/metrics\"",
            "url = \"not a url\"",
        );
    // A second target with other problems: both must be reported.
    let second = good[good.find("[[targets]]").unwrap()..]
        .replace("name = \"checkout\"", "name = \"search\"")
        .replace("json_pointer = \"/workers\"", "json_pointer = \"workers\"")
        .replace("method = \"PUT\"", "method = \"P UT\"");
    let path = tmp("bad.toml");
    std::fs::write(&path, format!("{bad}\n{second}")).unwrap();
    let (code, _, stderr) = run_bounded(
        Command::new(BIN).args(["check", "--config", path.to_str().unwrap()]),
        Duration::from_secs(10),
    );
    assert_eq!(code, Some(2), "{stderr}");
    // serde stops at the first type error within one target ("soon"), so the
    // first target reports that; the second reports each semantic problem.
    assert!(
        stderr.contains("targets[checkout]") && stderr.contains("soon"),
        "{stderr}"
    );
    assert!(
        stderr.contains("targets[search].control.read_back.json_pointer"),
        "{stderr}"
    );
    assert!(
        stderr.contains("targets[search].control.method"),
        "{stderr}"
    );

    // With the type error fixed, every semantic problem of the first target shows.
    let bad = bad.replace("window = \"soon\"", "window = \"2s\"");
    std::fs::write(&path, &bad).unwrap();
    let (code, _, stderr) = run_bounded(
        Command::new(BIN).args(["check", "--config", path.to_str().unwrap()]),
        Duration::from_secs(10),
    );
    assert_eq!(code, Some(2));
    for field in [
        "targets[checkout].high",
        "targets[checkout].floor",
        "targets[checkout].signal.url",
    ] {
        assert!(stderr.contains(field), "{field} not reported:\n{stderr}");
    }
}

/// Starts `sim` as its own process and runs `run --until-steady` against
/// it with config/example.toml; returns the JSON report and the HTML path.
fn run_against_sim(
    model: &str,
    capacity: u32,
    ceiling: u32,
    tag: &str,
    extra: &[&str],
) -> (serde_json::Value, PathBuf) {
    let port = free_port();
    let sim = Command::new(BIN)
        .args([
            "sim",
            "--model",
            model,
            "--capacity",
            &capacity.to_string(),
            "--tick",
            "20ms",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let _guard = ChildGuard::new(sim, "sim");
    let cfg = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/example.toml"))
        .unwrap()
        .replace("127.0.0.1:9100", &format!("127.0.0.1:{port}"))
        .replace("127.0.0.1:9464", "127.0.0.1:0")
        .replace("window = \"2s\"", "window = \"250ms\"")
        .replace("ceiling = 256", &format!("ceiling = {ceiling}"));
    let path = tmp(&format!("run-{tag}.toml"));
    std::fs::write(&path, cfg).unwrap();
    let json = tmp(&format!("run-{tag}.json"));
    let html = tmp(&format!("run-{tag}.html"));
    // Wait for the sim to listen.
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "sim never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, _, stderr) = run_bounded(
        Command::new(BIN)
            .args([
                "run",
                "--config",
                path.to_str().unwrap(),
                "--until-steady",
                "--max-duration",
                "50s",
                "--report-json",
                json.to_str().unwrap(),
                "--report-html",
                html.to_str().unwrap(),
            ])
            .args(extra),
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "{stderr}");
    // Piped, `run` writes plain log lines: no terminal view, no colour.
    assert!(
        !stderr.contains('\x1b'),
        "an ANSI escape in piped output:\n{stderr}"
    );
    let r = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (r, html)
}

#[test]
fn run_until_steady_against_a_standalone_sim_process() {
    let (r, html) = run_against_sim("rejector", 50, 256, "plateau", &[]);
    assert_steady_near(&r, 50.0);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg"));
    render_in_chromium(&html);
}

/// One runtime thread is the default; more (here one per core, and two)
/// govern the same way: the same plateau, reached and reported.
#[test]
fn run_with_several_worker_threads_finds_the_same_capacity() {
    for threads in ["0", "2"] {
        let (r, _) = run_against_sim(
            "rejector",
            50,
            256,
            &format!("threads-{threads}"),
            &["--worker-threads", threads],
        );
        assert_steady_near(&r, 50.0);
    }
}

/// `run --help` says what the thread count is for, and its environment
/// variable; a count that is not a number is a usage error (2).
#[test]
fn worker_threads_is_documented_and_checked() {
    let (code, stdout, _) = run_bounded(
        Command::new(BIN).args(["run", "--help"]),
        Duration::from_secs(10),
    );
    assert_eq!(code, Some(0));
    assert!(stdout.contains("--worker-threads <N>"), "{stdout}");
    assert!(stdout.contains("THROTTLE_WORKER_THREADS"), "{stdout}");
    let (code, _, stderr) = run_bounded(
        Command::new(BIN).args(["run", "--config", "x.toml", "--worker-threads", "many"]),
        Duration::from_secs(10),
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--worker-threads"), "{stderr}");
}

/// A small integer wall gives a sawtooth (10 <-> 11 or 9 10 11, back-off)
/// with no Holds: the old rule never fired on it. The new one must give
/// the wall as the capacity, with the failing step up as evidence.
#[test]
fn run_until_steady_gives_a_sawtooth_s_capacity() {
    let (r, _) = run_against_sim("rejector", 10, 40, "sawtooth", &[]);
    let t = &r["targets"][0];
    let cap = t["capacity"]
        .as_f64()
        .unwrap_or_else(|| panic!("no capacity: {}", t["verdict"]));
    assert!(
        (8.0..=12.0).contains(&cap),
        "capacity {cap} not within ±20% of 10: {}",
        t["verdict"]
    );
    assert!(
        t["settled"]["backoffs"].as_u64().unwrap() >= 2,
        "not a sawtooth: {t:#}"
    );
    let up = &t["evidence"]["next_step_up"];
    assert!(up["offer"].as_f64().unwrap() > cap, "{up:#}");
    assert_eq!(up["within_bound"], false, "{up:#}");
    assert!(t["evidence"]["capacity"]["failure_ratio"].as_f64().unwrap() <= 0.05);
}

/// Renders the report in headless Chromium and checks the SVG chart is in
/// the rendered DOM with a non-empty offer line.
fn render_in_chromium(html: &std::path::Path) {
    let Some(chromium) = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| support::require_tool_quiet(c))
    else {
        support::require_tool("chromium");
        return;
    };
    let profile = tmp("chromium-profile");
    let (code, dom, stderr) = run_bounded(
        Command::new(chromium).args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--user-data-dir={}", profile.display()),
            "--dump-dom",
            &format!("file://{}", html.display()),
        ]),
        Duration::from_secs(60),
    );
    assert_eq!(code, Some(0), "chromium failed: {stderr}");
    assert!(dom.contains("<svg"), "no SVG in the rendered DOM:\n{dom}");
    let points = dom
        .split("class=\"offer\"")
        .nth(1)
        .and_then(|rest| rest.split("points=\"").nth(1))
        .and_then(|rest| rest.split('"').next())
        .unwrap_or("");
    assert!(
        points.split(' ').count() >= 10,
        "offer line is empty: {points:?}"
    );
    // The evidence the capacity rests on is in the rendered page.
    let evidence = dom
        .split("class=\"evidence\"")
        .nth(1)
        .and_then(|rest| rest.split("</table>").next())
        .unwrap_or_else(|| panic!("no evidence table in the rendered DOM:\n{dom}"));
    assert!(
        evidence.contains("<tr class=\"capacity\">"),
        "no capacity row: {evidence}"
    );
    assert!(dom.contains("class=\"settled\""), "no settled period shown");
}
