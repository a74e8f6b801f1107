//! Push signal: Prometheus text pushed to the controller, Pushgateway-style.
//!
//! Why it exists: NoSQLBench, nmbrs, Artillery and many scripts never serve
//! a scrape endpoint; they push Prometheus text to a Pushgateway. The
//! controller accepts the same pushes itself, on its own listener, at the
//! Pushgateway paths (`PUT`/`POST`/`DELETE /metrics/job/<job>{/<label>/<value>}`,
//! with `@base64` segments), so those tools need no extra component.
//!
//! How a push becomes counters: each `kind = "push"` target registers an
//! [`Inbox`] naming a job and grouping labels (a subset match), when its
//! task is built, before the listener opens: the first push is taken (it
//! was answered 404 until the task had first run, CI run 67). A push
//! whose grouping key matches is evaluated against the inbox's selectors
//! once, at ingest, and only the two sums are kept:
//! - `cumulative = true`: the pushed values are cumulative counters; the
//!   latest sums are kept per grouping key (`PUT` replaces a group, `POST`
//!   replaces the metrics it names, `DELETE` drops the group), and a read sums
//!   them over every matching group, so many pushers can feed one target.
//! - `cumulative = false`: every push carries one interval's counts; they
//!   are added to running totals at ingest, so a read sees cumulative
//!   counters whose window deltas are the sum of the pushes in the window.
//!
//! A target that has received nothing within `max_age` (default: one
//! window) has no signal ([`SignalError::Stale`]).
//!
//! Lag: pushed counters are only as new as the last push, so each read
//! carries a lag hint ([`Counters::lag`]): the longest interval observed
//! between two consecutive pushes of one grouping key (the push interval
//! of the slowest pusher), `None` until some group has pushed twice.
//!
//! Guards: a body-size limit enforced while reading (and a 3 s deadline for
//! the body), a sample limit, a cap on grouping keys per target, and an
//! optional bearer token ([`crate::auth::token`]). A grouping key not pushed for
//! `group_ttl` (default 10 minutes, or 10 windows) is forgotten, so the cap
//! frees up again once a burst of keys stops (issue 27: after 10,000 keys
//! every new one was refused for good).
//!
//! What it may touch: nothing but its own state. The HTTP side (the
//! token, content type, body limit and deadline) is `http::push`, which
//! calls [`PushStore::ingest`].

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use thiserror::Error;

use super::{Counters, SignalError};
use crate::auth::token;
pub use crate::config::push::{PushServerConfig, PushSignalConfig};
pub use grouping::{parse_grouping, GroupingKey};

mod grouping;
use crate::promtext::exposition::{for_each_sample, Limits};
use crate::promtext::selector::Selector;

/// Grouping keys kept per target; more pushers than this are refused.
pub const MAX_GROUPS_PER_TARGET: usize = 10_000;

/// Why a push was refused. Each maps to an HTTP status and a bounded label.
#[derive(Debug, Error)]
pub enum PushError {
    /// No or the wrong bearer token.
    #[error("a valid bearer token is required")]
    Unauthorized,
    /// The body exceeded the limit.
    #[error("the push is larger than the {0}-byte limit ([server.push] max_body_bytes)")]
    TooLarge(usize),
    /// A format other than Prometheus text.
    #[error("only the Prometheus text format is accepted (got content type `{0}`)")]
    Unsupported(String),
    /// The path is not `/metrics/job/<job>{/<label>/<value>}`.
    #[error("bad push path: {0}")]
    Path(String),
    /// The body is not valid exposition text.
    #[error("cannot parse the push: {0}")]
    Parse(#[from] crate::promtext::exposition::ExpositionError),
    /// A pushed sample carries a grouping label with another value.
    #[error("pushed label {label}=\"{pushed}\" conflicts with the grouping key's \"{key}\"")]
    Conflict {
        /// The label.
        label: String,
        /// Its value in the sample.
        pushed: String,
        /// Its value in the path.
        key: String,
    },
    /// No target reads this job and grouping key.
    #[error(
        "no target reads job `{0}` with these grouping labels (signal.kind = \"push\", signal.job)"
    )]
    NoTarget(String),
    /// Targets read this group, but the push lacks their series.
    #[error("no target could use the push: {0}")]
    Unusable(String),
    /// The body did not arrive within [`BODY_READ_TIMEOUT`].
    #[error("the push body did not arrive within {0:?}; send it at once")]
    Timeout(Duration),
}

/// The whole body of a push must arrive within this, counted from when the
/// handler starts reading it. A push is small (64 KiB at most by default)
/// and comes from a load tool next door; a client that dribbles its body
/// holds a connection, so it is cut off early (issue 27: 300 sockets each
/// sending one byte of a 60 kB body starved `/metrics` for as long as the
/// 10 s request timeout let them).
pub const BODY_READ_TIMEOUT: Duration = Duration::from_secs(3);

