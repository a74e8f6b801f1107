//! The controller's own metrics, in Prometheus naming conventions.
//!
//! Why this shape: every series carries a `target` label (never
//! `instance`, which Prometheus owns), every other label is bounded
//! (`decision`, `mode`, `reason`, `error_type`, `result`: fixed vocabularies,
//! never raw messages), names are `throttle_<name>_<unit>` in base units,
//! and counters end in `_total`. `throttle_last_bad` is NaN while a target
//! has no congestion memory (the series stays present so dashboards and
//! alerts can rely on it).

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::fmt::Write as _;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// A target's name as a label value. Shared: a target's hundred or so
/// series point at one copy of its name instead of holding a `String`
/// each (4 kB per target, 40 MB at 10,000 targets).
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub struct Name(Arc<str>);

impl Name {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name(Arc::from(s))
    }
}

impl From<String> for Name {
    fn from(s: String) -> Self {
        Name(Arc::from(s))
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl EncodeLabelValue for Name {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(&self.0)
    }
}

type GaugeF = Gauge<f64, AtomicU64>;
type CounterF = Counter<f64, AtomicU64>;

/// `{target}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetLabel {
    /// The target's configured name.
    pub target: Name,
}

/// `{target, decision, mode, reason}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    /// The target's configured name.
    pub target: Name,
    /// `up`, `down` or `hold`.
    pub decision: &'static str,
    /// The movement's mode, or `none` on hold.
    pub mode: &'static str,
    /// The hold reason, or `none` on a movement.
    pub reason: &'static str,
}

/// `{target, error_type}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The target's configured name.
    pub target: Name,
    /// A bounded error class.
    pub error_type: &'static str,
}

/// `{target, result}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WriteLabels {
    /// The target's configured name.
    pub target: Name,
    /// `confirmed`, `failed` or `unconfirmed`.
    pub result: &'static str,
}

/// `{result}` of a push to the push endpoint.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PushLabels {
    /// `accepted`, `unauthorized`, `too_large`, `unsupported`,
    /// `bad_request`, `no_target` or `unusable`.
    pub result: &'static str,
}

/// `{result}` of a pull of the offer endpoint.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PullLabels {
    /// `served`, `not_modified`, `unauthorized`, `bad_request`,
    /// `unknown_target`, `need_member` or `no_offer`.
    pub result: &'static str,
}

/// `{target, member}`: one instance of a target group. (Not `instance`,
/// which Prometheus owns.)
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MemberLabels {
    /// The group's target name.
    pub target: Name,
    /// The member's name (its address by default).
    pub member: String,
}

/// `{result}` of a config reload.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadLabels {
    /// `applied` or `rejected`.
    pub result: &'static str,
}

/// `{version}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    /// The crate version.
    pub version: &'static str,
}

fn duration_histogram() -> Histogram {
    // 0.5 ms .. ~8 s
    Histogram::new(exponential_buckets(0.0005, 2.0, 15))
}

/// `{target, slo_quantile}` of the latency bound's series. Not `quantile`:
/// Prometheus reserves that label for summaries, and `promtool check
/// metrics` rejects it on a gauge.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QuantileLabels {
    /// The target's name.
    pub target: Name,
    /// The quantile bounded, as Prometheus writes it: `0.99`.
    pub slo_quantile: String,
}

/// `{target, state}` of `throttle_capacity`: `provisional` or `steady`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CapacityLabels {
    /// The target's name.
    pub target: Name,
    /// `provisional` or `steady`.
    pub state: &'static str,
}

/// The states of `throttle_capacity`.
pub const CAPACITY_STATES: [&str; 2] = ["provisional", "steady"];

/// `target` and a bounded `reason`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    /// The target's name.
    pub target: Name,
    /// A bounded reason label.
    pub reason: &'static str,
}

