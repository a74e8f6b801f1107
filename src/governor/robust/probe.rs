//! Step 4 under the robust rules: from a verdict to a raw decision.
//!
//! Why it exists: this is where the `robust` layer departs from the seed's
//! [`decide`](crate::governor::decide): the retreat of a failed probe, the
//! step down out of a lasting dead band, the opening slow start that slows
//! down, the re-probe after a memory clear, the known-clean reclimb, and the
//! probe that waits (its dwell, and the cost a failed probe left owed). It
//! only decides; [`super`] applies the decision to the memory.

use super::state::{Judgement, Move};
use super::stats::{significantly_above_at, significantly_more_than};
use super::tunables::{
    BAND_BACK_OFF, BAND_PATIENCE, BAND_PROOF_ALPHA, BURST_NOT_FALLING, CLEAR_BELOW,
    FOLLOWS_LOAD_ALPHA, SLOW_START_DOUBLING_BELOW, THIN_BAND_WINDOW_SHARE,
};
use crate::governor::{back_off_factor, probe_step, safe_zone_top, Decision, ThrottleGovernor};

impl ThrottleGovernor {
    /// retreat, the known-clean reclimb, the probe dwell and the re-probe.
    pub(super) fn robust_decide(
        &self,
        judgement: Judgement,
        from: f64,
        additive_from: Option<f64>,
        fresh_up: bool,
        plateau: bool,
    ) -> (Decision, Move) {
        let p = self.params;
        let r = &self.robust;
        match judgement {
            Judgement::Breach(frac) => {
                let target = (from * back_off_factor(frac)).max(p.floor);
                // A failed additive Up goes back no further than where it
                // started: that offer was just judged clean.
                let (target, kind) = match additive_from {
                    Some(start) if start < from && start > target => (start, Move::Retreat),
                    _ => (target, Move::Plain),
                };
                // The opening slow start's overshoot goes back no further
                // than its last offer judged clean.
                let (target, kind) = match (self.state.last_bad, r.reprobe, r.last_clean) {
                    (None, None, Some(clean)) if fresh_up && clean < from && clean > target => {
                        (clean, Move::Retreat)
                    }
                    _ => (target, kind),
                };
                let d = if target < from {
                    Decision::Down(target)
                } else {
                    Decision::Hold
                };
                return (d, kind);
            }
            Judgement::Band(f) => {
                if f > r.thresholds.retreat_above() {
                    match additive_from {
                        Some(start) if start < from => {
                            return (Decision::Down(start.max(p.floor)), Move::Retreat);
                        }
                        // A larger Up that lands in the dead band backs off
                        // by the default's smallest step; but not the
                        // opening's doubling, where the band is far more
                        // likely a background than the wall.
                        None if fresh_up && !self.doubled_into_the_band(from) => {
                            return (
                                Decision::Down((from * BAND_BACK_OFF).max(p.floor)),
                                Move::Retreat,
                            );
                        }
                        _ => {}
                    }
                }
                // Failing for good costs failures without goodput on a
                // target that rejects the excess: once the counts at this
                // offer show failures above the clean level (or after a
                // while in the band), a probe that got here goes back where
                // it started, and any other offer steps down by one probe.
                // (`robust` keeps its older rule: only a band low enough
                // to be held steps down, after the patience.)
                let (n, failed) = r.offer_all;
                // The proof needs a background to measure against: without
                // `1 / low` attempts at the low offers (tiny samples), a
                // background above `low` would look like a lasting band,
                // and the patience decides.
                let by_counts = r.counts_decide(p.low);
                // The offers climbed from just below can show that this
                // one fails more: the load's doing, whatever the background.
                // With too few attempts at the low offers that is the only
                // proof; with enough, it is the sharper one near a wall
                // (0 failures just below tell one worker over a wall in a
                // few failures), taken when the offer's counts are at or
                // above the knee level all told: under `low`, failures the
                // load causes are still the wall's.
                let (bn, bf) = r.background.below(from);
                let above_clean =
                    significantly_above_at(failed, n, r.thresholds.clean_below, BAND_PROOF_ALPHA);
                let shown_here = r.tunables.prove_the_band
                    && significantly_more_than(failed, n, bf, bn, BAND_PROOF_ALPHA);
                // Without a background estimate, the offer's own counts
                // can still prove it above the clean level, but a
                // background above `low` would too: the offers just below
                // must also fail less (at [`FOLLOWS_LOAD_ALPHA`]), so that
                // the failures follow the load. Over a run that never went
                // back below the wall's safe zone, those offers hold a few
                // hundred attempts: too few for `shown_here` ever to tell
                // two workers over a wall (2 %) from 0 failures there at
                // 0.1 %, and the probe sat in the band for good.
                let follows_load = r.tunables.prove_the_band
                    && !by_counts
                    && above_clean
                    && significantly_more_than(failed, n, bf, bn, FOLLOWS_LOAD_ALPHA);
                // With a thin estimate and a wall known, a band the counts
                // prove where the offers below are too thin to test.
                let thin_proof = r.tunables.thin_band_proof
                    && !by_counts
                    && above_clean
                    && self.state.last_bad.is_some()
                    && self.below_too_thin_to_test(failed, n, bn);
                let lasting = if by_counts {
                    above_clean
                        || (shown_here && failed >= self.knee_level() * n)
                        || r.band_run >= BAND_PATIENCE
                } else if r.tunables.prove_the_band {
                    // `gentle` steps down out of any lasting band: if one
                    // probe lower fails as much, the step excuses the counts
                    // (below), and the background is measured after all.
                    shown_here || follows_load || r.band_run >= BAND_PATIENCE || thin_proof
                } else {
                    f <= r.thresholds.retreat_above() && r.band_run >= BAND_PATIENCE
                };
                // Stepped down out of a lasting band and failing here as
                // much: the failures do not follow the load.
                if lasting && r.tunables.prove_the_band {
                    let left = r.stepped_down.or(r.thin_stepped.filter(|_| thin_proof));
                    if let Some((pn, pf)) = left {
                        if n > 0.0 && pn > 0.0 && failed / n >= BURST_NOT_FALLING * (pf / pn) {
                            return (Decision::Hold, Move::Excuse);
                        }
                    }
                }
                if lasting && (by_counts || shown_here || follows_load) {
                    if let Some(start) = r.probing_from.filter(|&s| s < from) {
                        return (Decision::Down(start.max(p.floor)), Move::Retreat);
                    }
                }
                if lasting {
                    let step = self.state.last_bad.map_or(1.0, probe_step);
                    let target = (from - step).max(p.floor);
                    if target < from {
                        let kind = if thin_proof {
                            Move::ThinSettle
                        } else {
                            Move::Settle
                        };
                        return (Decision::Down(target), kind);
                    }
                }
                return (Decision::Hold, Move::Plain);
            }
            Judgement::Clean(_) => {}
        }
        if from >= p.ceiling || plateau {
            return (Decision::Hold, Move::Plain);
        }
        let (target, kind) = match (self.state.last_bad, r.reprobe) {
            // The opening slow start: the default's doubling while the
            // offer is small, then a gain that shrinks with every Up.
            (None, None) if from < SLOW_START_DOUBLING_BELOW => {
                ((from * 2.0).max(from + 1.0), Move::Plain)
            }
            (None, None) => ((from * (1.0 + r.opening_gain)).max(from + 1.0), Move::Plain),
            // Re-probing after a memory clear.
            (None, Some(inc)) => ((from * 2.0).max(from + 1.0).min(from + inc), Move::Additive),
            (Some(bad), _) => {
                let mut safe = safe_zone_top(bad, p.floor);
                if let Some(clean) = r.clean_before_down {
                    safe = safe.min(clean.max(p.floor));
                }
                let fast = (from * 1.5).min(safe);
                let probe = from + probe_step(bad);
                // A probe back up to an offer that failed waits until it
                // has paid for the last one.
                let paid = match r.owed {
                    Some((at, owed)) if self.at_or_above(from, at) || probe > at => {
                        r.clean_attempts >= owed || r.clean_run >= r.tunables.max_cost_dwell
                    }
                    _ => true,
                };
                if fast > from {
                    (fast, Move::Plain)
                } else if r.clean_run >= r.dwell && paid {
                    (probe, Move::Additive)
                } else {
                    return (Decision::Hold, Move::Plain);
                }
            }
        };
        let target = target.min(p.ceiling);
        if target > from {
            (Decision::Up(target), kind)
        } else {
            (Decision::Hold, Move::Plain)
        }
    }

