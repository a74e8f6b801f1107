//! k6 1.x, through its REST API (`k6 run --address 127.0.0.1:6565`).
//!
//! Why it exists: k6 can only change its VUs while running through the
//! REST API, and only with the `externally-controlled` executor. The shapes
//! here match k6's `api/v1` package as of the 1.x line (`go.k6.io/k6`,
//! files `status_routes.go`, `status.go`, `status_jsonapi.go`,
//! `metric_routes.go`, `metric_jsonapi.go`, `errors.go`, and
//! `metrics/sink.go`; the same shapes hold from v0.33 on):
//!
//! - `GET /v1/metrics/{id}` answers `{"data": {"type": "metrics", "id":
//!   id, "attributes": {"type": "counter", "contains": "default",
//!   "tainted": null, "sample": {"count": N, "rate": R}}}}`. A rate metric's
//!   sample is `{"rate": r}` only. A metric that has not been observed yet
//!   answers 404 `{"errors": [{"status": "404", "title": "Not Found",
//!   "detail": "No metric with that ID was found"}]}`: no sample yet, which
//!   is a zero, not a fault.
//! - Attempts are `http_reqs` → `sample.count`. Failures are exact from a
//!   counter the script adds 1 to per failed attempt (`signal.failures`),
//!   or approximate as `http_req_failed` rate × the `http_reqs` count: the
//!   two metrics are separate reads, and the rate is a float.
//! - `PATCH /v1/status` takes the JSON:API envelope `{"data": {"type":
//!   "status", "id": "default", "attributes": {"vus": N}}}` and answers the
//!   new status. `vus` above the executor's `maxVUs` answers 400 "Config
//!   update error" / "invalid configuration supplied: the number of active
//!   VUs (N) must be less than or equal to the number of maxVUs (M)".
//!   Without an externally-controlled executor: 500 "Execution config
//!   error" / "an externally-controlled executor needs to be configured
//!   for live configuration updates".
//! - `GET /v1/status` → `data.attributes.vus` (active VUs) and
//!   `data.attributes["vus-max"]` (initialized VUs, the ceiling).
//! - k6 v2 removed the externally-controlled executor (k6 pull request
//!   5846, v2.0.0-rc1): any `vus` or `vus-max` in a PATCH answers 500
//!   "Execution config error" / "live VU configuration updates are not
//!   supported". We name that version constraint in the error.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use serde_json::Value;

use super::{as_control_error, count, join, parse_json, send};
use crate::config::{K6SignalConfig, ToolControlConfig};
use crate::control::ControlError;
use crate::signal::{Counters, SignalError};

crate::counter_source!(K6Source, has_offer = |_| false);
crate::knob_api!(K6Control);

/// The detail k6 v2 answers to any live VU change.
pub const V2_REFUSAL: &str = "live VU configuration updates are not supported";

/// The detail k6 1.x answers without an externally-controlled executor.
pub const NO_EXTERNAL_EXECUTOR: &str = "externally-controlled executor needs to be configured";

/// Whether `name` is a valid k6 metric name.
pub use crate::config::limits::is_k6_metric_name as is_metric_name;

/// One metric's `attributes`, or `None` when k6 has not observed it yet.
pub fn parse_metric(status: u16, body: &str, id: &str) -> Result<Option<Value>, SignalError> {
    if status == 404 {
        let doc = parse_json("k6", body)?;
        if doc["errors"][0]["title"] == "Not Found" {
            return Ok(None);
        }
        return Err(SignalError::Status(404));
    }
    if !(200..300).contains(&status) {
        return Err(SignalError::Status(status));
    }
    let doc = parse_json("k6", body)?;
    let attrs = &doc["data"]["attributes"];
    if !attrs["sample"].is_object() || doc["data"]["id"] != id {
        return Err(SignalError::Format(format!(
            "no data.attributes.sample for metric `{id}`: is the URL k6's REST API (http://host:6565)?"
        )));
    }
    Ok(Some(attrs.clone()))
}

fn sample(attrs: &Value, id: &str, want_type: &str, key: &str) -> Result<f64, SignalError> {
    if attrs["type"] != want_type {
        return Err(SignalError::Format(format!(
            "k6 metric `{id}` is a {}, not a {want_type}",
            attrs["type"]
        )));
    }
    count(&attrs["sample"][key]).ok_or_else(|| {
        SignalError::Format(format!(
            "k6 metric `{id}`: sample.{key} is not a non-negative number: {}",
            attrs["sample"][key]
        ))
    })
}

