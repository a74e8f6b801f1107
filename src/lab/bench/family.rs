//! What the bench runs a controller against ([`BenchModel`]: a sim model
//! and the bench's choice of its attempts per window and background
//! failures), and the model families: grids of such models that one flag
//! selects (`--family noise`), with the table that says which controller
//! wins on each.
//!
//! Why it exists: one model per behaviour invites tuning to that model.
//! The `noise` family (issue 30) spans what a real load tool's windows
//! look like, from about 10 to 10,000 attempts a window, with 0 to 3 %
//! of attempts failing whatever the load, plus failure bursts, lagged
//! counters, and capacities that step, rise and drift under a background,
//! so that a profile has to hold on all of them at once. The
//! family reuses the sim's own parameters (`attempts_per_worker`,
//! `noise`, the `bursts`, `lagged`, `step`, `warming` and `drift` kinds):
//! no model is copied.
//!
//! What it may touch: nothing; it names models and formats a finished
//! report (the goal is [`super::goals`]'s).

use std::fmt::{self, Write as _};

use clap::ValueEnum;
use serde::{Serialize, Serializer};

use super::goals::{
    background_at_capacity, fewest_failed, goals_of, goals_unexplained, GOAL_GOODPUT,
};
use super::metrics::{TAIL, WRONG_BAND};
use super::render::{markdown, render_goals};
use super::{ControllerKind, Report, Row, Summary};
use crate::governor::Profile;
use crate::lab::sim::model::ModelKind;

/// One model of the bench: a sim model kind with the bench's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BenchModel {
    /// The sim model.
    pub kind: ModelKind,
    /// Attempts per window at an offer equal to the capacity (Poisson
    /// around it; proportional to the offer); `None`: the bench's default
    /// for the kind (10 per worker, or 30 at capacity for `noisy`).
    pub attempts: Option<f64>,
    /// Load-independent background failure probability per attempt,
    /// folded into the model's own (`ModelConfig::noise`).
    pub background: f64,
    /// The capacity in workers; `None`: drawn per seed, 50 to 200.
    pub capacity: Option<f64>,
}

impl BenchModel {
    /// `kind` with `attempts` per window at capacity and `background`
    /// failures.
    pub fn with(kind: ModelKind, attempts: f64, background: f64) -> Self {
        BenchModel {
            kind,
            attempts: Some(attempts),
            background,
            capacity: None,
        }
    }

    /// [`BenchModel::with`] at a fixed `capacity` (workers) on every seed.
    pub fn at_capacity(self, capacity: f64) -> Self {
        BenchModel {
            capacity: Some(capacity),
            ..self
        }
    }

    /// Whether the model reports a latency (`queueing` only).
    pub fn has_latency(self) -> bool {
        self.kind.has_latency()
    }
}

impl From<ModelKind> for BenchModel {
    /// The kind with the bench's default parameters.
    fn from(kind: ModelKind) -> Self {
        BenchModel {
            kind,
            attempts: None,
            background: 0.0,
            capacity: None,
        }
    }
}

impl PartialEq<ModelKind> for BenchModel {
    fn eq(&self, kind: &ModelKind) -> bool {
        *self == BenchModel::from(*kind)
    }
}

impl fmt::Display for BenchModel {
    /// The kind's name for the default parameters (so the default tables
    /// keep their names); else `rejector n=40 bg=2%`: `n` attempts per
    /// window at capacity, `bg` the background failures; `C=10` when the
    /// capacity is fixed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind.name())?;
        if let Some(c) = self.capacity {
            write!(f, " C={c}")?;
        }
        if let Some(n) = self.attempts {
            write!(f, " n={n}")?;
        }
        if self.background > 0.0 {
            write!(f, " bg={}%", (self.background * 1e4).round() / 1e2)?;
        }
        Ok(())
    }
}

