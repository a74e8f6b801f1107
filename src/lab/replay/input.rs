//! The replay's input: one JSON Lines line, parsed and validated into a
//! window or a cumulative reading, and what can be wrong with it.
//!
//! Why it exists: a malformed line must stop the replay with a sentence
//! that names the line and the problem (the forms are in [`super`]'s
//! docs); this file is that parser and its errors, apart from the
//! governor that decides each window.
//!
//! What it may touch: [`crate::window`] (a cumulative line is a
//! [`Reading`]); it reads nothing but the text it is given.

use serde::Deserialize;
use thiserror::Error;

use crate::governor::Control;
use crate::window::{Reading, WindowError};

/// What is wrong with one input line.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum LineError {
    /// Not JSON at all.
    #[error("not valid JSON: {message} at column {column}")]
    Syntax {
        /// serde_json's description.
        message: String,
        /// The 1-based column.
        column: usize,
    },
    /// JSON, but not a window object: unknown or duplicate key, wrong type.
    #[error("{message} (column {column})")]
    Shape {
        /// serde_json's description.
        message: String,
        /// The 1-based column.
        column: usize,
    },
    /// Keys of the window form and of the cumulative form on one line.
    #[error(
        "mixes the window form (`attempts`, `failures`) with the cumulative form \
         (`attempts_total`, `successes_total`, `failures_total`); use one form"
    )]
    MixedForms,
    /// Both cumulative first counters.
    #[error("has both `attempts_total` and `successes_total`; give one of them")]
    BothTotals,
    /// A required key is absent.
    #[error("missing `{missing}` ({form} needs {needs})")]
    Missing {
        /// The absent key.
        missing: &'static str,
        /// Which form the line looked like.
        form: &'static str,
        /// What that form needs.
        needs: &'static str,
    },
    /// No counters at all.
    #[error(
        "no counters; expected {{\"attempts\": n, \"failures\": f}} or \
         {{\"attempts_total\": N, \"failures_total\": F}}"
    )]
    NoCounters,
    /// The line's form differs from the input's first line.
    #[error("uses the {this} form, but line {first_line} used the {first} form; one input uses one form")]
    FormChanged {
        /// This line's form.
        this: &'static str,
        /// The first line's form.
        first: &'static str,
        /// The first line's number.
        first_line: usize,
    },
    /// A value below zero.
    #[error("`{field}` is negative ({value})")]
    Negative {
        /// The key.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// A window with more failures than attempts.
    #[error("`{failures_key}` ({failures}) exceeds `{attempts_key}` ({attempts})")]
    FailuresExceedAttempts {
        /// The failures key.
        failures_key: &'static str,
        /// Its value.
        failures: f64,
        /// The attempts key.
        attempts_key: &'static str,
        /// Its value.
        attempts: f64,
    },
    /// Cumulative counters whose failures grew more than their attempts.
    #[error(
        "since line {since}, failures grew by {failures} but resolved attempts only by \
         {attempts}; the readings are inconsistent"
    )]
    InconsistentDelta {
        /// The line of the previous reading.
        since: usize,
        /// The failure delta.
        failures: f64,
        /// The attempt delta.
        attempts: f64,
    },
    /// A fractional `current` for an integer knob.
    #[error("`current` must be a whole number for --control concurrency (got {0})")]
    CurrentNotInteger(f64),
    /// Any other window problem.
    #[error("{0}")]
    Window(WindowError),
}

/// One input line as written, before it is classified.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an object such as {\"attempts\": 200, \"failures\": 3}"
)]
pub(super) struct RawLine {
    attempts: Option<f64>,
    failures: Option<f64>,
    attempts_total: Option<f64>,
    successes_total: Option<f64>,
    failures_total: Option<f64>,
    current: Option<f64>,
}

/// The two input forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Form {
    Window,
    Cumulative,
}

impl Form {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Form::Window => "window",
            Form::Cumulative => "cumulative",
        }
    }
}

