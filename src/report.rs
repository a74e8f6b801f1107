//! The capacity report: the throttled steady state, as a measurement.
//!
//! Why it exists: the offer the governor settles on is the target's capacity
//! at the declared failure bound, and that number is what users run the tool
//! for. But a load figure taken while failures are high is an artefact of
//! saturation, so a report must say which of the two it shows. Steadiness is
//! decided by the steady-state rule ([`steady`](mod@steady), pooling by level in
//! [`levels`]); this module renders the report as JSON, as text, and as one
//! self-contained HTML file with an inline SVG chart ([`html`], no network
//! fetches), and gives the capacity estimate ([`estimate`]) that [`live`]
//! feeds per window. Under `robust` and `gentle` it also says how sure the
//! verdicts were and which background failure rate they allowed for
//! ([`verdicts`]).
//!
//! What it may touch: nothing but the history it is given.

pub mod html;
pub mod levels;
pub mod live;
pub mod steady;
#[cfg(test)]
mod tests;
pub mod verdicts;

use std::fmt::Write as _;

use serde::Serialize;

use crate::governor::pct;
use crate::telemetry::{CapacityEstimate, CapacityFigure, LatencyBoundStatus, WindowRecord};

use levels::{figure_of, pool, qualifies};
pub use levels::{Interval, LevelStats};
pub use steady::{
    assess, assess_with, steady, Evidence, NotSteady, Settled, Steady, SteadyRule, MAX_PERIOD,
    MIN_LEVEL_WINDOWS, STALE_WINDOWS,
};
use steady::{latest_evidence, levels_of, use_of, Use};

fn capacity_figure(
    offer: f64,
    l: &LevelStats,
    above: Option<&LevelStats>,
    lower_bound: bool,
) -> CapacityFigure {
    CapacityFigure {
        lower_bound,
        offer,
        failure_ratio: l.failure_ratio,
        interval: [l.interval.low, l.interval.high],
        windows: l.windows,
        attempts: l.attempts,
        failures: l.failures,
        next_step_up: above.map(|u| u.offer),
        dead_band: None,
    }
}

/// The capacity estimate of `history`: the one function behind both the
/// live `capacity` of `/api/v1/targets` and the report's figure.
///
/// - **Steady** when [`assess_with`] finds a steady state with a capacity:
///   the figure, interval and windows are the report's, to the bit.
/// - Else **provisional** when, over the latest evidence windows (at most
///   [`MAX_PERIOD`]), pooled by level as the report pools its period, a
///   level that qualifies (within the bound, held for at least
///   [`MIN_LEVEL_WINDOWS`] windows) lies below a level whose pooled ratio
///   breached: the highest such level is the figure.
/// - Else **none**: nothing brackets the wall yet (a climb that has not
///   breached, a breach with no level within the bound held twice below
///   it, or saturation at every level).
///
/// Cost: one pass over `history` and one [`assess_with`], which is
/// quadratic in the evidence windows it searches (at most [`MAX_PERIOD`]).
pub fn estimate(
    history: &[WindowRecord],
    rule: &SteadyRule,
    high: f64,
    latency: Option<LatencyBoundStatus>,
) -> CapacityEstimate {
    estimate_remembering(
        history,
        &[],
        verdicts::latest_clean_level(history),
        rule,
        high,
        latency,
    )
}

