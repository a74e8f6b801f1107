//! Prometheus text: the exposition parser and instant-vector selectors.
//!
//! Why it exists: three stages need to read Prometheus text (the scrape
//! signal, the push receiver, and config validation of selectors), and the
//! parsing is pure. Keeping it here, below both `config` and `signal`,
//! lets each of them use it without importing the other.
//!
//! What it may touch: nothing. No I/O, no clock, no other module of the
//! crate.
//!
//! - [`exposition`]: our Prometheus/OpenMetrics text parser (why not
//!   `prometheus-parse`: it silently drops valid samples; see its docs).
//! - [`selector`]: PromQL instant-vector selectors, summed over series.
//! - [`promql`]: PromQL expression text (selectors in an expression,
//!   balance, durations).
//!
//! Shared by the parsers: `names` (which bytes make metric and label names)
//! and `excerpt` (how an error message quotes the input).

mod excerpt;
pub mod exposition;
mod names;
pub mod promql;
pub mod selector;
