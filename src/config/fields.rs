//! Typed deserialization that names the field of every type error.
//!
//! Why it exists: serde's own message for `ceiling = "abc"` is "invalid
//! type: string "abc", expected f64" with no hint of where. Here each table
//! is deserialized through `serde_path_to_error`, which knows the path
//! (`ceiling`, `signal.timeout`, `instances[0].address`); the internally
//! tagged `signal` and `control` tables, whose contents serde buffers
//! without a path, are deserialized once more as their `kind`'s struct to
//! find the field inside. The message is rewritten to say what was expected
//! and what was given: `expected a number, got "abc"`.

use serde::de::DeserializeOwned;

use super::{
    GooseSignalConfig, HttpControlConfig, K6SignalConfig, LocustControlConfig, LocustSignalConfig,
    PrometheusSignalConfig, ToolControlConfig,
};
use crate::config::promql::PromqlSignalConfig;
use crate::config::push::PushSignalConfig;

/// A type error at a field: its dotted path within the table (empty for
/// the table itself) and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TypeError {
    /// `ceiling`, `signal.timeout`, `control.read_back.url`, ...
    pub path: String,
    /// `expected a number, got "abc"`
    pub reason: String,
}

/// `server` + `listen` = `server.listen`; an empty path is the table.
pub fn join(table: &str, path: &str) -> String {
    if path.is_empty() {
        table.to_string()
    } else {
        format!("{table}.{path}")
    }
}

/// Deserializes one table, naming the field of any error.
pub(crate) fn deserialize<T: DeserializeOwned>(value: toml::Value) -> Result<T, TypeError> {
    let original = value.clone();
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(v) => Ok(v),
        Err(e) => {
            let path = clean_path(&e.path().to_string());
            let reason = e.inner().message().to_string();
            Err(refine(&original, path, reason))
        }
    }
}

/// `serde_path_to_error` writes the root as `.`; nothing is simpler.
fn clean_path(path: &str) -> String {
    if path == "." || path == "?" {
        String::new()
    } else {
        path.to_string()
    }
}

/// Walks into a tagged `signal`/`control` table the error points at (or
/// lies inside), to name the field within it.
fn refine(root: &toml::Value, path: String, reason: String) -> TypeError {
    for tagged in ["signal", "control"] {
        let inside = path == tagged || path.starts_with(&format!("{tagged}."));
        if !inside {
            continue;
        }
        let Some(toml::Value::Table(table)) = root.get(tagged) else {
            break;
        };
        let Some(kind) = table.get("kind").and_then(|k| k.as_str()) else {
            break;
        };
        let mut rest = table.clone();
        rest.remove("kind");
        let inner = toml::Value::Table(rest);
        let found = match (tagged, kind) {
            ("signal", "prometheus") => inner_error::<PrometheusSignalConfig>(inner),
            ("signal", "locust") => inner_error::<LocustSignalConfig>(inner),
            ("signal", "k6") => inner_error::<K6SignalConfig>(inner),
            ("signal", "goose") => inner_error::<GooseSignalConfig>(inner),
            ("signal", "promql") => inner_error::<PromqlSignalConfig>(inner),
            ("signal", "push") => inner_error::<PushSignalConfig>(inner),
            ("control", "http") => inner_error::<HttpControlConfig>(inner),
            ("control", "locust") => inner_error::<LocustControlConfig>(inner),
            ("control", "k6" | "goose") => inner_error::<ToolControlConfig>(inner),
            _ => None,
        };
        if let Some(e) = found {
            let path = if e.path.is_empty() {
                tagged.to_string()
            } else {
                format!("{tagged}.{}", e.path)
            };
            return TypeError {
                path,
                reason: e.reason,
            };
        }
    }
    let mut reason = rewrite(&reason);
    if reason == "invalid socket address syntax" {
        let given = lookup(root, &path)
            .map(|v| format!(", got {v}"))
            .unwrap_or_default();
        reason = format!("expected an address such as \"127.0.0.1:9464\"{given}");
    }
    TypeError { path, reason }
}

/// The value at a dotted path of plain keys.
fn lookup<'v>(root: &'v toml::Value, path: &str) -> Option<&'v toml::Value> {
    path.split('.').try_fold(root, |v, key| v.get(key))
}

fn inner_error<T: DeserializeOwned>(value: toml::Value) -> Option<TypeError> {
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(_) => None,
        Err(e) => Some(TypeError {
            path: clean_path(&e.path().to_string()),
            reason: rewrite(e.inner().message()),
        }),
    }
}

/// Rewrites serde's "invalid type: X, expected Y" as "expected Y, got X",
/// in words a config author uses.
pub(crate) fn rewrite(message: &str) -> String {
    let message = message.trim().replace('\n', " ");
    for prefix in ["invalid type: ", "invalid value: "] {
        let Some(rest) = message.strip_prefix(prefix) else {
            continue;
        };
        let Some((got, expected)) = rest.rsplit_once(", expected ") else {
            continue;
        };
        return format!(
            "expected {}, got {}",
            expected_words(expected),
            got_words(got)
        );
    }
    message
}

fn expected_words(expected: &str) -> String {
    match expected {
        "f64" | "f32" => "a number".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number of at least 0".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "a string" | "a borrowed string" | "string" => "a string".into(),
        "a boolean" => "true or false".into(),
        "socket address" => "an address such as \"127.0.0.1:9464\"".into(),
        other => other.to_string(),
    }
}

fn got_words(got: &str) -> String {
    // serde: `string "abc"`, `integer `-1``, `floating point `1.5``.
    if let Some(s) = got.strip_prefix("string ") {
        return s.to_string();
    }
    for prefix in ["integer ", "floating point ", "boolean "] {
        if let Some(v) = got.strip_prefix(prefix) {
            return v.trim_matches('`').to_string();
        }
    }
    got.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_are_turned_around() {
        assert_eq!(
            rewrite("invalid type: string \"abc\", expected f64"),
            "expected a number, got \"abc\""
        );
        assert_eq!(
            rewrite("invalid value: integer `-1`, expected usize"),
            "expected a whole number of at least 0, got -1"
        );
        assert_eq!(rewrite("missing field `high`"), "missing field `high`");
    }
}