/// Folds the two metric reads into counters.
pub fn counters(
    http_reqs: Option<&Value>,
    failures_metric: Option<&str>,
    failures: Option<&Value>,
) -> Result<Counters, SignalError> {
    let attempts = match http_reqs {
        Some(a) => sample(a, "http_reqs", "counter", "count")?,
        None => 0.0,
    };
    let failures = match (failures_metric, failures) {
        (_, None) => 0.0,
        (Some(name), Some(f)) => sample(f, name, "counter", "count")?,
        (None, Some(f)) => {
            let rate = sample(f, "http_req_failed", "rate", "rate")?;
            (rate.min(1.0) * attempts).round()
        }
    };
    if failures > attempts && failures_metric.is_none() {
        return Err(SignalError::Format(format!(
            "k6 reports {failures} failures over {attempts} requests"
        )));
    }
    Ok(Counters {
        first: attempts,
        failures,
        successes_form: false,
        offer: None,
        lag: None,
    })
}

/// The k6 signal.
#[derive(Debug, Clone)]
pub struct K6Source {
    client: reqwest::Client,
    base: String,
    failures: Option<String>,
    timeout: Duration,
}

impl K6Source {
    /// Builds the source from validated config.
    pub fn new(cfg: &K6SignalConfig, client: reqwest::Client) -> Self {
        K6Source {
            client,
            base: cfg.url.clone(),
            failures: cfg.failures.clone(),
            timeout: cfg.timeout,
        }
    }

    async fn metric(&self, id: &str) -> Result<Option<Value>, SignalError> {
        let url = join(&self.base, &format!("/v1/metrics/{id}"));
        let (status, body) = send(self.client.get(url), self.timeout).await?;
        parse_metric(status, &body, id)
    }

    /// Reads attempts and failures (concurrently).
    pub async fn read(&self) -> Result<Counters, SignalError> {
        let failures_id = self.failures.as_deref().unwrap_or("http_req_failed");
        let (reqs, fails) = tokio::join!(self.metric("http_reqs"), self.metric(failures_id));
        let (reqs, fails) = (reqs?, fails?);
        counters(reqs.as_ref(), self.failures.as_deref(), fails.as_ref())
    }
}

/// The k6 control: `PATCH /v1/status`, confirmed by `GET /v1/status`.
#[derive(Debug)]
pub struct K6Control {
    client: reqwest::Client,
    status_url: String,
    timeout: Duration,
    /// `vus-max` as last reported (-1 until known).
    vus_max: AtomicI64,
}

impl Clone for K6Control {
    fn clone(&self) -> Self {
        K6Control {
            client: self.client.clone(),
            status_url: self.status_url.clone(),
            timeout: self.timeout,
            vus_max: AtomicI64::new(self.vus_max.load(Ordering::Relaxed)),
        }
    }
}

/// The JSON:API body that sets `vus`.
pub fn patch_body(vus: i64) -> String {
    serde_json::json!({
        "data": {"type": "status", "id": "default", "attributes": {"vus": vus}}
    })
    .to_string()
}

/// `(vus, vus-max)` from a status document.
pub fn parse_status(body: &str) -> Result<(f64, Option<f64>), ControlError> {
    let doc = parse_json("k6", body).map_err(|e| ControlError::ReadBack(e.to_string()))?;
    let attrs = &doc["data"]["attributes"];
    let vus = count(&attrs["vus"]).ok_or_else(|| {
        ControlError::ReadBack(format!(
            "no data.attributes.vus in k6's status: `{}`",
            super::excerpt(body)
        ))
    })?;
    Ok((vus, count(&attrs["vus-max"])))
}

/// Turns a refused PATCH into an actionable error.
pub fn classify_refusal(status: u16, body: &str, wanted: i64) -> ControlError {
    let doc: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let err = &doc["errors"][0];
    let title = err["title"].as_str().unwrap_or("");
    let detail = err["detail"].as_str().unwrap_or("");
    if detail.contains(V2_REFUSAL) {
        return ControlError::Unsupported(format!(
            "k6 refused to change VUs (\"{detail}\"): k6 v2 removed live VU updates and the externally-controlled executor. The k6 adapter needs k6 1.x (any v0.33+ or v1.x release) running a scenario with executor: 'externally-controlled'"
        ));
    }
    if let Some(max) = detail
        .split("number of maxVUs (")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .and_then(|n| n.parse::<i64>().ok())
    {
        return ControlError::AboveMax { wanted, max };
    }
    if detail.contains(NO_EXTERNAL_EXECUTOR) {
        return ControlError::Refused {
            tool: "k6",
            message: format!(
                "{detail}: give the script a scenario with executor: 'externally-controlled' (and maxVUs at least the ceiling)"
            ),
        };
    }
    let message = if title.is_empty() {
        super::excerpt(body)
    } else {
        format!("{title}: {detail}")
    };
    ControlError::Status {
        status,
        body: message,
    }
}

