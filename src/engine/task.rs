//! The target task: one loop that governs one target, single or group.
//!
//! Why it exists: this is the loop of the engine (see [`crate::engine`]):
//! it reconciles the members, publishes the opening offer, then every
//! window reads every member (`super::reads`), steps the pure
//! [`Core`], emits the events, and hands the shares to the writers
//! (`super::writer`); at shutdown it applies `on_exit`. It does I/O only:
//! what a window means is decided in [`super::step`].
//!
//! A task is made by [`Builder::task`], written here (an `impl` block of
//! the builder) so that `build` does not import this file back.
//!
//! What it may touch: the members' I/O, the state file and the exporter.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tracing::{info_span, Instrument};

use super::build::{self, BuildError, Builder};
use super::discovery::Discovery;
use super::members::Members;
use super::reads::read_all;
use super::step::{self, Core, MemberState};
use super::writer::{on_exit, send, settled, wait_idle, Ios, MemberIo};
use crate::config::group::{discovered_member, static_members, MemberSpec};
use crate::config::{OnExit, TargetConfig};
use crate::governor::Params;
use crate::report::live::LiveCapacity;
use crate::report::SteadyRule;
use crate::signal::SignalError;
use crate::state::{Memory, StateStore};
use crate::telemetry::export::{Event, Exporter, MemberChange};
use crate::telemetry::WindowRecord;

/// How a target task starts and stops around a reload.
#[derive(Debug, Clone, Default)]
pub struct Lifecycle {
    /// Resume from this state instead of publishing the opening offer.
    pub resume: Option<Resume>,
    /// Cancelled (before the task's own token) when a reload replaces the
    /// task: it then stops without applying `on_exit`.
    pub handover: CancellationToken,
}

/// The governor state a changed target keeps across a reload.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resume {
    /// The offer in effect.
    pub current: f64,
    /// The congestion memory.
    pub last_bad: Option<f64>,
    /// The clean streak.
    pub clean_streak: u32,
}

/// Everything one target's task needs.
pub struct TargetTask {
    /// The target's config (a group's signal and control are templates).
    pub config: Arc<TargetConfig>,
    /// Its validated governor parameters (a group's are the group's).
    pub params: Params,
    /// Read and decide, never write.
    pub dry_run: bool,
    /// Where congestion memory is kept across restarts, if anywhere.
    pub state: Option<Arc<StateStore>>,
    /// The steady-state rule of the live capacity estimate.
    pub steady: SteadyRule,
    /// Resume and handover on a config reload.
    pub lifecycle: Lifecycle,
    builder: Builder,
    exporter: Exporter,
    /// A group's members listed in the config (empty for a single target,
    /// whose one member is made from `config` when needed).
    static_specs: Vec<MemberSpec>,
    /// Where the latency bound's quantile is read, when one is set.
    latency: Option<Arc<dyn crate::signal::latency::LatencySource>>,
    /// The members built with the task (a single target's one member, a
    /// group's static ones), which its first reconcile takes. Kept, not
    /// rebuilt, so that a `push` member's inbox takes pushes from the
    /// moment the task exists: one built only when the task first ran left
    /// a gap in which a push was answered 404 (as if no target read its
    /// job) and the task's first reads found nothing pushed.
    prebuilt: Vec<(String, build::Built)>,
}

impl Builder {
    /// The task of one validated target (single or group).
    pub fn task(&self, t: &TargetConfig) -> Result<TargetTask, BuildError> {
        let err = |reason: String| BuildError::Target {
            target: t.name.clone(),
            reason,
        };
        let params = t.params().map_err(|e| {
            err(e
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("; "))
        })?;
        // A single target's one member spec is made from its config when
        // it is needed (kept, it would be one more copy of the config per
        // target).
        let (static_specs, prebuilt) = if t.is_group() {
            let specs = static_members(t).map_err(&err)?;
            // A static member that does not build is reported by the loop,
            // as a discovered one is.
            let built = specs
                .iter()
                .filter_map(|s| self.member(t, s).ok().map(|b| (s.name.clone(), b)))
                .collect();
            (specs, built)
        } else {
            // A single target must build: fail now, not in the loop.
            let built = self.member(t, &build::single_member(t)).map_err(&err)?;
            (Vec::new(), vec![(t.name.clone(), built)])
        };
        let latency = t
            .latency
            .as_ref()
            .map(|l| build::latency_source(t, l, self.client.clone()))
            .transpose()
            .map_err(&err)?;
        Ok(TargetTask {
            latency,
            config: Arc::new(t.clone()),
            params,
            dry_run: self.opts.dry_run,
            state: self.opts.state.clone(),
            steady: self.opts.steady,
            lifecycle: Lifecycle::default(),
            builder: self.clone(),
            exporter: Exporter::new(self.telemetry.clone(), &t.name, t.knob, self.opts.dry_run),
            static_specs,
            prebuilt,
        })
    }
}

