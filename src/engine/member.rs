//! A member's I/O: its counter source, its actuator, and the one writer task.
//!
//! Why it exists: every write of every target goes through [`Writer`], the
//! one place where a write happens. The loop hands it the latest share (a
//! `watch` channel, so a newer decision supersedes one not yet started);
//! the writer confirms it through the [`Actuator`] off the read loop, so a
//! slow admin API delays neither windows nor other targets, and reports
//! each finished write to the exporter and to a [`WriterView`] the loop
//! reads around each round of reads.

use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::step::WriterView;
use crate::config::group::MemberSpec;
use crate::control::{Actuator, ControlError, WriteOutcome};
use crate::signal::CounterSource;
use crate::telemetry::export::{Event, Exporter};

/// One member's source, actuator and writer.
#[derive(Debug)]
pub struct MemberIo {
    /// What it was built from (a change rebuilds it).
    pub fingerprint: u64,
    /// Where its counters come from.
    pub source: Arc<dyn CounterSource>,
    /// Where its share goes.
    pub actuator: Actuator,
    /// Its writer task.
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
        let writer = Writer::spawn(actuator.clone(), exporter, member, clock);
        MemberIo {
            fingerprint: spec.fingerprint(),
            source,
            actuator,
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
                actuator,
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
