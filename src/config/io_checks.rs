//! The checks of one target's signal and control: URLs, selectors,
//! credentials kept out of the file, confirmation of writes, and the
//! tools' own limits.
//!
//! Why it is apart from `validate`: a group runs these checks for each
//! member's filled templates (`group`), and the target-level checks in
//! `validate` run the group's; keeping them here lets both use them
//! without importing each other. Like every check, each pushes its problem
//! through an `err(field, reason)` sink and goes on.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{limits, ControlConfig, HttpControlConfig, SignalConfig, TargetConfig};
use crate::auth::{AuthConfig, Credentials, TlsConfig};
use crate::governor::Control;
use crate::promtext::selector::Selector;

/// The problem with a counter signal's `attempts` and `successes` (exactly
/// one must be given), as (field, reason).
pub(super) fn attempts_xor_successes(
    attempts: bool,
    successes: bool,
) -> Option<(&'static str, String)> {
    match (attempts, successes) {
        (false, false) => Some((
            "attempts",
            "give `attempts` (all resolved attempts) or `successes`".to_string(),
        )),
        (true, true) => Some((
            "successes",
            "give either `attempts` or `successes`, not both".to_string(),
        )),
        _ => None,
    }
}

/// The signal's and control's checks of one (non-group) target; a group
/// runs them for each member's filled templates.
pub(super) fn check_io(t: &TargetConfig, err: &mut dyn FnMut(&str, String)) {
    let mut err = err;
    check_adapters(&mut err, t);
    let SignalConfig::Prometheus(s) = &t.signal else {
        if matches!(t.signal, SignalConfig::Promql(_) | SignalConfig::Push(_)) {
            check_other_signal(t, &mut err);
        } else if let ControlConfig::Http(c) = &t.control {
            // A tool adapter's signal (checked above); a generic
            // http control may still pair with it.
            check_http_control(&mut err, c, t.signal.has_offer());
        }
        return;
    };
    check_url(&mut err, "signal.url", &s.url);
    if let Some((field, reason)) =
        attempts_xor_successes(s.attempts.is_some(), s.successes.is_some())
    {
        err(&format!("signal.{field}"), reason);
    }
    for (field, sel) in [
        ("signal.attempts", s.attempts.as_deref()),
        ("signal.successes", s.successes.as_deref()),
        ("signal.failures", Some(s.failures.as_str())),
        ("signal.offer", s.offer.as_deref()),
    ] {
        if let Some(sel) = sel {
            if let Some(reason) = bad_selector(sel) {
                err(field, reason);
            }
        }
    }
    positive(&mut err, "signal.timeout", s.timeout);
    if s.max_body_bytes == 0 || s.max_samples == 0 {
        err(
            "signal.max_body_bytes",
            "limits must be greater than 0".into(),
        );
    }
    check_secrets(&mut err, "signal", &s.auth, &s.tls, &s.headers);
    let ControlConfig::Http(c) = &t.control else {
        return; // A tool adapter's control (checked above).
    };
    check_http_control(&mut err, c, s.offer.is_some());
}

/// Why a selector key does not parse, said the same way for every key.
pub(super) fn bad_selector(sel: &str) -> Option<String> {
    sel.parse::<Selector>()
        .err()
        .map(|e| format!("bad selector `{sel}`: {e}"))
}

/// Credentials must come from files or the environment, never inline.
fn check_secrets(
    err: &mut impl FnMut(&str, String),
    prefix: &str,
    auth: &AuthConfig,
    tls: &TlsConfig,
    headers: &BTreeMap<String, String>,
) {
    if let Err(e) = Credentials::resolve(auth) {
        err(&format!("{prefix}.auth"), e.to_string());
    }
    if !tls.is_empty() {
        if let Err(e) = crate::auth::apply_tls(reqwest::Client::builder(), tls) {
            err(&format!("{prefix}.tls"), e.to_string());
        }
    }
    for name in headers.keys() {
        let lower = name.to_ascii_lowercase();
        if lower == "authorization" || lower == "proxy-authorization" || lower == "cookie" {
            err(
                &format!("{prefix}.headers"),
                format!("`{name}` carries a credential; put it in `{prefix}.auth` (bearer_token_file/_env or username + password_file/_env) so it is never inline"),
            );
        }
    }
}

/// The generic `http` control's checks; `signal_offer` says whether the
/// signal can confirm writes when there is no read-back.
fn check_http_control(
    err: &mut impl FnMut(&str, String),
    c: &HttpControlConfig,
    signal_offer: bool,
) {
    check_url(err, "control.url", &c.url.replace("{{value}}", "1"));
    if reqwest::Method::from_bytes(c.method.as_bytes()).is_err() {
        err(
            "control.method",
            format!("`{}` is not an HTTP method", c.method),
        );
    }
    positive(err, "control.timeout", c.timeout);
    attempts(err, c.confirm_attempts, c.write_attempts);
    match &c.read_back {
        Some(rb) => {
            check_url(err, "control.read_back.url", &rb.url);
            if !(rb.json_pointer.is_empty() || rb.json_pointer.starts_with('/')) {
                err(
                    "control.read_back.json_pointer",
                    format!(
                        "`{}` is not an RFC 6901 pointer; it must start with `/`, e.g. \"/workers\"",
                        rb.json_pointer
                    ),
                );
            }
        }
        None if !signal_offer => err(
            "control.read_back",
            "writes must be confirmed: give [targets.control.read_back] or `signal.offer`".into(),
        ),
        None => {}
    }
}

