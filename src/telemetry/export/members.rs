//! Groups: members joining, leaving and going down, the split, the effective
//! ceiling, the members' statuses, and service discovery's failures.
//!
//! Why it exists: one file per kind of event keeps [`Exporter::emit`]
//! a dispatch, and each kind's metrics and log lines together.

use tracing::{info, warn};

use super::{Event, Exporter, MemberChange, Scope, SdFailure};
use crate::telemetry::metrics::MemberLabels;

impl Exporter {
    /// Emits `Member`, `Split`, `Ceiling`, `Members`, `MemberSkipped`, `MemberUnbuilt`,
    /// `Discovery`.
    pub(super) fn emit_members(&self, event: Event) {
        let Scope {
            name, tel, m, l, ..
        } = self.scope();
        match event {
            Event::Member { member, change } => match change {
                MemberChange::Joined => {
                    info!(target = %name, member = %member, "{name}: instance {member} joins the group")
                }
                MemberChange::Left => {
                    info!(target = %name, member = %member, "{name}: instance {member} left the group; the split is recomputed")
                }
                MemberChange::Rebuilt => {
                    info!(target = %name, member = %member, "{name}: instance {member} changed its signal or control; rebuilt")
                }
                MemberChange::Back => {
                    info!(target = %name, member = %member, "{name}: instance {member} is back; it rejoins the split")
                }
                MemberChange::Down => {
                    warn!(target = %name, member = %member, "{name}: instance {member} is down; its share goes to the others")
                }
            },
            Event::Split { parts } => info!(target = %name, "{name}: split {parts}"),
            Event::Ceiling(eff) => {
                m.ceiling.get_or_create(&l).set(eff);
                self.update(|s| s.ceiling = eff.is_finite().then_some(eff));
            }
            Event::Members(statuses) => {
                for s in &statuses {
                    let ml = MemberLabels {
                        target: self.name.clone(),
                        member: s.name.clone(),
                    };
                    m.member_up
                        .get_or_create(&ml)
                        .set(if s.up { 1.0 } else { 0.0 });
                    m.member_offer
                        .get_or_create(&ml)
                        .set(s.share.unwrap_or(0.0));
                }
                tel.set_members(name, Some(statuses));
            }
            Event::MemberSkipped { member, error } => {
                warn!(target = %name, member = %member, "Discovered instance {member} skipped: {error}");
            }
            Event::MemberUnbuilt { member, error } => {
                warn!(target = %name, member = %member, "{name}: instance {member} cannot be built: {error}");
            }
            Event::Discovery(failure) => log_sd_failure(name, &failure),
            _ => unreachable!("dispatched by Exporter::emit"),
        }
    }
}

/// Logs a failed discovery source, with the target as a plain field (as
/// `target`, not `%target`, so the line reads as it always has).
fn log_sd_failure(target: &str, failure: &SdFailure) {
    match failure {
        SdFailure::FileParse { file, error } => {
            warn!(target, file = %file.display(), "file_sd: {error}; keeping the previous instances")
        }
        SdFailure::FileRead { file, error } => {
            warn!(target, file = %file.display(), "file_sd: cannot read: {error}; keeping the previous instances")
        }
        SdFailure::FileTimeout { file } => {
            warn!(target, file = %file.display(), "file_sd: read timed out; keeping the previous instances")
        }
        SdFailure::Http { url, error } => {
            warn!(
                target,
                url, "http_sd: {error}; keeping the previous instances"
            )
        }
    }
}
