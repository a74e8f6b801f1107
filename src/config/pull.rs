//! Config of the `pull` control (`[targets.control] kind = "pull"`) and of
//! the offer endpoint's guard (`[server.pull]`).
//!
//! Why it exists: k6 v2, Artillery, Gatling and home-grown scripts have no
//! admin API that can change their load live, but every one of them can ask.
//! With a `pull` control the controller writes nothing: it serves each
//! target's committed offer at `GET /api/v1/targets/{name}/offer`, and the
//! tool gates itself by it. A write is confirmed when a client has pulled
//! the new value (or, stronger, when the tool's own report, `read_back` or
//! the signal's offer gauge, shows it applied).
//!
//! What it may touch: nothing but [`crate::auth`] (to check that a token can
//! be read). Config is a leaf: it imports no stage of the pipeline.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{duration, ReadBackConfig};
use crate::auth::{AuthConfig, Credentials, Secret};

/// Distinct puller identities remembered per target (the oldest is
/// forgotten beyond this), so a script that invents a new id per request
/// cannot grow the controller's memory.
pub(crate) const DEFAULT_MAX_CLIENTS: usize = 10_000;

/// `[targets.control] kind = "pull"`: the tool pulls its offer.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PullControlConfig {
    /// No pull at all for this long: the offer is unconfirmed and, while it
    /// lasts, every window is a window without a valid signal (the tool has
    /// stopped asking, so it is gone or cannot reach the controller).
    #[serde(default = "default_stale_after", with = "duration")]
    pub stale_after: Duration,
    /// The tool's own report of what it applied (stronger evidence than a
    /// pull): a JSON pointer into any HTTP endpoint, e.g. a k6 gauge at
    /// `/v1/metrics/<name>`, pointer `/data/attributes/sample/value`.
    /// Without it, a Prometheus signal's `offer` gauge is used when given,
    /// else pull evidence.
    pub read_back: Option<ReadBackConfig>,
    /// Credentials for the read-back, from files or environment variables.
    #[serde(default)]
    pub auth: AuthConfig,
    /// Timeout of one read-back (when `read_back` gives none).
    #[serde(default = "default_timeout", with = "duration")]
    pub timeout: Duration,
    /// Checks of the evidence before a new offer counts as unconfirmed.
    #[serde(default = "default_confirm_attempts")]
    pub confirm_attempts: u32,
    /// Pause between checks. The default 15 × 200 ms gives pollers that
    /// ask once a second three chances.
    #[serde(default = "default_confirm_interval", with = "duration")]
    pub confirm_interval: Duration,
    /// Publications tried before an unconfirmed offer is reported.
    #[serde(default = "default_write_attempts")]
    pub write_attempts: u32,
}

fn default_stale_after() -> Duration {
    Duration::from_secs(5)
}
fn default_timeout() -> Duration {
    Duration::from_secs(2)
}
fn default_confirm_attempts() -> u32 {
    15
}
fn default_confirm_interval() -> Duration {
    Duration::from_millis(200)
}
fn default_write_attempts() -> u32 {
    1
}

impl PullControlConfig {
    /// Every problem, as (field, reason), fields relative to `control`.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.stale_after < Duration::from_secs(2) {
            // Pollers ask about once a second; less than two chances would
            // flap between confirmed and lost.
            out.push((
                "stale_after",
                "must be at least \"2s\": pollers ask about once a second".into(),
            ));
        }
        if self.timeout.is_zero() {
            out.push(("timeout", "must be longer than 0s".into()));
        }
        if self.confirm_attempts == 0 {
            out.push(("confirm_attempts", "must be at least 1".into()));
        }
        if self.write_attempts == 0 {
            out.push(("write_attempts", "must be at least 1".into()));
        }
        if let Some(rb) = &self.read_back {
            if !(rb.json_pointer.is_empty() || rb.json_pointer.starts_with('/')) {
                out.push((
                    "read_back.json_pointer",
                    format!(
                        "`{}` is not an RFC 6901 pointer; it must start with `/`, e.g. \"/data/attributes/sample/value\"",
                        rb.json_pointer
                    ),
                ));
            }
            if reqwest::Url::parse(&rb.url).is_err() {
                out.push(("read_back.url", format!("`{}` is not a URL", rb.url)));
            }
        }
        if let Err(e) = Credentials::resolve(&self.auth) {
            out.push(("auth", e.to_string()));
        }
        out
    }
}

/// `[server.pull]`: who may read offers.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PullServerConfig {
    /// A file holding the bearer token pullers must present. Required when
    /// the server listens off loopback and a target uses `kind = "pull"`.
    pub bearer_token_file: Option<PathBuf>,
    /// An environment variable holding that token.
    pub bearer_token_env: Option<String>,
    /// Distinct puller identities remembered per target.
    #[serde(default = "default_max_clients")]
    pub max_clients: usize,
}

