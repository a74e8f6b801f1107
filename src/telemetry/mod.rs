//! Telemetry: what the controller tells people about itself.
//!
//! Why it exists: the governor's decisions are a measurement, so they must be
//! visible: exported metrics for Prometheus and Grafana ([`metrics`]), one
//! log line per movement ([`logging`]), the one exporter that turns every
//! event into those ([`export`]), and the per-target
//! state and window history that the API and the capacity report read
//! ([`TargetStatus`], [`WindowRecord`]), and the live capacity estimate
//! ([`capacity`]) the status, `throttle_capacity` and the log show. The
//! estimate is computed above this module, by the report's code, because
//! the report reads this module's records.
//!
//! The HTTP server that serves all of this is the `http` module, above this
//! module.
//!
//! What it may touch: the log output. It never decides, never writes to a
//! load tool, and holds no listener.

pub mod capacity;
pub mod console;
pub mod export;
pub mod logging;
pub mod metrics;

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::governor::{Confidence, HoldReason, Outcome};
use metrics::{DecisionLabels, QuantileLabels};

pub use capacity::{CapacityEstimate, CapacityFigure, DeadBand};
pub use metrics::Metrics;

/// Windows of history kept per target when a report is asked for (about
/// 5.5 hours at 2 s windows). Without a report only the last few windows are
/// kept (enough for the steady-state rule), so memory stays flat with many
/// targets.
pub const HISTORY_LIMIT: usize = 10_000;

/// Windows kept per target under `--until-steady` with no report (enough
/// for the steady-state rule); a plain `run` keeps [`live_history`].
pub const SHORT_HISTORY: usize = 64;

/// Windows kept per target for the live page's charts on a plain `run`
/// (5 minutes at 2 s windows), while that fits [`LIVE_HISTORY_BUDGET`].
pub const LIVE_HISTORY: usize = 150;

/// Windows kept for the live page over all targets of a plain `run`: about
/// 21 MB of history, however many targets there are.
pub const LIVE_HISTORY_BUDGET: usize = 200_000;

/// The windows each of `targets` targets keeps for the live page on a plain
/// `run`: [`LIVE_HISTORY`], less when that would pass
/// [`LIVE_HISTORY_BUDGET`] (20 windows each at 10,000 targets), never
/// fewer than the 2 a chart needs.
pub fn live_history(targets: usize) -> usize {
    (LIVE_HISTORY_BUDGET / targets.max(1)).clamp(2, LIVE_HISTORY)
}

/// One window, as recorded for reports.
#[derive(Debug, Clone, Serialize)]
pub struct WindowRecord {
    /// Seconds since the target's loop started.
    pub time_secs: f64,
    /// The committed offer the window ran at.
    pub offer: f64,
    /// Resolved attempts (null without a valid window).
    pub attempts: Option<f64>,
    /// Failed attempts (null without a valid window).
    pub failures: Option<f64>,
    /// Attempt-failure fraction (null without traffic).
    pub frac: Option<f64>,
    /// The window's length in seconds.
    pub window_secs: Option<f64>,
    /// `up`, `down` or `hold`.
    pub decision: &'static str,
    /// The offer after the decision.
    pub to: f64,
    /// The mode or hold reason.
    pub label: &'static str,
    /// The window straddled an offer change (or fell within the signal's
    /// lag after one): it was not decided on and must not be pooled.
    #[serde(default)]
    pub discarded: bool,
    /// The governor's last write had not been confirmed by the tool at this
    /// window: the offer in effect is the tool's, not ours.
    #[serde(default)]
    pub unconfirmed: bool,
    /// The window's latency quantile in seconds (latency bound only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_secs: Option<f64>,
    /// Whether latency drove the decision (latency bound only).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latency_drove: bool,
    /// How sure the verdict behind this window's decision is (`robust` and
    /// `gentle` only; absent for holds without a verdict and under the
    /// seed rules): what the report's verdict summary and the HTML's
    /// tooltips read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
}

