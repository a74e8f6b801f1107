//! Waiting pulls: a pull that already holds the current generation waits
//! for the next one (long polling, `?wait=` on the offer endpoint).
//!
//! Why it exists: a tool that polls every second takes a `Down` half a
//! second late on average, and at a wall that rejects in a millisecond each
//! worker over it fails an attempt every millisecond or two until then:
//! JMeter's gate (polling every 1 s) and Artillery's (every 250 ms) paid
//! about 300 failed attempts a wall-touch after the verdict, most of a
//! touch's cost (failed attempts per touch = reject rate x (lag + window)).
//! A pull that waits is answered the moment the offer is published, so the
//! actuation lag becomes the time of one HTTP answer.
//!
//! How: every publication bumps the board's change counter (a
//! `tokio::sync::watch`); a waiting pull subscribes, checks its key's
//! generation, and sleeps on the counter until the generation moves, the
//! key goes away, or its wait ends. While it waits its puller counts as
//! pulling now (`PullBoard::committed` does not call it stale). At most
//! [`PullBoard::set_max_waiters`] pulls wait at once (by default half the
//! server's connection cap): past it a pull is answered at once, so
//! waiting pulls can never hold every connection the scrapes need.
//!
//! What it may touch: the board's memory only.

use std::time::Duration;

use super::{lock, PullBoard, PullKey};

/// The longest a pull may wait (a longer `wait` is cut to it); under the
/// server's 10 s request timeout.
pub const MAX_WAIT: Duration = Duration::from_secs(8);

/// The most pulls that wait at once unless the supervisor sets it.
pub const DEFAULT_MAX_WAITERS: usize = 128;

/// One waiting pull, counted while it lives.
struct Waiting<'a> {
    board: &'a PullBoard,
    key: PullKey,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut b = lock(&self.board.inner);
        b.waiters = b.waiters.saturating_sub(1);
        if let Some(e) = b.entries.get_mut(&self.key) {
            e.waiting = e.waiting.saturating_sub(1);
        }
    }
}

impl PullBoard {
    /// How many pulls may wait at once (at least 1).
    pub fn set_max_waiters(&self, n: usize) {
        lock(&self.inner).max_waiters = n.max(1);
    }

    /// The server is stopping: waiting pulls are answered now, and no pull
    /// waits from here on (the server would hold them through its grace).
    pub fn close(&self) {
        lock(&self.inner).closed = true;
        self.changed();
    }

    /// Pulls waiting now, over every target.
    pub fn waiters(&self) -> usize {
        lock(&self.inner).waiters
    }

    /// Tells waiting pulls that something was published or removed.
    pub(super) fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// The key's generation; `None` once it has gone or the board closed.
    fn generation_of(&self, key: &PullKey) -> Option<u64> {
        let b = lock(&self.inner);
        if b.closed {
            return None;
        }
        b.entries
            .get(key)
            .and_then(|e| e.offer.map(|_| e.generation))
    }

