//! Target models: how a simulated target with a known capacity answers load.
//!
//! Why they exist: the governor's claims ("it finds the capacity at the
//! declared failure bound, and does not collapse a fragile target") can only
//! be checked against targets whose capacity is known exactly. Each model
//! here is pure and deterministic (no clock, no I/O; randomness only from the
//! seeded [`SplitMix64`]), so tests and benchmarks can cite these formulas and
//! reproduce every number.
//!
//! # Units
//! Time is counted in *ticks* (the caller decides how long one lasts). The
//! *offer* `w` is the number of workers in a tick (an `f64 >= 0`); each worker
//! makes `a` attempts per tick (`attempts_per_worker`). The capacity `C_t` is
//! in workers, so the target can serve `C_t * a` attempts per tick. Write
//! `x = w / C_t` for the load factor.
//!
//! Each tick the model resolves `n` attempts, of which `f` fail, and reports
//! `TickResult { attempts: n, failures: f, capacity: C_t, latency }`. Only
//! `queueing` has a latency (a [`TickLatency`]); every other model reports
//! `latency: None`, since its formulas say nothing about time in the system.
//!
//! # The models
//! `p(x)` is the model's failure probability per attempt.
//!
//! | model | capacity `C_t` | failure probability `p` |
//! |---|---|---|
//! | `cliff` | `C` | `0` for `x <= 1`; else `1 - g/x` with goodput `g = max(0, 1 - 4 (x - 1))`: the served share of capacity falls by 4 C per C of excess, so goodput is 0 from `x = 1.25` |
//! | `rejector` | `C` | `max(0, x - 1) / x`: exactly the excess is rejected, the capacity is still served |
//! | `knee` | `C` | logistic `1 / (1 + exp(-25 (x - 1)))`: 0.67 % at `x = 0.8`, 7.6 % at 0.9, 50 % at 1, 92 % at 1.1 |
//! | `step` | `C` for `t < T/3`, `C/2` for `T/3 <= t < 2T/3`, `C` after | as `rejector` |
//! | `warming` | `C (1 + 2 min(t, T) / T)`: rises linearly from `C` to `3C` over the run, then stays | as `rejector` |
//! | `noisy` | `C` | as `rejector`, plus 2 % background failures, always drawn binomially; the default `a = 1.5 / C`: 1.5 attempts per tick at capacity (about 30 per 2 s window at 100 ms ticks) |
//! | `lagged` | `C` | as `rejector`, but failed attempts *resolve* `lag_ticks` (default 1) ticks later (they count as attempts and failures then; successes resolve at once) |
//! | `metastable` | `C`, or `C/2` for the 10 ticks after a heavy tick | as `rejector` on the total load; see below |
//! | `retry-churn` | `C` | as `rejector` on the total load `n = n_fresh + retries`: every failed attempt is retried once in the next tick (at most one retry per fresh attempt), and counts as load and as an attempt |
//! | `drift` | `C (1 + 0.3 sin(2 pi t / T))`: a slow sinusoid, one period per run | as `rejector` |
//! | `bursts` | `C` | as `rejector`, combined with a load-independent burst `b`: `p' = 1 - (1 - p)(1 - b)`; each tick outside a burst starts one with probability 3.2 %, lasting 1, 2 or 3 ticks (uniform) at `b` uniform in [0.3, 0.6]; so about 6 % of ticks burst |
//! | `queueing` | `C` | `clamp(1.5 - 4 / x, 0, 1)`: 0 up to `x = 8/3`, 5 % at `x = 4 / 1.45 = 2.76`; a queue that answers every attempt later and later, until the client timeout fails the slowest (below) |
//! | `fast-fail` | `C` | a rejector whose rejected attempts return 20 times faster than served ones, in a closed loop: with `r = w / C > 1`, `p = 20 (r - 1) / (20 (r - 1) + 1)` and each worker makes `a / (1 - p + p / 20)` attempts per tick, so the served attempts are still `C a` while the attempt-failure fraction overstates the overload (16.7 % at `r = 1.01`) |
//!
//! Here `t` is the tick index (0 for the first tick), `T` is `run_ticks`.
//!
//! `metastable` in full: each tick the workers make `n_fresh = w a` fresh
//! attempts and re-issue last tick's failed attempts as retries, at most
//! `2 n_fresh` of them (a retry budget; the rest are abandoned). The total
//! `n = n_fresh + retries` meets capacity `C_t a`, and the excess fails:
//! `f = max(0, n - C_t a)`. A tick is *heavy* when `n > 1.5 C a` (nominal
//! `C`); a heavy tick degrades the target to `C/2` for the next 10 ticks
//! (re-armed by every heavy tick). So retries can keep the load heavy after
//! the offer has fallen back below `C`, and only a deep back-off drains them.
//!
//! `queueing` in full (a closed loop: each worker has one attempt in
//! flight). The target completes at most `C a` attempts per tick, so `n =
//! min(w, C) a` attempts resolve (each worker makes `a / max(1, x)`). By
//! Little's law the mean time in the system is `L = base max(1, x)` ticks,
//! with `base = 1 / a` (the service time at light load): flat up to
//! capacity, then linear in the load. The tick's attempts are spread
//! evenly over `[0.5 L, 1.5 L]` (a uniform shape of mean `L`, no draw), and
//! the client gives up at the timeout `T_o = 4 base`: an attempt slower than
//! that fails (it is not retried) and is observed at `T_o`; the target still
//! did its work, so goodput falls as the timeout share grows. So:
//!
//! - the failure probability is `p = P(L s > T_o) = clamp(1.5 - 4 / x, 0, 1)`
//!   (`s` uniform on `[0.5, 1.5]`);
//! - the tick's `q` quantile is `min(L (0.5 + q), T_o)`, and its CDF at `t`
//!   is `clamp(t / L - 0.5, 0, 1)` below `T_o`, 1 from `T_o` on
//!   ([`TickLatency::quantile`], [`TickLatency::share_within`]);
//! - the **latency capacity** at a bound `B` on the `q` quantile (with
//!   `(0.5 + q) base <= B < T_o`) is `w_B = C B / ((0.5 + q) base)`
//!   ([`latency_capacity`]): with `B = 2.5 base` at p99, `w_B = 2.5 / 1.49 C
//!   = 1.678 C`, while the failure bound of 5 % is only reached at `2.759 C`
//!   ([`queueing_failure_capacity`]). Past `C` an offer adds latency, not
//!   goodput: the served attempts stay `C a`.
//!
//! # Counting
//! With `poisson` set, fresh attempts are drawn as `Poisson(w a)` each tick
//! (and failures are then always drawn binomially): the attempt noise of a
//! real load tool. Otherwise, attempt and failure counts are whole numbers. Without noise they are the
//! expected values, rounded by *error diffusion*: the rounding remainder is
//! carried into the next tick, so totals over any run are exact to within one
//! and no tick sees a failure when `p = 0`. With `noise > 0` (and always for
//! `noisy`), failures are drawn as `Binomial(n, p')` with the background
//! folded in: `p' = 1 - (1 - p)(1 - noise)` (and a further `(1 - 0.02)` for
//! `noisy`).

