//! Evidence: when a pool of windows says something about the offer.
//!
//! Why it exists: fix 1 of [`super`] (a minimum sample) rests on a
//! one-sided exact binomial test ([`binomial_tail`], [`significant_breach`])
//! and on pooling windows from the last verdict on ([`ThrottleGovernor`]'s
//! `pool`); the settle window after a Down and the plateau test judge
//! evidence too. They are statistics, not policy: the decision made from a
//! verdict is [`super::probe`]'s.

use super::background::Thresholds;
use super::state::{Judgement, Verdict};
use super::tunables::{BREACH_WINDOWS, BURST_NOT_FALLING, EVIDENCE_ALPHA, PLATEAU_SHARE};
use crate::governor::{Evidence, HoldReason, ThrottleGovernor, SAFE_ZONE};

/// `ln(n!)`: exact below 20, else Stirling's series (error below 1e-12).
pub(super) fn ln_factorial(n: f64) -> f64 {
    if n < 20.0 {
        let mut acc = 0.0;
        let mut k = 2.0;
        while k <= n {
            acc += f64::ln(k);
            k += 1.0;
        }
        return acc;
    }
    let (x2, x3) = (n * n, n * n * n);
    n * n.ln() - n + 0.5 * (2.0 * std::f64::consts::PI * n).ln() + 1.0 / (12.0 * n)
        - 1.0 / (360.0 * x3)
        + 1.0 / (1260.0 * x3 * x2)
}

/// `P(X >= failures)` for `X ~ Binomial(attempts, p)`: the exact upper tail.
///
/// The sum starts at the probability mass at `failures` and walks away from
/// the mean (up for the tail, or down for its complement when `failures` is
/// below the mean) until the terms vanish, so its cost grows with the
/// spread of the distribution, not with the number of failures. Counts are
/// rounded to whole numbers; `p` must lie in (0, 1).
pub fn binomial_tail(failures: f64, attempts: f64, p: f64) -> f64 {
    let n = attempts.round().max(0.0);
    let f = failures.round().clamp(0.0, n);
    if f <= 0.0 {
        return 1.0;
    }
    let ratio = p / (1.0 - p);
    let ln_pmf = |k: f64| {
        ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
            + k * p.ln()
            + (n - k) * (1.0 - p).ln()
    };
    if f > n * p {
        // Σ_{k >= f} pmf(k), decreasing from k = f.
        let (mut k, mut term, mut sum) = (f, ln_pmf(f).exp(), 0.0);
        while term > 0.0 && term >= sum * 1e-17 {
            sum += term;
            if k >= n {
                break;
            }
            term *= (n - k) / (k + 1.0) * ratio;
            k += 1.0;
        }
        sum.min(1.0)
    } else {
        // 1 - Σ_{k < f} pmf(k), decreasing from k = f - 1.
        let (mut k, mut term, mut sum) = (f - 1.0, ln_pmf(f - 1.0).exp(), 0.0);
        while term > 0.0 && term >= sum * 1e-17 {
            sum += term;
            if k <= 0.0 {
                break;
            }
            term *= k / (n - k + 1.0) / ratio;
            k -= 1.0;
        }
        (1.0 - sum).max(0.0)
    }
}

/// Whether `failures` of `attempts` show, at significance
/// [`EVIDENCE_ALPHA`], a failure probability above `high` (a one-sided
/// exact binomial test).
pub(super) fn significant_breach(failures: f64, attempts: f64, high: f64) -> bool {
    significantly_above(failures, attempts, high)
}

/// Whether `failures` of `attempts` show, at significance
/// [`EVIDENCE_ALPHA`], a failure probability above `level`.
pub(super) fn significantly_above(failures: f64, attempts: f64, level: f64) -> bool {
    significantly_above_at(failures, attempts, level, EVIDENCE_ALPHA)
}

/// Whether `failures` of `attempts` show, at significance `alpha`, a
/// failure probability above `level` (`level` 0: any failure does).
pub(super) fn significantly_above_at(failures: f64, attempts: f64, level: f64, alpha: f64) -> bool {
    if attempts <= 0.0 || failures / attempts <= level {
        return false;
    }
    level <= 0.0 || binomial_tail(failures, attempts, level) <= alpha
}

impl ThrottleGovernor {
    /// Whether a clean verdict's `successes` over `work` (the offer times
    /// the windows pooled) fall significantly (three standard deviations,
    /// counts taken as Poisson) below [`PLATEAU_SHARE`] of the best yield
    /// seen: the offer grew past what the target completes, so more of it
    /// would add waiting, not goodput. Also folds this verdict's yield (a
    /// lower bound, two standard deviations down) into the best.
    pub(super) fn plateau(&mut self, successes: f64, work: f64) -> bool {
        if work <= 0.0 {
            return false;
        }
        let expected = PLATEAU_SHARE * self.robust.best_yield * work;
        let plateau = expected > 0.0 && successes < expected - 3.0 * expected.sqrt();
        if successes > 0.0 {
            let lower = (successes - 2.0 * successes.sqrt()) / work;
            self.robust.best_yield = self.robust.best_yield.max(lower);
        }
        plateau
    }

