//! The verdict summary: the background sentence, the classes, the tooltip.

use super::*;

fn window(verdict: VerdictClass, attempts: f64, failures: f64, bg: Option<f64>) -> WindowRecord {
    let (lower, upper) = crate::governor::wilson_interval(failures, attempts);
    WindowRecord {
        time_secs: 1.0,
        offer: 10.0,
        attempts: Some(attempts),
        failures: Some(failures),
        frac: Some(failures / attempts),
        window_secs: Some(2.0),
        decision: "hold",
        to: 10.0,
        label: "dead-band",
        discarded: false,
        unconfirmed: false,
        latency_secs: None,
        latency_drove: false,
        confidence: Some(Confidence {
            verdict,
            attempts,
            failures,
            lower,
            upper,
            clean_below: 0.01 + bg.unwrap_or(0.0),
            high: 0.05,
            background: bg.map(|rate| BackgroundEstimate {
                rate,
                attempts: 2000.0,
                failures: rate * 2000.0,
            }),
        }),
    }
}

#[test]
fn the_background_sentence_says_what_the_verdicts_count() {
    let b = BackgroundEstimate {
        rate: 0.021,
        attempts: 2000.0,
        failures: 42.0,
    };
    assert_eq!(
        background_sentence(Some(&b)),
        "2.1% of attempts failed at the low offers whatever the load (42 of 2000 attempts); \
         verdicts count only failures above it as the load's"
    );
    let zero = BackgroundEstimate {
        rate: 0.0,
        failures: 0.0,
        ..b
    };
    assert!(
        background_sentence(Some(&zero)).starts_with(
            "no attempt failed at the low offers (0 of 2000 attempts, so the background failure rate is at most 0.19% at 95%)"
        ),
        "{}",
        background_sentence(Some(&zero))
    );
    // The real background stall's witness: 44 attempts, none failed, at a
    // true background of 3 %. The sentence must not call that a rate of 0.
    let thin = background_sentence(Some(&BackgroundEstimate {
        attempts: 44.0,
        ..zero
    }));
    assert!(
        thin.contains("(0 of 44 attempts, so the background failure rate is at most 8.03% at 95%)"),
        "{thin}"
    );
    assert!(background_sentence(None).starts_with("no background failure rate was estimated"));
}

#[test]
fn the_summary_counts_each_class_and_keeps_the_latest_background() {
    let history = vec![
        window(VerdictClass::DeadBand, 1000.0, 20.0, None),
        window(VerdictClass::Clean, 1000.0, 20.0, Some(0.01)),
        window(VerdictClass::Clean, 3000.0, 60.0, Some(0.02)),
        WindowRecord {
            confidence: None,
            ..window(VerdictClass::Clean, 10.0, 0.0, None)
        },
        window(VerdictClass::Breach, 1000.0, 200.0, Some(0.02)),
        window(VerdictClass::Clean, 2000.0, 40.0, None),
    ];
    let s = summarize(&history).unwrap();
    assert_eq!(s.background.map(|b| b.rate), Some(0.02));
    assert_eq!(s.background.map(|b| b.attempts), Some(2000.0));
    assert!(
        s.background_note.starts_with("2% of attempts failed"),
        "{}",
        s.background_note
    );
    let classes: Vec<_> = s.classes.iter().map(|c| (c.verdict, c.windows)).collect();
    assert_eq!(
        classes,
        [
            (VerdictClass::Clean, 3),
            (VerdictClass::DeadBand, 1),
            (VerdictClass::Breach, 1)
        ]
    );
    let clean = &s.classes[0];
    assert_eq!(clean.median_attempts, 2000.0);
    let (lo, hi) = crate::governor::wilson_interval(40.0, 2000.0);
    assert_eq!(clean.median_interval_width, hi - lo);
    assert!(
        classes_line(&s.classes)
            .starts_with("clean 3 windows (median 2000 attempts, 95% interval "),
        "{}",
        classes_line(&s.classes)
    );
    assert!(classes_line(&s.classes).contains(", breach 1 window (median 1000 attempts"));
}

#[test]
fn the_seed_rules_have_no_summary_and_a_tooltip_needs_a_verdict() {
    let mut plain = window(VerdictClass::Clean, 100.0, 0.0, None);
    plain.confidence = None;
    assert_eq!(summarize(std::slice::from_ref(&plain)), None);
    assert_eq!(tooltip(&plain), None);
    let tip = tooltip(&window(VerdictClass::Breach, 1000.0, 200.0, Some(0.02))).unwrap();
    assert!(tip.starts_with("breach 200/1000, 95 % "), "{tip}");
    assert!(tip.ends_with(", background 2%"), "{tip}");
}

/// A real governor's history (the default profile, 2 % of attempts failing
/// at every offer, then a breach) through the report: the text, the HTML
/// and the JSON say the background and each verdict's confidence.
#[test]
fn a_report_of_a_background_says_it() {
    use crate::governor::{Control, Params, Profile, ThrottleGovernor};
    use crate::report::{Report, SteadyRule, TargetReport};
    let params = Params::new(Control::Concurrency, Some(100.0), 1.0, None, 0.05, None).unwrap();
    let mut g = ThrottleGovernor::with_profile(params, Profile::default());
    let mut history = Vec::new();
    for i in 0..9 {
        let failures = if i == 8 { 200.0 } else { 20.0 };
        let o = g.step(1000.0, failures);
        history.push(WindowRecord::of_outcome(
            &o,
            2.0 * (i + 1) as f64,
            2.0,
            false,
            None,
        ));
    }
    let rule = SteadyRule::default();
    let report = Report::new(
        vec![TargetReport::new(
            "api",
            "concurrency",
            0.05,
            None,
            history,
            &rule,
        )],
        &rule,
    );
    let text = report.to_text();
    assert!(
        text.contains(
            "    background: 2% of attempts failed at the low offers whatever the load \
             (40 of 2000 attempts); verdicts count only failures above it as the load's\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("    verdicts: clean 7 windows (median 1000 attempts"),
        "{text}"
    );
    assert!(
        text.contains(", dead-band 1 window (") && text.contains(", breach 1 window ("),
        "{text}"
    );
    let html = report.to_html();
    assert!(
        html.contains(
            "<p class=\"background\">Background: 2% of attempts failed at the low offers"
        ),
        "{html}"
    );
    assert!(
        html.contains("<title>down 2 → 1: breach 200/1000, 95 % "),
        "the back-off's tooltip: {html}"
    );
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    let v = &json["targets"][0]["verdicts"];
    assert_eq!(v["background"]["rate"], 0.02, "{v}");
    assert_eq!(v["background"]["attempts"], 2000.0, "{v}");
    assert_eq!(v["classes"][2]["verdict"], "breach", "{v}");
    let last = &json["targets"][0]["history"][8]["confidence"];
    assert_eq!(
        (&last["verdict"], &last["failures"]),
        (&"breach".into(), &200.0.into())
    );
}
