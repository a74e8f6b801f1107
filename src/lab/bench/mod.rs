//! `bench`: control quality, measured against known controllers on target
//! models with a known capacity.
//!
//! Why it exists: a governor is judged by how fast it finds capacity and how
//! little failure it causes on the way, and users will ask how it compares
//! with AIMD, CUBIC, Envoy's gradient or a findmax search. The answer has to
//! be a table that anyone can regenerate in one command, not a claim. So
//! this module runs every controller against every model of
//! [`crate::lab::sim::model`], one window at a time, seeded and without HTTP or a
//! clock: the same arguments give the same table, byte for byte.
//!
//! What it may touch: [`crate::governor`] (through [`controllers`]) and the
//! pure models of [`crate::lab::sim::model`]. It does no I/O; the binary prints
//! what [`render_table`] or [`render_json`] return.
//!
//! # One run
//! A run is one (model, controller, seed). The seed fixes the target's
//! nominal capacity `C` (a whole number of workers, uniform in
//! [`CAPACITY_MIN`]..=[`CAPACITY_MAX`]) and seeds the model's PRNG. One
//! window of the bench is one model tick: each window the controller's offer
//! (rounded down to whole workers) meets [`TargetModel::tick`], and the
//! controller then sees that window's resolved attempts and failures. The
//! models run with their documented defaults (10 attempts per worker per
//! window, no extra background noise), `run_ticks` equal to the number of
//! windows (so `step` halves at 1/3 and recovers at 2/3, `warming` reaches
//! 3 C at the end, and `drift` makes one sinusoid period per run), and with
//! Poisson attempts and binomial failures on every model (`poisson`), as a
//! real load tool's windows vary. `noisy` gets `30 / C` attempts per worker:
//! about 30 attempts per window at capacity, as a 2 s window of the live
//! simulation resolves. `lagged` resolves failures 1 window late on odd
//! seeds and 2 on even ones ([`lag_of`]). Every controller shares the governor's parameters: concurrency,
//! floor 1, opening offer 1, ceiling [`CEILING`], high 5 %, low 1 %.
//!
//! `queueing` is the one model with a latency: it answers every attempt,
//! later and later past capacity, and fails only when the client times out
//! (at `2.76 C` for 5 %). There the governor runs twice per profile: with
//! failures only (`governor`, `governor-robust`: the latency bound off) and
//! with the latency bound on (`governor-latency`,
//! `governor-robust-latency`, through `step_with_latency`): the window's
//! p99 at most [`LATENCY_BOUND`] base latencies. One bench window is one
//! tick, so the window's p99 is the tick's, exactly
//! ([`crate::lab::sim::model::TickLatency::quantile`]), in base latencies. The
//! bound is met up to the *latency capacity* `2.5 / 1.49 C = 1.678 C`
//! ([`latency_capacity`]); the latency metrics and goals ([`latency_goals`])
//! compare the steady offer with it. The other controllers see failures
//! only, and the `-latency` governors run on no other model.
//!
//! `--family noise` runs a grid of models instead ([`Family`]): the same
//! sim models with the bench's choice of attempts per window at capacity
//! and background failures ([`BenchModel`]), and prints who wins on each
//! ([`render_family`]). The default models are `BenchModel`s with the
//! defaults above, named as before, so the default tables do not change.
//!
//! The metrics are defined in [`metrics`]; the controllers in
//! [`controllers`]. `--trace SEED` prints every window of that seed's runs
//! instead ([`render_trace`]), to see which rule caused a number.

pub mod controllers;
mod family;
mod goals;
pub mod metrics;
mod render;
#[cfg(test)]
mod tests;

use clap::{Args, ValueEnum};
use thiserror::Error;

use crate::governor::{Control, Params, Profile};
use crate::lab::sim::model::{self, ModelConfig, ModelKind, TargetModel};
use crate::rng::SplitMix64;

