//! The real-tool harness: one governed run of a real load tool against a
//! fast-failing loopback target, measured the way a user would judge it.
//!
//! Why it exists: every real-tool test (`tests/real/*.rs`) asks the same
//! questions of a run, and they must be asked the same way for each tool
//! and signal path: did the offer back off at the wall, what share of
//! attempts failed (counted by the target itself: [`LimitedTarget`] counts
//! what it served and what it rejected, so no tool's own bookkeeping is
//! trusted), when did the live capacity estimate give a figure near the
//! limit, and what figure does the capacity report give.
//!
//! [`govern`] runs the controller in-process over the given config, watches
//! `/api/v1/targets` every 250 ms (the offer, the live estimate and the
//! target's counters at each sample), snapshots the target's counters at
//! the first back-off, and builds the report with
//! [`supervisor::Running::report`]. `support::goals` judges the result (the
//! fast tier's verdict and issue 26's goals).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use throttle_governor::config::Config;
use throttle_governor::report::SteadyRule;
use throttle_governor::runtime::supervisor::{self, RunOptions};

use super::{target_status, LimitedTarget};

/// The test tier, from `THROTTLE_TEST_TIER` (docs/TESTING.md): `full`
/// (set by `scripts/test --full`) runs the real tools one at a time and
/// lengthens the latency runs; anything else is the fast tier, which drives
/// each path once until the governor backs off at the wall and the report
/// gives a capacity figure. (The goal runs are full-tier-only tests of
/// their own, `#[ignore]`d in the fast tier.)
pub fn full_tier() -> bool {
    std::env::var("THROTTLE_TEST_TIER").is_ok_and(|t| t == "full")
}

/// How many real-tool runs may go at once: 1 in the full tier (two real
/// tools on a two-core machine would measure each other's load into the
/// figures), `THROTTLE_REAL_PARALLEL` (default 6) in the fast tier, whose
/// verdicts (a back-off at the wall, a capacity figure within ±20 %) the
/// runs do not move: they mostly wait on windows. docs/TESTING.md has the
/// measurement behind that default.
pub fn parallel_runs() -> usize {
    if full_tier() {
        return 1;
    }
    std::env::var("THROTTLE_REAL_PARALLEL")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(4)
}

/// The real-tool runs' semaphore, sized by [`parallel_runs`] once.
static SERIAL: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();

/// Takes a slot among the real-tool runs of this test binary (see
/// [`parallel_runs`]). A tokio semaphore: each test has its own runtime,
/// the permit is held across the whole run, and a panicked test releases it
/// as it unwinds.
pub async fn serial() -> tokio::sync::SemaphorePermit<'static> {
    SERIAL
        .get_or_init(|| tokio::sync::Semaphore::new(parallel_runs()))
        .acquire()
        .await
        .expect("the semaphore is never closed")
}

/// One observation of the governed offer.
#[derive(Debug, Clone, Copy)]
pub struct Point {
    /// Seconds since the controller started.
    pub at: f64,
    /// The committed offer the controller reports.
    pub offer: f64,
    /// The live capacity estimate (`capacity.offer`), when it gives one.
    pub capacity: Option<f64>,
    /// The target's own (served, rejected) counts at this sample.
    pub served: u64,
    pub rejected: u64,
}

/// What one governed run measured.
#[derive(Debug)]
pub struct Measured {
    /// A label for messages: tool, signal path, profile.
    pub label: String,
    /// The target's known limit.
    pub limit: f64,
    /// Every observation of the offer.
    pub points: Vec<Point>,
    /// When the offer first went down (seconds since start).
    pub first_backoff_at: Option<f64>,
    /// The target's (served, rejected) when the controller started, at the
    /// first back-off and at the end.
    pub at_start: (u64, u64),
    pub at_backoff: (u64, u64),
    pub at_end: (u64, u64),
    /// The run's length in seconds.
    pub secs: f64,
    /// The capacity figure the report gives, if any.
    pub capacity: Option<f64>,
    /// The report's verdict for the target.
    pub verdict: String,
    /// The report's target entry, without its history.
    pub summary: serde_json::Value,
    /// The settled tail: (min, max) of the offer over its last `tail` seconds.
    pub tail: (f64, f64),
    /// `throttle_windows_discarded_total` for the target at the end (None
    /// when the controller does not export it).
    pub discarded: Option<f64>,
    /// `throttle_signal_errors_total` for the target at the end.
    pub signal_errors: Option<f64>,
    /// The live estimate (`capacity` in `/api/v1/targets`): when it first
    /// gave a figure (seconds since start, the figure, steady), and when it
    /// first gave one within ±20 % of the limit. Reported, not asserted.
    pub live_first: Option<(f64, f64, bool)>,
    pub live_within_20: Option<f64>,
    /// The last live estimate seen (`capacity` in `/api/v1/targets`), or
    /// null.
    pub live_last: serde_json::Value,
}

