//! Hardening III (issue 27) over real sockets on 127.0.0.1: a server that
//! slow request bodies cannot starve, and the signal findings end to end.
//! Each test fails without its fix; docs/RELIABILITY.md's "Hardening III"
//! table names them.

use crate::support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use support::{sum_in, FakeTool};
use throttle_governor::config::Config;
use throttle_governor::runtime::supervisor::{self, RunOptions};

/// A controller governing the fake as target `t` through the pull control.
async fn start_pull(fake: &FakeTool) -> supervisor::Running {
    let cfg = Config::parse(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}",
        pull_target(fake, "t")
    ))
    .unwrap();
    supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap()
}

/// The fake's target, with its control replaced by `kind = "pull"`.
fn pull_target(fake: &FakeTool, name: &str) -> String {
    let t = fake.target_toml(name, 20, 300, "start = 20");
    let cut = t.find("[targets.control]").unwrap();
    format!("{}[targets.control]\nkind = \"pull\"\n", &t[..cut])
}

/// Issue 27 #2: 300 sockets (past the cap of 256) each send
/// `POST /metrics/job/x` with `Content-Length: 60000` and one byte, and
/// reconnect as soon as they are cut off. Before, every one was held for
/// the 10 s request timeout and never shed, so every `/metrics` and offer
/// request failed; now a body must arrive within 3 s and, at the cap, the
/// connection whose body has been arriving longest is shed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_bodies_beyond_the_cap_do_not_starve_metrics_or_the_pull_offer() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let fake = FakeTool::start(40.0, 1.0).await;
    let running = start_pull(&fake).await;
    let ctl = running.addr;
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let mut attackers = tokio::task::JoinSet::new();
    for _ in 0..300 {
        let (stop, sent) = (stop.clone(), sent.clone());
        attackers.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let Ok(Ok(mut s)) = tokio::time::timeout(
                    Duration::from_secs(1),
                    tokio::net::TcpStream::connect(ctl),
                )
                .await
                else {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                };
                let head =
                    b"POST /metrics/job/x HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n\r\na";
                if s.write_all(head).await.is_ok() {
                    sent.fetch_add(1, Ordering::Relaxed);
                }
                // Hold it until the server cuts it off (or 2 s pass).
                let mut buf = [0u8; 256];
                let _ = tokio::time::timeout(Duration::from_secs(2), async {
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 {
                            break;
                        }
                    }
                })
                .await;
            }
        });
    }
    // Let the attack fill the cap first.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let mut ok = 0;
    let mut failures = Vec::new();
    for i in 0..20 {
        let url = if i % 2 == 0 {
            format!("http://{ctl}/metrics")
        } else {
            format!("http://{ctl}/api/v1/targets/t/offer")
        };
        // A fresh connection each time, as a scraper after a restart would.
        let c = reqwest::Client::builder()
            .timeout(Duration::from_secs(3))
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        match c.get(&url).send().await {
            Ok(r) if r.status() == 200 => ok += 1,
            Ok(r) => failures.push(format!("{url}: {}", r.status())),
            Err(e) => failures.push(format!("{url}: {e}")),
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    stop.store(true, Ordering::Relaxed);
    attackers.abort_all();
    while attackers.join_next().await.is_some() {}
    let text = client
        .get(format!("http://{ctl}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    running.shutdown(Duration::from_secs(5)).await;
    let heads = sent.load(Ordering::Relaxed);
    let shed = sum_in(&text, "throttle_server_connections_shed_total").unwrap_or(0.0);
    eprintln!("slow bodies: {heads} heads sent, {shed} shed, {ok}/20 answered");
    assert!(heads >= 300, "the attack did not run ({heads} heads sent)");
    assert_eq!(ok, 20, "requests failed under slow bodies: {failures:?}");
}

/// Issue 27 #8: `job@base64/bG9hZA==` reaches the push handler and is
/// decoded to `load` (the router only knew `/metrics/job/...`, so it was an
/// uncounted 404), and a bad push path is a counted 400.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_paths_in_base64_are_decoded_and_bad_ones_counted() {
    let fake = FakeTool::start(40.0, 1.0).await;
    let t = fake.target_toml("p", 20, 300, "");
    let cut = t.find("[targets.signal]").unwrap();
    let rest = &t[cut..];
    let control = &rest[rest.find("[targets.control]").unwrap()..];
    let cfg = Config::parse(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}[targets.signal]\nkind = \"push\"\njob = \"load\"\n\
         attempts = 'req_total'\nfailures = 'req_total{{outcome=\"error\"}}'\ncumulative = true\n{control}",
        &t[..cut]
    ))
    .unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let c = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let body = "req_total{outcome=\"ok\"} 9\nreq_total{outcome=\"error\"} 1\n";
    let put = |path: &str| {
        c.put(format!("http://{ctl}/metrics/{path}"))
            .body(body)
            .send()
    };
    assert_eq!(put("job@base64/bG9hZA==").await.unwrap().status(), 200);
    assert_eq!(put("job/").await.unwrap().status(), 400);
    assert_eq!(put("nope/x").await.unwrap().status(), 400);
    let text = c
        .get(format!("http://{ctl}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    running.shutdown(Duration::from_secs(5)).await;
    assert_eq!(
        sum_in(&text, "throttle_push_requests_total{result=\"accepted\"}"),
        Some(1.0)
    );
    assert_eq!(
        sum_in(
            &text,
            "throttle_push_requests_total{result=\"bad_request\"}"
        ),
        Some(2.0)
    );
}

/// Issue 27 #8: a duplicate `client` parameter and a target name that is
/// not UTF-8 were 400s from the router, not counted in
/// `throttle_pull_requests_total`; now each is a counted `bad_request`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_pull_requests_are_counted() {
    let fake = FakeTool::start(40.0, 1.0).await;
    let running = start_pull(&fake).await;
    let ctl = running.addr;
    let c = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()
        .unwrap();
    let get = |path: &str| c.get(format!("http://{ctl}{path}")).send();
    let metric = |text: &str| {
        sum_in(text, "throttle_pull_requests_total{result=\"bad_request\"}").unwrap_or(0.0)
    };
    let before = metric(&get("/metrics").await.unwrap().text().await.unwrap());
    for path in [
        "/api/v1/targets/t/offer?client=a&client=b",
        "/api/v1/targets/%FF/offer",
        "/api/v1/targets/t/members/%FF/offer",
    ] {
        assert_eq!(get(path).await.unwrap().status(), 400, "{path}");
    }
    let after = metric(&get("/metrics").await.unwrap().text().await.unwrap());
    running.shutdown(Duration::from_secs(5)).await;
    assert_eq!(after - before, 3.0);
}

/// Issue 27 #8: a report path that cannot be written fails at the start
/// (it failed after the whole run before), and the OS error is said once.
#[test]
fn a_bad_report_path_fails_at_the_start_saying_the_error_once() {
    let bin = env!("CARGO_BIN_EXE_throttle-governor");
    let bad = "/nonexistent-tg-dir-27/report.html";
    let mut child = std::process::Command::new(bin)
        .args(["demo", "--report-html", bad])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = status.unwrap_or_else(|| panic!("still running after 10 s: {err}"));
    assert!(!status.success(), "{err}");
    assert!(err.contains(&format!("cannot write {bad}")), "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}
