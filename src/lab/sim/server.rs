//! The simulated load tool: a real HTTP server driving one or many models.
//!
//! Why it exists: the governor talks to load tools over HTTP (it scrapes
//! Prometheus counters and writes the offer through an admin API), so the
//! demo, the integration tests and the benchmarks need a tool that does the
//! same over real sockets, in front of a target whose capacity is known.
//!
//! What it may touch: [`super::model`] (the targets), the listener it is
//! given, and a background task that ticks the models. Nothing else.
//!
//! # Behaviour
//! Each simulated tool holds a concurrency (`workers`, a whole number) and an
//! optional rate cap (`rate`, attempts per second; none means unbounded).
//! Every `tick` a background task offers each model
//!
//! ```text
//! offer = min(workers, rate * tick_secs / attempts_per_worker)
//! ```
//!
//! workers: the rate cap is turned into the number of workers that would
//! make exactly `rate` attempts per second, and the smaller of the two knobs
//! wins. The tick's result is added to cumulative counters. Ticks that fall
//! behind (a busy machine) are caught up in a burst, so counters follow wall
//! time.
//!
//! # HTTP interface
//! With `tools = 1` the plain paths serve the one tool; every tool `i` (from
//! 0) is also served under the prefix `/t/{i}`. With more tools, the plain
//! `/metrics` exposes all tools with a `tool="i"` label and the plain admin
//! paths answer 404 with a hint.
//!
//! | method | path | body / answer |
//! |---|---|---|
//! | GET | `/metrics` | Prometheus text format 0.0.4 |
//! | GET | `/admin/workers` | `{"workers": N}` |
//! | PUT | `/admin/workers` | `{"workers": N}` (whole, `0..=1e9`) → 200 with the new value; else 400 `{"error": ...}` |
//! | GET | `/admin/rate` | `{"rate": x}` (`null` = unbounded) |
//! | PUT | `/admin/rate` | `{"rate": x}` (finite, `>= 0`, or `null`) → 200 with the new value |
//! | POST | `/admin/reset` | zeroes the counters and restores the initial workers and rate (a tool restart; the target keeps its state) |
//! | GET | `/healthz` | `ok` |
//!
//! Request bodies are limited to [`MAX_BODY_BYTES`].
//!
//! # Metrics
//! | name | type | meaning |
//! |---|---|---|
//! | `sim_requests_total{outcome="success"\|"failure"}` | counter | resolved attempts by outcome |
//! | `sim_attempts_total` | counter | all resolved attempts (success + failure) |
//! | `sim_ticks_total` | counter | ticks simulated |
//! | `sim_workers` | gauge | current concurrency |
//! | `sim_rate_limit` | gauge | rate cap in attempts per second (`+Inf`: unbounded) |
//! | `sim_capacity` | gauge | the target's true capacity in workers (an oracle) |
//! | `sim_request_duration_seconds` | histogram | `queueing` only: the attempts' latency (`_bucket{le}` cumulative, `_sum`, `_count`) |
//!
//! The histogram's buckets are multiples of the model's base latency
//! `tick / a` (10 ms at the defaults): [`LATENCY_BUCKETS`], so that a bound
//! such as p99 <= 2.5 base sits on a bucket edge. Each tick adds the
//! tick's attempts times the model's CDF at each edge
//! ([`super::model::TickLatency::share_within`]); counts are exported
//! rounded to whole attempts (the `+Inf` bucket and `_count` are exact).

use std::fmt::Write as _;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::model::{ModelConfig, TargetModel};
use super::SimError;

/// The largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 4 * 1024;
/// The most workers a tool accepts.
pub const MAX_WORKERS: u64 = 1_000_000_000;
/// The highest finite rate cap accepted, in attempts per second.
pub const MAX_RATE: f64 = 1e15;
/// The most simulated tools one process serves.
pub const MAX_TOOLS: usize = 100_000;
/// The shortest tick.
pub const MIN_TICK: Duration = Duration::from_millis(1);

/// The `le` edges of `sim_request_duration_seconds`, in base latencies
/// (`tick / attempts_per_worker`); `+Inf` follows.
pub const LATENCY_BUCKETS: [f64; 13] = [
    0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 5.0,
];

