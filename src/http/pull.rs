//! The offer endpoint: `GET /api/v1/targets/{name}/offer`.
//!
//! Why it exists: a tool with no live-control API (k6 v2, Artillery,
//! Gatling, a home-grown script) asks the controller for its offer and
//! gates itself by it. This module turns an HTTP request into a pull of the
//! [`PullBoard`](crate::control::pull::PullBoard) and the answer into
//! `text/plain` (the number) or JSON (`{"offer", "knob", "generation",
//! "updated_at"}`) when JSON is asked for (`Accept: application/json` or
//! `?format=json`).
//!
//! - The puller's identity comes from `?client=ID` or the `X-Throttle-Client`
//!   header (letters, digits, `.`, `_`, `-`, `:`; at most 64), and every pull
//!   that serves a new generation is evidence that the tool has seen it.
//! - A group member pulls its own share at `?instance=ADDR` (its address or
//!   name) or at `/api/v1/targets/{name}/members/{member}/offer`.
//! - Caching suits a poll every second: `Cache-Control: private, max-age=1`
//!   and an `ETag` of the generation (`If-None-Match` answers 304 and still
//!   counts as a pull).
//! - A pull with `If-None-Match` of the current generation and `?wait=5s`
//!   (a duration, or seconds) waits for the next publication, at most
//!   [`MAX_WAIT`] ([`crate::control::pull::wait`]): answered 200 the moment
//!   a new offer is published, else 304 when the wait ends. A tool that
//!   asks so takes a `Down` within milliseconds instead of a poll interval
//!   later.
//! - When `[server.pull]` sets a token, a request without
//!   `Authorization: Bearer <token>` is refused with 401.
//!
//! Every request is counted in `throttle_pull_requests_total{result}`;
//! served pulls in `throttle_pulls_total{target}` (both emitted by
//! [`crate::telemetry::export::emit_pull`], with the rest of the telemetry).
//!
//! What it may touch: the board (it lives in [`crate::control::pull`], below
//! both this server and the engine) and the exporter; it never decides and
//! never writes to a tool.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::Surface;
use crate::control::pull::{PullError, Served, MAX_WAIT};
use crate::telemetry::export::{emit_pull, Pull};

/// The header a puller may name itself with (instead of `?client=`).
pub const CLIENT_HEADER: &str = "x-throttle-client";

/// The longest puller identity accepted.
pub const MAX_CLIENT_LEN: usize = 64;

/// The query string of a pull.
#[derive(Debug, Default, Deserialize)]
pub struct OfferQuery {
    /// The puller's identity.
    client: Option<String>,
    /// A group member's address or name.
    instance: Option<String>,
    /// `json` for a JSON answer.
    format: Option<String>,
    /// How long a pull that holds the current generation waits for the
    /// next one (`5s`, `500ms`, or seconds).
    wait: Option<String>,
}

/// A `wait` value: a duration (`5s`, `500ms`) or seconds (`5`, `2.5`),
/// cut to [`MAX_WAIT`].
fn parse_wait(v: &str) -> Result<std::time::Duration, String> {
    let v = v.trim();
    let d = match v.parse::<f64>() {
        Ok(secs) if secs.is_finite() && secs >= 0.0 => {
            std::time::Duration::from_secs_f64(secs.min(MAX_WAIT.as_secs_f64()))
        }
        Ok(_) => return Err(format!("`wait` must be a duration like 5s, not {v:?}")),
        Err(_) => humantime::parse_duration(v)
            .map_err(|e| format!("`wait` must be a duration like 5s, not {v:?} ({e})"))?,
    };
    Ok(d.min(MAX_WAIT))
}

/// `GET /api/v1/targets/{name}/offer`
pub(super) async fn offer(
    State(t): State<Arc<Surface>>,
    name: Result<Path<String>, PathRejection>,
    q: Result<Query<OfferQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let (Path(name), Query(q)) = match (name, q) {
        (Ok(name), Ok(q)) => (name, q),
        (Err(e), _) => return bad_request(&t, e.body_text()),
        (_, Err(e)) => return bad_request(&t, e.body_text()),
    };
    let member = q.instance.clone();
    answer(&t, &name, member.as_deref(), &q, &headers).await
}

/// `GET /api/v1/targets/{name}/members/{member}/offer`
pub(super) async fn member_offer(
    State(t): State<Arc<Surface>>,
    names: Result<Path<(String, String)>, PathRejection>,
    q: Result<Query<OfferQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Response {
    let (Path((name, member)), Query(q)) = match (names, q) {
        (Ok(names), Ok(q)) => (names, q),
        (Err(e), _) => return bad_request(&t, e.body_text()),
        (_, Err(e)) => return bad_request(&t, e.body_text()),
    };
    answer(&t, &name, Some(&member), &q, &headers).await
}

/// A path or query the extractors refused (a duplicate `client`, a name
/// that is not UTF-8): a counted 400, like every other refusal (issue 27;
/// the router's own 400 was not counted).
fn bad_request(t: &Surface, why: String) -> Response {
    refuse(t, StatusCode::BAD_REQUEST, "bad_request", why)
}

fn refuse(t: &Surface, status: StatusCode, result: &'static str, message: String) -> Response {
    emit_pull(&t.telemetry, Pull::Refused(result));
    let mut r = (status, format!("{message}\n")).into_response();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"throttle-governor\""),
        );
    }
    if status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

fn is_client_id(s: &str) -> bool {
    s.len() <= MAX_CLIENT_LEN
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':'))
}

