//! Events that are not one target's: the offer endpoint's requests and
//! config reloads.
//!
//! Why it exists: a pull may name no known target, and a reload is about
//! the roster, so neither goes through a target's [`super::Exporter`]; they
//! still emit here, beside every other metric and log line.

use tracing::{error, info};

use crate::telemetry::metrics::{label, PullLabels};
use crate::telemetry::Telemetry;

/// What the offer endpoint did with one request (`kind = "pull"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pull<'a> {
    /// Refused, with a bounded result label (`unauthorized`,
    /// `bad_request`, `unknown_target`, `need_member`, `no_offer`).
    Refused(&'static str),
    /// An offer was served to a puller (a `304` is still a pull).
    Served {
        /// The target pulled from.
        target: &'a str,
        /// Distinct pullers now remembered for it.
        clients: usize,
        /// Answered `304 Not Modified` (the puller has this generation).
        not_modified: bool,
    },
}

/// Emits one request of the offer endpoint: `throttle_pull_requests_total
/// {result}`, and for a served pull `throttle_pulls_total{target}` and
/// `throttle_pull_clients{target}`.
pub fn emit_pull(tel: &Telemetry, pull: Pull<'_>) {
    let m = &tel.metrics;
    let result = match pull {
        Pull::Refused(result) => result,
        Pull::Served {
            target,
            clients,
            not_modified,
        } => {
            let l = label(target);
            m.pulls.get_or_create(&l).inc();
            m.pull_clients.get_or_create(&l).set(clients as f64);
            if not_modified {
                "not_modified"
            } else {
                "served"
            }
        }
    };
    m.pull_requests.get_or_create(&PullLabels { result }).inc();
}

/// What a config reload did (`runtime::reload`): not one target's event,
/// so it has its own value, emitted by [`emit_reload`].
#[derive(Debug, Clone)]
pub enum Reload<'a> {
    /// A target was removed: its status, history and series go.
    Removed(&'a str),
    /// A target restarts under the same name: its group members' statuses
    /// go (the new task reports its own).
    Restarting(&'a str),
    /// A new config was applied.
    Applied {
        /// What triggered it (`SIGHUP`, a file change).
        why: &'a str,
        /// Targets started.
        added: &'a [String],
        /// Targets stopped.
        removed: &'a [String],
        /// Targets restarted with their governor state.
        kept_state: &'a [String],
        /// Targets restarted fresh.
        restarted: &'a [String],
        /// How many targets were not touched.
        unchanged: usize,
    },
    /// A new config was rejected; the running one stays in effect.
    Rejected {
        /// What triggered it.
        why: &'a str,
        /// Why it was rejected.
        error: String,
    },
}

/// Emits one reload step: the status and series of a removed or restarting
/// target, or `throttle_config_reloads_total{result}` and the log line of a
/// reload.
pub fn emit_reload(tel: &Telemetry, reload: Reload<'_>) {
    match reload {
        Reload::Removed(name) => tel.unregister(name),
        Reload::Restarting(name) => tel.set_members(name, None),
        Reload::Applied {
            why,
            added,
            removed,
            kept_state,
            restarted,
            unchanged,
        } => {
            count_reload(tel, "applied");
            info!(
                added = ?added, removed = ?removed, kept_state = ?kept_state, restarted = ?restarted,
                "Config reloaded ({why}): added {:?}, removed {:?}, changed with state kept {:?}, restarted fresh {:?}, unchanged {}",
                added, removed, kept_state, restarted, unchanged
            );
        }
        Reload::Rejected { why, error } => {
            count_reload(tel, "rejected");
            error!("Reload ({why}) rejected; the running config stays in effect: {error}");
        }
    }
}

fn count_reload(tel: &Telemetry, result: &'static str) {
    tel.metrics
        .config_reloads
        .get_or_create(&crate::telemetry::metrics::ReloadLabels { result })
        .inc();
}
