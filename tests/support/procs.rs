//! Real processes on 127.0.0.1 for the tests, each owned by a guard that
//! kills and reaps it on drop (also when a test panics), so a failing test
//! never leaves a tool running.
//!
//! - [`ChildGuard`]: any child process, optionally logging to a file;
//! - [`TempDir`]: a scratch directory removed on drop;
//! - [`free_port`], [`wait_until_blocking`], [`write_atomic`];
//! - [`Sim`]: `throttle-governor sim` (a simulated load tool), on a port the
//!   OS picks, read back from its JSON start-up log line;
//! - [`Prometheus`]: Debian's `prometheus`, in a temporary directory,
//!   scraping given addresses every second (optionally also receiving
//!   remote writes).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_throttle-governor");

/// A child process killed (and reaped) on drop.
pub struct ChildGuard {
    pub child: Child,
    pub name: String,
    /// Where its stdout and stderr go, when [`ChildGuard::spawn`] started it.
    pub log: Option<PathBuf>,
}

impl ChildGuard {
    /// Guards an already started child.
    pub fn new(child: Child, name: &str) -> ChildGuard {
        ChildGuard {
            child,
            name: name.to_string(),
            log: None,
        }
    }

    /// Spawns `cmd` with stdout and stderr going to `log`.
    pub fn spawn(name: &str, mut cmd: Command, log: PathBuf) -> ChildGuard {
        let out = std::fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        ChildGuard {
            child,
            name: name.to_string(),
            log: Some(log),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the process now (e.g. to take an instance down mid-run).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The last lines the process printed, for a failure message.
    pub fn tail(&self) -> String {
        let Some(log) = &self.log else {
            return String::new();
        };
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Whether the process is still running.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            eprintln!("stopping {} (pid {})", self.name, self.child.id());
        }
        self.kill();
    }
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir = std::env::temp_dir().join(format!("tg-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A free port on 127.0.0.1 (bound and released; the caller binds it soon).
///
/// It comes from below the kernel's ephemeral range
/// (`net.ipv4.ip_local_port_range`), never from `bind(0)`: the kernel hands
/// ephemeral ports to every outgoing connection, and the load tools under
/// test open thousands, so a port released by `bind(0)` could become some
/// connection's source port before the tool bound it (CI run 57: Locust's
/// "Address already in use"). Below the range only another `bind` to that
/// exact port can take it. A per-process counter from a random start never
/// hands the same port out twice in one test binary.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FLOOR: u32 = 10_000;
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    if ephemeral_low < FLOOR + 1_000 {
        // No room below the range on this machine: the kernel's pick.
        return std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
    }
    let span = ephemeral_low - FLOOR;
    static START: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let start = *START.get_or_init(|| {
        std::process::id().wrapping_mul(2_654_435_761)
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_nanos()
    });
    for _ in 0..span {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (FLOOR + start.wrapping_add(n) % span) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port on 127.0.0.1 between {FLOOR} and {ephemeral_low}")
}

/// A running `throttle-governor sim`.
pub struct Sim {
    pub guard: ChildGuard,
    pub addr: SocketAddr,
}

impl Sim {
    /// Starts a `rejector` sim of `capacity` workers with a 50 ms tick.
    pub fn start(capacity: f64) -> Sim {
        let mut child = Command::new(BIN)
            .args([
                "--log-format",
                "json",
                "sim",
                "--model",
                "rejector",
                "--capacity",
                &capacity.to_string(),
                "--listen",
                "127.0.0.1:0",
                "--tick",
                "50ms",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start the sim");
        let stderr = child.stderr.take().unwrap();
        let guard = ChildGuard::new(child, "sim");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if !sent {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                        if let Some(addr) = v["addr"].as_str() {
                            let _ = tx.send(addr.parse::<SocketAddr>().unwrap());
                            sent = true;
                        }
                    }
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the sim did not report its address");
        Sim { guard, addr }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// The sim's current workers (blocking, bounded).
    pub fn workers(&self) -> Option<f64> {
        let out = Command::new("curl")
            .args(["-s", "-m", "2", &self.url("/admin/workers")])
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        v["workers"].as_f64()
    }
}

/// A running Prometheus scraping some addresses every second.
pub struct Prometheus {
    pub guard: ChildGuard,
    pub addr: SocketAddr,
    _dir: TempDir,
}

impl Prometheus {
    /// Starts Prometheus (job `sim`, scrape interval 1s) and waits until it
    /// has scraped every address successfully.
    pub fn start(targets: &[SocketAddr]) -> Prometheus {
        let dir = TempDir::new("prometheus");
        let config = dir.path("prometheus.yml");
        let list = targets
            .iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(", ");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n\
                 scrape_configs:\n  - job_name: sim\n    static_configs:\n      - targets: [{list}]\n"
            ),
        )
        .unwrap();
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let log = std::fs::File::create(dir.path("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--storage.tsdb.retention.time=1h")
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("cannot start prometheus");
        let guard = ChildGuard::new(child, "prometheus");
        let p = Prometheus {
            guard,
            addr,
            _dir: dir,
        };
        let want = targets.len();
        let ready = wait_until_blocking(Duration::from_secs(30), || {
            p.query("sum(up{job=\"sim\"})")
                .is_some_and(|v| v >= want as f64)
        });
        if !ready {
            let log = std::fs::read_to_string(p._dir.path("prometheus.log")).unwrap_or_default();
            panic!("prometheus never scraped all {want} targets; its log:\n{log}");
        }
        p
    }

    /// Starts Prometheus with no scrape targets and the remote-write
    /// receiver on (`--web.enable-remote-write-receiver`: tools write to
    /// `/api/v1/write`); waits until it is ready.
    pub fn start_receiver() -> Prometheus {
        Prometheus::start_receiver_with(&[])
    }

    /// [`Prometheus::start_receiver`] with extra flags (e.g.
    /// `--enable-feature=native-histograms`).
    pub fn start_receiver_with(extra: &[&str]) -> Prometheus {
        let dir = TempDir::new("prometheus-rw");
        let config = dir.path("prometheus.yml");
        std::fs::write(
            &config,
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n",
        )
        .unwrap();
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let log = std::fs::File::create(dir.path("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--web.enable-remote-write-receiver")
            .arg("--storage.tsdb.retention.time=1h")
            .arg("--log.level=warn")
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("cannot start prometheus");
        let guard = ChildGuard::new(child, "prometheus");
        let p = Prometheus {
            guard,
            addr,
            _dir: dir,
        };
        let ready = wait_until_blocking(Duration::from_secs(30), || {
            Command::new("curl")
                .args(["-sf", "-m", "2", &format!("{}/-/ready", p.url())])
                .output()
                .is_ok_and(|o| o.status.success())
        });
        if !ready {
            let log = std::fs::read_to_string(p._dir.path("prometheus.log")).unwrap_or_default();
            panic!("prometheus never became ready; its log:\n{log}");
        }
        p
    }

    /// The URL remote writes go to.
    pub fn write_url(&self) -> String {
        format!("{}/api/v1/write", self.url())
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// One instant query's scalar result (the first series), if any.
    pub fn query(&self, q: &str) -> Option<f64> {
        let out = Command::new("curl")
            .args([
                "-s",
                "-m",
                "2",
                "-G",
                &format!("{}/api/v1/query", self.url()),
                "--data-urlencode",
                &format!("query={q}"),
            ])
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        v["data"]["result"][0]["value"][1]
            .as_str()
            .and_then(|s| s.parse().ok())
    }
}

/// Polls `f` every 100 ms until it holds or `limit` passes.
pub fn wait_until_blocking(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Writes `text` to `path` atomically (write, then rename), as config
/// management tools do.
pub fn write_atomic(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}