impl Serialize for BenchModel {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A grid of models that `--family` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Family {
    /// Issue 30's noise family: `rejector` with 10, 40, 200,
    /// 1,000 or 10,000 attempts per window at capacity, times 0, 1, 2 or
    /// 3 % background failures; then `bursts` and `lagged` at 40 and 1,000
    /// attempts; then a small wall, `rejector` at a capacity of 10 workers
    /// with 150 attempts per window at capacity, with no background and
    /// with 3 %; last, a capacity that moves under a background: `step`,
    /// `warming` and `drift` with 200 attempts at 2 % and 1,000 at 1 %
    /// (32 models).
    // The lists are NOISE_ATTEMPTS and NOISE_BACKGROUNDS below; the doc
    // comment says them in words, as clap prints it in `bench --help`.
    Noise,
}

/// The `noise` family's attempts per window at capacity.
pub const NOISE_ATTEMPTS: [f64; 5] = [10.0, 40.0, 200.0, 1_000.0, 10_000.0];
/// The `noise` family's background failure probabilities.
pub const NOISE_BACKGROUNDS: [f64; 4] = [0.0, 0.01, 0.02, 0.03];
/// The attempts per window at capacity of the `noise` family's `bursts`
/// and `lagged` rows: a small sample and a large one.
pub const NOISE_EVENT_ATTEMPTS: [f64; 2] = [40.0, 1_000.0];
/// The `noise` family's small wall: a capacity of 10 workers (a real
/// tool's VUs against a small service), 15 attempts per worker per window
/// (real k6 at a 1 ms wall and 3 s windows), with no background and with
/// 3 %: the real run that stalls (docs/BENCHMARKS.md, "The opening's one
/// witness").
pub const NOISE_SMALL_WALL: (f64, f64, [f64; 2]) = (10.0, 150.0, [0.0, 0.03]);
/// The `noise` family's capacities that move under a background: the
/// kinds, and their (attempts per window at capacity, background) pairs. A
/// rule that stops probing once the low offers saw a failure wins the
/// background rows and never finds a capacity that rises or recovers
/// (docs/BENCHMARKS.md, "Holding below the wall under a background"):
/// these rows are there so that it cannot pass.
pub const NOISE_MOVING: ([ModelKind; 3], [(f64, f64); 2]) = (
    [ModelKind::Step, ModelKind::Warming, ModelKind::Drift],
    [(200.0, 0.02), (1_000.0, 0.01)],
);

impl Family {
    /// The family's models, in table order.
    pub fn models(self) -> Vec<BenchModel> {
        match self {
            Family::Noise => {
                let grid = NOISE_ATTEMPTS.iter().flat_map(|&n| {
                    NOISE_BACKGROUNDS
                        .iter()
                        .map(move |&bg| BenchModel::with(ModelKind::Rejector, n, bg))
                });
                let events = [ModelKind::Bursts, ModelKind::Lagged]
                    .into_iter()
                    .flat_map(|k| {
                        NOISE_EVENT_ATTEMPTS
                            .iter()
                            .map(move |&n| BenchModel::with(k, n, 0.0))
                    });
                let (capacity, attempts, backgrounds) = NOISE_SMALL_WALL;
                let small = backgrounds.into_iter().map(move |bg| {
                    BenchModel::with(ModelKind::Rejector, attempts, bg).at_capacity(capacity)
                });
                let (kinds, samples) = NOISE_MOVING;
                let moving = kinds.into_iter().flat_map(move |k| {
                    samples
                        .into_iter()
                        .map(move |(n, bg)| BenchModel::with(k, n, bg))
                });
                grid.chain(events).chain(small).chain(moving).collect()
            }
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::Noise => "noise",
        })
    }
}

/// The controllers that win on each model of the report, in plan order:
/// the fewest median failed attempts among the controllers whose median
/// goodput reaches [`GOAL_GOODPUT`] (the oracle and the `-latency`
/// governors are not rivals), all of them when several tie; empty when
/// nobody reaches it.
pub fn winners(report: &Report) -> Vec<(BenchModel, Vec<ControllerKind>)> {
    report
        .plan
        .models
        .iter()
        .map(|&m| {
            let rows = || report.rows.iter().filter(move |r| r.model == m);
            let best = fewest_failed(rows(), |_| true).map(|(_, f)| f);
            let tied = rows()
                .filter(|r| {
                    let own = fewest_failed(std::iter::once(*r), |_| true);
                    own.is_some_and(|(_, f)| Some(f) == best)
                })
                .map(|r| r.controller)
                .collect();
            (m, tied)
        })
        .collect()
}

/// A family's tables: per model, every controller's median goodput (share
/// of the oracle's) and failed attempts, the winner, how often each
/// controller wins, then the robust and gentle profiles' goals, the
/// second reading (`unexplained_line`), and where the background alone
/// at the capacity costs more than a rival fails (`background_floor_line`).
pub fn render_family(report: &Report, family: Family) -> String {
    let plan = &report.plan;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "The {family} family: median goodput (share of the oracle's) / median failed \
         attempts over {} seeds, {} windows per run; n: attempts per window at capacity, \
         bg: background failures. The winner has the fewest failed attempts among the \
         controllers with goodput >= {GOAL_GOODPUT:.2} (the oracle is not a rival).\n",
        plan.seeds, plan.windows
    );
    let controllers: Vec<ControllerKind> = plan
        .controllers
        .iter()
        .copied()
        .filter(|c| !c.needs_latency())
        .collect();
    let mut header: Vec<String> = vec!["model".to_owned()];
    header.extend(controllers.iter().map(|c| c.to_string()));
    header.push("winner".to_owned());
    let wins = winners(report);
    let med = |s: Summary| s.median.unwrap_or(f64::NAN);
    let rows: Vec<Vec<String>> = wins
        .iter()
        .map(|(m, winners)| {
            let mut cells = vec![m.to_string()];
            cells.extend(controllers.iter().map(|&c| {
                report
                    .rows
                    .iter()
                    .find(|r| r.model == *m && r.controller == c)
                    .map_or("-".to_owned(), |r| {
                        format!("{:.3} / {:.0}", med(r.goodput()), med(r.failed()))
                    })
            }));
            let names: Vec<String> = winners.iter().map(|c| c.to_string()).collect();
            cells.push(if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(" = ")
            });
            cells
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    markdown(&mut out, &header, &rows);
    let counts: Vec<String> = controllers
        .iter()
        .filter(|&&c| c != ControllerKind::Oracle)
        .map(|&c| {
            let n = wins.iter().filter(|(_, w)| w.contains(&c)).count();
            format!("{c} {n}")
        })
        .collect();
    let _ = writeln!(
        out,
        "\nWins (ties count for each) over {} models: {}.",
        wins.len(),
        counts.join(", ")
    );
    let _ = writeln!(out, "\n{}", stalls_line(report, &controllers));
    let _ = writeln!(out, "\n{}", wrong_figures_line(report, &controllers));
    for profile in [Profile::Robust, Profile::Gentle] {
        render_goals(&mut out, &goals_of(report, profile), profile);
    }
    let _ = writeln!(out, "\n{}", unexplained_line(report));
    let _ = writeln!(out, "\n{}", background_floor_line(report));
    out
}

