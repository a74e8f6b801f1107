//! The window step: the one place where a window is decided (pure).
//!
//! Why it exists: single targets and groups used to decide in two loops
//! that drifted apart. Here a single target is a group of one member. Each
//! round of reads goes through [`Core::step`], which attributes every
//! member's window to one offer, sums the attributable windows, lets the
//! governor decide once, applies the signal-loss and outside-writer
//! policies, and returns a value: the events to export and the shares to
//! write. It performs no I/O and reads no clock: the caller passes the
//! reads and the time.
//!
//! # Attribution: windows that belong to one offer
//! docs/GOVERNOR.md assumes that every attempt of a window was made at the
//! committed offer. Outside the tool that holds only if a window starts
//! after the offer in effect last changed, plus the signal's **lag** (how
//! far the counters trail the load: Locust's stats cache and worker
//! reports, a push or scrape interval). So each member keeps `quiet_from`,
//! the earliest time a window may start:
//!
//! - when one of our writes finishes, `finished_at + lag`;
//! - while a write is pending, `now + lag` (it may land at any moment);
//! - when the tool reports a different offer that our confirmed write does
//!   not explain, `now + lag`.
//!
//! A window whose baseline reading is older than `quiet_from` straddles a
//! change: it is discarded (`throttle_windows_discarded_total`), never
//! decided on and never used for `last_bad`. While a write is unconfirmed
//! the offer in effect is what the tool reports, and the governor steps
//! from that.
//!
//! Once the writes settle (`finished_at + lag`), the task reads a new
//! baseline at once and restarts the window's clock, so that a whole window
//! follows; unless every member's baseline is already that recent
//! (`Core::based_since`): a read then would close the open window after
//! milliseconds, and a window of 10 attempts would be decided as a whole
//! one (seen: a real Goose run climbed 2 -> 4 on one second's 10 attempts).
//! A window is weighed by the time it covers (`fold::window_span`).

use crate::engine::members::Members;

use super::split::split;
use crate::control::{same_offer, ControlError};
use crate::governor::advice::Advisor;
use crate::governor::{Outcome, Params, Profile, ThrottleGovernor};
use crate::signal::{Counters, SignalError};
use crate::telemetry::export::Event;
use crate::telemetry::MemberStatus;
use crate::window::{LatencySample, LatencyTracker, WindowTracker};

mod decide;
mod early;
mod fold;
mod offer;
mod send;
pub use early::{certain_breach, peek_interval, EarlyBreach, FIRST_LOOK};

/// Consecutive outside changes after our confirmed writes that make a
/// conflict (and calm windows that end one).
pub const CONFLICT_WINDOWS: u32 = 3;

/// What a member's writer has done, as the loop saw it around a read.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WriterView {
    /// A value handed to the writer and not finished yet.
    pub pending: Option<f64>,
    /// Writes finished so far.
    pub generation: u64,
    /// When the last write finished (seconds on the task's clock).
    pub finished_at: Option<f64>,
    /// The value of the last finished write.
    pub last_value: Option<f64>,
    /// Whether the last finished write was confirmed.
    pub last_confirmed: bool,
    /// The tool's maximum, learned from a refused write.
    pub tool_max: Option<f64>,
}

impl WriterView {
    /// Whether a write is pending.
    pub fn busy(&self) -> bool {
        self.pending.is_some()
    }
}

/// One member's read of a round.
#[derive(Debug)]
pub struct MemberRead {
    /// The counters, or why not.
    pub signal: Result<Counters, SignalError>,
    /// The committed offer from a separate read-back (None: from the
    /// counters' offer gauge).
    pub committed: Option<Result<f64, ControlError>>,
    /// The writer before the read.
    pub before: WriterView,
    /// The writer after the read.
    pub after: WriterView,
}

