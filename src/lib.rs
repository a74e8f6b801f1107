//! throttle-governor: adaptive backpressure for existing load tools.
//!
//! A load test that pushes a saturated target past its capacity turns
//! overload into retry churn, and the request-level success rate stays green.
//! The honest signal is the windowed attempt-failure fraction, computed from
//! counter deltas. This crate reads a load tool's counters, forms windows,
//! runs the governor of `docs/GOVERNOR.md`, writes the new offer back through
//! the tool's admin API (confirmed by read-back), and exports its own
//! decisions.
//!
//! # Layout
//! `ARCHITECTURE.md` is the map: the pipeline, the layers (each module uses
//! only the rows above it; `tests/inproc/module_graph.rs` enforces the
//! table), what each module deliberately does not know, and where to look.
//! In the order data flows:
//!
//! - [`promtext`], [`auth`], [`window`], [`rng`]: pure text, credentials,
//!   pure windows, a seeded PRNG;
//! - [`governor`]: the pure decision rules (`docs/GOVERNOR.md`);
//! - [`config`]: the TOML config;
//! - [`signal`], [`control`], [`adapters`]: where counters come from, where
//!   offers go, and the load tools spoken natively;
//! - [`state`], [`telemetry`], [`report`]: the state file; metrics, logs,
//!   status and the one exporter; the capacity figure;
//! - [`engine`], [`http`]: the one loop per target; the HTTP server;
//! - [`runtime`]: supervisor, reload, healthcheck;
//! - [`lab`]: simulator, bench, replay, demo; [`cli`]: the command line.
#![forbid(unsafe_code)]

pub mod adapters;
pub mod auth;
pub mod cli;
pub mod config;
pub mod control;
pub mod engine;
pub mod governor;
pub mod http;
pub mod lab;
pub mod promtext;
pub mod report;
pub mod rng;
pub mod runtime;
pub mod signal;
pub mod state;
pub mod telemetry;
pub mod window;
