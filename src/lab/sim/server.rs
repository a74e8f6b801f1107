//! The simulated load tool: a real HTTP server driving one or many models.
//!
//! Why it exists: the governor talks to load tools over HTTP (it scrapes
//! Prometheus counters and writes the offer through an admin API), so the
//! demo, the integration tests and the benchmarks need a tool that does the
//! same over real sockets, in front of a target whose capacity is known.
//!
//! What it may touch: [`super::model`] (the targets), the listener it is
//! given, and a background task that ticks the models. Nothing else.
//!
//! # Behaviour
//! Each simulated tool holds a concurrency (`workers`, a whole number) and an
//! optional rate cap (`rate`, attempts per second; none means unbounded).
//! Every `tick` a background task offers each model
//!
//! ```text
//! offer = min(workers, rate * tick_secs / attempts_per_worker)
//! ```
//!
//! workers: the rate cap is turned into the number of workers that would
//! make exactly `rate` attempts per second, and the smaller of the two knobs
//! wins. The tick's result is added to cumulative counters. Ticks that fall
//! behind (a busy machine) are caught up in a burst, so counters follow wall
//! time.
//!
//! # HTTP interface
//! With `tools = 1` the plain paths serve the one tool; every tool `i` (from
//! 0) is also served under the prefix `/t/{i}`. With more tools, the plain
//! `/metrics` exposes all tools with a `tool="i"` label and the plain admin
//! paths answer 404 with a hint.
//!
//! | method | path | body / answer |
//! |---|---|---|
//! | GET | `/metrics` | Prometheus text format 0.0.4 |
//! | GET | `/admin/workers` | `{"workers": N}` |
//! | PUT | `/admin/workers` | `{"workers": N}` (whole, `0..=1e9`) → 200 with the new value; else 400 `{"error": ...}` |
//! | GET | `/admin/rate` | `{"rate": x}` (`null` = unbounded) |
//! | PUT | `/admin/rate` | `{"rate": x}` (finite, `>= 0`, or `null`) → 200 with the new value |
//! | POST | `/admin/reset` | zeroes the counters and restores the initial workers and rate (a tool restart; the target keeps its state) |
//! | GET | `/healthz` | `ok` |
//!
//! Request bodies are limited to [`MAX_BODY_BYTES`].
//!
//! # Metrics
//! | name | type | meaning |
//! |---|---|---|
//! | `sim_requests_total{outcome="success"\|"failure"}` | counter | resolved attempts by outcome |
//! | `sim_attempts_total` | counter | all resolved attempts (success + failure) |
//! | `sim_ticks_total` | counter | ticks simulated |
//! | `sim_workers` | gauge | current concurrency |
//! | `sim_rate_limit` | gauge | rate cap in attempts per second (`+Inf`: unbounded) |
//! | `sim_capacity` | gauge | the target's true capacity in workers (an oracle) |
//! | `sim_request_duration_seconds` | histogram | `queueing` only: the attempts' latency (`_bucket{le}` cumulative, `_sum`, `_count`) |
//!
//! The histogram's buckets are multiples of the model's base latency
//! `tick / a` (10 ms at the defaults): [`LATENCY_BUCKETS`], so that a bound
//! such as p99 <= 2.5 base sits on a bucket edge. Each tick adds the
//! tick's attempts times the model's CDF at each edge
//! ([`super::model::TickLatency::share_within`]); counts are exported
//! rounded to whole attempts (the `+Inf` bucket and `_count` are exact).

mod error;
mod exposition;
mod routes;
mod state;
#[cfg(test)]
mod tests;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::model::ModelConfig;
use super::SimError;
use routes::router;
use state::{tick_forever, Sim};

/// The largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 4 * 1024;
/// The most workers a tool accepts.
pub(crate) const MAX_WORKERS: u64 = 1_000_000_000;
/// The highest finite rate cap accepted, in attempts per second.
pub(crate) const MAX_RATE: f64 = 1e15;
/// The most simulated tools one process serves.
pub(crate) const MAX_TOOLS: usize = 100_000;
/// The shortest tick.
pub(crate) const MIN_TICK: Duration = Duration::from_millis(1);

