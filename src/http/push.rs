//! The push route: Pushgateway-compatible `PUT`/`POST`/`DELETE
//! /metrics/job/...`, feeding `kind = "push"` signals.
//!
//! Why it exists: the store that turns pushes into counters is a signal
//! ([`crate::signal::push::PushStore`]); this file is only its HTTP side: the
//! bearer token, the content type and encoding, the body limit and the
//! body deadline, and the answer. Every push is counted in
//! `throttle_push_requests_total{result}`.
//!
//! What it may touch: the store it is given and the push metric.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::Surface;
use crate::auth::token;
use crate::signal::push::{PushError, PushMethod, PushStore, BODY_READ_TIMEOUT};

/// `PUT`/`POST`/`DELETE /metrics/{*grouping}`: the push, counted.
pub(super) async fn push(
    State(s): State<Arc<Surface>>,
    method: Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    let (response, result) = handle(&s.push, &method, uri.path(), &headers, body).await;
    s.telemetry
        .metrics
        .push_requests
        .get_or_create(&crate::telemetry::metrics::PushLabels { result })
        .inc();
    response
}

/// The HTTP handler of `PUT`/`POST`/`DELETE /metrics/job/...`: the
/// response, and the bounded result label the server counts it under.
pub async fn handle(
    store: &PushStore,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> (Response, &'static str) {
    let result = receive(store, method, path, headers, body).await;
    let label = match &result {
        Ok(_) => "accepted",
        Err(e) => e.result(),
    };
    let response = match result {
        Ok(_) => StatusCode::OK.into_response(),
        Err(e) => {
            let mut resp = (e.status(), format!("{e}\n")).into_response();
            if matches!(e, PushError::Unauthorized) {
                resp.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
            }
            resp
        }
    };
    (response, label)
}

async fn receive(
    store: &PushStore,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Result<usize, PushError> {
    let (max_body, _, token) = store.guards();
    if let Some(expected) = token {
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(token::bearer)
            .unwrap_or("");
        if !token::matches(presented, &expected) {
            return Err(PushError::Unauthorized);
        }
    }
    let grouping = path.strip_prefix("/metrics/").unwrap_or(path);
    let method = match *method {
        Method::PUT => PushMethod::Put,
        Method::POST => PushMethod::Post,
        _ => PushMethod::Delete,
    };
    if method == PushMethod::Delete {
        return store.ingest(method, grouping, "");
    }
    if let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        if ct.contains("protobuf") {
            return Err(PushError::Unsupported(ct.to_string()));
        }
    }
    if let Some(enc) = headers.get(header::CONTENT_ENCODING) {
        let enc = enc.to_str().unwrap_or("?");
        if enc != "identity" {
            return Err(PushError::Unsupported(format!("Content-Encoding: {enc}")));
        }
    }
    if headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|n| n > max_body)
    {
        return Err(PushError::TooLarge(max_body));
    }
    let bytes = tokio::time::timeout(BODY_READ_TIMEOUT, axum::body::to_bytes(body, max_body))
        .await
        .map_err(|_| PushError::Timeout(BODY_READ_TIMEOUT))?
        .map_err(|_| PushError::TooLarge(max_body))?;
    let text = std::str::from_utf8(&bytes).map_err(|_| {
        PushError::Path("the body is not UTF-8 text".into()) // reported as bad_request
    })?;
    store.ingest(method, grouping, text)
}
