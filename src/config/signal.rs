//! `[targets.signal]`: where a target's cumulative counters come from, one
//! variant per kind (a scrape, Locust, k6, Goose, PromQL, push).
//!
//! Why it exists: each kind has its own keys and defaults; the tagged enum
//! keeps `kind = "..."` and those keys in one table. PromQL and push have
//! files of their own ([`super::promql`], [`super::push`]).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{duration, limits, promql, push};
use crate::auth::{AuthConfig, TlsConfig};

/// `[targets.signal]`: where the cumulative counters come from.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum SignalConfig {
    /// Scrape a Prometheus (or OpenMetrics) text endpoint.
    Prometheus(Box<PrometheusSignalConfig>),
    /// Locust's web UI: `GET /stats/requests`, the "Aggregated" entry.
    Locust(LocustSignalConfig),
    /// k6's REST API: `GET /v1/metrics/http_reqs` and a failure metric.
    K6(K6SignalConfig),
    /// Goose's WebSocket controller: `metrics-json`.
    Goose(GooseSignalConfig),
    /// Instant queries against a Prometheus-compatible HTTP API.
    Promql(promql::PromqlSignalConfig),
    /// Prometheus text pushed to the controller, Pushgateway-style.
    Push(push::PushSignalConfig),
}

impl SignalConfig {
    /// The TLS settings, when the kind talks HTTP(S).
    pub(crate) fn tls(&self) -> Option<&TlsConfig> {
        match self {
            SignalConfig::Prometheus(p) => Some(&p.tls),
            // The tool adapters build their own requests without TLS options.
            _ => None,
        }
    }

    /// The config spelling of the kind.
    pub fn kind(&self) -> &'static str {
        match self {
            SignalConfig::Prometheus(_) => "prometheus",
            SignalConfig::Locust(_) => "locust",
            SignalConfig::K6(_) => "k6",
            SignalConfig::Goose(_) => "goose",
            SignalConfig::Promql(_) => "promql",
            SignalConfig::Push(_) => "push",
        }
    }

    /// Whether the counters arrive in batches (pushed, or a query of stored
    /// samples) rather than being read from the tool: the first batch after
    /// an offer change can still carry seconds of the old offer's attempts.
    pub(crate) fn arrives_in_batches(&self) -> bool {
        matches!(self, SignalConfig::Push(_) | SignalConfig::Promql(_))
    }

    /// Fills the defaults that depend on the target's window (a PromQL
    /// `{{window}}`, `max_age`).
    pub(crate) fn resolve_window(&mut self, window: Duration) {
        match self {
            SignalConfig::Promql(q) => q.resolve(window),
            SignalConfig::Push(p) => p.resolve(window),
            _ => {}
        }
    }

    /// Whether the signal also reports the committed offer (so that a
    /// generic `http` control may confirm writes without a read-back).
    pub(crate) fn has_offer(&self) -> bool {
        match self {
            SignalConfig::Prometheus(p) => p.offer.is_some(),
            // `user_count` rides along in the same stats response.
            SignalConfig::Locust(_) => true,
            SignalConfig::K6(_) | SignalConfig::Goose(_) => false,
            SignalConfig::Promql(_) | SignalConfig::Push(_) => false,
        }
    }
}

/// `kind = "locust"`: Locust 2.x started with its web UI (not `--headless`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LocustSignalConfig {
    /// The web UI's base URL, e.g. `http://127.0.0.1:8089`.
    pub url: String,
    /// Timeout of one stats read.
    #[serde(default = "default_signal_timeout", with = "duration")]
    pub timeout: Duration,
}

/// `kind = "k6"`: k6 1.x with its REST API (`--address`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct K6SignalConfig {
    /// The REST API's base URL, e.g. `http://127.0.0.1:6565`.
    pub url: String,
    /// A counter metric the script adds to on every resolved attempt.
    /// Without it, attempts are `http_reqs` (every request the script
    /// makes, a pulled offer included).
    pub attempts: Option<String>,
    /// A counter metric the script adds to on every failed attempt (exact).
    /// Without it, failures are `http_req_failed` rate × `http_reqs` count
    /// (approximate).
    pub failures: Option<String>,
    /// Timeout of one read (both metrics are read concurrently).
    #[serde(default = "default_signal_timeout", with = "duration")]
    pub timeout: Duration,
}

/// `kind = "goose"`: a Goose load test started with `--websocket`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GooseSignalConfig {
    /// The WebSocket controller, e.g. `ws://127.0.0.1:5117`.
    pub url: String,
    /// Timeout of one request (connect, send, answer).
    #[serde(default = "default_signal_timeout", with = "duration")]
    pub timeout: Duration,
}

/// `kind = "prometheus"`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PrometheusSignalConfig {
    /// The exposition endpoint.
    pub url: String,
    /// Selector of all resolved attempts (summed over matching series).
    pub attempts: Option<String>,
    /// Selector of successful attempts (alternative to `attempts`).
    pub successes: Option<String>,
    /// Selector of failed attempts (summed).
    pub failures: String,
    /// Optional gauge selector holding the committed offer.
    pub offer: Option<String>,
    /// Timeout of one scrape.
    #[serde(default = "default_signal_timeout", with = "duration")]
    pub timeout: Duration,
    /// Extra request headers (no credentials: use `auth`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Credentials, read from files or environment variables.
    #[serde(default)]
    pub auth: AuthConfig,
    /// TLS: custom CA bundle and client certificate.
    #[serde(default)]
    pub tls: TlsConfig,
    /// Largest scrape body accepted; larger ones are refused and counted.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// Most samples accepted in one scrape.
    #[serde(default = "default_max_samples")]
    pub max_samples: usize,
}

fn default_max_body_bytes() -> usize {
    limits::DEFAULT_MAX_BODY_BYTES
}

fn default_max_samples() -> usize {
    1_000_000
}

fn default_signal_timeout() -> Duration {
    Duration::from_secs(1)
}
