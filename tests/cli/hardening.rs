//! Hardening II (issue 16) over real sockets and against the binary: logging
//! that cannot stop the loop, a surface closed by default, `check` that
//! refuses what `run` refuses and names every field, redacted URLs, the
//! state file on a full disk, and dashboards with data from the first scrape.
//! Each test fails without its fix; docs/RELIABILITY.md's fault matrix
//! names them.

use crate::support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{free_port, get_text, metric, scratch_dir, sum_in, FakeTool};
use throttle_governor::config::Config;
use throttle_governor::runtime::supervisor::{self, RunOptions};

const BIN: &str = env!("CARGO_BIN_EXE_throttle-governor");

/// A child killed and reaped on drop, so a failing test leaves nothing behind.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `throttle-governor sim` (a rejector of capacity 50) on a free port.
fn start_sim() -> (Reaped, u16) {
    let port = free_port();
    let sim = Command::new(BIN)
        .args([
            "sim",
            "--model",
            "rejector",
            "--capacity",
            "50",
            "--tick",
            "20ms",
            "--listen",
            &format!("127.0.0.1:{port}"),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sim = Reaped(sim);
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the sim never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    (sim, port)
}

/// config/example.toml against the sim on `sim_port`, the controller on
/// `listen`, with 250 ms windows.
fn example_config(sim_port: u16, listen: &str) -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/example.toml"))
        .unwrap()
        .replace("127.0.0.1:9100", &format!("127.0.0.1:{sim_port}"))
        .replace("127.0.0.1:9464", listen)
        .replace("window = \"2s\"", "window = \"250ms\"")
}

/// A blocking GET of the controller's /metrics with a 2 s timeout.
fn scrape(port: u16) -> Option<String> {
    use std::io::Read;
    let mut sock = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    sock.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    sock.set_write_timeout(Some(Duration::from_secs(2))).ok()?;
    sock.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    sock.read_to_string(&mut text).ok()?;
    text.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
}

fn scraped(port: u16, selector: &str) -> Option<f64> {
    scrape(port).and_then(|t| sum_in(&t, selector))
}

/// Polls `f` every 100 ms until it holds or `limit` passes.
fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Waits up to `limit` for the child to exit; its exit code.
fn exited_within(child: &mut Child, limit: Duration) -> Option<Option<i32>> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status.code());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

fn sigterm(child: &Child) {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -TERM failed");
}

