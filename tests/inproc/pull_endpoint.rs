//! The offer endpoint over real sockets on 127.0.0.1: what it answers, the
//! token, confirmation by pull, no pull becoming unconfirmed and then signal
//! loss, group members' shares, and 1,000 concurrent pollers. The "tool" is
//! the in-process fake of `tests/support`, gated by a puller task that sets
//! its workers to the pulled offer. Every test is bounded in time.

use crate::support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use support::pull::Puller;
use support::{metric, scratch_dir, target_status, wait_until, FakeTool};
use throttle_governor::config::Config;
use throttle_governor::runtime::supervisor::{self, RunOptions};

/// The fake's target, with its control replaced by `kind = "pull"`.
fn pull_target(fake: &FakeTool, name: &str, window_ms: u64, top: &str, control: &str) -> String {
    let t = fake.target_toml(name, 20, window_ms, top);
    let cut = t.find("[targets.control]").unwrap();
    format!(
        "{}[targets.control]\nkind = \"pull\"\n{control}\n",
        &t[..cut]
    )
}

/// The controller over the fake's target `t` (300 ms windows) with a pull
/// control: `top` and `control` are added to the target and its control.
async fn start_pulled(fake: &FakeTool, top: &str, control: &str) -> supervisor::Running {
    let cfg = Config::parse(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n{}",
        pull_target(fake, "t", 300, top, control)
    ))
    .unwrap();
    supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap()
}

/// Whether a group member takes part in the split, from `/api/v1/groups`.
async fn member_up(ctl: std::net::SocketAddr, who: &str) -> Option<bool> {
    let v = support::get_json(&format!("http://{ctl}/api/v1/groups")).await;
    v["groups"]["g"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == who))
        .map(|m| m["up"] == true)
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
}

/// Waits (at most 5 s) until `url` answers `client` with an offer: the
/// opening offer is published.
async fn await_opening_offer(c: &reqwest::Client, url: &str, client: &str) {
    let published = wait_until(Duration::from_secs(5), || {
        let r = c.get(format!("{url}?client={client}"));
        async move { r.send().await.is_ok_and(|r| r.status() == 200) }
    })
    .await;
    assert!(published, "the opening offer was never served");
}

