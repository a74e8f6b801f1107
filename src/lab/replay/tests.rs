//! Replay: arguments, both input forms, every line error, the row format.

use clap::Parser;

use super::*;
use crate::governor::robust::background::BackgroundEstimate;
use crate::governor::{Confidence, HoldReason, Mode, VerdictClass};
use rows::confidence_cell;

#[derive(Parser)]
struct Wrap {
    #[command(flatten)]
    args: ReplayArgs,
}

fn run(input: &str, args: &ReplayArgs) -> Result<Vec<ReplayRow>, ReplayError> {
    replay(input.as_bytes(), args)
}

fn rate() -> ReplayArgs {
    ReplayArgs {
        control: Control::Rate,
        ceiling: Some(100.0),
        ..ReplayArgs::default()
    }
}

fn line_error(input: &str, args: &ReplayArgs) -> (usize, LineError) {
    match run(input, args) {
        Err(ReplayError::Line { line, problem }) => (line, problem),
        other => panic!("expected a line error, got {other:?}"),
    }
}

#[test]
fn default_args_match_the_command_line() {
    let parsed = Wrap::try_parse_from(["replay"]).unwrap().args;
    assert_eq!(parsed, ReplayArgs::default());
    let parsed = Wrap::try_parse_from([
        "replay",
        "--control",
        "rate",
        "--format",
        "table",
        "--low",
        "0.002",
        "--profile",
        "default",
        "in.jsonl",
    ])
    .unwrap()
    .args;
    assert_eq!(parsed.control, Control::Rate);
    assert_eq!(parsed.format, OutputFormat::Table);
    assert_eq!(parsed.low, Some(0.002));
    assert_eq!(parsed.file, Some(PathBuf::from("in.jsonl")));
    assert!(!parsed.reads_stdin());
    assert!(Wrap::try_parse_from(["replay", "--control", "users"]).is_err());
    let robust = Wrap::try_parse_from(["replay", "--profile", "robust"]).unwrap();
    assert_eq!(robust.args.profile, Profile::Robust);
    assert!(Wrap::try_parse_from(["replay", "--profile", "aggressive"]).is_err());
}

#[test]
fn dash_and_no_file_read_stdin() {
    let mut args = ReplayArgs::default();
    assert!(args.reads_stdin());
    args.file = Some(PathBuf::from("-"));
    assert!(args.reads_stdin());
}

#[test]
fn invalid_params_list_every_error() {
    let args = ReplayArgs {
        high: 0.05,
        low: Some(0.05),
        ..ReplayArgs::default()
    };
    let err = run("", &args).unwrap_err();
    let ReplayError::Params(errors) = &err else {
        panic!("expected params errors, got {err:?}");
    };
    assert_eq!(errors.len(), 2, "{errors:?}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("invalid parameters (each `name` below is the --name flag):\n  - "),
        "{msg}"
    );
    assert!(
        msg.contains("`low`") && msg.contains("`ceiling` is required"),
        "{msg}"
    );
}

#[test]
fn window_form_rows() {
    let rows = run(
        "{\"attempts\": 100, \"failures\": 0}\n\n{\"attempts\": 100, \"failures\": 50}\n",
        &rate(),
    )
    .unwrap();
    assert_eq!(rows.len(), 2, "the blank line is skipped");
    assert_eq!(rows[0].window, 1);
    assert_eq!((rows[0].current, rows[0].to), (1.0, 2.0));
    assert_eq!(rows[1].window, 3, "window numbers are input line numbers");
    assert_eq!(rows[1].decision, Verdict::Down);
    assert_eq!((rows[1].current, rows[1].to), (2.0, 1.0));
    assert_eq!(rows[1].last_bad, Some(2.0));
}

#[test]
fn cumulative_form_rows() {
    let rows = run(
        "{\"attempts_total\": 1000, \"failures_total\": 10}\n\
         {\"attempts_total\": 1100, \"failures_total\": 10}\n\
         {\"attempts_total\": 50, \"failures_total\": 0}\n\
         {\"successes_total\": 90, \"failures_total\": 10}\n\
         {\"successes_total\": 190, \"failures_total\": 10}\n",
        &rate(),
    )
    .unwrap();
    let reasons: Vec<_> = rows.iter().map(|r| r.reason).collect();
    assert_eq!(
        reasons,
        [
            Some(HoldReason::Baseline),
            None,
            Some(HoldReason::CounterReset),
            Some(HoldReason::CounterReset), // the form changed
            None,
        ]
    );
    assert_eq!((rows[0].attempts, rows[0].frac), (None, None));
    assert_eq!(
        (rows[1].attempts, rows[1].failures),
        (Some(100.0), Some(0.0))
    );
    assert_eq!(rows[4].decision, Verdict::Up);
    assert_eq!((rows[4].current, rows[4].to), (2.0, 4.0));
}