fn write_config(name: &str, text: &str) -> PathBuf {
    let path = scratch_dir("hardening").join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `throttle-governor <cmd> --config <path>` with a 20 s limit: (code, stderr).
fn run_cmd(cmd: &str, path: &Path, env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut c = Command::new(BIN);
    c.args([cmd, "--config", path.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if cmd == "run" {
        c.args(["--max-duration", "2s"]);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = Reaped(c.spawn().unwrap());
    let code = exited_within(&mut child.0, Duration::from_secs(20))
        .unwrap_or_else(|| panic!("`{cmd}` did not finish in 20 s"));
    let mut err = String::new();
    use std::io::Read;
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (code, err)
}

#[test]
fn stderr_closed_while_governing_then_one_sigterm_stops_it() {
    let (_sim, sim_port) = start_sim();
    let port = free_port();
    let path = write_config(
        "stderr.toml",
        &example_config(sim_port, &format!("127.0.0.1:{port}")),
    );
    // `run ... 2>&1 | head -1`: head reads one line and exits.
    let mut gov = Reaped(
        Command::new(BIN)
            .args(["run", "--config", path.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut head = Reaped(
        Command::new("head")
            .arg("-n1")
            .stdin(gov.0.stderr.take().unwrap())
            .stdout(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(
        exited_within(&mut head.0, Duration::from_secs(10)).is_some(),
        "head never got its line"
    );
    let decisions = "throttle_decisions_total";
    // Logging has failed at least once: the pipe is really closed.
    assert!(
        wait_for(Duration::from_secs(10), || scraped(
            port,
            "throttle_log_write_errors_total"
        )
        .is_some_and(|v| v >= 1.0)),
        "no failed log write counted (or the controller stopped answering)"
    );
    let before = scraped(port, decisions).expect("no decisions series");
    // Govern the sim for 10 s with the pipe closed.
    std::thread::sleep(Duration::from_secs(10));
    let after = scraped(port, decisions).expect("the controller stopped answering");
    let lost = scraped(port, "throttle_log_write_errors_total").unwrap();
    // 250 ms windows: about 40 in 10 s; at least 20 proves the loop runs.
    assert!(
        after - before >= 20.0,
        "governing stalled with stderr closed: {before} -> {after} decisions in 10 s ({lost} log lines dropped)"
    );
    sigterm(&gov.0);
    let code = exited_within(&mut gov.0, Duration::from_secs(15));
    assert!(code.is_some(), "one SIGTERM did not stop the governor");
    assert_eq!(code.unwrap(), Some(0), "exit code after SIGTERM");
    eprintln!(
        "stderr closed: {} decisions in 10 s, {lost} log lines dropped",
        after - before
    );
}

#[test]
fn push_off_loopback_needs_a_token() {
    let target = "[[targets]]\nname = \"t\"\nknob = \"concurrency\"\nceiling = 10\nfloor = 1\nhigh = 0.05\n[targets.signal]\nkind = \"push\"\njob = \"load\"\nattempts = 'a_total'\nfailures = 'f_total'\ncumulative = true\n[targets.control]\nkind = \"http\"\nurl = \"http://127.0.0.1:1/w\"\nbody = '{{value}}'\n[targets.control.read_back]\nurl = \"http://127.0.0.1:1/w\"\njson_pointer = \"/w\"\n";
    let open = write_config(
        "push-open.toml",
        &format!("[server]\nlisten = \"0.0.0.0:0\"\n{target}"),
    );
    for cmd in ["check", "run"] {
        let (code, err) = run_cmd(cmd, &open, &[]);
        assert_eq!(
            code,
            Some(2),
            "`{cmd}` accepted an open push endpoint:\n{err}"
        );
        assert!(
            err.contains("server.push:") && err.contains("allow_unauthenticated_push"),
            "{err}"
        );
    }
    // Explicitly allowed: valid, with a warning.
    let allowed = write_config(
        "push-allowed.toml",
        &format!("[server]\nlisten = \"0.0.0.0:0\"\nallow_unauthenticated_push = true\n{target}"),
    );
    let (code, err) = run_cmd("check", &allowed, &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("warning:") && err.contains("without a token"),
        "{err}"
    );
    // With a token, or on loopback: valid, no warning.
    let token = write_config(
        "push-token.toml",
        &format!("[server]\nlisten = \"0.0.0.0:0\"\n[server.push]\nbearer_token_env = \"TG_TEST_PUSH_TOKEN\"\n{target}"),
    );
    let (code, err) = run_cmd("check", &token, &[("TG_TEST_PUSH_TOKEN", "s3cret-token")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!err.contains("warning"), "{err}");
    let local = write_config(
        "push-local.toml",
        &format!("[server]\nlisten = \"127.0.0.1:0\"\n{target}"),
    );
    let (code, err) = run_cmd("check", &local, &[]);
    assert_eq!(code, Some(0), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_beyond_the_cap_while_metrics_stays_responsive() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let tool = FakeTool::start(40.0, 1.0).await;
    let cfg = Config::parse(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}",
        tool.target_toml("srv", 100, 100, "")
    ))
    .unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let cap = throttle_governor::http::conn::ServerLimits::default().max_connections;
    // Cap + 100 clients that open a request and never finish its head.
    let mut slow = Vec::new();
    for _ in 0..cap + 100 {
        let mut s =
            tokio::time::timeout(Duration::from_secs(2), tokio::net::TcpStream::connect(ctl))
                .await
                .expect("connect timed out")
                .unwrap();
        let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n").await;
        slow.push(s);
    }
    // A scrape still gets through, promptly and whole.
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let started = Instant::now();
    let resp = client
        .get(format!("http://{ctl}/metrics"))
        .send()
        .await
        .expect("/metrics did not answer with the cap full of slowloris connections");
    let took = started.elapsed();
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    assert!(text.contains("throttle_offer{target=\"srv\"}"), "{text}");
    let shed = sum_in(&text, "throttle_server_connections_shed_total").unwrap_or(0.0);
    assert!(shed >= 100.0, "only {shed} connections shed past the cap");
    let open = sum_in(&text, "throttle_server_connections").unwrap_or(f64::MAX);
    assert!(
        open <= cap as f64 + 1.0,
        "{open} connections open, cap {cap}"
    );
    // The ones still open are cut off by the header-read timeout.
    let last = slow.last_mut().unwrap();
    let mut buf = [0u8; 512];
    let closed = tokio::time::timeout(Duration::from_secs(15), last.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(_)) | Ok(Err(_))),
        "a half-sent request head was kept open for 15 s"
    );
    eprintln!(
        "slowloris: {} connections, {shed} shed, /metrics answered in {took:?}",
        cap + 100
    );
    drop(slow);
    running.shutdown(Duration::from_secs(5)).await;
}

#[test]
fn credentials_in_urls_that_do_not_parse_are_redacted() {
    let text = r#"
[[targets]]
name = "t"
knob = "concurrency"
ceiling = 10
floor = 1
high = 0.05
[targets.signal]
kind = "prometheus"
url = "http://admin:hunter2PW@127.0.0.1:99999/metrics"
attempts = 'a'
failures = 'b'
[targets.control]
kind = "http"
url = "http://writer:wr1terPW@bad host/w"
body = '{{value}}'
[targets.control.read_back]
url = "http://reader:r3aderPW@127.0.0.1:99999/w?token=t0kenPW"
json_pointer = "/w"
"#;
    let path = write_config("redact.toml", text);
    let (code, err) = run_cmd("check", &path, &[]);
    assert_eq!(code, Some(2), "{err}");
    for secret in [
        "hunter2PW",
        "wr1terPW",
        "r3aderPW",
        "t0kenPW",
        "admin:",
        "writer:",
    ] {
        assert!(!err.contains(secret), "`{secret}` leaked:\n{err}");
    }
    assert!(err.contains("targets[t].signal.url"), "{err}");
    assert!(err.contains("http://***@127.0.0.1:99999/metrics"), "{err}");
    assert!(err.contains("targets[t].control.read_back.url"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_port_is_not_followed() {
    use axum::routing::get;
    // The real tool, failing 60 % of attempts above 40 workers, and a
    // second tool on another port that looks perfectly healthy.
    let tool = FakeTool::start(40.0, 1.0).await;
    let other = FakeTool::start(1e9, 100.0).await;
    let served = Arc::new(AtomicU64::new(0));
    let other_metrics = other.url("/metrics");
    let real_metrics = tool.url("/metrics");
    let hits = served.clone();
    let app = axum::Router::new()
        .route(
            "/away",
            get(move || {
                let to = other_metrics.clone();
                async move { axum::response::Redirect::temporary(&to) }
            }),
        )
        .route(
            "/here",
            get(|| async { axum::response::Redirect::temporary("/proxied") }),
        )
        .route(
            "/proxied",
            get(move || {
                let url = real_metrics.clone();
                let hits = hits.clone();
                async move {
                    hits.fetch_add(1, Ordering::Relaxed);
                    reqwest::get(url).await.unwrap().text().await.unwrap()
                }
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let redirector = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let away = tool
        .target_toml("away", 100, 100, "")
        .replace(&tool.url("/metrics"), &format!("http://{redirector}/away"));
    let here = other
        .target_toml("here", 100, 100, "")
        .replace(&other.url("/metrics"), &format!("http://{redirector}/here"));
    let cfg = Config::parse(&format!("[server]\nlisten = \"127.0.0.1:0\"\n{away}{here}")).unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    // The same-origin redirect is followed: `here` gets a signal.
    assert!(
        support::wait_until(Duration::from_secs(10), || async {
            metric(ctl, "throttle_signal_up{target=\"here\"}").await == Some(1.0)
        })
        .await,
        "a same-origin redirect was not followed:\n{}",
        get_text(&format!("http://{ctl}/metrics")).await
    );
    assert!(served.load(Ordering::Relaxed) >= 1);
    // The redirect to another port is refused: no signal, no Up.
    let refused = support::wait_until(Duration::from_secs(10), || async {
        metric(
            ctl,
            "throttle_signal_errors_total{target=\"away\",error_type=\"http_status\"}",
        )
        .await
        .unwrap_or(0.0)
            >= 3.0
    })
    .await;
    let errors = metric(
        ctl,
        "throttle_signal_errors_total{target=\"away\",error_type=\"http_status\"}",
    )
    .await
    .unwrap_or(0.0);
    let ups = metric(
        ctl,
        "throttle_decisions_total{target=\"away\",decision=\"up\"}",
    )
    .await
    .unwrap_or(0.0);
    let up = metric(ctl, "throttle_signal_up{target=\"away\"}").await;
    assert!(refused, "{errors} http_status errors");
    assert_eq!(ups, 0.0, "moved on another tool's counters");
    assert_eq!(up, Some(0.0));
    running.shutdown(Duration::from_secs(5)).await;
    server.abort();
}

/// Each case: (what replaces a line of a valid config, the expected message).
const TYPE_ERRORS: &[(&str, &str, &str)] = &[
    (
        "ceiling = 10",
        "ceiling = \"abc\"",
        "targets[t].ceiling: expected a number, got \"abc\"",
    ),
    (
        "floor = 1",
        "floor = \"one\"",
        "targets[t].floor: expected a number, got \"one\"",
    ),
    (
        "high = 0.05",
        "high = true",
        "targets[t].high: expected a number, got true",
    ),
    (
        "window = \"1s\"",
        "window = 2",
        "targets[t].window: expected a string, got 2",
    ),
    (
        "timeout = \"1s\"",
        "timeout = \"-1s\"",
        "targets[t].signal.timeout: `-1s` is not a duration",
    ),
    (
        "max_body_bytes = 1000",
        "max_body_bytes = -1",
        "targets[t].signal.max_body_bytes: expected a whole number of at least 0, got -1",
    ),
    (
        "on_exit = \"leave\"",
        "on_exit = \"later\"",
        "targets[t].on_exit: unknown variant `later`",
    ),
    (
        "listen = \"127.0.0.1:0\"",
        "listen = \"nowhere\"",
        "server.listen: expected an address such as \"127.0.0.1:9464\", got \"nowhere\"",
    ),
    (
        "confirm_attempts = 5",
        "confirm_attempts = \"5\"",
        "targets[t].control.confirm_attempts: expected a whole number of at least 0, got \"5\"",
    ),
    (
        "json_pointer = \"/w\"",
        "json_pointer = 1",
        "targets[t].control.read_back.json_pointer: expected a string, got 1",
    ),
];

const VALID: &str = r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "t"
knob = "concurrency"
ceiling = 10
floor = 1
high = 0.05
window = "1s"
on_exit = "leave"

[targets.signal]
kind = "prometheus"
url = "http://127.0.0.1:1/metrics"
attempts = 'a'
failures = 'b'
offer = 'c'
timeout = "1s"
max_body_bytes = 1000

[targets.control]
kind = "http"
url = "http://127.0.0.1:1/w"
body = '{"w": {{value}}}'
confirm_attempts = 5

[targets.control.headers]
X-Team = "load"

[targets.control.read_back]
url = "http://127.0.0.1:1/w"
json_pointer = "/w"
"#;

#[test]
fn each_check_type_error_names_its_field() {
    let path = write_config("valid.toml", VALID);
    let (code, err) = run_cmd("check", &path, &[]);
    assert_eq!(code, Some(0), "the base config is not valid:\n{err}");
    let mut failures = Vec::new();
    for (i, (line, bad, expected)) in TYPE_ERRORS.iter().enumerate() {
        assert!(VALID.contains(line), "case {i}: `{line}` not in the base");
        let path = write_config(&format!("type-{i}.toml"), &VALID.replacen(line, bad, 1));
        let (code, err) = run_cmd("check", &path, &[]);
        if code != Some(2) || !err.contains(expected) {
            failures.push(format!(
                "{bad}: exit {code:?}, wanted `{expected}` in:\n{err}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn check_refuses_what_run_refuses() {
    let dir = scratch_dir("hardening-parity");
    let cases: Vec<(String, &str)> = vec![
        (
            VALID.replace("X-Team = \"load\"", "\"Authorization \" = \"Bearer x\""),
            "targets[t].control.headers: `Authorization ` is not a valid header name",
        ),
        (
            VALID.replace("X-Team = \"load\"", "X-Team = \"a\\nb\""),
            "targets[t].control.headers: the value of `X-Team` is not a valid header value",
        ),
        (
            VALID.replace(
                "listen = \"127.0.0.1:0\"",
                "listen = \"127.0.0.1:0\"\nstate_file = \"/tmp\"",
            ),
            "server.state_file: `/tmp` is a directory",
        ),
        (
            VALID.replace(
                "listen = \"127.0.0.1:0\"",
                &format!(
                    "listen = \"127.0.0.1:0\"\nstate_file = \"{}\"",
                    dir.join("missing/state.json").display()
                ),
            ),
            "server.state_file: directory",
        ),
        (
            VALID.replace("body = '{\"w\": {{value}}}'", "body = '{\"w\": 1}'"),
            "targets[t].control.body: the write template has no `{{value}}`",
        ),
    ];
    let mut failures = Vec::new();
    for (i, (text, expected)) in cases.iter().enumerate() {
        let path = write_config(&format!("parity-{i}.toml"), text);
        for cmd in ["check", "run"] {
            let (code, err) = run_cmd(cmd, &path, &[]);
            if code != Some(2) || !err.contains(expected) {
                failures.push(format!(
                    "case {i} `{cmd}`: exit {code:?}, wanted `{expected}` in:\n{err}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn state_file_on_a_full_disk_keeps_the_last_good_state() {
    if !support::require_tool("unshare") || !support::require_tool("mount") {
        return;
    }
    let (_sim, sim_port) = start_sim();
    let port = free_port();
    let dir = scratch_dir("hardening-fulldisk");
    // A name that ends in `.tmp`: once its own temporary path.
    let state = dir.join("state.tmp");
    let good = r#"{"version":1,"targets":{"checkout":{"last_bad":40.0,"clean_streak":0}}}"#;
    let cfg = example_config(sim_port, &format!("127.0.0.1:{port}")).replace(
        "[server]\n",
        &format!("[server]\nstate_file = \"{}\"\n", state.display()),
    );
    assert!(cfg.contains("state_file"), "no [server] table to extend");
    let path = write_config("fulldisk.toml", &cfg);
    let log = dir.join("governor.log");
    // A private mount namespace with a 64 KiB tmpfs over the directory:
    // the good state, then the disk filled to the last byte.
    let script = format!(
        "set -e; mount -t tmpfs -o size=64k tmpfs '{d}'; printf '%s' '{good}' > '{s}'; \
         dd if=/dev/zero of='{d}/fill' bs=4k 2>/dev/null || true; \
         exec '{bin}' run --config '{cfg}'",
        d = dir.display(),
        s = state.display(),
        bin = BIN,
        cfg = path.display(),
    );
    let out = std::fs::File::create(&log).unwrap();
    let mut gov = Reaped(
        Command::new("unshare")
            .args(["-m", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(out)
            .spawn()
            .unwrap(),
    );
    let tail = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        wait_for(Duration::from_secs(15), || scraped(
            port,
            "throttle_state_write_errors_total"
        )
        .is_some_and(|v| v >= 3.0)),
        "no failed state writes counted:\n{}",
        tail()
    );
    // The file, as the governor's namespace sees it, still holds the good
    // state: a failed write never truncates it.
    let seen = Path::new("/proc")
        .join(gov.0.id().to_string())
        .join("root")
        .join(state.strip_prefix("/").unwrap());
    let kept = std::fs::read_to_string(&seen).unwrap();
    assert_eq!(kept, good, "the state file was changed by a failed write");
    let errors = scraped(port, "throttle_state_write_errors_total").unwrap();
    sigterm(&gov.0);
    assert!(exited_within(&mut gov.0, Duration::from_secs(15)).is_some());
    let text = tail();
    let lines = text.matches("Cannot write the state file").count();
    // Once a minute: one line in the periodic writer, at most one more at
    // shutdown.
    assert!(
        (1..=2).contains(&lines),
        "{lines} log lines for {errors} failed writes:\n{text}"
    );
    eprintln!("full disk: {errors} failed state writes, {lines} log lines");
}

/// The selectors of every dashboard query (`$target` matches all).
fn dashboard_selectors() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/dashboards/throttle-governor.json"
    ))
    .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut exprs = Vec::new();
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("expr", serde_json::Value::String(e)) => out.push(e.clone()),
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    walk(&doc, &mut exprs);
    let re = regex::Regex::new(r"throttle_[a-z_]+(\{[^}]*\})?").unwrap();
    let mut out = Vec::new();
    for e in exprs {
        for m in re.find_iter(&e) {
            out.push((e.clone(), m.as_str().replace("$target", ".*")));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_query_has_data_from_the_first_scrape() {
    let selectors = dashboard_selectors();
    assert!(selectors.len() >= 20, "{} selectors", selectors.len());
    // A tool that never answers: no read, no write, no decision yet.
    let dead = format!("127.0.0.1:{}", free_port());
    let toml = FakeTool::start(40.0, 1.0)
        .await
        .target_toml(
            "first",
            100,
            60_000,
            // A latency bound too, so that its panel's series are checked.
            r#"latency = { quantile = 0.99, bound = "250ms", histogram = "h_seconds", url = "http://127.0.0.1:1/metrics" }"#,
        );
    let toml = regex::Regex::new(r"127\.0\.0\.1:\d+")
        .unwrap()
        .replace_all(&toml, dead.as_str())
        .into_owned();
    let cfg = Config::parse(&format!("[server]\nlisten = \"127.0.0.1:0\"\n{toml}")).unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let first = get_text(&format!("http://{}/metrics", running.addr)).await;
    let missing: Vec<String> = selectors
        .iter()
        .filter(|(_, sel)| sum_in(&first, sel).is_none())
        .map(|(expr, sel)| format!("{sel}  (in {expr})"))
        .collect();
    assert!(
        missing.is_empty(),
        "dashboard selectors with no data in the first scrape:\n{}\n---\n{first}",
        missing.join("\n")
    );
    running.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_closed_and_the_cap_sheds_the_longest_idle() {
    use throttle_governor::http::conn::{serve, ServerLimits};
    use throttle_governor::telemetry::metrics::FaultMetrics;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let limits = ServerLimits {
        header_read_timeout: Duration::from_secs(5),
        idle_timeout: Duration::from_secs(1),
        max_connections: 4,
    };
    let faults = FaultMetrics::default();
    let router = axum::Router::new().route("/", axum::routing::get(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let s = stop.clone();
    let server = tokio::spawn(serve(
        listener,
        router,
        faults.clone(),
        limits,
        async move { s.cancelled().await },
    ));
    async fn request(sock: &mut tokio::net::TcpStream) -> String {
        sock.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0u8; 1024];
        let n = tokio::time::timeout(Duration::from_secs(3), sock.read(&mut buf))
            .await
            .expect("no answer in 3 s")
            .unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
    // A kept-alive connection, idle after one request, is closed.
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(request(&mut idle).await.starts_with("HTTP/1.1 200"));
    let mut buf = [0u8; 64];
    let closed = tokio::time::timeout(Duration::from_secs(5), idle.read(&mut buf)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "an idle keep-alive connection stayed open: {closed:?}"
    );
    // Four connections fill the cap; the first one used is the longest idle.
    let mut conns = Vec::new();
    for _ in 0..4 {
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        assert!(request(&mut c).await.starts_with("HTTP/1.1 200"));
        conns.push(c);
    }
    // A fifth gets in and sheds the oldest.
    let mut fifth = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(request(&mut fifth).await.starts_with("HTTP/1.1 200"));
    let first = tokio::time::timeout(Duration::from_millis(300), conns[0].read(&mut buf)).await;
    assert!(
        matches!(first, Ok(Ok(0)) | Ok(Err(_))),
        "the longest-idle connection was not shed: {first:?}"
    );
    assert!(faults.connections_shed.get() >= 1);
    stop.cancel();
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("the server did not stop")
        .unwrap()
        .unwrap();
}