/// The series one target writes on every window, looked up once by
/// [`Metrics::series`] and then written directly.
///
/// Why it exists: a label lookup hashes the label set and compares the
/// target's name under the family's lock. Ten of them per window were a
/// tenth of the controller's CPU at 10,000 targets. A handle shares its
/// series with the family (an `Arc`), so what it records is what `/metrics`
/// shows. A target's handles are taken when its task starts, after any
/// removal of an older target of the same name.
#[derive(Debug, Clone)]
pub struct TargetSeries {
    /// `throttle_offer`.
    pub offer: GaugeF,
    /// `throttle_last_bad`.
    pub last_bad: GaugeF,
    /// `throttle_clean_streak`.
    pub clean_streak: GaugeF,
    /// `throttle_window_failure_ratio`.
    pub failure_ratio: GaugeF,
    /// `throttle_window_attempts`.
    pub window_attempts: GaugeF,
    /// `throttle_window_failures`.
    pub window_failures: GaugeF,
    /// `throttle_signal_up`.
    pub signal_up: GaugeF,
    /// `throttle_attempts_total`.
    pub attempts: CounterF,
    /// `throttle_attempt_failures_total`.
    pub failures: CounterF,
    /// `throttle_memory_clears_total`.
    pub memory_clears: Counter,
    /// `throttle_signal_read_duration_seconds`.
    pub read_duration: Histogram,
    /// `throttle_decisions_total`, one per entry of [`DECISIONS`], in order.
    decisions: Box<[Counter]>,
}

impl TargetSeries {
    /// The `throttle_decisions_total` series of one bounded label set
    /// (`None` for a set that is not in [`DECISIONS`]).
    pub fn decision(&self, decision: &str, mode: &str, reason: &str) -> Option<&Counter> {
        DECISIONS
            .iter()
            .position(|&(d, m, r)| d == decision && m == mode && r == reason)
            .and_then(|i| self.decisions.get(i))
    }
}

