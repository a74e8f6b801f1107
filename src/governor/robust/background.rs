//! The load-independent background failure rate, estimated from the
//! lowest offers, and the verdict thresholds it moves (issue 30).
//!
//! Why it exists: many real targets fail a share of attempts whatever the
//! load (a flaky dependency, a 404 in the script, a test that expects a few
//! errors). With 2 % of attempts failing at every offer and `low` at 1 %,
//! every window with enough attempts to judge sits in the dead band: no
//! window is clean, so the governor never climbs, and on a large sample it
//! stalls at a few percent of the capacity. A failure the target shows at
//! an offer far below the wall is not the offer's doing. So:
//!
//! - **The estimate.** Every pooled window (settle windows excluded: they
//!   may carry the previous offer's failures) is filed under its offer, in
//!   quarter-octave buckets. The background at an offer `x` is the pooled
//!   failure ratio of the windows at offers of at most `x / 2`
//!   ([`REFERENCE_SHARE`]) that hold at least [`MIN_REFERENCE`] attempts:
//!   half the offer is below any wall the governor is near, and the opening
//!   slow start, which doubles, always leaves such windows behind. Without
//!   enough of them there is no estimate and the rules are robust's as
//!   before.
//! - **What it moves.** With a background `b`, a pool is *clean* when its
//!   fraction is below `b + low` ([`Thresholds::clean_below`]), or when it
//!   is not significantly (at [`BAND_ALPHA`]) above `b`: the counts do not
//!   show any failure the background does not explain. It is in the *dead
//!   band* only when both fail. The fewest attempts for a verdict become
//!   `1 / (b + low)`, the fewest for which one failure can leave a pool
//!   clean. A *breach* is unchanged: significantly above `high`, which is
//!   the user's bound on all failures, the background's included.
//!
//! With no failure at the low offers the estimate is 0 and every rule is
//! exactly robust's: a failure is always significantly above a background
//! of 0, and `0 + low` is `low`.
//!
//! - **A thin estimate is counts.** Under `1 / low` attempts at the low
//!   offers, the estimate's rate is too unsure to test against (1 failure
//!   in 64 is anything from 0.04 % to 8 %), so the clean rule asks instead
//!   whether the pool fails significantly more than the low offers did
//!   (`stats::significantly_more_than`, which weighs both samples). That
//!   test has little power on two small samples, so `gentle` lets a thin
//!   estimate excuse no pool failing more than twice `high`
//!   ([`Thresholds::capping_thin_excuses`]).
//! - **Excused counts** (`gentle`): a step down out of a lasting dead band
//!   that fails as much one probe lower shows failures that do not follow
//!   the load, and its counts witness the background at every offer
//!   ([`Background::excuse`]). A breach at that offer or lower later shows
//!   a wall there (one that fell while the step was made), and withdraws
//!   them ([`Background::wall_found_at`]).
//! - **The floor** stands in for itself as the opening offer does: no
//!   lower offer could fail less.
//! - **The offers just below** ([`Background::below`]): the last [`NEAR`]
//!   offers climbed from, near a wall or not, for `gentle`'s test that a
//!   dead band fails more than the offers under it did.
//!
//! What it may touch: nothing outside the governor; no clock, no I/O.

use serde::Serialize;

use super::stats::{significantly_above_at, significantly_more_than};
use super::tunables::BAND_RETREAT_ABOVE;
#[cfg(doc)]
use super::tunables::THIN_EXCUSE_HIGHS;