/// [`estimate`], with `older`: evidence that left `history` (the live
/// ring), pooled per offer, oldest first. It is read only for whether a
/// steady figure is a lower bound ([`binding`] over `older` then
/// `history`), never for the figure: a long settled run probes the wall
/// less often than the ring is long, and the probe that showed the bound
/// crossed must not be forgotten between probes.
///
/// `clean_below` is the clean level of the governor's latest verdict
/// (`None` under the seed rules): a steady lower bound whose levels up to
/// the figure failed significantly above it carries the dead band
/// ([`crate::telemetry::DeadBand`], the report's sentence as a value).
pub fn estimate_remembering(
    history: &[WindowRecord],
    older: &[WindowRecord],
    clean_below: Option<f64>,
    rule: &SteadyRule,
    high: f64,
    latency: Option<LatencyBoundStatus>,
) -> CapacityEstimate {
    if let Ok(s) = assess_with(history, rule, high, latency) {
        if let (Some(offer), Some(c)) = (s.capacity, s.evidence.capacity.as_ref()) {
            let lower_bound = if older.is_empty() {
                binding(&s, history, high, latency)
            } else {
                let all: Vec<WindowRecord> = older.iter().chain(history).cloned().collect();
                binding(&s, &all, high, latency)
            } == Some("neither");
            let mut figure =
                capacity_figure(offer, c, s.evidence.next_step_up.as_ref(), lower_bound);
            // As the report: a run with a latency bound gets no such hint.
            if lower_bound && latency.is_none() {
                figure.dead_band =
                    clean_below.and_then(|clean| verdicts::dead_band(history, &s, offer, clean));
            }
            return CapacityEstimate::Steady(figure);
        }
    }
    let evidence = latest_evidence(history);
    if evidence.is_empty() {
        return CapacityEstimate::None;
    }
    let (width, integer) = levels_of(&evidence, rule.need());
    let levels = pool(&evidence, width, high, latency);
    let bracketed = (0..levels.len()).rev().find_map(|i| {
        let above = levels[i + 1..].iter().find(|u| !u.within_bound)?;
        qualifies(&levels[i]).then_some((i, above))
    });
    match bracketed {
        Some((i, above)) => CapacityEstimate::Provisional(capacity_figure(
            figure_of(&levels[i], integer),
            &levels[i],
            Some(above),
            false,
        )),
        None => CapacityEstimate::None,
    }
}

/// One target in the report.
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    /// The target's name.
    pub name: String,
    /// `concurrency` or `rate`.
    pub control: &'static str,
    /// Whether the run ended in a settled period (a capacity, or saturation).
    pub steady: bool,
    /// Whether there is a capacity figure: a level within the failure bound.
    pub within_bound: bool,
    /// Mean committed offer over the settled period (null when not steady).
    pub steady_offer: Option<f64>,
    /// The declared failure bound (`high`).
    pub failure_bound: f64,
    /// Failure ratio pooled over the settled period.
    pub observed_failure_ratio: Option<f64>,
    /// Successful attempts per second over the settled period.
    pub throughput_per_sec: Option<f64>,
    /// The congestion memory at the end.
    pub last_bad: Option<f64>,
    /// Windows recorded.
    pub windows: usize,
    /// A plain sentence saying what the figure is.
    pub verdict: String,
    /// The capacity: the highest offer whose pooled windows over the settled
    /// period stay within the bound (null when there is none).
    pub capacity: Option<f64>,
    /// Why the run is not steady (a code, see the module docs), or null.
    pub not_steady_reason: Option<&'static str>,
    /// Why the run is not steady, in a sentence, or null.
    pub why_not_steady: Option<String>,
    /// The settled period (null when not steady).
    pub settled: Option<Settled>,
    /// The capacity's evidence: its level, the next step up, every level.
    pub evidence: Option<Evidence>,
    /// Windows that straddled an offer change (never evidence).
    pub discarded_windows: usize,
    /// Windows that ran on an unconfirmed write (never evidence).
    pub unconfirmed_windows: usize,
    /// The latency bound, when one was set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_bound: Option<LatencyBoundStatus>,
    /// Which bound limits the capacity: `failures`, `latency`, `both`, or
    /// `neither` (the run never showed a bound crossed above the figure:
    /// it is a lower bound) (null without a capacity figure). See
    /// [`binding`].
    pub binding: Option<&'static str>,
    /// How sure the verdicts were (`robust` and `gentle` only): the latest
    /// background failure rate estimate with a sentence, and per verdict
    /// class the windows and what they rested on. Absent under the seed
    /// rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdicts: Option<verdicts::VerdictSummary>,
    /// Per window: time, offer, attempts, failures, frac, decision (and,
    /// under `robust` and `gentle`, the verdict's `confidence`).
    pub history: Vec<WindowRecord>,
}

/// Which bound limits a capacity figure: the one(s) the next step up
/// exceeded; when the period never went higher, the signal that drove most
/// of its back-offs, else what held it (latency-band holds), else the
/// signal of the last back-off before it.
///
/// A bound binds only where the run showed it crossed, otherwise the figure
/// is a lower bound and the answer is `neither`:
/// - latency, only when some window's quantile was over the bound;
/// - failures, only when the next level above the capacity that the run
///   visited failed more than `high` ([`failures_crossed_above`]). A run
///   held below the wall (in the dead band by a background failure rate,
///   say, or at the ceiling) has measured only that the target holds at
///   least this much.
pub fn binding(
    steady: &Steady,
    history: &[WindowRecord],
    high: f64,
    latency: Option<LatencyBoundStatus>,
) -> Option<&'static str> {
    steady.capacity?;
    let failures = failures_crossed_above(steady, history, high);
    let Some(bound) = latency else {
        return Some(if failures { "failures" } else { "neither" });
    };
    let found = binding_found(steady, history, high);
    // Latency binds only where a window's quantile exceeded the bound: a
    // figure held in the band (or at the ceiling) below a bound no window
    // ever reached is a lower bound of the latency capacity (issue 26).
    let crossed = history
        .iter()
        .any(|r| r.latency_secs.is_some_and(|l| l > bound.bound_secs));
    Some(match found {
        "latency" if !crossed => "neither",
        "both" if !crossed => "failures",
        "failures" if !crossed && !failures => "neither",
        b => b,
    })
}