impl WindowRecord {
    /// The record of one window's outcome: `at` seconds since the loop
    /// started, `in_effect` the tool's offer while a write is pending or
    /// unconfirmed. The history and the live capacity estimate both record
    /// windows through this.
    pub fn of_outcome(
        o: &Outcome,
        at: f64,
        window_secs: f64,
        unconfirmed: bool,
        in_effect: Option<f64>,
    ) -> Self {
        let sig = o.signal;
        WindowRecord {
            time_secs: at,
            offer: in_effect.unwrap_or(o.from),
            attempts: sig.map(|s| s.attempts),
            failures: sig.map(|s| s.failures),
            frac: sig.and_then(|s| s.frac),
            window_secs: sig.map(|_| window_secs),
            decision: o.decision_str(),
            to: o.to,
            label: label_of(o),
            discarded: o.reason == Some(HoldReason::OfferChange),
            unconfirmed,
            latency_secs: o.latency.and_then(|l| l.observed),
            latency_drove: o.latency.is_some_and(|l| l.drove),
            confidence: o.confidence,
        }
    }
}

/// A [`WindowRecord`] as a target's history keeps it: 96 bytes instead of
/// 232, because every target keeps [`SHORT_HISTORY`] of them for as long as
/// it runs (at 10,000 targets every 8 bytes are 5 MB). An absent value is
/// kept as NaN, so a present NaN reads back as absent (no producer makes
/// one: fractions and quantiles are finite or absent). The decision is two
/// bits of the flags, and a verdict's [`Confidence`] (88 bytes) is boxed,
/// so a window without a verdict (the seed rules, a gathering hold) pays
/// only the pointer.
#[derive(Debug, Clone)]
struct Kept {
    time_secs: f64,
    offer: f64,
    to: f64,
    attempts: f64,
    failures: f64,
    frac: f64,
    window_secs: f64,
    latency_secs: f64,
    label: &'static str,
    confidence: Option<Box<Confidence>>,
    /// [`Kept::DISCARDED`], [`Kept::UNCONFIRMED`], [`Kept::LATENCY_DROVE`],
    /// and the decision's index in [`Kept::DECISIONS`] above them.
    flags: u8,
}

