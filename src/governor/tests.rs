//! Tests of the governor against `docs/GOVERNOR.md`.
//!
//! Why they exist: the rules are the product's contract. Every worked example
//! and every boundary of the specification is pinned here as a table test,
//! both through the pure [`decide`] and through [`ThrottleGovernor`] (for
//! `rate`, and for `concurrency` where the numbers are integral), and the
//! invariants that must hold for *any* sequence of windows are checked with
//! proptest against a model that tracks the evidence independently.
//!
//! Fractions are built as `failures / attempts` with `attempts = 100` (or
//! another power-friendly count), so that the fraction the governor computes
//! is bit-for-bit the literal used in the table.

use proptest::prelude::*;

use super::*;

/// The worked examples' thresholds.
const HIGH: f64 = 0.05;
const LOW: f64 = 0.01;

/// `decide` with the worked examples' defaults (floor 1, ceiling 100).
fn d(frac: f64, current: f64, last_bad: Option<f64>) -> Decision {
    decide(frac, current, HIGH, LOW, 1.0, 100.0, last_bad)
}

/// Validated parameters; panics with the errors otherwise.
fn params(control: Control, ceiling: Option<f64>, floor: f64) -> Params {
    Params::new(control, ceiling, floor, None, HIGH, Some(LOW)).expect("valid params")
}

/// A governor at `current` with congestion memory `last_bad`.
fn governor_at(
    control: Control,
    ceiling: f64,
    floor: f64,
    current: f64,
    last_bad: Option<f64>,
) -> ThrottleGovernor {
    let mut g = ThrottleGovernor::new(params(control, Some(ceiling), floor));
    g.set_current(current);
    g.restore_memory(last_bad, 0);
    g
}

/// A fraction as (failures, attempts) whose quotient is exactly `frac` for
/// the values used in these tables.
fn window_of(frac: f64) -> (f64, f64) {
    let attempts = 10_000.0;
    ((frac * attempts).round(), attempts)
}

const CONTROLS: [Control; 2] = [Control::Rate, Control::Concurrency];

// ---------------------------------------------------------------------------
// Worked examples
// ---------------------------------------------------------------------------

/// One worked example of `docs/GOVERNOR.md`.
struct Example {
    what: &'static str,
    floor: f64,
    ceiling: f64,
    last_bad: Option<f64>,
    current: f64,
    frac: f64,
    expect: Decision,
    mode: Option<Mode>,
    reason: Option<HoldReason>,
}

fn worked_examples() -> Vec<Example> {
    use Decision::{Down, Hold, Up};
    let ex = |what, floor, ceiling, last_bad, current, frac, expect, mode, reason| Example {
        what,
        floor,
        ceiling,
        last_bad,
        current,
        frac,
        expect,
        mode,
        reason,
    };
    let down = Some(Mode::BackingOff);
    vec![
        ex(
            "frac 1.0 at 100",
            1.0,
            100.0,
            None,
            100.0,
            1.0,
            Down(25.0),
            down,
            None,
        ),
        ex(
            "frac 0.07 at 100",
            1.0,
            100.0,
            None,
            100.0,
            0.07,
            Down(90.0),
            down,
            None,
        ),
        ex(
            "frac 0.5 at 40",
            1.0,
            100.0,
            None,
            40.0,
            0.5,
            Down(20.0),
            down,
            None,
        ),
        ex(
            "floor 4: frac 1.0 at 5",
            4.0,
            100.0,
            None,
            5.0,
            1.0,
            Down(4.0),
            down,
            None,
        ),
        ex(
            "floor 4: frac 1.0 at 4",
            4.0,
            100.0,
            None,
            4.0,
            1.0,
            Hold,
            None,
            Some(HoldReason::AtFloor),
        ),
        ex(
            "clean from 1",
            1.0,
            100.0,
            None,
            1.0,
            0.0,
            Up(2.0),
            Some(Mode::Climbing),
            None,
        ),
        ex(
            "clean from 8",
            1.0,
            100.0,
            None,
            8.0,
            0.0,
            Up(16.0),
            Some(Mode::Climbing),
            None,
        ),
        ex(
            "clean from 64",
            1.0,
            100.0,
            None,
            64.0,
            0.0,
            Up(100.0),
            Some(Mode::Climbing),
            None,
        ),
        ex(
            "clean at 100",
            1.0,
            100.0,
            None,
            100.0,
            0.0,
            Hold,
            None,
            Some(HoldReason::AtCeiling),
        ),
        ex(
            "last_bad 40: clean at 10",
            1.0,
            100.0,
            Some(40.0),
            10.0,
            0.0,
            Up(15.0),
            Some(Mode::Reclimbing),
            None,
        ),
        ex(
            "last_bad 40: clean at 24",
            1.0,
            100.0,
            Some(40.0),
            24.0,
            0.0,
            Up(30.0),
            Some(Mode::Probing),
            None,
        ),
        ex(
            "last_bad 40: clean at 30",
            1.0,
            100.0,
            Some(40.0),
            30.0,
            0.0,
            Up(31.0),
            Some(Mode::Probing),
            None,
        ),
        ex(
            "last_bad 50,000, ceiling 100,000: clean at 40,000",
            1.0,
            100_000.0,
            Some(50_000.0),
            40_000.0,
            0.0,
            Up(41_000.0),
            Some(Mode::Probing),
            None,
        ),
        ex(
            "dead band: frac 0.03 at 50, no last_bad",
            1.0,
            100.0,
            None,
            50.0,
            0.03,
            Hold,
            None,
            Some(HoldReason::DeadBand),
        ),
        ex(
            "dead band: frac 0.03 at 50, last_bad 40",
            1.0,
            100.0,
            Some(40.0),
            50.0,
            0.03,
            Hold,
            None,
            Some(HoldReason::DeadBand),
        ),
        ex(
            "dead band: frac 0.03 at 50, last_bad 60",
            1.0,
            100.0,
            Some(60.0),
            50.0,
            0.03,
            Hold,
            None,
            Some(HoldReason::DeadBand),
        ),
    ]
}

#[test]
fn worked_examples_through_decide() {
    for e in worked_examples() {
        let got = decide(e.frac, e.current, HIGH, LOW, e.floor, e.ceiling, e.last_bad);
        assert_eq!(got, e.expect, "{}", e.what);
    }
}

