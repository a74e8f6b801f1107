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
//! The pipeline, one module per stage, in the order data flows:
//!
//! | stage | module | what lives there |
//! |---|---|---|
//! | signal | [`signal`] | where counters come from: exposition parser, selectors, Prometheus scrape, PromQL, push |
//! | window | [`window`] | pure counter deltas, resets, fractions |
//! | governor | [`governor`] | pure decision rules and per-target state (`GOVERNOR.md`) |
//! | control | [`control`] | where offers go: HTTP writes, read-back, confirmation; or served for the tool to pull |
//! | signal + control | [`adapters`] | real load tools spoken natively, one file per tool: Locust, k6, Goose |
//! | telemetry | [`telemetry`] | exported metrics, `/metrics` server, movement log |
//!
//! Around the pipeline:
//!
//! | module | what lives there |
//! |---|---|
//! | [`auth`] | credentials (from files or env, always redacted) and TLS for talking to tools |
//! | [`cli`] | the command-line interface (clap definitions) |
//! | [`config`] | the TOML config and its validation |
//! | [`target`] | one target's loop: read → window → decide → write |
//! | [`group`] | a target group: many instances, one window, one decision, the offer split |
//! | [`reload`] | hot reload on SIGHUP or a config change, keeping governor state |
//! | [`supervisor`] | starts every target, serves telemetry, shuts down in bounded time |
//! | [`demo`] | the built-in demo: sim + controller + report in one process |
//! | [`healthcheck`] | `healthcheck`: GET `/healthz` for the container's `HEALTHCHECK` |
//! | [`replay`] | what-if analysis: recorded windows through the governor |
//! | [`bench`](mod@bench) | control quality: the governor against AIMD, CUBIC, gradient, findmax and an oracle on the sim models |
//! | [`report`] | the steady-state rule and the capacity report (JSON, HTML) |
//! | [`state`] | the state file: congestion memory kept across controller restarts |
//! | [`sim`] | a simulated load tool and target models with known capacity (demo, tests, benchmarks) |

pub mod adapters;
pub mod auth;
pub mod bench;
pub mod cli;
pub mod config;
pub mod control;
pub mod demo;
pub mod governor;
pub mod group;
pub mod healthcheck;
pub mod reload;
pub mod replay;
pub mod report;
pub mod signal;
pub mod sim;
pub mod state;
pub mod supervisor;
pub mod target;
pub mod telemetry;
pub mod window;
