//! Locust 2.x, through its web UI's JSON API.
//!
//! Why it exists: Locust is the most common Python load tool, and its web
//! UI is also its admin API. The shapes here were read from Locust 2.47's
//! `locust/web.py` and `locust/stats.py` (and match 2.x generally):
//!
//! - `GET /stats/requests` answers `{"stats": [...], "user_count": N,
//!   "state": "running", ...}`. The last entry of `stats` is the total,
//!   named `"Aggregated"`, with cumulative `num_requests` (every resolved
//!   attempt, failed or not) and `num_failures`. `user_count` is the users
//!   actually running, which ramp towards the target at the spawn rate.
//! - The handler is memoized for [`STATS_CACHE`] (`DEFAULT_CACHE_TIME =
//!   2.0` in web.py), so two reads closer than that return the same
//!   numbers: a window must be at least that long.
//! - On a master (`--master`), the answer also carries `worker_count` and a
//!   `workers` list, and the numbers are only as new as the workers' last
//!   report: they report every [`WORKER_REPORT_INTERVAL`]
//!   (`WORKER_REPORT_INTERVAL = 3.0` in runners.py). The source's lag hint
//!   ([`Counters::lag`]) is therefore the stats cache, plus the report
//!   interval when workers are reported.
//! - `POST /swarm` takes a form with `user_count` and `spawn_rate` and
//!   answers `{"success": bool, "message": ..., "host": ...}`. On a running
//!   test it retargets the users without clearing stats; after a stop it
//!   starts a new run and clears them (a counter reset, which the window
//!   module discards). With a `LoadTestShape` class it ignores both fields
//!   and answers "Swarming started using shape class ..."; we report that
//!   as a refusal, because the shape, not the governor, owns the users.
//! - `--headless` has no web UI at all: the URL then refuses connections.
//! - The same answer carries `current_response_time_percentiles`, the
//!   latency source of `[targets.latency] locust = true`
//!   ([`LocustLatency`]): `{"response_time_percentile_0.95": ms, ...}` for
//!   each of `locust.stats.PERCENTILES_TO_CHART` (0.5 and 0.95 unless the
//!   locustfile sets it), over a rolling window of the last
//!   `CURRENT_RESPONSE_TIME_PERCENTILE_WINDOW` (10 s), `null` when that
//!   window is empty. How exact it is: Locust rounds each response time to
//!   2 significant digits above 100 ms (123 ms counts as 120), and the
//!   rolling window is Locust's, not ours; so the source's lag hint is 10 s,
//!   and the window after an offer change starts only then.

use std::sync::Mutex;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;

use super::{as_control_error, count, join, parse_json, send, MAX_BODY_BYTES};
use crate::config::{LocustControlConfig, LocustSignalConfig};
use crate::control::ControlError;
use crate::signal::http::fetch_text;
use crate::signal::{Counters, SignalError};
use crate::window::LatencySample;

crate::counter_source!(LocustSource, has_offer = |_| true);
crate::latency_source!(
    LocustLatency,
    lag = |_| Some(crate::config::latency::LOCUST_PERCENTILE_WINDOW)
);
crate::knob_api!(LocustControl);

/// How long Locust caches `/stats/requests`.
pub const STATS_CACHE: Duration = crate::config::limits::LOCUST_STATS_CACHE;

/// How often Locust's workers report their stats to the master.
pub const WORKER_REPORT_INTERVAL: Duration = crate::config::limits::LOCUST_WORKER_REPORT_INTERVAL;

/// What one `/stats/requests` answer says.
#[derive(Debug, Clone, PartialEq)]
pub struct Stats {
    /// `num_requests` of "Aggregated": every resolved attempt.
    pub attempts: f64,
    /// `num_failures` of "Aggregated".
    pub failures: f64,
    /// The users running now (absent on very old versions).
    pub user_count: Option<f64>,
    /// The workers a master reports (0 when Locust runs as one process).
    pub workers: usize,
}

