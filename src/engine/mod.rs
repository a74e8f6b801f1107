//! The engine: one loop that governs every target, single or group.
//!
//! Why it exists: a single target is a group of one. Each target runs one
//! [`TargetTask`]: every window it reads every member (counters and the
//! committed offer, concurrently, each with a timeout), hands the reads to
//! the pure [`step::Core::step`] (the one place a window is decided), emits
//! the events it returns through the [`Exporter`] (the one place telemetry
//! is emitted), and hands the shares to each member's [`member::Writer`]
//! (the one place a write happens). The loop itself only does I/O.
//!
//! - [`build`]: the only `match` over signal and control kinds.
//! - [`step`]: the pure window step, with the attribution of windows to
//!   one offer.
//! - [`member`]: a member's source, actuator and writer task.
//! - [`split`]: the split of an offer across instances (pure).
//! - [`discovery`]: `file_sd` and HTTP SD for groups.
//!
//! Lifecycle: the opening offer is published (and confirmed) before the
//! first window; a reload resumes with the governor's state instead
//! ([`Lifecycle`]); congestion memory is restored from and saved to the
//! state file; on shutdown the writers get a bounded grace, then `on_exit`
//! applies.

pub mod build;
pub mod discovery;
pub mod member;
pub mod members;
pub mod split;
pub mod step;

use crate::engine::members::Members;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tracing::{info_span, warn, Instrument};

use crate::config::group::{discovered_member, MemberSpec};
use crate::config::{OnExit, TargetConfig};
use crate::control::{ControlError, WriteOutcome};
use crate::governor::Params;
use crate::report::live::LiveCapacity;
use crate::report::SteadyRule;
use crate::signal::{Counters, SignalError};
use crate::state::{Memory, StateStore};
use crate::telemetry::export::{describe, Event, Exporter, MemberChange};
use crate::telemetry::WindowRecord;
use build::Builder;
use discovery::Discovery;
use member::MemberIo;
use step::{Core, MemberRead, MemberState, WriterView};

pub use build::{BuildError, RunOptions};

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
}

/// A member: its decision state lives in the [`Core`], its I/O here.
type Ios = Members<MemberIo>;

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
                Err(e) => warn!(target = %self.config.name, member = %d.address,
                    "Discovered instance {} skipped: {e}", d.address),
            }
        }
        specs
    }

    /// Adds, rebuilds and removes members; returns whether anything changed.
    fn reconcile(
        &self,
        core: &mut Core,
        ios: &mut Ios,
        specs: Vec<MemberSpec>,
        clock: Instant,
    ) -> bool {
        let name = &self.config.name;
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
            let built = self
                .builder
                .member(&self.config, &spec)
                .map_err(|e| e.to_string());
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
                Err(e) => {
                    warn!(target = %name, member = %spec.name, "{name}: instance {} cannot be built: {e}", spec.name)
                }
            }
        }
        changed
    }

    async fn run_inner(self, cancel: CancellationToken) {
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
            Box::pin(d.refresh(&name)).await;
        }
        let mut ios: Ios = Members::new();
        let specs = self.specs(discovery.as_ref());
        self.reconcile(&mut core, &mut ios, specs, clock);
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
                _ = settled(&core, &ios, clock), if rebase_pending => rebase = true,
                _ = tokio::time::sleep_until(next_peek.unwrap_or_else(Instant::now)), if next_peek.is_some() => peek = true,
            }
            if !peek {
                if let Some(d) = discovery.as_mut() {
                    if d.due() {
                        Box::pin(d.refresh(&name)).await;
                        let specs = self.specs(Some(d));
                        if self.reconcile(&mut core, &mut ios, specs, clock) {
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
                warn!(target = %name, "In-flight write abandoned at shutdown");
            }
        }
        let exit_value = match self.config.on_exit {
            OnExit::Leave => None,
            OnExit::Floor => Some(p.floor),
            OnExit::Start => Some(p.start),
        };
        let handover = self.lifecycle.handover.is_cancelled();
        if let (Some(v), false, false) = (exit_value, self.dry_run, handover) {
            Box::pin(on_exit(&exporter, &core, &ios, v, grace)).await;
        }
    }
}

