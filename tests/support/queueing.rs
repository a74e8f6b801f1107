//! A loopback target that queues and never fails: the latency SLO's test
//! target.
//!
//! Why it exists: a latency bound must be tested against a target whose
//! latency is known as a function of load, and whose attempt plane stays
//! clean (so only latency can bound it). Each request is held for
//! `base * max(1, in_flight / slots)`, with `in_flight` counted at arrival
//! (itself included): processor sharing over `slots` servers. With a closed
//! loop of `U` users and no think time, every request's latency is
//! `base * max(1, U / slots)`, so a latency bound `B` is reached at
//! `U = slots * B / base`. The target exposes its own latency as a
//! Prometheus histogram (`queue_request_duration_seconds`, 10 ms buckets to
//! 2 s) on `/metrics`, measured by itself, and counts what it served.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;

/// Upper bounds of the histogram's buckets: 10 ms steps to 2 s.
fn bounds() -> Vec<f64> {
    (1..=200).map(|i| f64::from(i) * 0.01).collect()
}

pub struct QueueingTarget {
    pub addr: SocketAddr,
    pub slots: usize,
    pub base: Duration,
    pub served: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for QueueingTarget {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Hist {
    bounds: Vec<f64>,
    counts: Vec<u64>,
    inf: u64,
    sum: f64,
}

impl Hist {
    fn observe(&mut self, v: f64) {
        if let Some(i) = self.bounds.iter().position(|b| v <= *b) {
            self.counts[i] += 1;
        }
        self.inf += 1;
        self.sum += v;
    }

    fn render(&self) -> String {
        let mut out = String::from(
            "# HELP queue_request_duration_seconds Request latency measured by the target\n# TYPE queue_request_duration_seconds histogram\n",
        );
        let mut cum = 0;
        for (b, c) in self.bounds.iter().zip(&self.counts) {
            cum += c;
            out.push_str(&format!(
                "queue_request_duration_seconds_bucket{{le=\"{b:.2}\"}} {cum}\n"
            ));
        }
        out.push_str(&format!(
            "queue_request_duration_seconds_bucket{{le=\"+Inf\"}} {}\nqueue_request_duration_seconds_sum {}\nqueue_request_duration_seconds_count {}\n",
            self.inf, self.sum, self.inf
        ));
        out
    }
}

struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl QueueingTarget {
    /// `slots` servers, each request taking `base` when it has one alone.
    pub async fn start(slots: usize, base: Duration) -> QueueingTarget {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let served = Arc::new(AtomicU64::new(0));
        let b = bounds();
        let hist = Arc::new(Mutex::new(Hist {
            counts: vec![0; b.len()],
            bounds: b,
            inf: 0,
            sum: 0.0,
        }));
        let (f, s, h) = (in_flight.clone(), served.clone(), hist.clone());
        let metrics_hist = hist.clone();
        let app = Router::new()
            .route(
                "/metrics",
                get(move || {
                    let h = metrics_hist.clone();
                    async move { h.lock().unwrap().render() }
                }),
            )
            .fallback(move || {
                let (f, s, h) = (f.clone(), s.clone(), h.clone());
                async move {
                    let t0 = Instant::now();
                    let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                    let _slot = Slot(f);
                    let factor = (now as f64 / slots as f64).max(1.0);
                    tokio::time::sleep(base.mul_f64(factor)).await;
                    h.lock().unwrap().observe(t0.elapsed().as_secs_f64());
                    s.fetch_add(1, Ordering::Relaxed);
                    "ok"
                }
            });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        QueueingTarget {
            addr,
            slots,
            base,
            served,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The concurrency at which every request takes `bound`.
    pub fn concurrency_at(&self, bound: Duration) -> f64 {
        self.slots as f64 * bound.as_secs_f64() / self.base.as_secs_f64()
    }
}
