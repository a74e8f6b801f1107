//! The window step on synthetic reads: attribution, outside writers,
//! unconfirmed writes, bounds, signal loss and conflicts.

use std::time::Duration;

use super::*;
use crate::governor::{Control, Decision, HoldReason, Profile};
use crate::telemetry::export::{Event, MemberChange};

fn params(ceiling: f64) -> Params {
    Params::new(
        Control::Concurrency,
        Some(ceiling),
        1.0,
        Some(4.0),
        0.05,
        None,
    )
    .unwrap()
}

fn core(members: &[&str], lag: f64) -> Core {
    let p = params(100.0);
    let mut c = Core::new(
        ThrottleGovernor::with_profile(p, Profile::Seed),
        Policy {
            params: p,
            integer: true,
            dry_run: false,
            signal_loss_windows: 3,
            loss_to_floor: true,
            down_after: (members.len() > 1).then_some(2),
            lag_override: None,
            group: members.len() > 1,
            window_secs: 2.0,
            early_verdicts: false,
            early_after_lag: false,
        },
    );
    for m in members {
        c.members
            .insert(m.to_string(), MemberState::new(m, None, 1.0, lag));
    }
    c.rebalance();
    c
}

/// A read of cumulative `attempts`/`failures` with the tool reporting `offer`.
fn read(attempts: f64, failures: f64, offer: f64, w: WriterView) -> MemberRead {
    MemberRead {
        signal: Ok(Counters {
            first: attempts,
            failures,
            successes_form: false,
            offer: None,
            lag: None,
        }),
        committed: Some(Ok(offer)),
        before: w,
        after: w,
    }
}

fn one(name: &str, r: MemberRead) -> Members<MemberRead> {
    Members::from([(name.to_string(), r)])
}

/// A writer that finished `generation` writes, the last of `value` at `at`.
fn wrote(generation: u64, value: f64, at: f64, confirmed: bool) -> WriterView {
    WriterView {
        pending: None,
        generation,
        finished_at: Some(at),
        last_value: Some(value),
        last_confirmed: confirmed,
        tool_max: None,
    }
}

fn reason(o: &Outcome) -> Option<HoldReason> {
    o.reason
}

fn has(out: &StepOut, f: impl Fn(&Event) -> bool) -> bool {
    out.events.iter().any(f)
}

#[test]
fn the_opening_write_starts_the_first_window_after_it() {
    let mut c = core(&["t"], 0.0);
    // The opening offer 4 was confirmed at 0.5 s.
    let w = wrote(1, 4.0, 0.5, true);
    let out = c.step(1.0, one("t", read(0.0, 0.0, 4.0, w)));
    assert_eq!(reason(&out.outcome), Some(HoldReason::Baseline));
    let out = c.step(3.0, one("t", read(100.0, 0.0, 4.0, w)));
    assert!(out.decided, "{:?}", out.outcome);
    assert_eq!(out.outcome.decision, Decision::Up(8.0));
    assert_eq!(out.writes, vec![("t".to_string(), 8.0)]);
}

#[test]
fn a_window_that_straddles_our_write_is_never_decided_on() {
    let mut c = core(&["t"], 0.0);
    let w1 = wrote(1, 4.0, 0.1, true);
    c.step(1.0, one("t", read(0.0, 0.0, 4.0, w1)));
    let out = c.step(3.0, one("t", read(100.0, 0.0, 4.0, w1)));
    assert_eq!(out.outcome.decision, Decision::Up(8.0));
    // The write of 8 lands at 3.2 s; the read at 5 s closes a window that
    // began at 3 s, at the old offer: discarded, whatever it says.
    let w2 = wrote(2, 8.0, 3.2, true);
    let before = c.gov.state();
    let out = c.step(5.0, one("t", read(200.0, 90.0, 8.0, w2)));
    assert!(!out.decided);
    assert_eq!(reason(&out.outcome), Some(HoldReason::OfferChange));
    assert_eq!(
        c.gov.state().last_bad,
        before.last_bad,
        "no last_bad from it"
    );
    assert!(has(&out, |e| matches!(
        e,
        Event::Discarded {
            reason: "offer_change",
            ..
        }
    )));
    assert!(out.writes.is_empty());
    // The next window, wholly at 8, is decided.
    let out = c.step(7.0, one("t", read(300.0, 90.0, 8.0, w2)));
    assert!(out.decided);
    assert_eq!(out.outcome.decision, Decision::Up(16.0));
}

#[test]
fn the_lag_pushes_the_first_attributable_window_back() {
    // A signal that trails the load by 3 s (Locust with workers).
    let mut c = core(&["t"], 3.0);
    let w = wrote(1, 4.0, 0.0, true);
    // Baselines taken before 0 + 3 s do not start windows.
    assert!(!c.step(1.0, one("t", read(0.0, 0.0, 4.0, w))).decided);
    let out = c.step(3.5, one("t", read(50.0, 20.0, 4.0, w)));
    assert_eq!(reason(&out.outcome), Some(HoldReason::OfferChange));
    let out = c.step(5.5, one("t", read(100.0, 20.0, 4.0, w)));
    assert!(out.decided, "baseline at 3.5 >= 3: {:?}", out.outcome);
}