    /// `gentle`, with a thin estimate: whether the offers just below
    /// (`below` attempts) are too thin to tell this offer's `failed` in
    /// `n` from the load's, even had they failed nothing, while this
    /// offer's windows are large enough to give a verdict every window or
    /// two ([`THIN_BAND_WINDOW_SHARE`]). Then a pool proven above the clean
    /// level has no test left that could end its dead band: under a
    /// background read low, its verdicts alternate between clean and the
    /// band, so neither the probe's wait nor the band's patience is ever
    /// counted out, and a capacity that halved and recovered was held at
    /// its half. One probe down measures the background instead (the
    /// excuse, when the lower offer fails as much).
    pub(super) fn below_too_thin_to_test(&self, failed: f64, n: f64, below: f64) -> bool {
        let r = &self.robust;
        !significantly_more_than(failed, n, 0.0, below, FOLLOWS_LOAD_ALPHA)
            && r.recent_window_attempts() * self.params().low >= THIN_BAND_WINDOW_SHARE
    }

    /// `gentle`: a clean pool at an offer whose counts, all told, fail at
    /// or above the knee level ([`Self::knee_level`]) and significantly
    /// more than the offers just below is the dead band, read a few
    /// failures at a time. One worker over a wall at 40 attempts a window
    /// fails about one attempt in four windows: most pools of ~100
    /// attempts there are clean, and each clean one let the probe climb
    /// on. And one worker over a wall of 200 fails 0.5 % of the attempts,
    /// under a `low` of 1 %: the user's clean zone, but failures the load
    /// causes, which the offers below show (eighteenth round).
    pub(super) fn wall_under_clean(&self, judgement: Judgement) -> Judgement {
        let r = &self.robust;
        if !r.tunables.prove_the_band || !matches!(judgement, Judgement::Clean(_)) {
            return judgement;
        }
        let (n, failed) = r.offer_all;
        if n <= 0.0 || failed < self.knee_level() * n {
            return judgement;
        }
        let (bn, bf) = r.background.below(self.state.current);
        if significantly_more_than(failed, n, bf, bn, BAND_PROOF_ALPHA) {
            Judgement::Band(failed / n)
        } else {
            judgement
        }
    }

