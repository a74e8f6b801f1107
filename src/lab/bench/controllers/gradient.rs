//! Gradient: Envoy's adaptive-concurrency gradient controller, on the
//! success ratio.
//!
//! Why it exists: the proxy baseline the governor is compared with, its
//! update rule pinned by a test against Envoy's formula.
//!
//! What it may touch: nothing; it does no I/O and reads no clock.

use super::{Bounds, Controller, WindowResult};

/// Envoy's adaptive-concurrency gradient controller
/// (<https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_filters/adaptive_concurrency_filter>,
/// `source/extensions/filters/http/adaptive_concurrency/controller/gradient_controller.h`):
/// `gradient = clamp((minRTT + B) / sampleRTT, 0.5, 2.0)`,
/// `limit = gradient * limit`, `limit = limit + sqrt(limit)` (the headroom,
/// "the square-root of the new limit").
///
/// On the success ratio: the "latency" is the cost of one success,
/// `1 / (1 - frac)` attempts, whose ideal (`minRTT`) is 1; the buffer `B`
/// is the declared bound, `B = high / (1 - high)`, so that
/// `gradient = (1 - frac) / (1 - high)`: 1 exactly at `frac = high`.
/// Envoy's periodic minRTT re-measurement (pinning the limit low) has no
/// counterpart here, since the ideal is known.
#[derive(Debug, Clone)]
pub struct Gradient {
    b: Bounds,
    limit: f64,
}

/// Envoy's gradient bounds.
pub const GRADIENT_MIN: f64 = 0.5;
/// Envoy's default `max_gradient`.
pub const GRADIENT_MAX: f64 = 2.0;

impl Gradient {
    /// Opens at `b.start`.
    pub fn new(b: Bounds) -> Self {
        Gradient { limit: b.start, b }
    }

    /// The gradient for one window's failure fraction.
    pub fn gradient(&self, frac: f64) -> f64 {
        ((1.0 - frac) / (1.0 - self.b.high)).clamp(GRADIENT_MIN, GRADIENT_MAX)
    }
}

impl Controller for Gradient {
    fn offer(&mut self, _capacity: f64) -> f64 {
        self.limit
    }

    fn observe(&mut self, w: WindowResult) {
        let Some(frac) = w.frac() else { return };
        let limit = self.gradient(frac) * self.limit;
        self.limit = self.b.clamp(limit + limit.sqrt());
    }
}
