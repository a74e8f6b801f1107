//! The TOML config: serde types plus validation, errors named by target.
//!
//! Why it exists: the controller writes load onto someone's system, so a
//! config is checked completely before anything starts. Every problem found
//! is collected and reported with the target's name and the field's path
//! (`targets[checkout].signal.url: ...`), not just the first one.
//!
//! Every number carries a unit: durations are humantime strings (`"2s"`,
//! `"250ms"`), fractions are plain numbers in `[0, 1]`. Unknown keys are
//! rejected (`deny_unknown_fields`), so a typo never silently falls back to
//! a default.
//!
//! One deliberate spelling: GOVERNOR.md calls the governed knob `control`,
//! but `[targets.control]` is the table that says how offers are written,
//! and TOML cannot hold both a `control = "..."` key and a
//! `[targets.control]` table. The knob is therefore `knob = "concurrency"`
//! (or `"rate"`).
//!
//! What it may touch: the filesystem (to read the file) and
//! [`crate::governor::Params`] for the governor's own rules.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};
use thiserror::Error;

pub mod group;
pub mod latency;
pub mod limits;
pub mod promql;
pub mod pull;
pub mod push;

use crate::auth::{AuthConfig, Credentials, TlsConfig};
use crate::governor::{Control, ParamError, Params, Profile};

mod closed;
pub use closed::state_file_problem;
pub mod fields;
pub mod redact;

/// The whole config file.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// The controller's own HTTP server.
    pub server: ServerConfig,
    /// The governed targets.
    pub targets: Vec<TargetConfig>,
}

/// `[server]`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// Address for `/metrics`, `/healthz`, `/readyz` and `/api/v1/targets`.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Keeps each target's congestion memory (`last_bad`, streak) across
    /// restarts of the controller; written atomically after every change.
    pub state_file: Option<std::path::PathBuf>,
    /// The push endpoint's guards (`kind = "push"` signals).
    #[serde(default)]
    pub push: push::PushServerConfig,
    /// Accept pushes without a token on a listener off loopback (refused
    /// unless set; logged as a warning at start).
    #[serde(default)]
    pub allow_unauthenticated_push: bool,
    /// Connections the controller's server keeps open at once; past it the
    /// longest-idle one is closed. Raise it above the number of `pull`
    /// clients that keep a connection each (k6 VUs, harness threads).
    #[serde(default = "default_max_connections")]
    pub max_connections: u32,
    /// The offer endpoint's guard (`kind = "pull"` controls).
    #[serde(default)]
    pub pull: pull::PullServerConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: default_listen(),
            state_file: None,
            push: Default::default(),
            allow_unauthenticated_push: false,
            max_connections: default_max_connections(),
            pull: Default::default(),
        }
    }
}

/// What to do after `signal_loss_windows` consecutive windows without a
/// valid signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnSignalLoss {
    /// Keep the committed offer.
    Hold,
    /// Write the floor: the governor assumes the most fragile target.
    #[default]
    Floor,
}

/// The default cap on the server's open connections.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 256;

fn default_max_connections() -> u32 {
    DEFAULT_MAX_CONNECTIONS
}

fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 9464))
}

/// What to leave behind on shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnExit {
    /// Leave the committed offer as it is.
    #[default]
    Leave,
    /// Write the floor.
    Floor,
    /// Write the opening offer.
    Start,
}

/// How a target's `profile` key was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProfileKey {
    /// Named with its own spelling.
    #[default]
    Given,
    /// Left out: the default profile.
    Omitted,
    /// Spelled `"default"`: the seed rules, as before issue 26.
    OldDefault,
}

impl ProfileKey {
    /// How the `[[targets]]` table `item` writes `profile`.
    fn of(item: &toml::Value) -> Self {
        match item.get("profile").map(toml::Value::as_str) {
            None => ProfileKey::Omitted,
            Some(Some("default")) => ProfileKey::OldDefault,
            Some(_) => ProfileKey::Given,
        }
    }
}

