//! Registering the metric families: which exist, their names and help
//! texts, and the order `/metrics` lists them in.
//!
//! Why it exists: `Metrics::new` is the catalogue of every series the
//! controller exports; one function per concern keeps the catalogue
//! readable without changing the order (the order is the exposition's).

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use super::*;

impl Metrics {
    /// Registers every family, in the order `/metrics` lists them (a group
    /// of families per concern, below).
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
            probe_late_failures: Family::default(),
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
        m.register_process(&mut registry);
        m.register_offer(&mut registry);
        m.register_windows(&mut registry);
        m.register_capacity_and_latency(&mut registry);
        m.register_signal_health(&mut registry);
        m.register_control(&mut registry);
        m.register_durations(&mut registry);
        m.register_http(&mut registry);
        m.register_groups(&mut registry);
        m.register_runtime(&mut registry);
        Metrics { registry, ..m }
    }

    /// The build and the process: `throttle_build_info`, memory, file
    /// descriptors, live tasks.
    fn register_process(&self, registry: &mut Registry) {
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
            self.process[0].clone(),
        );
        registry.register(
            "process_open_fds",
            "Open file descriptors of the controller process",
            self.process[1].clone(),
        );
        registry.register(
            "throttle_runtime_alive_tasks",
            "Async tasks alive in the controller's runtime (flat over a soak: no leaked tasks)",
            self.process[2].clone(),
        );
    }

    /// The offer and its bounds.
    fn register_offer(&self, registry: &mut Registry) {
        registry.register(
            "throttle_offer",
            "The committed offer (concurrency or rate) in effect at the tool",
            self.offer.clone(),
        );
        registry.register(
            "throttle_ceiling",
            "The authored offer: the ceiling of the governed knob",
            self.ceiling.clone(),
        );
        registry.register(
            "throttle_floor",
            "The offer never goes below this",
            self.floor.clone(),
        );
        registry.register(
            "throttle_failure_bound_ratio",
            "The declared failure bound (high): back off above it",
            self.failure_bound.clone(),
        );
        registry.register(
            "throttle_last_bad",
            "The offer at which congestion was last seen; NaN while there is no congestion memory",
            self.last_bad.clone(),
        );
    }

    /// Windows and decisions: each window's counts and fraction, their sums,
    /// the decisions, the congestion memory, counter resets and signal errors.
    fn register_windows(&self, registry: &mut Registry) {
        registry.register(
            "throttle_attempt_failure_ratio",
            "Failed attempts divided by resolved attempts over the last window",
            self.failure_ratio.clone(),
        );
        registry.register(
            "throttle_window_attempts",
            "Resolved attempts in the last window",
            self.window_attempts.clone(),
        );
        registry.register(
            "throttle_window_failures",
            "Failed attempts in the last window",
            self.window_failures.clone(),
        );
        registry.register(
            "throttle_attempts",
            "Resolved attempts observed, summed over windows",
            self.attempts.clone(),
        );
        registry.register(
            "throttle_attempt_failures",
            "Failed attempts observed, summed over windows",
            self.failures.clone(),
        );
        registry.register(
            "throttle_decisions",
            "Governor decisions by decision, mode and hold reason",
            self.decisions.clone(),
        );
        registry.register(
            "throttle_memory_clears",
            "Times the congestion memory (last_bad) cleared after clean windows",
            self.memory_clears.clone(),
        );
        registry.register(
            "throttle_clean_streak",
            "Consecutive clean windows at or above last_bad",
            self.clean_streak.clone(),
        );
        registry.register(
            "throttle_signal_resets",
            "Resets seen in the tool's counters (window discarded, baseline rebased)",
            self.counter_resets.clone(),
        );
        registry.register(
            "throttle_signal_errors",
            "Signal reads or windows that failed, by error type",
            self.signal_errors.clone(),
        );
    }

    /// The live capacity estimate and the latency bound.
    fn register_capacity_and_latency(&self, registry: &mut Registry) {
        registry.register(
        "throttle_capacity",
        "The live capacity estimate, in the knob's unit: one series, labelled with its state (provisional, then steady, or lower-bound for a steady figure that nothing just above was shown to exceed the bound); absent until a level within the bound is bracketed by a breach",
        self.capacity.clone(),
    );
        registry.register(
            "throttle_window_latency_seconds",
            "The last window's latency quantile (latency bound only; NaN when the window had none)",
            self.window_latency.clone(),
        );
        registry.register(
            "throttle_latency_bound_seconds",
            "The declared latency bound at its quantile: back off above it",
            self.latency_bound.clone(),
        );
        registry.register(
            "throttle_latency_low_seconds",
            "The latency bound's clean level: a window climbs only below it",
            self.latency_low.clone(),
        );
        registry.register(
            "throttle_latency_errors",
            "Latency reads that failed or rebased, by error type",
            self.latency_errors.clone(),
        );
    }

    /// The signal's health: up, lost, tool restarts.
    fn register_signal_health(&self, registry: &mut Registry) {
        registry.register(
            "throttle_signal_up",
            "1 when the last window had a valid signal, else 0",
            self.signal_up.clone(),
        );
        registry.register(
        "throttle_signal_lost",
        "1 while the signal-loss policy is in force (signal_loss_windows invalid windows in a row)",
        self.signal_lost.clone(),
    );
        registry.register(
        "throttle_tool_restarts",
        "Tool restarts detected (counters reset and the knob moved); the committed offer is re-published",
        self.tool_restarts.clone(),
    );
    }

    /// The control side and window attribution: writes, control errors, outside
    /// changes and conflicts, discarded windows, early verdicts, invalid read-
    /// backs.
    fn register_control(&self, registry: &mut Registry) {
        registry.register(
            "throttle_control_writes",
            "Offer writes by result: confirmed, failed or unconfirmed",
            self.writes.clone(),
        );
        registry.register(
            "throttle_control_errors",
            "Errors while writing or reading back the offer, by error type",
            self.control_errors.clone(),
        );
        registry.register(
            "throttle_outside_changes",
            "Times the committed offer was changed by another writer",
            self.outside_changes.clone(),
        );
        registry.register(
        "throttle_windows_discarded",
        "Windows not decided on because they straddled an offer change or fell within the signal's lag after one",
        self.windows_discarded.clone(),
    );
        registry.register(
        "throttle_probe_late_failures",
        "Failures a failed probe caused after its verdict, until the Down reached the counters: added to what the next probe waits for",
        self.probe_late_failures.clone(),
    );
        registry.register(
        "throttle_early_reads",
        "Counter reads taken within a window watched for an early verdict (the window after an Up)",
        self.early_reads.clone(),
    );
        registry.register(
        "throttle_early_verdicts",
        "Windows closed before their end because their breach of the failure bound was statistically certain",
        self.early_verdicts.clone(),
    );
        registry.register(
        "throttle_control_invalid_readings",
        "Read-backs of the committed offer that cannot be an offer (not finite, or negative); never adopted",
        self.invalid_readings.clone(),
    );
        registry.register(
        "throttle_outside_writer_conflict",
        "1 while another writer keeps changing the knob right after our confirmed writes (the target holds)",
        self.outside_writer_conflict.clone(),
    );
    }

    /// How long reads and writes take.
    fn register_durations(&self, registry: &mut Registry) {
        registry.register(
            "throttle_signal_read_duration_seconds",
            "Time to read the signal once",
            self.read_duration.clone(),
        );
        registry.register(
            "throttle_control_write_duration_seconds",
            "Time from write start to confirmation or failure",
            self.write_duration.clone(),
        );
    }

    /// The HTTP surface's routes: pushes and pulls.
    fn register_http(&self, registry: &mut Registry) {
        registry.register(
            "throttle_push_requests",
            "Pushes received on /metrics/job/..., by result",
            self.push_requests.clone(),
        );
        registry.register(
            "throttle_pull_requests",
            "Requests to /api/v1/targets/{name}/offer, by result",
            self.pull_requests.clone(),
        );
        registry.register(
            "throttle_pulls",
            "Offers served to pulling tools (kind = \"pull\"), by target",
            self.pulls.clone(),
        );
        registry.register(
            "throttle_pull_clients",
            "Distinct pullers remembered for a target (bounded by server.pull.max_clients)",
            self.pull_clients.clone(),
        );
    }

    /// Target groups: each member's share and whether it is up.
    fn register_groups(&self, registry: &mut Registry) {
        registry.register(
            "throttle_member_offer",
            "Each target-group member's share of the group's offer",
            self.member_offer.clone(),
        );
        registry.register(
            "throttle_member_up",
            "1 while a target-group member takes part in the split, 0 while it is down",
            self.member_up.clone(),
        );
    }

    /// The controller itself: config reloads and decision latency.
    fn register_runtime(&self, registry: &mut Registry) {
        registry.register(
            "throttle_config_reloads",
            "Config reloads by result: applied or rejected",
            self.config_reloads.clone(),
        );
        registry.register(
            "throttle_decision_latency_seconds",
            "Time from a scrape parsed to the movement handed to the target's writer, all targets",
            self.decision_latency.clone(),
        );
    }
}