fn default_max_clients() -> usize {
    DEFAULT_MAX_CLIENTS
}

impl Default for PullServerConfig {
    fn default() -> Self {
        PullServerConfig {
            bearer_token_file: None,
            bearer_token_env: None,
            max_clients: DEFAULT_MAX_CLIENTS,
        }
    }
}

impl PullServerConfig {
    /// The token pullers must present, read now (None: no token asked).
    pub fn token(&self) -> Result<Option<Secret>, String> {
        let auth = AuthConfig {
            bearer_token_file: self.bearer_token_file.clone(),
            bearer_token_env: self.bearer_token_env.clone(),
            ..AuthConfig::default()
        };
        match Credentials::resolve(&auth) {
            Ok(Credentials::Bearer(t)) => Ok(Some(t)),
            Ok(_) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Every problem, as (field, reason), fields relative to `server.pull`.
    /// `listen` is the server's address; `used` whether a target pulls.
    pub fn problems(&self, listen: SocketAddr, used: bool) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        let token = match self.token() {
            Ok(t) => t,
            Err(e) => {
                out.push(("bearer_token_file", e));
                return out;
            }
        };
        if self.max_clients == 0 {
            out.push(("max_clients", "must be at least 1".into()));
        }
        if used && token.is_none() && !listen.ip().is_loopback() {
            out.push((
                "bearer_token_file",
                format!(
                    "the server listens on {listen}, off loopback, and a target uses kind = \"pull\": anyone who can reach it could read offers; give bearer_token_file or bearer_token_env (pullers send `Authorization: Bearer <token>`), or listen on 127.0.0.1"
                ),
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Config, ControlConfig};

    fn config(listen: &str, server_extra: &str, control_extra: &str) -> String {
        format!(
            r#"
[server]
listen = "{listen}"
{server_extra}

[[targets]]
name = "k6"
knob = "concurrency"
ceiling = 40
floor = 1
high = 0.05

[targets.signal]
kind = "k6"
url = "http://127.0.0.1:6565"

[targets.control]
kind = "pull"
{control_extra}
"#
        )
    }

    #[test]
    fn five_lines_are_enough_on_loopback() {
        let c = Config::parse(&config("127.0.0.1:9464", "", "")).unwrap();
        let ControlConfig::Pull(p) = &c.targets[0].control else {
            panic!("expected pull")
        };
        assert_eq!(p.stale_after, std::time::Duration::from_secs(5));
        assert!(p.read_back.is_none());
    }

    #[test]
    fn the_shipped_pull_config_parses() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config/k6-pull.toml");
        let c = Config::load(&path).unwrap();
        assert_eq!(c.targets[0].control.kind(), "pull");
        assert_eq!(c.targets[0].signal.kind(), "k6");
    }

    #[test]
    fn off_loopback_needs_a_token() {
        let err = Config::parse(&config("0.0.0.0:9464", "", ""))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("server.pull.bearer_token_file") && err.contains("off loopback"),
            "{err}"
        );
        let var = "THROTTLE_PULL_TEST_TOKEN";
        std::env::set_var(var, "s3cret");
        let with_token = config(
            "0.0.0.0:9464",
            &format!("[server.pull]\nbearer_token_env = \"{var}\""),
            "",
        );
        let c = Config::parse(&with_token).unwrap();
        assert_eq!(
            c.server
                .pull
                .token()
                .unwrap()
                .map(|t| t.expose().to_string()),
            Some("s3cret".into())
        );
        let unset = with_token.replace(var, "THROTTLE_PULL_TEST_UNSET");
        let err = Config::parse(&unset).unwrap_err().to_string();
        assert!(err.contains("THROTTLE_PULL_TEST_UNSET"), "{err}");
    }

    #[test]
    fn bad_fields_are_named() {
        let text = config(
            "127.0.0.1:9464",
            "",
            "stale_after = \"500ms\"\nconfirm_attempts = 0\n[targets.control.read_back]\nurl = \"http://127.0.0.1:6565/v1/metrics/vus\"\njson_pointer = \"data\"",
        );
        let err = Config::parse(&text).unwrap_err().to_string();
        for field in [
            "targets[k6].control.stale_after",
            "targets[k6].control.confirm_attempts",
            "targets[k6].control.read_back.json_pointer",
        ] {
            assert!(err.contains(field), "{field} missing in {err}");
        }
        let typo = config("127.0.0.1:9464", "", "stale = \"5s\"");
        let err = Config::parse(&typo).unwrap_err().to_string();
        assert!(err.contains("stale"), "{err}");
    }
}
