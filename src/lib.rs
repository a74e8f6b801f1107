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
//! The pipeline, one module per stage, in the order data flows. The module
//! graph is acyclic (`tests/inproc/module_graph.rs` fails on a cycle): each stage
//! imports only the stages above it in this table.
//!
//! | stage | module | what lives there |
//! |---|---|---|
//! | pure text | [`promtext`] | the exposition parser, selectors, PromQL expression text |
//! | config | [`config`] | the TOML config (a leaf: serde types, every check, tool limits, group templates) |
//! | signal | [`signal`] | `Counters`, `SignalError`, the `CounterSource` trait; scrape, PromQL, push receive |
//! | window | [`window`] | pure counter deltas, resets, fractions |
//! | window | [`latency`] | pure windowed latency quantiles: histogram bucket deltas, resets, pass-through quantiles |
//! | governor | [`governor`] | pure decision rules and per-target state (`GOVERNOR.md`) |
//! | control | [`control`] | `ControlError`, the `KnobApi` trait, the `Actuator` (the read-back rule), the templated HTTP knob, the pull knob and its `PullBoard` (offers served for the tool to pull) |
//! | signal + control | [`adapters`] | real load tools spoken natively, one file per tool: Locust, k6, Goose |
//! | telemetry | [`telemetry`] | metrics, the `/metrics` server, logging, status and history, and the one exporter |
//! | engine | [`engine`] | one loop for every target: build (the only match over kinds), the pure window step, members and the one writer, split, discovery |
//!
//! Where to look:
//! - a window is decided in one place: [`engine::step::Core::step`];
//! - a write happens in one place: the writer task in [`engine::member`];
//! - telemetry is emitted in one place: [`telemetry::export::Exporter::emit`].
//!
//! Around the pipeline:
//!
//! | module | what lives there |
//! |---|---|
//! | [`auth`] | credentials and tokens (from files or env, always redacted) and TLS |
//! | [`state`] | the state file: congestion memory kept across controller restarts |
//! | [`report`] | the steady-state rule, the capacity report (JSON, HTML), and the live capacity estimate fed per window by the engine ([`report::estimate`], [`report::live`]) |
//! | [`reload`] | hot reload on SIGHUP or a config change, keeping governor state |
//! | [`supervisor`] | starts every target, serves telemetry, shuts down in bounded time |
//! | [`cli`] | the command-line interface (clap definitions) |
//! | [`demo`] | the built-in demo: sim + controller + report in one process |
//! | [`healthcheck`] | `healthcheck`: GET `/healthz` for the container's `HEALTHCHECK` |
//! | [`replay`] | what-if analysis: recorded windows through the governor |
//! | [`bench`](mod@bench) | control quality: the governor against AIMD, CUBIC, gradient, findmax and an oracle on the sim models |
//! | [`sim`] | a simulated load tool and target models with known capacity (demo, tests, benchmarks) |
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
pub mod runtime;
pub mod signal;
pub mod state;
pub mod telemetry;
pub mod window;
