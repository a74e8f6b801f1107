//! The capacity report: the throttled steady state, as a measurement.
//!
//! Why it exists: the offer the governor settles on is the target's capacity
//! at the declared failure bound, and that number is what users run the tool
//! for. But a load figure taken while failures are high is an artefact of
//! saturation, so a report must say which of the two it shows. This module
//! decides steadiness from a target's window history (purely, no clock and no
//! I/O) and renders the report as JSON, as text, and as one self-contained
//! HTML file with an inline SVG chart ([`html`], no network fetches).
//!
//! What it may touch: nothing but the history it is given.
//!
//! # Evidence
//! Only **evidence windows** count: a valid signal, at least one resolved
//! attempt, not `discarded` (it straddled an offer change, or fell within the
//! signal's lag after one) and not `unconfirmed` (the tool had not confirmed
//! the governor's last write, so the offer in effect was the tool's). Other
//! windows are shown in the history and the chart, never pooled.
//!
//! # The settled period
//! On an integer knob a real run rarely holds still: against a wall at 10 it
//! settles into a sawtooth (10 ↔ 11, or 8 9 10 11 → back-off → 8 9 10 11 …)
//! with few or no Holds. So steadiness is judged on the *envelope* of the
//! offer, not on its stillness.
//!
//! Offers are grouped into **levels** of one probe step: width
//! `max(1, floor(2 % of the top))` on integer knobs (each integer is its own
//! level up to a top of 99), and `max(2 % of the top, min(1, 10 % of the
//! top))` otherwise, where the top is the highest offer of the last
//! `windows` evidence windows. That is the size of the governor's additive
//! probe (`max(1, 0.02 * last_bad)`), so a probing climb moves about one level
//! per window.
//!
//! A trailing stretch of evidence windows is **settled** when
//! - its two halves reach the same top: their highest offers lie within one
//!   level of each other (a climb, slow start or additive, moves several
//!   levels per half; a collapse falls several);
//! - its two halves reach the same bottom: their lowest offers lie within
//!   `band` (default ±10 %) of the top, or one level, of each other (this
//!   keeps the climb out of the first back-off, and a fresh deep back-off,
//!   out of the period);
//! - its top was **revisited**: the windows at the top level or the one
//!   below it form at least two separate visits (a sawtooth came back), or
//!   one visit at least half of `windows` long (a plateau). A single peak
//!   met halfway up a climb is not a settled state.
//!
//! Every stretch from `windows` (default 10) up to [`MAX_PERIOD`] evidence
//! windows long is tried; the **settled period** is the longest that passes,
//! so a sawtooth whose cycle is longer than half of `windows` is still found
//! once two cycles have run. A plateau (the simulator's demo) passes at once.
//!
//! # The capacity figure
//! Over the settled period, each level's windows are **pooled**: attempts and
//! failures summed, `ratio = failures / attempts`. The **capacity** is the
//! highest level that was held for at least [`MIN_LEVEL_WINDOWS`] windows
//! and whose pooled ratio is within the bound (`<= high`). The report shows
//! the evidence for it, and for the **next step up** (the lowest level above
//! it that the period visited): windows, attempts, failures, the ratio and a
//! 95 % Wilson score interval on it. The interval treats attempts as
//! independent, which they are not quite (a burst of rejections is
//! correlated), so it understates the uncertainty; the honest coarse bound
//! is the bracket itself: the bound is crossed between the capacity and the
//! next step up. The sawtooth's spread (lowest and highest offer of the
//! period, and the offers it backed off from) is reported too.
//!
//! # Not steady
//! A run is **never steady** only when one of these holds, and the report
//! says which:
//! - `writes-not-confirmed`: the last [`STALE_WINDOWS`] windows ran on a
//!   write the tool had not confirmed. A target whose writes are not being
//!   confirmed never gets a figure (with no confirmed window there is no
//!   evidence at all); a write confirmed a window or two late is normal;
//! - `signal-lost`, `no-traffic`: the last [`STALE_WINDOWS`] windows gave no
//!   evidence, for that reason (the governor's own signal-loss policy acts
//!   after 3 invalid windows too);
//! - `windows-discarded`: none of the last `windows` windows was evidence,
//!   each was discarded (a window or two after each change is normal);
//! - `too-few-windows`: fewer evidence windows than `windows`;
//! - `still-climbing`, `still-falling`, `offer-never-revisited`: no trailing
//!   stretch is settled; the reason is the last `windows`' (the sentence
//!   gives the halves' ranges, or the top reached once);
//! - `offer-never-revisited` too when a period is settled but no level
//!   within the bound was held for [`MIN_LEVEL_WINDOWS`] windows.
//!
//! A settled run whose every level exceeds the bound (pinned at its floor by
//! a broken target, say) *is* steady, and is reported as saturation, not as
//! a capacity.

