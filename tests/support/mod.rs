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
                let f = (w - st.capacity).max(0.0) * st.per_worker;
                st.attempts += n;
                st.failures += f;
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
        st.workers = default_workers;
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
            _ => (st.attempts, st.failures),
        };
        let mut body = format!(
            "# HELP fake_attempts_total Resolved attempts.\n# TYPE fake_attempts_total counter\nfake_attempts_total {a}\n\
             # HELP fake_requests_total Attempts by outcome.\n# TYPE fake_requests_total counter\n\
             fake_requests_total{{outcome=\"success\",route=\"/users/{{id}}\"}} {}\n",
            a - f
        );
        if st.fault != Fault::MissingFailures {
            body.push_str(&format!(
                "fake_requests_total{{outcome=\"failure\",route=\"/users/{{id}}\"}} {f}\n"
            ));
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
    let st = s.lock().unwrap();
    if !authorized(&st, &headers, true) {
        return (StatusCode::UNAUTHORIZED, "unauthorized").into_response();
    }
    Json(serde_json::json!({ "workers": st.workers })).into_response()
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
        Fault::SlowWrites(d) => tokio::time::sleep(d).await,
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
    if st.fault != Fault::IgnoreWrites {
        st.workers = w;
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

/// Sums a selector over the controller's /metrics (None when absent).
pub async fn metric(controller: SocketAddr, selector: &str) -> Option<f64> {
    let text = get_text(&format!("http://{controller}/metrics")).await;
    let sel: throttle_governor::signal::selector::Selector = selector.parse().unwrap();
    let limits = throttle_governor::signal::exposition::Limits::default();
    throttle_governor::signal::selector::sum_many(&text, &[&sel], &limits)
        .unwrap()
        .into_iter()
        .next()
        .flatten()
}