#[test]
fn worked_examples_through_the_governor() {
    for control in CONTROLS {
        for e in worked_examples() {
            let mut g = governor_at(control, e.ceiling, e.floor, e.current, e.last_bad);
            let (failures, attempts) = window_of(e.frac);
            assert_eq!(failures / attempts, e.frac, "{}: fraction is exact", e.what);
            let out = g.step(attempts, failures);
            let what = format!("{} ({control})", e.what);
            assert_eq!(out.decision, e.expect, "{what}");
            assert_eq!(out.mode, e.mode, "{what}");
            assert_eq!(out.reason, e.reason, "{what}");
            assert_eq!(out.from, e.current, "{what}");
            let to = match e.expect {
                Decision::Up(t) | Decision::Down(t) => t,
                Decision::Hold => e.current,
            };
            assert_eq!(out.to, to, "{what}");
            assert_eq!(
                g.state().current,
                to,
                "{what}: the decided value is committed"
            );
            let last_bad = match e.expect {
                Decision::Down(_) => Some(e.current),
                _ => e.last_bad,
            };
            assert_eq!(out.last_bad, last_bad, "{what}");
            assert_eq!(g.state().last_bad, last_bad, "{what}");
            assert!(!out.memory_cleared, "{what}");
            let frac = out.signal.and_then(|s| s.frac);
            assert_eq!(frac, Some(e.frac), "{what}");
        }
    }
}

#[test]
fn last_bad_from_a_real_down_drives_the_reclimb_examples() {
    // Set up last_bad = 40 by backing off from 40, as a live run would.
    for control in CONTROLS {
        let mut g = governor_at(control, 100.0, 1.0, 40.0, None);
        let out = g.step(100.0, 50.0);
        assert_eq!(out.decision, Decision::Down(20.0), "{control}");
        assert_eq!(out.last_bad, Some(40.0), "{control}");
        for (current, to, mode) in [
            (10.0, 15.0, Mode::Reclimbing),
            (24.0, 30.0, Mode::Probing),
            (30.0, 31.0, Mode::Probing),
        ] {
            let mut g = g.clone();
            g.set_current(current);
            let out = g.step(100.0, 0.0);
            assert_eq!(out.decision, Decision::Up(to), "{control} at {current}");
            assert_eq!(out.mode, Some(mode), "{control} at {current}");
            assert_eq!(out.last_bad, Some(40.0), "{control} at {current}");
        }
    }
}

#[test]
fn slow_start_climbs_by_doubling_to_the_ceiling() {
    for control in CONTROLS {
        let mut g = ThrottleGovernor::new(params(control, Some(100.0), 1.0));
        let mut offers = vec![g.state().current];
        for _ in 0..9 {
            let out = g.step(100.0, 0.0);
            offers.push(out.to);
        }
        assert_eq!(
            offers,
            [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 100.0, 100.0, 100.0],
            "{control}"
        );
    }
}

#[test]
fn slow_start_adds_at_least_one() {
    // max(current * 2, current + 1): doubling alone could never leave 0.
    assert_eq!(
        decide(0.0, 0.0, HIGH, LOW, 0.0, 100.0, None),
        Decision::Up(1.0)
    );
    assert_eq!(
        decide(0.0, 0.5, HIGH, LOW, 0.0, 100.0, None),
        Decision::Up(1.5)
    );
    assert_eq!(
        decide(0.0, 1.0, HIGH, LOW, 0.0, 100.0, None),
        Decision::Up(2.0)
    );
    // An outside writer may set 0 even though the floor is 1: the committed
    // offer is clamped to the floor (issue 16), and a clean window climbs.
    let p = Params::new(Control::Concurrency, Some(10.0), 1.0, None, HIGH, None).unwrap();
    let mut g = ThrottleGovernor::new(p);
    assert_eq!(
        g.set_current(0.0),
        Committed::Clamped { from: 0.0, to: 1.0 }
    );
    assert_eq!(g.step(10.0, 0.0).decision, Decision::Up(2.0));
    // A floor of 0 is rejected outright: at 0 there is no traffic to learn from.
    for control in CONTROLS {
        let err = Params::new(control, Some(10.0), 0.0, None, HIGH, None).unwrap_err();
        assert_eq!(err, vec![ParamError::ZeroFloor], "{control}");
    }
}

// ---------------------------------------------------------------------------
// Thresholds: dead band and the back-off factor
// ---------------------------------------------------------------------------

#[test]
fn frac_exactly_high_is_a_dead_band_hold() {
    assert_eq!(5.0 / 100.0, HIGH);
    for last_bad in [None, Some(40.0)] {
        assert_eq!(d(HIGH, 50.0, last_bad), Decision::Hold);
    }
    for control in CONTROLS {
        let mut g = governor_at(control, 100.0, 1.0, 50.0, None);
        let out = g.step(100.0, 5.0);
        assert_eq!(out.decision, Decision::Hold, "{control}");
        assert_eq!(out.reason, Some(HoldReason::DeadBand), "{control}");
        assert_eq!(out.last_bad, None, "{control}: a hold sets no memory");
        assert_eq!(
            out.signal.unwrap().threshold,
            Some(Threshold::Band(LOW, HIGH))
        );
    }
}

#[test]
fn frac_exactly_low_is_a_dead_band_hold() {
    assert_eq!(1.0 / 100.0, LOW);
    for last_bad in [None, Some(40.0)] {
        assert_eq!(d(LOW, 50.0, last_bad), Decision::Hold);
    }
    for control in CONTROLS {
        let mut g = governor_at(control, 100.0, 1.0, 50.0, None);
        let out = g.step(100.0, 1.0);
        assert_eq!(out.decision, Decision::Hold, "{control}");
        assert_eq!(out.reason, Some(HoldReason::DeadBand), "{control}");
    }
}

#[test]
fn default_low_is_exactly_high_over_five() {
    // The boundary must hold for the default `low` too, not just a literal.
    let p = Params::new(Control::Rate, None, 1.0, None, 0.05, None).unwrap();
    assert_eq!(p.low, 0.01);
    let mut g = ThrottleGovernor::new(p);
    g.set_current(50.0);
    assert_eq!(g.step(100.0, 1.0).reason, Some(HoldReason::DeadBand));
}

#[test]
fn just_outside_the_band_moves() {
    assert!(matches!(d(0.0501, 50.0, None), Decision::Down(t) if t < 50.0));
    assert_eq!(d(0.0099, 50.0, None), Decision::Up(100.0));
    assert_eq!(d(0.0, 50.0, None), Decision::Up(100.0));
}

