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

use std::borrow::Cow;
use std::fmt;

use thiserror::Error;

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

/// Renders the sample as one valid exposition line (without a newline), with
/// label values escaped and non-identifier names in the quoted form.
impl fmt::Display for Sample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quoted_name = !is_metric_name(&self.name);
        if quoted_name {
            f.write_str("{")?;
            write_quoted(f, &self.name)?;
            if !self.labels.is_empty() {
                f.write_str(",")?;
            }
        } else {
            f.write_str(&self.name)?;
            if !self.labels.is_empty() {
                f.write_str("{")?;
            }
        }
        for (i, (name, value)) in self.labels.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if is_label_name(name) {
                f.write_str(name)?;
            } else {
                write_quoted(f, name)?;
            }
            f.write_str("=")?;
            write_quoted(f, value)?;
        }
        if quoted_name || !self.labels.is_empty() {
            f.write_str("}")?;
        }
        f.write_str(" ")?;
        write_value(f, self.value)
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

/// Decodes `\\`, `\"` and `\n` in text the cursor has already validated;
/// any other escape keeps its backslash, as Prometheus's `lvalReplacer`.
fn unescape(raw: &str) -> Cow<'_, str> {
    if !raw.contains('\\') {
        return Cow::Borrowed(raw);
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(c @ ('\\' | '"')) => out.push(c),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `name` matches `[a-zA-Z_:][a-zA-Z0-9_:]*`, so it needs no quotes.
pub fn is_metric_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(is_name_start) && bytes.all(is_name_char)
}

/// Whether `name` matches `[a-zA-Z_][a-zA-Z0-9_]*`, so it needs no quotes.
pub fn is_label_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(is_label_start) && bytes.all(is_label_char)
}

/// Byte classes for names, one table lookup per byte on the hot path.
const NAME_START: u8 = 1;
const NAME_CHAR: u8 = 2;
const LABEL_START: u8 = 4;
const LABEL_CHAR: u8 = 8;

static BYTE_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let alpha = c.is_ascii_alphabetic() || c == b'_';
        let digit = c.is_ascii_digit();
        let mut class = 0;
        if alpha || c == b':' {
            class |= NAME_START | NAME_CHAR;
        }
        if digit {
            class |= NAME_CHAR | LABEL_CHAR;
        }
        if alpha {
            class |= LABEL_START | LABEL_CHAR;
        }
        table[b] = class;
        b += 1;
    }
    table
};

#[inline]
fn has_class(b: u8, class: u8) -> bool {
    BYTE_CLASS[usize::from(b)] & class != 0
}

#[inline]
fn is_name_start(b: u8) -> bool {
    has_class(b, NAME_START)
}

#[inline]
fn is_name_char(b: u8) -> bool {
    has_class(b, NAME_CHAR)
}

#[inline]
fn is_label_start(b: u8) -> bool {
    has_class(b, LABEL_START)
}

#[inline]
fn is_label_char(b: u8) -> bool {
    has_class(b, LABEL_CHAR)
}

#[inline]
fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The index of the first `"` or `\\` in `bytes`, eight bytes at a time.
#[inline]
fn find_quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    // Sets the high bit of each zero byte; only the lowest set bit is exact,
    // which is the one we use.
    let zero_bytes = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let Ok(array) = <[u8; 8]>::try_from(chunk) else {
            break;
        };
        let word = u64::from_le_bytes(array);
        let hits = zero_bytes(word ^ QUOTES) | zero_bytes(word ^ BACKSLASHES);
        if hits != 0 {
            return Some(offset + (hits.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    bytes
        .get(offset..)
        .unwrap_or_default()
        .iter()
        .position(|&b| b == b'"' || b == b'\\')
        .map(|i| offset + i)
}

/// Writes `s` as an exposition quoted string: `\\`, `\"` and `\n` escaped.
fn write_quoted(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    let mut rest = s;
    while let Some(i) = rest.find(['\\', '"', '\n']) {
        let (plain, tail) = rest.split_at(i);
        f.write_str(plain)?;
        let mut chars = tail.chars();
        f.write_str(match chars.next() {
            Some('\\') => "\\\\",
            Some('"') => "\\\"",
            _ => "\\n",
        })?;
        rest = chars.as_str();
    }
    f.write_str(rest)?;
    f.write_str("\"")
}

/// Writes a value the way Prometheus does: `NaN`, `+Inf`, `-Inf`, or the
/// shortest decimal that parses back to the same `f64`.
fn write_value(f: &mut fmt::Formatter<'_>, value: f64) -> fmt::Result {
    if value.is_nan() {
        f.write_str("NaN")
    } else if value == f64::INFINITY {
        f.write_str("+Inf")
    } else if value == f64::NEG_INFINITY {
        f.write_str("-Inf")
    } else {
        write!(f, "{value:?}")
    }
}

/// What one sample line yields besides its labels. The name is as written:
/// when the cursor saw escapes, it still holds them.
struct ParsedLine<'t> {
    name: &'t str,
    value: f64,
    timestamp: Option<f64>,
}

/// A parse failure inside one line, at a byte offset.
struct Fault {
    at: usize,
    reason: String,
}

impl Fault {
    fn into_error(self, line_no: usize, line: &str) -> ExpositionError {
        let column = line
            .get(..self.at)
            .map_or(self.at, |before| before.chars().count())
            + 1;
        ExpositionError::Line {
            line: line_no,
            column,
            reason: self.reason,
        }
    }
}

/// The longest excerpt of input quoted in an error message, in characters.
const EXCERPT_CHARS: usize = 40;

/// `s` shortened for an error message, with control characters escaped.
fn excerpt(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().take(EXCERPT_CHARS) {
        push_printable(&mut out, c);
    }
    if s.chars().nth(EXCERPT_CHARS).is_some() {
        out.push_str("...");
    }
    out
}

/// Appends `c`, escaped only when it is a control character, so a message
/// shows `"` and `\\` as they are but never breaks a log line.
pub(crate) fn push_printable(out: &mut String, c: char) {
    if c.is_control() {
        out.extend(c.escape_debug());
    } else {
        out.push(c);
    }
}

/// A position inside one line. All offsets it stops at are on ASCII bytes or
/// the line's end, so slicing between them stays on char boundaries; every
/// slice still goes through `get` so a bug cannot panic.
struct Cursor<'t> {
    line: &'t str,
    pos: usize,
    /// Whether a quoted string on this line had escapes: its slice still
    /// holds them and must be decoded before use.
    escaped: bool,
}

