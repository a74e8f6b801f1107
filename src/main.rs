//! The `throttle-governor` binary: CLI wiring and exit codes only.
#![forbid(unsafe_code)]

use std::io::{self, Write};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use tokio_util::sync::CancellationToken;

use throttle_governor::cli::{CheckArgs, Cli, Command, FlagsError, RunArgs, EXIT_USAGE};
use throttle_governor::config::{Config, ConfigError};
use throttle_governor::lab::bench::{self, BenchArgs, BenchError, BenchFormat};
use throttle_governor::lab::demo::{self, DemoArgs};
use throttle_governor::lab::replay::{self, ReplayArgs, ReplayError};
use throttle_governor::report::SteadyRule;
use throttle_governor::runtime::supervisor::{self, RunOptions, StopWhen};
use throttle_governor::telemetry::logging;

fn main() -> ExitCode {
    // clap itself exits with status 2 on usage errors.
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Replay(args) => run_replay(&args),
        Command::Check(args) => run_check(&args),
        Command::Bench(args) => run_bench(&args),
        Command::Run(args) if args.target.print_config => print_config(&args),
        Command::Run(args) => {
            logging::init(cli.log_format);
            let threads = args.worker_threads;
            runtime_with(threads).and_then(|rt| rt.block_on(run(args)))
        }
        Command::Demo(args) => {
            logging::init(cli.log_format);
            runtime().and_then(|rt| rt.block_on(run_demo(args)))
        }
        Command::Healthcheck(args) => runtime().and_then(|rt| {
            rt.block_on(throttle_governor::runtime::healthcheck::probe(&args))
                .context("healthcheck")
        }),
        Command::Sim(args) => {
            logging::init(cli.log_format);
            runtime().and_then(|rt| {
                rt.block_on(async {
                    throttle_governor::lab::sim::run(args, supervisor::shutdown_signal())
                        .await
                        .context("sim")
                })
            })
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            logging::stderr_text(&format!("error: {}\n", chain_once(&err)));
            ExitCode::from(exit_code(&err))
        }
    }
}

/// The default runtime: one worker thread per core.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    runtime_with(0)
}

/// A runtime with `threads` worker threads (0: one per core). One thread
/// runs on the current-thread scheduler: no work stealing, no wake-ups
/// across threads, and no task's memory freed by another thread than the
/// one that allocated it (glibc then takes the other arena's lock), which
/// at 10,000 targets cost the controller a fifth of its CPU.
fn runtime_with(threads: usize) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = match threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    if threads > 1 {
        builder.worker_threads(threads);
    }
    builder
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// Invalid parameters, configs and input are usage errors (2); anything
/// else is a runtime failure (1).
fn exit_code(err: &anyhow::Error) -> u8 {
    if err.chain().any(|cause| {
        cause.is::<ReplayError>()
            || cause.is::<ConfigError>()
            || cause.is::<BenchError>()
            || cause.is::<FlagsError>()
    }) {
        EXIT_USAGE
    } else {
        1
    }
}

