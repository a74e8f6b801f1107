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
//! The metrics are defined in [`metrics`]; the controllers in
//! [`controllers`]. `--trace SEED` prints every window of that seed's runs
//! instead ([`render_trace`]), to see which rule caused a number.

pub mod controllers;
pub mod metrics;

use std::fmt::Write as _;

use clap::{Args, ValueEnum};
use serde::Serialize;
use thiserror::Error;

use crate::governor::{Control, Params, Profile};
use crate::lab::sim::model::{self, ModelConfig, ModelKind, TargetModel};
use crate::lab::sim::rng::SplitMix64;

pub use controllers::{
    Controller, ControllerKind, LatencyBound, WindowResult, LATENCY_BOUND, LATENCY_QUANTILE,
};
pub use metrics::{RunMetrics, Summary, Trace};

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
/// The goodput share of the oracle's that counts as reaching capacity.
pub const GOAL_GOODPUT: f64 = 0.90;
/// How much lower than the seed's the robust profile's goodput may be,
/// on any model (robust's goal only).
pub const GOAL_SLACK: f64 = 0.02;
/// With the latency bound on, the steady offer stays within this share of
/// the latency capacity.
pub const GOAL_LATENCY_BAND: f64 = 0.20;
/// With the latency bound on, at most this share of windows is over it.
pub const GOAL_OVER_BOUND: f64 = 0.05;

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
    /// failures): to see which rule caused a number.
    #[arg(long, value_name = "SEED")]
    pub trace: Option<u64>,
}

impl Default for BenchArgs {
    /// The same defaults as the command line.
    fn default() -> Self {
        BenchArgs {
            models: Vec::new(),
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
    pub models: Vec<ModelKind>,
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
        let mut models = if self.models.is_empty() {
            ModelKind::ALL.to_vec()
        } else {
            self.models.clone()
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
            controllers,
            seeds: self.seeds,
            windows: self.windows,
            figures: true,
        })
    }
}

/// The governor parameters every run shares.
pub fn params() -> Params {
    // Constant, valid parameters: this cannot fail.
    Params::new(Control::Concurrency, Some(CEILING), 1.0, None, HIGH, None)
        .expect("the bench's parameters are valid")
}

/// The nominal capacity that `seed` draws.
pub fn capacity_of(seed: u64) -> f64 {
    let mut rng = SplitMix64::new(seed ^ 0xB5AD_4ECE_DA1C_E2A9);
    let span = CAPACITY_MAX - CAPACITY_MIN + 1;
    (CAPACITY_MIN + rng.next_u64() % span) as f64
}

/// The model of one run.
pub fn model_config(kind: ModelKind, seed: u64, windows: usize) -> ModelConfig {
    let capacity = capacity_of(seed);
    let mut cfg = ModelConfig::new(kind, capacity);
    if kind == ModelKind::Noisy {
        cfg.attempts_per_worker = NOISY_ATTEMPTS_AT_CAPACITY / capacity;
    }
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
pub fn simulate(controller: &mut dyn Controller, cfg: ModelConfig, windows: usize) -> Trace {
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
        figures: controller
            .capacity_figure()
            .map(|_| Vec::with_capacity(windows)),
        figures_of_latency: controller.reads_latency(),
    };
    // The bench builds only valid configs.
    let mut model = TargetModel::new(cfg).expect("the bench's model configs are valid");
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
        if let (Some(figures), Some(figure)) =
            (trace.figures.as_mut(), controller.capacity_figure())
        {
            figures.push(figure);
        }
    }
    trace.memory_clears = controller.memory_clears();
    trace
}

/// One (model, controller) row: every metric's median and p90 over seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The model.
    pub model: ModelKind,
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