impl<'t> Cursor<'t> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.line.as_bytes().get(self.pos).copied()
    }

    #[inline]
    fn slice(&self, from: usize, to: usize) -> &'t str {
        self.line.get(from..to).unwrap_or_default()
    }

    #[inline]
    fn skip_blanks(&mut self) -> bool {
        let start = self.pos;
        while self.peek().is_some_and(is_blank) {
            self.pos += 1;
        }
        self.pos > start
    }

    #[inline]
    fn skip_while(&mut self, keep: fn(u8) -> bool) -> &'t str {
        let start = self.pos;
        while self.peek().is_some_and(keep) {
            self.pos += 1;
        }
        self.slice(start, self.pos)
    }

    /// Describes what is at the cursor, for error messages.
    fn found(&self) -> String {
        match self
            .line
            .get(self.pos..)
            .and_then(|rest| rest.chars().next())
        {
            Some(c) => {
                let mut out = String::from("`");
                push_printable(&mut out, c);
                out.push('`');
                out
            }
            None => "the end of the line".to_owned(),
        }
    }

    fn fault(&self, reason: String) -> Fault {
        Fault {
            at: self.pos,
            reason,
        }
    }

    /// One sample line, the cursor at its first non-blank byte.
    fn sample(&mut self, labels: &mut Vec<LabelRef<'t>>) -> Result<ParsedLine<'t>, Fault> {
        let name = if self.peek() == Some(b'{') {
            let open = self.pos;
            self.pos += 1;
            match self.label_set(labels, true)? {
                Some(name) => name,
                None => {
                    return Err(Fault {
                        at: open,
                        reason: "missing metric name: expected a name before `{` or a \
                                 quoted name first inside it"
                            .to_owned(),
                    })
                }
            }
        } else {
            let name = self.skip_while(is_name_char);
            if !name.bytes().next().is_some_and(is_name_start) {
                return Err(self.fault(format!(
                    "expected a metric name, a `#` comment or a blank line, found {}",
                    if name.is_empty() {
                        self.found()
                    } else {
                        format!("`{}`", excerpt(name))
                    }
                )));
            }
            let after_name = self.pos;
            self.skip_blanks();
            if self.peek() == Some(b'{') {
                self.pos += 1;
                self.label_set(labels, false)?;
            } else if self.pos == after_name && self.peek().is_some() {
                return Err(self.fault(format!(
                    "unexpected {} after metric name `{}`: names match \
                     [a-zA-Z_:][a-zA-Z0-9_:]*, other names need the quoted form {{\"name\"}}",
                    self.found(),
                    excerpt(name)
                )));
            } else {
                // The blanks separate the value; let the value parser see them.
                self.pos = after_name;
            }
            name
        };
        check_label_names(labels).map_err(|reason| self.fault(reason))?;

        let (value, timestamp) = self.value_and_timestamp("sample")?;
        if self.peek() == Some(b'#') {
            self.pos += 1;
            self.exemplar(labels)?;
        }
        Ok(ParsedLine {
            name,
            value,
            timestamp,
        })
    }

    /// ` value [timestamp]`, the cursor right after the name or label set.
    /// Leaves the cursor at the end of the line or at a `#`.
    fn value_and_timestamp(&mut self, what: &str) -> Result<(f64, Option<f64>), Fault> {
        let blank = self.skip_blanks();
        if self.peek().is_none() {
            return Err(self.fault(format!("missing {what} value")));
        }
        if !blank {
            return Err(self.fault(format!(
                "expected a space before the {what} value, found {}",
                self.found()
            )));
        }
        let start = self.pos;
        let token = self.skip_while(|b| !is_blank(b));
        let value = parse_float(token).ok_or_else(|| Fault {
            at: start,
            reason: format!("invalid {what} value `{}`", excerpt(token)),
        })?;
        self.skip_blanks();
        let timestamp = match self.peek() {
            None | Some(b'#') => None,
            Some(_) => {
                let start = self.pos;
                let token = self.skip_while(|b| !is_blank(b));
                let timestamp = parse_float(token).filter(|t| t.is_finite());
                if timestamp.is_none() {
                    return Err(Fault {
                        at: start,
                        reason: format!("invalid timestamp `{}`", excerpt(token)),
                    });
                }
                self.skip_blanks();
                if self.peek().is_some_and(|b| b != b'#') {
                    return Err(self.fault(format!(
                        "unexpected `{}` after the timestamp",
                        excerpt(self.slice(self.pos, self.line.len()))
                    )));
                }
                timestamp
            }
        };
        Ok((value, timestamp))
    }

    /// An OpenMetrics exemplar `{labels} value [timestamp]`, the cursor after
    /// its `#`. Validated, then forgotten.
    fn exemplar(&mut self, labels: &mut Vec<LabelRef<'t>>) -> Result<(), Fault> {
        self.skip_blanks();
        if self.peek() != Some(b'{') {
            return Err(self.fault(format!(
                "expected an exemplar `{{labels}} value` after `#`, found {}",
                self.found()
            )));
        }
        self.pos += 1;
        let keep = labels.len();
        let result = self.label_set(labels, false);
        labels.truncate(keep);
        result?;
        let (_, _) = self.value_and_timestamp("exemplar")?;
        if self.peek().is_some() {
            return Err(self.fault(format!("unexpected {} after the exemplar", self.found())));
        }
        Ok(())
    }

    /// Label pairs up to and including `}`, the cursor after `{`. With
    /// `allow_name`, a lone quoted string first is the metric name.
    fn label_set(
        &mut self,
        labels: &mut Vec<LabelRef<'t>>,
        allow_name: bool,
    ) -> Result<Option<&'t str>, Fault> {
        let mut metric_name = None;
        let mut first = true;
        loop {
            self.skip_blanks();
            let name_at = self.pos;
            let label_name = match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(metric_name);
                }
                Some(b'"') => {
                    let quoted = self.quoted("name")?;
                    self.skip_blanks();
                    if first && allow_name && matches!(self.peek(), Some(b',' | b'}')) {
                        if quoted.is_empty() {
                            return Err(Fault {
                                at: name_at,
                                reason: "empty metric name".to_owned(),
                            });
                        }
                        metric_name = Some(quoted);
                        first = false;
                        if self.peek() == Some(b',') {
                            self.pos += 1;
                        }
                        continue;
                    }
                    if quoted.is_empty() {
                        return Err(Fault {
                            at: name_at,
                            reason: "empty label name".to_owned(),
                        });
                    }
                    quoted
                }
                Some(b) if is_label_start(b) => self.skip_while(is_label_char),
                Some(_) => {
                    return Err(self.fault(format!(
                        "expected a label name or `}}`, found {}",
                        self.found()
                    )))
                }
                None => return Err(self.fault("unterminated label set: missing `}`".to_owned())),
            };
            first = false;
            self.skip_blanks();
            if self.peek() != Some(b'=') {
                return Err(self.fault(format!(
                    "expected `=` after label name `{}`, found {}",
                    excerpt(label_name),
                    self.found()
                )));
            }
            self.pos += 1;
            self.skip_blanks();
            if self.peek() != Some(b'"') {
                return Err(self.fault(format!(
                    "expected `\"` to open the value of label `{}`, found {}",
                    excerpt(label_name),
                    self.found()
                )));
            }
            let value = self.quoted("value")?;
            labels.push((label_name, value));
            self.skip_blanks();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(metric_name);
                }
                None => return Err(self.fault("unterminated label set: missing `}`".to_owned())),
                Some(_) => {
                    let last = labels.last().map(|(k, _)| excerpt(k)).unwrap_or_default();
                    return Err(self.fault(format!(
                        "expected `,` or `}}` after the value of label `{last}`, found {}",
                        self.found()
                    )));
                }
            }
        }
    }

    /// A double-quoted string, the cursor at its opening quote: the raw text
    /// between the quotes, borrowed. Escapes are left in place and flagged
    /// in `self.escaped`.
    #[inline(always)]
    fn quoted(&mut self, what: &str) -> Result<&'t str, Fault> {
        let start = self.pos + 1;
        let rest = self.line.as_bytes().get(start..).unwrap_or_default();
        match find_quote_or_backslash(rest) {
            Some(len) if rest.get(len) == Some(&b'"') => {
                self.pos = start + len + 1;
                Ok(self.slice(start, start + len))
            }
            _ => self.quoted_with_escapes(what),
        }
    }

    /// The slow path of [`Cursor::quoted`]: validates escapes or reports the
    /// string as unterminated.
    #[cold]
    #[inline(never)]
    fn quoted_with_escapes(&mut self, what: &str) -> Result<&'t str, Fault> {
        let open = self.pos;
        let start = open + 1;
        let bytes = self.line.as_bytes();
        let mut i = start;
        loop {
            let run = bytes.get(i..).unwrap_or_default();
            let Some(len) = find_quote_or_backslash(run) else {
                return Err(unterminated(open, what));
            };
            i += len;
            if bytes.get(i) == Some(&b'"') {
                self.pos = i + 1;
                return Ok(self.slice(start, i));
            }
            // Any escaped character, as Prometheus's lexer accepts; only
            // `\\`, `\"` and `\n` decode (see the module docs).
            match bytes.get(i + 1) {
                Some(_) => self.escaped = true,
                None => return Err(unterminated(open, what)),
            }
            i += 2;
        }
    }
}