impl TargetTask {
    /// Runs until `cancel` fires, then applies `on_exit` within a bound.
    ///
    /// Not an `async fn`: that would keep a second copy of the task beside
    /// the one `run_inner` holds, 2.5 kB more per target for as long as it
    /// runs.
    ///
    /// The target's series and status are registered here, before the task
    /// is spawned, so that a scrape right after start sees every series.
    pub fn run(self, cancel: CancellationToken) -> impl std::future::Future<Output = ()> {
        let span = info_span!("target", target = %self.config.name);
        span.in_scope(|| self.announce());
        self.run_inner(cancel).instrument(span)
    }

    /// Registers the target (its status and series) and its latency bound.
    fn announce(&self) {
        self.exporter.emit(Event::Started {
            params: self.params,
            profile: self.config.profile,
            early_verdicts: self.config.early_verdicts_in_effect(),
            dry_run: self.dry_run,
            lag: self.config.lag_description(),
        });
        if let Some(b) = self.latency_bound() {
            self.exporter.emit(Event::LatencyBound(b));
        }
    }

    fn latency_bound(&self) -> Option<crate::telemetry::LatencyBoundStatus> {
        self.config
            .latency
            .as_ref()
            .map(|l| crate::telemetry::LatencyBoundStatus {
                quantile: l.quantile,
                bound_secs: l.bound.as_secs_f64(),
                low_secs: l.low_secs(),
            })
    }

    fn is_group(&self) -> bool {
        self.config.is_group()
    }

    /// Every wanted member spec: the static ones, then the discovered ones.
    fn specs(&self, discovery: Option<&Discovery>) -> Vec<MemberSpec> {
        if !self.is_group() {
            return vec![build::single_member(&self.config)];
        }
        let mut specs = self.static_specs.clone();
        let weight_label = self
            .config
            .group
            .as_ref()
            .and_then(|g| g.weight_label.as_deref());
        for d in discovery.map(|d| d.last.as_slice()).unwrap_or_default() {
            if specs.iter().any(|s| s.name == d.address) {
                continue;
            }
            match discovered_member(&self.config, d, weight_label) {
                Ok(spec) => specs.push(spec),
                Err(e) => self.exporter.emit(Event::MemberSkipped {
                    member: d.address.clone(),
                    error: e.to_string(),
                }),
            }
        }
        specs
    }

    /// Adds, rebuilds and removes members; returns whether anything changed.
    /// A member in `prebuilt` is taken from there, not built again.
    fn reconcile(
        &self,
        core: &mut Core,
        ios: &mut Ios,
        specs: Vec<MemberSpec>,
        prebuilt: &mut Vec<(String, build::Built)>,
        clock: Instant,
    ) -> bool {
        let mut changed = false;
        let group = self.is_group();
        let wanted: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        for gone in ios
            .keys()
            .filter(|k| !wanted.contains(k))
            .cloned()
            .collect::<Vec<_>>()
        {
            if let Some(io) = ios.remove(&gone) {
                io.writer.stop();
            }
            core.members.remove(&gone);
            self.exporter.emit(Event::Member {
                member: gone,
                change: MemberChange::Left,
            });
            changed = true;
        }
        for spec in specs {
            let fingerprint = spec.fingerprint();
            if let Some(io) = ios.get(&spec.name) {
                if io.fingerprint == fingerprint {
                    if let Some(m) = core.members.get_mut(&spec.name) {
                        if m.weight != spec.weight {
                            m.weight = spec.weight;
                            changed = true;
                        }
                    }
                    continue;
                }
            }
            let built = match prebuilt.iter().position(|(n, _)| *n == spec.name) {
                Some(i) => Ok(prebuilt.swap_remove(i).1),
                None => self.builder.member(&self.config, &spec),
            };
            match built {
                Ok((source, actuator, lag)) => {
                    let member = group.then(|| spec.name.clone());
                    let io = MemberIo::new(
                        &spec,
                        source,
                        actuator,
                        self.exporter.clone(),
                        member,
                        clock,
                    );
                    let state =
                        MemberState::new(&spec.name, spec.address.clone(), spec.weight, lag);
                    let rebuilt = ios.insert(spec.name.clone(), io);
                    let change = match rebuilt {
                        Some(old) => {
                            old.writer.stop();
                            MemberChange::Rebuilt
                        }
                        None => MemberChange::Joined,
                    };
                    core.members.insert(spec.name.clone(), state);
                    if group {
                        self.exporter.emit(Event::Member {
                            member: spec.name.clone(),
                            change,
                        });
                    }
                    changed = true;
                }
                Err(error) => self.exporter.emit(Event::MemberUnbuilt {
                    member: spec.name.clone(),
                    error,
                }),
            }
        }
        changed
    }

