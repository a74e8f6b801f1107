//! `[[targets]]`: one governed target's own keys (knob, bounds, window,
//! what to do on signal loss and on exit, profile) and what they mean in
//! effect (the governor's `Params`, the profile and signal lag in words).
//!
//! Why it exists: the target table ties the rest together; its defaults
//! and the descriptions `check` and the API print about it belong beside
//! it. Its `signal` and `control` tables have files of their own.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{duration, group, latency, limits, ControlConfig, SignalConfig};
use crate::governor::{Control, ParamError, Params, Profile};

/// What to do after `signal_loss_windows` consecutive windows without a
/// valid signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnSignalLoss {
    /// Keep the committed offer.
    Hold,
    /// Write the floor: the governor assumes the most fragile target.
    #[default]
    Floor,
}

/// What to leave behind on shutdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnExit {
    /// Leave the committed offer as it is.
    #[default]
    Leave,
    /// Write the floor.
    Floor,
    /// Write the opening offer.
    Start,
}

/// How a target's `profile` key was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProfileKey {
    /// Named with its own spelling.
    #[default]
    Given,
    /// Left out: the default profile.
    Omitted,
    /// Spelled `"default"`: the seed rules, as before issue 26.
    OldDefault,
}

impl ProfileKey {
    /// How the `[[targets]]` table `item` writes `profile`.
    pub(super) fn of(item: &toml::Value) -> Self {
        match item.get("profile").map(toml::Value::as_str) {
            None => ProfileKey::Omitted,
            Some(Some("default")) => ProfileKey::OldDefault,
            Some(_) => ProfileKey::Given,
        }
    }
}

/// `[[targets]]`
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// Unique name; the `target` label.
    pub name: String,
    /// Which knob is governed (docs/GOVERNOR.md's `control`).
    pub knob: Control,
    /// The authored offer: the ceiling (optional for rate).
    pub ceiling: Option<f64>,
    /// The offer never goes below this (default 1: one user or VU, or one
    /// request per second).
    #[serde(default = "default_floor")]
    pub floor: f64,
    /// The opening offer (default: floor).
    pub start: Option<f64>,
    /// Back off when the window's failure fraction exceeds this (default
    /// 0.05).
    #[serde(default = "default_high")]
    pub high: f64,
    /// A window is clean below this (default: high / 5).
    pub low: Option<f64>,
    /// The length of one window.
    #[serde(default = "default_window", with = "duration")]
    pub window: Duration,
    /// What to write on shutdown.
    #[serde(default)]
    pub on_exit: OnExit,
    /// Consecutive windows without a valid signal before `on_signal_loss`.
    #[serde(default = "default_signal_loss_windows")]
    pub signal_loss_windows: u32,
    /// What to do when the signal is lost.
    #[serde(default)]
    pub on_signal_loss: OnSignalLoss,
    /// The governor's rule set: `"gentle"` (the default when the key is
    /// left out), `"robust"`, or `"seed"` (docs/GOVERNOR.md exactly; the old
    /// spelling `"default"` still means it). docs/BENCHMARKS.md has the
    /// measurements.
    #[serde(default)]
    pub profile: Profile,
    /// Close a breaching window as soon as its breach is statistically
    /// certain, reading the counters four dozen times in the window after each
    /// Up (see `engine::step::early`). Default: the profile's
    /// ([`TargetConfig::early_verdicts_in_effect`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_verdicts: Option<bool>,
    /// How `profile` was written, for `check` (not a config key).
    #[serde(skip)]
    pub profile_key: ProfileKey,
    /// How far the signal trails the load: after an offer change, the next
    /// window starts only this long after the change is confirmed, so that
    /// no window mixes two offers. Default: the signal kind's own (see
    /// [`TargetConfig::lag_description`]).
    #[serde(default, with = "duration", skip_serializing_if = "Option::is_none")]
    pub signal_lag: Option<Duration>,
    /// Where counters come from.
    pub signal: SignalConfig,
    /// Where offers go.
    pub control: ControlConfig,
    /// Several load-generator instances governed as one (see `engine`);
    /// `signal` and `control` are then templates (`{{address}}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instances: Vec<group::InstanceConfig>,
    /// Discovery and tuning of a target group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<group::GroupConfig>,
    /// An optional latency bound beside the failure bound (an SLO): see
    /// `governor::latency_bound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<latency::LatencyConfig>,
}