    /// The least failure share at an offer that `gentle` reads as the
    /// load's doing when the offers just below fail significantly less:
    /// the background plus [`CLEAR_BELOW`] of `low` (0.25 % at `low` = 1 %),
    /// the share a memory clear still calls failure-free; at most the
    /// clean level. Under it, a soft wall's rare flare-ups (`metastable`
    /// holds at 0.96 of its capacity and fails about 0.1 % there) are
    /// held: stepping down from them and probing back cost more (the
    /// default bench's `metastable` failed 5,705 attempts in 600 windows
    /// instead of 3,746 when any significant share counted).
    pub(super) fn knee_level(&self) -> f64 {
        let t = self.robust.thresholds;
        (t.background + CLEAR_BELOW * t.low).min(t.clean_below)
    }

    /// Whether this dead band is the first verdict after the opening's
    /// doubling (no wall met, no re-probe, at most
    /// [`SLOW_START_DOUBLING_BELOW`]). From a clean `x`, `2x` lands in the
    /// band on a rejecting wall only for a capacity between `1.9x` and
    /// `1.98x` (at `high` 5 %, `low` 1 %); a background of `low` or more
    /// puts about every other pool there. Backing off then set `last_bad`
    /// at 4 to 8 workers on a wall of 55 to 197 (a third of the seeds at a
    /// 2 % background), and the run crept up by one probe at a time. The
    /// band's own rules (its proof, its patience) decide instead.
    fn doubled_into_the_band(&self, from: f64) -> bool {
        self.state.last_bad.is_none()
            && self.robust.reprobe.is_none()
            && from <= SLOW_START_DOUBLING_BELOW
    }
}