pub use controllers::{
    Controller, ControllerKind, LatencyBound, WindowResult, LATENCY_BOUND, LATENCY_QUANTILE,
};
pub use family::{
    render_family, winners, BenchModel, Family, NOISE_ATTEMPTS, NOISE_BACKGROUNDS,
    NOISE_EVENT_ATTEMPTS, NOISE_MOVING,
};
pub use goals::{
    goals, latency_goals, Goal, LatencyGoal, GOAL_GOODPUT, GOAL_LATENCY_BAND, GOAL_OVER_BOUND,
    GOAL_SLACK,
};
pub use metrics::{RunMetrics, Summary, Trace};
pub use render::{render_json, render_table, render_trace, JsonRow, TraceRow};

/// Smallest nominal capacity a seed draws, in workers.
pub const CAPACITY_MIN: u64 = 50;
/// Largest nominal capacity a seed draws, in workers.
pub const CAPACITY_MAX: u64 = 200;
/// The authored concurrency (ceiling) of every run.
pub const CEILING: f64 = 1000.0;
/// The declared failure bound of every run.
pub const HIGH: f64 = 0.05;
/// Attempts per window at capacity for `noisy`.
pub const NOISY_ATTEMPTS_AT_CAPACITY: f64 = 30.0;
/// Fewest windows a run may have (the tail metrics look at 40).
pub const MIN_WINDOWS: usize = 60;
/// The output format of `bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum BenchFormat {
    /// Markdown tables (paste into docs/BENCHMARKS.md as they are).
    #[default]
    Table,
    /// A JSON array, one object per (model, controller).
    Json,
}

/// The arguments of `throttle-governor bench`.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct BenchArgs {
    /// Target models, comma-separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "MODEL")]
    pub models: Vec<ModelKind>,
    /// Instead of the models, a family of them (`noise`: attempts per
    /// window from 10 to 10,000 x background failures from 0 to 3 %, with
    /// bursts, lagged counters and capacities that move under a
    /// background), and its table of who wins where.
    #[arg(long, value_enum, conflicts_with = "models")]
    pub family: Option<Family>,
    /// Controllers, comma-separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CONTROLLER")]
    pub controllers: Vec<ControllerKind>,
    /// Seeds per (model, controller); seed i is 1..=N.
    #[arg(long, default_value_t = 30, value_name = "N")]
    pub seeds: u64,
    /// Windows per run (one window is one model tick).
    #[arg(long, default_value_t = 600, value_name = "N")]
    pub windows: usize,
    /// How to print the results.
    #[arg(long, value_enum, default_value_t = BenchFormat::Table)]
    pub format: BenchFormat,
    /// Keep only the governor of this profile (`governor` for seed,
    /// `governor-robust` for robust, `governor-gentle` for gentle)
    /// [default: all three].
    #[arg(long, value_enum)]
    pub profile: Option<Profile>,
    /// Instead of the metrics, print every window of this seed's runs as
    /// JSON Lines (model, controller, window, capacity, offer, attempts,
    /// failures; for a governor also its decision, the rule behind it in
    /// the report's words, and last_bad): to see which rule caused a
    /// number.
    #[arg(long, value_name = "SEED")]
    pub trace: Option<u64>,
}

impl Default for BenchArgs {
    /// The same defaults as the command line.
    fn default() -> Self {
        BenchArgs {
            models: Vec::new(),
            family: None,
            controllers: Vec::new(),
            seeds: 30,
            windows: 600,
            format: BenchFormat::Table,
            profile: None,
            trace: None,
        }
    }
}

/// Why a bench cannot run.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum BenchError {
    /// `--seeds 0`.
    #[error("--seeds must be at least 1 (30 or more for the published table)")]
    NoSeeds,
    /// Too few windows for the tail metrics.
    #[error(
        "--windows must be at least {MIN_WINDOWS} (the tail metrics look at the last 40), got {0}"
    )]
    TooFewWindows(usize),
}