/// `floor` when none is given: the least offer of either knob.
pub(crate) const DEFAULT_FLOOR: f64 = 1.0;
/// `high` when none is given: 5 % failed attempts in a window.
pub(crate) const DEFAULT_HIGH: f64 = 0.05;

fn default_floor() -> f64 {
    DEFAULT_FLOOR
}

fn default_high() -> f64 {
    DEFAULT_HIGH
}

fn default_signal_loss_windows() -> u32 {
    3
}

fn default_window() -> Duration {
    Duration::from_secs(2)
}

impl TargetConfig {
    /// The window when none is configured.
    pub(crate) fn default_window() -> Duration {
        default_window()
    }

    /// Whether early verdicts are on: the key when set, else the
    /// profile's choice (on for `gentle`, off for the profiles whose meaning
    /// predates them).
    pub fn early_verdicts_in_effect(&self) -> bool {
        self.early_verdicts
            .unwrap_or_else(|| self.profile.early_verdicts())
    }

    /// The profile in effect, in words (`check` shows it): marked when it
    /// is the default because the key was left out, or when it was spelled
    /// `"default"`.
    pub fn profile_description(&self) -> String {
        match self.profile_key {
            ProfileKey::Given => self.profile.to_string(),
            ProfileKey::Omitted => format!("{} (the default: no `profile` key)", self.profile),
            ProfileKey::OldDefault => format!(
                "{} (spelled \"default\", which now names the seed rules of docs/GOVERNOR.md; \
                 a config without `profile` gets \"{}\")",
                self.profile,
                Profile::default()
            ),
        }
    }

    /// The signal lag in effect, in words (`check` and the API show it).
    pub fn lag_description(&self) -> String {
        if let Some(d) = self.signal_lag {
            return format!("{} (signal_lag)", humantime::format_duration(d));
        }
        let w = humantime::format_duration(self.window);
        match &self.signal {
            SignalConfig::Locust(_) => format!(
                "auto: Locust's stats cache ({}), plus the workers' report interval ({}) when workers report",
                humantime::format_duration(limits::LOCUST_STATS_CACHE),
                humantime::format_duration(limits::LOCUST_WORKER_REPORT_INTERVAL)
            ),
            SignalConfig::Push(_) => {
                format!("auto: the observed interval between pushes (one window, {w}, until seen)")
            }
            SignalConfig::Promql(_) => format!(
                "auto: the observed update interval of the attempts series (one window, {w}, until seen)"
            ),
            SignalConfig::K6(_) => format!(
                "auto: k6's metrics batching ({})",
                humantime::format_duration(limits::K6_METRICS_LAG)
            ),
            SignalConfig::Prometheus(_) | SignalConfig::Goose(_) => {
                "0s (the counters are read from the tool directly)".into()
            }
        }
    }

    /// The governor parameters (validated by `Config::validate`).
    pub fn params(&self) -> Result<Params, Vec<ParamError>> {
        Params::new(
            self.knob,
            self.ceiling,
            self.floor,
            self.start,
            self.high,
            self.low,
        )
    }
}

impl TargetConfig {
    /// Resolves the window-dependent signal defaults of the target and of
    /// its instances.
    pub(crate) fn resolve_window(&mut self) {
        let window = self.window;
        self.signal.resolve_window(window);
        for i in &mut self.instances {
            if let Some(s) = &mut i.signal {
                s.resolve_window(window);
            }
        }
    }
}
