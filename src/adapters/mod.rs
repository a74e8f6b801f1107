//! Tool adapters: the APIs of real load tools, spoken natively.
//!
//! Why it exists: most load tools serve neither Prometheus text nor a
//! "set workers to N" endpoint, so the generic `prometheus` signal and
//! `http` control cannot reach them. Each tool here is one file that knows
//! that tool's API shapes and quirks, and offers both halves of the
//! pipeline: a signal source (cumulative attempts and failures) and a
//! control (write the offer, read the committed value back). The user
//! writes `kind = "locust"` and a URL.
//!
//! | tool | signal | control | read-back |
//! |---|---|---|---|
//! | [`locust`] 2.x web UI | `GET /stats/requests`, "Aggregated" | `POST /swarm` (form) | `user_count` in the stats |
//! | [`k6`] 1.x REST API | `GET /v1/metrics/http_reqs` + failures | `PATCH /v1/status` (JSON:API) | `data.attributes.vus` |
//! | [`goose`] WebSocket controller | `metrics-json` | `users N` | `config-json` → `users` |
//!
//! What it may touch: the network, always with a timeout and a body-size
//! limit. Faults map to the bounded [`SignalError`] and [`ControlError`]
//! types, so a tool that is down, restarting or answering garbage is
//! counted in `throttle_signal_errors_total` / `throttle_control_errors_total`
//! and never panics. Counter resets (a restarted tool) are the window
//! module's business: a source reports what the tool says.

pub mod goose;
pub mod k6;
pub mod locust;

use std::time::Duration;

use crate::control::ControlError;
use crate::signal::http::map_reqwest;
use crate::signal::SignalError;

/// Largest body accepted from a tool's API (stats can list many requests).
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Longest part of an error body kept for the log.
const ERROR_BODY_CHARS: usize = 300;

/// `base` + `path`, without doubling or dropping the slash between them.
pub fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

/// A transport fault as a control error (writes and read-backs count as
/// control errors, so the same fault carries the other label).
pub fn as_control_error(e: SignalError, timeout: Duration) -> ControlError {
    match e {
        SignalError::Timeout(_) => ControlError::Timeout(timeout),
        SignalError::Connect(m) => ControlError::Connect(m),
        SignalError::Status(s) => ControlError::Status {
            status: s,
            body: String::new(),
        },
        SignalError::Transport(m) => ControlError::Transport(m),
        other => ControlError::ReadBack(other.to_string()),
    }
}

/// Sends `request` and returns the status and (bounded) body, within
/// `timeout`. Unlike [`crate::signal::http::fetch_text`], a non-2xx answer
/// is not an error here: tools explain refusals in the body, and the
/// adapters turn those explanations into actionable errors.
pub async fn send(
    request: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<(u16, String), SignalError> {
    let fut = async {
        let _slot = crate::signal::http::in_flight().await;
        let mut resp = request.send().await.map_err(map_reqwest)?;
        let status = resp.status().as_u16();
        if resp
            .content_length()
            .is_some_and(|n| n as usize > MAX_BODY_BYTES)
        {
            return Err(SignalError::TooLarge(MAX_BODY_BYTES));
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(map_reqwest)? {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(SignalError::TooLarge(MAX_BODY_BYTES));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r,
        Err(_) => Err(SignalError::Timeout(timeout)),
    }
}

/// Parses a tool's JSON answer; garbage is a [`SignalError::Format`] that
/// shows the start of what came back.
pub fn parse_json(tool: &str, body: &str) -> Result<serde_json::Value, SignalError> {
    serde_json::from_str(body).map_err(|e| {
        SignalError::Format(format!(
            "{tool} answered something that is not JSON ({e}): `{}`; is the URL the {tool} API?",
            excerpt(body)
        ))
    })
}

/// The start of a body, for an error message.
pub fn excerpt(body: &str) -> String {
    let one_line = body.trim().replace(['\n', '\r'], " ");
    let mut s: String = one_line.chars().take(ERROR_BODY_CHARS).collect();
    if one_line.chars().count() > ERROR_BODY_CHARS {
        s.push('…');
    }
    s
}

/// A JSON number as a non-negative finite count.
pub fn count(v: &serde_json::Value) -> Option<f64> {
    v.as_f64().filter(|n| n.is_finite() && *n >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_handles_slashes() {
        assert_eq!(
            join("http://h:8089", "/stats/requests"),
            "http://h:8089/stats/requests"
        );
        assert_eq!(join("http://h:8089/", "swarm"), "http://h:8089/swarm");
        assert_eq!(
            join("http://h/base/", "/v1/status"),
            "http://h/base/v1/status"
        );
    }

    #[test]
    fn excerpt_is_bounded_and_one_line() {
        let long = "x\n".repeat(1000);
        let e = excerpt(&long);
        assert!(!e.contains('\n'));
        assert!(e.chars().count() <= ERROR_BODY_CHARS + 1);
    }
}
