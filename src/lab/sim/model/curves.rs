//! Failure probabilities: how each model's attempts fail at a given load.
//!
//! Why it exists: these are the formulas of the table in [`super`]'s docs,
//! one pure function a curve, kept apart from the state a
//! [`super::TargetModel`] carries from tick to tick.
//!
//! What it may touch: nothing; pure arithmetic.

use super::queueing::{QUEUEING_SPREAD, QUEUEING_TIMEOUT};

/// `cliff`: capacity lost per unit of excess load factor.
const CLIFF_SLOPE: f64 = 4.0;
/// `knee`: steepness of the logistic in `x`.
const KNEE_STEEPNESS: f64 = 25.0;
/// `fast-fail`: how many times faster a rejected attempt returns.
pub(super) const FAST_FAIL_SPEEDUP: f64 = 20.0;

/// `rejector`: the excess over capacity fails.
pub(super) fn rejector(offer: f64, capacity: f64) -> f64 {
    if offer <= 0.0 {
        0.0
    } else {
        (offer - capacity).max(0.0) / offer
    }
}

/// The excess of `total` attempts over a capacity of `capacity` workers
/// making `apw` attempts each, as a failure probability.
pub(super) fn rejector_load(total: u64, capacity: f64, apw: f64) -> f64 {
    if total == 0 {
        0.0
    } else {
        (total as f64 - capacity * apw).max(0.0) / total as f64
    }
}

/// `fast-fail`: the closed-loop rejection probability when rejections
/// return [`FAST_FAIL_SPEEDUP`] times faster: `20 (r - 1) / (20 (r - 1) + 1)`.
pub(super) fn fast_fail(offer: f64, capacity: f64) -> f64 {
    let excess = FAST_FAIL_SPEEDUP * (offer / capacity - 1.0);
    if excess <= 0.0 {
        0.0
    } else {
        excess / (excess + 1.0)
    }
}

/// `queueing`: the timeout share `clamp(1.5 - 4 / x, 0, 1)`.
pub(super) fn queueing(offer: f64, capacity: f64) -> f64 {
    if offer <= 0.0 {
        return 0.0;
    }
    let x = offer / capacity;
    (1.0 + QUEUEING_SPREAD - QUEUEING_TIMEOUT / x).clamp(0.0, 1.0)
}

/// `cliff`: goodput `g = max(0, 1 - 4 (x - 1))` of capacity past `x = 1`.
pub(super) fn cliff(offer: f64, capacity: f64) -> f64 {
    let x = offer / capacity;
    if x <= 1.0 {
        0.0
    } else {
        let goodput = (1.0 - CLIFF_SLOPE * (x - 1.0)).max(0.0);
        1.0 - goodput / x
    }
}

/// `knee`: logistic in the load factor, centred at capacity.
pub(super) fn knee(offer: f64, capacity: f64) -> f64 {
    if offer <= 0.0 {
        return 0.0;
    }
    let x = offer / capacity;
    1.0 / (1.0 + (-KNEE_STEEPNESS * (x - 1.0)).exp())
}
