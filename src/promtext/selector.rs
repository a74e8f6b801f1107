//! PromQL instant-vector selectors, evaluated against one scrape.
//!
//! Why: users already name their tool's counters in PromQL, e.g.
//! `http_reqs_total{result="failure", op=~"read|write"}`, so the config takes
//! the same syntax and means the same thing: regexes are fully anchored and
//! `.` matches a newline (Prometheus compiles `^(?s:re)$`), a missing label
//! reads as `""`, and values take PromQL string escapes in `"`, `'` or
//! backtick strings. Prometheus 3 quoted names (`{"my.metric", "a.b"="x"}`)
//! are accepted.
//!
//! A selector that matches no series sums to `None`, never to zero: a renamed
//! counter must surface as a signal error, not as "no failures". Use
//! [`sum_many`] to evaluate all of a target's selectors in one streaming pass
//! over the scrape text.
//!
//! ```
//! use throttle_governor::promtext::exposition::Limits;
//! use throttle_governor::promtext::selector::{sum_many, Selector};
//!
//! let scrape = "reqs{result=\"ok\"} 90\n\
//!               reqs{result=\"failure\",route=\"/users/{id}\"} 10\n";
//! let attempts: Selector = "reqs".parse()?;
//! let failures: Selector = r#"reqs{result=~"failure|timeout"}"#.parse()?;
//! let renamed: Selector = "requests_total".parse()?;
//! let sums = sum_many(scrape, &[&attempts, &failures, &renamed], &Limits::default())?;
//! assert_eq!(sums, [Some(100.0), Some(10.0), None]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::str::FromStr;

use regex::Regex;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use super::exposition::{
    self, is_label_name, is_metric_name, push_printable, ExpositionError, LabelRef, Limits, Sample,
    SampleRef,
};

/// The label PromQL uses for the metric name.
const NAME_LABEL: &str = "__name__";

/// How a matcher compares a label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchOp {
    /// `=`: equal.
    Equal,
    /// `!=`: not equal.
    NotEqual,
    /// `=~`: the anchored regex matches.
    Regex,
    /// `!~`: the anchored regex does not match.
    NotRegex,
}

impl MatchOp {
    /// The PromQL operator.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchOp::Equal => "=",
            MatchOp::NotEqual => "!=",
            MatchOp::Regex => "=~",
            MatchOp::NotRegex => "!~",
        }
    }
}

/// One `label op "value"` matcher.
#[derive(Debug, Clone)]
pub struct Matcher {
    label: String,
    op: MatchOp,
    value: String,
    /// `^(?s:value)$`, present for the two regex operators.
    regex: Option<Regex>,
}

impl Matcher {
    /// The label name (`__name__` for the metric name).
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The operator.
    pub fn op(&self) -> MatchOp {
        self.op
    }

    /// The value or regex source, unescaped.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// Whether a label value (`""` for a missing label) satisfies this matcher.
    pub fn matches_value(&self, value: &str) -> bool {
        match self.op {
            MatchOp::Equal => value == self.value,
            MatchOp::NotEqual => value != self.value,
            MatchOp::Regex => self.regex.as_ref().is_some_and(|re| re.is_match(value)),
            MatchOp::NotRegex => !self.regex.as_ref().is_some_and(|re| re.is_match(value)),
        }
    }
}

impl PartialEq for Matcher {
    fn eq(&self, other: &Self) -> bool {
        self.label == other.label && self.op == other.op && self.value == other.value
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_label_name(f, &self.label)?;
        f.write_str(self.op.as_str())?;
        write_string(f, &self.value)
    }
}

/// A parsed instant-vector selector such as `reqs_total{result!="ok"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    /// The metric name, when given bare, quoted, or as the first
    /// `__name__="..."` matcher; checked first because it rejects fastest.
    name: Option<String>,
    /// All other matchers, in the order written.
    matchers: Vec<Matcher>,
}

impl Selector {
    /// The exact metric name this selector requires, if any.
    pub fn metric_name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// The matchers other than the exact metric name.
    pub fn matchers(&self) -> &[Matcher] {
        &self.matchers
    }

    /// Whether the series `name{labels}` is selected. Works with owned
    /// (`String`) and borrowed (`Cow<str>`, `&str`) label pairs alike.
    pub fn matches<K, V>(&self, name: &str, labels: &[(K, V)]) -> bool
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        self.name_matches(name) && self.labels_match(labels)
    }

    /// Whether the metric name passes: the exact name and any `__name__`
    /// matchers.
    fn name_matches(&self, name: &str) -> bool {
        self.name.as_deref().is_none_or(|wanted| wanted == name)
            && self
                .matchers
                .iter()
                .filter(|m| m.label == NAME_LABEL)
                .all(|m| m.matches_value(name))
    }

    /// Whether the labels pass every matcher other than `__name__` ones.
    fn labels_match<K, V>(&self, labels: &[(K, V)]) -> bool
    where
        K: AsRef<str>,
        V: AsRef<str>,
    {
        self.matchers
            .iter()
            .filter(|m| m.label != NAME_LABEL)
            .all(|matcher| {
                let value = labels
                    .iter()
                    .find(|(k, _)| k.as_ref() == matcher.label)
                    .map_or("", |(_, v)| v.as_ref());
                matcher.matches_value(value)
            })
    }

    /// Whether an owned sample is selected.
    pub fn matches_sample(&self, sample: &Sample) -> bool {
        self.matches(&sample.name, &sample.labels)
    }

    /// Whether a streamed sample is selected.
    pub fn matches_ref(&self, sample: &SampleRef<'_>) -> bool {
        self.matches(sample.name, sample.labels)
    }

    /// The sum of all selected samples, or `None` when nothing matches.
    pub fn sum(&self, samples: &[Sample]) -> Option<f64> {
        samples
            .iter()
            .filter(|sample| self.matches_sample(sample))
            .fold(None, |sum, sample| Some(sum.unwrap_or(0.0) + sample.value))
    }
}

