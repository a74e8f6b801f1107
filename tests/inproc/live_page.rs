//! The live page at `/`, in real headless Chromium, while a real run goes:
//! the supervisor governs the in-process simulator over real HTTP on
//! 127.0.0.1, and the browser loads the controller's page.
//!
//! - the chart shows the offers `/api/v1/targets` reports, decoded from the
//!   SVG the page shows (the report's own chart code);
//! - the page updates within two windows;
//! - every fetch the page made is on the controller's origin;
//! - with 200 targets the summary table fills, and the time it takes (from
//!   the page's own performance mark) is printed, for `docs/TESTING.md`.
//!
//! The screenshots are the README's pictures: `scripts/pictures` runs these
//! tests with `TG_PICTURES_DIR=docs/img`.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use throttle_governor::config::Config;
use throttle_governor::governor::{Control, Params};
use throttle_governor::http::{conn, server, Surface};
use throttle_governor::lab::demo::demo_config;
use throttle_governor::lab::sim::{self, ModelConfig, ModelKind, SimConfig};
use throttle_governor::runtime::supervisor::{self, RunOptions};
use throttle_governor::telemetry::{live_history, TargetStatus, Telemetry, WindowRecord};

use crate::support::browser::{chromium, pictures_dir, Browser};

/// The governor's window: longer than the page's 1 s poll plus a chart's
/// fetch, so "within two windows" has room for a poll.
const WINDOW: Duration = Duration::from_millis(1500);

/// A guard against a hang, not a measured bound.
const TEST_LIMIT: Duration = Duration::from_secs(120);

async fn api_targets(base: &str) -> Vec<Value> {
    let v: Value = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()
        .unwrap()
        .get(format!("{base}api/v1/targets"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["targets"].as_array().unwrap().clone()
}

/// What the page shows for its first chart: the offers decoded from the
/// offer line of the SVG (its y coordinates against the axis' top label),
/// and the number of windows the line has.
const CHART_OFFERS: &str = r#"(() => {
  const svg = document.querySelector('#charts svg[id^="chart-"]');
  if (!svg) return null;
  const line = svg.querySelector('polyline.offer');
  const frame = Array.from(svg.querySelectorAll('rect')).find(r => r.getAttribute('stroke') === '#999');
  const top = Array.from(svg.querySelectorAll('text')).find(t =>
    +t.getAttribute('x') === +frame.getAttribute('x') - 5 && /^[0-9.]+$/.test(t.textContent));
  const y0 = +frame.getAttribute('y'), h = +frame.getAttribute('height'), max = +top.textContent;
  const ys = line.getAttribute('points').trim().split(/\s+/).filter(Boolean).map(p => +p.split(',')[1]);
  return { offers: ys.map(y => max * (1 - (y - y0) / h)), points: ys.length };
})()"#;

