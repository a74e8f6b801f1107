//! The command line: the top-level clap definitions ([`Cli`], [`Command`])
//! and the arguments of the subcommands that run the controller itself.
//!
//! Why it is separate: `main.rs` only wires things together. A subcommand
//! that is a tool of its own keeps its arguments beside the code that runs
//! them, so that the two change together: [`BenchArgs`] and its format in
//! [`crate::lab::bench`], [`DemoArgs`] in [`crate::lab::demo`],
//! [`ReplayArgs`] and its format in [`crate::lab::replay`], [`SimArgs`] in
//! [`crate::lab::sim`], [`HealthcheckArgs`] in [`crate::runtime::healthcheck`],
//! and the `--log-format` value, [`LogFormat`], in
//! [`crate::telemetry::logging`]. Adding a subcommand is one variant of
//! [`Command`] plus one arm in `main.rs`.
//!
//! What it may touch: clap, and the argument types of the subcommands. It
//! also gives [`Control`] its command-line spelling, so that every
//! subcommand spells the knob the same way.

use clap::builder::PossibleValue;
use clap::{Parser, Subcommand, ValueEnum};

use std::path::PathBuf;
use std::time::Duration;

use crate::governor::{Control, Profile};
use crate::lab::bench::BenchArgs;
use crate::lab::demo::DemoArgs;
use crate::lab::replay::ReplayArgs;
use crate::lab::sim::SimArgs;
use crate::runtime::healthcheck::HealthcheckArgs;
use crate::telemetry::logging::LogFormat;

mod flags;

pub use flags::{FlagsError, LatencyFlag, TargetFlags};

/// Exit status for usage errors, invalid parameters and malformed input.
pub const EXIT_USAGE: u8 = 2;

const ABOUT: &str = "Adaptive backpressure for existing load tools, driven by the windowed \
attempt-failure fraction";

const AFTER_HELP: &str = "\
Exit status: 0 on success, 1 on a runtime failure, 2 on invalid arguments,
parameters or input.

The decision rules are those of docs/GOVERNOR.md: back off when a window's
attempt-failure fraction exceeds --high, climb while it stays below --low.";

const REPLAY_AFTER_HELP: &str = r#"Input (JSON Lines, one object per line; one input uses one form):
  {"attempts": 200, "failures": 3}                 one window's deltas
  {"attempts_total": 5200, "failures_total": 40}   a cumulative reading
  {"successes_total": 5160, "failures_total": 40}  a cumulative reading
A cumulative input forms windows from consecutive readings: the first only
sets the baseline, and a counter that goes down is a reset. Any line may add
"current": x, the offer in effect before that window (an outside writer).
Unknown keys are errors; blank lines are skipped.

Output: one row per line with window, attempts, failures, frac, current,
decision, to, mode, reason, last_bad, clean_streak and memory_cleared.
Integral numbers are printed without a fractional part.

Every line is checked before anything is printed: a malformed line exits
with status 2, names the line on stderr and prints nothing on stdout.

Examples:
  throttle-governor replay --ceiling 100 windows.jsonl
  throttle-governor replay --control rate --high 0.02 --format table < run.jsonl
  printf '{"attempts":100,"failures":7,"current":100}\n' \
    | throttle-governor replay --ceiling 100 -"#;

const RUN_AFTER_HELP: &str = "\
Every target in the config runs in its own task until SIGINT or SIGTERM (a
second signal exits at once). At start-up each target publishes its opening
offer (`start`, confirmed by read-back), then every `window` it reads the
counters, decides, and writes any movement off the read loop.

The controller serves /metrics, /healthz, /readyz and /api/v1/targets on
[server] listen. Logs go to stderr; RUST_LOG overrides the level.

On SIGHUP, or when the config file changes, the new config is validated and
applied without a restart: added targets start, removed ones stop with their
on_exit, changed ones keep their governor state. An invalid config is
rejected and the running one stays in effect.

Capacity at an SLO: a target's optional [targets.latency] (quantile, bound,
and one source: a Prometheus histogram, a PromQL query, Locust or Goose) adds
a latency bound beside the failure bound. A window backs off when either is
breached and climbs only when both are clean; the report's capacity is then
\"at failure <= high and p99 <= bound\" and names the bound that binds.
See docs/LATENCY.md and config/latency.toml.

Without a file, one target is described by flags: a tool (--locust URL,
--k6 URL, --goose URL, or --pull NAME --scrape URL) and the few keys people
change (--ceiling, --floor, --high, --window, --latency QUANTILE:BOUND).
The flags stand for a config text that is read and checked exactly as a
file is; --print-config prints it, ready for --config.

Examples:
  throttle-governor run --locust http://127.0.0.1:8089 --ceiling 200
  throttle-governor run --k6 http://127.0.0.1:6565 --ceiling 100 --until-steady
  throttle-governor run --locust http://127.0.0.1:8089 --ceiling 200 --print-config > locust.toml
  throttle-governor check --config config/example.toml
  throttle-governor run --config config/example.toml
  throttle-governor run --config config/example.toml --dry-run
  throttle-governor run --config ci.toml --until-steady --report-json capacity.json";

