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
//! - [`exposition`]: our Prometheus/OpenMetrics text parser (why not
//!   `prometheus-parse`: it silently drops valid samples; see its docs).
//! - [`selector`]: PromQL instant-vector selectors, summed over series.
//! - [`prometheus`]: scraping a text endpoint.
//! - [`http`]: the bounded HTTP fetch shared by every source.
//! - Tool-specific sources (Locust, k6, Goose) live in [`crate::adapters`],
//!   one file per tool beside that tool's control.
//! - [`promql`]: instant queries against a Prometheus-compatible API.
//! - [`push`]: Prometheus text pushed to the controller, Pushgateway-style.
//! - [`token`]: bearer tokens from files or environment variables.

pub mod exposition;
pub mod http;
pub mod prometheus;
pub mod promql;
pub mod push;
pub mod selector;
pub mod token;

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
    /// How far the counters may trail the load (the source's own estimate); None when the source cannot tell.
    pub lag: Option<std::time::Duration>,
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
    Parse(#[from] exposition::ExpositionError),
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
        }
    }
}

/// A configured source of counters.
// One per target, built once at start-up: the size of the Prometheus
// variant (its compiled selectors) costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Source {
    /// Prometheus text scrape.
    Prometheus(prometheus::PrometheusSource),
    /// Locust's web UI stats.
    Locust(crate::adapters::locust::LocustSource),
    /// k6's REST API metrics.
    K6(crate::adapters::k6::K6Source),
    /// Goose's WebSocket controller metrics.
    Goose(crate::adapters::goose::GooseSource),
    /// Instant PromQL queries.
    Promql(promql::PromqlSource),
    /// Pushed Prometheus text.
    Push(push::PushSource),
}

impl Source {
    /// Builds the source for a target's signal config.
    pub fn new(cfg: &crate::config::SignalConfig, client: reqwest::Client) -> Result<Self, String> {
        match cfg {
            crate::config::SignalConfig::Prometheus(p) => Ok(Source::Prometheus(
                prometheus::PrometheusSource::new(p, client)?,
            )),
            crate::config::SignalConfig::Locust(l) => Ok(Source::Locust(
                crate::adapters::locust::LocustSource::new(l, client),
            )),
            crate::config::SignalConfig::K6(k) => {
                Ok(Source::K6(crate::adapters::k6::K6Source::new(k, client)))
            }
            crate::config::SignalConfig::Goose(g) => {
                Ok(Source::Goose(crate::adapters::goose::GooseSource::new(g)))
            }
            crate::config::SignalConfig::Promql(q) => {
                Ok(Source::Promql(promql::PromqlSource::new(q, client)?))
            }
            crate::config::SignalConfig::Push(p) => Ok(Source::Push(push::PushSource::new(p)?)),
        }
    }

    /// Reads the counters once.
    pub async fn read(&self) -> Result<Counters, SignalError> {
        match self {
            Source::Prometheus(p) => p.read().await,
            Source::Locust(l) => l.read().await,
            Source::K6(k) => k.read().await,
            Source::Goose(g) => g.read().await,
            Source::Promql(q) => q.read().await,
            Source::Push(p) => p.read().await,
        }
    }

    /// Whether the source can report the committed offer.
    pub fn has_offer(&self) -> bool {
        match self {
            Source::Prometheus(p) => p.has_offer(),
            Source::Locust(_) => true,
            Source::K6(_) | Source::Goose(_) => false,
            Source::Promql(_) | Source::Push(_) => false,
        }
    }

    /// Connects a push source to the controller's push endpoint (a no-op
    /// for every other kind). Call it once per built source.
    pub fn attach_push(&self, store: &push::PushStore) {
        if let Source::Push(p) = self {
            store.register(p.inbox());
        }
    }
}
