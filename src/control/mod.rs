//! Control: where offers go, and how they are confirmed.
//!
//! Why it exists: a write is only useful once the tool says it took effect.
//! This stage writes a value through the tool's admin API and reads the
//! committed value back (from a read-back endpoint, or from the signal's
//! offer gauge) until it matches, with bounded retries. The result is a
//! [`WriteOutcome`] (`confirmed`, `failed`, `unconfirmed`); nothing is ever
//! assumed to have landed.
//!
//! What it may touch: the network, always with a timeout. It never decides:
//! the engine decides, then hands the value to the one writer task
//! (`engine`), which calls [`Actuator::write_confirmed`].
//!
//! - [`KnobApi`]: what every control kind implements (send a write, read
//!   the committed value); [`Actuator`] confirms over any of them.
//! - [`http`]: the generic templated HTTP write and JSON read-back.
//! - [`pull`]: nothing is written; the tool pulls its offer from the
//!   [`pull::PullBoard`] (served by the HTTP surface, `http::pull`), and pulls confirm it.
//! - Tool controls (Locust, k6, Goose) live in `adapters`, one
//!   file per tool; each writes through the tool's own API and reads the
//!   committed value back from it.

pub mod http;
pub mod pull;

use std::sync::Arc;
use std::time::Duration;

use thiserror::Error;

use crate::signal::{BoxFuture, CounterSource, SignalError};

/// Why a write or read-back failed.
#[derive(Debug, Error)]
pub enum ControlError {
    /// The request did not finish in time.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// Could not connect.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The tool refused the write or read.
    #[error("HTTP status {status}: {body}")]
    Status {
        /// The status code.
        status: u16,
        /// The start of the response body, for the log.
        body: String,
    },
    /// Another transport problem.
    #[error("request failed: {0}")]
    Transport(String),
    /// The read-back response did not hold a number where expected.
    #[error("read-back: {0}")]
    ReadBack(String),
    /// Reading the committed offer through the signal failed.
    #[error("read-back through the signal: {0}")]
    Signal(#[from] SignalError),
    /// The config cannot be turned into a writer.
    #[error("{0}")]
    Config(String),
    /// The tool answered, but refused the write.
    #[error("{tool} refused the write: {message}")]
    Refused {
        /// The tool's name.
        tool: &'static str,
        /// Its explanation, and what to do.
        message: String,
    },
    /// The wanted value is above what the tool allows (k6's `vus-max`).
    #[error("{wanted} VUs is above k6's vus-max of {max}: set `ceiling` to at most {max}, or raise maxVUs in the externally-controlled scenario")]
    AboveMax {
        /// The value the governor wanted.
        wanted: i64,
        /// The tool's maximum.
        max: i64,
    },
    /// The tool's version cannot change the knob live at all.
    #[error("{0}")]
    Unsupported(String),
    /// Pull control: no client has pulled the offer (recently enough).
    #[error("not pulled: {0}")]
    NotPulled(String),
}

impl ControlError {
    /// A bounded label for metrics.
    pub fn error_type(&self) -> &'static str {
        match self {
            ControlError::Timeout(_) => "timeout",
            ControlError::Connect(_) => "connect",
            ControlError::Status { status, .. } if *status < 500 => "http_4xx",
            ControlError::Status { .. } => "http_5xx",
            ControlError::Transport(_) => "transport",
            ControlError::ReadBack(_) => "read_back",
            ControlError::Signal(_) => "read_back",
            ControlError::Config(_) => "config",
            ControlError::Refused { .. } => "refused",
            ControlError::AboveMax { .. } => "above_max",
            ControlError::Unsupported(_) => "unsupported",
            ControlError::NotPulled(_) => "not_pulled",
        }
    }

    /// Whether this read-back error means the tool is gone: a pulling tool
    /// that stopped asking (the window then has no valid signal, and the
    /// signal-loss policy applies).
    pub fn tool_gone(&self) -> bool {
        matches!(self, ControlError::NotPulled(_))
    }
}

/// How one confirmed write ended.
#[derive(Debug)]
pub enum WriteOutcome {
    /// The tool reports the written value.
    Confirmed {
        /// Writes it took.
        attempts: u32,
    },
    /// Every write attempt was refused or failed.
    Failed(ControlError),
    /// The tool accepted the write but reports another value.
    Unconfirmed {
        /// The value the tool reports (None when the read-back failed).
        committed: Option<f64>,
        /// The last read-back error, if any.
        error: Option<ControlError>,
    },
}

impl WriteOutcome {
    /// `confirmed`, `failed` or `unconfirmed`, for metrics.
    pub fn result(&self) -> &'static str {
        match self {
            WriteOutcome::Confirmed { .. } => "confirmed",
            WriteOutcome::Failed(_) => "failed",
            WriteOutcome::Unconfirmed { .. } => "unconfirmed",
        }
    }
}