/// Checks of the tool adapters (`locust`, `k6`, `goose`) on either side.
fn check_adapters(err: &mut impl FnMut(&str, String), t: &TargetConfig) {
    let tool_knob = |err: &mut dyn FnMut(&str, String), tool: &str, what: &str| {
        if t.knob != Control::Concurrency {
            err(
                "knob",
                format!(
                    "{tool} is governed by its {what}, a concurrency: use knob = \"concurrency\""
                ),
            );
        }
    };
    match &t.signal {
        SignalConfig::Prometheus(_) | SignalConfig::Promql(_) | SignalConfig::Push(_) => {}
        SignalConfig::Locust(l) => {
            check_url(err, "signal.url", &l.url);
            positive(err, "signal.timeout", l.timeout);
            if t.window < limits::LOCUST_STATS_CACHE {
                err(
                    "window",
                    format!(
                        "Locust caches /stats/requests for {:?}: a window shorter than that reads the same numbers twice; use \"3s\" or more",
                        limits::LOCUST_STATS_CACHE
                    ),
                );
            }
        }
        SignalConfig::K6(k) => {
            check_url(err, "signal.url", &k.url);
            positive(err, "signal.timeout", k.timeout);
            for (field, name) in [
                ("signal.attempts", &k.attempts),
                ("signal.failures", &k.failures),
            ] {
                if let Some(name) = name {
                    if !limits::is_k6_metric_name(name) {
                        err(
                            field,
                            format!("`{name}` is not a k6 metric name (letters, digits and `_`, starting with a letter or `_`, at most 128)"),
                        );
                    }
                }
            }
        }
        SignalConfig::Goose(g) => {
            check_ws_url(err, "signal.url", &g.url);
            positive(err, "signal.timeout", g.timeout);
        }
    }
    match &t.control {
        ControlConfig::Http(_) => {}
        ControlConfig::Locust(l) => {
            tool_knob(err, "Locust", "user count");
            check_url(err, "control.url", &l.url);
            positive(err, "control.timeout", l.timeout);
            attempts(err, l.confirm_attempts, l.write_attempts);
            if let Some(r) = l.spawn_rate {
                if !(r.is_finite() && r > 0.0) {
                    err(
                        "control.spawn_rate",
                        format!("{r} is not a positive number of users per second"),
                    );
                }
            }
        }
        ControlConfig::K6(k) => {
            tool_knob(err, "k6", "VU count");
            check_url(err, "control.url", &k.url);
            positive(err, "control.timeout", k.timeout);
            attempts(err, k.confirm_attempts, k.write_attempts);
        }
        ControlConfig::Goose(g) => {
            tool_knob(err, "Goose", "user count");
            check_ws_url(err, "control.url", &g.url);
            positive(err, "control.timeout", g.timeout);
            attempts(err, g.confirm_attempts, g.write_attempts);
            let max = limits::GOOSE_MAX_USERS as f64;
            if t.ceiling.is_some_and(|c| c > max) {
                err(
                    "ceiling",
                    format!("Goose accepts at most {max} users; lower the ceiling"),
                );
            }
        }
        ControlConfig::Pull(p) => {
            for (field, reason) in p.problems() {
                err(&format!("control.{field}"), reason);
            }
        }
    }
}

fn positive(err: &mut impl FnMut(&str, String), field: &str, d: Duration) {
    if d.is_zero() {
        err(field, "must be longer than 0s".into());
    }
}

fn attempts(err: &mut impl FnMut(&str, String), confirm: u32, write: u32) {
    if confirm == 0 {
        err("control.confirm_attempts", "must be at least 1".into());
    }
    if write == 0 {
        err("control.write_attempts", "must be at least 1".into());
    }
}

fn check_ws_url(err: &mut impl FnMut(&str, String), field: &str, url: &str) {
    match reqwest::Url::parse(url) {
        Ok(u) if u.scheme() == "ws" => {}
        Ok(u) => err(
            field,
            format!(
                "scheme `{}` is not supported; Goose's controller speaks plain WebSocket: ws://127.0.0.1:5117",
                u.scheme()
            ),
        ),
        Err(e) => err(field, format!("`{url}` is not a URL: {e}")),
    }
}

pub(super) fn check_url(err: &mut impl FnMut(&str, String), field: &str, url: &str) {
    match reqwest::Url::parse(url) {
        Ok(u) if !u.username().is_empty() || u.password().is_some() => err(
            field,
            "credentials in the URL are not allowed (they would be logged); use `auth` with a password file or environment variable".into(),
        ),
        Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
        Ok(u) => err(
            field,
            format!(
                "scheme `{}` is not supported; use http or https",
                u.scheme()
            ),
        ),
        Err(e) => err(field, format!("`{url}` is not a URL: {e}")),
    }
}

/// Checks a target whose signal is not a scrape (`promql`, `push`): the
/// signal's own rules, then the control, which must confirm writes through
/// its own read-back because these signals carry no offer gauge.
fn check_other_signal(t: &TargetConfig, err: &mut impl FnMut(&str, String)) {
    let problems = match &t.signal {
        SignalConfig::Promql(q) => {
            check_url(err, "signal.url", &q.url);
            q.problems()
        }
        SignalConfig::Push(p) => p.problems(),
        _ => Vec::new(),
    };
    for (field, reason) in problems {
        err(&format!("signal.{field}"), reason);
    }
    check_control(&t.control, false, err);
}

/// The control's rules; `has_offer` says whether the signal can confirm writes.
fn check_control(control: &ControlConfig, has_offer: bool, err: &mut impl FnMut(&str, String)) {
    // The tool adapters' controls are checked by `check_adapters`.
    if let ControlConfig::Http(c) = control {
        check_http_control(err, c, has_offer);
    }
}
