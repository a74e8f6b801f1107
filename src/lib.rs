//! throttle-governor: adaptive backpressure for existing load tools.
//!
//! A load test that pushes a saturated target past its capacity turns
//! overload into retry churn, and the request-level success rate stays green.
//! The honest signal is the windowed attempt-failure fraction, computed from
//! counter deltas. This crate reads a load tool's counters, forms windows,
//! runs the governor of `GOVERNOR.md`, writes the new offer back through the
//! tool's admin API (confirmed by read-back), and exports its own decisions.
//!
//! # Layout
//! The pipeline, one module per stage:
//!
//! | stage | module | what lives there |
//! |---|---|---|
//! | signal | `signal` | where counters come from: Prometheus scrape, tool adapters |
//! | window | [`window`] | pure counter deltas, resets, fractions |
//! | governor | [`governor`] | pure decision rules and per-target state |
//! | control | `control` | where offers go: HTTP writes and read-back |
//! | telemetry | `telemetry` | exported metrics, HTTP server, logging |

pub mod governor;
pub mod signal;
pub mod window;