#[test]
fn the_counters_own_lag_estimate_and_the_override_apply() {
    let mut c = core(&["t"], 0.0);
    let w = wrote(1, 4.0, 0.0, true);
    let with_lag = |a: f64| {
        let mut r = read(a, 0.0, 4.0, w);
        if let Ok(c) = r.signal.as_mut() {
            c.lag = Some(Duration::from_secs(5));
        }
        r
    };
    c.step(1.0, one("t", with_lag(0.0)));
    assert!(!c.step(3.0, one("t", with_lag(10.0))).decided, "5 s lag");
    assert!(
        !c.step(6.0, one("t", with_lag(20.0))).decided,
        "baseline 3 < 5"
    );
    assert!(c.step(8.0, one("t", with_lag(30.0))).decided);
    assert_eq!(c.members["t"].lag, 5.0);
    // An override wins over the source's estimate.
    let mut c = core(&["t"], 0.0);
    c.policy.lag_override = Some(0.0);
    c.step(1.0, one("t", with_lag(0.0)));
    assert!(c.step(3.0, one("t", with_lag(10.0))).decided);
}

#[test]
fn a_pending_write_makes_its_windows_unattributable() {
    let mut c = core(&["t"], 0.0);
    let w = wrote(1, 4.0, 0.0, true);
    c.step(1.0, one("t", read(0.0, 0.0, 4.0, w)));
    let busy = WriterView {
        pending: Some(8.0),
        ..w
    };
    // The write may land before the read: the window is not the old offer's.
    let out = c.step(3.0, one("t", read(100.0, 0.0, 4.0, busy)));
    assert_eq!(reason(&out.outcome), Some(HoldReason::OfferChange));
    let out = c.step(5.0, one("t", read(200.0, 0.0, 4.0, busy)));
    assert_eq!(reason(&out.outcome), Some(HoldReason::OfferChange));
    // It finishes at 5.5: the window from 5 still straddles, the next not.
    let done = wrote(2, 8.0, 5.5, true);
    let out = c.step(7.0, one("t", read(300.0, 0.0, 8.0, done)));
    assert_eq!(reason(&out.outcome), Some(HoldReason::OfferChange));
    assert!(c.step(9.0, one("t", read(400.0, 0.0, 8.0, done))).decided);
}

#[test]
fn an_unexplained_change_of_the_reported_offer_is_discarded_and_stepped_from() {
    let mut c = core(&["t"], 0.0);
    let w = wrote(1, 4.0, 0.0, true);
    c.step(1.0, one("t", read(0.0, 0.0, 4.0, w)));
    c.step(3.0, one("t", read(100.0, 0.0, 4.0, w)));
    // We asked for 8 (confirmed), then someone set 20.
    let w2 = wrote(2, 8.0, 3.1, true);
    c.step(5.0, one("t", read(200.0, 0.0, 8.0, w2)));
    let out = c.step(7.0, one("t", read(300.0, 0.0, 20.0, w2)));
    assert_eq!(reason(&out.outcome), Some(HoldReason::OfferChange));
    assert!(has(
        &out,
        |e| matches!(e, Event::OutsideChange { reported, .. } if *reported == 20.0)
    ));
    assert_eq!(c.gov.state().current, 20.0);
}

#[test]
fn an_unconfirmed_write_leaves_the_tools_offer_in_effect() {
    let mut c = core(&["t"], 0.0);
    let w = wrote(1, 4.0, 0.0, true);
    c.step(1.0, one("t", read(0.0, 0.0, 4.0, w)));
    let out = c.step(3.0, one("t", read(100.0, 0.0, 4.0, w)));
    assert_eq!(out.outcome.decision, Decision::Up(8.0));
    // The tool never applied 8: it still runs 4.
    let failed = wrote(2, 8.0, 3.5, false);
    c.step(5.0, one("t", read(200.0, 0.0, 4.0, failed)));
    assert_eq!(c.gov.state().current, 4.0, "the tool's offer, not ours");
    assert!(c.unconfirmed());
    let out = c.step(7.0, one("t", read(300.0, 0.0, 4.0, failed)));
    assert!(out.decided);
    assert_eq!(out.outcome.from, 4.0, "decided at what the tool runs");
    assert!(!has(&out, |e| matches!(e, Event::OutsideChange { .. })));
    let unconfirmed = out.events.iter().any(|e| {
        matches!(
            e,
            Event::Window {
                unconfirmed: true,
                ..
            }
        )
    });
    assert!(unconfirmed, "the window is marked unconfirmed");
}

#[test]
fn a_late_write_never_yields_an_up_on_a_window_at_the_old_offer() {
    // The tool applies writes 3 s late; each window is 2 s.
    let mut c = core(&["t"], 0.0);
    let w1 = wrote(1, 4.0, 0.0, true);
    c.step(1.0, one("t", read(0.0, 0.0, 4.0, w1)));
    assert_eq!(
        c.step(3.0, one("t", read(100.0, 0.0, 4.0, w1)))
            .outcome
            .decision,
        Decision::Up(8.0)
    );
    // The write gave up unconfirmed at 4 s; the tool still runs 4.
    let w2 = wrote(2, 8.0, 4.0, false);
    let out = c.step(5.0, one("t", read(200.0, 0.0, 4.0, w2)));
    assert!(!out.decided, "the window spans the write");
    // At 6 s the tool applies 8: the window 5..7 mixes 4 and 8.
    let out = c.step(7.0, one("t", read(300.0, 0.0, 8.0, w2)));
    assert!(!out.decided, "{:?}", out.outcome);
    // Only a window wholly at 8 is decided, from 8.
    let out = c.step(9.0, one("t", read(400.0, 0.0, 8.0, w2)));
    assert!(out.decided);
    assert_eq!(out.outcome.from, 8.0);
}

