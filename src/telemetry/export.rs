//! The exporter: the one place where a target's telemetry is emitted.
//!
//! Why it exists: the engine decides and the writer writes, and both only
//! describe what happened, as [`Event`] values. The [`Exporter`] turns each
//! event into its metrics, its status and history updates, and its log
//! line, so that a behaviour shared by single targets and groups is
//! reported the same way for both, and a newcomer can find every metric a
//! target emits in one `match`.
//!
//! The offer endpoint's requests (`kind = "pull"`) are not a target task's
//! events (a pull may name no known target at all), so they have their own
//! small [`Pull`] value, emitted here too by [`emit_pull`]: every metric of
//! the pull control is found in this file.
//!
//! What it may touch: the shared [`Telemetry`] and the log. It never decides
//! and never talks to a tool.

use std::sync::{Arc, OnceLock};

use tracing::{debug, error, info, warn};

use super::logging::{log_memory_clear, log_movement, offer};
use super::metrics::{
    label, ErrorLabels, MemberLabels, Name, PullLabels, TargetLabel, TargetSeries, WriteLabels,
};
use super::{MemberStatus, TargetSlot, TargetStatus, Telemetry};
use crate::control::{ControlError, WriteOutcome};
use crate::governor::{Control, HoldReason, Outcome, Params, Profile};

