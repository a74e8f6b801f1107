//! `check` lists every problem of a config in one run (issue 29): unknown
//! keys and variants, missing keys, durations without a unit, values of
//! the wrong type and semantic checks, each named by target and field, in
//! two targets and the server table at once; `run` refuses the same
//! config with the same list, and both exit 2.

use std::process::{Command, Stdio};

use crate::support::{scratch_dir, BIN};

const BAD: &str = r#"
[server]
listen = "127.0.0.1:0"
max_connections = 1

[[targets]]
name = "shop"
ceilng = 10
high = "five"
knob = "speed"
window = "3"
[targets.signal]
kind = "locust"
url = "ftp://127.0.0.1:8089"
[targets.control]
kind = "locust"
url = "http://127.0.0.1:8089"
timeout = "2"

[[targets]]
name = "api"
knob = "concurrency"
ceiling = 50
high = 1.5
[targets.signal]
kind = "prometheus"
url = "http://127.0.0.1:9100/metrics"
attempts = "requests_total"
tiemout = "1s"
[targets.control]
kind = "k6"
url = "http://127.0.0.1:6565"
"#;

/// Each problem: the text that must name it (target and field) in the list.
const PROBLEMS: [&str; 10] = [
    "server.max_connections: must be between 16 and 65536",
    "targets[shop].ceilng: unknown field `ceilng`",
    "targets[shop].high: expected a number, got \"five\"",
    "targets[shop].knob: unknown variant `speed`",
    "targets[shop].window: `3` is not a duration",
    "targets[shop].control.timeout: `2` is not a duration",
    "targets[shop].signal.url: scheme `ftp` is not supported",
    "targets[api].signal.failures: missing field `failures`",
    "targets[api].signal.tiemout: unknown field `tiemout`",
    "targets[api].high",
];

fn stderr_of(cmd: &str, path: &std::path::Path) -> (Option<i32>, String) {
    let mut c = Command::new(BIN);
    c.args([cmd, "--config", path.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if cmd == "run" {
        c.args(["--max-duration", "2s"]);
    }
    // A bad config exits before anything starts; output() waits for it.
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn check_lists_every_problem_at_once() {
    let path = scratch_dir("check-all").join("bad.toml");
    std::fs::write(&path, BAD).unwrap();
    let (code, check) = stderr_of("check", &path);
    assert_eq!(code, Some(2), "{check}");
    let missing: Vec<&str> = PROBLEMS
        .iter()
        .copied()
        .filter(|p| !check.contains(p))
        .collect();
    assert!(missing.is_empty(), "not named: {missing:#?}\nin:\n{check}");
    let (code, run) = stderr_of("run", &path);
    assert_eq!(code, Some(2), "{run}");
    let list = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.trim_start().starts_with("- "))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(list(&run), list(&check), "run lists the same problems");
}