fn unterminated(open: usize, what: &str) -> Fault {
    Fault {
        at: open,
        reason: format!("unterminated quoted label {what}: missing closing `\"`"),
    }
}

/// Rejects duplicate label names and a `__name__` label. Works on raw names:
/// decoding escapes maps distinct raw names to distinct names.
fn check_label_names(labels: &[LabelRef<'_>]) -> Result<(), String> {
    if labels.iter().any(|(k, _)| *k == "__name__") {
        return Err("label `__name__` is not allowed: write the metric name before `{`".into());
    }
    let duplicate = if labels.len() <= 16 {
        labels.iter().enumerate().find_map(|(i, (k, _))| {
            labels
                .get(i + 1..)
                .unwrap_or_default()
                .iter()
                .any(|(other, _)| same_name(other, k))
                .then_some(*k)
        })
    } else {
        let mut names: Vec<&str> = labels.iter().map(|(k, _)| *k).collect();
        names.sort_unstable();
        names.windows(2).find_map(|pair| match pair {
            [a, b] if a == b => Some(*a),
            _ => None,
        })
    };
    match duplicate {
        Some(name) => Err(format!("duplicate label `{}`", excerpt(name))),
        None => Ok(()),
    }
}

/// `a == b`, with the first byte compared inline: label names of equal length
/// usually differ there, which saves a `memcmp` call per pair.
#[inline]
fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.as_bytes().first() == b.as_bytes().first() && a == b
}

