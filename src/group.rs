//! Target groups: one governor over many load-generator instances.
//!
//! Why it exists: a large test runs as many generators at once (k6-operator
//! pods, Locust workers, several harness hosts), all hitting the same
//! system. Governing each one alone would let every instance discover the
//! capacity separately and overshoot together. A group reads every
//! instance, sums their windows into **one** window, lets the governor
//! decide **once**, and splits the offer across the instances.
//!
//! The split ([`split`]) is even by default and weighted by each instance's
//! `weight`; integer knobs get whole numbers, with the remainder going to the
//! largest fractional shares. Each instance is capped at its *ceiling share*
//! (its weighted share of the group's ceiling). An instance whose signal
//! fails for `down_after_windows` windows is **down**: it drops out of the
//! split, its share goes to the others (each still capped), the governor's
//! ceiling becomes the sum of the remaining ceiling shares, and both
//! transitions are logged. It rejoins on its first good read.
//!
//! Instances come from `[[targets.instances]]`, a Prometheus `file_sd` JSON
//! file (re-read every `refresh`), or Prometheus HTTP SD. The target's
//! `signal` and `control` are templates: `{{address}}`, `{{name}}` and
//! `{{labels.NAME}}` are filled per instance (a static instance may also
//! give its own `signal` and `control`).
//!
//! The committed group offer is the sum of what the up instances report;
//! as for a single target, when no write is in flight and that sum differs,
//! someone else changed a knob and the governor steps from the sum.
//!
//! What it may touch: the network (each instance's signal and control,
//! service discovery), the `file_sd` files, and the shared telemetry.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, info_span, warn, Instrument};

use crate::config::{Config, ControlConfig, ServerConfig, SignalConfig, TargetConfig};
use crate::control::{same_offer, Actuator, ControlError, WriteOutcome};
use crate::governor::{HoldReason, Params, ThrottleGovernor};
use crate::reload::Lifecycle;
use crate::signal::{Counters, SignalError, Source};
use crate::telemetry::logging::{log_memory_clear, log_movement, offer};
use crate::telemetry::metrics::{label, ErrorLabels, MemberLabels, WriteLabels};
use crate::telemetry::{lock, MemberStatus, TargetStatus, Telemetry};
use crate::window::{WindowOutcome, WindowTracker};

/// The largest service-discovery answer accepted: 4 MiB.
const MAX_SD_BYTES: usize = 4 * 1024 * 1024;

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
    #[serde(
        default = "default_refresh",
        deserialize_with = "crate::config::de_duration",
        serialize_with = "crate::config::ser_duration"
    )]
    pub refresh: Duration,
    /// Timeout of one HTTP SD request.
    #[serde(
        default = "default_sd_timeout",
        deserialize_with = "crate::config::de_duration",
        serialize_with = "crate::config::ser_duration"
    )]
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

// ---------------------------------------------------------------------------
// The split (pure)

/// Splits `offer` across members by `weights`, each capped at its `caps`
/// entry; what a capped member cannot take goes to the others by weight.
/// Integer knobs get whole numbers: the floor of each share, then one more
/// to the largest fractional parts (ties: the earlier member) while caps
/// allow. The shares sum to `min(offer, sum of caps)`.
pub fn split(offer: f64, weights: &[f64], caps: &[f64], integer: bool) -> Vec<f64> {
    let n = weights.len();
    let mut alloc = vec![0.0; n];
    let eligible = |i: usize| weights[i] > 0.0 && caps[i] > 0.0;
    if offer.is_infinite() && offer > 0.0 {
        return (0..n)
            .map(|i| if eligible(i) { f64::INFINITY } else { 0.0 })
            .collect();
    }
    if n == 0 || offer.is_nan() || offer <= 0.0 {
        return alloc;
    }
    let mut active: Vec<usize> = (0..n).filter(|&i| eligible(i)).collect();
    let mut remaining = offer;
    while !active.is_empty() && remaining > 0.0 {
        let total: f64 = active.iter().map(|&i| weights[i]).sum();
        let capped: Vec<usize> = active
            .iter()
            .copied()
            .filter(|&i| remaining * weights[i] / total >= caps[i])
            .collect();
        if capped.is_empty() {
            for &i in &active {
                alloc[i] = remaining * weights[i] / total;
            }
            break;
        }
        for &i in &capped {
            alloc[i] = caps[i];
            remaining -= caps[i];
        }
        active.retain(|i| !capped.contains(i));
    }
    if !integer {
        return alloc;
    }
    let placed: f64 = alloc.iter().sum();
    let total = (placed + 1e-9).floor();
    let mut shares: Vec<f64> = alloc.iter().map(|a| (a + 1e-9).floor()).collect();
    let mut left = total - shares.iter().sum::<f64>();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        let fa = alloc[a] - shares[a];
        let fb = alloc[b] - shares[b];
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    for i in order {
        if left < 0.5 {
            break;
        }
        if eligible(i) && shares[i] + 1.0 <= caps[i] + 1e-9 {
            shares[i] += 1.0;
            left -= 1.0;
        }
    }
    shares
}

