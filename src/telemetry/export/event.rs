//! The events a target's task, its writers and its discovery emit: what
//! happened, as values, for [`super::Exporter::emit`].
//!
//! Why it exists: the engine only describes; the exporter reports. The
//! values are plain data, so the pure step can return them.

use crate::control::{ControlError, WriteOutcome};
use crate::governor::{Outcome, Params, Profile};
use crate::telemetry::{CapacityEstimate, LatencyBoundStatus, MemberStatus};

/// Something that happened to one target, for the exporter.
#[derive(Debug)]
pub enum Event {
    /// The target's task started: register its status and static series.
    Started {
        /// Its governor parameters.
        params: Params,
        /// Its profile.
        profile: Profile,
        /// Whether breaching windows may close early.
        early_verdicts: bool,
        /// Whether it runs without writing.
        dry_run: bool,
        /// The signal lag in effect, described.
        lag: String,
    },
    /// Congestion memory was restored from the state file.
    MemoryRestored {
        /// The restored `last_bad`.
        last_bad: Option<f64>,
        /// The restored clean streak.
        clean_streak: u32,
    },
    /// The opening offer (or the resumed one) before the first window.
    Opening {
        /// The offer.
        value: f64,
        /// How many instances share it.
        members: usize,
        /// Resumed across a reload, not published from `start`.
        resumed: bool,
        /// A dry run: nothing is written.
        dry_run: bool,
    },
    /// One window's outcome (decided, held or discarded).
    Window {
        /// The outcome (boxed: it is the largest variant by far).
        outcome: Box<Outcome>,
        /// Seconds since the task started.
        at: f64,
        /// The window's length in seconds.
        window_secs: f64,
        /// The last write was not confirmed: the offer is the tool's.
        unconfirmed: bool,
        /// The offer the tool reports, while a write is pending or
        /// unconfirmed (shown instead of the value asked for).
        in_effect: Option<f64>,
        /// Movements are not written (dry run, or another writer fights).
        not_written: bool,
        /// Whether a baseline reading is set (the target is ready).
        baseline: bool,
    },
    /// A window was discarded because it straddled an offer change.
    Discarded {
        /// The member whose window it was (None for a single target).
        member: Option<String>,
        /// A bounded reason label.
        reason: &'static str,
    },
    /// Failures in windows discarded right after a failed probe's Down,
    /// added to what that probe owes (`ThrottleGovernor::charge_late`).
    LateCost {
        /// The failures charged (above the clean level).
        failures: f64,
        /// The clean attempts the next probe from the failed one's start
        /// now waits for, in all.
        owed: f64,
    },
    /// The target has a latency bound (after `Started`).
    LatencyBound(LatencyBoundStatus),
    /// The latency source could not be read, or rebased.
    LatencyError {
        /// Bounded error label.
        error_type: &'static str,
        /// The message.
        message: String,
    },
    /// The signal could not be read, or was invalid.
    SignalError {
        /// The member (None for a single target).
        member: Option<String>,
        /// Bounded error label.
        error_type: &'static str,
        /// The message.
        message: String,
    },
    /// No member gave a valid window: the target holds.
    NoSignal {
        /// What went wrong, for the status.
        message: String,
    },
    /// A counter went down in the tool.
    CounterReset {
        /// The member (None for a single target).
        member: Option<String>,
    },
    /// The time one round of reads took.
    ReadDuration(f64),
    /// A read within a window watched for an early verdict.
    EarlyRead,
    /// The window closes early: its breach is certain (before its
    /// `Window`).
    EarlyVerdict {
        /// Attempts resolved in the window so far.
        attempts: f64,
        /// Failed attempts among them.
        failures: f64,
        /// The window's length so far, in seconds.
        secs: f64,
        /// The exact binomial test's p-value against `high`.
        p_value: f64,
    },
    /// From parsed reading to the movement handed to the writers.
    DecisionLatency(f64),
    /// The committed offer could not be read.
    ControlReadError {
        /// The member (None for a single target).
        member: Option<String>,
        /// The error.
        error: ControlError,
    },
    /// The tool reported an offer that cannot be one (not finite, negative).
    InvalidReading {
        /// The member (None for a single target).
        member: Option<String>,
        /// The value reported.
        value: f64,
    },
    /// Someone else changed the knob; the governor steps from their value.
    OutsideChange {
        /// The offer the governor had.
        from: f64,
        /// The value reported by the tool(s).
        reported: f64,
        /// The value stepped from (clamped into [floor, ceiling]).
        to: f64,
        /// True for a group (the sum over instances).
        group: bool,
    },
    /// Our own write was not confirmed: the offer in effect is the tool's.
    ToolOffer {
        /// What we asked for.
        asked: f64,
        /// What the tool runs.
        in_effect: f64,
    },
    /// Counters reset and the knob moved: the tool restarted.
    ToolRestart {
        /// The member (None for a single target).
        member: Option<String>,
        /// What the tool came back with.
        reported: f64,
        /// What is re-published.
        republished: f64,
    },
    /// The signal-loss policy took effect.
    SignalLost {
        /// Windows without a valid signal.
        windows: u32,
        /// Whether the offer drops to the floor (else it holds).
        to_floor: bool,
        /// The offer in effect.
        current: f64,
        /// The floor.
        floor: f64,
    },
    /// A valid window after a loss.
    SignalBack {
        /// The committed offer the governor resumes from.
        current: f64,
    },
    /// A group member joined, left, was rebuilt, came back or went down.
    Member {
        /// Its name.
        member: String,
        /// What happened.
        change: MemberChange,
    },
    /// The offer's split across instances.
    Split {
        /// `name=share` parts.
        parts: String,
    },
    /// The effective ceiling changed (instances down, or a tool maximum).
    Ceiling(f64),
    /// The members' statuses (groups only).
    Members(Vec<MemberStatus>),
    /// A write was handed to the writer.
    WriteQueued {
        /// The value.
        value: f64,
    },
    /// The writer finished one write.
    Write {
        /// The member (None for a single target).
        member: Option<String>,
        /// The value written.
        value: f64,
        /// How it ended.
        outcome: WriteOutcome,
        /// Its duration in seconds.
        secs: f64,
        /// Whether another write is still pending.
        still_pending: bool,
    },
    /// The tool refuses values above its maximum; the ceiling follows it.
    ToolMaximum {
        /// The member (None for a single target).
        member: Option<String>,
        /// The tool's maximum.
        max: f64,
    },
    /// Another writer keeps changing the knob after our confirmed writes.
    Conflict {
        /// Whether the conflict starts (true) or is over (false).
        on: bool,
        /// Outside changes in a row.
        changes: u32,
    },
    /// What `on_exit` did.
    OnExit {
        /// The value written (over all instances).
        value: f64,
        /// Each write's result (`confirmed`, `failed`, `unconfirmed`);
        /// empty when they timed out.
        results: Vec<&'static str>,
        /// A description, when any did not confirm.
        detail: Option<String>,
    },
    /// A discovered instance cannot be a member (its labels or address).
    MemberSkipped {
        /// Its address.
        member: String,
        /// Why.
        error: String,
    },
    /// A member's signal or control cannot be built; it is left out.
    MemberUnbuilt {
        /// Its name.
        member: String,
        /// Why.
        error: String,
    },
    /// A service-discovery source failed; the previous instances are kept.
    Discovery(SdFailure),
    /// A write still in flight at shutdown did not finish within the grace.
    WriteAbandoned,
    /// A robust-profile suggestion, logged once.
    Advice(String),
    /// The live capacity estimate after a window (every window; logged and
    /// moved in the metric only when its figure or state changes).
    Capacity(CapacityEstimate),
}

/// A service-discovery source that failed (the group keeps its previous
/// instances).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdFailure {
    /// A `file_sd` file is not a valid target list.
    FileParse {
        /// The file.
        file: std::path::PathBuf,
        /// Why.
        error: String,
    },
    /// A `file_sd` file cannot be read.
    FileRead {
        /// The file.
        file: std::path::PathBuf,
        /// Why.
        error: String,
    },
    /// A `file_sd` file was not read within the timeout.
    FileTimeout {
        /// The file.
        file: std::path::PathBuf,
    },
    /// The HTTP SD endpoint failed, or answered something invalid.
    Http {
        /// The endpoint.
        url: String,
        /// Why.
        error: String,
    },
}

/// What happened to a group member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberChange {
    /// It joined the group.
    Joined,
    /// It left the group (discovery no longer lists it).
    Left,
    /// Its signal or control changed: rebuilt.
    Rebuilt,
    /// Its first good read after being down.
    Back,
    /// Its signal failed `down_after_windows` in a row.
    Down,
}
