//! Early verdicts: a breaching window closes as soon as its breach is
//! certain (issue 26).
//!
//! Why it exists: against a wall that rejects in a millisecond, one user
//! over it with zero think time fails hundreds of attempts a second, and a
//! window that touches the wall costs `reject rate × (lag + window)` failed
//! attempts even when the governor backs off at its first sight of it. Most
//! of that is the rest of the window, spent on an offer whose breach was
//! plain a fraction of a second after the signal showed it.
//!
//! So after an Up (the one decision that can carry the offer into a wall),
//! the engine reads the counters at a finer cadence ([`peek_interval`]) for
//! the next window, and hands each read here. [`Core::early_breach`] forms
//! the window so far from the same baseline the full window would use (a
//! true window over counter deltas, only shorter) and calls it a breach
//! only when it is statistically certain: at least [`EARLY_MIN_FAILURES`]
//! failures, a fraction above `high`, and a one-sided exact binomial test
//! that rejects "the failure probability is at most `high`" at
//! [`EARLY_ALPHA`] (0.05 %). The engine then closes the window at once, and the
//! governor decides on it by its usual rules: nothing in `docs/GOVERNOR.md`
//! changes, the window is only shorter.
//!
//! What is never closed early:
//! - a clean window, or one in the dead band: a clean verdict needs the
//!   whole window (a climb on a partial window would be a climb on less
//!   evidence than the rules assume);
//! - a window at `high` whose counts do not settle it: the test's
//!   significance is 0.05 %, so over the four dozen looks of one window
//!   the chance of closing a window whose true fraction is `high` is at
//!   most 2.4 % (a union bound; the looks share their attempts, so fewer);
//! - a window while a write is pending or unconfirmed, a member failed to
//!   read, or a counter went down.
//!
//! **The window after an Up.** Attribution (see the parent module)
//! discards a window that starts before the new offer's attempts reach the
//! counters, the signal's lag after the write. An early window instead
//! starts at the first reading taken after the write finished (the round's
//! baseline when it is that recent, else the first look after the write):
//! every attempt it counts was made after the new offer was confirmed, or
//! is one the counters had not shown yet, which can only be the old,
//! clean offer's. So the early window can only under-state the new offer's
//! failures, and a certain breach in it is the new offer's: it is decided
//! on at once instead of waiting out the lag. Its fraction is the one the
//! back-off's severity uses, so it is not diluted by the attempts made
//! before the write.
//!
//! **Batched signals wait out their lag.** Pushed counters and PromQL
//! queries of stored samples arrive in batches: the first batch after a
//! write still carries seconds of the old offer's clean attempts, and a
//! verdict on it backs off too little (seen in CI: 16 → 12 on a wall at
//! 10, then 12 → 3 when 12's own failures arrived). For these
//! (`Policy::early_after_lag`) an early window starts only after the
//! signal's lag, as a full window does; early verdicts then cut the rest of
//! that window short.
//!
//! Cost: [`PEEKS_PER_WINDOW`] reads per window (every `window / 48`, at
//! least [`MIN_PEEK`]), and the first look [`FIRST_LOOK`] after the write
//! is sent, only in the window after an Up; the rest of the time the
//! cadence is the window's.
//!
//! Pure, like its parent: the caller passes the reads and the time.

use std::time::Duration;

use super::{Core, MemberRead, MemberState};
use crate::engine::members::Members;
use crate::governor::robust::binomial_tail;
use crate::window::{Reading, WindowOutcome, WindowTracker};

/// Significance of the early breach test, per look.
pub const EARLY_ALPHA: f64 = 0.0005;
/// The fewest failures an early verdict stands on.
pub const EARLY_MIN_FAILURES: f64 = 5.0;
/// Looks per window while a window is watched.
pub const PEEKS_PER_WINDOW: u32 = 48;
/// The wait for a look while the window's base is not kept yet (the
/// write has just been sent, or was still in flight at the last look).
pub const FIRST_LOOK: Duration = Duration::from_millis(20);
/// The shortest interval between looks.
pub const MIN_PEEK: Duration = Duration::from_millis(50);

/// The interval between looks for a window of `window`:
/// `window / PEEKS_PER_WINDOW`, at least `MIN_PEEK`.
pub fn peek_interval(window: Duration) -> Duration {
    (window / PEEKS_PER_WINDOW).max(MIN_PEEK)
}

/// A window so far that is a certain breach.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EarlyBreach {
    /// Attempts resolved since the window's baseline.
    pub attempts: f64,
    /// Failed attempts among them.
    pub failures: f64,
    /// Seconds since the window's baseline.
    pub secs: f64,
    /// The test's p-value (at most `EARLY_ALPHA`).
    pub p_value: f64,
}

