//! The steady-state rule and the capacity figure on synthetic histories:
//! hand-written shapes, and histories made by the real governor against a
//! model wall.

use super::levels::wilson;
use super::*;
use crate::governor::{Confidence, Control, Params, Profile, ThrottleGovernor, VerdictClass};
use crate::rng::SplitMix64;
use proptest::prelude::*;

fn rec(t: f64, offer: f64, attempts: f64, failures: f64, decision: &'static str) -> WindowRecord {
    WindowRecord {
        time_secs: t,
        offer,
        attempts: Some(attempts),
        failures: Some(failures),
        frac: (attempts > 0.0).then(|| failures / attempts),
        window_secs: Some(1.0),
        decision,
        to: offer,
        label: "dead-band",
        discarded: false,
        unconfirmed: false,
        latency_secs: None,
        latency_drove: false,
        confidence: None,
    }
}

/// A history from offers alone: a fast-failing wall at `wall` (a good
/// request takes 200 ms, a rejection 10 ms, 2 s windows), decisions marked
/// by whether the next offer is higher or lower.
fn against_wall(offers: &[f64], wall: f64) -> Vec<WindowRecord> {
    offers
        .iter()
        .enumerate()
        .map(|(i, &o)| {
            let ok = o.min(wall) * 10.0;
            let bad = (o - wall).max(0.0) * 200.0;
            let next = offers.get(i + 1).copied().unwrap_or(o);
            let d = if next > o {
                "up"
            } else if next < o {
                "down"
            } else {
                "hold"
            };
            let mut r = rec(2.0 * i as f64, o, ok + bad, bad, d);
            r.window_secs = Some(2.0);
            r.to = next;
            r
        })
        .collect()
}

fn repeat(cycle: &[f64], times: usize) -> Vec<f64> {
    cycle
        .iter()
        .copied()
        .cycle()
        .take(cycle.len() * times)
        .collect()
}

/// Runs the real governor against a wall at `wall` for `windows` windows:
/// concurrency with a fast-failing target, or a rate target that fails what
/// it cannot serve. `noise` scatters each window's counts by up to ±noise.
fn governed(
    control: Control,
    profile: Profile,
    wall: f64,
    ceiling: f64,
    windows: usize,
    noise: f64,
    seed: u64,
) -> Vec<WindowRecord> {
    let params = Params::new(control, Some(ceiling), 1.0, None, 0.05, None).unwrap();
    let mut g = ThrottleGovernor::with_profile(params, profile);
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::new();
    for i in 0..windows {
        let offer = g.state().current;
        let jitter = |rng: &mut SplitMix64| 1.0 + noise * (2.0 * rng.next_f64() - 1.0);
        let (ok, bad) = match control {
            Control::Concurrency => (
                (offer.min(wall) * 10.0 * jitter(&mut rng)).round(),
                ((offer - wall).max(0.0) * 200.0 * jitter(&mut rng)).round(),
            ),
            Control::Rate => (
                offer.min(wall) * 2.0 * jitter(&mut rng),
                (offer - wall).max(0.0) * 2.0 * jitter(&mut rng),
            ),
        };
        let o = g.step(ok + bad, bad);
        let mut r = rec(2.0 * i as f64, offer, ok + bad, bad, o.decision_str());
        r.window_secs = Some(2.0);
        r.to = o.to;
        out.push(r);
    }
    out
}

fn report(h: Vec<WindowRecord>) -> TargetReport {
    TargetReport::new("t", "concurrency", 0.05, None, h, &SteadyRule::default())
}

#[test]
fn integer_sawtooth_10_11_gives_10_with_the_step_up_as_evidence() {
    let mut offers = vec![1.0, 2.0, 4.0, 8.0, 16.0, 7.0];
    offers.extend(repeat(&[10.0, 11.0], 10));
    let h = against_wall(&offers, 10.0);
    let t = report(h);
    assert!(t.steady && t.within_bound, "{}", t.verdict);
    assert_eq!(t.capacity, Some(10.0), "{}", t.verdict);
    let e = t.evidence.as_ref().unwrap();
    let c = e.capacity.as_ref().unwrap();
    let u = e.next_step_up.as_ref().unwrap();
    assert_eq!((c.offer, u.offer), (10.0, 11.0));
    assert_eq!(c.failures, 0.0);
    assert!(c.windows >= 5 && c.windows == u.windows, "{e:#?}");
    assert!(!u.within_bound && u.failure_ratio > 0.6, "{u:?}");
    // The interval brackets the ratio and is narrower with more attempts.
    assert!(c.interval.low == 0.0 && c.interval.high > 0.0 && c.interval.high < 0.05);
    assert!(u.interval.low < u.failure_ratio && u.failure_ratio < u.interval.high);
    // The slow start and the first back-off are not in the settled period.
    let s = t.settled.as_ref().unwrap();
    assert_eq!((s.offer_min, s.offer_max), (10.0, 11.0), "{s:?}");
    assert_eq!((s.peak_min, s.peak_max), (Some(11.0), Some(11.0)));
    assert!(s.backoffs >= 5);
    assert_eq!(t.why_not_steady, None);
    assert!(
        t.verdict.contains("capacity 10 concurrency"),
        "{}",
        t.verdict
    );
    assert!(t.verdict.contains("11 exceeded the bound"), "{}", t.verdict);
    // The bound was shown crossed just above the figure: it binds.
    assert_eq!(t.binding, Some("failures"));
    assert!(!t.verdict.contains("lower bound"), "{}", t.verdict);
    // The old meanings are kept: the mean offer, pooled over the period.
    let mean = t.steady_offer.unwrap();
    assert!(mean > 10.0 && mean < 11.0, "{mean}");
    assert!(t.observed_failure_ratio.unwrap() > 0.05);
}

