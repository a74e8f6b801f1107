//! The live capacity estimate, as a value the status, the metric and the
//! log share.
//!
//! Why it exists: a user should not have to stop a run and read the report
//! to learn the target's capacity. The figure is computed by the report's
//! own code (the report module's `estimate`, fed per window by its
//! `LiveCapacity` in the engine's loop); this module only
//! holds the value that telemetry shows, because the status and the
//! exporter's events live here and the report sits above telemetry in the
//! module graph.
//!
//! What it may touch: nothing; it is plain data.

use serde::ser::{Serialize, SerializeStruct, Serializer};

/// What the evidence so far says about the target's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum CapacityEstimate {
    /// No level within the bound is bracketed by a breaching level above
    /// it yet (shown as `null`).
    #[default]
    None,
    /// A level within the bound, held for the minimum windows, lies below a
    /// level that breached, but the steady-state rule does not hold yet.
    Provisional(CapacityFigure),
    /// The steady-state rule holds: the figure is the report's.
    Steady(CapacityFigure),
}

/// A capacity figure and its evidence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapacityFigure {
    /// The figure: the level's mean offer (rounded down on an integer knob).
    pub offer: f64,
    /// The level's pooled failure ratio.
    pub failure_ratio: f64,
    /// The 95 % Wilson interval on that ratio: `[low, high]`.
    pub interval: [f64; 2],
    /// Evidence windows pooled at the level.
    pub windows: usize,
    /// Resolved attempts pooled at the level.
    pub attempts: f64,
    /// Failed attempts pooled at the level.
    pub failures: f64,
    /// The mean offer of the level above it that brackets it (provisional:
    /// the lowest level above that breached; steady: the report's next step
    /// up), if any.
    pub next_step_up: Option<f64>,
    /// Steady only: no level above the figure was shown over a bound (the
    /// report's `binding` is `neither`), so the target holds at least this
    /// much and the run has not found where it stops. A provisional figure
    /// is bracketed by a breach by construction.
    pub lower_bound: bool,
    /// Steady lower bounds only: the run held in the dead band, when the
    /// counts show it (the report's dead-band sentence, live).
    pub dead_band: Option<DeadBand>,
}

/// Why a steady lower bound held where it did: the settled period's levels
/// up to the figure failed significantly more than the clean level the
/// governor's verdicts used, below which it climbs. If the target fails
/// that share whatever the load, a `low` above it lets the run measure
/// past it (issue 30: a 3 % background held real k6 at 2 to 4 below a
/// wall of 10; `low = 0.04` found the wall).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct DeadBand {
    /// The pooled failure ratio of those levels.
    pub failure_ratio: f64,
    /// Their resolved attempts.
    pub attempts: f64,
    /// Their failed attempts.
    pub failures: f64,
    /// The clean level of the latest verdict: a window is clean below it.
    pub clean_below: f64,
}

impl DeadBand {
    /// Why the figure (as written, `figure`) held, and the way out: the
    /// clause the report's verdict and the figure's log line end with.
    pub fn sentence(&self, figure: &str) -> String {
        let share = crate::governor::pct(self.failure_ratio);
        format!(
            "; it held in the dead band: its offers up to {figure} failed {share} of their attempts ({:.0} of {:.0}), significantly above the clean level {} (the governor climbs only on windows below it). If the target fails about {share} whatever the load, set `low` above that share to measure past it",
            self.failures,
            self.attempts,
            crate::governor::pct(self.clean_below)
        )
    }
}

impl CapacityEstimate {
    /// The figure, when there is one.
    pub fn figure(&self) -> Option<&CapacityFigure> {
        match self {
            CapacityEstimate::None => None,
            CapacityEstimate::Provisional(f) | CapacityEstimate::Steady(f) => Some(f),
        }
    }

    /// `provisional`, `steady`, or `lower-bound` (steady, and a lower
    /// bound: [`CapacityFigure::lower_bound`]): the metric's `state` label;
    /// None without a figure.
    pub fn state(&self) -> Option<&'static str> {
        match self {
            CapacityEstimate::None => None,
            CapacityEstimate::Provisional(_) => Some("provisional"),
            CapacityEstimate::Steady(f) if f.lower_bound => Some("lower-bound"),
            CapacityEstimate::Steady(_) => Some("steady"),
        }
    }

    /// Whether the figure or its state differs from `other`'s (what is
    /// logged and what moves the metric's series; a steady figure that
    /// becomes a lower bound, or stops being one, changes state; so does a
    /// lower bound that comes to hold in the dead band, or stops); the
    /// interval, the window count and the dead band's counts move every
    /// window and do not count.
    pub fn changed_from(&self, other: &CapacityEstimate) -> bool {
        let band = |e: &CapacityEstimate| e.figure().map(|f| f.dead_band.is_some());
        self.state() != other.state()
            || self.figure().map(|f| f.offer) != other.figure().map(|f| f.offer)
            || band(self) != band(other)
    }
}