/// Whether `failures` of `attempts` are a certain breach of `high`.
pub fn certain_breach(failures: f64, attempts: f64, high: f64) -> Option<f64> {
    if attempts.is_nan()
        || attempts <= 0.0
        || failures < EARLY_MIN_FAILURES
        || failures / attempts <= high
    {
        return None;
    }
    let p = binomial_tail(failures, attempts, high);
    (p <= EARLY_ALPHA).then_some(p)
}

impl Core {
    /// Whether the window now open is watched for an early verdict: early
    /// verdicts are on and the last decided window moved the offer up.
    pub fn watching(&self) -> bool {
        self.policy.early_verdicts && self.watch
    }

    /// The window so far, from `reads` taken at `at`, when it is a certain
    /// breach (see the module docs); `None` otherwise. Changes nothing.
    pub fn early_breach(&self, at: f64, reads: &Members<MemberRead>) -> Option<EarlyBreach> {
        if !self.watching() || self.conflict || self.policy.dry_run {
            return None;
        }
        let (mut attempts, mut failures, mut since) = (0.0, 0.0, f64::INFINITY);
        let mut any = false;
        for (name, m) in self.members.iter() {
            if !m.up {
                continue;
            }
            let (reading, generation, finished) = settled_read(reads.get(name)?, at)?;
            let ready = self.policy.early_after_lag.then_some(finished + m.lag);
            let base = post_write_base(m, generation, ready)?;
            let mut tracker = WindowTracker::default();
            tracker.observe(base).ok()?;
            match tracker.observe(reading) {
                Ok(WindowOutcome::Window(w)) => {
                    attempts += w.attempts;
                    failures += w.failures;
                    since = since.min(base.at_secs);
                    any = true;
                }
                _ => return None,
            }
        }
        if !any {
            return None;
        }
        let high = self.gov.params().high;
        certain_breach(failures, attempts, high).map(|p_value| EarlyBreach {
            attempts,
            failures,
            secs: (at - since).max(0.0),
            p_value,
        })
    }

    /// Keeps, for each member, the first look taken after the offer's
    /// write finished: the base of the early window while the round's own
    /// baseline still predates the write (right after the Up). Returns
    /// whether every member now has a base (else the next look should come
    /// soon, [`FIRST_LOOK`]).
    pub fn note_look(&mut self, at: f64, reads: &Members<MemberRead>) -> bool {
        if !self.watching() {
            return true;
        }
        let mut all = true;
        let after_lag = self.policy.early_after_lag;
        for m in self.members.values_mut().filter(|m| m.up) {
            let Some((reading, generation, finished)) =
                reads.get(&m.name).and_then(|r| settled_read(r, at))
            else {
                all = false;
                continue;
            };
            let ready = after_lag.then_some(finished + m.lag);
            let settled = ready.is_none_or(|t| reading.at_secs >= t - 1e-9);
            if post_write_base(m, generation, ready).is_none() && settled {
                m.early_base = Some((reading, generation));
            } else if !settled {
                all = false;
            }
        }
        all
    }
}

/// A member's read as a reading, with the generation of the last write
/// finished before the read began, when nothing is in flight around it and
/// that write was confirmed.
fn settled_read(r: &MemberRead, at: f64) -> Option<(Reading, u64, f64)> {
    let counters = r.signal.as_ref().ok()?;
    if matches!(r.committed, Some(Err(_)))
        || r.before.busy()
        || r.after.busy()
        || r.before.generation != r.after.generation
        || (r.after.last_value.is_some() && !r.after.last_confirmed)
    {
        return None;
    }
    let finished = r.after.finished_at.unwrap_or(f64::NEG_INFINITY);
    Some((counters.reading(at), r.before.generation, finished))
}

/// The reading an early window starts from: the round's baseline when its
/// read began after the last write finished, else the first look that did.
/// Neither holds right after the Up: no early verdict until a look is kept.
/// With `ready` (batched signals: the write's end plus the signal's lag),
/// the base must also be read from then on, as a full window's must.
fn post_write_base(m: &MemberState, generation: u64, ready: Option<f64>) -> Option<Reading> {
    let settled = |b: &Reading| ready.is_none_or(|t| b.at_secs >= t - 1e-9);
    match m.window.baseline() {
        Some(b) if m.baseline_generation == Some(generation) && settled(b) => Some(*b),
        _ => m
            .early_base
            .filter(|(b, g)| *g == generation && settled(b))
            .map(|(b, _)| b),
    }
}

#[cfg(test)]
mod tests;