#[test]
fn current_overrides_the_committed_offer() {
    let rows = run(
        "{\"attempts\": 100, \"failures\": 0, \"current\": 30}\n\
         {\"attempts\": 100, \"failures\": 0}\n",
        &rate(),
    )
    .unwrap();
    assert_eq!((rows[0].current, rows[0].to), (30.0, 60.0));
    assert_eq!((rows[1].current, rows[1].to), (60.0, 100.0));
}

#[test]
fn malformed_lines_name_the_line_and_the_problem() {
    let ok = "{\"attempts\": 1, \"failures\": 0}\n";
    type Check = fn(&LineError) -> bool;
    let cases: [(&str, Check); 12] = [
        ("{\"attempts\": 1", |e| {
            matches!(e, LineError::Syntax { .. })
        }),
        ("nope", |e| matches!(e, LineError::Syntax { .. })),
        (
            "{\"attempts\": 1, \"failures\": 0, \"x\": 1}",
            |e| matches!(e, LineError::Shape { message, .. } if message.contains("unknown field `x`")),
        ),
        ("{\"attempts\": \"1\", \"failures\": 0}", |e| {
            matches!(e, LineError::Shape { .. })
        }),
        (
            "[1, 0]",
            |e| matches!(e, LineError::Shape { message, .. } if message.contains("an object such as")),
        ),
        (
            "{\"attempts\": 1, \"failures\": 0, \"failures_total\": 0}",
            |e| *e == LineError::MixedForms,
        ),
        ("{\"attempts\": 1}", |e| {
            matches!(
                e,
                LineError::Missing {
                    missing: "failures",
                    ..
                }
            )
        }),
        ("{\"current\": 3}", |e| *e == LineError::NoCounters),
        ("{\"attempts\": 1, \"failures\": 2}", |e| {
            matches!(e, LineError::FailuresExceedAttempts { .. })
        }),
        ("{\"attempts\": -1, \"failures\": 0}", |e| {
            matches!(
                e,
                LineError::Negative {
                    field: "attempts",
                    ..
                }
            )
        }),
        (
            "{\"attempts\": 1, \"failures\": 0, \"current\": 2.5}",
            |e| *e == LineError::CurrentNotInteger(2.5),
        ),
        ("{\"attempts_total\": 1, \"failures_total\": 0}", |e| {
            matches!(e, LineError::FormChanged { first_line: 1, .. })
        }),
    ];
    for (bad, check) in cases {
        let input = format!("{ok}{bad}\n{ok}");
        let args = ReplayArgs {
            ceiling: Some(10.0),
            ..ReplayArgs::default()
        };
        let (line, problem) = line_error(&input, &args);
        assert_eq!(line, 2, "{bad}");
        assert!(check(&problem), "{bad}: {problem:?}");
        let msg = ReplayError::Line { line, problem }.to_string();
        assert!(msg.starts_with("line 2: "), "{msg}");
        assert!(!msg.contains("line 1 column"), "{msg}");
    }
}

#[test]
fn cumulative_problems() {
    let args = rate();
    let (line, e) = line_error(
        "{\"attempts_total\": 10, \"failures_total\": 0}\n\
         {\"attempts_total\": 15, \"failures_total\": 9}\n",
        &args,
    );
    assert_eq!(line, 2);
    assert_eq!(
        e,
        LineError::InconsistentDelta {
            since: 1,
            failures: 9.0,
            attempts: 5.0
        }
    );
    let (_, e) = line_error(
        "{\"attempts_total\": 1, \"successes_total\": 1, \"failures_total\": 0}",
        &args,
    );
    assert_eq!(e, LineError::BothTotals);
    let (_, e) = line_error("{\"attempts_total\": 1}", &args);
    assert!(matches!(
        e,
        LineError::Missing {
            missing: "failures_total",
            ..
        }
    ));
    let (_, e) = line_error("{\"failures_total\": 1}", &args);
    assert!(matches!(
        e,
        LineError::Missing {
            missing: "attempts_total",
            ..
        }
    ));
    let (_, e) = line_error("{\"attempts_total\": 1, \"failures_total\": 2}", &args);
    assert!(matches!(
        e,
        LineError::FailuresExceedAttempts {
            failures_key: "failures_total",
            ..
        }
    ));
    let (_, e) = line_error("{\"successes_total\": -3, \"failures_total\": 2}", &args);
    assert!(matches!(
        e,
        LineError::Negative {
            field: "successes_total",
            ..
        }
    ));
}

