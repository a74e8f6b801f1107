//! Durations in the config, written as humantime strings both ways.
//!
//! Why it exists: every duration key (`window`, `timeout`, `signal_lag`,
//! ...) is read from a string with a unit (`"2s"`, `"250ms"`) and written
//! back the same way, and a bare number is refused with a hint about the
//! unit. One `#[serde(with = "duration")]` module serves `Duration` and
//! `Option<Duration>` fields alike, so the rule and its message live here
//! once. A newtype was the other choice; it would have made every reader of
//! `window` or `timeout` outside `config` unwrap it.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

/// A field type this module reads and writes: `Duration` or
/// `Option<Duration>` (where present means `Some`; an absent key takes the
/// field's `default`).
pub trait HumanDuration: Sized {
    /// The field's value for a duration that was given.
    fn given(d: Duration) -> Self;
    /// The duration to write, if any.
    fn written(&self) -> Option<Duration>;
}

impl HumanDuration for Duration {
    fn given(d: Duration) -> Self {
        d
    }
    fn written(&self) -> Option<Duration> {
        Some(*self)
    }
}

impl HumanDuration for Option<Duration> {
    fn given(d: Duration) -> Self {
        Some(d)
    }
    fn written(&self) -> Option<Duration> {
        *self
    }
}

/// Deserializes a humantime duration such as `"2s"` or `"250ms"`.
pub fn deserialize<'de, T: HumanDuration, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
    let s = String::deserialize(d)?;
    humantime::parse_duration(&s).map(T::given).map_err(|e| {
        serde::de::Error::custom(format!(
            "`{s}` is not a duration ({e}); write it with a unit, e.g. \"2s\" or \"250ms\""
        ))
    })
}

/// Serializes a duration as a humantime string (`None` as none).
pub fn serialize<T: HumanDuration, S: Serializer>(d: &T, s: S) -> Result<S::Ok, S::Error> {
    match d.written() {
        Some(d) => s.serialize_str(&humantime::format_duration(d).to_string()),
        None => s.serialize_none(),
    }
}