/// One window of a `--trace` run.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRow {
    /// The model.
    pub model: ModelKind,
    /// The controller.
    pub controller: ControllerKind,
    /// The window index, from 0.
    pub window: usize,
    /// The true capacity, in workers.
    pub capacity: f64,
    /// The whole workers offered.
    pub offer: f64,
    /// Resolved attempts.
    pub attempts: u64,
    /// Failed attempts.
    pub failures: u64,
    /// The window's p99 in base latencies (models with a latency only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<f64>,
}

/// Every window of `seed`'s runs in the plan, as JSON Lines.
pub fn render_trace(plan: &BenchPlan, seed: u64) -> String {
    let p = params();
    let mut out = String::new();
    for &model in &plan.models {
        for &controller in &plan.controllers {
            if controller.needs_latency() && !model.has_latency() {
                continue;
            }
            let cfg = model_config(model, seed, plan.windows);
            let mut c = controller.build(&p);
            let t = simulate(c.as_mut(), cfg, plan.windows);
            for window in 0..t.offers.len() {
                let row = TraceRow {
                    model,
                    controller,
                    window,
                    capacity: t.capacity[window],
                    offer: t.offers[window],
                    attempts: t.attempts[window],
                    failures: t.failures[window],
                    latency: t.latency.get(window).copied().flatten(),
                };
                // Numbers and strings only: serialization cannot fail.
                out.push_str(&serde_json::to_string(&row).expect("a trace row serializes"));
                out.push('\n');
            }
        }
    }
    out
}

/// One JSON object of [`render_json`].
#[derive(Debug, Clone, Serialize)]
pub struct JsonRow {
    /// The model.
    pub model: ModelKind,
    /// The controller.
    pub controller: ControllerKind,
    /// Seeds per row.
    pub seeds: u64,
    /// Windows per run.
    pub windows: usize,
    /// `converge` median; `null` when the median run never converged.
    pub converge_median: Option<f64>,
    /// `converge` p90; `null` for never.
    pub converge_p90: Option<f64>,
    /// `failed` median.
    pub failed_median: Option<f64>,
    /// `failed` p90.
    pub failed_p90: Option<f64>,
    /// `excess` median.
    pub excess_median: Option<f64>,
    /// `excess` p90.
    pub excess_p90: Option<f64>,
    /// `goodput` median.
    pub goodput_median: Option<f64>,
    /// `goodput` p90.
    pub goodput_p90: Option<f64>,
    /// `cv` median.
    pub cv_median: Option<f64>,
    /// `cv` p90.
    pub cv_p90: Option<f64>,
    /// `reversals` median.
    pub reversals_median: Option<f64>,
    /// `reversals` p90.
    pub reversals_p90: Option<f64>,
    /// `downs` median.
    pub downs_median: Option<f64>,
    /// `downs` p90.
    pub downs_p90: Option<f64>,
    /// `false_downs` median.
    pub false_downs_median: Option<f64>,
    /// `false_downs` p90.
    pub false_downs_p90: Option<f64>,
    /// Memory clears median (governors only).
    pub memory_clears_median: Option<f64>,
    /// Memory clears p90 (governors only).
    pub memory_clears_p90: Option<f64>,
    /// `over_bound` median (models with a latency only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_bound_median: Option<f64>,
    /// `over_bound` p90 (models with a latency only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub over_bound_p90: Option<f64>,
    /// `latency_ratio` median (models with a latency only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ratio_median: Option<f64>,
    /// `latency_ratio` p90 (models with a latency only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ratio_p90: Option<f64>,
    /// `touches` median.
    pub touches_median: Option<f64>,
    /// `touches` p90.
    pub touches_p90: Option<f64>,
    /// `failed_per_touch` median.
    pub failed_per_touch_median: Option<f64>,
    /// `failed_per_touch` p90.
    pub failed_per_touch_p90: Option<f64>,
    /// `to_figure` median (governors only; `null` for never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_figure_median: Option<Option<f64>>,
    /// `to_figure` p90 (governors only; `null` for never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_figure_p90: Option<Option<f64>>,
    /// The share of runs whose `to_figure` is never (governors only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to_figure_never: Option<f64>,
}