#[test]
fn outside_values_beyond_the_bounds_are_clamped_and_invalid_ones_ignored() {
    let mut c = core(&["t"], 0.0);
    let w = wrote(1, 4.0, 0.0, true);
    c.step(1.0, one("t", read(0.0, 0.0, 4.0, w)));
    let out = c.step(3.0, one("t", read(100.0, 50.0, 1000.0, w)));
    assert!(has(
        &out,
        |e| matches!(e, Event::OutsideChange { reported, to, .. } if *reported == 1000.0 && *to == 100.0)
    ));
    assert_eq!(c.gov.state().current, 100.0);
    for bad in [f64::NAN, f64::INFINITY, -5.0, -1e300] {
        let out = c.step(5.0, one("t", read(200.0, 50.0, bad, w)));
        assert!(
            has(&out, |e| matches!(e, Event::InvalidReading { .. })),
            "{bad}"
        );
        let cur = c.gov.state().current;
        assert!((1.0..=100.0).contains(&cur), "{bad} adopted: {cur}");
    }
}

#[test]
fn signal_loss_applies_to_a_group_of_one_and_to_groups() {
    for members in [vec!["t"], vec!["a", "b"]] {
        let mut c = core(&members, 0.0);
        c.gov.set_current(40.0);
        let err = || MemberRead {
            signal: Err(SignalError::Connect("refused".into())),
            committed: None,
            before: WriterView::default(),
            after: WriterView::default(),
        };
        let mut lost = false;
        for i in 0..3 {
            let reads = members.iter().map(|m| (m.to_string(), err())).collect();
            let out = c.step(f64::from(i), reads);
            assert_eq!(reason(&out.outcome), Some(HoldReason::SignalError));
            lost |= has(&out, |e| {
                matches!(e, Event::SignalLost { to_floor: true, .. })
            });
        }
        assert!(lost, "{members:?}: signal loss policy not applied");
        assert_eq!(
            c.gov.state().current,
            1.0,
            "{members:?}: dropped to the floor"
        );
    }
}

#[test]
fn a_tool_that_stops_pulling_is_signal_loss_and_a_member_down() {
    // Good counters, but nobody pulls the offer any more (pull control):
    // the window has no valid signal, whatever the counters say.
    let gone = |attempts: f64, w: WriterView| MemberRead {
        committed: Some(Err(ControlError::NotPulled(
            "no client has pulled the offer for 6.0s".into(),
        ))),
        ..read(attempts, 0.0, 0.0, w)
    };
    let mut c = core(&["t"], 0.0);
    c.gov.set_current(40.0);
    let w = wrote(1, 40.0, 0.0, true);
    c.step(1.0, one("t", read(0.0, 0.0, 40.0, w)));
    let mut lost = false;
    for i in 1..=3 {
        let out = c.step(
            1.0 + 2.0 * f64::from(i),
            one("t", gone(100.0 * f64::from(i), w)),
        );
        assert_eq!(reason(&out.outcome), Some(HoldReason::SignalError));
        assert!(has(&out, |e| matches!(
            e,
            Event::SignalError {
                error_type: "not_pulled",
                ..
            }
        )));
        assert!(!has(&out, |e| matches!(e, Event::ControlReadError { .. })));
        lost |= has(&out, |e| {
            matches!(e, Event::SignalLost { to_floor: true, .. })
        });
    }
    assert!(lost, "signal loss policy not applied");
    assert_eq!(c.gov.state().current, 1.0, "dropped to the floor");
    // Pulling resumes: the signal is back.
    let out = c.step(9.0, one("t", read(400.0, 0.0, 1.0, w)));
    assert!(has(&out, |e| matches!(e, Event::SignalBack { .. })));

    // In a group, the member that stopped pulling goes down, then rejoins.
    let mut g = core(&["a", "b"], 0.0);
    g.gov.set_current(40.0);
    g.need_split = true;
    let w = wrote(1, 20.0, 0.0, true);
    let ok = |n: f64| read(n, 0.0, 20.0, w);
    g.step(
        1.0,
        Members::from([("a".into(), ok(0.0)), ("b".into(), ok(0.0))]),
    );
    for (i, t) in [3.0, 5.0].into_iter().enumerate() {
        let n = 100.0 * (i as f64 + 1.0);
        g.step(
            t,
            Members::from([("a".into(), ok(n)), ("b".into(), gone(n, w))]),
        );
    }
    assert!(!g.members["b"].up, "a member that stopped pulling is down");
    let out = g.step(
        7.0,
        Members::from([("a".into(), ok(300.0)), ("b".into(), ok(300.0))]),
    );
    assert!(g.members["b"].up);
    assert!(has(&out, |e| matches!(
        e,
        Event::Member {
            change: MemberChange::Back,
            ..
        }
    )));
}

