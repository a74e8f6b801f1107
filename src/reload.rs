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
use tracing::{error, info, warn};

use crate::config::{Config, ConfigError, ServerConfig, TargetConfig};
use crate::group::GroupTask;
use crate::supervisor::{build_tasks, http_client, RunOptions, SupervisorError};
use crate::target::TargetTask;
use crate::telemetry::metrics::ReloadLabels;
use crate::telemetry::Telemetry;

/// How a target task starts and stops around a reload.
#[derive(Debug, Clone, Default)]
pub struct Lifecycle {
    /// Resume from this state instead of publishing the opening offer.
    pub resume: Option<Resume>,
    /// Cancelled (before the task's own token) when a reload replaces the
    /// task: it then stops without applying `on_exit`.
    pub handover: CancellationToken,
}

/// The governor state a changed target keeps across a reload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resume {
    /// The offer in effect.
    pub current: f64,
    /// The congestion memory.
    pub last_bad: Option<f64>,
    /// The clean streak.
    pub clean_streak: u32,
}

/// One governed target: a single tool, or a group of instances.
pub enum Unit {
    /// One tool ([`crate::target`]).
    Single(Box<TargetTask>),
    /// A group ([`crate::group`]).
    Group(Box<GroupTask>),
}

impl Unit {
    /// Builds the unit of one validated target.
    pub fn build(
        t: &TargetConfig,
        server: &ServerConfig,
        telemetry: &Arc<Telemetry>,
        opts: &RunOptions,
    ) -> Result<Unit, SupervisorError> {
        if t.is_group() {
            let task = GroupTask::new(t, telemetry.clone(), opts.dry_run, http_client()?).map_err(
                |reason| SupervisorError::Target {
                    target: t.name.clone(),
                    reason,
                },
            )?;
            return Ok(Unit::Group(Box::new(task)));
        }
        let one = Config {
            server: server.clone(),
            targets: vec![t.clone()],
        };
        let task =
            build_tasks(&one, telemetry, opts)?
                .pop()
                .ok_or_else(|| SupervisorError::Target {
                    target: t.name.clone(),
                    reason: "no task was built".into(),
                })?;
        Ok(Unit::Single(Box::new(task)))
    }

    /// The groups of a config (single targets come from [`build_tasks`]).
    pub fn build_groups(
        config: &Config,
        telemetry: &Arc<Telemetry>,
        opts: &RunOptions,
    ) -> Result<Vec<Unit>, SupervisorError> {
        config
            .targets
            .iter()
            .filter(|t| t.is_group())
            .map(|t| Unit::build(t, &config.server, telemetry, opts))
            .collect()
    }

    fn set_lifecycle(&mut self, lifecycle: Lifecycle) {
        match self {
            Unit::Single(t) => t.lifecycle = lifecycle,
            Unit::Group(g) => g.lifecycle = lifecycle,
        }
    }

    fn handover(&self) -> CancellationToken {
        match self {
            Unit::Single(t) => t.lifecycle.handover.clone(),
            Unit::Group(g) => g.lifecycle.handover.clone(),
        }
    }

    async fn run(self, cancel: CancellationToken) {
        match self {
            Unit::Single(t) => t.run(cancel).await,
            Unit::Group(g) => g.run(cancel).await,
        }
    }
}

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
    Build(#[from] SupervisorError),
    /// The push endpoint's settings could not be applied.
    #[error("server.push: {0}")]
    Push(String),
}

/// The running targets, by name: owns their tasks and applies reloads.
/// Cheap to clone; reloads are serialized.
#[derive(Clone)]
pub struct Roster {
    inner: Arc<tokio::sync::Mutex<Inner>>,
}

struct Inner {
    config: Config,
    entries: BTreeMap<String, Entry>,
    parent: CancellationToken,
    telemetry: Arc<Telemetry>,
    opts: RunOptions,
}

struct Entry {
    config: TargetConfig,
    cancel: CancellationToken,
    handover: CancellationToken,
    handle: JoinHandle<()>,
}

