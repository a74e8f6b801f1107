//! The tokens of a selector's source: a byte cursor that skips blanks and
//! `#` comments as PromQL does, reads names, and reads PromQL strings in
//! `"`, `'` (Go escapes) or backticks (raw), with errors at 1-based
//! character columns.
//!
//! Why it exists: the escapes of PromQL strings (octal, `\x`, `\u`, `\U`)
//! are a rule set of their own, apart from the grammar that
//! [`super::parser`] builds on these tokens.

use super::SelectorError;
use crate::promtext::excerpt::{found, printable};

/// A position in the selector source.
pub(super) struct Lexer<'s> {
    pub(super) src: &'s str,
    pub(super) pos: usize,
}

impl<'s> Lexer<'s> {
    pub(super) fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    pub(super) fn column_at(&self, pos: usize) -> usize {
        self.src
            .get(..pos)
            .map_or(pos, |before| before.chars().count())
            + 1
    }

    pub(super) fn found(&self) -> String {
        found(self.src, self.pos, "the end")
    }

    pub(super) fn error_at(&self, pos: usize, message: String) -> SelectorError {
        SelectorError::Syntax {
            message,
            column: self.column_at(pos),
        }
    }

    pub(super) fn error(&self, message: String) -> SelectorError {
        self.error_at(self.pos, message)
    }

    /// Skips whitespace and `#` comments, as PromQL does.
    pub(super) fn skip_space(&mut self) {
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

    pub(super) fn identifier(&mut self, is_char: fn(u8) -> bool) -> &'s str {
        let start = self.pos;
        while self.peek().is_some_and(is_char) {
            self.pos += 1;
        }
        self.src.get(start..self.pos).unwrap_or_default()
    }

    /// A PromQL string in `"`, `'` (Go escapes) or backticks (raw), the
    /// cursor at its opening quote.
    pub(super) fn string(&mut self) -> Result<String, SelectorError> {
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
                    format!(
                        "unknown escape sequence `\\{}`",
                        printable(escaped.encode_utf8(&mut [0; 4]))
                    ),
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