pub mod html;
pub mod live;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;

use serde::Serialize;

use crate::governor::pct;
use crate::telemetry::{CapacityEstimate, CapacityFigure, LatencyBoundStatus, WindowRecord};

/// A level must hold this many evidence windows in the settled period to
/// give a capacity figure: an offer seen once is not revisited.
pub const MIN_LEVEL_WINDOWS: usize = 2;

/// This many trailing windows without evidence end steadiness (the signal
/// is lost, the writes hang, or every window is discarded).
pub const STALE_WINDOWS: usize = 3;

/// The longest settled period searched, in evidence windows (about 17
/// minutes of 2 s windows). Bounds the cost of `--until-steady`'s polling.
pub const MAX_PERIOD: usize = 512;

/// The z value of the 95 % intervals.
const Z95: f64 = 1.959_964;

/// The steady-state rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyRule {
    /// The shortest settled period, in evidence windows.
    pub windows: usize,
    /// How far apart the two halves' lowest offers may lie, as a fraction
    /// of the top offer (0.10 = ±10 %).
    pub band: f64,
}

impl Default for SteadyRule {
    fn default() -> Self {
        SteadyRule {
            windows: 10,
            band: 0.10,
        }
    }
}

impl SteadyRule {
    /// The rule in one sentence, for the report.
    pub fn describe(&self) -> String {
        format!(
            "a settled period of at least {} evidence windows (up to {MAX_PERIOD}) whose two halves reach the same top offer (within one level) and the same bottom (within ±{}% of the top), with the top revisited; the capacity is the highest offer held for at least {MIN_LEVEL_WINDOWS} windows whose pooled failure ratio is within the bound; discarded and unconfirmed windows are never evidence",
            self.need(),
            self.band * 100.0
        )
    }

    fn need(&self) -> usize {
        self.windows.max(2)
    }
}

/// A two-sided confidence interval on a ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// The confidence (0.95).
    pub confidence: f64,
}

/// The 95 % Wilson score interval on `failures / attempts`.
pub fn wilson(failures: f64, attempts: f64) -> Interval {
    if attempts <= 0.0 {
        return Interval {
            low: 0.0,
            high: 1.0,
            confidence: 0.95,
        };
    }
    let p = (failures / attempts).clamp(0.0, 1.0);
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / attempts;
    let centre = (p + z2 / (2.0 * attempts)) / denom;
    let half = Z95 * (p * (1.0 - p) / attempts + z2 / (4.0 * attempts * attempts)).sqrt() / denom;
    Interval {
        low: if p == 0.0 {
            0.0
        } else {
            (centre - half).max(0.0)
        },
        high: if p == 1.0 {
            1.0
        } else {
            (centre + half).min(1.0)
        },
        confidence: 0.95,
    }
}

/// One level's pooled windows over the settled period.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelStats {
    /// The mean committed offer of the level's windows (the offer itself on
    /// an integer knob with levels of 1).
    pub offer: f64,
    /// The lowest offer pooled into the level.
    pub offer_min: f64,
    /// The highest offer pooled into the level.
    pub offer_max: f64,
    /// Evidence windows at this level.
    pub windows: usize,
    /// Resolved attempts, summed.
    pub attempts: f64,
    /// Failed attempts, summed.
    pub failures: f64,
    /// `failures / attempts`.
    pub failure_ratio: f64,
    /// The 95 % Wilson interval on the ratio.
    pub interval: Interval,
    /// Whether the pooled ratio is within the bound.
    pub within_bound: bool,
    /// Successful attempts per second at this level.
    pub throughput_per_sec: Option<f64>,
    /// Latency bound only: the median of the level's window quantiles, in
    /// seconds (null when none of its windows had one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_secs: Option<f64>,
    /// Latency bound only: whether that median is within the bound (a
    /// level with no quantile is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_within_bound: Option<bool>,
}