/// Where offers go: one implementation per control kind (the templated
/// HTTP knob, and each tool adapter). It only sends and reads; the
/// [`Actuator`] confirms.
pub trait KnobApi: Send + Sync + std::fmt::Debug {
    /// Sends one write of `value` (no confirmation: the Actuator confirms).
    fn write(&self, value: f64) -> BoxFuture<'_, Result<(), ControlError>>;
    /// Reads the committed value once, from the tool's own report.
    fn committed(&self) -> BoxFuture<'_, Result<f64, ControlError>>;
}

/// Implements [`KnobApi`] for a type with inherent `async fn write(&self,
/// f64)` and `async fn committed(&self)` of the trait's shapes.
#[macro_export]
macro_rules! knob_api {
    ($ty:ty) => {
        impl $crate::control::KnobApi for $ty {
            fn write(
                &self,
                value: f64,
            ) -> $crate::signal::BoxFuture<'_, Result<(), $crate::control::ControlError>> {
                Box::pin(<$ty>::write(self, value))
            }
            fn committed(
                &self,
            ) -> $crate::signal::BoxFuture<'_, Result<f64, $crate::control::ControlError>> {
                Box::pin(<$ty>::committed(self))
            }
        }
    };
}

/// Where the committed offer is read from.
#[derive(Debug, Clone)]
pub enum ReadBack {
    /// A JSON read-back endpoint (`[control.read_back]`).
    Http(http::JsonReadBack),
    /// The signal's offer gauge (`signal.offer`).
    Signal(Arc<dyn CounterSource>),
    /// The knob itself reads back (the tool adapters).
    Knob,
}

/// How hard a write is confirmed.
#[derive(Debug, Clone, Copy)]
pub struct Confirm {
    /// Read-backs per write.
    pub confirm_attempts: u32,
    /// Pause between read-backs.
    pub confirm_interval: Duration,
    /// Writes before giving up.
    pub write_attempts: u32,
}

/// Writes offers for one target and confirms them. It owns the read-back
/// rule ([`Actuator::matches`]): a write counts only once the tool reports it.
#[derive(Debug, Clone)]
pub struct Actuator {
    knob: Arc<dyn KnobApi>,
    read_back: ReadBack,
    integer: bool,
    confirm: Confirm,
}

impl Actuator {
    /// An actuator over `knob`, confirmed through `read_back`.
    pub fn new(
        knob: Arc<dyn KnobApi>,
        read_back: ReadBack,
        integer: bool,
        confirm: Confirm,
    ) -> Self {
        Actuator {
            knob,
            read_back,
            integer,
            confirm,
        }
    }

    /// Whether the committed offer is read by a request of its own (else it
    /// comes with the signal's counters, as `Counters::offer`).
    pub fn reads_separately(&self) -> bool {
        !matches!(self.read_back, ReadBack::Signal(_))
    }

    /// Reads the committed offer once.
    pub async fn committed(&self) -> Result<f64, ControlError> {
        match &self.read_back {
            ReadBack::Knob => self.knob.committed().await,
            ReadBack::Http(rb) => rb.read().await,
            ReadBack::Signal(source) => {
                let c = source.read().await?;
                c.offer
                    .ok_or_else(|| ControlError::ReadBack("the signal has no offer gauge".into()))
            }
        }
    }

    /// Whether `committed` equals `wanted` for this knob.
    pub fn matches(&self, committed: f64, wanted: f64) -> bool {
        same_offer(self.integer, committed, wanted)
    }

    /// Writes `value` and confirms it by read-back, with bounded retries.
    pub async fn write_confirmed(&self, value: f64) -> WriteOutcome {
        let c = self.confirm;
        let mut last = WriteOutcome::Failed(ControlError::Config("no write attempted".into()));
        for attempt in 1..=c.write_attempts {
            if let Err(e) = self.knob.write(value).await {
                let permanent = matches!(
                    e,
                    ControlError::AboveMax { .. } | ControlError::Unsupported(_)
                );
                last = WriteOutcome::Failed(e);
                if permanent {
                    break; // Retrying cannot help; report it now.
                }
                tokio::time::sleep(c.confirm_interval).await;
                continue;
            }
            let mut committed = None;
            let mut error = None;
            for _ in 0..c.confirm_attempts {
                match self.committed().await {
                    Ok(v) if self.matches(v, value) => {
                        return WriteOutcome::Confirmed { attempts: attempt }
                    }
                    Ok(v) => committed = Some(v),
                    Err(e) => error = Some(e),
                }
                tokio::time::sleep(c.confirm_interval).await;
            }
            last = WriteOutcome::Unconfirmed { committed, error };
        }
        last
    }
}

/// Equality of offers: within rounding for integer knobs, and within a
/// relative 1e-6 for rates (tools may store rates with less precision).
pub fn same_offer(integer: bool, a: f64, b: f64) -> bool {
    if integer {
        (a - b).abs() < 0.5
    } else {
        (a - b).abs() <= 1e-9_f64.max(1e-6 * b.abs())
    }
}

/// Formats an offer for a request: an integer for integer knobs, the
/// shortest exact decimal for rates.
pub fn format_offer(integer: bool, value: f64) -> String {
    if integer {
        format!("{}", value.round() as i64)
    } else {
        format!("{value}")
    }
}