impl JsonRow {
    fn of(row: &Row, windows: usize) -> Self {
        let (c, f, e, g, v, r, d, fd, mc) = (
            row.converge(),
            row.failed(),
            row.excess(),
            row.goodput(),
            row.cv(),
            row.reversals(),
            row.downs(),
            row.false_downs(),
            row.memory_clears(),
        );
        JsonRow {
            model: row.model,
            controller: row.controller,
            seeds: row.seeds,
            windows,
            converge_median: c.median,
            converge_p90: c.p90,
            failed_median: f.median,
            failed_p90: f.p90,
            excess_median: e.median,
            excess_p90: e.p90,
            goodput_median: g.median.map(round4),
            goodput_p90: g.p90.map(round4),
            cv_median: v.median.map(round4),
            cv_p90: v.p90.map(round4),
            reversals_median: r.median,
            reversals_p90: r.p90,
            downs_median: d.median,
            downs_p90: d.p90,
            false_downs_median: fd.median,
            false_downs_p90: fd.p90,
            memory_clears_median: mc.median,
            memory_clears_p90: mc.p90,
            over_bound_median: row.over_bound().median.map(round4),
            over_bound_p90: row.over_bound().p90.map(round4),
            latency_ratio_median: row.latency_ratio().median.map(round4),
            latency_ratio_p90: row.latency_ratio().p90.map(round4),
            touches_median: row.touches().median,
            touches_p90: row.touches().p90,
            failed_per_touch_median: row.failed_per_touch().median.map(round4),
            failed_per_touch_p90: row.failed_per_touch().p90.map(round4),
            to_figure_median: row.to_figure().map(|s| s.median),
            to_figure_p90: row.to_figure().map(|s| s.p90),
            to_figure_never: row.never_figure().map(round4),
        }
    }
}

fn round4(x: f64) -> f64 {
    (x * 1e4).round() / 1e4
}

/// A JSON array with one object per (model, controller), one per line.
pub fn render_json(report: &Report) -> String {
    let mut out = String::from("[\n");
    for (i, row) in report.rows.iter().enumerate() {
        let obj = JsonRow::of(row, report.plan.windows);
        // Numbers, strings and nulls only: serialization cannot fail.
        let text = serde_json::to_string(&obj).expect("a bench row serializes");
        out.push_str(&text);
        out.push_str(if i + 1 < report.rows.len() {
            ",\n"
        } else {
            "\n"
        });
    }
    out.push_str("]\n");
    out
}

fn num(x: Option<f64>, decimals: usize) -> String {
    match x {
        None => "never".to_owned(),
        Some(v) => format!("{v:.decimals$}"),
    }
}

fn pair(s: Summary, decimals: usize) -> String {
    format!("{} / {}", num(s.median, decimals), num(s.p90, decimals))
}

