//! `replay`: what-if analysis of recorded windows.
//!
//! Why it exists: before pointing the governor at a live tool, people want to
//! see what it *would* have done on windows they already have ("had high been
//! 2 %, when would it have backed off?"). This module feeds recorded windows
//! through the very same [`ThrottleGovernor`] the live loop uses, so a replay
//! is the contract of `docs/GOVERNOR.md`, not an imitation of it.
//!
//! What it may touch: [`crate::governor`] and [`crate::window`], plus reading
//! its input and writing its rows to the writer it is given ([`stream`]).
//!
//! It streams: each JSON Lines row is written and flushed as soon as its line
//! is decided, so it can run in a pipe beside a live tool. A malformed line
//! stops it with exit status 2 after the rows of the lines before it (which
//! were decided correctly); nothing after a bad line is ever printed.
//!
//! # Input
//! JSON Lines, one object per line, in one of two forms:
//!
//! - `{"attempts": n, "failures": f}`: one window's deltas;
//! - `{"attempts_total": N, "failures_total": F}` (or
//!   `{"successes_total": S, "failures_total": F}`): a cumulative reading.
//!   Consecutive readings form windows through [`crate::window`]: the first
//!   reading only sets the baseline, and a counter that goes down is a reset.
//!
//! One input uses one form: the window form and the cumulative form are never
//! mixed, neither on a line nor across lines. Either form may carry
//! `"current": x`, the committed offer before that window is decided (an
//! outside writer, [`ThrottleGovernor::set_current`]); without it, the offer
//! is the previous line's `to`. Unknown keys are errors. Blank lines are
//! skipped, and `window` keeps counting input lines, so it always points at
//! the line a row came from. A `current` outside [floor, ceiling] is clamped
//! into it: the row's `current` is the clamped value, the row gains
//! `"clamped_from"` with the value given, and a warning names the line.
//!
//! # Output
//! One [`ReplayRow`] per non-blank line. In JSON, every number that is
//! integral is written as a JSON integer (`90`, never `90.0`), and any other
//! number as the shortest float that reads back exactly (`0.07`). Under the
//! `robust` and `gentle` profiles a row whose window reached a verdict also
//! carries its `confidence` (issue 30): how sure the verdict is, and the
//! background failure rate it allowed for.

mod input;
mod rows;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use thiserror::Error;

pub use crate::governor::Profile;
use crate::governor::{Committed, Control, ParamError, Params, ThrottleGovernor};
use crate::window::WindowError;
pub use input::LineError;
use input::{parse_line, Counters, Form};
use rows::text_num;
use rows::{render_jsonl, render_table};
pub use rows::{ReplayRow, Verdict};

/// The output format of `replay`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutputFormat {
    /// One JSON object per input line.
    #[default]
    Jsonl,
    /// Aligned columns for people, with a header row.
    Table,
}

/// The arguments of `throttle-governor replay`.
#[derive(Debug, Clone, PartialEq, Args)]
pub struct ReplayArgs {
    /// JSON Lines input; reads stdin when absent or `-`.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Back off when a window's attempt-failure fraction exceeds this.
    #[arg(long, value_name = "FRAC", default_value_t = 0.05)]
    pub high: f64,

    /// A window is clean when its fraction is below this [default: high / 5].
    #[arg(long, value_name = "FRAC")]
    pub low: Option<f64>,

    /// The offer never goes below this.
    #[arg(long, value_name = "OFFER", default_value_t = 1.0)]
    pub floor: f64,

    /// The authored offer, which is the ceiling [required for concurrency;
    /// unbounded for rate when absent].
    #[arg(long, value_name = "OFFER")]
    pub ceiling: Option<f64>,

    /// The opening offer [default: floor].
    #[arg(long, value_name = "OFFER")]
    pub start: Option<f64>,

    /// Which knob is governed: concurrency rounds to whole numbers, rate never
    /// rounds.
    #[arg(long, value_enum, default_value_t = Control::Concurrency)]
    pub control: Control,

    /// The knob's smallest move, e.g. 0.01 for a tool that rounds a rate to
    /// 2 decimals: an Up smaller than this becomes the additive probe
    /// [default: 1 for concurrency, 1e-9 of the offer for rate].
    #[arg(long, value_name = "STEP")]
    pub resolution: Option<f64>,

    /// How to print the decisions.
    #[arg(long, value_enum, default_value_t = OutputFormat::Jsonl)]
    pub format: OutputFormat,

