//! The label sets of the controller's metrics, and the shared target name.
//!
//! Why it exists: every label a series carries is declared here, bounded
//! (fixed vocabularies, never raw messages) and never called `instance`.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use std::fmt::Write as _;
use std::sync::Arc;

/// A target's name as a label value. Shared: a target's hundred or so
/// series point at one copy of its name instead of holding a `String`
/// each (4 kB per target, 40 MB at 10,000 targets).
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord)]
pub struct Name(Arc<str>);

impl Name {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Name(Arc::from(s))
    }
}

impl From<String> for Name {
    fn from(s: String) -> Self {
        Name(Arc::from(s))
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl EncodeLabelValue for Name {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(&self.0)
    }
}

/// `{target}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetLabel {
    /// The target's configured name.
    pub target: Name,
}

/// `{target, decision, mode, reason}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    /// The target's configured name.
    pub target: Name,
    /// `up`, `down` or `hold`.
    pub decision: &'static str,
    /// The movement's mode, or `none` on hold.
    pub mode: &'static str,
    /// The hold reason, or `none` on a movement.
    pub reason: &'static str,
}

/// `{target, error_type}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The target's configured name.
    pub target: Name,
    /// A bounded error class.
    pub error_type: &'static str,
}

/// `{target, result}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WriteLabels {
    /// The target's configured name.
    pub target: Name,
    /// `confirmed`, `failed` or `unconfirmed`.
    pub result: &'static str,
}

/// `{result}` of a push to the push endpoint.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PushLabels {
    /// `accepted`, `unauthorized`, `too_large`, `unsupported`,
    /// `bad_request`, `no_target` or `unusable`.
    pub result: &'static str,
}

/// `{result}` of a pull of the offer endpoint.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PullLabels {
    /// `served`, `not_modified`, `unauthorized`, `bad_request`,
    /// `unknown_target`, `need_member` or `no_offer`.
    pub result: &'static str,
}

/// `{target, member}`: one instance of a target group. (Not `instance`,
/// which Prometheus owns.)
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MemberLabels {
    /// The group's target name.
    pub target: Name,
    /// The member's name (its address by default).
    pub member: String,
}

/// `{result}` of a config reload.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReloadLabels {
    /// `applied` or `rejected`.
    pub result: &'static str,
}

/// `{version}`
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BuildLabels {
    /// The crate version.
    pub version: &'static str,
}

/// `{target, slo_quantile}` of the latency bound's series. Not `quantile`:
/// Prometheus reserves that label for summaries, and `promtool check
/// metrics` rejects it on a gauge.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QuantileLabels {
    /// The target's name.
    pub target: Name,
    /// The quantile bounded, as Prometheus writes it: `0.99`.
    pub slo_quantile: String,
}

/// `{target, state}` of `throttle_capacity`: `provisional`, `steady` or
/// `lower-bound`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CapacityLabels {
    /// The target's name.
    pub target: Name,
    /// `provisional`, `steady` or `lower-bound`.
    pub state: &'static str,
}

/// The states of `throttle_capacity`.
pub const CAPACITY_STATES: [&str; 3] = ["provisional", "steady", "lower-bound"];

/// `target` and a bounded `reason`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabels {
    /// The target's name.
    pub target: Name,
    /// A bounded reason label.
    pub reason: &'static str,
}
