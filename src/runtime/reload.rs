//! Hot reload: apply a new config to a running controller.
//!
//! Why it exists: a distributed test runs for hours and its fleet changes
//! under it; restarting the controller would drop every target's learned
//! congestion memory and republish every opening offer. On SIGHUP, or when
//! the config file changes ([`watch`]), the new config is loaded and
//! validated completely; an invalid one is rejected with every error and
//! the running config stays in effect. A valid one is applied target by
//! target, matched by name:
//!
//! - added targets start (publishing their opening offer);
//! - removed targets stop, with their `on_exit` applied;
//! - changed targets restart **with their governor state** (`current`,
//!   `last_bad`, clean streak) and without republishing `start`, unless
//!   their signal or control *identity* changed ([`identity`]: the URLs,
//!   queries, selectors and knob, not timeouts or headers): then they start
//!   fresh, and when the control changed, the old one's `on_exit` applies;
//! - unchanged targets are not touched.
//!
//! Everything new is built before anything is stopped, so a reload that
//! cannot be built changes nothing. The window history of a restarted
//! target starts again.
//!
//! What it may touch: the config file, SIGHUP, and the target tasks it
//! owns through the [`Roster`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use thiserror::Error;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::config::{Config, ConfigError, TargetConfig};
use crate::engine::build::Builder;
use crate::engine::{BuildError, TargetTask};
use crate::telemetry::export::{emit_reload, Reload};
use crate::telemetry::Telemetry;

pub use crate::engine::{Lifecycle, Resume};

/// What a reload did, by target name.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReloadSummary {
    /// Started.
    pub added: Vec<String>,
    /// Stopped, `on_exit` applied.
    pub removed: Vec<String>,
    /// Restarted with their governor state.
    pub kept_state: Vec<String>,
    /// Restarted fresh: their signal or control identity changed.
    pub restarted: Vec<String>,
    /// Not touched.
    pub unchanged: Vec<String>,
}

/// Why a reload was rejected (the running config stays in effect).
#[derive(Debug, Error)]
pub enum ReloadError {
    /// The new config is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A new or changed target could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The push endpoint's settings could not be applied.
    #[error("server.push: {0}")]
    Push(String),
    /// The offer endpoint's token could not be read.
    #[error("server.pull: {0}")]
    Pull(String),
}

/// The running targets, by name: owns their tasks and applies reloads.
/// Cheap to clone; reloads are serialized.
#[derive(Clone)]
pub struct Roster {
    inner: Arc<tokio::sync::Mutex<Inner>>,
}

struct Inner {
    /// The running listen address (a reload cannot move it). Only this is
    /// kept of the config: each task holds its own target's config, and a
    /// second copy of every target costs memory at scale.
    listen: std::net::SocketAddr,
    entries: BTreeMap<String, Entry>,
    parent: CancellationToken,
    telemetry: Arc<Telemetry>,
    builder: Builder,
}

struct Entry {
    config: Arc<TargetConfig>,
    cancel: CancellationToken,
    handover: CancellationToken,
    handle: JoinHandle<()>,
}

fn spawn(task: TargetTask, parent: &CancellationToken) -> Entry {
    let cancel = parent.child_token();
    let handover = task.lifecycle.handover.clone();
    // The entry shares the task's config rather than keeping a copy.
    let config = task.config.clone();
    let handle = tokio::spawn(task.run(cancel.clone()));
    Entry {
        config,
        cancel,
        handover,
        handle,
    }
}

/// How long a stopping target may take: its writer's grace plus `on_exit`.
fn stop_bound(t: &TargetConfig) -> Duration {
    Duration::from_secs(2).max(t.window) * 2 + Duration::from_secs(1)
}

impl Entry {
    /// Stops the task; with `handover`, without `on_exit`.
    async fn stop(self, handover: bool) {
        if handover {
            self.handover.cancel();
        }
        self.cancel.cancel();
        let bound = stop_bound(&self.config);
        let mut handle = self.handle;
        if tokio::time::timeout(bound, &mut handle).await.is_err() {
            warn!(target = %self.config.name, "Target did not stop within {bound:?}; aborted");
            handle.abort();
        }
    }
}

/// The identity of a target's signal and control: what makes its learned
/// state meaningful. Timeouts, headers, tokens and write templates are
/// tuning; URLs, queries, selectors, jobs and the knob are identity.
pub fn identity(t: &TargetConfig) -> String {
    let mut v = serde_json::json!({
        "knob": t.knob,
        "group": t.is_group(),
        "signal": &t.signal,
        "control": control_identity(t),
    });
    strip_tuning(&mut v);
    v.to_string()
}

fn control_identity(t: &TargetConfig) -> serde_json::Value {
    let mut v = serde_json::to_value(&t.control).unwrap_or_default();
    strip_tuning(&mut v);
    v
}

