//! The scanner of one sample line: a byte cursor that reads the name, the
//! label set (borrowed, escapes left in place and flagged), the value, the
//! timestamp and an exemplar, or stops with a [`Fault`] at a byte offset.
//!
//! Why it exists: this is the hot path and the whole grammar of a line;
//! [`super::for_each_sample`] only splits the body into lines and hands
//! out what the scanner found.

use super::numbers::parse_float;
use super::{ExpositionError, LabelRef};
use crate::promtext::excerpt::{excerpt, found};
use crate::promtext::names::{is_label_char, is_label_start, is_name_char, is_name_start};

/// What one sample line yields besides its labels. The name is as written:
/// when the cursor saw escapes, it still holds them.
pub(super) struct ParsedLine<'t> {
    pub(super) name: &'t str,
    pub(super) value: f64,
    pub(super) timestamp: Option<f64>,
}

/// A parse failure inside one line, at a byte offset.
pub(super) struct Fault {
    at: usize,
    reason: String,
}

impl Fault {
    pub(super) fn into_error(self, line_no: usize, line: &str) -> ExpositionError {
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

/// A position inside one line. All offsets it stops at are on ASCII bytes or
/// the line's end, so slicing between them stays on char boundaries; every
/// slice still goes through `get` so a bug cannot panic.
pub(super) struct Cursor<'t> {
    pub(super) line: &'t str,
    pub(super) pos: usize,
    /// Whether a quoted string on this line had escapes: its slice still
    /// holds them and must be decoded before use.
    pub(super) escaped: bool,
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
        found(self.line, self.pos, "the end of the line")
    }

    fn fault(&self, reason: String) -> Fault {
        Fault {
            at: self.pos,
            reason,
        }
    }

    /// One sample line, the cursor at its first non-blank byte.
    pub(super) fn sample(
        &mut self,
        labels: &mut Vec<LabelRef<'t>>,
    ) -> Result<ParsedLine<'t>, Fault> {
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

#[inline]
fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// The index of the first `"` or `\\` in `bytes`, eight bytes at a time.
#[inline]
pub(super) fn find_quote_or_backslash(bytes: &[u8]) -> Option<usize> {
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