/// `[[targets]]`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// Unique name; the `target` label.
    pub name: String,
    /// Which knob is governed (GOVERNOR.md's `control`).
    pub knob: Control,
    /// The authored offer: the ceiling (optional for rate).
    pub ceiling: Option<f64>,
    /// The offer never goes below this.
    pub floor: f64,
    /// The opening offer (default: floor).
    pub start: Option<f64>,
    /// Back off when the window's failure fraction exceeds this.
    pub high: f64,
    /// A window is clean below this (default: high / 5).
    pub low: Option<f64>,
    /// The length of one window.
    #[serde(
        default = "default_window",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
    pub window: Duration,
    /// What to write on shutdown.
    #[serde(default)]
    pub on_exit: OnExit,
    /// Consecutive windows without a valid signal before `on_signal_loss`.
    #[serde(default = "default_signal_loss_windows")]
    pub signal_loss_windows: u32,
    /// What to do when the signal is lost.
    #[serde(default)]
    pub on_signal_loss: OnSignalLoss,
    /// The governor's rule set: `"gentle"` (the default when the key is
    /// left out), `"robust"`, or `"seed"` (GOVERNOR.md exactly; the old
    /// spelling `"default"` still means it). docs/BENCHMARKS.md has the
    /// measurements.
    #[serde(default)]
    pub profile: Profile,
    /// Close a breaching window as soon as its breach is statistically
    /// certain, reading the counters four dozen times in the window after each
    /// Up (see `engine::step::early`). Default: the profile's
    /// ([`TargetConfig::early_verdicts_in_effect`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_verdicts: Option<bool>,
    /// How `profile` was written, for `check` (not a config key).
    #[serde(skip)]
    pub profile_key: ProfileKey,
    /// How far the signal trails the load: after an offer change, the next
    /// window starts only this long after the change is confirmed, so that
    /// no window mixes two offers. Default: the signal kind's own (see
    /// [`TargetConfig::lag_description`]).
    #[serde(
        default,
        deserialize_with = "de_opt_duration",
        serialize_with = "ser_opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub signal_lag: Option<Duration>,
    /// Where counters come from.
    pub signal: SignalConfig,
    /// Where offers go.
    pub control: ControlConfig,
    /// Several load-generator instances governed as one (see `engine`);
    /// `signal` and `control` are then templates (`{{address}}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<group::InstanceConfig>,
    /// Discovery and tuning of a target group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<group::GroupConfig>,
    /// An optional latency bound beside the failure bound (an SLO): see
    /// `governor::latency_bound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<latency::LatencyConfig>,
}

fn default_signal_loss_windows() -> u32 {
    3
}

fn default_window() -> Duration {
    Duration::from_secs(2)
}

impl TargetConfig {
    /// The window when none is configured.
    pub fn default_window() -> Duration {
        default_window()
    }

    /// Whether early verdicts are on: the key when set, else the
    /// profile's choice (on for `gentle`, off for the profiles whose meaning
    /// predates them).
    pub fn early_verdicts_in_effect(&self) -> bool {
        self.early_verdicts
            .unwrap_or_else(|| self.profile.early_verdicts())
    }

    /// The profile in effect, in words (`check` shows it): marked when it
    /// is the default because the key was left out, or when it was spelled
    /// `"default"`.
    pub fn profile_description(&self) -> String {
        match self.profile_key {
            ProfileKey::Given => self.profile.to_string(),
            ProfileKey::Omitted => format!("{} (the default: no `profile` key)", self.profile),
            ProfileKey::OldDefault => format!(
                "{} (spelled \"default\", which now names the seed rules of GOVERNOR.md; \
                 a config without `profile` gets \"{}\")",
                self.profile,
                Profile::default()
            ),
        }
    }

    /// The signal lag in effect, in words (`check` and the API show it).
    pub fn lag_description(&self) -> String {
        if let Some(d) = self.signal_lag {
            return format!("{} (signal_lag)", humantime::format_duration(d));
        }
        let w = humantime::format_duration(self.window);
        match &self.signal {
            SignalConfig::Locust(_) => format!(
                "auto: Locust's stats cache ({}), plus the workers' report interval ({}) when workers report",
                humantime::format_duration(limits::LOCUST_STATS_CACHE),
                humantime::format_duration(limits::LOCUST_WORKER_REPORT_INTERVAL)
            ),
            SignalConfig::Push(_) => {
                format!("auto: the observed interval between pushes (one window, {w}, until seen)")
            }
            SignalConfig::Promql(_) => format!(
                "auto: the observed update interval of the attempts series (one window, {w}, until seen)"
            ),
            SignalConfig::K6(_) => format!(
                "auto: k6's metrics batching ({})",
                humantime::format_duration(limits::K6_METRICS_LAG)
            ),
            SignalConfig::Prometheus(_) | SignalConfig::Goose(_) => {
                "0s (the counters are read from the tool directly)".into()
            }
        }
    }

