//! An optional latency bound beside the failure bound: capacity at an SLO.
//!
//! Why it exists: the attempt plane cannot see a target that queues. It
//! answers every request, just later, so `frac` stays 0 until clients time
//! out. Performance engineers state capacity as "fewer than X % errors
//! **and** p99 under Y ms"; this module composes the second half with the
//! rules of `docs/GOVERNOR.md` without changing them. With no latency bound,
//! [`ThrottleGovernor::step_with_latency`] is [`ThrottleGovernor::step`],
//! exactly (a property test holds it to that).
//!
//! What it may touch: only its parent, [`crate::governor`]; no clock and no
//! I/O. The windowed quantile comes from the caller ([`crate::window::quantiles`]
//! forms it from the same window as the failure fraction).
//!
//! # The rules (a window with traffic, latency bound set)
//! Let `obs` be the window's latency quantile, `bound` the bound and `lat_low`
//! its clean level (default 80 % of `bound`).
//! - **Breach** when `frac > high` **or** `obs > bound`. The back-off factor
//!   is the more severe of the two that breach:
//!   - failures: `clamp(1 - frac, 0.25, 0.9)` (docs/GOVERNOR.md's);
//!   - latency: `clamp(bound / obs, 0.25, 0.9)`, proportional to how far
//!     the quantile overshoots: 10 % over backs off by about 10 %, 4x over
//!     or more by the floor factor 0.25.
//!
//!   `target = max(current * factor, floor)`; a Down records
//!   `last_bad = current` whichever signal drove it, and the outcome names
//!   that signal ([`LatencySignal::drove`]).
//! - **Clean** only when both are: `frac < low` **and** `obs < lat_low`.
//!   Only a clean window climbs (docs/GOVERNOR.md's climb, unchanged) and only a
//!   clean window at or above `last_bad` counts towards clearing the
//!   congestion memory.
//! - **Approach in the band**: when `frac < low` and
//!   `lat_low <= obs <= bound`, probe one additive step
//!   (`max(0.02 * last_bad, 1)`; before any breach `max(0.02 * offer, 1)`)
//!   while the step stays strictly below `last_bad`: the figure is the
//!   highest offer within the bound, one step under the offer that breached,
//!   not wherever slow start happened to enter the band.
//! - Otherwise **hold**: `dead-band` when `frac` is in its band, and
//!   `latency-band` when `frac` is clean but `lat_low <= obs <= bound` and
//!   the next step would reach `last_bad`.
//! - **No quantile** (the window had no observations, or the latency source
//!   failed) is never read as fast: the window may still back off on its
//!   failures, but it does not climb and gives no clean evidence (hold,
//!   reason `no-latency`).
//!
//! Under the `robust` profile, a latency breach backs off at once (the
//! quantile is not pooled), a band window approaches the bound as above
//! and any other window that is not latency-clean holds; a latency-clean
//! window goes to the robust rules unchanged.

use serde::Serialize;

use super::{
    back_off_factor, probe_step, Decision, HoldReason, Mode, Outcome, Signal, Threshold,
    ThrottleGovernor,
};

/// The default clean level of a latency bound, as a fraction of the bound.
pub const DEFAULT_LOW_FRACTION: f64 = 0.8;

/// The clamp of the latency back-off factor (the seed's).
pub(crate) const FACTOR_MIN: f64 = 0.25;
/// See [`FACTOR_MIN`].
pub(crate) const FACTOR_MAX: f64 = 0.9;

/// A latency bound and one window's quantile against it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyWindow {
    /// The quantile bounded, in (0, 1): 0.99 for p99.
    pub quantile: f64,
    /// The window's quantile in seconds; `None` when unknown.
    pub observed: Option<f64>,
    /// Back off above this, in seconds.
    pub bound: f64,
    /// Clean below this, in seconds (`< bound`).
    pub low: f64,
}

/// The latency part of a decision, beside [`Signal`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencySignal {
    /// The quantile bounded.
    pub quantile: f64,
    /// The window's quantile in seconds (`None`: no observations).
    pub observed: Option<f64>,
    /// The bound in seconds.
    pub bound: f64,
    /// The clean level in seconds.
    pub low: f64,
    /// Which threshold the quantile crossed (in seconds), if known.
    pub threshold: Option<Threshold>,
    /// Whether latency drove this decision (a Down whose latency factor was
    /// the more severe, or a hold that latency alone caused).
    pub drove: bool,
}

/// The back-off factor for a latency breach: `clamp(bound / obs, 0.25, 0.9)`.
pub(crate) fn latency_factor(bound: f64, observed: f64) -> f64 {
    (bound / observed).clamp(FACTOR_MIN, FACTOR_MAX)
}

/// Formats seconds as the log does: `312ms`, `1.25s`.
pub fn seconds(v: f64) -> String {
    if v < 1.0 {
        let ms = v * 1000.0;
        let s = format!("{ms:.1}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s}ms")
    } else {
        let s = format!("{v:.3}");
        let s = s.trim_end_matches('0').trim_end_matches('.');
        format!("{s}s")
    }
}

impl LatencySignal {
    /// `p99` for 0.99, `p99.9` for 0.999.
    pub fn quantile_name(&self) -> String {
        quantile_name(self.quantile)
    }
}

/// `p99` for 0.99, `p99.9` for 0.999, `p50` for 0.5.
pub fn quantile_name(q: f64) -> String {
    let p = format!("{:.3}", q * 100.0);
    let p = p.trim_end_matches('0').trim_end_matches('.');
    format!("p{p}")
}

