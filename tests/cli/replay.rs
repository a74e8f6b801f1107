//! End-to-end tests of `throttle-governor replay`: the built binary, run as a
//! user would, through its JSON Lines interface.
//!
//! Why here and not in `src/lab/replay.rs`: these pin the user-visible contract
//! (exit codes, what reaches stdout and stderr, the exact output keys and
//! number formatting), and they reproduce every worked example of
//! `docs/GOVERNOR.md` through that interface.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_throttle-governor");

/// What one run of the binary produced.
#[derive(Debug)]
pub(crate) struct Run {
    code: i32,
    pub(crate) stdout: String,
    stderr: String,
}

impl Run {
    /// The stdout lines, each parsed as JSON.
    pub(crate) fn rows(&self) -> Vec<Value> {
        assert_eq!(self.code, 0, "stderr: {}", self.stderr);
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect()
    }

    /// Asserts a usage/input failure that printed nothing on stdout and
    /// mentions every `needle` on stderr.
    fn assert_rejected(&self, needles: &[&str]) {
        self.assert_rejected_after(0, needles);
    }

    /// Asserts a usage/input failure that mentions every `needle` on stderr,
    /// after streaming exactly the rows of the `decided` lines before the
    /// bad one (rows stream; nothing after a bad line is printed).
    fn assert_rejected_after(&self, decided: usize, needles: &[&str]) {
        assert_eq!(self.code, 2, "{self:?}");
        let windows: Vec<u64> = self
            .stdout
            .lines()
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"));
                v["window"].as_u64().unwrap()
            })
            .collect();
        let expected: Vec<u64> = (1..=decided as u64).collect();
        assert_eq!(windows, expected, "only the lines before the bad one");
        for needle in needles {
            assert!(
                self.stderr.contains(needle),
                "stderr lacks {needle:?}: {}",
                self.stderr
            );
        }
    }
}

/// Runs `throttle-governor replay <args>` with `stdin` as its input, under
/// the seed rules (docs/GOVERNOR.md's worked examples) unless `args` name a
/// profile.
fn replay(args: &[&str], stdin: &str) -> Run {
    let seed: &[&str] = if args.contains(&"--profile") {
        &[]
    } else {
        &["--profile", "seed"]
    };
    replay_as_given(&[args, seed].concat(), stdin)
}

