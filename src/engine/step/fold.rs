//! Phase 1 of the step: fold each member's read into its counter window and
//! the round's sum.
//!
//! Why it exists: a round's reads carry more than counters: the writer's
//! progress (which moves the start of the next attributable window), the
//! offer the tool reports, a member going down or coming back, a tool that
//! restarted. This phase turns them into one [`Round`]: the attributable
//! attempts and failures, and what the later phases need to know about the
//! reads. It is the attribution of the module docs ([`super`]), member by
//! member.

use super::{Core, MemberRead, MemberState, WriterView};
use crate::control::same_offer;
use crate::engine::members::Members;
use crate::signal::{Counters, SignalError};
use crate::telemetry::export::{Event, MemberChange};
use crate::window::WindowOutcome;

/// How the round's counter reading was folded (single target), so that the
/// latency window follows the same baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Folded {
    Window,
    Baseline,
    Reset,
}

/// One round's reads, folded: the window's sum and what the later phases
/// need to know about the reads. Events and writes accumulate here, in the
/// order the phases push them.
#[derive(Debug)]
pub(super) struct Round {
    /// Everything to export, in order.
    pub(super) ev: Vec<Event>,
    /// Shares to hand to members' writers.
    pub(super) writes: Vec<(String, f64)>,
    /// A member's tool maximum, or whether it is up, changed.
    pub(super) changed: bool,
    /// Attempts and failures over the attributable windows.
    pub(super) sum: (f64, f64),
    /// Members whose window went into `sum`.
    pub(super) contributors: u32,
    /// Members whose reading was valid (a window or a baseline).
    pub(super) valid_reads: u32,
    /// Windows not decided on (they straddled an offer change).
    pub(super) discarded: u32,
    /// Attempts and failures of the windows that straddled an offer
    /// change: after a failed probe's Down, its late failures
    /// (`ThrottleGovernor::charge_late`).
    pub(super) straddled: (f64, f64),
    /// Members whose counters went down.
    pub(super) resets: u32,
    /// Why members gave no valid signal.
    pub(super) errors: Vec<String>,
    /// A restarted tool was given its share back.
    pub(super) restart: bool,
    /// No write was in flight around any read.
    pub(super) idle: bool,
    /// How the (last) counter reading was folded.
    pub(super) folded: Option<Folded>,
    /// How many windows' time the longest window that went into `sum`
    /// covers (see [`window_span`]).
    pub(super) span: f64,
}

impl Round {
    fn new() -> Self {
        Round {
            ev: Vec::new(),
            writes: Vec::new(),
            changed: false,
            sum: (0.0, 0.0),
            contributors: 0,
            valid_reads: 0,
            discarded: 0,
            straddled: (0.0, 0.0),
            resets: 0,
            errors: Vec::new(),
            span: 0.0,
            restart: false,
            idle: true,
            folded: None,
        }
    }
}

impl Core {
    /// Folds every member's read of the round, in member order, and
    /// rebalances the ceiling when the members changed.
    pub(super) fn fold_reads(&mut self, at: f64, mut reads: Members<MemberRead>) -> Round {
        let mut round = Round::new();
        let names: Vec<String> = self.members.keys().cloned().collect();
        for name in names {
            let Some(r) = reads.remove(&name) else {
                continue;
            };
            self.fold_member(at, name, r, &mut round);
        }
        if round.changed {
            let eff = self.rebalance();
            if eff > 0.0 {
                round.ev.push(Event::Ceiling(self.gov.params().ceiling));
            }
            self.need_split = true;
        }
        round
    }