/// The background at an offer is read from offers of at most this share
/// of it.
pub const REFERENCE_SHARE: f64 = 0.5;
/// The fewest attempts at the low offers for an estimate.
pub const MIN_REFERENCE: f64 = 30.0;
/// The estimate reads the lowest offers only, up to the first quarter-octave
/// that brings it to this many attempts: the lower the offer, the surer
/// that its failures are not the load's (a wall that halved and recovered
/// leaves failing windows at offers that later look low).
pub const ENOUGH_REFERENCE: f64 = 500.0;
/// A pool at or above `b + low` is in the dead band only when its failures
/// are above the background `b` at this significance (a one-sided exact
/// binomial test): otherwise the background explains them.
pub const BAND_ALPHA: f64 = 0.05;
/// The clean level `b + low` never exceeds this share of the way from
/// `low` to `high`, so that a large background leaves a dead band.
/// (Above it, a pool is still clean when the background explains it.)
pub const MAX_CLEAN_SHARE: f64 = 0.5;

/// The offers climbed from that [`Background::below`] remembers, newest
/// first out of mind.
pub const NEAR: usize = 8;

/// Buckets per octave of offer.
const PER_OCTAVE: f64 = 4.0;
/// Buckets: offers from 2^-8 to 2^24 (quarter octaves); offers outside
/// are filed in the end buckets.
const BUCKETS: usize = 128;
/// The bucket of offer 1.
const OFFSET: f64 = 32.0;

/// The counts per quarter-octave of offer that witness the background,
/// and the windows at the current offer waiting to become witnesses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Background {
    attempts: [f64; BUCKETS],
    failures: [f64; BUCKETS],
    /// The current offer's windows: (offer, attempts, failures).
    pending: (f64, f64, f64),
    /// Counts shown not to follow the load: a step down out of a lasting
    /// dead band that failed as much one probe lower.
    excused: (f64, f64),
    /// The highest offer an excuse was made at: a wall found there or
    /// lower withdraws the excused counts ([`Background::wall_found_at`]).
    excused_at: f64,
    /// The last [`NEAR`] offers climbed from, near a wall or not, as
    /// (offer, attempts, failures): what failed just below the offer.
    near: [(f64, f64, f64); NEAR],
    /// The next slot of `near` to write.
    near_next: usize,
    /// The current offer's windows for `near`, near a wall or not.
    near_pending: (f64, f64, f64),
}

impl Default for Background {
    fn default() -> Self {
        Background {
            attempts: [0.0; BUCKETS],
            failures: [0.0; BUCKETS],
            pending: (0.0, 0.0, 0.0),
            excused: (0.0, 0.0),
            excused_at: 0.0,
            near: [(0.0, 0.0, 0.0); NEAR],
            near_next: 0,
            near_pending: (0.0, 0.0, 0.0),
        }
    }
}

/// The background estimate at an offer, with the counts behind it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct BackgroundEstimate {
    /// The background failure probability: failures over attempts at the
    /// low offers.
    pub rate: f64,
    /// Attempts at the low offers.
    pub attempts: f64,
    /// Failures among them.
    pub failures: f64,
}

/// Adds a window at `offer` to the held `(offer, attempts, failures)`,
/// which start afresh at a new offer.
fn add_window(held: &mut (f64, f64, f64), offer: f64, attempts: f64, failures: f64) {
    if !(offer > 0.0 && attempts > 0.0 && failures >= 0.0) {
        return;
    }
    if held.0 != offer {
        *held = (offer, 0.0, 0.0);
    }
    held.1 += attempts;
    held.2 += failures.min(attempts);
}

fn k_of(offer: f64) -> usize {
    let k = (offer.max(f64::MIN_POSITIVE).log2() * PER_OCTAVE).floor() + OFFSET;
    k.clamp(0.0, (BUCKETS - 1) as f64) as usize
}

impl Background {
    /// Holds a window at `offer` until the governor climbs from it
    /// ([`Background::climbed`]) or leaves it otherwise
    /// ([`Background::left`]).
    pub fn hold(&mut self, offer: f64, attempts: f64, failures: f64) {
        add_window(&mut self.pending, offer, attempts, failures);
    }

    /// Holds a window at `offer` for [`Background::below`], wherever the
    /// offer is: near a wall too.
    pub fn hold_near(&mut self, offer: f64, attempts: f64, failures: f64) {
        add_window(&mut self.near_pending, offer, attempts, failures);
    }

