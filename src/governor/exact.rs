//! Exact offers: the knob's resolution, and the bounds of the committed
//! offer.
//!
//! Why it exists: the rules of `docs/GOVERNOR.md` are written over real numbers,
//! but a knob has a resolution. Concurrency moves in whole workers; a rate
//! is a float that a tool may round (to 2 decimals, say) or that a JSON
//! reader may read 1 ulp off. Where the fast reclimb's target lies a hair
//! above the committed offer, the Up is a move the knob cannot make: the
//! tool reads back the old value, the next window decides the same hair's
//! Up, and the offer stalls while every line says "up". Read at the knob's
//! resolution, the rules say something definite instead: a move smaller than
//! the resolution is no move, so the rule that applies is the next one, the
//! additive probe (`current + max(1, 0.02 last_bad)`). This module holds that
//! reading, and the bounds of every value that becomes `current`.
//!
//! What it may touch: its parent [`crate::governor`] only; no clock, no I/O.
//!
//! # Resolution
//! - `concurrency`: 1 (the integer rounding of [`Params::round`] already
//!   applies it; nothing here changes a concurrency decision).
//! - `rate`: the configured one ([`Params::with_resolution`]), else relative
//!   [`RATE_RELATIVE_RESOLUTION`] (1e-9) of the offer; and never less than
//!   what the tool has shown it rounds to: when a read-back returns the
//!   offer an Up started from (the Up of `d` was swallowed), moves of up to
//!   `2 d` count as below the resolution from then on ([`LEARN_MAX_SHARE`]
//!   bounds `d`, so an outside writer undoing a real Up is not mistaken for
//!   rounding).
//!
//! Two offers are *the same* when they differ by less than the resolution;
//! `a >= b` at the resolution is `a > b - resolution` (for whole numbers,
//! exactly `a >= b`).

use serde::Serialize;

use super::{probe_step, Control, Decision, ParamError, Params, ThrottleGovernor};

/// The resolution of a rate knob without a configured one, relative to the
/// offer: 1e-9, far below any rounding a tool does and far above the ulp
/// (2.2e-16) that a float read can be off by.
pub const RATE_RELATIVE_RESOLUTION: f64 = 1e-9;

/// The largest swallowed Up, as a share of its target, that is read as the
/// tool's rounding (1 %); a larger one undone is an outside writer's move.
pub const LEARN_MAX_SHARE: f64 = 0.01;

/// What became of a value offered as the committed offer (or as
/// `last_bad`): adopted as it is, clamped into [floor, ceiling], or refused.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Committed {
    /// Within bounds: taken as it is.
    Adopted,
    /// Outside [floor, ceiling]: `from` was clamped to `to`.
    Clamped {
        /// The value given.
        from: f64,
        /// The bound it was clamped to.
        to: f64,
    },
    /// NaN, infinite or negative: refused; the state is unchanged.
    Invalid {
        /// The value given.
        value: f64,
    },
}

impl Params {
    /// These parameters with a configured knob resolution: the smallest move
    /// the knob makes (e.g. 0.01 for a tool that rounds a rate to 2
    /// decimals). It must be finite and > 0; for concurrency it must be a
    /// whole number (it can only be coarser than 1).
    pub fn with_resolution(mut self, resolution: f64) -> Result<Params, ParamError> {
        if !(resolution.is_finite() && resolution > 0.0) {
            return Err(ParamError::ResolutionNotPositive(resolution));
        }
        if self.control.is_integer() && resolution.fract() != 0.0 {
            return Err(ParamError::NotInteger {
                field: "resolution",
                value: resolution,
            });
        }
        self.resolution = Some(resolution);
        Ok(self)
    }

    /// The knob's resolution at `offer`: 1 (or the configured whole number)
    /// for concurrency; the configured one, else relative
    /// [`RATE_RELATIVE_RESOLUTION`], for rate.
    pub fn resolution_at(&self, offer: f64) -> f64 {
        let configured = self.resolution.unwrap_or(0.0);
        match self.control {
            Control::Concurrency => configured.max(1.0),
            Control::Rate => configured.max(RATE_RELATIVE_RESOLUTION * offer.abs()),
        }
    }
}

impl ThrottleGovernor {
    /// The resolution in effect at `offer`: the parameters' and the learned
    /// one, whichever is coarser.
    pub fn resolution_at(&self, offer: f64) -> f64 {
        self.params
            .resolution_at(offer)
            .max(self.learned_resolution)
    }

    /// `a >= b` at the knob's resolution (for whole numbers, exactly
    /// `a >= b`).
    pub(super) fn at_or_above(&self, a: f64, b: f64) -> bool {
        match self.params.control {
            Control::Concurrency => a >= b,
            Control::Rate => a > b - self.resolution_at(b),
        }
    }

    /// An Up of less than the resolution becomes the next rule's step, the
    /// additive probe `max(1, 0.02 last_bad)` (or the resolution, when that
    /// is coarser), capped at the ceiling; if even that moves less than the
    /// resolution, the offer is at the ceiling: Hold. Rate only: for
    /// concurrency, [`Params::round`] applies the resolution of 1.
    pub(super) fn exact_up(&self, raw: Decision, from: f64) -> Decision {
        let Decision::Up(target) = raw else {
            return raw;
        };
        if self.params.control.is_integer() {
            return raw;
        }
        let res = self.resolution_at(from);
        if target - from >= res {
            return raw;
        }
        let probe = self.state.last_bad.map_or(1.0, probe_step);
        let target = (from + probe.max(res)).min(self.params.ceiling);
        if target - from >= res {
            Decision::Up(target)
        } else {
            Decision::Hold
        }
    }

    /// Learns the tool's rounding from a read-back: an Up that reads back as
    /// the offer it started from was below the knob's resolution.
    pub(super) fn learn_from_read_back(&mut self, committed: f64) {
        let Some((from, to)) = self.last_up.take() else {
            return;
        };
        if self.params.control.is_integer() || self.state.current != to {
            return;
        }
        let step = to - from;
        let swallowed = (committed - from).abs() < self.resolution_at(from);
        if swallowed && step > 0.0 && step <= LEARN_MAX_SHARE * to.abs() {
            self.learned_resolution = self.learned_resolution.max(2.0 * step);
        }
    }

    /// Where `value` stands against [floor, ceiling].
    pub(super) fn bound(&self, value: f64) -> Committed {
        if !value.is_finite() || value < 0.0 {
            return Committed::Invalid { value };
        }
        let p = &self.params;
        // max then min: never panics, even on hand-built parameters.
        let to = value.max(p.floor).min(p.ceiling);
        if to == value {
            Committed::Adopted
        } else {
            Committed::Clamped { from: value, to }
        }
    }
}

#[cfg(test)]
mod tests;
