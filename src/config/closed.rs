//! Checks that keep the governor closed by default and make `check` refuse
//! whatever `run` would refuse.
//!
//! Why it exists: `run` builds HTTP headers, opens the state file and
//! renders write templates only after `check` has said "valid"; each of
//! those could still fail (a header name with a trailing space, a value
//! with a newline, a directory as the state file). And a push endpoint
//! reachable off loopback without a token would let anyone on the network
//! feed the signal, which `docs/RELIABILITY.md` promises cannot happen.

use std::collections::BTreeMap;
use std::path::Path;

use reqwest::header::{HeaderName, HeaderValue};

use super::{Config, ControlConfig, FieldError, SignalConfig};

/// Every problem of these kinds in `config`.
pub fn problems(config: &Config) -> Vec<FieldError> {
    let mut out = Vec::new();
    let server = |field: &str, reason: String| FieldError {
        target: None,
        field: field.to_string(),
        reason,
    };
    let push = &config.server.push;
    let has_token = push.bearer_token_file.is_some() || push.bearer_token_env.is_some();
    if !config.server.listen.ip().is_loopback()
        && uses_push(config)
        && !has_token
        && !config.server.allow_unauthenticated_push
    {
        out.push(server(
            "server.push",
            format!(
                "the server listens on {} (off loopback), so anyone who reaches it could push counters: set `bearer_token_file` or `bearer_token_env` under [server.push], or `allow_unauthenticated_push = true` under [server] to accept that",
                config.server.listen
            ),
        ));
    }
    if let Some(path) = &config.server.state_file {
        if let Some(reason) = state_file_problem(path) {
            out.push(server("server.state_file", reason));
        }
    }
    for t in &config.targets {
        let mut err = |field: &str, reason: String| {
            out.push(FieldError {
                target: Some(t.name.clone()),
                field: field.to_string(),
                reason,
            })
        };
        match &t.signal {
            SignalConfig::Prometheus(s) => headers(&mut err, "signal.headers", &s.headers),
            SignalConfig::Promql(s) => headers(&mut err, "signal.headers", &s.headers),
            _ => {}
        }
        if let ControlConfig::Http(c) = &t.control {
            headers(&mut err, "control.headers", &c.headers);
            if HeaderValue::from_str(&c.content_type).is_err() {
                err(
                    "control.content_type",
                    "is not a valid header value (no newlines or control characters)".into(),
                );
            }
            if !c.url.contains("{{value}}") && !c.body.contains("{{value}}") {
                err(
                    "control.body",
                    "the write template has no `{{value}}`: neither `url` nor `body` would carry the offer; e.g. body = \"{\\\"workers\\\": {{value}}}\"".into(),
                );
            }
        }
    }
    out
}

/// Warnings for a valid config, logged at start and printed by `check`.
pub fn warnings(config: &Config) -> Vec<String> {
    let push = &config.server.push;
    let has_token = push.bearer_token_file.is_some() || push.bearer_token_env.is_some();
    if config.server.allow_unauthenticated_push
        && uses_push(config)
        && !has_token
        && !config.server.listen.ip().is_loopback()
    {
        vec![format!(
            "the push endpoint on {} accepts pushes without a token (allow_unauthenticated_push = true): anyone who reaches it can move the signal",
            config.server.listen
        )]
    } else {
        Vec::new()
    }
}

/// Whether a target reads pushes: only then can an unauthenticated push
/// move a signal (a push for no target is refused as `no_target`).
fn uses_push(config: &Config) -> bool {
    config
        .targets
        .iter()
        .any(|t| matches!(t.signal, SignalConfig::Push(_)))
}

/// Header names and values that `run` could not send. Values are never
/// echoed: they may be secrets.
fn headers(err: &mut impl FnMut(&str, String), field: &str, headers: &BTreeMap<String, String>) {
    for (name, value) in headers {
        if HeaderName::from_bytes(name.as_bytes()).is_err() {
            err(
                field,
                format!("`{name}` is not a valid header name (letters, digits and `-`; no spaces or colons)"),
            );
            continue;
        }
        if HeaderValue::from_str(value).is_err() {
            err(
                field,
                format!("the value of `{name}` is not a valid header value (no newlines or control characters)"),
            );
        }
    }
}

/// Why `path` cannot be a state file, before anything is written: it must
/// name a file (not a directory) in a directory that exists.
pub fn state_file_problem(path: &Path) -> Option<String> {
    if path.file_name().is_none() || path.as_os_str().to_string_lossy().ends_with('/') {
        return Some(format!("`{}` does not name a file", path.display()));
    }
    if path.is_dir() {
        return Some(format!(
            "`{}` is a directory; name a file in it, e.g. \"{}\"",
            path.display(),
            path.join("state.json").display()
        ));
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Some(format!(
            "directory `{}` does not exist; create it first",
            parent.display()
        ));
    }
    None
}
