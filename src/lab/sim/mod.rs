//! The simulated load tool and target models.
//!
//! Why it exists: the demo, the integration tests and the benchmarks all
//! need a load tool to govern and a target behind it whose capacity is known
//! exactly, so that "the governor settled at the capacity" is a checkable
//! claim and not an impression. Real tools and real targets cannot give that
//! ground truth; this module can, deterministically.
//!
//! - [`model`]: pure, seeded target models (`cliff`, `rejector`, `knee`,
//!   `step`, `warming`, `noisy`, `lagged`, `metastable`, ..., and `queueing`,
//!   the one with a latency), with their formulas in its docs.
//! - [`server`]: an HTTP server that behaves like a load tool: Prometheus
//!   counters on `/metrics`, the concurrency and rate cap on an admin API,
//!   one or many tools per process.
//! - the seeded PRNG behind every random draw is [`crate::rng`], a leaf (the
//!   report's tests draw from it too).
//!
//! What it may touch: nothing else in the crate but [`crate::rng`]. The governor never depends
//! on this module; it reaches the simulation over HTTP like any other tool.
//!
//! The CLI exposes it as `throttle-governor sim` through [`SimArgs`] and
//! [`run`].

pub mod model;
pub mod server;

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use thiserror::Error;

pub use model::{ModelConfig, ModelError, ModelKind, TargetModel, TickResult};
use server::serve;
pub use server::{spawn, SimConfig, SimHandle};

/// Arguments of `throttle-governor sim`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct SimArgs {
    /// The target model (formulas in the `sim::model` docs).
    #[arg(long, value_enum)]
    pub model: ModelKind,
    /// The target's nominal capacity, in workers.
    #[arg(long)]
    pub capacity: f64,
    /// Address to serve `/metrics` and `/admin/...` on.
    #[arg(long, default_value = "127.0.0.1:9100")]
    pub listen: SocketAddr,
    /// Wall time of one model tick, e.g. `100ms`.
    #[arg(long, default_value = "100ms", value_parser = humantime::parse_duration)]
    pub tick: Duration,
    /// Background failure probability per attempt, in [0, 1).
    #[arg(long, default_value_t = 0.0)]
    pub noise: f64,
    /// PRNG seed (tool `i` uses `seed + i`).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Workers at start and after `POST /admin/reset`.
    #[arg(long, default_value_t = 1)]
    pub initial_workers: u64,
    /// Rate cap at start, in attempts per second (default: unbounded).
    #[arg(long)]
    pub rate: Option<f64>,
    /// How many independent tools to serve, under `/t/{i}/...`.
    #[arg(long, default_value_t = 1)]
    pub tools: usize,
    /// Attempts per worker per tick (default: 10; for `noisy`, 1.5 per tick
    /// at capacity).
    #[arg(long)]
    pub attempts_per_worker: Option<f64>,
    /// Run length that `step` and `warming` are scaled to, e.g. `5m`.
    #[arg(long, default_value = "5m", value_parser = humantime::parse_duration)]
    pub run: Duration,
}

impl SimArgs {
    /// The simulation these arguments describe, validated.
    pub fn to_config(&self) -> Result<SimConfig, SimError> {
        if self.tick < server::MIN_TICK {
            return Err(SimError::Tick(self.tick));
        }
        let run_ticks = (self.run.as_nanos() / self.tick.as_nanos()).min(u64::MAX as u128) as u64;
        if run_ticks == 0 {
            return Err(SimError::RunTooShort {
                run: self.run,
                tick: self.tick,
            });
        }
        let mut model = ModelConfig::new(self.model, self.capacity);
        if let Some(apw) = self.attempts_per_worker {
            model.attempts_per_worker = apw;
        }
        model.noise = self.noise;
        model.seed = self.seed;
        model.run_ticks = run_ticks;
        let cfg = SimConfig {
            model,
            tick: self.tick,
            initial_workers: self.initial_workers,
            initial_rate: self.rate,
            listen: self.listen,
            tools: self.tools,
        };
        cfg.validate()?;
        Ok(cfg)
    }
}

/// Why the simulation could not start or stopped.
#[derive(Debug, Error)]
pub enum SimError {
    /// The model config is invalid.
    #[error("invalid target model: {}", join(.0))]
    Model(Vec<ModelError>),
    /// Tick too short.
    #[error("`tick` must be at least 1ms, e.g. 100ms (got {0:?})")]
    Tick(Duration),
    /// Run shorter than one tick.
    #[error("`run` ({run:?}) must last at least one tick ({tick:?})")]
    RunTooShort {
        /// The run length given.
        run: Duration,
        /// The tick length given.
        tick: Duration,
    },
    /// Too many initial workers.
    #[error("`initial_workers` must be at most {max} (got {0})", max = server::MAX_WORKERS)]
    Workers(u64),
    /// Invalid rate cap.
    #[error("`rate` must be attempts per second from 0 to {max} (got {0})", max = server::MAX_RATE)]
    Rate(f64),
    /// Tool count out of range.
    #[error("`tools` must be from 1 to {max} (got {0})", max = server::MAX_TOOLS)]
    Tools(usize),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source} (is the port already in use?)")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP server failed.
    #[error("the simulation's HTTP server failed: {0}")]
    Serve(#[source] std::io::Error),
}

