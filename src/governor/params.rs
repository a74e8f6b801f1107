//! The parameters of one governed target: which knob, its bounds, the
//! thresholds, and their validation.
//!
//! Why it exists: `docs/GOVERNOR.md` fills defaults (`low = high / 5`,
//! `start = floor`, an unbounded rate ceiling) and forbids values that would
//! make the rules meaningless (a floor of 0, `low >= high`); [`Params::new`]
//! does both once and reports every problem at once, so the rules can take
//! their parameters as given. The knob's integer rounding
//! ([`Params::round`]) lives here too: it is a property of the knob, not of
//! a rule. The knob's resolution is [`super::exact`]'s.
//!
//! What it may touch: nothing outside the governor; no clock, no I/O.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

#[cfg(doc)]
use super::exact;
use super::Decision;

/// Which knob of the load tool is governed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Control {
    /// Workers, users or VUs: an integer knob.
    #[default]
    Concurrency,
    /// Requests or iterations per second: a float knob, never rounded.
    Rate,
}

impl Control {
    /// Whether the knob only takes whole numbers.
    pub fn is_integer(self) -> bool {
        matches!(self, Control::Concurrency)
    }

    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Control::Concurrency => "concurrency",
            Control::Rate => "rate",
        }
    }
}

impl fmt::Display for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Invalid governor parameters.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ParamError {
    /// A value is NaN, infinite where it must be finite, or negative.
    #[error("`{field}` must be a finite, non-negative number (got {value})")]
    NotFiniteNonNegative {
        /// The parameter's name.
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// `high` outside (0, 1).
    #[error("`high` must be a fraction in (0, 1), e.g. 0.05 (got {0})")]
    HighOutOfRange(f64),
    /// `low` outside (0, high).
    #[error("`low` must be greater than 0 and less than `high` ({high}) (got {low})")]
    LowOutOfRange {
        /// The value of `low`.
        low: f64,
        /// The value of `high`.
        high: f64,
    },
    /// `floor > ceiling`.
    #[error("`floor` ({floor}) must not exceed `ceiling` ({ceiling})")]
    FloorAboveCeiling {
        /// The value of `floor`.
        floor: f64,
        /// The value of `ceiling`.
        ceiling: f64,
    },
    /// `start` outside [floor, ceiling].
    #[error("`start` ({start}) must lie in [floor, ceiling] = [{floor}, {ceiling}]")]
    StartOutOfRange {
        /// The value of `start`.
        start: f64,
        /// The value of `floor`.
        floor: f64,
        /// The value of `ceiling`.
        ceiling: f64,
    },
    /// A concurrency parameter that is not a whole number.
    #[error("`{field}` must be a whole number for control = \"concurrency\" (got {value})")]
    NotInteger {
        /// The parameter's name.
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// A floor of zero: at an offer of 0 there is no traffic, so no window
    /// could ever show that the target recovered.
    #[error("`floor` must be greater than 0: at an offer of 0 there is no traffic, so the governor could never see the target recover")]
    ZeroFloor,
    /// A resolution that is not a finite number above 0.
    #[error("`resolution` must be a finite number > 0, e.g. 0.01 for a rate rounded to 2 decimals (got {0})")]
    ResolutionNotPositive(f64),
    /// `ceiling` missing for concurrency.
    #[error("`ceiling` is required for control = \"concurrency\" (the authored concurrency)")]
    CeilingRequired,
}

/// The validated parameters of one governed target.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Params {
    /// Which knob is governed.
    pub control: Control,
    /// The authored offer; `f64::INFINITY` for an unbounded rate.
    pub ceiling: f64,
    /// The offer never goes below this.
    pub floor: f64,
    /// The opening offer.
    pub start: f64,
    /// Back off when `frac > high`.
    pub high: f64,
    /// A window is clean when `frac < low`.
    pub low: f64,
    /// The knob's resolution, when configured ([`Params::with_resolution`]);
    /// `None`: 1 for concurrency, relative
    /// [`exact::RATE_RELATIVE_RESOLUTION`] for rate.
    pub resolution: Option<f64>,
}

impl Params {
    /// Validates parameters, filling the defaults of `docs/GOVERNOR.md`:
    /// `low = high / 5`, `start = floor`, an unbounded ceiling for rate.
    ///
    /// Returns every problem found, not just the first.
    pub fn new(
        control: Control,
        ceiling: Option<f64>,
        floor: f64,
        start: Option<f64>,
        high: f64,
        low: Option<f64>,
    ) -> Result<Params, Vec<ParamError>> {
        let mut errors = Vec::new();
        let mut finite = |field: &'static str, v: f64| {
            let ok = v.is_finite() && v >= 0.0;
            if !ok {
                errors.push(ParamError::NotFiniteNonNegative { field, value: v });
            }
            ok
        };
        let ceiling_ok = match ceiling {
            Some(c) => finite("ceiling", c),
            None => true,
        };
        let floor_ok = finite("floor", floor);
        let start_ok = start.map(|s| finite("start", s)).unwrap_or(true);
        let high_ok = finite("high", high);
        let low_ok = low.map(|l| finite("low", l)).unwrap_or(true);