/// Whether the run showed the failure bound crossed just above the figure:
/// the next step up of the settled period pooled a failure ratio over
/// `high`; or, when the period went no higher, the lowest level above the
/// capacity among the latest evidence windows (at most [`MAX_PERIOD`],
/// pooled at the period's level width) did, and lies at most
/// [`BRACKET_LEVELS`] levels above it. An opening overshoot far past the
/// wall brackets nothing near the figure. And no higher level among those
/// windows held within the bound ([`held_above`]).
pub fn failures_crossed_above(steady: &Steady, history: &[WindowRecord], high: f64) -> bool {
    failing_above(steady, history, high)
        .is_some_and(|failing| held_over(&failing, steady, history, high).is_none())
}

/// The level just above the figure that failed more than `high`, as
/// [`failures_crossed_above`] finds it, whether or not a higher level
/// contradicts it.
fn failing_above(steady: &Steady, history: &[WindowRecord], high: f64) -> Option<LevelStats> {
    let c = steady.evidence.capacity.as_ref()?;
    if let Some(u) = &steady.evidence.next_step_up {
        return (u.failure_ratio > high).then(|| u.clone());
    }
    let width = steady.settled.level_width;
    let evidence = latest_evidence(history);
    pool(&evidence, width, high, None)
        .into_iter()
        .find(|l| l.offer_min > c.offer_max)
        .filter(|l| l.failure_ratio > high && l.offer_min <= c.offer_max + BRACKET_LEVELS * width)
}

/// A level above the failing one just above the figure that held within
/// the bound for [`MIN_LEVEL_WINDOWS`] windows or more, among the latest
/// evidence windows (the highest such level): the run's own evidence says
/// the target carried more than where the bound would bind. Either the
/// capacity moved (it fell since), or the failures above the figure were
/// not the load's (a burst); either way the figure is only a lower bound.
/// Issue 30: a load-independent burst on a probe's window made the bench's
/// gentle governor name 74 workers the capacity of an 89-worker target
/// that it had held at 89 before (`bursts`, seed 27).
pub fn held_above(steady: &Steady, history: &[WindowRecord], high: f64) -> Option<LevelStats> {
    held_over(
        &failing_above(steady, history, high)?,
        steady,
        history,
        high,
    )
}

/// [`held_above`] over a known `failing` level.
fn held_over(
    failing: &LevelStats,
    steady: &Steady,
    history: &[WindowRecord],
    high: f64,
) -> Option<LevelStats> {
    let width = steady.settled.level_width;
    let evidence = latest_evidence(history);
    pool(&evidence, width, high, None)
        .into_iter()
        .rev()
        .find(|l| l.offer_min > failing.offer_max && qualifies(l))
}

/// How far above a figure, in levels (probe steps), a failing level seen
/// before the settled period still shows where the bound binds.
pub const BRACKET_LEVELS: f64 = 2.0;

/// [`binding`] before the check that latency was ever over its bound.
fn binding_found(steady: &Steady, period: &[WindowRecord], high: f64) -> &'static str {
    if let Some(u) = &steady.evidence.next_step_up {
        let f = u.failure_ratio > high;
        let l = u.latency_within_bound == Some(false);
        match (f, l) {
            (true, true) => return "both",
            (true, false) => return "failures",
            (false, true) => return "latency",
            (false, false) => {}
        }
    }
    let from = steady.settled.from_secs;
    let in_period: Vec<&WindowRecord> = period.iter().filter(|r| r.time_secs >= from).collect();
    let downs: Vec<&&WindowRecord> = in_period.iter().filter(|r| r.decision == "down").collect();
    let by = |latency: bool| if latency { "latency" } else { "failures" };
    if !downs.is_empty() {
        let by_latency = downs.iter().filter(|r| r.latency_drove).count();
        return by(by_latency * 2 > downs.len());
    }
    let latency_holds = in_period
        .iter()
        .filter(|r| r.label == "latency-band")
        .count();
    let band_holds = in_period.iter().filter(|r| r.label == "dead-band").count();
    if latency_holds + band_holds > 0 {
        return by(latency_holds > band_holds);
    }
    let last_down = period
        .iter()
        .rev()
        .find(|r| r.decision == "down" && r.time_secs < from);
    by(last_down.is_some_and(|r| r.latency_drove))
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The tool's version.
    pub version: &'static str,
    /// The steady-state rule in force.
    pub steady_rule: String,
    /// One entry per target.
    pub targets: Vec<TargetReport>,
}