impl Kept {
    const DISCARDED: u8 = 1;
    const UNCONFIRMED: u8 = 2;
    const LATENCY_DROVE: u8 = 4;
    /// The decision's bits: its index in [`Kept::DECISIONS`], shifted.
    const DECISION_SHIFT: u8 = 3;
    /// Every spelling of [`WindowRecord::decision`]
    /// ([`Outcome::decision_str`]).
    const DECISIONS: [&'static str; 3] = ["hold", "up", "down"];

    fn record(&self) -> WindowRecord {
        let back = |x: f64| (!x.is_nan()).then_some(x);
        let decision = usize::from(self.flags >> Kept::DECISION_SHIFT);
        WindowRecord {
            time_secs: self.time_secs,
            offer: self.offer,
            attempts: back(self.attempts),
            failures: back(self.failures),
            frac: back(self.frac),
            window_secs: back(self.window_secs),
            decision: Kept::DECISIONS[decision.min(Kept::DECISIONS.len() - 1)],
            to: self.to,
            label: self.label,
            discarded: self.flags & Kept::DISCARDED != 0,
            unconfirmed: self.flags & Kept::UNCONFIRMED != 0,
            latency_secs: back(self.latency_secs),
            latency_drove: self.flags & Kept::LATENCY_DROVE != 0,
            confidence: self.confidence.as_deref().copied(),
        }
    }
}

impl From<WindowRecord> for Kept {
    fn from(r: WindowRecord) -> Self {
        let nan = |x: Option<f64>| x.unwrap_or(f64::NAN);
        let flag = |set: bool, bit: u8| if set { bit } else { 0 };
        // Every producer spells the decision as one of DECISIONS; anything
        // else would read back as a hold.
        let decision = Kept::DECISIONS
            .iter()
            .position(|d| *d == r.decision)
            .unwrap_or(0) as u8;
        Kept {
            time_secs: r.time_secs,
            offer: r.offer,
            to: r.to,
            attempts: nan(r.attempts),
            failures: nan(r.failures),
            frac: nan(r.frac),
            window_secs: nan(r.window_secs),
            latency_secs: nan(r.latency_secs),
            label: r.label,
            confidence: r.confidence.map(Box::new),
            flags: flag(r.discarded, Kept::DISCARDED)
                | flag(r.unconfirmed, Kept::UNCONFIRMED)
                | flag(r.latency_drove, Kept::LATENCY_DROVE)
                | decision << Kept::DECISION_SHIFT,
        }
    }
}

/// The live state of one target, for `/api/v1/targets`.
#[derive(Debug, Clone, Serialize)]
pub struct TargetStatus {
    /// The target's name.
    pub name: String,
    /// `concurrency` or `rate`.
    pub knob: &'static str,
    /// The committed offer as the governor knows it.
    pub offer: f64,
    /// The floor.
    pub floor: f64,
    /// The ceiling (null when unbounded).
    pub ceiling: Option<f64>,
    /// The failure bound.
    pub high: f64,
    /// The clean threshold.
    pub low: f64,
    /// The congestion memory.
    pub last_bad: Option<f64>,
    /// The clean streak.
    pub clean_streak: u32,
    /// The last window's fraction.
    pub last_frac: Option<f64>,
    /// The last decision (`up`, `down`, `hold`).
    pub last_decision: Option<&'static str>,
    /// The last decision's mode or hold reason.
    pub last_label: Option<&'static str>,
    /// The last signal or control error (cleared by a good window).
    pub last_error: Option<String>,
    /// Whether the baseline reading is set.
    pub has_baseline: bool,
    /// Windows decided so far.
    pub windows: u64,
    /// A write in flight, if any.
    pub pending_write: Option<f64>,
    /// Whether this target runs without writing.
    pub dry_run: bool,
    /// Whether the signal-loss policy is in force.
    pub signal_lost: bool,
    /// The governor profile (`gentle`, `robust` or `seed`).
    pub profile: &'static str,
    /// The signal lag in effect: windows start only this long after an
    /// offer change.
    pub signal_lag: String,
    /// Whether the last write was confirmed by the tool (true before any).
    pub writes_confirmed: bool,
    /// Whether another writer keeps changing the knob (the target holds).
    pub outside_writer_conflict: bool,
    /// The latency bound, when one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyBoundStatus>,
    /// The profile advice logged for this target, if any (at most one a
    /// run, under the seed profile): the signature seen, why, and the
    /// suggestion to leave the seed rules for `gentle` or `robust`.
    pub advice: Option<String>,
    /// The live capacity estimate: null until a level within the bound is
    /// bracketed by a breaching level above it, then the figure, whether
    /// the steady-state rule holds, and its evidence (see
    /// the report module's `live` submodule).
    pub capacity: CapacityEstimate,
}

/// A target's latency bound, for the status and the report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyBoundStatus {
    /// The quantile bounded (0.99 for p99).
    pub quantile: f64,
    /// The bound in seconds.
    pub bound_secs: f64,
    /// The clean level in seconds.
    pub low_secs: f64,
}

/// The live state of one member of a target group, for `/api/v1/groups`.
#[derive(Debug, Clone, Serialize)]
pub struct MemberStatus {
    /// The member's name (its address by default).
    pub name: String,
    /// The address it was discovered or configured with.
    pub address: Option<String>,
    /// Its weight in the split.
    pub weight: f64,
    /// Whether it takes part in the split.
    pub up: bool,
    /// Its share of the group's offer (null while down).
    pub share: Option<f64>,
    /// The most it may be given: its weighted share of the group's ceiling.
    pub ceiling_share: Option<f64>,
    /// The value its tool reported last.
    pub committed: Option<f64>,
    /// The last signal error, while down.
    pub last_error: Option<String>,
}