/// Markdown tables: the metrics, the governors' diagnostics, and the robust
/// profile's goals (when both governors ran).
pub fn render_table(report: &Report) -> String {
    let mut out = String::new();
    let plan = &report.plan;
    let _ = writeln!(
        out,
        "Control quality: median / p90 over {} seeds, {} windows per run.\n",
        plan.seeds, plan.windows
    );
    let header = [
        "model",
        "controller",
        "converge",
        "failed",
        "excess",
        "goodput",
        "cv",
        "reversals",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for row in &report.rows {
        rows.push(vec![
            row.model.to_string(),
            row.controller.to_string(),
            pair(row.converge(), 0),
            pair(row.failed(), 0),
            pair(row.excess(), 0),
            pair(row.goodput(), 3),
            pair(row.cv(), 3),
            pair(row.reversals(), 0),
        ]);
    }
    markdown(&mut out, &header, &rows);

    out.push_str("\nBack-offs: median / p90 (a false down had no overload in its window or the one before).\n\n");
    let header = [
        "model",
        "controller",
        "downs",
        "false downs",
        "memory clears",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    for row in &report.rows {
        if !(row.controller.is_governor() || row.controller == ControllerKind::Aimd) {
            continue;
        }
        let clears = row.memory_clears();
        rows.push(vec![
            row.model.to_string(),
            row.controller.to_string(),
            pair(row.downs(), 0),
            pair(row.false_downs(), 0),
            if clears.median.is_some() {
                pair(clears, 0)
            } else {
                "-".to_owned()
            },
        ]);
    }
    if !rows.is_empty() {
        markdown(&mut out, &header, &rows);
    }

    render_touches(&mut out, report);
    for profile in [Profile::Robust, Profile::Gentle] {
        render_goals(&mut out, &goals_of(report, profile), profile);
    }
    render_latency(&mut out, report);
    out
}

/// The wall touches and the time to a capacity figure, in [`render_table`].
fn render_touches(out: &mut String, report: &Report) {
    out.push_str(
        "\nWall touches (runs of windows over high) and the live capacity figure: median / p90; \
         to figure: windows until the figure is within ±10 % of the true capacity for good \
         (governors only), never: the share of runs where that never happens.\n\n",
    );
    let header = [
        "model",
        "controller",
        "touches",
        "failed / touch",
        "to figure",
        "never",
    ];
    let rows: Vec<Vec<String>> = report
        .rows
        .iter()
        .map(|row| {
            vec![
                row.model.to_string(),
                row.controller.to_string(),
                pair(row.touches(), 0),
                pair(row.failed_per_touch(), 0),
                row.to_figure().map_or("-".to_owned(), |s| pair(s, 0)),
                row.never_figure()
                    .map_or("-".to_owned(), |n| format!("{:.0} %", n * 100.0)),
            ]
        })
        .collect();
    markdown(out, &header, &rows);
}

/// One profile's goal table in [`render_table`], when its governor ran.
fn render_goals(out: &mut String, goals: &[Goal], profile: Profile) {
    if goals.is_empty() {
        return;
    }
    let slack = if profile == Profile::Robust {
        "; goodput at most 2 % below the seed's"
    } else {
        ""
    };
    let _ = write!(
        out,
        "\nThe {profile} profile's goals (medians; fewest failures is among the non-oracle \
         controllers with goodput >= 0.90{slack}):\n\n"
    );
    let own_goodput = format!("{profile} goodput");
    let own_failed = format!("{profile} failed");
    let header = [
        "model",
        own_goodput.as_str(),
        ">= 0.90",
        own_failed.as_str(),
        "fewest failed (>= 0.90)",
        "fewest",
        "vs seed: goodput, failed",
        "within 2 %",
        "goal met",
    ];
    let rows: Vec<Vec<String>> = goals
        .iter()
        .map(|g| {
            vec![
                g.model.to_string(),
                format!("{:.3}", g.goodput),
                yes_no(g.reaches_goodput),
                format!("{:.0}", g.failed),
                g.fewest_failed
                    .map_or("-".to_owned(), |(c, f)| format!("{c} {f:.0}")),
                yes_no(g.has_fewest_failed),
                g.vs_seed.map_or("-".to_owned(), |(gp, f)| {
                    format!("{:+.1} %, {:+.1} %", gp * 100.0, f * 100.0)
                }),
                g.within_slack.map_or("-".to_owned(), yes_no),
                yes_no(g.met),
            ]
        })
        .collect();
    markdown(out, &header, &rows);
}

/// The latency section of [`render_table`], when a model with a latency ran.
fn render_latency(out: &mut String, report: &Report) {
    let rows: Vec<&Row> = report
        .rows
        .iter()
        .filter(|r| r.model.has_latency())
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "\nThe latency bound: p{:.0} <= {LATENCY_BOUND} base latencies, met up to the latency \
         capacity (1.678 C on queueing). Only the -latency governors see the latency; every \
         other controller sees failures only. Medians / p90; over bound: the share of windows \
         whose p99 is over the bound; steady / capacity: the median offer of the last 40 \
         windows over the latency capacity.\n\n",
        LATENCY_QUANTILE * 100.0
    );
    let header = [
        "model",
        "controller",
        "latency bound",
        "goodput",
        "failed",
        "over bound",
        "steady / capacity",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.model.to_string(),
                r.controller.to_string(),
                if r.controller.needs_latency() {
                    "on"
                } else {
                    "off"
                }
                .to_owned(),
                pair(r.goodput(), 3),
                pair(r.failed(), 0),
                pair(r.over_bound(), 3),
                pair(r.latency_ratio(), 3),
            ]
        })
        .collect();
    markdown(out, &header, &cells);
    let goals = latency_goals(report);
    if goals.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "\nThe latency bound's goals (medians): the steady offer within ±{:.0} % of the \
         latency capacity, and at most {:.0} % of windows over the bound.\n\n",
        GOAL_LATENCY_BAND * 100.0,
        GOAL_OVER_BOUND * 100.0
    );
    let header = [
        "model",
        "controller",
        "steady / capacity",
        "within ±20 %",
        "over bound",
        "<= 5 %",
        "goal met",
    ];
    let cells: Vec<Vec<String>> = goals
        .iter()
        .map(|g| {
            vec![
                g.model.to_string(),
                g.controller.to_string(),
                format!("{:.3}", g.latency_ratio),
                yes_no(g.settles),
                format!("{:.3}", g.over_bound),
                yes_no(g.few_over),
                yes_no(g.met),
            ]
        })
        .collect();
    markdown(out, &header, &cells);
}

