//! Pure windowing: two cumulative readings become one trailing window.
//!
//! Why it exists: both signals the governor decides on are only honest over
//! a window of counter *deltas*, never over lifetime totals: the
//! attempt-failure fraction ([`counters`]) and, when a latency bound is set,
//! the latency quantile ([`quantiles`]). Both have the same traps (the first
//! reading only sets a baseline, a counter that goes down means the tool
//! restarted), so they live side by side, handled the same way.
//!
//! What it may touch: nothing else in the crate. No clock (the caller gives
//! each reading's timestamp) and no I/O; the governor, the engine, the lab
//! and the signal sources build on it.
//!
//! - [`counters`]: attempts and failures into a window: deltas, resets,
//!   fractions, the checks on absurd readings.
//! - [`quantiles`]: histogram buckets (or a source's own quantile) into the
//!   window's latency quantile.

pub mod counters;
pub mod quantiles;

pub use counters::{Form, Reading, Window, WindowError, WindowOutcome, WindowTracker};
pub use quantiles::{Buckets, HistogramError, LatencyOutcome, LatencySample, LatencyTracker};