/// The settled period found in a history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Settled {
    /// Time of the period's first window (seconds since the loop started).
    pub from_secs: f64,
    /// Time of its last window.
    pub to_secs: f64,
    /// Evidence windows in it.
    pub windows: usize,
    /// Its lowest committed offer (the sawtooth's trough).
    pub offer_min: f64,
    /// Its highest committed offer (the sawtooth's peak).
    pub offer_max: f64,
    /// The width of one level.
    pub level_width: f64,
    /// Back-offs (Downs) in it.
    pub backoffs: usize,
    /// The lowest offer it backed off from.
    pub peak_min: Option<f64>,
    /// The highest offer it backed off from.
    pub peak_max: Option<f64>,
}

/// The evidence for a capacity figure.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The capacity level (null when every level exceeds the bound).
    pub capacity: Option<LevelStats>,
    /// The lowest level above it that the period visited (null when none
    /// was tried, at the ceiling say).
    pub next_step_up: Option<LevelStats>,
    /// Every level of the period, lowest first.
    pub levels: Vec<LevelStats>,
}

/// A steady target: its settled period and what it shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Steady {
    /// Mean committed offer over the settled period.
    pub offer: f64,
    /// Failures / attempts pooled over the settled period.
    pub failure_ratio: Option<f64>,
    /// Successful attempts per second over the settled period.
    pub throughput_per_sec: f64,
    /// The capacity figure: the capacity level's mean offer, rounded down
    /// on an integer knob (null when every level exceeds the bound).
    pub capacity: Option<f64>,
    /// The settled period.
    pub settled: Settled,
    /// The capacity and its evidence.
    pub evidence: Evidence,
}

/// Why a target is not steady.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotSteady {
    /// A stable code: `writes-not-confirmed`, `signal-lost`, `no-traffic`,
    /// `windows-discarded`, `too-few-windows`, `still-climbing`,
    /// `still-falling` or `offer-never-revisited`.
    pub reason: &'static str,
    /// A plain sentence with the figures.
    pub detail: String,
}

impl NotSteady {
    fn new(reason: &'static str, detail: String) -> Self {
        NotSteady { reason, detail }
    }
}

/// What a window can be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Use {
    Evidence,
    Unconfirmed,
    SignalError,
    Discarded,
    NoTraffic,
}

fn use_of(r: &WindowRecord) -> Use {
    if r.unconfirmed {
        Use::Unconfirmed
    } else if r.attempts.is_none() {
        Use::SignalError
    } else if r.discarded {
        Use::Discarded
    } else if r.attempts.is_some_and(|a| a <= 0.0) || r.failures.is_none() {
        Use::NoTraffic
    } else {
        Use::Evidence
    }
}

/// Whether `history` ends steady under `rule` at the failure bound `high`.
pub fn steady(history: &[WindowRecord], rule: &SteadyRule, high: f64) -> Option<Steady> {
    assess(history, rule, high).ok()
}

/// The steady state of `history` under `rule`, or why there is none.
pub fn assess(history: &[WindowRecord], rule: &SteadyRule, high: f64) -> Result<Steady, NotSteady> {
    assess_with(history, rule, high, None)
}