    /// The governor parameters (validated by [`Config::validate`]).
    pub fn params(&self) -> Result<Params, Vec<ParamError>> {
        Params::new(
            self.knob,
            self.ceiling,
            self.floor,
            self.start,
            self.high,
            self.low,
        )
    }
}

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
    pub fn tls(&self) -> Option<&TlsConfig> {
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
    pub fn arrives_in_batches(&self) -> bool {
        matches!(self, SignalConfig::Push(_) | SignalConfig::Promql(_))
    }

    /// Fills the defaults that depend on the target's window (a PromQL
    /// `{{window}}`, `max_age`).
    pub fn resolve_window(&mut self, window: Duration) {
        match self {
            SignalConfig::Promql(q) => q.resolve(window),
            SignalConfig::Push(p) => p.resolve(window),
            _ => {}
        }
    }

    /// Whether the signal also reports the committed offer (so that a
    /// generic `http` control may confirm writes without a read-back).
    pub fn has_offer(&self) -> bool {
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
    #[serde(
        default = "default_signal_timeout",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
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
    #[serde(
        default = "default_signal_timeout",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
    pub timeout: Duration,
}

/// `kind = "goose"`: a Goose load test started with `--websocket`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GooseSignalConfig {
    /// The WebSocket controller, e.g. `ws://127.0.0.1:5117`.
    pub url: String,
    /// Timeout of one request (connect, send, answer).
    #[serde(
        default = "default_signal_timeout",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
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
    #[serde(
        default = "default_signal_timeout",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
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
    pub fn tls(&self) -> Option<&TlsConfig> {
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
    #[serde(
        default = "default_control_timeout",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
    pub timeout: Duration,
    /// Read-backs tried before a write counts as unconfirmed. Locust reports
    /// the users actually running (they ramp at `spawn_rate`) through a
    /// stats response cached for 2 s, so confirming takes a few seconds.
    #[serde(default = "default_locust_confirm_attempts")]
    pub confirm_attempts: u32,
    /// Pause between read-backs while confirming.
    #[serde(
        default = "default_locust_confirm_interval",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
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
    #[serde(
        default = "default_control_timeout",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
    pub timeout: Duration,
    /// Read-backs tried before a write counts as unconfirmed.
    #[serde(default = "default_tool_confirm_attempts")]
    pub confirm_attempts: u32,
    /// Pause between read-backs while confirming.
    #[serde(
        default = "default_tool_confirm_interval",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
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
    #[serde(
        default = "default_control_timeout",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
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
    #[serde(
        default = "default_confirm_interval",
        deserialize_with = "de_duration",
        serialize_with = "ser_duration"
    )]
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
    #[serde(
        default,
        deserialize_with = "de_opt_duration",
        serialize_with = "ser_opt_duration"
    )]
    pub timeout: Option<Duration>,
}

/// One problem in a config, located by target and field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// The target's name (or `#index` when it has none); `None` for the file.
    pub target: Option<String>,
    /// The field's path within the target, e.g. `signal.url`.
    pub field: String,
    /// What is wrong and what to do.
    pub reason: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Some(t) if self.field.is_empty() => write!(f, "targets[{t}]: {}", self.reason),
            Some(t) => write!(f, "targets[{t}].{}: {}", self.field, self.reason),
            None if self.field.is_empty() => write!(f, "{}", self.reason),
            None => write!(f, "{}: {}", self.field, self.reason),
        }
    }
}

/// Why a config could not be loaded.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The path given.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// One or more problems; each names its target and field.
    #[error("invalid config ({} problem{}):\n{}", .0.len(), if .0.len() == 1 { "" } else { "s" }, list(.0))]
    Invalid(Vec<FieldError>),
}