mod config;
mod curves;
mod queueing;

use crate::rng::SplitMix64;
pub use config::{
    ModelConfig, ModelError, ModelKind, DEFAULT_ATTEMPTS_PER_WORKER, DEFAULT_RUN_TICKS,
};
use curves::{cliff, fast_fail, knee, queueing, rejector, rejector_load, FAST_FAIL_SPEEDUP};
pub use queueing::{
    latency_capacity, queueing_failure_capacity, TickLatency, QUEUEING_SPREAD, QUEUEING_TIMEOUT,
};

/// Offers above this many workers are treated as this many.
pub const MAX_OFFER: f64 = 1e12;
/// `warming`: final capacity as a multiple of the initial one.
const WARMING_FACTOR: f64 = 3.0;
/// `noisy`: background failure probability.
const NOISY_BACKGROUND: f64 = 0.02;
/// `metastable`: a tick is heavy above this multiple of nominal capacity.
const METASTABLE_HEAVY: f64 = 1.5;
/// `metastable`: ticks of degraded capacity after a heavy tick.
const METASTABLE_DEGRADED_TICKS: u32 = 10;
/// `metastable`: degraded capacity as a share of nominal capacity.
const METASTABLE_DEGRADED_SHARE: f64 = 0.5;
/// `metastable`: retries allowed per fresh attempt in a tick.
const METASTABLE_RETRY_BUDGET: f64 = 2.0;
/// `retry-churn`: retries allowed per fresh attempt in a tick.
const CHURN_RETRY_BUDGET: f64 = 1.0;
/// `drift`: amplitude of the sinusoid, as a share of `C`.
const DRIFT_AMPLITUDE: f64 = 0.3;
/// `bursts`: probability that a tick outside a burst starts one.
const BURST_START: f64 = 0.032;
/// `bursts`: the longest burst, in ticks (lengths are uniform in 1..=3).
const BURST_MAX_TICKS: u64 = 3;
/// `bursts`: the range of a burst's failure probability.
const BURST_FAILURES: (f64, f64) = (0.3, 0.6);

