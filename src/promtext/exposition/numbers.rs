//! Sample values and timestamps: read with an exact fast path for plain
//! decimals, written the way Prometheus writes them.
//!
//! Why it exists: reading the value is most of the cost of a line; the
//! fast path's exactness argument stands apart from the grammar.

use std::fmt;

/// Parses a value or timestamp: decimal or scientific floats, `NaN`, `Inf`,
/// `+Inf`, `-Inf` (case-insensitive, as Go's `ParseFloat`).
pub(super) fn parse_float(token: &str) -> Option<f64> {
    fast_decimal(token).or_else(|| token.parse::<f64>().ok())
}

/// Exact fast path for the common `123` / `123.45` shapes: at most 15
/// significant digits, so mantissa and power of ten are both exact `f64`s and
/// one division rounds correctly.
pub(super) fn fast_decimal(token: &str) -> Option<f64> {
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

/// Writes a value the way Prometheus does: `NaN`, `+Inf`, `-Inf`, or the
/// shortest decimal that parses back to the same `f64`.
pub(super) fn write_value(f: &mut fmt::Formatter<'_>, value: f64) -> fmt::Result {
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
