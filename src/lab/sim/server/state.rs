//! The simulation's shared state: every tool, its model and counters, and
//! the ticker that advances them.
//!
//! Why it exists: the HTTP handlers and the background ticker work on the
//! same tools; this file owns that state and its one update rule (a tick),
//! so the handlers only read and set knobs.
//!
//! What it may touch: [`super::super::model`] (the targets) and the tokio
//! clock that paces the ticks.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::error::ApiError;
use super::{SimConfig, LATENCY_BUCKETS};
use crate::lab::sim::model::{TargetModel, TickLatency};
use crate::lab::sim::SimError;

/// Everything the handlers and the ticker share.
#[derive(Debug)]
pub(super) struct Sim {
    pub(super) tools: Vec<Mutex<Tool>>,
    pub(super) tick_secs: f64,
    pub(super) tick: Duration,
    pub(super) initial_workers: u64,
    pub(super) initial_rate: Option<f64>,
}

/// One simulated tool and its target.
#[derive(Debug)]
pub(super) struct Tool {
    pub(super) model: TargetModel,
    pub(super) workers: u64,
    pub(super) rate: Option<f64>,
    pub(super) successes: u64,
    pub(super) failures: u64,
    pub(super) ticks: u64,
    /// `queueing` only: the latency histogram.
    pub(super) latency: Option<Histogram>,
}

/// A cumulative latency histogram in seconds.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Histogram {
    /// `(le, cumulative count)`, the edges of [`LATENCY_BUCKETS`] in seconds.
    pub(super) buckets: Vec<(f64, f64)>,
    /// Observations (the `+Inf` bucket).
    pub(super) count: u64,
    /// Sum of the observed latencies, in seconds.
    pub(super) sum: f64,
}

impl Histogram {
    pub(super) fn new(base_secs: f64) -> Self {
        Histogram {
            buckets: LATENCY_BUCKETS
                .iter()
                .map(|m| (m * base_secs, 0.0))
                .collect(),
            count: 0,
            sum: 0.0,
        }
    }

    pub(super) fn clear(&mut self) {
        for b in &mut self.buckets {
            b.1 = 0.0;
        }
        self.count = 0;
        self.sum = 0.0;
    }

    /// Folds one tick's `attempts`, spread as `latency` (in ticks).
    pub(super) fn observe(&mut self, attempts: u64, latency: &TickLatency, tick_secs: f64) {
        let n = attempts as f64;
        for (le, count) in &mut self.buckets {
            *count += n * latency.share_within(*le / tick_secs);
        }
        self.count = self.count.saturating_add(attempts);
        self.sum += n * latency.observed_mean() * tick_secs;
    }
}

/// A consistent copy of one tool's exported values.
#[derive(Debug, Clone)]
pub(super) struct Snapshot {
    pub(super) successes: u64,
    pub(super) failures: u64,
    pub(super) ticks: u64,
    pub(super) workers: u64,
    pub(super) rate: Option<f64>,
    pub(super) capacity: f64,
    pub(super) latency: Option<Histogram>,
}

impl Sim {
    pub(super) fn new(cfg: &SimConfig) -> Result<Self, SimError> {
        let tools = (0..cfg.tools)
            .map(|i| {
                let mut model = cfg.model.clone();
                model.seed = model.seed.wrapping_add(i as u64);
                let base_secs = cfg.tick.as_secs_f64() / model.attempts_per_worker;
                let latency = model.kind.has_latency().then(|| Histogram::new(base_secs));
                Ok(Mutex::new(Tool {
                    latency,
                    model: TargetModel::new(model).map_err(SimError::Model)?,
                    workers: cfg.initial_workers,
                    rate: cfg.initial_rate,
                    successes: 0,
                    failures: 0,
                    ticks: 0,
                }))
            })
            .collect::<Result<Vec<_>, SimError>>()?;
        Ok(Sim {
            tools,
            tick_secs: cfg.tick.as_secs_f64(),
            tick: cfg.tick,
            initial_workers: cfg.initial_workers,
            initial_rate: cfg.initial_rate,
        })
    }

    /// Tool `i`, or a 404 naming the valid range.
    pub(super) fn tool(&self, i: usize) -> Result<MutexGuard<'_, Tool>, ApiError> {
        match self.tools.get(i) {
            Some(tool) => Ok(lock(tool)),
            None => Err(ApiError::not_found(format!(
                "no tool {i}; tools are numbered 0 to {}",
                self.tools.len() - 1
            ))),
        }
    }

    /// The tool behind the plain paths: the only one.
    pub(super) fn only_tool(&self) -> Result<usize, ApiError> {
        if self.tools.len() == 1 {
            Ok(0)
        } else {
            Err(ApiError::not_found(format!(
                "{} tools are simulated; use /t/{{i}}/admin/... with i from 0 to {}",
                self.tools.len(),
                self.tools.len() - 1
            )))
        }
    }

    /// Advance every tool by one tick.
    pub(super) fn tick_all(&self) {
        for tool in &self.tools {
            lock(tool).tick(self.tick_secs);
        }
    }
}

impl Tool {
    pub(super) fn tick(&mut self, tick_secs: f64) {
        let mut offer = self.workers as f64;
        if let Some(rate) = self.rate {
            offer = offer.min(rate * tick_secs / self.model.config().attempts_per_worker);
        }
        let result = self.model.tick(offer);
        self.successes = self.successes.saturating_add(result.successes());
        self.failures = self.failures.saturating_add(result.failures);
        self.ticks += 1;
        if let (Some(h), Some(l)) = (&mut self.latency, &result.latency) {
            h.observe(result.attempts, l, tick_secs);
        }
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        Snapshot {
            successes: self.successes,
            failures: self.failures,
            ticks: self.ticks,
            workers: self.workers,
            rate: self.rate,
            capacity: self.model.capacity(),
            latency: self.latency.clone(),
        }
    }
}

/// Lock a tool; a poisoned lock (a panicked holder) is still usable, since
/// every update leaves the state consistent.
pub(super) fn lock(tool: &Mutex<Tool>) -> MutexGuard<'_, Tool> {
    tool.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Tick every tool each `sim.tick`, forever (aborted on shutdown).
pub(super) async fn tick_forever(sim: Arc<Sim>) {
    let mut interval = tokio::time::interval(sim.tick);
    // The first tick of an interval completes at once; a model tick is
    // owed only after one full period.
    interval.tick().await;
    loop {
        interval.tick().await;
        sim.tick_all();
    }
}
