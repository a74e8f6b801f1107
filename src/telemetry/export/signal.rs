//! The signal's trouble: read errors, latency read errors, no valid window,
//! counter resets, and the signal-loss policy taking and leaving effect.
//!
//! Why it exists: one file per kind of event keeps [`Exporter::emit`]
//! a dispatch, and each kind's metrics and log lines together.

use tracing::{debug, info, warn};

use super::{Event, Exporter, Scope};
use crate::telemetry::logging::offer;

impl Exporter {
    /// Emits `SignalError`, `LatencyError`, `NoSignal`, `CounterReset`, `SignalLost`,
    /// `SignalBack`.
    pub(super) fn emit_signal(&self, event: Event) {
        let Scope {
            name, knob, m, l, ..
        } = self.scope();
        match event {
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
            _ => unreachable!("dispatched by Exporter::emit"),
        }
    }
}
