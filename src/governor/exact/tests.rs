//! Tests of exact offers: Ups at the knob's resolution, the stall that
//! rounding read-backs caused, and the bounds of the committed offer.

use proptest::prelude::*;

use super::super::{Control, Decision, Params, Profile, ThrottleGovernor};
use super::*;

fn rate(ceiling: f64) -> Params {
    Params::new(Control::Rate, Some(ceiling), 1.0, None, 0.05, None).unwrap()
}

fn at(params: Params, profile: Profile, current: f64, last_bad: Option<f64>) -> ThrottleGovernor {
    let mut g = ThrottleGovernor::with_profile(params, profile);
    assert_eq!(g.set_current(current), Committed::Adopted);
    assert_eq!(g.restore_memory(last_bad, 0), Committed::Adopted);
    g
}

/// A tool that rounds a rate to 2 decimals, half away from zero.
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A tool that truncates a rate to 2 decimals (idempotent: a value it
/// reported reads back as itself, though `4531.65 * 100` is 453164.99...).
fn trunc2(x: f64) -> f64 {
    (x * 100.0 + 1e-6).floor() / 100.0
}

/// A reader that reads every float 1 ulp low (as serde_json without
/// `float_roundtrip` read 182.01600000000002 as 182.016).
fn ulp_low(x: f64) -> f64 {
    if x > 0.0 {
        f64::from_bits(x.to_bits() - 1)
    } else {
        x
    }
}

#[test]
fn the_one_ulp_stall_is_gone() {
    // 0.75 * 242.68800000000002 = 182.01600000000002, read back as 182.016.
    let mut g = at(
        rate(1000.0),
        Profile::Seed,
        182.016,
        Some(242.68800000000002),
    );
    let o = g.step(1000.0, 0.0);
    // The reclimb's Up would be 1 ulp; the probe applies instead.
    let Decision::Up(to) = o.decision else {
        panic!("expected an Up, got {o:?}");
    };
    assert!(to - 182.016 >= 1.0, "moved only {}", to - 182.016);
    assert_eq!(to, 182.016 + 0.02 * 242.68800000000002);
}

#[test]
fn an_up_of_a_real_size_is_unchanged() {
    // docs/GOVERNOR.md: last_bad 40, clean at 24 gives Up(30).
    let mut g = at(rate(100.0), Profile::Seed, 24.0, Some(40.0));
    assert_eq!(g.step(1000.0, 0.0).decision, Decision::Up(30.0));
    // A small but real move (0.5, far above 1e-9 relative) stays as written.
    let mut g = at(rate(100.0), Profile::Seed, 29.5, Some(40.0));
    assert_eq!(g.step(1000.0, 0.0).decision, Decision::Up(30.0));
}

#[test]
fn a_configured_resolution_turns_small_ups_into_the_probe() {
    let p = rate(100.0).with_resolution(0.01).unwrap();
    let mut g = at(p, Profile::Seed, 29.995, Some(40.0));
    assert_eq!(g.step(1000.0, 0.0).decision, Decision::Up(29.995 + 1.0));
    assert!(rate(1.0).with_resolution(0.0).is_err());
    assert!(rate(1.0).with_resolution(f64::NAN).is_err());
    let conc = Params::new(Control::Concurrency, Some(10.0), 1.0, None, 0.05, None).unwrap();
    assert!(conc.with_resolution(0.5).is_err());
    assert_eq!(conc.resolution_at(7.0), 1.0);
    assert_eq!(rate(1.0).resolution_at(1e6), 1e-3);
}

#[test]
fn an_up_within_the_resolution_of_the_ceiling_holds() {
    let mut g = at(rate(100.0), Profile::Seed, 100.0 - 1e-12, None);
    let o = g.step(1000.0, 0.0);
    assert_eq!(o.decision, Decision::Hold, "{o:?}");
}

#[test]
fn a_swallowed_up_teaches_the_resolution() {
    // Truncation to 2 decimals: safe = 0.75 * 100.006 = 75.0045 reads back
    // as 75.00, which the default would re-decide for ever.
    let mut g = at(rate(1000.0), Profile::Seed, 75.0, Some(100.006));
    let first = g.step(1000.0, 0.0);
    assert_eq!(first.decision, Decision::Up(0.75 * 100.006));
    let _ = g.set_current(trunc2(first.to));
    let second = g.step(1000.0, 0.0);
    assert!(second.to - 75.0 >= 2.0, "the probe applies: {second:?}");
}

#[test]
fn the_committed_offer_is_clamped_or_refused() {
    let mut g = ThrottleGovernor::new(rate(100.0));
    assert_eq!(
        g.set_current(1e12),
        Committed::Clamped {
            from: 1e12,
            to: 100.0
        }
    );
    assert_eq!(g.state().current, 100.0);
    assert_eq!(
        g.set_current(0.5),
        Committed::Clamped { from: 0.5, to: 1.0 }
    );
    assert_eq!(g.state().current, 1.0);
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -3.0] {
        let v = g.set_current(bad);
        assert!(matches!(v, Committed::Invalid { .. }), "{bad}: {v:?}");
        assert_eq!(g.state().current, 1.0, "unchanged after {bad}");
    }
    assert_eq!(g.set_current(50.0), Committed::Adopted);
    // 50 % failures at a clamped 1e12 back off from the ceiling.
    let _ = g.set_current(1e12);
    assert_eq!(g.step(100.0, 50.0).decision, Decision::Down(50.0));
}

