//! The steady-state rule: when a target's window history has settled, and
//! what its settled period shows.
//!
//! Why it exists: a load figure taken while failures are high is an artefact
//! of saturation, so the report and the live estimate must both know whether
//! a run has settled, and by one rule. This file decides steadiness from a
//! target's window history (purely, no clock and no I/O); the pooling of a
//! period's windows by offer level is in [`super::levels`].
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

use serde::Serialize;

use super::levels::{figure_of, level, level_width, pool, qualifies, LevelStats};
use super::short;
use crate::telemetry::{LatencyBoundStatus, WindowRecord};

/// A level must hold this many evidence windows in the settled period to
/// give a capacity figure: an offer seen once is not revisited.
pub const MIN_LEVEL_WINDOWS: usize = 2;

/// This many trailing windows without evidence end steadiness (the signal
/// is lost, the writes hang, or every window is discarded).
pub const STALE_WINDOWS: usize = 3;

/// The longest settled period searched, in evidence windows (about 17
/// minutes of 2 s windows). Bounds the cost of `--until-steady`'s polling.
pub const MAX_PERIOD: usize = 512;

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

    pub(super) fn need(&self) -> usize {
        self.windows.max(2)
    }
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
pub(super) enum Use {
    Evidence,
    Unconfirmed,
    SignalError,
    Discarded,
    NoTraffic,
}

pub(super) fn use_of(r: &WindowRecord) -> Use {
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
pub(super) fn latest_evidence(history: &[WindowRecord]) -> Vec<&WindowRecord> {
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
pub(super) fn levels_of(evidence: &[&WindowRecord], need: usize) -> (f64, bool) {
    let integer = evidence.iter().all(|r| r.offer.fract() == 0.0);
    (level_width(top_of(evidence, need), integer), integer)
}

/// Whether a level can give a capacity figure: within the bound and held
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
