//! `signal.kind = "promql"` against a real Prometheus (Debian's package)
//! scraping real `sim` processes every second, and against a fake API for
//! what a real one cannot be made to do on cue (stale samples, headers).

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::get;
use axum::{Json, Router};
use support::{get_json, get_text, target_status, FakeTool};
use support::{Prometheus, Sim};
use throttle_governor::config::Config;
use throttle_governor::runtime::supervisor::{self, RunOptions};

async fn workers(sim: &Sim) -> f64 {
    get_json(&sim.url("/admin/workers")).await["workers"]
        .as_f64()
        .unwrap_or(f64::NAN)
}

/// Samples `f` every 250 ms for `span` and returns the values.
async fn sample<F, Fut>(span: Duration, mut f: F) -> Vec<f64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = f64>,
{
    let mut out = Vec::new();
    let end = Instant::now() + span;
    while Instant::now() < end {
        out.push(f().await);
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promql_group_of_three_sims_settles_near_the_sum_of_capacities() {
    if !support::require_tool("prometheus") {
        return;
    }
    // Three instances of different capacity, weighted by it.
    let caps = [20.0, 30.0, 40.0];
    let sims: Vec<Sim> = caps.iter().map(|c| Sim::start(*c)).collect();
    let prom = Prometheus::start(&sims.iter().map(|s| s.addr).collect::<Vec<_>>());
    let instances: String = sims
        .iter()
        .zip([2, 3, 4])
        .map(|(s, w)| {
            format!(
                "[[targets.instances]]\naddress = \"{}\"\nweight = {w}\n",
                s.addr
            )
        })
        .collect();
    let cfg = Config::parse(&format!(
        r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "fleet"
knob = "concurrency"
ceiling = 270
floor = 3
high = 0.05
window = "2s"

[targets.signal]
kind = "promql"
url = "{prom}"
attempts = 'sum(sim_attempts_total{{instance="{{{{address}}}}"}})'
failures = 'sum(sim_requests_total{{instance="{{{{address}}}}", outcome="failure"}})'

[targets.control]
kind = "http"
url = "http://{{{{address}}}}/admin/workers"
body = '{{"workers": {{{{value}}}}}}'
confirm_interval = "20ms"
[targets.control.read_back]
url = "http://{{{{address}}}}/admin/workers"
json_pointer = "/workers"

{instances}
"#,
        prom = prom.url()
    ))
    .unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;

    // Slow start from 3, a back-off past 90, then the additive probe.
    let started = Instant::now();
    let mut backed_off = false;
    while started.elapsed() < Duration::from_secs(60) && !backed_off {
        backed_off = target_status(ctl, "fleet").await["last_bad"].is_number();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        backed_off,
        "never backed off: {}",
        target_status(ctl, "fleet").await
    );
    tokio::time::sleep(Duration::from_secs(12)).await;
    let sums = sample(Duration::from_secs(12), || async {
        let mut total = 0.0;
        for s in &sims {
            total += workers(s).await;
        }
        total
    })
    .await;
    let mean = sums.iter().sum::<f64>() / sums.len() as f64;
    eprintln!("group offers over 12 s: {sums:?} (mean {mean:.1}, capacities sum 90)");
    assert!(
        (72.0..=104.0).contains(&mean) && sums.iter().all(|s| (60.0..=110.0).contains(s)),
        "the group did not settle near 90: {sums:?}"
    );

    // The split follows the weights: each instance near its capacity.
    let groups = get_json(&format!("http://{ctl}/api/v1/groups")).await;
    let members = groups["groups"]["fleet"].as_array().unwrap().clone();
    assert_eq!(members.len(), 3, "{groups}");
    for (s, cap) in sims.iter().zip(caps) {
        let w = workers(s).await;
        assert!(
            (w - cap).abs() <= 0.35 * cap,
            "instance {} at {w}, capacity {cap}: {groups}",
            s.addr
        );
    }
    assert!(members.iter().all(|m| m["up"] == true), "{groups}");
    let m = get_text(&format!("http://{ctl}/metrics")).await;
    assert!(
        m.contains("throttle_member_offer{target=\"fleet\",member="),
        "{m}"
    );
    assert!(
        support::sum_in(&m, "throttle_signal_errors_total{error_type=\"stale\"}").unwrap_or(0.0)
            == 0.0,
        "fresh Prometheus data counted stale:\n{m}"
    );
    running.shutdown(Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promql_increase_mode_governs_one_sim() {
    if !support::require_tool("prometheus") {
        return;
    }
    let sim = Sim::start(30.0);
    let prom = Prometheus::start(&[sim.addr]);
    let cfg = Config::parse(&format!(
        r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "inc"
knob = "concurrency"
ceiling = 200
floor = 1
high = 0.05
window = "3s"

[targets.signal]
kind = "promql"
mode = "increase"
url = "{prom}"
attempts = 'sum(increase(sim_attempts_total[{{{{window}}}}]))'
failures = 'sum(increase(sim_requests_total{{outcome="failure"}}[{{{{window}}}}]))'

[targets.control]
kind = "http"
url = "{admin}"
body = '{{"workers": {{{{value}}}}}}'
[targets.control.read_back]
url = "{admin}"
json_pointer = "/workers"
"#,
        prom = prom.url(),
        admin = sim.url("/admin/workers"),
    ))
    .unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60)
        && !target_status(ctl, "inc").await["last_bad"].is_number()
    {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let st = target_status(ctl, "inc").await;
    assert!(st["last_bad"].is_number(), "never backed off: {st}");
    tokio::time::sleep(Duration::from_secs(9)).await;
    let seen = sample(Duration::from_secs(9), || workers(&sim)).await;
    eprintln!("increase mode offers: {seen:?}");
    assert!(
        seen.iter().all(|w| (20.0..=42.0).contains(w)),
        "did not settle near 30: {seen:?}"
    );
    // Each window's counts are its own time's: below the capacity the sim
    // answers each worker at one rate, so the attempts per worker-second
    // of the clean windows agree. (Before: every early-verdict look added
    // a whole window's increase, and the window after an Up counted 48
    // windows' worth; then, with each answer added for its own time, a
    // rebase read just after the tick that had already based the window
    // decided a window of milliseconds: 0.15 a worker-second against 200.)
    let rates: Vec<f64> = running
        .telemetry
        .history("inc")
        .iter()
        .filter(|w| w.failures == Some(0.0) && w.offer <= 28.0)
        .filter_map(|w| Some(w.attempts? / (w.offer * w.window_secs?)))
        .collect();
    let mut sorted = rates.clone();
    sorted.sort_by(f64::total_cmp);
    assert!(sorted.len() >= 4, "too few clean windows: {rates:?}");
    let median = sorted[sorted.len() / 2];
    assert!(
        sorted
            .iter()
            .all(|r| *r <= 1.5 * median && *r >= median / 1.5),
        "attempts per worker-second disagree across windows: {rates:?}"
    );
    running.shutdown(Duration::from_secs(10)).await;
}

/// A fake Prometheus API: answers every query with `value`, its samples
/// `age` seconds old, and records the headers it was sent.
#[derive(Default)]
struct FakeApi {
    age: f64,
    value: f64,
    headers: Vec<(String, String)>,
    queries: Vec<String>,
}

async fn fake_query(
    State(s): State<Arc<Mutex<FakeApi>>>,
    headers: HeaderMap,
    axum::extract::Query(q): axum::extract::Query<std::collections::HashMap<String, String>>,
) -> Json<serde_json::Value> {
    let mut st = s.lock().unwrap();
    for name in ["x-scope-orgid", "authorization"] {
        if let Some(v) = headers.get(name) {
            st.headers
                .push((name.to_string(), v.to_str().unwrap().to_string()));
        }
    }
    let query = q.get("query").cloned().unwrap_or_default();
    st.queries.push(query.clone());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    // Freshness queries get a sample time; the others the counters.
    let value = if query.contains("timestamp(") {
        now - st.age
    } else if query.contains("failure") {
        0.0
    } else {
        st.value
    };
    st.value += 100.0;
    Json(serde_json::json!({
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": {}, "value": [now, value.to_string()]}]}
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_samples_are_no_signal_and_tenant_and_token_are_sent() {
    let api = Arc::new(Mutex::new(FakeApi {
        age: 30.0,
        ..FakeApi::default()
    }));
    let app = Router::new()
        .route("/prom/api/v1/query", get(fake_query))
        .with_state(api.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api_addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let dir = support::TempDir::new("promql-token");
    let token = dir.path("token");
    std::fs::write(&token, "t0ken\n").unwrap();
    let tool = FakeTool::start(1000.0, 1.0).await;
    let cfg = Config::parse(&format!(
        r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "tenant"
knob = "concurrency"
ceiling = 100
floor = 1
high = 0.05
window = "300ms"
# The seed rules climb on each clean window; gentle pools 100 attempts
# first, which this fake's few samples take longer to reach.
profile = "seed"

[targets.signal]
kind = "promql"
url = "http://{api_addr}/prom/"
attempts = 'sum(k6_http_reqs_total{{testid="run-1"}})'
failures = 'sum(k6_http_reqs_total{{testid="run-1", expected_response="false", failure="1"}})'
org_id = "team-a"
bearer_token_file = "{token}"

[targets.control]
kind = "http"
url = "{admin}"
body = '{{"workers": {{{{value}}}}}}'
[targets.control.read_back]
url = "{admin}"
json_pointer = "/workers"
"#,
        token = token.display(),
        admin = tool.url("/admin/workers"),
    ))
    .unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;

    // 30 s old samples: every window is a stale signal, and nothing moves.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let st = target_status(ctl, "tenant").await;
    assert_eq!(st["windows"], 0, "{st}");
    assert!(
        st["last_error"].as_str().unwrap_or("").starts_with("stale"),
        "{st}"
    );
    let m = get_text(&format!("http://{ctl}/metrics")).await;
    assert!(
        support::sum_in(
            &m,
            "throttle_signal_errors_total{target=\"tenant\",error_type=\"stale\"}"
        )
        .unwrap_or(0.0)
            >= 1.0,
        "{m}"
    );
    assert_eq!(tool.workers(), 1.0, "a stale signal moved the offer");

    // Fresh samples: windows form and the offer climbs.
    api.lock().unwrap().age = 0.1;
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline && tool.workers() < 4.0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(tool.workers() >= 4.0, "never climbed on fresh data");

    {
        let st = api.lock().unwrap();
        assert!(st
            .headers
            .contains(&("x-scope-orgid".into(), "team-a".into())));
        assert!(st
            .headers
            .contains(&("authorization".into(), "Bearer t0ken".into())));
        assert!(
            st.queries.iter().any(
                |q| q == "max(timestamp(k6_http_reqs_total{testid=\"run-1\"}))"
                    || q.starts_with("min(label_replace(max(timestamp(k6_http_reqs_total")
            ),
            "no freshness query in {:?}",
            st.queries
        );
    }
    running.shutdown(Duration::from_secs(5)).await;
    server.abort();
}