impl Stats {
    /// How far these numbers may trail the load: the stats cache, plus the
    /// workers' report interval on a master with workers.
    pub fn lag(&self) -> Duration {
        if self.workers > 0 {
            STATS_CACHE + WORKER_REPORT_INTERVAL
        } else {
            STATS_CACHE
        }
    }
}

/// Parses a `/stats/requests` body.
pub fn parse_stats(body: &str) -> Result<Stats, SignalError> {
    let doc = parse_json("Locust", body)?;
    let Some(entries) = doc.get("stats").and_then(|s| s.as_array()) else {
        return Err(SignalError::Format(
            "no `stats` list in the answer: is the URL Locust's web UI (http://host:8089)?".into(),
        ));
    };
    let Some(total) = entries.iter().rev().find(|e| e["name"] == "Aggregated") else {
        let state = doc["state"].as_str().unwrap_or("unknown");
        return Err(SignalError::MissingSeries(format!(
            "Locust stats entry \"Aggregated\" (state `{state}`: Locust has no runner yet?)"
        )));
    };
    let field = |name: &str| {
        count(&total[name]).ok_or_else(|| {
            SignalError::Format(format!(
                "\"Aggregated\".{name} is not a non-negative number: {}",
                total[name]
            ))
        })
    };
    let attempts = field("num_requests")?;
    let failures = field("num_failures")?;
    if failures > attempts {
        return Err(SignalError::Format(format!(
            "Locust reports more failures ({failures}) than requests ({attempts})"
        )));
    }
    let workers = doc["worker_count"]
        .as_u64()
        .map(|n| n as usize)
        .or_else(|| doc["workers"].as_array().map(|w| w.len()))
        .unwrap_or(0);
    Ok(Stats {
        attempts,
        failures,
        user_count: count(&doc["user_count"]),
        workers,
    })
}

async fn get_stats(
    client: &reqwest::Client,
    url: &str,
    timeout: Duration,
) -> Result<Stats, SignalError> {
    let body = fetch_text(client.get(url), timeout, MAX_BODY_BYTES).await?;
    parse_stats(&body)
}

/// The Locust signal: cumulative attempts and failures, plus the running
/// users as the offer.
#[derive(Debug, Clone)]
pub struct LocustSource {
    client: reqwest::Client,
    stats_url: String,
    timeout: Duration,
}

impl LocustSource {
    /// Builds the source from validated config.
    pub fn new(cfg: &LocustSignalConfig, client: reqwest::Client) -> Self {
        LocustSource {
            client,
            stats_url: join(&cfg.url, "/stats/requests"),
            timeout: cfg.timeout,
        }
    }

    /// Reads the stats once.
    pub async fn read(&self) -> Result<Counters, SignalError> {
        let s = get_stats(&self.client, &self.stats_url, self.timeout).await?;
        Ok(Counters {
            first: s.attempts,
            failures: s.failures,
            successes_form: false,
            offer: s.user_count,
            lag: Some(s.lag()),
        })
    }
}

/// Locust's rolling latency percentile, in seconds (see the module docs).
#[derive(Debug, Clone)]
pub struct LocustLatency {
    client: reqwest::Client,
    stats_url: String,
    quantile: f64,
    timeout: Duration,
}

impl LocustLatency {
    /// The `quantile` of Locust's web UI at `url`.
    pub fn new(client: reqwest::Client, url: &str, quantile: f64, timeout: Duration) -> Self {
        LocustLatency {
            client,
            stats_url: join(url, "/stats/requests"),
            quantile,
            timeout,
        }
    }

    /// Reads the percentile once.
    pub async fn read(&self) -> Result<LatencySample, SignalError> {
        let body = fetch_text(
            self.client.get(&self.stats_url),
            self.timeout,
            MAX_BODY_BYTES,
        )
        .await?;
        parse_percentile(&body, self.quantile)
    }
}

