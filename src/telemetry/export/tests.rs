//! The exporter's unit tests.

use super::*;
use crate::control::WriteOutcome;
use crate::governor::ThrottleGovernor;
use crate::governor::{Params, Profile};

fn started(tel: &Arc<Telemetry>, name: &str) -> Exporter {
    let p = Params::new(Control::Concurrency, Some(100.0), 1.0, None, 0.05, None).unwrap();
    let e = Exporter::new(tel.clone(), name, Control::Concurrency, false);
    e.emit(Event::Started {
        params: p,
        profile: Profile::Seed,
        early_verdicts: false,
        dry_run: false,
        lag: String::new(),
    });
    e
}

/// One window: the governor at 1, 200 attempts of which `failures` fail.
fn window(e: &Exporter, failures: f64) {
    let p = Params::new(Control::Concurrency, Some(100.0), 1.0, None, 0.05, None).unwrap();
    let mut g = ThrottleGovernor::new(p);
    g.step(0.0, 0.0);
    e.emit(Event::Window {
        outcome: Box::new(g.step(200.0, failures)),
        at: 1.0,
        window_secs: 1.0,
        unconfirmed: false,
        in_effect: None,
        not_written: false,
        baseline: true,
    });
    e.emit(Event::ReadDuration(0.003));
}

fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines().find(|l| l.starts_with(prefix))
}

/// The exporter writes a window through the series and the status slot
/// it took when its target started, and what it writes is what
/// `/metrics`, the status and the history show. After the target is
/// removed and started again (a reload), the new exporter's windows
/// show, not the removed target's.
#[test]
fn a_window_is_exported_through_the_targets_own_handles() {
    let tel = Arc::new(Telemetry::with_history(10));
    let e = started(&tel, "t1");
    window(&e, 0.0);
    let text = tel.metrics.encode();
    assert_eq!(
        line(&text, "throttle_attempts_total{target=\"t1\"}"),
        Some("throttle_attempts_total{target=\"t1\"} 200.0")
    );
    assert_eq!(
        line(&text, "throttle_offer{target=\"t1\"}"),
        Some("throttle_offer{target=\"t1\"} 1.0")
    );
    assert_eq!(
        line(&text, "throttle_signal_up{target=\"t1\"}"),
        Some("throttle_signal_up{target=\"t1\"} 1.0")
    );
    assert_eq!(
        line(
            &text,
            "throttle_decisions_total{target=\"t1\",decision=\"up\",mode=\"climbing\""
        )
        .map(|l| l.rsplit(' ').next().unwrap()),
        Some("1")
    );
    assert_eq!(
        line(
            &text,
            "throttle_signal_read_duration_seconds_count{target=\"t1\"}"
        ),
        Some("throttle_signal_read_duration_seconds_count{target=\"t1\"} 1")
    );
    let status = tel.status("t1").unwrap();
    assert_eq!((status.windows, status.last_decision), (1, Some("up")));
    assert!(status.has_baseline);
    assert_eq!(tel.history("t1").len(), 1);

    // A reload removes the target; a new task starts under the same name.
    tel.unregister("t1");
    assert!(line(
        &tel.metrics.encode(),
        "throttle_attempts_total{target=\"t1\"}"
    )
    .is_none());
    let again = started(&tel, "t1");
    window(&again, 100.0);
    window(&again, 100.0);
    let text = tel.metrics.encode();
    assert_eq!(
        line(&text, "throttle_attempts_total{target=\"t1\"}"),
        Some("throttle_attempts_total{target=\"t1\"} 400.0")
    );
    assert_eq!(
        line(&text, "throttle_attempt_failures_total{target=\"t1\"}"),
        Some("throttle_attempt_failures_total{target=\"t1\"} 200.0")
    );
    assert_eq!(tel.status("t1").unwrap().windows, 2);
    assert_eq!(tel.history("t1").len(), 2);
    // The old exporter no longer reaches what /metrics and the API show.
    window(&e, 0.0);
    assert_eq!(tel.status("t1").unwrap().windows, 2);
    assert_eq!(
        line(
            &tel.metrics.encode(),
            "throttle_attempts_total{target=\"t1\"}"
        ),
        Some("throttle_attempts_total{target=\"t1\"} 400.0")
    );
}