impl PushError {
    /// The HTTP status a refused push is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            PushError::Unauthorized => StatusCode::UNAUTHORIZED,
            PushError::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            PushError::Unsupported(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            PushError::Path(_) | PushError::Parse(_) | PushError::Conflict { .. } => {
                StatusCode::BAD_REQUEST
            }
            PushError::NoTarget(_) => StatusCode::NOT_FOUND,
            PushError::Unusable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            PushError::Timeout(_) => StatusCode::REQUEST_TIMEOUT,
        }
    }

    /// A bounded label for `throttle_push_requests_total{result}`.
    pub fn result(&self) -> &'static str {
        match self {
            PushError::Unauthorized => "unauthorized",
            PushError::TooLarge(_) => "too_large",
            PushError::Unsupported(_) => "unsupported",
            PushError::Path(_) | PushError::Parse(_) | PushError::Conflict { .. } => "bad_request",
            PushError::NoTarget(_) => "no_target",
            PushError::Unusable(_) => "unusable",
            PushError::Timeout(_) => "timeout",
        }
    }
}

/// The push method, as Pushgateway defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushMethod {
    /// Replace the whole group.
    Put,
    /// Replace the metrics the push names.
    Post,
    /// Drop the group.
    Delete,
}

/// One target's view of the pushes.
#[derive(Debug)]
pub struct Inbox {
    job: String,
    labels: BTreeMap<String, String>,
    first: Selector,
    successes_form: bool,
    failures: Selector,
    cumulative: bool,
    max_age: Option<Duration>,
    group_ttl: Duration,
    state: Mutex<InboxState>,
}

#[derive(Debug, Default)]
struct InboxState {
    /// Cumulative mode: the latest sums per grouping key.
    groups: BTreeMap<GroupingKey, (Option<f64>, Option<f64>)>,
    /// Delta mode: the running totals.
    totals: (f64, f64),
    last_push: Option<Instant>,
    /// Per grouping key: its last push, and the interval before it.
    pushes: BTreeMap<GroupingKey, (Instant, Option<Duration>)>,
    /// When expired keys were last looked for.
    pruned: Option<Instant>,
}

impl InboxState {
    /// Forgets the grouping keys not pushed within `ttl` (looked for at
    /// most once per `ttl / 10`, so a burst of pushes does not scan 10,000
    /// keys each).
    fn prune(&mut self, now: Instant, ttl: Duration) {
        if self
            .pruned
            .is_some_and(|t| now.saturating_duration_since(t) < ttl / 10)
        {
            return;
        }
        self.pruned = Some(now);
        let expired: Vec<GroupingKey> = self
            .pushes
            .iter()
            .filter(|(_, (at, _))| now.saturating_duration_since(*at) > ttl)
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            self.pushes.remove(&key);
            self.groups.remove(&key);
        }
        // A group whose push was refused (neither series matched) has no
        // push time and nothing to sum: it goes too.
        let pushes = &self.pushes;
        self.groups.retain(|k, _| pushes.contains_key(k));
    }

    /// Records a push of `key` at `now` (for the lag hint).
    fn note_push(&mut self, key: &GroupingKey, now: Instant) {
        self.last_push = Some(now);
        if !self.pushes.contains_key(key) && self.pushes.len() >= MAX_GROUPS_PER_TARGET {
            return;
        }
        let entry = self.pushes.entry(key.clone()).or_insert((now, None));
        if entry.0 < now {
            *entry = (now, Some(now - entry.0));
        }
    }

    /// The lag hint: the longest push interval of any group.
    fn push_interval(&self) -> Option<Duration> {
        self.pushes.values().filter_map(|(_, d)| *d).max()
    }
}

impl Inbox {
    fn reads(&self, key: &GroupingKey) -> bool {
        key.get("job") == Some(&self.job) && self.labels.iter().all(|(k, v)| key.get(k) == Some(v))
    }

    /// The counters as of the latest push.
    fn read(&self) -> Result<Counters, SignalError> {
        let mut st = lock_(&self.state);
        st.prune(Instant::now(), self.group_ttl);
        let Some(last) = st.last_push else {
            return Err(SignalError::Stale(format!(
                "nothing pushed yet to /metrics/job/{}{}",
                self.job,
                self.labels
                    .iter()
                    .map(|(k, v)| format!("/{k}/{v}"))
                    .collect::<String>()
            )));
        };
        if let Some(max_age) = self.max_age {
            let age = last.elapsed();
            if age > max_age {
                return Err(SignalError::Stale(format!(
                    "the last push to job `{}` was {:.1}s ago, longer than max_age {}",
                    self.job,
                    age.as_secs_f64(),
                    humantime::format_duration(max_age)
                )));
            }
        }
        let (first, failures) = if self.cumulative {
            if st.groups.is_empty() {
                return Err(SignalError::Stale(format!(
                    "every group of job `{}` was deleted",
                    self.job
                )));
            }
            let mut sums = (0.0, 0.0);
            for (a, f) in st.groups.values() {
                sums.0 += a.ok_or_else(|| SignalError::MissingSeries(self.first.to_string()))?;
                sums.1 += f.ok_or_else(|| SignalError::MissingSeries(self.failures.to_string()))?;
            }
            sums
        } else {
            st.totals
        };
        Ok(Counters {
            first,
            failures,
            successes_form: self.successes_form,
            offer: None,
            lag: st.push_interval(),
        })
    }
}

