//! Instant PromQL queries against a Prometheus-compatible HTTP API.
//!
//! Why it exists: past one load-generator instance, users already have
//! Prometheus (or Mimir, Thanos, VictoriaMetrics), and tools such as k6
//! remote-write their counters there and serve no scrape endpoint at all.
//! This source asks `/api/v1/query` for the counters instead of scraping the
//! tool.
//!
//! Two modes:
//! - `cumulative` (default): `attempts` and `failures` return cumulative
//!   counters (`sum(k6_http_reqs_total)`); windows come from their deltas,
//!   exactly as with a scrape.
//! - `increase`: they return the window's increase directly
//!   (`sum(increase(k6_http_reqs_total[{{window}}]))`). The source adds each
//!   answer to running totals, so the window stage sees cumulative readings
//!   (and never a counter reset). An answer covers its range (the window)
//!   however soon after the last one it is asked, so it is added in
//!   proportion to the time since the last answer ([`increase_share`]):
//!   the looks for an early verdict read every `window / 48`, and added
//!   whole, 48 looks made one window's counts 48 windows' (a run then held
//!   its first offer after the back-off for good, `dwelling`: no window
//!   ever matched the yield of the inflated one). At the window's cadence
//!   the share is 1 and the deltas are exactly the increases. A range
//!   written in place of `{{window}}` scales attempts and failures alike.
//!   The first answer only sets the baseline, as in the cumulative mode.
//!
//! Staleness: an instant query answers with the *evaluation* time, and
//! Prometheus looks back up to five minutes for a sample, so a counter whose
//! exporter died still "answers". A sample older than `max_age` (default:
//! one window) is therefore no signal ([`SignalError::Stale`]). The age is
//! taken from `timestamp()` of the series the **attempts** (or successes)
//! expression reads ([`selectors_in`]), or from an explicit `freshness`
//! expression. Not from the failure series: a tool writes a counter's
//! series only while it changes (k6's remote-write output stops writing
//! the failure counter once failures stop), so a quiet failure series is
//! the good news, not a dead tool. VictoriaMetrics answers queries as of
//! `-search.latencyOffset` ago (30 s by default), so its newest samples
//! look that old: lower the flag, or raise `max_age`.
//!
//! Failures with no series yet: until the first failure, a tool has no
//! failure series at all and `sum(...)` answers an empty result, which is
//! no signal ([`SignalError::MissingSeries`]). Write the failures as
//! `sum(...) or vector(0)` so that they read as 0 while attempts exist.
//!
//! A failure series that vanishes and comes back: once Prometheus stops
//! looking back at an unwritten series (five minutes, or a staleness
//! marker), `or vector(0)` answers 0 for it; when failures resume, the
//! series returns with its old total. In `cumulative` mode a failure total
//! that falls while the attempts did not is that, not a counter reset: the
//! source keeps the last failure total until the series passes it again,
//! so the old total is never charged to one window.
//!
//! Lag hint ([`Counters::lag`]): the counters are only as new as the
//! newest sample, which is refreshed every scrape or remote-write push. The
//! source tracks the freshness query's newest timestamp and reports the
//! smallest change of it among the last few reads that saw one. When
//! samples arrive more often than the reads, that is the read interval (an
//! upper estimate, by at most one window); when they arrive less often, it
//! is the scrape or push interval itself.
//!
//! What it may touch: the network, through the shared client, with a
//! timeout on every query and a bound on every answer's size.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION};
use serde::Deserialize;

use super::http::fetch_text;
use super::{Counters, SignalError};
use crate::auth::token;
pub use crate::config::promql::{PromqlMode, PromqlSignalConfig};
pub use crate::promtext::promql::{check_balanced, freshness_query, promql_duration, selectors_in};

/// The largest query answer accepted: 4 MiB (a sum is a few hundred bytes).
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// A configured PromQL signal.
#[derive(Debug, Clone)]
pub struct PromqlSource {
    client: reqwest::Client,
    endpoint: String,
    headers: HeaderMap,
    timeout: Duration,
    first: String,
    successes_form: bool,
    failures: String,
    mode: PromqlMode,
    max_age: Option<Duration>,
    freshness: Option<String>,
    /// Running totals of the increases (`mode = "increase"`) and when the
    /// last was added, shared by clones.
    totals: Arc<Mutex<Totals>>,
    /// The range an increase answer covers (the target's window).
    range: Option<Duration>,
    /// What the previous reads saw, shared by clones.
    seen: Arc<Mutex<Seen>>,
}

