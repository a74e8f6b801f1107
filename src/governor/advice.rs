//! Profile advice: recognise, from the windows the seed profile decides,
//! the signatures that robust's rules (the `robust` profile, and `gentle`,
//! the default, which shares them) handle better, and say so once.
//!
//! Why it exists: a config that names `profile = "seed"` (or its old
//! spelling `"default"`) gets exactly `docs/GOVERNOR.md`, so a user whose target
//! shows tiny samples, lagged failures or load-independent failure bursts
//! would never learn that the seed rules are costing them goodput or
//! failures. This detector watches
//! the windows one at a time and returns at most one [`Advice`], with a
//! human reason, for the live loop to log.
//!
//! What it may touch: [`crate::governor`]'s types only. It is pure (no clock,
//! no I/O) and never changes a decision: it reads them.
//!
//! # Signatures
//! - **Tiny samples**: at least [`TINY_WINDOWS`] (and half) of the windows with traffic
//!   resolved fewer than `1 / low` attempts (so one failure leaves a window
//!   unclean), and at least [`TINY_DOWNS`] of those windows backed off on a
//!   fraction under 20 % (a failure or two too many, not an overload).
//! - **Lagged failures** (on windows of at least `1 / low` attempts):
//!   [`LAG_EPISODES`] times, two or more Downs in a row right after an Up
//!   (within two windows), one of them on a
//!   fraction at least [`LAG_NOT_FALLING`] (80 %) of the Down before it
//!   although the offer fell, ended in a clean window: the later Downs
//!   answered failures that outlasted the first (late-resolving failures,
//!   retries), not a new overload.
//! - **Load-independent bursts** (likewise): [`BURST_EVENTS`] times, a
//!   window failed at least [`BURST_MIN_FRAC`] (20 %) of its attempts right
//!   after a window within `high`, with no Up in the two windows before it:
//!   the failures came without more load, so backing off does not address
//!   them.
//!
//! Each count needs [`MIN_WINDOWS`] windows with traffic before it speaks,
//! so a start-up transient never triggers advice.

use std::fmt;

use super::{Decision, Params};

/// Windows with traffic before any advice.
pub const MIN_WINDOWS: u32 = 20;
/// Tiny-sample windows needed.
pub const TINY_WINDOWS: u32 = 10;
/// Back-offs on tiny samples needed.
pub const TINY_DOWNS: u32 = 2;
/// Lag episodes needed.
pub const LAG_EPISODES: u32 = 2;
/// A Down whose fraction stays above this share of the previous Down's
/// did not fall with the offer.
pub const LAG_NOT_FALLING: f64 = 0.8;
/// Unprovoked breaches needed.
pub const BURST_EVENTS: u32 = 2;
/// The least fraction (20 %) of an unprovoked breach that counts: small
/// ones are a capacity drifting down.
pub const BURST_MIN_FRAC: f64 = 0.2;

/// One window as the detector sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdviceWindow {
    /// Resolved attempts in the window.
    pub attempts: f64,
    /// Failed attempts in the window.
    pub failures: f64,
    /// The committed offer the window ran at.
    pub offer: f64,
    /// What the governor decided on it.
    pub decision: Decision,
}

/// Which signature was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signature {
    /// Too few attempts per window for one failure to stay below `low`.
    TinySamples,
    /// Failures that outlast the Down that answered them.
    LaggedFailures,
    /// Failure bursts that arrive without more load.
    LoadIndependentBursts,
}

impl Signature {
    /// The spelling used in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Signature::TinySamples => "tiny samples",
            Signature::LaggedFailures => "lagged failures",
            Signature::LoadIndependentBursts => "load-independent bursts",
        }
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A suggestion to leave the seed rules: drop `profile` for the default
/// `gentle`, or try `profile = "robust"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    /// What was seen.
    pub signature: Signature,
    /// Why, in words, with the counts.
    pub reason: String,
}

impl fmt::Display for Advice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}; remove `profile` for the default \"gentle\", or try profile = \"robust\"",
            self.signature, self.reason
        )
    }
}