/// A validated bench: what to run.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchPlan {
    /// Models, in table order.
    pub models: Vec<BenchModel>,
    /// The family the models are, if any (its own tables).
    pub family: Option<Family>,
    /// Controllers, in table order.
    pub controllers: Vec<ControllerKind>,
    /// Seeds 1..=seeds.
    pub seeds: u64,
    /// Windows per run.
    pub windows: usize,
    /// Whether the governors keep the live capacity estimate (the
    /// `to_figure` metric): on for the command, off where only the goals
    /// are read (it costs about 8 µs a governor window).
    pub figures: bool,
}

impl BenchArgs {
    /// Validates the arguments into a plan.
    pub fn plan(&self) -> Result<BenchPlan, BenchError> {
        if self.seeds == 0 {
            return Err(BenchError::NoSeeds);
        }
        if self.windows < MIN_WINDOWS {
            return Err(BenchError::TooFewWindows(self.windows));
        }
        let mut models: Vec<BenchModel> = match self.family {
            Some(family) => family.models(),
            None if self.models.is_empty() => ModelKind::ALL.map(BenchModel::from).to_vec(),
            None => self.models.iter().map(|&m| m.into()).collect(),
        };
        models.dedup();
        let mut controllers = if self.controllers.is_empty() {
            ControllerKind::ALL.to_vec()
        } else {
            self.controllers.clone()
        };
        controllers.sort();
        controllers.dedup();
        if let Some(profile) = self.profile {
            // Per latency bound (off, on): the governors of other profiles
            // give way to this profile's, which runs if any governor did.
            for latency in [false, true] {
                let keep = ControllerKind::governor(profile, latency);
                let is_rival = |c: &ControllerKind| {
                    c.profile().is_some() && c.needs_latency() == latency && *c != keep
                };
                let had_governor = controllers
                    .iter()
                    .any(|c| c.profile().is_some() && c.needs_latency() == latency);
                controllers.retain(|c| !is_rival(c));
                if had_governor && !controllers.contains(&keep) {
                    controllers.push(keep);
                    controllers.sort();
                }
            }
        }
        Ok(BenchPlan {
            models,
            family: self.family,
            controllers,
            seeds: self.seeds,
            windows: self.windows,
            figures: true,
        })
    }
}

/// The governor parameters every run shares.
pub(crate) fn params() -> Params {
    // Constant, valid parameters: this cannot fail.
    Params::new(Control::Concurrency, Some(CEILING), 1.0, None, HIGH, None)
        .expect("the bench's parameters are valid")
}

/// The nominal capacity that `seed` draws.
pub(crate) fn capacity_of(seed: u64) -> f64 {
    let mut rng = SplitMix64::new(seed ^ 0xB5AD_4ECE_DA1C_E2A9);
    let span = CAPACITY_MAX - CAPACITY_MIN + 1;
    (CAPACITY_MIN + rng.next_u64() % span) as f64
}

/// The model of one run.
pub(crate) fn model_config(model: impl Into<BenchModel>, seed: u64, windows: usize) -> ModelConfig {
    let model = model.into();
    let kind = model.kind;
    let capacity = model.capacity.unwrap_or_else(|| capacity_of(seed));
    let mut cfg = ModelConfig::new(kind, capacity);
    match model.attempts {
        Some(n) => cfg.attempts_per_worker = n / capacity,
        None if kind == ModelKind::Noisy => {
            cfg.attempts_per_worker = NOISY_ATTEMPTS_AT_CAPACITY / capacity;
        }
        None => {}
    }
    cfg.noise = model.background;
    cfg.seed = seed;
    cfg.run_ticks = windows as u64;
    cfg.poisson = true;
    if kind == ModelKind::Lagged {
        cfg.lag_ticks = lag_of(seed);
    }
    cfg
}

/// The `lagged` model's lag for `seed`: 1 window for odd seeds, 2 for even.
pub fn lag_of(seed: u64) -> u32 {
    1 + (seed % 2 == 0) as u32
}