/// The `quantile` of `current_response_time_percentiles` in one
/// `/stats/requests` answer, in seconds (`None`: no requests in Locust's
/// rolling window).
pub fn parse_percentile(body: &str, quantile: f64) -> Result<LatencySample, SignalError> {
    let doc = parse_json("Locust", body)?;
    let Some(map) = doc
        .get("current_response_time_percentiles")
        .and_then(|m| m.as_object())
    else {
        return Err(SignalError::MissingSeries(
            "Locust's current_response_time_percentiles (Locust 2.x web UI, with a runner)".into(),
        ));
    };
    let key = format!("response_time_percentile_{quantile}");
    let Some(v) = map.get(&key) else {
        let served: Vec<&str> = map
            .keys()
            .filter_map(|k| k.strip_prefix("response_time_percentile_"))
            .collect();
        return Err(SignalError::MissingSeries(format!(
            "Locust serves the percentiles [{}], not {quantile}: set `locust.stats.PERCENTILES_TO_CHART = [0.5, {quantile}]` in the locustfile",
            served.join(", ")
        )));
    };
    if v.is_null() {
        return Ok(LatencySample::Quantile(None));
    }
    match v.as_f64() {
        Some(ms) if ms.is_finite() && ms >= 0.0 => Ok(LatencySample::Quantile(Some(ms / 1000.0))),
        _ => Err(SignalError::Format(format!(
            "Locust's {key} is not a number of milliseconds: {v}"
        ))),
    }
}

/// The Locust control: `POST /swarm`, confirmed through `user_count`.
#[derive(Debug)]
pub struct LocustControl {
    client: reqwest::Client,
    swarm_url: String,
    stats_url: String,
    timeout: Duration,
    spawn_rate: Option<f64>,
    window: Duration,
    /// The last user count written, to size the default spawn rate.
    last: Mutex<Option<f64>>,
}

impl Clone for LocustControl {
    fn clone(&self) -> Self {
        LocustControl {
            client: self.client.clone(),
            swarm_url: self.swarm_url.clone(),
            stats_url: self.stats_url.clone(),
            timeout: self.timeout,
            spawn_rate: self.spawn_rate,
            window: self.window,
            last: Mutex::new(*self.last.lock().unwrap_or_else(|e| e.into_inner())),
        }
    }
}

/// The default spawn rate: the larger of the old and new counts within one
/// window, so that both climbing and backing off land within about a window
/// (Locust stops users at the spawn rate too). At least 1 user per second.
pub fn default_spawn_rate(to: f64, from: Option<f64>, window: Duration) -> f64 {
    let span = to.max(from.unwrap_or(0.0)).max(1.0);
    (span / window.as_secs_f64().max(0.001)).max(1.0)
}

impl LocustControl {
    /// Builds the control; `window` sizes the default spawn rate.
    pub fn new(cfg: &LocustControlConfig, window: Duration, client: reqwest::Client) -> Self {
        LocustControl {
            client,
            swarm_url: join(&cfg.url, "/swarm"),
            stats_url: join(&cfg.url, "/stats/requests"),
            timeout: cfg.timeout,
            spawn_rate: cfg.spawn_rate,
            window,
            last: Mutex::new(None),
        }
    }

    /// Sets the user count.
    pub async fn write(&self, users: f64) -> Result<(), ControlError> {
        let users = users.round().max(0.0);
        let last = *self.last.lock().unwrap_or_else(|e| e.into_inner());
        let rate = self
            .spawn_rate
            .unwrap_or_else(|| default_spawn_rate(users, last, self.window));
        let form = format!("user_count={users}&spawn_rate={rate:.3}");
        let request = self
            .client
            .post(&self.swarm_url)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(form);
        let (status, body) = send(request, self.timeout)
            .await
            .map_err(|e| as_control_error(e, self.timeout))?;
        check_swarm_answer(status, &body)?;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(users);
        Ok(())
    }

