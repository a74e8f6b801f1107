//! The profiles' goals: what the bench's medians must show for a profile
//! (or the latency bound) to have met its goal.
//!
//! Why it exists: a profile is kept only if it earns its place against the
//! baselines; the goal is written down here as a check over a [`Report`],
//! so the table and the tests read the same verdict.
//!
//! What it may touch: nothing; it reads a finished report.

use super::{BenchModel, ControllerKind, Report, Row, Summary};
use crate::governor::Profile;
use crate::lab::sim::model::ModelKind;

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

/// The latency bound's goal for one `-latency` governor on one model with a
/// latency, from the medians.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyGoal {
    /// The model.
    pub model: BenchModel,
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

/// A governor profile's goals on one model, from the medians.
#[derive(Debug, Clone, PartialEq)]
pub struct Goal {
    /// The model.
    pub model: BenchModel,
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

/// The controller with the fewest median failed attempts among `rows`
/// whose median goodput reaches [`GOAL_GOODPUT`], of those that `rival`
/// admits; never the oracle, nor a `-latency` governor (they see more
/// than failures). Ties go to the earlier controller.
pub(crate) fn fewest_failed<'a>(
    rows: impl Iterator<Item = &'a Row>,
    rival: impl Fn(ControllerKind) -> bool,
) -> Option<(ControllerKind, f64)> {
    fewest_by(rows, rival, Row::failed)
}

/// [`fewest_failed`], on the failures that `failed` (a row's summary) counts.
fn fewest_by<'a>(
    rows: impl Iterator<Item = &'a Row>,
    rival: impl Fn(ControllerKind) -> bool,
    failed: fn(&Row) -> Summary,
) -> Option<(ControllerKind, f64)> {
    let med = |s: Summary| s.median.unwrap_or(f64::NAN);
    rows.filter(|r| r.controller != ControllerKind::Oracle && !r.controller.needs_latency())
        .filter(|r| rival(r.controller))
        .filter(|r| med(r.goodput()) >= GOAL_GOODPUT)
        .map(|r| (r.controller, med(failed(r))))
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
}

/// The failed attempts that the background alone costs a run offering
/// exactly the capacity in every window: `b x n x windows` (`n` attempts
/// per window at the capacity, each failing with the background's
/// probability `b`), in expectation. No run that holds the capacity fails
/// fewer on average. So where a rival fails fewer, the goal on every failed
/// attempt can only be met below the capacity (docs/BENCHMARKS.md, "The
/// background at the capacity"). `None` without a background, without a
/// fixed attempt rate, or on a capacity that moves (`step`, `warming`,
/// `drift`: the attempts at the capacity move with it).
pub(crate) fn background_at_capacity(model: BenchModel, windows: usize) -> Option<f64> {
    if matches!(
        model.kind,
        ModelKind::Step | ModelKind::Warming | ModelKind::Drift
    ) {
        return None;
    }
    let n = model.attempts?;
    (model.background > 0.0).then_some(model.background * n * windows as f64)
}

/// The goal check per model for `profile`, when its governor ran.
pub(crate) fn goals_of(report: &Report, profile: Profile) -> Vec<Goal> {
    goals_by(report, profile, Row::failed)
}

/// [`goals_of`], with the failed attempts counted as those the model's
/// background does not explain ([`Row::unexplained`]; the same as
/// `failed` on a model without one). Not the goal, which counts
/// every failed attempt: a second reading of the same runs, because on a
/// model with a background raw failures grow with goodput, and the fewest
/// of them above the goodput bar go to the controller with the least
/// goodput above it (docs/BENCHMARKS.md, "What the background explains").
pub(crate) fn goals_unexplained(report: &Report, profile: Profile) -> Vec<Goal> {
    goals_by(report, profile, Row::unexplained)
}

/// The goal check per model for `profile`, counting failures by `failed`.
fn goals_by(report: &Report, profile: Profile, failed_of: fn(&Row) -> Summary) -> Vec<Goal> {
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
        let failed = med(failed_of(own));
        // Rivals see what the profile sees: failures only (not the oracle,
        // not the `-latency` governors), and were there when its goal was
        // set.
        let fewest_failed = fewest_by(
            rows.iter().copied(),
            |c| c.profile().is_none_or(|p| rank(p) <= rank(profile)),
            failed_of,
        );
        let has_fewest_failed =
            goodput >= GOAL_GOODPUT && fewest_failed.is_some_and(|(_, f)| failed <= f);
        let vs_seed = find(ControllerKind::Governor).map(|d| {
            let (dg, df) = (med(d.goodput()), med(failed_of(d)));
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