// ---------------------------------------------------------------------------
// Members: templates, discovery and validation

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
    /// What identifies the member's signal and control (a change rebuilds it).
    fn fingerprint(&self) -> String {
        serde_json::to_string(&(&self.signal, &self.control)).unwrap_or_default()
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

/// The statically listed members of a target.
pub fn static_members(t: &TargetConfig) -> Result<Vec<MemberSpec>, String> {
    t.instances
        .iter()
        .map(|i| {
            let name = instance_name(i).ok_or("an instance needs a `name` or an `address`")?;
            member_spec(
                t,
                &name,
                i.address.as_deref(),
                i.weight,
                &i.labels,
                (i.signal.as_ref(), i.control.as_ref()),
                false,
            )
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
pub fn parse_sd(body: &str) -> Result<Vec<Discovered>, String> {
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

fn discovered_member(
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
            let cfg = Config {
                server: ServerConfig::default(),
                targets: vec![single],
            };
            for e in cfg.validate() {
                if e.field.starts_with("signal") || e.field.starts_with("control") {
                    out.push((format!("{prefix}{}", e.field), e.reason));
                }
            }
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
        let spec = member_spec(
            t,
            &name,
            i.address.as_deref(),
            i.weight,
            &i.labels,
            (i.signal.as_ref(), i.control.as_ref()),
            false,
        );
        check(prefix, spec);
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

/// Re-reads `file_sd` files and HTTP SD; keeps the last good list when a
/// source fails, so a half-written file never empties a group.
struct Discovery {
    files: Vec<PathBuf>,
    http: Option<String>,
    client: reqwest::Client,
    timeout: Duration,
    refresh: Duration,
    next: Instant,
    last: Vec<Discovered>,
}

impl Discovery {
    fn new(g: &GroupConfig, client: reqwest::Client) -> Self {
        Discovery {
            files: g.file_sd.clone(),
            http: g.http_sd.clone(),
            client,
            timeout: g.timeout,
            refresh: g.refresh,
            next: Instant::now(),
            last: Vec::new(),
        }
    }

    fn due(&self) -> bool {
        (!self.files.is_empty() || self.http.is_some()) && Instant::now() >= self.next
    }

    async fn refresh(&mut self, target: &str) {
        self.next = Instant::now() + self.refresh;
        let mut found: Vec<Discovered> = Vec::new();
        let mut ok = true;
        for f in &self.files {
            let text = tokio::time::timeout(self.timeout, tokio::fs::read_to_string(f)).await;
            match text.map(|r| r.map_err(|e| e.to_string())) {
                Ok(Ok(text)) => match parse_sd(&text) {
                    Ok(d) => found.extend(d),
                    Err(e) => {
                        ok = false;
                        warn!(target, file = %f.display(), "file_sd: {e}; keeping the previous instances");
                    }
                },
                Ok(Err(e)) => {
                    ok = false;
                    warn!(target, file = %f.display(), "file_sd: cannot read: {e}; keeping the previous instances");
                }
                Err(_) => {
                    ok = false;
                    warn!(target, file = %f.display(), "file_sd: read timed out; keeping the previous instances");
                }
            }
        }
        if let Some(url) = &self.http {
            let request = self.client.get(url);
            match crate::signal::http::fetch_text(request, self.timeout, MAX_SD_BYTES).await {
                Ok(text) => match parse_sd(&text) {
                    Ok(d) => found.extend(d),
                    Err(e) => {
                        ok = false;
                        warn!(target, url, "http_sd: {e}; keeping the previous instances");
                    }
                },
                Err(e) => {
                    ok = false;
                    warn!(target, url, "http_sd: {e}; keeping the previous instances");
                }
            }
        }
        if ok {
            let mut unique: Vec<Discovered> = Vec::new();
            for d in found {
                if !unique.iter().any(|u| u.address == d.address) {
                    unique.push(d);
                }
            }
            self.last = unique;
        }
    }
}

// ---------------------------------------------------------------------------
// The group's task

/// Everything one group's task needs.
pub struct GroupTask {
    /// The target's config (signal and control are templates).
    pub config: TargetConfig,
    /// The group's governor parameters (ceiling and floor are the group's).
    pub params: Params,
    /// Shared metrics and status.
    pub telemetry: Arc<Telemetry>,
    /// Read and decide, never write.
    pub dry_run: bool,
    /// Resume and handover on reload.
    pub lifecycle: Lifecycle,
    client: reqwest::Client,
    static_specs: Vec<MemberSpec>,
}

impl GroupTask {
    /// Builds a group's task from a validated target.
    pub fn new(
        config: &TargetConfig,
        telemetry: Arc<Telemetry>,
        dry_run: bool,
        client: reqwest::Client,
    ) -> Result<Self, String> {
        let params = config.params().map_err(|e| {
            e.iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        })?;
        Ok(GroupTask {
            static_specs: static_members(config)?,
            config: config.clone(),
            params,
            telemetry,
            dry_run,
            lifecycle: Lifecycle::default(),
            client,
        })
    }

    /// Runs until `cancel` fires, then applies `on_exit` within a bound.
    pub async fn run(self, cancel: CancellationToken) {
        let span = info_span!("target", target = %self.config.name);
        self.run_inner(cancel).instrument(span).await
    }

    fn specs(&self, discovery: &Discovery) -> Vec<MemberSpec> {
        let mut specs = self.static_specs.clone();
        let weight_label = self
            .config
            .group
            .as_ref()
            .and_then(|g| g.weight_label.as_deref());
        for d in &discovery.last {
            if specs.iter().any(|s| s.name == d.address) {
                continue;
            }
            match discovered_member(&self.config, d, weight_label) {
                Ok(spec) => specs.push(spec),
                Err(e) => warn!(target = %self.config.name, member = %d.address,
                    "Discovered instance {} skipped: {e}", d.address),
            }
        }
        specs
    }

    /// Adds, rebuilds and removes members; returns whether anything changed.
    fn reconcile(&self, members: &mut BTreeMap<String, Member>, specs: Vec<MemberSpec>) -> bool {
        let name = &self.config.name;
        let mut changed = false;
        let wanted: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        for gone in members
            .keys()
            .filter(|k| !wanted.contains(k))
            .cloned()
            .collect::<Vec<_>>()
        {
            if let Some(m) = members.remove(&gone) {
                m.writer.stop();
            }
            info!(target = %name, member = %gone, "{name}: instance {gone} left the group; the split is recomputed");
            changed = true;
        }
        for spec in specs {
            let fingerprint = spec.fingerprint();
            if let Some(m) = members.get_mut(&spec.name) {
                if m.fingerprint == fingerprint {
                    if m.spec.weight != spec.weight {
                        m.spec.weight = spec.weight;
                        changed = true;
                    }
                    continue;
                }
            }
            match Member::new(self, spec, fingerprint) {
                Ok(m) => {
                    let joined = m.spec.name.clone();
                    if let Some(old) = members.insert(joined.clone(), m) {
                        old.writer.stop();
                        info!(target = %name, member = %joined, "{name}: instance {joined} changed its signal or control; rebuilt");
                    } else {
                        info!(target = %name, member = %joined, "{name}: instance {joined} joins the group");
                    }
                    changed = true;
                }
                Err((member, e)) => {
                    warn!(target = %name, member = %member, "{name}: instance {member} cannot be built: {e}")
                }
            }
        }
        changed
    }

    async fn run_inner(self, cancel: CancellationToken) {
        let name = self.config.name.clone();
        let p = self.params;
        let knob = p.control;
        let integer = knob.is_integer();
        let tel = self.telemetry.clone();
        let window = self.config.window;
        let window_secs = window.as_secs_f64();
        let group_cfg = self.config.group.clone().unwrap_or_default();
        tel.metrics
            .init_target(&name, p.floor, p.ceiling, p.high, p.start);
        tel.register(TargetStatus::initial(&name, &p, self.dry_run));

        let mut discovery = Discovery::new(&group_cfg, self.client.clone());
        if discovery.due() {
            discovery.refresh(&name).await;
        }
        let mut members: BTreeMap<String, Member> = BTreeMap::new();
        self.reconcile(&mut members, self.specs(&discovery));
        let mut gov = ThrottleGovernor::new(p);
        let eff = rebalance(&mut members, &p, integer);
        if eff > 0.0 {
            gov = with_ceiling(&gov, &p, eff);
        }

        let mut need_split = false;
        if let Some(r) = self.lifecycle.resume {
            gov.set_current(r.current.clamp(gov.params().floor, gov.params().ceiling));
            gov.restore_memory(r.last_bad, r.clean_streak);
            info!(target = %name, "{name}: resuming at {} {knob} across {} instances with its congestion memory", offer(knob, r.current), members.len());
            need_split = true;
        } else if self.dry_run {
            info!(target = %name, "Dry run: would publish the opening offer {} {knob} across {} instances", offer(knob, p.start), members.len());
        } else {
            let start = gov.state().current;
            info!(target = %name, "Publishing the opening offer {} {knob} across {} instances", offer(knob, start), members.len());
            split_offer(&mut members, start, integer);
            let bound = Duration::from_secs(10);
            tokio::select! {
                _ = wait_idle(&members, bound) => {}
                _ = cancel.cancelled() => {}
            }
        }
        log_split(&name, knob, &members);

        let started = Instant::now();
        let mut ticker = tokio::time::interval(window);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut last_outside: Option<f64> = None;
        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = ticker.tick() => {}
            }
            let mut changed = false;
            if discovery.due() {
                discovery.refresh(&name).await;
                changed |= self.reconcile(&mut members, self.specs(&discovery));
            }
            let t0 = Instant::now();
            let mut reads = read_all(&members, window.max(Duration::from_secs(1))).await;
            tel.metrics
                .read_duration
                .get_or_create(&label(&name))
                .observe(t0.elapsed().as_secs_f64());
            let at = started.elapsed().as_secs_f64();

            let mut sum = (0.0, 0.0);
            let mut contributors = 0;
            let mut failed = Vec::new();
            for (mname, m) in members.iter_mut() {
                let Some((signal, committed)) = reads.remove(mname) else {
                    continue;
                };
                // A pulling member that stopped asking is gone (pull control).
                let signal = match (signal, &committed) {
                    (Ok(_), Some(Err(e @ ControlError::NotPulled(_)))) => {
                        Err(SignalError::Stale(e.to_string()))
                    }
                    (s, _) => s,
                };
                match signal {
                    Ok(c) => {
                        m.failed_windows = 0;
                        m.last_error = None;
                        if !m.up {
                            m.up = true;
                            changed = true;
                            info!(target = %name, member = %mname, "{name}: instance {mname} is back; it rejoins the split");
                        }
                        m.committed = match committed {
                            Some(Ok(v)) => Some(v),
                            Some(Err(e)) => {
                                count_control_error(&tel, &name, &e);
                                debug!(target = %name, member = %mname, error = %e, "Cannot read the committed offer");
                                None
                            }
                            None => c.offer,
                        };
                        match m.window.observe(c.reading(at)) {
                            Ok(WindowOutcome::Window(w)) => {
                                sum.0 += w.attempts;
                                sum.1 += w.failures;
                                contributors += 1;
                            }
                            Ok(WindowOutcome::Baseline) => {}
                            Ok(WindowOutcome::CounterReset) => {
                                tel.metrics
                                    .counter_resets
                                    .get_or_create(&label(&name))
                                    .inc();
                                warn!(target = %name, member = %mname, "{name}: instance {mname}: counter reset (restart?); its window is discarded, baseline rebased");
                            }
                            Err(e) => {
                                count_signal_error(&tel, &name, e.error_type());
                                warn!(target = %name, member = %mname, error_type = e.error_type(), "{name}: instance {mname}: {e}");
                            }
                        }
                    }
                    Err(e) => {
                        count_signal_error(&tel, &name, e.error_type());
                        m.failed_windows += 1;
                        m.committed = None;
                        m.last_error = Some(format!("{}: {e}", e.error_type()));
                        failed.push(format!("{mname}: {e}"));
                        if m.up && m.failed_windows >= group_cfg.down_after_windows {
                            m.up = false;
                            changed = true;
                            // Its counters may restart with it: rejoin from a new baseline.
                            m.window.reset();
                            warn!(target = %name, member = %mname, error_type = e.error_type(),
                                "{name}: instance {mname} is down ({e}); its share goes to the others");
                        } else {
                            debug!(target = %name, member = %mname, error = %e, "Signal error");
                        }
                    }
                }
            }

            if changed {
                let eff = rebalance(&mut members, &p, integer);
                if eff > 0.0 {
                    gov = with_ceiling(&gov, &p, eff);
                    tel.metrics.ceiling.get_or_create(&label(&name)).set(eff);
                    tel.update(&name, |s| s.ceiling = eff.is_finite().then_some(eff));
                }
                need_split = true;
            }

            // The committed group offer: the sum over the up instances.
            let idle = members.values().all(|m| m.writer.idle());
            let up: Vec<&Member> = members.values().filter(|m| m.up).collect();
            if idle && !need_split && !up.is_empty() {
                if let Some(committed) = up.iter().map(|m| m.committed).sum::<Option<f64>>() {
                    let cur = gov.state().current;
                    if self.dry_run {
                        gov.set_current(committed);
                    } else if !same_offer(integer, committed, cur) {
                        if last_outside != Some(committed) {
                            info!(target = %name, from = cur, to = committed,
                                "{name}: the instances report {} {knob} in all, not {}; stepping from their sum",
                                offer(knob, committed), offer(knob, cur));
                            tel.metrics
                                .outside_changes
                                .get_or_create(&label(&name))
                                .inc();
                            last_outside = Some(committed);
                        }
                        let q = gov.params();
                        gov.set_current(committed.clamp(q.floor, q.ceiling));
                        need_split = true;
                    }
                }
            }

            if contributors > 0 {
                let outcome = gov.step(sum.0, sum.1);
                tel.metrics.signal_up.get_or_create(&label(&name)).set(1.0);
                tel.update(&name, |s| s.has_baseline = true);
                tel.export_outcome(&name, &outcome, at, window_secs);
                if outcome.memory_cleared {
                    log_memory_clear(&name, knob, outcome.from);
                }
                if outcome.is_movement() {
                    log_movement(&name, knob, &outcome, window_secs, self.dry_run);
                    need_split = true;
                }
            } else if !members.is_empty() && failed.len() == members.len() {
                let msg = format!("no instance answered: {}", failed.join("; "));
                tel.metrics.signal_up.get_or_create(&label(&name)).set(0.0);
                warn!(target = %name, "Signal error, holding: {msg}");
                tel.export_outcome(
                    &name,
                    &gov.hold(HoldReason::SignalError, None, false),
                    at,
                    window_secs,
                );
                tel.update(&name, |s| s.last_error = Some(msg));
            } else {
                tel.export_outcome(
                    &name,
                    &gov.hold(HoldReason::Baseline, None, false),
                    at,
                    window_secs,
                );
            }

            if need_split && !self.dry_run && members.values().any(|m| m.up) {
                split_offer(&mut members, gov.state().current, integer);
                if changed {
                    log_split(&name, knob, &members);
                }
                need_split = false;
            }
            publish_members(&tel, &name, &members);
        }

        // Shutdown: let in-flight writes finish within a bound, then on_exit.
        let grace = Duration::from_secs(2).max(window);
        for m in members.values() {
            m.writer.cancel.cancel();
        }
        for m in members.values_mut() {
            if let Some(h) = m.writer.handle.take() {
                if tokio::time::timeout(grace, h).await.is_err() {
                    warn!(target = %name, member = %m.spec.name, "In-flight write abandoned at shutdown");
                }
            }
        }
        let exit_value = match self.config.on_exit {
            crate::config::OnExit::Leave => None,
            crate::config::OnExit::Floor => Some(p.floor),
            crate::config::OnExit::Start => Some(p.start),
        };
        let handover = self.lifecycle.handover.is_cancelled();
        if let (Some(v), false, false) = (exit_value, self.dry_run, handover) {
            on_exit(&tel, &name, knob, &members, v, grace).await;
        }
    }
}

/// Sets every member's ceiling share (over all members, up or down) and
/// returns the sum over the up members: the governor's effective ceiling.
fn rebalance(members: &mut BTreeMap<String, Member>, p: &Params, integer: bool) -> f64 {
    let weights: Vec<f64> = members.values().map(|m| m.spec.weight).collect();
    let unbounded = vec![f64::INFINITY; weights.len()];
    let shares = split(p.ceiling, &weights, &unbounded, integer);
    let mut eff = 0.0;
    for (m, s) in members.values_mut().zip(shares) {
        m.ceiling_share = s;
        if m.up {
            eff += s;
        }
    }
    eff
}

/// The governor with the ceiling lowered to `eff` (never raised above the
/// configured one), keeping the offer (clamped) and the congestion memory.
fn with_ceiling(gov: &ThrottleGovernor, p: &Params, eff: f64) -> ThrottleGovernor {
    let ceiling = eff.min(p.ceiling);
    let floor = p.floor.min(ceiling);
    let q = Params {
        ceiling,
        floor,
        start: p.start.clamp(floor, ceiling),
        ..*p
    };
    let st = gov.state();
    let mut g = ThrottleGovernor::new(q);
    g.restore_memory(st.last_bad, st.clean_streak);
    g.set_current(st.current.clamp(floor, ceiling));
    g
}

/// Splits `offer` over the up members and hands changed shares to their writers.
fn split_offer(members: &mut BTreeMap<String, Member>, offer: f64, integer: bool) {
    let up: Vec<&mut Member> = members.values_mut().filter(|m| m.up).collect();
    let weights: Vec<f64> = up.iter().map(|m| m.spec.weight).collect();
    let caps: Vec<f64> = up.iter().map(|m| m.ceiling_share).collect();
    let shares = split(offer, &weights, &caps, integer);
    for (m, share) in up.into_iter().zip(shares) {
        let in_effect = m.committed.is_some_and(|c| same_offer(integer, c, share));
        if m.share != Some(share) || !in_effect {
            m.share = Some(share);
            m.writer.send(share);
        }
    }
    for m in members.values_mut().filter(|m| !m.up) {
        m.share = None;
    }
}

fn log_split(name: &str, knob: crate::governor::Control, members: &BTreeMap<String, Member>) {
    let parts: Vec<String> = members
        .values()
        .map(|m| match (m.up, m.share) {
            (true, Some(s)) => format!("{}={}", m.spec.name, offer(knob, s)),
            (true, None) => format!("{}=?", m.spec.name),
            (false, _) => format!("{}=down", m.spec.name),
        })
        .collect();
    info!(target = %name, "{name}: split {}", parts.join(", "));
}

async fn wait_idle(members: &BTreeMap<String, Member>, bound: Duration) {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline && !members.values().all(|m| m.writer.idle()) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

type Read = (
    Result<Counters, SignalError>,
    Option<Result<f64, ControlError>>,
);

/// Reads every member at once; a member that has not answered within
/// `bound` counts as a timeout.
async fn read_all(members: &BTreeMap<String, Member>, bound: Duration) -> BTreeMap<String, Read> {
    let mut set = JoinSet::new();
    for (name, m) in members {
        let (source, actuator, separate) =
            (m.source.clone(), m.actuator.clone(), m.separate_read_back);
        let name = name.clone();
        set.spawn(async move {
            let committed = async {
                if separate {
                    Some(actuator.committed().await)
                } else {
                    None
                }
            };
            let (signal, committed) = tokio::join!(source.read(), committed);
            (name, signal, committed)
        });
    }
    let deadline = Instant::now() + bound;
    let mut out = BTreeMap::new();
    while let Ok(Some(joined)) = tokio::time::timeout_at(deadline, set.join_next()).await {
        if let Ok((name, signal, committed)) = joined {
            out.insert(name, (signal, committed));
        }
    }
    set.abort_all();
    for name in members.keys() {
        out.entry(name.clone())
            .or_insert_with(|| (Err(SignalError::Timeout(bound)), None));
    }
    out
}

async fn on_exit(
    tel: &Arc<Telemetry>,
    name: &str,
    knob: crate::governor::Control,
    members: &BTreeMap<String, Member>,
    value: f64,
    grace: Duration,
) {
    let up: Vec<&Member> = members.values().filter(|m| m.up).collect();
    let weights: Vec<f64> = up.iter().map(|m| m.spec.weight).collect();
    let caps: Vec<f64> = up.iter().map(|m| m.ceiling_share).collect();
    let shares = split(value, &weights, &caps, knob.is_integer());
    let mut set = JoinSet::new();
    for (m, share) in up.into_iter().zip(shares) {
        let (actuator, member) = (m.actuator.clone(), m.spec.name.clone());
        set.spawn(async move { (member, share, actuator.write_confirmed(share).await) });
    }
    let all = async {
        while let Some(joined) = set.join_next().await {
            let Ok((member, share, outcome)) = joined else {
                continue;
            };
            count_write(tel, name, outcome.result());
            match outcome {
                WriteOutcome::Confirmed { .. } => {}
                other => warn!(target = %name, member = %member,
                    "On exit: writing {} to {member} ended {}", offer(knob, share), other.result()),
            }
        }
    };
    if tokio::time::timeout(grace, all).await.is_err() {
        warn!(target = %name, "On exit: writes timed out");
    } else {
        info!(target = %name, "On exit: left the group at {} {knob}", offer(knob, value));
    }
}

fn publish_members(tel: &Telemetry, name: &str, members: &BTreeMap<String, Member>) {
    let statuses = members
        .values()
        .map(|m| {
            let l = MemberLabels {
                target: name.to_string(),
                member: m.spec.name.clone(),
            };
            tel.metrics
                .member_up
                .get_or_create(&l)
                .set(if m.up { 1.0 } else { 0.0 });
            tel.metrics
                .member_offer
                .get_or_create(&l)
                .set(m.share.unwrap_or(0.0));
            MemberStatus {
                name: m.spec.name.clone(),
                address: m.spec.address.clone(),
                weight: m.spec.weight,
                up: m.up,
                share: m.share,
                ceiling_share: m.ceiling_share.is_finite().then_some(m.ceiling_share),
                committed: m.committed,
                last_error: m.last_error.clone(),
            }
        })
        .collect();
    tel.set_members(name, Some(statuses));
}

/// One live member of a group.
struct Member {
    spec: MemberSpec,
    fingerprint: String,
    source: Source,
    actuator: Actuator,
    /// Whether the committed offer comes from a read-back request (else
    /// from the signal's offer gauge, read with the counters).
    separate_read_back: bool,
    window: WindowTracker,
    up: bool,
    failed_windows: u32,
    committed: Option<f64>,
    share: Option<f64>,
    ceiling_share: f64,
    last_error: Option<String>,
    writer: Writer,
}

impl Member {
    fn new(
        task: &GroupTask,
        spec: MemberSpec,
        fingerprint: String,
    ) -> Result<Member, (String, String)> {
        let err = |e: String| (spec.name.clone(), e);
        let source = Source::new(&spec.signal, task.client.clone()).map_err(err)?;
        source.attach_push(&task.telemetry.push);
        let integer = task.params.control.is_integer();
        let actuator = Actuator::new(&spec.control, integer, &source, task.client.clone())
            .map_err(|e| err(e.to_string()))?
            .with_pull(
                &task.telemetry.pull,
                &task.config.name,
                Some((&spec.name, spec.address.as_deref())),
            );
        let separate_read_back = match &spec.control {
            ControlConfig::Http(h) => h.read_back.is_some(),
            ControlConfig::Pull(p) => p.read_back.is_some() || !source.has_offer(),
            // The tool adapters read the committed offer back from the tool.
            _ => true,
        };
        let writer = Writer::spawn(
            task.config.name.clone(),
            spec.name.clone(),
            actuator.clone(),
            task.telemetry.clone(),
        );
        Ok(Member {
            spec,
            fingerprint,
            source,
            actuator,
            separate_read_back,
            window: WindowTracker::default(),
            up: true,
            failed_windows: 0,
            committed: None,
            share: None,
            ceiling_share: f64::INFINITY,
            last_error: None,
            writer,
        })
    }
}

/// A member's writer task: takes the latest share and confirms it.
struct Writer {
    tx: watch::Sender<Option<f64>>,
    pending: Arc<Mutex<Option<f64>>>,
    cancel: CancellationToken,
    handle: Option<JoinHandle<()>>,
}

impl Writer {
    fn spawn(group: String, member: String, actuator: Actuator, tel: Arc<Telemetry>) -> Writer {
        let (tx, rx) = watch::channel(None);
        let pending = Arc::new(Mutex::new(None));
        let cancel = CancellationToken::new();
        let handle = tokio::spawn(
            writer_loop(
                group,
                member,
                actuator,
                rx,
                pending.clone(),
                tel,
                cancel.clone(),
            )
            .in_current_span(),
        );
        Writer {
            tx,
            pending,
            cancel,
            handle: Some(handle),
        }
    }

    fn send(&self, value: f64) {
        *lock(&self.pending) = Some(value);
        let _ = self.tx.send(Some(value));
    }

    fn idle(&self) -> bool {
        lock(&self.pending).is_none()
    }

    fn stop(mut self) {
        self.cancel.cancel();
        if let Some(h) = self.handle.take() {
            h.abort();
        }
    }
}

async fn writer_loop(
    group: String,
    member: String,
    actuator: Actuator,
    mut desired: watch::Receiver<Option<f64>>,
    pending: Arc<Mutex<Option<f64>>>,
    tel: Arc<Telemetry>,
    cancel: CancellationToken,
) {
    loop {
        tokio::select! {
            changed = desired.changed() => if changed.is_err() { return },
            _ = cancel.cancelled() => return,
        }
        let Some(value) = *desired.borrow_and_update() else {
            continue;
        };
        let t0 = Instant::now();
        let outcome = actuator.write_confirmed(value).await;
        tel.metrics
            .write_duration
            .get_or_create(&label(&group))
            .observe(t0.elapsed().as_secs_f64());
        count_write(&tel, &group, outcome.result());
        {
            let mut p = lock(&pending);
            if *p == Some(value) {
                *p = None;
            }
        }
        match &outcome {
            WriteOutcome::Confirmed { .. } => {}
            WriteOutcome::Failed(e) => {
                count_control_error(&tel, &group, e);
                warn!(target = %group, member = %member, error_type = e.error_type(),
                    "Write of {value} to instance {member} failed: {e}");
            }
            WriteOutcome::Unconfirmed { committed, .. } => {
                warn!(target = %group, member = %member,
                    "Write of {value} to instance {member} not confirmed (it reports {committed:?})");
            }
        }
    }
}

fn count_write(tel: &Telemetry, name: &str, result: &'static str) {
    tel.metrics
        .writes
        .get_or_create(&WriteLabels {
            target: name.to_string(),
            result,
        })
        .inc();
}

fn count_control_error(tel: &Telemetry, name: &str, e: &ControlError) {
    tel.metrics
        .control_errors
        .get_or_create(&ErrorLabels {
            target: name.to_string(),
            error_type: e.error_type(),
        })
        .inc();
}

fn count_signal_error(tel: &Telemetry, name: &str, error_type: &'static str) {
    tel.metrics
        .signal_errors
        .get_or_create(&ErrorLabels {
            target: name.to_string(),
            error_type,
        })
        .inc();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(v: &[f64]) -> f64 {
        v.iter().sum()
    }

    #[test]
    fn even_split_gives_the_remainder_to_the_first() {
        let inf = [f64::INFINITY; 3];
        assert_eq!(split(10.0, &[1.0; 3], &inf, true), vec![4.0, 3.0, 3.0]);
        assert_eq!(split(2.0, &[1.0; 3], &inf, true), vec![1.0, 1.0, 0.0]);
        assert_eq!(split(9.0, &[1.0; 3], &inf, true), vec![3.0, 3.0, 3.0]);
        let r = split(10.0, &[1.0; 3], &inf, false);
        assert!(r.iter().all(|s| (s - 10.0 / 3.0).abs() < 1e-12), "{r:?}");
    }

    #[test]
    fn weights_shape_the_split() {
        let inf = [f64::INFINITY; 3];
        assert_eq!(
            split(90.0, &[2.0, 3.0, 4.0], &inf, true),
            vec![20.0, 30.0, 40.0]
        );
        // 100 * (2/9, 3/9, 4/9) = 22.2, 33.3, 44.4: 99 placed, one to the largest fraction.
        assert_eq!(
            split(100.0, &[2.0, 3.0, 4.0], &inf, true),
            vec![22.0, 33.0, 45.0]
        );
    }

    #[test]
    fn capped_shares_spill_to_the_others() {
        // Caps 10, 100, 100: the first takes 10, the rest split 140.
        assert_eq!(
            split(150.0, &[1.0; 3], &[10.0, 100.0, 100.0], true),
            vec![10.0, 70.0, 70.0]
        );
        // More than all caps: each gets its cap, the rest is not placed.
        assert_eq!(
            split(500.0, &[1.0; 2], &[30.0, 40.0], true),
            vec![30.0, 40.0]
        );
        // Rates are not rounded.
        assert_eq!(split(3.0, &[1.0, 1.0], &[0.5, 10.0], false), vec![0.5, 2.5]);
    }

    #[test]
    fn split_invariants_hold_over_many_inputs() {
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for _ in 0..2000 {
            let n = 1 + next(6) as usize;
            let weights: Vec<f64> = (0..n).map(|_| 1.0 + next(5) as f64).collect();
            let caps: Vec<f64> = (0..n).map(|_| next(60) as f64).collect();
            let offer = next(250) as f64;
            for integer in [true, false] {
                let s = split(offer, &weights, &caps, integer);
                let want = offer.min(sum(&caps));
                assert!(
                    (sum(&s) - want).abs() < 1e-6,
                    "{offer} {weights:?} {caps:?} {s:?}"
                );
                for (i, v) in s.iter().enumerate() {
                    assert!(*v >= 0.0 && *v <= caps[i] + 1e-9, "{s:?} caps {caps:?}");
                    if integer {
                        assert_eq!(v.fract(), 0.0, "{s:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn unbounded_rate_ceilings_stay_unbounded() {
        let s = split(f64::INFINITY, &[1.0, 0.0], &[f64::INFINITY; 2], false);
        assert_eq!(s, vec![f64::INFINITY, 0.0]);
    }

    #[test]
    fn file_sd_json_parses_and_dedupes() {
        let d = parse_sd(
            r#"[{"targets": ["a:1", "b:2"], "labels": {"weight": "2"}},
                {"targets": ["a:1", "c:3"]}]"#,
        )
        .unwrap();
        let addrs: Vec<&str> = d.iter().map(|d| d.address.as_str()).collect();
        assert_eq!(addrs, ["a:1", "b:2", "c:3"]);
        assert_eq!(d[0].labels["weight"], "2");
        assert!(parse_sd("{}").unwrap_err().contains("service-discovery"));
        assert!(parse_sd(r#"[{"targets": [""]}]"#).is_err());
    }

    #[test]
    fn placeholders_fill_and_unknown_ones_are_errors() {
        let labels = BTreeMap::from([("pod".to_string(), "w-1".to_string())]);
        let vars = Vars {
            name: "w1",
            address: Some("10.0.0.1:9100"),
            labels: &labels,
            lenient: false,
        };
        assert_eq!(
            fill("http://{{address}}/x?p={{labels.pod}}&v={{value}}", &vars).unwrap(),
            "http://10.0.0.1:9100/x?p=w-1&v={{value}}"
        );
        assert!(fill("{{labels.zone}}", &vars)
            .unwrap_err()
            .contains("no label"));
        assert!(fill("{{adress}}", &vars)
            .unwrap_err()
            .contains("unknown placeholder"));
        assert_eq!(fill("sum(x{a=\"{\"})", &vars).unwrap(), "sum(x{a=\"{\"})");
    }
}