    /// The counts at the remembered offers climbed from below `offer`, as
    /// (attempts, failures): what the target failed with less load.
    pub fn below(&self, offer: f64) -> (f64, f64) {
        self.near
            .iter()
            .filter(|w| w.1 > 0.0 && w.0 < offer * (1.0 - 1e-9))
            .fold((0.0, 0.0), |(n, f), w| (n + w.1, f + w.2))
    }

    /// The governor climbs from the held windows' offer: they were judged
    /// clean there, so they witness the background from now on.
    pub fn climbed(&mut self) {
        let near = std::mem::take(&mut self.near_pending);
        if near.1 > 0.0 {
            self.near[self.near_next] = near;
            self.near_next = (self.near_next + 1) % NEAR;
        }
        let (offer, n, f) = std::mem::take(&mut self.pending);
        if n > 0.0 {
            let k = k_of(offer);
            self.attempts[k] += n;
            self.failures[k] += f;
        }
    }

    /// Counts that a step down to `offer` showed not to follow the load:
    /// they witness the background at every offer, until a wall is found
    /// at `offer` or lower ([`Background::wall_found_at`]).
    pub fn excuse(&mut self, offer: f64, attempts: f64, failures: f64) {
        if attempts > 0.0 && failures >= 0.0 {
            self.excused.0 += attempts;
            self.excused.1 += failures.min(attempts);
            self.excused_at = self.excused_at.max(offer);
        }
    }

    /// A breach at `offer` backed the governor off: the target has a wall
    /// at `offer` or lower. Counts excused at `offer` or higher were then
    /// over that wall, the load's doing and not the background's, and they
    /// are withdrawn.
    ///
    /// Why: an excuse compares two offers one after the other, so a wall
    /// that is itself falling (a capacity that drifts down, or halves)
    /// makes the lower offer fail as much as the higher one did. Its counts
    /// (a few thousand attempts at 4 to 5 % on the noise family's `drift
    /// n=200 bg=2%`) then read as a 4.5 % background, every pool under
    /// about 7 % was clean, and the run climbed into the falling wall for
    /// the rest of its length.
    pub fn wall_found_at(&mut self, offer: f64) {
        if self.excused_at > 0.0 && offer <= self.excused_at * (1.0 + 1e-9) {
            self.excused = (0.0, 0.0);
            self.excused_at = 0.0;
        }
    }

    /// The offer moves without a climb from it (a back-off, a retreat, a
    /// change from outside): the held windows witness nothing.
    pub fn left(&mut self) {
        self.pending = (0.0, 0.0, 0.0);
        self.near_pending = (0.0, 0.0, 0.0);
    }

    /// The estimate at `offer`: the witnesses in the quarter-octaves that
    /// begin at or below [`REFERENCE_SHARE`] of it. With `nothing_below`
    /// (the opening, before any climb, or the floor), the held windows at
    /// the offer count: what fails there is the background as far as
    /// anything can tell. `None` below [`MIN_REFERENCE`] attempts.
    pub fn at(&self, offer: f64, nothing_below: bool) -> Option<BackgroundEstimate> {
        let top = offer * REFERENCE_SHARE;
        let (mut n, mut f) = self.excused;
        if nothing_below {
            n += self.pending.1;
            f += self.pending.2;
        }
        for k in 0..BUCKETS {
            let lower_edge = ((k as f64 - OFFSET) / PER_OCTAVE).exp2();
            if lower_edge > top * (1.0 + 1e-9) || n >= ENOUGH_REFERENCE {
                break;
            }
            n += self.attempts[k];
            f += self.failures[k];
        }
        (n >= MIN_REFERENCE).then(|| BackgroundEstimate {
            rate: f / n,
            attempts: n,
            failures: f,
        })
    }
}

