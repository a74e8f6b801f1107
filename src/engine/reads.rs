//! One round of reads: every member's counters and committed offer at once.
//!
//! Why it exists: a window needs every member's reading, and a slow or
//! dead member must not hold up the others. Each member is read in its own
//! task, all under one deadline; a member that has not answered by then
//! counts as a timeout. The writer's view is taken before and after, so the
//! step can tell a reading that straddles a write.
//!
//! What it may touch: the members' sources and actuators (reads only).

use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::Instant;

use super::members::Members;
use super::step::{MemberRead, WriterView};
use super::writer::Ios;
use crate::control::ControlError;
use crate::signal::{Counters, SignalError};

/// Reads every member at once; a member that has not answered within
/// `bound` counts as a timeout.
pub(crate) async fn read_all(ios: &Ios, bound: Duration) -> Members<MemberRead> {
    type Raw = (
        Result<Counters, SignalError>,
        Option<Result<f64, ControlError>>,
    );
    let mut befores: Members<WriterView> = Members::new();
    let mut set = JoinSet::new();
    for (name, io) in ios {
        befores.insert(name.clone(), io.writer.view());
        let (source, actuator) = (io.source.clone(), io.writer.actuator().clone());
        let name = name.clone();
        set.spawn(async move {
            let committed = async {
                if actuator.reads_separately() {
                    Some(actuator.committed().await)
                } else {
                    None
                }
            };
            let (signal, committed): Raw = tokio::join!(source.read(), committed);
            (name, signal, committed)
        });
    }
    let deadline = Instant::now() + bound;
    let mut raw: Members<Raw> = Members::new();
    while let Ok(Some(joined)) = tokio::time::timeout_at(deadline, set.join_next()).await {
        if let Ok((name, signal, committed)) = joined {
            raw.insert(name, (signal, committed));
        }
    }
    set.abort_all();
    ios.iter()
        .map(|(name, io)| {
            let (signal, committed) = raw
                .remove(name)
                .unwrap_or((Err(SignalError::Timeout(bound)), None));
            let read = MemberRead {
                signal,
                committed,
                before: befores.get(name).copied().unwrap_or_default(),
                after: io.writer.view(),
            };
            (name.clone(), read)
        })
        .collect()
}