/// The running totals of `mode = "increase"`.
#[derive(Debug, Default)]
struct Totals {
    first: f64,
    failures: f64,
    /// When the last answer was added.
    last: Option<std::time::Instant>,
}

/// The share of an increase answer over `range` that belongs to the
/// `since` last answer: `since / range`, and all of it for the first
/// answer (the baseline) or when the range is unknown.
pub fn increase_share(since: Option<Duration>, range: Option<Duration>) -> f64 {
    match (since, range) {
        (Some(since), Some(range)) if !range.is_zero() => since.as_secs_f64() / range.as_secs_f64(),
        _ => 1.0,
    }
}

/// How many recent changes of the newest sample time the lag hint keeps.
const LAG_CHANGES: usize = 8;

/// What the previous reads of a [`PromqlSource`] saw.
#[derive(Debug, Default)]
struct Seen {
    /// The last (first, failures) reported in cumulative mode.
    last: Option<(f64, f64)>,
    /// The newest sample time the freshness query answered.
    newest: Option<f64>,
    /// The latest changes of `newest` (seconds), oldest first.
    changes: std::collections::VecDeque<f64>,
}

impl Seen {
    /// Folds one cumulative reading in: a failure total that falls while
    /// the first counter did not is a vanished failure series (keep the
    /// last total); a first counter that falls is a reset (pass it on).
    fn carry(&mut self, first: f64, failures: f64) -> (f64, f64) {
        let failures = match self.last {
            Some((last_first, last_failures))
                if first >= last_first && failures < last_failures =>
            {
                tracing::debug!(
                    from = last_failures,
                    to = failures,
                    "Failure total fell while attempts did not; keeping the last total (a vanished failure series, not a reset)"
                );
                last_failures
            }
            _ => failures,
        };
        self.last = Some((first, failures));
        (first, failures)
    }

    /// Folds in the newest sample time; returns the lag hint.
    fn lag(&mut self, newest: Option<f64>) -> Option<Duration> {
        if let Some(n) = newest.filter(|n| n.is_finite()) {
            if let Some(old) = self.newest {
                if n > old {
                    if self.changes.len() == LAG_CHANGES {
                        self.changes.pop_front();
                    }
                    self.changes.push_back(n - old);
                }
            }
            self.newest = Some(n);
        }
        self.changes
            .iter()
            .copied()
            .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.min(d))))
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
    }
}

impl PromqlSource {
    /// Builds the source from validated config.
    pub fn new(cfg: &PromqlSignalConfig, client: reqwest::Client) -> Result<Self, String> {
        let (first, successes_form) = match (&cfg.attempts, &cfg.successes) {
            (Some(a), None) => (a.clone(), false),
            (None, Some(s)) => (s.clone(), true),
            _ => return Err("give exactly one of `attempts` and `successes`".into()),
        };
        // Freshness follows the attempts alone: a failure series is only
        // written while failures happen (see the module docs).
        let freshness = match &cfg.freshness {
            Some(f) => Some(f.clone()),
            None => freshness_query(&[&first]),
        };
        Ok(PromqlSource {
            client,
            endpoint: format!("{}/api/v1/query", cfg.url.trim_end_matches('/')),
            headers: header_map(cfg)?,
            timeout: cfg.timeout,
            first,
            successes_form,
            failures: cfg.failures.clone(),
            mode: cfg.mode,
            max_age: cfg.max_age,
            freshness,
            totals: Arc::new(Mutex::new(Totals::default())),
            range: cfg.range,
            seen: Arc::new(Mutex::new(Seen::default())),
        })
    }

    /// The freshness query in use, if any.
    pub fn freshness(&self) -> Option<&str> {
        self.freshness.as_deref()
    }