impl Measured {
    /// The offers in order, without repeats.
    pub fn trajectory(&self) -> Vec<f64> {
        let mut out: Vec<f64> = Vec::new();
        for p in &self.points {
            if out.last() != Some(&p.offer) {
                out.push(p.offer);
            }
        }
        out
    }

    /// Failed attempts / attempts at the target after the first back-off.
    pub fn failed_after_backoff(&self) -> Option<f64> {
        self.first_backoff_at?;
        let served = self.at_end.0.saturating_sub(self.at_backoff.0);
        let rejected = self.at_end.1.saturating_sub(self.at_backoff.1);
        let all = served + rejected;
        (all > 0).then(|| rejected as f64 / all as f64)
    }

    /// The lowest offer observed from the first back-off on.
    pub fn lowest_after_backoff(&self) -> Option<f64> {
        let at = self.first_backoff_at?;
        self.points
            .iter()
            .filter(|p| p.at >= at)
            .map(|p| p.offer)
            .reduce(f64::min)
    }

    /// Failed attempts / attempts at the target over the whole run.
    pub fn failed_overall(&self) -> Option<f64> {
        let all = self.at_end.0 + self.at_end.1;
        (all > 0).then(|| self.at_end.1 as f64 / all as f64)
    }

    /// One line with every figure (for the test log and docs/BENCHMARKS.md).
    pub fn figures(&self) -> String {
        let pct = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{:.1}%", v * 100.0));
        format!(
            "{}: limit {}; trajectory {:?}; first back-off at {}; settled tail {}..{}; \
             failed attempts after the first back-off {} (overall {}; target served {} rejected {}); \
             capacity {} (verdict: {}); windows discarded {}; \
             live estimate first {} and within ±20% at {} (its last dead band: {}); signal errors {}; {:.0}s",
            self.label,
            self.limit,
            self.trajectory(),
            self.first_backoff_at
                .map_or("never".to_string(), |t| format!("{t:.1}s")),
            self.tail.0,
            self.tail.1,
            pct(self.failed_after_backoff()),
            pct(self.failed_overall()),
            self.at_end.0,
            self.at_end.1,
            self.capacity
                .map_or("none".to_string(), |c| format!("{c:.1}")),
            self.verdict,
            self.discarded
                .map_or("n/a".to_string(), |d| format!("{d}")),
            self.live_first.map_or("never".to_string(), |(at, c, steady)| format!(
                "{c} ({}) at {at:.1}s",
                if steady { "steady" } else { "provisional" }
            )),
            self.live_within_20
                .map_or("never".to_string(), |at| format!("{at:.1}s")),
            self.live_last["dead_band"],
            self.signal_errors.unwrap_or(0.0),
            self.secs,
        )
    }
}

/// Prints one run's figures, and appends them to
/// `target/tmp/real-tool-runs.log` (passing tests' output is captured), for
/// docs/BENCHMARKS.md.
pub fn record_run(line: &str) {
    eprintln!("REAL-TOOL RUN {line}");
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("real-tool-runs.log");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        use std::io::Write as _;
        let _ = writeln!(f, "{line}");
    }
}

/// The locustfile of the real-tool tests: one `GET /` in a loop with no
/// think time, so each user keeps one request in flight and the target's
/// concurrency is the user count.
pub const LOCUSTFILE: &str = r#"
from locust import FastHttpUser, constant, task


class Hit(FastHttpUser):
    # No think time: each user keeps one request in flight.
    wait_time = constant(0)

    @task
    def hit(self):
        self.client.get("/")
"#;

/// The capacity figure in one target's report JSON: its `capacity`
/// field, which the report sets only for a settled run whose writes were
/// confirmed (never the steady offer alone).
pub fn capacity_of(target: &serde_json::Value) -> Option<f64> {
    target["capacity"].as_f64()
}

