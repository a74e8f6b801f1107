//! What a config's problems look like: one [`FieldError`] per problem,
//! located by target and field, and the [`ConfigError`] that lists them all.
//!
//! Why it exists: parsing and validation both report through these, so a
//! serde error and a semantic check read alike
//! (`targets[checkout].signal.url: ...`).

use std::fmt;

use thiserror::Error;

/// One problem in a config, located by target and field.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// The target's name (or `#index` when it has none); `None` for the file.
    pub target: Option<String>,
    /// The field's path within the target, e.g. `signal.url`.
    pub field: String,
    /// What is wrong and what to do.
    pub reason: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Some(t) if self.field.is_empty() => write!(f, "targets[{t}]: {}", self.reason),
            Some(t) => write!(f, "targets[{t}].{}: {}", self.field, self.reason),
            None if self.field.is_empty() => write!(f, "{}", self.reason),
            None => write!(f, "{}: {}", self.field, self.reason),
        }
    }
}

/// Why a config could not be loaded.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The path given.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// One or more problems; each names its target and field.
    #[error("invalid config ({} problem{}):\n{}", .0.len(), if .0.len() == 1 { "" } else { "s" }, list(.0))]
    Invalid(Vec<FieldError>),
}

fn list(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(|e| format!("  - {e}"))
        .collect::<Vec<_>>()
        .join("\n")
}