/// An exporter whose target never started (no `Started`) updates no
/// status and keeps no history, as a lookup by name would not.
#[test]
fn a_window_before_the_target_started_updates_no_status() {
    let tel = Arc::new(Telemetry::with_history(10));
    let e = Exporter::new(tel.clone(), "t", Control::Concurrency, false);
    window(&e, 0.0);
    assert!(tel.status("t").is_none());
    assert!(tel.history("t").is_empty());
}

#[test]
fn describe_names_the_outcome() {
    assert!(describe(&WriteOutcome::Confirmed { attempts: 1 }).contains("confirmed"));
    assert!(describe(&WriteOutcome::Unconfirmed {
        committed: Some(3.0),
        error: None
    })
    .contains("still reports 3"));
}

/// `throttle_capacity` has one series, in the estimate's state: none
/// before the figure is known, the provisional one replaced by the
/// steady one, and none again when the figure is withdrawn or the
/// target removed; the status follows every window.
#[test]
fn the_capacity_metric_keeps_one_series_in_the_current_state() {
    use crate::telemetry::{CapacityEstimate, CapacityFigure};
    let tel = Arc::new(Telemetry::with_history(10));
    let e = started(&tel, "t1");
    let series = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("throttle_capacity{"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert!(series(&tel.metrics.encode()).is_empty());
    assert_eq!(
        serde_json::to_value(tel.status("t1").unwrap()).unwrap()["capacity"],
        serde_json::Value::Null
    );
    let f = |offer: f64, windows: usize| CapacityFigure {
        offer,
        failure_ratio: 0.01,
        interval: [0.005, 0.02],
        windows,
        attempts: 1000.0,
        failures: 10.0,
        next_step_up: Some(offer + 1.0),
        lower_bound: false,
        dead_band: None,
    };
    e.emit(Event::Capacity(CapacityEstimate::Provisional(f(10.0, 2))));
    assert_eq!(
        series(&tel.metrics.encode()),
        ["throttle_capacity{target=\"t1\",state=\"provisional\"} 10.0"]
    );
    e.emit(Event::Capacity(CapacityEstimate::Steady(f(10.0, 5))));
    assert_eq!(
        series(&tel.metrics.encode()),
        ["throttle_capacity{target=\"t1\",state=\"steady\"} 10.0"]
    );
    let st = serde_json::to_value(tel.status("t1").unwrap()).unwrap();
    assert_eq!(st["capacity"]["steady"], true);
    assert_eq!(st["capacity"]["windows"], 5);
    // The same figure, no longer bracketed: one series, in its own state.
    e.emit(Event::Capacity(CapacityEstimate::Steady(CapacityFigure {
        lower_bound: true,
        ..f(10.0, 6)
    })));
    assert_eq!(
        series(&tel.metrics.encode()),
        ["throttle_capacity{target=\"t1\",state=\"lower-bound\"} 10.0"]
    );
    let st = serde_json::to_value(tel.status("t1").unwrap()).unwrap();
    assert_eq!(
        (&st["capacity"]["steady"], &st["capacity"]["lower_bound"]),
        (&serde_json::json!(true), &serde_json::json!(true))
    );
    e.emit(Event::Capacity(CapacityEstimate::None));
    assert!(series(&tel.metrics.encode()).is_empty());
    e.emit(Event::Capacity(CapacityEstimate::Steady(f(11.0, 5))));
    // A reload restarts the target: its new task starts with no figure.
    let again = started(&tel, "t1");
    assert!(series(&tel.metrics.encode()).is_empty());
    again.emit(Event::Capacity(CapacityEstimate::Steady(f(11.0, 5))));
    assert_eq!(series(&tel.metrics.encode()).len(), 1);
    tel.unregister("t1");
    assert!(series(&tel.metrics.encode()).is_empty());
}