/// Sums several selectors in one streaming pass over `text`: element `i` is
/// the sum for `selectors[i]`, `None` where nothing matched. Any parse error
/// fails the whole scrape.
///
/// A family's series sit next to each other, so the name part of every
/// selector (exact name, `__name__` regexes) is evaluated once per run of
/// equal names, and only label matchers run per sample.
///
/// One sample per series: a series (name and label set) written more than
/// once counts once, never summed (issue 27: a repeated attempts line
/// halved the failure fraction). The kept sample is the one with the latest
/// timestamp when both carry one (an OpenMetrics backfill), else the first,
/// as Prometheus keeps the first and drops a later duplicate at the same
/// timestamp (`prometheus_target_scrapes_sample_duplicate_timestamp_total`).
pub fn sum_many(
    text: &str,
    selectors: &[&Selector],
    limits: &Limits,
) -> Result<Vec<Option<f64>>, ExpositionError> {
    struct Kept {
        timestamp: Option<f64>,
        value: f64,
        selectors: Vec<usize>,
    }
    let mut kept: Vec<Kept> = Vec::new();
    let mut index: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut name_ok: Vec<bool> = vec![false; selectors.len()];
    let mut last_name: Option<String> = None;
    let mut matched: Vec<usize> = Vec::new();
    exposition::for_each_sample(text, limits, |sample| {
        if last_name.as_deref() != Some(sample.name) {
            for (ok, selector) in name_ok.iter_mut().zip(selectors) {
                *ok = selector.name_matches(sample.name);
            }
            let buffer = last_name.get_or_insert_with(String::new);
            buffer.clear();
            buffer.push_str(sample.name);
        }
        matched.clear();
        for (i, (selector, ok)) in selectors.iter().zip(&name_ok).enumerate() {
            if *ok && selector.labels_match(sample.labels) {
                matched.push(i);
            }
        }
        if matched.is_empty() {
            return;
        }
        let key = series_key(sample.name, sample.labels);
        match index.get(&key) {
            Some(&i) => {
                let k = &mut kept[i];
                if let (Some(then), Some(now)) = (k.timestamp, sample.timestamp) {
                    if now > then {
                        k.timestamp = Some(now);
                        k.value = sample.value;
                    }
                }
            }
            None => {
                index.insert(key, kept.len());
                kept.push(Kept {
                    timestamp: sample.timestamp,
                    value: sample.value,
                    selectors: matched.clone(),
                });
            }
        }
    })?;
    let mut sums: Vec<Option<f64>> = vec![None; selectors.len()];
    for k in &kept {
        for &i in &k.selectors {
            *sums[i].get_or_insert(0.0) += k.value;
        }
    }
    Ok(sums)
}

/// A series' identity: its name and its label set, in any order.
fn series_key(name: &str, labels: &[LabelRef<'_>]) -> String {
    let mut sorted: Vec<&LabelRef<'_>> = labels.iter().collect();
    sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut key = String::with_capacity(name.len() + 16 * labels.len());
    key.push_str(name);
    for (k, v) in sorted {
        key.push('\0');
        key.push_str(k);
        key.push('\0');
        key.push_str(v);
    }
    key
}

/// Why a selector string was rejected. Columns are 1-based, in characters.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SelectorError {
    /// The text does not follow the selector grammar.
    #[error("{message} at column {column}")]
    Syntax {
        /// What is wrong.
        message: String,
        /// Where.
        column: usize,
    },
    /// A `=~` or `!~` value is not a valid regex.
    #[error("invalid regex for label `{label}` at column {column}: {reason}")]
    Regex {
        /// The matcher's label.
        label: String,
        /// Where the regex string starts.
        column: usize,
        /// The regex engine's explanation.
        reason: String,
    },
    /// Both a name before the braces (or quoted inside) and a `__name__`
    /// matcher.
    #[error(
        "metric name set twice: `{name}` and a `__name__` matcher at column {column}; \
         keep one of them"
    )]
    NameTwice {
        /// The name given first.
        name: String,
        /// Where the `__name__` matcher starts.
        column: usize,
    },
    /// Every matcher accepts the empty string, so the selector would match
    /// every series (PromQL rejects this too).
    #[error(
        "selector `{0}` would match every series: add a metric name or a matcher \
         that does not match the empty string"
    )]
    MatchesEverything(String),
}