#[test]
fn back_off_factor_is_clamped_to_quarter_and_nine_tenths() {
    // (frac, factor): fractions chosen so that 1 - frac is exact in binary.
    for (frac, factor) in [
        (0.0625, 0.9), // 1 - frac = 0.9375, clamped down to 0.9
        (0.1, 0.9),    // exactly the upper bound
        (0.125, 0.875),
        (0.25, 0.75),
        (0.5, 0.5),
        (0.75, 0.25), // exactly the lower bound
        (0.875, 0.25),
        (0.9375, 0.25), // 1 - frac = 0.0625, clamped up to 0.25
        (1.0, 0.25),
    ] {
        assert_eq!(
            decide(frac, 64.0, HIGH, LOW, 1.0, 100.0, None),
            Decision::Down(64.0 * factor),
            "frac {frac}"
        );
        for control in CONTROLS {
            let mut g = governor_at(control, 100.0, 1.0, 64.0, None);
            let (f, n) = window_of(frac);
            let out = g.step(n, f);
            let expect = match control {
                Control::Rate => 64.0 * factor,
                Control::Concurrency => (64.0 * factor).floor(),
            };
            assert_eq!(
                out.decision,
                Decision::Down(expect),
                "frac {frac} {control}"
            );
        }
    }
}

#[test]
fn back_off_never_goes_below_the_floor() {
    assert_eq!(
        decide(1.0, 10.0, HIGH, LOW, 5.0, 100.0, None),
        Decision::Down(5.0)
    );
    for control in CONTROLS {
        let mut g = governor_at(control, 100.0, 5.0, 10.0, None);
        assert_eq!(
            g.step(10.0, 10.0).decision,
            Decision::Down(5.0),
            "{control}"
        );
        let out = g.step(10.0, 10.0);
        assert_eq!(out.decision, Decision::Hold, "{control}");
        assert_eq!(out.reason, Some(HoldReason::AtFloor), "{control}");
        assert_eq!(out.to, 5.0, "{control}");
        assert_eq!(
            out.last_bad,
            Some(10.0),
            "{control}: a hold at the floor keeps the memory of the last Down"
        );
    }
}

// ---------------------------------------------------------------------------
// Floor and ceiling holds
// ---------------------------------------------------------------------------

#[test]
fn clean_at_or_above_the_ceiling_holds_at_ceiling() {
    for control in CONTROLS {
        // An outside value above the ceiling is clamped to it (issue 16).
        for (current, last_bad) in [(100.0, None), (100.0, Some(120.0)), (150.0, None)] {
            let mut g = governor_at(control, 100.0, 1.0, current, last_bad);
            let out = g.step(100.0, 0.0);
            assert_eq!(out.decision, Decision::Hold, "{control} at {current}");
            assert_eq!(out.reason, Some(HoldReason::AtCeiling), "{control}");
            assert_eq!(out.to, 100.0, "{control}: clamped into [floor, ceiling]");
            assert_eq!(out.mode, None);
        }
    }
}

#[test]
fn over_high_at_the_floor_holds_at_floor() {
    for control in CONTROLS {
        for frac in [0.06, 0.5, 1.0] {
            let mut g = governor_at(control, 100.0, 3.0, 3.0, None);
            let (f, n) = window_of(frac);
            let out = g.step(n, f);
            assert_eq!(out.decision, Decision::Hold, "{control} frac {frac}");
            assert_eq!(out.reason, Some(HoldReason::AtFloor), "{control}");
            assert_eq!(out.last_bad, None, "{control}: no Down, no memory");
            assert_eq!(out.signal.unwrap().threshold, Some(Threshold::High(HIGH)));
        }
    }
}

#[test]
fn ceiling_caps_every_climb() {
    assert_eq!(
        decide(0.0, 60.0, HIGH, LOW, 1.0, 100.0, None),
        Decision::Up(100.0)
    );
    assert_eq!(
        decide(0.0, 99.5, HIGH, LOW, 1.0, 100.0, Some(100.0)),
        Decision::Up(100.0),
        "the additive probe is capped too"
    );
    assert_eq!(
        decide(0.0, 100.0, HIGH, LOW, 1.0, 100.0, Some(50.0)),
        Decision::Hold
    );
}

// ---------------------------------------------------------------------------
// Mode labels
// ---------------------------------------------------------------------------

#[test]
fn mode_labels() {
    // (current, last_bad, frac, expected to, mode)
    for control in CONTROLS {
        for (current, last_bad, frac, to, mode) in [
            (8.0, None, 0.0, 16.0, Mode::Climbing),
            (10.0, Some(40.0), 0.0, 15.0, Mode::Reclimbing),
            // target == 0.75 * last_bad exactly: probing, not reclimbing.
            (20.0, Some(40.0), 0.0, 30.0, Mode::Probing),
            (24.0, Some(40.0), 0.0, 30.0, Mode::Probing),
            (30.0, Some(40.0), 0.0, 31.0, Mode::Probing),
            (50.0, Some(40.0), 0.0, 51.0, Mode::Probing),
            (40.0, None, 0.5, 20.0, Mode::BackingOff),
            (40.0, Some(80.0), 0.5, 20.0, Mode::BackingOff),
        ] {
            let mut g = governor_at(control, 100.0, 1.0, current, last_bad);
            let (f, n) = window_of(frac);
            let out = g.step(n, f);
            assert_eq!(out.to, to, "{control} at {current} last_bad {last_bad:?}");
            assert_eq!(out.mode, Some(mode), "{control} at {current} {last_bad:?}");
            assert_eq!(out.reason, None);
            assert!(out.is_movement());
        }
    }
}

#[test]
fn holds_carry_a_reason_and_no_mode() {
    let mut g = governor_at(Control::Rate, 100.0, 1.0, 50.0, None);
    for (attempts, failures, reason) in [
        (0.0, 0.0, HoldReason::NoTraffic),
        (100.0, 3.0, HoldReason::DeadBand),
    ] {
        let out = g.step(attempts, failures);
        assert_eq!(out.decision_str(), "hold");
        assert_eq!(out.mode, None);
        assert_eq!(out.reason, Some(reason));
    }
}

#[test]
fn decision_strings() {
    let mut g = governor_at(Control::Rate, 100.0, 1.0, 50.0, None);
    assert_eq!(g.step(100.0, 0.0).decision_str(), "up");
    assert_eq!(g.step(100.0, 100.0).decision_str(), "down");
    assert_eq!(g.step(100.0, 3.0).decision_str(), "hold");
    assert_eq!(Mode::BackingOff.as_str(), "backing-off");
    assert_eq!(HoldReason::NoTraffic.to_string(), "no-traffic");
    assert_eq!(
        serde_json::to_string(&Mode::Reclimbing).unwrap(),
        "\"reclimbing\""
    );
    assert_eq!(
        serde_json::to_string(&HoldReason::AtCeiling).unwrap(),
        "\"at-ceiling\""
    );
}

// ---------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------