    /// Runs the queries (concurrently) and returns the counters.
    pub async fn read(&self) -> Result<Counters, SignalError> {
        let fresh = async {
            match &self.freshness {
                Some(q) => self.query(q).await.map(Some),
                None => Ok(None),
            }
        };
        let (first, failures, fresh) =
            tokio::join!(self.query(&self.first), self.query(&self.failures), fresh);
        let (first, failures, fresh) = (first?, failures?, fresh?);
        if let (Some(fresh), Some(max_age)) = (&fresh, self.max_age) {
            check_fresh(fresh, max_age)?;
        }
        let newest = fresh.as_ref().and_then(newest_sample);
        let (first, failures) = (
            first.require(&self.first)?,
            failures.require(&self.failures)?,
        );
        let mut seen = self
            .seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let lag = seen.lag(newest);
        let (first, failures) = match self.mode {
            PromqlMode::Cumulative => seen.carry(first, failures),
            PromqlMode::Increase => {
                for (expr, v) in [(&self.first, first), (&self.failures, failures)] {
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(SignalError::Format(format!(
                            "`{expr}` returned {v}; an increase must be a finite number >= 0"
                        )));
                    }
                }
                let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
                let now = std::time::Instant::now();
                let share = increase_share(totals.last.map(|t| now - t), self.range);
                totals.last = Some(now);
                totals.first += first * share;
                totals.failures += failures * share;
                (totals.first, totals.failures)
            }
        };
        Ok(Counters {
            first,
            failures,
            successes_form: self.successes_form,
            offer: None,
            lag,
        })
    }

    /// One instant query.
    async fn query(&self, expr: &str) -> Result<Answer, SignalError> {
        let request = self
            .client
            .get(&self.endpoint)
            .query(&[("query", expr)])
            .headers(self.headers.clone());
        match fetch_text(request, self.timeout, MAX_ANSWER_BYTES).await {
            Ok(body) => parse_answer(&body),
            // Prometheus explains a bad query in the body of a 400/422; fetch
            // the explanation so the log says what is wrong with the query.
            Err(SignalError::Status(code)) if code == 400 || code == 422 => {
                Err(SignalError::Format(format!(
                    "the server rejected `{expr}` (HTTP {code}){}",
                    self.explain(expr).await
                )))
            }
            Err(e) => Err(e),
        }
    }

    /// The error text of a rejected query, best effort and bounded.
    async fn explain(&self, expr: &str) -> String {
        let request = self
            .client
            .get(&self.endpoint)
            .query(&[("query", expr)])
            .headers(self.headers.clone());
        let fut = async {
            let _slot = super::http::in_flight().await;
            let resp = request.send().await.ok()?;
            let text = resp.text().await.ok()?;
            let v: serde_json::Value = serde_json::from_str(&text).ok()?;
            v.get("error")
                .and_then(|e| e.as_str())
                .map(|e| format!(": {}", e.chars().take(300).collect::<String>()))
        };
        tokio::time::timeout(self.timeout, fut)
            .await
            .ok()
            .flatten()
            .unwrap_or_default()
    }
}

fn header_map(cfg: &PromqlSignalConfig) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    for (k, v) in &cfg.headers {
        let name =
            HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header `{k}`: {e}"))?;
        let value = HeaderValue::from_str(v).map_err(|e| format!("header `{k}`: {e}"))?;
        headers.insert(name, value);
    }
    if let Some(org) = &cfg.org_id {
        let value = HeaderValue::from_str(org).map_err(|e| format!("org_id: {e}"))?;
        headers.insert(HeaderName::from_static("x-scope-orgid"), value);
    }
    if let Some(t) = token::read(
        cfg.bearer_token_file.as_deref(),
        cfg.bearer_token_env.as_deref(),
    )? {
        let mut value = HeaderValue::from_str(&format!("Bearer {t}"))
            .map_err(|_| "the bearer token holds characters not allowed in a header".to_string())?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    if let Some(user) = &cfg.basic_auth_user {
        let password = token::read(
            cfg.basic_auth_password_file.as_deref(),
            cfg.basic_auth_password_env.as_deref(),
        )?
        .ok_or("basic auth needs a password")?;
        let mut value = HeaderValue::from_str(&token::basic(user, &password)).map_err(|_| {
            "the basic auth user holds characters not allowed in a header".to_string()
        })?;
        value.set_sensitive(true);
        headers.insert(AUTHORIZATION, value);
    }
    Ok(headers)
}