impl FromStr for Selector {
    type Err = SelectorError;

    fn from_str(src: &str) -> Result<Self, Self::Err> {
        Lexer { src, pos: 0 }.selector()
    }
}

impl TryFrom<String> for Selector {
    type Error = SelectorError;

    fn try_from(src: String) -> Result<Self, Self::Error> {
        src.parse()
    }
}

/// Canonical form: a bare name when it is an identifier, matchers in written
/// order separated by `, `, values double-quoted with escapes. Parsing the
/// output gives an equal selector.
impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name_matcher_inside = self.matchers.iter().any(|m| m.label == NAME_LABEL);
        let mut first = true;
        match &self.name {
            Some(name) if !name_matcher_inside && is_metric_name(name) => {
                f.write_str(name)?;
                if self.matchers.is_empty() {
                    return Ok(());
                }
                f.write_str("{")?;
            }
            // The quoted-name form cannot hold an empty name; spell it out.
            Some(name) if !name_matcher_inside && !name.is_empty() => {
                f.write_str("{")?;
                write_string(f, name)?;
                first = false;
            }
            Some(name) => {
                f.write_str("{")?;
                f.write_str(NAME_LABEL)?;
                f.write_str("=")?;
                write_string(f, name)?;
                first = false;
            }
            None => f.write_str("{")?,
        }
        for matcher in &self.matchers {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{matcher}")?;
        }
        f.write_str("}")
    }
}

impl Serialize for Selector {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Selector {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let src = String::deserialize(deserializer)?;
        src.parse().map_err(serde::de::Error::custom)
    }
}

fn write_label_name(f: &mut fmt::Formatter<'_>, name: &str) -> fmt::Result {
    if is_label_name(name) {
        f.write_str(name)
    } else {
        write_string(f, name)
    }
}

/// Writes a double-quoted PromQL string that parses back to `s`.
fn write_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_str("\"")?;
    for c in s.chars() {
        match c {
            '\\' => f.write_str("\\\\")?,
            '"' => f.write_str("\\\"")?,
            '\n' => f.write_str("\\n")?,
            '\r' => f.write_str("\\r")?,
            '\t' => f.write_str("\\t")?,
            c if c.is_control() && u32::from(c) <= 0xFFFF => write!(f, "\\u{:04x}", u32::from(c))?,
            c if c.is_control() => write!(f, "\\U{:08x}", u32::from(c))?,
            c => write!(f, "{c}")?,
        }
    }
    f.write_str("\"")
}

/// A position in the selector source.
struct Lexer<'s> {
    src: &'s str,
    pos: usize,
}

impl<'s> Lexer<'s> {
    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    fn column_at(&self, pos: usize) -> usize {
        self.src
            .get(..pos)
            .map_or(pos, |before| before.chars().count())
            + 1
    }

    fn found(&self) -> String {
        match self
            .src
            .get(self.pos..)
            .and_then(|rest| rest.chars().next())
        {
            Some(c) => {
                let mut out = String::from("`");
                push_printable(&mut out, c);
                out.push('`');
                out
            }
            None => "the end".to_owned(),
        }
    }

    fn error_at(&self, pos: usize, message: String) -> SelectorError {
        SelectorError::Syntax {
            message,
            column: self.column_at(pos),
        }
    }

    fn error(&self, message: String) -> SelectorError {
        self.error_at(self.pos, message)
    }