/// [`assess`] with a latency bound: a level is within the bounds only when
/// its pooled failure ratio is within `high` **and** the median of its
/// windows' latency quantiles is within the latency bound.
pub fn assess_with(
    history: &[WindowRecord],
    rule: &SteadyRule,
    high: f64,
    latency: Option<LatencyBoundStatus>,
) -> Result<Steady, NotSteady> {
    let need = rule.need();
    stale(history, need)?;
    let evidence = latest_evidence(history);
    if evidence.len() < need {
        return Err(NotSteady::new(
            "too-few-windows",
            format!(
                "too few windows: {} evidence windows of the {need} needed",
                evidence.len()
            ),
        ));
    }
    let tail = &evidence[..];
    let (width, integer) = levels_of(tail, need);
    let top = top_of(tail, need);
    let tol_bottom = (rule.band * top.abs()).max(width);
    let offers: Vec<f64> = tail.iter().map(|r| r.offer).collect();
    let levels: Vec<i64> = offers.iter().map(|&o| level(o, width)).collect();
    let mut longest = None;
    let mut first_failure = None;
    let n = tail.len();
    for len in need..=n {
        match settled(&offers[n - len..], &levels[n - len..], tol_bottom, need) {
            Ok(()) => longest = Some(len),
            Err(e) => {
                first_failure.get_or_insert(e);
            }
        }
    }
    let Some(len) = longest else {
        return Err(first_failure
            .map(Unsettled::explain)
            .unwrap_or_else(|| NotSteady::new("still-climbing", "no settled period".to_string())));
    };
    let period = &tail[tail.len() - len..];
    let levels = pool(period, width, high, latency);
    let candidate = levels.iter().rposition(qualifies);
    if candidate.is_none() {
        if let Some(l) = levels.iter().rev().find(|l| l.within_bound) {
            return Err(NotSteady::new(
                "offer-never-revisited",
                format!(
                    "offer never revisited: the highest offer within the bound, {}, held for {} window of the {MIN_LEVEL_WINDOWS} needed",
                    short(l.offer),
                    l.windows
                ),
            ));
        }
    }
    let attempts: f64 = period.iter().filter_map(|r| r.attempts).sum();
    let failures: f64 = period.iter().filter_map(|r| r.failures).sum();
    let secs: f64 = period.iter().filter_map(|r| r.window_secs).sum();
    let peaks: Vec<f64> = period
        .iter()
        .filter(|r| r.decision == "down")
        .map(|r| r.offer)
        .collect();
    let settled = Settled {
        from_secs: period[0].time_secs,
        to_secs: period[period.len() - 1].time_secs,
        windows: period.len(),
        offer_min: period.iter().map(|r| r.offer).fold(f64::MAX, f64::min),
        offer_max: period.iter().map(|r| r.offer).fold(f64::MIN, f64::max),
        level_width: width,
        backoffs: peaks.len(),
        peak_min: peaks.iter().copied().reduce(f64::min),
        peak_max: peaks.iter().copied().reduce(f64::max),
    };
    let capacity = candidate.map(|i| figure_of(&levels[i], integer));
    let evidence = Evidence {
        capacity: candidate.map(|i| levels[i].clone()),
        next_step_up: candidate.and_then(|i| levels.get(i + 1).cloned()),
        levels,
    };
    Ok(Steady {
        offer: period.iter().map(|r| r.offer).sum::<f64>() / period.len() as f64,
        failure_ratio: (attempts > 0.0).then(|| failures / attempts),
        throughput_per_sec: if secs > 0.0 {
            (attempts - failures) / secs
        } else {
            0.0
        },
        capacity,
        settled,
        evidence,
    })
}

/// The latest evidence windows, at most [`MAX_PERIOD`] of them, oldest
/// first.
fn latest_evidence(history: &[WindowRecord]) -> Vec<&WindowRecord> {
    let mut evidence: Vec<&WindowRecord> = history
        .iter()
        .rev()
        .filter(|r| use_of(r) == Use::Evidence)
        .take(MAX_PERIOD)
        .collect();
    evidence.reverse();
    evidence
}

/// The highest offer of the last `need` evidence windows (of all of them
/// when there are fewer).
fn top_of(evidence: &[&WindowRecord], need: usize) -> f64 {
    evidence[evidence.len().saturating_sub(need)..]
        .iter()
        .map(|r| r.offer)
        .fold(f64::MIN, f64::max)
}

/// The level width for `evidence` (one probe step at its recent top) and
/// whether every offer in it is an integer.
fn levels_of(evidence: &[&WindowRecord], need: usize) -> (f64, bool) {
    let integer = evidence.iter().all(|r| r.offer.fract() == 0.0);
    (level_width(top_of(evidence, need), integer), integer)
}

/// Whether a level can give a capacity figure: within the bound and held
/// for at least [`MIN_LEVEL_WINDOWS`] windows.
fn qualifies(l: &LevelStats) -> bool {
    l.within_bound && l.windows >= MIN_LEVEL_WINDOWS
}

/// A level's capacity figure: its mean offer, rounded down on an integer
/// knob.
fn figure_of(l: &LevelStats, integer: bool) -> f64 {
    if integer {
        l.offer.floor()
    } else {
        l.offer
    }
}

fn capacity_figure(offer: f64, l: &LevelStats, above: Option<&LevelStats>) -> CapacityFigure {
    CapacityFigure {
        offer,
        failure_ratio: l.failure_ratio,
        interval: [l.interval.low, l.interval.high],
        windows: l.windows,
        attempts: l.attempts,
        failures: l.failures,
        next_step_up: above.map(|u| u.offer),
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
    if let Ok(s) = assess_with(history, rule, high, latency) {
        if let (Some(offer), Some(c)) = (s.capacity, s.evidence.capacity.as_ref()) {
            return CapacityEstimate::Steady(capacity_figure(
                offer,
                c,
                s.evidence.next_step_up.as_ref(),
            ));
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
        )),
        None => CapacityEstimate::None,
    }
}

