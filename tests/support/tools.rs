//! In-process fakes of the real load tools' APIs, for contract and fault
//! tests over real sockets on 127.0.0.1.
//!
//! Each fake runs the same simple load model as [`super::FakeTool`] (every
//! 10 ms each user makes one attempt; attempts beyond `capacity` users
//! fail) and serves it in its tool's own shapes:
//!
//! - [`FakeK6`] reproduces k6 1.x's REST API request and response bodies
//!   exactly, including its JSON:API error documents (matched against
//!   k6's `api/v1` package on the 1.x line: `status_routes.go`,
//!   `status.go`, `metric_routes.go`, `errors.go`, `metrics/sink.go`),
//!   and k6 v2's refusal of live VU updates (`go.k6.io/k6/v2`
//!   `api/v1/status_routes.go`).
//! - [`FakeLocust`] serves Locust 2.x's `/stats/requests` and `/swarm`.
//! - [`FakeGoose`] serves Goose 0.19's WebSocket controller protocol.
//!
//! Each can go down (its listener closes: connections are refused), come
//! back on the same port with its counters at zero (a restart), or answer
//! garbage.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

/// The shared load model and faults.
#[derive(Debug)]
pub struct Load {
    pub users: f64,
    pub capacity: f64,
    pub attempts: f64,
    pub failures: f64,
    pub garbage: bool,
    pub writes: u64,
    /// k6 only: the executor's maxVUs.
    pub vus_max: i64,
    /// k6 only: behave like k6 v2 (no live VU updates).
    pub k6_v2: bool,
    /// k6 only: the script has no externally-controlled executor.
    pub k6_no_external: bool,
    /// Seconds of test run (for k6's counter rate).
    pub elapsed: f64,
}

type Shared = Arc<Mutex<Load>>;

/// A fake tool's server: stop it (down) and start it again (restart).
pub struct Served {
    pub addr: SocketAddr,
    pub load: Shared,
    stop: Option<CancellationToken>,
    server: Option<tokio::task::JoinHandle<()>>,
    ticker: tokio::task::JoinHandle<()>,
    kind: Kind,
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    K6,
    Locust,
    Goose,
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(s) = &self.stop {
            s.cancel();
        }
        if let Some(s) = &self.server {
            s.abort();
        }
        self.ticker.abort();
    }
}