#[test]
fn a_second_writer_that_keeps_fighting_is_detected_and_not_raced() {
    let mut c = core(&["t"], 0.0);
    let mut gen = 1;
    let mut w = wrote(gen, 4.0, 0.0, true);
    let mut t = 1.0;
    let mut a = 0.0;
    c.step(t, one("t", read(a, 0.0, 4.0, w)));
    let mut offered = 4.0;
    let mut conflict = false;
    for round in 0..8 {
        // A window at our offer: clean, so we decide Up and write it...
        t += 2.0;
        a += 100.0;
        let out = c.step(t, one("t", read(a, 0.0, offered, w)));
        if out
            .events
            .iter()
            .any(|e| matches!(e, Event::Conflict { on: true, .. }))
        {
            conflict = true;
        }
        if let Some((_, v)) = out.writes.first() {
            gen += 1;
            w = wrote(gen, *v, t + 0.1, true);
        } else if conflict {
            assert!(c.conflict);
            break;
        }
        // ...and the other governor sets its own value right after.
        t += 2.0;
        a += 100.0;
        offered = 3.0 + f64::from(round);
        let out = c.step(t, one("t", read(a, 0.0, offered, w)));
        if out
            .events
            .iter()
            .any(|e| matches!(e, Event::Conflict { on: true, .. }))
        {
            conflict = true;
        }
    }
    assert!(conflict, "no conflict after repeated outside changes");
    assert!(c.conflict);
    // While in conflict nothing is written.
    let out = c.step(t + 2.0, one("t", read(a + 100.0, 0.0, offered, w)));
    assert!(out.writes.is_empty());
}

#[test]
fn a_member_down_drops_out_and_its_share_moves() {
    let mut c = core(&["a", "b"], 0.0);
    c.gov.set_current(40.0);
    c.need_split = true;
    let w = wrote(1, 20.0, 0.0, true);
    let ok = |n: f64| read(n, 0.0, 20.0, w);
    let down = || MemberRead {
        signal: Err(SignalError::Connect("refused".into())),
        committed: None,
        before: w,
        after: w,
    };
    c.step(
        1.0,
        Members::from([("a".into(), ok(0.0)), ("b".into(), ok(0.0))]),
    );
    c.step(
        3.0,
        Members::from([("a".into(), ok(100.0)), ("b".into(), down())]),
    );
    let out = c.step(
        5.0,
        Members::from([("a".into(), ok(200.0)), ("b".into(), down())]),
    );
    assert!(!c.members["b"].up);
    assert!(has(&out, |e| matches!(
        e,
        Event::Member {
            change: MemberChange::Down,
            ..
        }
    )));
    assert_eq!(c.gov.params().ceiling, 50.0, "the ceiling is a's share");
}

/// Tiny windows (10 attempts, so one failure is 10 %) that back off now
/// and then: the default profile advises robust, once; robust never does.
fn advice_count(profile: Profile) -> usize {
    let mut c = core(&["t"], 0.0);
    if profile == Profile::Robust {
        let p = params(100.0);
        c = Core::new(ThrottleGovernor::with_profile(p, profile), c.policy.clone());
        c.members
            .insert("t".into(), MemberState::new("t", None, 1.0, 0.0));
        c.rebalance();
    }
    let (mut attempts, mut failures, mut advice) = (0.0, 0.0, 0);
    for i in 0..60 {
        let offer = c.gov.state().current;
        let out = c.step(
            i as f64,
            one("t", read(attempts, failures, offer, WriterView::default())),
        );
        advice += out
            .events
            .iter()
            .filter(|e| matches!(e, Event::Advice(_)))
            .count();
        attempts += 10.0;
        if i % 5 == 4 {
            failures += 1.0;
        }
    }
    advice
}

#[test]
fn tiny_samples_bring_one_profile_advice_under_the_default_only() {
    assert_eq!(advice_count(Profile::Seed), 1);
    assert_eq!(advice_count(Profile::Robust), 0);
}

mod latency_bound {
    use super::*;
    use crate::window::{Buckets, LatencySample};

    /// A cumulative histogram with `fast` observations under 0.1 s and
    /// `slow` in (0.1, 1] s.
    fn hist(fast: f64, slow: f64) -> Option<Result<LatencySample, SignalError>> {
        Some(Ok(LatencySample::Histogram(
            Buckets::new([
                (0.1, fast),
                (1.0, fast + slow),
                (f64::INFINITY, fast + slow),
            ])
            .unwrap(),
        )))
    }

    fn bounded(lag: f64) -> Core {
        core(&["t"], lag).with_latency(LatencyState::new(0.99, 0.25, 0.2, 0.0))
    }

    #[test]
    fn a_latency_window_follows_the_counters_baseline_and_backs_off_on_a_breach() {
        let mut c = bounded(0.0);
        let w = wrote(1, 4.0, 0.1, true);
        // Baseline for both (a long fast history).
        let out = c.step_with(1.0, one("t", read(0.0, 0.0, 4.0, w)), hist(10_000.0, 0.0));
        assert_eq!(reason(&out.outcome), Some(HoldReason::Baseline));
        // A fast window climbs.
        let out = c.step_with(3.0, one("t", read(100.0, 0.0, 4.0, w)), hist(10_100.0, 0.0));
        assert_eq!(out.outcome.decision, Decision::Up(8.0));
        assert!(out.outcome.latency.unwrap().observed.unwrap() < 0.1);
        // Every request of the next window is slow: the lifetime p99 would
        // still be fast, the window's is near 1 s: a Down driven by latency.
        let w2 = wrote(2, 8.0, 3.1, true);
        let out = c.step_with(
            5.0,
            one("t", read(200.0, 0.0, 8.0, w2)),
            hist(10_100.0, 0.0),
        );
        // (The window straddling the write is discarded, for latency too.)
        assert_eq!(reason(&out.outcome), Some(HoldReason::OfferChange));
        let out = c.step_with(
            7.0,
            one("t", read(300.0, 0.0, 8.0, w2)),
            hist(10_100.0, 100.0),
        );
        assert_eq!(
            out.outcome.decision,
            Decision::Down(2.0),
            "{:?}",
            out.outcome
        );
        let l = out.outcome.latency.unwrap();
        assert!(l.drove && l.observed.unwrap() > 0.9);
        assert_eq!(out.outcome.last_bad, Some(8.0));
    }

