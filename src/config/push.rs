//! `kind = "push"` and `[server.push]`: the push signal's config and checks.
//!
//! Why it lives here: config is the leaf every stage imports; receiving
//! pushes is `signal::push`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::auth::token;
use crate::config::duration;
use crate::promtext::exposition::is_label_name;

/// `kind = "push"`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PushSignalConfig {
    /// The `job` of the push path.
    pub job: String,
    /// Grouping labels a push must carry (a subset match; pushes from every
    /// matching group are summed).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Selector of all resolved attempts, over the pushed samples.
    pub attempts: Option<String>,
    /// Selector of successful attempts (alternative to `attempts`).
    pub successes: Option<String>,
    /// Selector of failed attempts.
    pub failures: String,
    /// `true`: pushes carry cumulative counters; `false`: each push carries
    /// one interval's counts (per-push deltas).
    pub cumulative: bool,
    /// Nothing pushed for this long is no signal (default: the window).
    #[serde(default, with = "duration", skip_serializing_if = "Option::is_none")]
    pub max_age: Option<Duration>,
    /// A grouping key not pushed for this long is forgotten (its counters
    /// leave the sums, and it no longer counts towards the cap of 10,000
    /// keys per target). Default: 10 minutes, or 10 windows if longer.
    #[serde(default, with = "duration", skip_serializing_if = "Option::is_none")]
    pub group_ttl: Option<Duration>,
}

/// The shortest default `group_ttl`.
pub(crate) const DEFAULT_GROUP_TTL: Duration = Duration::from_secs(600);

impl PushSignalConfig {
    /// `max_age` defaults to the target's window; `group_ttl` to
    /// [`DEFAULT_GROUP_TTL`] or 10 windows, whichever is longer.
    pub(crate) fn resolve(&mut self, window: Duration) {
        self.max_age.get_or_insert(window);
        self.group_ttl
            .get_or_insert(DEFAULT_GROUP_TTL.max(window.saturating_mul(10)));
    }

    /// Every problem, as (field, reason), with fields relative to `signal`.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.job.is_empty() {
            out.push(("job", "must not be empty".to_string()));
        }
        for name in self.labels.keys() {
            if !is_label_name(name) || name == "job" {
                out.push((
                    "labels",
                    format!("`{name}` is not a grouping label name (and `job` is set by `job`)"),
                ));
            }
        }
        out.extend(super::io_checks::attempts_xor_successes(
            self.attempts.is_some(),
            self.successes.is_some(),
        ));
        for (field, sel) in [
            ("attempts", self.attempts.as_deref()),
            ("successes", self.successes.as_deref()),
            ("failures", Some(self.failures.as_str())),
        ] {
            if let Some(sel) = sel {
                if let Some(reason) = super::io_checks::bad_selector(sel) {
                    out.push((field, reason));
                }
            }
        }
        if self.max_age.is_some_and(|d| d.is_zero()) {
            out.push(("max_age", "must be longer than 0s".to_string()));
        }
        if let Some(ttl) = self.group_ttl {
            if ttl.is_zero() {
                out.push(("group_ttl", "must be longer than 0s".to_string()));
            } else if self.max_age.is_some_and(|age| ttl < age) {
                out.push((
                    "group_ttl",
                    "must be at least max_age: a group would be forgotten while it is still read"
                        .to_string(),
                ));
            }
        }
        out
    }
}

/// `[server.push]`: the push endpoint's guards.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PushServerConfig {
    /// The largest push body accepted.
    #[serde(default = "default_max_body_bytes")]
    pub max_body_bytes: usize,
    /// The most samples one push may hold.
    #[serde(default = "default_max_samples")]
    pub max_samples: usize,
    /// A file holding the bearer token pushers must present.
    pub bearer_token_file: Option<PathBuf>,
    /// An environment variable holding that token.
    pub bearer_token_env: Option<String>,
}

impl Default for PushServerConfig {
    fn default() -> Self {
        PushServerConfig {
            max_body_bytes: default_max_body_bytes(),
            max_samples: default_max_samples(),
            bearer_token_file: None,
            bearer_token_env: None,
        }
    }
}

fn default_max_body_bytes() -> usize {
    1024 * 1024
}
fn default_max_samples() -> usize {
    100_000
}

impl PushServerConfig {
    /// Every problem, as (field, reason), with fields relative to `server.push`.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.max_body_bytes == 0 {
            out.push(("max_body_bytes", "must be at least 1".to_string()));
        }
        if self.max_samples == 0 {
            out.push(("max_samples", "must be at least 1".to_string()));
        }
        if let Err(e) = token::check(
            self.bearer_token_file.as_deref(),
            self.bearer_token_env.as_deref(),
        ) {
            out.push(("bearer_token_file", e));
        }
        out
    }
}