fn spawn(unit: Unit, config: &TargetConfig, parent: &CancellationToken) -> Entry {
    let cancel = parent.child_token();
    let handover = unit.handover();
    let handle = tokio::spawn(unit.run(cancel.clone()));
    Entry {
        config: config.clone(),
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
    /// Spawns every unit under `parent`.
    pub fn start(
        config: &Config,
        units: Vec<Unit>,
        parent: &CancellationToken,
        telemetry: Arc<Telemetry>,
        opts: RunOptions,
    ) -> Roster {
        let mut entries = BTreeMap::new();
        let mut units = units;
        for t in &config.targets {
            if let Some(i) = units.iter().position(|u| unit_name(u) == t.name) {
                let unit = units.swap_remove(i);
                entries.insert(t.name.clone(), spawn(unit, t, parent));
            }
        }
        Roster {
            inner: Arc::new(tokio::sync::Mutex::new(Inner {
                config: config.clone(),
                entries,
                parent: parent.clone(),
                telemetry,
                opts,
            })),
        }
    }

    /// The names of the running targets.
    pub async fn names(&self) -> Vec<String> {
        self.inner.lock().await.entries.keys().cloned().collect()
    }

    /// Applies a validated config; on error nothing has changed.
    pub async fn reload(&self, new: Config) -> Result<ReloadSummary, ReloadError> {
        let mut inner = self.inner.lock().await;
        let inner = &mut *inner;
        let old: BTreeMap<String, TargetConfig> = inner
            .entries
            .iter()
            .map(|(k, e)| (k.clone(), e.config.clone()))
            .collect();
        let mut summary = ReloadSummary::default();

        // Build everything new first: a reload that cannot be built changes nothing.
        let mut built: Vec<(TargetConfig, Unit, Option<bool>)> = Vec::new();
        for t in &new.targets {
            let change = match old.get(&t.name) {
                None => None,
                Some(o) if same_config(o, t) => {
                    summary.unchanged.push(t.name.clone());
                    continue;
                }
                Some(o) => Some(identity(o) == identity(t)),
            };
            let unit = Unit::build(t, &new.server, &inner.telemetry, &inner.opts)?;
            built.push((t.clone(), unit, change));
        }
        inner
            .telemetry
            .push
            .configure(&new.server.push)
            .map_err(ReloadError::Push)?;
        if new.server.listen != inner.config.server.listen {
            warn!(
                "server.listen changed to {}; restart the controller to apply it",
                new.server.listen
            );
        }

        // Removed targets: stop with on_exit, then forget them.
        for name in old.keys() {
            if !new.targets.iter().any(|t| &t.name == name) {
                if let Some(e) = inner.entries.remove(name) {
                    e.stop(false).await;
                }
                inner.telemetry.unregister(name);
                summary.removed.push(name.clone());
            }
        }

        for (t, mut unit, change) in built {
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
                        unit.set_lifecycle(Lifecycle {
                            resume: resume_state(&inner.telemetry, &name),
                            handover: CancellationToken::new(),
                        });
                        summary.kept_state.push(name.clone());
                    } else {
                        summary.restarted.push(name.clone());
                    }
                    inner.telemetry.set_members(&name, None);
                }
            }
            let entry = spawn(unit, &t, &inner.parent);
            inner.entries.insert(name, entry);
        }
        inner.config = new;
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

fn unit_name(u: &Unit) -> &str {
    match u {
        Unit::Single(t) => &t.config.name,
        Unit::Group(g) => &g.config.name,
    }
}

/// The state a stopped target leaves: the offer after its last decision.
fn resume_state(telemetry: &Telemetry, name: &str) -> Option<Resume> {
    let status = telemetry.statuses().into_iter().find(|s| s.name == name)?;
    let current = telemetry
        .history(name)
        .last()
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
    let label = ReloadLabels {
        result: if result.is_ok() {
            "applied"
        } else {
            "rejected"
        },
    };
    telemetry.metrics.config_reloads.get_or_create(&label).inc();
    match &result {
        Ok(s) => info!(
            added = ?s.added, removed = ?s.removed, kept_state = ?s.kept_state, restarted = ?s.restarted,
            "Config reloaded ({why}): added {:?}, removed {:?}, changed with state kept {:?}, restarted fresh {:?}, unchanged {}",
            s.added, s.removed, s.kept_state, s.restarted, s.unchanged.len()
        ),
        Err(e) => error!("Reload ({why}) rejected; the running config stays in effect: {e}"),
    }
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