impl TargetReport {
    /// Builds one target's report from its history.
    pub fn new(
        name: &str,
        control: &'static str,
        high: f64,
        last_bad: Option<f64>,
        history: Vec<WindowRecord>,
        rule: &SteadyRule,
    ) -> Self {
        Self::new_with(name, control, high, last_bad, history, rule, None)
    }

    /// The report of a target from its live status and its history.
    pub fn of_status(
        s: &crate::telemetry::TargetStatus,
        history: Vec<WindowRecord>,
        rule: &SteadyRule,
    ) -> Self {
        Self::new_with(
            &s.name, s.knob, s.high, s.last_bad, history, rule, s.latency,
        )
    }

    /// [`Self::new`] with the target's latency bound, if any.
    pub fn new_with(
        name: &str,
        control: &'static str,
        high: f64,
        last_bad: Option<f64>,
        history: Vec<WindowRecord>,
        rule: &SteadyRule,
        latency: Option<LatencyBoundStatus>,
    ) -> Self {
        let assessed = assess_with(&history, rule, high, latency);
        let bind = assessed
            .as_ref()
            .ok()
            .and_then(|s| binding(s, &history, high, latency));
        let s = assessed.as_ref().ok();
        let capacity = s.and_then(|s| s.capacity.zip(s.evidence.capacity.as_ref()));
        let verdict = match (&assessed, capacity) {
            (Err(why), _) => format!(
                "{name}: never became steady in {} window{} ({}); no capacity figure",
                history.len(),
                plural(history.len()),
                why.detail
            ),
            (Ok(s), Some((figure, c))) if latency.is_some() => {
                let b = latency.expect("latency bound");
                let q = crate::governor::latency_bound::quantile_name(b.quantile);
                let lat = |l: &LevelStats| {
                    l.latency_secs
                        .map(crate::governor::latency_bound::seconds)
                        .unwrap_or_else(|| "unknown".into())
                };
                let next = match &s.evidence.next_step_up {
                    Some(u) => format!(
                        "; {} {}: failure ratio {}, {q} {} ({} window{})",
                        level_offers(u),
                        if u.within_bound {
                            "stayed within both bounds"
                        } else {
                            "exceeded a bound"
                        },
                        pct(u.failure_ratio),
                        lat(u),
                        u.windows,
                        plural(u.windows)
                    ),
                    None => "; no higher offer in the settled period".to_string(),
                };
                let binds = match bind {
                    Some("neither") => format!(
                        "a lower bound: no window's {q} reached {}",
                        crate::governor::latency_bound::seconds(b.bound_secs)
                    ),
                    b => format!("{} binds", b.unwrap_or("failures")),
                };
                format!(
                    "{name}: capacity {} {control} at steady state at failure ratio <= {} and {q} <= {} ({binds}): failure ratio {} (95% interval {}–{}), {q} {} over {} windows{next}",
                    short(figure),
                    pct(high),
                    crate::governor::latency_bound::seconds(b.bound_secs),
                    pct(c.failure_ratio),
                    pct(c.interval.low),
                    pct(c.interval.high),
                    lat(c),
                    c.windows
                )
            }
            (Ok(s), Some((figure, c))) => {
                let next = match &s.evidence.next_step_up {
                    Some(u) => format!(
                        "; {} {} the bound at {} ({} window{})",
                        level_offers(u),
                        if u.within_bound { "stayed within" } else { "exceeded" },
                        pct(u.failure_ratio),
                        u.windows,
                        plural(u.windows)
                    ),
                    None => match last_bad {
                        Some(lb) => format!(
                            "; no higher offer in the settled period (congestion last seen at {})",
                            short(lb)
                        ),
                        None => "; no higher offer in the settled period".to_string(),
                    },
                };
                let held = held_above(s, &history, high);
                let (lower, band) = if bind == Some("neither") {
                    (
                        match &held {
                            Some(l) => format!(
                                " (a lower bound: {} held within the bound above the offers that failed, so the capacity has moved or those failures were not the load's)",
                                level_offers(l)
                            ),
                            None => format!(
                                " (a lower bound: no higher offer in the settled period failed more than {})",
                                pct(high)
                            ),
                        },
                        verdicts::latest_clean_level(&history)
                            .and_then(|clean| verdicts::dead_band(&history, s, figure, clean))
                            .map(|b| b.sentence(&short(figure)))
                            .unwrap_or_default(),
                    )
                } else {
                    (String::new(), String::new())
                };
                format!(
                    "{name}: capacity {} {control} at steady state{lower}, failure ratio {} within the bound {} (95% interval {}–{} over {} windows){next}{band}",
                    short(figure),
                    pct(c.failure_ratio),
                    pct(high),
                    pct(c.interval.low),
                    pct(c.interval.high),
                    c.windows
                )
            }
            (Ok(s), None) if latency.is_some() => format!(
                "{name}: steady at {} {control} but every offer it held exceeded the failure bound {} or the latency bound (failure ratio {} over the period); this is saturation, not a capacity",
                short(s.offer),
                pct(high),
                s.failure_ratio.map(pct).unwrap_or("n/a".into()),
            ),
            (Ok(s), None) => format!(
                "{name}: steady at {} {control} but the failure ratio {} exceeds the bound {} at every offer it held; this is saturation, not a capacity",
                short(s.offer),
                s.failure_ratio.map(pct).unwrap_or("n/a".into()),
                pct(high)
            ),
        };
        let count = |u: Use| history.iter().filter(|r| use_of(r) == u).count();
        let discarded_windows = history.iter().filter(|r| r.discarded).count();
        let unconfirmed_windows = count(Use::Unconfirmed);
        let (steady, why) = match assessed {
            Ok(s) => (Some(s), None),
            Err(w) => (None, Some(w)),
        };
        TargetReport {
            name: name.to_string(),
            control,
            steady: steady.is_some(),
            within_bound: steady.as_ref().is_some_and(|s| s.capacity.is_some()),
            steady_offer: steady.as_ref().map(|s| s.offer),
            failure_bound: high,
            observed_failure_ratio: steady.as_ref().and_then(|s| s.failure_ratio),
            throughput_per_sec: steady.as_ref().map(|s| s.throughput_per_sec),
            last_bad,
            windows: history.len(),
            verdict,
            capacity: steady.as_ref().and_then(|s| s.capacity),
            not_steady_reason: why.as_ref().map(|w| w.reason),
            why_not_steady: why.map(|w| w.detail),
            settled: steady.as_ref().map(|s| s.settled.clone()),
            evidence: steady.map(|s| s.evidence),
            discarded_windows,
            unconfirmed_windows,
            latency_bound: latency,
            binding: bind,
            verdicts: verdicts::summarize(&history),
            history,
        }
    }
}