fn list(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(|e| format!("  - {e}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The problem with a counter signal's `attempts` and `successes` (exactly
/// one must be given), as (field, reason).
pub(crate) fn attempts_xor_successes(
    attempts: bool,
    successes: bool,
) -> Option<(&'static str, String)> {
    match (attempts, successes) {
        (false, false) => Some((
            "attempts",
            "give `attempts` (all resolved attempts) or `successes`".to_string(),
        )),
        (true, true) => Some((
            "successes",
            "give either `attempts` or `successes`, not both".to_string(),
        )),
        _ => None,
    }
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Config::parse(&text)
    }

    /// Parses and validates config text, collecting every problem.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let mut errors = Vec::new();
        let doc: toml::Table = match toml::from_str(text) {
            Ok(doc) => doc,
            Err(e) => {
                errors.push(FieldError {
                    target: None,
                    field: String::new(),
                    reason: hint(&format!("TOML syntax: {}", e.message()))
                        + &location(text, e.span()),
                });
                return Err(ConfigError::Invalid(errors));
            }
        };
        let mut server = ServerConfig::default();
        let mut targets = Vec::new();
        let mut saw_targets = false;
        for (key, value) in doc {
            match key.as_str() {
                "server" => match fields::deserialize::<ServerConfig>(value) {
                    Ok(s) => server = s,
                    Err(e) => errors.push(FieldError {
                        target: None,
                        field: fields::join("server", &e.path),
                        reason: e.reason,
                    }),
                },
                "targets" => {
                    saw_targets = true;
                    let toml::Value::Array(items) = value else {
                        errors.push(FieldError {
                            target: None,
                            field: "targets".into(),
                            reason: "must be an array of tables: write each as [[targets]]".into(),
                        });
                        continue;
                    };
                    for (i, item) in items.into_iter().enumerate() {
                        let label = item
                            .get("name")
                            .and_then(|n| n.as_str())
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("#{}", i + 1));
                        let key = ProfileKey::of(&item);
                        match fields::deserialize::<TargetConfig>(item) {
                            Ok(t) => targets.push(TargetConfig {
                                profile_key: key,
                                ..t
                            }),
                            Err(e) => errors.push(FieldError {
                                target: Some(label),
                                field: e.path,
                                reason: hint(&e.reason),
                            }),
                        }
                    }
                }
                other => errors.push(FieldError {
                    target: None,
                    field: other.to_string(),
                    reason: "unknown top-level key; expected `server` or `targets`".into(),
                }),
            }
        }
        if !saw_targets {
            errors.push(FieldError {
                target: None,
                field: "targets".into(),
                reason: "no [[targets]] given: nothing to govern".into(),
            });
        }
        for t in &mut targets {
            t.resolve_window();
        }
        let config = Config { server, targets };
        errors.extend(config.validate());
        errors.extend(closed::problems(&config));
        for e in &mut errors {
            e.reason = redact::urls(&e.reason);
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid(errors))
        }
    }

    /// Warnings about a valid config (logged at start, printed by `check`).
    pub fn warnings(&self) -> Vec<String> {
        closed::warnings(self)
    }

    /// Semantic checks over parsed targets; returns every problem.
    pub fn validate(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let mut names = HashSet::new();
        if !(16..=65_536).contains(&self.server.max_connections) {
            errors.push(FieldError {
                target: None,
                field: "server.max_connections".into(),
                reason: format!(
                    "must be between 16 and 65536 (got {}); each open connection holds a file descriptor",
                    self.server.max_connections
                ),
            });
        }
        for (field, reason) in self.server.push.problems() {
            errors.push(FieldError {
                target: None,
                field: format!("server.push.{field}"),
                reason,
            });
        }
        let pulls = self.targets.iter().any(|t| {
            matches!(t.control, ControlConfig::Pull(_))
                || t.instances
                    .iter()
                    .any(|i| matches!(i.control, Some(ControlConfig::Pull(_))))
        });
        for (field, reason) in self.server.pull.problems(self.server.listen, pulls) {
            errors.push(FieldError {
                target: None,
                field: format!("server.pull.{field}"),
                reason,
            });
        }
        for t in &self.targets {
            let mut err = |field: &str, reason: String| {
                errors.push(FieldError {
                    target: Some(t.name.clone()),
                    field: field.to_string(),
                    reason,
                })
            };
            if t.name.trim().is_empty() {
                err("name", "must not be empty".into());
            } else if !names.insert(t.name.clone()) {
                err("name", "duplicate target name; names must be unique".into());
            }
            if let Err(param_errors) = t.params() {
                for e in param_errors {
                    err(param_field(&e), e.to_string());
                }
            }
            if t.window.is_zero() {
                err("window", "must be longer than 0s, e.g. \"2s\"".into());
            }
            if t.signal_loss_windows == 0 {
                err("signal_loss_windows", "must be at least 1".into());
            }
            if let Some(l) = &t.latency {
                for (field, reason) in l.problems(t) {
                    err(&field, reason);
                }
            }
            if t.is_group() {
                for (field, reason) in group::problems(t) {
                    err(&field, reason);
                }
                continue;
            }
            check_io(t, &mut err);
        }
        errors
    }
}

/// The signal's and control's checks of one (non-group) target; a group
/// runs them for each member's filled templates.
pub(crate) fn check_io(t: &TargetConfig, err: &mut dyn FnMut(&str, String)) {
    let mut err = err;
    check_adapters(&mut err, t);
    let SignalConfig::Prometheus(s) = &t.signal else {
        if matches!(t.signal, SignalConfig::Promql(_) | SignalConfig::Push(_)) {
            check_other_signal(t, &mut err);
        } else if let ControlConfig::Http(c) = &t.control {
            // A tool adapter's signal (checked above); a generic
            // http control may still pair with it.
            check_http_control(&mut err, c, t.signal.has_offer());
        }
        return;
    };
    check_url(&mut err, "signal.url", &s.url);
    match (&s.attempts, &s.successes) {
        (None, None) => err(
            "signal.attempts",
            "give `attempts` (all resolved attempts) or `successes`".into(),
        ),
        (Some(_), Some(_)) => err(
            "signal.successes",
            "give either `attempts` or `successes`, not both".into(),
        ),
        _ => {}
    }
    for (field, sel) in [
        ("signal.attempts", s.attempts.as_deref()),
        ("signal.successes", s.successes.as_deref()),
        ("signal.failures", Some(s.failures.as_str())),
        ("signal.offer", s.offer.as_deref()),
    ] {
        if let Some(sel) = sel {
            if let Err(e) = sel.parse::<crate::promtext::selector::Selector>() {
                err(field, format!("bad selector `{sel}`: {e}"));
            }
        }
    }
    if s.timeout.is_zero() {
        err("signal.timeout", "must be longer than 0s".into());
    }
    if s.max_body_bytes == 0 || s.max_samples == 0 {
        err(
            "signal.max_body_bytes",
            "limits must be greater than 0".into(),
        );
    }
    check_secrets(&mut err, "signal", &s.auth, &s.tls, &s.headers);
    let ControlConfig::Http(c) = &t.control else {
        return; // A tool adapter's control (checked above).
    };
    check_http_control(&mut err, c, s.offer.is_some());
}

