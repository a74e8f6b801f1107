//! A member's I/O: its counter source, its actuator, and the one writer task.
//!
//! Why it exists: every write of every target goes through [`Writer`], the
//! one place where a write happens. The loop hands it the latest share (a
//! `watch` channel, so a newer decision supersedes one not yet started);
//! the writer confirms it through the [`Actuator`] off the read loop, so a
//! slow admin API delays neither windows nor other targets, and reports
//! each finished write to the exporter and to a [`WriterView`] the loop
//! reads around each round of reads.
//!
//! At shutdown, once the writer task has finished, [`on_exit`] splits the
//! exit value as every other offer is split ([`Core::split_writes`]) and
//! writes each share through its member's [`Writer::last_write`]; the
//! result is reported once, as [`Event::OnExit`].

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::members::Members;
use super::step::{Core, WriterView};
use crate::config::group::MemberSpec;
use crate::control::{Actuator, ControlError, WriteOutcome};
use crate::signal::CounterSource;
use crate::telemetry::export::{describe, Event, Exporter};

/// Every member's I/O, by name (a member's decision state lives in the
/// [`Core`]).
pub(crate) type Ios = Members<MemberIo>;

/// One member's source, actuator and writer.
#[derive(Debug)]
pub struct MemberIo {
    /// What it was built from (a change rebuilds it).
    pub fingerprint: u64,
    /// Where its counters come from.
    pub source: Arc<dyn CounterSource>,
    /// Its writer, which owns the actuator its share goes to.
    pub writer: Writer,
}

