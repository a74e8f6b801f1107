//! Target groups in the config: `[[targets.instances]]`, `[targets.group]`,
//! and the per-instance templates.
//!
//! Why it exists: a group's `signal` and `control` are templates filled per
//! instance (`{{address}}`, `{{name}}`, `{{labels.NAME}}`), and `check` must
//! see every instance's filled config as it would a target of its own. The
//! filling is pure, so it lives with the config; running a group is
//! `engine`'s business.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{duration, ControlConfig, SignalConfig, TargetConfig};

/// `[[targets.instances]]`: one statically listed instance.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceConfig {
    /// Its name in logs, metrics (`member`) and the API (default: `address`).
    pub name: Option<String>,
    /// `host:port`, filled into `{{address}}` in the target's templates.
    pub address: Option<String>,
    /// Its weight in the split.
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// Values for `{{labels.NAME}}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Its own signal, instead of the target's template.
    pub signal: Option<SignalConfig>,
    /// Its own control, instead of the target's template.
    pub control: Option<ControlConfig>,
}

fn default_weight() -> f64 {
    1.0
}

/// `[targets.group]`: discovery and tuning of a group.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GroupConfig {
    /// Prometheus `file_sd` JSON files listing instances (re-read every `refresh`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub file_sd: Vec<PathBuf>,
    /// A Prometheus HTTP SD endpoint listing instances.
    pub http_sd: Option<String>,
    /// How often discovery is refreshed.
    #[serde(default = "default_refresh", with = "duration")]
    pub refresh: Duration,
    /// Timeout of one HTTP SD request.
    #[serde(default = "default_sd_timeout", with = "duration")]
    pub timeout: Duration,
    /// A discovered label whose value is the instance's weight.
    pub weight_label: Option<String>,
    /// Failed windows in a row before an instance counts as down.
    #[serde(default = "default_down_after")]
    pub down_after_windows: u32,
}

impl Default for GroupConfig {
    fn default() -> Self {
        GroupConfig {
            file_sd: Vec::new(),
            http_sd: None,
            refresh: default_refresh(),
            timeout: default_sd_timeout(),
            weight_label: None,
            down_after_windows: default_down_after(),
        }
    }
}

fn default_refresh() -> Duration {
    Duration::from_secs(5)
}
fn default_sd_timeout() -> Duration {
    Duration::from_secs(5)
}
fn default_down_after() -> u32 {
    2
}

impl TargetConfig {
    /// Whether this target governs a group of instances.
    pub fn is_group(&self) -> bool {
        !self.instances.is_empty() || self.group.is_some()
    }
}

/// One instance, resolved: its own signal and control.
#[derive(Debug, Clone)]
pub struct MemberSpec {
    /// Its name (`member` label).
    pub name: String,
    /// Its address, when it has one.
    pub address: Option<String>,
    /// Its weight in the split.
    pub weight: f64,
    /// Where its counters come from.
    pub signal: SignalConfig,
    /// Where its share goes.
    pub control: ControlConfig,
}

impl MemberSpec {
    /// What identifies the member's signal and control (a change rebuilds
    /// it): a hash of both, serialized. A hash, not the text, because every
    /// member keeps its fingerprint for as long as it runs (about 1 kB of
    /// text each); two different specs share a 64-bit hash with odds of
    /// about 2^-64.
    pub(crate) fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let text = serde_json::to_string(&(&self.signal, &self.control)).unwrap_or_default();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut h);
        h.finish()
    }
}

/// The values a template is filled with.
struct Vars<'a> {
    name: &'a str,
    address: Option<&'a str>,
    labels: &'a BTreeMap<String, String>,
    /// Validation of a discovery template: any label resolves.
    lenient: bool,
}

