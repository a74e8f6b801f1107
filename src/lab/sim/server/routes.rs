//! The simulated tool's HTTP interface: the routes, the admin API's JSON
//! bodies and its error answers.
//!
//! Why it exists: the governor reaches a load tool only over HTTP, so the
//! simulation answers the same paths a tool would (the table in
//! [`super`]'s docs), for one tool on the plain paths and for each tool
//! under `/t/{i}`.
//!
//! What it may touch: the shared [`Sim`] state, through its tools' locks.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::error::ApiError;
use super::exposition::{render, PROMETHEUS_CONTENT_TYPE};
use super::state::{lock, Sim, Snapshot};
use super::{valid_rate, MAX_BODY_BYTES, MAX_RATE, MAX_WORKERS};

/// The HTTP routes over shared simulation state.
pub(super) fn router(sim: Arc<Sim>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/metrics", get(metrics_all))
        .route("/admin/workers", get(workers_get).put(workers_put))
        .route("/admin/rate", get(rate_get).put(rate_put))
        .route("/admin/reset", post(reset))
        .route("/t/{tool}/metrics", get(tool_metrics))
        .route(
            "/t/{tool}/admin/workers",
            get(tool_workers_get).put(tool_workers_put),
        )
        .route(
            "/t/{tool}/admin/rate",
            get(tool_rate_get).put(tool_rate_put),
        )
        .route("/t/{tool}/admin/reset", post(tool_reset))
        .fallback(|| async { ApiError::not_found("no such path; try /metrics or /admin/workers") })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(sim)
}

type ApiResult = Result<Response, ApiError>;

/// Parse a `/t/{i}` segment.
fn tool_index(raw: &str) -> Result<usize, ApiError> {
    raw.parse()
        .map_err(|_| ApiError::not_found(format!("tool must be a number like /t/0 (got {raw:?})")))
}

/// Parse a small JSON object body and return its `field`.
fn json_field(body: &[u8], field: &str, example: &str) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("the body must be JSON like {example} ({e})"))
    })?;
    match value {
        Value::Object(mut map) => map.remove(field).ok_or_else(|| {
            ApiError::bad_request(format!("missing field `{field}`; send {example}"))
        }),
        _ => Err(ApiError::bad_request(format!(
            "the body must be a JSON object like {example}"
        ))),
    }
}

/// A `workers` value: a whole number in `0..=MAX_WORKERS` (`5.0` is whole).
pub(super) fn parse_workers(body: &[u8]) -> Result<u64, ApiError> {
    let example = r#"{"workers": 10}"#;
    let value = json_field(body, "workers", example)?;
    let whole = match &value {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| {
                    f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f <= MAX_WORKERS as f64
                })
                .map(|f| f as u64)
        }),
        _ => None,
    };
    match whole {
        Some(n) if n <= MAX_WORKERS => Ok(n),
        _ => Err(ApiError::bad_request(format!(
            "`workers` must be a whole number from 0 to {MAX_WORKERS}, like {example} (got {value})"
        ))),
    }
}

/// A `rate` value: finite and in `0..=MAX_RATE`, or `null` for unbounded.
pub(super) fn parse_rate(body: &[u8]) -> Result<Option<f64>, ApiError> {
    let example = r#"{"rate": 500} or {"rate": null}"#;
    let value = json_field(body, "rate", example)?;
    match &value {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_f64() {
            Some(rate) if valid_rate(rate) => Ok(Some(rate)),
            _ => Err(ApiError::bad_request(format!(
                "`rate` must be attempts per second from 0 to {MAX_RATE}, or null (got {value})"
            ))),
        },
        _ => Err(ApiError::bad_request(format!(
            "`rate` must be a number or null, like {example} (got {value})"
        ))),
    }
}

fn workers_answer(workers: u64) -> Response {
    Json(json!({ "workers": workers })).into_response()
}

fn rate_answer(rate: Option<f64>) -> Response {
    Json(json!({ "rate": rate })).into_response()
}