/// Something that happened to one target, for the exporter.
#[derive(Debug)]
pub enum Event {
    /// The target's task started: register its status and static series.
    Started {
        /// Its governor parameters.
        params: Params,
        /// Its profile.
        profile: Profile,
        /// Whether breaching windows may close early.
        early_verdicts: bool,
        /// Whether it runs without writing.
        dry_run: bool,
        /// The signal lag in effect, described.
        lag: String,
    },
    /// Congestion memory was restored from the state file.
    MemoryRestored {
        /// The restored `last_bad`.
        last_bad: Option<f64>,
        /// The restored clean streak.
        clean_streak: u32,
    },
    /// The opening offer (or the resumed one) before the first window.
    Opening {
        /// The offer.
        value: f64,
        /// How many instances share it.
        members: usize,
        /// Resumed across a reload, not published from `start`.
        resumed: bool,
        /// A dry run: nothing is written.
        dry_run: bool,
    },
    /// One window's outcome (decided, held or discarded).
    Window {
        /// The outcome.
        outcome: Outcome,
        /// Seconds since the task started.
        at: f64,
        /// The window's length in seconds.
        window_secs: f64,
        /// The last write was not confirmed: the offer is the tool's.
        unconfirmed: bool,
        /// The offer the tool reports, while a write is pending or
        /// unconfirmed (shown instead of the value asked for).
        in_effect: Option<f64>,
        /// Movements are not written (dry run, or another writer fights).
        not_written: bool,
        /// Whether a baseline reading is set (the target is ready).
        baseline: bool,
    },
    /// A window was discarded because it straddled an offer change.
    Discarded {
        /// The member whose window it was (None for a single target).
        member: Option<String>,
        /// A bounded reason label.
        reason: &'static str,
    },
    /// The target has a latency bound (after `Started`).
    LatencyBound(super::LatencyBoundStatus),
    /// The latency source could not be read, or rebased.
    LatencyError {
        /// Bounded error label.
        error_type: &'static str,
        /// The message.
        message: String,
    },
    /// The signal could not be read, or was invalid.
    SignalError {
        /// The member (None for a single target).
        member: Option<String>,
        /// Bounded error label.
        error_type: &'static str,
        /// The message.
        message: String,
    },
    /// No member gave a valid window: the target holds.
    NoSignal {
        /// What went wrong, for the status.
        message: String,
    },
    /// A counter went down in the tool.
    CounterReset {
        /// The member (None for a single target).
        member: Option<String>,
    },
    /// The time one round of reads took.
    ReadDuration(f64),
    /// A read within a window watched for an early verdict.
    EarlyRead,
    /// The window closes early: its breach is certain (before its
    /// `Window`).
    EarlyVerdict {
        /// Attempts resolved in the window so far.
        attempts: f64,
        /// Failed attempts among them.
        failures: f64,
        /// The window's length so far, in seconds.
        secs: f64,
        /// The exact binomial test's p-value against `high`.
        p_value: f64,
    },
    /// From parsed reading to the movement handed to the writers.
    DecisionLatency(f64),
    /// The committed offer could not be read.
    ControlReadError {
        /// The member (None for a single target).
        member: Option<String>,
        /// The error.
        error: ControlError,
    },
    /// The tool reported an offer that cannot be one (not finite, negative).
    InvalidReading {
        /// The member (None for a single target).
        member: Option<String>,
        /// The value reported.
        value: f64,
    },
    /// Someone else changed the knob; the governor steps from their value.
    OutsideChange {
        /// The offer the governor had.
        from: f64,
        /// The value reported by the tool(s).
        reported: f64,
        /// The value stepped from (clamped into [floor, ceiling]).
        to: f64,
        /// True for a group (the sum over instances).
        group: bool,
    },
    /// Our own write was not confirmed: the offer in effect is the tool's.
    ToolOffer {
        /// What we asked for.
        asked: f64,
        /// What the tool runs.
        in_effect: f64,
    },
    /// Counters reset and the knob moved: the tool restarted.
    ToolRestart {
        /// The member (None for a single target).
        member: Option<String>,
        /// What the tool came back with.
        reported: f64,
        /// What is re-published.
        republished: f64,
    },
    /// The signal-loss policy took effect.
    SignalLost {
        /// Windows without a valid signal.
        windows: u32,
        /// Whether the offer drops to the floor (else it holds).
        to_floor: bool,
        /// The offer in effect.
        current: f64,
        /// The floor.
        floor: f64,
    },
    /// A valid window after a loss.
    SignalBack {
        /// The committed offer the governor resumes from.
        current: f64,
    },
    /// A group member joined, left, was rebuilt, came back or went down.
    Member {
        /// Its name.
        member: String,
        /// What happened.
        change: MemberChange,
    },
    /// The offer's split across instances.
    Split {
        /// `name=share` parts.
        parts: String,
    },
    /// The effective ceiling changed (instances down, or a tool maximum).
    Ceiling(f64),
    /// The members' statuses (groups only).
    Members(Vec<MemberStatus>),
    /// A write was handed to the writer.
    WriteQueued {
        /// The value.
        value: f64,
    },
    /// The writer finished one write.
    Write {
        /// The member (None for a single target).
        member: Option<String>,
        /// The value written.
        value: f64,
        /// How it ended.
        outcome: WriteOutcome,
        /// Its duration in seconds.
        secs: f64,
        /// Whether another write is still pending.
        still_pending: bool,
    },
    /// The tool refuses values above its maximum; the ceiling follows it.
    ToolMaximum {
        /// The member (None for a single target).
        member: Option<String>,
        /// The tool's maximum.
        max: f64,
    },
    /// Another writer keeps changing the knob after our confirmed writes.
    Conflict {
        /// Whether the conflict starts (true) or is over (false).
        on: bool,
        /// Outside changes in a row.
        changes: u32,
    },
    /// What `on_exit` did.
    OnExit {
        /// The value written (over all instances).
        value: f64,
        /// Each write's result (`confirmed`, `failed`, `unconfirmed`);
        /// empty when they timed out.
        results: Vec<&'static str>,
        /// A description, when any did not confirm.
        detail: Option<String>,
    },
    /// A robust-profile suggestion, logged once.
    Advice(String),
    /// The live capacity estimate after a window (every window; logged and
    /// moved in the metric only when its figure or state changes).
    Capacity(super::CapacityEstimate),
}

/// What happened to a group member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberChange {
    /// It joined the group.
    Joined,
    /// It left the group (discovery no longer lists it).
    Left,
    /// Its signal or control changed: rebuilt.
    Rebuilt,
    /// Its first good read after being down.
    Back,
    /// Its signal failed `down_after_windows` in a row.
    Down,
}

/// Emits every event of one target.
#[derive(Debug, Clone)]
pub struct Exporter {
    tel: Arc<Telemetry>,
    /// The target's name, shared with its series' labels.
    name: Name,
    knob: Control,
    dry_run: bool,
    /// The target's series and status slot, taken once it is registered
    /// (`Started`), so that a window needs no lookup by name.
    handles: Arc<OnceLock<Handles>>,
}

/// What a registered target's exporter writes to directly.
#[derive(Debug)]
struct Handles {
    series: TargetSeries,
    slot: TargetSlot,
}

