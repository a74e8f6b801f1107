//! Which bytes make metric and label names: the one rule the exposition
//! parser and the selectors share (`[a-zA-Z_:][a-zA-Z0-9_:]*` for metric
//! names, `[a-zA-Z_][a-zA-Z0-9_]*` for label names); any other name takes
//! the quoted form.
//!
//! Why it exists: both read and write names, and must agree on when a name
//! needs quotes.

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
pub(super) fn is_name_start(b: u8) -> bool {
    has_class(b, NAME_START)
}

#[inline]
pub(super) fn is_name_char(b: u8) -> bool {
    has_class(b, NAME_CHAR)
}

#[inline]
pub(super) fn is_label_start(b: u8) -> bool {
    has_class(b, LABEL_START)
}

#[inline]
pub(super) fn is_label_char(b: u8) -> bool {
    has_class(b, LABEL_CHAR)
}
