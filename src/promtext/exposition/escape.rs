//! The quoting rules of the text format, both ways: decoding a quoted name
//! or label value the scanner has read, and writing a [`Sample`] back as a
//! valid line.
//!
//! Why it exists: Prometheus decodes only `\\`, `\"` and `\n` and keeps
//! any other backslash pair as written (see the module docs of
//! [`super`]); the decoder and the encoder must agree on that, so they sit
//! together.

use std::borrow::Cow;
use std::fmt;

use super::numbers::write_value;
use super::Sample;
use crate::promtext::names::{is_label_name, is_metric_name};

/// Decodes `\\`, `\"` and `\n` in text the cursor has already validated;
/// any other escape keeps its backslash, as Prometheus's `lvalReplacer`.
pub(super) fn unescape(raw: &str) -> Cow<'_, str> {
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