/// Whether an `If-None-Match` value matches `etag`: `*` matches any
/// current offer, and the comparison is weak (RFC 9110 §13.1.2), so
/// `W/"g3"` matches `"g3"`.
fn if_none_match(value: &str, etag: &str) -> bool {
    value
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

async fn answer(
    t: &Surface,
    name: &str,
    member: Option<&str>,
    q: &OfferQuery,
    headers: &HeaderMap,
) -> Response {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(crate::auth::token::bearer);
    if !t.pull.authorized(presented) {
        return refuse(
            t,
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required: send `Authorization: Bearer <token>` (server.pull)"
                .into(),
        );
    }
    let client = q
        .client
        .clone()
        .or_else(|| {
            headers
                .get(CLIENT_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        })
        .unwrap_or_default();
    if !is_client_id(&client) {
        return refuse(
            t,
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!(
                "`client` must be at most {MAX_CLIENT_LEN} letters, digits, `.`, `_`, `-` or `:`"
            ),
        );
    }
    let wait = match q.wait.as_deref().map(parse_wait).transpose() {
        Ok(w) => w,
        Err(why) => return refuse(t, StatusCode::BAD_REQUEST, "bad_request", why),
    };
    let client = if client.is_empty() {
        "anonymous"
    } else {
        &client
    };
    let inm = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok());
    let mut served = match serve(t, name, member, client) {
        Ok(s) => s,
        Err(e) => return refused(t, e),
    };
    // Holding the current generation, a pull that may wait does, then is
    // served again: the new generation, or the same one (304).
    if let Some(wait) = wait.filter(|w| !w.is_zero()) {
        if inm.is_some_and(|v| if_none_match(v, &etag_of(&served)))
            && t.pull
                .wait_for_change(name, member, served.generation, wait)
                .await
        {
            served = match serve(t, name, member, client) {
                Ok(s) => s,
                Err(e) => return refused(t, e),
            };
        }
    }
    let etag = etag_of(&served);
    let not_modified = inm.is_some_and(|v| if_none_match(v, &etag));
    emit_pull(
        &t.telemetry,
        Pull::Served {
            target: name,
            clients: served.clients,
            not_modified,
        },
    );
    let mut r = if not_modified {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        body(&served, wants_json(q, headers))
    };
    let h = r.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=1"),
    );
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    r
}

fn etag_of(s: &Served) -> String {
    format!("\"g{}\"", s.generation)
}

/// One pull of the board, recorded as evidence.
fn serve(t: &Surface, name: &str, member: Option<&str>, client: &str) -> Result<Served, PullError> {
    t.pull.pull(name, member, client, Instant::now())
}

/// A refused pull's answer.
fn refused(t: &Surface, e: PullError) -> Response {
    let status = match e {
        PullError::NoOffer(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::NOT_FOUND,
    };
    refuse(t, status, e.result(), e.to_string())
}

fn wants_json(q: &OfferQuery, headers: &HeaderMap) -> bool {
    q.format.as_deref() == Some("json")
        || headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("application/json"))
}

/// The number as text, or the JSON document.
fn body(s: &Served, json: bool) -> Response {
    let number = crate::control::format_offer(s.integer, s.offer);
    if json {
        let doc = format!(
            "{{\"offer\":{number},\"knob\":\"{}\",\"generation\":{},\"updated_at\":\"{}\"}}\n",
            s.knob,
            s.generation,
            humantime::format_rfc3339_millis(s.updated_at)
        );
        ([(header::CONTENT_TYPE, "application/json")], doc).into_response()
    } else {
        (
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{number}\n"),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 27 #8: `*` and weak ETags get 304 (they got 200 before).
    #[test]
    fn if_none_match_takes_star_and_weak_tags() {
        for v in ["\"g3\"", "*", "W/\"g3\"", "\"g1\", W/\"g3\"", " * "] {
            assert!(if_none_match(v, "\"g3\""), "{v}");
        }
        for v in ["\"g4\"", "W/\"g4\"", "g3", ""] {
            assert!(!if_none_match(v, "\"g3\""), "{v}");
        }
    }

    #[test]
    fn wait_takes_durations_or_seconds_cut_to_the_most() {
        use std::time::Duration;
        assert_eq!(parse_wait("5s").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_wait(" 500ms ").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_wait("2.5").unwrap(), Duration::from_millis(2500));
        assert_eq!(parse_wait("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_wait("1h").unwrap(), MAX_WAIT);
        assert_eq!(parse_wait("60").unwrap(), MAX_WAIT);
        for bad in ["soon", "-1", "NaN", "inf", "", "5 parsecs"] {
            let e = parse_wait(bad).unwrap_err();
            assert!(e.contains("`wait` must be a duration"), "{bad}: {e}");
        }
    }

    #[test]
    fn client_ids_are_bounded() {
        assert!(is_client_id("vu-shard-1"));
        assert!(is_client_id("k6:12"));
        assert!(is_client_id(""));
        assert!(!is_client_id("a b"));
        assert!(!is_client_id(&"x".repeat(65)));
    }

    #[tokio::test]
    async fn json_and_text_follow_the_knob() {
        let s = Served {
            offer: 2.5,
            knob: "rate",
            integer: false,
            generation: 3,
            updated_at: std::time::SystemTime::UNIX_EPOCH,
            clients: 1,
        };
        let text = |r: Response| async move {
            let b = axum::body::to_bytes(r.into_body(), 1024).await.unwrap();
            String::from_utf8(b.to_vec()).unwrap()
        };
        let json = text(body(&s, true)).await;
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["offer"], 2.5);
        assert_eq!(v["knob"], "rate");
        assert_eq!(v["generation"], 3);
        assert_eq!(v["updated_at"], "1970-01-01T00:00:00.000Z");
        assert_eq!(text(body(&s, false)).await, "2.5\n");
        let whole = Served {
            offer: 12.0,
            knob: "concurrency",
            integer: true,
            ..s
        };
        assert_eq!(text(body(&whole, false)).await, "12\n");
    }
}