/// Fills `{{address}}`, `{{name}}` and `{{labels.NAME}}`; `{{value}}` and
/// `{{window}}` are left for the control and the signal.
fn fill(text: &str, vars: &Vars<'_>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let key = after[..end].trim();
        match key {
            "value" | "window" => {
                out.push_str("{{");
                out.push_str(key);
                out.push_str("}}");
            }
            "address" => out.push_str(vars.address.ok_or_else(|| {
                format!(
                    "`{{{{address}}}}` is used but instance `{}` has no address",
                    vars.name
                )
            })?),
            "name" => out.push_str(vars.name),
            k => match k.strip_prefix("labels.") {
                Some(l) => match (vars.labels.get(l), vars.lenient) {
                    (Some(v), _) => out.push_str(v),
                    (None, true) => out.push('x'),
                    (None, false) => {
                        return Err(format!(
                            "`{{{{labels.{l}}}}}` is used but instance `{}` has no label `{l}`",
                            vars.name
                        ))
                    }
                },
                None => {
                    return Err(format!(
                        "unknown placeholder `{{{{{k}}}}}`; use {{{{address}}}}, {{{{name}}}} or {{{{labels.NAME}}}}"
                    ))
                }
            },
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Fills every string of a config template (through its serde form, so it
/// works for every signal and control kind).
fn fill_template<T: Serialize + DeserializeOwned>(
    template: &T,
    vars: &Vars<'_>,
) -> Result<T, String> {
    fn walk(v: &mut serde_json::Value, vars: &Vars<'_>) -> Result<(), String> {
        match v {
            serde_json::Value::String(s) => *s = fill(s, vars)?,
            serde_json::Value::Array(a) => {
                for x in a {
                    walk(x, vars)?;
                }
            }
            serde_json::Value::Object(o) => {
                // An absent optional field serializes as null; drop it so
                // the field's own default applies again.
                o.retain(|_, x| !x.is_null());
                for x in o.values_mut() {
                    walk(x, vars)?;
                }
            }
            _ => {}
        }
        Ok(())
    }
    let mut v = serde_json::to_value(template).map_err(|e| e.to_string())?;
    walk(&mut v, vars)?;
    serde_json::from_value(v).map_err(|e| e.to_string())
}

fn member_spec(
    t: &TargetConfig,
    name: &str,
    address: Option<&str>,
    weight: f64,
    labels: &BTreeMap<String, String>,
    own: (Option<&SignalConfig>, Option<&ControlConfig>),
    lenient: bool,
) -> Result<MemberSpec, (&'static str, String)> {
    let vars = Vars {
        name,
        address,
        labels,
        lenient,
    };
    let mut signal = fill_template(own.0.unwrap_or(&t.signal), &vars).map_err(|e| ("signal", e))?;
    signal.resolve_window(t.window);
    let control = fill_template(own.1.unwrap_or(&t.control), &vars).map_err(|e| ("control", e))?;
    Ok(MemberSpec {
        name: name.to_string(),
        address: address.map(str::to_string),
        weight,
        signal,
        control,
    })
}

/// A statically listed instance as a member, named `name`: its own signal
/// and control, or the target's templates filled with its name, address
/// and labels.
fn instance_spec(
    t: &TargetConfig,
    i: &InstanceConfig,
    name: &str,
) -> Result<MemberSpec, (&'static str, String)> {
    member_spec(
        t,
        name,
        i.address.as_deref(),
        i.weight,
        &i.labels,
        (i.signal.as_ref(), i.control.as_ref()),
        false,
    )
}

/// The statically listed members of a target.
pub(crate) fn static_members(t: &TargetConfig) -> Result<Vec<MemberSpec>, String> {
    t.instances
        .iter()
        .map(|i| {
            let name = instance_name(i).ok_or("an instance needs a `name` or an `address`")?;
            instance_spec(t, i, &name)
                .map_err(|(field, e)| format!("instances[{name}].{field}: {e}"))
        })
        .collect()
}

fn instance_name(i: &InstanceConfig) -> Option<String> {
    i.name.clone().or_else(|| i.address.clone())
}

/// One instance found by service discovery.
#[derive(Debug, Clone, PartialEq)]
pub struct Discovered {
    /// `host:port` from `targets`.
    pub address: String,
    /// The labels of its entry.
    pub labels: BTreeMap<String, String>,
}

/// Parses Prometheus `file_sd` / HTTP SD JSON:
/// `[{"targets": ["host:port", ...], "labels": {"k": "v"}}, ...]`.
/// An address listed twice keeps its first entry.
pub(crate) fn parse_sd(body: &str) -> Result<Vec<Discovered>, String> {
    #[derive(Deserialize)]
    struct Entry {
        targets: Vec<String>,
        #[serde(default)]
        labels: BTreeMap<String, String>,
    }
    let entries: Vec<Entry> = serde_json::from_str(body).map_err(|e| {
        format!("not Prometheus service-discovery JSON ([{{\"targets\": [...], \"labels\": {{...}}}}]): {e}")
    })?;
    let mut out: Vec<Discovered> = Vec::new();
    for e in entries {
        for address in e.targets {
            if address.trim().is_empty() {
                return Err("an empty address in `targets`".into());
            }
            if !out.iter().any(|d| d.address == address) {
                out.push(Discovered {
                    address,
                    labels: e.labels.clone(),
                });
            }
        }
    }
    Ok(out)
}

pub(crate) fn discovered_member(
    t: &TargetConfig,
    d: &Discovered,
    weight_label: Option<&str>,
) -> Result<MemberSpec, String> {
    let weight = match weight_label.and_then(|l| d.labels.get(l)) {
        Some(w) => match w.parse::<f64>() {
            Ok(w) if w.is_finite() && w > 0.0 => w,
            _ => return Err(format!("weight `{w}` is not a number greater than 0")),
        },
        None => 1.0,
    };
    member_spec(
        t,
        &d.address,
        Some(&d.address),
        weight,
        &d.labels,
        (None, None),
        false,
    )
    .map_err(|(field, e)| format!("{field}: {e}"))
}

/// Every problem of a group target, as (field, reason). The instances'
/// signals and controls are checked as if each were its own target.
pub fn problems(t: &TargetConfig) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let g = t.group.clone().unwrap_or_default();
    if t.instances.is_empty() && g.file_sd.is_empty() && g.http_sd.is_none() {
        out.push((
            "group".into(),
            "a group needs [[targets.instances]], group.file_sd or group.http_sd".into(),
        ));
    }
    if g.refresh.is_zero() {
        out.push(("group.refresh".into(), "must be longer than 0s".into()));
    }
    if g.timeout.is_zero() {
        out.push(("group.timeout".into(), "must be longer than 0s".into()));
    }
    if g.down_after_windows == 0 {
        out.push((
            "group.down_after_windows".into(),
            "must be at least 1".into(),
        ));
    }
    if let Some(url) = &g.http_sd {
        match reqwest::Url::parse(url) {
            Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
            _ => out.push((
                "group.http_sd".into(),
                format!("`{url}` is not an http(s) URL"),
            )),
        }
    }
    let mut check = |prefix: String, spec: Result<MemberSpec, (&'static str, String)>| match spec {
        Err((field, e)) => out.push((format!("{prefix}{field}"), e)),
        Ok(spec) => {
            let single = TargetConfig {
                signal: spec.signal,
                control: spec.control,
                instances: Vec::new(),
                group: None,
                ..t.clone()
            };
            // Each member's signal and control, checked as a target of its own.
            super::io_checks::check_io(&single, &mut |field: &str, reason: String| {
                if field.starts_with("signal") || field.starts_with("control") {
                    out.push((format!("{prefix}{field}"), reason));
                }
            });
        }
    };
    let mut names = Vec::new();
    for (n, i) in t.instances.iter().enumerate() {
        let Some(name) = instance_name(i) else {
            check(
                format!("instances[#{}].", n + 1),
                Err(("name", "give a `name` or an `address`".into())),
            );
            continue;
        };
        let prefix = format!("instances[{name}].");
        if names.contains(&name) {
            check(
                prefix.clone(),
                Err(("name", "duplicate instance name".into())),
            );
        }
        names.push(name.clone());
        if !(i.weight.is_finite() && i.weight > 0.0) {
            check(
                prefix.clone(),
                Err((
                    "weight",
                    format!("must be a number greater than 0 (got {})", i.weight),
                )),
            );
        }
        check(prefix, instance_spec(t, i, &name));
    }
    if !g.file_sd.is_empty() || g.http_sd.is_some() {
        let none = BTreeMap::new();
        let spec = member_spec(
            t,
            "discovered",
            Some("127.0.0.1:9"),
            1.0,
            &none,
            (None, None),
            true,
        );
        check(String::new(), spec);
    }
    out
}
