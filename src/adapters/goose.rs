//! Goose (Rust), through its WebSocket controller (`--websocket`).
//!
//! Why it exists: Goose has no HTTP admin API; a running test is steered
//! through its telnet or WebSocket controller. The protocol here was read
//! from goose 0.19's `src/controller.rs`:
//!
//! - A request is one text message `{"request": "<command>"}`; the answer
//!   is one text message `{"response": "<text>", "success": bool}`.
//! - `users N` (1 to 100000) retargets a running test; Goose then ramps to
//!   N at its increase (or decrease) rate and answers `success: true`,
//!   `"users configured"`. While a `--test-plan` runs it refuses.
//! - `config-json` answers the configuration as a JSON *string* inside
//!   `response`; its `users` is the configured count (the read-back).
//! - `metrics-json` answers the metrics as a JSON string: `requests` maps
//!   "METHOD path" to cumulative `success_count` and `fail_count` (non-2xx
//!   responses and request errors fail). Their sums are our successes and
//!   failures. Goose resets its metrics once when the first ramp completes
//!   unless started with `--no-reset-metrics`: that is one counter reset,
//!   which the window module discards.
//!
//! - Each request's `raw_data.times_us` maps a response-time bucket, keyed
//!   by its fastest time in microseconds, to a cumulative count: each power
//!   of two split into 64 buckets (goose 0.19's `metrics/buckets.rs`), so a
//!   bucket is at most 1/64 of its lowest time wide. Summed over requests,
//!   with each bucket's upper end as `le`, that is a cumulative histogram:
//!   the latency source of `[targets.latency] goose = true`
//!   ([`GooseLatency`]), windowed from its deltas like a Prometheus
//!   histogram, exact to within one bucket (under 1.6 %).
//!
//! Each request opens its own connection. The controller is on loopback
//! next to the load test, a connection costs little per window, and a
//! restarted Goose then needs no reconnect logic at all.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

use super::{as_control_error, count, excerpt, parse_json, MAX_BODY_BYTES};
use crate::config::{GooseSignalConfig, ToolControlConfig};
use crate::control::ControlError;
use crate::signal::http::root_cause;
use crate::signal::{Counters, SignalError};
use crate::window::{Buckets, LatencySample};

crate::counter_source!(GooseSource, has_offer = |_| false);
crate::latency_source!(GooseLatency, lag = |_| None);
crate::knob_api!(GooseControl);

/// The most users Goose's controller accepts.
pub const MAX_USERS: usize = crate::config::limits::GOOSE_MAX_USERS;

/// One controller answer.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct Reply {
    /// The text (a JSON string for `*-json` commands).
    pub response: String,
    /// Whether Goose accepted the command.
    pub success: bool,
}

/// Sends one command and waits for its answer, all within `timeout`.
pub async fn request(url: &str, command: &str, timeout: Duration) -> Result<Reply, SignalError> {
    let fut = async {
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_BODY_BYTES))
            .max_frame_size(Some(MAX_BODY_BYTES));
        let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true)
            .await
            .map_err(ws_error)?;
        let body = serde_json::json!({ "request": command }).to_string();
        ws.send(Message::text(body)).await.map_err(ws_error)?;
        let reply = loop {
            match ws.next().await {
                Some(Ok(Message::Text(text))) => break text.as_str().to_string(),
                Some(Ok(Message::Close(frame))) => {
                    return Err(SignalError::Transport(format!(
                        "Goose closed the controller connection{}",
                        frame.map(|f| format!(": {}", f.reason)).unwrap_or_default()
                    )))
                }
                Some(Ok(_)) => continue, // ping, pong, binary: not an answer
                Some(Err(e)) => return Err(ws_error(e)),
                None => {
                    return Err(SignalError::Transport(
                        "Goose closed the controller connection before answering".into(),
                    ))
                }
            }
        };
        // Best effort: a polite close, never waited on for long.
        let _ = tokio::time::timeout(Duration::from_millis(100), ws.close(None)).await;
        serde_json::from_str::<Reply>(&reply).map_err(|e| {
            SignalError::Format(format!(
                "not a Goose controller answer ({e}): `{}`; is the URL Goose's WebSocket controller (ws://host:5117)?",
                excerpt(&reply)
            ))
        })
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(SignalError::Timeout(timeout)),
    }
}

fn ws_error(e: WsError) -> SignalError {
    match e {
        WsError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            SignalError::Connect(format!(
                "{io} (is Goose running with --websocket, on this port?)"
            ))
        }
        WsError::Io(io) => SignalError::Connect(io.to_string()),
        WsError::Capacity(c) => SignalError::Format(format!("answer too large: {c}")),
        WsError::Http(resp) => SignalError::Format(format!(
            "the WebSocket handshake was answered with HTTP {}: is the URL Goose's WebSocket controller?",
            resp.status()
        )),
        other => SignalError::Transport(root_cause(&other)),
    }
}