/// One member's state between rounds.
#[derive(Debug, Clone)]
pub struct MemberState {
    /// Its name (`member` label; the target's name for a single target).
    pub name: String,
    /// Its address, when it has one.
    pub address: Option<String>,
    /// Its weight in the split.
    pub weight: f64,
    /// Its counter window.
    pub window: WindowTracker,
    /// Whether it takes part in the split.
    pub up: bool,
    failed_windows: u32,
    /// The offer its tool reported last (None when unknown).
    pub committed: Option<f64>,
    /// Its share of the offer.
    pub share: Option<f64>,
    /// The most it may be given.
    pub ceiling_share: f64,
    /// Its last signal error, while failing.
    pub last_error: Option<String>,
    quiet_from: f64,
    seen_generation: u64,
    last_reported: Option<f64>,
    since_reset: Option<u32>,
    tool_max: Option<f64>,
    last_write: WriterView,
    /// The lag in effect for this member's signal, in seconds.
    pub lag: f64,
    /// The first look after the last write finished, while its window is
    /// watched for an early verdict (see [`early`]).
    early_base: Option<(crate::window::Reading, u64)>,
    /// The writes finished before the read of the window's baseline began.
    baseline_generation: Option<u64>,
}

impl MemberState {
    /// A new member (no baseline yet).
    pub fn new(name: &str, address: Option<String>, weight: f64, lag: f64) -> Self {
        MemberState {
            name: name.to_string(),
            address,
            weight,
            window: WindowTracker::default(),
            up: true,
            failed_windows: 0,
            committed: None,
            share: None,
            ceiling_share: f64::INFINITY,
            last_error: None,
            quiet_from: f64::NEG_INFINITY,
            seen_generation: 0,
            last_reported: None,
            since_reset: None,
            tool_max: None,
            last_write: WriterView::default(),
            lag,
            early_base: None,
            baseline_generation: None,
        }
    }

    /// Whether its last finished write was not confirmed.
    fn unconfirmed(&self) -> bool {
        self.last_write.last_value.is_some() && !self.last_write.last_confirmed
    }
}

/// The policies of one target, fixed at build time.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The configured parameters (a group's are the group's).
    pub params: Params,
    /// Whole numbers only.
    pub integer: bool,
    /// Read and decide, never write.
    pub dry_run: bool,
    /// Windows without a valid signal before the policy applies.
    pub signal_loss_windows: u32,
    /// `on_signal_loss = "floor"` (else hold).
    pub loss_to_floor: bool,
    /// Failed windows before a group member is down (None: a single
    /// target, which is never dropped from its own split).
    pub down_after: Option<u32>,
    /// `signal_lag`, when configured (seconds).
    pub lag_override: Option<f64>,
    /// A group (events name their member).
    pub group: bool,
    /// The window's length in seconds.
    pub window_secs: f64,
    /// Close a breaching window early when its breach is certain
    /// (`early`).
    pub early_verdicts: bool,
    /// An early window starts only once the signal's lag has passed after
    /// the write, as a full window does (`early`).
    pub early_after_lag: bool,
}

/// What one round produced.
#[derive(Debug)]
pub struct StepOut {
    /// Everything to export, in order (the window's outcome among them).
    pub events: Vec<Event>,
    /// Shares to hand to members' writers.
    pub writes: Vec<(String, f64)>,
    /// The window's outcome.
    pub outcome: Outcome,
    /// Whether the outcome decided on a window (memory may have changed).
    pub decided: bool,
}

/// The engine's decision state for one target.
#[derive(Debug)]
pub struct Core {
    /// The governor.
    pub gov: ThrottleGovernor,
    /// The members, by name.
    pub members: Members<MemberState>,
    /// The policies.
    pub policy: Policy,
    loss_invalid: u32,
    loss_lost: bool,
    last_outside: Option<f64>,
    /// The split must be (re)computed and written.
    pub need_split: bool,
    fights: u32,
    calm: u32,
    confirmed_since_outside: bool,
    /// Another writer keeps changing the knob: hold, write nothing.
    pub conflict: bool,
    /// Watches the seed profile's windows for signatures that the
    /// robust and gentle profiles handle better (None under them).
    advisor: Option<Advisor>,
    /// The latency bound, when one is set (single targets only).
    pub latency: Option<LatencyState>,
    /// The last decided window moved the offer up: the window now open is
    /// watched for an early verdict ([`early`]).
    watch: bool,
    /// The round being stepped closes its window early.
    closing: Option<EarlyBreach>,
}

