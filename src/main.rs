//! The `throttle-governor` binary: CLI wiring and exit codes only.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use throttle_governor::cli::{Cli, Command, EXIT_USAGE};
use throttle_governor::replay::{self, OutputFormat, ReplayArgs, ReplayError};

fn main() -> ExitCode {
    // clap itself exits with status 2 on usage errors.
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Replay(args) => run_replay(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(exit_code(&err))
        }
    }
}

/// Invalid parameters and malformed input are usage errors (2); anything
/// else is a runtime failure (1).
fn exit_code(err: &anyhow::Error) -> u8 {
    if err.chain().any(|cause| cause.is::<ReplayError>()) {
        EXIT_USAGE
    } else {
        1
    }
}

fn run_replay(args: &ReplayArgs) -> anyhow::Result<()> {
    // The whole input is decided before anything is printed.
    let rows = replay::replay_input(args)?;
    let text = match args.format {
        OutputFormat::Jsonl => replay::render_jsonl(&rows),
        OutputFormat::Table => replay::render_table(&rows),
    };
    print(&text)
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
fn print(text: &str) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
