//! Levels: a period's windows pooled by offer level, with the interval on
//! each level's failure ratio.
//!
//! Why it exists: the capacity figure is a level's pooled evidence, not one
//! window's, and both the steady-state rule ([`super::steady`](mod@super::steady)) and the
//! live estimate ([`super::estimate`]) pool the same way. A level is one
//! additive probe step wide (the module docs of [`super::steady`](mod@super::steady) give the
//! width), so a probing climb moves about one level per window.
//!
//! What it may touch: nothing but the windows it is given.

use serde::Serialize;

use super::MIN_LEVEL_WINDOWS;
use crate::telemetry::{LatencyBoundStatus, WindowRecord};

/// The z value of the 95 % intervals.
const Z95: f64 = 1.959_964;

/// A two-sided confidence interval on a ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// Lower end.
    pub low: f64,
    /// Upper end.
    pub high: f64,
    /// The confidence (0.95).
    pub confidence: f64,
}

/// The 95 % Wilson score interval on `failures / attempts`.
pub(crate) fn wilson(failures: f64, attempts: f64) -> Interval {
    if attempts <= 0.0 {
        return Interval {
            low: 0.0,
            high: 1.0,
            confidence: 0.95,
        };
    }
    let p = (failures / attempts).clamp(0.0, 1.0);
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / attempts;
    let centre = (p + z2 / (2.0 * attempts)) / denom;
    let half = Z95 * (p * (1.0 - p) / attempts + z2 / (4.0 * attempts * attempts)).sqrt() / denom;
    Interval {
        low: if p == 0.0 {
            0.0
        } else {
            (centre - half).max(0.0)
        },
        high: if p == 1.0 {
            1.0
        } else {
            (centre + half).min(1.0)
        },
        confidence: 0.95,
    }
}

/// One level's pooled windows over the settled period.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelStats {
    /// The mean committed offer of the level's windows (the offer itself on
    /// an integer knob with levels of 1).
    pub offer: f64,
    /// The lowest offer pooled into the level.
    pub offer_min: f64,
    /// The highest offer pooled into the level.
    pub offer_max: f64,
    /// Evidence windows at this level.
    pub windows: usize,
    /// Resolved attempts, summed.
    pub attempts: f64,
    /// Failed attempts, summed.
    pub failures: f64,
    /// `failures / attempts`.
    pub failure_ratio: f64,
    /// The 95 % Wilson interval on the ratio.
    pub interval: Interval,
    /// Whether the pooled ratio is within the bound.
    pub within_bound: bool,
    /// Successful attempts per second at this level.
    pub throughput_per_sec: Option<f64>,
    /// Latency bound only: the median of the level's window quantiles, in
    /// seconds (null when none of its windows had one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_secs: Option<f64>,
    /// Latency bound only: whether that median is within the bound (a
    /// level with no quantile is not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_within_bound: Option<bool>,
}

/// Whether a level can give a capacity figure: within the bound and held
/// for at least [`MIN_LEVEL_WINDOWS`] windows.
pub(super) fn qualifies(l: &LevelStats) -> bool {
    l.within_bound && l.windows >= MIN_LEVEL_WINDOWS
}

/// A level's capacity figure: its mean offer, rounded down on an integer
/// knob.
pub(super) fn figure_of(l: &LevelStats, integer: bool) -> f64 {
    if integer {
        l.offer.floor()
    } else {
        l.offer
    }
}

/// The width of one level: one additive probe step at `top`.
pub(super) fn level_width(top: f64, integer: bool) -> f64 {
    let top = top.abs();
    let w = if integer {
        (0.02 * top).floor().max(1.0)
    } else {
        (0.02 * top).max((0.1 * top).min(1.0))
    };
    if w.is_finite() && w > 0.0 {
        w
    } else {
        1.0
    }
}

pub(super) fn level(offer: f64, width: f64) -> i64 {
    (offer / width + 1e-9).floor() as i64
}

/// Pools a period's windows by level, lowest level first.
pub(super) fn pool(
    period: &[&WindowRecord],
    width: f64,
    high: f64,
    latency: Option<LatencyBoundStatus>,
) -> Vec<LevelStats> {
    let mut by_level: std::collections::BTreeMap<i64, Vec<&WindowRecord>> = Default::default();
    for r in period {
        by_level.entry(level(r.offer, width)).or_default().push(r);
    }
    by_level
        .into_values()
        .map(|ws| {
            let attempts: f64 = ws.iter().filter_map(|r| r.attempts).sum();
            let failures: f64 = ws.iter().filter_map(|r| r.failures).sum();
            let secs: f64 = ws.iter().filter_map(|r| r.window_secs).sum();
            let ratio = if attempts > 0.0 {
                failures / attempts
            } else {
                0.0
            };
            let mut lats: Vec<f64> = ws.iter().filter_map(|r| r.latency_secs).collect();
            lats.sort_by(f64::total_cmp);
            let latency_secs = (!lats.is_empty()).then(|| {
                let n = lats.len();
                if n % 2 == 1 {
                    lats[n / 2]
                } else {
                    (lats[n / 2 - 1] + lats[n / 2]) / 2.0
                }
            });
            let latency_within_bound =
                latency.map(|b| latency_secs.is_some_and(|v| v <= b.bound_secs));
            LevelStats {
                offer: ws.iter().map(|r| r.offer).sum::<f64>() / ws.len() as f64,
                offer_min: ws.iter().map(|r| r.offer).fold(f64::MAX, f64::min),
                offer_max: ws.iter().map(|r| r.offer).fold(f64::MIN, f64::max),
                windows: ws.len(),
                attempts,
                failures,
                failure_ratio: ratio,
                interval: wilson(failures, attempts),
                within_bound: ratio <= high && latency_within_bound != Some(false),
                throughput_per_sec: (secs > 0.0).then(|| (attempts - failures) / secs),
                latency_secs,
                latency_within_bound,
            }
        })
        .collect()
}