    async fn run_inner(mut self, cancel: CancellationToken) {
        let name = self.config.name.clone();
        let p = self.params;
        let window = self.config.window;
        let clock = Instant::now();
        let exporter = self.exporter.clone();
        let latency_bound = self.latency_bound();
        // The live capacity estimate, under the report's rule.
        let mut live = LiveCapacity::new(self.steady, p.high, latency_bound);
        let mut core = Core::new(
            crate::governor::ThrottleGovernor::with_profile(p, self.config.profile),
            step::Policy {
                params: p,
                integer: p.control.is_integer(),
                dry_run: self.dry_run,
                signal_loss_windows: self.config.signal_loss_windows.max(1),
                loss_to_floor: matches!(
                    self.config.on_signal_loss,
                    crate::config::OnSignalLoss::Floor
                ),
                down_after: self.is_group().then(|| {
                    self.config
                        .group
                        .clone()
                        .unwrap_or_default()
                        .down_after_windows
                }),
                lag_override: self.config.signal_lag.map(|d| d.as_secs_f64()),
                group: self.is_group(),
                window_secs: window.as_secs_f64(),
                early_verdicts: self.config.early_verdicts_in_effect(),
                // Counters that arrive in batches (pushed, or through a
                // query of stored samples), or that the user says trail the
                // load (`signal_lag`), carry the old offer's attempts for up
                // to the lag after a write.
                early_after_lag: self.config.signal.arrives_in_batches()
                    || self.config.signal_lag.is_some(),
            },
        );
        if let (Some(b), Some(src)) = (latency_bound, &self.latency) {
            let lag = src.lag().map_or(0.0, |d| d.as_secs_f64());
            core = core.with_latency(step::LatencyState::new(
                b.quantile,
                b.bound_secs,
                b.low_secs,
                lag,
            ));
        }
        let resume = self.lifecycle.resume;
        if resume.is_none() {
            if let Some(m) = self.state.as_ref().and_then(|s| s.get(&name)) {
                core.gov.restore_memory(m.last_bad, m.clean_streak);
                exporter.emit(Event::MemoryRestored {
                    last_bad: m.last_bad,
                    clean_streak: m.clean_streak,
                });
            }
        }

        let mut discovery = self
            .config
            .group
            .as_ref()
            .filter(|g| !g.file_sd.is_empty() || g.http_sd.is_some())
            .map(|g| Discovery::new(g, self.builder.client()));
        if let Some(d) = discovery.as_mut() {
            for failure in Box::pin(d.refresh()).await {
                exporter.emit(Event::Discovery(failure));
            }
        }
        let mut ios: Ios = Members::new();
        let specs = self.specs(discovery.as_ref());
        let mut prebuilt = std::mem::take(&mut self.prebuilt);
        self.reconcile(&mut core, &mut ios, specs, &mut prebuilt, clock);
        drop(prebuilt);
        let eff = core.rebalance();
        if eff > 0.0 && self.is_group() {
            exporter.emit(Event::Ceiling(core.gov.params().ceiling));
        }

        // Each target starts at its own phase of the window, so that a
        // thousand targets neither publish nor scrape in the same instant.
        let phase = window.mul_f64(phase_of(&name));
        tokio::select! {
            _ = tokio::time::sleep(phase) => {}
            _ = cancel.cancelled() => {}
        }

        // Publish the opening offer before the first window (confirmed).
        let members = core.members.len();
        if let Some(r) = resume {
            core.resume(r.current, r.last_bad, r.clean_streak);
            exporter.emit(Event::Opening {
                value: core.gov.state().current,
                members,
                resumed: true,
                dry_run: self.dry_run,
            });
        } else {
            let start = core.gov.state().current;
            exporter.emit(Event::Opening {
                value: start,
                members,
                resumed: false,
                dry_run: self.dry_run,
            });
            if !self.dry_run {
                send(&exporter, &ios, core.split_writes(start));
                let bound = Duration::from_secs(10).max(window);
                tokio::select! {
                    _ = wait_idle(&ios, bound) => {}
                    _ = cancel.cancelled() => {}
                }
            }
        }
        if self.is_group() {
            exporter.emit(Event::Split {
                parts: core.split_parts(p.control),
            });
        }

        let mut ticker = tokio::time::interval(window);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut rebase_pending = false;
        // Early verdicts: the window after an Up is read at a finer cadence.
        let peek_every = step::peek_interval(window);
        let mut next_peek: Option<Instant> = None;
        loop {
            let mut rebase = false;
            let mut peek = false;
            next_peek = match (core.watching(), next_peek) {
                (false, _) => None,
                (true, None) => Some(Instant::now() + peek_every),
                (true, at) => at,
            };
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = ticker.tick() => {}
                from = settled(&core, &ios, clock), if rebase_pending => {
                    // A window that already starts after the writes settled
                    // needs no new base: a read now would close it at once,
                    // a window of milliseconds decided as a whole one.
                    if core.based_since(from) {
                        rebase_pending = false;
                        continue;
                    }
                    rebase = true;
                }
                _ = tokio::time::sleep_until(next_peek.unwrap_or_else(Instant::now)), if next_peek.is_some() => peek = true,
            }
            if !peek {
                if let Some(d) = discovery.as_mut() {
                    if d.due() {
                        for failure in Box::pin(d.refresh()).await {
                            exporter.emit(Event::Discovery(failure));
                        }
                        let specs = self.specs(Some(d));
                        if self.reconcile(&mut core, &mut ios, specs, &mut Vec::new(), clock) {
                            core.rebalance();
                            core.need_split = true;
                        }
                    }
                }
            }
            let t0 = Instant::now();
            let bound = window.max(Duration::from_secs(1));
            let latency = async {
                match &self.latency {
                    Some(src) => Some(
                        tokio::time::timeout(bound, src.read())
                            .await
                            .unwrap_or(Err(SignalError::Timeout(bound))),
                    ),
                    None => None,
                }
            };
            let (reads, latency, early, at) = if peek {
                // A look within the watched window: the counters only, and
                // the latency too once the window closes.
                exporter.emit(Event::EarlyRead);
                next_peek = Some(Instant::now() + peek_every);
                let reads = Box::pin(read_all(&ios, bound)).await;
                let at = clock.elapsed().as_secs_f64();
                let Some(breach) = core.early_breach(at, &reads) else {
                    if !core.note_look(at, &reads) {
                        next_peek = Some(Instant::now() + step::FIRST_LOOK);
                    }
                    continue;
                };
                (reads, Box::pin(latency).await, Some(breach), at)
            } else {
                // Boxed, as are the other sub-futures here: a future is as
                // large as the largest state it awaits, and every target
                // keeps its task's future for as long as it runs.
                let (reads, latency) =
                    Box::pin(async { tokio::join!(read_all(&ios, bound), latency) }).await;
                exporter.emit(Event::ReadDuration(t0.elapsed().as_secs_f64()));
                let at = clock.elapsed().as_secs_f64();
                let early = core.early_breach(at, &reads);
                (reads, latency, early, at)
            };
            let parsed = Instant::now();
            let out = match early {
                Some(breach) => {
                    ticker.reset();
                    core.close_early(at, reads, latency, breach)
                }
                None => core.step_with(at, reads, latency),
            };
            if let Some(store) = &self.state {
                if out.decided {
                    store.set(
                        &name,
                        Memory {
                            last_bad: out.outcome.last_bad,
                            clean_streak: out.outcome.clean_streak,
                        },
                    );
                }
            }
            for e in out.events {
                let capacity = match &e {
                    Event::Window {
                        outcome,
                        at,
                        window_secs,
                        unconfirmed,
                        in_effect,
                        ..
                    } => Some(live.push(&WindowRecord::of_outcome(
                        outcome,
                        *at,
                        *window_secs,
                        *unconfirmed,
                        *in_effect,
                    ))),
                    _ => None,
                };
                exporter.emit(e);
                if let Some(c) = capacity {
                    exporter.emit(Event::Capacity(c));
                }
            }
            if !out.writes.is_empty() {
                send(&exporter, &ios, out.writes);
                exporter.emit(Event::DecisionLatency(parsed.elapsed().as_secs_f64()));
                rebase_pending = true;
                if core.watching() {
                    // The early window's base: a look as soon as the write lands.
                    next_peek = Some(Instant::now() + step::FIRST_LOOK);
                }
            }
            if rebase {
                rebase_pending = false;
                ticker.reset();
            }
        }

        // Shutdown: let in-flight writes finish within a bound, then on_exit.
        let grace = Duration::from_secs(2).max(window);
        for io in ios.values_mut() {
            if !Box::pin(io.writer.finish(grace)).await {
                exporter.emit(Event::WriteAbandoned);
            }
        }
        let exit_value = match self.config.on_exit {
            OnExit::Leave => None,
            OnExit::Floor => Some(p.floor),
            OnExit::Start => Some(p.start),
        };
        let handover = self.lifecycle.handover.is_cancelled();
        if let (Some(v), false, false) = (exit_value, self.dry_run, handover) {
            Box::pin(on_exit(&exporter, &mut core, &ios, v, grace)).await;
        }
    }
}

/// A stable share of the window in [0, 1) for a target name (FNV-1a).
fn phase_of(name: &str) -> f64 {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % 1000) as f64 / 1000.0
}

#[cfg(test)]
mod tests;