/// One query's answer: the values of its result and the evaluation time.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The evaluation time (seconds since the Unix epoch).
    pub at: f64,
    /// One value per series (a scalar answer gives one).
    pub values: Vec<f64>,
}

impl Answer {
    /// The sum over the result; an empty result is no signal.
    pub fn require(&self, expr: &str) -> Result<f64, SignalError> {
        if self.values.is_empty() {
            return Err(SignalError::MissingSeries(expr.to_string()));
        }
        Ok(self.values.iter().sum())
    }
}

/// Parses the JSON of `/api/v1/query`.
pub fn parse_answer(body: &str) -> Result<Answer, SignalError> {
    #[derive(Deserialize)]
    struct Envelope {
        status: String,
        data: Option<Data>,
        error: Option<String>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Data {
        result_type: String,
        result: serde_json::Value,
    }
    let env: Envelope = serde_json::from_str(body).map_err(|e| {
        SignalError::Format(format!(
            "not a Prometheus API answer ({e}); is `url` the base of the HTTP API, e.g. http://prometheus:9090?"
        ))
    })?;
    if env.status != "success" {
        return Err(SignalError::Format(format!(
            "the query failed: {}",
            env.error.unwrap_or_else(|| env.status.clone())
        )));
    }
    let data = env
        .data
        .ok_or_else(|| SignalError::Format("the answer has no `data`".into()))?;
    let point = |v: &serde_json::Value| -> Result<(f64, f64), SignalError> {
        let pair = v.as_array().filter(|a| a.len() == 2).ok_or_else(|| {
            SignalError::Format(format!("a sample is not [time, \"value\"]: {v}"))
        })?;
        let at = pair[0]
            .as_f64()
            .ok_or_else(|| SignalError::Format(format!("bad sample time: {}", pair[0])))?;
        let value = pair[1]
            .as_str()
            .and_then(parse_go_float)
            .ok_or_else(|| SignalError::Format(format!("bad sample value: {}", pair[1])))?;
        Ok((at, value))
    };
    match data.result_type.as_str() {
        "vector" => {
            let series = data
                .result
                .as_array()
                .ok_or_else(|| SignalError::Format("`result` is not a list".into()))?;
            let mut at = 0.0_f64;
            let mut values = Vec::with_capacity(series.len());
            for s in series {
                let (t, v) = point(
                    s.get("value")
                        .ok_or_else(|| SignalError::Format("a series has no `value`".into()))?,
                )?;
                at = at.max(t);
                values.push(v);
            }
            Ok(Answer { at, values })
        }
        "scalar" => {
            let (at, v) = point(&data.result)?;
            Ok(Answer {
                at,
                values: vec![v],
            })
        }
        other => Err(SignalError::Format(format!(
            "the query returned a {other}; it must return an instant vector or a scalar \
             (drop any [range] outside a function such as increase())"
        ))),
    }
}

/// Prometheus writes floats the way Go does: `NaN`, `+Inf`, `-Inf`, `1e+06`.
fn parse_go_float(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

/// Fails when the newest sample the freshness query reports is older than
/// `max_age` at the answer's evaluation time.
pub fn check_fresh(fresh: &Answer, max_age: Duration) -> Result<(), SignalError> {
    let Some(newest) = newest_sample(fresh) else {
        // No series at all: the value queries report that as missing.
        return Ok(());
    };
    let age = fresh.at - newest;
    if age > max_age.as_secs_f64() {
        return Err(SignalError::Stale(format!(
            "the newest sample is {age:.1}s old, older than max_age {}: the tool may have \
             stopped reporting, the scrape or remote-write interval may be longer than \
             max_age, or the server answers as of an offset (VictoriaMetrics: \
             -search.latencyOffset, 30s by default; lower it or raise max_age)",
            humantime::format_duration(max_age)
        )));
    }
    Ok(())
}

/// The newest sample time a freshness answer reports (None when empty).
fn newest_sample(fresh: &Answer) -> Option<f64> {
    let newest = fresh
        .values
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    newest.is_finite().then_some(newest)
}

#[cfg(test)]
mod tests;
