//! The exporter: the one place where a target's telemetry is emitted.
//!
//! Why it exists: the engine decides and the writer writes, and both only
//! describe what happened, as [`Event`] values. The [`Exporter`] turns each
//! event into its metrics, its status and history updates, and its log
//! line, so that a behaviour shared by single targets and groups is
//! reported the same way for both. [`Exporter::emit`] is one `match` that
//! hands each kind of event to its file, so a newcomer finds every metric
//! a target emits by kind:
//!
//! - `lifecycle`: start, restored memory, opening offer, latency bound,
//!   advice;
//! - `window`: each window's outcome, discarded windows, early verdicts,
//!   timings, the live capacity estimate;
//! - `signal`: signal errors, resets, signal loss;
//! - `writes`: reads of the committed offer, outside changes, writes,
//!   conflicts, `on_exit`;
//! - `members`: group members, the split, the ceiling, discovery;
//! - `event`: the [`Event`] values themselves.
//!
//! The offer endpoint's requests (`kind = "pull"`) are not a target task's
//! events (a pull may name no known target at all), so they have their own
//! small [`Pull`] value, emitted here too by [`emit_pull`]; so do reloads
//! ([`Reload`], [`emit_reload`]). Both are in `process`.
//!
//! What it may touch: the shared [`Telemetry`] and the log. It never decides
//! and never talks to a tool.

mod event;
mod lifecycle;
mod members;
mod process;
mod signal;
mod window;
mod writes;

use std::sync::{Arc, OnceLock};

use super::metrics::{ErrorLabels, Name, TargetLabel, TargetSeries, WriteLabels};
use super::{TargetSlot, TargetStatus, Telemetry};
use crate::governor::Control;

pub use event::{Event, MemberChange, SdFailure};
pub use process::{emit_pull, emit_reload, Pull, Reload};
pub use writes::describe;

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

/// What every kind's emitter starts from: the target's name and knob, the
/// telemetry and its metrics, and the target's label.
struct Scope<'a> {
    name: &'a str,
    knob: Control,
    tel: &'a Telemetry,
    m: &'a super::Metrics,
    l: TargetLabel,
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

    fn scope(&self) -> Scope<'_> {
        Scope {
            name: self.name.as_str(),
            knob: self.knob,
            tel: &self.tel,
            m: &self.tel.metrics,
            l: TargetLabel {
                target: self.name.clone(),
            },
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
        match event {
            e @ (Event::Started { .. }
            | Event::MemoryRestored { .. }
            | Event::Opening { .. }
            | Event::LatencyBound { .. }
            | Event::Advice { .. }) => self.emit_lifecycle(e),
            e @ (Event::Window { .. }
            | Event::Discarded { .. }
            | Event::LateCost { .. }
            | Event::EarlyRead
            | Event::EarlyVerdict { .. }
            | Event::ReadDuration { .. }
            | Event::DecisionLatency { .. }
            | Event::Capacity { .. }) => self.emit_window(e),
            e @ (Event::SignalError { .. }
            | Event::LatencyError { .. }
            | Event::NoSignal { .. }
            | Event::CounterReset { .. }
            | Event::SignalLost { .. }
            | Event::SignalBack { .. }) => self.emit_signal(e),
            e @ (Event::ControlReadError { .. }
            | Event::InvalidReading { .. }
            | Event::OutsideChange { .. }
            | Event::ToolOffer { .. }
            | Event::ToolRestart { .. }
            | Event::WriteQueued { .. }
            | Event::Write { .. }
            | Event::ToolMaximum { .. }
            | Event::Conflict { .. }
            | Event::OnExit { .. }
            | Event::WriteAbandoned) => self.emit_write(e),
            e @ (Event::Member { .. }
            | Event::Split { .. }
            | Event::Ceiling { .. }
            | Event::Members { .. }
            | Event::MemberSkipped { .. }
            | Event::MemberUnbuilt { .. }
            | Event::Discovery { .. }) => self.emit_members(e),
        }
    }
}

#[cfg(test)]
mod tests;
