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
//!
//! Where things are: this file holds the selector, its matchers, the sums
//! over a scrape and the canonical form; `lexer` reads the tokens of the
//! source (strings with their escapes, names, blanks and comments) and
//! `parser` the grammar of a selector on top of them.

use std::fmt;
use std::str::FromStr;

use regex::Regex;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

use super::exposition::{self, ExpositionError, LabelRef, Limits, Sample, SampleRef};
use super::names::{is_label_name, is_metric_name};

mod lexer;
mod parser;

use lexer::Lexer;

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
    pub(crate) fn matches_value(&self, value: &str) -> bool {
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
    pub(crate) fn matches_sample(&self, sample: &Sample) -> bool {
        self.matches(&sample.name, &sample.labels)
    }

    /// Whether a streamed sample is selected.
    pub(crate) fn matches_ref(&self, sample: &SampleRef<'_>) -> bool {
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

#[cfg(test)]
mod tests;
