use super::super::{Control, Params, ThrottleGovernor};
use super::*;

fn params() -> Params {
    Params::new(Control::Concurrency, Some(1000.0), 1.0, None, 0.05, None).unwrap()
}

/// Feeds (attempts, failures) windows through the default governor and
/// the advisor; returns every advice given.
fn run(windows: impl IntoIterator<Item = (f64, f64)>) -> Vec<Advice> {
    let mut g = ThrottleGovernor::new(params());
    let mut a = Advisor::new(g.params());
    let mut out = Vec::new();
    for (n, f) in windows {
        let offer = g.state().current;
        let o = g.step(n, f);
        out.extend(a.observe(AdviceWindow {
            attempts: n,
            failures: f,
            offer,
            decision: o.decision,
        }));
    }
    out
}

#[test]
fn a_clean_steady_target_gets_no_advice() {
    assert!(run((0..200).map(|_| (1000.0, 0.0))).is_empty());
    // A plain overload now and then, after probes: no advice either.
    let w = (0..200).map(|i| {
        if i % 10 == 9 {
            (1000.0, 200.0)
        } else {
            (1000.0, 0.0)
        }
    });
    assert!(run(w).is_empty());
}

#[test]
fn tiny_samples_are_named_once() {
    // 30 attempts a window, two failures every fourth window (6.7 %).
    let w = (0..100).map(|i| if i % 4 == 3 { (30.0, 2.0) } else { (30.0, 0.0) });
    let advice = run(w);
    assert_eq!(advice.len(), 1, "{advice:?}");
    assert_eq!(advice[0].signature, Signature::TinySamples);
    assert!(
        advice[0].reason.contains("fewer than 100 attempts"),
        "{}",
        advice[0]
    );
    assert!(advice[0].to_string().ends_with("try profile = \"robust\""));
}

#[test]
fn lagged_failures_are_named() {
    // An overshoot whose failures outlast the Down: the fraction does
    // not fall although the offer did, then it is clean at once. The
    // Ups come from the default governor's own climbs.
    let w = (0..100).map(|i| match i % 10 {
        5 => (1000.0, 300.0),
        6 => (1000.0, 300.0),
        _ => (1000.0, 0.0),
    });
    let advice = run(w);
    assert_eq!(advice.len(), 1, "{advice:?}");
    assert_eq!(advice[0].signature, Signature::LaggedFailures);
    // Falling fractions are plain congestion, twice over: no advice.
    let w = (0..100).map(|i| match i % 10 {
        5 => (1000.0, 300.0),
        6 => (1000.0, 100.0),
        _ => (1000.0, 0.0),
    });
    assert!(run(w).is_empty());
}

#[test]
fn load_independent_bursts_are_named() {
    // The advisor is fed hand-made decisions: held offers, then a burst
    // whose Down follows no Up.
    let mut a = Advisor::new(&params());
    let mut got = Vec::new();
    for i in 0..60 {
        let (f, d) = if i % 12 == 11 {
            (400.0, Decision::Down(60.0))
        } else {
            (0.0, Decision::Hold)
        };
        got.extend(a.observe(AdviceWindow {
            attempts: 1000.0,
            failures: f,
            offer: 100.0,
            decision: d,
        }));
    }
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].signature, Signature::LoadIndependentBursts);
    assert!(a.has_spoken());
}

#[test]
fn windows_without_traffic_are_ignored() {
    let mut a = Advisor::new(&params());
    for _ in 0..100 {
        let none = a.observe(AdviceWindow {
            attempts: 0.0,
            failures: 0.0,
            offer: 1.0,
            decision: Decision::Hold,
        });
        assert_eq!(none, None);
    }
    assert_eq!(a.windows, 0);
}