/// What one tick resolved.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct TickResult {
    /// Attempts resolved in this tick (successes + failures).
    pub attempts: u64,
    /// Of which failed.
    pub failures: u64,
    /// The target's true capacity in this tick, in workers (an oracle for
    /// tests and benchmarks; a real target never says).
    pub capacity: f64,
    /// The latency distribution of this tick's attempts (`queueing` only;
    /// `None` for every other model).
    pub latency: Option<TickLatency>,
}
impl TickResult {
    /// Successful attempts.
    pub fn successes(&self) -> u64 {
        self.attempts - self.failures
    }

    /// The tick's attempt-failure fraction (0 when nothing resolved).
    pub fn frac(&self) -> f64 {
        if self.attempts == 0 {
            0.0
        } else {
            self.failures as f64 / self.attempts as f64
        }
    }
}

/// One simulated target: a model plus its state (tick index, rounding
/// carries, the PRNG, and the `lagged` / `metastable` memories).
#[derive(Debug, Clone)]
pub struct TargetModel {
    cfg: ModelConfig,
    rng: SplitMix64,
    /// Index of the next tick.
    tick: u64,
    /// Folded background failure probability.
    background: f64,
    /// Whether failures are drawn binomially.
    sampled: bool,
    /// Error-diffusion remainders, in [-0.5, 0.5).
    attempts_carry: f64,
    failures_carry: f64,
    /// `lagged`: failures still resolving, oldest first (`lag_ticks` long).
    deferred_failures: std::collections::VecDeque<u64>,
    /// `bursts`: ticks left in the current burst, and its failure share.
    burst: (u64, f64),
    /// `metastable`: last tick's failures, eligible for retry.
    retry_backlog: u64,
    /// `metastable`: ticks of degraded capacity still to come.
    degraded_ticks: u32,
}

impl TargetModel {
    /// A fresh target at tick 0.
    pub fn new(cfg: ModelConfig) -> Result<Self, Vec<ModelError>> {
        cfg.validate()?;
        let noisy_background = if cfg.kind == ModelKind::Noisy {
            NOISY_BACKGROUND
        } else {
            0.0
        };
        let background = 1.0 - (1.0 - cfg.noise) * (1.0 - noisy_background);
        Ok(TargetModel {
            rng: SplitMix64::new(cfg.seed),
            tick: 0,
            background,
            sampled: background > 0.0 || cfg.poisson,
            attempts_carry: 0.0,
            failures_carry: 0.0,
            deferred_failures: std::iter::repeat_n(0, cfg.lag_ticks as usize).collect(),
            burst: (0, 0.0),
            retry_backlog: 0,
            degraded_ticks: 0,
            cfg,
        })
    }

    /// The model's parameters.
    pub fn config(&self) -> &ModelConfig {
        &self.cfg
    }

    /// Ticks simulated so far.
    pub fn ticks(&self) -> u64 {
        self.tick
    }

    /// The load-independent failure probability folded into every attempt
    /// (`noise`, and `noisy`'s own 2 %).
    pub fn background(&self) -> f64 {
        self.background
    }

    /// The true capacity (workers) that the next tick will have.
    pub fn capacity(&self) -> f64 {
        let c = self.cfg.capacity;
        let t = self.tick;
        let run = self.cfg.run_ticks;
        match self.cfg.kind {
            // Integer comparisons: exact boundaries at 1/3 and 2/3 of the run.
            ModelKind::Step
                if t.saturating_mul(3) >= run && t.saturating_mul(3) < run.saturating_mul(2) =>
            {
                c / 2.0
            }
            ModelKind::Warming => {
                let progress = t.min(run) as f64 / run as f64;
                c * (1.0 + (WARMING_FACTOR - 1.0) * progress)
            }
            ModelKind::Metastable if self.degraded_ticks > 0 => c * METASTABLE_DEGRADED_SHARE,
            ModelKind::Drift => {
                let phase = 2.0 * std::f64::consts::PI * t as f64 / run as f64;
                c * (1.0 + DRIFT_AMPLITUDE * phase.sin())
            }
            _ => c,
        }
    }