/// The counters of one line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Counters {
    /// One window's deltas.
    Window { attempts: f64, failures: f64 },
    /// A cumulative reading, timestamped with its line number (each line is
    /// one tick).
    Total(Reading),
}

impl Counters {
    pub(super) fn form(self) -> Form {
        match self {
            Counters::Window { .. } => Form::Window,
            Counters::Total(_) => Form::Cumulative,
        }
    }
}

/// One validated input line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Entry {
    pub(super) counters: Counters,
    pub(super) current: Option<f64>,
}

/// Parses and validates one non-blank line.
pub(super) fn parse_line(text: &str, line: usize, control: Control) -> Result<Entry, LineError> {
    let at = line as f64;
    let raw: RawLine = serde_json::from_str(text).map_err(json_problem)?;
    let window = raw.attempts.is_some() || raw.failures.is_some();
    let cumulative = raw.attempts_total.is_some()
        || raw.successes_total.is_some()
        || raw.failures_total.is_some();
    let counters = match (window, cumulative) {
        (true, true) => return Err(LineError::MixedForms),
        (false, false) => return Err(LineError::NoCounters),
        (true, false) => {
            let missing = |missing| LineError::Missing {
                missing,
                form: "a window line",
                needs: "`attempts` and `failures`",
            };
            let attempts = raw.attempts.ok_or_else(|| missing("attempts"))?;
            let failures = raw.failures.ok_or_else(|| missing("failures"))?;
            non_negative("attempts", attempts)?;
            non_negative("failures", failures)?;
            failures_within_attempts(("failures", failures), ("attempts", attempts))?;
            Counters::Window { attempts, failures }
        }
        (false, true) => {
            let missing = |missing| LineError::Missing {
                missing,
                form: "a cumulative line",
                needs: "`failures_total` and one of `attempts_total` or `successes_total`",
            };
            let failures = raw
                .failures_total
                .ok_or_else(|| missing("failures_total"))?;
            non_negative("failures_total", failures)?;
            match (raw.attempts_total, raw.successes_total) {
                (Some(_), Some(_)) => return Err(LineError::BothTotals),
                (None, None) => return Err(missing("attempts_total")),
                (Some(attempts), None) => {
                    non_negative("attempts_total", attempts)?;
                    failures_within_attempts(
                        ("failures_total", failures),
                        ("attempts_total", attempts),
                    )?;
                    Counters::Total(Reading::resolved(at, attempts, failures))
                }
                (None, Some(successes)) => {
                    non_negative("successes_total", successes)?;
                    Counters::Total(Reading::successes(at, successes, failures))
                }
            }
        }
    };
    if let Some(current) = raw.current {
        non_negative("current", current)?;
        if control.is_integer() && current.fract() != 0.0 {
            return Err(LineError::CurrentNotInteger(current));
        }
    }
    Ok(Entry {
        counters,
        current: raw.current,
    })
}

/// JSON cannot carry NaN or infinities, so only the sign needs checking.
fn non_negative(field: &'static str, value: f64) -> Result<(), LineError> {
    if value < 0.0 {
        return Err(LineError::Negative { field, value });
    }
    Ok(())
}

/// A line's failures may not exceed its attempts (each a `(key, value)`).
fn failures_within_attempts(
    (failures_key, failures): (&'static str, f64),
    (attempts_key, attempts): (&'static str, f64),
) -> Result<(), LineError> {
    if failures > attempts {
        return Err(LineError::FailuresExceedAttempts {
            failures_key,
            failures,
            attempts_key,
            attempts,
        });
    }
    Ok(())
}

/// serde_json's message without its " at line 1 column N" suffix (each input
/// line is parsed alone, so its "line 1" would mislead).
fn json_problem(e: serde_json::Error) -> LineError {
    let column = e.column();
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), column);
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
    match e.classify() {
        serde_json::error::Category::Data => LineError::Shape { message, column },
        _ => LineError::Syntax { message, column },
    }
}
