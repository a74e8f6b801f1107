//! A target's lifecycle: it starts (its status and static series), restores
//! its congestion memory, publishes its opening offer, states its latency
//! bound, and is given advice.
//!
//! Why it exists: one file per kind of event keeps [`Exporter::emit`]
//! a dispatch, and each kind's metrics and log lines together.

use tracing::info;

use super::{Event, Exporter, Scope};
use crate::telemetry::logging::offer;
use crate::telemetry::TargetStatus;

impl Exporter {
    /// Emits `Started`, `MemoryRestored`, `Opening`, `LatencyBound`, `Advice`.
    pub(super) fn emit_lifecycle(&self, event: Event) {
        let Scope {
            name,
            knob,
            tel,
            m,
            l,
        } = self.scope();
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
                for state in crate::telemetry::metrics::CAPACITY_STATES {
                    m.capacity
                        .remove(&crate::telemetry::metrics::CapacityLabels {
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
                let _ = self.handles.set(super::Handles {
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
            Event::LatencyBound(b) => {
                let q = crate::telemetry::metrics::QuantileLabels {
                    target: self.name.clone(),
                    slo_quantile: b.quantile.to_string(),
                };
                m.latency_bound.get_or_create(&q).set(b.bound_secs);
                m.latency_low.get_or_create(&q).set(b.low_secs);
                m.window_latency.get_or_create(&q).set(f64::NAN);
                for error_type in ["counter_reset", "timeout", "connect", "missing_series"] {
                    m.latency_errors
                        .get_or_create(&crate::telemetry::metrics::ErrorLabels {
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
            Event::Advice(text) => {
                info!(target = %name, "{name}: {text}");
                self.update(|s| s.advice = Some(text));
            }
            _ => unreachable!("dispatched by Exporter::emit"),
        }
    }
}