/// Ends steadiness when the latest windows give no evidence: the last
/// write is still unconfirmed after [`STALE_WINDOWS`] windows, the signal is
/// lost or idle as long, or every one of the last `need` windows was
/// discarded (a discarded window or two after each change is normal).
fn stale(history: &[WindowRecord], need: usize) -> Result<(), NotSteady> {
    let last: Vec<Use> = history.iter().rev().take(need).map(use_of).collect();
    let trailing = |u: Use| last.iter().take_while(|v| **v == u).count();
    let unconfirmed = trailing(Use::Unconfirmed);
    if unconfirmed >= STALE_WINDOWS {
        return Err(NotSteady::new(
            "writes-not-confirmed",
            format!(
                "writes not confirmed: the last {unconfirmed} windows ran on a write the tool had not confirmed (the offer in effect was the tool's); check the control's read-back and the admin API"
            ),
        ));
    }
    let streak = last.iter().take_while(|u| **u != Use::Evidence).count();
    let (reason, what, limit) = match last.first() {
        Some(Use::SignalError) => ("signal-lost", "signal lost: no valid reading", STALE_WINDOWS),
        Some(Use::NoTraffic) => ("no-traffic", "no traffic: no resolved attempts", STALE_WINDOWS),
        Some(Use::Discarded) => (
            "windows-discarded",
            "windows discarded: each straddled an offer change or fell within the signal's lag (is the lag longer than the window?)",
            need,
        ),
        _ => return Ok(()),
    };
    if streak >= limit {
        return Err(NotSteady::new(
            reason,
            format!("{what} in the last {streak} windows"),
        ));
    }
    Ok(())
}

/// The width of one level: one additive probe step at `top`.
fn level_width(top: f64, integer: bool) -> f64 {
    let top = top.abs();
    let w = if integer {
        (0.02 * top).floor().max(1.0)
    } else {
        (0.02 * top).max((0.1 * top).min(1.0))
    };
    if w.is_finite() && w > 0.0 {
        w
    } else {
        1.0
    }
}

fn level(offer: f64, width: f64) -> i64 {
    (offer / width + 1e-9).floor() as i64
}

/// How a stretch failed the test (built into a sentence only when it is
/// reported).
#[derive(Debug, Clone, Copy)]
struct Unsettled {
    reason: &'static str,
    len: usize,
    first: (f64, f64),
    second: (f64, f64),
    top: f64,
}

impl Unsettled {
    fn explain(self) -> NotSteady {
        let ranges = format!(
            "over the last {} evidence windows the offer ran {}–{} in the first half and {}–{} in the second",
            self.len,
            short(self.first.0),
            short(self.first.1),
            short(self.second.0),
            short(self.second.1)
        );
        let detail = match self.reason {
            "still-climbing" => format!("still climbing: {ranges}"),
            "still-falling" => format!("still falling: {ranges}"),
            _ => format!(
                "offer never revisited: the top, {}, was reached once in the last {} evidence windows",
                short(self.top),
                self.len
            ),
        };
        NotSteady::new(self.reason, detail)
    }
}

/// Whether a stretch is settled: its two halves reach the same top and
/// bottom, and its top was revisited (reached in two separate visits, or
/// held for half the rule's windows).
fn settled(offers: &[f64], levels: &[i64], tol_bottom: f64, need: usize) -> Result<(), Unsettled> {
    let half = offers.len() / 2;
    let range = |s: &[f64]| {
        s.iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), &o| (lo.min(o), hi.max(o)))
    };
    let (lo1, hi1) = range(&offers[..half]);
    let (lo2, hi2) = range(&offers[half..]);
    let top_of = |s: &[i64]| s.iter().copied().max().unwrap_or(i64::MIN);
    let (t1, t2) = (top_of(&levels[..half]), top_of(&levels[half..]));
    let fail = |reason| Unsettled {
        reason,
        len: offers.len(),
        first: (lo1, hi1),
        second: (lo2, hi2),
        top: hi1.max(hi2),
    };
    if t2 > t1 + 1 || lo2 > lo1 + tol_bottom {
        return Err(fail("still-climbing"));
    }
    if t2 < t1 - 1 || lo2 < lo1 - tol_bottom {
        return Err(fail("still-falling"));
    }
    // Visits to the top region (the top level and the one below it).
    let top = t1.max(t2);
    let (mut visits, mut run) = (0, 0);
    for &l in levels {
        if l >= top - 1 {
            if run == 0 {
                visits += 1;
            }
            run += 1;
            if visits >= 2 || run * 2 >= need {
                return Ok(());
            }
        } else {
            run = 0;
        }
    }
    Err(fail("offer-never-revisited"))
}