    #[test]
    fn a_failed_latency_read_is_counted_and_never_reads_as_fast() {
        let mut c = bounded(0.0);
        let w = wrote(1, 4.0, 0.1, true);
        c.step_with(1.0, one("t", read(0.0, 0.0, 4.0, w)), hist(0.0, 0.0));
        let out = c.step_with(
            3.0,
            one("t", read(100.0, 0.0, 4.0, w)),
            Some(Err(SignalError::Timeout(Duration::from_secs(1)))),
        );
        assert_eq!(reason(&out.outcome), Some(HoldReason::NoLatency));
        assert!(has(&out, |e| matches!(
            e,
            Event::LatencyError {
                error_type: "timeout",
                ..
            }
        )));
        // The next read is a new baseline (no quantile yet), the one after
        // a window again.
        let out = c.step_with(5.0, one("t", read(200.0, 0.0, 4.0, w)), hist(50.0, 0.0));
        assert_eq!(reason(&out.outcome), Some(HoldReason::NoLatency));
        let out = c.step_with(7.0, one("t", read(300.0, 0.0, 4.0, w)), hist(150.0, 0.0));
        assert_eq!(out.outcome.decision, Decision::Up(8.0));
    }

    #[test]
    fn a_histogram_reset_rebases_and_is_counted() {
        let mut c = bounded(0.0);
        let w = wrote(1, 4.0, 0.1, true);
        c.step_with(1.0, one("t", read(0.0, 0.0, 4.0, w)), hist(500.0, 0.0));
        let out = c.step_with(3.0, one("t", read(100.0, 0.0, 4.0, w)), hist(5.0, 0.0));
        assert_eq!(reason(&out.outcome), Some(HoldReason::NoLatency));
        assert!(has(&out, |e| matches!(
            e,
            Event::LatencyError {
                error_type: "counter_reset",
                ..
            }
        )));
    }

    #[test]
    fn the_latency_source_lag_delays_the_first_window_after_a_change() {
        // Locust-like: the quantile trails the load by 10 s.
        let mut c = core(&["t"], 0.0).with_latency(LatencyState::new(0.99, 0.25, 0.2, 10.0));
        let w = wrote(1, 4.0, 0.5, true);
        c.step_with(1.0, one("t", read(0.0, 0.0, 4.0, w)), hist(0.0, 0.0));
        // 10.5 s after the confirmed write, windows before that are discarded.
        let out = c.step_with(3.0, one("t", read(100.0, 0.0, 4.0, w)), hist(100.0, 0.0));
        assert_eq!(reason(&out.outcome), Some(HoldReason::OfferChange));
        for at in [5.0, 7.0, 9.0, 11.0] {
            let n = at * 50.0;
            let out = c.step_with(at, one("t", read(n, 0.0, 4.0, w)), hist(n, 0.0));
            assert_eq!(reason(&out.outcome), Some(HoldReason::OfferChange), "{at}");
        }
        let out = c.step_with(13.0, one("t", read(650.0, 0.0, 4.0, w)), hist(650.0, 0.0));
        assert_eq!(out.outcome.decision, Decision::Up(8.0));
    }

    #[test]
    fn no_latency_bound_is_the_plain_step() {
        let mut a = core(&["t"], 0.0);
        let mut b = core(&["t"], 0.0);
        let w = wrote(1, 4.0, 0.1, true);
        for (at, n, f) in [(1.0, 0.0, 0.0), (3.0, 100.0, 0.0), (5.0, 200.0, 50.0)] {
            let oa = a.step(at, one("t", read(n, f, 4.0, w))).outcome;
            let ob = b
                .step_with(at, one("t", read(n, f, 4.0, w)), hist(n, 0.0))
                .outcome;
            assert_eq!(oa, ob);
            assert!(ob.latency.is_none());
        }
    }
}

/// A core with early verdicts on, after a clean window at 4 moved it up to
/// 8 (written and confirmed at 3.1 s, signal lag 2 s).
fn watched_after_an_up() -> (Core, WriterView) {
    let mut c = core(&["t"], 2.0);
    c.policy.early_verdicts = true;
    let w1 = wrote(1, 4.0, 0.1, true);
    c.step(3.0, one("t", read(0.0, 0.0, 4.0, w1)));
    let out = c.step(5.0, one("t", read(100.0, 0.0, 4.0, w1)));
    assert_eq!(out.outcome.decision, Decision::Up(8.0));
    assert!(c.watching(), "the window after an Up is watched");
    (c, wrote(2, 8.0, 5.1, true))
}