/// The Prometheus text format's content type.
const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How to run the simulated load tool(s).
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// The target model behind every tool (tool `i` uses seed `seed + i`).
    pub model: ModelConfig,
    /// How long one model tick lasts in wall time.
    pub tick: Duration,
    /// Workers at start and after a reset.
    pub initial_workers: u64,
    /// Rate cap at start and after a reset, attempts per second (None:
    /// unbounded).
    pub initial_rate: Option<f64>,
    /// Where [`run`](super::run) and [`spawn`] listen.
    pub listen: SocketAddr,
    /// How many independent tools to serve (under `/t/{i}`).
    pub tools: usize,
}

impl SimConfig {
    /// One tool on `127.0.0.1:0` with a 100 ms tick, 1 worker and no rate cap.
    pub fn new(model: ModelConfig) -> Self {
        SimConfig {
            model,
            tick: Duration::from_millis(100),
            initial_workers: 1,
            initial_rate: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            tools: 1,
        }
    }

    /// Check every field; the first problem is reported.
    pub fn validate(&self) -> Result<(), SimError> {
        self.model.validate().map_err(SimError::Model)?;
        if self.tick < MIN_TICK {
            return Err(SimError::Tick(self.tick));
        }
        if self.initial_workers > MAX_WORKERS {
            return Err(SimError::Workers(self.initial_workers));
        }
        if let Some(rate) = self.initial_rate {
            if !valid_rate(rate) {
                return Err(SimError::Rate(rate));
            }
        }
        if self.tools == 0 || self.tools > MAX_TOOLS {
            return Err(SimError::Tools(self.tools));
        }
        Ok(())
    }
}

fn valid_rate(rate: f64) -> bool {
    rate.is_finite() && (0.0..=MAX_RATE).contains(&rate)
}

/// A running simulation started by [`spawn`]. Dropping it stops the server.
#[derive(Debug)]
pub struct SimHandle {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), SimError>>,
}

impl SimHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://{addr}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Stop the server and wait for it to finish.
    pub async fn shutdown(mut self) -> Result<(), SimError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(result) => result,
            Err(e) => Err(SimError::Serve(std::io::Error::other(e))),
        }
    }
}