#[test]
fn memory_clear_step_counts_to_three() {
    assert_eq!(MEMORY_CLEAR_STREAK, 3);
    assert_eq!(memory_clear_step(0, true), (1, false));
    assert_eq!(memory_clear_step(1, true), (2, false));
    assert_eq!(memory_clear_step(2, true), (0, true));
    for streak in [0, 1, 2] {
        assert_eq!(memory_clear_step(streak, false), (0, false), "{streak}");
    }
    assert_eq!(
        memory_clear_step(u32::MAX, true),
        (0, true),
        "never overflows"
    );
}

#[test]
fn the_clearing_window_decides_in_slow_start() {
    for control in CONTROLS {
        let mut g = governor_at(control, 100.0, 1.0, 40.0, Some(40.0));
        // Windows 1 and 2: evidence (clean at >= last_bad), probing.
        let out = g.step(100.0, 0.0);
        assert_eq!(
            (out.decision, out.mode),
            (Decision::Up(41.0), Some(Mode::Probing))
        );
        assert_eq!((out.last_bad, out.clean_streak), (Some(40.0), 1));
        assert!(!out.memory_cleared);
        let out = g.step(100.0, 0.0);
        assert_eq!(
            (out.decision, out.mode),
            (Decision::Up(42.0), Some(Mode::Probing))
        );
        assert_eq!((out.last_bad, out.clean_streak), (Some(40.0), 2));
        // Window 3 clears the memory and already decides with last_bad = None:
        // it doubles (a probe would have given 43).
        let out = g.step(100.0, 0.0);
        assert!(out.memory_cleared, "{control}");
        assert_eq!(out.decision, Decision::Up(84.0), "{control}");
        assert_eq!(out.mode, Some(Mode::Climbing), "{control}");
        assert_eq!((out.last_bad, out.clean_streak), (None, 0), "{control}");
        // The next window is plain slow start, with nothing left to clear.
        let out = g.step(100.0, 0.0);
        assert!(!out.memory_cleared);
        assert_eq!(out.decision, Decision::Up(100.0));
        assert_eq!(out.mode, Some(Mode::Climbing));
    }
}

#[test]
fn clearing_at_the_ceiling_holds_with_the_clear_reported() {
    let mut g = governor_at(Control::Rate, 100.0, 1.0, 100.0, Some(90.0));
    g.restore_memory(Some(90.0), 2);
    let out = g.step(100.0, 0.0);
    assert!(out.memory_cleared);
    assert_eq!(out.decision, Decision::Hold);
    assert_eq!(out.reason, Some(HoldReason::AtCeiling));
    assert_eq!((out.last_bad, out.clean_streak), (None, 0));
}

#[test]
fn evidence_requires_current_at_or_above_last_bad() {
    for control in CONTROLS {
        // Below last_bad: clean windows never count.
        let mut g = governor_at(control, 100.0, 1.0, 39.0, Some(40.0));
        for _ in 0..10 {
            g.set_current(39.0);
            let out = g.step(100.0, 0.0);
            assert_eq!(out.clean_streak, 0, "{control}");
            assert!(!out.memory_cleared, "{control}");
            assert_eq!(out.last_bad, Some(40.0), "{control}");
        }
        // Exactly at last_bad: they count, and the third clears.
        let mut g = governor_at(control, 100.0, 1.0, 40.0, Some(40.0));
        let streaks: Vec<_> = (0..3)
            .map(|_| {
                g.set_current(40.0);
                let out = g.step(100.0, 0.0);
                (out.clean_streak, out.memory_cleared)
            })
            .collect();
        assert_eq!(streaks, [(1, false), (2, false), (0, true)], "{control}");
    }
}

#[test]
fn evidence_requires_a_clean_window() {
    // frac == low is not clean: it resets the streak instead of counting.
    let mut g = governor_at(Control::Rate, 100.0, 1.0, 50.0, Some(40.0));
    g.restore_memory(Some(40.0), 2);
    let out = g.step(100.0, 1.0);
    assert_eq!((out.clean_streak, out.memory_cleared), (0, false));
    assert_eq!(out.last_bad, Some(40.0));
}

#[test]
fn dead_band_resets_the_streak() {
    for control in CONTROLS {
        let mut g = governor_at(control, 100.0, 1.0, 40.0, Some(40.0));
        let mut seen = Vec::new();
        for failures in [0.0, 0.0, 3.0, 0.0, 0.0, 0.0] {
            g.set_current(40.0);
            let out = g.step(100.0, failures);
            seen.push((out.clean_streak, out.memory_cleared));
        }
        assert_eq!(
            seen,
            [
                (1, false),
                (2, false),
                (0, false), // dead band
                (1, false),
                (2, false),
                (0, true),
            ],
            "{control}"
        );
    }
}

#[test]
fn no_traffic_neither_counts_nor_resets_the_streak() {
    let mut g = governor_at(Control::Rate, 100.0, 1.0, 40.0, Some(40.0));
    g.set_current(40.0);
    assert_eq!(g.step(100.0, 0.0).clean_streak, 1);
    g.set_current(40.0);
    assert_eq!(g.step(100.0, 0.0).clean_streak, 2);
    let out = g.step(0.0, 0.0);
    assert_eq!((out.clean_streak, out.memory_cleared), (2, false));
    assert_eq!(out.last_bad, Some(40.0));
    g.set_current(40.0);
    assert!(g.step(100.0, 0.0).memory_cleared);
}

#[test]
fn a_down_resets_the_streak_and_moves_last_bad() {
    let mut g = governor_at(Control::Rate, 100.0, 1.0, 60.0, Some(40.0));
    g.restore_memory(Some(40.0), 2);
    let out = g.step(100.0, 50.0);
    assert_eq!(out.decision, Decision::Down(30.0));
    assert_eq!((out.last_bad, out.clean_streak), (Some(60.0), 0));
}

#[test]
fn restore_memory_without_last_bad_drops_the_streak() {
    let mut g = governor_at(Control::Rate, 100.0, 1.0, 10.0, None);
    g.restore_memory(None, 2);
    assert_eq!(g.state().clean_streak, 0);
    g.restore_memory(Some(40.0), 2);
    assert_eq!(g.state().clean_streak, 2);
}

// ---------------------------------------------------------------------------
// Integer knobs
// ---------------------------------------------------------------------------

