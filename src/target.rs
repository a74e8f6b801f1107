//! One target's loop: read → window → decide → write (off the loop).
//!
//! Why it exists: this is where the pure stages meet the network. Each
//! target runs in its own task; within it, every `window` the loop reads the
//! counters and the committed offer (concurrently, each with a timeout),
//! folds the reading into the governor, logs and exports the outcome, and
//! hands any movement to a separate writer task through a `watch` channel.
//! The writer confirms each write by read-back; the loop never waits for it,
//! so a slow admin API delays neither windows nor other targets. A newer
//! decision supersedes a write that has not started yet.
//!
//! The committed offer is read from the tool, not taken from our last write:
//! when no write is in flight and the tool reports another value, someone
//! else changed the knob, and the governor steps from their value (logged
//! once per change).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;
use tracing::{info, info_span, warn, Instrument};

use crate::config::{OnExit, OnSignalLoss, TargetConfig};
use crate::control::{Actuator, ControlError, WriteOutcome};
use crate::governor::{HoldReason, Outcome, Params, ThrottleGovernor};
use crate::signal::Source;
use crate::state::{Memory, StateStore};
use crate::telemetry::logging::{log_memory_clear, log_movement, offer};
use crate::telemetry::metrics::{label, ErrorLabels, WriteLabels};
use crate::telemetry::{lock, TargetStatus, Telemetry};

/// Everything one target's task needs.
pub struct TargetTask {
    /// The target's config.
    pub config: TargetConfig,
    /// Its validated governor parameters.
    pub params: Params,
    /// Where counters come from.
    pub source: Source,
    /// Where offers go.
    pub actuator: Actuator,
    /// Shared metrics and status.
    pub telemetry: Arc<Telemetry>,
    /// Read and decide, never write.
    pub dry_run: bool,
    /// Where congestion memory is kept across restarts, if anywhere.
    pub state: Option<Arc<StateStore>>,
    /// Resume and handover on a config reload.
    pub lifecycle: crate::reload::Lifecycle,
}

/// Consecutive windows without a valid signal.
#[derive(Debug, Default)]
struct SignalLoss {
    invalid: u32,
    lost: bool,
}

/// Shared between the loop and its writer task.
#[derive(Debug, Default)]
struct WriterShared {
    /// The value handed to the writer and not yet finished.
    pending: Option<f64>,
    /// The last value the writer confirmed.
    last_confirmed: Option<f64>,
    /// Writes finished so far: a read of the committed offer taken while
    /// this changed may predate the write, so it says nothing about others.
    finished: u64,
}

impl WriterShared {
    /// `Some(finished)` when no write is pending.
    fn idle_generation(&self) -> Option<u64> {
        self.pending.is_none().then_some(self.finished)
    }
}

impl TargetTask {
    /// Runs until `cancel` fires, then applies `on_exit` within a bound.
    pub async fn run(self, cancel: CancellationToken) {
        let span = info_span!("target", target = %self.config.name);
        self.run_inner(cancel).instrument(span).await
    }