    /// Folds one member's read: the writer's progress, its signal (or why
    /// not), the offer its tool reports, the attribution of its window, and
    /// a tool restart.
    fn fold_member(&mut self, at: f64, name: String, r: MemberRead, round: &mut Round) {
        let member = self.member_name(&name);
        let latency_lag = self.latency.as_ref().map_or(0.0, |l| l.lag);
        let integer = self.policy.integer;
        let m = self.members.get_mut(&name).expect("member of the core");
        m.early_base = None;
        let finished_since = r.after.generation != m.seen_generation;
        let busy = r.before.busy() || r.after.busy() || r.before.generation != r.after.generation;
        round.idle &= !busy;
        if finished_since && r.after.last_confirmed {
            self.confirmed_since_outside = true;
        }
        m.last_write = r.after;
        if let Some(max) = r.after.tool_max {
            if m.tool_max != Some(max) {
                m.tool_max = Some(max);
                round.ev.push(Event::ToolMaximum {
                    member: member.clone(),
                    max,
                });
                round.changed = true;
            }
        }
        // A pulling tool that stopped asking is gone (pull control):
        // its window has no valid signal, whatever its counters say.
        let signal = match (r.signal, &r.committed) {
            (Ok(_), Some(Err(e))) if e.tool_gone() => Err(SignalError::NotPulled(e.to_string())),
            (s, _) => s,
        };
        let counters = match signal {
            Ok(c) => c,
            Err(e) => {
                let down_after = self.policy.down_after;
                member_failed(
                    m,
                    &name,
                    member,
                    r.after,
                    e,
                    down_after,
                    finished_since,
                    round,
                );
                return;
            }
        };
        // Valid reads since a reset: a failed read says nothing about a
        // restart, so it does not use up the read that can recognise one.
        m.since_reset = m.since_reset.map(|n| n.saturating_add(1));
        // Rounds whose reads failed since the last valid one: this read's
        // window (if it is one) covers their time too.
        let missed = std::mem::take(&mut m.failed_windows);
        m.last_error = None;
        if !m.up {
            m.up = true;
            round.changed = true;
            round.ev.push(Event::Member {
                member: name.clone(),
                change: MemberChange::Back,
            });
        }
        let lag = self.policy.lag_override.unwrap_or_else(|| {
            counters
                .lag
                .map(|d| d.as_secs_f64())
                .unwrap_or(m.lag)
                .max(latency_lag)
        });
        m.lag = lag;
        let reported = reported_offer(r.committed, &counters, &member, &mut round.ev);
        // Attribution (see the module docs).
        if finished_since {
            if let Some(f) = r.after.finished_at {
                m.quiet_from = m.quiet_from.max(f + lag);
            }
        }
        if busy {
            m.quiet_from = m.quiet_from.max(at + lag);
        }
        if let (Some(prev), Some(now)) = (m.last_reported, reported) {
            let ours = finished_since
                && r.after.last_confirmed
                && r.after
                    .last_value
                    .is_some_and(|v| same_offer(integer, v, now));
            if !same_offer(integer, prev, now) && !ours {
                m.quiet_from = m.quiet_from.max(at + lag);
            }
        }
        m.seen_generation = r.after.generation;
        if reported.is_some() {
            m.last_reported = reported;
        }
        m.committed = reported;
        let baseline_at = m.window.baseline().map(|b| b.at_secs);
        let reading = counters.reading(at);
        let observed = m.window.observe(reading);
        // The reading is the next baseline unless it was refused.
        m.baseline_generation = match (&observed, r.before.busy()) {
            (Err(_), _) => m.baseline_generation,
            (Ok(_), false) if r.before.generation == r.after.generation => {
                Some(r.before.generation)
            }
            (Ok(_), _) => None,
        };
        match observed {
            Ok(WindowOutcome::Window(w)) => {
                round.valid_reads += 1;
                round.folded = Some(Folded::Window);
                let attributable = baseline_at.is_some_and(|b| b >= m.quiet_from - 1e-9);
                if attributable || self.closing.is_some() {
                    round.sum.0 += w.attempts;
                    round.sum.1 += w.failures;
                    round.contributors += 1;
                    round.span =
                        round
                            .span
                            .max(window_span(w.secs, self.policy.window_secs, missed));
                } else {
                    round.discarded += 1;
                    round.straddled.0 += w.attempts;
                    round.straddled.1 += w.failures;
                    round.ev.push(Event::Discarded {
                        member: member.clone(),
                        reason: "offer_change",
                    });
                }
            }
            Ok(WindowOutcome::Baseline) => {
                round.valid_reads += 1;
                round.folded = Some(Folded::Baseline);
            }
            Ok(WindowOutcome::CounterReset) => {
                round.resets += 1;
                round.folded = Some(Folded::Reset);
                m.since_reset = Some(0);
                round.ev.push(Event::CounterReset {
                    member: member.clone(),
                });
            }
            Err(e) => {
                round.ev.push(Event::SignalError {
                    member: member.clone(),
                    error_type: e.error_type(),
                    message: e.to_string(),
                });
                round.errors.push(e.to_string());
            }
        }
        // Counters went down and the knob moved away from our share: the
        // tool restarted with its own default. Put our share back instead
        // of slow-starting from theirs.
        if !self.policy.dry_run && !busy && m.since_reset.is_some_and(|n| n <= 1) {
            if let (Some(now), Some(share)) = (reported, m.share) {
                if !same_offer(integer, now, share) {
                    round.ev.push(Event::ToolRestart {
                        member: member.clone(),
                        reported: now,
                        republished: share,
                    });
                    round.writes.push((name.clone(), share));
                    m.since_reset = None;
                    round.restart = true;
                }
            }
        }
    }
}

