//! Phase 2 of the step: the committed offer, and the other writer.
//!
//! Why it exists: the governor must step from the offer the tool runs, not
//! from the one asked for. This phase adopts the sum the up members report
//! (trusted only when no write was in flight around any read), tells our
//! unconfirmed write from an outside writer's change, counts the fights
//! that make a conflict, and discards a window whose offer is unknown.

use super::fold::Round;
use super::{Core, MemberState, CONFLICT_WINDOWS};
use crate::control::same_offer;
use crate::telemetry::export::Event;

/// What the round says about the offer in effect.
#[derive(Debug, Clone, Copy)]
pub(super) struct Offer {
    /// Another writer changed the knob this round.
    pub(super) outside: bool,
    /// A member's last write was not confirmed.
    pub(super) unconfirmed: bool,
    /// An unconfirmed write and no read of what the tool runs: the window
    /// belongs to no known offer.
    pub(super) unknown: bool,
}

impl Core {
    /// Adopts the committed offer, counts an outside change towards a
    /// conflict, and discards the round's windows when the offer in effect
    /// is unknown.
    pub(super) fn committed_offer(&mut self, round: &mut Round) -> Offer {
        let unconfirmed = self.unconfirmed();
        let outside = self.adopt_committed(round, unconfirmed);
        if outside {
            self.count_fight(&mut round.ev);
        }
        // A write that was not confirmed, and no read of what the tool runs
        // (its read-back fails or hangs): the window belongs to no known
        // offer, so it is not decided on. Stepping from the value asked for
        // would climb on writes that never landed.
        let unknown = unconfirmed && self.members.values().any(|m| m.up && m.committed.is_none());
        if unknown && round.contributors > 0 {
            round.discarded += round.contributors;
            round.ev.push(Event::Discarded {
                member: None,
                reason: "offer_unknown",
            });
        }
        Offer {
            outside,
            unconfirmed,
            unknown,
        }
    }

    /// The committed offer: the sum over the up members, trusted only
    /// when no write was in flight around any read. Returns whether another
    /// writer changed it.
    fn adopt_committed(&mut self, round: &mut Round, unconfirmed: bool) -> bool {
        let mut outside = false;
        let integer = self.policy.integer;
        if round.idle && !self.need_split && !round.restart {
            if let Some(reported) = self.committed_sum() {
                let cur = self.gov.state().current;
                let to = self.clamp(reported);
                if self.policy.dry_run || self.conflict {
                    self.gov.set_current(to);
                } else if !same_offer(integer, reported, cur) {
                    if unconfirmed {
                        // Our write did not land: the offer in effect is the
                        // tool's, and the governor steps from it.
                        round.ev.push(Event::ToolOffer {
                            asked: cur,
                            in_effect: reported,
                        });
                    } else {
                        outside = true;
                        if self.last_outside != Some(reported) {
                            round.ev.push(Event::OutsideChange {
                                from: cur,
                                reported,
                                to,
                                group: self.policy.group,
                            });
                            self.last_outside = Some(reported);
                        }
                    }
                    self.gov.set_current(to);
                    self.need_split = true;
                }
            }
        }
        outside
    }

    /// The offer the up members' tools report, summed (`None` when a member
    /// has not reported one, or when no member is up).
    pub(super) fn committed_sum(&self) -> Option<f64> {
        let up: Vec<&MemberState> = self.members.values().filter(|m| m.up).collect();
        if up.is_empty() {
            None
        } else {
            up.iter().map(|m| m.committed).sum::<Option<f64>>()
        }
    }

    /// An outside change after a confirmed write of ours is a fight;
    /// [`CONFLICT_WINDOWS`] of them make a conflict.
    fn count_fight(&mut self, ev: &mut Vec<Event>) {
        self.calm = 0;
        if self.confirmed_since_outside {
            self.fights += 1;
        }
        self.confirmed_since_outside = false;
        if !self.conflict && self.fights >= CONFLICT_WINDOWS {
            self.conflict = true;
            ev.push(Event::Conflict {
                on: true,
                changes: self.fights,
            });
        }
    }
}
