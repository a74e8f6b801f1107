//! The oracle: 95 % of the true capacity, the reference no real
//! controller can reach.
//!
//! Why it exists: the bench's metrics need a best case to read the other
//! controllers against.
//!
//! What it may touch: nothing; it does no I/O and reads no clock.

use super::{Bounds, Controller, WindowResult};

/// The reference: 95 % of the window's true capacity, which no real
/// controller can know.
#[derive(Debug, Clone)]
pub struct Oracle {
    b: Bounds,
}

/// The share of the true capacity that the oracle offers.
pub const ORACLE_SHARE: f64 = 0.95;

impl Oracle {
    /// The oracle within `b`.
    pub fn new(b: Bounds) -> Self {
        Oracle { b }
    }
}

impl Controller for Oracle {
    fn offer(&mut self, capacity: f64) -> f64 {
        self.b.clamp(ORACLE_SHARE * capacity)
    }

    fn observe(&mut self, _w: WindowResult) {}
}
