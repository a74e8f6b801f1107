//! Counter windows: two cumulative readings become one trailing window.
//!
//! Why it exists: the attempt plane is only honest when the fraction comes
//! from counter *deltas* over a window, never from lifetime totals. Turning
//! readings into windows has its own traps (the first reading, counter resets
//! after a tool restart, counters scraped inconsistently, absurd values), so
//! they are handled here once, purely: no clock (the caller supplies each
//! reading's timestamp) and no I/O.
//!
//! Values are `f64` because the Prometheus exposition format carries floats.
//! Deltas are exact while totals stay below 2^53 (about 9 * 10^15 attempts);
//! beyond that they are rounded to the nearest representable value, never
//! wrapped or panicked on.

use thiserror::Error;

/// How a reading's counters are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// (resolved attempts, failures).
    Resolved,
    /// (successes, failures): attempts = successes + failures.
    Successes,
}

/// One read of a tool's cumulative counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// When the reading was taken, in seconds on the caller's monotonic clock.
    pub at_secs: f64,
    form: Form,
    /// First counter: resolved attempts, or successes.
    first: f64,
    /// Failed attempts.
    failures: f64,
}

impl Reading {
    /// A reading of (resolved attempts, failures).
    pub fn resolved(at_secs: f64, attempts: f64, failures: f64) -> Self {
        Reading {
            at_secs,
            form: Form::Resolved,
            first: attempts,
            failures,
        }
    }

    /// A reading of (successes, failures).
    pub fn successes(at_secs: f64, successes: f64, failures: f64) -> Self {
        Reading {
            at_secs,
            form: Form::Successes,
            first: successes,
            failures,
        }
    }

    /// Resolved attempts (successes + failures in the successes form).
    pub fn attempts(&self) -> f64 {
        match self.form {
            Form::Resolved => self.first,
            Form::Successes => self.first + self.failures,
        }
    }

    /// Failed attempts.
    pub fn failures(&self) -> f64 {
        self.failures
    }

    /// Checks that the reading can be used at all.
    pub fn validate(&self) -> Result<(), WindowError> {
        let first_name = match self.form {
            Form::Resolved => "attempts",
            Form::Successes => "successes",
        };
        for (field, v) in [(first_name, self.first), ("failures", self.failures)] {
            if !v.is_finite() {
                return Err(WindowError::NotFinite { field, value: v });
            }
            if v < 0.0 {
                return Err(WindowError::Negative { field, value: v });
            }
        }
        if !self.at_secs.is_finite() {
            return Err(WindowError::NotFinite {
                field: "timestamp",
                value: self.at_secs,
            });
        }
        if self.form == Form::Resolved && self.failures > self.first {
            return Err(WindowError::FailuresExceedAttempts {
                failures: self.failures,
                attempts: self.first,
            });
        }
        Ok(())
    }
}

/// One trailing window: the deltas between two readings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Resolved attempts in the window.
    pub attempts: f64,
    /// Failed attempts in the window.
    pub failures: f64,
    /// The window's length in seconds.
    pub secs: f64,
}

impl Window {
    /// `failures / attempts`, or `None` when the window had no traffic.
    pub fn frac(&self) -> Option<f64> {
        (self.attempts > 0.0).then(|| self.failures / self.attempts)
    }
}

/// What one reading produced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WindowOutcome {
    /// The first reading: it only sets the baseline.
    Baseline,
    /// A counter went down: the window is discarded and the baseline rebased.
    CounterReset,
    /// A window (which may have zero attempts: no traffic).
    Window(Window),
}

/// A reading that cannot form a window. The baseline is left as it was,
/// except for [`WindowError::InconsistentDelta`], which rebases.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum WindowError {
    /// NaN or infinite.
    #[error("counter `{field}` is not finite ({value})")]
    NotFinite {
        /// Which counter.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// Below zero.
    #[error("counter `{field}` is negative ({value})")]
    Negative {
        /// Which counter.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// A cumulative reading with more failures than attempts.
    #[error("failures ({failures}) exceed attempts ({attempts}); check the selectors")]
    FailuresExceedAttempts {
        /// Failures total.
        failures: f64,
        /// Attempts total.
        attempts: f64,
    },
    /// The window's failure delta exceeds its attempt delta (counters read
    /// at different moments, or mismatched selectors). The baseline rebases.
    #[error(
        "the window's failures ({failures}) exceed its attempts ({attempts}); window discarded"
    )]
    InconsistentDelta {
        /// Failure delta.
        failures: f64,
        /// Attempt delta.
        attempts: f64,
    },
    /// The reading is older than the baseline.
    #[error("reading at {at}s is older than the baseline at {baseline}s")]
    TimeWentBackwards {
        /// This reading's time.
        at: f64,
        /// The baseline's time.
        baseline: f64,
    },
}

impl WindowError {
    /// A bounded label for metrics.
    pub fn error_type(&self) -> &'static str {
        match self {
            WindowError::NotFinite { .. } => "non_finite",
            WindowError::Negative { .. } => "negative",
            WindowError::FailuresExceedAttempts { .. } | WindowError::InconsistentDelta { .. } => {
                "inconsistent"
            }
            WindowError::TimeWentBackwards { .. } => "time_backwards",
        }
    }
}

/// Keeps the baseline reading and turns each new reading into a window.
#[derive(Debug, Clone, Default)]
pub struct WindowTracker {
    baseline: Option<Reading>,
}

impl WindowTracker {
    /// The current baseline, if any.
    pub fn baseline(&self) -> Option<&Reading> {
        self.baseline.as_ref()
    }

    /// Forgets the baseline: the next reading only sets it again.
    pub fn reset(&mut self) {
        self.baseline = None;
    }

    /// Whether `reading` would be a counter reset against the baseline.
    pub fn would_reset(&self, reading: &Reading) -> bool {
        self.baseline.is_some_and(|base| {
            base.form != reading.form
                || reading.first < base.first
                || reading.failures < base.failures
        })
    }

    /// Folds one reading. On success the baseline advances to it.
    pub fn observe(&mut self, reading: Reading) -> Result<WindowOutcome, WindowError> {
        reading.validate()?;
        let Some(base) = self.baseline else {
            self.baseline = Some(reading);
            return Ok(WindowOutcome::Baseline);
        };
        if reading.at_secs < base.at_secs {
            return Err(WindowError::TimeWentBackwards {
                at: reading.at_secs,
                baseline: base.at_secs,
            });
        }
        self.baseline = Some(reading);
        if base.form != reading.form
            || reading.first < base.first
            || reading.failures < base.failures
        {
            return Ok(WindowOutcome::CounterReset);
        }
        let attempts = reading.attempts() - base.attempts();
        let failures = reading.failures - base.failures;
        if failures > attempts {
            return Err(WindowError::InconsistentDelta { failures, attempts });
        }
        Ok(WindowOutcome::Window(Window {
            attempts,
            failures,
            secs: reading.at_secs - base.at_secs,
        }))
    }
}

#[cfg(test)]
mod tests {
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
}