    /// Simulate one tick at an offer of `offer` workers. A NaN or negative
    /// offer counts as 0; offers above [`MAX_OFFER`] count as [`MAX_OFFER`].
    pub fn tick(&mut self, offer: f64) -> TickResult {
        let offer = if offer.is_nan() {
            0.0
        } else {
            offer.clamp(0.0, MAX_OFFER)
        };
        let capacity = self.capacity();
        let apw = match self.cfg.kind {
            ModelKind::FastFail => {
                let p = fast_fail(offer, capacity);
                self.cfg.attempts_per_worker / (1.0 - p + p / FAST_FAIL_SPEEDUP)
            }
            // Closed loop: the target completes at most `C a` per tick.
            ModelKind::Queueing if offer > capacity => {
                self.cfg.attempts_per_worker * capacity / offer
            }
            _ => self.cfg.attempts_per_worker,
        };
        let fresh = if self.cfg.poisson {
            self.rng.poisson(offer * apw)
        } else {
            diffuse(offer * apw, &mut self.attempts_carry)
        };
        let (attempts, failures) = match self.cfg.kind {
            ModelKind::Lagged => {
                let failing = self.draw_failures(fresh, rejector(offer, capacity));
                self.deferred_failures.push_back(failing);
                let resolving = self.deferred_failures.pop_front().unwrap_or(0);
                ((fresh - failing).saturating_add(resolving), resolving)
            }
            ModelKind::Metastable => self.metastable(fresh, capacity),
            ModelKind::RetryChurn => {
                let retries = self
                    .retry_backlog
                    .min((fresh as f64 * CHURN_RETRY_BUDGET) as u64);
                let total = fresh.saturating_add(retries);
                let failures = self.draw_failures(total, rejector_load(total, capacity, apw));
                self.retry_backlog = failures;
                (total, failures)
            }
            ModelKind::Bursts => {
                let burst = self.next_burst();
                let p = 1.0 - (1.0 - rejector(offer, capacity)) * (1.0 - burst);
                (fresh, self.draw_failures(fresh, p))
            }
            kind => {
                let p = match kind {
                    ModelKind::Cliff => cliff(offer, capacity),
                    ModelKind::Knee => knee(offer, capacity),
                    ModelKind::FastFail => fast_fail(offer, capacity),
                    ModelKind::Queueing => queueing(offer, capacity),
                    _ => rejector(offer, capacity),
                };
                (fresh, self.draw_failures(fresh, p))
            }
        };
        self.tick += 1;
        let latency = (self.cfg.kind == ModelKind::Queueing).then(|| {
            let base = 1.0 / self.cfg.attempts_per_worker;
            TickLatency {
                base,
                mean: base * (offer / capacity).max(1.0),
                timeout: QUEUEING_TIMEOUT * base,
            }
        });
        TickResult {
            attempts,
            failures,
            capacity,
            latency,
        }
    }

    /// The `metastable` tick: fresh attempts plus budgeted retries meet the
    /// (possibly degraded) capacity; a heavy tick re-arms the degradation.
    fn metastable(&mut self, fresh: u64, capacity: f64) -> (u64, u64) {
        let budget = (fresh as f64 * METASTABLE_RETRY_BUDGET) as u64;
        let retries = self.retry_backlog.min(budget);
        let total = fresh.saturating_add(retries);
        let apw = self.cfg.attempts_per_worker;
        let failures = self.draw_failures(total, rejector_load(total, capacity, apw));
        self.retry_backlog = failures;
        self.degraded_ticks = self.degraded_ticks.saturating_sub(1);
        if total as f64 > METASTABLE_HEAVY * self.cfg.capacity * apw {
            self.degraded_ticks = METASTABLE_DEGRADED_TICKS;
        }
        (total, failures)
    }

    /// `bursts`: this tick's load-independent failure share (0 outside a
    /// burst). The draws happen every tick, whatever the offer, so the
    /// bursts of a seed are the same for every controller.
    fn next_burst(&mut self) -> f64 {
        let start = self.rng.next_f64();
        let len = 1 + self.rng.next_u64() % BURST_MAX_TICKS;
        let (lo, hi) = BURST_FAILURES;
        let share = lo + (hi - lo) * self.rng.next_f64();
        if self.burst.0 == 0 && start < BURST_START {
            self.burst = (len, share);
        }
        if self.burst.0 > 0 {
            self.burst.0 -= 1;
            self.burst.1
        } else {
            0.0
        }
    }

    /// Failures among `attempts` at model probability `p`, with the
    /// background folded in: binomial when sampled, else error-diffused.
    fn draw_failures(&mut self, attempts: u64, p: f64) -> u64 {
        let p = 1.0 - (1.0 - p.clamp(0.0, 1.0)) * (1.0 - self.background);
        if self.sampled {
            self.rng.binomial(attempts, p)
        } else {
            diffuse(attempts as f64 * p, &mut self.failures_carry).min(attempts)
        }
    }
}

/// Round `expected` to a whole count, carrying the remainder (in
/// [-0.5, 0.5)) into the next call.
fn diffuse(expected: f64, carry: &mut f64) -> u64 {
    let v = expected + *carry;
    let n = (v + 0.5).floor().max(0.0);
    *carry = v - n;
    // Saturating cast; `n` is finite and non-negative.
    n as u64
}

#[cfg(test)]
mod tests;