impl Serialize for CapacityEstimate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(f) = self.figure() else {
            return s.serialize_none();
        };
        let mut st = s.serialize_struct("Capacity", 10)?;
        st.serialize_field("offer", &f.offer)?;
        st.serialize_field("steady", &matches!(self, CapacityEstimate::Steady(_)))?;
        st.serialize_field("failure_ratio", &f.failure_ratio)?;
        st.serialize_field("interval", &f.interval)?;
        st.serialize_field("windows", &f.windows)?;
        st.serialize_field("attempts", &f.attempts)?;
        st.serialize_field("failures", &f.failures)?;
        st.serialize_field("next_step_up", &f.next_step_up)?;
        st.serialize_field("lower_bound", &f.lower_bound)?;
        st.serialize_field("dead_band", &f.dead_band)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(offer: f64) -> CapacityFigure {
        CapacityFigure {
            offer,
            failure_ratio: 0.02,
            interval: [0.01, 0.03],
            windows: 4,
            attempts: 400.0,
            failures: 8.0,
            next_step_up: Some(offer + 1.0),
            lower_bound: false,
            dead_band: None,
        }
    }

    #[test]
    fn none_is_null_and_a_figure_is_an_object() {
        assert_eq!(
            serde_json::to_value(CapacityEstimate::None).unwrap(),
            serde_json::Value::Null
        );
        let v = serde_json::to_value(CapacityEstimate::Provisional(figure(10.0))).unwrap();
        assert_eq!(v["offer"], 10.0);
        assert_eq!(v["steady"], false);
        assert_eq!(v["interval"], serde_json::json!([0.01, 0.03]));
        assert_eq!(v["windows"], 4);
        assert_eq!(v["lower_bound"], false);
        let v = serde_json::to_value(CapacityEstimate::Steady(figure(10.0))).unwrap();
        assert_eq!(v["steady"], true);
        let v = serde_json::to_value(CapacityEstimate::Steady(CapacityFigure {
            lower_bound: true,
            ..figure(10.0)
        }))
        .unwrap();
        assert_eq!(v["lower_bound"], true);
        assert_eq!(v["dead_band"], serde_json::Value::Null);
        let v = serde_json::to_value(CapacityEstimate::Steady(CapacityFigure {
            lower_bound: true,
            dead_band: Some(DeadBand {
                failure_ratio: 0.029,
                attempts: 3488.0,
                failures: 101.0,
                clean_below: 0.01,
            }),
            ..figure(4.0)
        }))
        .unwrap();
        assert_eq!(
            v["dead_band"],
            serde_json::json!({"failure_ratio": 0.029, "attempts": 3488.0,
                               "failures": 101.0, "clean_below": 0.01})
        );
    }

    #[test]
    fn only_the_figure_and_the_state_count_as_a_change() {
        let a = CapacityEstimate::Provisional(figure(10.0));
        let mut moved = figure(10.0);
        moved.windows = 9;
        assert!(!CapacityEstimate::Provisional(moved).changed_from(&a));
        assert!(CapacityEstimate::Steady(figure(10.0)).changed_from(&a));
        assert!(CapacityEstimate::Provisional(figure(11.0)).changed_from(&a));
        assert!(CapacityEstimate::None.changed_from(&a));
        let steady = CapacityEstimate::Steady(figure(10.0));
        let lower = CapacityEstimate::Steady(CapacityFigure {
            lower_bound: true,
            ..figure(10.0)
        });
        assert_eq!(lower.state(), Some("lower-bound"));
        assert!(lower.changed_from(&steady) && steady.changed_from(&lower));
        let band = |failures: f64| {
            CapacityEstimate::Steady(CapacityFigure {
                lower_bound: true,
                dead_band: Some(DeadBand {
                    failure_ratio: failures / 1000.0,
                    attempts: 1000.0,
                    failures,
                    clean_below: 0.01,
                }),
                ..figure(10.0)
            })
        };
        assert!(band(30.0).changed_from(&lower) && lower.changed_from(&band(30.0)));
        assert!(!band(31.0).changed_from(&band(30.0)));
    }
}
