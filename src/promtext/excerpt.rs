//! How parse errors quote the input: control characters escaped, long runs
//! cut short.
//!
//! Why it exists: an error message quotes what it found, and it ends up in
//! logs and in `check` output; the exposition parser and the selectors
//! quote the same way.

/// The longest excerpt of input quoted in an error message, in characters.
const EXCERPT_CHARS: usize = 40;

/// `s` shortened for an error message, with control characters escaped.
pub(super) fn excerpt(s: &str) -> String {
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
pub(super) fn push_printable(out: &mut String, c: char) {
    if c.is_control() {
        out.extend(c.escape_debug());
    } else {
        out.push(c);
    }
}

/// Describes the character of `text` at byte `pos` for an error message:
/// in backticks, or `end` when there is none.
pub(super) fn found(text: &str, pos: usize, end: &str) -> String {
    match text.get(pos..).and_then(|rest| rest.chars().next()) {
        Some(c) => {
            let mut out = String::from("`");
            push_printable(&mut out, c);
            out.push('`');
            out
        }
        None => end.to_owned(),
    }
}

/// `s` for an error message, whole, with control characters escaped.
pub(super) fn printable(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        push_printable(&mut out, c);
    }
    out
}
