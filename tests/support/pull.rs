//! Support for the pull-control tests: the documented clients (read from
//! `docs/tools/`, so the tests run exactly what users copy), a loopback
//! target that rejects above a known request rate, a puller that plays a
//! gated tool for the fake, and the ±20 % verdict over a governed run.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::Router;

use super::Seen;

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A client file under `docs/tools/clients/`, checked to be included
/// byte for byte in `docs/tools/pull.md` (so the doc never drifts from
/// what the tests run). Returns the file's path.
pub fn documented_client(name: &str) -> PathBuf {
    let path = repo().join("docs/tools/clients").join(name);
    let code = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let doc = std::fs::read_to_string(repo().join("docs/tools/pull.md")).unwrap();
    assert!(
        doc.contains(&code),
        "docs/tools/pull.md does not include docs/tools/clients/{name} verbatim"
    );
    path
}

/// A loopback target that admits at most `limit` requests in any sliding
/// second and answers 429 above that (at once).
pub struct RateLimitedTarget {
    pub addr: SocketAddr,
    pub limit: usize,
    pub served: Arc<AtomicU64>,
    pub rejected: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RateLimitedTarget {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RateLimitedTarget {
    pub async fn start(limit: usize) -> RateLimitedTarget {
        let admitted = Arc::new(Mutex::new(std::collections::VecDeque::<Instant>::new()));
        let served = Arc::new(AtomicU64::new(0));
        let rejected = Arc::new(AtomicU64::new(0));
        let (a, s, r) = (admitted.clone(), served.clone(), rejected.clone());
        let app = Router::new().fallback(move || {
            let (a, s, r) = (a.clone(), s.clone(), r.clone());
            async move {
                let now = Instant::now();
                let ok = {
                    let mut q = a.lock().unwrap();
                    while q
                        .front()
                        .is_some_and(|t| now.duration_since(*t) >= Duration::from_secs(1))
                    {
                        q.pop_front();
                    }
                    if q.len() < limit {
                        q.push_back(now);
                        true
                    } else {
                        false
                    }
                };
                if ok {
                    s.fetch_add(1, Ordering::Relaxed);
                    "ok".into_response()
                } else {
                    r.fetch_add(1, Ordering::Relaxed);
                    (StatusCode::TOO_MANY_REQUESTS, "over the rate").into_response()
                }
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        RateLimitedTarget {
            addr,
            limit,
            served,
            rejected,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

/// Plays a gated tool for the in-process fake: every `every` it pulls the
/// offer and sets the fake's workers to it, until stopped.
pub struct Puller {
    pub pulls: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Puller {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Puller {
    pub fn start(url: String, fake: Arc<Mutex<super::FakeState>>, every: Duration) -> Puller {
        let pulls = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (pulls.clone(), stop.clone());
        let task = tokio::spawn(async move {
            let c = reqwest::Client::builder()
                .timeout(Duration::from_secs(2))
                .build()
                .unwrap();
            loop {
                if !s.load(Ordering::Relaxed) {
                    if let Some(n) = pull_once(&c, &url).await {
                        fake.lock().unwrap().workers = n;
                        p.fetch_add(1, Ordering::Relaxed);
                    }
                }
                tokio::time::sleep(every).await;
            }
        });
        Puller { pulls, stop, task }
    }

    /// Stops (true) or resumes (false) pulling.
    pub fn pause(&self, paused: bool) {
        self.stop.store(paused, Ordering::Relaxed);
    }
}

/// One pull: the offer, when it was served.
async fn pull_once(c: &reqwest::Client, url: &str) -> Option<f64> {
    let r = c.get(url).send().await.ok()?;
    if !r.status().is_success() {
        return None;
    }
    r.text().await.ok()?.trim().parse().ok()
}

/// The ±20 % verdict over the trailing `tail` of a governed run: returns
/// (min, max, mean) and panics unless the mean is within 20 % of `limit`.
pub fn assert_within_20(seen: &[Seen], limit: f64, tail: Duration) -> (f64, f64, f64) {
    let end = seen.last().expect("no observations").at;
    let offers: Vec<f64> = seen
        .iter()
        .filter(|s| s.at >= end - tail.as_secs_f64())
        .map(|s| s.offer)
        .collect();
    let min = offers.iter().copied().fold(f64::INFINITY, f64::min);
    let max = offers.iter().copied().fold(0.0, f64::max);
    let mean = offers.iter().sum::<f64>() / offers.len() as f64;
    assert!(
        (mean - limit).abs() <= 0.2 * limit,
        "tail mean {mean:.2} is not within 20% of {limit} (tail {min}..{max}, path {:?})",
        super::offers(seen)
    );
    (min, max, mean)
}

/// Waits until `url` answers 2xx (each try bounded by 2 s).
pub async fn wait_http(url: &str, limit: Duration) -> bool {
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

/// A path under the scratch directory for a tool's log.
pub fn log_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.log"))
}

/// `promtool check metrics` over a live scrape (the tool is required under
/// CI=true, see `require_tool`); returns false when it was skipped.
pub async fn promtool_clean(url: &str) -> bool {
    if !super::require_tool("promtool") {
        return false;
    }
    super::promtool_check_metrics(&super::get_text(url).await)
}