impl K6Control {
    /// Builds the control from validated config.
    pub fn new(cfg: &ToolControlConfig, client: reqwest::Client) -> Self {
        K6Control {
            client,
            status_url: join(&cfg.url, "/v1/status"),
            timeout: cfg.timeout,
            vus_max: AtomicI64::new(-1),
        }
    }

    fn learn(&self, vus_max: Option<f64>) {
        if let Some(m) = vus_max {
            self.vus_max.store(m as i64, Ordering::Relaxed);
        }
    }

    /// Sets the VUs; refuses values above `vus-max` without asking k6.
    pub async fn write(&self, vus: f64) -> Result<(), ControlError> {
        let wanted = vus.round() as i64;
        let max = self.vus_max.load(Ordering::Relaxed);
        if max >= 0 && wanted > max {
            return Err(ControlError::AboveMax { wanted, max });
        }
        let request = self
            .client
            .patch(&self.status_url)
            .header(CONTENT_TYPE, "application/json")
            .body(patch_body(wanted));
        let (status, body) = send(request, self.timeout)
            .await
            .map_err(|e| as_control_error(e, self.timeout))?;
        if !(200..300).contains(&status) {
            return Err(classify_refusal(status, &body, wanted));
        }
        if let Ok((_, vus_max)) = parse_status(&body) {
            self.learn(vus_max);
        }
        Ok(())
    }

    /// Reads the active VUs.
    pub async fn committed(&self) -> Result<f64, ControlError> {
        let (status, body) = send(self.client.get(&self.status_url), self.timeout)
            .await
            .map_err(|e| as_control_error(e, self.timeout))?;
        if !(200..300).contains(&status) {
            return Err(ControlError::Status {
                status,
                body: super::excerpt(&body),
            });
        }
        let (vus, vus_max) = parse_status(&body)?;
        self.learn(vus_max);
        Ok(vus)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names() {
        assert!(is_metric_name("failed_attempts"));
        assert!(is_metric_name("_x1"));
        assert!(!is_metric_name("1x"));
        assert!(!is_metric_name("a-b"));
        assert!(!is_metric_name(""));
    }

    #[test]
    fn approximate_failures_from_the_rate() {
        let reqs = serde_json::json!({"type": "counter", "contains": "default", "tainted": null, "sample": {"count": 1000.0, "rate": 99.5}});
        let failed = serde_json::json!({"type": "rate", "contains": "default", "tainted": null, "sample": {"rate": 0.0416}});
        let c = counters(Some(&reqs), None, Some(&failed)).unwrap();
        assert_eq!((c.first, c.failures), (1000.0, 42.0));
        // Nothing observed yet: zero, not an error.
        let c = counters(None, None, None).unwrap();
        assert_eq!((c.first, c.failures), (0.0, 0.0));
        // A counter where a rate was expected is named.
        let e = counters(Some(&reqs), None, Some(&reqs)).unwrap_err();
        assert!(e.to_string().contains("\"counter\", not a rate"), "{e}");
    }

    #[test]
    fn refusals_are_classified() {
        let v2 = r#"{"errors":[{"status":"500","title":"Execution config error","detail":"live VU configuration updates are not supported"}]}"#;
        let e = classify_refusal(500, v2, 10);
        assert_eq!(e.error_type(), "unsupported");
        assert!(e.to_string().contains("k6 1.x"), "{e}");

        let max = r#"{"errors":[{"status":"400","title":"Config update error","detail":"invalid configuration supplied: the number of active VUs (15) must be less than or equal to the number of maxVUs (10)"}]}"#;
        let e = classify_refusal(400, max, 15);
        assert!(
            matches!(
                e,
                ControlError::AboveMax {
                    wanted: 15,
                    max: 10
                }
            ),
            "{e}"
        );

        let none = r#"{"errors":[{"status":"500","title":"Execution config error","detail":"an externally-controlled executor needs to be configured for live configuration updates"}]}"#;
        let e = classify_refusal(500, none, 5);
        assert_eq!(e.error_type(), "refused");

        let e = classify_refusal(502, "<html>bad gateway</html>", 5);
        assert_eq!(e.error_type(), "http_5xx");
    }

    #[test]
    fn patch_body_is_json_api() {
        let v: Value = serde_json::from_str(&patch_body(7)).unwrap();
        assert_eq!(v["data"]["type"], "status");
        assert_eq!(v["data"]["id"], "default");
        assert_eq!(v["data"]["attributes"]["vus"], 7);
    }
}
