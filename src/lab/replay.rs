//! `replay`: what-if analysis of recorded windows.
//!
//! Why it exists: before pointing the governor at a live tool, people want to
//! see what it *would* have done on windows they already have ("had high been
//! 2 %, when would it have backed off?"). This module feeds recorded windows
//! through the very same [`ThrottleGovernor`] the live loop uses, so a replay
//! is the contract of `GOVERNOR.md`, not an imitation of it.
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
//! number as the shortest float that reads back exactly (`0.07`).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::{Deserialize, Serialize, Serializer};
use thiserror::Error;

pub use crate::governor::Profile;
use crate::governor::{
    pct, Committed, Control, Decision, HoldReason, Mode, Outcome, ParamError, Params,
    ThrottleGovernor,
};
use crate::window::{Reading, WindowError};

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
    /// without `profile` gets), `robust`, or `seed` (GOVERNOR.md exactly;
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

/// What is wrong with one input line.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum LineError {
    /// Not JSON at all.
    #[error("not valid JSON: {message} at column {column}")]
    Syntax {
        /// serde_json's description.
        message: String,
        /// The 1-based column.
        column: usize,
    },
    /// JSON, but not a window object: unknown or duplicate key, wrong type.
    #[error("{message} (column {column})")]
    Shape {
        /// serde_json's description.
        message: String,
        /// The 1-based column.
        column: usize,
    },
    /// Keys of the window form and of the cumulative form on one line.
    #[error(
        "mixes the window form (`attempts`, `failures`) with the cumulative form \
         (`attempts_total`, `successes_total`, `failures_total`); use one form"
    )]
    MixedForms,
    /// Both cumulative first counters.
    #[error("has both `attempts_total` and `successes_total`; give one of them")]
    BothTotals,
    /// A required key is absent.
    #[error("missing `{missing}` ({form} needs {needs})")]
    Missing {
        /// The absent key.
        missing: &'static str,
        /// Which form the line looked like.
        form: &'static str,
        /// What that form needs.
        needs: &'static str,
    },
    /// No counters at all.
    #[error(
        "no counters; expected {{\"attempts\": n, \"failures\": f}} or \
         {{\"attempts_total\": N, \"failures_total\": F}}"
    )]
    NoCounters,
    /// The line's form differs from the input's first line.
    #[error("uses the {this} form, but line {first_line} used the {first} form; one input uses one form")]
    FormChanged {
        /// This line's form.
        this: &'static str,
        /// The first line's form.
        first: &'static str,
        /// The first line's number.
        first_line: usize,
    },
    /// A value below zero.
    #[error("`{field}` is negative ({value})")]
    Negative {
        /// The key.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// A window with more failures than attempts.
    #[error("`{failures_key}` ({failures}) exceeds `{attempts_key}` ({attempts})")]
    FailuresExceedAttempts {
        /// The failures key.
        failures_key: &'static str,
        /// Its value.
        failures: f64,
        /// The attempts key.
        attempts_key: &'static str,
        /// Its value.
        attempts: f64,
    },
    /// Cumulative counters whose failures grew more than their attempts.
    #[error(
        "since line {since}, failures grew by {failures} but resolved attempts only by \
         {attempts}; the readings are inconsistent"
    )]
    InconsistentDelta {
        /// The line of the previous reading.
        since: usize,
        /// The failure delta.
        failures: f64,
        /// The attempt delta.
        attempts: f64,
    },
    /// A fractional `current` for an integer knob.
    #[error("`current` must be a whole number for --control concurrency (got {0})")]
    CurrentNotInteger(f64),
    /// Any other window problem.
    #[error("{0}")]
    Window(WindowError),
}

/// One input line as written, before it is classified.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "an object such as {\"attempts\": 200, \"failures\": 3}"
)]
struct RawLine {
    attempts: Option<f64>,
    failures: Option<f64>,
    attempts_total: Option<f64>,
    successes_total: Option<f64>,
    failures_total: Option<f64>,
    current: Option<f64>,
}

/// The two input forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Window,
    Cumulative,
}

impl Form {
    fn as_str(self) -> &'static str {
        match self {
            Form::Window => "window",
            Form::Cumulative => "cumulative",
        }
    }
}