/// A latency bound and its window bookkeeping (see `governor::latency_bound`).
#[derive(Debug, Clone)]
pub struct LatencyState {
    /// The quantile bounded, e.g. 0.99.
    pub quantile: f64,
    /// The bound in seconds.
    pub bound: f64,
    /// The clean level in seconds.
    pub low: f64,
    /// How far the latency source trails the load (seconds): the member's
    /// lag is at least this.
    pub lag: f64,
    tracker: LatencyTracker,
}

impl LatencyState {
    /// A bound with no baseline yet.
    pub fn new(quantile: f64, bound: f64, low: f64, lag: f64) -> Self {
        LatencyState {
            quantile,
            bound,
            low,
            lag,
            tracker: LatencyTracker::default(),
        }
    }
}

impl Core {
    /// A core over `gov` with no members yet.
    pub fn new(gov: ThrottleGovernor, policy: Policy) -> Self {
        let advisor = (gov.profile() == Profile::Seed).then(|| Advisor::new(gov.params()));
        Core {
            advisor,
            gov,
            members: Members::new(),
            policy,
            loss_invalid: 0,
            loss_lost: false,
            last_outside: None,
            need_split: false,
            fights: 0,
            calm: 0,
            confirmed_since_outside: false,
            conflict: false,
            latency: None,
            watch: false,
            closing: None,
        }
    }

    /// Sets a latency bound.
    pub(crate) fn with_latency(mut self, latency: LatencyState) -> Self {
        self.latency = Some(latency);
        self
    }

    fn member_name(&self, name: &str) -> Option<String> {
        self.policy.group.then(|| name.to_string())
    }

    /// Clamps a value into the governor's `[floor, ceiling]`.
    pub(crate) fn clamp(&self, v: f64) -> f64 {
        let p = self.gov.params();
        v.clamp(p.floor, p.ceiling)
    }

    /// Resumes from a reload: the offer (clamped) and the memory.
    pub(crate) fn resume(&mut self, current: f64, last_bad: Option<f64>, clean_streak: u32) {
        let c = self.clamp(current);
        self.gov.set_current(c);
        self.gov.restore_memory(last_bad, clean_streak);
        self.need_split = true;
    }

    /// Sets every member's ceiling share (capped by the tool's maximum) and
    /// lowers the governor's ceiling to the sum over the up members (never
    /// above the configured one). Returns the effective ceiling.
    pub(crate) fn rebalance(&mut self) -> f64 {
        let p = self.policy.params;
        let weights: Vec<f64> = self.members.values().map(|m| m.weight).collect();
        let unbounded = vec![f64::INFINITY; weights.len()];
        let shares = split(p.ceiling, &weights, &unbounded, self.policy.integer);
        let mut eff = 0.0;
        for (m, s) in self.members.values_mut().zip(shares) {
            m.ceiling_share = match m.tool_max {
                Some(max) => s.min(max),
                None => s,
            };
            if m.up {
                eff += m.ceiling_share;
            }
        }
        if eff > 0.0 {
            let ceiling = eff.min(p.ceiling);
            let floor = p.floor.min(ceiling);
            let q = Params {
                ceiling,
                floor,
                start: p.start.clamp(floor, ceiling),
                ..p
            };
            if q.ceiling != self.gov.params().ceiling || q.floor != self.gov.params().floor {
                let st = self.gov.state();
                let mut g = ThrottleGovernor::with_profile(q, self.gov.profile());
                g.restore_memory(st.last_bad, st.clean_streak);
                g.set_current(st.current.clamp(floor, ceiling));
                self.gov = g;
            }
        }
        eff
    }

    /// The shares of `offer` over the up members, queued where they differ
    /// from what is in effect.
    pub(crate) fn split_writes(&mut self, offer: f64) -> Vec<(String, f64)> {
        let integer = self.policy.integer;
        let up: Vec<&mut MemberState> = self.members.values_mut().filter(|m| m.up).collect();
        let weights: Vec<f64> = up.iter().map(|m| m.weight).collect();
        let caps: Vec<f64> = up.iter().map(|m| m.ceiling_share).collect();
        let shares = split(offer, &weights, &caps, integer);
        let mut writes = Vec::new();
        for (m, share) in up.into_iter().zip(shares) {
            // A share the tool already runs needs no write.
            let in_effect = m.committed.is_some_and(|c| same_offer(integer, c, share));
            m.share = Some(share);
            if !in_effect {
                writes.push((m.name.clone(), share));
            }
        }
        for m in self.members.values_mut().filter(|m| !m.up) {
            m.share = None;
        }
        writes
    }