impl Exporter {
    /// The exporter of target `name`.
    pub fn new(tel: Arc<Telemetry>, name: &str, knob: Control, dry_run: bool) -> Self {
        Exporter {
            tel,
            name: name.into(),
            knob,
            dry_run,
            handles: Arc::default(),
        }
    }

    /// Updates the target's status (nothing before it is registered).
    fn update(&self, f: impl FnOnce(&mut TargetStatus)) {
        match self.handles.get() {
            Some(h) => h.slot.update(f),
            None => self.tel.update(self.name.as_str(), f),
        }
    }

    /// The shared telemetry (for the engine's reads of the status).
    pub fn telemetry(&self) -> &Arc<Telemetry> {
        &self.tel
    }

    fn who(&self, member: &Option<String>) -> String {
        match member {
            Some(m) => format!("{}: instance {m}", self.name),
            None => self.name.to_string(),
        }
    }

    fn count_error(
        &self,
        family: &prometheus_client::metrics::family::Family<
            ErrorLabels,
            prometheus_client::metrics::counter::Counter,
        >,
        error_type: &'static str,
    ) {
        family
            .get_or_create(&ErrorLabels {
                target: self.name.clone(),
                error_type,
            })
            .inc();
    }

    fn count_write(&self, result: &'static str) {
        self.tel
            .metrics
            .writes
            .get_or_create(&WriteLabels {
                target: self.name.clone(),
                result,
            })
            .inc();
    }

