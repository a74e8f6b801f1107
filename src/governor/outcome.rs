//! What one window decided, as a value: the [`Outcome`] and its parts (the
//! movement's [`Mode`], the [`HoldReason`], the [`Signal`] and the
//! [`Threshold`] it crossed, the pooled [`Evidence`]).
//!
//! Why it exists: every decision the governor takes leaves as one value that
//! the engine exports, the lab scores and replay prints; its spellings
//! (`as_str`, serde) are part of the JSON API and the metric labels, so they
//! are kept in one place, apart from the rules that produce them.
//!
//! What it may touch: nothing outside the governor; no clock, no I/O.

use std::fmt;

use serde::{Deserialize, Serialize};

#[cfg(doc)]
use super::ThrottleGovernor;
use super::{latency_bound, Decision};

/// The label of a movement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Up in slow start (no congestion memory).
    Climbing,
    /// Up well below the last congestion point (`target < SAFE_ZONE *
    /// last_bad`, [`super::SAFE_ZONE`]).
    Reclimbing,
    /// Up near the last congestion point.
    Probing,
    /// Down.
    BackingOff,
}

impl Mode {
    /// The spelling used in logs, metrics and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Climbing => "climbing",
            Mode::Reclimbing => "reclimbing",
            Mode::Probing => "probing",
            Mode::BackingOff => "backing-off",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a window held the offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HoldReason {
    /// The window resolved no attempts.
    NoTraffic,
    /// `low <= frac <= high`.
    DeadBand,
    /// Clean, but the offer is already at (or above) the ceiling.
    AtCeiling,
    /// Over the bound, but the offer is already at the floor.
    AtFloor,
    /// The first reading only sets the baseline.
    Baseline,
    /// A counter went down: the window was discarded and the baseline rebased.
    CounterReset,
    /// The signal could not be read or was invalid for this window.
    SignalError,
    /// `robust` and `gentle` only: the window right after a movement, whose failures may
    /// still belong to the previous offer.
    Settling,
    /// `robust` and `gentle` only: too few attempts since the last decision to tell a
    /// breach from noise; the window is pooled with the next ones.
    Gathering,
    /// `robust` and `gentle` only: clean, but the next additive probe waits for more
    /// clean windows, because the last probes found the limit.
    Dwelling,
    /// The window straddled a change of the offer in effect (or fell within
    /// the signal's lag after one), so its attempts belong to no one offer:
    /// it is not decided on (the engine's attribution, not a rule).
    OfferChange,
    /// Latency bound only: failures clean, but the window's latency
    /// quantile is between its clean level and the bound ([`latency_bound`]).
    LatencyBand,
    /// Latency bound only: the window has no latency quantile (no
    /// observations, or the latency source failed), so it cannot be clean.
    NoLatency,
}

impl HoldReason {
    /// The spelling used in logs, metrics and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            HoldReason::NoTraffic => "no-traffic",
            HoldReason::DeadBand => "dead-band",
            HoldReason::AtCeiling => "at-ceiling",
            HoldReason::AtFloor => "at-floor",
            HoldReason::Baseline => "baseline",
            HoldReason::CounterReset => "counter-reset",
            HoldReason::SignalError => "signal-error",
            HoldReason::Settling => "settling",
            HoldReason::Gathering => "gathering",
            HoldReason::Dwelling => "dwelling",
            HoldReason::OfferChange => "offer-change",
            HoldReason::LatencyBand => "latency-band",
            HoldReason::NoLatency => "no-latency",
        }
    }
}

impl fmt::Display for HoldReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The threshold a window's fraction crossed, for the log line.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "lowercase")]
pub enum Threshold {
    /// `frac > high`.
    High(f64),
    /// `frac < low`.
    Low(f64),
    /// `low <= frac <= high`.
    Band(f64, f64),
}

impl Threshold {
    /// The threshold `value` crossed against the band `[low, high]`.
    pub(crate) fn of(value: f64, low: f64, high: f64) -> Threshold {
        if value > high {
            Threshold::High(high)
        } else if value < low {
            Threshold::Low(low)
        } else {
            Threshold::Band(low, high)
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Threshold::High(h) => write!(f, "> high {}", pct(*h)),
            Threshold::Low(l) => write!(f, "< low {}", pct(*l)),
            Threshold::Band(l, h) => write!(f, "within [{}, {}]", pct(*l), pct(*h)),
        }
    }
}