/// Metrics, status and history shared by every target task and the server.
#[derive(Debug)]
pub struct Telemetry {
    /// Exported metrics.
    pub metrics: Metrics,
    /// Each target's status and history, by name.
    targets: Mutex<BTreeMap<String, TargetSlot>>,
    history_limit: usize,
    groups: Mutex<BTreeMap<String, Vec<MemberStatus>>>,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry::with_history(HISTORY_LIMIT)
    }
}

impl Telemetry {
    /// Telemetry keeping at most `limit` windows of history per target.
    pub fn with_history(limit: usize) -> Self {
        Telemetry {
            metrics: Metrics::default(),
            targets: Mutex::default(),
            history_limit: limit.max(1),
            groups: Mutex::default(),
        }
    }

    /// Registers a target's initial status, with an empty history; returns
    /// its slot, through which its exporter updates both.
    pub fn register(&self, status: TargetStatus) -> TargetSlot {
        let slot = TargetSlot::new(status, self.history_limit);
        lock(&self.targets).insert(slot.name(), slot.clone());
        slot
    }

    /// A registered target's slot.
    pub fn slot(&self, name: &str) -> Option<TargetSlot> {
        lock(&self.targets).get(name).cloned()
    }

    /// Removes a target's status, history and series.
    pub fn unregister(&self, name: &str) {
        lock(&self.targets).remove(name);
        self.metrics.remove_target(name);
        self.set_members(name, None);
    }

    /// Replaces a group's member statuses (`None` removes the group and the
    /// series of every member it had).
    pub fn set_members(&self, name: &str, members: Option<Vec<MemberStatus>>) {
        let mut groups = lock(&self.groups);
        let old = match members {
            Some(m) => groups.insert(name.to_string(), m),
            None => groups.remove(name),
        };
        let keep: Vec<String> = groups
            .get(name)
            .map(|m| m.iter().map(|s| s.name.clone()).collect())
            .unwrap_or_default();
        for gone in old.unwrap_or_default() {
            if !keep.contains(&gone.name) {
                let l = metrics::MemberLabels {
                    target: name.into(),
                    member: gone.name,
                };
                self.metrics.member_offer.remove(&l);
                self.metrics.member_up.remove(&l);
            }
        }
    }

    /// A snapshot of every group's members.
    pub fn groups(&self) -> BTreeMap<String, Vec<MemberStatus>> {
        lock(&self.groups).clone()
    }

    /// Updates a target's status in place.
    pub fn update(&self, name: &str, f: impl FnOnce(&mut TargetStatus)) {
        if let Some(slot) = self.slot(name) {
            slot.update(f);
        }
    }

    /// Appends one window to a target's history (bounded).
    pub fn record(&self, name: &str, record: WindowRecord) {
        if let Some(slot) = self.slot(name) {
            slot.record(record);
        }
    }

