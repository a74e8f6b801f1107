//! Test support: an in-process fake load tool over real HTTP on 127.0.0.1.
//!
//! The fake runs a worker pool against a target of known capacity: every
//! tick each worker makes one attempt, and attempts beyond the capacity are
//! rejected (failures = max(0, workers - capacity) per tick). It serves
//! Prometheus text on `/metrics` and an admin API on `/admin/workers`, and it
//! can inject faults (status codes, garbage, delays, writes that are
//! accepted but never applied) so that the controller's handling of each can
//! be tested over real sockets.

#![allow(dead_code)]

pub mod browser;
pub mod gated;
pub mod goals;
pub mod procs;
pub mod pull;
pub mod queueing;
pub mod real;
pub mod tools;

#[allow(unused_imports)]
pub use procs::{
    free_port, wait_until_blocking, write_atomic, ChildGuard, Prometheus, Sim, TempDir, BIN,
};

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};

/// A fault the fake tool injects.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Serve normally.
    None,
    /// Answer `/metrics` with this status.
    MetricsStatus(u16),
    /// Answer `/metrics` with text that is not an exposition.
    Garbage,
    /// Delay `/metrics` by this long.
    SlowMetrics(Duration),
    /// Serve `/metrics` with the failure series missing.
    MissingFailures,
    /// Serve NaN counters.
    NanCounters,
    /// Serve +Inf counters.
    InfCounters,
    /// Serve negative counters.
    NegativeCounters,
    /// Serve a body of this many bytes (valid text, padded with comments).
    OversizeBody(usize),
    /// Answer admin writes with this status.
    AdminStatus(u16),
    /// Accept admin writes but never apply them.
    IgnoreWrites,
    /// Delay admin writes by this long.
    SlowWrites(Duration),
    /// Accept admin writes at once, and apply them this much later (the
    /// read-back shows the old value until then).
    LateApply(Duration),
    /// Report this value as the workers (the knob) on read-back.
    ReadBack(f64),
    /// The whole admin API (writes and read-backs) hangs this long.
    HangAdmin(Duration),
    /// Serve these lines after the exposition, and write the failure
    /// series' `route` label as this (raw, as written in the exposition).
    ExtraLines { lines: String, route: String },
    /// Serve the attempts line twice (a buggy exporter's repeated series).
    RepeatedAttempts,
}

/// The fake's state.
#[derive(Debug)]
pub struct FakeState {
    pub workers: f64,
    pub capacity: f64,
    pub attempts: f64,
    pub failures: f64,
    pub writes: u64,
    pub fault: Fault,
    /// Attempts per worker per tick.
    pub per_worker: f64,
    /// Required `Authorization` header on /metrics and on the admin API.
    pub require: Option<(String, String)>,
    /// Every value the workers took, with when (the first is the start).
    pub changes: Vec<(std::time::Instant, f64)>,
    /// Above this many workers, this share of every attempt fails too: a
    /// band of failures that follows the load but stays under the bound.
    pub soft: Option<(f64, f64)>,
    /// Above this many workers, this share of the attempts of the workers
    /// above it fails: a soft wall, whose failures fall when the workers do.
    pub soft_wall: Option<(f64, f64)>,
    /// Serve the counters in whole attempts, as a real tool counts them
    /// (the fake's own counts are fractions of a tick).
    pub whole: bool,
    /// Serve the counters as they were this long ago (a tool's stats
    /// cache, as Locust's): `history` keeps the ticks' counts meanwhile.
    pub stats_lag: Option<Duration>,
    pub history: std::collections::VecDeque<(std::time::Instant, f64, f64)>,
}

impl FakeState {
    /// Sets the workers the fake runs, and logs the change.
    pub fn set_workers(&mut self, w: f64) {
        if w != self.workers {
            self.changes.push((std::time::Instant::now(), w));
        }
        self.workers = w;
    }