    /// a significant breach worse than the one that caused the Down, else a
    /// hold.
    pub(super) fn settle(&mut self, attempts: f64, failures: f64) -> Verdict {
        let p = self.params;
        let frac = failures / attempts;
        if let Some(burst) = self.robust.burst.take() {
            // Congestion answers a lower offer with fewer failures; a burst
            // does not care, and a one-window burst is simply over.
            if frac < self.robust.thresholds.clean_below {
                return Verdict::BurstOver(burst, false);
            }
            if frac >= BURST_NOT_FALLING * burst.frac {
                return Verdict::BurstOver(burst, true);
            }
        }
        if significant_breach(failures, attempts, p.high) && frac > self.robust.last_down_frac {
            return Verdict::Decide {
                judgement: Judgement::Breach(frac),
                evidence: None,
            };
        }
        Verdict::Hold(HoldReason::Settling)
    }

    /// Adds a window to the pools and says whether they give a verdict.
    pub(super) fn pool(&mut self, attempts: f64, failures: f64) -> Verdict {
        let p = self.params;
        let offer = self.state.current;
        let r = &mut self.robust;
        let opening = self.state.last_bad.is_none() && r.last_clean.is_none();
        r.thresholds = Thresholds::new(p.low, p.high, r.background.at(offer, opening));
        // Only a window well below the last wall witnesses the background:
        // near a wall, failures are the load's (a capacity that halved, or
        // rose, leaves such windows at offers that later look low).
        if self
            .state
            .last_bad
            .is_none_or(|bad| offer < SAFE_ZONE * bad)
        {
            r.background.hold(offer, attempts, failures);
        }
        r.pool_attempts += attempts;
        r.pool_failures += failures;
        r.pool_windows += 1;
        // The breach test looks at recent windows at this offer, not at
        // every window since the last move: early clean windows must not
        // hide failures that are rising now.
        let slot = r.offer_len % BREACH_WINDOWS;
        r.offer_recent[slot] = (attempts, failures);
        r.offer_len += 1;
        let filled = r.offer_len.min(BREACH_WINDOWS);
        r.offer_attempts = r.offer_recent[..filled].iter().map(|w| w.0).sum();
        r.offer_failures = r.offer_recent[..filled].iter().map(|w| w.1).sum();
        if significant_breach(failures, attempts, p.high) {
            // A breach on its own is the breach rules' (a back-off, or a
            // burst's test), not evidence of a lasting band.
            return Verdict::Decide {
                judgement: Judgement::Breach(failures / attempts),
                evidence: None,
            };
        }
        r.offer_all.0 += attempts;
        r.offer_all.1 += failures;
        let (n, f) = (r.pool_attempts, r.pool_failures);
        let evidence = (r.pool_windows > 1).then_some(Evidence {
            attempts: n,
            failures: f,
            windows: r.pool_windows,
        });
        if significant_breach(r.offer_failures, r.offer_attempts, p.high) {
            let judgement = Judgement::Breach(r.offer_failures / r.offer_attempts);
            let evidence = Some(Evidence {
                attempts: r.offer_attempts,
                failures: r.offer_failures,
                windows: r.pool_windows,
            })
            .filter(|_| r.offer_attempts > attempts);
            return Verdict::Decide {
                judgement,
                evidence,
            };
        }
        let t = r.thresholds;
        if n >= t.min_attempts() {
            let frac = f / n;
            let judgement = if t.is_clean(f, n) {
                Judgement::Clean(frac)
            } else if r.retreated && significantly_above(f, n, t.clean_below) {
                // Back at an offer that was clean, and clearly not clean any
                // more: state left by the probe (retries, a backlog) keeps
                // failing. Only a real back-off drains it.
                Judgement::Breach(frac)
            } else {
                Judgement::Band(frac)
            };
            return Verdict::Decide {
                judgement,
                evidence,
            };
        }
        // Slow start climbs on one clean window, as fast as the default;
        // the thin failures pooled before it were inconclusive. So does a
        // reclimb well below the last wall (under the safe zone): there a
        // window has few attempts, and pooling a full sample at an offer
        // far below the capacity would take tens of windows.
        let far_below = match self.state.last_bad {
            None => true,
            Some(bad) => {
                r.tunables.prove_the_band
                    && t.estimate.is_some_and(|e| e.attempts * p.low >= 1.0)
                    && offer < SAFE_ZONE * bad
            }
        };
        if far_below && t.is_clean(failures, attempts) {
            return Verdict::Decide {
                judgement: Judgement::Clean(failures / attempts),
                evidence: None,
            };
        }
        Verdict::Hold(HoldReason::Gathering)
    }
}
