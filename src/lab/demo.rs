//! The embedded demo: a simulated load tool, the real controller, a report.
//!
//! Why it exists: a new user should see the whole system work in one
//! command, with no load tool, no Prometheus and no Docker. The demo starts
//! a [`crate::lab::sim`] server on an ephemeral loopback port, with the load
//! tool's authored concurrency far above the target's capacity (the mistake
//! the governor exists to catch), points the real supervisor at it over real
//! HTTP, prints the movement log live, and ends with the capacity report.
//!
//! What it may touch: loopback sockets, stdout/stderr, and the report paths
//! it is given.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use thiserror::Error;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::lab::sim::{self, ModelConfig, ModelKind, SimConfig};
use crate::report::{Report, SteadyRule};
use crate::runtime::supervisor::{self, Ended, RunOptions, StopWhen};

/// Arguments of `throttle-governor demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// The simulated target (formulas in the `sim::model` docs).
    #[arg(long, value_enum, default_value = "cliff")]
    pub model: ModelKind,
    /// The target's true capacity, in workers.
    #[arg(long, default_value_t = 120.0)]
    pub capacity: f64,
    /// The governor's window.
    #[arg(long, default_value = "300ms", value_parser = humantime::parse_duration)]
    pub window: Duration,
    /// The longest the demo runs; it stops earlier once steady.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Keep running for the whole duration even once steady.
    #[arg(long)]
    pub no_stop_when_steady: bool,
    /// Write the capacity report as JSON here.
    #[arg(long, value_name = "PATH")]
    pub report_json: Option<PathBuf>,
    /// Write the capacity report as one self-contained HTML file here.
    #[arg(long, value_name = "PATH")]
    pub report_html: Option<PathBuf>,
    /// Address of the controller's own /metrics server (default: ephemeral).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
}

/// Why the demo failed.
#[derive(Debug, Error)]
pub enum DemoError {
    /// The simulator could not start.
    #[error("simulator: {0}")]
    Sim(#[from] sim::SimError),
    /// The generated config was rejected (a bug, reported plainly).
    #[error("demo config: {0}")]
    Config(#[from] crate::config::ConfigError),
    /// The controller could not start.
    #[error("controller: {0}")]
    Supervisor(#[from] supervisor::SupervisorError),
    /// A report could not be written.
    #[error(transparent)]
    Report(#[from] crate::report::ReportError),
    /// Bad flag values.
    #[error("{0}")]
    Args(String),
}

/// The authored concurrency the simulated load test starts with: far above
/// capacity, as an unthrottled load test would be.
fn authored(capacity: f64) -> f64 {
    (capacity * 4.0).ceil().max(8.0)
}

/// The config the demo governs the simulator with.
pub fn demo_config(
    sim_base: &str,
    window: Duration,
    capacity: f64,
    listen: std::net::SocketAddr,
) -> String {
    format!(
        r#"[server]
listen = "{listen}"

[[targets]]
name = "demo"
knob = "concurrency"
ceiling = {ceiling}
floor = 1
high = 0.05
window = "{window}ms"

[targets.signal]
kind = "prometheus"
url = "{sim_base}/metrics"
attempts = 'sim_attempts_total'
failures = 'sim_requests_total{{outcome="failure"}}'
offer = 'sim_workers'
timeout = "1s"

[targets.control]
kind = "http"
url = "{sim_base}/admin/workers"
method = "PUT"
body = '{{"workers": {{{{value}}}}}}'
timeout = "1s"
confirm_interval = "20ms"
[targets.control.read_back]
url = "{sim_base}/admin/workers"
json_pointer = "/workers"
"#,
        ceiling = authored(capacity),
        window = window.as_millis(),
    )
}

/// Runs the demo to its end and returns the report.
pub async fn run(args: &DemoArgs, cancel: CancellationToken) -> Result<Report, DemoError> {
    if !(args.capacity.is_finite() && args.capacity >= 1.0) {
        return Err(DemoError::Args(format!(
            "--capacity must be at least 1 worker (got {})",
            args.capacity
        )));
    }
    if args.window < Duration::from_millis(50) {
        return Err(DemoError::Args("--window must be at least 50ms".into()));
    }
    // Enough model ticks per window for a stable fraction.
    let tick = (args.window / 12).max(Duration::from_millis(5));
    let mut model = ModelConfig::new(args.model, args.capacity);
    model.run_ticks = (args.duration.as_secs_f64() / tick.as_secs_f64())
        .ceil()
        .max(3.0) as u64;
    let mut sim_cfg = SimConfig::new(model);
    sim_cfg.tick = tick;
    sim_cfg.initial_workers = authored(args.capacity) as u64;
    let sim = sim::spawn(sim_cfg).await?;
    let base = format!("http://{}", sim.addr());

    let config = Config::parse(&demo_config(&base, args.window, args.capacity, args.listen))?;
    let tty = std::io::stderr().is_terminal();
    crate::telemetry::logging::stderr_text(&format!(
        "Demo: a simulated load tool authored at {} workers against a `{}` target whose true capacity is {} workers.\n",
        authored(args.capacity),
        args.model,
        args.capacity
    ));
    let running = supervisor::start(&config, RunOptions::default(), None).await?;
    crate::telemetry::logging::stderr_text(&format!(
        "Simulator on {base}; the controller serves http://{}/metrics. Window {}, at most {}.\n\n",
        running.addr,
        humantime::format_duration(args.window),
        humantime::format_duration(args.duration)
    ));

    let rule = SteadyRule::default();
    let stop = StopWhen {
        steady: (!args.no_stop_when_steady).then_some(rule),
        after: Some(args.duration),
    };
    let view = cancel.child_token();
    let progress =
        tty.then(|| crate::telemetry::console::spawn(running.telemetry.clone(), view.clone()));
    let ended = running.wait(stop, &cancel).await;
    if let Some(handle) = progress {
        view.cancel();
        let _ = handle.await;
    }
    let report = running.report(&rule);
    running.shutdown(Duration::from_secs(3)).await;
    let _ = sim.shutdown().await;
    crate::telemetry::logging::stderr_text(&format!(
        "\nDemo ended: {}.\n",
        match ended {
            Ended::Steady => "every target is steady",
            Ended::Deadline => "the time limit passed",
            Ended::Signal => "interrupted",
        }
    ));
    report.write_files(args.report_json.as_ref(), args.report_html.as_ref())?;
    Ok(report)
}