/// How many windows' time a window of `secs` covers, at least one, and
/// at least one more per read that failed since its baseline (a failed
/// read leaves its interval to the next valid one's window).
///
/// The plateau test divides a window's successes by it
/// (`ThrottleGovernor::set_window_span`), and the report's throughput by
/// the time it gives, so a window that ran long must not count as one: a
/// real Goose run's window after an Up covered 6 s of a 3 s cadence (the
/// looks for an early verdict and the rebase after the write delay the
/// next tick), counted as one window it set a best yield nothing could
/// match, and the offer held at 8 (`dwelling`) for 170 s below a bound at
/// 15.5. Never less than one: a short window of counters that move in
/// batches may hold a whole batch, and a yield over-stated that way would
/// block climbing in the same way (an under-stated one holds a window at
/// most, as the next window measures again).
pub(super) fn window_span(secs: f64, window_secs: f64, missed: u32) -> f64 {
    let rounds = f64::from(missed.saturating_add(1));
    if window_secs > 0.0 && secs.is_finite() {
        rounds.max(secs / window_secs)
    } else {
        rounds
    }
}

/// A member whose read gave no valid signal: counted and reported, taken
/// down after `down_after` failed windows (groups only), and a write that
/// finished meanwhile still moves the start of its next window.
#[allow(clippy::too_many_arguments)]
fn member_failed(
    m: &mut MemberState,
    name: &str,
    member: Option<String>,
    after: WriterView,
    e: SignalError,
    down_after: Option<u32>,
    finished_since: bool,
    round: &mut Round,
) {
    round.ev.push(Event::SignalError {
        member: member.clone(),
        error_type: e.error_type(),
        message: e.to_string(),
    });
    m.failed_windows += 1;
    m.committed = None;
    m.last_error = Some(format!("{}: {e}", e.error_type()));
    round.errors.push(match &member {
        Some(n) => format!("{n}: {e}"),
        None => e.to_string(),
    });
    if let Some(n) = down_after {
        if m.up && m.failed_windows >= n {
            m.up = false;
            round.changed = true;
            // Its counters may restart with it: rejoin from a new baseline.
            m.window.reset();
            round.ev.push(Event::Member {
                member: name.to_string(),
                change: MemberChange::Down,
            });
        }
    }
    // A write that finished meanwhile still moves the start
    // of the next attributable window.
    if finished_since {
        if let Some(f) = after.finished_at {
            m.quiet_from = m.quiet_from.max(f + m.lag);
        }
        m.seen_generation = after.generation;
    }
}

/// The offer the member's tool reports: from a separate read-back when
/// there is one, else the counters' offer gauge; an invalid value is
/// reported and ignored.
fn reported_offer(
    committed: Option<Result<f64, crate::control::ControlError>>,
    counters: &Counters,
    member: &Option<String>,
    ev: &mut Vec<Event>,
) -> Option<f64> {
    let reported = match committed {
        Some(Ok(v)) => Some(v),
        Some(Err(error)) => {
            ev.push(Event::ControlReadError {
                member: member.clone(),
                error,
            });
            None
        }
        None => counters.offer,
    };
    match reported {
        Some(v) if !v.is_finite() || v < 0.0 => {
            ev.push(Event::InvalidReading {
                member: member.clone(),
                value: v,
            });
            None
        }
        v => v,
    }
}
