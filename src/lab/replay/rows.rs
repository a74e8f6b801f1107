//! The replay's output: one row per decided line, as JSON Lines or as an
//! aligned table.
//!
//! Why it exists: the rows are the replay's contract with a pipe or a
//! person; their number format (an integral value is a JSON integer, in
//! the verdict's `confidence` too) and the table's columns are kept in one
//! place, apart from the input and the governor.
//!
//! What it may touch: nothing; it formats the rows it is given.

use std::fmt::Write as _;

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use crate::governor::{pct, Confidence, Decision, HoldReason, Mode, Outcome};

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
    /// How sure the verdict behind the decision is (`robust` and `gentle`:
    /// the counts it used, their 95 % interval, the clean level, the bound
    /// and the background estimate); the key is absent when the window
    /// reached no verdict (gathering, settling, no traffic) and under the
    /// seed rules.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "opt_confidence"
    )]
    pub confidence: Option<Confidence>,
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
            confidence: o.confidence,
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

fn opt_confidence<S: Serializer>(v: &Option<Confidence>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(c) => ConfidenceRef(c).serialize(s),
        None => s.serialize_none(),
    }
}

/// A [`Confidence`] with the row's number format: the governor's own
/// serialization writes every count as a float (`120.0`).
struct ConfidenceRef<'a>(&'a Confidence);

impl Serialize for ConfidenceRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut st = s.serialize_struct("Confidence", 8)?;
        st.serialize_field("verdict", &c.verdict)?;
        st.serialize_field("attempts", &NumRef(c.attempts))?;
        st.serialize_field("failures", &NumRef(c.failures))?;
        st.serialize_field("lower", &NumRef(c.lower))?;
        st.serialize_field("upper", &NumRef(c.upper))?;
        st.serialize_field("clean_below", &NumRef(c.clean_below))?;
        st.serialize_field("high", &NumRef(c.high))?;
        match c.background {
            Some(b) => st.serialize_field("background", &BackgroundRef(b))?,
            None => st.skip_field("background")?,
        }
        st.end()
    }
}

struct BackgroundRef(crate::governor::robust::background::BackgroundEstimate);

impl Serialize for BackgroundRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("BackgroundEstimate", 3)?;
        st.serialize_field("rate", &NumRef(self.0.rate))?;
        st.serialize_field("attempts", &NumRef(self.0.attempts))?;
        st.serialize_field("failures", &NumRef(self.0.failures))?;
        st.end()
    }
}

/// The table's `confidence` cell: `clean 2/120 [0.46%, 5.9%] bg 2.1%` (the
/// verdict, failures over attempts, the 95 % interval of their ratio, and
/// the background estimate when there is one), `-` without a verdict.
pub(crate) fn confidence_cell(c: Option<&Confidence>) -> String {
    let Some(c) = c else {
        return "-".to_owned();
    };
    let mut cell = format!(
        "{} {}/{} [{}, {}]",
        c.verdict,
        text_num(c.failures),
        text_num(c.attempts),
        pct(c.lower),
        pct(c.upper)
    );
    if let Some(b) = c.background {
        let _ = write!(cell, " bg {}", pct(b.rate));
    }
    cell
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

/// The columns of [`render_table`]: the JSON keys, in the same order
/// (`clamped_from` is a warning on stderr instead).
const COLUMNS: [&str; 13] = [
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
    "confidence",
];

/// Aligned columns for people, under a header row: the same values as the
/// JSON, except that `frac` is a percentage with up to two decimals (the JSON
/// keeps full precision) and `confidence` is one cell ([`confidence_cell`]).
/// `-` stands for null; numbers are right-aligned and words left-aligned.
pub(crate) fn render_table(rows: &[ReplayRow]) -> String {
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), text_num);
    let cells: Vec<[String; 13]> = rows
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
                confidence_cell(r.confidence.as_ref()),
            ]
        })
        .collect();
    // Words are left-aligned; everything else is a number.
    let left = |col: usize| matches!(COLUMNS[col], "decision" | "mode" | "reason" | "confidence");
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
