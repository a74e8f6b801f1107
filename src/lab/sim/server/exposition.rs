//! The simulated tool's `/metrics`: its snapshots as Prometheus text.
//!
//! Why it exists: the governor reads a tool's counters from exposition
//! text, so the simulation writes exactly the families of [`super`]'s
//! metrics table, one or many tools to a page.
//!
//! What it may touch: nothing; it renders snapshots into a string.

use std::fmt::Write as _;

use super::state::Snapshot;

/// The Prometheus text format's content type.
pub(super) const PROMETHEUS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Render snapshots as Prometheus text 0.0.4. A `Some(i)` index adds the
/// label `tool="i"`; all series of one metric are grouped under one header.
pub(super) fn render(snapshots: &[(Option<usize>, Snapshot)]) -> String {
    let mut out = String::with_capacity(256 + snapshots.len() * 400);
    let labels = |tool: Option<usize>, extra: &str| -> String {
        match (tool, extra.is_empty()) {
            (None, true) => String::new(),
            (None, false) => format!("{{{extra}}}"),
            (Some(i), true) => format!("{{tool=\"{i}\"}}"),
            (Some(i), false) => format!("{{tool=\"{i}\",{extra}}}"),
        }
    };
    let mut family =
        |name: &str,
         kind: &str,
         help: &str,
         series: &dyn Fn(&Snapshot) -> Vec<(&'static str, String)>| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (tool, snapshot) in snapshots {
                for (extra, value) in series(snapshot) {
                    let _ = writeln!(out, "{name}{} {value}", labels(*tool, extra));
                }
            }
        };
    family(
        "sim_requests_total",
        "counter",
        "Resolved attempts by outcome.",
        &|s| {
            vec![
                (r#"outcome="success""#, s.successes.to_string()),
                (r#"outcome="failure""#, s.failures.to_string()),
            ]
        },
    );
    family(
        "sim_attempts_total",
        "counter",
        "All resolved attempts (successes plus failures).",
        &|s| vec![("", s.successes.saturating_add(s.failures).to_string())],
    );
    family(
        "sim_ticks_total",
        "counter",
        "Model ticks simulated.",
        &|s| vec![("", s.ticks.to_string())],
    );
    family(
        "sim_workers",
        "gauge",
        "Current concurrency (workers).",
        &|s| vec![("", s.workers.to_string())],
    );
    family(
        "sim_rate_limit",
        "gauge",
        "Rate cap in attempts per second (+Inf when unbounded).",
        &|s| vec![("", s.rate.map_or_else(|| "+Inf".to_string(), float))],
    );
    family(
        "sim_capacity",
        "gauge",
        "The simulated target's true capacity in workers.",
        &|s| vec![("", float(s.capacity))],
    );
    render_latency(&mut out, snapshots);
    out
}

/// `sim_request_duration_seconds`, for the tools that have a latency.
fn render_latency(out: &mut String, snapshots: &[(Option<usize>, Snapshot)]) {
    let name = "sim_request_duration_seconds";
    let mut header = false;
    for (tool, s) in snapshots {
        let Some(h) = &s.latency else { continue };
        if !header {
            let _ = writeln!(out, "# HELP {name} Attempt latency (queueing model).");
            let _ = writeln!(out, "# TYPE {name} histogram");
            header = true;
        }
        let tool_label = tool.map_or_else(String::new, |i| format!("tool=\"{i}\","));
        let plain = tool.map_or_else(String::new, |i| format!("{{tool=\"{i}\"}}"));
        for &(le, count) in &h.buckets {
            // Rounded to whole attempts, never above the total.
            let c = (count.round() as u64).min(h.count);
            let _ = writeln!(out, "{name}_bucket{{{tool_label}le=\"{}\"}} {c}", float(le));
        }
        let _ = writeln!(out, "{name}_bucket{{{tool_label}le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(out, "{name}_sum{plain} {}", float(h.sum));
        let _ = writeln!(out, "{name}_count{plain} {}", h.count);
    }
}

/// A float in exposition syntax.
fn float(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else {
        v.to_string()
    }
}
