//! The named rule sets a target may choose: `seed`, `robust`, `gentle`.
//!
//! Why it exists: the profile is chosen in the config and on the command
//! line, and it decides which code path the governor steps through (the
//! seed rules, or robust's with its [`robust::Tunables`]) and whether the
//! engine may close a window early; that choice is one small value.
//!
//! What it may touch: nothing outside the governor; no clock, no I/O.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::robust;
#[cfg(doc)]
use super::ThrottleGovernor;

/// A named set of governor rules.
///
/// `seed` is exactly `docs/GOVERNOR.md`, and the library's
/// [`ThrottleGovernor::new`] keeps it. `robust` ([`robust`]) is an opt-in
/// layer on top of it; `gentle` is robust's rules with rarer probes of a
/// wall that a probe found costly ([`robust::Tunables::GENTLE`]), chosen by
/// measurement (docs/BENCHMARKS.md, "The `gentle` profile"), and the
/// engine's early verdicts ([`Profile::early_verdicts`]). A config
/// without `profile` gets `gentle`; one that names a profile keeps its
/// meaning (`"default"` is an old spelling of `seed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Exactly the rules of docs/GOVERNOR.md: assume the most fragile target.
    /// Spelled `"default"` before issue 26; that spelling still means it.
    #[serde(alias = "default")]
    Seed,
    /// The seed rules plus the evidence, lag and re-probe fixes of
    /// [`robust`], for noisy, lagged and drifting targets and long runs:
    /// pooled evidence before a verdict, a slow start that slows down from
    /// 64 on, probes that pay for their failures, and no climb while the
    /// successes stop following the offer (a plateau).
    Robust,
    /// Robust's rules, gentler on a wall that rejects fast: rarer probes of
    /// a wall that a probe found costly ([`robust::Tunables::GENTLE`]), and
    /// early verdicts on breaching windows in the engine. What a config
    /// without `profile` gets.
    #[default]
    Gentle,
}

impl Profile {
    /// Every profile, in the order they were introduced.
    pub const ALL: [Profile; 3] = [Profile::Seed, Profile::Robust, Profile::Gentle];

    /// The spelling used in the config, on the command line and in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Seed => "seed",
            Profile::Robust => "robust",
            Profile::Gentle => "gentle",
        }
    }

    /// Whether the engine may close a breaching window early (before its
    /// full length) and decide on it: `gentle` only. The seed and robust
    /// profiles keep their exact meaning: whole windows.
    pub fn early_verdicts(self) -> bool {
        matches!(self, Profile::Gentle)
    }

    /// The tunables of robust's code path, for the profiles that take it
    /// (`None` for the seed rules).
    pub fn robust_tunables(self) -> Option<robust::Tunables> {
        match self {
            Profile::Seed => None,
            Profile::Robust => Some(robust::Tunables::ROBUST),
            Profile::Gentle => Some(robust::Tunables::GENTLE),
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
