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
mod tests;