        let ceiling = match (ceiling, control) {
            (Some(c), _) => c,
            (None, Control::Rate) => f64::INFINITY,
            (None, Control::Concurrency) => {
                errors.push(ParamError::CeilingRequired);
                f64::NAN
            }
        };
        if floor_ok && floor == 0.0 {
            errors.push(ParamError::ZeroFloor);
        }
        if high_ok && !(high > 0.0 && high < 1.0) {
            errors.push(ParamError::HighOutOfRange(high));
        }
        let low = low.unwrap_or(high / 5.0);
        if high_ok && low_ok && !(low > 0.0 && low < high) {
            errors.push(ParamError::LowOutOfRange { low, high });
        }
        if control.is_integer() {
            for (field, v, ok) in [
                ("ceiling", ceiling, ceiling_ok),
                ("floor", floor, floor_ok),
                ("start", start.unwrap_or(0.0), start_ok),
            ] {
                if ok && v.is_finite() && v.fract() != 0.0 {
                    errors.push(ParamError::NotInteger { field, value: v });
                }
            }
        }
        let bounds_ok = ceiling_ok && floor_ok && !ceiling.is_nan();
        if bounds_ok && floor > ceiling {
            errors.push(ParamError::FloorAboveCeiling { floor, ceiling });
        }
        let start = match start {
            Some(s) => {
                if bounds_ok && start_ok && floor <= ceiling && !(floor..=ceiling).contains(&s) {
                    errors.push(ParamError::StartOutOfRange {
                        start: s,
                        floor,
                        ceiling,
                    });
                }
                s
            }
            // "`floor`, clamped into [floor, ceiling]"
            None => floor.min(ceiling),
        };
        if errors.is_empty() {
            Ok(Params {
                control,
                ceiling,
                floor,
                start,
                high,
                low,
                resolution: None,
            })
        } else {
            Err(errors)
        }
    }

    /// Applies the knob's integer rules to a raw decision.
    ///
    /// Concurrency: a Down strictly lowers the integer value unless at the
    /// floor, an Up strictly raises it unless at the ceiling, and nothing
    /// leaves [floor, ceiling]. Rate: values pass through unrounded.
    pub fn round(&self, decision: Decision, current: f64) -> Decision {
        if !self.control.is_integer() {
            return decision;
        }
        match decision {
            Decision::Down(t) => {
                let v = t.floor().min(current.ceil() - 1.0).max(self.floor);
                if v < current {
                    Decision::Down(v)
                } else {
                    Decision::Hold
                }
            }
            Decision::Up(t) => {
                let v = t.floor().max(current.floor() + 1.0).min(self.ceiling);
                if v > current {
                    Decision::Up(v)
                } else {
                    Decision::Hold
                }
            }
            Decision::Hold => Decision::Hold,
        }
    }
}
