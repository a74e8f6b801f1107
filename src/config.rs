//! The TOML config: serde types plus validation, errors named by target.
//!
//! Why it exists: the controller writes load onto someone's system, so a
//! config is checked completely before anything starts. Every problem found
//! is collected and reported with the target's name and the field's path
//! (`targets[checkout].signal.url: ...`), not just the first one.
//!
//! Every number carries a unit: durations are humantime strings (`"2s"`,
//! `"250ms"`), fractions are plain numbers in `[0, 1]`. Unknown keys are
//! rejected (`deny_unknown_fields`), so a typo never silently falls back to
//! a default.
//!
//! One deliberate spelling: docs/GOVERNOR.md calls the governed knob `control`,
//! but `[targets.control]` is the table that says how offers are written,
//! and TOML cannot hold both a `control = "..."` key and a
//! `[targets.control]` table. The knob is therefore `knob = "concurrency"`
//! (or `"rate"`).
//!
//! What it may touch: the filesystem (to read the file) and
//! [`crate::governor::Params`] for the governor's own rules.
//!
//! Where things are: the serde types by table (`server`, `target`,
//! `signal`, `control`, and the kinds and tables with rules of their own:
//! [`promql`], [`push`], [`pull`], [`group`], [`latency`]); durations in
//! `duration`; reading in `parse` (with `fields` naming the field of each
//! type error); the semantic checks in `validate` (and `closed`, the checks
//! that keep the governor closed by default); the problems themselves in
//! `error`; the tools' own limits in `limits`.

pub mod group;
pub mod latency;
pub(crate) mod limits;
pub mod promql;
pub mod pull;
pub mod push;

mod closed;
mod control;
mod defaults;
mod duration;
mod error;
pub(crate) mod fields;
mod io_checks;
mod parse;
pub(crate) mod redact;
mod server;
mod signal;
mod target;
mod validate;

use serde::Serialize;

pub use closed::state_file_problem;
pub use control::{
    ControlConfig, HttpControlConfig, LocustControlConfig, ReadBackConfig, ToolControlConfig,
};
pub use error::{ConfigError, FieldError};
pub use server::{ServerConfig, DEFAULT_MAX_CONNECTIONS};
pub use signal::{
    GooseSignalConfig, K6SignalConfig, LocustSignalConfig, PrometheusSignalConfig, SignalConfig,
};
pub use target::{OnExit, OnSignalLoss, ProfileKey, TargetConfig};

/// The whole config file.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// The controller's own HTTP server.
    pub server: ServerConfig,
    /// The governed targets.
    pub targets: Vec<TargetConfig>,
}

#[cfg(test)]
mod tests;