/// The detector: feed it every window; it answers at most once.
#[derive(Debug, Clone)]
pub struct Advisor {
    high: f64,
    low: f64,
    windows: u32,
    tiny: u32,
    tiny_downs: u32,
    lag: u32,
    bursts: u32,
    /// The current run of Downs: (count, last fraction, whether a Down
    /// came on a fraction that did not fall).
    downs: Option<(u32, f64, bool)>,
    /// The last two windows' fractions and decisions, newest last.
    recent: [Option<(f64, Decision)>; 2],
    spoken: bool,
}

impl Advisor {
    /// A detector for a target governed with `params`.
    pub fn new(params: &Params) -> Self {
        Advisor {
            high: params.high,
            low: params.low,
            windows: 0,
            tiny: 0,
            tiny_downs: 0,
            lag: 0,
            bursts: 0,
            downs: None,
            recent: [None, None],
            spoken: false,
        }
    }

    /// Whether the advice has been given.
    pub fn has_spoken(&self) -> bool {
        self.spoken
    }

    /// Folds one window; returns the advice the first time a signature is
    /// established, and `None` ever after.
    pub fn observe(&mut self, w: AdviceWindow) -> Option<Advice> {
        if self.spoken || w.attempts.is_nan() || w.attempts <= 0.0 {
            return None;
        }
        self.windows += 1;
        let frac = w.failures / w.attempts;
        let down = matches!(w.decision, Decision::Down(_));
        let tiny = w.attempts * self.low < 1.0;
        if tiny {
            self.tiny += 1;
            // A small breach on a tiny window: one or two failures too many.
            if down && frac < BURST_MIN_FRAC {
                self.tiny_downs += 1;
            }
        }
        let [older, prev] = self.recent;
        // Downs in a row where the fraction did not fall with the offer,
        // then clean at once (on windows large enough to tell: tiny ones
        // are the first signature's).
        if !tiny {
            // Only a run that an Up provoked (in the two windows before it)
            // is an overshoot whose failures came late; an unprovoked one
            // is the third signature's.
            let provoked = [older, prev]
                .iter()
                .any(|r| matches!(r, Some((_, Decision::Up(_)))));
            if down {
                self.downs = match self.downs {
                    Some((n, last, stuck)) => {
                        Some((n + 1, frac, stuck || frac >= LAG_NOT_FALLING * last))
                    }
                    None if provoked => Some((1, frac, false)),
                    None => None,
                };
            } else if let Some((n, _, stuck)) = self.downs.take() {
                if frac < self.low && n >= 2 && stuck {
                    self.lag += 1;
                }
            }
        }
        // A large breach after a window within the bound, with no Up in the
        // two before.
        let no_up = |r: Option<(f64, Decision)>| !matches!(r, Some((_, Decision::Up(_))));
        if frac >= BURST_MIN_FRAC
            && !tiny
            && prev.is_some_and(|(f, _)| f <= self.high)
            && no_up(prev)
            && no_up(older)
        {
            self.bursts += 1;
        }
        self.recent = [prev, Some((frac, w.decision))];
        if self.windows < MIN_WINDOWS {
            return None;
        }
        let advice = if self.tiny >= TINY_WINDOWS
            && 2 * self.tiny >= self.windows
            && self.tiny_downs >= TINY_DOWNS
        {
            Some(Advice {
                signature: Signature::TinySamples,
                reason: format!(
                    "{} of {} windows resolved fewer than {:.0} attempts, so one failure \
                     keeps a window from being clean, and {} of them backed off",
                    self.tiny,
                    self.windows,
                    1.0 / self.low,
                    self.tiny_downs
                ),
            })
        } else if self.lag >= LAG_EPISODES {
            Some(Advice {
                signature: Signature::LaggedFailures,
                reason: format!(
                    "{} times a second back-off answered failures that outlasted the first, \
                     and the next window was clean",
                    self.lag
                ),
            })
        } else if self.bursts >= BURST_EVENTS {
            Some(Advice {
                signature: Signature::LoadIndependentBursts,
                reason: format!(
                    "{} times at least 20 % of attempts failed right after a window within \
                     high, with no increase in load",
                    self.bursts
                ),
            })
        } else {
            None
        };
        self.spoken = advice.is_some();
        advice
    }
}

#[cfg(test)]
mod tests;