/// Credentials must come from files or the environment, never inline.
fn check_secrets(
    err: &mut impl FnMut(&str, String),
    prefix: &str,
    auth: &AuthConfig,
    tls: &TlsConfig,
    headers: &BTreeMap<String, String>,
) {
    if let Err(e) = Credentials::resolve(auth) {
        err(&format!("{prefix}.auth"), e.to_string());
    }
    if !tls.is_empty() {
        if let Err(e) = crate::auth::apply_tls(reqwest::Client::builder(), tls) {
            err(&format!("{prefix}.tls"), e.to_string());
        }
    }
    for name in headers.keys() {
        let lower = name.to_ascii_lowercase();
        if lower == "authorization" || lower == "proxy-authorization" || lower == "cookie" {
            err(
                &format!("{prefix}.headers"),
                format!("`{name}` carries a credential; put it in `{prefix}.auth` (bearer_token_file/_env or username + password_file/_env) so it is never inline"),
            );
        }
    }
}

/// The generic `http` control's checks; `signal_offer` says whether the
/// signal can confirm writes when there is no read-back.
fn check_http_control(
    err: &mut impl FnMut(&str, String),
    c: &HttpControlConfig,
    signal_offer: bool,
) {
    check_url(err, "control.url", &c.url.replace("{{value}}", "1"));
    if reqwest::Method::from_bytes(c.method.as_bytes()).is_err() {
        err(
            "control.method",
            format!("`{}` is not an HTTP method", c.method),
        );
    }
    if c.timeout.is_zero() {
        err("control.timeout", "must be longer than 0s".into());
    }
    if c.confirm_attempts == 0 {
        err("control.confirm_attempts", "must be at least 1".into());
    }
    if c.write_attempts == 0 {
        err("control.write_attempts", "must be at least 1".into());
    }
    match &c.read_back {
        Some(rb) => {
            check_url(err, "control.read_back.url", &rb.url);
            if !(rb.json_pointer.is_empty() || rb.json_pointer.starts_with('/')) {
                err(
                    "control.read_back.json_pointer",
                    format!(
                        "`{}` is not an RFC 6901 pointer; it must start with `/`, e.g. \"/workers\"",
                        rb.json_pointer
                    ),
                );
            }
        }
        None if !signal_offer => err(
            "control.read_back",
            "writes must be confirmed: give [targets.control.read_back] or `signal.offer`".into(),
        ),
        None => {}
    }
}

/// Checks of the tool adapters (`locust`, `k6`, `goose`) on either side.
fn check_adapters(err: &mut impl FnMut(&str, String), t: &TargetConfig) {
    let tool_knob = |err: &mut dyn FnMut(&str, String), tool: &str, what: &str| {
        if t.knob != Control::Concurrency {
            err(
                "knob",
                format!(
                    "{tool} is governed by its {what}, a concurrency: use knob = \"concurrency\""
                ),
            );
        }
    };
    match &t.signal {
        SignalConfig::Prometheus(_) | SignalConfig::Promql(_) | SignalConfig::Push(_) => {}
        SignalConfig::Locust(l) => {
            check_url(err, "signal.url", &l.url);
            positive(err, "signal.timeout", l.timeout);
            if t.window < limits::LOCUST_STATS_CACHE {
                err(
                    "window",
                    format!(
                        "Locust caches /stats/requests for {:?}: a window shorter than that reads the same numbers twice; use \"3s\" or more",
                        limits::LOCUST_STATS_CACHE
                    ),
                );
            }
        }
        SignalConfig::K6(k) => {
            check_url(err, "signal.url", &k.url);
            positive(err, "signal.timeout", k.timeout);
            if let Some(name) = &k.attempts {
                if !limits::is_k6_metric_name(name) {
                    err(
                        "signal.attempts",
                        format!("`{name}` is not a k6 metric name (letters, digits and `_`, starting with a letter or `_`, at most 128)"),
                    );
                }
            }
            if let Some(name) = &k.failures {
                if !limits::is_k6_metric_name(name) {
                    err(
                        "signal.failures",
                        format!("`{name}` is not a k6 metric name (letters, digits and `_`, starting with a letter or `_`, at most 128)"),
                    );
                }
            }
        }
        SignalConfig::Goose(g) => {
            check_ws_url(err, "signal.url", &g.url);
            positive(err, "signal.timeout", g.timeout);
        }
    }
    match &t.control {
        ControlConfig::Http(_) => {}
        ControlConfig::Locust(l) => {
            tool_knob(err, "Locust", "user count");
            check_url(err, "control.url", &l.url);
            positive(err, "control.timeout", l.timeout);
            attempts(err, l.confirm_attempts, l.write_attempts);
            if let Some(r) = l.spawn_rate {
                if !(r.is_finite() && r > 0.0) {
                    err(
                        "control.spawn_rate",
                        format!("{r} is not a positive number of users per second"),
                    );
                }
            }
        }
        ControlConfig::K6(k) => {
            tool_knob(err, "k6", "VU count");
            check_url(err, "control.url", &k.url);
            positive(err, "control.timeout", k.timeout);
            attempts(err, k.confirm_attempts, k.write_attempts);
        }
        ControlConfig::Goose(g) => {
            tool_knob(err, "Goose", "user count");
            check_ws_url(err, "control.url", &g.url);
            positive(err, "control.timeout", g.timeout);
            attempts(err, g.confirm_attempts, g.write_attempts);
            let max = limits::GOOSE_MAX_USERS as f64;
            if t.ceiling.is_some_and(|c| c > max) {
                err(
                    "ceiling",
                    format!("Goose accepts at most {max} users; lower the ceiling"),
                );
            }
        }
        ControlConfig::Pull(p) => {
            for (field, reason) in p.problems() {
                err(&format!("control.{field}"), reason);
            }
        }
    }
}