/// A `kind = "push"` source: reads its inbox.
#[derive(Debug, Clone)]
pub struct PushSource {
    inbox: Arc<Inbox>,
}

impl PushSource {
    /// Builds the source; [`PushStore::register`] connects it to the listener.
    pub fn new(cfg: &PushSignalConfig) -> Result<Self, String> {
        let parse = |s: &str| {
            s.parse::<Selector>()
                .map_err(|e| format!("selector `{s}`: {e}"))
        };
        let (first, successes_form) = match (&cfg.attempts, &cfg.successes) {
            (Some(a), None) => (parse(a)?, false),
            (None, Some(s)) => (parse(s)?, true),
            _ => return Err("give exactly one of `attempts` and `successes`".into()),
        };
        Ok(PushSource {
            inbox: Arc::new(Inbox {
                job: cfg.job.clone(),
                labels: cfg.labels.clone(),
                first,
                successes_form,
                failures: parse(&cfg.failures)?,
                cumulative: cfg.cumulative,
                max_age: cfg.max_age,
                group_ttl: cfg
                    .group_ttl
                    .unwrap_or(crate::config::push::DEFAULT_GROUP_TTL),
                state: Mutex::new(InboxState::default()),
            }),
        })
    }

    /// The counters as of the latest push.
    pub async fn read(&self) -> Result<Counters, SignalError> {
        self.inbox.read()
    }

    /// The inbox, to register with a [`PushStore`].
    pub fn inbox(&self) -> &Arc<Inbox> {
        &self.inbox
    }
}

/// The push endpoint's state: the guards, and the inboxes of the running
/// targets (held weakly: a stopped target's inbox disappears by itself).
#[derive(Debug, Default)]
pub struct PushStore {
    inner: Mutex<StoreInner>,
}

#[derive(Debug)]
struct StoreInner {
    inboxes: Vec<Weak<Inbox>>,
    max_body_bytes: usize,
    max_samples: usize,
    token: Option<String>,
}

impl Default for StoreInner {
    fn default() -> Self {
        StoreInner {
            inboxes: Vec::new(),
            max_body_bytes: PushServerConfig::default().max_body_bytes,
            max_samples: PushServerConfig::default().max_samples,
            token: None,
        }
    }
}

impl PushStore {
    /// Applies `[server.push]` (reads the token now).
    pub fn configure(&self, cfg: &PushServerConfig) -> Result<(), String> {
        let token = token::read(
            cfg.bearer_token_file.as_deref(),
            cfg.bearer_token_env.as_deref(),
        )?;
        let mut inner = lock_(&self.inner);
        inner.max_body_bytes = cfg.max_body_bytes;
        inner.max_samples = cfg.max_samples;
        inner.token = token;
        Ok(())
    }

    /// Routes matching pushes to `inbox` while it is alive.
    pub fn register(&self, inbox: &Arc<Inbox>) {
        let mut inner = lock_(&self.inner);
        inner.inboxes.retain(|w| w.strong_count() > 0);
        inner.inboxes.push(Arc::downgrade(inbox));
    }

    /// The guards in force: the body limit (bytes), the sample limit, and
    /// the bearer token pushes must present (None: none required).
    pub fn guards(&self) -> (usize, usize, Option<String>) {
        let inner = lock_(&self.inner);
        (inner.max_body_bytes, inner.max_samples, inner.token.clone())
    }