/// The latency bound's goal for one `-latency` governor on one model with a
/// latency, from the medians.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyGoal {
    /// The model.
    pub model: ModelKind,
    /// The governor (`governor-latency` or `governor-robust-latency`).
    pub controller: ControllerKind,
    /// Median steady offer over the latency capacity.
    pub latency_ratio: f64,
    /// Whether it is within ±[`GOAL_LATENCY_BAND`] of 1.
    pub settles: bool,
    /// Median share of windows over the bound.
    pub over_bound: f64,
    /// Whether that is at most [`GOAL_OVER_BOUND`].
    pub few_over: bool,
    /// Both.
    pub met: bool,
}

/// The latency goal per (model with a latency, `-latency` governor) row.
pub fn latency_goals(report: &Report) -> Vec<LatencyGoal> {
    report
        .rows
        .iter()
        .filter(|r| r.model.has_latency() && r.controller.needs_latency())
        .map(|r| {
            let latency_ratio = r.latency_ratio().median.unwrap_or(f64::NAN);
            let over_bound = r.over_bound().median.unwrap_or(f64::NAN);
            let settles = (latency_ratio - 1.0).abs() <= GOAL_LATENCY_BAND;
            let few_over = over_bound <= GOAL_OVER_BOUND;
            LatencyGoal {
                model: r.model,
                controller: r.controller,
                latency_ratio,
                settles,
                over_bound,
                few_over,
                met: settles && few_over,
            }
        })
        .collect()
}

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "**no**" }.to_owned()
}

fn markdown(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = String>| {
        let body: Vec<String> = cells.collect();
        format!("| {} |\n", body.join(" | "))
    };
    out.push_str(&line(
        &mut header.iter().zip(&widths).map(|(h, w)| format!("{h:<w$}")),
    ));
    out.push_str(&line(&mut widths.iter().map(|w| "-".repeat(*w))));
    for row in rows {
        out.push_str(&line(&mut row.iter().zip(&widths).enumerate().map(
            |(i, (c, w))| {
                if i < 2 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            },
        )));
    }
}