#[test]
fn concurrency_down_is_strictly_lower() {
    // (current, frac, rate result, concurrency result)
    for (current, frac, rate, conc) in [
        (2.0, 0.0625, 1.8, 1.0),
        (5.0, 0.0625, 4.5, 4.0),
        (10.0, 0.0625, 9.0, 9.0),
        (3.0, 0.25, 2.25, 2.0),
        (7.0, 1.0, 1.75, 1.0),
    ] {
        let (f, n) = window_of(frac);
        let mut g = governor_at(Control::Rate, 100.0, 1.0, current, None);
        assert_eq!(
            g.step(n, f).decision,
            Decision::Down(rate),
            "rate {current}"
        );
        let mut g = governor_at(Control::Concurrency, 100.0, 1.0, current, None);
        assert_eq!(
            g.step(n, f).decision,
            Decision::Down(conc),
            "concurrency {current}"
        );
    }
}

#[test]
fn concurrency_up_is_strictly_higher() {
    // A fractional safe zone: last_bad 5 gives safe = 3.75. From 3 the raw
    // target is 3.75; the integer knob must still rise, to 4.
    let mut g = governor_at(Control::Rate, 100.0, 1.0, 3.0, Some(5.0));
    assert_eq!(g.step(100.0, 0.0).decision, Decision::Up(3.75));
    let mut g = governor_at(Control::Concurrency, 100.0, 1.0, 3.0, Some(5.0));
    let out = g.step(100.0, 0.0);
    assert_eq!(out.decision, Decision::Up(4.0));
    assert_eq!(out.mode, Some(Mode::Probing));
    // last_bad 3: safe = 2.25, from 2 the raw target 2.25 rounds up to 3.
    let mut g = governor_at(Control::Concurrency, 100.0, 1.0, 2.0, Some(3.0));
    assert_eq!(g.step(100.0, 0.0).decision, Decision::Up(3.0));
    // A raw target with a fraction above an integer rounds down, not past it.
    let mut g = governor_at(Control::Concurrency, 100.0, 1.0, 10.0, Some(41.0));
    assert_eq!(
        g.step(100.0, 0.0).decision,
        Decision::Up(15.0),
        "raw 15 stays 15"
    );
    let mut g = governor_at(Control::Concurrency, 100.0, 1.0, 21.0, Some(41.0));
    // safe = 30.75, fast = min(31.5, 30.75) = 30.75 -> 30.
    let out = g.step(100.0, 0.0);
    assert_eq!(out.decision, Decision::Up(30.0));
    // The label is judged on the value written (30 < 0.75 * 41 = 30.75). On
    // the raw target (30.75, exactly the safe zone) it would be probing;
    // docs/GOVERNOR.md does not say which, so this pins the current choice.
    assert_eq!(out.mode, Some(Mode::Reclimbing), "30 < 0.75 * 41");
}

#[test]
fn params_round_rules() {
    let p = Params::new(Control::Concurrency, Some(10.0), 2.0, None, HIGH, None).unwrap();
    use Decision::{Down, Hold, Up};
    for (raw, current, expect) in [
        (Down(2.9), 3.0, Down(2.0)),
        (Down(2.5), 4.0, Down(2.0)),
        (Down(0.5), 4.0, Down(2.0)), // never below the floor
        (Down(2.0), 2.0, Hold),      // at the floor
        (Down(5.99), 6.0, Down(5.0)),
        (Down(6.0), 6.0, Down(5.0)), // a raw Down still lowers the integer
        (Up(3.1), 3.0, Up(4.0)),     // strictly higher
        (Up(5.9), 3.0, Up(5.0)),
        (Up(12.0), 9.0, Up(10.0)), // never above the ceiling
        (Up(10.5), 10.0, Hold),    // at the ceiling
        (Hold, 5.0, Hold),
    ] {
        assert_eq!(p.round(raw, current), expect, "{raw:?} from {current}");
    }
    let rate = Params::new(Control::Rate, Some(10.0), 2.0, None, HIGH, None).unwrap();
    assert_eq!(rate.round(Down(2.9), 3.0), Down(2.9));
    assert_eq!(rate.round(Up(3.1), 3.0), Up(3.1));
}

#[test]
fn concurrency_stays_within_floor_and_ceiling() {
    let mut g = governor_at(Control::Concurrency, 7.0, 2.0, 6.0, None);
    assert_eq!(g.step(100.0, 0.0).decision, Decision::Up(7.0));
    assert_eq!(g.step(100.0, 0.0).reason, Some(HoldReason::AtCeiling));
    assert_eq!(g.step(100.0, 100.0).decision, Decision::Down(2.0));
    assert_eq!(g.step(100.0, 100.0).reason, Some(HoldReason::AtFloor));
    assert_eq!(g.state().current, 2.0);
}

// ---------------------------------------------------------------------------
// Params
// ---------------------------------------------------------------------------

#[test]
fn params_defaults() {
    let p = Params::new(Control::Concurrency, Some(100.0), 1.0, None, 0.05, None).unwrap();
    assert_eq!(
        p,
        Params {
            control: Control::Concurrency,
            ceiling: 100.0,
            floor: 1.0,
            start: 1.0,
            high: 0.05,
            low: 0.01,
            resolution: None,
        }
    );
    let p = Params::new(Control::Rate, None, 2.5, None, 0.1, None).unwrap();
    assert_eq!(
        p.ceiling,
        f64::INFINITY,
        "rate without a ceiling is unbounded"
    );
    assert_eq!(p.start, 2.5, "start defaults to the floor");
    assert_eq!(p.low, 0.1 / 5.0);
    let p = Params::new(Control::Rate, Some(50.0), 4.0, None, 0.1, Some(0.001)).unwrap();
    assert_eq!((p.start, p.low), (4.0, 0.001));
    assert_eq!(Control::default(), Control::Concurrency);
}

#[test]
fn params_start_within_bounds_is_kept_and_opens_the_governor() {
    for start in [1.0, 10.0, 100.0] {
        let p = Params::new(
            Control::Concurrency,
            Some(100.0),
            1.0,
            Some(start),
            HIGH,
            None,
        )
        .unwrap();
        assert_eq!(p.start, start);
        let g = ThrottleGovernor::new(p);
        assert_eq!(
            g.state(),
            State {
                current: start,
                last_bad: None,
                clean_streak: 0
            }
        );
    }
    // Floor equal to ceiling is allowed: the offer is pinned.
    let p = Params::new(Control::Concurrency, Some(5.0), 5.0, None, HIGH, None).unwrap();
    let mut g = ThrottleGovernor::new(p);
    assert_eq!(g.step(10.0, 0.0).reason, Some(HoldReason::AtCeiling));
    assert_eq!(g.step(10.0, 10.0).reason, Some(HoldReason::AtFloor));
}

#[test]
fn params_start_outside_bounds_is_rejected() {
    for start in [0.0, 0.5, 101.0] {
        let err =
            Params::new(Control::Rate, Some(100.0), 1.0, Some(start), HIGH, None).unwrap_err();
        assert_eq!(
            err,
            [ParamError::StartOutOfRange {
                start,
                floor: 1.0,
                ceiling: 100.0
            }]
        );
    }
}