const DEMO_AFTER_HELP: &str = "\
Starts a simulated load tool on a loopback port (authored at 4x the target's
capacity, as an unthrottled test would be), governs it with the real
controller over real HTTP, prints the movement log, and ends with the
capacity report. Nothing else is needed: no load tool, Prometheus or Docker.

Examples:
  throttle-governor demo
  throttle-governor demo --model rejector --capacity 300 --report-html report.html";

const BENCH_AFTER_HELP: &str = "\
Each run drives one controller against one target model (sim::model) for
--windows windows, one model tick per window; seed i draws the capacity and
seeds the model. Metrics are medians and p90s over the seeds, against an
oracle that offers 95 % of the true capacity. The same arguments always
print the same table. Definitions: docs/BENCHMARKS.md.

Examples:
  throttle-governor bench
  throttle-governor bench --models noisy,lagged --controllers governor,governor-robust,aimd
  throttle-governor bench --seeds 1 --windows 100 --format json
  throttle-governor bench --profile robust
  throttle-governor bench --family noise --windows 150
  throttle-governor bench --models lagged --controllers governor --trace 4";

/// `throttle-governor`: the command line.
#[derive(Debug, Parser)]
#[command(name = "throttle-governor", version, about = ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Run the built-in demo: a simulated load tool governed live, then the
    /// capacity report.
    #[command(after_help = DEMO_AFTER_HELP)]
    Demo(DemoArgs),
    /// Govern every target in a config until stopped.
    #[command(after_help = RUN_AFTER_HELP)]
    Run(RunArgs),
    /// Validate a config and exit: 0 when valid, 2 when not (every problem
    /// is listed, named by target and field).
    Check(CheckArgs),
    /// Replay recorded windows through the governor: what it would have
    /// decided, window by window.
    #[command(after_help = REPLAY_AFTER_HELP)]
    Replay(ReplayArgs),
    /// Run a simulated load tool (Prometheus /metrics plus an admin API)
    /// in front of a target model with a known capacity.
    Sim(SimArgs),
    /// Compare the governor with AIMD, CUBIC, a gradient, findmax and an
    /// oracle on seeded target models: a deterministic simulation, no HTTP.
    #[command(after_help = BENCH_AFTER_HELP)]
    Bench(BenchArgs),
    /// GET the controller's /healthz: exit 0 when it answers 200, else 1
    /// (the container's HEALTHCHECK; the image has no curl).
    Healthcheck(HealthcheckArgs),
}

/// Arguments of `run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// The TOML config (see config/example.toml). Without it, the flags
    /// below describe one target (`--locust URL`, `--k6 URL`, `--goose URL`
    /// or `--pull NAME`); the two cannot be combined.
    #[arg(long, short, value_name = "PATH", conflicts_with = "target_flags")]
    pub config: Option<PathBuf>,
    /// One target without a file.
    #[command(flatten)]
    pub target: TargetFlags,
    /// Read and decide, log what would be written, never write.
    #[arg(long)]
    pub dry_run: bool,
    /// Exit once every target has reached a steady state.
    #[arg(long)]
    pub until_steady: bool,
    /// Steady state: the shortest settled period, in evidence windows (at
    /// least 2; the rule is in the README's "capacity report" section).
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = parse_steady_windows)]
    pub steady_windows: usize,
    /// Steady state: how far apart the two halves' lowest offers may lie,
    /// as a fraction of the top offer (0.1 = ±10 %).
    #[arg(long, default_value_t = 0.10, value_name = "FRACTION", value_parser = parse_steady_band)]
    pub steady_band: f64,
    /// Stop after this long (e.g. `10m`), steady or not.
    #[arg(long, value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub max_duration: Option<Duration>,
    /// On exit, write the capacity report as JSON here.
    #[arg(long, value_name = "PATH")]
    pub report_json: Option<PathBuf>,
    /// On exit, write the capacity report as self-contained HTML here.
    #[arg(long, value_name = "PATH")]
    pub report_html: Option<PathBuf>,
    /// How often to check the config file for changes (hot reload); `0s`
    /// reloads on SIGHUP only.
    #[arg(long, default_value = "1s", value_parser = humantime::parse_duration, value_name = "DURATION")]
    pub config_poll: Duration,
    /// Threads that run the targets (0: one per core). One is the default:
    /// the controller runs beside a load tool and should leave it the other
    /// cores, and one thread governs 10,000 targets at 1 s windows with
    /// half of one core to spare (docs/BENCHMARKS.md, "Overhead and
    /// scale"). Raise it for larger fleets or shorter windows. `/metrics`
    /// is encoded off these threads.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        env = "THROTTLE_WORKER_THREADS"
    )]
    pub worker_threads: usize,
}

