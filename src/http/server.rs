//! The router, and the read-only routes: `/metrics`, `/healthz`,
//! `/readyz`, `/api/v1/targets` and `/api/v1/groups` (the live page and
//! its charts are [`super::page`]).
//!
//! Why it exists: one table says which route goes where. The read-only
//! routes are here because each is a few lines over [`crate::telemetry`]:
//! nothing they do can change an offer. The push route is [`super::push`],
//! the offer route [`super::pull`]; connections are accepted by
//! [`super::conn`] (a header-read timeout, a connection cap and an idle
//! timeout, so idle or slow clients cannot starve the scrapes).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

use super::{conn, page, pull, push, Surface};

/// The content type of OpenMetrics text, which `prometheus-client` emits.
pub const OPENMETRICS_CONTENT_TYPE: &str =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The router, for tests and for embedding.
pub fn router(surface: Arc<Surface>) -> Router {
    Router::new()
        .route("/", get(page::page))
        .route("/api/v1/targets/{name}/chart", get(page::chart))
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .route("/api/v1/targets", get(targets))
        .route("/api/v1/groups", get(groups))
        .route("/api/v1/targets/{name}/offer", get(pull::offer))
        .route(
            "/api/v1/targets/{name}/members/{member}/offer",
            get(pull::member_offer),
        )
        // Every push path, so that `job@base64/...` is decoded and a bad
        // path (`/metrics/job/`, `/metrics/nope`) is a counted 400, not an
        // uncounted 404 from the router.
        .route(
            "/metrics/{*grouping}",
            axum::routing::put(push::push)
                .post(push::push)
                .delete(push::push),
        )
        .layer(axum::extract::DefaultBodyLimit::max(64 * 1024))
        // A request (body included) that takes longer than this is cut off
        // with 408, so a slow client cannot hold a handler.
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
        ))
        .with_state(surface)
}

/// The longest any request to the controller may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    surface: Arc<Surface>,
    limits: conn::ServerLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let faults = surface.telemetry.metrics.faults.clone();
    conn::serve(listener, router(surface), faults, limits, shutdown).await
}

/// The content type of Prometheus text 0.0.4.
pub const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Serves OpenMetrics when the scraper asks for it, else Prometheus text.
///
/// The text is encoded on a blocking thread: at 10,000 targets it is a
/// million series, and encoding them on a runtime thread would hold up
/// every target's window for as long as that takes.
async fn metrics(State(s): State<Arc<Surface>>, headers: axum::http::HeaderMap) -> Response {
    let wants_openmetrics = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/openmetrics-text"));
    let encoded = tokio::task::spawn_blocking(move || {
        if wants_openmetrics {
            (
                OPENMETRICS_CONTENT_TYPE,
                s.telemetry.metrics.encode_openmetrics(),
            )
        } else {
            (PROMETHEUS_CONTENT_TYPE, s.telemetry.metrics.encode())
        }
    })
    .await;
    match encoded {
        Ok((content_type, body)) => ([(header::CONTENT_TYPE, content_type)], body).into_response(),
        Err(e) => {
            tracing::error!("Encoding /metrics failed: {e}");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

async fn readyz(State(s): State<Arc<Surface>>) -> Response {
    if s.telemetry.ready() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: some targets have no baseline reading yet\n",
        )
            .into_response()
    }
}

async fn targets(State(s): State<Arc<Surface>>) -> Response {
    Json(serde_json::json!({ "targets": s.telemetry.statuses() })).into_response()
}

async fn groups(State(s): State<Arc<Surface>>) -> Response {
    Json(serde_json::json!({ "groups": s.telemetry.groups() })).into_response()
}

pub use super::conn::SHUTDOWN_GRACE;