async fn chart(browser: &mut Browser) -> (Vec<f64>, usize) {
    let v = browser.wait_for(CHART_OFFERS, TEST_LIMIT).await;
    let offers = v["offers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o.as_f64().unwrap())
        .collect();
    (offers, v["points"].as_u64().unwrap() as usize)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_page_charts_the_offers_of_a_real_run_and_fetches_only_from_the_controller() {
    let Some(binary) = chromium() else {
        crate::support::require_tool("chromium");
        return;
    };
    tokio::time::timeout(TEST_LIMIT * 2, async {
        let capacity = 20.0;
        let mut model = ModelConfig::new(ModelKind::Cliff, capacity);
        model.run_ticks = 1_000_000;
        let mut cfg = SimConfig::new(model);
        cfg.tick = Duration::from_millis(50);
        cfg.initial_workers = 80;
        let sim = sim::spawn(cfg).await.unwrap();
        let loopback = "127.0.0.1:0".parse().unwrap();
        let config = Config::parse(&demo_config(
            &format!("http://{}", sim.addr()),
            WINDOW,
            capacity,
            loopback,
        ))
        .unwrap();
        let running = supervisor::start(
            &config,
            RunOptions {
                history_limit: live_history(1),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
        let base = format!("http://{}/", running.addr);
        let mut browser = Browser::launch(binary, &base, 1100, 1250).await;

        // Offers the API reports over a few windows, once windows run.
        let mut reported = BTreeSet::new();
        let mut last_windows = 0;
        let started = Instant::now();
        while reported.len() < 3 || last_windows < 6 {
            let t = &api_targets(&base).await[0];
            last_windows = t["windows"].as_u64().unwrap();
            if t["last_decision"].is_string() {
                reported.insert(t["offer"].as_f64().unwrap().round() as i64);
            }
            if started.elapsed() >= TEST_LIMIT {
                let windows: Vec<String> = running
                    .telemetry
                    .history("demo")
                    .iter()
                    .take(12)
                    .map(|w| {
                        format!(
                            "{}: offer {} attempts {:?} failures {:?} {} {} -> {}{}",
                            w.time_secs,
                            w.offer,
                            w.attempts,
                            w.failures,
                            w.decision,
                            w.label,
                            w.to,
                            if w.discarded { " (discarded)" } else { "" }
                        )
                    })
                    .collect();
                panic!(
                    "the run never moved: offers decided at {reported:?}, {last_windows} windows: {t}\nfirst windows:\n{}",
                    windows.join("\n")
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        // Once the page has polled after two more windows, its chart holds
        // every one of them.
        let w = api_targets(&base).await[0]["windows"].as_u64().unwrap();
        while api_targets(&base).await[0]["windows"].as_u64().unwrap() < w + 2 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let (offers, points) = chart(&mut browser).await;
        let shown: BTreeSet<i64> = offers.iter().map(|o| o.round() as i64).collect();
        for o in &offers {
            assert!(
                (o - o.round()).abs() < 0.3,
                "an offer decoded off the integer grid: {o} in {offers:?}"
            );
        }
        assert!(
            reported.is_subset(&shown),
            "the API reported offers {reported:?}; the chart shows {shown:?}"
        );
        // The table shows the same target and one of the reported offers.
        let row = browser
            .eval("Array.from(document.querySelectorAll('#summary tbody tr')).map(r => [r.dataset.target, r.querySelector('td.offer').textContent])")
            .await;
        assert_eq!(row[0][0], "demo", "{row}");

        // Updates within two windows: after the controller decides two more
        // windows, the chart has more points than before them.
        let w = api_targets(&base).await[0]["windows"].as_u64().unwrap();
        let (_, before) = chart(&mut browser).await;
        while api_targets(&base).await[0]["windows"].as_u64().unwrap() < w + 2 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let (_, after) = chart(&mut browser).await;
        assert!(
            after > before,
            "the chart did not update over two windows: {before} points, then {after}"
        );
        assert!(after >= points);

        // No fetch outside the controller: every resource the page loaded
        // (the API polls and the charts, at least one of each) is on its
        // origin, and it names no external script, style or image.
        let origin = base.trim_end_matches('/');
        let names = browser
            .eval("performance.getEntriesByType('navigation').concat(performance.getEntriesByType('resource')).map(e => e.name)")
            .await;
        let names: Vec<&str> = names
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        assert!(
            names.iter().any(|n| n.ends_with("/api/v1/targets"))
                && names.iter().any(|n| n.ends_with("/chart")),
            "no API or chart fetch recorded: {names:?}"
        );
        for n in &names {
            assert!(n.starts_with(origin), "a fetch outside {origin}: {n}");
        }
        let external = browser
            .eval("document.querySelectorAll('script[src], link[href], img[src], iframe, object, embed').length")
            .await;
        assert_eq!(external, 0);

        browser
            .screenshot(&pictures_dir().join("live-page.png"))
            .await;
        drop(browser);
        running.shutdown(Duration::from_secs(3)).await;
        let _ = sim.shutdown().await;
    })
    .await
    .expect("the live-page test hung");
}

/// One synthetic window of target `i` at time `k` (a sawtooth under a
/// wall, so each chart has shape).
fn window(i: usize, k: usize) -> WindowRecord {
    let wall = 40.0 + i as f64;
    let offer = wall - 8.0 + (k % 10) as f64;
    let frac = if offer > wall { 0.12 } else { 0.01 };
    WindowRecord {
        time_secs: 2.0 * (k + 1) as f64,
        offer,
        attempts: Some(100.0 * offer),
        failures: Some(100.0 * offer * frac),
        frac: Some(frac),
        window_secs: Some(2.0),
        decision: if offer > wall { "down" } else { "up" },
        to: if offer > wall {
            wall - 8.0
        } else {
            offer + 1.0
        },
        label: "",
        discarded: false,
        unconfirmed: false,
        latency_secs: None,
        latency_drove: false,
        confidence: None,
    }
}

/// The page with 200 targets, each with a full live history, served by the
/// controller's router: the table fills with every target and the first
/// target's chart shows. The time from navigation start to the table
/// filled (the page's `tg-table-filled` mark) is printed, not asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_page_with_200_targets_fills_its_table() {
    let Some(binary) = chromium() else {
        crate::support::require_tool("chromium");
        return;
    };
    const TARGETS: usize = 200;
    let history = live_history(TARGETS);
    let telemetry = Arc::new(Telemetry::with_history(history));
    let params = Params::new(Control::Concurrency, Some(200.0), 1.0, None, 0.05, None).unwrap();
    for i in 0..TARGETS {
        let name = format!("target-{i:03}");
        let slot = telemetry.register(TargetStatus::initial(&name, &params, false));
        for k in 0..history {
            slot.record(window(i, k));
        }
        let last = window(i, history - 1);
        slot.update(|s| {
            s.offer = last.offer;
            s.last_frac = last.frac;
            s.last_decision = Some(last.decision);
            s.windows = history as u64;
            s.has_baseline = true;
        });
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let s = stop.clone();
    let surface = Arc::new(Surface {
        telemetry,
        ..Default::default()
    });
    let server = tokio::spawn(server::serve(
        listener,
        surface,
        conn::ServerLimits::default(),
        async move { s.cancelled().await },
    ));
    let mut browser = Browser::launch(binary, &format!("http://{addr}/"), 1100, 1250).await;
    let rows = browser
        .wait_for(
            "document.querySelector('#charts svg') && document.querySelectorAll('#summary tbody tr').length",
            TEST_LIMIT,
        )
        .await;
    assert_eq!(rows, TARGETS as u64);
    let filled = browser
        .eval("performance.getEntriesByName('tg-table-filled')[0].startTime")
        .await
        .as_f64()
        .unwrap();
    let chart = browser
        .eval("performance.getEntriesByType('resource').find(e => e.name.endsWith('/chart')).responseEnd")
        .await
        .as_f64()
        .unwrap();
    let timing = browser
        .eval("JSON.stringify([performance.getEntriesByType('navigation')[0], performance.getEntriesByType('resource').slice(0, 3)].flat().map(e => [e.name, Math.round(e.startTime), Math.round(e.responseStart), Math.round(e.responseEnd), e.domContentLoadedEventEnd]))")
        .await;
    println!("{timing}");
    println!(
        "LIVE PAGE {TARGETS} targets ({history} windows each): table filled {filled:.0} ms after navigation start; first chart loaded at {chart:.0} ms"
    );
    browser
        .screenshot(&pictures_dir().join("live-page-200.png"))
        .await;
    drop(browser);
    stop.cancel();
    let _ = server.await;
}
