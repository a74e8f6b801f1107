//! Reading a config: the TOML text into typed tables, every type error
//! named by target and field, then every semantic check.
//!
//! Why it exists: a config is checked completely before anything starts,
//! so parsing does not stop at the first bad target; it collects what serde
//! says about each table, then adds [`Config::validate`] and the closed-by-
//! default checks, with URLs redacted from every message.

use std::path::Path;

use super::{
    closed, fields, redact, Config, ConfigError, FieldError, ProfileKey, ServerConfig, TargetConfig,
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
                    for (i, item) in items.into_iter().enumerate() {
                        let label = item
                            .get("name")
                            .and_then(|n| n.as_str())
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("#{}", i + 1));
                        let key = ProfileKey::of(&item);
                        match fields::deserialize::<TargetConfig>(item) {
                            Ok(t) => targets.push(TargetConfig {
                                profile_key: key,
                                ..t
                            }),
                            Err(e) => errors.push(FieldError {
                                target: Some(label),
                                field: e.path,
                                reason: hint(&e.reason),
                            }),
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
        errors.extend(config.validate());
        errors.extend(closed::problems(&config));
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
