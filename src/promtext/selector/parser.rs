//! The grammar of a selector: an optional metric name, then matchers in
//! braces (a lone string first is the quoted metric name), and nothing
//! after; regexes checked alone, then compiled anchored.
//!
//! Why it exists: it turns the tokens of [`super::lexer`] into a
//! [`Selector`], and owns the rules that PromQL applies to the whole
//! selector (the name set once, not matching every series).

use regex::Regex;

use super::lexer::Lexer;
use super::{MatchOp, Matcher, Selector, SelectorError, NAME_LABEL};
use crate::promtext::excerpt::printable;
use crate::promtext::names::{is_label_char, is_label_start, is_name_char, is_name_start};

impl Lexer<'_> {
    pub(super) fn selector(mut self) -> Result<Selector, SelectorError> {
        self.skip_space();
        let mut name: Option<String> = None;
        if self.peek().is_some_and(is_name_start) {
            name = Some(self.identifier(is_name_char).to_owned());
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
                    printable(&label),
                    self.found()
                )));
            };
            self.pos += op.as_str().len();

            self.skip_space();
            let value_at = self.pos;
            if !matches!(self.peek(), Some(b'"' | b'\'' | b'`')) {
                return Err(self.error(format!(
                    "expected a quoted string after `{}{}`, found {}",
                    printable(&label),
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
