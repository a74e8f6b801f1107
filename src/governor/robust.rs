//! The `robust` profile: placeholder, filled in below.

use super::{Outcome, ThrottleGovernor};

/// The robust layer's memory.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RobustState {}

impl ThrottleGovernor {
    pub(super) fn step_robust(&mut self, attempts: f64, failures: f64) -> Outcome {
        self.step_default(attempts, failures)
    }
}
