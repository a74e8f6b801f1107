//! Evidence: when a pool of windows says something about the offer.
//!
//! Why it exists: fix 1 of [`super`] (a minimum sample) rests on a
//! one-sided exact binomial test ([`super::stats`]) and on pooling windows
//! from the last verdict on ([`ThrottleGovernor`]'s `pool`); the settle
//! window after a Down and the plateau test judge evidence too. They are
//! judgements of counts, not policy: the decision made from a verdict is
//! [`super::probe`]'s.

use super::background::Thresholds;
use super::state::{Judgement, Verdict};
use super::stats::{
    one_worker_ruled_out, significant_breach, significantly_above, significantly_more_than,
};
#[cfg(doc)]
use super::tunables::Tunables;
use super::tunables::{
    BREACH_WINDOWS, BURST_NOT_FALLING, FOLLOWS_LOAD_ALPHA, GRAIN_NEAR_WALL_PROBES, PLATEAU_SHARE,
    THIN_EXCUSE_HIGHS,
};
use crate::governor::{probe_step, Evidence, HoldReason, ThrottleGovernor, SAFE_ZONE};

impl ThrottleGovernor {
    /// `gentle`: whether a dead-band verdict on `pooled` attempts with
    /// `pool_failures` is the offer's own noise, which leaves the clean run
    /// standing ([`Tunables::noise_keeps_the_run`]). It is when the offer's
    /// counts all told (this pool included) are clean, and this pool fails
    /// no more than the offer's earlier windows did, at
    /// [`FOLLOWS_LOAD_ALPHA`]; those windows must hold at least as many
    /// attempts as the pool.
    ///
    /// Why: with a background `b` and a clean level of `b + low`, a pool
    /// lands in the dead band by chance now and then (1.6 % of pools of 100
    /// attempts at `b` = 2 %), and an estimate read from a few hundred
    /// attempts at the low offers may sit under the true background, which
    /// makes it far more often (a quarter of pools of 500 at 1 % under an
    /// estimate of 0.22 %). Each such verdict restarted the probe's dwell (64) and
    /// the cost wait (192): the waits never ended, and a capacity that
    /// halved and recovered was held at its half for good (the noise
    /// family's `step n=1000 bg=1%`: 0.88 of the oracle's goodput). A
    /// wall crossing the offer is not noise: its pools fail more than the
    /// offer's history, and its counts all told climb over the clean level.
    pub(super) fn band_is_the_offers_noise(&self, pooled: f64, pool_failures: f64) -> bool {
        let r = &self.robust;
        let (n, f) = r.offer_all;
        let (earlier_n, earlier_f) = (n - pooled, f - pool_failures);
        r.tunables.noise_keeps_the_run
            && pooled > 0.0
            && earlier_n >= pooled
            && r.thresholds.is_clean(f, n)
            && !significantly_more_than(
                pool_failures,
                pooled,
                earlier_f,
                earlier_n,
                FOLLOWS_LOAD_ALPHA,
            )
    }

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
            if frac < self.robust.thresholds.clean_below && !burst.needs_ongoing {
                return Verdict::BurstOver(burst, false);
            }
            // The opening's test asks for failures that go on for sure: on
            // a few attempts, a background failure fails "as much".
            let shown = !burst.needs_ongoing || significant_breach(failures, attempts, p.high);
            if frac >= BURST_NOT_FALLING * burst.frac && shown {
                if burst.waits > 0 {
                    self.robust.burst = Some(super::state::Burst {
                        waits: burst.waits - 1,
                        ..burst
                    });
                    self.robust.settle = true;
                    return Verdict::Hold(HoldReason::Settling);
                }
                // `gentle`: a second return into failures that go on,
                // with no clean verdict between, is a loop, not a burst: on
                // a counter that lags a window, every settle window carries
                // the breach's own failures and "fails as much".
                let looping = self.robust.tunables.test_breaches_below_held
                    && self.robust.ongoing_returns >= 1;
                if !looping {
                    return Verdict::BurstOver(burst, true);
                }
                self.robust.held_clean = self.robust.held_clean.map(|h| h.min(burst.from));
            }
        }
        // `gentle` never backs off again on the settle window: a lower
        // offer failing more than the breach that caused the Down is not
        // answering the load (on thin windows, the next tick of a burst
        // would chase the offer down to the floor); the pool at the lower
        // offer decides from the next window on.
        if !self.robust.tunables.prove_the_band
            && significant_breach(failures, attempts, p.high)
            && frac > self.robust.last_down_frac
        {
            return Verdict::Decide {
                judgement: Judgement::Breach(frac),
                evidence: None,
            };
        }
        Verdict::Hold(HoldReason::Settling)
    }

    /// `gentle`, on an integer knob: whether a pool under the clean level
    /// at `offer` must also rule out one worker over a wall to be clean
    /// (eighteenth round). It must when the offer is within
    /// [`GRAIN_NEAR_WALL_PROBES`] probes of `last_bad` and no failure was
    /// seen below: the background estimate has none, and the offers just
    /// below none in at least `1 / low` attempts. There one worker over a wall of 160
    /// fails 0.6 % of the attempts, and on 40 attempts a window a pool of
    /// 100 is clean (no failure, or one in more than 100) more than half
    /// the time: each such pool let a run climb on, and it sat two to six
    /// workers over the wall (`rejector n=40`). So near the wall a pool
    /// with a failure in it is the band, and one without waits for the
    /// grain's `3 offer` attempts. Where the offers below failed too, a
    /// failure is as likely the background's, and the rule stays out.
    fn grain_near_wall(&self, offer: f64) -> bool {
        let (p, r) = (self.params, &self.robust);
        let (below, failed_below) = r.background.below(offer);
        r.tunables.worker_grain
            && p.control.is_integer()
            && r.thresholds.estimate.is_none_or(|e| e.failures <= 0.0)
            && below * p.low >= 1.0
            && failed_below <= 0.0
            && self
                .state
                .last_bad
                .is_some_and(|bad| offer >= bad - GRAIN_NEAR_WALL_PROBES * probe_step(bad))
    }

    /// Adds a window to the pools and says whether they give a verdict.
    pub(super) fn pool(&mut self, attempts: f64, failures: f64) -> Verdict {
        let p = self.params;
        let offer = self.state.current;
        let r = &mut self.robust;
        // In the opening, or at the floor, no lower offer can tell what the
        // background is: the offer's own windows stand in.
        let opening = self.state.last_bad.is_none() && r.last_clean.is_none();
        let nothing_below = opening || offer <= p.floor;
        r.thresholds = Thresholds::new(p.low, p.high, r.background.at(offer, nothing_below));
        if r.tunables.cap_thin_excuse {
            r.thresholds = r
                .thresholds
                .capping_thin_excuses(THIN_EXCUSE_HIGHS * p.high);
        }
        let near_wall = self.grain_near_wall(offer);
        let r = &mut self.robust;
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
        r.background.hold_near(offer, attempts, failures);
        r.pool_attempts += attempts;
        r.pool_failures += failures;
        r.pool_windows += 1;
        r.pool_span += r.window_span;
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
            let grain = near_wall && t.is_clean(f, n);
            if grain && f <= 0.0 && !one_worker_ruled_out(n, offer) {
                // Calm, though not yet enough to climb from: the burst
                // test's steady count and its return see it as calm.
                r.burst_tested = None;
                r.calm_run += 1;
                return Verdict::Hold(HoldReason::Gathering);
            }
            let judgement = if t.is_clean(f, n) && !(grain && f > 0.0) {
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
        // `gentle`, an integer knob: the smallest overload is one worker
        // of `offer`, who fails the one attempt in `offer` it makes. No
        // failure since the last one at this offer among about 3 attempts
        // a worker rules that out (at 5 %), on far fewer attempts than
        // `1 / low` when the offer is small.
        r.clean_run_attempts = if failures > 0.0 {
            0.0
        } else {
            r.clean_run_attempts + attempts
        };
        if r.tunables.worker_grain
            && p.control.is_integer()
            && one_worker_ruled_out(r.clean_run_attempts, offer)
        {
            let run = r.clean_run_attempts;
            r.clean_run_attempts = 0.0;
            return Verdict::Decide {
                judgement: Judgement::Clean(0.0),
                evidence: Some(Evidence {
                    attempts: run,
                    failures: 0.0,
                    windows: r.pool_windows,
                }),
            };
        }
        // Slow start climbs on one clean window, as fast as the default;
        // the thin failures pooled before it were inconclusive. So does a
        // reclimb well below the last wall (under the safe zone): there a
        // window has few attempts, and pooling a full sample at an offer
        // far below the capacity would take tens of windows.
        let far_below = match self.state.last_bad {
            None => true,
            Some(bad) => r.counts_decide(p.low) && offer < SAFE_ZONE * bad,
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
