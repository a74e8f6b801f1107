//! Signal: where a target's cumulative attempt and failure counters come from.
//!
//! Why it exists: every load tool exposes its counters differently, and each
//! way can fail (timeouts, garbage, missing series, resets). This stage turns
//! "read the tool" into one value, [`Counters`], or one bounded
//! [`SignalError`] whose `error_type` labels the metric. It never guesses: a
//! selector that matches nothing, or a line that cannot be parsed, is an
//! error and never a zero.
//!
//! What it may touch: the network (through the shared HTTP client), always
//! with a timeout and a body-size limit.
//!
//! - The text it parses (the exposition format, selectors, PromQL text)
//!   is [`crate::promtext`]; credentials and TLS are [`crate::auth`].
//! - [`prometheus`]: scraping a text endpoint.
//! - [`http`]: the bounded HTTP fetch shared by every source.
//! - Tool-specific sources (Locust, k6, Goose) live in `adapters`,
//!   one file per tool beside that tool's control; each implements
//!   [`CounterSource`]. Which one a target uses is decided once, in
//!   `engine::build`.
//! - [`promql`]: instant queries against a Prometheus-compatible API.
//! - [`push`]: Prometheus text pushed to the controller, Pushgateway-style.

pub mod http;
pub mod latency;
pub mod prometheus;
pub mod promql;
pub mod push;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use thiserror::Error;

use crate::window::Reading;

/// One read of a tool's cumulative counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counters {
    /// Resolved attempts, or successes when `successes_form` is set.
    pub first: f64,
    /// Failed attempts.
    pub failures: f64,
    /// Whether `first` counts successes (attempts = successes + failures).
    pub successes_form: bool,
    /// The committed offer, when the source exposes it.
    pub offer: Option<f64>,
    /// How far the counters may trail the load (the source's own estimate);
    /// None when the source cannot tell.
    pub lag: Option<Duration>,
}

impl Counters {
    /// The reading for the window module, stamped by the caller's clock.
    pub fn reading(&self, at_secs: f64) -> Reading {
        if self.successes_form {
            Reading::successes(at_secs, self.first, self.failures)
        } else {
            Reading::resolved(at_secs, self.first, self.failures)
        }
    }
}

/// Why a signal read failed. Each variant maps to a bounded `error_type`.
#[derive(Debug, Error)]
pub enum SignalError {
    /// The request did not finish in time.
    #[error("timed out after {0:?}")]
    Timeout(std::time::Duration),
    /// Could not connect.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// A non-2xx answer.
    #[error("HTTP status {0}")]
    Status(u16),
    /// The body exceeded the size limit.
    #[error("body larger than the {0}-byte limit")]
    TooLarge(usize),
    /// Another transport problem.
    #[error("request failed: {0}")]
    Transport(String),
    /// The body is not valid exposition text.
    #[error("cannot parse the exposition: {0}")]
    Parse(#[from] crate::promtext::exposition::ExpositionError),
    /// A selector matched no series.
    #[error(
        "selector `{0}` matched no series (check the metric name and labels against the endpoint)"
    )]
    MissingSeries(String),
    /// The body is not the JSON the adapter expects.
    #[error("unexpected response: {0}")]
    Format(String),
    /// The tool answered, but refused the request.
    #[error("{0}")]
    Refused(String),
    /// The newest data is older than the target allows: no signal.
    #[error("stale signal: {0}")]
    Stale(String),
    /// A tool that pulls its offer (`kind = "pull"` control) stopped
    /// asking: it is gone or cannot reach the controller, so its counters
    /// say nothing about the offer.
    #[error("{0}")]
    NotPulled(String),
}

impl SignalError {
    /// A bounded label for `throttle_signal_errors_total{error_type}`.
    pub fn error_type(&self) -> &'static str {
        match self {
            SignalError::Timeout(_) => "timeout",
            SignalError::Connect(_) => "connect",
            SignalError::Status(_) => "http_status",
            SignalError::TooLarge(_) => "too_large",
            SignalError::Transport(_) => "transport",
            SignalError::Parse(_) => "parse",
            SignalError::MissingSeries(_) => "missing_series",
            SignalError::Format(_) => "format",
            SignalError::Refused(_) => "refused",
            SignalError::Stale(_) => "stale",
            SignalError::NotPulled(_) => "not_pulled",
        }
    }
}

/// A boxed, sendable future: what the stage traits return, so that the
/// engine can hold any source or knob behind one `Arc<dyn ...>`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a target's counters come from: one implementation per signal kind
/// (Prometheus scrape, PromQL, push, and each tool adapter).
pub trait CounterSource: Send + Sync + fmt::Debug {
    /// Reads the cumulative counters once (bounded in time by the source).
    fn read(&self) -> BoxFuture<'_, Result<Counters, SignalError>>;

    /// Whether the counters carry the committed offer (`Counters::offer`).
    fn has_offer(&self) -> bool {
        false
    }
}

/// Implements [`CounterSource`] for a type with an inherent
/// `async fn read(&self) -> Result<Counters, SignalError>`.
#[macro_export]
macro_rules! counter_source {
    ($ty:ty, has_offer = $offer:expr) => {
        impl $crate::signal::CounterSource for $ty {
            fn read(
                &self,
            ) -> $crate::signal::BoxFuture<
                '_,
                Result<$crate::signal::Counters, $crate::signal::SignalError>,
            > {
                Box::pin(<$ty>::read(self))
            }
            fn has_offer(&self) -> bool {
                let f: fn(&$ty) -> bool = $offer;
                f(self)
            }
        }
    };
}

counter_source!(prometheus::PrometheusSource, has_offer = |p| p.has_offer());
counter_source!(promql::PromqlSource, has_offer = |_| false);
counter_source!(push::PushSource, has_offer = |_| false);
