//! The simulated load tool over real sockets on 127.0.0.1:0.

use std::future::Future;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};
use throttle_governor::lab::sim::{spawn, ModelConfig, ModelKind, SimConfig, SimHandle};

/// Upper bound on every test.
const TEST_TIMEOUT: Duration = Duration::from_secs(20);

async fn bounded<F: Future<Output = ()>>(test: F) {
    tokio::time::timeout(TEST_TIMEOUT, test)
        .await
        .expect("test timed out");
}

async fn start(kind: ModelKind, capacity: f64, tools: usize) -> SimHandle {
    let mut cfg = SimConfig::new(ModelConfig::new(kind, capacity));
    cfg.tick = Duration::from_millis(20);
    cfg.tools = tools;
    spawn(cfg).await.expect("sim starts")
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

async fn get_text(url: &str) -> String {
    let resp = client().get(url).send().await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "{url}");
    resp.text().await.unwrap()
}

async fn get_json(url: &str) -> (StatusCode, Value) {
    let resp = client().get(url).send().await.unwrap();
    let status = resp.status();
    (status, resp.json().await.unwrap())
}

async fn put_json(url: &str, body: &str) -> (StatusCode, Value) {
    let resp = client()
        .put(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, value)
}

/// The value of the series whose name and labels are exactly `series`.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no series {series} in:\n{text}"))
        .parse()
        .unwrap()
}