    /// The rule set, as a config's `profile`: `gentle` (what a config
    /// without `profile` gets), `robust`, or `seed` (docs/GOVERNOR.md exactly;
    /// also spelled `default`). docs/BENCHMARKS.md has the measurements.
    #[arg(long, value_enum, default_value_t = Profile::default())]
    pub profile: Profile,
}

impl Default for ReplayArgs {
    /// The same defaults as the command line.
    fn default() -> Self {
        ReplayArgs {
            file: None,
            high: 0.05,
            low: None,
            floor: 1.0,
            ceiling: None,
            start: None,
            control: Control::Concurrency,
            resolution: None,
            format: OutputFormat::Jsonl,
            profile: Profile::default(),
        }
    }
}

impl ReplayArgs {
    /// Validates the governor parameters, reporting every problem at once.
    pub fn params(&self) -> Result<Params, ReplayError> {
        let params = Params::new(
            self.control,
            self.ceiling,
            self.floor,
            self.start,
            self.high,
            self.low,
        );
        match (params, self.resolution) {
            (Ok(p), Some(r)) => p
                .with_resolution(r)
                .map_err(|e| ReplayError::Params(vec![e])),
            (Ok(p), None) => Ok(p),
            (Err(mut errors), Some(r)) => {
                // Report a bad resolution beside the other problems.
                if !(r.is_finite() && r > 0.0) {
                    errors.push(ParamError::ResolutionNotPositive(r));
                }
                Err(ReplayError::Params(errors))
            }
            (Err(errors), None) => Err(ReplayError::Params(errors)),
        }
    }

    /// Whether the input is stdin (`FILE` absent or `-`).
    pub fn reads_stdin(&self) -> bool {
        self.file.as_deref().is_none_or(|p| p == Path::new("-"))
    }
}

