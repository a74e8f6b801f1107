//! `[targets.control]`: where offers are written, one variant per kind (a
//! templated HTTP request, Locust, k6, Goose, or pulled by the tool).
//!
//! Why it exists: each kind has its own keys and defaults (timeouts,
//! confirmation attempts and intervals); the tagged enum keeps
//! `kind = "..."` and those keys in one table. Pull has a file of its own
//! ([`super::pull`]).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{duration, pull};
use crate::auth::{AuthConfig, TlsConfig};

/// `[targets.control]`: where offers are written.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum ControlConfig {
    /// A templated HTTP request.
    Http(Box<HttpControlConfig>),
    /// Locust's web UI: `POST /swarm`, read back from `/stats/requests`.
    Locust(LocustControlConfig),
    /// k6's REST API: `PATCH /v1/status`, read back from `GET /v1/status`.
    K6(ToolControlConfig),
    /// Goose's WebSocket controller: `users N`, read back from `config-json`.
    Goose(ToolControlConfig),
    /// Nothing is written: the tool pulls its offer from the controller.
    Pull(pull::PullControlConfig),
}

impl ControlConfig {
    /// The TLS settings, when the kind talks HTTP(S).
    pub(crate) fn tls(&self) -> Option<&TlsConfig> {
        match self {
            ControlConfig::Http(h) => Some(&h.tls),
            _ => None,
        }
    }

    /// The config spelling of the kind.
    pub fn kind(&self) -> &'static str {
        match self {
            ControlConfig::Http(_) => "http",
            ControlConfig::Locust(_) => "locust",
            ControlConfig::K6(_) => "k6",
            ControlConfig::Goose(_) => "goose",
            ControlConfig::Pull(_) => "pull",
        }
    }
}

/// `kind = "locust"` control.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LocustControlConfig {
    /// The web UI's base URL, e.g. `http://127.0.0.1:8089`.
    pub url: String,
    /// Users started (or stopped) per second. Default: fast enough to reach
    /// the new count within about one window.
    pub spawn_rate: Option<f64>,
    /// Timeout of one request.
    #[serde(default = "default_control_timeout", with = "duration")]
    pub timeout: Duration,
    /// Read-backs tried before a write counts as unconfirmed. Locust reports
    /// the users actually running (they ramp at `spawn_rate`) through a
    /// stats response cached for 2 s, so confirming takes a few seconds.
    #[serde(default = "default_locust_confirm_attempts")]
    pub confirm_attempts: u32,
    /// Pause between read-backs while confirming.
    #[serde(default = "default_locust_confirm_interval", with = "duration")]
    pub confirm_interval: Duration,
    /// Writes tried before a failed or unconfirmed write is reported.
    #[serde(default = "default_write_attempts")]
    pub write_attempts: u32,
}

fn default_locust_confirm_attempts() -> u32 {
    20
}
fn default_locust_confirm_interval() -> Duration {
    Duration::from_millis(500)
}

/// `kind = "k6"` and `kind = "goose"` controls: the tool's own API.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ToolControlConfig {
    /// The API's base URL: `http://127.0.0.1:6565` (k6),
    /// `ws://127.0.0.1:5117` (Goose).
    pub url: String,
    /// Timeout of one request.
    #[serde(default = "default_control_timeout", with = "duration")]
    pub timeout: Duration,
    /// Read-backs tried before a write counts as unconfirmed.
    #[serde(default = "default_tool_confirm_attempts")]
    pub confirm_attempts: u32,
    /// Pause between read-backs while confirming.
    #[serde(default = "default_tool_confirm_interval", with = "duration")]
    pub confirm_interval: Duration,
    /// Writes tried before a failed or unconfirmed write is reported.
    #[serde(default = "default_write_attempts")]
    pub write_attempts: u32,
}

fn default_tool_confirm_attempts() -> u32 {
    10
}
fn default_tool_confirm_interval() -> Duration {
    Duration::from_millis(200)
}

/// `kind = "http"`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpControlConfig {
    /// Where to send the write; `{{value}}` is replaced.
    pub url: String,
    /// Any HTTP method.
    #[serde(default = "default_method")]
    pub method: String,
    /// Request body; `{{value}}` is replaced (an integer for concurrency).
    #[serde(default = "default_body")]
    pub body: String,
    /// The body's content type.
    #[serde(default = "default_content_type")]
    pub content_type: String,
    /// Timeout of one write.
    #[serde(default = "default_control_timeout", with = "duration")]
    pub timeout: Duration,
    /// Extra request headers (no credentials: use `auth`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Credentials for the write and the read-back.
    #[serde(default)]
    pub auth: AuthConfig,
    /// TLS for the write and the read-back.
    #[serde(default)]
    pub tls: TlsConfig,
    /// How the committed offer is read back; without it, `signal.offer`.
    pub read_back: Option<ReadBackConfig>,
    /// Read-backs tried before a write counts as unconfirmed.
    #[serde(default = "default_confirm_attempts")]
    pub confirm_attempts: u32,
    /// Pause between read-backs while confirming.
    #[serde(default = "default_confirm_interval", with = "duration")]
    pub confirm_interval: Duration,
    /// Writes tried before a failed or unconfirmed write is reported.
    #[serde(default = "default_write_attempts")]
    pub write_attempts: u32,
}

fn default_method() -> String {
    "PUT".to_string()
}
fn default_body() -> String {
    "{{value}}".to_string()
}
fn default_content_type() -> String {
    "application/json".to_string()
}
fn default_control_timeout() -> Duration {
    Duration::from_secs(2)
}
fn default_confirm_attempts() -> u32 {
    5
}
fn default_confirm_interval() -> Duration {
    Duration::from_millis(100)
}
fn default_write_attempts() -> u32 {
    2
}

/// `[targets.control.read_back]`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReadBackConfig {
    /// GET this URL.
    pub url: String,
    /// RFC 6901 pointer to the number in the JSON response.
    pub json_pointer: String,
    /// Timeout of one read-back (default: the control's timeout).
    #[serde(default, with = "duration")]
    pub timeout: Option<Duration>,
}
