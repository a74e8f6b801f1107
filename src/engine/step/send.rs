//! Phase 6 of the step: the window's event and the writes to send.
//!
//! Why it exists: the step's value is what the loop acts on. This phase
//! names the offer in effect (what the tool reports while a write is pending
//! or unconfirmed, never the value asked for), emits the window's event, and
//! splits the offer into the members' shares where it must be (re)written.

use super::decide::Decided;
use super::fold::Round;
use super::offer::Offer;
use super::{Core, StepOut};
use crate::telemetry::export::Event;

impl Core {
    /// Emits the window's event and queues the shares to write, and returns
    /// the step's value.
    pub(super) fn writes_to_send(
        &mut self,
        at: f64,
        round: Round,
        offer: &Offer,
        verdict: Decided,
    ) -> StepOut {
        let Round {
            mut ev,
            mut writes,
            changed,
            idle,
            span,
            ..
        } = round;
        let Decided {
            outcome,
            decided,
            early,
        } = verdict;
        let unconfirmed = offer.unconfirmed;
        if outcome.is_movement() {
            self.need_split = true;
        }
        let not_written = self.policy.dry_run || self.conflict;
        // While a write is pending or unconfirmed, the offer in effect is
        // what the tool reports, never the value asked for.
        let in_effect = if idle && !unconfirmed {
            None
        } else {
            self.committed_sum().map(|v| self.clamp(v))
        };
        ev.push(Event::Window {
            outcome: Box::new(outcome),
            at,
            // The window's own length (see `fold::window_span`; the
            // report's throughput divides by it), shorter for an early
            // verdict.
            window_secs: early.map_or(self.policy.window_secs * span.max(1.0), |b| b.secs),
            unconfirmed,
            in_effect,
            not_written,
            baseline: self.members.values().any(|m| m.window.baseline().is_some()),
        });
        if self.need_split && !not_written && self.members.values().any(|m| m.up) {
            let offer = self.gov.state().current;
            for w in self.split_writes(offer) {
                if !writes.iter().any(|(n, _)| *n == w.0) {
                    writes.push(w);
                }
            }
            self.need_split = false;
            if changed && self.policy.group {
                ev.push(Event::Split {
                    parts: self.split_parts(self.policy.params.control),
                });
            }
        }
        if self.policy.group {
            ev.push(Event::Members(self.statuses()));
        }
        StepOut {
            events: ev,
            writes,
            outcome,
            decided,
        }
    }
}