    /// Skips whitespace and `#` comments, as PromQL does.
    fn skip_space(&mut self) {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => self.pos += 1,
                b'#' => {
                    while self.peek().is_some_and(|b| b != b'\n') {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    fn identifier(&mut self, is_char: fn(u8) -> bool) -> &'s str {
        let start = self.pos;
        while self.peek().is_some_and(is_char) {
            self.pos += 1;
        }
        self.src.get(start..self.pos).unwrap_or_default()
    }

    fn selector(mut self) -> Result<Selector, SelectorError> {
        self.skip_space();
        let mut name: Option<String> = None;
        if self.peek().is_some_and(is_metric_start) {
            name = Some(self.identifier(is_metric_char).to_owned());
            self.skip_space();
        }
        let mut matchers = Vec::new();
        // Where each `__name__` matcher starts, for the "set twice" error.
        let mut name_matcher_at = None;
        if self.peek() == Some(b'{') {
            self.pos += 1;
            self.matchers(&mut name, &mut matchers, &mut name_matcher_at)?;
        } else if name.is_none() {
            return Err(self.error(format!(
                "expected a metric name or `{{`, found {}",
                self.found()
            )));
        }
        self.skip_space();
        if self.peek().is_some() {
            return Err(self.error(format!(
                "unexpected {} after the selector: only a plain instant-vector selector \
                 is supported (no ranges, offsets, functions or operators)",
                self.found()
            )));
        }

        if let Some(name) = &name {
            if let Some(column) = name_matcher_at {
                return Err(SelectorError::NameTwice {
                    name: name.clone(),
                    column,
                });
            }
        } else if let Some(i) = matchers
            .iter()
            .position(|m| m.label == NAME_LABEL && m.op == MatchOp::Equal)
        {
            name = Some(matchers.remove(i).value);
        }
        let selector = Selector { name, matchers };
        if selector.name.is_none() && selector.matchers.iter().all(|m| m.matches_value("")) {
            return Err(SelectorError::MatchesEverything(selector.to_string()));
        }
        Ok(selector)
    }

    /// Matchers up to and including `}`, the cursor after `{`. A lone string
    /// first is the metric name, unless one was given before the braces.
    fn matchers(
        &mut self,
        name: &mut Option<String>,
        matchers: &mut Vec<Matcher>,
        name_matcher_at: &mut Option<usize>,
    ) -> Result<(), SelectorError> {
        let mut first = true;
        loop {
            self.skip_space();
            let label_at = self.pos;
            let label = match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                Some(b'"' | b'\'' | b'`') => {
                    let quoted = self.string()?;
                    self.skip_space();
                    if first && name.is_none() && matches!(self.peek(), Some(b',' | b'}')) {
                        if quoted.is_empty() {
                            return Err(self.error_at(label_at, "empty metric name".to_owned()));
                        }
                        *name = Some(quoted);
                        first = false;
                        if self.peek() == Some(b',') {
                            self.pos += 1;
                        }
                        continue;
                    }
                    if quoted.is_empty() {
                        return Err(self.error_at(label_at, "empty label name".to_owned()));
                    }
                    quoted
                }
                Some(b) if is_label_start(b) => self.identifier(is_label_char).to_owned(),
                Some(_) => {
                    return Err(self.error(format!(
                        "expected a label name or `}}`, found {}",
                        self.found()
                    )))
                }
                None => return Err(self.error("unclosed `{`: expected `}`".to_owned())),
            };
            first = false;
            if label == NAME_LABEL && name_matcher_at.is_none() {
                *name_matcher_at = Some(self.column_at(label_at));
            }

            self.skip_space();
            let rest = self.src.get(self.pos..).unwrap_or_default();
            let op = if rest.starts_with("=~") {
                MatchOp::Regex
            } else if rest.starts_with("!=") {
                MatchOp::NotEqual
            } else if rest.starts_with("!~") {
                MatchOp::NotRegex
            } else if rest.starts_with('=') {
                MatchOp::Equal
            } else {
                return Err(self.error(format!(
                    "expected `=`, `!=`, `=~` or `!~` after label `{}`, found {}",
                    printable_str(&label),
                    self.found()
                )));
            };
            self.pos += op.as_str().len();

            self.skip_space();
            let value_at = self.pos;
            if !matches!(self.peek(), Some(b'"' | b'\'' | b'`')) {
                return Err(self.error(format!(
                    "expected a quoted string after `{}{}`, found {}",
                    printable_str(&label),
                    op.as_str(),
                    self.found()
                )));
            }
            let value = self.string()?;
            let regex = match op {
                MatchOp::Regex | MatchOp::NotRegex => {
                    // Parsed alone first, so that an unbalanced `a)|(b`
                    // cannot escape the anchors once wrapped. A parse, not
                    // a compile: only the anchored form is compiled.
                    let reject = |e: &dyn std::fmt::Display| SelectorError::Regex {
                        label: label.clone(),
                        column: self.column_at(value_at),
                        reason: regex_reason(e),
                    };
                    regex_syntax::ast::parse::Parser::new()
                        .parse(&value)
                        .map_err(|e| reject(&e))?;
                    let anchored =
                        Regex::new(&format!("^(?s:{value})$")).map_err(|e| reject(&e))?;
                    Some(anchored)
                }
                MatchOp::Equal | MatchOp::NotEqual => None,
            };
            matchers.push(Matcher {
                label,
                op,
                value,
                regex,
            });

            self.skip_space();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(());
                }
                None => return Err(self.error("unclosed `{`: expected `}`".to_owned())),
                Some(_) => {
                    return Err(self.error(format!(
                        "expected `,` or `}}` after a matcher, found {}",
                        self.found()
                    )))
                }
            }
        }
    }

    /// A PromQL string in `"`, `'` (Go escapes) or backticks (raw), the
    /// cursor at its opening quote.
    fn string(&mut self) -> Result<String, SelectorError> {
        let open = self.pos;
        let Some(quote) = self.peek() else {
            return Err(self.error("expected a string".to_owned()));
        };
        self.pos += 1;
        let unterminated = |lexer: &Self| {
            lexer.error_at(
                open,
                format!(
                    "unterminated string: missing closing `{}`",
                    char::from(quote)
                ),
            )
        };
        if quote == b'`' {
            let rest = self.src.get(self.pos..).unwrap_or_default();
            let Some(end) = rest.find('`') else {
                return Err(unterminated(self));
            };
            self.pos += end + 1;
            return Ok(rest.get(..end).unwrap_or_default().to_owned());
        }
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.peek() {
                None | Some(b'\n') => return Err(unterminated(self)),
                Some(b) if b == quote => {
                    self.pos += 1;
                    break;
                }
                Some(b'\\') => self.escape(quote, &mut out)?,
                Some(b) => {
                    out.push(b);
                    self.pos += 1;
                }
            }
        }
        String::from_utf8(out).map_err(|_| {
            self.error_at(
                open,
                "string is not valid UTF-8 once its `\\x` or octal escapes are decoded".to_owned(),
            )
        })
    }

    /// One escape sequence, the cursor at its backslash; appends its bytes.
    fn escape(&mut self, quote: u8, out: &mut Vec<u8>) -> Result<(), SelectorError> {
        let at = self.pos;
        self.pos += 1;
        let Some(kind) = self.peek() else {
            return Err(self.error_at(at, "escape sequence not terminated".to_owned()));
        };
        self.pos += 1;
        let simple = match kind {
            b'a' => Some(0x07),
            b'b' => Some(0x08),
            b'f' => Some(0x0c),
            b'n' => Some(b'\n'),
            b'r' => Some(b'\r'),
            b't' => Some(b'\t'),
            b'v' => Some(0x0b),
            b'\\' => Some(b'\\'),
            q if q == quote => Some(q),
            _ => None,
        };
        if let Some(byte) = simple {
            out.push(byte);
            return Ok(());
        }
        let (digits, radix, skip) = match kind {
            b'0'..=b'7' => (3, 8, 0),
            b'x' => (2, 16, 1),
            b'u' => (4, 16, 1),
            b'U' => (8, 16, 1),
            _ => {
                let escaped = self
                    .src
                    .get(at + 1..)
                    .and_then(|rest| rest.chars().next())
                    .unwrap_or('?');
                return Err(self.error_at(
                    at,
                    format!("unknown escape sequence `\\{}`", printable(escaped)),
                ));
            }
        };
        // Octal digits start at the escape letter itself.
        let start = at + 1 + skip;
        let text = self
            .src
            .get(start..start + digits)
            .filter(|t| t.bytes().all(|b| char::from(b).is_digit(radix)));
        let Some(text) = text else {
            return Err(self.error_at(
                at,
                format!(
                    "escape `\\{}` needs {digits} {} digits",
                    char::from(kind),
                    if radix == 8 { "octal" } else { "hex" }
                ),
            ));
        };
        let code = u32::from_str_radix(text, radix).unwrap_or(u32::MAX);
        self.pos = start + digits;
        match kind {
            b'u' | b'U' => {
                let c = char::from_u32(code).ok_or_else(|| {
                    self.error_at(
                        at,
                        format!(
                            "escape `\\{}{text}` is not a valid Unicode character",
                            char::from(kind)
                        ),
                    )
                })?;
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            _ => {
                let byte = u8::try_from(code).map_err(|_| {
                    self.error_at(at, format!("octal escape `\\{text}` is above 255"))
                })?;
                out.push(byte);
            }
        }
        Ok(())
    }
}