    /// Emits one event.
    pub fn emit(&self, event: Event) {
        let name = self.name.as_str();
        let knob = self.knob;
        let tel = &self.tel;
        let m = &tel.metrics;
        let l = TargetLabel {
            target: self.name.clone(),
        };
        match event {
            Event::Started {
                params: p,
                profile,
                early_verdicts,
                dry_run,
                lag,
            } => {
                m.init_target(&self.name, p.floor, p.ceiling, p.high, p.start);
                // A (re)started target has no capacity estimate yet: a
                // series left by its previous task would outlive the
                // status's `null`.
                for state in super::metrics::CAPACITY_STATES {
                    m.capacity.remove(&super::metrics::CapacityLabels {
                        target: self.name.clone(),
                        state,
                    });
                }
                info!(target = %name, profile = profile.as_str(), early_verdicts, "{name}: governing {} with profile {profile}, early verdicts {}, signal lag {lag}",
                    p.control.as_str(), if early_verdicts { "on" } else { "off" });
                let mut status = TargetStatus::initial(name, &p, dry_run);
                status.profile = profile.as_str();
                status.signal_lag = lag;
                let slot = tel.register(status);
                // A task emits `Started` once; its exporter keeps the first.
                let _ = self.handles.set(Handles {
                    series: m.series(&self.name),
                    slot,
                });
            }
            Event::MemoryRestored {
                last_bad,
                clean_streak,
            } => {
                info!(target = %name, "{name}: restored congestion memory from the state file: last_bad {}, clean streak {clean_streak}",
                    last_bad.map(|v| offer(knob, v)).unwrap_or("none".into()));
                m.last_bad
                    .get_or_create(&l)
                    .set(last_bad.unwrap_or(f64::NAN));
                m.clean_streak
                    .get_or_create(&l)
                    .set(f64::from(clean_streak));
                self.update(|s| {
                    s.last_bad = last_bad;
                    s.clean_streak = clean_streak;
                });
            }
            Event::Opening {
                value,
                members,
                resumed,
                dry_run,
            } => {
                let across = if members > 1 {
                    format!(" across {members} instances")
                } else {
                    String::new()
                };
                if resumed {
                    info!(target = %name, "{name}: resuming at {} {knob}{across} with its congestion memory (config reload)", offer(knob, value));
                } else if dry_run {
                    info!(target = %name, "{name}: dry run: would publish the opening offer {} {knob}{across}", offer(knob, value));
                } else {
                    info!(target = %name, "{name}: publishing the opening offer {} {knob}{across}; the first window starts once it is confirmed", offer(knob, value));
                }
                m.offer.get_or_create(&l).set(value);
                self.update(|s| s.offer = value);
            }
            Event::Window {
                outcome,
                at,
                window_secs,
                unconfirmed,
                in_effect,
                not_written,
                baseline,
            } => {
                if baseline {
                    self.update(|s| s.has_baseline = true);
                }
                let unregistered;
                let (series, slot) = match self.handles.get() {
                    Some(h) => (&h.series, Some(&h.slot)),
                    None => {
                        unregistered = (m.series(&self.name), tel.slot(name));
                        (&unregistered.0, unregistered.1.as_ref())
                    }
                };
                if outcome.reason == Some(HoldReason::SignalError) {
                    series.signal_up.set(0.0);
                } else if outcome.reason != Some(HoldReason::CounterReset) {
                    series.signal_up.set(1.0);
                }
                tel.export_outcome(
                    &self.name,
                    series,
                    slot,
                    &outcome,
                    at,
                    window_secs,
                    unconfirmed,
                    in_effect,
                );
                if outcome.memory_cleared {
                    log_memory_clear(name, knob, outcome.from);
                }
                if outcome.is_movement() {
                    log_movement(
                        name,
                        knob,
                        &outcome,
                        window_secs,
                        not_written || self.dry_run,
                    );
                }
            }
            Event::Discarded { member, reason } => {
                m.windows_discarded
                    .get_or_create(&super::metrics::ReasonLabels {
                        target: self.name.clone(),
                        reason,
                    })
                    .inc();
                debug!(target = %name, reason, "{}: window discarded ({reason}): it straddles an offer change or falls within the signal's lag after one", self.who(&member));
            }
            Event::SignalError {
                member,
                error_type,
                message,
            } => {
                self.count_error(&m.signal_errors, error_type);
                match &member {
                    Some(_) => {
                        debug!(target = %name, error_type, "{}: {message}", self.who(&member))
                    }
                    None => warn!(target = %name, error_type, "Signal error, holding: {message}"),
                }
                if member.is_none() {
                    let msg = format!("{error_type}: {message}");
                    self.update(|s| s.last_error = Some(msg));
                }
            }
            Event::LatencyBound(b) => {
                let q = super::metrics::QuantileLabels {
                    target: self.name.clone(),
                    slo_quantile: b.quantile.to_string(),
                };
                m.latency_bound.get_or_create(&q).set(b.bound_secs);
                m.latency_low.get_or_create(&q).set(b.low_secs);
                m.window_latency.get_or_create(&q).set(f64::NAN);
                for error_type in ["counter_reset", "timeout", "connect", "missing_series"] {
                    m.latency_errors
                        .get_or_create(&super::metrics::ErrorLabels {
                            target: self.name.clone(),
                            error_type,
                        })
                        .inc_by(0);
                }
                info!(target = %name, "{name}: latency bound {} <= {} (clean below {}); a window climbs only when both failures and latency are clean",
                    crate::governor::latency_bound::quantile_name(b.quantile),
                    crate::governor::latency_bound::seconds(b.bound_secs),
                    crate::governor::latency_bound::seconds(b.low_secs));
                self.update(|s| s.latency = Some(b));
            }
            Event::LatencyError {
                error_type,
                message,
            } => {
                self.count_error(&m.latency_errors, error_type);
                warn!(target = %name, error_type, "Latency read failed, the window cannot be latency-clean: {message}");
            }
            Event::NoSignal { message } => {
                warn!(target = %name, "Signal error, holding: {message}");
                self.update(|s| s.last_error = Some(message));
            }
            Event::CounterReset { member } => {
                m.counter_resets.get_or_create(&l).inc();
                warn!(target = %name, "{}: counter reset: the tool's counters went down (restart?); window discarded, baseline rebased", self.who(&member));
            }
            Event::EarlyRead => {
                m.early_reads.get_or_create(&l).inc();
            }
            Event::EarlyVerdict {
                attempts,
                failures,
                secs,
                p_value,
            } => {
                m.early_verdicts.get_or_create(&l).inc();
                let p = if p_value < 1e-12 {
                    "p < 1e-12".to_string()
                } else {
                    format!("p = {p_value:.1e}")
                };
                info!(target = %name, attempts, failures, window_secs = secs, p_value,
                    "{name}: early verdict: {failures} of {attempts} attempts failed in {secs:.2}s, a certain breach ({p}); the window closes now");
            }
            Event::ReadDuration(secs) => match self.handles.get() {
                Some(h) => h.series.read_duration.observe(secs),
                None => m.read_duration.get_or_create(&l).observe(secs),
            },
            Event::DecisionLatency(secs) => m.decision_latency.observe(secs),
            Event::ControlReadError { member, error } => {
                self.count_error(&m.control_errors, error.error_type());
                warn!(target = %name, error = %error, "{}: cannot read the committed offer; stepping from the last known value", self.who(&member));
            }
            Event::InvalidReading { member, value } => {
                m.invalid_readings.get_or_create(&l).inc();
                warn!(target = %name, value, "{}: the tool reports {value} as its {knob}, which is not an offer; ignored", self.who(&member));
            }
            Event::OutsideChange {
                from,
                reported,
                to,
                group,
            } => {
                m.outside_changes.get_or_create(&l).inc();
                let clamp = if (reported - to).abs() > f64::EPSILON * reported.abs().max(1.0) {
                    format!(
                        " (outside [floor, ceiling]: stepping from {})",
                        offer(knob, to)
                    )
                } else {
                    String::new()
                };
                if group {
                    info!(target = %name, from, to = reported,
                        "{name}: the instances report {} {knob} in all, not {}; stepping from their sum{clamp}",
                        offer(knob, reported), offer(knob, from));
                } else {
                    info!(target = %name, from, to = reported,
                        "{name}: the {knob} was changed from outside ({} -> {}); stepping from the new value{clamp}",
                        offer(knob, from), offer(knob, reported));
                }
            }
            Event::ToolOffer { asked, in_effect } => {
                info!(target = %name, asked, in_effect,
                    "{name}: the write of {} was not confirmed; the tool runs {} {knob}, and the governor steps from that",
                    offer(knob, asked), offer(knob, in_effect));
            }
            Event::ToolRestart {
                member,
                reported,
                republished,
            } => {
                m.tool_restarts.get_or_create(&l).inc();
                warn!(target = %name, from = reported, to = republished,
                    "{}: tool restart detected (counters reset, {knob} back at {}); re-publishing the committed offer {}",
                    self.who(&member), offer(knob, reported), offer(knob, republished));
            }
            Event::SignalLost {
                windows,
                to_floor,
                current,
                floor,
            } => {
                m.signal_lost.get_or_create(&l).set(1.0);
                self.update(|s| s.signal_lost = true);
                if to_floor {
                    warn!(target = %name, policy = "floor",
                        "{name}: signal lost for {windows} windows; dropping the {knob} to the floor {} (assume the most fragile target)",
                        offer(knob, floor));
                } else {
                    warn!(target = %name, policy = "hold",
                        "{name}: signal lost for {windows} windows; holding the {knob} at {} until it returns",
                        offer(knob, current));
                }
            }
            Event::SignalBack { current } => {
                m.signal_lost.get_or_create(&l).set(0.0);
                self.update(|s| s.signal_lost = false);
                info!(target = %name, "{name}: signal is back; the governor steps from the committed {} {knob}, congestion memory intact", offer(knob, current));
            }
            Event::Member { member, change } => match change {
                MemberChange::Joined => {
                    info!(target = %name, member = %member, "{name}: instance {member} joins the group")
                }
                MemberChange::Left => {
                    info!(target = %name, member = %member, "{name}: instance {member} left the group; the split is recomputed")
                }
                MemberChange::Rebuilt => {
                    info!(target = %name, member = %member, "{name}: instance {member} changed its signal or control; rebuilt")
                }
                MemberChange::Back => {
                    info!(target = %name, member = %member, "{name}: instance {member} is back; it rejoins the split")
                }
                MemberChange::Down => {
                    warn!(target = %name, member = %member, "{name}: instance {member} is down; its share goes to the others")
                }
            },
            Event::Split { parts } => info!(target = %name, "{name}: split {parts}"),
            Event::Ceiling(eff) => {
                m.ceiling.get_or_create(&l).set(eff);
                self.update(|s| s.ceiling = eff.is_finite().then_some(eff));
            }
            Event::Members(statuses) => {
                for s in &statuses {
                    let ml = MemberLabels {
                        target: self.name.clone(),
                        member: s.name.clone(),
                    };
                    m.member_up
                        .get_or_create(&ml)
                        .set(if s.up { 1.0 } else { 0.0 });
                    m.member_offer
                        .get_or_create(&ml)
                        .set(s.share.unwrap_or(0.0));
                }
                tel.set_members(name, Some(statuses));
            }
            Event::WriteQueued { value } => {
                self.update(|s| s.pending_write = Some(value));
            }
            Event::Write {
                member,
                value,
                outcome,
                secs,
                still_pending,
            } => {
                m.write_duration.get_or_create(&l).observe(secs);
                self.count_write(outcome.result());
                let who = self.who(&member);
                match &outcome {
                    WriteOutcome::Confirmed { .. } => {}
                    WriteOutcome::Failed(e) => {
                        self.count_error(&m.control_errors, e.error_type());
                        warn!(target = %name, error_type = e.error_type(), "{who}: write of {} failed: {e}", offer(knob, value));
                        let msg = format!("write failed: {e}");
                        self.update(|s| s.last_error = Some(msg));
                    }
                    WriteOutcome::Unconfirmed { .. } => {
                        let d = describe(&outcome);
                        warn!(target = %name, "{who}: write of {} not confirmed: {d}", offer(knob, value));
                        self.update(|s| s.last_error = Some(format!("write unconfirmed: {d}")));
                    }
                }
                let confirmed = matches!(outcome, WriteOutcome::Confirmed { .. });
                self.update(|s| {
                    if !still_pending {
                        s.pending_write = None;
                    }
                    s.writes_confirmed = confirmed;
                });
            }
            Event::ToolMaximum { member, max } => {
                warn!(target = %name, max,
                    "{}: the tool refuses more than {} {knob}; the ceiling follows it (raise the tool's maximum, or lower `ceiling`, to silence this)",
                    self.who(&member), offer(knob, max));
            }
            Event::Conflict { on, changes } => {
                m.outside_writer_conflict
                    .get_or_create(&l)
                    .set(if on { 1.0 } else { 0.0 });
                self.update(|s| s.outside_writer_conflict = on);
                if on {
                    error!(target = %name, changes,
                        "{name}: another writer changed the {knob} right after each of our last {changes} confirmed writes; is a second governor running on this tool? Holding (no writes) until the knob stays put");
                } else {
                    info!(target = %name, "{name}: the {knob} stayed put; governing again");
                }
            }
            Event::OnExit {
                value,
                results,
                detail,
            } => {
                for r in &results {
                    self.count_write(r);
                }
                match detail {
                    None => {
                        info!(target = %name, "On exit: left the {knob} at {}", offer(knob, value))
                    }
                    Some(d) => {
                        warn!(target = %name, "On exit: writing {} did not confirm: {d}", offer(knob, value))
                    }
                }
            }
            Event::Advice(text) => {
                info!(target = %name, "{name}: {text}");
                self.update(|s| s.advice = Some(text));
            }
            Event::Capacity(estimate) => {
                let mut before = super::CapacityEstimate::None;
                self.update(|s| before = std::mem::replace(&mut s.capacity, estimate));
                if !estimate.changed_from(&before) {
                    return;
                }
                let series = |state| super::metrics::CapacityLabels {
                    target: self.name.clone(),
                    state,
                };
                for state in super::metrics::CAPACITY_STATES {
                    if Some(state) != estimate.state() {
                        m.capacity.remove(&series(state));
                    }
                }
                match (estimate.state(), estimate.figure()) {
                    (Some(state), Some(f)) => {
                        m.capacity.get_or_create(&series(state)).set(f.offer);
                        info!(target = %name, capacity = f.offer, state,
                            "{name}: capacity {} {knob} ({state}, failure ratio {} [{}–{}] over {} window{})",
                            offer(knob, f.offer),
                            crate::governor::pct(f.failure_ratio),
                            crate::governor::pct(f.interval[0]),
                            crate::governor::pct(f.interval[1]),
                            f.windows,
                            if f.windows == 1 { "" } else { "s" });
                    }
                    _ => {
                        info!(target = %name, "{name}: capacity no longer known: the windows kept no longer bracket the bound");
                    }
                }
            }
        }
    }
}

