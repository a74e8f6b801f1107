//! The engine: one loop that governs every target, single or group.
//!
//! Why it exists: a single target is a group of one. Each target runs one
//! [`TargetTask`]: every window it reads every member (counters and the
//! committed offer, concurrently, each with a timeout), hands the reads to
//! the pure [`step::Core::step`] (the one place a window is decided), emits
//! the events it returns through the [`Exporter`](crate::telemetry::export::Exporter)
//! (the one place telemetry is emitted), and hands the shares to each
//! member's `writer::Writer` (the one place a write happens). The loop
//! itself only does I/O.
//!
//! - [`task`]: the target task and its loop, and its lifecycle across
//!   reloads.
//! - [`build`]: the only `match` over signal and control kinds.
//! - [`step`]: the pure window step, with the attribution of windows to
//!   one offer.
//! - `reads`: one round of reads over every member.
//! - `writer`: a member's source, actuator and writer task, and the last
//!   write (`on_exit`).
//! - [`members`]: the small map by member name every stage keeps.
//! - [`split`]: the split of an offer across instances (pure).
//! - `discovery`: `file_sd` and HTTP SD for groups.
//!
//! Within the engine, `task` imports `build` and nothing imports `task`
//! back (`build` makes a task through an `impl Builder` block in `task`).
//!
//! Lifecycle: the opening offer is published (and confirmed) before the
//! first window; a reload resumes with the governor's state instead
//! ([`Lifecycle`]); congestion memory is restored from and saved to the
//! state file; on shutdown the writers get a bounded grace, then `on_exit`
//! applies, through the same split and the same writers.
//!
//! What it may touch: the tools (through the traits of `signal` and
//! `control`), the state file, and the telemetry (through the exporter). It
//! does not know the HTTP surface: the supervisor hands it the push store
//! and the pull board.

pub mod build;
pub(crate) mod discovery;
pub mod members;
pub(crate) mod reads;
pub mod split;
pub mod step;
pub mod task;
pub(crate) mod writer;

pub use build::{BuildError, RunOptions};
pub use task::{Lifecycle, Resume, TargetTask};
