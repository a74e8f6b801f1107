//! Live Goose: a tiny Goose load test (tests/goose-harness, its own package,
//! built by scripts/setup) runs with its WebSocket controller on 127.0.0.1
//! against a loopback target that answers 503 above a known concurrency;
//! the controller governs it through `kind = "goose"` and must climb, back
//! off, and settle near the limit. Bounded to 90 s; Goose is killed on
//! every exit path (a Drop guard).

use crate::support;

use std::time::{Duration, Instant};

use support::real::Goose;
use support::{assert_governed, get_text, offers, watch_governed, LimitedTarget};
use throttle_governor::config::Config;
use throttle_governor::supervisor::{self, RunOptions};

/// Concurrent requests the target admits.
const LIMIT: usize = 12;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn goose_is_governed_to_the_target_limit() {
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(85);
    let target = LimitedTarget::start(LIMIT, Duration::from_millis(100)).await;
    let Some(goose) = Goose::start(&target.url()).await else {
        return;
    };
    let (ws, mut goose_proc) = (goose.ws.clone(), goose.proc);
    let startup = t0.elapsed();

    let config = Config::parse(&format!(
        r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "goose"
knob = "concurrency"
ceiling = 40
floor = 1
high = 0.05
window = "2s"

[targets.signal]
kind = "goose"
url = "{ws}"

[targets.control]
kind = "goose"
url = "{ws}"
"#
    ))
    .unwrap();
    let running = supervisor::start(&config, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let seen = watch_governed(
        ctl,
        "goose",
        LIMIT as f64,
        Duration::from_secs(20),
        deadline,
    )
    .await;
    assert!(
        goose_proc.running(),
        "Goose died (path {:?}):\n{}",
        offers(&seen),
        goose_proc.tail()
    );
    let metrics = get_text(&format!("http://{ctl}/metrics")).await;
    running.shutdown(Duration::from_secs(5)).await;
    drop(goose_proc);

    let (min, max, mean) = assert_governed(&seen, LIMIT as f64, Duration::from_secs(10));
    eprintln!(
        "live goose: limit {LIMIT}; path {:?}; settled {min}..{max} (mean {mean:.1}) over the last 10 s; \
         startup {:.1}s, governed {:.1}s, total {:.1}s; target served {} and rejected {}, peak in flight {}",
        offers(&seen),
        startup.as_secs_f64(),
        seen.last().unwrap().at,
        t0.elapsed().as_secs_f64(),
        target.served.load(std::sync::atomic::Ordering::Relaxed),
        target.rejected.load(std::sync::atomic::Ordering::Relaxed),
        target.peak.load(std::sync::atomic::Ordering::Relaxed),
    );
    assert!(
        support::sum_in(
            &metrics,
            "throttle_decisions_total{target=\"goose\",decision=\"down\",mode=\"backing-off\"}"
        )
        .unwrap_or(0.0)
            >= 1.0,
        "{metrics}"
    );
    assert!(
        support::sum_in(
            &metrics,
            "throttle_control_writes_total{target=\"goose\",result=\"confirmed\"}"
        )
        .unwrap_or(0.0)
            >= 1.0,
        "{metrics}"
    );
    assert!(
        t0.elapsed() < Duration::from_secs(90),
        "took {:?}",
        t0.elapsed()
    );
}
