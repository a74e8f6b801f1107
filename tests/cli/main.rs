//! The binary end to end, one test binary: `demo`, `check`, `run`,
//! `replay`, signals, secrets and the process-level hardening, each run as a
//! child process of the built `throttle-governor`.
//!
//! Run one module with `cargo test --test cli replay::`.

#[path = "../support/mod.rs"]
mod support;

mod check_all;
mod cli_run;
mod hardening;
mod hardening_iii;
mod replay;
mod replay_confidence;
mod secrets;
