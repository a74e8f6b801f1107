//! The command line: clap definitions only.
//!
//! Why it is separate: `main.rs` only wires things together, and each
//! subcommand's arguments live beside the code that runs them (for example
//! [`ReplayArgs`] in [`crate::replay`]). Adding a subcommand is one variant of
//! [`Command`] plus one arm in `main.rs`.
//!
//! What it may touch: clap, and the argument types of the subcommands. It
//! also gives [`Control`] its command-line spelling, so that every
//! subcommand spells the knob the same way.

use clap::builder::PossibleValue;
use clap::{Parser, Subcommand, ValueEnum};

use crate::governor::Control;
use crate::replay::ReplayArgs;

/// Exit status for usage errors, invalid parameters and malformed input.
pub const EXIT_USAGE: u8 = 2;

const ABOUT: &str = "Adaptive backpressure for existing load tools, driven by the windowed \
attempt-failure fraction";

const AFTER_HELP: &str = "\
Exit status: 0 on success, 1 on a runtime failure, 2 on invalid arguments,
parameters or input.

The decision rules are those of GOVERNOR.md: back off when a window's
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

/// `throttle-governor`: the command line.
#[derive(Debug, Parser)]
#[command(name = "throttle-governor", version, about = ABOUT, after_help = AFTER_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay recorded windows through the governor: what it would have
    /// decided, window by window.
    #[command(after_help = REPLAY_AFTER_HELP)]
    Replay(ReplayArgs),
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
    fn replay_parses() {
        let cli =
            Cli::try_parse_from(["throttle-governor", "replay", "--ceiling", "8", "-"]).unwrap();
        let Command::Replay(args) = cli.command;
        assert_eq!(args.ceiling, Some(8.0));
        assert!(args.reads_stdin());
    }
}
