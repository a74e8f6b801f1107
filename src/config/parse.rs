//! Reading a config: the TOML text into typed tables, every type error
//! named by target and field, then every semantic check.
//!
//! Why it exists: a config is checked completely before anything starts,
//! so parsing does not stop at the first bad target; it collects what serde
//! says about each table, then adds [`Config::validate`] and the closed-by-
//! default checks, with URLs redacted from every message.

use std::path::Path;

use super::{
    closed, defaults, fields, redact, Config, ConfigError, FieldError, ProfileKey, ServerConfig,
    TargetConfig,
};

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Config::parse(&text)
    }

    /// Parses and validates config text, collecting every problem.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let mut errors = Vec::new();
        let doc: toml::Table = match toml::from_str(text) {
            Ok(doc) => doc,
            Err(e) => {
                errors.push(FieldError {
                    target: None,
                    field: String::new(),
                    reason: hint(&format!("TOML syntax: {}", e.message()))
                        + &location(text, e.span()),
                });
                return Err(ConfigError::Invalid(errors));
            }
        };
        let mut server = ServerConfig::default();
        let mut targets = Vec::new();
        // Per parsed target: the keys its type errors took out or stood in
        // for; semantic problems under them would be about a stand-in.
        let mut stand_ins: Vec<Vec<String>> = Vec::new();
        let mut saw_targets = false;
        for (key, value) in doc {
            match key.as_str() {
                "server" => match fields::deserialize::<ServerConfig>(value) {
                    Ok(s) => server = s,
                    Err(e) => errors.push(FieldError {
                        target: None,
                        field: fields::join("server", &e.path),
                        reason: e.reason,
                    }),
                },
                "targets" => {
                    saw_targets = true;
                    let toml::Value::Array(items) = value else {
                        errors.push(FieldError {
                            target: None,
                            field: "targets".into(),
                            reason: "must be an array of tables: write each as [[targets]]".into(),
                        });
                        continue;
                    };
                    for (i, mut item) in items.into_iter().enumerate() {
                        defaults::fill(&mut item);
                        let label = item
                            .get("name")
                            .and_then(|n| n.as_str())
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("#{}", i + 1));
                        let key = ProfileKey::of(&item);
                        let parsed = every_type_error(item);
                        for e in parsed.errors {
                            errors.push(FieldError {
                                target: Some(label.clone()),
                                field: e.path,
                                reason: hint(&e.reason),
                            });
                        }
                        if let Some(t) = parsed.target {
                            // A missing name was stood in for by "#": the
                            // semantic checks name the target as its type
                            // errors do, by position.
                            let name = if t.name == "#" { label.clone() } else { t.name };
                            targets.push(TargetConfig {
                                name,
                                profile_key: key,
                                ..t
                            });
                            stand_ins.push(parsed.stand_ins);
                        }
                    }
                }
                other => errors.push(FieldError {
                    target: None,
                    field: other.to_string(),
                    reason: "unknown top-level key; expected `server` or `targets`".into(),
                }),
            }
        }
        if !saw_targets {
            errors.push(FieldError {
                target: None,
                field: "targets".into(),
                reason: "no [[targets]] given: nothing to govern".into(),
            });
        }
        for t in &mut targets {
            t.resolve_window();
        }
        let config = Config { server, targets };
        let about_a_stand_in = |e: &FieldError| {
            config.targets.iter().zip(&stand_ins).any(|(t, keys)| {
                e.target.as_deref() == Some(t.name.as_str())
                    && keys.iter().any(|k| under(&e.field, k))
            })
        };
        let semantic: Vec<FieldError> = config
            .validate()
            .into_iter()
            .chain(closed::problems(&config))
            .filter(|e| !about_a_stand_in(e))
            .collect();
        errors.extend(semantic);
        for e in &mut errors {
            e.reason = redact::urls(&e.reason);
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(ConfigError::Invalid(errors))
        }
    }
}

fn hint(message: &str) -> String {
    let mut m = message.trim().replace('\n', " ");
    if (m.contains("invalid type: string") || m.contains("duplicate key")) && m.contains("control")
    {
        m.push_str(
            " (hint: the governed knob is `knob = \"concurrency\"`; `[targets.control]` is the write table)",
        );
    }
    m
}

fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(r) => {
            let line = text[..r.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}

/// Whether `field` is `key` or lies under it (`signal.url` under `signal`).
fn under(field: &str, key: &str) -> bool {
    field == key
        || field
            .strip_prefix(key)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

/// A target table's type errors, all of them, and the target when the rest
/// of it parses.
struct Parsed {
    target: Option<TargetConfig>,
    errors: Vec<fields::TypeError>,
    /// The keys taken out, or replaced by a stand-in, to get past an error.
    stand_ins: Vec<String>,
}

/// Stand-ins for a `signal` or `control` table that had to be replaced to
/// read the rest of the target: well-formed, and never reported on.
const SIGNAL_STAND_IN: &str = r#"kind = "prometheus"
url = "http://127.0.0.1/metrics"
attempts = "a"
failures = "f""#;
const CONTROL_STAND_IN: &str = r#"kind = "http"
url = "http://127.0.0.1/"
read_back = { url = "http://127.0.0.1/", json_pointer = "/v" }"#;

/// Collects every type error of one `[[targets]]` table. Serde stops at
/// the first; so each error is recorded, its key taken out (or, for a
/// required table such as `signal`, replaced by a stand-in), and the table
/// read again, until it parses or nothing more can be taken out. A
/// "missing field" about a key taken out here is not reported twice.
fn every_type_error(mut item: toml::Value) -> Parsed {
    let mut errors: Vec<fields::TypeError> = Vec::new();
    let mut stand_ins: Vec<String> = Vec::new();
    // Each round takes out one key, so the rounds are bounded by the keys.
    for _ in 0..256 {
        let e = match fields::deserialize::<TargetConfig>(item.clone()) {
            Ok(t) => {
                return Parsed {
                    target: Some(t),
                    errors,
                    stand_ins,
                }
            }
            Err(e) => fields::TypeError {
                // The table itself is sometimes written `.`.
                path: e.path.trim_matches('.').to_string(),
                reason: e.reason,
            },
        };
        // The key the error is about: the missing or unknown one when the
        // message names it, else the path.
        let named = backticked(&e.reason);
        let missing = e.reason.starts_with("missing field");
        let unknown = e.reason.starts_with("unknown field");
        let key = match &named {
            Some(n) if (missing || unknown) && !e.path.ends_with(n.as_str()) => {
                if e.path.is_empty() {
                    n.clone()
                } else {
                    format!("{}.{n}", e.path)
                }
            }
            _ => e.path.clone(),
        };
        let already = stand_ins.iter().any(|k| under(&key, k));
        if !already {
            errors.push(fields::TypeError {
                path: if missing || unknown {
                    key.clone()
                } else {
                    e.path.clone()
                },
                reason: e.reason.clone(),
            });
        }
        let top = key.split(['.', '[']).next().unwrap_or_default().to_string();
        let fixed = if missing || already || key.is_empty() {
            // Nothing to take out: the table that lacks the key gives way.
            match top.as_str() {
                "signal" => stand_in(&mut item, "signal", SIGNAL_STAND_IN),
                "control" => stand_in(&mut item, "control", CONTROL_STAND_IN),
                "latency" | "group" | "instances" => remove(&mut item, &top),
                "name" => put(&mut item, "name", "#"),
                "knob" => put(&mut item, "knob", "concurrency"),
                _ => false,
            }
        } else {
            remove(&mut item, &key)
                || (top != key && {
                    match top.as_str() {
                        "signal" => stand_in(&mut item, "signal", SIGNAL_STAND_IN),
                        "control" => stand_in(&mut item, "control", CONTROL_STAND_IN),
                        _ => remove(&mut item, &top),
                    }
                })
        };
        if !fixed {
            break;
        }
        let taken = if missing || already { top } else { key };
        if !stand_ins.contains(&taken) {
            stand_ins.push(taken);
        }
    }
    Parsed {
        target: None,
        errors,
        stand_ins,
    }
}

/// The first `` `name` `` in a serde message.
fn backticked(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(message[start..start + len].to_string())
}

/// Replaces the top-level table `key` with `text`; false when it already is.
fn stand_in(item: &mut toml::Value, key: &str, text: &str) -> bool {
    let value: toml::Value = toml::Value::Table(toml::from_str(text).expect("a stand-in parses"));
    let Some(table) = item.as_table_mut() else {
        return false;
    };
    if table.get(key) == Some(&value) {
        return false;
    }
    table.insert(key.to_string(), value);
    true
}

/// Puts a stand-in string at the top-level `key`; false when it is there.
fn put(item: &mut toml::Value, key: &str, value: &str) -> bool {
    let Some(table) = item.as_table_mut() else {
        return false;
    };
    if table.contains_key(key) {
        return false;
    }
    table.insert(key.to_string(), toml::Value::String(value.into()));
    true
}

/// Removes the key at a dotted path (`signal.timeout`,
/// `instances[0].address`); false when there is none.
fn remove(item: &mut toml::Value, path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('.').collect();
    let Some(last) = parts.pop() else {
        return false;
    };
    let mut at = item;
    for part in parts {
        let Some(next) = step(at, part) else {
            return false;
        };
        at = next;
    }
    match last.split_once('[') {
        None => at.as_table_mut().is_some_and(|t| t.remove(last).is_some()),
        Some(_) => {
            // An element of an array: take the array's element out.
            let (name, index) = split_index(last);
            let Some(toml::Value::Array(items)) = at.get_mut(name) else {
                return false;
            };
            match index {
                Some(i) if i < items.len() => {
                    items.remove(i);
                    true
                }
                _ => false,
            }
        }
    }
}

fn step<'v>(at: &'v mut toml::Value, part: &str) -> Option<&'v mut toml::Value> {
    let (name, index) = split_index(part);
    let next = at.get_mut(name)?;
    match index {
        Some(i) => next.get_mut(i),
        None => Some(next),
    }
}

/// `instances[0]` as (`instances`, Some(0)).
fn split_index(part: &str) -> (&str, Option<usize>) {
    match part.split_once('[') {
        Some((name, rest)) => (name, rest.trim_end_matches(']').parse().ok()),
        None => (part, None),
    }
}