/// What the offer endpoint did with one request (`kind = "pull"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pull<'a> {
    /// Refused, with a bounded result label (`unauthorized`,
    /// `bad_request`, `unknown_target`, `need_member`, `no_offer`).
    Refused(&'static str),
    /// An offer was served to a puller (a `304` is still a pull).
    Served {
        /// The target pulled from.
        target: &'a str,
        /// Distinct pullers now remembered for it.
        clients: usize,
        /// Answered `304 Not Modified` (the puller has this generation).
        not_modified: bool,
    },
}

/// Emits one request of the offer endpoint: `throttle_pull_requests_total
/// {result}`, and for a served pull `throttle_pulls_total{target}` and
/// `throttle_pull_clients{target}`.
pub fn emit_pull(tel: &Telemetry, pull: Pull<'_>) {
    let m = &tel.metrics;
    let result = match pull {
        Pull::Refused(result) => result,
        Pull::Served {
            target,
            clients,
            not_modified,
        } => {
            let l = label(target);
            m.pulls.get_or_create(&l).inc();
            m.pull_clients.get_or_create(&l).set(clients as f64);
            if not_modified {
                "not_modified"
            } else {
                "served"
            }
        }
    };
    m.pull_requests.get_or_create(&PullLabels { result }).inc();
}