    async fn run_inner(self, cancel: CancellationToken) {
        let name = self.config.name.clone();
        let knob = self.params.control;
        let tel = self.telemetry.clone();
        let p = self.params;
        tel.metrics
            .init_target(&name, p.floor, p.ceiling, p.high, p.start);
        tel.register(TargetStatus::initial(&name, &p, self.dry_run));

        let mut gov = ThrottleGovernor::with_profile(p, self.config.profile);
        let resume = self.lifecycle.resume;
        if let Some(r) = resume {
            gov.set_current(r.current);
            gov.restore_memory(r.last_bad, r.clean_streak);
        } else if let Some(m) = self.state.as_ref().and_then(|s| s.get(&name)) {
            gov.restore_memory(m.last_bad, m.clean_streak);
            info!(target = %name, "{name}: restored congestion memory from the state file: last_bad {}, clean streak {}",
                m.last_bad.map(|v| offer(knob, v)).unwrap_or("none".into()), m.clean_streak);
            tel.metrics
                .last_bad
                .get_or_create(&label(&name))
                .set(m.last_bad.unwrap_or(f64::NAN));
            tel.update(&name, |s| s.last_bad = m.last_bad);
        }
        let shared = Arc::new(std::sync::Mutex::new(WriterShared::default()));
        let (desired_tx, desired_rx) = watch::channel::<Option<f64>>(None);
        let writer_cancel = CancellationToken::new();
        let writer = tokio::spawn(
            writer_loop(
                name.clone(),
                self.actuator.clone(),
                desired_rx,
                shared.clone(),
                tel.clone(),
                writer_cancel.clone(),
            )
            .in_current_span(),
        );

        // Each target starts at its own phase of the window, so that a
        // thousand targets neither publish nor scrape in the same instant.
        let phase = self.config.window.mul_f64(phase_of(&name));
        tokio::select! {
            _ = tokio::time::sleep(phase) => {}
            _ = cancel.cancelled() => {}
        }

        // Publish the opening offer before the first window (confirmed).
        if let Some(r) = resume {
            info!(target = %name, "Resuming at {} {knob} with its congestion memory (config reload)", offer(knob, r.current));
        } else if self.dry_run {
            info!(target = %name, "Dry run: would publish the opening offer {} {knob}", offer(knob, p.start));
        } else {
            info!(target = %name, "Publishing the opening offer {} {knob}", offer(knob, p.start));
            let outcome = tokio::select! {
                o = self.actuator.write_confirmed(p.start) => Some(o),
                _ = cancel.cancelled() => None,
            };
            match outcome {
                Some(WriteOutcome::Confirmed { .. }) => {
                    count_write(&tel, &name, "confirmed");
                    lock(&shared).last_confirmed = Some(p.start);
                }
                Some(other) => {
                    count_write(&tel, &name, other.result());
                    warn!(target = %name, "Opening offer not confirmed ({}); retrying in the background", describe(&other));
                    lock(&shared).pending = Some(p.start);
                    let _ = desired_tx.send(Some(p.start));
                }
                None => {}
            }
        }

        let started = Instant::now();
        let mut ticker = tokio::time::interval(self.config.window);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let window_secs = self.config.window.as_secs_f64();
        let mut last_outside: Option<f64> = None;
        let mut loss = SignalLoss::default();
        // Windows since the tool's counters last went down (restart evidence).
        let mut since_reset: Option<u32> = None;

        loop {
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = ticker.tick() => {}
            }
            let t0 = Instant::now();
            let idle_before = lock(&shared).idle_generation();
            let (signal, committed) = tokio::join!(self.source.read(), self.read_committed());
            tel.metrics
                .read_duration
                .get_or_create(&label(&name))
                .observe(t0.elapsed().as_secs_f64());
            let at = started.elapsed().as_secs_f64();
            since_reset = since_reset.map(|n| n.saturating_add(1));

            let parsed = Instant::now();
            let counters = match signal {
                Ok(c) => c,
                Err(e) => {
                    self.signal_error(&gov, &e.to_string(), e.error_type(), at);
                    self.invalid_window(&mut gov, &mut loss, &shared, &desired_tx);
                    continue;
                }
            };
            let reading = counters.reading(at);
            if gov.window_mut().would_reset(&reading) {
                since_reset = Some(0);
            }
            // The committed offer: from the read-back, or the signal's gauge.
            let committed = match committed {
                Some(Ok(v)) => Some(v),
                Some(Err(e @ ControlError::NotPulled(_))) => {
                    // Pulling stopped: the tool is gone or cannot reach us.
                    self.signal_error(&gov, &e.to_string(), e.error_type(), at);
                    self.invalid_window(&mut gov, &mut loss, &shared, &desired_tx);
                    continue;
                }
                Some(Err(e)) => {
                    count_control_error(&tel, &name, &e);
                    warn!(target = %name, error = %e, "Cannot read the committed offer; stepping from the last known value");
                    None
                }
                None => counters.offer,
            };
            if let Some(c) = committed {
                // Idle before and after the read, and no write finished in
                // between: only then is a different value someone else's.
                let writer_idle =
                    idle_before.is_some() && lock(&shared).idle_generation() == idle_before;
                let cur = gov.state().current;
                if self.dry_run {
                    gov.set_current(c);
                } else if writer_idle && !self.actuator.matches(c, cur) {
                    if since_reset.is_some_and(|n| n <= 1) {
                        // Counters went down and the knob moved: the tool
                        // restarted with its own default. Put our committed
                        // offer back instead of slow-starting from theirs.
                        warn!(target = %name, from = c, to = cur,
                            "{name}: tool restart detected (counters reset, {knob} back at {}); re-publishing the committed offer {}",
                            offer(knob, c), offer(knob, cur));
                        tel.metrics.tool_restarts.get_or_create(&label(&name)).inc();
                        lock(&shared).pending = Some(cur);
                        let _ = desired_tx.send(Some(cur));
                        since_reset = None;
                    } else {
                        if last_outside != Some(c) {
                            info!(target = %name, from = cur, to = c,
                                "{name}: the {knob} was changed from outside ({} -> {}); stepping from the new value",
                                offer(knob, cur), offer(knob, c));
                            tel.metrics
                                .outside_changes
                                .get_or_create(&label(&name))
                                .inc();
                            last_outside = Some(c);
                        }
                        gov.set_current(c);
                    }
                }
            }

            let had_baseline = gov_has_baseline(&mut gov);
            let outcome = match gov.observe(reading) {
                Ok(o) => o,
                Err(e) => {
                    self.signal_error(&gov, &e.to_string(), e.error_type(), at);
                    self.invalid_window(&mut gov, &mut loss, &shared, &desired_tx);
                    continue;
                }
            };
            if !had_baseline {
                tel.update(&name, |s| s.has_baseline = true);
            }
            self.export(&outcome, at, window_secs);
            if outcome.reason == Some(HoldReason::CounterReset) {
                self.invalid_window(&mut gov, &mut loss, &shared, &desired_tx);
                continue;
            }
            tel.metrics.signal_up.get_or_create(&label(&name)).set(1.0);
            if outcome.signal.is_some() {
                self.signal_back(&gov, &mut loss);
            }
            if let Some(store) = &self.state {
                store.set(
                    &name,
                    Memory {
                        last_bad: outcome.last_bad,
                        clean_streak: outcome.clean_streak,
                    },
                );
            }

            if outcome.memory_cleared {
                log_memory_clear(&name, knob, outcome.from);
            }
            if outcome.is_movement() {
                log_movement(&name, knob, &outcome, window_secs, self.dry_run);
                if !self.dry_run {
                    lock(&shared).pending = Some(outcome.to);
                    tel.update(&name, |s| s.pending_write = Some(outcome.to));
                    let _ = desired_tx.send(Some(outcome.to));
                    tel.metrics
                        .decision_latency
                        .observe(parsed.elapsed().as_secs_f64());
                }
            }
        }