/// How long to watch a run.
#[derive(Debug, Clone, Copy)]
pub struct Watch {
    /// The least time to keep governing after the first back-off; then the
    /// run stops at its first capacity figure.
    pub settle: Duration,
    /// The trailing span the settling criterion looks at.
    pub tail: Duration,
    /// The run stops here whatever happened.
    pub deadline: Instant,
}

/// The variable that names a file to append every governed run's
/// decision log to (the controller's own log lines: each window's verdict,
/// each write and memory change), for reading a real tool's path window by
/// window: `THROTTLE_TEST_LOG=/tmp/runs.log scripts/test --test real ...`
/// (`RUST_LOG` overrides its filter, `info,throttle_governor=debug`).
pub const DECISION_LOG: &str = "THROTTLE_TEST_LOG";

/// Starts writing the controller's log to the file [`DECISION_LOG`] names,
/// if it names one (once per test binary), and marks where `label`'s run
/// begins in it.
pub fn decision_log(label: &str) {
    let Some(path) = std::env::var_os(DECISION_LOG) else {
        return;
    };
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        if let Some(dir) = std::path::Path::new(&path).parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).unwrap_or_else(|e| {
                    panic!("{DECISION_LOG}={path:?}: cannot create its directory: {e}")
                });
            }
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{DECISION_LOG}={path:?}: cannot open it: {e}"));
        // The controller's discarded windows and signal errors are debug
        // lines; other crates' debug lines are noise here.
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,throttle_governor=debug"));
        let installed = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(file))
            .try_init();
        if let Err(e) = installed {
            panic!("{DECISION_LOG}: another log subscriber is installed: {e}");
        }
    });
    tracing::info!(run = label, "a governed run starts");
}