/// Bind `cfg.listen` and serve in a background task.
pub async fn spawn(cfg: SimConfig) -> Result<SimHandle, SimError> {
    cfg.validate()?;
    let listener = TcpListener::bind(cfg.listen)
        .await
        .map_err(|source| SimError::Bind {
            addr: cfg.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(SimError::Serve)?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(cfg, listener, async move {
        // A dropped handle stops the server too.
        let _ = stopped.await;
    }));
    Ok(SimHandle {
        addr,
        stop: Some(stop),
        task,
    })
}

/// Serve the simulated tool(s) on `listener` until `shutdown` completes.
/// `cfg.listen` is not used: the listener is already bound.
pub async fn serve(
    cfg: SimConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), SimError> {
    cfg.validate()?;
    let sim = Arc::new(Sim::new(&cfg)?);
    let ticker = tokio::spawn(tick_forever(Arc::clone(&sim)));
    let result = axum::serve(listener, router(sim))
        .with_graceful_shutdown(shutdown)
        .await;
    ticker.abort();
    result.map_err(SimError::Serve)
}

/// The HTTP routes over shared simulation state.
fn router(sim: Arc<Sim>) -> Router {
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

/// Everything the handlers and the ticker share.
#[derive(Debug)]
struct Sim {
    tools: Vec<Mutex<Tool>>,
    tick_secs: f64,
    tick: Duration,
    initial_workers: u64,
    initial_rate: Option<f64>,
}

/// One simulated tool and its target.
#[derive(Debug)]
struct Tool {
    model: TargetModel,
    workers: u64,
    rate: Option<f64>,
    successes: u64,
    failures: u64,
    ticks: u64,
    /// `queueing` only: the latency histogram.
    latency: Option<Histogram>,
}

/// A cumulative latency histogram in seconds.
#[derive(Debug, Clone, PartialEq)]
struct Histogram {
    /// `(le, cumulative count)`, the edges of [`LATENCY_BUCKETS`] in seconds.
    buckets: Vec<(f64, f64)>,
    /// Observations (the `+Inf` bucket).
    count: u64,
    /// Sum of the observed latencies, in seconds.
    sum: f64,
}

impl Histogram {
    fn new(base_secs: f64) -> Self {
        Histogram {
            buckets: LATENCY_BUCKETS
                .iter()
                .map(|m| (m * base_secs, 0.0))
                .collect(),
            count: 0,
            sum: 0.0,
        }
    }

    fn clear(&mut self) {
        for b in &mut self.buckets {
            b.1 = 0.0;
        }
        self.count = 0;
        self.sum = 0.0;
    }

    /// Folds one tick's `attempts`, spread as `latency` (in ticks).
    fn observe(&mut self, attempts: u64, latency: &super::model::TickLatency, tick_secs: f64) {
        let n = attempts as f64;
        for (le, count) in &mut self.buckets {
            *count += n * latency.share_within(*le / tick_secs);
        }
        self.count = self.count.saturating_add(attempts);
        self.sum += n * latency.observed_mean() * tick_secs;
    }
}

/// A consistent copy of one tool's exported values.
#[derive(Debug, Clone)]
struct Snapshot {
    successes: u64,
    failures: u64,
    ticks: u64,
    workers: u64,
    rate: Option<f64>,
    capacity: f64,
    latency: Option<Histogram>,
}

impl Sim {
    fn new(cfg: &SimConfig) -> Result<Self, SimError> {
        let tools = (0..cfg.tools)
            .map(|i| {
                let mut model = cfg.model.clone();
                model.seed = model.seed.wrapping_add(i as u64);
                let base_secs = cfg.tick.as_secs_f64() / model.attempts_per_worker;
                let latency = model.kind.has_latency().then(|| Histogram::new(base_secs));
                Ok(Mutex::new(Tool {
                    latency,
                    model: TargetModel::new(model).map_err(SimError::Model)?,
                    workers: cfg.initial_workers,
                    rate: cfg.initial_rate,
                    successes: 0,
                    failures: 0,
                    ticks: 0,
                }))
            })
            .collect::<Result<Vec<_>, SimError>>()?;
        Ok(Sim {
            tools,
            tick_secs: cfg.tick.as_secs_f64(),
            tick: cfg.tick,
            initial_workers: cfg.initial_workers,
            initial_rate: cfg.initial_rate,
        })
    }

    /// Tool `i`, or a 404 naming the valid range.
    fn tool(&self, i: usize) -> Result<MutexGuard<'_, Tool>, ApiError> {
        match self.tools.get(i) {
            Some(tool) => Ok(lock(tool)),
            None => Err(ApiError::not_found(format!(
                "no tool {i}; tools are numbered 0 to {}",
                self.tools.len() - 1
            ))),
        }
    }

    /// The tool behind the plain paths: the only one.
    fn only_tool(&self) -> Result<usize, ApiError> {
        if self.tools.len() == 1 {
            Ok(0)
        } else {
            Err(ApiError::not_found(format!(
                "{} tools are simulated; use /t/{{i}}/admin/... with i from 0 to {}",
                self.tools.len(),
                self.tools.len() - 1
            )))
        }
    }

    /// Advance every tool by one tick.
    fn tick_all(&self) {
        for tool in &self.tools {
            lock(tool).tick(self.tick_secs);
        }
    }
}

impl Tool {
    fn tick(&mut self, tick_secs: f64) {
        let mut offer = self.workers as f64;
        if let Some(rate) = self.rate {
            offer = offer.min(rate * tick_secs / self.model.config().attempts_per_worker);
        }
        let result = self.model.tick(offer);
        self.successes = self.successes.saturating_add(result.successes());
        self.failures = self.failures.saturating_add(result.failures);
        self.ticks += 1;
        if let (Some(h), Some(l)) = (&mut self.latency, &result.latency) {
            h.observe(result.attempts, l, tick_secs);
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            successes: self.successes,
            failures: self.failures,
            ticks: self.ticks,
            workers: self.workers,
            rate: self.rate,
            capacity: self.model.capacity(),
            latency: self.latency.clone(),
        }
    }
}

/// Lock a tool; a poisoned lock (a panicked holder) is still usable, since
/// every update leaves the state consistent.
fn lock(tool: &Mutex<Tool>) -> MutexGuard<'_, Tool> {
    tool.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Tick every tool each `sim.tick`, forever (aborted on shutdown).
async fn tick_forever(sim: Arc<Sim>) {
    let mut interval = tokio::time::interval(sim.tick);
    // The first tick of an interval completes at once; a model tick is
    // owed only after one full period.
    interval.tick().await;
    loop {
        interval.tick().await;
        sim.tick_all();
    }
}

/// A JSON error answer: `{"error": message}`.
#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    fn bad_request(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    fn not_found(message: impl Into<String>) -> Self {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(json!({ "error": self.message }))).into_response()
    }
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
fn parse_workers(body: &[u8]) -> Result<u64, ApiError> {
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
fn parse_rate(body: &[u8]) -> Result<Option<f64>, ApiError> {
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

fn do_reset(sim: &Sim, i: usize) -> ApiResult {
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

/// Render snapshots as Prometheus text 0.0.4. A `Some(i)` index adds the
/// label `tool="i"`; all series of one metric are grouped under one header.
fn render(snapshots: &[(Option<usize>, Snapshot)]) -> String {
    let mut out = String::with_capacity(256 + snapshots.len() * 400);
    let labels = |tool: Option<usize>, extra: &str| -> String {
        match (tool, extra.is_empty()) {
            (None, true) => String::new(),
            (None, false) => format!("{{{extra}}}"),
            (Some(i), true) => format!("{{tool=\"{i}\"}}"),
            (Some(i), false) => format!("{{tool=\"{i}\",{extra}}}"),
        }
    };
    let mut family =
        |name: &str,
         kind: &str,
         help: &str,
         series: &dyn Fn(&Snapshot) -> Vec<(&'static str, String)>| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (tool, snapshot) in snapshots {
                for (extra, value) in series(snapshot) {
                    let _ = writeln!(out, "{name}{} {value}", labels(*tool, extra));
                }
            }
        };
    family(
        "sim_requests_total",
        "counter",
        "Resolved attempts by outcome.",
        &|s| {
            vec![
                (r#"outcome="success""#, s.successes.to_string()),
                (r#"outcome="failure""#, s.failures.to_string()),
            ]
        },
    );
    family(
        "sim_attempts_total",
        "counter",
        "All resolved attempts (successes plus failures).",
        &|s| vec![("", s.successes.saturating_add(s.failures).to_string())],
    );
    family(
        "sim_ticks_total",
        "counter",
        "Model ticks simulated.",
        &|s| vec![("", s.ticks.to_string())],
    );
    family(
        "sim_workers",
        "gauge",
        "Current concurrency (workers).",
        &|s| vec![("", s.workers.to_string())],
    );
    family(
        "sim_rate_limit",
        "gauge",
        "Rate cap in attempts per second (+Inf when unbounded).",
        &|s| vec![("", s.rate.map_or_else(|| "+Inf".to_string(), float))],
    );
    family(
        "sim_capacity",
        "gauge",
        "The simulated target's true capacity in workers.",
        &|s| vec![("", float(s.capacity))],
    );
    render_latency(&mut out, snapshots);
    out
}

/// `sim_request_duration_seconds`, for the tools that have a latency.
fn render_latency(out: &mut String, snapshots: &[(Option<usize>, Snapshot)]) {
    let name = "sim_request_duration_seconds";
    let mut header = false;
    for (tool, s) in snapshots {
        let Some(h) = &s.latency else { continue };
        if !header {
            let _ = writeln!(out, "# HELP {name} Attempt latency (queueing model).");
            let _ = writeln!(out, "# TYPE {name} histogram");
            header = true;
        }
        let tool_label = tool.map_or_else(String::new, |i| format!("tool=\"{i}\","));
        let plain = tool.map_or_else(String::new, |i| format!("{{tool=\"{i}\"}}"));
        for &(le, count) in &h.buckets {
            // Rounded to whole attempts, never above the total.
            let c = (count.round() as u64).min(h.count);
            let _ = writeln!(out, "{name}_bucket{{{tool_label}le=\"{}\"}} {c}", float(le));
        }
        let _ = writeln!(out, "{name}_bucket{{{tool_label}le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(out, "{name}_sum{plain} {}", float(h.sum));
        let _ = writeln!(out, "{name}_count{plain} {}", h.count);
    }
}

/// A float in exposition syntax.
fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else {
        v.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::sim::model::ModelKind;

    fn snapshot() -> Snapshot {
        Snapshot {
            successes: 10,
            failures: 2,
            ticks: 3,
            workers: 4,
            rate: None,
            capacity: 120.0,
            latency: None,
        }
    }

    #[test]
    fn render_single_tool() {
        let text = render(&[(None, snapshot())]);
        assert!(text.contains("# TYPE sim_requests_total counter\n"));
        assert!(text.contains("sim_requests_total{outcome=\"success\"} 10\n"));
        assert!(text.contains("sim_requests_total{outcome=\"failure\"} 2\n"));
        assert!(text.contains("sim_attempts_total 12\n"));
        assert!(text.contains("sim_ticks_total 3\n"));
        assert!(text.contains("sim_workers 4\n"));
        assert!(text.contains("sim_rate_limit +Inf\n"));
        assert!(text.contains("sim_capacity 120\n"));
    }

    #[test]
    fn render_many_tools_groups_families() {
        let mut other = snapshot();
        other.rate = Some(2.5);
        let text = render(&[(Some(0), snapshot()), (Some(1), other)]);
        assert_eq!(text.matches("# TYPE sim_workers gauge").count(), 1);
        assert!(text.contains("sim_requests_total{tool=\"1\",outcome=\"failure\"} 2\n"));
        assert!(text.contains("sim_rate_limit{tool=\"1\"} 2.5\n"));
        assert!(text.contains("sim_rate_limit{tool=\"0\"} +Inf\n"));
    }

    #[test]
    fn workers_bodies() {
        assert_eq!(parse_workers(br#"{"workers": 7}"#).unwrap(), 7);
        assert_eq!(parse_workers(br#"{"workers": 7.0}"#).unwrap(), 7);
        assert_eq!(parse_workers(br#"{"workers": 0}"#).unwrap(), 0);
        for bad in [
            &br#"{"workers": -1}"#[..],
            br#"{"workers": 1.5}"#,
            br#"{"workers": "3"}"#,
            br#"{"workers": null}"#,
            br#"{"workers": 1e300}"#,
            br#"{"workers": 1000000001}"#,
            br#"{"worker": 3}"#,
            br#"[3]"#,
            br#"3"#,
            b"not json",
            b"",
        ] {
            let err = parse_workers(bad).unwrap_err();
            assert_eq!(err.status, StatusCode::BAD_REQUEST, "{bad:?}");
        }
    }

    #[test]
    fn rate_bodies() {
        assert_eq!(parse_rate(br#"{"rate": null}"#).unwrap(), None);
        assert_eq!(parse_rate(br#"{"rate": 12.5}"#).unwrap(), Some(12.5));
        assert_eq!(parse_rate(br#"{"rate": 0}"#).unwrap(), Some(0.0));
        for bad in [
            &br#"{"rate": -1}"#[..],
            br#"{"rate": 1e300}"#,
            br#"{"rate": "5"}"#,
            br#"{}"#,
        ] {
            assert!(parse_rate(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn rate_caps_the_offer() {
        let cfg = SimConfig::new(ModelConfig::new(ModelKind::Rejector, 100.0));
        let sim = Sim::new(&cfg).unwrap();
        {
            let mut tool = lock(&sim.tools[0]);
            tool.workers = 50;
            // 100 attempts/s at 0.1 s ticks and 10 attempts per worker:
            // one worker's worth.
            tool.rate = Some(100.0);
        }
        sim.tick_all();
        let s = lock(&sim.tools[0]).snapshot();
        assert_eq!((s.successes, s.failures, s.ticks), (10, 0, 1));
        lock(&sim.tools[0]).rate = None;
        sim.tick_all();
        assert_eq!(lock(&sim.tools[0]).snapshot().successes, 510);
    }

    #[test]
    fn queueing_exports_a_latency_histogram_that_reads_back_its_p99() {
        use crate::window::Buckets;
        let cfg = SimConfig::new(ModelConfig::new(ModelKind::Queueing, 100.0));
        let sim = Sim::new(&cfg).unwrap();
        // Twice capacity: L = 2 base = 20 ms at 100 ms ticks and a = 10;
        // p99 = 1.49 L = 29.8 ms; nothing times out (1.5 L < 40 ms).
        lock(&sim.tools[0]).workers = 200;
        for _ in 0..10 {
            sim.tick_all();
        }
        let text = render(&[(None, lock(&sim.tools[0]).snapshot())]);
        assert_eq!(
            text.matches("# TYPE sim_request_duration_seconds histogram")
                .count(),
            1
        );
        assert!(text.contains("sim_request_duration_seconds_bucket{le=\"+Inf\"} 10000\n"));
        assert!(text.contains("sim_request_duration_seconds_count 10000\n"));
        // Uniform on [10, 30] ms: half by 20 ms, all by 30 ms.
        assert!(
            text.contains("sim_request_duration_seconds_bucket{le=\"0.02\"} 5000\n"),
            "{text}"
        );
        assert!(text.contains("sim_request_duration_seconds_bucket{le=\"0.03\"} 10000\n"));
        assert!(text.contains("sim_request_duration_seconds_bucket{le=\"0.005\"} 0\n"));
        let sum: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("sim_request_duration_seconds_sum "))
            .unwrap()
            .parse()
            .unwrap();
        assert!((sum - 10_000.0 * 0.02).abs() < 1e-6, "{sum}");
        // The governor's histogram_quantile over the buckets gives the p99.
        let pairs = text.lines().filter_map(|l| {
            let rest = l.strip_prefix("sim_request_duration_seconds_bucket{le=\"")?;
            let (le, count) = rest.split_once("\"} ")?;
            let le = if le == "+Inf" {
                f64::INFINITY
            } else {
                le.parse().ok()?
            };
            Some((le, count.parse::<f64>().ok()?))
        });
        let p99 = Buckets::new(pairs).unwrap().quantile(0.99).unwrap();
        assert!((p99 - 0.0298).abs() < 1e-9, "{p99}");
        // Other models export none; a reset clears it; many tools are labelled.
        let rejector = Sim::new(&SimConfig::new(ModelConfig::new(
            ModelKind::Rejector,
            100.0,
        )))
        .unwrap();
        rejector.tick_all();
        let text = render(&[(None, lock(&rejector.tools[0]).snapshot())]);
        assert!(!text.contains("sim_request_duration_seconds"));
        do_reset(&sim, 0).unwrap();
        let s = lock(&sim.tools[0]).snapshot();
        assert_eq!(s.latency.as_ref().map(|h| h.count), Some(0));
        sim.tick_all();
        let text = render(&[
            (Some(0), lock(&sim.tools[0]).snapshot()),
            (Some(1), snapshot()),
        ]);
        assert!(
            text.contains("sim_request_duration_seconds_bucket{tool=\"0\",le=\"+Inf\"} 10\n"),
            "{text}"
        );
        assert!(text.contains("sim_request_duration_seconds_count{tool=\"0\"} 10\n"));
    }

    #[test]
    fn tools_get_distinct_seeds() {
        let mut model = ModelConfig::new(ModelKind::Noisy, 100.0);
        model.seed = 5;
        let mut cfg = SimConfig::new(model);
        cfg.tools = 3;
        let sim = Sim::new(&cfg).unwrap();
        let seeds: Vec<u64> = sim
            .tools
            .iter()
            .map(|t| lock(t).model.config().seed)
            .collect();
        assert_eq!(seeds, vec![5, 6, 7]);
    }

    #[test]
    fn config_validation() {
        let base = SimConfig::new(ModelConfig::new(ModelKind::Rejector, 100.0));
        assert!(base.validate().is_ok());
        let mut c = base.clone();
        c.tools = 0;
        assert!(matches!(c.validate(), Err(SimError::Tools(0))));
        let mut c = base.clone();
        c.tick = Duration::ZERO;
        assert!(matches!(c.validate(), Err(SimError::Tick(_))));
        let mut c = base.clone();
        c.initial_rate = Some(f64::NAN);
        assert!(matches!(c.validate(), Err(SimError::Rate(_))));
        let mut c = base.clone();
        c.initial_workers = MAX_WORKERS + 1;
        assert!(matches!(c.validate(), Err(SimError::Workers(_))));
        let mut c = base;
        c.model.capacity = -1.0;
        assert!(matches!(c.validate(), Err(SimError::Model(_))));
    }
}