/// Runs `throttle-governor replay <args>` with `stdin` as its input.
pub(crate) fn replay_as_given(args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(BIN)
        .arg("replay")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().unwrap();
    // The binary may exit early (bad parameters) and close its stdin.
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().expect("exited normally"),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Writes `text` to a file of its own under the test temp dir.
pub(crate) fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("replay-{}-{name}.jsonl", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

/// A row as the binary must print it.
#[allow(clippy::too_many_arguments)]
fn row(
    window: u64,
    attempts: Value,
    failures: Value,
    frac: Value,
    current: Value,
    decision: &str,
    to: Value,
    mode: Value,
    reason: Value,
    last_bad: Value,
    clean_streak: u32,
    memory_cleared: bool,
) -> Value {
    json!({
        "window": window,
        "attempts": attempts,
        "failures": failures,
        "frac": frac,
        "current": current,
        "decision": decision,
        "to": to,
        "mode": mode,
        "reason": reason,
        "last_bad": last_bad,
        "clean_streak": clean_streak,
        "memory_cleared": memory_cleared,
    })
}

/// The fields that a worked example is about.
fn brief(row: &Value) -> Value {
    json!([
        row["current"],
        row["decision"],
        row["to"],
        row["mode"],
        row["reason"],
        row["last_bad"]
    ])
}

const KEYS: [&str; 12] = [
    "window",
    "attempts",
    "failures",
    "frac",
    "current",
    "decision",
    "to",
    "mode",
    "reason",
    "last_bad",
    "clean_streak",
    "memory_cleared",
];

// ---------------------------------------------------------------------------
// docs/GOVERNOR.md's worked examples, through the JSON Lines interface
// ---------------------------------------------------------------------------

/// Runs `input` with `args` under both controls (every worked example is
/// integral, so concurrency must agree with rate) and returns the rate rows.
fn both_controls(args: &[&str], input: &str) -> Vec<Value> {
    let rate = replay(&[args, &["--control", "rate"]].concat(), input);
    let concurrency = replay(&[args, &["--control", "concurrency"]].concat(), input);
    assert_eq!(rate.stdout, concurrency.stdout, "{}", concurrency.stderr);
    rate.rows()
}

#[test]
fn worked_examples_back_off_and_reclimb_below_last_bad() {
    let input = r#"{"attempts": 100, "failures": 100, "current": 100}
{"attempts": 100, "failures": 7, "current": 100}
{"attempts": 100, "failures": 50, "current": 40}
{"attempts": 100, "failures": 0, "current": 10}
{"attempts": 100, "failures": 0, "current": 24}
{"attempts": 100, "failures": 0, "current": 30}
{"attempts": 100, "failures": 3, "current": 50}
"#;
    let rows = both_controls(&["--ceiling", "100"], input);
    let got: Vec<_> = rows.iter().map(brief).collect();
    assert_eq!(
        got,
        [
            // frac 1.0 at 100 gives Down(25).
            json!([100, "down", 25, "backing-off", null, 100]),
            // frac 0.07 at 100 gives Down(90).
            json!([100, "down", 90, "backing-off", null, 100]),
            // frac 0.5 at 40 gives Down(20); last_bad is now 40.
            json!([40, "down", 20, "backing-off", null, 40]),
            // With last_bad = 40: clean at 10 gives Up(15) (reclimbing),
            json!([10, "up", 15, "reclimbing", null, 40]),
            // clean at 24 gives Up(30) (capped at the safe zone),
            json!([24, "up", 30, "probing", null, 40]),
            // clean at 30 gives Up(31) (probing, +max(1, 0.8)).
            json!([30, "up", 31, "probing", null, 40]),
            // Dead band: frac 0.03 at 50 holds with last_bad set.
            json!([50, "hold", 50, null, "dead-band", 40]),
        ]
    );
    assert_eq!(rows[1]["frac"], json!(0.07));
    assert_eq!(rows[2]["frac"], json!(0.5));
    assert_eq!(rows[6]["frac"], json!(0.03));
    assert_eq!(rows[6]["clean_streak"], json!(0), "the dead band resets it");
}

#[test]
fn worked_examples_slow_start_to_the_ceiling() {
    let input = r#"{"attempts": 100, "failures": 0}
{"attempts": 100, "failures": 0, "current": 8}
{"attempts": 100, "failures": 0, "current": 64}
{"attempts": 100, "failures": 0}
{"attempts": 100, "failures": 3, "current": 50}
"#;
    let rows = both_controls(&["--ceiling", "100"], input);
    let got: Vec<_> = rows.iter().map(brief).collect();
    assert_eq!(
        got,
        [
            // Clean windows from 1 (the default start, the floor) give Up(2).
            json!([1, "up", 2, "climbing", null, null]),
            // From 8, Up(16).
            json!([8, "up", 16, "climbing", null, null]),
            // From 64, Up(100) (capped at the ceiling).
            json!([64, "up", 100, "climbing", null, null]),
            // At 100, Hold.
            json!([100, "hold", 100, null, "at-ceiling", null]),
            // Dead band: frac 0.03 at 50 holds without last_bad too.
            json!([50, "hold", 50, null, "dead-band", null]),
        ]
    );
}

#[test]
fn worked_examples_floor_four() {
    let input = r#"{"attempts": 10, "failures": 10, "current": 5}
{"attempts": 10, "failures": 10}
"#;
    let rows = both_controls(&["--ceiling", "100", "--floor", "4"], input);
    let got: Vec<_> = rows.iter().map(brief).collect();
    assert_eq!(
        got,
        [
            // With floor 4: frac 1.0 at 5 gives Down(4),
            json!([5, "down", 4, "backing-off", null, 5]),
            // and frac 1.0 at 4 gives Hold.
            json!([4, "hold", 4, null, "at-floor", 5]),
        ]
    );
}

#[test]
fn worked_example_additive_probe_at_scale() {
    // last_bad = 50,000 comes from a Down at 50,000.
    let input = r#"{"attempts": 1000, "failures": 1000, "current": 50000}
{"attempts": 1000, "failures": 0, "current": 40000}
"#;
    let rows = both_controls(&["--ceiling", "100000"], input);
    let got: Vec<_> = rows.iter().map(brief).collect();
    assert_eq!(
        got,
        [
            json!([50000, "down", 12500, "backing-off", null, 50000]),
            // Clean at 40,000 gives Up(41,000) (+2 % of last_bad).
            json!([40000, "up", 41000, "probing", null, 50000]),
        ]
    );
}

#[test]
fn worked_examples_with_the_high_and_low_given_explicitly() {
    // The examples' thresholds are the defaults; spelling them out agrees.
    let input = "{\"attempts\": 100, \"failures\": 7, \"current\": 100}\n";
    let implicit = replay(&["--control", "rate", "--ceiling", "100"], input);
    let explicit = replay(
        &[
            "--control",
            "rate",
            "--ceiling",
            "100",
            "--high",
            "0.05",
            "--low",
            "0.01",
            "--floor",
            "1",
        ],
        input,
    );
    assert_eq!(implicit.stdout, explicit.stdout);
    assert_eq!(
        brief(&explicit.rows()[0]),
        json!([100, "down", 90, "backing-off", null, 100])
    );
}

// ---------------------------------------------------------------------------
// Output format
// ---------------------------------------------------------------------------

#[test]
fn rows_have_exactly_the_documented_keys_in_order() {
    let out = replay(
        &["--ceiling", "10"],
        "{\"attempts\": 10, \"failures\": 0}\n{\"attempts\": 0, \"failures\": 0}\n",
    );
    for line in out.stdout.lines() {
        // serde_json::Value sorts keys, so check the order on the raw text.
        let mut at = 0;
        for key in KEYS {
            let found = line[at..]
                .find(&format!("\"{key}\":"))
                .unwrap_or_else(|| panic!("{key} missing or out of order in {line}"));
            at += found;
        }
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v.as_object().unwrap().len(), KEYS.len(), "{line}");
    }
    assert_eq!(out.rows().len(), 2);
}

#[test]
fn integral_numbers_print_without_a_fraction() {
    let out = replay(
        &["--control", "rate", "--ceiling", "100"],
        "{\"attempts\": 100.0, \"failures\": 7, \"current\": 100.0}\n",
    );
    assert_eq!(
        out.stdout,
        "{\"window\":1,\"attempts\":100,\"failures\":7,\"frac\":0.07,\"current\":100,\
         \"decision\":\"down\",\"to\":90,\"mode\":\"backing-off\",\"reason\":null,\
         \"last_bad\":100,\"clean_streak\":0,\"memory_cleared\":false}\n"
    );
    // A rate keeps its fraction: 0.9 * 5 = 4.5.
    let out = replay(
        &["--control", "rate", "--ceiling", "100"],
        "{\"attempts\": 100, \"failures\": 7, \"current\": 5}\n",
    );
    assert_eq!(out.rows()[0]["to"], json!(4.5));
    assert!(out.stdout.contains("\"to\":4.5,"), "{}", out.stdout);
}

#[test]
fn no_traffic_rows() {
    let out = replay(
        &["--ceiling", "10", "--start", "3"],
        "{\"attempts\": 0, \"failures\": 0}\n",
    );
    assert_eq!(
        out.rows(),
        [row(
            1,
            json!(0),
            json!(0),
            Value::Null,
            json!(3),
            "hold",
            json!(3),
            Value::Null,
            json!("no-traffic"),
            Value::Null,
            0,
            false
        )]
    );
}

#[test]
fn table_format_prints_aligned_columns() {
    let input = "{\"attempts\": 100, \"failures\": 0}\n{\"attempts\": 100, \"failures\": 7}\n";
    let out = replay(&["--ceiling", "10", "--format", "table"], input);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "\
window  attempts  failures  frac  current  decision  to  mode         reason  last_bad  clean_streak  memory_cleared  confidence
     1       100         0    0%        1  up         2  climbing     -              -             0           false  -
     2       100         7    7%        2  down       1  backing-off  -              2             0           false  -
"
    );
}

