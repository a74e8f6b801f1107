//! AIMD: additive increase, multiplicative decrease, after Netflix
//! concurrency-limits' `AIMDLimit`.
//!
//! Why it exists: the simplest published baseline the governor is compared
//! with, its update rule pinned by a test against its source's formula.
//!
//! What it may touch: nothing; it does no I/O and reads no clock.

use super::{Bounds, Controller, WindowResult};

/// AIMD after Netflix concurrency-limits' `AIMDLimit`
/// (<https://github.com/Netflix/concurrency-limits>,
/// `com.netflix.concurrency.limits.limit.AIMDLimit`): on a drop,
/// `limit = (int) (limit * backoffRatio)` with `backoffRatio = 0.9`;
/// otherwise `limit = limit + 1` (the "inflight * 2 >= limit" guard always
/// holds, since a load tool keeps every worker busy); then clamped into
/// `[minLimit, maxLimit]`.
///
/// Adaptation: AIMDLimit sees one request at a time; here a window is a
/// "drop" when its attempt-failure fraction breaches `high`, the same bound
/// the governor is given. It opens at `start`, like the governor (Netflix's
/// default initial limit is 20).
#[derive(Debug, Clone)]
pub struct Aimd {
    b: Bounds,
    limit: f64,
}

/// AIMDLimit's default `backoffRatio`.
pub const AIMD_BACKOFF: f64 = 0.9;

impl Aimd {
    /// Opens at `b.start`.
    pub fn new(b: Bounds) -> Self {
        Aimd { limit: b.start, b }
    }
}

impl Controller for Aimd {
    fn offer(&mut self, _capacity: f64) -> f64 {
        self.limit
    }

    fn observe(&mut self, w: WindowResult) {
        let Some(frac) = w.frac() else { return };
        let next = if frac > self.b.high {
            (self.limit * AIMD_BACKOFF).floor()
        } else {
            self.limit + 1.0
        };
        self.limit = self.b.clamp(next);
    }
}
