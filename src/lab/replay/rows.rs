//! The replay's output: one row per decided line, as JSON Lines or as an
//! aligned table.
//!
//! Why it exists: the rows are the replay's contract with a pipe or a
//! person; their number format (an integral value is a JSON integer) and
//! the table's columns are kept in one place, apart from the input and the
//! governor.
//!
//! What it may touch: nothing; it formats the rows it is given.

use std::fmt::Write as _;

use serde::{Serialize, Serializer};

use crate::governor::{pct, Decision, HoldReason, Mode, Outcome};

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
pub(super) fn text_num(v: f64) -> String {
    serde_json::to_string(&NumRef(v)).unwrap_or_else(|_| v.to_string())
}

struct NumRef(f64);

impl Serialize for NumRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        num(&self.0, s)
    }
}

/// One JSON object per row, each on its own line.
pub(crate) fn render_jsonl(rows: &[ReplayRow]) -> String {
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
pub(crate) fn render_table(rows: &[ReplayRow]) -> String {
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
