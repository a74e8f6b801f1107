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
//! - [`pull`]: nothing is written; the tool pulls its offer, and pulls
//!   confirm it.
//! - Tool controls (Locust, k6, Goose) live in [`crate::adapters`], one
//!   file per tool; each writes through the tool's own API and reads the
//!   committed value back from it.

pub mod http;
pub mod pull;

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
    /// The tool adapter that writes also reads back.
    Tool,
}

/// What sends a write.
#[derive(Debug, Clone)]
enum Writer {
    Http(http::HttpWriter),
    Locust(crate::adapters::locust::LocustControl),
    K6(crate::adapters::k6::K6Control),
    Goose(crate::adapters::goose::GooseControl),
    Pull(pull::PullKnob),
}

impl Writer {
    async fn write(&self, value: f64) -> Result<(), ControlError> {
        match self {
            Writer::Http(w) => w.write(value).await,
            Writer::Locust(l) => l.write(value).await,
            Writer::K6(k) => k.write(value).await,
            Writer::Goose(g) => g.write(value).await,
            Writer::Pull(p) => p.write(value).await,
        }
    }

    async fn committed(&self) -> Result<f64, ControlError> {
        match self {
            Writer::Http(_) => Err(ControlError::Config(
                "the http control reads back through read_back or signal.offer".into(),
            )),
            Writer::Locust(l) => l.committed().await,
            Writer::K6(k) => k.committed().await,
            Writer::Goose(g) => g.committed().await,
            Writer::Pull(p) => p.committed().await,
        }
    }
}

/// Writes offers for one target and confirms them.
#[derive(Debug, Clone)]
pub struct Actuator {
    writer: Writer,
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
        let h = match cfg {
            ControlConfig::Http(h) => h,
            ControlConfig::Pull(p) => return Self::pull(p, integer, signal, client),
            tool => return Ok(Self::tool(tool, integer, client)),
        };
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
            writer: Writer::Http(http::HttpWriter::new(h, integer, client)?),
            read_back,
            integer,
            confirm_attempts: h.confirm_attempts,
            confirm_interval: h.confirm_interval,
            write_attempts: h.write_attempts,
        })
    }

    /// A tool adapter's actuator: it writes and reads back through the tool.
    fn tool(cfg: &ControlConfig, integer: bool, client: reqwest::Client) -> Self {
        use crate::adapters::{goose, k6, locust};
        let window = crate::config::TargetConfig::default_window();
        let (writer, confirm_attempts, confirm_interval, write_attempts) = match cfg {
            ControlConfig::Locust(l) => (
                Writer::Locust(locust::LocustControl::new(l, window, client)),
                l.confirm_attempts,
                l.confirm_interval,
                l.write_attempts,
            ),
            ControlConfig::K6(k) => (
                Writer::K6(k6::K6Control::new(k, client)),
                k.confirm_attempts,
                k.confirm_interval,
                k.write_attempts,
            ),
            ControlConfig::Goose(g) => (
                Writer::Goose(goose::GooseControl::new(g)),
                g.confirm_attempts,
                g.confirm_interval,
                g.write_attempts,
            ),
            ControlConfig::Http(_) | ControlConfig::Pull(_) => {
                unreachable!("http and pull are built by Actuator::new")
            }
        };
        Actuator {
            writer,
            read_back: ReadBack::Tool,
            integer,
            confirm_attempts,
            confirm_interval,
            write_attempts,
        }
    }

    /// The pull control's actuator: it publishes, and confirms by the
    /// tool's own report when one is configured, else by pull evidence.
    fn pull(
        p: &crate::config::pull::PullControlConfig,
        integer: bool,
        signal: &Source,
        client: reqwest::Client,
    ) -> Result<Self, ControlError> {
        let read_back = match &p.read_back {
            Some(rb) => {
                let creds = crate::auth::Credentials::resolve(&p.auth)
                    .map_err(|e| ControlError::Config(format!("auth: {e}")))?;
                ReadBack::Http(http::JsonReadBack::new(rb, p.timeout, creds, client))
            }
            None if signal.has_offer() => ReadBack::Signal(Box::new(signal.clone())),
            None => ReadBack::Tool,
        };
        Ok(Actuator {
            writer: Writer::Pull(pull::PullKnob::new(p, integer)),
            read_back,
            integer,
            confirm_attempts: p.confirm_attempts,
            confirm_interval: p.confirm_interval,
            write_attempts: p.write_attempts,
        })
    }

    /// Gives a pull control its identity on the controller's board (the
    /// target, and for a group member its name and address); other
    /// controls are unchanged.
    pub fn with_pull(
        mut self,
        board: &pull::PullBoard,
        target: &str,
        member: Option<(&str, Option<&str>)>,
    ) -> Self {
        if let Writer::Pull(k) = &mut self.writer {
            k.bind(board, target, member.map(|m| m.0), member.and_then(|m| m.1));
        }
        self
    }

    /// Tells the actuator the target's window (Locust sizes its default
    /// spawn rate so a new user count lands within about one window).
    pub fn with_window(mut self, window: Duration) -> Self {
        if let Writer::Locust(l) = &mut self.writer {
            l.set_window(window);
        }
        self
    }

    /// Reads the committed offer once.
    pub async fn committed(&self) -> Result<f64, ControlError> {
        match &self.read_back {
            ReadBack::Tool => self.writer.committed().await,
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
                let permanent = matches!(
                    e,
                    ControlError::AboveMax { .. } | ControlError::Unsupported(_)
                );
                last = WriteOutcome::Failed(e);
                if permanent {
                    break; // Retrying cannot help; report it now.
                }
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