fn strip_tuning(v: &mut serde_json::Value) {
    const TUNING: &[&str] = &[
        "timeout",
        "headers",
        "confirm_attempts",
        "confirm_interval",
        "write_attempts",
        "max_age",
        "bearer_token_file",
        "bearer_token_env",
        "basic_auth_password_file",
        "basic_auth_password_env",
        "content_type",
        "method",
        "body",
    ];
    match v {
        serde_json::Value::Object(o) => {
            o.retain(|k, x| !TUNING.contains(&k.as_str()) && !x.is_null());
            for x in o.values_mut() {
                strip_tuning(x);
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_tuning),
        _ => {}
    }
}

fn same_config(a: &TargetConfig, b: &TargetConfig) -> bool {
    serde_json::to_value(a).ok() == serde_json::to_value(b).ok()
}

impl Roster {
    /// Spawns every task under `parent`; `builder` builds those a reload adds.
    pub fn start(
        config: &Config,
        tasks: Vec<TargetTask>,
        parent: &CancellationToken,
        builder: Builder,
    ) -> Roster {
        let mut entries = BTreeMap::new();
        let mut tasks: BTreeMap<String, TargetTask> = tasks
            .into_iter()
            .map(|t| (t.config.name.clone(), t))
            .collect();
        for t in &config.targets {
            if let Some(task) = tasks.remove(&t.name) {
                entries.insert(t.name.clone(), spawn(task, parent));
            }
        }
        Roster {
            inner: Arc::new(tokio::sync::Mutex::new(Inner {
                listen: config.server.listen,
                entries,
                parent: parent.clone(),
                telemetry: builder.telemetry().clone(),
                builder,
            })),
        }
    }

    /// Applies a validated config; on error nothing has changed.
    pub async fn reload(&self, new: Config) -> Result<ReloadSummary, ReloadError> {
        let mut inner = self.inner.lock().await;
        let inner = &mut *inner;
        let old: BTreeMap<String, Arc<TargetConfig>> = inner
            .entries
            .iter()
            .map(|(k, e)| (k.clone(), e.config.clone()))
            .collect();
        let mut summary = ReloadSummary::default();

        // Build everything new first: a reload that cannot be built changes nothing.
        let mut built: Vec<(TargetConfig, TargetTask, Option<bool>)> = Vec::new();
        for t in &new.targets {
            let change = match old.get(&t.name) {
                None => None,
                Some(o) if same_config(o, t) => {
                    summary.unchanged.push(t.name.clone());
                    continue;
                }
                Some(o) => Some(identity(o) == identity(t)),
            };
            let task = inner.builder.task(t)?;
            built.push((t.clone(), task, change));
        }
        inner
            .builder
            .push_store()
            .configure(&new.server.push)
            .map_err(ReloadError::Push)?;
        let pull_token = new.server.pull.token().map_err(ReloadError::Pull)?;
        inner
            .builder
            .pull_board()
            .configure(pull_token, new.server.pull.max_clients);
        if new.server.listen != inner.listen {
            warn!(
                "server.listen changed to {}; restart the controller to apply it",
                new.server.listen
            );
        }

        // Removed targets: stop with on_exit, then forget them.
        let kept: std::collections::BTreeSet<&str> =
            new.targets.iter().map(|t| t.name.as_str()).collect();
        for name in old.keys() {
            if !kept.contains(name.as_str()) {
                if let Some(e) = inner.entries.remove(name) {
                    e.stop(false).await;
                }
                emit_reload(&inner.telemetry, Reload::Removed(name));
                inner.builder.pull_board().remove_target(name);
                summary.removed.push(name.clone());
            }
        }

        for (t, mut task, change) in built {
            let name = t.name.clone();
            match change {
                None => summary.added.push(name.clone()),
                Some(same_identity) => {
                    let old_t = &old[&name];
                    let handover = same_identity || control_identity(old_t) == control_identity(&t);
                    if let Some(e) = inner.entries.remove(&name) {
                        e.stop(handover).await;
                    }
                    if same_identity {
                        task.lifecycle = Lifecycle {
                            resume: resume_state(&inner.telemetry, &name),
                            handover: CancellationToken::new(),
                        };
                        summary.kept_state.push(name.clone());
                    } else {
                        summary.restarted.push(name.clone());
                    }
                    emit_reload(&inner.telemetry, Reload::Restarting(&name));
                }
            }
            let entry = spawn(task, &inner.parent);
            inner.entries.insert(name, entry);
        }
        Ok(summary)
    }

    /// Waits for every task after the parent token was cancelled; aborts
    /// what is still running after `grace`.
    pub async fn drain(&self, grace: Duration) {
        let mut inner = self.inner.lock().await;
        let entries = std::mem::take(&mut inner.entries);
        let deadline = tokio::time::Instant::now() + grace;
        for (name, e) in entries {
            e.cancel.cancel();
            let mut handle = e.handle;
            if tokio::time::timeout_at(deadline, &mut handle)
                .await
                .is_err()
            {
                warn!(target = %name, "Target did not stop within {grace:?}; aborting it");
                handle.abort();
            }
        }
    }
}

/// The state a stopped target leaves: the offer after its last decision.
fn resume_state(telemetry: &Telemetry, name: &str) -> Option<Resume> {
    let status = telemetry.status(name)?;
    let current = telemetry
        .last_record(name)
        .map(|r| r.to)
        .unwrap_or(status.offer);
    Some(Resume {
        current,
        last_bad: status.last_bad,
        clean_streak: status.clean_streak,
    })
}

/// Loads `path` and applies it; counts and logs the result.
pub async fn apply_file(
    path: &Path,
    roster: &Roster,
    why: &str,
) -> Result<ReloadSummary, ReloadError> {
    let telemetry = roster.inner.lock().await.telemetry.clone();
    let result = match Config::load(path) {
        Ok(config) => roster.reload(config).await,
        Err(e) => Err(e.into()),
    };
    let reload = match &result {
        Ok(s) => Reload::Applied {
            why,
            added: &s.added,
            removed: &s.removed,
            kept_state: &s.kept_state,
            restarted: &s.restarted,
            unchanged: s.unchanged.len(),
        },
        Err(e) => Reload::Rejected {
            why,
            error: e.to_string(),
        },
    };
    emit_reload(&telemetry, reload);
    result
}

/// Reloads on SIGHUP, and when the file's content changes (checked every
/// `poll`; `None` watches SIGHUP only), until `cancel` fires.
///
/// The content it compares against is read when `watch` is called (not
/// when the future first runs), so a change made right after start-up is
/// not missed.
pub fn watch(
    path: PathBuf,
    roster: Roster,
    poll: Option<Duration>,
    cancel: CancellationToken,
) -> impl std::future::Future<Output = ()> + Send {
    let last = std::fs::read(&path).ok();
    watch_from(path, roster, poll, cancel, last)
}

async fn watch_from(
    path: PathBuf,
    roster: Roster,
    poll: Option<Duration>,
    cancel: CancellationToken,
    mut last: Option<Vec<u8>>,
) {
    #[cfg(unix)]
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .map_err(|e| warn!("Cannot watch SIGHUP: {e}; reloads follow file changes only"))
        .ok();
    let mut ticker = poll.map(|d| {
        let mut t = tokio::time::interval(d);
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        t
    });
    loop {
        #[cfg(unix)]
        let hangup = async {
            match &mut hup {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let hangup = std::future::pending::<()>();
        let tick = async {
            match &mut ticker {
                Some(t) => {
                    t.tick().await;
                }
                None => std::future::pending().await,
            }
        };
        let why = tokio::select! {
            _ = cancel.cancelled() => return,
            _ = hangup => "SIGHUP",
            _ = tick => {
                let now = tokio::fs::read(&path).await.ok();
                if now.is_none() || now == last {
                    continue;
                }
                "the config file changed"
            }
        };
        last = tokio::fs::read(&path).await.ok();
        let _ = apply_file(&path, &roster, why).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(extra: &str, url: &str) -> TargetConfig {
        let text = format!(
            r#"
[[targets]]
name = "t"
knob = "concurrency"
ceiling = 100
floor = 1
high = 0.05
{extra}
[targets.signal]
kind = "prometheus"
url = "{url}"
attempts = 'a_total'
failures = 'f_total'
timeout = "1s"
[targets.control]
kind = "http"
url = "http://127.0.0.1:1/w"
[targets.control.read_back]
url = "http://127.0.0.1:1/w"
json_pointer = "/w"
"#
        );
        Config::parse(&text).unwrap().targets.remove(0)
    }

    #[test]
    fn tuning_keeps_identity_and_urls_change_it() {
        let base = target("", "http://127.0.0.1:1/metrics");
        let mut tuned = base.clone();
        tuned.ceiling = Some(200.0);
        tuned.high = 0.1;
        let mut retimed = base.clone();
        if let crate::config::SignalConfig::Prometheus(p) = &mut retimed.signal {
            p.timeout = Duration::from_secs(3);
            p.headers.insert("x".into(), "y".into());
        }
        let moved = target("", "http://127.0.0.1:2/metrics");
        assert_eq!(identity(&base), identity(&retimed));
        assert!(!same_config(&base, &retimed));
        assert_eq!(identity(&base), identity(&tuned));
        assert_ne!(identity(&base), identity(&moved));
        assert_eq!(control_identity(&base), control_identity(&moved));
    }
}