/// The counters of one line.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Counters {
    /// One window's deltas.
    Window { attempts: f64, failures: f64 },
    /// A cumulative reading, timestamped with its line number (each line is
    /// one tick).
    Total(Reading),
}

impl Counters {
    fn form(self) -> Form {
        match self {
            Counters::Window { .. } => Form::Window,
            Counters::Total(_) => Form::Cumulative,
        }
    }
}

/// One validated input line.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    counters: Counters,
    current: Option<f64>,
}

/// Parses and validates one non-blank line.
fn parse_line(text: &str, line: usize, control: Control) -> Result<Entry, LineError> {
    let at = line as f64;
    let raw: RawLine = serde_json::from_str(text).map_err(json_problem)?;
    let window = raw.attempts.is_some() || raw.failures.is_some();
    let cumulative = raw.attempts_total.is_some()
        || raw.successes_total.is_some()
        || raw.failures_total.is_some();
    let counters = match (window, cumulative) {
        (true, true) => return Err(LineError::MixedForms),
        (false, false) => return Err(LineError::NoCounters),
        (true, false) => {
            let missing = |missing| LineError::Missing {
                missing,
                form: "a window line",
                needs: "`attempts` and `failures`",
            };
            let attempts = raw.attempts.ok_or_else(|| missing("attempts"))?;
            let failures = raw.failures.ok_or_else(|| missing("failures"))?;
            non_negative("attempts", attempts)?;
            non_negative("failures", failures)?;
            if failures > attempts {
                return Err(LineError::FailuresExceedAttempts {
                    failures_key: "failures",
                    failures,
                    attempts_key: "attempts",
                    attempts,
                });
            }
            Counters::Window { attempts, failures }
        }
        (false, true) => {
            let missing = |missing| LineError::Missing {
                missing,
                form: "a cumulative line",
                needs: "`failures_total` and one of `attempts_total` or `successes_total`",
            };
            let failures = raw
                .failures_total
                .ok_or_else(|| missing("failures_total"))?;
            non_negative("failures_total", failures)?;
            match (raw.attempts_total, raw.successes_total) {
                (Some(_), Some(_)) => return Err(LineError::BothTotals),
                (None, None) => return Err(missing("attempts_total")),
                (Some(attempts), None) => {
                    non_negative("attempts_total", attempts)?;
                    if failures > attempts {
                        return Err(LineError::FailuresExceedAttempts {
                            failures_key: "failures_total",
                            failures,
                            attempts_key: "attempts_total",
                            attempts,
                        });
                    }
                    Counters::Total(Reading::resolved(at, attempts, failures))
                }
                (None, Some(successes)) => {
                    non_negative("successes_total", successes)?;
                    Counters::Total(Reading::successes(at, successes, failures))
                }
            }
        }
    };
    if let Some(current) = raw.current {
        non_negative("current", current)?;
        if control.is_integer() && current.fract() != 0.0 {
            return Err(LineError::CurrentNotInteger(current));
        }
    }
    Ok(Entry {
        counters,
        current: raw.current,
    })
}

/// JSON cannot carry NaN or infinities, so only the sign needs checking.
fn non_negative(field: &'static str, value: f64) -> Result<(), LineError> {
    if value < 0.0 {
        return Err(LineError::Negative { field, value });
    }
    Ok(())
}

/// serde_json's message without its " at line 1 column N" suffix (each input
/// line is parsed alone, so its "line 1" would mislead).
fn json_problem(e: serde_json::Error) -> LineError {
    let column = e.column();
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), column);
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_owned();
    match e.classify() {
        serde_json::error::Category::Data => LineError::Shape { message, column },
        _ => LineError::Syntax { message, column },
    }
}

/// What one window decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The offer rises.
    Up,
    /// The offer falls.
    Down,
    /// The offer stays.
    Hold,
}

impl Verdict {
    /// "up", "down" or "hold".
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Up => "up",
            Verdict::Down => "down",
            Verdict::Hold => "hold",
        }
    }
}