/// Sums `success_count` and `fail_count` over `requests` of a
/// `metrics-json` answer.
pub fn parse_metrics(response: &str) -> Result<(f64, f64), SignalError> {
    let doc = parse_json("Goose", response)?;
    let Some(requests) = doc.get("requests").and_then(Value::as_object) else {
        return Err(SignalError::Format(
            "no `requests` in Goose's metrics-json (started with --no-metrics?)".into(),
        ));
    };
    let (mut ok, mut failed) = (0.0, 0.0);
    for (name, r) in requests {
        let field = |key: &str| {
            count(&r[key]).ok_or_else(|| {
                SignalError::Format(format!(
                    "Goose request `{name}`: {key} is not a count: {}",
                    r[key]
                ))
            })
        };
        ok += field("success_count")?;
        failed += field("fail_count")?;
    }
    Ok((ok, failed))
}

/// The upper end of the Goose bucket keyed `floor_us` (see the module docs).
fn bucket_end_us(floor_us: u64) -> u64 {
    const SUB_BITS: u32 = 6;
    let bits = if floor_us < (1 << (SUB_BITS + 1)) {
        0
    } else {
        63 - floor_us.leading_zeros() - SUB_BITS
    };
    floor_us.saturating_add(1 << bits)
}

/// The response-time histogram of a `metrics-json` answer, summed over
/// requests (seconds).
pub fn parse_times(response: &str) -> Result<LatencySample, SignalError> {
    let doc = parse_json("Goose", response)?;
    let Some(requests) = doc.get("requests").and_then(Value::as_object) else {
        return Err(SignalError::Format(
            "no `requests` in Goose's metrics-json (started with --no-metrics?)".into(),
        ));
    };
    let mut pairs: Vec<(u64, f64)> = Vec::new();
    let mut total = 0.0;
    for (name, r) in requests {
        let Some(times) = r["raw_data"]["times_us"].as_object() else {
            return Err(SignalError::MissingSeries(format!(
                "Goose request `{name}`: raw_data.times_us (goose 0.19 or later)"
            )));
        };
        for (k, v) in times {
            let (Ok(floor), Some(n)) = (k.parse::<u64>(), count(v)) else {
                return Err(SignalError::Format(format!(
                    "Goose request `{name}`: times_us bucket {k}: {v} is not a count"
                )));
            };
            pairs.push((floor, n));
            total += n;
        }
    }
    pairs.sort_by_key(|p| p.0);
    // The same bucket of several requests is one bucket.
    pairs.dedup_by(|later, first| {
        let same = later.0 == first.0;
        if same {
            first.1 += later.1;
        }
        same
    });
    // Each bucket as its two edges: the cumulative count at its floor, and
    // at its end, so a quantile interpolates within the bucket, never
    // across the empty span below it.
    let mut cum = 0.0;
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(2 * pairs.len() + 1);
    let edge = |le: f64, c: f64, out: &mut Vec<(f64, f64)>| match out.last_mut() {
        Some(last) if last.0 == le => last.1 = last.1.max(c),
        _ => out.push((le, c)),
    };
    for (floor, n) in pairs {
        edge(floor as f64 / 1e6, cum, &mut out);
        cum += n;
        edge(bucket_end_us(floor) as f64 / 1e6, cum, &mut out);
    }
    if out.is_empty() {
        // No request yet: one empty bucket keeps the layout valid.
        out.push((0.001, 0.0));
    }
    out.push((f64::INFINITY, total));
    Buckets::sparse(out)
        .map(LatencySample::Histogram)
        .map_err(|e| SignalError::Format(format!("Goose's response times: {e}")))
}

/// Goose's response times, as a windowed histogram (see the module docs).
#[derive(Debug, Clone)]
pub struct GooseLatency {
    url: String,
    timeout: Duration,
}

impl GooseLatency {
    /// The response times of Goose's controller at `url`.
    pub fn new(url: &str, timeout: Duration) -> Self {
        GooseLatency {
            url: url.to_string(),
            timeout,
        }
    }

    /// Reads the response times once.
    pub async fn read(&self) -> Result<LatencySample, SignalError> {
        let reply = request(&self.url, "metrics-json", self.timeout).await?;
        if !reply.success {
            return Err(SignalError::Refused(format!(
                "Goose refused metrics-json: {}",
                excerpt(&reply.response)
            )));
        }
        parse_times(&reply.response)
    }
}

/// The configured `users` of a `config-json` answer.
pub fn parse_config_users(response: &str) -> Result<f64, ControlError> {
    let doc = parse_json("Goose", response).map_err(|e| ControlError::ReadBack(e.to_string()))?;
    match &doc["users"] {
        Value::Null => Err(ControlError::ReadBack(
            "Goose's config-json has no `users`: a --test-plan sets users, and the governor cannot change them".into(),
        )),
        v => count(v).ok_or_else(|| {
            ControlError::ReadBack(format!("Goose's config-json `users` is not a count: {v}"))
        }),
    }
}

/// The Goose signal.
#[derive(Debug, Clone)]
pub struct GooseSource {
    url: String,
    timeout: Duration,
}

impl GooseSource {
    /// Builds the source from validated config.
    pub fn new(cfg: &GooseSignalConfig) -> Self {
        GooseSource {
            url: cfg.url.clone(),
            timeout: cfg.timeout,
        }
    }