/// (attempts, failures, ticks) from one scrape.
async fn counters(url: &str) -> (f64, f64, f64) {
    let text = get_text(url).await;
    let attempts = sample(&text, "sim_attempts_total");
    let failures = sample(&text, r#"sim_requests_total{outcome="failure"}"#);
    let successes = sample(&text, r#"sim_requests_total{outcome="success"}"#);
    assert_eq!(attempts, successes + failures);
    (attempts, failures, sample(&text, "sim_ticks_total"))
}

/// Poll `/metrics` until at least `ticks` more ticks have passed.
async fn wait_ticks(url: &str, ticks: f64) -> (f64, f64, f64) {
    let (_, _, start) = counters(url).await;
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = counters(url).await;
        if now.2 >= start + ticks {
            return now;
        }
    }
}

#[tokio::test]
async fn workers_round_trip_and_counters_follow_the_model() {
    bounded(async {
        let sim = start(ModelKind::Rejector, 10.0, 1).await;
        let metrics = sim.url("/metrics");
        let workers = sim.url("/admin/workers");

        assert_eq!(
            get_json(&workers).await,
            (StatusCode::OK, json!({"workers": 1}))
        );
        assert_eq!(
            put_json(&workers, r#"{"workers": 5}"#).await,
            (StatusCode::OK, json!({"workers": 5}))
        );
        assert_eq!(
            get_json(&workers).await,
            (StatusCode::OK, json!({"workers": 5}))
        );

        // Below capacity: counters grow and nothing fails.
        let (a0, f0, _) = wait_ticks(&metrics, 2.0).await;
        let (a1, f1, _) = wait_ticks(&metrics, 5.0).await;
        assert!(a1 > a0, "attempts grow: {a0} -> {a1}");
        assert_eq!(f1, f0);
        let text = get_text(&metrics).await;
        assert_eq!(sample(&text, "sim_workers"), 5.0);
        assert_eq!(sample(&text, "sim_capacity"), 10.0);
        assert!(sample(&text, "sim_rate_limit").is_infinite());

        // Twice the capacity: half of the attempts fail.
        put_json(&workers, r#"{"workers": 20}"#).await;
        let (a2, f2, _) = wait_ticks(&metrics, 1.0).await;
        let (a3, f3, _) = wait_ticks(&metrics, 5.0).await;
        let frac = (f3 - f2) / (a3 - a2);
        assert!((frac - 0.5).abs() < 1e-9, "frac {frac}");

        sim.shutdown().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn rate_caps_attempts() {
    bounded(async {
        let sim = start(ModelKind::Rejector, 10.0, 1).await;
        let rate = sim.url("/admin/rate");
        assert_eq!(
            get_json(&rate).await,
            (StatusCode::OK, json!({"rate": null}))
        );
        assert_eq!(
            put_json(&rate, r#"{"rate": 0}"#).await,
            (StatusCode::OK, json!({"rate": 0.0}))
        );
        put_json(&sim.url("/admin/workers"), r#"{"workers": 5}"#).await;
        let metrics = sim.url("/metrics");
        let (a0, _, _) = wait_ticks(&metrics, 1.0).await;
        let (a1, _, _) = wait_ticks(&metrics, 3.0).await;
        assert_eq!(a0, a1, "rate 0 stops attempts");
        assert_eq!(sample(&get_text(&metrics).await, "sim_rate_limit"), 0.0);
        assert_eq!(
            put_json(&rate, r#"{"rate": null}"#).await,
            (StatusCode::OK, json!({"rate": null}))
        );
        let (a2, _, _) = wait_ticks(&metrics, 2.0).await;
        assert!(a2 > a1);
        let (status, body) = put_json(&rate, r#"{"rate": -3}"#).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body["error"].is_string());
        sim.shutdown().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn reset_zeroes_counters_and_restores_workers() {
    bounded(async {
        let sim = start(ModelKind::Rejector, 10.0, 1).await;
        let metrics = sim.url("/metrics");
        put_json(&sim.url("/admin/workers"), r#"{"workers": 30}"#).await;
        let (attempts, failures, _) = wait_ticks(&metrics, 3.0).await;
        assert!(attempts > 0.0 && failures > 0.0);

        let resp = client().post(sim.url("/admin/reset")).send().await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        // Before the reset each tick made 300 attempts; after it, 10 (one
        // worker). Counters that were not zeroed would break this bound
        // however late the scrape comes.
        let (attempts, failures, ticks) = counters(&metrics).await;
        assert_eq!(failures, 0.0);
        assert!(
            attempts <= ticks * 10.0,
            "attempts {attempts} after {ticks} ticks"
        );
        assert_eq!(
            get_json(&sim.url("/admin/workers")).await,
            (StatusCode::OK, json!({"workers": 1}))
        );
        sim.shutdown().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn bad_writes_get_400_with_a_json_error() {
    bounded(async {
        let sim = start(ModelKind::Rejector, 10.0, 1).await;
        let workers = sim.url("/admin/workers");
        put_json(&workers, r#"{"workers": 3}"#).await;
        for body in [
            r#"{"workers": -1}"#,
            r#"{"workers": 2.5}"#,
            r#"{"workers": "4"}"#,
            r#"{"worker": 4}"#,
            "not json",
            "",
        ] {
            let (status, value) = put_json(&workers, body).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
            assert!(value["error"].is_string(), "{body}: {value}");
        }
        // Nothing changed.
        assert_eq!(get_json(&workers).await.1, json!({"workers": 3}));
        // Oversized bodies are refused.
        let big = format!(r#"{{"workers": 1, "pad": "{}"}}"#, "x".repeat(64 * 1024));
        let (status, _) = put_json(&workers, &big).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        // Unknown paths are JSON 404s.
        let (status, value) = get_json(&sim.url("/admin/nope")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(value["error"].is_string());
        sim.shutdown().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn many_tools_on_path_prefixes() {
    bounded(async {
        let sim = start(ModelKind::Rejector, 10.0, 3).await;
        let (status, _) = put_json(&sim.url("/t/1/admin/workers"), r#"{"workers": 20}"#).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            get_json(&sim.url("/t/1/admin/workers")).await.1,
            json!({"workers": 20})
        );
        assert_eq!(
            get_json(&sim.url("/t/0/admin/workers")).await.1,
            json!({"workers": 1})
        );
        let (a, f, _) = wait_ticks(&sim.url("/t/1/metrics"), 3.0).await;
        assert!(a > 0.0 && f > 0.0);
        let (_, f0, _) = counters(&sim.url("/t/0/metrics")).await;
        assert_eq!(f0, 0.0);

        // The plain /metrics labels every tool.
        let all = get_text(&sim.url("/metrics")).await;
        assert_eq!(sample(&all, r#"sim_workers{tool="1"}"#), 20.0);
        assert_eq!(sample(&all, r#"sim_workers{tool="2"}"#), 1.0);
        assert!(sample(&all, r#"sim_requests_total{tool="1",outcome="failure"}"#) > 0.0);

        // Out of range, not a number, and plain admin paths: JSON 404s.
        for path in ["/t/3/admin/workers", "/t/x/metrics", "/admin/workers"] {
            let (status, value) = get_json(&sim.url(path)).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
            assert!(value["error"].is_string(), "{path}");
        }
        let resp = client()
            .post(sim.url("/t/1/admin/reset"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            get_json(&sim.url("/t/1/admin/workers")).await.1,
            json!({"workers": 1})
        );
        sim.shutdown().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn single_tool_is_also_served_under_its_prefix() {
    bounded(async {
        let sim = start(ModelKind::Knee, 10.0, 1).await;
        put_json(&sim.url("/t/0/admin/workers"), r#"{"workers": 7}"#).await;
        assert_eq!(
            get_json(&sim.url("/admin/workers")).await.1,
            json!({"workers": 7})
        );
        let text = get_text(&sim.url("/t/0/metrics")).await;
        assert_eq!(sample(&text, "sim_workers"), 7.0);
        sim.shutdown().await.unwrap();
    })
    .await;
}

/// Run `promtool check metrics` on a live scrape (skipped when promtool is
/// missing, unless CI=true).
async fn promtool_check(url: &str) {
    crate::support::promtool_check_metrics(&get_text(url).await);
}

#[tokio::test]
async fn metrics_pass_promtool() {
    bounded(async {
        let one = start(ModelKind::Rejector, 10.0, 1).await;
        put_json(&one.url("/admin/rate"), r#"{"rate": 12.5}"#).await;
        wait_ticks(&one.url("/metrics"), 2.0).await;
        promtool_check(&one.url("/metrics")).await;
        promtool_check(&one.url("/t/0/metrics")).await;
        one.shutdown().await.unwrap();

        let many = start(ModelKind::Metastable, 10.0, 4).await;
        wait_ticks(&many.url("/t/0/metrics"), 2.0).await;
        promtool_check(&many.url("/metrics")).await;
        promtool_check(&many.url("/t/3/metrics")).await;
        many.shutdown().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_thousand_tools_in_one_process() {
    bounded(async {
        let sim = start(ModelKind::Noisy, 50.0, 1_000).await;
        put_json(&sim.url("/t/999/admin/workers"), r#"{"workers": 50}"#).await;
        wait_ticks(&sim.url("/t/999/metrics"), 3.0).await;
        let all = get_text(&sim.url("/metrics")).await;
        assert_eq!(sample(&all, r#"sim_workers{tool="999"}"#), 50.0);
        assert_eq!(all.matches("# TYPE ").count(), 6);
        promtool_check(&sim.url("/metrics")).await;
        sim.shutdown().await.unwrap();
    })
    .await;
}
