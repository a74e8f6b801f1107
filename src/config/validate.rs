//! The semantic checks of a parsed config: what serde cannot say (bounds,
//! unique names, the server's limits, a group's templates), and each
//! target's signal and control through [`super::io_checks`].
//!
//! Why it exists: every check pushes its problem through an `err(field,
//! reason)` sink and goes on, so one run reports every problem of every
//! target. A check never returns early on the first problem.

use std::collections::HashSet;

use super::{closed, group, io_checks, Config, ControlConfig, FieldError, TargetConfig};
use crate::governor::ParamError;

impl Config {
    /// Warnings about a valid config (logged at start, printed by `check`).
    pub fn warnings(&self) -> Vec<String> {
        closed::warnings(self)
    }

    /// Semantic checks over parsed targets; returns every problem.
    pub(crate) fn validate(&self) -> Vec<FieldError> {
        let mut errors = self.server_problems();
        let mut names = HashSet::new();
        for t in &self.targets {
            check_target(t, &mut names, &mut |field: &str, reason: String| {
                errors.push(FieldError {
                    target: Some(t.name.clone()),
                    field: field.to_string(),
                    reason,
                })
            });
        }
        errors
    }

    /// The `[server]` table's problems.
    fn server_problems(&self) -> Vec<FieldError> {
        let mut errors = Vec::new();
        let mut err = |field: String, reason: String| {
            errors.push(FieldError {
                target: None,
                field,
                reason,
            })
        };
        if !(16..=65_536).contains(&self.server.max_connections) {
            err(
                "server.max_connections".into(),
                format!(
                    "must be between 16 and 65536 (got {}); each open connection holds a file descriptor",
                    self.server.max_connections
                ),
            );
        }
        for (field, reason) in self.server.push.problems() {
            err(format!("server.push.{field}"), reason);
        }
        let pulls = self.targets.iter().any(|t| {
            matches!(t.control, ControlConfig::Pull(_))
                || t.instances
                    .iter()
                    .any(|i| matches!(i.control, Some(ControlConfig::Pull(_))))
        });
        for (field, reason) in self.server.pull.problems(self.server.listen, pulls) {
            err(format!("server.pull.{field}"), reason);
        }
        errors
    }
}

/// One target's checks; `names` holds the names seen so far, to refuse a
/// duplicate.
fn check_target(t: &TargetConfig, names: &mut HashSet<String>, err: &mut impl FnMut(&str, String)) {
    if t.name.trim().is_empty() {
        err("name", "must not be empty".into());
    } else if !names.insert(t.name.clone()) {
        err("name", "duplicate target name; names must be unique".into());
    }
    if let Err(param_errors) = t.params() {
        for e in param_errors {
            err(param_field(&e), e.to_string());
        }
    }
    if t.window.is_zero() {
        err("window", "must be longer than 0s, e.g. \"2s\"".into());
    }
    if t.signal_loss_windows == 0 {
        err("signal_loss_windows", "must be at least 1".into());
    }
    if let Some(l) = &t.latency {
        for (field, reason) in l.problems(t) {
            err(&field, reason);
        }
    }
    if t.is_group() {
        for (field, reason) in group::problems(t) {
            err(&field, reason);
        }
        return;
    }
    io_checks::check_io(t, err);
}

fn param_field(e: &ParamError) -> &'static str {
    match e {
        ParamError::NotFiniteNonNegative { field, .. } | ParamError::NotInteger { field, .. } => {
            field
        }
        ParamError::HighOutOfRange(_) => "high",
        ParamError::LowOutOfRange { .. } => "low",
        ParamError::FloorAboveCeiling { .. } | ParamError::ZeroFloor => "floor",
        ParamError::StartOutOfRange { .. } => "start",
        ParamError::CeilingRequired => "ceiling",
        ParamError::ResolutionNotPositive(_) => "resolution",
    }
}