// ---------------------------------------------------------------------------
// Input forms and sources
// ---------------------------------------------------------------------------

#[test]
fn cumulative_readings_form_windows() {
    let input = r#"{"attempts_total": 1000, "failures_total": 40}
{"attempts_total": 1100, "failures_total": 40}
{"attempts_total": 1200, "failures_total": 40, "current": 8}
{"attempts_total": 1200, "failures_total": 40}
{"attempts_total": 30, "failures_total": 0}
{"attempts_total": 130, "failures_total": 50}
"#;
    let rows = replay(&["--ceiling", "100"], input).rows();
    assert_eq!(
        rows,
        [
            row(
                1,
                Value::Null,
                Value::Null,
                Value::Null,
                json!(1),
                "hold",
                json!(1),
                Value::Null,
                json!("baseline"),
                Value::Null,
                0,
                false
            ),
            row(
                2,
                json!(100),
                json!(0),
                json!(0),
                json!(1),
                "up",
                json!(2),
                json!("climbing"),
                Value::Null,
                Value::Null,
                0,
                false
            ),
            row(
                3,
                json!(100),
                json!(0),
                json!(0),
                json!(8),
                "up",
                json!(16),
                json!("climbing"),
                Value::Null,
                Value::Null,
                0,
                false
            ),
            row(
                4,
                json!(0),
                json!(0),
                Value::Null,
                json!(16),
                "hold",
                json!(16),
                Value::Null,
                json!("no-traffic"),
                Value::Null,
                0,
                false
            ),
            row(
                5,
                Value::Null,
                Value::Null,
                Value::Null,
                json!(16),
                "hold",
                json!(16),
                Value::Null,
                json!("counter-reset"),
                Value::Null,
                0,
                false
            ),
            row(
                6,
                json!(100),
                json!(50),
                json!(0.5),
                json!(16),
                "down",
                json!(8),
                json!("backing-off"),
                Value::Null,
                json!(16),
                0,
                false
            ),
        ]
    );
}