    /// Exports one outcome: decision and window metrics, the target's
    /// status, and its history, through the target's own handles (`slot`
    /// is `None` before the target is registered). Shared by single
    /// targets and groups.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn export_outcome(
        &self,
        target: &metrics::Name,
        series: &metrics::TargetSeries,
        slot: Option<&TargetSlot>,
        o: &Outcome,
        at: f64,
        window_secs: f64,
        unconfirmed: bool,
        in_effect: Option<f64>,
    ) {
        // The offer the window ran at: the tool's while our write is
        // pending or unconfirmed.
        let ran_at = in_effect.unwrap_or(o.from);
        let decision = o.decision_str();
        let mode = o.mode.map(|m| m.as_str()).unwrap_or("none");
        let reason = o.reason.map(|r| r.as_str()).unwrap_or("none");
        match series.decision(decision, mode, reason) {
            Some(c) => {
                c.inc();
            }
            None => {
                self.metrics
                    .decisions
                    .get_or_create(&DecisionLabels {
                        target: target.clone(),
                        decision,
                        mode,
                        reason,
                    })
                    .inc();
            }
        }
        if o.memory_cleared {
            series.memory_clears.inc();
        }
        series.last_bad.set(o.last_bad.unwrap_or(f64::NAN));
        series.clean_streak.set(o.clean_streak as f64);
        series.offer.set(ran_at);
        if let Some(lat) = o.latency {
            self.metrics
                .window_latency
                .get_or_create(&QuantileLabels {
                    target: target.clone(),
                    slo_quantile: lat.quantile.to_string(),
                })
                .set(lat.observed.unwrap_or(f64::NAN));
        }
        let sig = o.signal;
        if let Some(s) = sig {
            series.window_attempts.set(s.attempts);
            series.window_failures.set(s.failures);
            series.attempts.inc_by(s.attempts);
            series.failures.inc_by(s.failures);
            if let Some(f) = s.frac {
                series.failure_ratio.set(f);
            }
        }
        let valid = !matches!(
            o.reason,
            Some(HoldReason::SignalError)
                | Some(HoldReason::Baseline)
                | Some(HoldReason::OfferChange)
        );
        let Some(slot) = slot else {
            // Not registered (no `Started` yet): no status to update.
            return;
        };
        slot.update(|st| {
            st.offer = ran_at;
            st.last_bad = o.last_bad;
            st.clean_streak = o.clean_streak;
            if let Some(f) = sig.and_then(|s| s.frac) {
                st.last_frac = Some(f);
            }
            st.last_decision = Some(decision);
            st.last_label = Some(label_of(o));
            if valid {
                st.last_error = None;
                st.windows += 1;
            }
        });
        slot.record(WindowRecord::of_outcome(
            o,
            at,
            window_secs,
            unconfirmed,
            in_effect,
        ));
    }

    /// A snapshot of every target's status.
    pub fn statuses(&self) -> Vec<TargetStatus> {
        lock(&self.targets)
            .values()
            .map(TargetSlot::status)
            .collect()
    }

    /// One target's status.
    pub fn status(&self, name: &str) -> Option<TargetStatus> {
        self.slot(name).map(|s| s.status())
    }

    /// One target's last window, without copying its history.
    pub fn last_record(&self, name: &str) -> Option<WindowRecord> {
        self.slot(name).and_then(|s| s.last_record())
    }

    /// A snapshot of one target's history.
    pub fn history(&self, name: &str) -> Vec<WindowRecord> {
        self.slot(name).map(|s| s.history()).unwrap_or_default()
    }

    /// Whether every registered target has a baseline.
    pub fn ready(&self) -> bool {
        let targets = lock(&self.targets);
        !targets.is_empty() && targets.values().all(|t| lock(&t.0.status).has_baseline)
    }
}

/// One target's status and window history, shared by the [`Telemetry`]
/// maps (which the server and the report read) and the target's exporter,
/// which writes them every window without a lookup by name.
#[derive(Debug, Clone)]
pub struct TargetSlot(Arc<SlotInner>);

#[derive(Debug)]
struct SlotInner {
    status: Mutex<TargetStatus>,
    history: Mutex<VecDeque<Kept>>,
    history_limit: usize,
}

impl TargetSlot {
    /// A slot holding `status` and an empty history of at most `limit`
    /// windows.
    fn new(status: TargetStatus, limit: usize) -> Self {
        TargetSlot(Arc::new(SlotInner {
            status: Mutex::new(status),
            history: Mutex::default(),
            history_limit: limit.max(1),
        }))
    }

    fn name(&self) -> String {
        lock(&self.0.status).name.clone()
    }