    /// Reads the running users.
    pub async fn committed(&self) -> Result<f64, ControlError> {
        let s = get_stats(&self.client, &self.stats_url, self.timeout)
            .await
            .map_err(|e| as_control_error(e, self.timeout))?;
        s.user_count.ok_or_else(|| {
            ControlError::ReadBack(
                "Locust's stats carry no `user_count` (Locust 2.x needed)".into(),
            )
        })
    }
}

/// Judges a `/swarm` answer.
pub fn check_swarm_answer(status: u16, body: &str) -> Result<(), ControlError> {
    if !(200..300).contains(&status) {
        return Err(ControlError::Status {
            status,
            body: super::excerpt(body),
        });
    }
    let doc = parse_json("Locust", body).map_err(|e| ControlError::ReadBack(e.to_string()))?;
    let message = doc["message"].as_str().unwrap_or("").to_string();
    if doc["success"] != true {
        return Err(ControlError::Refused {
            tool: "Locust",
            message: format!("/swarm answered success=false: {message}"),
        });
    }
    if message.contains("shape class") {
        return Err(ControlError::Refused {
            tool: "Locust",
            message: format!(
                "a LoadTestShape class owns the user count and /swarm ignores user_count ({message}); remove the shape class to let the governor set users"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of a real Locust 2.47 answer (captured, trimmed), with
    /// numbers edited to include failures.
    const STATS: &str = r#"{"current_fail_per_sec": 2.5, "current_response_time_percentiles": {"response_time_percentile_0.5": 50, "response_time_percentile_0.95": 52}, "current_rps": 120.0, "errors": [{"error": "HTTPError('503 Server Error')", "method": "GET", "name": "/", "occurrences": 41}], "fail_ratio": 0.041, "state": "running", "stats": [{"avg_content_length": 2.0, "avg_response_time": 50.3, "current_fail_per_sec": 2.5, "current_rps": 120.0, "max_response_time": 61, "median_response_time": 50, "method": "GET", "min_response_time": 0, "name": "/", "num_failures": 41, "num_requests": 1000, "response_time_percentile_0.95": 52, "response_time_percentile_0.99": 55, "total_fail_per_sec": 2.5, "total_rps": 120.0}, {"avg_content_length": 2.0, "avg_response_time": 50.3, "current_fail_per_sec": 2.5, "current_rps": 120.0, "max_response_time": 61, "median_response_time": 50, "method": "", "min_response_time": 0, "name": "Aggregated", "num_failures": 41, "num_requests": 1000, "response_time_percentile_0.95": 52, "response_time_percentile_0.99": 55, "total_fail_per_sec": 2.5, "total_rps": 120.0}], "total_fail_per_sec": 2.5, "total_rps": 120.0, "user_count": 12}"#;

    #[test]
    fn reads_the_rolling_percentile_in_seconds_and_names_what_is_served() {
        assert_eq!(
            parse_percentile(STATS, 0.95).unwrap(),
            LatencySample::Quantile(Some(0.052))
        );
        let e = parse_percentile(STATS, 0.99).unwrap_err();
        assert_eq!(e.error_type(), "missing_series");
        assert!(e.to_string().contains("[0.5, 0.95]"), "{e}");
        assert!(e.to_string().contains("PERCENTILES_TO_CHART"), "{e}");
        let empty =
            r#"{"current_response_time_percentiles": {"response_time_percentile_0.95": null}}"#;
        assert_eq!(
            parse_percentile(empty, 0.95).unwrap(),
            LatencySample::Quantile(None)
        );
        let bad =
            r#"{"current_response_time_percentiles": {"response_time_percentile_0.95": "x"}}"#;
        assert_eq!(
            parse_percentile(bad, 0.95).unwrap_err().error_type(),
            "format"
        );
        assert_eq!(
            parse_percentile("{}", 0.95).unwrap_err().error_type(),
            "missing_series"
        );
        assert_eq!(
            parse_percentile("<html>", 0.95).unwrap_err().error_type(),
            "format"
        );
    }

    #[test]
    fn reads_the_aggregated_entry_and_user_count() {
        let s = parse_stats(STATS).unwrap();
        assert_eq!(
            s,
            Stats {
                attempts: 1000.0,
                failures: 41.0,
                user_count: Some(12.0),
                workers: 0,
            }
        );
        assert_eq!(s.lag(), STATS_CACHE);
    }

    #[test]
    fn a_master_with_workers_lags_by_the_report_interval_too() {
        // The shape of a real Locust 2.47 master's answer with 2 workers.
        let master = STATS.replace(
            r#""user_count": 12}"#,
            r#""user_count": 12, "worker_count": 2, "workers": [{"cpu_usage": 1.8, "id": "a", "memory_usage": 57004032, "state": "running", "user_count": 5}, {"cpu_usage": 2.1, "id": "b", "memory_usage": 56930304, "state": "running", "user_count": 7}]}"#,
        );
        let s = parse_stats(&master).unwrap();
        assert_eq!(s.workers, 2);
        assert_eq!(s.lag(), Duration::from_secs(5));
        // An older master without `worker_count`: the list still counts.
        let listed = master.replace(r#""worker_count": 2, "#, "");
        assert_eq!(parse_stats(&listed).unwrap().workers, 2);
        // A master whose workers all left reports none: the cache alone.
        let none = STATS.replace(
            r#""user_count": 12}"#,
            r#""user_count": 0, "worker_count": 0, "workers": []}"#,
        );
        assert_eq!(parse_stats(&none).unwrap().lag(), STATS_CACHE);
    }

    #[test]
    fn garbage_and_wrong_shapes_are_errors_with_hints() {
        let e = parse_stats("<html>not json</html>").unwrap_err();
        assert_eq!(e.error_type(), "format");
        assert!(e.to_string().contains("not JSON"), "{e}");

        let e = parse_stats(r#"{"stats": [], "state": "missing", "user_count": 0}"#).unwrap_err();
        assert_eq!(e.error_type(), "missing_series");
        assert!(e.to_string().contains("missing"), "{e}");

        let e = parse_stats(r#"{"hello": 1}"#).unwrap_err();
        assert!(e.to_string().contains("8089"), "{e}");

        let bad = STATS.replace(r#""num_requests": 1000, "response_time_percentile_0.95": 52, "response_time_percentile_0.99": 55, "total_fail_per_sec": 2.5, "total_rps": 120.0}], "total_fail"#, r#""num_requests": -1, "response_time_percentile_0.95": 52, "response_time_percentile_0.99": 55, "total_fail_per_sec": 2.5, "total_rps": 120.0}], "total_fail"#);
        let e = parse_stats(&bad).unwrap_err();
        assert!(e.to_string().contains("num_requests"), "{e}");
    }

    #[test]
    fn swarm_answers_are_judged() {
        assert!(check_swarm_answer(
            200,
            r#"{"success": true, "message": "Swarming started", "host": "http://x"}"#
        )
        .is_ok());
        let e = check_swarm_answer(
            200,
            r#"{"success": false, "message": "Missing or invalid user_count or spawn_rate from /swarm request", "host": null}"#,
        )
        .unwrap_err();
        assert_eq!(e.error_type(), "refused");
        let e = check_swarm_answer(
            200,
            r#"{"success": true, "message": "Swarming started using shape class 'StagesShape'", "host": null}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("LoadTestShape"), "{e}");
        let e = check_swarm_answer(401, "Unauthorized").unwrap_err();
        assert_eq!(e.error_type(), "http_4xx");
    }

    #[test]
    fn default_spawn_rate_reaches_the_count_within_a_window() {
        let w = Duration::from_secs(4);
        assert_eq!(default_spawn_rate(40.0, Some(20.0), w), 10.0);
        assert_eq!(default_spawn_rate(10.0, Some(40.0), w), 10.0);
        assert_eq!(default_spawn_rate(2.0, None, w), 1.0);
    }
}
