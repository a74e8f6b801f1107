use super::*;

fn tracker_with(r: Reading) -> WindowTracker {
    let mut t = WindowTracker::default();
    assert_eq!(t.observe(r), Ok(WindowOutcome::Baseline));
    t
}

#[test]
fn first_reading_sets_baseline_only() {
    let mut t = WindowTracker::default();
    assert_eq!(
        t.observe(Reading::resolved(0.0, 100.0, 5.0)),
        Ok(WindowOutcome::Baseline)
    );
    assert_eq!(t.baseline().unwrap().attempts(), 100.0);
}

#[test]
fn deltas_form_the_window() {
    let mut t = tracker_with(Reading::resolved(10.0, 100.0, 5.0));
    let w = t.observe(Reading::resolved(12.0, 300.0, 15.0)).unwrap();
    assert_eq!(
        w,
        WindowOutcome::Window(Window {
            attempts: 200.0,
            failures: 10.0,
            secs: 2.0
        })
    );
    if let WindowOutcome::Window(w) = w {
        assert_eq!(w.frac(), Some(0.05));
    }
}

#[test]
fn successes_form_adds_failures() {
    let mut t = tracker_with(Reading::successes(0.0, 90.0, 10.0));
    let w = t.observe(Reading::successes(1.0, 170.0, 30.0)).unwrap();
    assert_eq!(
        w,
        WindowOutcome::Window(Window {
            attempts: 100.0,
            failures: 20.0,
            secs: 1.0
        })
    );
}

#[test]
fn zero_traffic_window_has_no_fraction() {
    let mut t = tracker_with(Reading::resolved(0.0, 50.0, 1.0));
    match t.observe(Reading::resolved(2.0, 50.0, 1.0)).unwrap() {
        WindowOutcome::Window(w) => {
            assert_eq!(w.attempts, 0.0);
            assert_eq!(w.frac(), None);
        }
        other => panic!("expected a window, got {other:?}"),
    }
}

#[test]
fn any_counter_down_is_a_reset_and_rebases() {
    for (a, f) in [(10.0, 5.0), (500.0, 1.0), (0.0, 0.0)] {
        let mut t = tracker_with(Reading::resolved(0.0, 100.0, 5.0));
        assert_eq!(
            t.observe(Reading::resolved(1.0, a, f)),
            Ok(WindowOutcome::CounterReset),
            "({a}, {f})"
        );
        assert_eq!(t.baseline().unwrap().attempts(), a);
        // The next window is measured from the rebased reading.
        match t
            .observe(Reading::resolved(2.0, a + 10.0, f + 1.0))
            .unwrap()
        {
            WindowOutcome::Window(w) => assert_eq!((w.attempts, w.failures), (10.0, 1.0)),
            other => panic!("expected a window, got {other:?}"),
        }
    }
}

#[test]
fn successes_going_down_is_a_reset_even_if_sum_rises() {
    let mut t = tracker_with(Reading::successes(0.0, 100.0, 0.0));
    assert_eq!(
        t.observe(Reading::successes(1.0, 50.0, 60.0)),
        Ok(WindowOutcome::CounterReset)
    );
}

#[test]
fn inconsistent_and_invalid_readings_are_errors() {
    let mut t = WindowTracker::default();
    assert!(matches!(
        t.observe(Reading::resolved(0.0, 5.0, 6.0)),
        Err(WindowError::FailuresExceedAttempts { .. })
    ));
    assert!(
        t.baseline().is_none(),
        "an invalid reading never becomes a baseline"
    );
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(matches!(
            t.observe(Reading::resolved(0.0, bad, 0.0)),
            Err(WindowError::NotFinite { .. })
        ));
        assert!(matches!(
            t.observe(Reading::resolved(0.0, 10.0, bad)),
            Err(WindowError::NotFinite { .. })
        ));
    }
    assert!(matches!(
        t.observe(Reading::resolved(0.0, -1.0, 0.0)),
        Err(WindowError::Negative { .. })
    ));
    assert!(matches!(
        t.observe(Reading::successes(0.0, 1.0, -0.5)),
        Err(WindowError::Negative { .. })
    ));
    assert!(t.baseline().is_none());
}

#[test]
fn delta_failures_above_delta_attempts_is_an_error_and_rebases() {
    let mut t = tracker_with(Reading::resolved(0.0, 100.0, 0.0));
    assert!(matches!(
        t.observe(Reading::resolved(1.0, 105.0, 50.0)),
        Err(WindowError::InconsistentDelta { .. })
    ));
    assert_eq!(t.baseline().unwrap().attempts(), 105.0);
}

#[test]
fn time_going_backwards_is_an_error_and_keeps_baseline() {
    let mut t = tracker_with(Reading::resolved(5.0, 100.0, 0.0));
    assert!(matches!(
        t.observe(Reading::resolved(4.0, 200.0, 0.0)),
        Err(WindowError::TimeWentBackwards { .. })
    ));
    assert_eq!(t.baseline().unwrap().at_secs, 5.0);
}

#[test]
fn large_u64_values_are_exact_below_2_pow_53() {
    let big = (1u64 << 53) as f64 - 1_000.0;
    let mut t = tracker_with(Reading::resolved(0.0, big, big - 500.0));
    match t
        .observe(Reading::resolved(1.0, big + 999.0, big - 490.0))
        .unwrap()
    {
        WindowOutcome::Window(w) => assert_eq!((w.attempts, w.failures), (999.0, 10.0)),
        other => panic!("expected a window, got {other:?}"),
    }
}

#[test]
fn huge_u64_values_never_panic_or_wrap() {
    let max = u64::MAX as f64;
    let mut t = tracker_with(Reading::resolved(0.0, max / 2.0, 0.0));
    match t.observe(Reading::resolved(1.0, max, 0.0)).unwrap() {
        WindowOutcome::Window(w) => {
            assert!(w.attempts.is_finite() && w.attempts > 0.0);
            assert_eq!(w.frac(), Some(0.0));
        }
        other => panic!("expected a window, got {other:?}"),
    }
    // Going from u64::MAX back down is a reset, not a wrap-around.
    assert_eq!(
        t.observe(Reading::resolved(2.0, 3.0, 0.0)),
        Ok(WindowOutcome::CounterReset)
    );
}