        // Shutdown: let an in-flight write finish within a bound, then on_exit.
        let grace = Duration::from_secs(2).max(self.config.window);
        writer_cancel.cancel();
        if tokio::time::timeout(grace, writer).await.is_err() {
            warn!(target = %name, "In-flight write abandoned at shutdown");
        }
        let exit_value = match self.config.on_exit {
            OnExit::Leave => None,
            OnExit::Floor => Some(p.floor),
            OnExit::Start => Some(p.start),
        };
        // A reload that replaces this task hands the knob over as it is.
        let exit_value = exit_value.filter(|_| !self.lifecycle.handover.is_cancelled());
        if let (Some(v), false) = (exit_value, self.dry_run) {
            match tokio::time::timeout(grace, self.actuator.write_confirmed(v)).await {
                Ok(WriteOutcome::Confirmed { .. }) => {
                    count_write(&tel, &name, "confirmed");
                    info!(target = %name, "On exit: left the {knob} at {}", offer(knob, v));
                }
                Ok(other) => {
                    count_write(&tel, &name, other.result());
                    warn!(target = %name, "On exit: writing {} failed: {}", offer(knob, v), describe(&other));
                }
                Err(_) => warn!(target = %name, "On exit: writing {} timed out", offer(knob, v)),
            }
        }
    }

    /// Counts a window without a valid signal; after `signal_loss_windows`
    /// in a row, applies `on_signal_loss` once.
    fn invalid_window(
        &self,
        gov: &mut ThrottleGovernor,
        loss: &mut SignalLoss,
        shared: &Arc<std::sync::Mutex<WriterShared>>,
        desired: &watch::Sender<Option<f64>>,
    ) {
        loss.invalid += 1;
        if loss.lost || loss.invalid < self.config.signal_loss_windows {
            return;
        }
        loss.lost = true;
        let name = &self.config.name;
        let knob = self.params.control;
        let floor = self.params.floor;
        self.telemetry
            .metrics
            .signal_lost
            .get_or_create(&label(name))
            .set(1.0);
        self.telemetry.update(name, |s| s.signal_lost = true);
        match self.config.on_signal_loss {
            OnSignalLoss::Hold => warn!(target = %name, policy = "hold",
                "{name}: signal lost for {} windows; holding the {knob} at {} until it returns",
                loss.invalid, offer(knob, gov.state().current)),
            OnSignalLoss::Floor => {
                warn!(target = %name, policy = "floor",
                    "{name}: signal lost for {} windows; dropping the {knob} to the floor {} (assume the most fragile target)",
                    loss.invalid, offer(knob, floor));
                if !self.dry_run && gov.state().current > floor {
                    gov.set_current(floor);
                    lock(shared).pending = Some(floor);
                    let _ = desired.send(Some(floor));
                }
            }
        }
    }

    /// A valid window after a loss: resume from the committed value, memory intact.
    fn signal_back(&self, gov: &ThrottleGovernor, loss: &mut SignalLoss) {
        let was_lost = loss.lost;
        loss.invalid = 0;
        loss.lost = false;
        if was_lost {
            let name = &self.config.name;
            self.telemetry
                .metrics
                .signal_lost
                .get_or_create(&label(name))
                .set(0.0);
            self.telemetry.update(name, |s| s.signal_lost = false);
            info!(target = %name, "{name}: signal is back; resuming from the committed {} {} with the congestion memory intact",
                offer(self.params.control, gov.state().current), self.params.control);
        }
    }

    /// Reads the committed offer when a separate read-back is configured.
    async fn read_committed(&self) -> Option<Result<f64, ControlError>> {
        if self.actuator_reads_signal() {
            None
        } else {
            Some(self.actuator.committed().await)
        }
    }

    fn actuator_reads_signal(&self) -> bool {
        match &self.config.control {
            crate::config::ControlConfig::Http(h) => h.read_back.is_none(),
            crate::config::ControlConfig::Pull(p) => {
                p.read_back.is_none() && self.source.has_offer()
            }
            // Tool adapters read the committed offer back from the tool.
            _ => false,
        }
    }

    /// A window without a valid signal: counted, logged, and never a movement.
    fn signal_error(&self, gov: &ThrottleGovernor, msg: &str, error_type: &'static str, at: f64) {
        let name = &self.config.name;
        let tel = &self.telemetry;
        tel.metrics
            .signal_errors
            .get_or_create(&ErrorLabels {
                target: name.clone(),
                error_type,
            })
            .inc();
        tel.metrics.signal_up.get_or_create(&label(name)).set(0.0);
        warn!(target = %name, error_type, "Signal error, holding: {msg}");
        let hold = gov.hold(HoldReason::SignalError, None, false);
        self.export(&hold, at, self.config.window.as_secs_f64());
        tel.update(name, |s| {
            s.last_error = Some(format!("{error_type}: {msg}"))
        });
    }

    /// Updates metrics, status and history for one outcome.
    fn export(&self, o: &Outcome, at: f64, window_secs: f64) {
        let name = &self.config.name;
        if o.reason == Some(HoldReason::CounterReset) {
            self.telemetry
                .metrics
                .counter_resets
                .get_or_create(&label(name))
                .inc();
            warn!(target = %name, "Counter reset: the tool's counters went down (restart?); window discarded, baseline rebased");
        }
        self.telemetry.export_outcome(name, o, at, window_secs);
    }
}