fn do_workers_get(sim: &Sim, i: usize) -> ApiResult {
    Ok(workers_answer(sim.tool(i)?.workers))
}

fn do_workers_put(sim: &Sim, i: usize, body: &[u8]) -> ApiResult {
    let workers = parse_workers(body)?;
    let mut tool = sim.tool(i)?;
    tool.workers = workers;
    Ok(workers_answer(tool.workers))
}

fn do_rate_get(sim: &Sim, i: usize) -> ApiResult {
    Ok(rate_answer(sim.tool(i)?.rate))
}

fn do_rate_put(sim: &Sim, i: usize, body: &[u8]) -> ApiResult {
    let rate = parse_rate(body)?;
    let mut tool = sim.tool(i)?;
    tool.rate = rate;
    Ok(rate_answer(tool.rate))
}

pub(super) fn do_reset(sim: &Sim, i: usize) -> ApiResult {
    let mut tool = sim.tool(i)?;
    tool.successes = 0;
    tool.failures = 0;
    tool.ticks = 0;
    if let Some(h) = &mut tool.latency {
        h.clear();
    }
    tool.workers = sim.initial_workers;
    tool.rate = sim.initial_rate;
    Ok(Json(json!({ "reset": true, "workers": tool.workers, "rate": tool.rate })).into_response())
}

fn metrics_answer(text: String) -> Response {
    ([(header::CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE)], text).into_response()
}

async fn metrics_all(State(sim): State<Arc<Sim>>) -> Response {
    if sim.tools.len() == 1 {
        return metrics_answer(render(&[(None, lock(&sim.tools[0]).snapshot())]));
    }
    let snapshots: Vec<(Option<usize>, Snapshot)> = sim
        .tools
        .iter()
        .enumerate()
        .map(|(i, tool)| (Some(i), lock(tool).snapshot()))
        .collect();
    metrics_answer(render(&snapshots))
}

async fn tool_metrics(State(sim): State<Arc<Sim>>, Path(raw): Path<String>) -> ApiResult {
    let snapshot = sim.tool(tool_index(&raw)?)?.snapshot();
    Ok(metrics_answer(render(&[(None, snapshot)])))
}

async fn workers_get(State(sim): State<Arc<Sim>>) -> ApiResult {
    do_workers_get(&sim, sim.only_tool()?)
}

async fn workers_put(State(sim): State<Arc<Sim>>, body: Bytes) -> ApiResult {
    do_workers_put(&sim, sim.only_tool()?, &body)
}

async fn rate_get(State(sim): State<Arc<Sim>>) -> ApiResult {
    do_rate_get(&sim, sim.only_tool()?)
}

async fn rate_put(State(sim): State<Arc<Sim>>, body: Bytes) -> ApiResult {
    do_rate_put(&sim, sim.only_tool()?, &body)
}

async fn reset(State(sim): State<Arc<Sim>>) -> ApiResult {
    do_reset(&sim, sim.only_tool()?)
}

async fn tool_workers_get(State(sim): State<Arc<Sim>>, Path(raw): Path<String>) -> ApiResult {
    do_workers_get(&sim, tool_index(&raw)?)
}

async fn tool_workers_put(
    State(sim): State<Arc<Sim>>,
    Path(raw): Path<String>,
    body: Bytes,
) -> ApiResult {
    do_workers_put(&sim, tool_index(&raw)?, &body)
}

async fn tool_rate_get(State(sim): State<Arc<Sim>>, Path(raw): Path<String>) -> ApiResult {
    do_rate_get(&sim, tool_index(&raw)?)
}

async fn tool_rate_put(
    State(sim): State<Arc<Sim>>,
    Path(raw): Path<String>,
    body: Bytes,
) -> ApiResult {
    do_rate_put(&sim, tool_index(&raw)?, &body)
}

async fn tool_reset(State(sim): State<Arc<Sim>>, Path(raw): Path<String>) -> ApiResult {
    do_reset(&sim, tool_index(&raw)?)
}