#[test]
fn deep_back_off_cycles_give_the_highest_clean_offer() {
    // 8 9 10 11 -> back-off -> 3 4 6 8 9 10 11 -> ..., a wall at 10.
    let mut offers = vec![1.0, 2.0, 4.0, 8.0, 16.0, 4.0, 6.0, 8.0, 9.0, 10.0, 11.0];
    offers.extend(repeat(&[3.0, 4.0, 6.0, 8.0, 9.0, 10.0, 11.0], 3));
    let t = report(against_wall(&offers, 10.0));
    assert_eq!(
        t.capacity,
        Some(10.0),
        "{} {:?}",
        t.verdict,
        t.why_not_steady
    );
    let s = t.settled.as_ref().unwrap();
    assert_eq!((s.offer_min, s.offer_max), (3.0, 11.0), "{s:?}");
    assert!(s.windows >= 14, "two whole cycles at least: {s:?}");
    let e = t.evidence.unwrap();
    assert_eq!(e.next_step_up.unwrap().offer, 11.0);
    assert!(e.levels.iter().all(|l| l.within_bound == (l.offer <= 10.0)));
}

#[test]
fn a_cycle_longer_than_half_the_rule_is_found_once_two_cycles_ran() {
    // Probes of +2 from 150 to a wall at 200 (26 windows per cycle).
    let cycle: Vec<f64> = (0..26).map(|i| 150.0 + 2.0 * i as f64).collect();
    let one = against_wall(&repeat(&cycle, 1), 199.0);
    let t = report(one);
    assert!(!t.steady, "one climb is not settled: {}", t.verdict);
    assert_eq!(t.not_steady_reason, Some("still-climbing"));
    let two = against_wall(&repeat(&cycle, 3), 199.0);
    let t = report(two);
    assert!(t.steady, "{}", t.verdict);
    // Levels of 4 (2 % of 200): the capacity level pools 196 and 198.
    let c = t.evidence.unwrap().capacity.unwrap();
    assert_eq!((c.offer_min, c.offer_max), (196.0, 198.0), "{c:?}");
    assert_eq!(t.settled.unwrap().level_width, 4.0);
}

#[test]
fn plateaus_give_today_s_figures() {
    let h: Vec<_> = (0..12)
        .map(|i| rec(i as f64, 40.0, 400.0, 4.0, "hold"))
        .collect();
    let t = TargetReport::new(
        "a",
        "concurrency",
        0.05,
        Some(48.0),
        h,
        &SteadyRule::default(),
    );
    assert!(t.steady && t.within_bound);
    assert_eq!((t.capacity, t.steady_offer), (Some(40.0), Some(40.0)));
    assert_eq!(t.observed_failure_ratio, Some(0.01));
    assert_eq!(t.throughput_per_sec, Some(396.0));
    assert!(t.verdict.contains("capacity 40"), "{}", t.verdict);
    assert!(
        t.verdict
            .contains("no higher offer in the settled period (congestion last seen at 48)"),
        "{}",
        t.verdict
    );
    // Nine windows are not enough.
    let h: Vec<_> = (0..9)
        .map(|i| rec(i as f64, 40.0, 400.0, 4.0, "hold"))
        .collect();
    let t = report(h);
    assert_eq!(t.not_steady_reason, Some("too-few-windows"));
    assert!(t.verdict.contains("never became steady"), "{}", t.verdict);
}

/// The real background stall's shape (docs/BENCHMARKS.md, "The opening's
/// one witness"): a wall at 10, 3 % of attempts failing at every offer, and
/// a governor held in the dead band at 4 and 5, its probes to 6 failing no
/// more than the background.
fn held_in_a_background_band() -> Vec<WindowRecord> {
    let mut h = vec![
        rec(0.0, 1.0, 15.0, 0.0, "up"),
        rec(3.0, 2.0, 30.0, 0.0, "up"),
    ];
    let mut t = 3.0;
    for _ in 0..5 {
        for (offer, decision) in [
            (4.0, "up"),
            (5.0, "hold"),
            (5.0, "hold"),
            (5.0, "up"),
            (6.0, "down"),
        ] {
            t += 3.0;
            // 3 % of 15 attempts per user: about 2 failures in 75.
            let attempts = 15.0 * offer;
            h.push(rec(t, offer, attempts, (0.03 * attempts).round(), decision));
        }
    }
    h
}

/// Nothing above the figure of [`held_in_a_background_band`] crossed the
/// bound, so the report must not present 5 as where the bound binds.
#[test]
fn a_figure_held_below_a_bound_no_offer_crossed_is_a_lower_bound() {
    let mut h = held_in_a_background_band();
    let r = report(h.clone());
    assert!(r.steady, "{}", r.verdict);
    assert_eq!(r.capacity, Some(6.0), "{}", r.verdict);
    assert_eq!(r.binding, Some("neither"), "{}", r.verdict);
    assert!(
        r.verdict.contains(
            "capacity 6 concurrency at steady state (a lower bound: no higher offer in the settled period failed more than 5%)"
        ),
        "{}",
        r.verdict
    );
    // The live figure is the report's, and says so too.
    let live = estimate(&h, &SteadyRule::default(), 0.05, None);
    let CapacityEstimate::Steady(f) = live else {
        panic!("{live:?}")
    };
    assert!(f.offer == 6.0 && f.lower_bound, "{f:?}");
    // The same run with its probes to 6 failing like a wall: the bound binds.
    for w in h.iter_mut().filter(|w| w.offer == 6.0) {
        w.failures = Some(0.2 * w.attempts.unwrap());
    }
    let live = estimate(&h, &SteadyRule::default(), 0.05, None);
    let CapacityEstimate::Steady(f) = live else {
        panic!("{live:?}")
    };
    assert!(f.offer == 5.0 && !f.lower_bound, "{f:?}");
    let r = report(h);
    assert_eq!(r.capacity, Some(5.0), "{}", r.verdict);
    assert_eq!(r.binding, Some("failures"), "{}", r.verdict);
    assert!(!r.verdict.contains("lower bound"), "{}", r.verdict);
}

