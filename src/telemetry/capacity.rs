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
    /// becomes a lower bound, or stops being one, changes state); the
    /// interval and the window count move every window and do not count.
    pub fn changed_from(&self, other: &CapacityEstimate) -> bool {
        self.state() != other.state()
            || self.figure().map(|f| f.offer) != other.figure().map(|f| f.offer)
    }
}

impl Serialize for CapacityEstimate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(f) = self.figure() else {
            return s.serialize_none();
        };
        let mut st = s.serialize_struct("Capacity", 9)?;
        st.serialize_field("offer", &f.offer)?;
        st.serialize_field("steady", &matches!(self, CapacityEstimate::Steady(_)))?;
        st.serialize_field("failure_ratio", &f.failure_ratio)?;
        st.serialize_field("interval", &f.interval)?;
        st.serialize_field("windows", &f.windows)?;
        st.serialize_field("attempts", &f.attempts)?;
        st.serialize_field("failures", &f.failures)?;
        st.serialize_field("next_step_up", &f.next_step_up)?;
        st.serialize_field("lower_bound", &f.lower_bound)?;
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
    }
}