/// Parses a value or timestamp: decimal or scientific floats, `NaN`, `Inf`,
/// `+Inf`, `-Inf` (case-insensitive, as Go's `ParseFloat`).
fn parse_float(token: &str) -> Option<f64> {
    fast_decimal(token).or_else(|| token.parse::<f64>().ok())
}

/// Exact fast path for the common `123` / `123.45` shapes: at most 15
/// significant digits, so mantissa and power of ten are both exact `f64`s and
/// one division rounds correctly.
fn fast_decimal(token: &str) -> Option<f64> {
    const POW10: [f64; 16] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
    ];
    let bytes = token.as_bytes();
    if bytes.is_empty() || bytes.len() > 16 {
        return None;
    }
    let mut mantissa: u64 = 0;
    let mut digits = 0usize;
    let mut fraction_digits = None;
    for &b in bytes {
        match b {
            b'0'..=b'9' => {
                mantissa = mantissa * 10 + u64::from(b - b'0');
                digits += 1;
                if let Some(n) = fraction_digits.as_mut() {
                    *n += 1;
                }
            }
            b'.' if fraction_digits.is_none() => fraction_digits = Some(0usize),
            _ => return None,
        }
    }
    if digits == 0 || digits > 15 {
        return None;
    }
    // `mantissa < 10^15 < 2^53`: the conversion is exact.
    let whole = mantissa as f64;
    match fraction_digits {
        None | Some(0) => Some(whole),
        Some(n) => POW10.get(n).map(|p| whole / p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Vec<Sample> {
        parse(text, &Limits::default()).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn err(text: &str) -> ExpositionError {
        match parse(text, &Limits::default()) {
            Ok(samples) => panic!("{text:?} parsed to {samples:?}"),
            Err(e) => e,
        }
    }

    fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
        Sample {
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            value,
        }
    }

    /// Every case of PROMETHEUS-PARSE.md, where prometheus-parse drops or
    /// mangles, must come out whole here.
    #[test]
    fn prometheus_parse_md_table() {
        assert_eq!(
            ok(r#"a{op="read",result="failure",route="/users/{id}"} 10"#),
            [sample(
                "a",
                &[
                    ("op", "read"),
                    ("result", "failure"),
                    ("route", "/users/{id}")
                ],
                10.0
            )]
        );
        assert_eq!(
            ok(r#"a{ op = "read" } 10"#),
            [sample("a", &[("op", "read")], 10.0)]
        );
        assert_eq!(
            ok(r#"a{route="/x?ids=1,2",op="read",result="failure"} 10"#),
            [sample(
                "a",
                &[
                    ("route", "/x?ids=1,2"),
                    ("op", "read"),
                    ("result", "failure")
                ],
                10.0
            )]
        );
        assert_eq!(
            ok(r#"a{op="read",q="a=b"} 10"#),
            [sample("a", &[("op", "read"), ("q", "a=b")], 10.0)]
        );
        assert_eq!(
            ok(r#"a{msg="say \"hi\""} 10"#),
            [sample("a", &[("msg", "say \"hi\"")], 10.0)]
        );
        let garbage =
            String::from_utf8_lossy(&[0x00, 0xff, 0xfe, 0x89, b'P', b'N', b'G', 0x0d, 0x0a]);
        assert_eq!(err(&garbage).error_type(), "parse");

        let openmetrics = "# TYPE f counter\n# HELP f Requests.\n# UNIT f requests\n\
                           f_total 17.0\nf_created 1.7e9\n# EOF\n";
        assert_eq!(
            ok(openmetrics),
            [
                sample("f_total", &[], 17.0),
                sample("f_created", &[], 1.7e9)
            ]
        );
        assert_eq!(
            ok("f_total{op=\"read\"} 3 # {trace_id=\"x\"} 1.0\n"),
            [sample("f_total", &[("op", "read")], 3.0)]
        );

        let values = ok("a NaN\nb +Inf\nc -Inf\nd 1.5e3\ne 2E-2\n");
        assert!(values[0].value.is_nan());
        assert_eq!(values[1].value, f64::INFINITY);
        assert_eq!(values[2].value, f64::NEG_INFINITY);
        assert_eq!(values[3].value, 1500.0);
        assert_eq!(values[4].value, 0.02);
        assert_eq!(
            ok("a{x=\"1\"} 1\r\nb 2\r\n"),
            [sample("a", &[("x", "1")], 1.0), sample("b", &[], 2.0)]
        );
        assert_eq!(
            ok("a{city=\"Zürich\",emoji=\"🚦\"} 1"),
            [sample("a", &[("city", "Zürich"), ("emoji", "🚦")], 1.0)]
        );
        assert_eq!(
            ok("a 1 1543182234000\nb{x=\"y\"} 2 1543182234.5"),
            [sample("a", &[], 1.0), sample("b", &[("x", "y")], 2.0)]
        );
    }

    #[test]
    fn valid_lines() {
        let cases: &[(&str, Sample)] = &[
            ("a 1", sample("a", &[], 1.0)),
            ("a{} 1", sample("a", &[], 1.0)),
            ("a {} 1", sample("a", &[], 1.0)),
            ("a { } 1", sample("a", &[], 1.0)),
            ("a:b_c:d 1", sample("a:b_c:d", &[], 1.0)),
            ("_a 1", sample("_a", &[], 1.0)),
            (":a 1", sample(":a", &[], 1.0)),
            ("A9 1", sample("A9", &[], 1.0)),
            ("  a 1", sample("a", &[], 1.0)),
            ("\ta\t1\t", sample("a", &[], 1.0)),
            ("a 1   ", sample("a", &[], 1.0)),
            ("a    1", sample("a", &[], 1.0)),
            (r#"a{b="c",} 1"#, sample("a", &[("b", "c")], 1.0)),
            (
                r#"a{b="c" , d="e" ,} 1"#,
                sample("a", &[("b", "c"), ("d", "e")], 1.0),
            ),
            (r#"a{	b	=	"c"	} 1"#, sample("a", &[("b", "c")], 1.0)),
            (r#"a {b="c"} 1"#, sample("a", &[("b", "c")], 1.0)),
            (r#"a{b=""} 1"#, sample("a", &[("b", "")], 1.0)),
            (r#"a{b="{}"} 1"#, sample("a", &[("b", "{}")], 1.0)),
            (r#"a{b="}"} 1"#, sample("a", &[("b", "}")], 1.0)),
            (r#"a{b=","} 1"#, sample("a", &[("b", ",")], 1.0)),
            (r#"a{b="="} 1"#, sample("a", &[("b", "=")], 1.0)),
            (r##"a{b="# x"} 1"##, sample("a", &[("b", "# x")], 1.0)),
            (r#"a{b=" "} 1"#, sample("a", &[("b", " ")], 1.0)),
            (r#"a{b="\\"} 1"#, sample("a", &[("b", "\\")], 1.0)),
            (r#"a{b="\n"} 1"#, sample("a", &[("b", "\n")], 1.0)),
            (
                r#"a{b="\"\\\n\""} 1"#,
                sample("a", &[("b", "\"\\\n\"")], 1.0),
            ),
            (r#"a{b="x\\ny"} 1"#, sample("a", &[("b", "x\\ny")], 1.0)),
            (
                r#"a{b="c\"d",e="f"} 1"#,
                sample("a", &[("b", "c\"d"), ("e", "f")], 1.0),
            ),
            (r#"a{b="日本"} 1"#, sample("a", &[("b", "日本")], 1.0)),
            (r#"a{le="+Inf"} 1"#, sample("a", &[("le", "+Inf")], 1.0)),
            ("a 0", sample("a", &[], 0.0)),
            ("a -0", sample("a", &[], -0.0)),
            ("a -1.5", sample("a", &[], -1.5)),
            ("a +1.5", sample("a", &[], 1.5)),
            ("a .5", sample("a", &[], 0.5)),
            ("a 5.", sample("a", &[], 5.0)),
            ("a 1e308", sample("a", &[], 1e308)),
            ("a 1.7976931348623157e308", sample("a", &[], f64::MAX)),
            ("a 4.9e-324", sample("a", &[], 4.9e-324)),
            ("a 123456789012345", sample("a", &[], 123_456_789_012_345.0)),
            (
                "a 12345678901234567890",
                sample("a", &[], 1.2345678901234567e19),
            ),
            ("a 0.1", sample("a", &[], 0.1)),
            ("a 1234.56789012345", sample("a", &[], 1234.56789012345)),
            ("a 0.000000000000001", sample("a", &[], 1e-15)),
            ("a Inf", sample("a", &[], f64::INFINITY)),
            ("a inf", sample("a", &[], f64::INFINITY)),
            ("a 1 -5", sample("a", &[], 1.0)),
            ("a 1 1.5", sample("a", &[], 1.0)),
            ("a 1 # {} 2", sample("a", &[], 1.0)),
            ("a 1 123 # {x=\"y\"} 2 1.5", sample("a", &[], 1.0)),
            (
                "a_bucket{le=\"0.5\"} 1 # {trace_id=\"a{b}\"} 0.4",
                sample("a_bucket", &[("le", "0.5")], 1.0),
            ),
            (r#"{"my.metric"} 1"#, sample("my.metric", &[], 1.0)),
            (r#"{"my.metric",} 1"#, sample("my.metric", &[], 1.0)),
            (
                r#"{ "my.metric" , a="b" } 1"#,
                sample("my.metric", &[("a", "b")], 1.0),
            ),
            (
                r#"{"a\"b", "my.label"="v"} 1"#,
                sample("a\"b", &[("my.label", "v")], 1.0),
            ),
            (
                r#"a{"label with space"="v"} 1"#,
                sample("a", &[("label with space", "v")], 1.0),
            ),
        ];
        for (line, expected) in cases {
            let got = ok(line);
            assert_eq!(got.len(), 1, "{line:?}");
            let got = &got[0];
            assert_eq!(got.name, expected.name, "{line:?}");
            assert_eq!(got.labels, expected.labels, "{line:?}");
            assert_eq!(got.value.to_bits(), expected.value.to_bits(), "{line:?}");
        }
    }

    #[test]
    fn invalid_lines() {
        // (input, 1-based line, 1-based column, part of the reason)
        let cases: &[(&str, usize, usize, &str)] = &[
            ("a", 1, 2, "missing sample value"),
            ("a ", 1, 3, "missing sample value"),
            ("a{}", 1, 4, "missing sample value"),
            (
                "a{b=\"c\"}1",
                1,
                9,
                "expected a space before the sample value",
            ),
            ("a x", 1, 3, "invalid sample value `x`"),
            ("a 1x", 1, 3, "invalid sample value `1x`"),
            ("a 0x10", 1, 3, "invalid sample value"),
            ("a 1,5", 1, 3, "invalid sample value"),
            ("a 1 x", 1, 5, "invalid timestamp `x`"),
            ("a 1 NaN", 1, 5, "invalid timestamp"),
            ("a 1 2 3", 1, 7, "unexpected `3` after the timestamp"),
            ("a 1 #", 1, 6, "expected an exemplar"),
            ("a 1 # x", 1, 7, "expected an exemplar"),
            ("a 1 # {x=\"y\"}", 1, 14, "missing exemplar value"),
            ("a 1 # {x=\"y\"} z", 1, 15, "invalid exemplar value"),
            ("a 1 # {x=y} 1", 1, 10, "expected `\"`"),
            (
                "a 1 # {x=\"y\"} 1 2 3",
                1,
                19,
                "unexpected `3` after the timestamp",
            ),
            ("1a 1", 1, 3, "expected a metric name"),
            ("a-b 1", 1, 2, "unexpected `-` after metric name `a`"),
            ("a.b 1", 1, 2, "quoted form"),
            ("é 1", 1, 1, "expected a metric name"),
            ("\u{fffd}\u{fffd}PNG", 1, 1, "expected a metric name"),
            ("<html>", 1, 1, "expected a metric name"),
            ("a{", 1, 3, "unterminated label set"),
            ("a{b", 1, 4, "expected `=` after label name `b`"),
            ("a{b=", 1, 5, "expected `\"` to open the value of label `b`"),
            (
                "a{b=c} 1",
                1,
                5,
                "expected `\"` to open the value of label `b`",
            ),
            ("a{b='c'} 1", 1, 5, "expected `\"`"),
            ("a{b=\"c} 1", 1, 5, "unterminated quoted label value"),
            ("a{b=\"c\\\"} 1", 1, 5, "unterminated quoted label value"),
            ("a{b=\"c\\", 1, 5, "unterminated quoted label value"),
            (
                "a{b=\"c\" d=\"e\"} 1",
                1,
                9,
                "expected `,` or `}` after the value of label `b`",
            ),
            ("a{b=\"c\"", 1, 8, "unterminated label set"),
            ("a{,} 1", 1, 3, "expected a label name or `}`"),
            ("a{b=\"c\",,} 1", 1, 9, "expected a label name or `}`"),
            ("a{1b=\"c\"} 1", 1, 3, "expected a label name"),
            ("a{b:c=\"d\"} 1", 1, 4, "expected `=` after label name `b`"),
            ("a{b==\"c\"} 1", 1, 5, "expected `\"`"),
            ("a{b=\"1\",b=\"2\"} 1", 1, 15, "duplicate label `b`"),
            ("a{__name__=\"b\"} 1", 1, 16, "`__name__` is not allowed"),
            ("a{\"\"=\"v\"} 1", 1, 3, "empty label name"),
            ("a{\"b\"} 1", 1, 6, "expected `=` after label name `b`"),
            ("{a=\"b\"} 1", 1, 1, "missing metric name"),
            ("{} 1", 1, 1, "missing metric name"),
            ("{\"\"} 1", 1, 2, "empty metric name"),
            ("{\"m\" 1", 1, 6, "expected `=` after label name `m`"),
            ("a}b 1", 1, 2, "unexpected `}`"),
            ("a 1\nb\n", 2, 2, "missing sample value"),
            (
                "# HELP a x\n\na 1\r\nb{c=\"\\x} 2\r\n",
                4,
                5,
                "unterminated quoted label value",
            ),
            ("a 1\n# EOF\nb 2\n", 3, 1, "content after `# EOF` on line 2"),
        ];
        for (text, line, column, reason) in cases {
            let error = err(text);
            let ExpositionError::Line {
                line: got_line,
                column: got_column,
                reason: got_reason,
            } = &error
            else {
                panic!("{text:?}: expected a line error, got {error}");
            };
            assert!(
                got_reason.contains(reason),
                "{text:?}: reason {got_reason:?} lacks {reason:?}"
            );
            assert_eq!((got_line, got_column), (line, column), "{text:?}: {error}");
            assert_eq!(error.error_type(), "parse");
            assert!(error
                .to_string()
                .starts_with(&format!("line {line}, column {column}: ")));
        }
    }

    #[test]
    fn no_samples_is_an_error() {
        for text in [
            "",
            "\n\n",
            "  \r\n",
            "# HELP a x\n# TYPE a counter\n",
            "# EOF\n",
        ] {
            let error = err(text);
            assert_eq!(error, ExpositionError::NoSamples, "{text:?}");
            assert_eq!(error.error_type(), "no_samples");
        }
    }

    #[test]
    fn too_many_samples() {
        let limits = Limits { max_samples: 2 };
        assert_eq!(parse("a 1\nb 2\n", &limits).map(|s| s.len()), Ok(2));
        let error = parse("a 1\nb 2\nc 3\n", &limits).unwrap_err();
        assert_eq!(error, ExpositionError::TooManySamples { max: 2 });
        assert_eq!(error.error_type(), "too_many_samples");
        assert_eq!(Limits::default().max_samples, 1_000_000);
    }

    #[test]
    fn comments_and_blank_lines_are_skipped() {
        let text = "# HELP a The \"a\" {metric}.\n#TYPE a counter\n  # indented comment\n\n\
                    a 1\n#\n   \t\nb 2\n# EOF\n\n\r\n";
        assert_eq!(ok(text), [sample("a", &[], 1.0), sample("b", &[], 2.0)]);
    }

    #[test]
    fn leading_byte_order_mark_is_skipped() {
        assert_eq!(ok("\u{feff}a 1\n"), [sample("a", &[], 1.0)]);
        // Only at the very start.
        assert_eq!(err("a 1\n\u{feff}b 2\n").error_type(), "parse");
    }

    #[test]
    fn eof_needs_exact_form() {
        // `#EOF` is just a comment, so content after it still counts.
        assert_eq!(ok("#EOF\na 1").len(), 1);
        assert_eq!(ok("# EOF x\na 1").len(), 1);
        assert_eq!(ok("a 1\n# EOF  \n").len(), 1);
    }

    #[test]
    fn many_labels_duplicate_is_found() {
        let mut line = String::from("a{");
        for i in 0..40 {
            line.push_str(&format!("l{i}=\"v\","));
        }
        line.push_str("l7=\"again\"} 1");
        let ExpositionError::Line { reason, .. } = err(&line) else {
            panic!("expected a line error");
        };
        assert!(reason.contains("duplicate label `l7`"), "{reason}");
    }

    #[test]
    fn long_tokens_are_cut_in_errors() {
        let line = format!("a {}", "x".repeat(500));
        let message = err(&line).to_string();
        assert!(message.len() < 120, "{message}");
        assert!(message.contains("..."), "{message}");
    }

    #[test]
    fn streaming_borrows_from_the_text_unless_escaped() {
        let text = "a{b=\"plain\"} 1 1000\n{\"q\\\"n\", b=\"esc\\\"aped\\n\", c=\"x\"} 2\n";
        let range = text.as_bytes().as_ptr_range();
        let borrowed = |s: &str| range.contains(&s.as_ptr());
        let mut seen = Vec::new();
        let count = for_each_sample(text, &Limits::default(), |sample| {
            seen.push(sample.to_sample());
            if sample.name == "a" {
                assert!(borrowed(sample.name) && borrowed(sample.labels[0].1));
                assert_eq!(sample.label("b"), Some("plain"));
                assert_eq!(sample.label("d"), None);
                assert_eq!(sample.timestamp, Some(1000.0));
            } else {
                assert_eq!(sample.name, "q\"n");
                assert!(!borrowed(sample.name) && !borrowed(sample.labels[0].1));
                assert_eq!(sample.label("b"), Some("esc\"aped\n"));
                assert_eq!(sample.label("c"), Some("x"));
                assert_eq!(sample.timestamp, None);
            }
        });
        assert_eq!(count, Ok(2));
        assert_eq!(seen.len(), 2);
    }

    #[test]
    fn unescape_decodes_the_three_escapes() {
        assert!(matches!(unescape("plain"), Cow::Borrowed("plain")));
        assert_eq!(unescape(r#"a\\b\"c\nd"#), "a\\b\"c\nd");
        assert_eq!(unescape(r#"\\n"#), "\\n");
    }

    /// Issue 27 #6: label values read as Prometheus's `promparse.go` reads
    /// them (its `lvalReplacer` decodes `\\`, `\"` and `\n` and keeps every
    /// other backslash pair). Each of these lines failed the whole parse
    /// before (`invalid escape`).
    #[test]
    fn unknown_escapes_keep_their_backslash_as_in_prometheus() {
        let cases: &[(&str, &str)] = &[
            (r#"a{p="C:\Users"} 1"#, r"C:\Users"),
            (r#"a{p="C:\\Users"} 1"#, r"C:\Users"),
            (r#"a{p="C:\Users\me\x.txt"} 1"#, r"C:\Users\me\x.txt"),
            (r#"a{p="\z"} 1"#, r"\z"),
            (r#"a{p="\f"} 1"#, r"\f"),
            (r#"a{p="\t"} 1"#, r"\t"),
            (r#"a{p="\u0041"} 1"#, r"\u0041"),
            (r#"a{p="\é"} 1"#, r"\é"),
            (r#"a{p="\\z"} 1"#, r"\z"),
            (r#"a{p="\\\z"} 1"#, r"\\z"),
            (r#"a{p="\\"} 1"#, "\\"),
            (r#"a{p="\""} 1"#, "\""),
            (r#"a{p="\n"} 1"#, "\n"),
            (r#"a{p="x\\ny"} 1"#, r"x\ny"),
            (r#"a{p="say \"hi\"\n"} 1"#, "say \"hi\"\n"),
        ];
        for (line, want) in cases {
            let got = ok(&format!("{line}\n"));
            assert_eq!(got.len(), 1, "{line}");
            assert_eq!(got[0].label("p"), Some(*want), "{line}");
            // What we read renders back to text that reads the same.
            let again = ok(&format!("{}\n", got[0]));
            assert_eq!(again[0].label("p"), Some(*want), "{line} -> {}", got[0]);
        }
        // A series no selector reads no longer fails the scrape.
        let text = "other_info{path=\"C:\\Users\",x=\"\\z\\f\"} 1\nreq_total 5\n";
        let sel: crate::promtext::selector::Selector = "req_total".parse().unwrap();
        let sums = crate::promtext::selector::sum_many(text, &[&sel], &Limits { max_samples: 100 })
            .unwrap();
        assert_eq!(sums, vec![Some(5.0)]);
    }

    #[test]
    fn exemplar_labels_are_not_sample_labels() {
        let got = ok("a{x=\"1\"} 1 # {x=\"1\",trace=\"t\"} 1\n");
        assert_eq!(got, [sample("a", &[("x", "1")], 1.0)]);
    }

    #[test]
    fn display_renders_parseable_lines() {
        let cases = [
            sample("a", &[], 1.0),
            sample("a", &[("b", "c\"d\\e\nf{},=")], -2.5),
            sample("my.metric", &[], f64::INFINITY),
            sample(
                "my metric",
                &[("my.label", "x"), ("ok", "")],
                f64::NEG_INFINITY,
            ),
            sample("a", &[("b", "c")], 1e300),
        ];
        for expected in cases {
            let line = expected.to_string();
            assert_eq!(ok(&line), [expected], "{line}");
        }
        assert_eq!(
            sample("a", &[("b", "c")], 1.0).to_string(),
            "a{b=\"c\"} 1.0"
        );
        assert_eq!(sample("a.b", &[], f64::NAN).to_string(), "{\"a.b\"} NaN");
        assert_eq!(sample("a", &[], f64::INFINITY).to_string(), "a +Inf");
    }

    #[test]
    fn fast_decimal_agrees_with_std() {
        for token in [
            "0",
            "1",
            "10",
            "0.1",
            "0.3",
            "1.1",
            "123.456",
            "999999999999999",
            "99999999999999.9",
            "0.00000000000001",
            "7.",
            "000000000000001",
            "1234567890.12345",
        ] {
            assert_eq!(
                fast_decimal(token).map(f64::to_bits),
                token.parse::<f64>().ok().map(f64::to_bits),
                "{token}"
            );
        }
        for token in [
            "",
            ".",
            "0.000000000000001",
            "1..2",
            "1e5",
            "-1",
            "1234567890123456",
            "0.0000000000000001",
        ] {
            assert_eq!(fast_decimal(token), None, "{token}");
        }
    }

    #[test]
    fn word_scan_agrees_with_naive_scan() {
        let naive = |bytes: &[u8]| bytes.iter().position(|&b| b == b'"' || b == b'\\');
        let alphabet: &[u8] = b"a\"\\\x00\x80\xff!#\x5b\x5d\x21\x23\x7f";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..40 {
            for _ in 0..200 {
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        let pick = (state % 4) as usize;
                        // Mostly plain bytes, so hits land at every offset.
                        if pick == 0 {
                            alphabet[(state >> 8) as usize % alphabet.len()]
                        } else {
                            b'x'
                        }
                    })
                    .collect();
                assert_eq!(find_quote_or_backslash(&bytes), naive(&bytes), "{bytes:?}");
            }
        }
    }

    #[test]
    fn name_predicates() {
        assert!(is_metric_name("a:b_c9"));
        assert!(!is_metric_name("9a"));
        assert!(!is_metric_name(""));
        assert!(is_label_name("_a9"));
        assert!(!is_label_name("a:b"));
        assert!(!is_label_name(""));
    }
}