#[test]
fn a_certain_breach_closes_the_window_after_an_up_early() {
    let (mut c, w2) = watched_after_an_up();
    // The round's baseline (5 s) predates the write (5.1 s): the attempts
    // before it would dilute the new offer's fraction, so nothing is
    // decided early until a look after the write is kept.
    let before = one("t", read(130.0, 30.0, 8.0, w2));
    assert!(c.early_breach(5.2, &before).is_none());
    c.note_look(5.2, &one("t", read(105.0, 0.0, 8.0, w2)));
    // A quarter of a second later, within the signal's lag: 30 of 50 failed.
    let reads = one("t", read(155.0, 30.0, 8.0, w2));
    let breach = c.early_breach(5.45, &reads).expect("a certain breach");
    assert_eq!((breach.attempts, breach.failures), (50.0, 30.0));
    assert!((breach.secs - 0.25).abs() < 1e-9);
    let out = c.close_early(5.45, reads, None, breach);
    assert!(out.decided, "the window after the write is the new offer's");
    // 8 x clamp(1 - 0.6, 0.25, 0.9): the severity of the new offer's own
    // fraction, not of one diluted by the 55 attempts before the look.
    assert_eq!(out.outcome.decision, Decision::Down(3.0));
    assert!(has(
        &out,
        |e| matches!(e, Event::EarlyVerdict { failures, .. } if *failures == 30.0)
    ));
    assert!(has(
        &out,
        |e| matches!(e, Event::Window { window_secs, .. } if (*window_secs - 0.25).abs() < 1e-9)
    ));
    assert!(!c.watching(), "a Down ends the watch");
    assert_eq!(c.gov.state().last_bad, Some(8.0));
}

#[test]
fn a_round_whose_baseline_follows_the_write_decides_early_without_a_look() {
    let (mut c, w2) = watched_after_an_up();
    // The rebase round after the write (5.3 s) is within the lag: discarded,
    // but its reading is the next round's baseline, taken after the write.
    let out = c.step(5.3, one("t", read(110.0, 0.0, 8.0, w2)));
    assert!(!out.decided);
    assert!(c.watching(), "a discarded window keeps the watch");
    let reads = one("t", read(160.0, 30.0, 8.0, w2));
    let breach = c.early_breach(5.6, &reads).expect("a certain breach");
    assert_eq!((breach.attempts, breach.failures), (50.0, 30.0));
}

#[test]
fn a_clean_or_uncertain_window_is_not_closed_early() {
    let (mut c, w2) = watched_after_an_up();
    c.note_look(5.2, &one("t", read(105.0, 0.0, 8.0, w2)));
    // Clean so far.
    assert!(c
        .early_breach(6.0, &one("t", read(200.0, 0.0, 8.0, w2)))
        .is_none());
    // In the dead band, and a little above high on few attempts.
    assert!(c
        .early_breach(6.0, &one("t", read(200.0, 3.0, 8.0, w2)))
        .is_none());
    assert!(c
        .early_breach(6.0, &one("t", read(140.0, 3.0, 8.0, w2)))
        .is_none());
}

#[test]
fn no_early_verdict_while_a_write_is_pending_or_a_read_failed() {
    let (mut c, w2) = watched_after_an_up();
    c.note_look(5.2, &one("t", read(105.0, 0.0, 8.0, w2)));
    let pending = WriterView {
        pending: Some(8.0),
        ..w2
    };
    assert!(c
        .early_breach(5.5, &one("t", read(150.0, 30.0, 8.0, pending)))
        .is_none());
    let failed = MemberRead {
        signal: Err(SignalError::Timeout(Duration::from_secs(1))),
        ..read(150.0, 30.0, 8.0, w2)
    };
    assert!(c.early_breach(5.5, &one("t", failed)).is_none());
    let unconfirmed = wrote(2, 8.0, 5.1, false);
    assert!(c
        .early_breach(5.5, &one("t", read(150.0, 30.0, 8.0, unconfirmed)))
        .is_none());
}

#[test]
fn early_verdicts_are_off_unless_asked_and_only_after_an_up() {
    let mut c = core(&["t"], 2.0);
    let w1 = wrote(1, 4.0, 0.1, true);
    c.step(3.0, one("t", read(0.0, 0.0, 4.0, w1)));
    c.step(5.0, one("t", read(100.0, 0.0, 4.0, w1)));
    assert!(
        !c.watching(),
        "off: the seed and robust profiles keep their meaning"
    );
    let reads = one("t", read(150.0, 30.0, 8.0, wrote(2, 8.0, 5.1, true)));
    assert!(c.early_breach(5.5, &reads).is_none());

    // On, but the last decided window held: nothing to watch.
    let mut c = core(&["t"], 0.0);
    c.policy.early_verdicts = true;
    c.step(1.0, one("t", read(0.0, 0.0, 4.0, w1)));
    let out = c.step(3.0, one("t", read(100.0, 3.0, 4.0, w1)));
    assert_eq!(out.outcome.decision, Decision::Hold);
    assert!(!c.watching());
}

#[test]
fn a_batched_signal_decides_early_only_after_its_lag() {
    let (mut c, w2) = watched_after_an_up();
    c.policy.early_after_lag = true;
    // Within the lag (the write finished at 5.1 s, lag 2 s): a look is not
    // kept as the base, and the counters may still carry the old offer.
    c.note_look(5.2, &one("t", read(105.0, 0.0, 8.0, w2)));
    assert!(c
        .early_breach(5.5, &one("t", read(155.0, 30.0, 8.0, w2)))
        .is_none());
    // After it, a look is kept and a certain breach closes the window.
    c.note_look(7.2, &one("t", read(305.0, 60.0, 8.0, w2)));
    let breach = c
        .early_breach(7.5, &one("t", read(355.0, 90.0, 8.0, w2)))
        .expect("a certain breach after the lag");
    assert_eq!((breach.attempts, breach.failures), (50.0, 30.0));
}

