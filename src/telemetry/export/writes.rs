//! The control side: reads of the committed offer, outside changes and tool
//! restarts, each write handed over and finished, the tool's maximum, a fight
//! with another writer, and `on_exit`.
//!
//! Why it exists: one file per kind of event keeps [`Exporter::emit`]
//! a dispatch, and each kind's metrics and log lines together.

use tracing::{error, info, warn};

use super::{Event, Exporter, Scope};
use crate::control::WriteOutcome;
use crate::telemetry::logging::offer;

impl Exporter {
    /// Emits `ControlReadError`, `InvalidReading`, `OutsideChange`, `ToolOffer`,
    /// `ToolRestart`, `WriteQueued`, `Write`, `ToolMaximum`, `Conflict`, `OnExit`,
    /// `WriteAbandoned`.
    pub(super) fn emit_write(&self, event: Event) {
        let Scope {
            name, knob, m, l, ..
        } = self.scope();
        match event {
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
            Event::WriteAbandoned => {
                warn!(target = %name, "In-flight write abandoned at shutdown");
            }
            _ => unreachable!("dispatched by Exporter::emit"),
        }
    }
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