/// The `le` edges of `sim_request_duration_seconds`, in base latencies
/// (`tick / attempts_per_worker`); `+Inf` follows.
pub const LATENCY_BUCKETS: [f64; 13] = [
    0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 5.0,
];

/// How to run the simulated load tool(s).
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    /// The target model behind every tool (tool `i` uses seed `seed + i`).
    pub model: ModelConfig,
    /// How long one model tick lasts in wall time.
    pub tick: Duration,
    /// Workers at start and after a reset.
    pub initial_workers: u64,
    /// Rate cap at start and after a reset, attempts per second (None:
    /// unbounded).
    pub initial_rate: Option<f64>,
    /// Where [`run`](super::run) and [`spawn`] listen.
    pub listen: SocketAddr,
    /// How many independent tools to serve (under `/t/{i}`).
    pub tools: usize,
}

impl SimConfig {
    /// One tool on `127.0.0.1:0` with a 100 ms tick, 1 worker and no rate cap.
    pub fn new(model: ModelConfig) -> Self {
        SimConfig {
            model,
            tick: Duration::from_millis(100),
            initial_workers: 1,
            initial_rate: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            tools: 1,
        }
    }

    /// Check every field; the first problem is reported.
    pub fn validate(&self) -> Result<(), SimError> {
        self.model.validate().map_err(SimError::Model)?;
        if self.tick < MIN_TICK {
            return Err(SimError::Tick(self.tick));
        }
        if self.initial_workers > MAX_WORKERS {
            return Err(SimError::Workers(self.initial_workers));
        }
        if let Some(rate) = self.initial_rate {
            if !valid_rate(rate) {
                return Err(SimError::Rate(rate));
            }
        }
        if self.tools == 0 || self.tools > MAX_TOOLS {
            return Err(SimError::Tools(self.tools));
        }
        Ok(())
    }
}

fn valid_rate(rate: f64) -> bool {
    rate.is_finite() && (0.0..=MAX_RATE).contains(&rate)
}

/// A running simulation started by [`spawn`]. Dropping it stops the server.
#[derive(Debug)]
pub struct SimHandle {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<(), SimError>>,
}

impl SimHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://{addr}{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Stop the server and wait for it to finish.
    pub async fn shutdown(mut self) -> Result<(), SimError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.task).await {
            Ok(result) => result,
            Err(e) => Err(SimError::Serve(std::io::Error::other(e))),
        }
    }
}

/// Bind `cfg.listen` and serve in a background task.
pub async fn spawn(cfg: SimConfig) -> Result<SimHandle, SimError> {
    cfg.validate()?;
    let (listener, addr) = bind(cfg.listen).await?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(cfg, listener, async move {
        // A dropped handle stops the server too.
        let _ = stopped.await;
    }));
    Ok(SimHandle {
        addr,
        stop: Some(stop),
        task,
    })
}

/// Bind `addr` (the error names it) and say where the listener landed (a
/// port of 0 picks one).
pub(super) async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), SimError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| SimError::Bind { addr, source })?;
    let bound = listener.local_addr().map_err(SimError::Serve)?;
    Ok((listener, bound))
}

/// Serve the simulated tool(s) on `listener` until `shutdown` completes.
/// `cfg.listen` is not used: the listener is already bound.
pub(crate) async fn serve(
    cfg: SimConfig,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), SimError> {
    cfg.validate()?;
    let sim = Arc::new(Sim::new(&cfg)?);
    let ticker = tokio::spawn(tick_forever(Arc::clone(&sim)));
    let result = axum::serve(listener, router(sim))
        .with_graceful_shutdown(shutdown)
        .await;
    ticker.abort();
    result.map_err(SimError::Serve)
}
