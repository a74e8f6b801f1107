//! `kind = "promql"`: the PromQL signal's config and its checks.
//!
//! Why it lives here: config is the leaf every stage imports; the signal
//! itself (queries, answers, freshness) is `signal::promql`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::auth::token;
use crate::config::duration;
use crate::promtext::promql::{check_balanced, promql_duration};

/// `kind = "promql"`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PromqlSignalConfig {
    /// The base URL of the Prometheus HTTP API, e.g. `http://prometheus:9090`
    /// (Mimir: `http://mimir/prometheus`); `/api/v1/query` is appended.
    pub url: String,
    /// PromQL returning all resolved attempts (summed over the result).
    pub attempts: Option<String>,
    /// PromQL returning successful attempts (alternative to `attempts`).
    pub successes: Option<String>,
    /// PromQL returning failed attempts (summed over the result).
    pub failures: String,
    /// `cumulative` counters (default) or the window's `increase`.
    #[serde(default)]
    pub mode: PromqlMode,
    /// A sample older than this is no signal (default: the target's window).
    #[serde(default, with = "duration", skip_serializing_if = "Option::is_none")]
    pub max_age: Option<Duration>,
    /// PromQL returning sample timestamps (default: `timestamp()` of the
    /// selectors in the expressions).
    pub freshness: Option<String>,
    /// Timeout of each query.
    #[serde(default = "default_query_timeout", with = "duration")]
    pub timeout: Duration,
    /// Extra request headers.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Tenant for Mimir, Cortex or Loki-style multi-tenancy (`X-Scope-OrgID`).
    pub org_id: Option<String>,
    /// A file holding a bearer token (re-read at every reload).
    pub bearer_token_file: Option<PathBuf>,
    /// An environment variable holding a bearer token.
    pub bearer_token_env: Option<String>,
    /// Basic auth user (Grafana Cloud, some Mimir and Thanos gateways).
    pub basic_auth_user: Option<String>,
    /// A file holding the basic auth password.
    pub basic_auth_password_file: Option<PathBuf>,
    /// An environment variable holding the basic auth password.
    pub basic_auth_password_env: Option<String>,
    /// The target's window, what `{{window}}` stands for (set by
    /// `resolve`, never read from the file): `increase`
    /// answers cover that range, whenever they are asked.
    #[serde(skip)]
    pub range: Option<Duration>,
}

fn default_query_timeout() -> Duration {
    Duration::from_secs(2)
}

/// What the expressions return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PromqlMode {
    /// Cumulative counters; windows come from deltas.
    #[default]
    Cumulative,
    /// The window's increase, fed to the governor as the window.
    Increase,
}

impl PromqlSignalConfig {
    /// Fills what depends on the target: `max_age` defaults to the window,
    /// and `{{window}}` in an expression becomes the window as a PromQL
    /// duration (`2s`, `500ms`).
    pub(crate) fn resolve(&mut self, window: Duration) {
        self.max_age.get_or_insert(window);
        self.range = Some(window);
        let w = promql_duration(window);
        for expr in [
            self.attempts.as_mut(),
            self.successes.as_mut(),
            Some(&mut self.failures),
            self.freshness.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            *expr = expr.replace("{{window}}", &w);
        }
    }

    /// Every problem, as (field, reason), with fields relative to `signal`.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        out.extend(super::io_checks::attempts_xor_successes(
            self.attempts.is_some(),
            self.successes.is_some(),
        ));
        for (field, expr) in [
            ("attempts", self.attempts.as_deref()),
            ("successes", self.successes.as_deref()),
            ("failures", Some(self.failures.as_str())),
            ("freshness", self.freshness.as_deref()),
        ] {
            let Some(expr) = expr else { continue };
            if expr.trim().is_empty() {
                out.push((field, "must not be empty".to_string()));
            } else if let Err(e) = check_balanced(expr) {
                out.push((field, format!("`{expr}` is not valid PromQL: {e}")));
            }
        }
        if self.timeout.is_zero() {
            out.push(("timeout", "must be longer than 0s".to_string()));
        }
        if self.max_age.is_some_and(|d| d.is_zero()) {
            out.push(("max_age", "must be longer than 0s".to_string()));
        }
        if let Err(e) = token::check(
            self.bearer_token_file.as_deref(),
            self.bearer_token_env.as_deref(),
        ) {
            out.push(("bearer_token_file", e));
        }
        let password = token::check(
            self.basic_auth_password_file.as_deref(),
            self.basic_auth_password_env.as_deref(),
        );
        match (&self.basic_auth_user, password) {
            (_, Err(e)) => out.push(("basic_auth_password_file", e)),
            (Some(_), Ok(())) if self.basic_auth_password_file.is_none() && self.basic_auth_password_env.is_none() => out.push((
                "basic_auth_password_file",
                "basic auth needs a password: give `basic_auth_password_file` or `basic_auth_password_env`".to_string(),
            )),
            (None, Ok(())) if self.basic_auth_password_file.is_some() || self.basic_auth_password_env.is_some() => {
                out.push(("basic_auth_user", "a basic auth password needs `basic_auth_user`".to_string()))
            }
            _ => {}
        }
        if self.basic_auth_user.is_some()
            && (self.bearer_token_file.is_some() || self.bearer_token_env.is_some())
        {
            out.push((
                "basic_auth_user",
                "give either basic auth or a bearer token, not both".to_string(),
            ));
        }
        if out.is_empty() {
            if let Err(e) = check_headers(self) {
                out.push(("headers", e));
            }
        }
        out
    }
}

/// Header names and values (and the tenant) must be valid in a request.
fn check_headers(cfg: &PromqlSignalConfig) -> Result<(), String> {
    for (k, v) in &cfg.headers {
        reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|e| format!("header `{k}`: {e}"))?;
        reqwest::header::HeaderValue::from_str(v).map_err(|e| format!("header `{k}`: {e}"))?;
    }
    if let Some(org) = &cfg.org_id {
        reqwest::header::HeaderValue::from_str(org).map_err(|e| format!("org_id: {e}"))?;
    }
    Ok(())
}