/// The latency capacity of a run's model, in workers: the highest offer
/// whose p99 meets [`LATENCY_BOUND`] (`None` for models without a latency).
pub fn latency_capacity(cfg: &ModelConfig) -> Option<f64> {
    if !cfg.kind.has_latency() {
        return None;
    }
    // In base latencies: base = 1.
    model::latency_capacity(cfg.capacity, 1.0, LATENCY_QUANTILE, LATENCY_BOUND)
}

/// Runs one controller against one model for `windows` windows.
pub(crate) fn simulate(controller: &mut dyn Controller, cfg: ModelConfig, windows: usize) -> Trace {
    let has_latency = cfg.kind.has_latency();
    let mut trace = Trace {
        offers: Vec::with_capacity(windows),
        capacity: Vec::with_capacity(windows),
        attempts: Vec::with_capacity(windows),
        failures: Vec::with_capacity(windows),
        memory_clears: None,
        latency: Vec::with_capacity(if has_latency { windows } else { 0 }),
        latency_bound: has_latency.then_some(LATENCY_BOUND),
        latency_capacity: latency_capacity(&cfg),
        high: HIGH,
        background: 0.0,
        figures: controller
            .capacity_figure()
            .map(|_| Vec::with_capacity(windows)),
        figures_of_latency: controller.reads_latency(),
        claim: None,
        steps: Vec::with_capacity(windows),
    };
    // The bench builds only valid configs.
    let mut model = TargetModel::new(cfg).expect("the bench's model configs are valid");
    trace.background = model.background();
    for _ in 0..windows {
        let capacity = model.capacity();
        let offer = controller.offer(capacity).floor();
        let r = model.tick(offer);
        // One window is one tick: the window's p99 is the tick's, in base
        // latencies.
        let latency = r
            .latency
            .map(|l| l.quantile(LATENCY_QUANTILE) / l.base)
            .filter(|_| r.attempts > 0);
        trace.offers.push(offer);
        trace.capacity.push(r.capacity);
        trace.attempts.push(r.attempts);
        trace.failures.push(r.failures);
        if has_latency {
            trace.latency.push(latency);
        }
        controller.observe(WindowResult {
            attempts: r.attempts,
            failures: r.failures,
            latency,
        });
        trace.steps.push(controller.last_step());
        if let (Some(figures), Some(figure)) =
            (trace.figures.as_mut(), controller.capacity_figure())
        {
            figures.push(figure);
        }
    }
    trace.memory_clears = controller.memory_clears();
    trace.claim = controller.capacity_claim();
    trace
}

/// One (model, controller) row: every metric's median and p90 over seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The model.
    pub model: BenchModel,
    /// The controller.
    pub controller: ControllerKind,
    /// How many seeds.
    pub seeds: u64,
    /// Per-seed metrics, in seed order.
    pub runs: Vec<RunMetrics>,
}

impl Row {
    fn summary(&self, f: impl Fn(&RunMetrics) -> Option<f64>) -> Summary {
        let v: Vec<Option<f64>> = self.runs.iter().map(f).collect();
        metrics::summarize(&v)
    }