/// Formats a fraction as a percentage with up to two decimals.
pub fn pct(frac: f64) -> String {
    let p = frac * 100.0;
    let s = format!("{p:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// The window that caused a decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Signal {
    /// Resolved attempts in the window.
    pub attempts: f64,
    /// Failed attempts in the window.
    pub failures: f64,
    /// `failures / attempts`; `None` without traffic.
    pub frac: Option<f64>,
    /// The threshold that the fraction crossed, if any.
    pub threshold: Option<Threshold>,
}

/// The full result of folding one window into a [`ThrottleGovernor`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Outcome {
    /// The decision with the knob's rounding applied (`Up`/`Down` carry `to`).
    #[serde(skip)]
    pub decision: Decision,
    /// The committed offer before the decision.
    pub from: f64,
    /// The offer after the decision (equal to `from` on hold).
    pub to: f64,
    /// Set on Up and Down.
    pub mode: Option<Mode>,
    /// Set on Hold.
    pub reason: Option<HoldReason>,
    /// The window; `None` for a baseline or reset reading.
    pub signal: Option<Signal>,
    /// The congestion memory after this window.
    pub last_bad: Option<f64>,
    /// The clean streak after this window.
    pub clean_streak: u32,
    /// Whether the memory cleared on this window.
    pub memory_cleared: bool,
    /// `gentle` only: the memory cleared because this clean verdict
    /// refuted the breach that set it, not after a clean streak.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub memory_refuted: bool,
    /// `robust` and `gentle` only: the pooled sample a decision used when it spans more
    /// than this window (`None` under the seed rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// `robust` and `gentle` only: how sure the verdict behind this
    /// decision is (the counts it used, their 95 % interval, the levels and
    /// the background estimate); `None` when no verdict was reached
    /// (gathering, settling, no traffic) and under the seed rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<Confidence>,
    /// The window's latency against its bound, when one is set
    /// ([`latency_bound`]); `None` without a latency bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<latency_bound::LatencySignal>,
}

/// The pooled windows behind a `robust` decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Evidence {
    /// Resolved attempts over the pooled windows.
    pub attempts: f64,
    /// Failed attempts over the pooled windows.
    pub failures: f64,
    /// How many windows were pooled.
    pub windows: u32,
}

/// What a `robust` or `gentle` verdict judged the counts to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictClass {
    /// Below the clean level, or explained by the background.
    Clean,
    /// Neither clean nor a significant breach.
    DeadBand,
    /// Significantly above `high` (or, back where a failed probe started,
    /// significantly above the clean level).
    Breach,
}

impl VerdictClass {
    /// The spelling used in logs, metrics and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictClass::Clean => "clean",
            VerdictClass::DeadBand => "dead-band",
            VerdictClass::Breach => "breach",
        }
    }
}

impl fmt::Display for VerdictClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How sure a `robust` or `gentle` verdict is (issue 30): the counts it
/// rested on, the 95 % interval of their failure ratio, the levels it was
/// judged against, and the background failure rate estimated at the low
/// offers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Confidence {
    /// What the counts were judged to be.
    pub verdict: VerdictClass,
    /// Resolved attempts the verdict used (one window or a pool).
    pub attempts: f64,
    /// Failed attempts among them.
    pub failures: f64,
    /// Lower end of the 95 % (Wilson score) interval of the failure ratio.
    pub lower: f64,
    /// Upper end of that interval.
    pub upper: f64,
    /// A pool is clean below this fraction (`low`, or the background plus
    /// `low`).
    pub clean_below: f64,
    /// The failure bound: a breach is significantly above it.
    pub high: f64,
    /// The load-independent background failure rate at the low offers,
    /// when they hold enough attempts for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<super::robust::background::BackgroundEstimate>,
}

impl Confidence {
    /// `"clean 2/120, 95 % 0.46%–5.9%"`, with `", background 2.1%"` when
    /// there is one: the verdict in a few words for logs and tables.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} {}/{}, 95 % {}–{}",
            self.verdict,
            self.failures,
            self.attempts,
            pct(self.lower),
            pct(self.upper)
        );
        if let Some(b) = self.background {
            s.push_str(&format!(", background {}", pct(b.rate)));
        }
        s
    }
}

/// The Wilson score interval of `failures / attempts` at 95 %: a closed
/// form that stays inside [0, 1] and is honest at 0 and at few attempts.
pub fn wilson_interval(failures: f64, attempts: f64) -> (f64, f64) {
    if attempts <= 0.0 {
        return (0.0, 1.0);
    }
    const Z: f64 = 1.959_963_984_540_054;
    let p = (failures / attempts).clamp(0.0, 1.0);
    let z2n = Z * Z / attempts;
    let centre = (p + z2n / 2.0) / (1.0 + z2n);
    let half = Z * (p * (1.0 - p) / attempts + z2n / (4.0 * attempts)).sqrt() / (1.0 + z2n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

impl Outcome {
    /// Whether the offer moves.
    pub fn is_movement(&self) -> bool {
        !matches!(self.decision, Decision::Hold)
    }

    /// "up", "down" or "hold".
    pub fn decision_str(&self) -> &'static str {
        match self.decision {
            Decision::Up(_) => "up",
            Decision::Down(_) => "down",
            Decision::Hold => "hold",
        }
    }
}

/// The signal of a window without traffic.
pub(super) fn no_traffic(failures: f64) -> Signal {
    Signal {
        attempts: 0.0,
        failures,
        frac: None,
        threshold: None,
    }
}