fn parse_steady_windows(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 2 => Ok(n),
        _ => Err(format!(
            "--steady-windows must be a whole number of windows, at least 2 (got `{s}`)"
        )),
    }
}

fn parse_steady_band(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(b) if (0.0..=1.0).contains(&b) => Ok(b),
        _ => Err(format!(
            "--steady-band must be a fraction between 0 and 1, e.g. 0.1 for ±10 % (got `{s}`)"
        )),
    }
}

/// Arguments of `check`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// The TOML config to validate.
    #[arg(long, short, value_name = "PATH")]
    pub config: PathBuf,
}

impl ValueEnum for Control {
    fn value_variants<'a>() -> &'a [Self] {
        &[Control::Concurrency, Control::Rate]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Control::Concurrency => PossibleValue::new(self.as_str())
                .help("Workers, users or VUs: whole numbers, strictly moved"),
            Control::Rate => PossibleValue::new(self.as_str())
                .help("Requests or iterations per second: never rounded"),
        })
    }
}

impl ValueEnum for Profile {
    fn value_variants<'a>() -> &'a [Self] {
        &[Profile::Gentle, Profile::Robust, Profile::Seed]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Profile::Seed => PossibleValue::new(self.as_str())
                .alias("default")
                .help("Exactly the rules of docs/GOVERNOR.md (spelled \"default\" before issue 26)"),
            Profile::Robust => PossibleValue::new(self.as_str()).help(
                "Opt-in: evidence, lag and re-probe rules for noisy, lagged, drifting targets",
            ),
            Profile::Gentle => PossibleValue::new(self.as_str()).help(
                "The default: robust's rules with rarer probes of a fast-failing wall, and early verdicts",
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn control_spellings_match_the_config() {
        for control in Control::value_variants() {
            let value = control.to_possible_value().unwrap();
            assert_eq!(value.get_name(), control.as_str());
            assert_eq!(Control::from_str(control.as_str(), false), Ok(*control));
        }
    }

    #[test]
    fn profile_spellings_match_the_config() {
        for profile in Profile::value_variants() {
            let value = profile.to_possible_value().unwrap();
            assert_eq!(value.get_name(), profile.as_str());
            assert_eq!(Profile::from_str(profile.as_str(), false), Ok(*profile));
        }
    }

    #[test]
    fn bench_parses() {
        let cli = Cli::try_parse_from([
            "throttle-governor",
            "bench",
            "--models",
            "cliff,noisy",
            "--controllers",
            "governor,aimd",
            "--seeds",
            "3",
            "--windows",
            "100",
            "--format",
            "json",
            "--profile",
            "robust",
        ])
        .unwrap();
        let Command::Bench(args) = cli.command else {
            panic!("expected bench");
        };
        use crate::lab::bench::{BenchFormat, ControllerKind};
        use crate::lab::sim::ModelKind;
        assert_eq!(args.models, vec![ModelKind::Cliff, ModelKind::Noisy]);
        assert_eq!(
            args.controllers,
            vec![ControllerKind::Governor, ControllerKind::Aimd]
        );
        assert_eq!((args.seeds, args.windows), (3, 100));
        assert_eq!(args.format, BenchFormat::Json);
        assert_eq!(args.profile, Some(Profile::Robust));
        let cli = Cli::try_parse_from(["throttle-governor", "bench"]).unwrap();
        let Command::Bench(args) = cli.command else {
            panic!("expected bench");
        };
        assert_eq!(args, BenchArgs::default());
        assert!(Cli::try_parse_from(["throttle-governor", "bench", "--models", "tcp"]).is_err());
    }

    #[test]
    fn replay_parses() {
        let cli =
            Cli::try_parse_from(["throttle-governor", "replay", "--ceiling", "8", "-"]).unwrap();
        let Command::Replay(args) = cli.command else {
            panic!("expected replay");
        };
        assert_eq!(args.ceiling, Some(8.0));
        assert!(args.reads_stdin());
    }

    #[test]
    fn steady_flags_name_the_flag_when_bad() {
        let run = |extra: &[&str]| {
            let mut args = vec!["throttle-governor", "run", "--config", "x.toml"];
            args.extend_from_slice(extra);
            Cli::try_parse_from(args)
        };
        let ok = run(&["--steady-windows", "12", "--steady-band", "0.2"]).unwrap();
        let Command::Run(args) = ok.command else {
            panic!("expected run");
        };
        assert_eq!((args.steady_windows, args.steady_band), (12, 0.2));
        for (flag, value) in [
            ("--steady-windows", "1"),
            ("--steady-windows", "ten"),
            ("--steady-band", "-0.1"),
            ("--steady-band", "NaN"),
        ] {
            let err = run(&[&format!("{flag}={value}")]).unwrap_err().to_string();
            assert!(err.contains(flag) && err.contains(value), "{err}");
        }
    }
}