fn positive(err: &mut impl FnMut(&str, String), field: &str, d: Duration) {
    if d.is_zero() {
        err(field, "must be longer than 0s".into());
    }
}

fn attempts(err: &mut impl FnMut(&str, String), confirm: u32, write: u32) {
    if confirm == 0 {
        err("control.confirm_attempts", "must be at least 1".into());
    }
    if write == 0 {
        err("control.write_attempts", "must be at least 1".into());
    }
}

fn check_ws_url(err: &mut impl FnMut(&str, String), field: &str, url: &str) {
    match reqwest::Url::parse(url) {
        Ok(u) if u.scheme() == "ws" => {}
        Ok(u) => err(
            field,
            format!(
                "scheme `{}` is not supported; Goose's controller speaks plain WebSocket: ws://127.0.0.1:5117",
                u.scheme()
            ),
        ),
        Err(e) => err(field, format!("`{url}` is not a URL: {e}")),
    }
}

fn check_url(err: &mut impl FnMut(&str, String), field: &str, url: &str) {
    match reqwest::Url::parse(url) {
        Ok(u) if !u.username().is_empty() || u.password().is_some() => err(
            field,
            "credentials in the URL are not allowed (they would be logged); use `auth` with a password file or environment variable".into(),
        ),
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
        Ok(u) => err(
            field,
            format!(
                "scheme `{}` is not supported; use http or https",
                u.scheme()
            ),
        ),
        Err(e) => err(field, format!("`{url}` is not a URL: {e}")),
    }
}

fn param_field(e: &ParamError) -> &'static str {
    match e {
        ParamError::NotFiniteNonNegative { field, .. } | ParamError::NotInteger { field, .. } => {
            field
        }
        ParamError::HighOutOfRange(_) => "high",
        ParamError::LowOutOfRange { .. } => "low",
        ParamError::FloorAboveCeiling { .. } | ParamError::ZeroFloor => "floor",
        ParamError::StartOutOfRange { .. } => "start",
        ParamError::CeilingRequired => "ceiling",
        ParamError::ResolutionNotPositive(_) => "resolution",
    }
}

fn hint(message: &str) -> String {
    let mut m = message.trim().replace('\n', " ");
    if (m.contains("invalid type: string") || m.contains("duplicate key")) && m.contains("control")
    {
        m.push_str(
            " (hint: the governed knob is `knob = \"concurrency\"`; `[targets.control]` is the write table)",
        );
    }
    m
}

fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(r) => {
            let line = text[..r.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}

/// Deserializes a humantime duration such as `"2s"` or `"250ms"`.
pub fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    humantime::parse_duration(&s).map_err(|e| {
        serde::de::Error::custom(format!(
            "`{s}` is not a duration ({e}); write it with a unit, e.g. \"2s\" or \"250ms\""
        ))
    })
}

/// Deserializes an optional humantime duration (present means `Some`).
pub fn de_opt_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    de_duration(d).map(Some)
}

/// Serializes a duration as a humantime string.
pub fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&humantime::format_duration(*d).to_string())
}

/// Serializes an optional duration as a humantime string.
pub fn ser_opt_duration<S: serde::Serializer>(
    d: &Option<Duration>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => ser_duration(d, s),
        None => s.serialize_none(),
    }
}