/// Governs `name` in `config` (TOML) until `watch.settle` after the first
/// back-off (or the deadline), and measures it against `target`. With
/// [`DECISION_LOG`] set, the controller's log goes to that file.
pub async fn govern(
    label: &str,
    config: &str,
    name: &str,
    target: &LimitedTarget,
    watch: Watch,
) -> Measured {
    decision_log(label);
    let config =
        Config::parse(config).unwrap_or_else(|e| panic!("{label}: bad config: {e}\n{config}"));
    let running = supervisor::start(&config, RunOptions::default(), None)
        .await
        .unwrap_or_else(|e| panic!("{label}: the controller did not start: {e}"));
    let ctl: SocketAddr = running.addr;
    let counts = || {
        (
            target.served.load(Ordering::Relaxed),
            target.rejected.load(Ordering::Relaxed),
        )
    };
    let at_start = counts();
    let t0 = Instant::now();
    let mut points: Vec<Point> = Vec::new();
    let mut first_backoff_at = None;
    let mut at_backoff = (0, 0);
    let mut peak = 0.0_f64;
    let (mut live_first, mut live_within_20) = (None, None);
    let mut live_last = serde_json::Value::Null;
    let limit = target.limit as f64;
    while Instant::now() < watch.deadline {
        let st = tokio::time::timeout(Duration::from_secs(3), target_status(ctl, name))
            .await
            .unwrap_or(serde_json::Value::Null);
        let capacity = st["capacity"]["offer"].as_f64();
        if let Some(c) = capacity {
            live_last = st["capacity"].clone();
            let at = t0.elapsed().as_secs_f64();
            let steady = st["capacity"]["steady"].as_bool().unwrap_or(false);
            live_first.get_or_insert((at, c, steady));
            if live_within_20.is_none() && (c - limit).abs() <= 0.2 * limit {
                live_within_20 = Some(at);
            }
        }
        if let Some(offer) = st["offer"].as_f64() {
            let at = t0.elapsed().as_secs_f64();
            let (served, rejected) = counts();
            if first_backoff_at.is_none() && offer < peak {
                first_backoff_at = Some(at);
                at_backoff = (served, rejected);
            }
            peak = peak.max(offer);
            points.push(Point {
                at,
                offer,
                capacity,
                served,
                rejected,
            });
        }
        // Past the least settling time, stop as soon as the report gives a
        // capacity (as `run --until-steady` would), else at the deadline.
        let settled_long_enough = first_backoff_at
            .is_some_and(|b| t0.elapsed().as_secs_f64() - b >= watch.settle.as_secs_f64());
        if settled_long_enough && points.len() % 8 == 0 {
            let report = running.report(&SteadyRule::default());
            if report
                .targets
                .iter()
                .any(|t| t.name == name && t.capacity.is_some())
            {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let at_end = counts();
    let total = |family: &str| {
        let selector = format!("{family}{{target=\"{name}\"}}");
        async move {
            tokio::time::timeout(Duration::from_secs(3), super::metric(ctl, &selector))
                .await
                .ok()
                .flatten()
        }
    };
    let discarded = total("throttle_windows_discarded_total").await;
    let signal_errors = total("throttle_signal_errors_total").await;
    let report = running.report(&SteadyRule::default());
    running.shutdown(Duration::from_secs(5)).await;
    let secs = t0.elapsed().as_secs_f64();
    let mut entry = serde_json::to_value(&report).unwrap()["targets"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["name"] == name).cloned())
        .unwrap_or(serde_json::Value::Null);
    let capacity = capacity_of(&entry);
    let verdict = entry["verdict"].as_str().unwrap_or("no report").to_string();
    if let Some(o) = entry.as_object_mut() {
        o.remove("history");
    }
    let end = points.last().map_or(0.0, |p| p.at);
    let tail: Vec<f64> = points
        .iter()
        .filter(|p| p.at >= end - watch.tail.as_secs_f64())
        .map(|p| p.offer)
        .collect();
    let tail = (
        tail.iter().copied().fold(f64::INFINITY, f64::min),
        tail.iter().copied().fold(0.0, f64::max),
    );
    Measured {
        label: label.to_string(),
        limit: target.limit as f64,
        points,
        first_backoff_at,
        at_start,
        at_backoff,
        at_end,
        secs,
        capacity,
        verdict,
        summary: entry,
        tail,
        discarded,
        signal_errors,
        live_first,
        live_within_20,
        live_last,
    }
}

/// Polls `url` until it answers 2xx (each try bounded by 2 s).
pub async fn wait_http_ok(url: &str, limit: Duration) -> bool {
    let client = reqwest::Client::new();
    super::wait_until(limit, || {
        let c = client.clone();
        let url = url.to_string();
        async move {
            matches!(
                tokio::time::timeout(Duration::from_secs(2), c.get(&url).send()).await,
                Ok(Ok(r)) if r.status().is_success()
            )
        }
    })
    .await
}

/// The path of a tool that `scripts/setup` installs into `.venv/bin`.
pub fn venv_tool(name: &str) -> Option<std::path::PathBuf> {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    super::require_installed(
        name,
        &repo.join(".venv/bin").join(name),
        "scripts/setup installs it from PyPI into .venv/",
    )
}

/// A `[[targets]]` head with the given window (concurrency, floor 1, high
/// 5 %) and profile: `None` writes no `profile` key, so the target gets
/// whatever a config without one gets (what a new user writes).
pub fn target_head(name: &str, ceiling: u32, window: &str, profile: Option<&str>) -> String {
    let profile = profile.map_or(String::new(), |p| format!("profile = \"{p}\"\n"));
    format!(
        r#"
[server]
listen = "127.0.0.1:0"

[[targets]]
name = "{name}"
knob = "concurrency"
ceiling = {ceiling}
floor = 1
high = 0.05
window = "{window}"
{profile}"#
    )
}

/// A running Locust: the master (or the only process) and its workers.
pub struct Locust {
    /// The web UI, e.g. `http://127.0.0.1:PORT`.
    pub web: String,
    /// Master first; dropped (killed) workers first, see [`Drop`].
    pub procs: Vec<super::ChildGuard>,
    pub dir: super::TempDir,
}

impl Drop for Locust {
    fn drop(&mut self) {
        // Workers first, so none reconnects to a dying master.
        while let Some(p) = self.procs.pop() {
            drop(p);
        }
    }
}

impl Locust {
    /// Starts Locust with `locustfile` against `host`: one process when
    /// `workers` is 0, else a master expecting that many workers. Autostarts
    /// at 1 user; waits (bounded) until the web UI answers and every worker
    /// has connected. `None` when Locust is not installed (and not CI).
    pub async fn start(
        locustfile: &str,
        host: &str,
        workers: usize,
        env: &[(&str, String)],
    ) -> Option<Locust> {
        let locust = venv_tool("locust")?;
        let dir = super::TempDir::new("locust");
        let file = dir.path("locustfile.py");
        std::fs::write(&file, locustfile).unwrap();
        // One Locust process: `-f` the file, `args`, the environment.
        let command = |args: &[&str]| {
            let mut cmd = std::process::Command::new(&locust);
            cmd.current_dir(&dir.0)
                .arg("-f")
                .arg(&file)
                .args(args)
                .args(["--loglevel", "WARNING"]);
            for (k, v) in env {
                cmd.env(k, v);
            }
            cmd
        };
        for attempt in 1..=3 {
            let port = super::free_port();
            let mut cmd = command(&[
                "--web-host",
                "127.0.0.1",
                "--web-port",
                &port.to_string(),
                "--autostart",
                "--users",
                "1",
                "--spawn-rate",
                "10",
                "--host",
                host,
            ]);
            let master_port = super::free_port();
            if workers > 0 {
                cmd.args([
                    "--master",
                    "--master-bind-host",
                    "127.0.0.1",
                    "--master-bind-port",
                    &master_port.to_string(),
                    "--expect-workers",
                    &workers.to_string(),
                ]);
            }
            let mut procs = vec![super::ChildGuard::spawn(
                "locust",
                cmd,
                dir.path("locust.log"),
            )];
            for i in 0..workers {
                let w = command(&[
                    "--worker",
                    "--master-host",
                    "127.0.0.1",
                    "--master-port",
                    &master_port.to_string(),
                ]);
                procs.push(super::ChildGuard::spawn(
                    "locust worker",
                    w,
                    dir.path(&format!("worker-{i}.log")),
                ));
            }
            let web = format!("http://127.0.0.1:{port}");
            let stats = format!("{web}/stats/requests");
            let up = super::wait_until(Duration::from_secs(40), || {
                let stats = stats.clone();
                async move {
                    let Ok(v) = tokio::time::timeout(Duration::from_secs(2), async {
                        reqwest::get(&stats)
                            .await?
                            .json::<serde_json::Value>()
                            .await
                    })
                    .await
                    else {
                        return false;
                    };
                    let Ok(v) = v else { return false };
                    workers == 0 || v["workers"].as_array().map_or(0, |w| w.len()) >= workers
                }
            })
            .await;
            if up {
                return Some(Locust { web, procs, dir });
            }
            let tails = procs
                .iter()
                .map(|p| p.tail())
                .collect::<Vec<_>>()
                .join("\n---\n");
            // Another process took a port between `free_port` and Locust's
            // bind (tests run in parallel): new ports, at most three times.
            assert!(
                attempt < 3 && tails.contains("Address already in use"),
                "Locust never came up with {workers} workers:\n{tails}"
            );
            drop(procs);
        }
        unreachable!("the loop returns or panics")
    }

    /// Whether every Locust process is still running.
    pub fn all_running(&mut self) -> bool {
        self.procs.iter_mut().all(|p| p.running())
    }

    /// The logs' tails, for a failure message.
    pub fn tails(&self) -> String {
        self.procs
            .iter()
            .map(|p| p.tail())
            .collect::<Vec<_>>()
            .join("\n---\n")
    }
}

/// The k6 script of the real-tool tests: an `externally-controlled`
/// scenario (the governor sets its VUs over the REST API), no think time
/// (each VU keeps one request in flight), and an exact failure counter.
pub const K6_SCRIPT: &str = r#"
import http from 'k6/http';
import { Counter } from 'k6/metrics';

const failedAttempts = new Counter('failed_attempts');

export const options = {
  scenarios: {
    governed: {
      executor: 'externally-controlled',
      vus: 1,
      maxVUs: 40,
      duration: '10m',
    },
  },
};

export default function () {
  const res = http.get(__ENV.TARGET_URL);
  if (res.status >= 400 || res.error) failedAttempts.add(1);
}
"#;

/// A running k6 with its REST API on 127.0.0.1.
pub struct K6 {
    /// The REST API, e.g. `http://127.0.0.1:PORT`.
    pub api: String,
    pub proc: super::ChildGuard,
    pub dir: super::TempDir,
}

impl K6 {
    /// Runs [`K6_SCRIPT`] against `target` with extra arguments and
    /// environment; waits (bounded) until the REST API answers. `None` when
    /// k6 is not installed (and not CI).
    pub async fn start(target: &str, args: &[&str], env: &[(&str, String)]) -> Option<K6> {
        let s = K6::spawn(K6_SCRIPT, target, args, env)?;
        let up = wait_http_ok(&format!("{}/v1/status", s.api), Duration::from_secs(30)).await;
        assert!(up, "k6's REST API never came up:\n{}", s.proc.tail());
        Some(s)
    }

    /// Starts k6 on `script` (with `TARGET_URL` set to `target`) and
    /// returns at once: the script's load begins as the process starts.
    /// `None` when k6 is not installed (and not CI).
    pub fn spawn(script: &str, target: &str, args: &[&str], env: &[(&str, String)]) -> Option<K6> {
        let k6 = venv_tool("k6")?;
        let dir = super::TempDir::new("k6");
        let script_path = dir.path("script.js");
        std::fs::write(&script_path, script).unwrap();
        let script = script_path;
        let port = super::free_port();
        let mut cmd = std::process::Command::new(&k6);
        cmd.current_dir(&dir.0)
            .args([
                "run",
                "--address",
                &format!("127.0.0.1:{port}"),
                "--no-summary",
                "--no-usage-report",
                "--quiet",
            ])
            .args(args)
            .arg(script.to_str().unwrap())
            .env("TARGET_URL", target)
            .env("K6_NO_COLOR", "true");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let proc = super::ChildGuard::spawn("k6", cmd, dir.path("k6.log"));
        let api = format!("http://127.0.0.1:{port}");
        Some(K6 { api, proc, dir })
    }
}

/// The issue's bound on the share of attempts that fail after the first
/// back-off (asserted by the goal runs).
pub const MAX_FAILED_AFTER_BACKOFF: f64 = 0.15;

/// Every fast-tier real-tool run stops here, with a figure or not (the test
/// then fails with every figure printed).
pub const RUN_LIMIT: Duration = Duration::from_secs(200);

/// A running Goose load test (tests/goose-harness: `GET /` in a loop, no
/// wait) with its WebSocket controller on 127.0.0.1.
pub struct Goose {
    /// The controller, e.g. `ws://127.0.0.1:PORT`.
    pub ws: String,
    pub proc: super::ChildGuard,
    pub dir: super::TempDir,
}

impl Goose {
    /// Where scripts/setup puts the harness binary (`GOOSE_HARNESS`, or
    /// `$GOOSE_TARGET_DIR/debug/goose-harness`).
    pub fn harness_path() -> std::path::PathBuf {
        let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        if let Ok(bin) = std::env::var("GOOSE_HARNESS") {
            return std::path::PathBuf::from(bin);
        }
        let dir = std::env::var("GOOSE_TARGET_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|_| repo.join("target/goose-harness"));
        dir.join("debug/goose-harness")
    }

    /// Starts the harness against `host` at 1 user; waits (bounded) until
    /// its controller answers. `None` when it is not built (and not CI).
    pub async fn start(host: &str) -> Option<Goose> {
        let harness = super::require_installed(
            "goose-harness",
            &Goose::harness_path(),
            "scripts/setup builds tests/goose-harness (set GOOSE_TARGET_DIR to its target dir)",
        )?;
        let dir = super::TempDir::new("goose");
        let port = super::free_port();
        let mut cmd = std::process::Command::new(&harness);
        cmd.current_dir(&dir.0).args([
            "--host",
            host,
            "--users",
            "1",
            // Also the decrease rate: without --decrease-rate, Goose stops
            // users at the increase rate (and --decrease-rate alone, with no
            // --run-time, ramps the test down at once).
            "--increase-rate",
            "20",
            "--websocket",
            "--websocket-host",
            "127.0.0.1",
            "--websocket-port",
            &port.to_string(),
            "--no-telnet",
            "--no-reset-metrics",
            "--no-print-metrics",
            "--quiet",
        ]);
        let proc = super::ChildGuard::spawn("goose", cmd, dir.path("goose.log"));
        let ws = format!("ws://127.0.0.1:{port}");
        let up = super::wait_until(Duration::from_secs(30), || {
            let ws = ws.clone();
            async move {
                throttle_governor::adapters::goose::request(
                    &ws,
                    "config-json",
                    Duration::from_secs(1),
                )
                .await
                .is_ok()
            }
        })
        .await;
        assert!(
            up,
            "Goose's WebSocket controller never came up:\n{}",
            proc.tail()
        );
        Some(Goose { ws, proc, dir })
    }
}