/// A stable share of the window in [0, 1) for a target name (FNV-1a).
fn phase_of(name: &str) -> f64 {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % 1000) as f64 / 1000.0
}

fn gov_has_baseline(gov: &mut ThrottleGovernor) -> bool {
    gov.window_mut().baseline().is_some()
}

/// The writer task: takes the latest desired value and confirms it.
async fn writer_loop(
    name: String,
    actuator: Actuator,
    mut desired: watch::Receiver<Option<f64>>,
    shared: Arc<std::sync::Mutex<WriterShared>>,
    tel: Arc<Telemetry>,
    cancel: CancellationToken,
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
        let outcome = actuator.write_confirmed(value).await;
        tel.metrics
            .write_duration
            .get_or_create(&label(&name))
            .observe(t0.elapsed().as_secs_f64());
        count_write(&tel, &name, outcome.result());
        {
            let mut s = lock(&shared);
            s.finished += 1;
            if s.pending == Some(value) {
                s.pending = None;
            }
            if let WriteOutcome::Confirmed { .. } = outcome {
                s.last_confirmed = Some(value);
            }
        }
        tel.update(&name, |s| {
            if s.pending_write == Some(value) {
                s.pending_write = None;
            }
        });
        match &outcome {
            WriteOutcome::Confirmed { .. } => {}
            WriteOutcome::Failed(e) => {
                count_control_error(&tel, &name, e);
                warn!(target = %name, error_type = e.error_type(), "Write of {value} failed: {e}");
                tel.update(&name, |s| s.last_error = Some(format!("write failed: {e}")));
            }
            WriteOutcome::Unconfirmed { .. } => {
                warn!(target = %name, "Write of {value} not confirmed: {}", describe(&outcome));
                tel.update(&name, |s| {
                    s.last_error = Some(format!("write unconfirmed: {}", describe(&outcome)))
                });
            }
        }
    }
}

