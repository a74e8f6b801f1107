//! CUBIC: a cubic window growth after RFC 9438, one bench window as one
//! RTT.
//!
//! Why it exists: the congestion-control baseline the governor is compared
//! with, its update rule pinned by a test against the RFC's formulas.
//!
//! What it may touch: nothing; it does no I/O and reads no clock.

use super::{Bounds, Controller, WindowResult};

/// A CUBIC-like window after RFC 9438 (CUBIC for fast and long-distance
/// networks, 2023), with one window of the bench as one RTT:
///
/// - slow start until the first breach: `W = max(2 W, W + 1)`;
/// - on a breach (§4.6, §4.7): with fast convergence,
///   `W_max = W (1 + β) / 2` when `W < W_max` (the previous one), else
///   `W_max = W`; then `W = β W` with `β = 0.7`, `t = 0`,
///   `K = cbrt(W_max (1 - β) / C)` with `C = 0.4`, and `W_est = W`;
/// - otherwise (§4.2, §4.3): `t += 1`,
///   `target = W_cubic(t) = C (t - K)^3 + W_max`, clamped into
///   `[W, 1.5 W]`; the Reno-friendly estimate grows by
///   `α = 3 (1 - β) / (1 + β)` per window; `W = max(target, W_est)`.
///
/// `W` is in workers instead of segments, so `C = 0.4` means 0.4 workers per
/// window cubed. Clamped into `[floor, ceiling]`.
#[derive(Debug, Clone)]
pub struct Cubic {
    b: Bounds,
    w: f64,
    pub(super) w_max: Option<f64>,
    w_est: f64,
    pub(super) k: f64,
    t: f64,
}

/// RFC 9438's multiplicative decrease factor.
pub const CUBIC_BETA: f64 = 0.7;
/// RFC 9438's scaling constant `C`.
pub const CUBIC_C: f64 = 0.4;

impl Cubic {
    /// Opens at `b.start` in slow start.
    pub fn new(b: Bounds) -> Self {
        Cubic {
            w: b.start,
            w_max: None,
            w_est: b.start,
            k: 0.0,
            t: 0.0,
            b,
        }
    }

    /// `W_cubic(t)` of RFC 9438 §4.2 (after the first breach).
    pub fn w_cubic(&self, t: f64) -> f64 {
        let w_max = self.w_max.unwrap_or(self.w);
        CUBIC_C * (t - self.k).powi(3) + w_max
    }
}

impl Controller for Cubic {
    fn offer(&mut self, _capacity: f64) -> f64 {
        self.w
    }

    fn observe(&mut self, win: WindowResult) {
        let Some(frac) = win.frac() else { return };
        if frac > self.b.high {
            let w_max = match self.w_max {
                Some(prev) if self.w < prev => self.w * (1.0 + CUBIC_BETA) / 2.0,
                _ => self.w,
            };
            self.w_max = Some(w_max);
            self.w = self.b.clamp(self.w * CUBIC_BETA);
            self.k = (w_max * (1.0 - CUBIC_BETA) / CUBIC_C).cbrt();
            self.t = 0.0;
            self.w_est = self.w;
            return;
        }
        if self.w_max.is_none() {
            self.w = self.b.clamp((self.w * 2.0).max(self.w + 1.0));
            return;
        }
        self.t += 1.0;
        let target = self.w_cubic(self.t).clamp(self.w, 1.5 * self.w);
        let alpha = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
        self.w_est += alpha;
        self.w = self.b.clamp(target.max(self.w_est));
    }
}
