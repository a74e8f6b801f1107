//! Prometheus text exposition (0.0.4) and OpenMetrics 1.0 text parser.
//!
//! Why our own parser: `prometheus-parse` 0.2.5 silently drops valid samples
//! (a label value such as `route="/users/{id}"`, an empty label set `a{} 1`,
//! metric names with `:`, values it cannot parse), silently loses labels whose
//! value contains `,` or `=`, mangles labels written with blanks inside the
//! braces, does not decode escapes, and returns `Ok` with zero samples for
//! binary garbage (see `PROMETHEUS-PARSE.md` and
//! `tests/inproc/exposition_differential.rs`). A dropped failure sample undercounts
//! failures, and the governor then pushes harder into a target that is
//! already failing. Here every line that is not blank and not a
//! `#` comment either becomes a sample, with all labels unescaped, or fails the
//! whole parse with its 1-based line and column. A body with no samples is an
//! error too.
//!
//! Accepted beyond plain 0.0.4:
//! - OpenMetrics: `# EOF` (anything but blank lines after it is an error),
//!   exemplars after ` # {...}` (validated, then ignored), float timestamps,
//!   `# UNIT` and other comments (skipped);
//! - Prometheus 3 quoted names: `{"my.metric", "my.label"="v"} 1`;
//! - blanks or tabs around names, `=` and `,` inside braces, a trailing comma,
//!   CRLF line ends, a leading byte order mark.
//!
//! Escapes in quoted strings are read as Prometheus reads them: `\\`, `\"`
//! and `\n` are decoded, and any other backslash is kept with the character
//! after it (`\z` reads as `\z`, `C:\Users` as `C:\Users`). Established
//! from Prometheus's own text parser (`model/textparse`): the lexer
//! (`promlex.l`) accepts a label value `\"(\\.|[^\\"])*\"`, any escaped
//! character, and `promparse.go` decodes it with
//! `strings.NewReplacer(`\"`, "\"", `\\`, "\\", `\n`, "\n")`, which leaves
//! every other pair as written; `openmetricsparse.go` uses the same replacer.
//! Rejecting them failed the whole scrape for one series no selector reads
//! (issue 27: `other_info{path="C:\Users"} 1`).
//!
//! Rejected on purpose: duplicate label names, a `__name__` label,
//! trailing content after the timestamp.
//!
//! The hot path is [`for_each_sample`]: it hands out label slices borrowed
//! from the text and allocates only for lines with escapes (about 140 ns per
//! 4-label line, 4-5 times faster than `prometheus-parse`; see
//! `benches/exposition.rs`). [`parse`] collects owned [`Sample`]s on top of it.
//!
//! Where things are: this file holds the samples, the limits, the errors
//! and the assembly of a body's lines into samples; `scanner` reads one
//! sample line; `escape` holds the quoting rules both ways (decoding what
//! the scanner read, writing a sample back); `numbers` reads and writes
//! values.

use std::borrow::Cow;

use thiserror::Error;

mod escape;
mod numbers;
mod scanner;

use escape::unescape;
use scanner::{Cursor, ParsedLine};

pub use super::names::{is_label_name, is_metric_name};

/// One parsed sample, owned.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name, e.g. `http_requests_total`.
    pub name: String,
    /// Label pairs in exposition order, unescaped.
    pub labels: Vec<(String, String)>,
    /// Sample value; may be NaN or infinite.
    pub value: f64,
}

impl Sample {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// One label pair as the streaming parser hands it out: `(name, value)`,
/// unescaped.
pub type LabelRef<'a> = (&'a str, &'a str);

/// One parsed sample, borrowed from the text (or, for a line with escapes,
/// from that line's decoded copy).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleRef<'a> {
    /// Metric name.
    pub name: &'a str,
    /// Label pairs in exposition order, unescaped.
    pub labels: &'a [LabelRef<'a>],
    /// Sample value; may be NaN or infinite.
    pub value: f64,
    /// The timestamp as written (milliseconds in 0.0.4, seconds in
    /// OpenMetrics), if any. The governor uses its own clock.
    pub timestamp: Option<f64>,
}

impl SampleRef<'_> {
    /// The value of label `name`, if present.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
    }

    /// An owned copy.
    pub fn to_sample(&self) -> Sample {
        Sample {
            name: self.name.to_owned(),
            labels: self
                .labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            value: self.value,
        }
    }
}