#[test]
fn numbers_print_as_integers_when_integral() {
    let row = ReplayRow {
        window: 1,
        attempts: Some(100.0),
        failures: Some(7.0),
        frac: Some(0.07),
        current: 100.0,
        decision: Verdict::Down,
        to: 90.0,
        mode: Some(Mode::BackingOff),
        reason: None,
        last_bad: Some(100.0),
        clean_streak: 0,
        memory_cleared: false,
        clamped_from: None,
        confidence: None,
    };
    assert_eq!(
        render_jsonl(std::slice::from_ref(&row)),
        "{\"window\":1,\"attempts\":100,\"failures\":7,\"frac\":0.07,\"current\":100,\
         \"decision\":\"down\",\"to\":90,\"mode\":\"backing-off\",\"reason\":null,\
         \"last_bad\":100,\"clean_streak\":0,\"memory_cleared\":false}\n"
    );
    assert_eq!(text_num(3.75), "3.75");
    assert_eq!(text_num(41_000.0), "41000");
    assert_eq!(text_num(1e300), "1e+300");
}

#[test]
fn table_aligns_columns_under_a_header() {
    let rows = run(
        "{\"attempts\": 100, \"failures\": 0}\n{\"attempts\": 0, \"failures\": 0}\n",
        &rate(),
    )
    .unwrap();
    assert_eq!(
        render_table(&rows),
        "\
window  attempts  failures  frac  current  decision  to  mode      reason      last_bad  clean_streak  memory_cleared  confidence
     1       100         0    0%        1  up         2  climbing  -                  -             0           false  clean 0/100 [0%, 3.7%]
     2         0         0     -        2  hold       2  -         no-traffic         -             0           false  -
"
    );
    assert_eq!(render_table(&[]).lines().count(), 1, "the header alone");
}

fn confidence(background: bool) -> Confidence {
    Confidence {
        verdict: VerdictClass::Clean,
        attempts: 120.0,
        failures: 2.0,
        lower: 0.004_6,
        upper: 0.059,
        clean_below: 0.031,
        high: 0.05,
        background: background.then_some(BackgroundEstimate {
            rate: 0.021,
            attempts: 1000.0,
            failures: 21.0,
        }),
    }
}

#[test]
fn a_confidence_prints_its_counts_as_integers_and_its_background() {
    let row = ReplayRow {
        confidence: Some(confidence(true)),
        ..ReplayRow::from_outcome(
            1,
            &ThrottleGovernor::new(rate().params().unwrap()).step(1.0, 0.0),
        )
    };
    let text = render_jsonl(std::slice::from_ref(&row));
    assert!(
        text.ends_with(
            ",\"confidence\":{\"verdict\":\"clean\",\"attempts\":120,\"failures\":2,\
             \"lower\":0.0046,\"upper\":0.059,\"clean_below\":0.031,\"high\":0.05,\
             \"background\":{\"rate\":0.021,\"attempts\":1000,\"failures\":21}}}\n"
        ),
        "{text}"
    );
    let without = ReplayRow {
        confidence: Some(confidence(false)),
        ..row.clone()
    };
    let text = render_jsonl(std::slice::from_ref(&without));
    assert!(
        text.ends_with("\"high\":0.05}}\n"),
        "no background key: {text}"
    );
    let none = ReplayRow {
        confidence: None,
        ..row
    };
    assert!(
        !render_jsonl(&[none]).contains("confidence"),
        "absent, not null"
    );
}

#[test]
fn the_confidence_cell_is_short() {
    assert_eq!(
        confidence_cell(Some(&confidence(true))),
        "clean 2/120 [0.46%, 5.9%] bg 2.1%"
    );
    assert_eq!(
        confidence_cell(Some(&confidence(false))),
        "clean 2/120 [0.46%, 5.9%]"
    );
    assert_eq!(confidence_cell(None), "-");
}

#[test]
fn only_the_robust_profiles_give_a_confidence() {
    let input = "{\"attempts\": 200, \"failures\": 0}\n";
    for (profile, has) in [
        (Profile::Seed, false),
        (Profile::Robust, true),
        (Profile::Gentle, true),
    ] {
        let args = ReplayArgs { profile, ..rate() };
        let rows = run(input, &args).unwrap();
        assert_eq!(rows[0].confidence.is_some(), has, "{profile:?}: {rows:?}");
    }
}
