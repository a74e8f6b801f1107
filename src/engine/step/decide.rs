//! Phases 3 to 5 of the step: the latency window, the decision, and the
//! signal-loss policy.
//!
//! Why it exists: once the round is folded and the offer in effect known,
//! the governor decides once for the whole target. Around that one call sit
//! the latency window (over the counters' baseline), the early verdict's
//! sample, the hold reasons of a round that decides nothing, the seed
//! profile's advisor, the calm that ends a conflict, and the count of
//! rounds without a valid signal.

use super::fold::{Folded, Round};
use super::offer::Offer;
use super::{Core, EarlyBreach, CONFLICT_WINDOWS};
use crate::governor::advice::AdviceWindow;
use crate::governor::latency_bound::LatencyWindow;
use crate::governor::{HoldReason, Outcome};
use crate::signal::SignalError;
use crate::telemetry::export::Event;
use crate::window::{LatencyOutcome, LatencySample};

/// What the round decided.
#[derive(Debug, Clone, Copy)]
pub(super) struct Decided {
    /// The window's outcome (a hold when nothing was decided).
    pub(super) outcome: Outcome,
    /// Whether the governor decided on a window.
    pub(super) decided: bool,
    /// The early verdict the window was closed on, when it was.
    pub(super) early: Option<EarlyBreach>,
}

impl Core {
    /// The latency window, over the same baseline as the counters'
    /// (`None` without a latency bound, or when no counter reading was
    /// folded).
    pub(super) fn latency_window(
        &mut self,
        folded: Option<Folded>,
        latency: Option<Result<LatencySample, SignalError>>,
        ev: &mut Vec<Event>,
    ) -> Option<LatencyWindow> {
        let mut latency = latency;
        let mut lat_window = None;
        if let (Some(ls), Some(f)) = (self.latency.as_mut(), folded) {
            if f == Folded::Reset {
                ls.tracker.reset();
            }
            let observed = match latency.take() {
                Some(Ok(sample)) => match ls.tracker.observe(ls.quantile, sample) {
                    LatencyOutcome::Window(v) => v,
                    LatencyOutcome::Baseline => None,
                    LatencyOutcome::Reset => {
                        ev.push(Event::LatencyError {
                            error_type: "counter_reset",
                            message: "a histogram bucket went down or the buckets changed: rebased"
                                .into(),
                        });
                        None
                    }
                },
                Some(Err(e)) => {
                    // The next read starts a new baseline: a window must
                    // never span more rounds than the counters'.
                    ls.tracker.reset();
                    ev.push(Event::LatencyError {
                        error_type: e.error_type(),
                        message: e.to_string(),
                    });
                    None
                }
                None => None,
            };
            lat_window = Some(LatencyWindow {
                quantile: ls.quantile,
                observed,
                bound: ls.bound,
                low: ls.low,
            });
        }
        lat_window
    }

    /// The decision: the governor steps on the round's sum (or the early
    /// verdict's sample) when a window is attributable, else holds with the
    /// reason the round gives; then the advisor and the calm.
    pub(super) fn decide(
        &mut self,
        round: &mut Round,
        offer: &Offer,
        lat_window: Option<LatencyWindow>,
    ) -> Decided {
        let decided = round.contributors > 0 && !offer.unknown;
        let early = self.closing.filter(|_| decided);
        if let Some(b) = early {
            // The early window starts after the write (see [`early`](super::early)).
            round.sum = (b.attempts, b.failures);
            round.ev.push(Event::EarlyVerdict {
                attempts: round.sum.0,
                failures: round.sum.1,
                secs: b.secs,
                p_value: b.p_value,
            });
        }
        let sum = round.sum;
        // What a failed probe's offer failed after its verdict, until the
        // Down reached the counters, is that probe's cost too.
        if round.straddled.0 > 0.0 {
            let failures = self.gov.charge_late(round.straddled.0, round.straddled.1);
            if failures > 0.0 {
                round.ev.push(Event::LateCost {
                    failures,
                    owed: self.gov.owed().unwrap_or(0.0),
                });
            }
        }
        let outcome = if decided {
            // How many windows' time the counts cover: the plateau test
            // measures successes per window of time (see
            // `ThrottleGovernor::set_window_span`).
            let span = match early {
                Some(b) if self.policy.window_secs > 0.0 => b.secs / self.policy.window_secs,
                _ => round.span.max(1.0),
            };
            self.gov.set_window_span(span);
            self.gov.step_with_latency(sum.0, sum.1, lat_window)
        } else if round.discarded > 0 {
            self.gov.hold(HoldReason::OfferChange, None, false)
        } else if round.valid_reads == 0 && !round.errors.is_empty() {
            if self.policy.group {
                round.ev.push(Event::NoSignal {
                    message: format!("no instance answered: {}", round.errors.join("; ")),
                });
            }
            self.gov.hold(HoldReason::SignalError, None, false)
        } else if round.valid_reads == 0 && round.resets > 0 {
            self.gov.hold(HoldReason::CounterReset, None, false)
        } else {
            self.gov.hold(HoldReason::Baseline, None, false)
        };
        if decided {
            self.watch = matches!(outcome.decision, crate::governor::Decision::Up(_));
            if let Some(a) = self.advisor.as_mut() {
                if let Some(advice) = a.observe(AdviceWindow {
                    attempts: sum.0,
                    failures: sum.1,
                    offer: outcome.from,
                    decision: outcome.decision,
                }) {
                    round.ev.push(Event::Advice(advice.to_string()));
                }
            }
        }
        if decided && !offer.outside {
            self.note_calm(&mut round.ev);
        }
        Decided {
            outcome,
            decided,
            early,
        }
    }

    /// Calm: decided windows in a row with the knob left alone. Enough of
    /// them forgive earlier fights (and end a conflict).
    fn note_calm(&mut self, ev: &mut Vec<Event>) {
        self.calm += 1;
        if self.calm >= CONFLICT_WINDOWS {
            self.fights = 0;
            if self.conflict {
                self.conflict = false;
                self.calm = 0;
                ev.push(Event::Conflict {
                    on: false,
                    changes: 0,
                });
            }
        }
    }

    /// Signal loss: no member gave a valid read. After
    /// `signal_loss_windows` such rounds the policy applies once (hold, or
    /// the floor); a valid read ends it.
    pub(super) fn signal_loss(&mut self, round: &mut Round) {
        let invalid = round.valid_reads == 0 && (round.resets > 0 || !round.errors.is_empty());
        if invalid {
            self.loss_invalid += 1;
            if !self.loss_lost && self.loss_invalid >= self.policy.signal_loss_windows {
                self.loss_lost = true;
                let p = *self.gov.params();
                let current = self.gov.state().current;
                let to_floor = self.policy.loss_to_floor;
                round.ev.push(Event::SignalLost {
                    windows: self.loss_invalid,
                    to_floor,
                    current,
                    floor: p.floor,
                });
                if to_floor && !self.policy.dry_run && current > p.floor {
                    self.gov.set_current(p.floor);
                    self.need_split = true;
                }
            }
        } else if round.valid_reads > 0 {
            if self.loss_lost {
                round.ev.push(Event::SignalBack {
                    current: self.gov.state().current,
                });
            }
            self.loss_invalid = 0;
            self.loss_lost = false;
        }
    }
}