#[test]
fn successes_totals_form_windows() {
    let input = r#"{"successes_total": 90, "failures_total": 10}
{"successes_total": 140, "failures_total": 60}
"#;
    let rows = replay(&["--control", "rate"], input).rows();
    assert_eq!(rows[0]["reason"], json!("baseline"));
    assert_eq!(
        brief(&rows[1]),
        json!([1, "hold", 1, null, "at-floor", null])
    );
    assert_eq!(
        (&rows[1]["attempts"], &rows[1]["failures"], &rows[1]["frac"]),
        (&json!(100), &json!(50), &json!(0.5))
    );
}

#[test]
fn current_overrides_and_the_decided_value_carries_over() {
    let input = r#"{"attempts": 100, "failures": 0}
{"attempts": 100, "failures": 0}
{"attempts": 100, "failures": 0, "current": 40}
{"attempts": 100, "failures": 50}
{"attempts": 100, "failures": 3}
"#;
    let rows = replay(&["--ceiling", "100"], input).rows();
    let from_to: Vec<_> = rows
        .iter()
        .map(|r| (r["current"].clone(), r["to"].clone()))
        .collect();
    assert_eq!(
        from_to,
        [
            (json!(1), json!(2)),
            (json!(2), json!(4)),   // the previous `to`
            (json!(40), json!(80)), // the override
            (json!(80), json!(40)),
            (json!(40), json!(40)),
        ]
    );
    assert_eq!(rows[3]["last_bad"], json!(80));
}