    /// `converge` over seeds.
    pub fn converge(&self) -> Summary {
        self.summary(|m| m.converge)
    }
    /// `failed` over seeds.
    pub fn failed(&self) -> Summary {
        self.summary(|m| Some(m.failed))
    }
    /// `unexplained` over seeds.
    pub fn unexplained(&self) -> Summary {
        self.summary(|m| Some(m.unexplained))
    }
    /// `excess` over seeds.
    pub fn excess(&self) -> Summary {
        self.summary(|m| Some(m.excess))
    }
    /// `goodput` over seeds.
    pub fn goodput(&self) -> Summary {
        self.summary(|m| Some(m.goodput))
    }
    /// `cv` over seeds.
    pub fn cv(&self) -> Summary {
        self.summary(|m| Some(m.cv))
    }
    /// `reversals` over seeds.
    pub fn reversals(&self) -> Summary {
        self.summary(|m| Some(m.reversals))
    }
    /// `downs` over seeds.
    pub fn downs(&self) -> Summary {
        self.summary(|m| Some(m.downs))
    }
    /// `false_downs` over seeds.
    pub fn false_downs(&self) -> Summary {
        self.summary(|m| Some(m.false_downs))
    }
    /// Memory clears over seeds (governors only).
    pub fn memory_clears(&self) -> Summary {
        self.summary(|m| m.memory_clears)
    }
    /// `over_bound` over seeds (models with a latency).
    pub fn over_bound(&self) -> Summary {
        self.summary(|m| m.over_bound)
    }
    /// `latency_ratio` over seeds (models with a latency).
    pub fn latency_ratio(&self) -> Summary {
        self.summary(|m| m.latency_ratio)
    }
    /// `to_figure` over seeds (`None` for a controller without an
    /// estimate).
    pub fn to_figure(&self) -> Option<Summary> {
        self.figure_times().map(|v| metrics::summarize(&v))
    }
    /// The share of runs whose `to_figure` is never (`None` for a
    /// controller without an estimate).
    pub fn never_figure(&self) -> Option<f64> {
        self.figure_times()
            .map(|v| v.iter().filter(|t| t.is_none()).count() as f64 / v.len() as f64)
    }
    /// Every run's `to_figure`, when the controller kept an estimate.
    fn figure_times(&self) -> Option<Vec<Option<f64>>> {
        let v: Option<Vec<Option<f64>>> = self.runs.iter().map(|m| m.to_figure).collect();
        v.filter(|v| !v.is_empty())
    }
    /// `touches` over seeds.
    pub fn touches(&self) -> Summary {
        self.summary(|m| Some(m.touches))
    }
    /// How many seeds `stalled`.
    pub fn stalled_seeds(&self) -> usize {
        self.runs.iter().filter(|m| m.stalled > 0.0).count()
    }
    /// How many seeds ended on a `wrong_figure` (`None` for a controller
    /// without an estimate).
    pub fn wrong_figures(&self) -> Option<usize> {
        let v: Option<Vec<f64>> = self.runs.iter().map(|m| m.wrong_figure).collect();
        v.filter(|v| !v.is_empty())
            .map(|v| v.iter().filter(|&&w| w > 0.0).count())
    }

    /// `failed_per_touch` over seeds.
    pub fn failed_per_touch(&self) -> Summary {
        self.summary(|m| Some(m.failed_per_touch))
    }
}

/// The whole bench.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// What ran.
    pub plan: BenchPlan,
    /// One row per (model, controller), models outermost.
    pub rows: Vec<Row>,
}

/// Runs the plan. Deterministic: the same plan gives the same report.
pub fn run(plan: &BenchPlan) -> Report {
    let p = params();
    let mut rows = Vec::new();
    for &model in &plan.models {
        // The `-latency` governors run only where there is a latency.
        let mut per_controller: Vec<Row> = plan
            .controllers
            .iter()
            .filter(|c| !c.needs_latency() || model.has_latency())
            .map(|&controller| Row {
                model,
                controller,
                seeds: plan.seeds,
                runs: Vec::with_capacity(plan.seeds as usize),
            })
            .collect();
        for seed in 1..=plan.seeds {
            let cfg = model_config(model, seed, plan.windows);
            let mut oracle = ControllerKind::Oracle.build(&p);
            let oracle_trace = simulate(oracle.as_mut(), cfg.clone(), plan.windows);
            for row in &mut per_controller {
                let trace = if row.controller == ControllerKind::Oracle {
                    oracle_trace.clone()
                } else {
                    let mut c = row.controller.build(&p);
                    if plan.figures {
                        c.keep_figures();
                    }
                    simulate(c.as_mut(), cfg.clone(), plan.windows)
                };
                row.runs.push(metrics::measure(&trace, &oracle_trace));
            }
        }
        rows.extend(per_controller);
    }
    Report {
        plan: plan.clone(),
        rows,
    }
}