    fn readers(&self, key: &GroupingKey) -> Vec<Arc<Inbox>> {
        let mut inner = lock_(&self.inner);
        inner.inboxes.retain(|w| w.strong_count() > 0);
        inner
            .inboxes
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|i| i.reads(key))
            .collect()
    }

    /// Applies one push (already authorized and size-checked); returns how
    /// many targets took it.
    pub fn ingest(
        &self,
        method: PushMethod,
        grouping: &str,
        body: &str,
    ) -> Result<usize, PushError> {
        let key = parse_grouping(grouping)?;
        let readers = self.readers(&key);
        let job = key.get("job").cloned().unwrap_or_default();
        if readers.is_empty() {
            return Err(PushError::NoTarget(job));
        }
        let now = Instant::now();
        if method == PushMethod::Delete {
            for inbox in &readers {
                let mut st = lock_(&inbox.state);
                let finite = st.totals.0.is_finite() && st.totals.1.is_finite();
                if !inbox.cumulative && !finite {
                    // Unreachable through ingest; kept so that nothing can
                    // leave a delta target stuck.
                    st.totals = (0.0, 0.0);
                }
                st.groups.remove(&key);
                st.pushes.remove(&key);
                st.last_push = Some(now);
            }
            return Ok(readers.len());
        }
        let (_, max_samples, _) = self.guards();
        // Every reader's two selectors, summed in one pass over the push.
        let mut sums: Vec<(Option<f64>, Option<f64>)> = vec![(None, None); readers.len()];
        let mut names: HashSet<String> = HashSet::new();
        let mut conflict: Option<PushError> = None;
        let limits = Limits { max_samples };
        for_each_sample(body, &limits, |sample| {
            if conflict.is_some() {
                return;
            }
            if !names.contains(sample.name) {
                names.insert(sample.name.to_string());
            }
            for (k, v) in sample.labels {
                if let Some(kv) = key.get::<str>(k) {
                    if kv.as_str() != *v {
                        conflict = Some(PushError::Conflict {
                            label: k.to_string(),
                            pushed: v.to_string(),
                            key: kv.clone(),
                        });
                        return;
                    }
                }
            }
            // The pushed labels plus the grouping labels, as Pushgateway
            // exposes them.
            let mut labels: Vec<(&str, &str)> =
                sample.labels.iter().map(|(k, v)| (*k, *v)).collect();
            for (k, v) in &key {
                if sample.label(k).is_none() {
                    labels.push((k.as_str(), v.as_str()));
                }
            }
            for (inbox, sum) in readers.iter().zip(sums.iter_mut()) {
                if inbox.first.matches(sample.name, &labels) {
                    *sum.0.get_or_insert(0.0) += sample.value;
                }
                if inbox.failures.matches(sample.name, &labels) {
                    *sum.1.get_or_insert(0.0) += sample.value;
                }
            }
        })?;
        if let Some(e) = conflict {
            return Err(e);
        }
        let named = |s: &Selector| s.metric_name().is_none_or(|n| names.contains(n));
        let mut taken = 0;
        let mut why = Vec::new();
        for (inbox, (first, failures)) in readers.iter().zip(sums) {
            let mut st = lock_(&inbox.state);
            st.prune(now, inbox.group_ttl);
            if inbox.cumulative {
                if !st.groups.contains_key(&key) && st.groups.len() >= MAX_GROUPS_PER_TARGET {
                    why.push(format!(
                        "more than {MAX_GROUPS_PER_TARGET} grouping keys for job `{job}`"
                    ));
                    continue;
                }
                let entry = st.groups.entry(key.clone()).or_insert((None, None));
                match method {
                    PushMethod::Put => *entry = (first, failures),
                    _ => {
                        if named(&inbox.first) {
                            entry.0 = first;
                        }
                        if named(&inbox.failures) {
                            entry.1 = failures;
                        }
                    }
                }
                if first.is_none() && failures.is_none() {
                    why.push(format!(
                        "neither `{}` nor `{}` matched a pushed series",
                        inbox.first, inbox.failures
                    ));
                    continue;
                }
            } else {
                // Per-push deltas: a push without both series cannot be
                // split into attempts and failures, so it is refused.
                let (Some(a), Some(f)) = (first, failures) else {
                    why.push(format!(
                        "per-push deltas need both `{}` and `{}` in every push (push the failure \
                         counter even when it is 0)",
                        inbox.first, inbox.failures
                    ));
                    continue;
                };
                if !(a.is_finite() && f.is_finite() && a >= 0.0 && f >= 0.0) {
                    why.push(format!("deltas must be finite and >= 0 (got {a}, {f})"));
                    continue;
                }
                let totals = (st.totals.0 + a, st.totals.1 + f);
                if !(totals.0.is_finite() && totals.1.is_finite()) {
                    // The running totals would overflow to +Inf, after
                    // which every window is non-finite for good (issue 27).
                    // The push is refused and the totals restart at 0: the
                    // next read sees a counter reset and rebases.
                    st.totals = (0.0, 0.0);
                    why.push(format!(
                        "adding these deltas ({a}, {f}) overflows the running totals; they \
                         restart at 0 (push smaller per-interval counts)"
                    ));
                    continue;
                }
                st.totals = totals;
            }
            st.note_push(&key, now);
            taken += 1;
        }
        if taken == 0 {
            return Err(PushError::Unusable(why.join("; ")));
        }
        Ok(taken)
    }
}

fn lock_<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests;
