//! The `queueing` model's latency: one tick's distribution and the
//! capacities it implies.
//!
//! Why it exists: `queueing` is the one model with a latency, and the
//! bench and the tests check the governor's latency bound against the
//! closed forms here (the formulas are in [`super`]'s docs).
//!
//! What it may touch: nothing; pure arithmetic.

/// `queueing`: the client timeout, in base latencies (`T_o = 4 base`).
pub const QUEUEING_TIMEOUT: f64 = 4.0;
/// `queueing`: the half-width of the uniform latency shape, as a share of
/// the mean (`[0.5 L, 1.5 L]`).
pub const QUEUEING_SPREAD: f64 = 0.5;

/// One tick's latency distribution (`queueing`), in ticks: attempts spread
/// evenly over `[0.5 mean, 1.5 mean]`, the slowest observed at the timeout.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickLatency {
    /// The service time at light load, `1 / a` ticks.
    pub base: f64,
    /// The mean time in the system before the timeout, `base max(1, x)`.
    pub mean: f64,
    /// The client timeout, `4 base`: slower attempts fail and are observed
    /// here.
    pub timeout: f64,
}

impl TickLatency {
    /// The `q` quantile of the observed latency: `min(mean (0.5 + q),
    /// timeout)` (`q` is clamped into [0, 1]).
    pub fn quantile(&self, q: f64) -> f64 {
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let spread = 1.0 - QUEUEING_SPREAD + 2.0 * QUEUEING_SPREAD * q;
        (self.mean * spread).min(self.timeout)
    }

    /// The share of attempts observed at or under `t` ticks (the CDF):
    /// `clamp(t / mean - 0.5, 0, 1)` below the timeout, 1 from it on.
    pub fn share_within(&self, t: f64) -> f64 {
        if t >= self.timeout {
            return 1.0;
        }
        let low = 1.0 - QUEUEING_SPREAD;
        ((t / self.mean - low) / (2.0 * QUEUEING_SPREAD)).clamp(0.0, 1.0)
    }
}

impl TickLatency {
    /// The mean observed latency, `E[min(L s, timeout)]` (a timed-out
    /// attempt is observed at the timeout): `mean` when nothing times out.
    pub fn observed_mean(&self) -> f64 {
        let (l, t) = (self.mean, self.timeout);
        let (lo, hi) = (l * (1.0 - QUEUEING_SPREAD), l * (1.0 + QUEUEING_SPREAD));
        if t >= hi {
            l
        } else if t <= lo {
            t
        } else {
            // Uniform density 1 / (hi - lo) up to t, then the mass at t.
            let below = (t * t - lo * lo) / (2.0 * (hi - lo));
            below + t * (hi - t) / (hi - lo)
        }
    }
}

/// `queueing`: the highest offer, in workers, whose `q` quantile stays at or
/// under `bound` (`bound` in the unit of `base`): `C bound / ((0.5 + q)
/// base)`. `None` when no offer has that property: the bound is under the
/// light-load quantile `(0.5 + q) base` (every offer breaks it) or at or
/// past the timeout `4 base` (no offer does; the quantile is capped there).
pub fn latency_capacity(capacity: f64, base: f64, q: f64, bound: f64) -> Option<f64> {
    let spread = 1.0 - QUEUEING_SPREAD + 2.0 * QUEUEING_SPREAD * q.clamp(0.0, 1.0);
    let idle = spread * base;
    (idle <= bound && bound < QUEUEING_TIMEOUT * base).then(|| capacity * bound / idle)
}

/// `queueing`: the offer at which a share `frac` of attempts times out,
/// `C 4 / (1.5 - frac)` (for `frac` in [0, 1)): `2.759 C` at 5 %.
pub fn queueing_failure_capacity(capacity: f64, frac: f64) -> f64 {
    capacity * QUEUEING_TIMEOUT / (1.0 + QUEUEING_SPREAD - frac.clamp(0.0, 1.0))
}