/// Every exported metric family.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// `throttle_offer`
    pub offer: Family<TargetLabel, GaugeF>,
    /// `throttle_ceiling`
    pub ceiling: Family<TargetLabel, GaugeF>,
    /// `throttle_floor`
    pub floor: Family<TargetLabel, GaugeF>,
    /// `throttle_failure_bound_ratio` (= high)
    pub failure_bound: Family<TargetLabel, GaugeF>,
    /// `throttle_last_bad` (NaN while there is no memory)
    pub last_bad: Family<TargetLabel, GaugeF>,
    /// `throttle_attempt_failure_ratio`
    pub failure_ratio: Family<TargetLabel, GaugeF>,
    /// `throttle_window_attempts`
    pub window_attempts: Family<TargetLabel, GaugeF>,
    /// `throttle_window_failures`
    pub window_failures: Family<TargetLabel, GaugeF>,
    /// `throttle_attempts_total`
    pub attempts: Family<TargetLabel, CounterF>,
    /// `throttle_attempt_failures_total`
    pub failures: Family<TargetLabel, CounterF>,
    /// `throttle_decisions_total`
    pub decisions: Family<DecisionLabels, Counter>,
    /// `throttle_memory_clears_total`
    pub memory_clears: Family<TargetLabel, Counter>,
    /// `throttle_clean_streak`
    pub clean_streak: Family<TargetLabel, GaugeF>,
    /// `throttle_signal_resets_total` (counter resets in the tool)
    pub counter_resets: Family<TargetLabel, Counter>,
    /// `throttle_signal_errors_total`
    pub signal_errors: Family<ErrorLabels, Counter>,
    /// `throttle_window_latency_seconds`
    pub window_latency: Family<QuantileLabels, GaugeF>,
    /// `throttle_capacity`: the live capacity estimate, one series in the
    /// estimate's state (none until the figure is known)
    pub capacity: Family<CapacityLabels, GaugeF>,
    /// `throttle_latency_bound_seconds`
    pub latency_bound: Family<QuantileLabels, GaugeF>,
    /// `throttle_latency_low_seconds`
    pub latency_low: Family<QuantileLabels, GaugeF>,
    /// `throttle_latency_errors_total`
    pub latency_errors: Family<ErrorLabels, Counter>,
    /// `throttle_signal_up` (1 when the last window had a valid signal)
    pub signal_up: Family<TargetLabel, GaugeF>,
    /// `throttle_signal_lost` (1 while the signal-loss policy is in force)
    pub signal_lost: Family<TargetLabel, GaugeF>,
    /// `throttle_tool_restarts_total`
    pub tool_restarts: Family<TargetLabel, Counter>,
    /// `throttle_control_writes_total`
    pub writes: Family<WriteLabels, Counter>,
    /// `throttle_control_errors_total`
    pub control_errors: Family<ErrorLabels, Counter>,
    /// `throttle_outside_changes_total`
    pub outside_changes: Family<TargetLabel, Counter>,
    /// `throttle_windows_discarded_total{reason}`: windows that straddled an
    /// offer change, never decided on
    pub windows_discarded: Family<ReasonLabels, Counter>,
    /// `throttle_early_reads_total`: reads taken within a watched window
    /// (early verdicts)
    pub early_reads: Family<TargetLabel, Counter>,
    /// `throttle_early_verdicts_total`: windows closed early on a certain
    /// breach
    pub early_verdicts: Family<TargetLabel, Counter>,
    /// `throttle_control_invalid_readings_total`: read-backs that cannot be
    /// an offer (not finite, negative), never adopted
    pub invalid_readings: Family<TargetLabel, Counter>,
    /// `throttle_outside_writer_conflict`: 1 while another writer keeps
    /// changing the knob after our confirmed writes (the target holds)
    pub outside_writer_conflict: Family<TargetLabel, GaugeF>,
    /// `process_resident_memory_bytes`, `process_open_fds`,
    /// `throttle_runtime_alive_tasks`: refreshed at each scrape.
    process: [Gauge<f64, AtomicU64>; 3],
    /// `throttle_signal_read_duration_seconds`
    pub read_duration: Family<TargetLabel, Histogram>,
    /// `throttle_control_write_duration_seconds`
    pub write_duration: Family<TargetLabel, Histogram>,
    /// `throttle_push_requests_total`
    pub push_requests: Family<PushLabels, Counter>,
    /// `throttle_pull_requests_total`
    pub pull_requests: Family<PullLabels, Counter>,
    /// `throttle_pulls_total`: offers served, by target
    pub pulls: Family<TargetLabel, Counter>,
    /// `throttle_pull_clients`: distinct pullers remembered, by target
    pub pull_clients: Family<TargetLabel, GaugeF>,
    /// `throttle_member_offer`: each group member's share of the offer
    pub member_offer: Family<MemberLabels, GaugeF>,
    /// `throttle_member_up`: 1 while a group member takes part in the split
    pub member_up: Family<MemberLabels, GaugeF>,
    /// `throttle_config_reloads_total`
    pub config_reloads: Family<ReloadLabels, Counter>,
    /// `throttle_decision_latency_seconds`: one series for all targets
    /// (the controller's own overhead, not a per-target signal).
    pub decision_latency: Histogram,
    /// Faults of the controller's own I/O (logging, state file, server).
    pub faults: FaultMetrics,
}

/// Counters of the controller's own I/O faults: each is present at 0 from
/// the first scrape, so a dashboard panel or an alert reads 0, not "no data".
#[derive(Debug, Clone, Default)]
pub struct FaultMetrics {
    /// `throttle_state_write_errors_total`
    pub state_write_errors: Counter,
    /// `throttle_server_connections_shed_total`
    pub connections_shed: Counter,
    /// `throttle_server_connections`
    pub connections: Gauge,
}

/// The bounded `error_type` of `throttle_signal_errors_total`: a read
/// ([`crate::signal::SignalError::error_type`]) or a window
/// ([`crate::window::WindowError::error_type`]) without a valid signal.
pub const SIGNAL_ERROR_TYPES: &[&str] = &[
    "timeout",
    "connect",
    "http_status",
    "too_large",
    "transport",
    "parse",
    "missing_series",
    "format",
    "refused",
    "stale",
    "non_finite",
    "negative",
    "inconsistent",
    "time_backwards",
];

/// The bounded `error_type` of `throttle_control_errors_total`
/// ([`crate::control::ControlError::error_type`]).
pub const CONTROL_ERROR_TYPES: &[&str] = &[
    "timeout",
    "connect",
    "http_4xx",
    "http_5xx",
    "transport",
    "read_back",
    "config",
    "refused",
    "above_max",
    "unsupported",
];