#[test]
fn file_argument_stdin_and_dash_agree() {
    let input = "{\"attempts\": 100, \"failures\": 0}\n{\"attempts\": 100, \"failures\": 20}\n";
    let path = temp_file("sources", input);
    let file = replay(&["--ceiling", "10", path.to_str().unwrap()], "");
    let stdin = replay(&["--ceiling", "10"], input);
    let dash = replay(&["--ceiling", "10", "-"], input);
    assert_eq!(file.rows().len(), 2);
    assert_eq!(file.stdout, stdin.stdout);
    assert_eq!(file.stdout, dash.stdout);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn missing_file_is_an_input_error() {
    let out = replay(&["--ceiling", "10", "/nonexistent/windows.jsonl"], "");
    out.assert_rejected(&["cannot open input", "/nonexistent/windows.jsonl"]);
}

#[test]
fn blank_lines_are_skipped_and_windows_keep_line_numbers() {
    let input =
        "\n{\"attempts\": 100, \"failures\": 0}\n   \n{\"attempts\": 100, \"failures\": 0}\n";
    let rows = replay(&["--ceiling", "10"], input).rows();
    let windows: Vec<_> = rows.iter().map(|r| r["window"].clone()).collect();
    assert_eq!(windows, [json!(2), json!(4)]);
}

#[test]
fn empty_input_prints_nothing_and_succeeds() {
    let out = replay(&["--ceiling", "10"], "");
    assert_eq!((out.code, out.stdout.as_str()), (0, ""));
}

#[test]
fn memory_clears_after_three_clean_windows_at_last_bad() {
    let input = r#"{"attempts": 100, "failures": 50, "current": 40}
{"attempts": 100, "failures": 0, "current": 40}
{"attempts": 100, "failures": 0}
{"attempts": 100, "failures": 0}
"#;
    let rows = replay(&["--control", "rate", "--ceiling", "100"], input).rows();
    let memory: Vec<_> = rows
        .iter()
        .map(|r| {
            json!([
                r["to"],
                r["mode"],
                r["last_bad"],
                r["clean_streak"],
                r["memory_cleared"]
            ])
        })
        .collect();
    assert_eq!(
        memory,
        [
            json!([20, "backing-off", 40, 0, false]),
            json!([41, "probing", 40, 1, false]),
            json!([42, "probing", 40, 2, false]),
            // The clearing window already decides in slow start: it doubles.
            json!([84, "climbing", null, 0, true]),
        ]
    );
}

// ---------------------------------------------------------------------------
// Concurrency rounding
// ---------------------------------------------------------------------------

#[test]
fn concurrency_rounds_and_rate_does_not() {
    // A Down from 5 at frac 0.07 gives 4.5; then, with last_bad = 5, a clean
    // window at 3 aims for the safe zone 3.75.
    let input = r#"{"attempts": 100, "failures": 7, "current": 5}
{"attempts": 100, "failures": 0, "current": 3}
{"attempts": 100, "failures": 7, "current": 2}
"#;
    let to = |control: &str| -> Vec<Value> {
        replay(&["--control", control, "--ceiling", "10"], input)
            .rows()
            .iter()
            .map(|r| r["to"].clone())
            .collect()
    };
    assert_eq!(to("rate"), [json!(4.5), json!(3.75), json!(1.8)]);
    // Down strictly lower, Up strictly higher, never below the floor.
    assert_eq!(to("concurrency"), [json!(4), json!(4), json!(1)]);
}

#[test]
fn concurrency_rejects_a_fractional_current() {
    let out = replay(
        &["--ceiling", "10"],
        "{\"attempts\": 1, \"failures\": 0}\n{\"attempts\": 1, \"failures\": 0, \"current\": 2.5}\n",
    );
    out.assert_rejected_after(1, &["line 2", "whole number"]);
}

// ---------------------------------------------------------------------------
// Rejections: exit 2, the line on stderr, on stdout only the rows before it
// ---------------------------------------------------------------------------

#[test]
fn malformed_lines_are_rejected_with_their_line_number() {
    let good = "{\"attempts\": 100, \"failures\": 0}\n";
    for (bad, needle) in [
        ("{\"attempts\": 100, \"failures\": ", "not valid JSON"),
        ("attempts=100", "not valid JSON"),
        (
            "{\"attempts\": 100, \"failures\": 0, \"succeses\": 1}",
            "unknown field `succeses`",
        ),
        (
            "{\"attempts\": 10, \"failures\": 11}",
            "`failures` (11) exceeds `attempts` (10)",
        ),
        (
            "{\"attempts\": -5, \"failures\": 0}",
            "`attempts` is negative (-5)",
        ),
        (
            "{\"attempts\": 10, \"failures\": -1}",
            "`failures` is negative (-1)",
        ),
        (
            "{\"attempts\": 10, \"failures\": 0, \"current\": -2}",
            "`current` is negative",
        ),
        (
            "{\"attempts\": 10, \"failures\": 0, \"attempts_total\": 10}",
            "mixes the window form",
        ),
        ("{\"attempts\": 10}", "missing `failures`"),
        (
            "{\"attempts\": 10, \"failures\": 1e999}",
            "number out of range",
        ),
        ("{\"attempts\": \"10\", \"failures\": 0}", "invalid type"),
        (
            "{\"attempts_total\": 10, \"failures_total\": 0}",
            "uses the cumulative form, but line 1 used the window form",
        ),
        (
            "{\"attempts\": 10, \"failures\": 0, \"attempts\": 10}",
            "duplicate field `attempts`",
        ),
    ] {
        // The bad line is line 3: two good lines before it, one after.
        let input = format!("{good}{good}{bad}\n{good}");
        let out = replay(&["--ceiling", "10"], &input);
        out.assert_rejected_after(2, &["line 3: ", needle]);
        assert_eq!(out.stderr.lines().count(), 1, "one line: {}", out.stderr);
    }
}

#[test]
fn inconsistent_cumulative_readings_are_rejected() {
    let input = r#"{"attempts_total": 100, "failures_total": 0}
{"attempts_total": 200, "failures_total": 10}
{"attempts_total": 205, "failures_total": 30}
"#;
    let out = replay(&["--ceiling", "10"], input);
    out.assert_rejected_after(2, &["line 3: ", "since line 2", "failures grew by 20"]);
    let out = replay(
        &["--ceiling", "10"],
        "{\"attempts_total\": 5, \"failures_total\": 6}\n",
    );
    out.assert_rejected(&[
        "line 1: ",
        "`failures_total` (6) exceeds `attempts_total` (5)",
    ]);
}

#[test]
fn invalid_utf8_is_rejected_with_its_line() {
    let mut child = Command::new(BIN)
        .args(["replay", "--ceiling", "10", "--profile", "seed"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input
        .write_all(b"{\"attempts\": 1, \"failures\": 0}\n{\"attempts\": \xff}\n")
        .unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "only line 1's row: {stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 2"), "{stderr}");
}

#[test]
fn concurrency_without_a_ceiling_is_rejected() {
    let out = replay(&[], "{\"attempts\": 1, \"failures\": 0}\n");
    out.assert_rejected(&["invalid parameters", "`ceiling` is required"]);
    // A rate without a ceiling is unbounded and fine.
    let out = replay(
        &["--control", "rate"],
        "{\"attempts\": 1, \"failures\": 0, \"current\": 1000000}\n",
    );
    assert_eq!(out.rows()[0]["to"], json!(2000000));
}

#[test]
fn invalid_parameters_are_all_reported() {
    let out = replay(
        &[
            "--control",
            "concurrency",
            "--high",
            "0.05",
            "--low",
            "0.05",
            "--floor",
            "5",
            "--ceiling",
            "3",
        ],
        "",
    );
    out.assert_rejected(&["`low` must be", "`floor` (5) must not exceed `ceiling` (3)"]);
    let out = replay(&["--control", "rate", "--high", "1"], "");
    out.assert_rejected(&["`high` must be a fraction in (0, 1)"]);
    let out = replay(
        &["--control", "rate", "--ceiling", "10", "--start", "11"],
        "",
    );
    out.assert_rejected(&["`start` (11) must lie in [floor, ceiling] = [1, 10]"]);
    let out = replay(&["--control", "rate", "--high", "NaN"], "");
    out.assert_rejected(&["`high` must be a finite, non-negative number"]);
    let out = replay(&["--ceiling", "10.5"], "");
    out.assert_rejected(&["`ceiling` must be a whole number"]);
}

#[test]
fn usage_errors_exit_2() {
    replay(&["--control", "users"], "").assert_rejected(&["invalid value 'users'"]);
    replay(&["--format", "csv"], "").assert_rejected(&["invalid value 'csv'"]);
    replay(&["--profile", "aggressive"], "").assert_rejected(&["invalid value 'aggressive'"]);
    replay(&["--high"], "").assert_rejected(&["--high"]);
}

#[test]
fn help_shows_examples() {
    let out = replay(&["--help"], "");
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains("Examples:"), "{}", out.stdout);
    assert!(out.stdout.contains("--control <CONTROL>"), "{}", out.stdout);
}