    /// Every change of the workers as (seconds since the first, workers):
    /// the trajectory a test prints and asserts on.
    pub fn path(&self) -> Vec<(f64, f64)> {
        let Some(&(t0, _)) = self.changes.first() else {
            return Vec::new();
        };
        self.changes
            .iter()
            .map(|c| ((c.0 - t0).as_secs_f64(), c.1))
            .collect()
    }

    /// The distinct worker counts the fake ran between `from` and `to`.
    pub fn workers_between(&self, from: std::time::Instant, to: std::time::Instant) -> Vec<f64> {
        let mut out: Vec<f64> = Vec::new();
        let mut current = self.changes.first().map_or(self.workers, |c| c.1);
        for &(at, w) in &self.changes {
            if at <= from {
                current = w;
            }
        }
        out.push(current);
        for &(at, w) in &self.changes {
            if at > from && at < to && !out.contains(&w) {
                out.push(w);
            }
        }
        out
    }
}

/// A running fake tool.
pub struct FakeTool {
    pub addr: SocketAddr,
    pub state: Arc<Mutex<FakeState>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for FakeTool {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl FakeTool {
    /// Starts a fake with `capacity` workers and `workers` initially, ticking every 10 ms.
    pub async fn start(capacity: f64, workers: f64) -> FakeTool {
        let state = Arc::new(Mutex::new(FakeState {
            workers,
            capacity,
            attempts: 0.0,
            failures: 0.0,
            writes: 0,
            fault: Fault::None,
            per_worker: 1.0,
            require: None,
            changes: vec![(std::time::Instant::now(), workers)],
            soft: None,
            soft_wall: None,
            whole: false,
            stats_lag: None,
            history: Default::default(),
        }));
        let app = Router::new()
            .route("/metrics", get(metrics))
            .route("/admin/workers", get(get_workers).put(put_workers))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let s = state.clone();
        let ticker = tokio::spawn(async move {
            let mut iv = tokio::time::interval(Duration::from_millis(10));
            loop {
                iv.tick().await;
                let mut st = s.lock().unwrap();
                let w = st.workers.max(0.0);
                let n = w * st.per_worker;
                let mut f = (w - st.capacity).max(0.0) * st.per_worker;
                if let Some((above, share)) = st.soft {
                    if w > above {
                        f = (f + share * n).min(n);
                    }
                }
                if let Some((above, share)) = st.soft_wall {
                    f = (f + share * (w - above).max(0.0) * st.per_worker).min(n);
                }
                st.attempts += n;
                st.failures += f;
                if let Some(lag) = st.stats_lag {
                    let (now, a, f) = (std::time::Instant::now(), st.attempts, st.failures);
                    st.history.push_back((now, a, f));
                    // Keep the newest sample at least `lag` old, and the newer ones.
                    while st.history.len() > 1 && now - st.history[1].0 >= lag {
                        st.history.pop_front();
                    }
                }
            }
        });
        FakeTool {
            addr,
            state,
            tasks: vec![server, ticker],
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn set_fault(&self, fault: Fault) {
        self.state.lock().unwrap().fault = fault;
    }

    pub fn workers(&self) -> f64 {
        self.state.lock().unwrap().workers
    }

    pub fn writes(&self) -> u64 {
        self.state.lock().unwrap().writes
    }

    /// Simulates a restart: counters to zero and the knob back to `default`.
    pub fn restart(&self, default_workers: f64) {
        let mut st = self.state.lock().unwrap();
        st.attempts = 0.0;
        st.failures = 0.0;
        st.set_workers(default_workers);
    }

    /// Starts the controller on 127.0.0.1 governing this fake as target
    /// `t` (see [`FakeTool::target_toml`]).
    pub async fn govern(
        &self,
        ceiling: u32,
        window_ms: u64,
        extra: &str,
    ) -> throttle_governor::runtime::supervisor::Running {
        let cfg = throttle_governor::config::Config::parse(&format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n{}",
            self.target_toml("t", ceiling, window_ms, extra)
        ))
        .unwrap();
        throttle_governor::runtime::supervisor::start(
            &cfg,
            throttle_governor::runtime::supervisor::RunOptions::default(),
            None,
        )
        .await
        .unwrap()
    }

    /// A target config for this fake (TOML), window in ms.
    pub fn target_toml(&self, name: &str, ceiling: u32, window_ms: u64, extra: &str) -> String {
        format!(
            r#"
[[targets]]
name = "{name}"
knob = "concurrency"
ceiling = {ceiling}
floor = 1
high = 0.05
window = "{window_ms}ms"
{extra}

[targets.signal]
kind = "prometheus"
url = "{metrics}"
attempts = 'fake_attempts_total'
failures = 'fake_requests_total{{outcome="failure"}}'
timeout = "500ms"

[targets.control]
kind = "http"
url = "{admin}"
method = "PUT"
body = '{{"workers": {{{{value}}}}}}'
timeout = "500ms"
confirm_interval = "20ms"
[targets.control.read_back]
url = "{admin}"
json_pointer = "/workers"
"#,
            metrics = self.url("/metrics"),
            admin = self.url("/admin/workers"),
        )
    }
}

fn authorized(st: &FakeState, headers: &HeaderMap, admin: bool) -> bool {
    match &st.require {
        None => true,
        Some((metrics, admin_auth)) => {
            let want = if admin { admin_auth } else { metrics };
            headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v == want)
        }
    }
}

async fn metrics(State(s): State<Arc<Mutex<FakeState>>>, headers: HeaderMap) -> Response {
    let (fault, body) = {
        let st = s.lock().unwrap();
        if !authorized(&st, &headers, false) {
            return (StatusCode::UNAUTHORIZED, "unauthorized").into_response();
        }
        let (a, f) = match st.fault {
            Fault::NanCounters => (f64::NAN, f64::NAN),
            Fault::InfCounters => (f64::INFINITY, 0.0),
            Fault::NegativeCounters => (-5.0, -1.0),
            _ if st.whole => (st.attempts.floor(), st.failures.floor()),
            _ => match (st.stats_lag, st.history.front()) {
                (Some(lag), Some(&(at, a, f))) if at.elapsed() >= lag => (a, f),
                (Some(_), _) => (0.0, 0.0),
                (None, _) => (st.attempts, st.failures),
            },
        };
        let mut body = format!(
            "# HELP fake_attempts_total Resolved attempts.\n# TYPE fake_attempts_total counter\nfake_attempts_total {a}\n\
             # HELP fake_requests_total Attempts by outcome.\n# TYPE fake_requests_total counter\n\
             fake_requests_total{{outcome=\"success\",route=\"/users/{{id}}\"}} {}\n",
            a - f
        );
        if st.fault == Fault::RepeatedAttempts {
            body.push_str(&format!("fake_attempts_total {a}\n"));
        }
        let route = match &st.fault {
            Fault::ExtraLines { route, .. } => route.as_str(),
            _ => "/users/{id}",
        };
        if st.fault != Fault::MissingFailures {
            body.push_str(&format!(
                "fake_requests_total{{outcome=\"failure\",route=\"{route}\"}} {f}\n"
            ));
        }
        if let Fault::ExtraLines { lines, .. } = &st.fault {
            body.push_str(lines);
        }
        body.push_str(&format!(
            "# HELP fake_workers Workers.\n# TYPE fake_workers gauge\nfake_workers {}\n",
            st.workers
        ));
        if let Fault::OversizeBody(n) = st.fault {
            while body.len() < n {
                body.push_str("# padding padding padding padding padding padding padding\n");
            }
        }
        (st.fault.clone(), body)
    };
    match fault {
        Fault::MetricsStatus(code) => {
            (StatusCode::from_u16(code).unwrap(), "error").into_response()
        }
        Fault::Garbage => "<html>\u{0}\u{1}garbage{{{ not metrics".into_response(),
        Fault::SlowMetrics(d) => {
            tokio::time::sleep(d).await;
            body.into_response()
        }
        _ => body.into_response(),
    }
}

async fn get_workers(State(s): State<Arc<Mutex<FakeState>>>, headers: HeaderMap) -> Response {
    let hang = match s.lock().unwrap().fault {
        Fault::HangAdmin(d) => Some(d),
        _ => None,
    };
    if let Some(d) = hang {
        tokio::time::sleep(d).await;
    }
    let st = s.lock().unwrap();
    if !authorized(&st, &headers, true) {
        return (StatusCode::UNAUTHORIZED, "unauthorized").into_response();
    }
    let workers = match st.fault {
        Fault::ReadBack(v) => v,
        _ => st.workers,
    };
    Json(serde_json::json!({ "workers": workers })).into_response()
}

async fn put_workers(
    State(s): State<Arc<Mutex<FakeState>>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let fault = {
        let st = s.lock().unwrap();
        if !authorized(&st, &headers, true) {
            return (StatusCode::UNAUTHORIZED, "unauthorized").into_response();
        }
        st.fault.clone()
    };
    match fault {
        Fault::AdminStatus(code) => {
            return (StatusCode::from_u16(code).unwrap(), "refused").into_response()
        }
        Fault::SlowWrites(d) | Fault::HangAdmin(d) => tokio::time::sleep(d).await,
        _ => {}
    }
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&body) else {
        return (StatusCode::BAD_REQUEST, "bad json").into_response();
    };
    let Some(w) = v.get("workers").and_then(|w| w.as_f64()) else {
        return (StatusCode::BAD_REQUEST, "no workers").into_response();
    };
    let mut st = s.lock().unwrap();
    st.writes += 1;
    match st.fault {
        Fault::IgnoreWrites => {}
        Fault::LateApply(d) => {
            let later = s.clone();
            tokio::spawn(async move {
                tokio::time::sleep(d).await;
                later.lock().unwrap().set_workers(w);
            });
        }
        _ => st.set_workers(w),
    }
    Json(serde_json::json!({ "workers": st.workers })).into_response()
}

/// GETs a URL and parses JSON (test helper with a timeout).
pub async fn get_json(url: &str) -> serde_json::Value {
    let c = reqwest::Client::new();
    tokio::time::timeout(Duration::from_secs(5), async {
        c.get(url).send().await.unwrap().json().await.unwrap()
    })
    .await
    .expect("GET timed out")
}

/// GETs a URL as text (test helper with a timeout).
pub async fn get_text(url: &str) -> String {
    let c = reqwest::Client::new();
    tokio::time::timeout(Duration::from_secs(5), async {
        c.get(url).send().await.unwrap().text().await.unwrap()
    })
    .await
    .expect("GET timed out")
}

/// The status of one target from `/api/v1/targets`.
pub async fn target_status(controller: SocketAddr, name: &str) -> serde_json::Value {
    let v = get_json(&format!("http://{controller}/api/v1/targets")).await;
    v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .cloned()
        .unwrap_or(serde_json::Value::Null)
}

/// Whether a tool is required (CI) or may be skipped (laptop).
pub fn require_tool(tool: &str) -> bool {
    let found = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !found {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{tool} is required when CI=true; scripts/test installs it");
        }
        eprintln!("SKIP: {tool} not installed (run scripts/test to install it)");
    }
    found
}