/// Pools a period's windows by level, lowest level first.
fn pool(
    period: &[&WindowRecord],
    width: f64,
    high: f64,
    latency: Option<LatencyBoundStatus>,
) -> Vec<LevelStats> {
    let mut by_level: std::collections::BTreeMap<i64, Vec<&WindowRecord>> = Default::default();
    for r in period {
        by_level.entry(level(r.offer, width)).or_default().push(r);
    }
    by_level
        .into_values()
        .map(|ws| {
            let attempts: f64 = ws.iter().filter_map(|r| r.attempts).sum();
            let failures: f64 = ws.iter().filter_map(|r| r.failures).sum();
            let secs: f64 = ws.iter().filter_map(|r| r.window_secs).sum();
            let ratio = if attempts > 0.0 {
                failures / attempts
            } else {
                0.0
            };
            let mut lats: Vec<f64> = ws.iter().filter_map(|r| r.latency_secs).collect();
            lats.sort_by(f64::total_cmp);
            let latency_secs = (!lats.is_empty()).then(|| {
                let n = lats.len();
                if n % 2 == 1 {
                    lats[n / 2]
                } else {
                    (lats[n / 2 - 1] + lats[n / 2]) / 2.0
                }
            });
            let latency_within_bound =
                latency.map(|b| latency_secs.is_some_and(|v| v <= b.bound_secs));
            LevelStats {
                offer: ws.iter().map(|r| r.offer).sum::<f64>() / ws.len() as f64,
                offer_min: ws.iter().map(|r| r.offer).fold(f64::MAX, f64::min),
                offer_max: ws.iter().map(|r| r.offer).fold(f64::MIN, f64::max),
                windows: ws.len(),
                attempts,
                failures,
                failure_ratio: ratio,
                interval: wilson(failures, attempts),
                within_bound: ratio <= high && latency_within_bound != Some(false),
                throughput_per_sec: (secs > 0.0).then(|| (attempts - failures) / secs),
                latency_secs,
                latency_within_bound,
            }
        })
        .collect()
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
    /// `neither` (no window's quantile reached the latency bound: the
    /// figure is a lower bound) (null without a capacity figure). See
    /// [`binding`].
    pub binding: Option<&'static str>,
    /// Per window: time, offer, attempts, failures, frac, decision.
    pub history: Vec<WindowRecord>,
}

/// Which bound limits a capacity figure: the one(s) the next step up
/// exceeded; when the period never went higher, the signal that drove most
/// of its back-offs, else what held it (latency-band holds), else the
/// signal of the last back-off before it; `failures` without a latency
/// bound. Latency binds only when some window's quantile was over the
/// bound: otherwise `neither`, and the figure is a lower bound.
pub fn binding(
    steady: &Steady,
    period: &[WindowRecord],
    high: f64,
    latency: Option<LatencyBoundStatus>,
) -> Option<&'static str> {
    steady.capacity?;
    let Some(bound) = latency else {
        return Some("failures");
    };
    let found = binding_found(steady, period, high);
    // Latency binds only where a window's quantile exceeded the bound: a
    // figure held in the band (or at the ceiling) below a bound no window
    // ever reached is a lower bound of the latency capacity (issue 26).
    let crossed = period
        .iter()
        .any(|r| r.latency_secs.is_some_and(|l| l > bound.bound_secs));
    Some(match found {
        "latency" if !crossed => "neither",
        "both" if !crossed => "failures",
        b => b,
    })
}

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
                format!(
                    "{name}: capacity {} {control} at steady state, failure ratio {} within the bound {} (95% interval {}–{} over {} windows){next}",
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
            .map(|s| {
                TargetReport::new_with(
                    &s.name,
                    s.knob,
                    s.high,
                    s.last_bad,
                    telemetry.history(&s.name),
                    rule,
                    s.latency,
                )
            })
            .collect();
        Report::new(targets, rule)
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