fn run_replay(args: &ReplayArgs) -> anyhow::Result<()> {
    // Rows stream: each is flushed as soon as its line is decided.
    let mut out = io::stdout().lock();
    let mut warnings = io::stderr().lock();
    match replay::stream_input(args, &mut out, &mut warnings) {
        // A reader that went away (`| head`) is not a failure.
        Err(ReplayError::Write(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

fn run_bench(args: &BenchArgs) -> anyhow::Result<()> {
    let plan = args.plan()?;
    if let Some(seed) = args.trace {
        return print(&bench::render_trace(&plan, seed));
    }
    let report = bench::run(&plan);
    let text = match args.format {
        BenchFormat::Table => bench::render_table(&report),
        BenchFormat::Json => bench::render_json(&report),
    };
    print(&text)
}

fn run_check(args: &CheckArgs) -> anyhow::Result<()> {
    let config = Config::load(&args.config)?;
    for warning in config.warnings() {
        logging::stderr_text(&format!("warning: {warning}\n"));
    }
    let mut text = format!(
        "{}: valid, {} target{}\n",
        args.config.display(),
        config.targets.len(),
        if config.targets.len() == 1 { "" } else { "s" }
    );
    for t in &config.targets {
        text.push_str(&format!(
            "  {}: {} {}, window {}, profile {}, early verdicts {}, signal lag {}\n",
            t.name,
            t.signal.kind(),
            t.knob,
            humantime::format_duration(t.window),
            t.profile_description(),
            if t.early_verdicts_in_effect() {
                "on"
            } else {
                "off"
            },
            t.lag_description()
        ));
        if let Some(l) = &t.latency {
            text.push_str(&format!("    latency bound: {}\n", l.describe(t)));
        }
    }
    print(&text)
}

/// The config `run` governs: the file, or the text the flags stand for,
/// read and checked the same way.
fn run_config(args: &RunArgs) -> anyhow::Result<Config> {
    match &args.config {
        Some(path) => Ok(Config::load(path)?),
        None => Ok(Config::parse(&args.target.to_toml()?)?),
    }
}

/// `run --print-config`: the config the flags stand for, checked first.
fn print_config(args: &RunArgs) -> anyhow::Result<()> {
    if args.config.is_some() {
        anyhow::bail!(FlagsError::Flag {
            flag: "--print-config",
            reason: "prints the config of the flags; with --config, the file is the config".into(),
        });
    }
    let text = args.target.to_toml()?;
    Config::parse(&text)?;
    print(&text)
}

async fn run(args: RunArgs) -> anyhow::Result<()> {
    let config = run_config(&args)?;
    throttle_governor::report::check_writable(&[
        args.report_json.as_ref(),
        args.report_html.as_ref(),
    ])?;
    for warning in config.warnings() {
        tracing::warn!("Config: {warning}");
    }
    let rule = SteadyRule {
        windows: args.steady_windows,
        band: args.steady_band,
    };
    let reports = args.report_json.is_some() || args.report_html.is_some();
    // History is read by the report, the steady-state rule and the live
    // page's charts; a plain run keeps a few minutes of it per target,
    // within a fixed budget, so memory stays small with many targets.
    let history_limit = if reports {
        throttle_governor::telemetry::HISTORY_LIMIT
    } else if args.until_steady {
        args.steady_windows
            .max(throttle_governor::telemetry::SHORT_HISTORY)
    } else {
        throttle_governor::telemetry::live_history(config.targets.len())
    };
    let running = supervisor::start(
        &config,
        RunOptions {
            dry_run: args.dry_run,
            history_limit,
            steady: rule,
            ..Default::default()
        },
        None,
    )
    .await?;
    // Each task holds its own target's config; this copy is not needed.
    drop(config);
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        supervisor::shutdown_signal().await;
        c.cancel();
    });
    // Hot reload on SIGHUP or when the file changes (a run from flags has
    // no file to reload).
    if let Some(path) = &args.config {
        tokio::spawn(throttle_governor::runtime::reload::watch(
            path.clone(),
            running.reloader(),
            (!args.config_poll.is_zero()).then_some(args.config_poll),
            cancel.clone(),
        ));
    }
    let stop = StopWhen {
        steady: args.until_steady.then_some(rule),
        after: args.max_duration,
    };
    // On a terminal, one status line per target, redrawn in place below
    // the log (the demo's view); piped, only the log lines.
    let view = cancel.child_token();
    let status = std::io::IsTerminal::is_terminal(&io::stderr()).then(|| {
        throttle_governor::telemetry::console::spawn(running.telemetry.clone(), view.clone())
    });
    running.wait(stop, &cancel).await;
    if let Some(handle) = status {
        view.cancel();
        let _ = handle.await;
    }
    // Built only when asked for: it copies every target's history.
    let report = (args.until_steady || reports).then(|| running.report(&rule));
    running.shutdown(Duration::from_secs(10)).await;
    if let Some(report) = report {
        logging::stderr_text(&report.to_text());
        report.write_files(args.report_json.as_ref(), args.report_html.as_ref())?;
    }
    Ok(())
}

async fn run_demo(args: DemoArgs) -> anyhow::Result<()> {
    let cancel = CancellationToken::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        supervisor::shutdown_signal().await;
        c.cancel();
    });
    throttle_governor::report::check_writable(&[
        args.report_json.as_ref(),
        args.report_html.as_ref(),
    ])?;
    let report = demo::run(&args, cancel).await?;
    print(&report.to_text())
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn print(text: &str) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The error and its causes, `a: b: c`, each said once: an error whose
/// message already includes its source (`cannot read config x: No such
/// file or directory (os error 2)`) is not followed by that source again
/// (issue 27).
fn chain_once(err: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_os_error_is_printed_once() {
        let io = std::fs::read_to_string("/no/such/config.toml").unwrap_err();
        let os = io.to_string();
        let err = anyhow::Error::new(throttle_governor::config::ConfigError::Read {
            path: "/no/such/config.toml".into(),
            source: io,
        })
        .context("run");
        let text = chain_once(&err);
        assert_eq!(text.matches(&os).count(), 1, "{text}");
        assert!(
            text.starts_with("run: cannot read config /no/such/config.toml"),
            "{text}"
        );
    }
}