fn count_write(tel: &Telemetry, name: &str, result: &'static str) {
    tel.metrics
        .writes
        .get_or_create(&WriteLabels {
            target: name.to_string(),
            result,
        })
        .inc();
}

fn count_control_error(tel: &Telemetry, name: &str, e: &ControlError) {
    tel.metrics
        .control_errors
        .get_or_create(&ErrorLabels {
            target: name.to_string(),
            error_type: e.error_type(),
        })
        .inc();
}

fn describe(o: &WriteOutcome) -> String {
    match o {
        WriteOutcome::Confirmed { attempts } => format!("confirmed after {attempts} write(s)"),
        WriteOutcome::Failed(e) => format!("failed: {e}"),
        WriteOutcome::Unconfirmed {
            committed: Some(c), ..
        } => {
            format!("the tool still reports {c}")
        }
        WriteOutcome::Unconfirmed { error: Some(e), .. } => format!("read-back failed: {e}"),
        WriteOutcome::Unconfirmed { .. } => "no read-back".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_stable_and_spread() {
        assert_eq!(phase_of("checkout"), phase_of("checkout"));
        let phases: Vec<f64> = (0..1000).map(|i| phase_of(&format!("t{i}"))).collect();
        assert!(phases.iter().all(|p| (0.0..1.0).contains(p)));
        // Spread over the window: every tenth of it gets some targets.
        for decile in 0..10 {
            let lo = f64::from(decile) / 10.0;
            let n = phases
                .iter()
                .filter(|p| (lo..lo + 0.1).contains(*p))
                .count();
            assert!(n > 50, "decile {decile}: {n}");
        }
    }

    #[test]
    fn describe_names_the_outcome() {
        assert!(describe(&WriteOutcome::Confirmed { attempts: 1 }).contains("confirmed"));
        assert!(describe(&WriteOutcome::Unconfirmed {
            committed: Some(3.0),
            error: None
        })
        .contains("still reports 3"));
    }
}