/// Hands each share to its member's writer.
fn send(exporter: &Exporter, ios: &Ios, writes: Vec<(String, f64)>) {
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
async fn settled(core: &Core, ios: &Ios, clock: Instant) {
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
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_idle(ios: &Ios, bound: Duration) {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline && ios.values().any(|io| io.writer.view().busy()) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reads every member at once; a member that has not answered within
/// `bound` counts as a timeout.
async fn read_all(ios: &Ios, bound: Duration) -> Members<MemberRead> {
    type Raw = (
        Result<Counters, SignalError>,
        Option<Result<f64, ControlError>>,
    );
    let mut befores: Members<WriterView> = Members::new();
    let mut set = JoinSet::new();
    for (name, io) in ios {
        befores.insert(name.clone(), io.writer.view());
        let (source, actuator) = (io.source.clone(), io.actuator.clone());
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

async fn on_exit(exporter: &Exporter, core: &Core, ios: &Ios, value: f64, grace: Duration) {
    let shares: Vec<(String, f64)> = {
        let up: Vec<&MemberState> = core.members.values().filter(|m| m.up).collect();
        let weights: Vec<f64> = up.iter().map(|m| m.weight).collect();
        let caps: Vec<f64> = up.iter().map(|m| m.ceiling_share).collect();
        let split = split::split(value, &weights, &caps, core.policy.integer);
        up.iter().map(|m| m.name.clone()).zip(split).collect()
    };
    let mut set = JoinSet::new();
    for (member, share) in shares {
        if let Some(io) = ios.get(&member) {
            let actuator = io.actuator.clone();
            set.spawn(async move { (share, actuator.write_confirmed(share).await) });
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

/// A stable share of the window in [0, 1) for a target name (FNV-1a).
fn phase_of(name: &str) -> f64 {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash % 1000) as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_stable_and_spread() {
        assert_eq!(phase_of("checkout"), phase_of("checkout"));
        let phases: Vec<f64> = (0..1000).map(|i| phase_of(&format!("t{i}"))).collect();
        assert!(phases.iter().all(|p| (0.0..1.0).contains(p)));
        for decile in 0..10 {
            let lo = f64::from(decile) / 10.0;
            let n = phases
                .iter()
                .filter(|p| (lo..lo + 0.1).contains(*p))
                .count();
            assert!(n > 50, "decile {decile}: {n}");
        }
    }
}
#[cfg(test)]
mod size {
    //! Every target keeps its task's future and its writer's for as long
    //! as it runs, so their sizes are per-target memory (at 10,000 targets,
    //! each kilobyte is 10 MB). These bounds fail if a change puts a large
    //! state back inline (box it instead).
    use crate::control::Actuator;
    use crate::telemetry::export::Exporter;
    use std::future::Future;

    fn size_of_output<A, F: Future>(_: &dyn Fn(A) -> F) -> usize {
        std::mem::size_of::<F>()
    }

    #[test]
    fn a_target_task_stays_small() {
        let run = |t: super::TargetTask| t.run(Default::default());
        let bytes = size_of_output(&run);
        assert!(bytes <= 6 * 1024, "a target's task future is {bytes} bytes");
    }

    #[test]
    fn a_writer_task_stays_small() {
        let writer = |(a, e): (Actuator, Exporter)| async move {
            let (_tx, rx) = tokio::sync::watch::channel(None);
            let clock = tokio::time::Instant::now();
            super::member::writer_loop(
                a,
                e,
                None,
                rx,
                Default::default(),
                Default::default(),
                clock,
            )
            .await
        };
        let bytes = size_of_output(&writer);
        assert!(bytes <= 1536, "a writer's task future is {bytes} bytes");
    }
}