/// A write outcome in words, for the log.
pub fn describe(o: &WriteOutcome) -> String {
    match o {
        WriteOutcome::Confirmed { attempts } => format!("confirmed after {attempts} write(s)"),
        WriteOutcome::Failed(e) => format!("failed: {e}"),
        WriteOutcome::Unconfirmed {
            committed: Some(c), ..
        } => {
            format!("the tool still reports {c}")
        }
        WriteOutcome::Unconfirmed { error: Some(e), .. } => format!("read-back failed: {e}"),
        WriteOutcome::Unconfirmed { .. } => "no read-back".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governor::ThrottleGovernor;

    fn started(tel: &Arc<Telemetry>, name: &str) -> Exporter {
        let p = Params::new(Control::Concurrency, Some(100.0), 1.0, None, 0.05, None).unwrap();
        let e = Exporter::new(tel.clone(), name, Control::Concurrency, false);
        e.emit(Event::Started {
            params: p,
            profile: Profile::Seed,
            early_verdicts: false,
            dry_run: false,
            lag: String::new(),
        });
        e
    }

    /// One window: the governor at 1, 200 attempts of which `failures` fail.
    fn window(e: &Exporter, failures: f64) {
        let p = Params::new(Control::Concurrency, Some(100.0), 1.0, None, 0.05, None).unwrap();
        let mut g = ThrottleGovernor::new(p);
        g.step(0.0, 0.0);
        e.emit(Event::Window {
            outcome: g.step(200.0, failures),
            at: 1.0,
            window_secs: 1.0,
            unconfirmed: false,
            in_effect: None,
            not_written: false,
            baseline: true,
        });
        e.emit(Event::ReadDuration(0.003));
    }

    fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(prefix))
    }

    /// The exporter writes a window through the series and the status slot
    /// it took when its target started, and what it writes is what
    /// `/metrics`, the status and the history show. After the target is
    /// removed and started again (a reload), the new exporter's windows
    /// show, not the removed target's.
    #[test]
    fn a_window_is_exported_through_the_targets_own_handles() {
        let tel = Arc::new(Telemetry::with_history(10));
        let e = started(&tel, "t1");
        window(&e, 0.0);
        let text = tel.metrics.encode();
        assert_eq!(
            line(&text, "throttle_attempts_total{target=\"t1\"}"),
            Some("throttle_attempts_total{target=\"t1\"} 200.0")
        );
        assert_eq!(
            line(&text, "throttle_offer{target=\"t1\"}"),
            Some("throttle_offer{target=\"t1\"} 1.0")
        );
        assert_eq!(
            line(&text, "throttle_signal_up{target=\"t1\"}"),
            Some("throttle_signal_up{target=\"t1\"} 1.0")
        );
        assert_eq!(
            line(
                &text,
                "throttle_decisions_total{target=\"t1\",decision=\"up\",mode=\"climbing\""
            )
            .map(|l| l.rsplit(' ').next().unwrap()),
            Some("1")
        );
        assert_eq!(
            line(
                &text,
                "throttle_signal_read_duration_seconds_count{target=\"t1\"}"
            ),
            Some("throttle_signal_read_duration_seconds_count{target=\"t1\"} 1")
        );
        let status = tel.status("t1").unwrap();
        assert_eq!((status.windows, status.last_decision), (1, Some("up")));
        assert!(status.has_baseline);
        assert_eq!(tel.history("t1").len(), 1);

        // A reload removes the target; a new task starts under the same name.
        tel.unregister("t1");
        assert!(line(
            &tel.metrics.encode(),
            "throttle_attempts_total{target=\"t1\"}"
        )
        .is_none());
        let again = started(&tel, "t1");
        window(&again, 100.0);
        window(&again, 100.0);
        let text = tel.metrics.encode();
        assert_eq!(
            line(&text, "throttle_attempts_total{target=\"t1\"}"),
            Some("throttle_attempts_total{target=\"t1\"} 400.0")
        );
        assert_eq!(
            line(&text, "throttle_attempt_failures_total{target=\"t1\"}"),
            Some("throttle_attempt_failures_total{target=\"t1\"} 200.0")
        );
        assert_eq!(tel.status("t1").unwrap().windows, 2);
        assert_eq!(tel.history("t1").len(), 2);
        // The old exporter no longer reaches what /metrics and the API show.
        window(&e, 0.0);
        assert_eq!(tel.status("t1").unwrap().windows, 2);
        assert_eq!(
            line(
                &tel.metrics.encode(),
                "throttle_attempts_total{target=\"t1\"}"
            ),
            Some("throttle_attempts_total{target=\"t1\"} 400.0")
        );
    }

    /// An exporter whose target never started (no `Started`) updates no
    /// status and keeps no history, as a lookup by name would not.
    #[test]
    fn a_window_before_the_target_started_updates_no_status() {
        let tel = Arc::new(Telemetry::with_history(10));
        let e = Exporter::new(tel.clone(), "t", Control::Concurrency, false);
        window(&e, 0.0);
        assert!(tel.status("t").is_none());
        assert!(tel.history("t").is_empty());
    }

    #[test]
    fn describe_names_the_outcome() {
        assert!(describe(&WriteOutcome::Confirmed { attempts: 1 }).contains("confirmed"));
        assert!(describe(&WriteOutcome::Unconfirmed {
            committed: Some(3.0),
            error: None
        })
        .contains("still reports 3"));
    }

    /// `throttle_capacity` has one series, in the estimate's state: none
    /// before the figure is known, the provisional one replaced by the
    /// steady one, and none again when the figure is withdrawn or the
    /// target removed; the status follows every window.
    #[test]
    fn the_capacity_metric_keeps_one_series_in_the_current_state() {
        use crate::telemetry::{CapacityEstimate, CapacityFigure};
        let tel = Arc::new(Telemetry::with_history(10));
        let e = started(&tel, "t1");
        let series = |text: &str| {
            text.lines()
                .filter(|l| l.starts_with("throttle_capacity{"))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert!(series(&tel.metrics.encode()).is_empty());
        assert_eq!(
            serde_json::to_value(tel.status("t1").unwrap()).unwrap()["capacity"],
            serde_json::Value::Null
        );
        let f = |offer: f64, windows: usize| CapacityFigure {
            offer,
            failure_ratio: 0.01,
            interval: [0.005, 0.02],
            windows,
            attempts: 1000.0,
            failures: 10.0,
            next_step_up: Some(offer + 1.0),
        };
        e.emit(Event::Capacity(CapacityEstimate::Provisional(f(10.0, 2))));
        assert_eq!(
            series(&tel.metrics.encode()),
            ["throttle_capacity{target=\"t1\",state=\"provisional\"} 10.0"]
        );
        e.emit(Event::Capacity(CapacityEstimate::Steady(f(10.0, 5))));
        assert_eq!(
            series(&tel.metrics.encode()),
            ["throttle_capacity{target=\"t1\",state=\"steady\"} 10.0"]
        );
        let st = serde_json::to_value(tel.status("t1").unwrap()).unwrap();
        assert_eq!(st["capacity"]["steady"], true);
        assert_eq!(st["capacity"]["windows"], 5);
        e.emit(Event::Capacity(CapacityEstimate::None));
        assert!(series(&tel.metrics.encode()).is_empty());
        e.emit(Event::Capacity(CapacityEstimate::Steady(f(11.0, 5))));
        // A reload restarts the target: its new task starts with no figure.
        let again = started(&tel, "t1");
        assert!(series(&tel.metrics.encode()).is_empty());
        again.emit(Event::Capacity(CapacityEstimate::Steady(f(11.0, 5))));
        assert_eq!(series(&tel.metrics.encode()).len(), 1);
        tel.unregister("t1");
        assert!(series(&tel.metrics.encode()).is_empty());
    }
}
