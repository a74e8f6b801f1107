//! TEMPORARY experiment (not committed): early verdicts on and off, 1 ms wall.
use crate::support;
use std::time::{Duration, Instant};
use support::real::{govern, target_head, Locust, Watch, K6, LOCUSTFILE};
use support::LimitedTarget;

fn knobs() -> (String, bool) {
    let profile = std::env::var("EXP_PROFILE").unwrap_or_else(|_| "robust".into());
    let early = std::env::var("EXP_EARLY").is_ok_and(|v| v == "1");
    (profile, early)
}

fn head(name: &str) -> String {
    let (profile, early) = knobs();
    let mut h = target_head(name, 40, "3s", &profile);
    h.push_str(&format!("early_verdicts = {early}\n"));
    h
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exp_k6() {
    let t0 = Instant::now();
    let target =
        LimitedTarget::start_with(10, Duration::from_millis(200), Duration::from_millis(1)).await;
    let k6 = K6::start(&target.url(), &[], &[]).await.unwrap();
    let api = &k6.api;
    let config = format!("{}\n[targets.signal]\nkind = \"k6\"\nurl = \"{api}\"\nfailures = \"failed_attempts\"\n\n[targets.control]\nkind = \"k6\"\nurl = \"{api}\"\n", head("k6"));
    let watch = Watch {
        settle: Duration::from_secs(120),
        tail: Duration::from_secs(30),
        deadline: t0 + Duration::from_secs(170),
    };
    let (p, e) = knobs();
    let m = govern(
        &format!("EXP k6 1ms {p} early={e}"),
        &config,
        "k6",
        &target,
        watch,
    )
    .await;
    drop(k6);
    println!("{}", m.figures());
    support::real::record_run(&m.figures());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exp_locust() {
    let t0 = Instant::now();
    let target =
        LimitedTarget::start_with(10, Duration::from_millis(200), Duration::from_millis(1)).await;
    let locust = Locust::start(LOCUSTFILE, &target.url(), 0, &[])
        .await
        .unwrap();
    let web = &locust.web;
    let config = format!("{}\n[targets.signal]\nkind = \"locust\"\nurl = \"{web}\"\n\n[targets.control]\nkind = \"locust\"\nurl = \"{web}\"\n", head("locust"));
    let watch = Watch {
        settle: Duration::from_secs(120),
        tail: Duration::from_secs(30),
        deadline: t0 + Duration::from_secs(170),
    };
    let (p, e) = knobs();
    let m = govern(
        &format!("EXP locust 1ms {p} early={e}"),
        &config,
        "locust",
        &target,
        watch,
    )
    .await;
    drop(locust);
    println!("{}", m.figures());
    support::real::record_run(&m.figures());
}