fn join(errors: &[ModelError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Run `throttle-governor sim` until `shutdown` completes.
pub async fn run(
    args: SimArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), SimError> {
    let cfg = args.to_config()?;
    let (listener, addr) = server::bind(cfg.listen).await?;
    tracing::info!(
        %addr,
        model = %cfg.model.kind,
        capacity = cfg.model.capacity,
        tools = cfg.tools,
        tick = ?cfg.tick,
        "Simulated load tool listening"
    );
    serve(cfg, listener, shutdown).await
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn parse(args: &[&str]) -> Result<SimArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("sim").chain(args.iter().copied())).map(|c| c.sim)
    }

    #[test]
    fn defaults() {
        let args = parse(&["--model", "rejector", "--capacity", "120"]).unwrap();
        let cfg = args.to_config().unwrap();
        assert_eq!(cfg.tick, Duration::from_millis(100));
        assert_eq!(cfg.listen, "127.0.0.1:9100".parse().unwrap());
        assert_eq!(cfg.initial_workers, 1);
        assert_eq!(cfg.initial_rate, None);
        assert_eq!(cfg.tools, 1);
        assert_eq!(cfg.model.kind, ModelKind::Rejector);
        assert_eq!(cfg.model.capacity, 120.0);
        assert_eq!(cfg.model.attempts_per_worker, 10.0);
        assert_eq!(cfg.model.noise, 0.0);
        assert_eq!(cfg.model.seed, 1);
        assert_eq!(cfg.model.run_ticks, 3_000);
    }

    #[test]
    fn every_flag() {
        let args = parse(&[
            "--model",
            "metastable",
            "--capacity",
            "50",
            "--listen",
            "127.0.0.1:0",
            "--tick",
            "20ms",
            "--noise",
            "0.01",
            "--seed",
            "9",
            "--initial-workers",
            "4",
            "--rate",
            "300",
            "--tools",
            "10",
            "--attempts-per-worker",
            "2",
            "--run",
            "1m",
        ])
        .unwrap();
        let cfg = args.to_config().unwrap();
        assert_eq!(cfg.tick, Duration::from_millis(20));
        assert_eq!(cfg.model.run_ticks, 3_000);
        assert_eq!(cfg.model.attempts_per_worker, 2.0);
        assert_eq!(cfg.initial_rate, Some(300.0));
        assert_eq!((cfg.tools, cfg.initial_workers, cfg.model.seed), (10, 4, 9));
    }

    #[test]
    fn noisy_defaults_to_tiny_samples() {
        let args = parse(&["--model", "noisy", "--capacity", "120"]).unwrap();
        let cfg = args.to_config().unwrap();
        assert!((cfg.model.attempts_per_worker * 120.0 - 1.5).abs() < 1e-12);
    }

    #[tokio::test]
    async fn run_stops_on_shutdown_and_reports_bind_errors() {
        let args = parse(&[
            "--model",
            "step",
            "--capacity",
            "5",
            "--listen",
            "127.0.0.1:0",
        ])
        .unwrap();
        let done = tokio::time::timeout(Duration::from_secs(10), run(args, async {})).await;
        assert!(matches!(done, Ok(Ok(()))), "{done:?}");

        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap().to_string();
        let args = parse(&["--model", "step", "--capacity", "5", "--listen", &addr]).unwrap();
        let err = run(args, async {}).await.unwrap_err();
        assert!(matches!(err, SimError::Bind { .. }), "{err}");
        assert!(err.to_string().contains("cannot listen"), "{err}");
    }

    #[test]
    fn bad_arguments_are_errors() {
        assert!(parse(&["--model", "nope", "--capacity", "1"]).is_err());
        assert!(parse(&["--capacity", "1"]).is_err());
        assert!(parse(&["--model", "knee", "--capacity", "1", "--tick", "fast"]).is_err());
        let args = parse(&["--model", "knee", "--capacity", "0"]).unwrap();
        let err = args.to_config().unwrap_err();
        assert!(err.to_string().contains("capacity"), "{err}");
        let args = parse(&["--model", "knee", "--capacity", "1", "--run", "1ms"]).unwrap();
        assert!(matches!(
            args.to_config(),
            Err(SimError::RunTooShort { .. })
        ));
        let args = parse(&["--model", "knee", "--capacity", "1", "--tick", "0s"]).unwrap();
        assert!(matches!(args.to_config(), Err(SimError::Tick(_))));
    }
}