/// Whether a tool is on PATH (no skip message).
pub fn require_tool_quiet(tool: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// A raw TCP server that accepts and then misbehaves at the byte level.
pub enum RawMode {
    /// Accept, read the request, never answer.
    Hang,
    /// Send headers promising 1000 bytes, then one byte every 200 ms.
    SlowBody,
}

/// Starts a raw misbehaving server; returns its address. It runs until the test ends.
pub async fn raw_server(mode: RawMode) -> SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let slow = matches!(mode, RawMode::SlowBody);
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                if slow {
                    let _ = sock
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n")
                        .await;
                    for _ in 0..1000 {
                        if sock.write_all(b"#").await.is_err() {
                            return;
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                } else {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
            });
        }
    });
    addr
}

/// Sums a selector over exposition text (None when no series matches).
/// Every bounded label set is exported at 0 from the start, so a test asks
/// for a value, never for a series' presence.
pub fn sum_in(text: &str, selector: &str) -> Option<f64> {
    let sel: throttle_governor::promtext::selector::Selector = selector.parse().unwrap();
    let limits = throttle_governor::promtext::exposition::Limits::default();
    throttle_governor::promtext::selector::sum_many(text, &[&sel], &limits)
        .unwrap()
        .into_iter()
        .next()
        .flatten()
}