/// The models on which a run at the capacity cannot meet the default
/// profile's goal: the background alone costs it more failed attempts
/// ([`background_at_capacity`]) than a rival fails, so only a controller
/// that holds below the capacity can have the fewest there.
pub fn background_floor_line(report: &Report) -> String {
    let own = ControllerKind::governor(Profile::default(), false);
    let below: Vec<String> = report
        .plan
        .models
        .iter()
        .filter_map(|&m| {
            let floor = background_at_capacity(m, report.plan.windows)?;
            let rows = report.rows.iter().filter(|r| r.model == m);
            let (rival, fewest) = fewest_failed(rows, |c| c != own)?;
            (fewest < floor).then(|| format!("{m} ({floor:.0}, against {rival} {fewest:.0})"))
        })
        .collect();
    let head = "The background alone at the capacity (b x n x windows: what a run offering \
                exactly the capacity in every window fails, in expectation) is more than a \
                rival's failed attempts";
    if below.is_empty() {
        format!("{head} on no model.")
    } else {
        format!(
            "{head} on {}: there, only a controller that holds below the capacity can meet \
             the goal on every failed attempt.",
            below.join("; ")
        )
    }
}

/// The goal count of robust and gentle on the failed attempts the
/// background does not explain ([`goals_unexplained`]), with the models
/// each misses: a second reading of the same runs, not the goal.
pub fn unexplained_line(report: &Report) -> String {
    let counts: Vec<String> = [Profile::Robust, Profile::Gentle]
        .into_iter()
        .map(|profile| {
            let goals = goals_unexplained(report, profile);
            let missed: Vec<String> = goals
                .iter()
                .filter(|g| !g.met)
                .map(|g| g.model.to_string())
                .collect();
            format!(
                "{} meets it on {} of {}{}",
                profile.as_str(),
                goals.len() - missed.len(),
                goals.len(),
                if missed.is_empty() {
                    String::new()
                } else {
                    format!(" (missed: {})", missed.join(", "))
                }
            )
        })
        .collect();
    format!(
        "The same goal on the failed attempts the background does not explain \
         (failed - b / (1 - b) x successes, b the model's background; a second reading, \
         not the issue's goal): {}.",
        counts.join("; ")
    )
}

/// The seeds on which a controller stalled (its steady offer at most
/// half the capacity), per model, where any did: a stall on a few seeds
/// moves no median.
pub fn stalls_line(report: &Report, controllers: &[ControllerKind]) -> String {
    let head = format!(
        "Stalled seeds (the median offer of the last {TAIL} windows at most half the capacity), of {}",
        report.plan.seeds
    );
    seeds_line(report, controllers, &head, |r| Some(r.stalled_seeds()))
}

/// The seeds on which a governor's last live figure was wrong (it says a
/// bound binds there, yet lies more than 15 % from the true capacity), per
/// model, where any was: a wrong report on a few seeds moves no median.
pub fn wrong_figures_line(report: &Report, controllers: &[ControllerKind]) -> String {
    let head = format!(
        "Wrong figures (the last live figure says the bound binds there, but lies more than \
         {:.0} % from the true capacity), of {}",
        WRONG_BAND * 100.0,
        report.plan.seeds
    );
    seeds_line(report, controllers, &head, Row::wrong_figures)
}

/// `head`, then per model each controller (the oracle aside) with a
/// nonzero `count` of seeds, or "none".
fn seeds_line(
    report: &Report,
    controllers: &[ControllerKind],
    head: &str,
    count: impl Fn(&Row) -> Option<usize>,
) -> String {
    let hits: Vec<String> = report
        .plan
        .models
        .iter()
        .filter_map(|&m| {
            let hit: Vec<String> = controllers
                .iter()
                .filter(|&&c| c != ControllerKind::Oracle)
                .filter_map(|&c| {
                    let r = report
                        .rows
                        .iter()
                        .find(|r| r.model == m && r.controller == c)?;
                    let n = count(r)?;
                    (n > 0).then(|| format!("{c} {n}"))
                })
                .collect();
            (!hit.is_empty()).then(|| format!("{m}: {}", hit.join(", ")))
        })
        .collect();
    if hits.is_empty() {
        format!("{head}: none.")
    } else {
        format!("{head}: {}.", hits.join("; "))
    }
}

#[cfg(test)]
mod tests;
