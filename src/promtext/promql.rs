//! PromQL expression text: the light lexing that config checks and the
//! PromQL signal share (balanced brackets, the selectors an expression
//! reads, durations written the PromQL way). Pure: no I/O.

use std::time::Duration;

/// A duration the way PromQL writes it: `2s`, `1500ms`, `1m30s` as `90s`.
pub fn promql_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// The freshness query for a set of expressions: the *oldest* among the
/// newest samples of each selector they read, so one dead series is enough
/// to make the signal stale. `None` when they read no series.
pub fn freshness_query(exprs: &[&str]) -> Option<String> {
    let mut selectors: Vec<String> = Vec::new();
    for e in exprs {
        for s in selectors_in(e) {
            if !selectors.contains(&s) {
                selectors.push(s);
            }
        }
    }
    match selectors.len() {
        0 => None,
        1 => Some(format!("max(timestamp({}))", selectors[0])),
        _ => Some(format!(
            "min({})",
            selectors
                .iter()
                .enumerate()
                .map(|(i, s)| format!(
                    "label_replace(max(timestamp({s})), \"tg_selector\", \"{i}\", \"\", \"\")"
                ))
                .collect::<Vec<_>>()
                .join(" or ")
        )),
    }
}

/// The vector selectors in a PromQL expression (`name{...}` or `{...}`),
/// without range, offset or `@` modifiers.
///
/// A light lexer, not a parser: identifiers followed by `(` are functions
/// or aggregations; the label lists after `by`, `without`, `on`, `ignoring`,
/// `group_left` and `group_right` are skipped; keywords and numbers are not
/// selectors. Enough to find what a counter expression reads; give
/// `freshness` explicitly for anything it misreads.
pub fn selectors_in(expr: &str) -> Vec<String> {
    const KEYWORDS: &[&str] = &[
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "inf",
        "nan",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "start",
        "end",
    ];
    const LABEL_LISTS: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    const AGGREGATIONS: &[&str] = &[
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    ];
    let chars: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let skip_ws = |mut j: usize| {
        while j < chars.len() && chars[j].is_whitespace() {
            j += 1;
        }
        j
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '\'' || c == '`' {
            i = skip_string(&chars, i);
        } else if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '[' {
            while i < chars.len() && chars[i] != ']' {
                i += 1;
            }
            i += 1;
        } else if c == '{' {
            let end = skip_braces(&chars, i);
            out.push(chars[i..end].iter().collect());
            i = end;
        } else if c.is_ascii_digit()
            || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '.' || chars[i] == '_')
            {
                i += 1;
            }
            // An exponent sign: 1e+06.
            if i < chars.len()
                && (chars[i] == '+' || chars[i] == '-')
                && matches!(chars[i - 1], 'e' | 'E')
            {
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
            {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let next = skip_ws(i);
            let lower = word.to_ascii_lowercase();
            if LABEL_LISTS.contains(&lower.as_str()) {
                if next < chars.len() && chars[next] == '(' {
                    i = skip_parens(&chars, next);
                }
            } else if KEYWORDS.contains(&lower.as_str()) {
                // `offset 5m`, `bool`, `and`: nothing to read.
            } else if next < chars.len() && chars[next] == '(' {
                // A function or an aggregation: its arguments follow.
            } else if AGGREGATIONS.contains(&lower.as_str()) && grouping_follows(&chars, next) {
                // `sum by (job) (...)`: the modifier comes first.
            } else if next < chars.len() && chars[next] == '{' {
                let end = skip_braces(&chars, next);
                let braces: String = chars[next..end].iter().collect();
                out.push(format!("{word}{braces}"));
                i = end;
            } else {
                out.push(word);
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Whether `by` or `without` starts at `at`.
fn grouping_follows(chars: &[char], at: usize) -> bool {
    ["by", "without"].iter().any(|kw| {
        let end = at + kw.len();
        end <= chars.len()
            && chars[at..end]
                .iter()
                .collect::<String>()
                .eq_ignore_ascii_case(kw)
            && chars
                .get(end)
                .is_none_or(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    })
}

fn skip_string(chars: &[char], start: usize) -> usize {
    string_end(chars, start).unwrap_or(chars.len())
}

/// The index after the closing quote of the string at `start`, if closed.
fn string_end(chars: &[char], start: usize) -> Option<usize> {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() {
        if chars[i] == '\\' && quote != '`' {
            i += 2;
            continue;
        }
        if chars[i] == quote {
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

fn skip_braces(chars: &[char], start: usize) -> usize {
    let mut i = start + 1;
    while i < chars.len() {
        match chars[i] {
            '"' | '\'' | '`' => i = skip_string(chars, i),
            '}' => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

fn skip_parens(chars: &[char], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < chars.len() {
        match chars[i] {
            '"' | '\'' | '`' => {
                i = skip_string(chars, i);
                continue;
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    chars.len()
}

/// A cheap check that catches typos before the server does: brackets and
/// quotes must balance.
pub fn check_balanced(expr: &str) -> Result<(), String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut stack = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '"' | '\'' | '`' => {
                match string_end(&chars, i) {
                    Some(end) => i = end,
                    None => return Err(format!("unterminated string at column {}", i + 1)),
                }
                continue;
            }
            c @ ('(' | '[' | '{') => stack.push((c, i)),
            c @ (')' | ']' | '}') => {
                let want = match c {
                    ')' => '(',
                    ']' => '[',
                    _ => '{',
                };
                match stack.pop() {
                    Some((open, _)) if open == want => {}
                    _ => return Err(format!("unbalanced `{c}` at column {}", i + 1)),
                }
            }
            _ => {}
        }
        i += 1;
    }
    match stack.pop() {
        Some((c, at)) => Err(format!("`{c}` at column {} is never closed", at + 1)),
        None => Ok(()),
    }
}