/// Every subcommand's `--help` is plain text: clap takes it from the doc
/// comments, and an intra-doc link (`[`NAME`]`) or a bare constant name
/// means nothing to a user (`bench --help` printed "[`NOISE_ATTEMPTS`]" for
/// the noise family's list).
#[test]
fn every_help_is_plain_text() {
    for cmd in [
        "demo",
        "run",
        "check",
        "replay",
        "sim",
        "bench",
        "healthcheck",
    ] {
        let out = Command::new(BIN)
            .args([cmd, "--help"])
            .output()
            .expect("the binary runs");
        assert_eq!(out.status.code(), Some(0), "{cmd} --help");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.len() > 200, "{cmd} --help is too short: {text}");
        for bad in ["[`", "`]", "](", "NOISE_ATTEMPTS", "NOISE_BACKGROUNDS"] {
            assert!(!text.contains(bad), "{cmd} --help has {bad:?}:\n{text}");
        }
    }
}

#[test]
fn robust_profile_needs_evidence_before_backing_off() {
    let input = "{\"attempts\": 30, \"failures\": 2, \"current\": 100}\n";
    let seed = replay(&["--ceiling", "100"], input).rows();
    assert_eq!(seed[0]["decision"], "down", "{seed:?}");
    let robust = replay(&["--ceiling", "100", "--profile", "robust"], input).rows();
    assert_eq!(robust[0]["decision"], "hold", "{robust:?}");
    assert_eq!(robust[0]["reason"], "gathering", "{robust:?}");
}