/// The verdict levels of one pool, given the background.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// The estimate the levels came from.
    pub estimate: Option<BackgroundEstimate>,
    /// The background rate (0 without an estimate).
    pub background: f64,
    /// A pool is clean below this fraction: `background + low`, at most
    /// [`MAX_CLEAN_SHARE`] of the way from `low` to `high`.
    pub clean_below: f64,
    /// The user's bound.
    pub high: f64,
    /// The user's `low`.
    pub low: f64,
    /// A thin estimate excuses no pool failing more than this
    /// ([`Thresholds::capping_thin_excuses`]; infinite unless capped).
    pub thin_excuse_up_to: f64,
}

impl Thresholds {
    /// The levels for `low`, `high` and an optional estimate.
    pub fn new(low: f64, high: f64, estimate: Option<BackgroundEstimate>) -> Self {
        let background = estimate.map_or(0.0, |e| e.rate);
        let cap = low + MAX_CLEAN_SHARE * (high - low).max(0.0);
        Thresholds {
            estimate,
            background,
            clean_below: (background + low).min(cap.max(low)),
            high,
            low,
            thin_excuse_up_to: f64::INFINITY,
        }
    }

    /// The same levels, where a thin estimate excuses no pool failing more
    /// than `up_to` (`gentle`: [`THIN_EXCUSE_HIGHS`] × `high`). The thin
    /// estimate's test weighs two small samples, and has little power: with
    /// 2 failures in 29 attempts at the low offers, 11 failures in 69 (16 %,
    /// three times a `high` of 5 %) are not significantly more, so a probe
    /// far over a wall would be called clean and climbed from (traced on the
    /// bench's `noisy`).
    pub fn capping_thin_excuses(self, up_to: f64) -> Self {
        Thresholds {
            thin_excuse_up_to: up_to,
            ..self
        }
    }

    /// The fewest attempts for a verdict: one failure can leave them clean.
    pub fn min_attempts(&self) -> f64 {
        1.0 / self.clean_below
    }

    /// Whether `failures` of `attempts` are clean: below the clean level,
    /// or not significantly above the background.
    pub fn is_clean(&self, failures: f64, attempts: f64) -> bool {
        failures / attempts < self.clean_below
            || self.estimate.is_some_and(|e| {
                e.failures > 0.0
                    && if e.attempts * self.low < 1.0 {
                        // A thin estimate is not a rate: ask whether these
                        // counts fail more than the low offers' did (and,
                        // when capped, whether they fail at all plausibly
                        // for a background).
                        failures / attempts <= self.thin_excuse_up_to
                            && !significantly_more_than(
                                failures, attempts, e.failures, e.attempts, BAND_ALPHA,
                            )
                    } else {
                        !significantly_above_at(failures, attempts, e.rate, BAND_ALPHA)
                    }
            })
    }

    /// A probe whose first verdict is in the dead band above this fraction
    /// is undone: [`BAND_RETREAT_ABOVE`] of the way from the background to
    /// `high`, never below the clean level (`BAND_RETREAT_ABOVE × high`
    /// without a background, as robust's rule).
    pub fn retreat_above(&self) -> f64 {
        (self.background + BAND_RETREAT_ABOVE * (self.high - self.background).max(0.0))
            .max(self.clean_below)
    }

