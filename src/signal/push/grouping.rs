//! Grouping keys: the Pushgateway path `job/<job>{/<label>/<value>}`,
//! with its percent-encoded and `@base64` segments, as a sorted map.
//!
//! Why it exists: a push is routed by its grouping key, and the path's
//! encodings are Pushgateway's own; they are decoded in one place, before
//! the store sees a key.

use std::collections::BTreeMap;

use super::PushError;
use crate::promtext::exposition::is_label_name;

/// A grouping key: the job and the other labels of the path, sorted.
pub type GroupingKey = BTreeMap<String, String>;

/// Parses `job/<job>{/<label>/<value>}` (the path after `/metrics/`).
pub fn parse_grouping(path: &str) -> Result<GroupingKey, PushError> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    if segments.len() < 2 || segments.len() % 2 != 0 {
        return Err(PushError::Path(
            "expected /metrics/job/<job>{/<label>/<value>}".into(),
        ));
    }
    let mut key = GroupingKey::new();
    for (i, pair) in segments.chunks(2).enumerate() {
        let raw_name = percent_decode(pair[0])
            .ok_or_else(|| PushError::Path(format!("bad escape in `{}`", pair[0])))?;
        let (name, value) = match raw_name.strip_suffix("@base64") {
            Some(name) => (name.to_string(), base64url_decode(pair[1])?),
            None => (
                raw_name.clone(),
                percent_decode(pair[1])
                    .ok_or_else(|| PushError::Path(format!("bad escape in `{}`", pair[1])))?,
            ),
        };
        if i == 0 && name != "job" {
            return Err(PushError::Path(
                "the path must start with /metrics/job/".into(),
            ));
        }
        if !is_label_name(&name) {
            return Err(PushError::Path(format!("`{name}` is not a label name")));
        }
        if name == "job" && value.is_empty() {
            return Err(PushError::Path("the job must not be empty".into()));
        }
        if key.insert(name.clone(), value).is_some() {
            return Err(PushError::Path(format!("label `{name}` given twice")));
        }
    }
    Ok(key)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Base64 as Pushgateway takes it: URL-safe or standard alphabet, padding
/// optional (`=` alone is the empty string).
fn base64url_decode(s: &str) -> Result<String, PushError> {
    let bad = || PushError::Path(format!("`{s}` is not base64"));
    let s = percent_decode(s).ok_or_else(bad)?;
    let mut bits = 0u32;
    let mut nbits = 0;
    let mut out = Vec::new();
    for c in s.trim_end_matches('=').bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return Err(bad()),
        };
        bits = (bits << 6) | u32::from(v);
        nbits += 6;
        if nbits >= 8 {
            nbits -= 8;
            out.push((bits >> nbits) as u8);
            bits &= (1 << nbits) - 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}
