//! Profile advice: recognise, from the windows the seed profile decides,
//! the signatures that robust's rules (the `robust` profile, and `gentle`,
//! the default, which shares them) handle better, and say so once.
//!
//! Why it exists: a config that names `profile = "seed"` (or its old
//! spelling `"default"`) gets exactly `GOVERNOR.md`, so a user whose target
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
mod tests {
    use super::super::{Control, Params, ThrottleGovernor};
    use super::*;

    fn params() -> Params {
        Params::new(Control::Concurrency, Some(1000.0), 1.0, None, 0.05, None).unwrap()
    }

    /// Feeds (attempts, failures) windows through the default governor and
    /// the advisor; returns every advice given.
    fn run(windows: impl IntoIterator<Item = (f64, f64)>) -> Vec<Advice> {
        let mut g = ThrottleGovernor::new(params());
        let mut a = Advisor::new(g.params());
        let mut out = Vec::new();
        for (n, f) in windows {
            let offer = g.state().current;
            let o = g.step(n, f);
            out.extend(a.observe(AdviceWindow {
                attempts: n,
                failures: f,
                offer,
                decision: o.decision,
            }));
        }
        out
    }

    #[test]
    fn a_clean_steady_target_gets_no_advice() {
        assert!(run((0..200).map(|_| (1000.0, 0.0))).is_empty());
        // A plain overload now and then, after probes: no advice either.
        let w = (0..200).map(|i| {
            if i % 10 == 9 {
                (1000.0, 200.0)
            } else {
                (1000.0, 0.0)
            }
        });
        assert!(run(w).is_empty());
    }

    #[test]
    fn tiny_samples_are_named_once() {
        // 30 attempts a window, two failures every fourth window (6.7 %).
        let w = (0..100).map(|i| if i % 4 == 3 { (30.0, 2.0) } else { (30.0, 0.0) });
        let advice = run(w);
        assert_eq!(advice.len(), 1, "{advice:?}");
        assert_eq!(advice[0].signature, Signature::TinySamples);
        assert!(
            advice[0].reason.contains("fewer than 100 attempts"),
            "{}",
            advice[0]
        );
        assert!(advice[0].to_string().ends_with("try profile = \"robust\""));
    }

    #[test]
    fn lagged_failures_are_named() {
        // An overshoot whose failures outlast the Down: the fraction does
        // not fall although the offer did, then it is clean at once. The
        // Ups come from the default governor's own climbs.
        let w = (0..100).map(|i| match i % 10 {
            5 => (1000.0, 300.0),
            6 => (1000.0, 300.0),
            _ => (1000.0, 0.0),
        });
        let advice = run(w);
        assert_eq!(advice.len(), 1, "{advice:?}");
        assert_eq!(advice[0].signature, Signature::LaggedFailures);
        // Falling fractions are plain congestion, twice over: no advice.
        let w = (0..100).map(|i| match i % 10 {
            5 => (1000.0, 300.0),
            6 => (1000.0, 100.0),
            _ => (1000.0, 0.0),
        });
        assert!(run(w).is_empty());
    }

    #[test]
    fn load_independent_bursts_are_named() {
        // The advisor is fed hand-made decisions: held offers, then a burst
        // whose Down follows no Up.
        let mut a = Advisor::new(&params());
        let mut got = Vec::new();
        for i in 0..60 {
            let (f, d) = if i % 12 == 11 {
                (400.0, Decision::Down(60.0))
            } else {
                (0.0, Decision::Hold)
            };
            got.extend(a.observe(AdviceWindow {
                attempts: 1000.0,
                failures: f,
                offer: 100.0,
                decision: d,
            }));
        }
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].signature, Signature::LoadIndependentBursts);
        assert!(a.has_spoken());
    }

    #[test]
    fn windows_without_traffic_are_ignored() {
        let mut a = Advisor::new(&params());
        for _ in 0..100 {
            let none = a.observe(AdviceWindow {
                attempts: 0.0,
                failures: 0.0,
                offer: 1.0,
                decision: Decision::Hold,
            });
            assert_eq!(none, None);
        }
        assert_eq!(a.windows, 0);
    }
}