/// Sums a selector over the controller's /metrics (None when absent).
pub async fn metric(controller: SocketAddr, selector: &str) -> Option<f64> {
    let text = get_text(&format!("http://{controller}/metrics")).await;
    let sel: throttle_governor::promtext::selector::Selector = selector.parse().unwrap();
    let limits = throttle_governor::promtext::exposition::Limits::default();
    throttle_governor::promtext::selector::sum_many(&text, &[&sel], &limits)
        .unwrap()
        .into_iter()
        .next()
        .flatten()
}

/// A loopback HTTP target with a known concurrency limit: it admits at most
/// `limit` requests at once, holds each for `service`, and answers 503 above
/// that: after the same hold ([`LimitedTarget::start`], so a rejected client
/// does not spin), or fast ([`LimitedTarget::fast_fail`] in 10 ms and
/// [`LimitedTarget::instant_fail`] in about 1 ms, as real services shed
/// load: a rejected client comes straight back, and failures pile up far
/// faster than successes). It counts what it served and rejected, so a test
/// can judge a run by the target's own numbers.
pub struct LimitedTarget {
    pub addr: SocketAddr,
    pub limit: usize,
    pub served: Arc<std::sync::atomic::AtomicU64>,
    pub rejected: Arc<std::sync::atomic::AtomicU64>,
    /// Admitted requests failed whatever the load (a 500 after the
    /// service time): see [`LimitedTarget::instant_fail_with_background`].
    pub background_failed: Arc<std::sync::atomic::AtomicU64>,
    pub peak: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for LimitedTarget {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl LimitedTarget {
    pub async fn start(limit: usize, service: Duration) -> LimitedTarget {
        LimitedTarget::start_with(limit, service, service).await
    }

    /// The fast-failing target of the real-tool tests: a good request takes
    /// 200 ms, and above `limit` in flight the answer is a 503 in 10 ms.
    pub async fn fast_fail(limit: usize) -> LimitedTarget {
        LimitedTarget::start_with(limit, Duration::from_millis(200), Duration::from_millis(10))
            .await
    }

    /// The wall of a load balancer's or a gateway's limiter: a good request
    /// takes 200 ms, and above `limit` in flight the answer is a 503 in
    /// about 1 ms, so one user over the limit fails about 200 attempts for
    /// each one a user under it gets served.
    pub async fn instant_fail(limit: usize) -> LimitedTarget {
        LimitedTarget::start_with(limit, Duration::from_millis(200), Duration::from_millis(1)).await
    }

    /// [`LimitedTarget::instant_fail`]'s wall, and besides it a target that
    /// fails `share` of the requests it admits whatever the load (a flaky
    /// dependency): each is chosen by a seeded xorshift, so the share holds
    /// over any few hundred requests, and answered 500 after the service
    /// time.
    pub async fn instant_fail_with_background(limit: usize, share: f64) -> LimitedTarget {
        LimitedTarget::serve(
            limit,
            Duration::from_millis(200),
            Duration::from_millis(1),
            share,
        )
        .await
    }

    /// Holds good requests for `service` and rejected ones for `reject_after`.
    pub async fn start_with(
        limit: usize,
        service: Duration,
        reject_after: Duration,
    ) -> LimitedTarget {
        LimitedTarget::serve(limit, service, reject_after, 0.0).await
    }

    async fn serve(
        limit: usize,
        service: Duration,
        reject_after: Duration,
        background: f64,
    ) -> LimitedTarget {
        use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
        let in_flight = Arc::new(AtomicUsize::new(0));
        let served = Arc::new(AtomicU64::new(0));
        let rejected = Arc::new(AtomicU64::new(0));
        let background_failed = Arc::new(AtomicU64::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let state = Arc::new(AtomicU64::new(0x9E37_79B9_7F4A_7C15));
        let (f, s, r, p) = (
            in_flight.clone(),
            served.clone(),
            rejected.clone(),
            peak.clone(),
        );
        let (b, st) = (background_failed.clone(), state.clone());
        let app = Router::new().fallback(move || {
            let (f, s, r, p) = (f.clone(), s.clone(), r.clone(), p.clone());
            let (b, st) = (b.clone(), st.clone());
            async move {
                let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                // Released on drop: a client that hangs up mid-request
                // (a stopped user) drops this future during the sleep.
                let slot = InFlight(f);
                if now > limit {
                    drop(slot);
                    tokio::time::sleep(reject_after).await;
                    r.fetch_add(1, Ordering::Relaxed);
                    return (StatusCode::SERVICE_UNAVAILABLE, "over capacity").into_response();
                }
                p.fetch_max(now, Ordering::Relaxed);
                tokio::time::sleep(service).await;
                drop(slot);
                if background > 0.0 && next_uniform(&st) < background {
                    b.fetch_add(1, Ordering::Relaxed);
                    return (StatusCode::INTERNAL_SERVER_ERROR, "background failure")
                        .into_response();
                }
                s.fetch_add(1, Ordering::Relaxed);
                "ok".into_response()
            }
        });
        let (addr, task) = serve_loopback(app).await;
        LimitedTarget {
            addr,
            limit,
            served,
            rejected,
            background_failed,
            peak,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// A loopback target with no capacity limit that fails a fixed share of
/// its requests whatever the load (background failures), each answered
/// after `service`: with few clients, every window resolves only a few
/// dozen attempts, so one or two failures decide it (tiny samples).
pub struct NoisyTarget {
    pub addr: SocketAddr,
    pub served: Arc<std::sync::atomic::AtomicU64>,
    pub failed: Arc<std::sync::atomic::AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for NoisyTarget {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl NoisyTarget {
    /// Fails `failure_share` of the requests (chosen by a seeded
    /// xorshift, so the share holds over any few hundred requests).
    pub async fn start(service: Duration, failure_share: f64) -> NoisyTarget {
        use std::sync::atomic::{AtomicU64, Ordering};
        let served = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let state = Arc::new(AtomicU64::new(0x9E37_79B9_7F4A_7C15));
        let (s, f) = (served.clone(), failed.clone());
        let app = Router::new().fallback(move || {
            let (s, f, state) = (s.clone(), f.clone(), state.clone());
            async move {
                tokio::time::sleep(service).await;
                if next_uniform(&state) < failure_share {
                    f.fetch_add(1, Ordering::Relaxed);
                    (StatusCode::INTERNAL_SERVER_ERROR, "background failure").into_response()
                } else {
                    s.fetch_add(1, Ordering::Relaxed);
                    "ok".into_response()
                }
            }
        });
        let (addr, task) = serve_loopback(app).await;
        NoisyTarget {
            addr,
            served,
            failed,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// The next draw in [0, 1) of the xorshift kept in `state`: the seeded
/// choice of which requests fail in the background.
fn next_uniform(state: &std::sync::atomic::AtomicU64) -> f64 {
    use std::sync::atomic::Ordering;
    let mut x = state.load(Ordering::Relaxed);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    state.store(x, Ordering::Relaxed);
    (x >> 11) as f64 / ((1u64 << 53) as f64)
}

/// Serves `app` on 127.0.0.1 at a free port, until the task is aborted.
async fn serve_loopback(app: Router) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (addr, task)
}

struct InFlight(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A scratch directory for one test's files that outlives the test (for
/// inspection after a failure); [`TempDir`] is the one removed on drop.
pub fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("throttle-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A tool installed at a fixed path (by scripts/setup): `Some(path)` when
/// it is there; `None` (skip) on a laptop without it; a panic when CI=true.
pub fn require_installed(
    tool: &str,
    path: &std::path::Path,
    how: &str,
) -> Option<std::path::PathBuf> {
    if path.is_file() {
        return Some(path.to_path_buf());
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "{tool} is required when CI=true but {} is missing; {how}",
            path.display()
        );
    }
    eprintln!("SKIP: {tool} not installed at {} ({how})", path.display());
    None
}

/// Polls `f` every 50 ms until it holds or `limit` passes.
pub async fn wait_until<F, Fut>(limit: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        if f().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// One observation of a governed run.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    /// Seconds since the controller started.
    pub at: f64,
    /// The committed offer the controller reports.
    pub offer: f64,
    /// Whether the governor holds congestion memory.
    pub last_bad: Option<f64>,
}

/// Watches a governed target until it has climbed, crossed `limit`, backed
/// off, and then spent `settle` after the first back-off (or `deadline`
/// passes). Returns every observation.
pub async fn watch_governed(
    controller: SocketAddr,
    name: &str,
    limit: f64,
    settle: Duration,
    deadline: std::time::Instant,
) -> Vec<Seen> {
    let t0 = std::time::Instant::now();
    let mut seen: Vec<Seen> = Vec::new();
    let mut backed_off_at: Option<f64> = None;
    while std::time::Instant::now() < deadline {
        let st = target_status(controller, name).await;
        if let Some(offer) = st["offer"].as_f64() {
            let at = t0.elapsed().as_secs_f64();
            let crossed = seen.iter().any(|s| s.offer > limit);
            if crossed && backed_off_at.is_none() && offer <= limit {
                backed_off_at = Some(at);
            }
            seen.push(Seen {
                at,
                offer,
                last_bad: st["last_bad"].as_f64(),
            });
            if backed_off_at.is_some_and(|b| at - b >= settle.as_secs_f64()) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    seen
}

/// The distinct offers in order (for messages).
pub fn offers(seen: &[Seen]) -> Vec<f64> {
    let mut out: Vec<f64> = Vec::new();
    for s in seen {
        if out.last() != Some(&s.offer) {
            out.push(s.offer);
        }
    }
    out
}

/// The live-test verdict: climbed, crossed the limit, backed off, and the
/// trailing `tail` seconds stayed near the limit. Returns (min, max, mean)
/// of the tail.
pub fn assert_governed(seen: &[Seen], limit: f64, tail: Duration) -> (f64, f64, f64) {
    let path = offers(seen);
    assert!(
        path.iter().any(|o| *o >= limit / 2.0),
        "never climbed: {path:?}"
    );
    let cross = seen
        .iter()
        .position(|s| s.offer > limit)
        .unwrap_or_else(|| panic!("never crossed the limit {limit}: {path:?}"));
    assert!(
        seen[cross..].iter().any(|s| s.offer <= limit),
        "never backed off after crossing {limit}: {path:?}"
    );
    assert!(
        seen.iter().any(|s| s.last_bad.is_some()),
        "no congestion memory recorded: {path:?}"
    );
    let end = seen.last().unwrap().at;
    let tail: Vec<f64> = seen
        .iter()
        .filter(|s| s.at >= end - tail.as_secs_f64())
        .map(|s| s.offer)
        .collect();
    let min = tail.iter().copied().fold(f64::INFINITY, f64::min);
    let max = tail.iter().copied().fold(0.0, f64::max);
    let mean = tail.iter().sum::<f64>() / tail.len() as f64;
    assert!(
        min >= 0.6 * limit && max <= 1.25 * limit,
        "did not settle near {limit}: tail {min}..{max} (path {path:?})"
    );
    assert!(
        (mean - limit).abs() <= 0.25 * limit,
        "tail mean {mean:.1} is not within 25% of {limit} (path {path:?})"
    );
    (min, max, mean)
}

/// `promtool check metrics` over an exposition: asserts that promtool
/// accepts it with nothing to say. Returns false when promtool is missing
/// (outside CI; under CI=true a missing promtool fails, see `require_tool`).
pub fn promtool_check_metrics(text: &str) -> bool {
    if !require_tool("promtool") {
        return false;
    }
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cannot run promtool");
    {
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && report.trim().is_empty(),
        "promtool check metrics:\n{report}\n--- exposition ---\n{text}"
    );
    true
}