impl TargetConfig {
    /// Resolves the window-dependent signal defaults of the target and of
    /// its instances.
    pub fn resolve_window(&mut self) {
        let window = self.window;
        self.signal.resolve_window(window);
        for i in &mut self.instances {
            if let Some(s) = &mut i.signal {
                s.resolve_window(window);
            }
        }
    }
}

/// Checks a target whose signal is not a scrape (`promql`, `push`): the
/// signal's own rules, then the control, which must confirm writes through
/// its own read-back because these signals carry no offer gauge.
fn check_other_signal(t: &TargetConfig, err: &mut impl FnMut(&str, String)) {
    let problems = match &t.signal {
        SignalConfig::Promql(q) => {
            check_url(err, "signal.url", &q.url);
            q.problems()
        }
        SignalConfig::Push(p) => p.problems(),
        _ => Vec::new(),
    };
    for (field, reason) in problems {
        err(&format!("signal.{field}"), reason);
    }
    check_control(&t.control, false, err);
}

/// The control's rules; `has_offer` says whether the signal can confirm writes.
fn check_control(control: &ControlConfig, has_offer: bool, err: &mut impl FnMut(&str, String)) {
    // The tool adapters' controls are checked by `check_adapters`.
    if let ControlConfig::Http(c) = control {
        check_http_control(err, c, has_offer);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "checkout"
knob = "concurrency"
ceiling = 256
floor = 1
high = 0.05
window = "500ms"

[targets.signal]
kind = "prometheus"
url = "http://127.0.0.1:9100/metrics"
attempts = 'myload_requests_total'
failures = 'myload_requests_total{outcome="error"}'
timeout = "1s"

[targets.control]
kind = "http"
url = "http://127.0.0.1:9100/admin/workers"
body = '{"workers": {{value}}}'
[targets.control.read_back]
url = "http://127.0.0.1:9100/admin/workers"
json_pointer = "/workers"
"#;

    #[test]
    fn max_connections_defaults_to_256_and_is_bounded() {
        assert_eq!(Config::parse(GOOD).unwrap().server.max_connections, 256);
        let with =
            |n: &str| GOOD.replace("[server]\n", &format!("[server]\nmax_connections = {n}\n"));
        assert_eq!(
            Config::parse(&with("2048")).unwrap().server.max_connections,
            2048
        );
        for bad in ["8", "100000"] {
            let err = Config::parse(&with(bad)).unwrap_err().to_string();
            assert!(
                err.contains("server.max_connections") && err.contains(bad),
                "{err}"
            );
        }
    }

    #[test]
    fn good_config_parses_with_defaults() {
        let c = Config::parse(GOOD).unwrap();
        let t = &c.targets[0];
        assert_eq!(t.window, Duration::from_millis(500));
        let p = t.params().unwrap();
        assert_eq!(p.start, 1.0);
        assert!((p.low - 0.01).abs() < 1e-12);
        assert_eq!(t.on_exit, OnExit::Leave);
        assert_eq!(t.profile, Profile::Gentle, "gentle unless asked");
        assert_eq!(t.profile_key, ProfileKey::Omitted);
        assert!(t.profile_description().contains("the default"));
        let ControlConfig::Http(h) = &t.control else {
            panic!("expected http")
        };
        assert_eq!(h.method, "PUT");
        assert_eq!(h.content_type, "application/json");
    }

    #[test]
    fn every_bad_field_is_reported_by_target() {
        let bad = GOOD
            .replace("ceiling = 256", "ceiling = 256\nlow = 0.2")
            .replace(
                "url = \"http://127.0.0.1:9100/metrics\"",
                "url = \"ftp://x\"",
            )
            .replace("window = \"500ms\"", "window = \"0s\"")
            .replace("json_pointer = \"/workers\"", "json_pointer = \"workers\"")
            .replace("'myload_requests_total'", "'myload_requests_total{'");
        let Err(ConfigError::Invalid(errors)) = Config::parse(&bad) else {
            panic!("expected errors");
        };
        let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        for field in [
            "targets[checkout].low",
            "targets[checkout].signal.url",
            "targets[checkout].window",
            "targets[checkout].control.read_back.json_pointer",
            "targets[checkout].signal.attempts",
        ] {
            assert!(
                text.iter().any(|t| t.starts_with(field)),
                "{field} missing in {text:#?}"
            );
        }
    }

    #[test]
    fn unknown_keys_and_control_string_are_explained() {
        let bad = GOOD.replace("floor = 1", "floor = 1\nflor = 2");
        let err = Config::parse(&bad).unwrap_err().to_string();
        assert!(
            err.contains("targets[checkout]") && err.contains("flor"),
            "{err}"
        );

        let bad = GOOD.replace("knob = \"concurrency\"", "control = \"concurrency\"");
        let err = Config::parse(&bad).unwrap_err().to_string();
        assert!(err.contains("knob"), "{err}");
    }

    #[test]
    fn duplicate_names_and_missing_confirmation_are_rejected() {
        let two = format!("{GOOD}\n{}", &GOOD[GOOD.find("[[targets]]").unwrap()..]);
        let err = Config::parse(&two).unwrap_err().to_string();
        assert!(err.contains("duplicate target name"), "{err}");

        let start = GOOD.find("[targets.control.read_back]").unwrap();
        let no_rb = &GOOD[..start];
        let err = Config::parse(no_rb).unwrap_err().to_string();
        assert!(err.contains("control.read_back"), "{err}");
    }

    #[test]
    fn profile_is_named_or_gentle_and_checked() {
        let with = |name: &str| {
            let text = GOOD.replace("floor = 1", &format!("floor = 1\nprofile = \"{name}\""));
            Config::parse(&text).map(|c| c.targets[0].clone())
        };
        for (name, profile) in [
            ("seed", Profile::Seed),
            ("robust", Profile::Robust),
            ("gentle", Profile::Gentle),
        ] {
            let t = with(name).unwrap();
            assert_eq!((t.profile, t.profile_key), (profile, ProfileKey::Given));
            assert_eq!(t.profile_description(), name);
        }
        // A config that names a profile keeps its meaning: "default" was
        // the seed rules, and still is; check says so.
        let t = with("default").unwrap();
        assert_eq!(
            (t.profile, t.profile_key),
            (Profile::Seed, ProfileKey::OldDefault)
        );
        let said = t.profile_description();
        assert!(
            said.starts_with("seed (spelled \"default\"") && said.contains("\"gentle\""),
            "{said}"
        );
        let err = with("rubust").unwrap_err().to_string();
        assert!(err.contains("profile") && err.contains("rubust"), "{err}");
        for valid in ["seed", "robust", "gentle"] {
            assert!(err.contains(valid), "{err}");
        }
    }

    #[test]
    fn bad_duration_names_the_unit() {
        let bad = GOOD.replace("window = \"500ms\"", "window = \"2\"");
        let err = Config::parse(&bad).unwrap_err().to_string();
        assert!(err.contains("unit"), "{err}");
    }

    #[test]
    fn shipped_tool_configs_parse() {
        for (file, kind) in [
            ("locust.toml", "locust"),
            ("k6.toml", "k6"),
            ("goose.toml", "goose"),
        ] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("config")
                .join(file);
            let c = Config::load(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(c.targets[0].signal.kind(), kind);
            assert_eq!(c.targets[0].control.kind(), kind);
        }
    }

    #[test]
    fn adapter_configs_are_checked() {
        let base = |signal: &str, control: &str, extra: &str| {
            format!(
                "[[targets]]\nname = \"t\"\nknob = \"concurrency\"\nceiling = 10\nfloor = 1\nhigh = 0.05\nwindow = \"3s\"\n{extra}\n[targets.signal]\n{signal}\n[targets.control]\n{control}\n"
            )
        };
        // Locust: window below the stats cache, bad spawn rate, rate knob.
        let text = base(
            "kind = \"locust\"\nurl = \"http://h:8089\"",
            "kind = \"locust\"\nurl = \"http://h:8089\"\nspawn_rate = 0",
            "",
        )
        .replace("window = \"3s\"", "window = \"1s\"")
        .replace("knob = \"concurrency\"", "knob = \"rate\"");
        let err = Config::parse(&text).unwrap_err().to_string();
        for field in ["targets[t].window", "control.spawn_rate", "targets[t].knob"] {
            assert!(err.contains(field), "{field} missing in {err}");
        }
        // k6: bad metric name; Goose: not a ws:// URL, ceiling above Goose's max.
        let text = base(
            "kind = \"k6\"\nurl = \"http://h:6565\"\nfailures = \"failed-attempts\"",
            "kind = \"goose\"\nurl = \"http://h:5117\"",
            "",
        )
        .replace("ceiling = 10", "ceiling = 200000");
        let err = Config::parse(&text).unwrap_err().to_string();
        for field in ["signal.failures", "control.url", "targets[t].ceiling"] {
            assert!(err.contains(field), "{field} missing in {err}");
        }
        // Mixed: a Locust signal confirms a generic http control (user_count).
        let text = base(
            "kind = \"locust\"\nurl = \"http://h:8089\"",
            "kind = \"http\"\nurl = \"http://h:9000/users\"",
            "",
        );
        Config::parse(&text).unwrap();
        // ...but a k6 signal has no offer, so http needs a read_back.
        let text = base(
            "kind = \"k6\"\nurl = \"http://h:6565\"",
            "kind = \"http\"\nurl = \"http://h:9000/users\"",
            "",
        );
        let err = Config::parse(&text).unwrap_err().to_string();
        assert!(err.contains("control.read_back"), "{err}");
    }

    #[test]
    fn syntax_error_gives_line() {
        let err = Config::parse("[[targets]\nname=").unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
    }
}