    /// `name=share` for the log.
    pub(crate) fn split_parts(&self, knob: crate::governor::Control) -> String {
        use crate::telemetry::logging::offer;
        self.members
            .values()
            .map(|m| match (m.up, m.share) {
                (true, Some(s)) => format!("{}={}", m.name, offer(knob, s)),
                (true, None) => format!("{}=?", m.name),
                (false, _) => format!("{}=down", m.name),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The members' statuses, for `/api/v1/groups`.
    pub(crate) fn statuses(&self) -> Vec<MemberStatus> {
        self.members
            .values()
            .map(|m| MemberStatus {
                name: m.name.clone(),
                address: m.address.clone(),
                weight: m.weight,
                up: m.up,
                share: m.share,
                ceiling_share: m.ceiling_share.is_finite().then_some(m.ceiling_share),
                committed: m.committed,
                last_error: m.last_error.clone(),
            })
            .collect()
    }

    /// Whether any member's last write was not confirmed.
    pub(crate) fn unconfirmed(&self) -> bool {
        self.members.values().any(|m| m.up && m.unconfirmed())
    }

    /// When a new baseline may be read after the writes now finished: the
    /// latest `finished_at + lag` over members (None while any is busy).
    pub(crate) fn rebase_at(&self, views: &Members<WriterView>) -> Option<f64> {
        let mut at = f64::NEG_INFINITY;
        for (name, v) in views {
            if v.busy() {
                return None;
            }
            let lag = self.members.get(name).map(|m| m.lag).unwrap_or(0.0);
            if let Some(f) = v.finished_at {
                at = at.max(f + lag);
            }
        }
        Some(at)
    }

    /// Whether every member that is up has a window base read at or after
    /// `at` (then a rebase for writes that settled at `at` has nothing to
    /// do: the window open now is already theirs).
    pub(crate) fn based_since(&self, at: f64) -> bool {
        self.members
            .values()
            .filter(|m| m.up)
            .all(|m| m.window.baseline().is_some_and(|b| b.at_secs >= at - 1e-9))
    }

    /// Folds one round of reads taken at `at` (seconds on the task's clock).
    pub fn step(&mut self, at: f64, reads: Members<MemberRead>) -> StepOut {
        self.step_with(at, reads, None)
    }

    /// [`Self::step_with`] for a round whose window [`Self::early_breach`]
    /// found a certain breach: the window closes now, and a straddle after
    /// the Up is attributed to the new offer ([`early`]).
    pub(crate) fn close_early(
        &mut self,
        at: f64,
        reads: Members<MemberRead>,
        latency: Option<Result<LatencySample, SignalError>>,
        breach: EarlyBreach,
    ) -> StepOut {
        self.closing = Some(breach);
        let out = self.step_with(at, reads, latency);
        self.closing = None;
        out
    }

    /// [`Self::step`] with the round's latency read, when a latency bound
    /// is set: its window follows the counters' (same baseline, same
    /// attribution), and the governor decides on both signals.
    ///
    /// The phases, in order (each is pure and pushes its events in turn):
    /// fold the reads into a window ([`fold`]), the committed offer
    /// ([`offer`]), the latency window, the decision and the signal loss
    /// ([`decide`]), and the writes to send ([`send`]).
    pub(crate) fn step_with(
        &mut self,
        at: f64,
        reads: Members<MemberRead>,
        latency: Option<Result<LatencySample, SignalError>>,
    ) -> StepOut {
        let mut round = self.fold_reads(at, reads);
        let offer = self.committed_offer(&mut round);
        let lat_window = self.latency_window(round.folded, latency, &mut round.ev);
        let verdict = self.decide(&mut round, &offer, lat_window);
        self.signal_loss(&mut round);
        self.writes_to_send(at, round, &offer, verdict)
    }
}

#[cfg(test)]
mod tests;