/// A governor profile's goals on one model, from the medians.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// The model.
    pub model: ModelKind,
    /// The profile held to the goal (robust or gentle).
    pub profile: Profile,
    /// Its governor's median goodput.
    pub goodput: f64,
    /// Whether it reaches [`GOAL_GOODPUT`].
    pub reaches_goodput: bool,
    /// Its governor's median failed attempts.
    pub failed: f64,
    /// The controller with the fewest median failures among its rivals
    /// that reach [`GOAL_GOODPUT`]: every controller but the oracle, the
    /// `-latency` governors (which see more than failures) and the
    /// governors of profiles introduced after this one ([`Profile::ALL`]:
    /// robust's goal, set before gentle existed, keeps its meaning).
    pub fewest_failed: Option<(ControllerKind, f64)>,
    /// Whether that is this profile (ties count for it).
    pub has_fewest_failed: bool,
    /// Relative change against the seed governor: (goodput, failed); for
    /// failed, positive is worse.
    pub vs_seed: Option<(f64, f64)>,
    /// Robust only: whether the goodput is at most [`GOAL_SLACK`] below the
    /// seed's (`None` for gentle, or when the seed did not run).
    pub within_slack: Option<bool>,
    /// The whole goal: reaches [`GOAL_GOODPUT`], has the fewest failures
    /// among the rivals that do, and (robust) stays within the slack of the
    /// seed.
    pub met: bool,
}

/// The goal check per model for every profile but the seed whose governor
/// ran: robust's first, then gentle's.
pub fn goals(report: &Report) -> Vec<Goal> {
    Profile::ALL
        .into_iter()
        .filter(|p| *p != Profile::Seed)
        .flat_map(|p| goals_of(report, p))
        .collect()
}

/// The goal check per model for `profile`, when its governor ran.
pub fn goals_of(report: &Report, profile: Profile) -> Vec<Goal> {
    let rank = |p: Profile| Profile::ALL.iter().position(|q| *q == p);
    let mut out = Vec::new();
    for &model in &report.plan.models {
        let rows: Vec<&Row> = report.rows.iter().filter(|r| r.model == model).collect();
        let find = |c: ControllerKind| rows.iter().find(|r| r.controller == c);
        let Some(own) = find(ControllerKind::governor(profile, false)) else {
            continue;
        };
        let med = |s: Summary| s.median.unwrap_or(f64::NAN);
        let goodput = med(own.goodput());
        let failed = med(own.failed());
        // Rivals see what the profile sees: failures only (not the oracle,
        // not the `-latency` governors), and were there when its goal was
        // set.
        let fewest_failed = rows
            .iter()
            .filter(|r| r.controller != ControllerKind::Oracle && !r.controller.needs_latency())
            .filter(|r| {
                r.controller
                    .profile()
                    .is_none_or(|p| rank(p) <= rank(profile))
            })
            .filter(|r| med(r.goodput()) >= GOAL_GOODPUT)
            .map(|r| (r.controller, med(r.failed())))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let has_fewest_failed =
            goodput >= GOAL_GOODPUT && fewest_failed.is_some_and(|(_, f)| failed <= f);
        let vs_seed = find(ControllerKind::Governor).map(|d| {
            let (dg, df) = (med(d.goodput()), med(d.failed()));
            let more_failed = if df > 0.0 {
                failed / df - 1.0
            } else if failed > 0.0 {
                f64::INFINITY
            } else {
                0.0
            };
            (goodput / dg - 1.0, more_failed)
        });
        let within_slack = vs_seed
            .filter(|_| profile == Profile::Robust)
            .map(|(g, _)| g >= -GOAL_SLACK);
        out.push(Goal {
            met: has_fewest_failed && within_slack != Some(false),
            model,
            profile,
            goodput,
            reaches_goodput: goodput >= GOAL_GOODPUT,
            failed,
            fewest_failed,
            has_fewest_failed,
            vs_seed,
            within_slack,
        });
    }
    out
}

#[cfg(test)]
mod tests;