/// A lower bound held in the dead band says so, and names the way out,
/// only when the verdicts' own clean level shows it: the levels up to the
/// figure failed significantly more. Not under the seed rules (no
/// confidence), not at the ceiling, and not when they failed less.
#[test]
fn a_lower_bound_held_in_the_dead_band_names_the_way_out() {
    let with_clean_level = |h: &mut [WindowRecord], clean_below: f64| {
        for w in h.iter_mut() {
            let (n, f) = (w.attempts.unwrap(), w.failures.unwrap());
            w.confidence = Some(Confidence {
                verdict: VerdictClass::DeadBand,
                attempts: n,
                failures: f,
                lower: 0.0,
                upper: 1.0,
                clean_below,
                high: 0.05,
                background: None,
            });
        }
    };
    // The live figure, fed the same windows one by one, carries the same
    // dead band as a value.
    let live_band = |h: &[WindowRecord]| {
        let mut live = super::live::LiveCapacity::new(SteadyRule::default(), 0.05, None);
        let mut last = CapacityEstimate::None;
        for w in h {
            last = live.push(w);
        }
        let CapacityEstimate::Steady(f) = last else {
            panic!("{last:?}")
        };
        assert!(f.lower_bound, "{f:?}");
        f.dead_band
    };
    let seed = report(held_in_a_background_band());
    assert!(seed.verdict.contains("(a lower bound"), "{}", seed.verdict);
    assert!(!seed.verdict.contains("dead band"), "{}", seed.verdict);
    assert_eq!(live_band(&held_in_a_background_band()), None);

    let mut h = held_in_a_background_band();
    with_clean_level(&mut h, 0.01);
    let r = report(h.clone());
    assert_eq!(r.binding, Some("neither"), "{}", r.verdict);
    // Pooled over the period's levels up to the figure (4, 5 and 6 here),
    // not the figure's alone.
    let levels = &r.evidence.as_ref().unwrap().levels;
    let (n, f) = levels
        .iter()
        .filter(|l| l.offer <= 6.0)
        .fold((0.0, 0.0), |(n, f), l| (n + l.attempts, f + l.failures));
    assert!(n > 1000.0, "{levels:?}");
    assert!(
        r.verdict.ends_with(&format!(
            "; it held in the dead band: its offers up to 6 failed {} of their attempts ({f} of {n}), significantly above the clean level 1% (the governor climbs only on windows below it). If the target fails about {} whatever the load, set `low` above that share to measure past it",
            pct(f / n),
            pct(f / n)
        )),
        "{}",
        r.verdict
    );
    assert_eq!(
        live_band(&h),
        Some(crate::telemetry::DeadBand {
            failure_ratio: f / n,
            attempts: n,
            failures: f,
            clean_below: 0.01,
        })
    );
    // Held at the ceiling: the ceiling held it, not the band.
    let mut at_ceiling = h.clone();
    for w in at_ceiling.iter_mut().filter(|w| w.offer == 6.0) {
        w.label = "at-ceiling";
    }
    assert_eq!(live_band(&at_ceiling), None);
    let r = report(at_ceiling);
    assert!(r.verdict.contains("(a lower bound"), "{}", r.verdict);
    assert!(!r.verdict.contains("dead band"), "{}", r.verdict);
    // A clean level above what those levels failed: no such hint.
    with_clean_level(&mut h, 0.04);
    assert_eq!(live_band(&h), None);
    let r = report(h);
    assert!(r.verdict.contains("(a lower bound"), "{}", r.verdict);
    assert!(!r.verdict.contains("dead band"), "{}", r.verdict);
}

/// A plateau settled at 10 brackets the wall with a failed probe to 12 made
/// before its settled period (two levels up: the halves' tops differ, so
/// the period leaves it out); an opening overshoot to 16 brackets nothing
/// near a plateau at 5.
#[test]
fn a_failed_level_just_above_the_figure_before_the_period_still_binds() {
    let run = |plateau: f64, above: f64| {
        let mut h = vec![
            rec(0.0, 2.0, 20.0, 0.0, "up"),
            rec(1.0, 4.0, 40.0, 0.0, "up"),
            rec(2.0, plateau, 10.0 * plateau, 0.0, "up"),
            rec(3.0, above, 10.0 * above, 3.0 * above, "down"),
        ];
        h.extend((0..12).map(|i| rec(4.0 + f64::from(i), plateau, 10.0 * plateau, 0.0, "hold")));
        report(h)
    };
    let r = run(10.0, 12.0);
    assert_eq!(r.capacity, Some(10.0), "{}", r.verdict);
    assert!(r.evidence.as_ref().unwrap().next_step_up.is_none());
    assert_eq!(r.binding, Some("failures"), "{}", r.verdict);
    let r = run(5.0, 16.0);
    assert_eq!(r.capacity, Some(5.0), "{}", r.verdict);
    assert_eq!(r.binding, Some("neither"), "{}", r.verdict);
    assert!(r.verdict.contains("(a lower bound"), "{}", r.verdict);
}

