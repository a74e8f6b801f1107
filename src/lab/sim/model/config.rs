//! Which model, and its parameters: the kinds, their names and defaults,
//! and the validation of a [`ModelConfig`].
//!
//! Why it exists: the CLI, the bench and the tests all name a model and
//! set its capacity and counting; this file is that vocabulary, apart from
//! how a model answers load ([`super::TargetModel`]).
//!
//! What it may touch: nothing.

use std::fmt;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Attempts per worker per tick, for every model but `noisy`.
pub const DEFAULT_ATTEMPTS_PER_WORKER: f64 = 10.0;
/// Default run length in ticks (5 minutes at 100 ms), for `step` and `warming`.
pub const DEFAULT_RUN_TICKS: u64 = 3_000;
/// `noisy`: attempts per tick at an offer equal to capacity.
const NOISY_ATTEMPTS_AT_CAPACITY: f64 = 1.5;

/// Which target model to simulate. The formulas are in the module docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
#[value(rename_all = "kebab-case")]
pub enum ModelKind {
    /// Fragile: goodput collapses past capacity.
    Cliff,
    /// Robust: the excess over capacity is cleanly rejected.
    Rejector,
    /// Failures rise smoothly (logistic) around capacity.
    Knee,
    /// Capacity halves at 1/3 of the run and recovers at 2/3.
    Step,
    /// Capacity rises linearly to 3x over the run.
    Warming,
    /// Tiny samples and 2 % background failures.
    Noisy,
    /// Failures resolve one tick after the overload that caused them.
    Lagged,
    /// Retries amplify failures; heavy overload degrades capacity for a while.
    Metastable,
    /// Failed attempts are retried and count as load.
    RetryChurn,
    /// Capacity drifts slowly along a sinusoid.
    Drift,
    /// Load-independent failure bursts of 1 to 3 ticks.
    Bursts,
    /// Rejections return 20x faster, so the failure fraction overstates the
    /// overload.
    FastFail,
    /// A queue: latency grows with load, failures stay 0 until the client
    /// timeout.
    Queueing,
}

impl ModelKind {
    /// Every model, in declaration order.
    pub const ALL: [ModelKind; 13] = [
        ModelKind::Cliff,
        ModelKind::Rejector,
        ModelKind::Knee,
        ModelKind::Step,
        ModelKind::Warming,
        ModelKind::Noisy,
        ModelKind::Lagged,
        ModelKind::Metastable,
        ModelKind::RetryChurn,
        ModelKind::Drift,
        ModelKind::Bursts,
        ModelKind::FastFail,
        ModelKind::Queueing,
    ];

    /// The kebab-case name, as on the command line and in serde.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Cliff => "cliff",
            ModelKind::Rejector => "rejector",
            ModelKind::Knee => "knee",
            ModelKind::Step => "step",
            ModelKind::Warming => "warming",
            ModelKind::Noisy => "noisy",
            ModelKind::Lagged => "lagged",
            ModelKind::Metastable => "metastable",
            ModelKind::RetryChurn => "retry-churn",
            ModelKind::Drift => "drift",
            ModelKind::Bursts => "bursts",
            ModelKind::FastFail => "fast-fail",
            ModelKind::Queueing => "queueing",
        }
    }

    /// Whether the model reports a latency per tick (`queueing` only).
    pub fn has_latency(self) -> bool {
        self == ModelKind::Queueing
    }

    /// The default attempts per worker per tick for a target of `capacity`
    /// workers: 10, or `1.5 / capacity` for `noisy` (tiny samples).
    pub fn default_attempts_per_worker(self, capacity: f64) -> f64 {
        match self {
            ModelKind::Noisy if capacity > 0.0 => NOISY_ATTEMPTS_AT_CAPACITY / capacity,
            _ => DEFAULT_ATTEMPTS_PER_WORKER,
        }
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A target model's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    /// Which model.
    pub kind: ModelKind,
    /// Nominal capacity `C`, in workers (finite, > 0).
    pub capacity: f64,
    /// Attempts each worker makes per tick (finite, > 0).
    pub attempts_per_worker: f64,
    /// Background failure probability per attempt, in [0, 1). When > 0,
    /// failures are drawn binomially.
    pub noise: f64,
    /// Seed of the PRNG.
    pub seed: u64,
    /// Run length `T` in ticks (>= 1), for `step`, `warming` and `drift`.
    pub run_ticks: u64,
    /// Draw fresh attempts as `Poisson(w a)` (and failures binomially).
    pub poisson: bool,
    /// `lagged`: ticks a failure takes to resolve (1 or more).
    pub lag_ticks: u32,
}

impl ModelConfig {
    /// A config with the defaults: the kind's attempts per worker, no noise,
    /// seed 1, [`DEFAULT_RUN_TICKS`].
    pub fn new(kind: ModelKind, capacity: f64) -> Self {
        ModelConfig {
            kind,
            capacity,
            attempts_per_worker: kind.default_attempts_per_worker(capacity),
            noise: 0.0,
            seed: 1,
            run_ticks: DEFAULT_RUN_TICKS,
            poisson: false,
            lag_ticks: 1,
        }
    }

    /// Check every field; all problems are reported, not just the first.
    pub fn validate(&self) -> Result<(), Vec<ModelError>> {
        let mut errors = Vec::new();
        if !(self.capacity.is_finite() && self.capacity > 0.0) {
            errors.push(ModelError::Capacity(self.capacity));
        }
        if !(self.attempts_per_worker.is_finite() && self.attempts_per_worker > 0.0) {
            errors.push(ModelError::AttemptsPerWorker(self.attempts_per_worker));
        }
        if !(0.0..1.0).contains(&self.noise) {
            errors.push(ModelError::Noise(self.noise));
        }
        if self.run_ticks == 0 {
            errors.push(ModelError::RunTicks);
        }
        if self.lag_ticks == 0 {
            errors.push(ModelError::LagTicks);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// An invalid [`ModelConfig`] field.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ModelError {
    /// Capacity not finite and positive.
    #[error("`capacity` must be a finite number of workers > 0, e.g. 120 (got {0})")]
    Capacity(f64),
    /// Attempts per worker not finite and positive.
    #[error("`attempts_per_worker` must be a finite number > 0, e.g. 10 (got {0})")]
    AttemptsPerWorker(f64),
    /// Noise outside [0, 1).
    #[error("`noise` must be a failure probability in [0, 1), e.g. 0.01 (got {0})")]
    Noise(f64),
    /// Zero run length.
    #[error("`run_ticks` must be at least 1 (the run length in ticks)")]
    RunTicks,
    /// Zero lag.
    #[error("`lag_ticks` must be at least 1 (ticks a failure takes to resolve)")]
    LagTicks,
}