#[test]
fn params_low_must_be_below_high() {
    for low in [0.05, 0.06, 0.0] {
        let err = Params::new(Control::Rate, None, 1.0, None, 0.05, Some(low)).unwrap_err();
        assert_eq!(
            err,
            [ParamError::LowOutOfRange { low, high: 0.05 }],
            "low {low}"
        );
    }
}

#[test]
fn params_high_must_be_a_fraction_below_one() {
    for high in [1.0, 1.5, 0.0] {
        let err = Params::new(Control::Rate, None, 1.0, None, high, Some(0.001)).unwrap_err();
        assert!(
            err.contains(&ParamError::HighOutOfRange(high)),
            "high {high}: {err:?}"
        );
    }
    // With the default low, high = 1 is the only problem.
    let err = Params::new(Control::Rate, None, 1.0, None, 1.0, None).unwrap_err();
    assert_eq!(err, [ParamError::HighOutOfRange(1.0)]);
}

#[test]
fn params_floor_above_ceiling_is_rejected() {
    let err = Params::new(Control::Concurrency, Some(5.0), 10.0, None, HIGH, None).unwrap_err();
    assert_eq!(
        err,
        [ParamError::FloorAboveCeiling {
            floor: 10.0,
            ceiling: 5.0
        }]
    );
}

#[test]
fn params_reject_nan_infinite_and_negative() {
    type Case = (
        &'static str,
        Option<f64>,
        f64,
        Option<f64>,
        f64,
        Option<f64>,
    );
    let bads = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -1.0];
    for bad in bads {
        let cases: [Case; 5] = [
            ("ceiling", Some(bad), 1.0, None, HIGH, None),
            ("floor", Some(100.0), bad, None, HIGH, None),
            ("start", Some(100.0), 1.0, Some(bad), HIGH, None),
            ("high", Some(100.0), 1.0, None, bad, Some(LOW)),
            ("low", Some(100.0), 1.0, None, HIGH, Some(bad)),
        ];
        for (name, ceiling, floor, start, high, low) in cases {
            for control in CONTROLS {
                let err = Params::new(control, ceiling, floor, start, high, low).unwrap_err();
                assert_eq!(err.len(), 1, "{name} = {bad} ({control}): {err:?}");
                match &err[0] {
                    ParamError::NotFiniteNonNegative { field, value } => {
                        assert_eq!(*field, name);
                        assert!((value.is_nan() && bad.is_nan()) || *value == bad);
                    }
                    other => panic!("{name} = {bad}: unexpected {other:?}"),
                }
            }
        }
    }
}

#[test]
fn params_concurrency_needs_whole_numbers() {
    let err =
        Params::new(Control::Concurrency, Some(10.5), 1.5, Some(2.5), HIGH, None).unwrap_err();
    assert_eq!(
        err,
        [
            ParamError::NotInteger {
                field: "ceiling",
                value: 10.5
            },
            ParamError::NotInteger {
                field: "floor",
                value: 1.5
            },
            ParamError::NotInteger {
                field: "start",
                value: 2.5
            },
        ]
    );
    // The same numbers are fine for a rate.
    let p = Params::new(Control::Rate, Some(10.5), 1.5, Some(2.5), HIGH, None).unwrap();
    assert_eq!((p.ceiling, p.floor, p.start), (10.5, 1.5, 2.5));
}

#[test]
fn params_concurrency_needs_a_ceiling() {
    let err = Params::new(Control::Concurrency, None, 1.0, None, HIGH, None).unwrap_err();
    assert_eq!(err, [ParamError::CeilingRequired]);
    // A start is not judged against a missing ceiling.
    let err = Params::new(Control::Concurrency, None, 1.0, Some(7.0), HIGH, None).unwrap_err();
    assert_eq!(err, [ParamError::CeilingRequired]);
}

#[test]
fn params_report_every_error_at_once() {
    let err = Params::new(
        Control::Concurrency,
        None,
        -1.0,
        Some(f64::NAN),
        2.0,
        Some(3.0),
    )
    .unwrap_err();
    assert_eq!(err.len(), 5, "{err:?}");
    assert!(matches!(
        err[0],
        ParamError::NotFiniteNonNegative { field: "floor", .. }
    ));
    assert!(matches!(
        err[1],
        ParamError::NotFiniteNonNegative { field: "start", .. }
    ));
    assert!(err.contains(&ParamError::CeilingRequired));
    assert!(err.contains(&ParamError::HighOutOfRange(2.0)));
    assert!(err.contains(&ParamError::LowOutOfRange {
        low: 3.0,
        high: 2.0
    }));

    let err = Params::new(
        Control::Concurrency,
        Some(5.5),
        10.0,
        None,
        0.05,
        Some(0.05),
    )
    .unwrap_err();
    assert_eq!(
        err,
        [
            ParamError::LowOutOfRange {
                low: 0.05,
                high: 0.05
            },
            ParamError::NotInteger {
                field: "ceiling",
                value: 5.5
            },
            ParamError::FloorAboveCeiling {
                floor: 10.0,
                ceiling: 5.5
            },
        ]
    );
}

#[test]
fn param_errors_say_what_to_do() {
    let msg = |e: ParamError| e.to_string();
    assert_eq!(
        msg(ParamError::LowOutOfRange {
            low: 0.05,
            high: 0.05
        }),
        "`low` must be greater than 0 and less than `high` (0.05) (got 0.05)"
    );
    assert!(msg(ParamError::CeilingRequired).contains("`ceiling` is required"));
    assert!(msg(ParamError::StartOutOfRange {
        start: 0.0,
        floor: 1.0,
        ceiling: 9.0
    })
    .contains("[1, 9]"));
}

// ---------------------------------------------------------------------------
// No traffic, outside writers, cumulative readings
// ---------------------------------------------------------------------------

#[test]
fn no_traffic_holds_and_changes_nothing() {
    for control in CONTROLS {
        for last_bad in [None, Some(40.0)] {
            let mut g = governor_at(control, 100.0, 1.0, 50.0, last_bad);
            let before = g.state();
            let out = g.step(0.0, 0.0);
            assert_eq!(out.decision, Decision::Hold);
            assert_eq!(out.reason, Some(HoldReason::NoTraffic));
            assert_eq!((out.from, out.to), (50.0, 50.0));
            assert_eq!(out.signal.unwrap().frac, None);
            assert_eq!(out.signal.unwrap().threshold, None);
            assert!(!out.memory_cleared);
            assert_eq!(g.state(), before, "{control} {last_bad:?}");
        }
    }
}

