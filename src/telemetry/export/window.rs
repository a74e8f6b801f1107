//! Windows: each window's outcome (decision and window metrics, status,
//! history, the movement's log line, every window's debug line), discarded
//! windows, early verdicts, read and decision timings, and the live
//! capacity estimate.
//!
//! Why it exists: one file per kind of event keeps [`Exporter::emit`]
//! a dispatch, and each kind's metrics and log lines together.

use tracing::{debug, info};

use super::{Event, Exporter, Scope};
use crate::governor::HoldReason;
use crate::telemetry::logging::{log_memory_clear, log_movement, log_window, offer};
use crate::telemetry::CapacityEstimate;

impl Exporter {
    /// Emits `Window`, `Discarded`, `EarlyRead`, `EarlyVerdict`, `ReadDuration`,
    /// `DecisionLatency`, `Capacity`.
    pub(super) fn emit_window(&self, event: Event) {
        let Scope {
            name,
            knob,
            tel,
            m,
            l,
        } = self.scope();
        match event {
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
                log_window(name, knob, &outcome);
                if outcome.memory_cleared {
                    log_memory_clear(name, knob, outcome.from, outcome.memory_refuted);
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
                    .get_or_create(&crate::telemetry::metrics::ReasonLabels {
                        target: self.name.clone(),
                        reason,
                    })
                    .inc();
                debug!(target = %name, reason, "{}: window discarded ({reason}): it straddles an offer change or falls within the signal's lag after one", self.who(&member));
            }
            Event::LateCost { failures, owed } => {
                m.probe_late_failures.get_or_create(&l).inc_by(failures);
                info!(target = %name, failures, owed,
                    "{name}: the failed probe went on failing until the Down reached the counters: {failures:.0} more failed attempts, charged to it; the next probe from where it started waits for {owed:.0} clean attempts");
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
            Event::Capacity(estimate) => {
                let mut before = CapacityEstimate::None;
                self.update(|s| before = std::mem::replace(&mut s.capacity, estimate));
                if !estimate.changed_from(&before) {
                    return;
                }
                let series = |state| crate::telemetry::metrics::CapacityLabels {
                    target: self.name.clone(),
                    state,
                };
                for state in crate::telemetry::metrics::CAPACITY_STATES {
                    if Some(state) != estimate.state() {
                        m.capacity.remove(&series(state));
                    }
                }
                match (estimate.state(), estimate.figure()) {
                    (Some(state), Some(f)) => {
                        m.capacity.get_or_create(&series(state)).set(f.offer);
                        let band = f
                            .dead_band
                            .map(|b| b.sentence(&offer(knob, f.offer)))
                            .unwrap_or_default();
                        info!(target = %name, capacity = f.offer, state,
                            "{name}: capacity {} {knob} ({}, failure ratio {} [{}–{}] over {} window{}){band}",
                            offer(knob, f.offer),
                            if f.lower_bound {
                                "steady, a lower bound: no higher offer was shown over the bound"
                            } else {
                                state
                            },
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
            _ => unreachable!("dispatched by Exporter::emit"),
        }
    }
}