#[test]
fn restored_memory_is_clamped_or_refused() {
    let mut g = ThrottleGovernor::new(rate(100.0));
    assert_eq!(
        g.restore_memory(Some(500.0), 2),
        Committed::Clamped {
            from: 500.0,
            to: 100.0
        }
    );
    assert_eq!(g.state().last_bad, Some(100.0));
    assert_eq!(g.state().clean_streak, 2);
    let v = g.restore_memory(Some(f64::NAN), 2);
    assert!(matches!(v, Committed::Invalid { .. }), "{v:?}");
    assert_eq!(g.state().last_bad, None, "a refused memory is slow start");
    assert_eq!(g.state().clean_streak, 0);
    assert_eq!(g.restore_memory(None, 5), Committed::Adopted);
}

/// What the tool does to a written rate before it is read back.
#[derive(Debug, Clone, Copy)]
enum Tool {
    Exact,
    Round2,
    Trunc2,
    UlpLow,
}

impl Tool {
    fn read_back(self, x: f64) -> f64 {
        match self {
            Tool::Exact => x,
            Tool::Round2 => round2(x),
            Tool::Trunc2 => trunc2(x),
            Tool::UlpLow => ulp_low(x),
        }
    }
}

fn tool() -> impl Strategy<Value = Tool> {
    prop_oneof![
        Just(Tool::Exact),
        Just(Tool::Round2),
        Just(Tool::Trunc2),
        Just(Tool::UlpLow)
    ]
}

fn profile() -> impl Strategy<Value = Profile> {
    prop_oneof![Just(Profile::Seed), Just(Profile::Robust)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    /// Every Up moves by at least the resolution (or is a Hold), and 100
    /// clean windows below the ceiling never stall, whatever the tool does
    /// to the value it reads back.
    #[test]
    fn clean_windows_never_stall(
        tool in tool(),
        profile in profile(),
        current in 1.0f64..500.0,
        last_bad in proptest::option::of(1.0f64..800.0),
        ceiling in 600.0f64..5000.0,
    ) {
        let mut g = ThrottleGovernor::with_profile(rate(ceiling), profile);
        let _ = g.set_current(tool.read_back(current));
        let _ = g.restore_memory(last_bad, 0);
        let mut stuck = 0;
        for _ in 0..100 {
            let from = g.state().current;
            // Attempts grow with the offer, as a tool's do: robust holds
            // an offer that adds no successes (its plateau rule).
            let o = g.step(1000.0 * from.max(1.0), 0.0);
            if let Decision::Up(to) = o.decision {
                prop_assert!(to - from >= g.params().resolution_at(from), "{o:?}");
            }
            let committed = tool.read_back(g.state().current);
            let _ = g.set_current(committed);
            if committed <= from && from < ceiling - 1.0 {
                stuck += 1;
            }
        }
        // Learning a swallowed Up costs at most a window or two; robust may
        // settle or gather a window after a move.
        prop_assert!(stuck <= 3, "{stuck} windows without progress");
        let last = g.state().current;
        let top = tool.read_back(ceiling).min(ceiling);
        // Within the (learned) resolution of the highest offer the tool keeps.
        prop_assert!(last >= top - g.resolution_at(top), "ended at {last} of {ceiling}");
    }
}