impl Served {
    async fn start(kind: Kind, capacity: f64, users: f64) -> Served {
        let load = Arc::new(Mutex::new(Load {
            users,
            capacity,
            attempts: 0.0,
            failures: 0.0,
            garbage: false,
            writes: 0,
            vus_max: 1_000_000,
            k6_v2: false,
            k6_no_external: false,
            elapsed: 0.0,
        }));
        let l = load.clone();
        let ticker = tokio::spawn(async move {
            let mut iv = tokio::time::interval(Duration::from_millis(10));
            loop {
                iv.tick().await;
                let mut st = l.lock().unwrap();
                let u = st.users.max(0.0);
                st.attempts += u;
                st.failures += (u - st.capacity).max(0.0);
                st.elapsed += 0.01;
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut s = Served {
            addr,
            load,
            stop: None,
            server: None,
            ticker,
            kind,
        };
        s.serve(listener);
        s
    }

    fn serve(&mut self, listener: tokio::net::TcpListener) {
        let stop = CancellationToken::new();
        let load = self.load.clone();
        let token = stop.clone();
        let server = match self.kind {
            Kind::K6 => tokio::spawn(async move {
                let app = Router::new()
                    .route("/v1/status", get(k6_get_status).patch(k6_patch_status))
                    .route("/v1/metrics/{id}", get(k6_metric))
                    .with_state(load);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async move { token.cancelled().await })
                    .await;
            }),
            Kind::Locust => tokio::spawn(async move {
                let app = Router::new()
                    .route("/stats/requests", get(locust_stats))
                    .route("/swarm", post(locust_swarm))
                    .with_state(load);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async move { token.cancelled().await })
                    .await;
            }),
            Kind::Goose => tokio::spawn(goose_serve(listener, load, token)),
        };
        self.stop = Some(stop);
        self.server = Some(server);
    }

    /// The tool goes down: its port refuses connections.
    pub async fn down(&mut self) {
        if let Some(s) = self.stop.take() {
            s.cancel();
        }
        if let Some(s) = self.server.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), s).await;
        }
    }

    /// The tool comes back on the same port, counters at zero, `users` set.
    pub async fn restart(&mut self, users: f64) {
        self.down().await;
        {
            let mut st = self.load.lock().unwrap();
            st.attempts = 0.0;
            st.failures = 0.0;
            st.elapsed = 0.0;
            st.users = users;
        }
        let mut listener = None;
        for _ in 0..50 {
            match tokio::net::TcpListener::bind(self.addr).await {
                Ok(l) => {
                    listener = Some(l);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        self.serve(listener.expect("cannot rebind the fake's port"));
    }

    pub fn set_garbage(&self, on: bool) {
        self.load.lock().unwrap().garbage = on;
    }

    pub fn users(&self) -> f64 {
        self.load.lock().unwrap().users
    }

    pub fn http(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn ws(&self) -> String {
        format!("ws://{}", self.addr)
    }
}

// ---------------------------------------------------------------- k6 1.x

/// A fake k6 1.x REST API.
pub async fn fake_k6(capacity: f64, vus: f64, vus_max: i64) -> Served {
    let s = Served::start(Kind::K6, capacity, vus).await;
    s.load.lock().unwrap().vus_max = vus_max;
    s
}

const JSON_UTF8: &str = "application/json; charset=utf-8";

/// k6's `apiError`: `{"errors":[{"status":"<code>","title":..,"detail":..}]}`.
fn k6_error(status: u16, title: &str, detail: &str) -> Response {
    let body = serde_json::json!({
        "errors": [{"status": status.to_string(), "title": title, "detail": detail}]
    });
    (
        StatusCode::from_u16(status).unwrap(),
        [("content-type", JSON_UTF8)],
        body.to_string(),
    )
        .into_response()
}

/// k6's status document (`newStatusJSONAPIFromEngine`).
fn k6_status_doc(st: &Load) -> String {
    serde_json::json!({
        "data": {
            "type": "status",
            "id": "default",
            "attributes": {
                "status": 7,
                "paused": false,
                "vus": st.users as i64,
                "vus-max": st.vus_max,
                "stopped": false,
                "running": true,
                "tainted": false
            }
        }
    })
    .to_string()
}

async fn k6_get_status(State(s): State<Shared>) -> Response {
    let st = s.lock().unwrap();
    if st.garbage {
        return "<html>502 Bad Gateway</html>".into_response();
    }
    ([("content-type", JSON_UTF8)], k6_status_doc(&st)).into_response()
}

async fn k6_patch_status(State(s): State<Shared>, body: String) -> Response {
    let doc: serde_json::Value = match serde_json::from_str(&body) {
        Ok(d) => d,
        Err(e) => return k6_error(400, "Invalid data", &e.to_string()),
    };
    let attrs = &doc["data"]["attributes"];
    let mut st = s.lock().unwrap();
    let vus = attrs["vus"].as_i64();
    if vus.is_some() || attrs["vus-max"].is_i64() {
        if st.k6_v2 {
            return k6_error(
                500,
                "Execution config error",
                "live VU configuration updates are not supported",
            );
        }
        if st.k6_no_external {
            return k6_error(
                500,
                "Execution config error",
                "an externally-controlled executor needs to be configured for live configuration updates",
            );
        }
        if let Some(v) = vus {
            if v < 0 {
                return k6_error(
                    400,
                    "Config update error",
                    "invalid configuration supplied: the number of VUs can't be negative",
                );
            }
            if v > st.vus_max {
                let detail = format!(
                    "invalid configuration supplied: the number of active VUs ({v}) must be less than or equal to the number of maxVUs ({})",
                    st.vus_max
                );
                return k6_error(400, "Config update error", &detail);
            }
            st.users = v as f64;
            st.writes += 1;
        }
    }
    ([("content-type", JSON_UTF8)], k6_status_doc(&st)).into_response()
}

async fn k6_metric(State(s): State<Shared>, Path(id): Path<String>) -> Response {
    let st = s.lock().unwrap();
    if st.garbage {
        return "{\"data\": garbage".into_response();
    }
    let not_found = || k6_error(404, "Not Found", "No metric with that ID was found");
    let t = st.elapsed.max(0.001);
    let (kind, sample) = match id.as_str() {
        "http_reqs" if st.attempts > 0.0 => (
            "counter",
            serde_json::json!({"count": st.attempts, "rate": st.attempts / t}),
        ),
        "http_req_failed" if st.attempts > 0.0 => (
            "rate",
            serde_json::json!({"rate": st.failures / st.attempts}),
        ),
        // A script's own counter: observed only once it was added to.
        "failed_attempts" if st.failures > 0.0 => (
            "counter",
            serde_json::json!({"count": st.failures, "rate": st.failures / t}),
        ),
        "http_req_duration" => (
            "trend",
            serde_json::json!({"avg": 1.0, "max": 2.0, "med": 1.0, "min": 0.5, "p(90)": 2.0, "p(95)": 2.0}),
        ),
        _ => return not_found(),
    };
    let body = serde_json::json!({
        "data": {
            "type": "metrics",
            "id": id,
            "attributes": {"type": kind, "contains": "default", "tainted": null, "sample": sample}
        }
    });
    ([("content-type", JSON_UTF8)], body.to_string()).into_response()
}

// ---------------------------------------------------------------- Locust

/// A fake Locust 2.x web UI.
pub async fn fake_locust(capacity: f64, users: f64) -> Served {
    Served::start(Kind::Locust, capacity, users).await
}

async fn locust_stats(State(s): State<Shared>) -> Response {
    let st = s.lock().unwrap();
    if st.garbage {
        return "<!doctype html><title>Locust</title>".into_response();
    }
    let entry = |name: &str, method: &str| {
        serde_json::json!({
            "method": method, "name": name,
            "num_requests": st.attempts, "num_failures": st.failures,
            "avg_response_time": 1.0, "current_rps": 0.0, "total_rps": 0.0
        })
    };
    axum::Json(serde_json::json!({
        "stats": [entry("/", "GET"), entry("Aggregated", "")],
        "errors": [],
        "state": "running",
        "user_count": st.users as i64,
        "fail_ratio": 0.0
    }))
    .into_response()
}

async fn locust_swarm(State(s): State<Shared>, body: String) -> Response {
    let mut users = None;
    let mut rate = None;
    for pair in body.split('&') {
        match pair.split_once('=') {
            Some(("user_count", v)) => users = v.parse::<i64>().ok(),
            Some(("spawn_rate", v)) => rate = v.parse::<f64>().ok(),
            _ => {}
        }
    }
    match (users, rate) {
        (Some(u), Some(r)) if u >= 0 && r > 0.0 => {
            let mut st = s.lock().unwrap();
            st.users = u as f64;
            st.writes += 1;
            axum::Json(
                serde_json::json!({"success": true, "message": "Swarming started", "host": null}),
            )
            .into_response()
        }
        _ => axum::Json(serde_json::json!({
            "success": false,
            "message": "Missing or invalid user_count or spawn_rate from /swarm request",
            "host": null
        }))
        .into_response(),
    }
}

// ---------------------------------------------------------------- Goose

/// A fake Goose WebSocket controller.
pub async fn fake_goose(capacity: f64, users: f64) -> Served {
    Served::start(Kind::Goose, capacity, users).await
}

async fn goose_serve(listener: tokio::net::TcpListener, load: Shared, stop: CancellationToken) {
    loop {
        let socket = tokio::select! {
            _ = stop.cancelled() => return,
            r = listener.accept() => match r { Ok((s, _)) => s, Err(_) => continue },
        };
        let load = load.clone();
        tokio::spawn(async move {
            let Ok(mut ws) = tokio_tungstenite::accept_async(socket).await else {
                return;
            };
            while let Some(Ok(msg)) = ws.next().await {
                let Message::Text(text) = msg else { continue };
                let reply = goose_reply(&load, text.as_str());
                if ws.send(Message::text(reply)).await.is_err() {
                    return;
                }
            }
        });
    }
}

fn goose_reply(load: &Shared, text: &str) -> String {
    let answer = |response: String, success: bool| {
        serde_json::json!({"response": response, "success": success}).to_string()
    };
    let Ok(req) = serde_json::from_str::<serde_json::Value>(text) else {
        return answer(
            "invalid json, see Goose book https://book.goose.rs/controller/websocket.html".into(),
            false,
        );
    };
    let command = req["request"].as_str().unwrap_or("").trim().to_string();
    let mut st = load.lock().unwrap();
    if st.garbage {
        return "this is not json".into();
    }
    if command == "metrics-json" {
        let metrics = serde_json::json!({
            "hash": 0, "history": [], "duration": 1, "maximum_users": st.users, "total_users": st.users,
            "requests": {"GET /": {"path": "/", "method": "Get",
                "success_count": (st.attempts - st.failures) as u64,
                "fail_count": st.failures as u64}},
            "transactions": [], "scenarios": [], "errors": {}, "hosts": []
        });
        return answer(metrics.to_string(), true);
    }
    if command == "config-json" {
        return answer(
            serde_json::json!({"host": "http://127.0.0.1", "users": st.users as u64}).to_string(),
            true,
        );
    }
    if let Some(n) = command.strip_prefix("users ") {
        return match n.trim().parse::<u64>() {
            Ok(n) if (1..=100_000).contains(&n) => {
                st.users = n as f64;
                st.writes += 1;
                answer("users configured".into(), true)
            }
            _ => answer(
                "users must be an integer between 1 and 100000".into(),
                false,
            ),
        };
    }
    answer(
        "unrecognized command, see Goose book https://book.goose.rs/controller/websocket.html"
            .into(),
        false,
    )
}