/// A breach just above the figure that a higher level, held within the
/// bound among the same evidence windows, contradicts binds nothing: the
/// capacity moved, or the failures were a burst's. The report says which
/// level held, and the live figure is a lower bound too. Issue 30: the
/// bench's gentle governor named 74 workers the capacity of an 89-worker
/// target after a burst landed on its probe at 75 (`bursts` seed 27).
#[test]
fn a_breach_above_the_figure_that_a_higher_held_level_contradicts_binds_nothing() {
    let run = |held: bool| {
        let mut h = vec![rec(0.0, 20.0, 200.0, 0.0, "up")];
        if held {
            // The run held 89 clean for a while before the burst.
            h.extend((0..6).map(|i| rec(1.0 + f64::from(i), 89.0, 890.0, 0.0, "hold")));
        }
        let t0 = h.len() as f64;
        h.push(rec(t0, 74.0, 740.0, 0.0, "up"));
        // The probe's window at 75 carries a burst: 30 % of its attempts.
        h.push(rec(t0 + 1.0, 75.0, 750.0, 225.0, "down"));
        h.extend((0..12).map(|i| rec(t0 + 2.0 + f64::from(i), 74.0, 740.0, 0.0, "hold")));
        h
    };
    let r = report(run(false));
    assert_eq!(
        (r.capacity, r.binding),
        (Some(74.0), Some("failures")),
        "{}",
        r.verdict
    );
    let h = run(true);
    let r = report(h.clone());
    assert_eq!(
        (r.capacity, r.binding),
        (Some(74.0), Some("neither")),
        "{}",
        r.verdict
    );
    assert!(
        r.verdict.contains(
            "(a lower bound: 89 held within the bound above the offers that failed, \
             so the capacity has moved or those failures were not the load's)"
        ),
        "{}",
        r.verdict
    );
    let mut live = super::live::LiveCapacity::new(SteadyRule::default(), 0.05, None);
    let last = h.iter().map(|w| live.push(w)).last().unwrap();
    match last {
        CapacityEstimate::Steady(f) => assert!(f.offer == 74.0 && f.lower_bound, "{f:?}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn saturation_is_steady_but_not_a_capacity() {
    let h: Vec<_> = (0..12)
        .map(|i| rec(i as f64, 1.0, 10.0, 9.0, "hold"))
        .collect();
    let t = TargetReport::new(
        "b",
        "concurrency",
        0.05,
        Some(2.0),
        h,
        &SteadyRule::default(),
    );
    assert!(t.steady && !t.within_bound);
    assert_eq!(t.capacity, None);
    assert!(t.verdict.contains("not a capacity"), "{}", t.verdict);
    let e = t.evidence.unwrap();
    assert!(e.capacity.is_none() && e.next_step_up.is_none() && e.levels.len() == 1);
}

#[test]
fn climbing_runs_are_never_steady() {
    // Slow start.
    let offers: Vec<f64> = (0..12).map(|i| 2f64.powi(i)).collect();
    let t = report(against_wall(&offers, 1e9));
    assert_eq!(t.not_steady_reason, Some("still-climbing"), "{}", t.verdict);
    // A slow additive climb stays inside ±10 % for ten windows; still a climb.
    let offers: Vec<f64> = (0..30).map(|i| 100.0 + 2.0 * i as f64).collect();
    let t = report(against_wall(&offers, 1e9));
    assert_eq!(t.not_steady_reason, Some("still-climbing"), "{}", t.verdict);
    assert!(t.why_not_steady.unwrap().contains("first half"));
    assert!(t.capacity.is_none() && t.steady_offer.is_none());
    // Climbing out of a deep back-off, the top already reached before.
    let mut offers = repeat(&[10.0, 11.0], 8);
    offers.extend([2.0, 3.0, 4.0, 6.0, 8.0, 9.0]);
    let t = report(against_wall(&offers, 10.0));
    assert!(!t.steady, "{}", t.verdict);
}

#[test]
fn a_single_peak_halfway_up_a_climb_is_not_settled() {
    // The simulator's cliff at 120, as the demo ran it.
    let mut offers = vec![1.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 89.0];
    offers.extend((0..14).map(|i| 96.0 + 2.0 * i as f64));
    offers.extend([109.0, 111.0, 113.0, 115.0]);
    let dead_band = |h: &mut Vec<WindowRecord>| {
        for r in h.iter_mut() {
            let f = match r.offer {
                o if o > 121.0 => 0.1,
                o if o > 120.0 => 0.02,
                _ => 0.0,
            };
            r.failures = Some(f * 1000.0);
            r.attempts = Some(1000.0);
        }
    };
    let mut h = against_wall(&offers, 1e9);
    dead_band(&mut h);
    let t = report(h);
    assert_eq!(
        t.not_steady_reason,
        Some("offer-never-revisited"),
        "{}",
        t.verdict
    );
    assert!(
        t.verdict.contains("the top, 122, was reached once"),
        "{}",
        t.verdict
    );
    // Back at the top, held in the dead band: settled. Levels are 2 wide
    // here (2 % of 121), so 120 and 121 pool; the figure rounds down.
    offers.extend([117.0, 119.0, 121.0, 121.0, 121.0, 121.0, 121.0]);
    let mut h = against_wall(&offers, 1e9);
    dead_band(&mut h);
    let t = report(h);
    assert_eq!(t.capacity, Some(120.0), "{}", t.verdict);
    let e = t.evidence.unwrap();
    let c = e.capacity.unwrap();
    assert_eq!((c.offer_min, c.offer_max, c.windows), (120.0, 121.0, 6));
    assert_eq!(e.next_step_up.unwrap().offer, 122.0);
}

#[test]
fn a_collapsing_target_is_still_falling() {
    let mut offers = vec![50.0; 12];
    offers.extend([40.0, 30.0, 22.0, 16.0, 12.0, 9.0]);
    let t = report(against_wall(&offers, 1.0));
    assert_eq!(t.not_steady_reason, Some("still-falling"), "{}", t.verdict);
}

#[test]
fn unconfirmed_writes_never_give_a_figure() {
    let mut offers = vec![1.0, 2.0, 4.0, 8.0, 16.0, 7.0];
    offers.extend(repeat(&[10.0, 11.0], 10));
    // An API that never applies a write: every window after the opening is
    // unconfirmed, and the offer in effect (the tool's) stays at 1.
    let mut never: Vec<_> = against_wall(&vec![1.0; 30], 10.0);
    for r in &mut never[1..] {
        r.unconfirmed = true;
    }
    let t = report(never);
    assert!(!t.steady && t.capacity.is_none());
    assert_eq!(
        t.not_steady_reason,
        Some("writes-not-confirmed"),
        "{}",
        t.verdict
    );
    assert!(t.verdict.contains("writes not confirmed"), "{}", t.verdict);
    assert_eq!(t.unconfirmed_windows, 29);
    // A settled run whose writes start hanging: three windows end it.
    let mut hang = against_wall(&offers, 10.0);
    assert!(steady(&hang, &SteadyRule::default(), 0.05).is_some());
    let n = hang.len();
    for r in &mut hang[n - 2..] {
        r.unconfirmed = true;
    }
    assert!(
        steady(&hang, &SteadyRule::default(), 0.05).is_some(),
        "two are a late write"
    );
    hang[n - 3].unconfirmed = true;
    let t = report(hang);
    assert_eq!(t.not_steady_reason, Some("writes-not-confirmed"));
    // Every write confirmed two windows late: the confirmed windows are
    // evidence, and the target still gets a figure.
    let mut long = offers.clone();
    long.extend(repeat(&[10.0, 11.0], 20));
    let mut late = against_wall(&long, 10.0);
    for (i, r) in late.iter_mut().enumerate().skip(6) {
        r.unconfirmed = i % 3 != 2;
    }
    let t = report(late);
    assert_eq!(t.capacity, Some(10.0), "{}", t.verdict);
}

#[test]
fn late_confirmations_are_not_evidence_but_do_not_end_steadiness() {
    let mut offers = vec![1.0, 2.0, 4.0, 8.0, 16.0, 7.0];
    offers.extend(repeat(&[10.0, 11.0], 12));
    let mut h = against_wall(&offers, 10.0);
    // Windows at 11 ran while the write to 11 was pending; their failures
    // are not pooled, so 11 has no evidence at all.
    for r in h.iter_mut().filter(|r| r.offer == 11.0) {
        r.unconfirmed = true;
    }
    let t = report(h);
    assert!(t.steady, "{}", t.verdict);
    assert_eq!(t.capacity, Some(10.0));
    assert!(t.evidence.unwrap().next_step_up.is_none());
    assert_eq!(t.unconfirmed_windows, 12);
}

#[test]
fn discarded_windows_are_never_pooled() {
    let mut offers = vec![1.0, 2.0, 4.0, 8.0, 16.0, 7.0];
    offers.extend(repeat(&[10.0, 11.0], 10));
    let mut h = against_wall(&offers, 10.0);
    // The window after each back-off straddled the change: it still holds
    // the failures made at 11, charged to 10.
    let mut straddling = 0;
    for r in h.iter_mut().skip(6).filter(|r| r.offer == 10.0) {
        r.failures = Some(150.0);
        r.frac = Some(150.0 / 250.0);
        r.attempts = Some(250.0);
        r.discarded = true;
        straddling += 1;
    }
    let clean = h.clone();
    let t = report(h);
    // Without them 10 has no evidence, so nothing below 11 is a figure; the
    // straddling failures never make 10 look over the bound.
    assert_eq!(t.discarded_windows, straddling);
    assert!(t
        .evidence
        .as_ref()
        .is_none_or(|e| e.levels.iter().all(|l| l.offer != 10.0)));
    // Same history, but with half of the windows at 10 clean and counted.
    let mut h = clean;
    let mut flip = false;
    for r in h.iter_mut().filter(|r| r.discarded) {
        if flip {
            r.discarded = false;
            r.failures = Some(0.0);
            r.frac = Some(0.0);
            r.attempts = Some(100.0);
        }
        flip = !flip;
    }
    let t = report(h);
    assert_eq!(t.capacity, Some(10.0), "{}", t.verdict);
    assert_eq!(t.evidence.unwrap().capacity.unwrap().failures, 0.0);
}

#[test]
fn every_recent_window_discarded_or_lost_says_so() {
    let mut offers = vec![1.0, 2.0, 4.0, 8.0, 16.0, 7.0];
    offers.extend(repeat(&[10.0, 11.0], 10));
    let base = against_wall(&offers, 10.0);
    let n = base.len();
    let mut d = base.clone();
    d[n - 9..].iter_mut().for_each(|r| r.discarded = true);
    assert!(
        report(d.clone()).steady,
        "nine discarded windows are a long lag"
    );
    d[n - 10].discarded = true;
    assert_eq!(report(d).not_steady_reason, Some("windows-discarded"));
    let mut lost = base.clone();
    lost[n - 3..].iter_mut().for_each(|r| {
        r.attempts = None;
        r.failures = None;
        r.frac = None;
    });
    assert_eq!(report(lost).not_steady_reason, Some("signal-lost"));
    let mut idle = base;
    idle[n - 3..].iter_mut().for_each(|r| {
        r.attempts = Some(0.0);
        r.failures = Some(0.0);
        r.frac = None;
    });
    assert_eq!(report(idle).not_steady_reason, Some("no-traffic"));
}

#[test]
fn an_offer_seen_once_is_not_a_capacity() {
    // Settled halves, but every clean offer was held for a single window.
    let offers = [10.0, 20.0, 13.0, 20.0, 16.0, 11.0, 20.0, 14.0, 20.0, 17.0];
    let mut h = against_wall(&offers, 1e9);
    for r in h.iter_mut().filter(|r| r.offer == 20.0) {
        r.failures = r.attempts;
    }
    let t = report(h);
    assert_eq!(
        t.not_steady_reason,
        Some("offer-never-revisited"),
        "{}",
        t.verdict
    );
}

#[test]
fn the_real_governor_settles_into_a_figure_against_a_fast_failing_wall() {
    for profile in [Profile::Seed, Profile::Robust] {
        for wall in [10.0, 37.0, 120.0] {
            let h = governed(Control::Concurrency, profile, wall, 4.0 * wall, 150, 0.0, 1);
            let t = report(h);
            let c = t
                .capacity
                .unwrap_or_else(|| panic!("{profile:?} {wall}: {}", t.verdict));
            assert!(
                (c - wall).abs() <= 0.2 * wall && c <= wall,
                "{profile:?} wall {wall}: capacity {c}; {}",
                t.verdict
            );
        }
    }
}

#[test]
fn rate_knobs_pool_nearby_offers_into_levels() {
    for profile in [Profile::Seed, Profile::Robust] {
        for seed in 1..4 {
            let h = governed(Control::Rate, profile, 200.0, 1000.0, 200, 0.05, seed);
            assert!(h.iter().any(|r| r.offer.fract() != 0.0));
            let t = TargetReport::new("r", "rate", 0.05, None, h, &SteadyRule::default());
            let c = t
                .capacity
                .unwrap_or_else(|| panic!("{profile:?}: {}", t.verdict));
            assert!(
                (c - 200.0).abs() <= 0.2 * 200.0,
                "{profile:?}: {c} {}",
                t.verdict
            );
            let e = t.evidence.unwrap();
            assert!(e
                .levels
                .iter()
                .all(|l| l.offer_max - l.offer_min < 4.0 + 1e-9));
        }
    }
}

#[test]
fn a_noisy_concurrency_run_gives_a_figure_near_the_wall() {
    for seed in 1..6 {
        let h = governed(
            Control::Concurrency,
            Profile::Seed,
            50.0,
            200.0,
            200,
            0.2,
            seed,
        );
        let t = report(h);
        let c = t
            .capacity
            .unwrap_or_else(|| panic!("seed {seed}: {}", t.verdict));
        assert!((c - 50.0).abs() <= 10.0, "seed {seed}: {c}; {}", t.verdict);
    }
}

#[test]
fn wilson_intervals_bracket_and_shrink() {
    let a = wilson(5.0, 100.0);
    let b = wilson(50.0, 1000.0);
    assert!(a.low < 0.05 && 0.05 < a.high);
    assert!(b.low < 0.05 && 0.05 < b.high);
    assert!(b.high - b.low < a.high - a.low);
    // Textbook value: 0 of 10 gives [0, 0.2775].
    let z = wilson(0.0, 10.0);
    assert_eq!(z.low, 0.0);
    assert!((z.high - 0.2775).abs() < 1e-3, "{z:?}");
    assert_eq!(wilson(0.0, 0.0).high, 1.0);
}

proptest! {
    /// Whatever the history, a capacity is within the bound, held for at
    /// least two windows, and every higher level held that long exceeds it.
    #[test]
    fn a_capacity_is_the_highest_revisited_level_within_the_bound(
        windows in proptest::collection::vec((1u32..30, 0u32..100, 0u32..4), 10..80),
    ) {
        let h: Vec<_> = windows
            .iter()
            .enumerate()
            .map(|(i, &(o, fails, kind))| {
                let mut r = rec(i as f64, o as f64, 100.0, fails.min(100) as f64 * (kind % 2) as f64, "hold");
                r.discarded = kind == 3 && i % 2 == 0;
                r
            })
            .collect();
        let t = report(h);
        prop_assert_eq!(t.steady, t.not_steady_reason.is_none());
        prop_assert_eq!(t.within_bound, t.capacity.is_some());
        if let Some(e) = &t.evidence {
            if let Some(c) = &e.capacity {
                prop_assert!(c.failure_ratio <= 0.05 && c.windows >= MIN_LEVEL_WINDOWS);
                for l in e.levels.iter().filter(|l| l.offer > c.offer && l.windows >= MIN_LEVEL_WINDOWS) {
                    prop_assert!(!l.within_bound);
                }
                let pooled: usize = e.levels.iter().map(|l| l.windows).sum();
                prop_assert_eq!(pooled, t.settled.as_ref().unwrap().windows);
            }
        }
    }
}

#[test]
fn html_shows_the_evidence() {
    let mut offers = vec![1.0, 2.0, 4.0, 8.0, 16.0, 7.0];
    offers.extend(repeat(&[10.0, 11.0], 10));
    let mut h = against_wall(&offers, 10.0);
    h[7].discarded = true;
    h[8].unconfirmed = true;
    let r = Report::new(
        vec![
            TargetReport::new(
                "x<y",
                "concurrency",
                0.05,
                Some(11.0),
                h,
                &SteadyRule::default(),
            ),
            TargetReport::new("short", "rate", 0.05, None, vec![], &SteadyRule::default()),
        ],
        &SteadyRule::default(),
    );
    let html = r.to_html();
    assert!(html.contains("<svg") && html.contains("class=\"offer\""));
    assert!(html.contains("x&lt;y") && !html.contains("x<y"));
    assert!(html.contains("id=\"evidence-x&lt;y\""));
    let row = |class: &str| {
        html.split(&format!("<tr class=\"{class}\">"))
            .nth(1)
            .and_then(|s| s.split("</tr>").next())
            .unwrap_or_else(|| panic!("no {class} row"))
            .to_string()
    };
    assert!(
        row("capacity").starts_with("<td>10</td>"),
        "{}",
        row("capacity")
    );
    assert!(
        row("next-up").starts_with("<td>11</td>"),
        "{}",
        row("next-up")
    );
    assert!(html.contains("class=\"settled\"") && html.contains("class=\"capacity\""));
    assert!(
        html.contains("<circle class=\"discarded\"")
            && html.contains("<circle class=\"unconfirmed\"")
    );
    assert!(html.contains("class=\"why-not-steady bad\">Not steady (too-few-windows)"));
    assert!(
        html.matches("http://").all(|_| true)
            && !html.contains("<script")
            && !html.contains("<link")
    );
    assert_eq!(
        html.matches("http://").count(),
        html.matches("xmlns=\"http://www.w3.org/2000/svg\"").count()
    );
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let t = &json["targets"][0];
    assert_eq!(t["history"].as_array().unwrap().len(), 26);
    assert_eq!(t["capacity"], 10.0);
    assert_eq!(t["evidence"]["capacity"]["offer"], 10.0);
    assert_eq!(t["evidence"]["next_step_up"]["offer"], 11.0);
    assert_eq!(t["history"][7]["discarded"], true);
    for key in [
        "steady",
        "within_bound",
        "steady_offer",
        "failure_bound",
        "observed_failure_ratio",
        "throughput_per_sec",
        "last_bad",
        "windows",
        "verdict",
    ] {
        assert!(t.get(key).is_some(), "{key} missing");
    }
    assert!(json["targets"][1]["why_not_steady"]
        .as_str()
        .unwrap()
        .contains("too few"));
    let text = r.to_text();
    assert!(
        text.contains("at the capacity: 10 over") && text.contains("next step up: 11 over"),
        "{text}"
    );
}

#[test]
fn the_report_is_built_from_the_telemetry_history() {
    use crate::telemetry::{TargetStatus, Telemetry};
    let tel = Telemetry::with_history(1000);
    let params = Params::new(Control::Concurrency, Some(40.0), 1.0, None, 0.05, None).unwrap();
    for name in ["settled", "unconfirmed"] {
        tel.register(TargetStatus::initial(name, &params, false));
    }
    let mut offers = vec![1.0, 2.0, 4.0, 8.0, 16.0, 7.0];
    offers.extend(repeat(&[10.0, 11.0], 10));
    for r in against_wall(&offers, 10.0) {
        tel.record("settled", r.clone());
        let mut u = r;
        u.unconfirmed = u.time_secs > 0.0;
        tel.record("unconfirmed", u);
    }
    let rule = SteadyRule::default();
    let r = Report::from_telemetry(&tel, &rule);
    let by = |n: &str| r.targets.iter().find(|t| t.name == n).unwrap();
    assert_eq!(by("settled").capacity, Some(10.0));
    assert_eq!(by("settled").failure_bound, 0.05);
    assert_eq!(by("unconfirmed").capacity, None);
    assert_eq!(
        by("unconfirmed").not_steady_reason,
        Some("writes-not-confirmed")
    );
    assert!(steady(&tel.history("settled"), &rule, params.high).is_some());
    assert!(steady(&tel.history("unconfirmed"), &rule, params.high).is_none());
}

mod latency_bound {
    use super::*;
    use crate::telemetry::LatencyBoundStatus;

    const BOUND: LatencyBoundStatus = LatencyBoundStatus {
        quantile: 0.99,
        bound_secs: 0.31,
        low_secs: 0.248,
    };

    /// A queueing target: latency 20 ms per user above 5, never a failure.
    fn lat(offer: f64) -> f64 {
        0.1 * (offer / 5.0).max(1.0)
    }

    fn window(t: f64, offer: f64, decision: &'static str, label: &'static str) -> WindowRecord {
        WindowRecord {
            latency_secs: Some(lat(offer)),
            latency_drove: decision == "down",
            label,
            ..rec(t, offer, 100.0, 0.0, decision)
        }
    }

    /// A sawtooth 14 -> 15 -> 16 -> back to 14, repeated: 16 is over the
    /// latency bound (320 ms), 14 and 15 are within it.
    fn sawtooth() -> Vec<WindowRecord> {
        let mut h = Vec::new();
        let mut t = 0.0;
        for _ in 0..6 {
            for (o, d, l) in [
                (14.0, "hold", "latency-band"),
                (14.0, "up", "probing"),
                (15.0, "up", "probing"),
                (16.0, "down", "backing-off"),
            ] {
                t += 3.0;
                h.push(window(t, o, d, l));
            }
        }
        h
    }

    #[test]
    fn the_capacity_is_the_highest_level_within_both_bounds_and_latency_binds() {
        let t = TargetReport::new_with(
            "slo",
            "concurrency",
            0.05,
            Some(16.0),
            sawtooth(),
            &SteadyRule::default(),
            Some(BOUND),
        );
        assert_eq!(t.capacity, Some(15.0), "{}", t.verdict);
        assert_eq!(t.binding, Some("latency"));
        assert!(
            t.verdict
                .contains("at failure ratio <= 5% and p99 <= 310ms (latency binds)"),
            "{}",
            t.verdict
        );
        let e = t.evidence.as_ref().unwrap();
        let up = e.next_step_up.as_ref().unwrap();
        assert_eq!(up.latency_within_bound, Some(false));
        assert!(up.failure_ratio == 0.0 && !up.within_bound);
    }

    #[test]
    fn without_the_bound_the_same_history_has_no_latency_capacity() {
        // The attempt plane alone sees nothing: 16 is "within the bound".
        let t = TargetReport::new(
            "slo",
            "concurrency",
            0.05,
            Some(16.0),
            sawtooth(),
            &SteadyRule::default(),
        );
        assert_eq!(t.capacity, Some(16.0));
        // No offer failed at all: 16 is all the failure plane can say.
        assert_eq!(t.binding, Some("neither"));
        assert!(
            t.verdict.contains(
                "capacity 16 concurrency at steady state (a lower bound: no higher offer in the settled period failed more than 5%)"
            ),
            "{}",
            t.verdict
        );
        assert!(t.latency_bound.is_none());
    }

    #[test]
    fn a_plateau_held_in_the_latency_band_is_bound_by_latency() {
        let mut h: Vec<WindowRecord> = (0..20)
            .map(|i| window(f64::from(i) * 3.0, 14.0, "hold", "latency-band"))
            .collect();
        h.insert(0, window(-3.0, 16.0, "down", "backing-off"));
        let t = TargetReport::new_with(
            "slo",
            "concurrency",
            0.05,
            Some(16.0),
            h,
            &SteadyRule::default(),
            Some(BOUND),
        );
        assert_eq!(t.capacity, Some(14.0), "{}", t.verdict);
        assert_eq!(t.binding, Some("latency"));
    }

    /// Issue 26: a plateau held in the band below a bound that no window
    /// ever reached (slow start landed in the band, or the ceiling) is a
    /// lower bound of the latency capacity: the report says so and never
    /// says that latency binds.
    #[test]
    fn a_band_plateau_that_never_reached_the_bound_is_a_lower_bound() {
        // 14 users: 280 ms, in the band (248-310 ms); nothing above it.
        let h: Vec<WindowRecord> = (0..20)
            .map(|i| window(f64::from(i) * 3.0, 14.0, "hold", "latency-band"))
            .collect();
        let t = TargetReport::new_with(
            "slo",
            "concurrency",
            0.05,
            None,
            h,
            &SteadyRule::default(),
            Some(BOUND),
        );
        assert_eq!(t.capacity, Some(14.0), "{}", t.verdict);
        assert_eq!(t.binding, Some("neither"));
        assert!(!t.verdict.contains("binds"), "{}", t.verdict);
        assert!(
            t.verdict
                .contains("(a lower bound: no window's p99 reached 310ms)"),
            "{}",
            t.verdict
        );
    }

    #[test]
    fn the_html_charts_latency_against_its_bound() {
        let t = TargetReport::new_with(
            "slo",
            "concurrency",
            0.05,
            Some(16.0),
            sawtooth(),
            &SteadyRule::default(),
            Some(BOUND),
        );
        let html = Report::new(vec![t], &SteadyRule::default()).to_html();
        assert!(html.contains("id=\"latency-slo\""));
        assert!(html.contains("class=\"latency-bound\""));
        assert!(html.contains("class=\"latency-backoff\""));
        assert!(html.contains("p99 (median of windows)"));
        let no_bound = TargetReport::new(
            "plain",
            "concurrency",
            0.05,
            None,
            sawtooth(),
            &SteadyRule::default(),
        );
        let html = Report::new(vec![no_bound], &SteadyRule::default()).to_html();
        assert!(!html.contains("id=\"latency-plain\""));
    }

    #[test]
    fn window_records_stay_backwards_compatible() {
        let plain = serde_json::to_value(rec(1.0, 2.0, 3.0, 0.0, "hold")).unwrap();
        assert!(plain.get("latency_secs").is_none());
        assert!(plain.get("latency_drove").is_none());
        let with = serde_json::to_value(WindowRecord {
            latency_secs: Some(0.2),
            latency_drove: true,
            ..rec(1.0, 2.0, 3.0, 0.0, "down")
        })
        .unwrap();
        assert_eq!(with["latency_secs"], 0.2);
        assert_eq!(with["latency_drove"], true);
    }
}

mod estimate {
    //! The live capacity estimate: none, provisional, steady, and the
    //! report's figure for the same history.
    use super::*;
    use crate::report::live::{LiveCapacity, LIVE_WINDOWS};

    fn est(h: &[WindowRecord]) -> CapacityEstimate {
        super::super::estimate(h, &SteadyRule::default(), 0.05, None)
    }

    #[test]
    fn a_climb_that_never_breached_gives_none() {
        let h = against_wall(&[1.0, 2.0, 4.0, 8.0, 9.0, 9.0, 10.0, 10.0], 10.0);
        assert_eq!(est(&h), CapacityEstimate::None);
        assert_eq!(est(&[]), CapacityEstimate::None);
    }

    #[test]
    fn a_breach_with_no_level_held_twice_below_it_gives_none() {
        // Slow start straight into the wall: every clean level seen once.
        let h = against_wall(&[1.0, 2.0, 4.0, 8.0, 16.0, 5.0], 10.0);
        assert_eq!(est(&h), CapacityEstimate::None);
    }

    #[test]
    fn a_level_held_twice_below_a_breach_is_provisional() {
        // 8, 9 and 10 clean, each twice; 11 and 16 breach; not settled yet.
        let h = against_wall(
            &[
                1.0, 2.0, 4.0, 8.0, 16.0, 8.0, 9.0, 10.0, 11.0, 5.0, 8.0, 9.0, 10.0,
            ],
            10.0,
        );
        let e = est(&h);
        let CapacityEstimate::Provisional(f) = e else {
            panic!("{e:?}");
        };
        assert_eq!(f.offer, 10.0);
        assert_eq!(f.windows, 2);
        assert_eq!(f.failure_ratio, 0.0);
        assert!(f.interval[0] == 0.0 && f.interval[1] > 0.0 && f.interval[1] < 0.05);
        assert_eq!(f.next_step_up, Some(11.0));
        assert!(!report(h).steady);
    }

    #[test]
    fn a_settled_sawtooth_is_steady_with_the_report_s_figure() {
        let mut offers = vec![1.0, 2.0, 4.0, 8.0, 16.0, 7.0];
        offers.extend(repeat(&[10.0, 11.0], 10));
        let h = against_wall(&offers, 10.0);
        let e = est(&h);
        let t = report(h);
        let CapacityEstimate::Steady(f) = e else {
            panic!("{e:?}");
        };
        let c = t.evidence.as_ref().unwrap().capacity.as_ref().unwrap();
        assert_eq!(Some(f.offer), t.capacity);
        assert_eq!(f.interval, [c.interval.low, c.interval.high]);
        assert_eq!(
            (f.windows, f.attempts, f.failures),
            (c.windows, c.attempts, c.failures)
        );
    }

    #[test]
    fn saturation_is_no_capacity() {
        let h: Vec<WindowRecord> = (0..20)
            .map(|i| rec(i as f64, 4.0, 100.0, 50.0, "hold"))
            .collect();
        assert!(report(h.clone()).steady);
        assert_eq!(est(&h), CapacityEstimate::None);
    }

    /// Over histories the real governor makes against walls, whenever the
    /// report has a figure the estimate is steady with that figure, and the
    /// live ring gives the same while the history fits in it.
    #[test]
    fn the_same_figure_as_the_report_for_the_same_history() {
        let mut steady = 0;
        for seed in 0..12 {
            for (control, wall) in [(Control::Concurrency, 10.0), (Control::Rate, 37.5)] {
                for profile in [Profile::Seed, Profile::Robust] {
                    let h = governed(control, profile, wall, 200.0, 60, 0.1, seed);
                    let mut live = LiveCapacity::new(SteadyRule::default(), 0.05, None);
                    let mut last = CapacityEstimate::None;
                    for r in &h {
                        last = live.push(r);
                    }
                    assert!(h.len() <= LIVE_WINDOWS);
                    let t = TargetReport::new(
                        "t",
                        control.as_str(),
                        0.05,
                        None,
                        h.clone(),
                        &SteadyRule::default(),
                    );
                    let e = est(&h);
                    assert_eq!(last, e, "live ring vs history, seed {seed}");
                    match t.capacity {
                        Some(c) => {
                            steady += 1;
                            assert!(
                                matches!(e, CapacityEstimate::Steady(f) if f.offer == c),
                                "{e:?} vs {}",
                                t.verdict
                            );
                        }
                        None => assert!(!matches!(e, CapacityEstimate::Steady(_)), "{e:?}"),
                    }
                }
            }
        }
        assert!(steady > 10, "only {steady} steady histories");
    }
}