impl ThrottleGovernor {
    /// [`Self::step`] with an optional latency bound (see the module docs).
    /// `None` is `step(attempts, failures)`, exactly.
    pub fn step_with_latency(
        &mut self,
        attempts: f64,
        failures: f64,
        latency: Option<LatencyWindow>,
    ) -> Outcome {
        let Some(lat) = latency else {
            return self.step(attempts, failures);
        };
        if attempts <= 0.0 {
            let o = self.step(attempts, failures);
            return self.annotate(o, lat, false);
        }
        let p = self.params;
        let from = self.state.current;
        let frac = failures / attempts;
        let lat_breach = lat.observed.is_some_and(|o| o > lat.bound);
        let lat_clean = lat.observed.is_some_and(|o| o < lat.low);
        let fail_breach = frac > p.high;
        let robust = self.profile.robust_tunables().is_some();

        if !lat_breach && (lat_clean || fail_breach) {
            // Latency does not bind: the failure rules decide, unchanged
            // (a failure breach backs off whatever the quantile).
            let o = self.step(attempts, failures);
            return self.annotate(o, lat, false);
        }
        if !lat_breach && robust {
            if frac < p.low {
                if let Some(o) = self.band_probe(attempts, failures, false, lat) {
                    return o;
                }
            }
            // Not latency-clean: no climb; the robust pool skips the window.
            let reason = if lat.observed.is_none() {
                HoldReason::NoLatency
            } else {
                HoldReason::LatencyBand
            };
            let o = self.hold(reason, Some(self.signal_of(attempts, failures)), false);
            return self.annotate(o, lat, true);
        }

        // The seed profile's memory step, with clean = both clean.
        let memory_cleared = !robust && self.memory_step(frac < p.low && lat_clean, from);
        let signal = self.signal_of(attempts, failures);
        if lat_breach {
            let obs = lat.observed.unwrap_or(lat.bound);
            let f_lat = latency_factor(lat.bound, obs);
            let f_fail = if fail_breach {
                back_off_factor(frac)
            } else {
                1.0
            };
            if fail_breach && f_fail <= f_lat {
                // Failures are the more severe: docs/GOVERNOR.md's back-off.
                let raw = self.decide_at(frac, from);
                return self.finish_down(raw, from, signal, memory_cleared, lat, false);
            }
            let target = (from * f_lat).max(p.floor);
            let raw = if target < from {
                Decision::Down(target)
            } else {
                Decision::Hold
            };
            return self.finish_down(raw, from, signal, memory_cleared, lat, true);
        }
        // Failures clean or in their band, latency in its band or unknown.
        if frac < p.low {
            if let Some(o) = self.band_probe(attempts, failures, memory_cleared, lat) {
                return o;
            }
        }
        let reason = if frac >= p.low {
            HoldReason::DeadBand
        } else if lat.observed.is_none() {
            HoldReason::NoLatency
        } else {
            HoldReason::LatencyBand
        };
        let o = self.hold(reason, Some(signal), memory_cleared);
        self.annotate(o, lat, reason != HoldReason::DeadBand)
    }

    /// The approach to the bound: a window whose failures are clean and
    /// whose quantile lies in the band (`low <= obs <= bound`) probes one
    /// additive step (`max(0.02 * last_bad, 1)`, or `max(0.02 * offer, 1)`
    /// before any breach) while that step stays strictly below `last_bad`:
    /// the band climbs until the first breach above it, then holds one step
    /// under the offer that breached. `None` when it holds.
    ///
    /// Why: a band that always held kept wherever slow start happened to
    /// land in it (16 of a latency capacity of 21 on a real queueing proxy),
    /// and a report of that offer as "latency binds" although no window
    /// ever reached the bound (issue 26).
    fn band_probe(
        &mut self,
        attempts: f64,
        failures: f64,
        memory_cleared: bool,
        lat: LatencyWindow,
    ) -> Option<Outcome> {
        let observed = lat.observed?;
        if observed < lat.low || observed > lat.bound {
            return None;
        }
        let p = self.params;
        let from = self.state.current;
        let bad = self.state.last_bad;
        let step = probe_step(bad.unwrap_or(from));
        let raw = Decision::Up((from + step).min(p.ceiling));
        let Decision::Up(to) = p.round(self.exact_up(raw, from), from) else {
            return None;
        };
        if to <= from || bad.is_some_and(|b| to >= b) {
            return None;
        }
        self.state.current = to;
        self.last_up = Some((from, to));
        if self.profile.robust_tunables().is_some() {
            self.robust_offer_changed();
        }
        let signal = self.signal_of(attempts, failures);
        let o = self.movement(
            Decision::Up(to),
            from,
            to,
            Mode::Probing,
            signal,
            memory_cleared,
        );
        Some(self.annotate(o, lat, true))
    }

    /// A breach's decision: a Down records `last_bad`, a Hold is at the floor.
    fn finish_down(
        &mut self,
        raw: Decision,
        from: f64,
        signal: Signal,
        memory_cleared: bool,
        lat: LatencyWindow,
        drove: bool,
    ) -> Outcome {
        let decision = self.params.round(raw, from);
        let o = match decision {
            Decision::Down(to) => {
                let o = self.back_off(from, to, from, signal, memory_cleared);
                self.last_up = None;
                if self.profile.robust_tunables().is_some() {
                    self.robust_offer_changed();
                }
                o
            }
            _ => self.hold(HoldReason::AtFloor, Some(signal), memory_cleared),
        };
        self.annotate(o, lat, drove)
    }

    fn annotate(&self, mut o: Outcome, lat: LatencyWindow, drove: bool) -> Outcome {
        let threshold = lat.observed.map(|v| Threshold::of(v, lat.low, lat.bound));
        o.latency = Some(LatencySignal {
            quantile: lat.quantile,
            observed: lat.observed,
            bound: lat.bound,
            low: lat.low,
            threshold,
            drove,
        });
        o
    }
}

#[cfg(test)]
mod tests;