pub(crate) fn short(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{}", v as i64)
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A level's offers: one value, or the range pooled into it.
pub(crate) fn level_offers(l: &LevelStats) -> String {
    if l.offer_min == l.offer_max {
        short(l.offer)
    } else {
        format!("{}–{}", short(l.offer_min), short(l.offer_max))
    }
}

fn level_line(l: &LevelStats) -> String {
    format!(
        "{} over {} window{}: {}/{} attempts failed ({}, 95% interval {}–{})",
        level_offers(l),
        l.windows,
        plural(l.windows),
        short(l.failures.round()),
        short(l.attempts.round()),
        pct(l.failure_ratio),
        pct(l.interval.low),
        pct(l.interval.high)
    ) + &match (l.latency_secs, l.latency_within_bound) {
        (Some(v), Some(ok)) => format!(
            ", latency {} ({} the latency bound)",
            crate::governor::latency_bound::seconds(v),
            if ok { "within" } else { "over" }
        ),
        (None, Some(_)) => ", latency unknown".to_string(),
        _ => String::new(),
    }
}

impl Report {
    /// A report over targets.
    pub fn new(targets: Vec<TargetReport>, rule: &SteadyRule) -> Self {
        Report {
            version: env!("CARGO_PKG_VERSION"),
            steady_rule: rule.describe(),
            targets,
        }
    }

    /// The report of every target the telemetry knows, from its statuses
    /// and window histories (what `run --report-json` writes on exit).
    pub fn from_telemetry(telemetry: &crate::telemetry::Telemetry, rule: &SteadyRule) -> Self {
        let targets = telemetry
            .statuses()
            .into_iter()
            .map(|s| TargetReport::of_status(&s, telemetry.history(&s.name), rule))
            .collect();
        Report::new(targets, rule)
    }

    /// One target's part of [`Self::from_telemetry`] (what the live page's
    /// chart shows), or None for a target the telemetry does not know.
    pub fn target_from_telemetry(
        telemetry: &crate::telemetry::Telemetry,
        name: &str,
        rule: &SteadyRule,
    ) -> Option<TargetReport> {
        let status = telemetry.status(name)?;
        Some(TargetReport::of_status(
            &status,
            telemetry.history(name),
            rule,
        ))
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// Plain text for the terminal.
    pub fn to_text(&self) -> String {
        let mut out = String::from("Capacity report\n");
        for t in &self.targets {
            let _ = writeln!(out, "  {}", t.verdict);
            if let Some(e) = &t.evidence {
                if let Some(c) = &e.capacity {
                    let _ = writeln!(out, "    at the capacity: {}", level_line(c));
                }
                if let Some(u) = &e.next_step_up {
                    let _ = writeln!(out, "    next step up: {}", level_line(u));
                }
            }
            if let Some(s) = &t.settled {
                let peaks = match (s.peak_min, s.peak_max) {
                    (Some(a), Some(b)) if a == b => format!(
                        ", backed off {} time{} from {}",
                        s.backoffs,
                        plural(s.backoffs),
                        short(a)
                    ),
                    (Some(a), Some(b)) => format!(
                        ", backed off {} time{} from {}–{}",
                        s.backoffs,
                        plural(s.backoffs),
                        short(a),
                        short(b)
                    ),
                    _ => String::new(),
                };
                let _ = writeln!(
                    out,
                    "    settled over {} windows ({:.1}–{:.1} s): offer {}–{}{peaks}",
                    s.windows,
                    s.from_secs,
                    s.to_secs,
                    short(s.offer_min),
                    short(s.offer_max)
                );
            }
            if let Some(tp) = t.throughput_per_sec {
                let _ = writeln!(
                    out,
                    "    throughput {tp:.1} successful attempts/s over the settled windows"
                );
            }
            if let Some(v) = &t.verdicts {
                let _ = writeln!(out, "    background: {}", v.background_note);
                let _ = writeln!(out, "    verdicts: {}", verdicts::classes_line(&v.classes));
            }
            if t.discarded_windows + t.unconfirmed_windows > 0 {
                let _ = writeln!(
                    out,
                    "    not evidence: {} discarded and {} unconfirmed windows",
                    t.discarded_windows, t.unconfirmed_windows
                );
            }
            if let Some(lb) = t.last_bad {
                let _ = writeln!(out, "    congestion last seen at {}", short(lb));
            }
        }
        let _ = writeln!(out, "  (steady: {})", self.steady_rule);
        out
    }

    /// One self-contained HTML page with an inline SVG chart per target.
    pub fn to_html(&self) -> String {
        html::render(self)
    }
}

/// A report file could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {path}: {source}")]
pub struct ReportError {
    /// The path.
    pub path: String,
    /// The I/O error.
    #[source]
    pub source: std::io::Error,
}

/// Checks, before a run, that each report path can be written: it is
/// opened for appending (created if missing, then removed again), so a bad
/// `--report-html` path fails at the start and not after the whole run
/// (issue 27).
pub fn check_writable(paths: &[Option<&std::path::PathBuf>]) -> Result<(), ReportError> {
    for path in paths.iter().flatten() {
        let existed = path.exists();
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(path)
            .map_err(|source| ReportError {
                path: path.display().to_string(),
                source,
            })?;
        if !existed {
            let _ = std::fs::remove_file(path);
        }
    }
    Ok(())
}

impl Report {
    /// Writes the JSON and the HTML report where asked.
    pub fn write_files(
        &self,
        json: Option<&std::path::PathBuf>,
        html: Option<&std::path::PathBuf>,
    ) -> Result<(), ReportError> {
        let write = |path: &std::path::PathBuf, text: String| {
            std::fs::write(path, text).map_err(|source| ReportError {
                path: path.display().to_string(),
                source,
            })
        };
        if let Some(p) = json {
            write(p, self.to_json())?;
        }
        if let Some(p) = html {
            write(p, self.to_html())?;
        }
        Ok(())
    }
}