/// The bounded `(decision, mode, reason)` sets of `throttle_decisions_total`.
pub const DECISIONS: &[(&str, &str, &str)] = &[
    ("up", "climbing", "none"),
    ("up", "reclimbing", "none"),
    ("up", "probing", "none"),
    ("down", "backing-off", "none"),
    ("hold", "none", "no-traffic"),
    ("hold", "none", "dead-band"),
    ("hold", "none", "at-ceiling"),
    ("hold", "none", "at-floor"),
    ("hold", "none", "baseline"),
    ("hold", "none", "counter-reset"),
    ("hold", "none", "signal-error"),
    ("hold", "none", "settling"),
    ("hold", "none", "gathering"),
    ("hold", "none", "dwelling"),
    ("hold", "none", "latency-band"),
    ("hold", "none", "no-latency"),
];

/// `{result}` of `throttle_push_requests_total`.
pub const PUSH_RESULTS: &[&str] = &[
    "accepted",
    "unauthorized",
    "too_large",
    "unsupported",
    "bad_request",
    "no_target",
    "unusable",
    "timeout",
];

impl FaultMetrics {
    fn register(&self, registry: &mut Registry) {
        registry.register(
            "throttle_log_write_errors",
            "Log lines dropped because stderr or stdout could not be written (closed pipe, full disk)",
            crate::telemetry::logging::write_errors().clone(),
        );
        registry.register(
            "throttle_state_write_errors",
            "Failed writes of the state file ([server] state_file)",
            self.state_write_errors.clone(),
        );
        registry.register(
            "throttle_server_connections_shed",
            "Idle connections to the controller's server closed to make room at the connection cap",
            self.connections_shed.clone(),
        );
        registry.register(
            "throttle_server_connections",
            "Open connections to the controller's server",
            self.connections.clone(),
        );
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every family.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let m = Metrics {
            offer: Family::default(),
            ceiling: Family::default(),
            floor: Family::default(),
            failure_bound: Family::default(),
            last_bad: Family::default(),
            failure_ratio: Family::default(),
            window_attempts: Family::default(),
            window_failures: Family::default(),
            attempts: Family::default(),
            failures: Family::default(),
            decisions: Family::default(),
            memory_clears: Family::default(),
            clean_streak: Family::default(),
            counter_resets: Family::default(),
            signal_errors: Family::default(),
            window_latency: Family::default(),
            capacity: Family::default(),
            latency_bound: Family::default(),
            latency_low: Family::default(),
            latency_errors: Family::default(),
            signal_up: Family::default(),
            signal_lost: Family::default(),
            tool_restarts: Family::default(),
            writes: Family::default(),
            control_errors: Family::default(),
            outside_changes: Family::default(),
            windows_discarded: Family::default(),
            early_reads: Family::default(),
            early_verdicts: Family::default(),
            invalid_readings: Family::default(),
            outside_writer_conflict: Family::default(),
            process: Default::default(),
            read_duration: Family::new_with_constructor(duration_histogram),
            write_duration: Family::new_with_constructor(duration_histogram),
            push_requests: Family::default(),
            pull_requests: Family::default(),
            pulls: Family::default(),
            pull_clients: Family::default(),
            member_offer: Family::default(),
            member_up: Family::default(),
            config_reloads: Family::default(),
            // 1 µs .. ~1.2 s in steps of 25 %: fine enough for p50 and p99.
            decision_latency: Histogram::new(exponential_buckets(1e-6, 1.25, 64)),
            faults: FaultMetrics::default(),
            registry: Registry::default(),
        };
        m.faults.register(&mut registry);
        for &result in PUSH_RESULTS {
            m.push_requests
                .get_or_create(&PushLabels { result })
                .inc_by(0);
        }
        let build: Family<BuildLabels, GaugeF> = Family::default();
        build
            .get_or_create(&BuildLabels {
                version: env!("CARGO_PKG_VERSION"),
            })
            .set(1.0);
        registry.register("throttle_build_info", "Build information; always 1", build);
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory of the controller process in bytes",
            m.process[0].clone(),
        );
        registry.register(
            "process_open_fds",
            "Open file descriptors of the controller process",
            m.process[1].clone(),
        );
        registry.register(
            "throttle_runtime_alive_tasks",
            "Async tasks alive in the controller's runtime (flat over a soak: no leaked tasks)",
            m.process[2].clone(),
        );
        registry.register(
            "throttle_offer",
            "The committed offer (concurrency or rate) in effect at the tool",
            m.offer.clone(),
        );
        registry.register(
            "throttle_ceiling",
            "The authored offer: the ceiling of the governed knob",
            m.ceiling.clone(),
        );
        registry.register(
            "throttle_floor",
            "The offer never goes below this",
            m.floor.clone(),
        );
        registry.register(
            "throttle_failure_bound_ratio",
            "The declared failure bound (high): back off above it",
            m.failure_bound.clone(),
        );
        registry.register(
            "throttle_last_bad",
            "The offer at which congestion was last seen; NaN while there is no congestion memory",
            m.last_bad.clone(),
        );
        registry.register(
            "throttle_attempt_failure_ratio",
            "Failed attempts divided by resolved attempts over the last window",
            m.failure_ratio.clone(),
        );
        registry.register(
            "throttle_window_attempts",
            "Resolved attempts in the last window",
            m.window_attempts.clone(),
        );
        registry.register(
            "throttle_window_failures",
            "Failed attempts in the last window",
            m.window_failures.clone(),
        );
        registry.register(
            "throttle_attempts",
            "Resolved attempts observed, summed over windows",
            m.attempts.clone(),
        );
        registry.register(
            "throttle_attempt_failures",
            "Failed attempts observed, summed over windows",
            m.failures.clone(),
        );
        registry.register(
            "throttle_decisions",
            "Governor decisions by decision, mode and hold reason",
            m.decisions.clone(),
        );
        registry.register(
            "throttle_memory_clears",
            "Times the congestion memory (last_bad) cleared after clean windows",
            m.memory_clears.clone(),
        );
        registry.register(
            "throttle_clean_streak",
            "Consecutive clean windows at or above last_bad",
            m.clean_streak.clone(),
        );
        registry.register(
            "throttle_signal_resets",
            "Resets seen in the tool's counters (window discarded, baseline rebased)",
            m.counter_resets.clone(),
        );
        registry.register(
            "throttle_signal_errors",
            "Signal reads or windows that failed, by error type",
            m.signal_errors.clone(),
        );
        registry.register(
            "throttle_capacity",
            "The live capacity estimate, in the knob's unit: one series, labelled with its state (provisional, then steady); absent until a level within the bound is bracketed by a breach",
            m.capacity.clone(),
        );
        registry.register(
            "throttle_window_latency_seconds",
            "The last window's latency quantile (latency bound only; NaN when the window had none)",
            m.window_latency.clone(),
        );
        registry.register(
            "throttle_latency_bound_seconds",
            "The declared latency bound at its quantile: back off above it",
            m.latency_bound.clone(),
        );
        registry.register(
            "throttle_latency_low_seconds",
            "The latency bound's clean level: a window climbs only below it",
            m.latency_low.clone(),
        );
        registry.register(
            "throttle_latency_errors",
            "Latency reads that failed or rebased, by error type",
            m.latency_errors.clone(),
        );
        registry.register(
            "throttle_signal_up",
            "1 when the last window had a valid signal, else 0",
            m.signal_up.clone(),
        );
        registry.register(
            "throttle_signal_lost",
            "1 while the signal-loss policy is in force (signal_loss_windows invalid windows in a row)",
            m.signal_lost.clone(),
        );
        registry.register(
            "throttle_tool_restarts",
            "Tool restarts detected (counters reset and the knob moved); the committed offer is re-published",
            m.tool_restarts.clone(),
        );
        registry.register(
            "throttle_control_writes",
            "Offer writes by result: confirmed, failed or unconfirmed",
            m.writes.clone(),
        );
        registry.register(
            "throttle_control_errors",
            "Errors while writing or reading back the offer, by error type",
            m.control_errors.clone(),
        );
        registry.register(
            "throttle_outside_changes",
            "Times the committed offer was changed by another writer",
            m.outside_changes.clone(),
        );
        registry.register(
            "throttle_windows_discarded",
            "Windows not decided on because they straddled an offer change or fell within the signal's lag after one",
            m.windows_discarded.clone(),
        );
        registry.register(
            "throttle_early_reads",
            "Counter reads taken within a window watched for an early verdict (the window after an Up)",
            m.early_reads.clone(),
        );
        registry.register(
            "throttle_early_verdicts",
            "Windows closed before their end because their breach of the failure bound was statistically certain",
            m.early_verdicts.clone(),
        );
        registry.register(
            "throttle_control_invalid_readings",
            "Read-backs of the committed offer that cannot be an offer (not finite, or negative); never adopted",
            m.invalid_readings.clone(),
        );
        registry.register(
            "throttle_outside_writer_conflict",
            "1 while another writer keeps changing the knob right after our confirmed writes (the target holds)",
            m.outside_writer_conflict.clone(),
        );
        registry.register(
            "throttle_signal_read_duration_seconds",
            "Time to read the signal once",
            m.read_duration.clone(),
        );
        registry.register(
            "throttle_control_write_duration_seconds",
            "Time from write start to confirmation or failure",
            m.write_duration.clone(),
        );
        registry.register(
            "throttle_push_requests",
            "Pushes received on /metrics/job/..., by result",
            m.push_requests.clone(),
        );
        registry.register(
            "throttle_pull_requests",
            "Requests to /api/v1/targets/{name}/offer, by result",
            m.pull_requests.clone(),
        );
        registry.register(
            "throttle_pulls",
            "Offers served to pulling tools (kind = \"pull\"), by target",
            m.pulls.clone(),
        );
        registry.register(
            "throttle_pull_clients",
            "Distinct pullers remembered for a target (bounded by server.pull.max_clients)",
            m.pull_clients.clone(),
        );
        registry.register(
            "throttle_member_offer",
            "Each target-group member's share of the group's offer",
            m.member_offer.clone(),
        );
        registry.register(
            "throttle_member_up",
            "1 while a target-group member takes part in the split, 0 while it is down",
            m.member_up.clone(),
        );
        registry.register(
            "throttle_config_reloads",
            "Config reloads by result: applied or rejected",
            m.config_reloads.clone(),
        );
        registry.register(
            "throttle_decision_latency_seconds",
            "Time from a scrape parsed to the movement handed to the target's writer, all targets",
            m.decision_latency.clone(),
        );
        Metrics { registry, ..m }
    }

    /// The series a target writes on every window, looked up once.
    pub fn series(&self, target: &Name) -> TargetSeries {
        let l = TargetLabel {
            target: target.clone(),
        };
        let gauge = |f: &Family<TargetLabel, GaugeF>| f.get_or_create(&l).clone();
        TargetSeries {
            offer: gauge(&self.offer),
            last_bad: gauge(&self.last_bad),
            clean_streak: gauge(&self.clean_streak),
            failure_ratio: gauge(&self.failure_ratio),
            window_attempts: gauge(&self.window_attempts),
            window_failures: gauge(&self.window_failures),
            signal_up: gauge(&self.signal_up),
            attempts: self.attempts.get_or_create(&l).clone(),
            failures: self.failures.get_or_create(&l).clone(),
            memory_clears: self.memory_clears.get_or_create(&l).clone(),
            read_duration: self.read_duration.get_or_create(&l).clone(),
            decisions: DECISIONS
                .iter()
                .map(|&(decision, mode, reason)| {
                    self.decisions
                        .get_or_create(&DecisionLabels {
                            target: target.clone(),
                            decision,
                            mode,
                            reason,
                        })
                        .clone()
                })
                .collect(),
        }
    }

    /// Sets the static gauges of one target.
    pub fn init_target(&self, target: &Name, floor: f64, ceiling: f64, high: f64, start: f64) {
        // One copy of the name, shared by every series of the target (and
        // its exporter).
        let name = target.clone();
        let l = TargetLabel {
            target: name.clone(),
        };
        self.floor.get_or_create(&l).set(floor);
        self.ceiling.get_or_create(&l).set(ceiling);
        self.failure_bound.get_or_create(&l).set(high);
        self.offer.get_or_create(&l).set(start);
        self.last_bad.get_or_create(&l).set(f64::NAN);
        // No window yet: nothing observed, and no fraction to speak of.
        self.failure_ratio.get_or_create(&l).set(f64::NAN);
        self.window_attempts.get_or_create(&l).set(0.0);
        self.window_failures.get_or_create(&l).set(0.0);
        self.clean_streak.get_or_create(&l).set(0.0);
        self.signal_up.get_or_create(&l).set(0.0);
        self.signal_lost.get_or_create(&l).set(0.0);
        self.tool_restarts.get_or_create(&l).inc_by(0);
        // Counters start at 0 so that rate() and alerts see them from the start.
        self.attempts.get_or_create(&l).inc_by(0.0);
        self.failures.get_or_create(&l).inc_by(0.0);
        self.memory_clears.get_or_create(&l).inc_by(0);
        self.counter_resets.get_or_create(&l).inc_by(0);
        self.outside_changes.get_or_create(&l).inc_by(0);
        self.invalid_readings.get_or_create(&l).inc_by(0);
        self.early_reads.get_or_create(&l).inc_by(0);
        self.early_verdicts.get_or_create(&l).inc_by(0);
        self.outside_writer_conflict.get_or_create(&l).set(0.0);
        self.windows_discarded
            .get_or_create(&ReasonLabels {
                target: name.clone(),
                reason: "offer_change",
            })
            .inc_by(0);
        for result in ["confirmed", "failed", "unconfirmed"] {
            self.writes
                .get_or_create(&WriteLabels {
                    target: name.clone(),
                    result,
                })
                .inc_by(0);
        }
        self.init_bounded_series(&name);
    }

    /// Every bounded label set of a target's counters and histograms at 0,
    /// so that every dashboard query and alert has data from the first
    /// scrape ("0 errors", not "no data").
    fn init_bounded_series(&self, name: &Name) {
        let l = TargetLabel {
            target: name.clone(),
        };
        let errors = |error_type| ErrorLabels {
            target: name.clone(),
            error_type,
        };
        for &t in SIGNAL_ERROR_TYPES {
            self.signal_errors.get_or_create(&errors(t)).inc_by(0);
        }
        for &t in CONTROL_ERROR_TYPES {
            self.control_errors.get_or_create(&errors(t)).inc_by(0);
        }
        for &(decision, mode, reason) in DECISIONS {
            self.decisions
                .get_or_create(&DecisionLabels {
                    target: name.clone(),
                    decision,
                    mode,
                    reason,
                })
                .inc_by(0);
        }
        drop(self.read_duration.get_or_create(&l));
        drop(self.write_duration.get_or_create(&l));
    }

    /// Removes the series of [`Self::init_bounded_series`].
    fn remove_bounded_series(&self, target: &str) {
        for state in CAPACITY_STATES {
            self.capacity.remove(&CapacityLabels {
                target: target.into(),
                state,
            });
        }
        let errors = |error_type| ErrorLabels {
            target: target.into(),
            error_type,
        };
        for &t in SIGNAL_ERROR_TYPES {
            self.signal_errors.remove(&errors(t));
        }
        for &t in CONTROL_ERROR_TYPES {
            self.control_errors.remove(&errors(t));
        }
        for &(decision, mode, reason) in DECISIONS {
            self.decisions.remove(&DecisionLabels {
                target: target.into(),
                decision,
                mode,
                reason,
            });
        }
    }

    /// Removes every series of one target (when it is removed from the config).
    pub fn remove_target(&self, target: &str) {
        let l = label(target);
        for f in [
            &self.offer,
            &self.ceiling,
            &self.floor,
            &self.failure_bound,
            &self.last_bad,
            &self.failure_ratio,
            &self.window_attempts,
            &self.window_failures,
            &self.clean_streak,
            &self.signal_up,
            &self.signal_lost,
        ] {
            f.remove(&l);
        }
        self.attempts.remove(&l);
        self.failures.remove(&l);
        self.memory_clears.remove(&l);
        self.counter_resets.remove(&l);
        self.outside_changes.remove(&l);
        self.invalid_readings.remove(&l);
        self.early_reads.remove(&l);
        self.early_verdicts.remove(&l);
        self.outside_writer_conflict.remove(&l);
        self.windows_discarded.remove(&ReasonLabels {
            target: target.into(),
            reason: "offer_change",
        });
        self.tool_restarts.remove(&l);
        self.read_duration.remove(&l);
        self.write_duration.remove(&l);
        self.remove_bounded_series(target);
        self.pulls.remove(&l);
        self.pull_clients.remove(&l);
    }

    /// Refreshes the process gauges (Linux `/proc/self`; tokio's task count).
    pub fn refresh_process(&self) {
        if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
            let rss_kb = status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok());
            if let Some(kb) = rss_kb {
                self.process[0].set(kb * 1024.0);
            }
        }
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            self.process[1].set(dir.count() as f64);
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            self.process[2].set(handle.metrics().num_alive_tasks() as f64);
        }
    }

    /// The exposition as OpenMetrics 1.0 text, ending in `# EOF`.
    pub fn encode_openmetrics(&self) -> String {
        self.refresh_process();
        let mut out = String::with_capacity(16 * 1024);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }

    /// The exposition as Prometheus text 0.0.4, which every scraper and
    /// `promtool check metrics` read.
    pub fn encode(&self) -> String {
        openmetrics_to_prometheus(&self.encode_openmetrics())
    }
}