/// A tool restart is recognised on the first valid read after the reset,
/// whatever reads failed in between: a loaded machine's timeouts must
/// not let the tool keep its own default (seen in `tests/inproc` under
/// `--test-threads=8`, where every read timed out for a few rounds).
#[test]
fn a_restart_is_recognised_across_failed_reads() {
    let mut c = core(&["t"], 0.0);
    let w = wrote(1, 4.0, 0.5, true);
    c.step(1.0, one("t", read(0.0, 0.0, 4.0, w)));
    let out = c.step(3.0, one("t", read(100.0, 0.0, 4.0, w)));
    assert_eq!(out.outcome.decision, Decision::Up(8.0));
    let w = wrote(2, 8.0, 3.1, true);
    c.step(5.0, one("t", read(300.0, 0.0, 8.0, w)));
    // The counters go to zero; the read-back still says 8 (read before the
    // restart), so this read alone shows only a reset.
    let out = c.step(7.0, one("t", read(5.0, 0.0, 8.0, w)));
    assert!(!has(&out, |e| matches!(e, Event::ToolRestart { .. })));
    // A read times out (one: with the reset read that makes two invalid
    // rounds, under the signal-loss policy's three).
    let mut r = read(0.0, 0.0, 8.0, w);
    r.signal = Err(SignalError::Timeout(Duration::from_secs(1)));
    r.committed = None;
    let out = c.step(9.0, one("t", r));
    assert!(!has(&out, |e| matches!(e, Event::SignalLost { .. })));
    // The next valid read: the tool runs its own default of 1.
    let out = c.step(11.0, one("t", read(20.0, 0.0, 1.0, w)));
    assert!(
        has(&out, |e| matches!(e, Event::ToolRestart { .. })),
        "{:?}",
        out.events
    );
    assert!(
        out.writes.iter().any(|(n, v)| n == "t" && *v >= 8.0),
        "{:?}",
        out.writes
    );
}

/// A window whose counts cover a failed read's interval too is weighed as
/// the rounds it covers: its Window event says so (the report's throughput
/// divides by it), and the governor's plateau test does not take its
/// doubled count for a doubled yield. (Before: the next offer's windows
/// were "no more successes than the offer below" and gentle held there for
/// good, every window clean: the live page test under load, stuck at 2.)
#[test]
fn a_window_over_a_failed_read_counts_the_time_it_covers() {
    let mut c = core(&["t"], 0.0);
    c.gov = ThrottleGovernor::with_profile(params(100.0), Profile::Gentle);
    let w = wrote(1, 4.0, 0.5, true);
    c.step(1.0, one("t", read(0.0, 0.0, 4.0, w)));
    let mut r = read(0.0, 0.0, 4.0, w);
    r.signal = Err(SignalError::Timeout(Duration::from_secs(1)));
    r.committed = None;
    c.step(3.0, one("t", r));
    // 2,400 attempts over 4 s: two windows' worth at 4.
    let out = c.step(5.0, one("t", read(2400.0, 0.0, 4.0, w)));
    assert_eq!(out.outcome.decision, Decision::Up(8.0), "{:?}", out.events);
    climbs_on_as_long_as_the_yield_holds(&mut c, &out);
}

/// A window that ran long with every read valid is weighed by the time it
/// covers, as one over a failed read is: a real Goose run's window after
/// an Up covered 6 s of a 3 s cadence, and counted as one window its
/// doubled count set a best yield the next offer could not match (held at
/// 8, `dwelling`, for 170 s, far below its latency bound). A short window
/// still counts as one (`fold::window_span`).
#[test]
fn a_window_that_ran_long_counts_the_time_it_covers() {
    let mut c = core(&["t"], 0.0);
    c.gov = ThrottleGovernor::with_profile(params(100.0), Profile::Gentle);
    let w = wrote(1, 4.0, 0.5, true);
    c.step(1.0, one("t", read(0.0, 0.0, 4.0, w)));
    // 2,400 attempts over 4 s (the cadence is 2 s): two windows' worth.
    let out = c.step(5.0, one("t", read(2400.0, 0.0, 4.0, w)));
    assert_eq!(out.outcome.decision, Decision::Up(8.0), "{:?}", out.events);
    climbs_on_as_long_as_the_yield_holds(&mut c, &out);
}

#[test]
fn a_window_span_is_its_time_at_least_one_and_the_rounds_it_missed() {
    assert_eq!(fold::window_span(6.0, 3.0, 0), 2.0);
    assert_eq!(fold::window_span(4.5, 3.0, 0), 1.5);
    // Short, or over a failed read: the rounds.
    assert_eq!(fold::window_span(1.0, 3.0, 0), 1.0);
    assert_eq!(fold::window_span(3.0, 3.0, 1), 2.0);
    assert_eq!(fold::window_span(f64::NAN, 3.0, 0), 1.0);
    assert_eq!(fold::window_span(6.0, 0.0, 0), 1.0);
}

/// The second half of the two tests above: `out` (the window over 4 s at
/// 4, 2,400 attempts) was weighed as 4 s, and at 8, 2,400 attempts a 2 s
/// window (the same yield per unit of offer and time) climbs on.
fn climbs_on_as_long_as_the_yield_holds(c: &mut Core, out: &StepOut) {
    assert!(
        has(
            out,
            |e| matches!(e, Event::Window { window_secs, .. } if (*window_secs - 4.0).abs() < 1e-9)
        ),
        "{:?}",
        out.events
    );
    let w = wrote(2, 8.0, 5.1, true);
    let mut total = 2400.0;
    let mut last = None;
    for k in 0..4 {
        total += 2400.0;
        let out = c.step(7.0 + 2.0 * f64::from(k), one("t", read(total, 0.0, 8.0, w)));
        if out.decided {
            last = Some(out.outcome);
            break;
        }
    }
    let o = last.expect("a window at 8 was decided");
    assert_eq!(o.decision, Decision::Up(16.0), "{o:?}");
}