/// One output row: what the governor did with one input line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayRow {
    /// The 1-based input line number.
    pub window: usize,
    /// The window's resolved attempts; `None` for a baseline or reset line.
    #[serde(serialize_with = "opt_num")]
    pub attempts: Option<f64>,
    /// The window's failed attempts; `None` for a baseline or reset line.
    #[serde(serialize_with = "opt_num")]
    pub failures: Option<f64>,
    /// `failures / attempts`; `None` without traffic or without a window.
    #[serde(serialize_with = "opt_num")]
    pub frac: Option<f64>,
    /// The committed offer before the decision.
    #[serde(serialize_with = "num")]
    pub current: f64,
    /// Up, down or hold.
    pub decision: Verdict,
    /// The offer after the decision (equal to `current` on hold).
    #[serde(serialize_with = "num")]
    pub to: f64,
    /// The mode of an Up or Down.
    pub mode: Option<Mode>,
    /// Why a hold held.
    pub reason: Option<HoldReason>,
    /// The congestion memory after this window.
    #[serde(serialize_with = "opt_num")]
    pub last_bad: Option<f64>,
    /// The clean streak after this window.
    pub clean_streak: u32,
    /// Whether the memory cleared on this window.
    pub memory_cleared: bool,
    /// The line's `current` as given, when it lay outside [floor, ceiling]
    /// and was clamped into it (`current` is then the clamped value); the
    /// key is absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "opt_num")]
    pub clamped_from: Option<f64>,
}

impl ReplayRow {
    /// The row for input line `window` from the governor's outcome.
    pub fn from_outcome(window: usize, o: &Outcome) -> Self {
        let (attempts, failures, frac) = match o.signal {
            Some(s) => (Some(s.attempts), Some(s.failures), s.frac),
            None => (None, None, None),
        };
        ReplayRow {
            window,
            attempts,
            failures,
            frac,
            current: o.from,
            decision: match o.decision {
                Decision::Up(_) => Verdict::Up,
                Decision::Down(_) => Verdict::Down,
                Decision::Hold => Verdict::Hold,
            },
            to: o.to,
            mode: o.mode,
            reason: o.reason,
            last_bad: o.last_bad,
            clean_streak: o.clean_streak,
            memory_cleared: o.memory_cleared,
            clamped_from: None,
        }
    }
}

/// Integers that f64 holds exactly: within this, integral values print as
/// JSON integers.
const EXACT_INTEGER: f64 = 9_007_199_254_740_992.0; // 2^53

fn num<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && v.abs() <= EXACT_INTEGER {
        // Exact: the value is integral and within 2^53.
        s.serialize_i64(*v as i64)
    } else {
        s.serialize_f64(*v)
    }
}

fn opt_num<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(v) => num(v, s),
        None => s.serialize_none(),
    }
}

/// A number for the table: integral values without a fractional part, the
/// same digits as the JSON otherwise.
fn text_num(v: f64) -> String {
    serde_json::to_string(&NumRef(v)).unwrap_or_else(|_| v.to_string())
}

struct NumRef(f64);

impl Serialize for NumRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        num(&self.0, s)
    }
}

