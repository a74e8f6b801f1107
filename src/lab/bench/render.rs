//! The bench's outputs: the Markdown tables, the JSON rows, and the
//! per-window trace.
//!
//! Why it exists: the table is the bench's published result and must be
//! byte-for-byte the same for the same arguments; its formatting is kept
//! apart from the runs and the goals it reports.
//!
//! What it may touch: nothing; it formats a finished report (the trace
//! runs the plan's controllers for one seed through [`super::simulate`]).

use std::fmt::Write as _;

use serde::Serialize;

use super::family::render_family;
use super::goals::{goals_of, latency_goals, Goal, GOAL_LATENCY_BAND, GOAL_OVER_BOUND};
use super::{
    model_config, params, simulate, BenchModel, BenchPlan, ControllerKind, Report, Row, Summary,
    LATENCY_BOUND, LATENCY_QUANTILE,
};
use crate::governor::Profile;

/// One window of a `--trace` run.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRow {
    /// The model.
    pub model: BenchModel,
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
    /// Governors only: `up`, `down` or `hold`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<&'static str>,
    /// Governors only: the rule behind the decision, in the report's
    /// words (the mode, or the hold reason).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'static str>,
    /// Governors only: the congestion memory after the window (absent
    /// when unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_bad: Option<f64>,
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
                let step = t.steps.get(window).copied().flatten();
                let row = TraceRow {
                    model,
                    controller,
                    window,
                    capacity: t.capacity[window],
                    offer: t.offers[window],
                    attempts: t.attempts[window],
                    failures: t.failures[window],
                    latency: t.latency.get(window).copied().flatten(),
                    decision: step.map(|s| s.decision),
                    rule: step.map(|s| s.rule),
                    last_bad: step.and_then(|s| s.last_bad),
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
    pub model: BenchModel,
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
    /// `unexplained` median (rounded to 0.1 attempt).
    pub unexplained_median: Option<f64>,
    /// `unexplained` p90.
    pub unexplained_p90: Option<f64>,
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
    /// The runs whose last figure says a bound binds there but lies
    /// beyond 15 % of the true capacity (governors only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrong_figures: Option<usize>,
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
            unexplained_median: row.unexplained().median.map(|v| (v * 10.0).round() / 10.0),
            unexplained_p90: row.unexplained().p90.map(|v| (v * 10.0).round() / 10.0),
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
            wrong_figures: row.wrong_figures(),
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
/// profile's goals (when both governors ran). A family's plan prints the family's tables instead
/// ([`render_family`]).
pub fn render_table(report: &Report) -> String {
    let plan = &report.plan;
    if let Some(family) = plan.family {
        return render_family(report, family);
    }
    let mut out = String::new();
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
         (governors only), never: the share of runs where that never happens; wrong: the runs \
         whose last figure says the bound binds there (not a lower bound) but lies more than \
         15 % from the true capacity.\n\n",
    );
    let header = [
        "model",
        "controller",
        "touches",
        "failed / touch",
        "to figure",
        "never",
        "wrong",
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
                row.wrong_figures()
                    .map_or("-".to_owned(), |n| format!("{n} of {}", row.runs.len())),
            ]
        })
        .collect();
    markdown(out, &header, &rows);
}

/// One profile's goal table in [`render_table`], when its governor ran.
pub(super) fn render_goals(out: &mut String, goals: &[Goal], profile: Profile) {
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

fn yes_no(b: bool) -> String {
    if b { "yes" } else { "**no**" }.to_owned()
}

pub(super) fn markdown(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
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