/// A rebase after writes that settled at `at` has nothing to do once every
/// member's window is based at or after `at` (the task then skips it: a
/// read would close a window of milliseconds).
#[test]
fn a_window_based_after_the_writes_settled_needs_no_rebase() {
    let mut c = core(&["a", "b"], 0.0);
    assert!(!c.based_since(0.0), "no base yet");
    let w = wrote(1, 2.0, 0.5, true);
    let mut reads = one("a", read(0.0, 0.0, 2.0, w));
    reads.insert("b".to_string(), read(0.0, 0.0, 2.0, w));
    c.step(3.0, reads);
    assert!(c.based_since(3.0));
    assert!(c.based_since(2.5));
    assert!(!c.based_since(3.5), "a write settled after the base");
    // Only one member read: the other's base is older.
    c.step(6.0, one("a", read(100.0, 0.0, 2.0, w)));
    assert!(!c.based_since(5.0));
}

/// A gentle rate governor right after a failed probe: under a wall
/// remembered at 120 it climbed from 40 to a probe at 97.2, which failed
/// 200 of 972 (a Down to 94.8, owing `200 / (0.5 × 0.05)` = 8,000 clean
/// attempts); or, with `failed` false, one that only climbed to 60.
fn gentle_core(failed: bool, lag: f64) -> Core {
    let p = Params::new(Control::Rate, Some(10_000.0), 1.0, None, 0.05, None).unwrap();
    let mut g = ThrottleGovernor::with_profile(p, Profile::Gentle);
    g.set_current(40.0);
    g.restore_memory(Some(120.0), 0);
    let ups: &[f64] = if failed {
        &[60.0, 90.0, 92.4, 94.8, 97.2]
    } else {
        &[60.0]
    };
    let near = |d: Decision, want: f64| match d {
        Decision::Up(to) | Decision::Down(to) => (to - want).abs() < 1e-6,
        Decision::Hold => false,
    };
    for &to in ups {
        let n = (10.0 * g.state().current).round();
        let d = g.step(n, 0.0).decision;
        assert!(matches!(d, Decision::Up(_)) && near(d, to), "{d:?}");
    }
    if failed {
        let d = g.step(972.0, 200.0).decision;
        assert!(matches!(d, Decision::Down(_)) && near(d, 94.8), "{d:?}");
    }
    let mut c = Core::new(
        g,
        Policy {
            params: p,
            integer: false,
            dry_run: false,
            signal_loss_windows: 3,
            loss_to_floor: true,
            down_after: None,
            lag_override: None,
            group: false,
            window_secs: 2.0,
            early_verdicts: false,
            early_after_lag: false,
        },
    );
    c.members
        .insert("t".to_string(), MemberState::new("t", None, 1.0, lag));
    c.rebalance();
    c
}

fn late_cost(out: &StepOut) -> Option<(f64, f64)> {
    out.events.iter().find_map(|e| match e {
        Event::LateCost { failures, owed } => Some((*failures, *owed)),
        _ => None,
    })
}

#[test]
fn a_failed_probes_failures_in_a_discarded_window_are_charged_to_it() {
    // The Down to 94.8 was written at 0.2 s; the signal lags 2 s, so the
    // window from the read at 1 s to the read at 3 s straddles it: the
    // tool ran the probe's 97.2 until the Down reached the counters, and
    // 300 of its 1,000 attempts failed. 290 are over the clean level (1 %
    // of 1,000): 290 / 0.025 = 11,600 clean attempts more.
    let mut c = gentle_core(true, 2.0);
    let w = wrote(1, 94.8, 0.2, true);
    c.step(1.0, one("t", read(0.0, 0.0, 94.8, w)));
    let out = c.step(3.0, one("t", read(1_000.0, 300.0, 94.8, w)));
    assert!(!out.decided);
    assert_eq!(reason(&out.outcome), Some(HoldReason::OfferChange));
    let (failures, owed) = late_cost(&out).expect("a LateCost event");
    assert!((failures - 290.0).abs() < 1e-6, "{failures}");
    assert!((owed - 19_600.0).abs() < 1.0, "{owed}");
    assert_eq!(c.gov.owed(), Some(owed));
    // The next window is wholly at 94.8 and decided on; after it, a
    // discarded window is nobody's.
    let out = c.step(5.0, one("t", read(1_948.0, 300.0, 94.8, w)));
    assert!(out.decided, "{:?}", out.outcome);
    let w = wrote(2, 94.8, 5.5, true);
    let out = c.step(7.0, one("t", read(2_900.0, 600.0, 94.8, w)));
    assert!(!out.decided);
    assert_eq!(late_cost(&out), None);
    assert_eq!(c.gov.owed(), Some(owed));
}

#[test]
fn a_discarded_window_after_a_climb_charges_nothing() {
    let mut c = gentle_core(false, 2.0);
    let w = wrote(1, 60.0, 0.2, true);
    c.step(1.0, one("t", read(0.0, 0.0, 60.0, w)));
    let out = c.step(3.0, one("t", read(600.0, 300.0, 60.0, w)));
    assert!(!out.decided);
    assert_eq!(late_cost(&out), None);
    assert_eq!(c.gov.owed(), None);
}