#[test]
fn set_current_is_stepped_from() {
    for control in CONTROLS {
        let mut g = ThrottleGovernor::new(params(control, Some(100.0), 1.0));
        assert_eq!(g.step(100.0, 0.0).decision, Decision::Up(2.0));
        // An operator sets 30: the governor steps from 30, not from 2.
        g.set_current(30.0);
        let out = g.step(100.0, 0.0);
        assert_eq!((out.from, out.to), (30.0, 60.0), "{control}");
        // Another writer lowers it to 50; congestion there is remembered at 50.
        g.set_current(50.0);
        let out = g.step(100.0, 50.0);
        assert_eq!(
            (out.from, out.decision),
            (50.0, Decision::Down(25.0)),
            "{control}"
        );
        assert_eq!(out.last_bad, Some(50.0), "{control}");
        // Without an outside write, the decided value is the next `from`.
        let out = g.step(100.0, 3.0);
        assert_eq!(out.from, 25.0, "{control}");
    }
}

#[test]
fn observe_forms_windows_from_cumulative_readings() {
    use crate::window::Reading;
    let mut g = ThrottleGovernor::new(params(Control::Rate, Some(100.0), 1.0));
    let out = g.observe(Reading::resolved(0.0, 1_000.0, 10.0)).unwrap();
    assert_eq!(out.reason, Some(HoldReason::Baseline));
    assert_eq!(out.signal, None);
    let out = g.observe(Reading::resolved(2.0, 1_100.0, 10.0)).unwrap();
    assert_eq!(out.decision, Decision::Up(2.0));
    assert_eq!(out.signal.unwrap().attempts, 100.0);
    let out = g.observe(Reading::resolved(4.0, 1_200.0, 60.0)).unwrap();
    assert_eq!(out.decision, Decision::Down(1.0));
    assert_eq!(out.signal.unwrap().frac, Some(0.5));
    let out = g.observe(Reading::resolved(6.0, 5.0, 0.0)).unwrap();
    assert_eq!(out.reason, Some(HoldReason::CounterReset));
    assert_eq!(out.last_bad, Some(2.0), "a reset keeps the memory");
    assert!(g.observe(Reading::resolved(8.0, 10.0, 9.0)).is_err());
}

#[test]
fn signal_and_threshold_describe_the_window() {
    let mut g = governor_at(Control::Rate, 100.0, 1.0, 40.0, None);
    let out = g.step(200.0, 100.0);
    assert_eq!(
        out.signal,
        Some(Signal {
            attempts: 200.0,
            failures: 100.0,
            frac: Some(0.5),
            threshold: Some(Threshold::High(HIGH)),
        })
    );
    assert_eq!(Threshold::High(0.05).to_string(), "> high 5%");
    assert_eq!(Threshold::Low(0.01).to_string(), "< low 1%");
    assert_eq!(Threshold::Band(0.01, 0.05).to_string(), "within [1%, 5%]");
    assert_eq!(pct(0.0712), "7.12%");
    assert_eq!(pct(0.5), "50%");
}

// ---------------------------------------------------------------------------
// Properties over arbitrary window sequences
// ---------------------------------------------------------------------------

/// One event of a run.
#[derive(Debug, Clone)]
enum Event {
    /// A window with traffic.
    Window { attempts: u32, failures: u32 },
    /// A window without traffic.
    NoTraffic,
    /// An outside writer sets the knob to `floor + at * (ceiling - floor)`
    /// (or `floor + at * 1000` for an unbounded rate).
    SetCurrent { at: f64 },
}

fn event() -> impl Strategy<Value = Event> {
    let window = (
        1u32..=2_000,
        prop_oneof![
            5 => Just(0.0),            // clean
            1 => 0.0..0.02f64,         // around low
            1 => 0.0..0.2f64,          // around high
            3 => 0.0..=1.0f64,         // anything
        ],
    )
        .prop_map(|(attempts, frac)| Event::Window {
            attempts,
            failures: ((attempts as f64 * frac).round() as u32).min(attempts),
        });
    prop_oneof![
        12 => window,
        1 => Just(Event::NoTraffic),
        1 => (0.0..=1.0f64).prop_map(|at| Event::SetCurrent { at }),
    ]
}

/// Valid parameters for either control.
fn any_params() -> impl Strategy<Value = Params> {
    (
        any::<bool>(),
        1u32..=5,
        0u32..=300,
        prop::option::of(0.0..=1.0f64),
        0.001..0.5f64,
        prop::option::of(0.05..0.95f64),
        any::<bool>(),
        0.0..1.0f64,
    )
        .prop_map(
            |(rate, floor, span, start_at, high, low_share, unbounded, frac_part)| {
                let (control, floor, ceiling) = if rate {
                    // Rates may be fractional and unbounded.
                    let floor = floor as f64 + frac_part;
                    let ceiling = (!unbounded).then_some(floor + span as f64 + frac_part);
                    (Control::Rate, floor, ceiling)
                } else {
                    let floor = floor as f64;
                    (Control::Concurrency, floor, Some(floor + span as f64))
                };
                let start = start_at.map(|at| {
                    let s = floor + at * (ceiling.unwrap_or(floor + 1_000.0) - floor);
                    if control.is_integer() {
                        s.round()
                    } else {
                        s
                    }
                });
                Params::new(
                    control,
                    ceiling,
                    floor,
                    start,
                    high,
                    low_share.map(|s| s * high),
                )
                .expect("the strategy builds valid params")
            },
        )
}

