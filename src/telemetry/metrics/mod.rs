//! The controller's own metrics, in Prometheus naming conventions.
//!
//! Why this shape: every series carries a `target` label (never
//! `instance`, which Prometheus owns), every other label is bounded
//! (`decision`, `mode`, `reason`, `error_type`, `result`: fixed vocabularies,
//! never raw messages), names are `throttle_<name>_<unit>` in base units,
//! and counters end in `_total`. `throttle_last_bad` is NaN while a target
//! has no congestion memory (the series stays present so dashboards and
//! alerts can rely on it).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

mod families;
mod labels;

pub use labels::*;

type GaugeF = Gauge<f64, AtomicU64>;
type CounterF = Counter<f64, AtomicU64>;

fn duration_histogram() -> Histogram {
    // 0.5 ms .. ~8 s
    Histogram::new(exponential_buckets(0.0005, 2.0, 15))
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
    /// `throttle_probe_late_failures_total`: failures a failed probe
    /// caused after its verdict, until the Down reached the counters
    /// (charged to its cost)
    pub probe_late_failures: Family<TargetLabel, CounterF>,
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
        self.probe_late_failures.get_or_create(&l).inc_by(0.0);
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
        self.probe_late_failures.remove(&l);
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
mod tests;