async fn status_of(r: reqwest::RequestBuilder) -> (u16, reqwest::header::HeaderMap, String) {
    let r = r.send().await.expect("request failed");
    let (s, h) = (r.status().as_u16(), r.headers().clone());
    (s, h, r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_answers_text_json_404_and_304() {
    let fake = FakeTool::start(5.0, 1.0).await;
    let running = start_pulled(&fake, "start = 20", "").await;
    let ctl = running.addr;
    let c = client();
    let url = format!("http://{ctl}/api/v1/targets/t/offer");

    let (s, _, body) = status_of(c.get(format!("http://{ctl}/api/v1/targets/nope/offer"))).await;
    assert_eq!(s, 404, "{body}");
    assert!(body.contains("nope"), "{body}");

    // The opening offer is published before the first window.
    await_opening_offer(&c, &url, "probe").await;
    let (s, h, body) = status_of(c.get(format!("{url}?client=probe"))).await;
    assert_eq!((s, body.as_str()), (200, "20\n"));
    assert_eq!(h["content-type"], "text/plain; charset=utf-8");
    assert_eq!(h["cache-control"], "private, max-age=1");
    let etag = h["etag"].to_str().unwrap().to_string();

    let (s, h, body) = status_of(c.get(&url).header("accept", "application/json")).await;
    assert_eq!(s, 200);
    assert_eq!(h["content-type"], "application/json");
    let doc: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["offer"], 20);
    assert_eq!(doc["knob"], "concurrency");
    assert_eq!(format!("\"g{}\"", doc["generation"]), etag);
    assert!(doc["updated_at"].as_str().unwrap().ends_with('Z'), "{doc}");
    let (_, _, same) = status_of(c.get(format!("{url}?format=json"))).await;
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&same).unwrap()["offer"],
        20
    );

    let (s, _, _) = status_of(c.get(&url).header("if-none-match", &etag)).await;
    assert_eq!(s, 304);
    let (s, _, body) = status_of(c.get(format!("{url}?client=has%20space"))).await;
    assert_eq!(s, 400, "{body}");

    assert_eq!(
        metric(
            ctl,
            "throttle_pull_requests_total{result=\"unknown_target\"}"
        )
        .await,
        Some(1.0)
    );
    assert_eq!(
        metric(ctl, "throttle_pull_requests_total{result=\"not_modified\"}").await,
        Some(1.0)
    );
    assert_eq!(
        metric(ctl, "throttle_pull_requests_total{result=\"bad_request\"}").await,
        Some(1.0)
    );
    // probe (twice), anonymous (json, format=json, 304).
    assert_eq!(
        metric(ctl, "throttle_pull_clients{target=\"t\"}").await,
        Some(2.0)
    );
    support::pull::promtool_clean(&format!("http://{ctl}/metrics")).await;
    running.shutdown(Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_enforced_off_loopback() {
    let fake = FakeTool::start(5.0, 1.0).await;
    let target = pull_target(&fake, "t", 300, "start = 20", "");
    // Off loopback without a token: refused before anything starts.
    let err = Config::parse(&format!("[server]\nlisten = \"0.0.0.0:0\"\n{target}"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("server.pull.bearer_token_file"), "{err}");

    let dir = scratch_dir("pull-token");
    let file = dir.join("token");
    std::fs::write(&file, "0ff-loopback-s3cret\n").unwrap();
    let cfg = Config::parse(&format!(
        "[server]\nlisten = \"0.0.0.0:0\"\n[server.pull]\nbearer_token_file = \"{}\"\n{target}",
        file.display()
    ))
    .unwrap();
    // The test binds loopback itself: only 127.0.0.1 is used in tests.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), Some(listener))
        .await
        .unwrap();
    let ctl = running.addr;
    let c = client();
    let url = format!("http://{ctl}/api/v1/targets/t/offer");
    let ok = wait_until(Duration::from_secs(5), || {
        let r = c.get(&url).bearer_auth("0ff-loopback-s3cret");
        async move { r.send().await.is_ok_and(|r| r.status() == 200) }
    })
    .await;
    assert!(ok, "the right token was never served");
    let (s, h, _) = status_of(c.get(&url)).await;
    assert_eq!(s, 401);
    assert!(h.contains_key("www-authenticate"));
    let (s, _, _) = status_of(c.get(&url).bearer_auth("0ff-loopback-s3cre")).await;
    assert_eq!(s, 401);
    let (s, _, body) = status_of(c.get(&url).bearer_auth("0ff-loopback-s3cret")).await;
    assert_eq!((s, body.as_str()), (200, "20\n"));
    assert_eq!(
        metric(ctl, "throttle_pull_requests_total{result=\"unauthorized\"}").await,
        Some(2.0)
    );
    running.shutdown(Duration::from_secs(3)).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_confirm_changes_and_no_pull_is_unconfirmed_then_signal_loss() {
    let fake = FakeTool::start(6.0, 1.0).await;
    let running = start_pulled(&fake, "signal_loss_windows = 3", "stale_after = \"2s\"").await;
    let ctl = running.addr;
    let url = format!("http://{ctl}/api/v1/targets/t/offer?client=gate-1");
    let puller = Puller::start(url, fake.state.clone(), Duration::from_millis(100));
    let confirmed = "throttle_control_writes_total{target=\"t\",result=\"confirmed\"}";
    let unconfirmed = "throttle_control_writes_total{target=\"t\",result=\"unconfirmed\"}";

    // Pulled changes are confirmed: the offer climbs, the fake follows it.
    let climbed = wait_until(Duration::from_secs(15), || async {
        let offer = target_status(ctl, "t").await["offer"]
            .as_f64()
            .unwrap_or(0.0);
        offer >= 4.0 && metric(ctl, confirmed).await.unwrap_or(0.0) >= 3.0
    })
    .await;
    let st = target_status(ctl, "t").await;
    assert!(climbed, "never climbed by pulled offers: {st}");
    assert_eq!(metric(ctl, unconfirmed).await, Some(0.0), "{st}");
    assert_eq!(
        metric(ctl, "throttle_pull_clients{target=\"t\"}").await,
        Some(1.0)
    );
    assert!(puller.pulls.load(Ordering::Relaxed) > 0);

    // Nobody pulls: unconfirmed, then signal loss (the floor is published).
    puller.pause(true);
    let paused_at = Instant::now();
    let lost = wait_until(Duration::from_secs(10), || async {
        metric(ctl, "throttle_signal_lost{target=\"t\"}").await == Some(1.0)
            && metric(ctl, unconfirmed).await.unwrap_or(0.0) >= 1.0
    })
    .await;
    let st = target_status(ctl, "t").await;
    assert!(lost, "no pull never became signal loss: {st}");
    let after = paused_at.elapsed();
    assert!(
        metric(
            ctl,
            "throttle_signal_errors_total{target=\"t\",error_type=\"not_pulled\"}"
        )
        .await
        .unwrap_or(0.0)
            >= 3.0
    );
    assert_eq!(st["signal_lost"], true, "{st}");
    assert_eq!(st["offer"], 1.0, "the floor policy applies: {st}");

    // Pulling again: the floor is confirmed, and the signal is back.
    puller.pause(false);
    let back = wait_until(Duration::from_secs(10), || async {
        metric(ctl, "throttle_signal_lost{target=\"t\"}").await == Some(0.0)
    })
    .await;
    assert!(back, "pulling again never brought the signal back");
    eprintln!(
        "pull endpoint: signal loss {:.1}s after the last pull (stale_after 2s + 3 windows of 300ms)",
        after.as_secs_f64()
    );
    running.shutdown(Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_group_member_pulls_its_own_share() {
    let a = FakeTool::start(4.0, 1.0).await;
    let b = FakeTool::start(4.0, 1.0).await;
    let cfg = Config::parse(&format!(
        r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "g"
knob = "concurrency"
ceiling = 40
floor = 2
high = 0.05
window = "300ms"

[targets.signal]
kind = "prometheus"
url = "http://{{{{address}}}}/metrics"
attempts = 'fake_attempts_total'
failures = 'fake_requests_total{{outcome="failure"}}'
timeout = "300ms"

[targets.control]
kind = "pull"
stale_after = "2s"

[targets.group]
down_after_windows = 2

[[targets.instances]]
address = "{}"

[[targets.instances]]
name = "b"
address = "{}"
"#,
        a.addr, b.addr
    ))
    .unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let base = format!("http://{ctl}/api/v1/targets/g");
    let pa = Puller::start(
        format!("{base}/offer?instance={}&client=a", a.addr),
        a.state.clone(),
        Duration::from_millis(100),
    );
    let pb = Puller::start(
        format!("{base}/members/b/offer?client=b"),
        b.state.clone(),
        Duration::from_millis(100),
    );
    let (s, _, body) = status_of(client().get(format!("{base}/offer"))).await;
    assert_eq!(s, 404);
    assert!(body.contains("instance="), "{body}");

    // The group climbs on pulled shares; each fake runs its own share.
    let split = wait_until(Duration::from_secs(20), || async {
        let offer = target_status(ctl, "g").await["offer"]
            .as_f64()
            .unwrap_or(0.0);
        let (wa, wb) = (a.workers(), b.workers());
        offer >= 6.0 && wa >= 2.0 && wb >= 2.0 && (wa + wb - offer).abs() <= 1.0
    })
    .await;
    let offer = target_status(ctl, "g").await["offer"].clone();
    assert!(
        split,
        "shares never followed the group: offer {offer}, a {} b {}",
        a.workers(),
        b.workers()
    );
    assert!(pa.pulls.load(Ordering::Relaxed) > 0 && pb.pulls.load(Ordering::Relaxed) > 0);

    // b stops asking: it is down, and a takes the whole offer; then it rejoins.
    pb.pause(true);
    let down = wait_until(Duration::from_secs(10), || async {
        member_up(ctl, "b").await == Some(false)
    })
    .await;
    assert!(down, "a member that stopped pulling never went down");
    assert_eq!(member_up(ctl, &a.addr.to_string()).await, Some(true));
    pb.pause(false);
    let back = wait_until(Duration::from_secs(10), || async {
        member_up(ctl, "b").await == Some(true)
    })
    .await;
    assert!(back, "b never rejoined after pulling again");
    running.shutdown(Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_pollers_are_all_answered() {
    const POLLERS: usize = 1000;
    const POLLS: usize = 5;
    let fake = FakeTool::start(5.0, 1.0).await;
    // Each poller keeps its own connection: the cap must be above them.
    let cfg = Config::parse(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\nmax_connections = 2048\n{}",
        pull_target(&fake, "t", 300, "start = 20", "")
    ))
    .unwrap();
    let running = supervisor::start(&cfg, RunOptions::default(), None)
        .await
        .unwrap();
    let ctl = running.addr;
    let url = format!("http://{ctl}/api/v1/targets/t/offer");
    let c = client();
    assert!(
        wait_until(Duration::from_secs(5), || {
            let r = c.get(&url);
            async move { r.send().await.is_ok_and(|r| r.status() == 200) }
        })
        .await
    );
    let before = metric(ctl, "throttle_pulls_total{target=\"t\"}")
        .await
        .unwrap();
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..POLLERS {
        // One client (and so one connection) per poller: 1,000 sockets.
        let url = format!("{url}?client=poller-{i}");
        tasks.spawn(async move {
            let c = reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap();
            let mut lat = Vec::new();
            let mut ok = 0;
            let mut errors = Vec::new();
            for n in 0..POLLS {
                let t = Instant::now();
                match c.get(&url).send().await {
                    Ok(r) if r.status() == 200 => {
                        if r.text()
                            .await
                            .is_ok_and(|b| b.trim().parse::<f64>().is_ok())
                        {
                            ok += 1;
                        }
                    }
                    Ok(r) => errors.push(format!("HTTP {}", r.status())),
                    Err(e) => errors.push(format!("{e:?}")),
                }
                lat.push((n == 0, t.elapsed().as_secs_f64()));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            (ok, lat, errors)
        });
    }
    let mut ok = 0;
    let mut lat = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let bounded = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(r) = tasks.join_next().await {
            let (o, l, e) = r.unwrap();
            ok += o;
            lat.extend(l);
            errors.extend(e);
        }
    })
    .await;
    let elapsed = t0.elapsed().as_secs_f64();
    assert!(bounded.is_ok(), "pollers did not finish within 60 s");
    // The controller still answers its own API while and after being polled.
    let st = target_status(ctl, "t").await;
    assert_eq!(st["name"], "t");
    let after = metric(ctl, "throttle_pulls_total{target=\"t\"}")
        .await
        .unwrap();
    let clients = metric(ctl, "throttle_pull_clients{target=\"t\"}")
        .await
        .unwrap();
    let shed = metric(ctl, "throttle_server_connections_shed_total").await;
    running.shutdown(Duration::from_secs(3)).await;

    // First polls open the connections (1,000 at once); later ones reuse them.
    let mut first: Vec<f64> = lat.iter().filter(|l| l.0).map(|l| l.1).collect();
    let mut rest: Vec<f64> = lat.iter().filter(|l| !l.0).map(|l| l.1).collect();
    first.sort_by(f64::total_cmp);
    rest.sort_by(f64::total_cmp);
    let pct = |v: &[f64], p: f64| v[((v.len() - 1) as f64 * p) as usize] * 1000.0;
    eprintln!(
        "pull endpoint: {POLLERS} pollers x {POLLS}: {ok} answered in {elapsed:.2}s ({:.0} pulls/s); \
         first poll (connect) p50 {:.1} ms p99 {:.1} ms; later polls p50 {:.1} ms p99 {:.1} ms max {:.1} ms",
        ok as f64 / elapsed,
        pct(&first, 0.5),
        pct(&first, 0.99),
        pct(&rest, 0.5),
        pct(&rest, 0.99),
        pct(&rest, 1.0)
    );
    errors.truncate(3);
    assert_eq!(
        ok,
        POLLERS * POLLS,
        "some polls were not answered (connections shed: {shed:?}), e.g. {errors:?}"
    );
    assert_eq!(after - before, (POLLERS * POLLS) as f64);
    assert!(clients >= POLLERS as f64, "clients {clients}");
}

/// A pull that holds the current generation and asks to wait is answered
/// when the next offer is published, not at its wait's end; a bad `wait`
/// is a counted 400; without `If-None-Match` it is answered at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_that_waits_is_answered_when_the_next_offer_is_published() {
    let fake = FakeTool::start(6.0, 1.0).await;
    let running = start_pulled(&fake, "", "").await;
    let ctl = running.addr;
    let url = format!("http://{ctl}/api/v1/targets/t/offer");
    // The tool follows its pulls, so the governor climbs and publishes
    // about every window (300 ms) for a while.
    let _puller = Puller::start(
        format!("{url}?client=gate"),
        fake.state.clone(),
        Duration::from_millis(100),
    );
    let c = reqwest::Client::builder()
        .timeout(Duration::from_secs(12))
        .build()
        .unwrap();
    await_opening_offer(&c, &url, "w").await;

    let (s, h, body) = status_of(c.get(format!("{url}?client=w&format=json"))).await;
    assert_eq!(s, 200, "{body}");
    let etag = h["etag"].to_str().unwrap().to_string();
    let before: serde_json::Value = serde_json::from_str(&body).unwrap();
    let t0 = Instant::now();
    let (s, h, body) = status_of(
        c.get(format!("{url}?client=w&format=json&wait=8s"))
            .header("if-none-match", &etag),
    )
    .await;
    let took = t0.elapsed();
    // 200 (not the 304 of a wait that ended): woken by a publication.
    assert_eq!(s, 200, "{body}");
    let after: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(
        after["generation"].as_u64() > before["generation"].as_u64(),
        "{before} -> {after}"
    );
    assert_ne!(h["etag"].to_str().unwrap(), etag);
    eprintln!(
        "waiting pull: answered {:.0} ms after it asked, with generation {} (it held {})",
        took.as_secs_f64() * 1e3,
        after["generation"],
        before["generation"]
    );

    let (s, _, body) = status_of(c.get(format!("{url}?client=w&wait=soon"))).await;
    assert_eq!(s, 400, "{body}");
    assert!(body.contains("`wait`"), "{body}");
    assert_eq!(
        metric(ctl, "throttle_pull_requests_total{result=\"bad_request\"}").await,
        Some(1.0)
    );
    // Without If-None-Match there is nothing to wait for.
    let (s, _, _) = status_of(c.get(format!("{url}?client=w&wait=8s"))).await;
    assert_eq!(s, 200);
    running.shutdown(Duration::from_secs(3)).await;
}