impl MemberIo {
    /// The member's I/O, with its writer running.
    pub fn new(
        spec: &MemberSpec,
        source: Arc<dyn CounterSource>,
        actuator: Actuator,
        exporter: Exporter,
        member: Option<String>,
        clock: Instant,
    ) -> Self {
        let writer = Writer::spawn(actuator, exporter, member, clock);
        MemberIo {
            fingerprint: spec.fingerprint(),
            source,
            writer,
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A member's writer task: takes the latest value and confirms it.
#[derive(Debug)]
pub struct Writer {
    /// Where its writes go (its task holds a clone); the loop reads the
    /// committed offer through it too.
    actuator: Actuator,
    tx: watch::Sender<Option<f64>>,
    view: Arc<Mutex<WriterView>>,
    cancel: CancellationToken,
    handle: Option<JoinHandle<()>>,
}

impl Writer {
    fn spawn(
        actuator: Actuator,
        exporter: Exporter,
        member: Option<String>,
        clock: Instant,
    ) -> Writer {
        let (tx, rx) = watch::channel(None);
        let view = Arc::new(Mutex::new(WriterView::default()));
        let cancel = CancellationToken::new();
        let handle = tokio::spawn(
            writer_loop(
                actuator.clone(),
                exporter,
                member,
                rx,
                view.clone(),
                cancel.clone(),
                clock,
            )
            .in_current_span(),
        );
        Writer {
            actuator,
            tx,
            view,
            cancel,
            handle: Some(handle),
        }
    }

    /// Hands `value` to the writer (superseding one not started yet).
    pub fn send(&self, value: f64) {
        lock(&self.view).pending = Some(value);
        let _ = self.tx.send(Some(value));
    }

    /// The actuator its writes go to.
    pub fn actuator(&self) -> &Actuator {
        &self.actuator
    }

    /// The last write, after [`Writer::finish`]: `value` confirmed through
    /// the same actuator, reported by the caller (not as an
    /// [`Event::Write`]: `on_exit` reports all its writes at once).
    pub fn last_write(&self, value: f64) -> impl Future<Output = WriteOutcome> + Send + 'static {
        let actuator = self.actuator.clone();
        async move { actuator.write_confirmed(value).await }
    }

    /// What the writer has done so far.
    pub fn view(&self) -> WriterView {
        *lock(&self.view)
    }

    /// Stops the writer now (a member that left).
    pub fn stop(mut self) {
        self.cancel.cancel();
        if let Some(h) = self.handle.take() {
            h.abort();
        }
    }

    /// Stops taking new values and waits up to `grace` for the one in flight.
    pub async fn finish(&mut self, grace: std::time::Duration) -> bool {
        self.cancel.cancel();
        match self.handle.take() {
            Some(h) => tokio::time::timeout(grace, h).await.is_ok(),
            None => true,
        }
    }
}

pub(super) async fn writer_loop(
    actuator: Actuator,
    exporter: Exporter,
    member: Option<String>,
    mut desired: watch::Receiver<Option<f64>>,
    view: Arc<Mutex<WriterView>>,
    cancel: CancellationToken,
    clock: Instant,
) {
    loop {
        tokio::select! {
            changed = desired.changed() => if changed.is_err() { return },
            _ = cancel.cancelled() => return,
        }
        let Some(value) = *desired.borrow_and_update() else {
            continue;
        };
        let t0 = Instant::now();
        // Boxed: the write's future lives only while a write is in flight,
        // instead of in every idle writer's task.
        let outcome = Box::pin(actuator.write_confirmed(value)).await;
        let secs = t0.elapsed().as_secs_f64();
        let still_pending = {
            let mut v = lock(&view);
            v.generation += 1;
            v.finished_at = Some(clock.elapsed().as_secs_f64());
            v.last_value = Some(value);
            v.last_confirmed = matches!(outcome, WriteOutcome::Confirmed { .. });
            if let WriteOutcome::Failed(ControlError::AboveMax { max, .. }) = &outcome {
                v.tool_max = Some(*max as f64);
            }
            if v.pending == Some(value) {
                v.pending = None;
            }
            v.pending.is_some()
        };
        exporter.emit(Event::Write {
            member: member.clone(),
            value,
            outcome,
            secs,
            still_pending,
        });
    }
}

/// Hands each share to its member's writer.
pub(crate) fn send(exporter: &Exporter, ios: &Ios, writes: Vec<(String, f64)>) {
    let mut total = 0.0;
    for (member, value) in writes {
        if let Some(io) = ios.get(&member) {
            io.writer.send(value);
            total += value;
        }
    }
    if ios.len() == 1 {
        exporter.emit(Event::WriteQueued { value: total });
    }
}

/// Resolves once every writer is idle and the signal's lag has passed since
/// the last write finished: the moment for a new baseline.
pub(crate) async fn settled(core: &Core, ios: &Ios, clock: Instant) -> f64 {
    loop {
        let views: Members<WriterView> = ios
            .iter()
            .map(|(n, io)| (n.clone(), io.writer.view()))
            .collect();
        if let Some(at) = core.rebase_at(&views) {
            let now = clock.elapsed().as_secs_f64();
            if at > now {
                tokio::time::sleep(Duration::from_secs_f64(at - now)).await;
            }
            return at;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) async fn wait_idle(ios: &Ios, bound: Duration) {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline && ios.values().any(|io| io.writer.view().busy()) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Applies `on_exit`: `value` split as every offer is, each share written
/// by its member's writer, all within `grace`; reported once.
pub(crate) async fn on_exit(
    exporter: &Exporter,
    core: &mut Core,
    ios: &Ios,
    value: f64,
    grace: Duration,
) {
    let shares = exit_shares(core, value);
    let mut set = JoinSet::new();
    for (member, share) in shares {
        if let Some(io) = ios.get(&member) {
            let write = io.writer.last_write(share);
            set.spawn(async move { (share, write.await) });
        }
    }
    let all = async {
        let mut results = Vec::new();
        while let Some(joined) = set.join_next().await {
            if let Ok(r) = joined {
                results.push(r);
            }
        }
        results
    };
    match tokio::time::timeout(grace, all).await {
        Ok(results) => {
            let failed: Vec<String> = results
                .iter()
                .filter(|(_, o)| !matches!(o, WriteOutcome::Confirmed { .. }))
                .map(|(s, o)| format!("{s}: {}", describe(o)))
                .collect();
            exporter.emit(Event::OnExit {
                value,
                results: results.iter().map(|(_, o)| o.result()).collect(),
                detail: (!failed.is_empty()).then(|| failed.join("; ")),
            });
        }
        Err(_) => exporter.emit(Event::OnExit {
            value,
            results: Vec::new(),
            detail: Some("writes timed out".into()),
        }),
    }
}

/// Every up member's share of `value`, as [`Core::split_writes`] splits it.
/// That function leaves out the shares a member already runs (no write is
/// needed mid-run); `on_exit` writes every share, so that each is
/// confirmed, and takes them from the members' `share`, which it sets for
/// every up member.
fn exit_shares(core: &mut Core, value: f64) -> Vec<(String, f64)> {
    core.split_writes(value);
    core.members
        .values()
        .filter(|m| m.up)
        .filter_map(|m| m.share.map(|s| (m.name.clone(), s)))
        .collect()
}
