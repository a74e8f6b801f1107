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
//! the target loop decides, then hands the value here on a separate task.
//!
//! - [`http`]: the generic templated HTTP write and JSON read-back.

pub mod http;

use std::time::Duration;

use thiserror::Error;

use crate::config::ControlConfig;
use crate::signal::{SignalError, Source};

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
        }
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

/// Where the committed offer is read from.
#[derive(Debug, Clone)]
enum ReadBack {
    Http(http::JsonReadBack),
    Signal(Box<Source>),
}

/// Writes offers for one target and confirms them.
#[derive(Debug, Clone)]
pub struct Actuator {
    writer: http::HttpWriter,
    read_back: ReadBack,
    integer: bool,
    confirm_attempts: u32,
    confirm_interval: Duration,
    write_attempts: u32,
}

impl Actuator {
    /// Builds the actuator; `signal` serves as read-back when the control has none.
    pub fn new(
        cfg: &ControlConfig,
        integer: bool,
        signal: &Source,
        client: reqwest::Client,
    ) -> Result<Self, ControlError> {
        let ControlConfig::Http(h) = cfg;
        let read_back = match &h.read_back {
            Some(rb) => {
                let creds = crate::auth::Credentials::resolve(&h.auth)
                    .map_err(|e| ControlError::Config(format!("auth: {e}")))?;
                ReadBack::Http(http::JsonReadBack::new(
                    rb,
                    h.timeout,
                    creds,
                    client.clone(),
                ))
            }
            None if signal.has_offer() => ReadBack::Signal(Box::new(signal.clone())),
            None => {
                return Err(ControlError::Config(
                    "no read-back: give [control.read_back] or signal.offer".into(),
                ))
            }
        };
        Ok(Actuator {
            writer: http::HttpWriter::new(h, integer, client)?,
            read_back,
            integer,
            confirm_attempts: h.confirm_attempts,
            confirm_interval: h.confirm_interval,
            write_attempts: h.write_attempts,
        })
    }

    /// Reads the committed offer once.
    pub async fn committed(&self) -> Result<f64, ControlError> {
        match &self.read_back {
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
        let mut last = WriteOutcome::Failed(ControlError::Config("no write attempted".into()));
        for attempt in 1..=self.write_attempts {
            if let Err(e) = self.writer.write(value).await {
                last = WriteOutcome::Failed(e);
                tokio::time::sleep(self.confirm_interval).await;
                continue;
            }
            let mut committed = None;
            let mut error = None;
            for _ in 0..self.confirm_attempts {
                match self.committed().await {
                    Ok(v) if self.matches(v, value) => {
                        return WriteOutcome::Confirmed { attempts: attempt }
                    }
                    Ok(v) => committed = Some(v),
                    Err(e) => error = Some(e),
                }
                tokio::time::sleep(self.confirm_interval).await;
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