    /// Updates the status in place.
    pub fn update(&self, f: impl FnOnce(&mut TargetStatus)) {
        f(&mut lock(&self.0.status));
    }

    /// Appends one window to the history (bounded).
    pub fn record(&self, record: WindowRecord) {
        let kept = Kept::from(record);
        let mut h = lock(&self.0.history);
        while h.len() >= self.0.history_limit {
            h.pop_front();
        }
        h.push_back(kept);
    }

    /// A copy of the status.
    pub fn status(&self) -> TargetStatus {
        lock(&self.0.status).clone()
    }

    fn last_record(&self) -> Option<WindowRecord> {
        lock(&self.0.history).back().map(Kept::record)
    }

    fn history(&self) -> Vec<WindowRecord> {
        lock(&self.0.history).iter().map(Kept::record).collect()
    }
}

impl TargetStatus {
    /// The status of a target that has just started.
    pub fn initial(name: &str, p: &crate::governor::Params, dry_run: bool) -> Self {
        TargetStatus {
            name: name.to_string(),
            knob: p.control.as_str(),
            offer: p.start,
            floor: p.floor,
            ceiling: p.ceiling.is_finite().then_some(p.ceiling),
            high: p.high,
            low: p.low,
            last_bad: None,
            clean_streak: 0,
            last_frac: None,
            last_decision: None,
            last_label: None,
            last_error: None,
            has_baseline: false,
            windows: 0,
            pending_write: None,
            dry_run,
            signal_lost: false,
            profile: crate::governor::Profile::default().as_str(),
            signal_lag: String::new(),
            writes_confirmed: true,
            outside_writer_conflict: false,
            latency: None,
            advice: None,
            capacity: CapacityEstimate::None,
        }
    }
}

/// An outcome's mode, or its hold reason (empty without either).
fn label_of(o: &Outcome) -> &'static str {
    o.mode
        .map(|m| m.as_str())
        .or(o.reason.map(|r| r.as_str()))
        .unwrap_or("")
}

/// Locks a mutex, recovering the data if a holder panicked (the data are
/// plain status values, always consistent between statements).
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::{Kept, WindowRecord};
    use crate::governor::robust::background::BackgroundEstimate;
    use crate::governor::{Confidence, VerdictClass};

    fn record(present: bool, flags: bool, decision: &'static str) -> WindowRecord {
        let some = |x: f64| present.then_some(x);
        WindowRecord {
            time_secs: 12.5,
            offer: 182.01600000000002,
            attempts: some(300.0),
            failures: some(7.0),
            frac: some(7.0 / 300.0),
            window_secs: some(0.1),
            decision,
            to: 1e-300,
            label: "backing-off",
            discarded: flags,
            unconfirmed: !flags,
            latency_secs: some(0.3),
            latency_drove: flags,
            confidence: present.then_some(Confidence {
                verdict: VerdictClass::Breach,
                attempts: 900.0,
                failures: 21.0,
                lower: 0.015_3,
                upper: 0.035_4,
                clean_below: 0.03,
                high: 0.05,
                background: flags.then_some(BackgroundEstimate {
                    rate: 0.02,
                    attempts: 500.0,
                    failures: 10.0,
                }),
            }),
        }
    }

    #[test]
    fn a_kept_window_reads_back_as_it_was_recorded() {
        for present in [true, false] {
            for flags in [true, false] {
                for decision in ["up", "down", "hold"] {
                    let r = record(present, flags, decision);
                    let back = Kept::from(r.clone()).record();
                    assert_eq!(
                        serde_json::to_value(&back).unwrap(),
                        serde_json::to_value(&r).unwrap(),
                        "present {present}, flags {flags}, {decision}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_kept_window_is_smaller_than_a_record() {
        let (kept, full) = (size_of::<Kept>(), size_of::<WindowRecord>());
        assert!(
            kept <= 96 && kept < full,
            "kept {kept} bytes, record {full}"
        );
    }
}