/// Why a replay could not produce its report.
#[derive(Debug, Error)]
pub enum ReplayError {
    /// The governor parameters are invalid; every problem is listed.
    #[error(
        "invalid parameters (each `name` below is the --name flag):{}",
        bullet_list(.0)
    )]
    Params(Vec<ParamError>),
    /// The input file could not be opened.
    #[error("cannot open input {}", .path.display())]
    Open {
        /// The file given.
        path: PathBuf,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// The input could not be read (including invalid UTF-8).
    #[error("line {line}: cannot read the input")]
    Read {
        /// The 1-based line number.
        line: usize,
        /// Why it failed.
        #[source]
        source: io::Error,
    },
    /// The output could not be written.
    #[error("cannot write the output")]
    Write(#[source] io::Error),
    /// A line is malformed.
    #[error("line {line}: {problem}")]
    Line {
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        problem: LineError,
    },
}

fn bullet_list(errors: &[ParamError]) -> String {
    errors.iter().fold(String::new(), |mut s, e| {
        let _ = write!(s, "\n  - {e}");
        s
    })
}

/// Opens `FILE` (or stdin for none or `-`).
fn open_input(args: &ReplayArgs) -> Result<Box<dyn BufRead>, ReplayError> {
    match &args.file {
        Some(path) if !args.reads_stdin() => {
            let file = File::open(path).map_err(|source| ReplayError::Open {
                path: path.clone(),
                source,
            })?;
            Ok(Box::new(BufReader::new(file)))
        }
        _ => Ok(Box::new(io::stdin().lock())),
    }
}

/// Validates the parameters, opens the input named by `args` and streams
/// its rows onto `out` ([`stream`]). Bad parameters are reported before any
/// input is read.
pub fn stream_input(
    args: &ReplayArgs,
    out: &mut dyn Write,
    warnings: &mut dyn Write,
) -> Result<(), ReplayError> {
    args.params()?;
    let input = open_input(args)?;
    stream(input, args, out, warnings)
}

/// One replay in progress: the governor and the input's bookkeeping, fed
/// one line at a time, so rows can leave as soon as they are decided.
#[derive(Debug)]
pub(crate) struct Replayer {
    params: Params,
    governor: ThrottleGovernor,
    first: Option<(Form, usize)>,
    previous_reading: Option<usize>,
}

impl Replayer {
    /// A replay with validated parameters.
    pub fn new(args: &ReplayArgs) -> Result<Self, ReplayError> {
        let params = args.params()?;
        Ok(Replayer {
            params,
            governor: ThrottleGovernor::with_profile(params, args.profile),
            first: None,
            previous_reading: None,
        })
    }

    /// Decides input line number `line` (1-based); `None` for a blank line.
    pub fn feed(&mut self, line: usize, text: &str) -> Result<Option<ReplayRow>, ReplayError> {
        if text.trim().is_empty() {
            return Ok(None);
        }
        let bad = |problem| ReplayError::Line { line, problem };
        let entry = parse_line(text, line, self.params.control).map_err(bad)?;
        let form = entry.counters.form();
        match self.first {
            None => self.first = Some((form, line)),
            Some((first_form, first_line)) if first_form != form => {
                return Err(bad(LineError::FormChanged {
                    this: form.as_str(),
                    first: first_form.as_str(),
                    first_line,
                }));
            }
            Some(_) => {}
        }
        let mut clamped_from = None;
        if let Some(current) = entry.current {
            match self.governor.set_current(current) {
                Committed::Adopted => {}
                Committed::Clamped { from, .. } => clamped_from = Some(from),
                Committed::Invalid { value } => {
                    return Err(bad(LineError::Negative {
                        field: "current",
                        value,
                    }))
                }
            }
        }
        let outcome = match entry.counters {
            Counters::Window { attempts, failures } => self.governor.step(attempts, failures),
            Counters::Total(reading) => {
                let since = self.previous_reading.replace(line).unwrap_or(line);
                self.governor.observe(reading).map_err(|e| {
                    bad(match e {
                        WindowError::InconsistentDelta { failures, attempts } => {
                            LineError::InconsistentDelta {
                                since,
                                failures,
                                attempts,
                            }
                        }
                        other => LineError::Window(other),
                    })
                })?
            }
        };
        let mut row = ReplayRow::from_outcome(line, &outcome);
        row.clamped_from = clamped_from;
        Ok(Some(row))
    }

    /// The parameters in use.
    pub fn params(&self) -> &Params {
        &self.params
    }
}

/// Replays `input` with `args` and returns every row.
///
/// Stops at the first bad line, with its 1-based line number.
pub fn replay(input: impl BufRead, args: &ReplayArgs) -> Result<Vec<ReplayRow>, ReplayError> {
    let mut replayer = Replayer::new(args)?;
    let mut rows = Vec::new();
    for (index, text) in input.lines().enumerate() {
        let line = index + 1;
        let text = text.map_err(|source| ReplayError::Read { line, source })?;
        rows.extend(replayer.feed(line, &text)?);
    }
    Ok(rows)
}

/// Replays `input` onto `out` as it arrives.
///
/// JSON Lines stream: each row is written and flushed as soon as its line
/// is decided, before the next line is read, so `replay` can run in a pipe
/// beside a live tool (a write-one/read-one driver never deadlocks). A row
/// whose `current` was clamped into [floor, ceiling] also gets one warning
/// line on `warnings`. The table needs every row for its column widths, so
/// it is printed once the input ends. Either way, a bad line stops the
/// replay with its error, after the rows of the lines before it.
pub fn stream(
    input: impl BufRead,
    args: &ReplayArgs,
    out: &mut dyn Write,
    warnings: &mut dyn Write,
) -> Result<(), ReplayError> {
    let mut replayer = Replayer::new(args)?;
    let mut table = Vec::new();
    for (index, text) in input.lines().enumerate() {
        let line = index + 1;
        let text = text.map_err(|source| ReplayError::Read { line, source })?;
        let Some(row) = replayer.feed(line, &text)? else {
            continue;
        };
        if let Some(from) = row.clamped_from {
            let p = replayer.params();
            // A failed warning must not stop the replay.
            let _ = writeln!(
                warnings,
                "line {line}: `current` {} lies outside [floor, ceiling] = [{}, {}]; clamped to {}",
                text_num(from),
                text_num(p.floor),
                text_num(p.ceiling),
                text_num(row.current)
            );
        }
        match args.format {
            OutputFormat::Jsonl => {
                let text = render_jsonl(std::slice::from_ref(&row));
                out.write_all(text.as_bytes())
                    .and_then(|()| out.flush())
                    .map_err(ReplayError::Write)?;
            }
            OutputFormat::Table => table.push(row),
        }
    }
    if args.format == OutputFormat::Table {
        out.write_all(render_table(&table).as_bytes())
            .and_then(|()| out.flush())
            .map_err(ReplayError::Write)?;
    }
    Ok(())
}