    /// The failures above the background, as a fraction.
    pub fn excess(&self, frac: f64) -> f64 {
        (frac - self.background).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn witness(b: &mut Background, offer: f64, attempts: f64, failures: f64) {
        b.hold(offer, attempts, failures);
        b.climbed();
    }

    #[test]
    fn no_failures_at_low_offers_means_no_background() {
        let mut b = Background::default();
        for offer in [1.0, 2.0, 4.0, 8.0] {
            witness(&mut b, offer, offer * 20.0, 0.0);
        }
        let e = b.at(16.0, false).expect("enough attempts");
        assert_eq!(e.rate, 0.0);
        assert_eq!(e.attempts, 300.0);
        let t = Thresholds::new(0.01, 0.05, Some(e));
        assert_eq!(t.clean_below, 0.01);
        // Exactly robust's rule: any failure at or above low is the band.
        assert!(!t.is_clean(2.0, 100.0));
        assert!(t.is_clean(0.0, 100.0));
        assert!((t.retreat_above() - 0.02).abs() < 1e-12);
    }

    #[test]
    fn the_estimate_reads_only_offers_climbed_from_at_most_half() {
        let mut b = Background::default();
        witness(&mut b, 4.0, 100.0, 2.0);
        witness(&mut b, 8.0, 100.0, 50.0);
        // At 10, only offer 4 is at most 5.
        let e = b.at(10.0, false).unwrap();
        assert_eq!((e.attempts, e.failures), (100.0, 2.0));
        // At 16 both are.
        assert_eq!(b.at(16.0, false).unwrap().attempts, 200.0);
        // An offer left by a back-off witnesses nothing.
        b.hold(2.0, 1000.0, 500.0);
        b.left();
        assert_eq!(b.at(16.0, false).unwrap().attempts, 200.0);
        // Too few attempts: no estimate.
        let mut thin = Background::default();
        witness(&mut thin, 4.0, 20.0, 1.0);
        assert!(thin.at(16.0, false).is_none());
    }

    #[test]
    fn in_the_opening_the_opening_offers_windows_count() {
        let mut b = Background::default();
        b.hold(1.0, 150.0, 5.0);
        assert!(b.at(1.0, false).is_none());
        let e = b.at(1.0, true).unwrap();
        assert_eq!((e.attempts, e.failures), (150.0, 5.0));
    }

    #[test]
    fn a_background_moves_the_clean_level_and_stays_below_high() {
        let est = |rate| BackgroundEstimate {
            rate,
            attempts: 1000.0,
            failures: rate * 1000.0,
        };
        let t = Thresholds::new(0.01, 0.05, Some(est(0.02)));
        assert!((t.clean_below - 0.03).abs() < 1e-12);
        let t = Thresholds::new(0.01, 0.05, Some(est(0.04)));
        assert!((t.clean_below - 0.03).abs() < 1e-12, "capped halfway");
    }

    #[test]
    fn one_failure_in_40_at_2_percent_is_clean_30_is_not() {
        let t = Thresholds::new(
            0.01,
            0.05,
            Some(BackgroundEstimate {
                rate: 0.02,
                attempts: 500.0,
                failures: 10.0,
            }),
        );
        assert!(t.min_attempts() <= 40.0);
        assert!(t.is_clean(1.0, 40.0));
        assert!(!t.is_clean(30.0, 40.0));
        // The same counts at 4,000 attempts decide as the point estimate:
        // 2.5 % is below 3 %, 75 % is not; 3.5 % is not either.
        assert!(t.is_clean(100.0, 4000.0));
        assert!(!t.is_clean(3000.0, 4000.0));
        assert!(!t.is_clean(140.0, 4000.0));
    }

    #[test]
    fn a_wall_found_at_or_below_the_excuse_withdraws_the_excused_counts() {
        let mut b = Background::default();
        witness(&mut b, 4.0, 200.0, 4.0);
        witness(&mut b, 8.0, 400.0, 8.0);
        let low = b.at(100.0, false).expect("the low offers");
        assert!((low.rate - 0.02).abs() < 1e-12, "{low:?}");
        // A step down to 100 that failed as much: 4.5 % of 2,400 excused.
        b.excuse(100.0, 2400.0, 108.0);
        let excused = b.at(100.0, false).expect("the excused counts");
        assert!((excused.rate - 0.045).abs() < 1e-12, "{excused:?}");
        // A wall above where the excuse was made says nothing about it.
        b.wall_found_at(110.0);
        assert_eq!(b.at(100.0, false), Some(excused));
        // A wall at 100 or lower: those counts were over it.
        b.wall_found_at(95.0);
        assert_eq!(b.at(100.0, false), Some(low));
        // Withdrawn once: a later wall withdraws nothing more.
        b.wall_found_at(90.0);
        assert_eq!(b.at(100.0, false), Some(low));
    }
}