/// The invariants of one run, with the memory tracked by an independent
/// model of step 3 and of `last_bad`.
fn check_run(p: Params, events: &[Event]) -> Result<(), TestCaseError> {
    let mut g = ThrottleGovernor::new(p);
    let mut model_last_bad: Option<f64> = None;
    let mut model_streak: u32 = 0;
    let integral = p.control.is_integer();
    prop_assert!(p.floor <= g.state().current && g.state().current <= p.ceiling);

    for (i, ev) in events.iter().enumerate() {
        let (attempts, failures) = match *ev {
            Event::SetCurrent { at } => {
                let span = if p.ceiling.is_finite() {
                    p.ceiling - p.floor
                } else {
                    1_000.0
                };
                let mut v = p.floor + at * span;
                if integral {
                    v = v.round();
                }
                let v = v.clamp(p.floor, p.ceiling);
                g.set_current(v);
                prop_assert_eq!(g.state().current, v);
                continue;
            }
            Event::NoTraffic => (0.0, 0.0),
            Event::Window { attempts, failures } => (attempts as f64, failures as f64),
        };
        let before = g.state();
        let out = g.step(attempts, failures);
        let ctx = format!("event {i} {ev:?}, before {before:?}, outcome {out:?}");

        prop_assert_eq!(out.from, before.current, "{}", ctx);
        prop_assert_eq!(g.state().current, out.to, "{}", ctx);
        // The offer never leaves [floor, ceiling].
        prop_assert!(p.floor <= out.to && out.to <= p.ceiling, "{}", ctx);
        if integral {
            prop_assert_eq!(out.to.fract(), 0.0, "integer knob: {}", ctx);
        }

        if attempts == 0.0 {
            prop_assert_eq!(out.decision, Decision::Hold, "{}", ctx);
            prop_assert_eq!(out.reason, Some(HoldReason::NoTraffic), "{}", ctx);
            prop_assert_eq!(g.state(), before, "no traffic changes nothing: {}", ctx);
            prop_assert!(!out.memory_cleared, "{}", ctx);
            continue;
        }
        let frac = failures / attempts;

        // Step 3, modelled independently.
        let mut expect_cleared = false;
        if let Some(bad) = model_last_bad {
            // Offers compare at the knob's resolution (governor::exact).
            let evidence = frac < p.low
                && if integral {
                    before.current >= bad
                } else {
                    before.current > bad - RATE_RELATIVE_RESOLUTION * bad
                };
            if evidence {
                model_streak += 1;
                if model_streak == 3 {
                    expect_cleared = true;
                    model_last_bad = None;
                    model_streak = 0;
                }
            } else {
                model_streak = 0;
            }
        }
        prop_assert_eq!(out.memory_cleared, expect_cleared, "{}", ctx);

        match out.decision {
            Decision::Down(to) => {
                prop_assert_eq!(to, out.to, "{}", ctx);
                prop_assert!(to < out.from, "a Down is strictly lower: {}", ctx);
                prop_assert!(frac > p.high, "a Down needs frac > high: {}", ctx);
                prop_assert_eq!(out.mode, Some(Mode::BackingOff), "{}", ctx);
                prop_assert_eq!(out.reason, None, "{}", ctx);
                model_last_bad = Some(out.from);
            }
            Decision::Up(to) => {
                prop_assert_eq!(to, out.to, "{}", ctx);
                prop_assert!(to > out.from, "an Up is strictly higher: {}", ctx);
                prop_assert!(frac <= p.high, "no Up on frac > high: {}", ctx);
                prop_assert!(frac < p.low, "an Up needs a clean window: {}", ctx);
                let mode = match model_last_bad {
                    None => Mode::Climbing,
                    Some(bad) if to < 0.75 * bad => Mode::Reclimbing,
                    Some(_) => Mode::Probing,
                };
                prop_assert_eq!(out.mode, Some(mode), "{}", ctx);
                prop_assert_eq!(out.reason, None, "{}", ctx);
            }
            Decision::Hold => {
                prop_assert_eq!(out.to, out.from, "{}", ctx);
                prop_assert_eq!(out.mode, None, "{}", ctx);
                let reason = if frac > p.high {
                    HoldReason::AtFloor
                } else if frac < p.low {
                    HoldReason::AtCeiling
                } else {
                    HoldReason::DeadBand
                };
                prop_assert_eq!(out.reason, Some(reason), "{}", ctx);
                match reason {
                    HoldReason::AtFloor => prop_assert!(out.from <= p.floor, "{}", ctx),
                    // At the ceiling, at the knob's resolution.
                    HoldReason::AtCeiling => prop_assert!(
                        out.from >= p.ceiling - RATE_RELATIVE_RESOLUTION * out.from,
                        "{}",
                        ctx
                    ),
                    _ => {}
                }
            }
        }
        // last_bad is the `from` of the latest Down, unless cleared since.
        prop_assert_eq!(out.last_bad, model_last_bad, "{}", ctx);
        prop_assert_eq!(g.state().last_bad, model_last_bad, "{}", ctx);
        prop_assert_eq!(out.clean_streak, model_streak, "{}", ctx);
        prop_assert!(out.clean_streak < MEMORY_CLEAR_STREAK, "{}", ctx);

        // Rate never rounds: the governor agrees with the pure rule.
        if !integral {
            let memory_for_decide = if expect_cleared {
                None
            } else {
                before.last_bad
            };
            let raw = decide(
                frac,
                before.current,
                p.high,
                p.low,
                p.floor,
                p.ceiling,
                memory_for_decide,
            );
            // An Up below the resolution becomes the probe (governor::exact).
            let raw = match raw {
                Decision::Up(t)
                    if t - before.current < RATE_RELATIVE_RESOLUTION * before.current =>
                {
                    let probe = memory_for_decide.map_or(1.0, |b: f64| (0.02 * b).max(1.0));
                    let t = (before.current + probe).min(p.ceiling);
                    if t - before.current >= RATE_RELATIVE_RESOLUTION * before.current {
                        Decision::Up(t)
                    } else {
                        Decision::Hold
                    }
                }
                other => other,
            };
            prop_assert_eq!(out.decision, raw, "{}", ctx);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_for_any_run(
        p in any_params(),
        events in prop::collection::vec(event(), 0..200),
    ) {
        check_run(p, &events)?;
    }

    #[test]
    fn invariants_hold_for_concurrency_with_small_bounds(
        floor in 1u32..=3,
        span in 0u32..=6,
        high in 0.01..0.3f64,
        events in prop::collection::vec(event(), 0..100),
    ) {
        // Small integer ranges make the rounding edge cases frequent.
        let p = Params::new(
            Control::Concurrency,
            Some((floor + span) as f64),
            floor as f64,
            None,
            high,
            None,
        )
        .unwrap();
        check_run(p, &events)?;
    }

    #[test]
    fn decide_moves_in_the_right_direction(
        frac in 0.0..=1.0f64,
        current in 0.0..1e6f64,
        floor in 0.0..100.0f64,
        span in 0.0..1e6f64,
        last_bad in prop::option::of(0.0..1e6f64),
    ) {
        let ceiling = floor + span;
        let current = current.clamp(floor, ceiling);
        match decide(frac, current, HIGH, LOW, floor, ceiling, last_bad) {
            Decision::Down(t) => {
                prop_assert!(frac > HIGH);
                prop_assert!(floor <= t && t < current);
            }
            Decision::Up(t) => {
                prop_assert!(frac < LOW);
                prop_assert!(current < t && t <= ceiling);
            }
            Decision::Hold => {
                prop_assert!(
                    (LOW..=HIGH).contains(&frac)
                        || (frac > HIGH && current <= floor)
                        || (frac < LOW && current >= ceiling)
                );
            }
        }
    }
}