    /// Waits until the offer of `target` (`member`: a group member's name
    /// or address) is published anew (its generation is no longer
    /// `seen`), the target goes away, the board closes, or `wait` (at most
    /// [`MAX_WAIT`]) passes. Returns `false` without waiting when the
    /// target is unknown, the board is closed, or as many pulls wait as
    /// may.
    pub async fn wait_for_change(
        &self,
        target: &str,
        member: Option<&str>,
        seen: u64,
        wait: Duration,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + wait.min(MAX_WAIT);
        let key = {
            let mut b = lock(&self.inner);
            let key = b.key_of(target, member);
            if b.closed || b.waiters >= b.max_waiters {
                return false;
            }
            let Some(e) = b.entries.get_mut(&key) else {
                return false;
            };
            e.waiting += 1;
            b.waiters += 1;
            key
        };
        let waiting = Waiting { board: self, key };
        // Subscribed before the check: a publication between the two is
        // seen by the check, one after it wakes `changed`.
        let mut changes = self.changes.subscribe();
        while self.generation_of(&waiting.key) == Some(seen) {
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => break,
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn key() -> PullKey {
        PullKey {
            target: "t".into(),
            member: None,
        }
    }

    /// A board with target `t` published, and the generation a puller
    /// `w` holds.
    fn pulled() -> (PullBoard, u64) {
        let b = PullBoard::default();
        b.publish(&key(), true, 5.0);
        let g = b.pull("t", None, "w", Instant::now()).unwrap().generation;
        (b, g)
    }

    #[tokio::test]
    async fn a_waiting_pull_wakes_on_the_next_publication() {
        let (b, g) = pulled();
        let waiter = {
            let b = b.clone();
            tokio::spawn(async move {
                let t0 = Instant::now();
                let waited = b
                    .wait_for_change("t", None, g, Duration::from_secs(8))
                    .await;
                (waited, t0.elapsed())
            })
        };
        // It waits (and counts as waiting) until something is published.
        while b.waiters() == 0 {
            tokio::task::yield_now().await;
        }
        b.publish(&key(), true, 4.0);
        let (waited, took) = waiter.await.unwrap();
        assert!(waited);
        assert!(took < Duration::from_secs(8), "woke at the wait's end");
        assert_eq!(b.waiters(), 0);
        assert_eq!(b.pull("t", None, "w", Instant::now()).unwrap().offer, 4.0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiting_pull_ends_at_its_wait_or_at_the_cap() {
        let (b, g) = pulled();
        let t0 = tokio::time::Instant::now();
        assert!(
            b.wait_for_change("t", None, g, Duration::from_secs(3))
                .await
        );
        assert_eq!(t0.elapsed(), Duration::from_secs(3));
        // A longer wait is cut to MAX_WAIT.
        let t0 = tokio::time::Instant::now();
        assert!(
            b.wait_for_change("t", None, g, Duration::from_secs(60))
                .await
        );
        assert_eq!(t0.elapsed(), MAX_WAIT);
        // A pull that does not hold the current generation does not wait.
        let t0 = tokio::time::Instant::now();
        assert!(
            b.wait_for_change("t", None, g - 1, Duration::from_secs(3))
                .await
        );
        assert_eq!(t0.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_most_waiters_a_pull_does_not_wait() {
        let (b, g) = pulled();
        b.set_max_waiters(1);
        let first = {
            let b = b.clone();
            tokio::spawn(async move {
                b.wait_for_change("t", None, g, Duration::from_secs(5))
                    .await
            })
        };
        while b.waiters() == 0 {
            tokio::task::yield_now().await;
        }
        assert!(
            !b.wait_for_change("t", None, g, Duration::from_secs(5))
                .await
        );
        assert!(
            !b.wait_for_change("nobody", None, g, Duration::from_secs(5))
                .await
        );
        // The target leaves: the waiting pull ends at once.
        b.remove_target("t");
        assert!(first.await.unwrap());
        assert_eq!(b.waiters(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn closing_the_board_ends_every_wait() {
        let (b, g) = pulled();
        let waiting = {
            let b = b.clone();
            tokio::spawn(async move {
                let t0 = tokio::time::Instant::now();
                b.wait_for_change("t", None, g, Duration::from_secs(5))
                    .await;
                t0.elapsed()
            })
        };
        while b.waiters() == 0 {
            tokio::task::yield_now().await;
        }
        b.close();
        assert_eq!(waiting.await.unwrap(), Duration::ZERO);
        assert!(
            !b.wait_for_change("t", None, g, Duration::from_secs(5))
                .await
        );
    }

    #[test]
    fn a_waiting_puller_is_not_stale() {
        let b = PullBoard::default();
        let k = key();
        b.publish(&k, true, 5.0);
        let t0 = Instant::now();
        b.pull("t", None, "w", t0).unwrap();
        let later = t0 + Duration::from_secs(6);
        let stale = Duration::from_secs(5);
        assert!(b.committed(&k, stale, later).is_err());
        lock(&b.inner).entries.get_mut(&k).unwrap().waiting = 1;
        assert_eq!(b.committed(&k, stale, later).unwrap(), 5.0);
    }
}