// ---------------------------------------------------------------------------
// Streaming, exact floats and bounds (issues 14 and 16)
// ---------------------------------------------------------------------------

/// Each row arrives before the next line is written: a write-one/read-one
/// driver over a pipe, as beside a live tool. Bounded: every read waits at
/// most 10 s, and the child is killed on any failure.
#[test]
fn rows_stream_one_per_line_over_a_pipe() {
    use std::io::{BufRead, BufReader};
    use std::sync::mpsc;
    use std::time::Duration;

    let mut child = Command::new(BIN)
        .args(["replay", "--ceiling", "100", "--profile", "seed"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut input = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let lines = [
        ("{\"attempts\": 100, \"failures\": 0}", "up", 2),
        ("{\"attempts\": 100, \"failures\": 0}", "up", 4),
        ("{\"attempts\": 100, \"failures\": 50}", "down", 2),
        ("{\"attempts\": 0, \"failures\": 0}", "hold", 2),
    ];
    let mut failure = None;
    for (i, (text, decision, to)) in lines.iter().enumerate() {
        // The input stays open: only a streaming replay can answer now.
        if writeln!(input, "{text}")
            .and_then(|()| input.flush())
            .is_err()
        {
            failure = Some(format!("line {}: the replay closed its input", i + 1));
            break;
        }
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(row) => {
                let v: Value = serde_json::from_str(&row).unwrap();
                if v["window"] != json!(i + 1)
                    || v["decision"] != json!(decision)
                    || v["to"] != json!(to)
                {
                    failure = Some(format!("line {}: unexpected row {row}", i + 1));
                    break;
                }
            }
            Err(_) => {
                failure = Some(format!("line {}: no row within 10 s of writing it", i + 1));
                break;
            }
        }
    }
    if failure.is_some() {
        let _ = child.kill();
    }
    drop(input);
    let status = child.wait().unwrap();
    let _ = reader.join();
    if let Some(f) = failure {
        panic!("{f}");
    }
    assert!(status.success(), "{status}");
    assert!(rx.try_recv().is_err(), "no row beyond the input's lines");
}

/// A whole file gives the same rows streamed as decided at once.
#[test]
fn a_whole_file_streams_the_same_rows() {
    let input = "{\"attempts\": 100, \"failures\": 0}\n\n{\"attempts\": 100, \"failures\": 7}\n{\"attempts\": 100, \"failures\": 0, \"current\": 30}\n";
    let out = replay(&["--ceiling", "100"], input);
    assert_eq!(
        out.stdout,
        "{\"window\":1,\"attempts\":100,\"failures\":0,\"frac\":0,\"current\":1,\"decision\":\"up\",\"to\":2,\"mode\":\"climbing\",\"reason\":null,\"last_bad\":null,\"clean_streak\":0,\"memory_cleared\":false}\n\
         {\"window\":3,\"attempts\":100,\"failures\":7,\"frac\":0.07,\"current\":2,\"decision\":\"down\",\"to\":1,\"mode\":\"backing-off\",\"reason\":null,\"last_bad\":2,\"clean_streak\":0,\"memory_cleared\":false}\n\
         {\"window\":4,\"attempts\":100,\"failures\":0,\"frac\":0,\"current\":30,\"decision\":\"up\",\"to\":31,\"mode\":\"probing\",\"reason\":null,\"last_bad\":2,\"clean_streak\":1,\"memory_cleared\":false}\n"
    );
}

/// A `current` of 1e12 with 50 % failures backs off from the ceiling, not
/// to 5e11, and says that it clamped.
#[test]
fn an_out_of_bounds_current_is_clamped_and_said() {
    for control in ["concurrency", "rate"] {
        let out = replay(
            &["--control", control, "--ceiling", "100"],
            "{\"attempts\": 100, \"failures\": 50, \"current\": 1000000000000}\n",
        );
        let rows = out.rows();
        assert_eq!(rows.len(), 1);
        assert_ne!(rows[0]["to"], json!(500_000_000_000u64), "{control}");
        assert_eq!(
            brief(&rows[0]),
            json!([100, "down", 50, "backing-off", null, 100]),
            "{control}"
        );
        assert_eq!(
            rows[0]["clamped_from"],
            json!(1_000_000_000_000u64),
            "{control}"
        );
        assert!(
            out.stderr.contains("line 1: `current` 1000000000000 lies outside [floor, ceiling] = [1, 100]; clamped to 100"),
            "{control}: {}",
            out.stderr
        );
    }
    // Below the floor: clamped up to it.
    let out = replay(
        &["--control", "rate", "--ceiling", "100", "--floor", "2"],
        "{\"attempts\": 100, \"failures\": 0, \"current\": 0.5}\n",
    );
    let rows = out.rows();
    assert_eq!(
        (rows[0]["current"].clone(), rows[0]["clamped_from"].clone()),
        (json!(2), json!(0.5))
    );
    // Within bounds: no key, no warning.
    let out = replay(
        &["--ceiling", "100"],
        "{\"attempts\": 100, \"failures\": 50, \"current\": 100}\n",
    );
    assert!(!out.stdout.contains("clamped_from"), "{}", out.stdout);
    assert_eq!(out.stderr, "");
}

/// Floats are read exactly (serde_json's `float_roundtrip`): a value 1 ulp
/// above a short decimal is not read as that decimal.
#[test]
fn floats_are_read_exactly() {
    let out = replay(
        &["--control", "rate", "--ceiling", "1000"],
        "{\"attempts\": 100, \"failures\": 0, \"current\": 182.01600000000002}\n",
    );
    assert!(
        out.stdout.contains("\"current\":182.01600000000002,"),
        "{}",
        out.stdout
    );
}

/// The reclimb no longer stalls when the tool reads back a hair below the
/// safe zone: last_bad 242.68800000000002 puts 0.75 last_bad 1 ulp above
/// 182.016, which a 2-decimal tool reports. Every later line gives that
/// read-back; the offer must keep rising.
#[test]
fn a_rounding_read_back_does_not_stall_the_reclimb() {
    let mut input =
        String::from("{\"attempts\": 100, \"failures\": 50, \"current\": 242.68800000000002}\n");
    for _ in 0..5 {
        input.push_str("{\"attempts\": 100, \"failures\": 0, \"current\": 182.016}\n");
    }
    let out = replay(&["--control", "rate", "--ceiling", "1000"], &input);
    let rows = out.rows();
    for r in &rows[1..] {
        assert_eq!(r["decision"], json!("up"), "{r}");
        let (from, to) = (r["current"].as_f64().unwrap(), r["to"].as_f64().unwrap());
        assert!(to - from >= 1.0, "a real move, not 1 ulp: {r}");
    }
}

/// A tool that truncates a rate to 2 decimals, with `--resolution 0.01`:
/// the reclimb's last hair (0.0045) is below the knob's step, so the probe
/// applies at once; a bad resolution is a usage error naming the flag.
#[test]
fn a_configured_resolution_turns_a_sub_step_up_into_the_probe() {
    let input = "{\"attempts\": 100, \"failures\": 50, \"current\": 100.006}\n\
                 {\"attempts\": 100, \"failures\": 0, \"current\": 75}\n";
    let args = ["--control", "rate", "--ceiling", "1000"];
    let plain = replay(&args, input).rows();
    assert_eq!(
        plain[1]["to"],
        json!(0.75 * 100.006),
        "a real (if small) move"
    );
    let mut with = args.to_vec();
    with.extend(["--resolution", "0.01"]);
    let rows = replay(&with, input).rows();
    assert_eq!(rows[1]["to"], json!(75.0 + 0.02 * 100.006), "{:?}", rows[1]);
    replay(&["--control", "rate", "--resolution", "0"], "")
        .assert_rejected(&["`resolution` must be a finite number > 0"]);
}

/// Without `--profile`, replay decides as `run` does by default: `gentle`
/// (two failures of 30 attempts are no evidence yet), not the seed rules.
#[test]
fn replay_defaults_to_the_default_profile() {
    let input = "{\"attempts\": 30, \"failures\": 2, \"current\": 100}\n";
    let rows = replay_as_given(&["--ceiling", "100"], input).rows();
    assert_eq!(rows[0]["decision"], "hold", "{rows:?}");
    assert_eq!(rows[0]["reason"], "gathering", "{rows:?}");
}
