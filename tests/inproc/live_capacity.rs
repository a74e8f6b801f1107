//! The live capacity estimate over real sockets (issue 26, item 3): a fake
//! tool with a known capacity, governed at 100 ms windows, shows
//! `capacity: null` in `/api/v1/targets` at first, then a provisional
//! figure, then a steady one near the capacity that equals the report's,
//! with `throttle_capacity` on `/metrics` passing promtool.

use crate::support;

use std::time::{Duration, Instant};

use support::{get_text, target_status, FakeTool};
use throttle_governor::config::Config;
use throttle_governor::report::SteadyRule;
use throttle_governor::runtime::supervisor::{self, RunOptions};

const CAPACITY: f64 = 10.0;

/// The `throttle_capacity` series of `checkout`, as (state, value).
fn capacity_series(metrics: &str) -> Vec<(String, f64)> {
    metrics
        .lines()
        .filter(|l| l.starts_with("throttle_capacity{") && l.contains("target=\"checkout\""))
        .filter_map(|l| {
            let state = l.split("state=\"").nth(1)?.split('"').next()?.to_string();
            let value = l.rsplit(' ').next()?.parse().ok()?;
            Some((state, value))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_is_null_then_provisional_then_steady_and_equals_the_report() {
    let tool = FakeTool::start(CAPACITY, 1.0).await;
    let cfg = Config::parse(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}",
        tool.target_toml("checkout", 60, 100, "")
    ))
    .unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;

    // Null before any evidence brackets the wall, and no series.
    let st = target_status(ctl, "checkout").await;
    assert!(st.get("capacity").is_some_and(|c| c.is_null()), "{st}");
    let m = get_text(&format!("http://{ctl}/metrics")).await;
    assert!(capacity_series(&m).is_empty(), "{m}");

    // Poll until steady, seeing every state on the way.
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut states: Vec<&'static str> = vec!["null"];
    let mut provisional = None;
    let mut steady = None;
    while Instant::now() < deadline {
        let st = target_status(ctl, "checkout").await;
        let c = &st["capacity"];
        let state = match c["steady"].as_bool() {
            None => "null",
            Some(false) => "provisional",
            Some(true) => "steady",
        };
        if states.last() != Some(&state) {
            states.push(state);
        }
        if state == "provisional" && provisional.is_none() {
            provisional = Some(c.clone());
        }
        if state == "steady" {
            steady = Some(c.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(30)).await;
    }
    let Some(c) = steady else {
        panic!(
            "never steady in 40 s: states {states:?}, history {:?}",
            running
                .report(&SteadyRule::default())
                .targets
                .first()
                .map(|t| t.verdict.clone())
        );
    };
    assert!(
        states.starts_with(&["null", "provisional"]) && states.contains(&"steady"),
        "states {states:?}"
    );
    let p = provisional.unwrap();
    assert!(p["offer"].as_f64().unwrap() > 0.0, "{p}");
    let interval = p["interval"].as_array().unwrap();
    assert_eq!(interval.len(), 2, "{p}");
    assert!(interval[0].as_f64().unwrap() <= interval[1].as_f64().unwrap());
    assert!(p["windows"].as_u64().unwrap() >= 2, "{p}");

    let offer = c["offer"].as_f64().unwrap();
    assert!(
        (offer - CAPACITY).abs() <= 0.2 * CAPACITY,
        "steady figure {offer} not within ±20 % of {CAPACITY}: {c}"
    );

    // The metric: one series, in the steady state, valid exposition.
    let m = get_text(&format!("http://{ctl}/metrics")).await;
    let series = capacity_series(&m);
    assert!(
        series.len() == 1 && series[0].0 == "steady",
        "throttle_capacity series {series:?}"
    );
    support::promtool_check_metrics(&m);

    // The report's figure over the same history: compare only when no
    // window closed between the two status reads (else try again).
    let mut compared = false;
    for _ in 0..50 {
        let before = target_status(ctl, "checkout").await;
        let report = running.report(&SteadyRule::default());
        let after = target_status(ctl, "checkout").await;
        if before["windows"] != after["windows"] || before["capacity"] != after["capacity"] {
            continue;
        }
        let t = &report.targets[0];
        if before["capacity"]["steady"] == true {
            assert_eq!(
                t.capacity,
                before["capacity"]["offer"].as_f64(),
                "live {} vs report: {}",
                before["capacity"],
                t.verdict
            );
            compared = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        compared,
        "could not read the status and report between windows"
    );
    running.shutdown(Duration::from_secs(5)).await;
}