    /// Reads the metrics once.
    pub async fn read(&self) -> Result<Counters, SignalError> {
        let reply = request(&self.url, "metrics-json", self.timeout).await?;
        if !reply.success {
            return Err(SignalError::Refused(format!(
                "Goose refused metrics-json: {}",
                excerpt(&reply.response)
            )));
        }
        let (ok, failed) = parse_metrics(&reply.response)?;
        Ok(Counters {
            first: ok,
            failures: failed,
            successes_form: true,
            offer: None,
            lag: None,
        })
    }
}

/// The Goose control: `users N`, confirmed by `config-json`.
#[derive(Debug, Clone)]
pub struct GooseControl {
    url: String,
    timeout: Duration,
}

impl GooseControl {
    /// Builds the control from validated config.
    pub fn new(cfg: &ToolControlConfig) -> Self {
        GooseControl {
            url: cfg.url.clone(),
            timeout: cfg.timeout,
        }
    }

    /// Sets the user count.
    pub async fn write(&self, users: f64) -> Result<(), ControlError> {
        let n = (users.round() as i64).clamp(1, MAX_USERS as i64);
        let reply = request(&self.url, &format!("users {n}"), self.timeout)
            .await
            .map_err(|e| as_control_error(e, self.timeout))?;
        if reply.success {
            Ok(())
        } else {
            Err(ControlError::Refused {
                tool: "Goose",
                message: format!("`users {n}` refused: {}", excerpt(&reply.response)),
            })
        }
    }

    /// Reads the configured user count.
    pub async fn committed(&self) -> Result<f64, ControlError> {
        let reply = request(&self.url, "config-json", self.timeout)
            .await
            .map_err(|e| as_control_error(e, self.timeout))?;
        if !reply.success {
            return Err(ControlError::ReadBack(format!(
                "Goose refused config-json: {}",
                excerpt(&reply.response)
            )));
        }
        parse_config_users(&reply.response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_times_sum_over_requests_as_a_cumulative_histogram() {
        // Two requests; buckets keyed by their fastest time in µs.
        let m = r#"{"requests":{"GET /":{"success_count":3,"fail_count":0,"raw_data":{"times_us":{"100":2,"204800":1},"counter":3}},"GET /b":{"success_count":1,"fail_count":0,"raw_data":{"times_us":{"100":1},"counter":1}}}}"#;
        let LatencySample::Histogram(h) = parse_times(m).unwrap() else {
            panic!()
        };
        // 100 µs is exact (bucket end 101 µs); 204,800 µs spans 2^17..:
        // width 2^(17 - 6) = 2048 µs.
        assert_eq!(
            h.pairs(),
            &[
                (100e-6, 0.0),
                (101e-6, 3.0),
                (204_800e-6, 3.0),
                (206_848e-6, 4.0),
                (f64::INFINITY, 4.0)
            ]
        );
        // p50 in the fast bucket, p99 in the slow one.
        assert!(h.quantile(0.5).unwrap() < 0.001);
        assert!(h.quantile(0.99).unwrap() > 0.2);
        // An idle test: a valid, empty histogram.
        let LatencySample::Histogram(h) = parse_times(r#"{"requests":{}}"#).unwrap() else {
            panic!()
        };
        assert_eq!(h.total(), 0.0);
        assert_eq!(
            parse_times(r#"{"requests":{"GET /":{"success_count":1}}}"#)
                .unwrap_err()
                .error_type(),
            "missing_series"
        );
        assert_eq!(
            parse_times(r#"{"requests":{"GET /":{"raw_data":{"times_us":{"x":1}}}}}"#)
                .unwrap_err()
                .error_type(),
            "format"
        );
        assert_eq!(bucket_end_us(127), 128);
        assert_eq!(bucket_end_us(128), 130);
    }

    #[test]
    fn metrics_sum_over_requests() {
        let m = r#"{"hash":0,"duration":3,"maximum_users":4,"total_users":4,"requests":{"GET /":{"path":"/","method":"Get","success_count":90,"fail_count":10},"POST /login":{"path":"/login","method":"Post","success_count":5,"fail_count":0}},"transactions":[],"scenarios":[],"errors":{},"hosts":[]}"#;
        assert_eq!(parse_metrics(m).unwrap(), (95.0, 10.0));
        assert_eq!(
            parse_metrics(r#"{"requests":{}}"#).unwrap(),
            (0.0, 0.0),
            "an idle test has no requests yet"
        );
        assert_eq!(parse_metrics("garbage").unwrap_err().error_type(), "format");
        assert!(
            parse_metrics(r#"{"requests":{"GET /":{"success_count":"x","fail_count":0}}}"#)
                .is_err()
        );
    }

    #[test]
    fn config_users() {
        assert_eq!(
            parse_config_users(r#"{"host":"http://x","users":12}"#).unwrap(),
            12.0
        );
        let e = parse_config_users(r#"{"users":null}"#).unwrap_err();
        assert!(e.to_string().contains("test-plan"), "{e}");
    }
}