/// Opens `FILE` (or stdin for none or `-`).
pub fn open_input(args: &ReplayArgs) -> Result<Box<dyn BufRead>, ReplayError> {
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

/// Validates the parameters, then opens the input named by `args` and
/// replays it. Bad parameters are reported before any input is read.
pub fn replay_input(args: &ReplayArgs) -> Result<Vec<ReplayRow>, ReplayError> {
    args.params()?;
    let input = open_input(args)?;
    replay(input, args)
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
pub struct Replayer {
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

/// One JSON object per row, each on its own line.
pub fn render_jsonl(rows: &[ReplayRow]) -> String {
    let mut out = String::new();
    for row in rows {
        // A row holds only numbers, strings and booleans: it always serializes.
        out.push_str(&serde_json::to_string(row).expect("a row always serializes"));
        out.push('\n');
    }
    out
}

/// The columns of [`render_table`]: the JSON keys, in the same order.
const COLUMNS: [&str; 12] = [
    "window",
    "attempts",
    "failures",
    "frac",
    "current",
    "decision",
    "to",
    "mode",
    "reason",
    "last_bad",
    "clean_streak",
    "memory_cleared",
];

/// Aligned columns for people, under a header row: the same values as the
/// JSON, except that `frac` is a percentage with up to two decimals (the JSON
/// keeps full precision). `-` stands for null; numbers are right-aligned and
/// words left-aligned.
pub fn render_table(rows: &[ReplayRow]) -> String {
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), text_num);
    let cells: Vec<[String; 12]> = rows
        .iter()
        .map(|r| {
            [
                r.window.to_string(),
                opt(r.attempts),
                opt(r.failures),
                r.frac.map_or_else(|| "-".to_owned(), pct),
                text_num(r.current),
                r.decision.as_str().to_owned(),
                text_num(r.to),
                r.mode.map_or("-", Mode::as_str).to_owned(),
                r.reason.map_or("-", HoldReason::as_str).to_owned(),
                opt(r.last_bad),
                r.clean_streak.to_string(),
                r.memory_cleared.to_string(),
            ]
        })
        .collect();
    // Words are left-aligned; everything else is a number.
    let left = |col: usize| matches!(COLUMNS[col], "decision" | "mode" | "reason");
    let mut widths = COLUMNS.map(str::len);
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    let header = COLUMNS.map(str::to_owned);
    for row in std::iter::once(&header).chain(&cells) {
        let mut line = String::new();
        for (col, cell) in row.iter().enumerate() {
            if col > 0 {
                line.push_str("  ");
            }
            let w = widths[col];
            if left(col) {
                let _ = write!(line, "{cell:<w$}");
            } else {
                let _ = write!(line, "{cell:>w$}");
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: ReplayArgs,
    }

    fn run(input: &str, args: &ReplayArgs) -> Result<Vec<ReplayRow>, ReplayError> {
        replay(input.as_bytes(), args)
    }

    fn rate() -> ReplayArgs {
        ReplayArgs {
            control: Control::Rate,
            ceiling: Some(100.0),
            ..ReplayArgs::default()
        }
    }

    fn line_error(input: &str, args: &ReplayArgs) -> (usize, LineError) {
        match run(input, args) {
            Err(ReplayError::Line { line, problem }) => (line, problem),
            other => panic!("expected a line error, got {other:?}"),
        }
    }

    #[test]
    fn default_args_match_the_command_line() {
        let parsed = Wrap::try_parse_from(["replay"]).unwrap().args;
        assert_eq!(parsed, ReplayArgs::default());
        let parsed = Wrap::try_parse_from([
            "replay",
            "--control",
            "rate",
            "--format",
            "table",
            "--low",
            "0.002",
            "--profile",
            "default",
            "in.jsonl",
        ])
        .unwrap()
        .args;
        assert_eq!(parsed.control, Control::Rate);
        assert_eq!(parsed.format, OutputFormat::Table);
        assert_eq!(parsed.low, Some(0.002));
        assert_eq!(parsed.file, Some(PathBuf::from("in.jsonl")));
        assert!(!parsed.reads_stdin());
        assert!(Wrap::try_parse_from(["replay", "--control", "users"]).is_err());
        let robust = Wrap::try_parse_from(["replay", "--profile", "robust"]).unwrap();
        assert_eq!(robust.args.profile, Profile::Robust);
        assert!(Wrap::try_parse_from(["replay", "--profile", "aggressive"]).is_err());
    }

    #[test]
    fn dash_and_no_file_read_stdin() {
        let mut args = ReplayArgs::default();
        assert!(args.reads_stdin());
        args.file = Some(PathBuf::from("-"));
        assert!(args.reads_stdin());
    }

    #[test]
    fn invalid_params_list_every_error() {
        let args = ReplayArgs {
            high: 0.05,
            low: Some(0.05),
            ..ReplayArgs::default()
        };
        let err = run("", &args).unwrap_err();
        let ReplayError::Params(errors) = &err else {
            panic!("expected params errors, got {err:?}");
        };
        assert_eq!(errors.len(), 2, "{errors:?}");
        let msg = err.to_string();
        assert!(
            msg.starts_with("invalid parameters (each `name` below is the --name flag):\n  - "),
            "{msg}"
        );
        assert!(
            msg.contains("`low`") && msg.contains("`ceiling` is required"),
            "{msg}"
        );
    }

    #[test]
    fn window_form_rows() {
        let rows = run(
            "{\"attempts\": 100, \"failures\": 0}\n\n{\"attempts\": 100, \"failures\": 50}\n",
            &rate(),
        )
        .unwrap();
        assert_eq!(rows.len(), 2, "the blank line is skipped");
        assert_eq!(rows[0].window, 1);
        assert_eq!((rows[0].current, rows[0].to), (1.0, 2.0));
        assert_eq!(rows[1].window, 3, "window numbers are input line numbers");
        assert_eq!(rows[1].decision, Verdict::Down);
        assert_eq!((rows[1].current, rows[1].to), (2.0, 1.0));
        assert_eq!(rows[1].last_bad, Some(2.0));
    }

    #[test]
    fn cumulative_form_rows() {
        let rows = run(
            "{\"attempts_total\": 1000, \"failures_total\": 10}\n\
             {\"attempts_total\": 1100, \"failures_total\": 10}\n\
             {\"attempts_total\": 50, \"failures_total\": 0}\n\
             {\"successes_total\": 90, \"failures_total\": 10}\n\
             {\"successes_total\": 190, \"failures_total\": 10}\n",
            &rate(),
        )
        .unwrap();
        let reasons: Vec<_> = rows.iter().map(|r| r.reason).collect();
        assert_eq!(
            reasons,
            [
                Some(HoldReason::Baseline),
                None,
                Some(HoldReason::CounterReset),
                Some(HoldReason::CounterReset), // the form changed
                None,
            ]
        );
        assert_eq!((rows[0].attempts, rows[0].frac), (None, None));
        assert_eq!(
            (rows[1].attempts, rows[1].failures),
            (Some(100.0), Some(0.0))
        );
        assert_eq!(rows[4].decision, Verdict::Up);
        assert_eq!((rows[4].current, rows[4].to), (2.0, 4.0));
    }

    #[test]
    fn current_overrides_the_committed_offer() {
        let rows = run(
            "{\"attempts\": 100, \"failures\": 0, \"current\": 30}\n\
             {\"attempts\": 100, \"failures\": 0}\n",
            &rate(),
        )
        .unwrap();
        assert_eq!((rows[0].current, rows[0].to), (30.0, 60.0));
        assert_eq!((rows[1].current, rows[1].to), (60.0, 100.0));
    }

    #[test]
    fn malformed_lines_name_the_line_and_the_problem() {
        let ok = "{\"attempts\": 1, \"failures\": 0}\n";
        type Check = fn(&LineError) -> bool;
        let cases: [(&str, Check); 12] = [
            ("{\"attempts\": 1", |e| {
                matches!(e, LineError::Syntax { .. })
            }),
            ("nope", |e| matches!(e, LineError::Syntax { .. })),
            (
                "{\"attempts\": 1, \"failures\": 0, \"x\": 1}",
                |e| matches!(e, LineError::Shape { message, .. } if message.contains("unknown field `x`")),
            ),
            ("{\"attempts\": \"1\", \"failures\": 0}", |e| {
                matches!(e, LineError::Shape { .. })
            }),
            (
                "[1, 0]",
                |e| matches!(e, LineError::Shape { message, .. } if message.contains("an object such as")),
            ),
            (
                "{\"attempts\": 1, \"failures\": 0, \"failures_total\": 0}",
                |e| *e == LineError::MixedForms,
            ),
            ("{\"attempts\": 1}", |e| {
                matches!(
                    e,
                    LineError::Missing {
                        missing: "failures",
                        ..
                    }
                )
            }),
            ("{\"current\": 3}", |e| *e == LineError::NoCounters),
            ("{\"attempts\": 1, \"failures\": 2}", |e| {
                matches!(e, LineError::FailuresExceedAttempts { .. })
            }),
            ("{\"attempts\": -1, \"failures\": 0}", |e| {
                matches!(
                    e,
                    LineError::Negative {
                        field: "attempts",
                        ..
                    }
                )
            }),
            (
                "{\"attempts\": 1, \"failures\": 0, \"current\": 2.5}",
                |e| *e == LineError::CurrentNotInteger(2.5),
            ),
            ("{\"attempts_total\": 1, \"failures_total\": 0}", |e| {
                matches!(e, LineError::FormChanged { first_line: 1, .. })
            }),
        ];
        for (bad, check) in cases {
            let input = format!("{ok}{bad}\n{ok}");
            let args = ReplayArgs {
                ceiling: Some(10.0),
                ..ReplayArgs::default()
            };
            let (line, problem) = line_error(&input, &args);
            assert_eq!(line, 2, "{bad}");
            assert!(check(&problem), "{bad}: {problem:?}");
            let msg = ReplayError::Line { line, problem }.to_string();
            assert!(msg.starts_with("line 2: "), "{msg}");
            assert!(!msg.contains("line 1 column"), "{msg}");
        }
    }

    #[test]
    fn cumulative_problems() {
        let args = rate();
        let (line, e) = line_error(
            "{\"attempts_total\": 10, \"failures_total\": 0}\n\
             {\"attempts_total\": 15, \"failures_total\": 9}\n",
            &args,
        );
        assert_eq!(line, 2);
        assert_eq!(
            e,
            LineError::InconsistentDelta {
                since: 1,
                failures: 9.0,
                attempts: 5.0
            }
        );
        let (_, e) = line_error(
            "{\"attempts_total\": 1, \"successes_total\": 1, \"failures_total\": 0}",
            &args,
        );
        assert_eq!(e, LineError::BothTotals);
        let (_, e) = line_error("{\"attempts_total\": 1}", &args);
        assert!(matches!(
            e,
            LineError::Missing {
                missing: "failures_total",
                ..
            }
        ));
        let (_, e) = line_error("{\"failures_total\": 1}", &args);
        assert!(matches!(
            e,
            LineError::Missing {
                missing: "attempts_total",
                ..
            }
        ));
        let (_, e) = line_error("{\"attempts_total\": 1, \"failures_total\": 2}", &args);
        assert!(matches!(
            e,
            LineError::FailuresExceedAttempts {
                failures_key: "failures_total",
                ..
            }
        ));
        let (_, e) = line_error("{\"successes_total\": -3, \"failures_total\": 2}", &args);
        assert!(matches!(
            e,
            LineError::Negative {
                field: "successes_total",
                ..
            }
        ));
    }

    #[test]
    fn numbers_print_as_integers_when_integral() {
        let row = ReplayRow {
            window: 1,
            attempts: Some(100.0),
            failures: Some(7.0),
            frac: Some(0.07),
            current: 100.0,
            decision: Verdict::Down,
            to: 90.0,
            mode: Some(Mode::BackingOff),
            reason: None,
            last_bad: Some(100.0),
            clean_streak: 0,
            memory_cleared: false,
            clamped_from: None,
        };
        assert_eq!(
            render_jsonl(std::slice::from_ref(&row)),
            "{\"window\":1,\"attempts\":100,\"failures\":7,\"frac\":0.07,\"current\":100,\
             \"decision\":\"down\",\"to\":90,\"mode\":\"backing-off\",\"reason\":null,\
             \"last_bad\":100,\"clean_streak\":0,\"memory_cleared\":false}\n"
        );
        assert_eq!(text_num(3.75), "3.75");
        assert_eq!(text_num(41_000.0), "41000");
        assert_eq!(text_num(1e300), "1e+300");
    }

    #[test]
    fn table_aligns_columns_under_a_header() {
        let rows = run(
            "{\"attempts\": 100, \"failures\": 0}\n{\"attempts\": 0, \"failures\": 0}\n",
            &rate(),
        )
        .unwrap();
        assert_eq!(
            render_table(&rows),
            "\
window  attempts  failures  frac  current  decision  to  mode      reason      last_bad  clean_streak  memory_cleared
     1       100         0    0%        1  up         2  climbing  -                  -             0           false
     2         0         0     -        2  hold       2  -         no-traffic         -             0           false
"
        );
        assert_eq!(render_table(&[]).lines().count(), 1, "the header alone");
    }
}