fn printable(c: char) -> String {
    let mut out = String::new();
    push_printable(&mut out, c);
    out
}

fn printable_str(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        push_printable(&mut out, c);
    }
    out
}

/// The regex engine's message without its multi-line source diagram.
fn regex_reason(error: &dyn std::fmt::Display) -> String {
    let text = error.to_string();
    text.lines()
        .rev()
        .find(|line| line.starts_with("error: "))
        .map_or(text.clone(), |line| {
            line.trim_start_matches("error: ").to_owned()
        })
}

fn is_metric_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b':'
}

fn is_metric_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b':'
}

fn is_label_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_label_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(src: &str) -> Selector {
        src.parse().unwrap_or_else(|e| panic!("{src:?}: {e}"))
    }

    /// Issue 27 #7: a duplicated attempts line counted twice halved the
    /// failure fraction (the old `sum_many` summed every line). One sample
    /// per series now: the first, or the latest timestamp.
    #[test]
    fn a_duplicated_series_counts_once() {
        let attempts = sel("req_total");
        let failures = sel(r#"req_total{outcome="failure"}"#);
        let text = "req_total{outcome=\"success\"} 90\n\
                    req_total{outcome=\"failure\"} 10\n\
                    req_total{outcome=\"success\"} 90\n\
                    req_total{outcome=\"failure\"} 10\n";
        let limits = Limits::default();
        let sums = sum_many(text, &[&attempts, &failures], &limits).unwrap();
        assert_eq!(sums, vec![Some(100.0), Some(10.0)]);
        let frac = sums[1].unwrap() / sums[0].unwrap();
        assert_eq!(frac, 0.1, "the failure fraction is not diluted");
        // Label order does not make another series; the first is kept.
        let text = "a{x=\"1\",y=\"2\"} 3\na{y=\"2\",x=\"1\"} 5\na{x=\"2\"} 1\n";
        assert_eq!(
            sum_many(text, &[&sel("a")], &limits).unwrap(),
            vec![Some(4.0)]
        );
        // Timestamped samples (a backfill): the latest wins, in any order.
        let text = "a 5 2000\na 7 3000\na 6 1000\n";
        assert_eq!(
            sum_many(text, &[&sel("a")], &limits).unwrap(),
            vec![Some(7.0)]
        );
    }

    fn bad(src: &str) -> SelectorError {
        match src.parse::<Selector>() {
            Ok(selector) => panic!("{src:?} parsed to {selector:?}"),
            Err(e) => e,
        }
    }

    fn series(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
        Sample {
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            value,
        }
    }

    #[test]
    fn each_matcher_type() {
        let labels = [("op", "read"), ("result", "failure")];
        let cases = [
            ("a", true),
            ("b", false),
            ("a{}", true),
            (r#"a{op="read"}"#, true),
            (r#"a{op="write"}"#, false),
            (r#"a{op!="write"}"#, true),
            (r#"a{op!="read"}"#, false),
            (r#"a{op=~"re.*"}"#, true),
            (r#"a{op=~"re"}"#, false),
            (r#"a{op=~"ead"}"#, false),
            (r#"a{op=~"read|write"}"#, true),
            (r#"a{op!~"w.*"}"#, true),
            (r#"a{op!~"r.*"}"#, false),
            (r#"a{op="read", result="failure"}"#, true),
            (r#"a{op="read", result="success"}"#, false),
            (r#"{__name__="a"}"#, true),
            (r#"{__name__="b"}"#, false),
            (r#"{__name__=~"a|b", op="read"}"#, true),
            (r#"{__name__!="a", op="read"}"#, false),
            (r#"{__name__="a", __name__="b"}"#, false),
            (r#"{op="read"}"#, true),
            (r#"a{op=~"(?i)READ"}"#, true),
        ];
        for (src, expected) in cases {
            assert_eq!(sel(src).matches("a", &labels), expected, "{src}");
        }
    }

    #[test]
    fn empty_value_matches_a_missing_label() {
        let labels: [(&str, &str); 1] = [("op", "read")];
        assert!(sel(r#"a{missing=""}"#).matches("a", &labels));
        assert!(!sel(r#"a{op=""}"#).matches("a", &labels));
        assert!(sel(r#"a{missing!="x"}"#).matches("a", &labels));
        assert!(!sel(r#"a{missing!=""}"#).matches("a", &labels));
        assert!(sel(r#"a{missing=~"x?"}"#).matches("a", &labels));
        assert!(!sel(r#"a{missing=~".+"}"#).matches("a", &labels));
        assert!(sel(r#"a{missing!~".+"}"#).matches("a", &labels));
        // An empty label value is the same as no label.
        assert!(sel(r#"a{op=""}"#).matches("a", &[("op", "")]));
    }

    #[test]
    fn regex_is_anchored_and_dot_matches_newline() {
        let s = sel(r#"a{x=~"b.d"}"#);
        assert!(s.matches("a", &[("x", "bcd")]));
        assert!(s.matches("a", &[("x", "b\nd")]));
        assert!(!s.matches("a", &[("x", "abcd")]));
        assert!(!s.matches("a", &[("x", "bcde")]));
        // An alternation cannot escape the anchors.
        let s = sel(r#"a{x=~"b|c"}"#);
        assert!(!s.matches("a", &[("x", "bc")]));
        assert!(!s.matches("a", &[("x", "xb")]));
    }

    #[test]
    fn values_with_special_characters() {
        let cases: &[(&str, &str)] = &[
            (r#"a{route="/users/{id}"}"#, "/users/{id}"),
            (r#"a{route="/x?ids=1,2"}"#, "/x?ids=1,2"),
            (r#"a{q="a=b"}"#, "a=b"),
            (r#"a{msg="say \"hi\""}"#, "say \"hi\""),
            (r#"a{msg='say "hi"'}"#, "say \"hi\""),
            (r#"a{msg='it\'s'}"#, "it's"),
            ("a{msg=`raw \\n {}`}", "raw \\n {}"),
            (r#"a{msg="line\nbreak\ttab\\"}"#, "line\nbreak\ttab\\"),
            (r#"a{city="Zürich 🚦"}"#, "Zürich 🚦"),
            (r#"a{city="Z\u00fcrich \U0001F6A6"}"#, "Zürich 🚦"),
            (r#"a{city="Z\xc3\xbcrich"}"#, "Zürich"),
            (r#"a{city="Z\303\274rich"}"#, "Zürich"),
            (r#"a{c="\a\b\f\v\r"}"#, "\u{7}\u{8}\u{c}\u{b}\r"),
            (r##"a{c="# not a comment"}"##, "# not a comment"),
        ];
        for (src, value) in cases {
            let s = sel(src);
            assert_eq!(s.matchers()[0].value(), *value, "{src}");
            let label = s.matchers()[0].label().to_owned();
            assert!(s.matches("a", &[(label.as_str(), *value)]), "{src}");
            assert!(!s.matches("a", &[(label.as_str(), "other")]), "{src}");
        }
        // Regex metacharacters from the exposition, escaped in the regex.
        let s = sel(r#"a{route=~"/users/\\{id\\}"}"#);
        assert!(s.matches("a", &[("route", "/users/{id}")]));
    }

    #[test]
    fn syntax_variants() {
        let canonical = sel(r#"a{b="c", d!~"e"}"#);
        for src in [
            r#"a{b="c",d!~"e"}"#,
            r#"  a { b = "c" , d !~ "e" , }  "#,
            "a{\n  b=\"c\", # the first\n  d!~'e'\n}",
            r#"{__name__="a", b="c", d!~"e"}"#,
            r#"{b="c", __name__="a", d!~"e"}"#,
            r#"{"a", b="c", d!~"e"}"#,
            r#"{"a", "b"="c", d!~`e`}"#,
        ] {
            assert_eq!(sel(src), canonical, "{src}");
        }
        assert_eq!(sel("a:b:c").metric_name(), Some("a:b:c"));
        assert_eq!(sel(r#"{"my.metric"}"#).metric_name(), Some("my.metric"));
        assert_eq!(sel(r#"{__name__=~"a.*"}"#).metric_name(), None);
        let s = sel(r#"{"my.metric", "my.label"="x"}"#);
        assert!(s.matches("my.metric", &[("my.label", "x")]));
        assert_eq!(s.matchers()[0].op(), MatchOp::Equal);
    }

    #[test]
    fn errors_say_what_and_where() {
        let cases: &[(&str, &str)] = &[
            (
                "",
                "expected a metric name or `{`, found the end at column 1",
            ),
            (
                "  ",
                "expected a metric name or `{`, found the end at column 3",
            ),
            ("9a", "expected a metric name or `{`, found `9` at column 1"),
            (
                r#"reqs_total{op "read"}"#,
                "expected `=`, `!=`, `=~` or `!~` after label `op`, found `\"` at column 15",
            ),
            (
                r#"a{op=="read"}"#,
                "expected a quoted string after `op=`, found `=` at column 6",
            ),
            (
                "a{op=read}",
                "expected a quoted string after `op=`, found `r` at column 6",
            ),
            (r#"a{op="read""#, "unclosed `{`: expected `}` at column 12"),
            (
                r#"a{op="read}"#,
                "unterminated string: missing closing `\"` at column 6",
            ),
            (
                "a{op=\"re\nad\"}",
                "unterminated string: missing closing `\"` at column 6",
            ),
            (
                "a{op=`read}",
                "unterminated string: missing closing ``` at column 6",
            ),
            (
                r#"a{op="read" x="y"}"#,
                "expected `,` or `}` after a matcher, found `x` at column 13",
            ),
            (
                "a{,}",
                "expected a label name or `}`, found `,` at column 3",
            ),
            (
                "a{9=\"x\"}",
                "expected a label name or `}`, found `9` at column 3",
            ),
            (r#"a{""="x"}"#, "empty label name at column 3"),
            (r#"{""}"#, "empty metric name at column 2"),
            (r#"a{op="\q"}"#, "unknown escape sequence `\\q` at column 7"),
            (r#"a{op="\'"}"#, "unknown escape sequence `\\'` at column 7"),
            (
                r#"a{op='\"'}"#,
                "unknown escape sequence `\\\"` at column 7",
            ),
            (
                r#"a{op="\x4"}"#,
                "escape `\\x` needs 2 hex digits at column 7",
            ),
            (
                r#"a{op="\u12"}"#,
                "escape `\\u` needs 4 hex digits at column 7",
            ),
            (
                r#"a{op="\ud800"}"#,
                "escape `\\ud800` is not a valid Unicode character at column 7",
            ),
            (
                r#"a{op="\400"}"#,
                "octal escape `\\400` is above 255 at column 7",
            ),
            (
                r#"a{op="\xff"}"#,
                "string is not valid UTF-8 once its `\\x` or octal escapes are decoded at column 6",
            ),
            (
                "a[5m]",
                "unexpected `[` after the selector: only a plain instant-vector selector is \
                 supported (no ranges, offsets, functions or operators) at column 2",
            ),
            ("sum(a)", "unexpected `(` after the selector"),
            ("a{b=\"c\"} offset 5m", "unexpected `o` after the selector"),
            ("a b", "unexpected `b` after the selector"),
        ];
        for (src, message) in cases {
            let error = bad(src);
            assert!(
                matches!(error, SelectorError::Syntax { .. }),
                "{src}: {error:?}"
            );
            let text = error.to_string();
            assert!(
                text.starts_with(message),
                "{src:?}:\n got {text}\nwant {message}"
            );
        }
    }

    #[test]
    fn unbalanced_regex_cannot_escape_the_anchors() {
        for src in [r#"a{x=~"b)|(c"}"#, r#"a{x=~"b)|.*|(c"}"#, r#"a{x!~")"}"#] {
            assert!(matches!(bad(src), SelectorError::Regex { .. }), "{src}");
        }
    }

    #[test]
    fn regex_errors_name_the_label() {
        let error = bad(r#"a{op=~"(read"}"#);
        let SelectorError::Regex { label, column, .. } = &error else {
            panic!("{error:?}");
        };
        assert_eq!((label.as_str(), *column), ("op", 7));
        let text = error.to_string();
        assert!(
            text.starts_with("invalid regex for label `op` at column 7: "),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
    }

    #[test]
    fn name_twice_and_match_everything_are_rejected() {
        assert_eq!(
            bad(r#"a{__name__="b"}"#),
            SelectorError::NameTwice {
                name: "a".into(),
                column: 3
            }
        );
        assert!(matches!(
            bad(r#"{"a", __name__=~"b"}"#),
            SelectorError::NameTwice { .. }
        ));
        for src in ["{}", r#"{a=""}"#, r#"{a=~".*"}"#, r#"{a!="x", b!~"y"}"#] {
            let error = bad(src);
            assert!(
                matches!(error, SelectorError::MatchesEverything(_)),
                "{src}"
            );
            assert!(
                error.to_string().contains("would match every series"),
                "{src}"
            );
        }
        // One matcher that rejects "" is enough.
        sel(r#"{a="", b="x"}"#);
        sel(r#"{a=~".+"}"#);
    }

    #[test]
    fn display_is_canonical_and_round_trips() {
        let cases = [
            ("a", "a"),
            ("a{}", "a"),
            (r#"  a{b = 'c',}"#, r#"a{b="c"}"#),
            (r#"{__name__="a",b!="c"}"#, r#"a{b!="c"}"#),
            (r#"a{b=~"x|y",c!~`\d+`}"#, r#"a{b=~"x|y", c!~"\\d+"}"#),
            (
                r#"{"my.metric","my label"="v"}"#,
                r#"{"my.metric", "my label"="v"}"#,
            ),
            (
                r#"{__name__="a", __name__=~"a.*"}"#,
                r#"{__name__="a", __name__=~"a.*"}"#,
            ),
            (r#"{__name__=~"a.*"}"#, r#"{__name__=~"a.*"}"#),
            (r#"a{m="q\"\\\n\t\r\u0001"}"#, r#"a{m="q\"\\\n\t\r\u0001"}"#),
            (r#"a{m="日本 🚦"}"#, r#"a{m="日本 🚦"}"#),
        ];
        for (src, canonical) in cases {
            let parsed = sel(src);
            assert_eq!(parsed.to_string(), canonical, "{src}");
            assert_eq!(sel(canonical), parsed, "{src}");
        }
    }

    #[test]
    fn sum_over_several_series() {
        let samples = [
            series("reqs", &[("op", "read"), ("result", "failure")], 3.0),
            series("reqs", &[("op", "write"), ("result", "failure")], 4.0),
            series("reqs", &[("op", "read"), ("result", "success")], 100.0),
            series("other", &[("result", "failure")], 1000.0),
        ];
        assert_eq!(sel(r#"reqs{result="failure"}"#).sum(&samples), Some(7.0));
        assert_eq!(sel("reqs").sum(&samples), Some(107.0));
        assert_eq!(sel(r#"{result="failure"}"#).sum(&samples), Some(1007.0));
        assert_eq!(
            sel(r#"reqs{op=~"read|write", result!="success"}"#).sum(&samples),
            Some(7.0)
        );
    }

    #[test]
    fn no_match_is_none_not_zero() {
        let samples = [series("reqs", &[("result", "ok")], 0.0)];
        assert_eq!(sel("missing").sum(&samples), None);
        assert_eq!(sel(r#"reqs{result="failure"}"#).sum(&samples), None);
        assert_eq!(sel(r#"reqs{result="ok"}"#).sum(&samples), Some(0.0));
        assert_eq!(sel("reqs").sum(&[]), None);
    }

    #[test]
    fn sum_many_in_one_pass() {
        let text = "# TYPE reqs counter\n\
                    reqs{op=\"read\",result=\"failure\",route=\"/users/{id}\"} 3\n\
                    reqs{op=\"write\",result=\"failure\",route=\"/x?a=1,2\"} 4\n\
                    reqs{op=\"read\",result=\"success\",msg=\"say \\\"hi\\\"\"} 100\n\
                    # EOF\n";
        let attempts = sel("reqs");
        let failures = sel(r#"reqs{result="failure"}"#);
        let templated = sel(r#"reqs{route="/users/{id}"}"#);
        let quoted = sel(r#"reqs{msg='say "hi"'}"#);
        let missing = sel("nope");
        let sums = sum_many(
            text,
            &[&attempts, &failures, &templated, &quoted, &missing],
            &Limits::default(),
        );
        assert_eq!(
            sums,
            Ok(vec![Some(107.0), Some(7.0), Some(3.0), Some(100.0), None])
        );

        let samples = exposition::parse(text, &Limits::default()).unwrap();
        assert_eq!(failures.sum(&samples), Some(7.0));
        assert!(failures.matches_sample(&samples[0]));

        assert_eq!(
            sum_many("reqs 1\nreqs{x=\"y} 2\n", &[&attempts], &Limits::default())
                .unwrap_err()
                .error_type(),
            "parse"
        );
        assert_eq!(
            sum_many("# nothing\n", &[&attempts], &Limits::default()),
            Err(ExpositionError::NoSamples)
        );
    }

    #[test]
    fn serde_uses_the_text_form() {
        let s: Selector = serde_json::from_str(r#""reqs{result=\"failure\"}""#).unwrap();
        assert_eq!(s, sel(r#"reqs{result="failure"}"#));
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#""reqs{result=\"failure\"}""#
        );
        let error = serde_json::from_str::<Selector>(r#""reqs{""#).unwrap_err();
        assert!(error.to_string().contains("unclosed `{`"), "{error}");
    }
}