/// Rewrites OpenMetrics text as Prometheus text 0.0.4.
///
/// The two differ only in metadata here: OpenMetrics names a counter family
/// without `_total` (`# TYPE x counter`, samples `x_total`), has `# UNIT`
/// and ends in `# EOF`; 0.0.4 names the family after its samples.
pub fn openmetrics_to_prometheus(text: &str) -> String {
    let counters: std::collections::HashSet<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        let meta = line
            .strip_prefix("# HELP ")
            .map(|r| ("# HELP ", r))
            .or_else(|| line.strip_prefix("# TYPE ").map(|r| ("# TYPE ", r)));
        if let Some((prefix, rest)) = meta {
            let name = rest.split(' ').next().unwrap_or("");
            if counters.contains(name) {
                out.push_str(prefix);
                out.push_str(name);
                out.push_str("_total");
                out.push_str(&rest[name.len()..]);
                out.push('\n');
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The `{target}` label set.
pub fn label(target: &str) -> TargetLabel {
    TargetLabel {
        target: target.into(),
    }
}

#[cfg(test)]
mod bounded_tests {
    use super::*;
    use crate::control::ControlError;
    use crate::governor::{HoldReason, Mode};
    use crate::signal::SignalError;
    use std::time::Duration;

    #[test]
    fn the_vocabularies_cover_every_variant() {
        let d = Duration::ZERO;
        for e in [
            SignalError::Timeout(d),
            SignalError::Connect(String::new()),
            SignalError::Status(500),
            SignalError::TooLarge(1),
            SignalError::Transport(String::new()),
            SignalError::MissingSeries(String::new()),
            SignalError::Format(String::new()),
            SignalError::Refused(String::new()),
            SignalError::Stale(String::new()),
        ] {
            assert!(SIGNAL_ERROR_TYPES.contains(&e.error_type()), "{e:?}");
        }
        for e in [
            ControlError::Timeout(d),
            ControlError::Connect(String::new()),
            ControlError::Transport(String::new()),
            ControlError::Config(String::new()),
            ControlError::Unsupported(String::new()),
        ] {
            assert!(CONTROL_ERROR_TYPES.contains(&e.error_type()), "{e:?}");
        }
        for m in [
            Mode::Climbing,
            Mode::Reclimbing,
            Mode::Probing,
            Mode::BackingOff,
        ] {
            assert!(
                DECISIONS.iter().any(|(_, mode, _)| *mode == m.as_str()),
                "{m:?}"
            );
        }
        for r in [
            HoldReason::NoTraffic,
            HoldReason::DeadBand,
            HoldReason::AtCeiling,
            HoldReason::AtFloor,
            HoldReason::Baseline,
            HoldReason::CounterReset,
            HoldReason::SignalError,
            HoldReason::Settling,
            HoldReason::Gathering,
            HoldReason::Dwelling,
            HoldReason::LatencyBand,
            HoldReason::NoLatency,
        ] {
            assert!(
                DECISIONS.iter().any(|(_, _, reason)| *reason == r.as_str()),
                "{r:?}"
            );
        }
    }
}