/// Bounds on one exposition, so a runaway endpoint cannot exhaust memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// More samples than this fail the parse with
    /// [`ExpositionError::TooManySamples`].
    pub max_samples: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_samples: 1_000_000,
        }
    }
}

/// Why an exposition could not be read. Any error means the whole scrape is
/// unusable: partial results must be discarded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ExpositionError {
    /// A line that is neither blank, a comment, nor a valid sample.
    #[error("line {line}, column {column}: {reason}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong, quoting the offending text.
        reason: String,
    },
    /// The body parsed but held no sample at all.
    #[error(
        "the exposition holds no samples: check that the URL serves Prometheus \
         text format (usually /metrics) and that the tool has started"
    )]
    NoSamples,
    /// More samples than [`Limits::max_samples`].
    #[error(
        "the exposition holds more than {max} samples: scrape a narrower \
         endpoint or raise the sample limit"
    )]
    TooManySamples {
        /// The limit that was exceeded.
        max: usize,
    },
}

impl ExpositionError {
    /// A bounded snake_case label for metrics (`error_type`).
    pub fn error_type(&self) -> &'static str {
        match self {
            ExpositionError::Line { .. } => "parse",
            ExpositionError::NoSamples => "no_samples",
            ExpositionError::TooManySamples { .. } => "too_many_samples",
        }
    }
}

/// Parses a whole exposition into owned samples.
pub fn parse(text: &str, limits: &Limits) -> Result<Vec<Sample>, ExpositionError> {
    let mut samples = Vec::new();
    for_each_sample(text, limits, |sample| samples.push(sample.to_sample()))?;
    Ok(samples)
}

/// Streams every sample of `text` to `on_sample`, in order, and returns how
/// many there were.
///
/// On `Err` the callback may already have seen earlier samples: discard
/// whatever it accumulated. Allocates only for lines with escapes (and to
/// grow one reused label buffer).
pub fn for_each_sample<'t, F>(
    text: &'t str,
    limits: &Limits,
    mut on_sample: F,
) -> Result<usize, ExpositionError>
where
    F: FnMut(SampleRef<'_>),
{
    // A byte order mark is not data; some Windows tools write one.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut labels: Vec<LabelRef<'t>> = Vec::new();
    let mut count = 0usize;
    let mut eof_line: Option<usize> = None;
    for (index, raw) in text.split('\n').enumerate() {
        let line_no = index + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let content = line.trim_start_matches([' ', '\t']);
        if content.is_empty() {
            continue;
        }
        if let Some(eof) = eof_line {
            return Err(ExpositionError::Line {
                line: line_no,
                column: 1,
                reason: format!("content after `# EOF` on line {eof}"),
            });
        }
        if content.starts_with('#') {
            if content.trim_end_matches([' ', '\t']) == "# EOF" {
                eof_line = Some(line_no);
            }
            continue;
        }
        labels.clear();
        let mut cursor = Cursor {
            line,
            pos: line.len() - content.len(),
            escaped: false,
        };
        let parsed = cursor
            .sample(&mut labels)
            .map_err(|fault| fault.into_error(line_no, line))?;
        count += 1;
        if count > limits.max_samples {
            return Err(ExpositionError::TooManySamples {
                max: limits.max_samples,
            });
        }
        if cursor.escaped {
            with_unescaped(&parsed, &labels, &mut on_sample);
        } else {
            on_sample(SampleRef {
                name: parsed.name,
                labels: &labels,
                value: parsed.value,
                timestamp: parsed.timestamp,
            });
        }
    }
    if count == 0 {
        return Err(ExpositionError::NoSamples);
    }
    Ok(count)
}

/// Hands out a sample whose name or label values had escapes, decoded. Rare,
/// so it may allocate.
#[cold]
#[inline(never)]
fn with_unescaped<F>(parsed: &ParsedLine<'_>, raw: &[LabelRef<'_>], on_sample: &mut F)
where
    F: FnMut(SampleRef<'_>),
{
    let decoded: Vec<(Cow<'_, str>, Cow<'_, str>)> = raw
        .iter()
        .map(|(name, value)| (unescape(name), unescape(value)))
        .collect();
    let labels: Vec<LabelRef<'_>> = decoded
        .iter()
        .map(|(name, value)| (name.as_ref(), value.as_ref()))
        .collect();
    on_sample(SampleRef {
        name: &unescape(parsed.name),
        labels: &labels,
        value: parsed.value,
        timestamp: parsed.timestamp,
    });
}

#[cfg(test)]
mod tests;
