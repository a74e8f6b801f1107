//! The bench's metrics: what one run did, and how runs over many seeds are
//! summarised.
//!
//! Why it exists: a control-quality claim is only as honest as its metric
//! definitions, so each one is a small pure function over a [`Trace`] (the
//! offers and results, window by window) with a test that pins it.
//!
//! What it may touch: nothing; it is arithmetic over vectors.
//!
//! Per run, against the oracle's run on the same model and seed:
//!
//! | metric | definition |
//! |---|---|
//! | `converge` | windows from the start of an epoch until the offer first spends [`CONVERGE_HOLD`] (5) consecutive windows within ±10 % of the oracle's offer; an epoch starts at window 0 and at every window where the true capacity moves by more than 10 %; the run's value is its worst epoch, and *never* when some epoch never converges |
//! | `failed` | failed attempts, summed over the run |
//! | `unexplained` | the failed attempts the model's load-independent background `b` does not explain: `failed - b / (1 - b) × successes` (signed: by chance a run may fail less than the background's share); `failed` itself where `b = 0` |
//! | `excess` | `Σ max(0, offer - C_t)`, in worker-windows |
//! | `goodput` | successes divided by the oracle's successes |
//! | `cv` | the coefficient of variation (population standard deviation over mean) of the offer over the last [`TAIL`] (40) windows |
//! | `reversals` | direction changes of the offer over the last 40 windows (holds are skipped) |
//! | `downs` | windows after which the offer went down |
//! | `false_downs` | those downs where neither the window nor the one before it offered more than the capacity (so no overload can have caused the failures) |
//! | `over_bound` | models with a latency only: the share of windows (with a quantile) whose latency quantile is above the bound, whether or not the controller sees the latency |
//! | `latency_ratio` | models with a latency only: the steady offer (the median offer of the last [`TAIL`] windows) over the latency capacity (the highest offer whose quantile meets the bound, from the model's formula) |
//! | `to_figure` | governors only: windows until the live capacity estimate (the engine's [`crate::report::live::LiveCapacity`], fed each window's outcome) has a figure within ±[`FIGURE_BAND`] (10 %) of the true capacity and keeps one in every later window: the first window `t` from which every figure is in band, counted as `t + 1`; *never* when the last window's is not. The true capacity is `C_t`, or the latency capacity for a governor with the latency bound |
//! | `touches` | wall touches: maximal runs of consecutive windows whose failure fraction is above `high` (a window without attempts ends a run) |
//! | `failed_per_touch` | the failed attempts in those windows over the number of touches (0 for a run that never touches the wall) |
//! | `wrong_figure` | governors only: 1 when the last window's live capacity figure says a bound binds there (steady, and not a lower bound: what a user takes for the capacity) and lies more than [`WRONG_BAND`] (15 %) from the true capacity of that window (the latency capacity for a governor with the latency bound), else 0: a wrong report, which the figure's times cannot show (a figure that is never in band may be an honest lower bound) |
//! | `stalled` | 1 when the steady offer (the median offer of the last [`TAIL`] windows) is at most [`STALL_SHARE`] (half) of the median true capacity over those windows, else 0: a run held far below the wall, which the medians over seeds cannot show when only some seeds do it |
//!
//! Over seeds: the median (the mean of the middle two for an even count)
//! and the p90 (nearest rank: the `ceil(0.9 n)`-th smallest). A `converge`
//! of *never* sorts above every number; a summary that lands on it is
//! *never* too (`null` in JSON).

use serde::Serialize;

use super::controllers::StepNote;

/// Half-width of the convergence band around the oracle's offer.
pub const CONVERGE_BAND: f64 = 0.10;
/// Consecutive in-band windows that count as converged.
pub const CONVERGE_HOLD: usize = 5;
/// A capacity move larger than this share starts a new epoch.
pub const CAPACITY_CHANGE: f64 = 0.10;
/// Windows at the end of the run that `cv` and `reversals` look at.
pub const TAIL: usize = 40;
/// A run whose steady offer is at most this share of the capacity stalled.
pub const STALL_SHARE: f64 = 0.5;
/// Half-width of the band around the true capacity that a capacity figure
/// must stay within for `to_figure`.
pub const FIGURE_BAND: f64 = 0.10;
/// A figure that says a bound binds there is wrong beyond this share of
/// the true capacity: the ±15 % that the real-tool tests allow a report's
/// figure (tests/support/goals.rs, `assert_honest_figure`).
pub const WRONG_BAND: f64 = 0.15;

/// One run, window by window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// The whole workers offered in each window.
    pub offers: Vec<f64>,
    /// The true capacity of each window.
    pub capacity: Vec<f64>,
    /// Resolved attempts in each window.
    pub attempts: Vec<u64>,
    /// Failed attempts in each window.
    pub failures: Vec<u64>,
    /// Memory clears (governors only).
    pub memory_clears: Option<u64>,
    /// The latency quantile of each window (models with a latency only;
    /// empty otherwise).
    pub latency: Vec<Option<f64>>,
    /// The latency bound, in the unit of `latency` (models with a latency).
    pub latency_bound: Option<f64>,
    /// The latency capacity: the highest offer whose quantile meets the
    /// bound, from the model's formula (models with a latency).
    pub latency_capacity: Option<f64>,
    /// The declared failure bound: a window over it touches the wall.
    pub high: f64,
    /// The model's load-independent failure probability per attempt.
    pub background: f64,
    /// The live capacity figure after each window (governors only:
    /// `None` for the other controllers).
    pub figures: Option<Vec<Option<f64>>>,
    /// Whether the figures estimate the latency capacity (a governor with
    /// the latency bound) rather than `capacity`.
    pub figures_of_latency: bool,
    /// The last live figure, when it says a bound binds there
    /// ([`super::controllers::Controller::capacity_claim`]).
    pub claim: Option<f64>,
    /// What each window decided and by which rule (governors only; `None`
    /// for the other controllers).
    pub steps: Vec<Option<StepNote>>,
}

impl Trace {
    /// Successful attempts over the run.
    pub fn successes(&self) -> u64 {
        self.attempts.iter().sum::<u64>() - self.failures.iter().sum::<u64>()
    }
}

/// What one run scored.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunMetrics {
    /// Worst epoch's convergence time; `None` for never.
    pub converge: Option<f64>,
    /// Failed attempts.
    pub failed: f64,
    /// Failed attempts the background does not explain.
    pub unexplained: f64,
    /// Worker-windows offered above capacity.
    pub excess: f64,
    /// Successes over the oracle's.
    pub goodput: f64,
    /// Coefficient of variation of the tail's offers.
    pub cv: f64,
    /// Direction changes in the tail.
    pub reversals: f64,
    /// Decreases of the offer.
    pub downs: f64,
    /// Decreases without overload in that window or the one before.
    pub false_downs: f64,
    /// Memory clears (governors only).
    pub memory_clears: Option<f64>,
    /// Share of windows over the latency bound (models with a latency).
    pub over_bound: Option<f64>,
    /// Steady offer over the latency capacity (models with a latency).
    pub latency_ratio: Option<f64>,
    /// Windows to a capacity figure that stays within the band: `None` for
    /// a controller without an estimate, `Some(None)` for never.
    pub to_figure: Option<Option<f64>>,
    /// Wall touches.
    pub touches: f64,
    /// Failed attempts per wall touch (0 without a touch).
    pub failed_per_touch: f64,
    /// 1 when the run stalled far below the wall ([`STALL_SHARE`]), else 0.
    pub stalled: f64,
    /// 1 when the last figure says a bound binds there and lies beyond
    /// [`WRONG_BAND`] of the true capacity, else 0; `None` for a
    /// controller without an estimate.
    pub wrong_figure: Option<f64>,
}

/// Scores `run` against the oracle's run on the same model and seed.
pub fn measure(run: &Trace, oracle: &Trace) -> RunMetrics {
    let oracle_successes = oracle.successes() as f64;
    let (downs, false_downs) = downs(&run.offers, &run.capacity);
    let (touches, touch_failures) = wall_touches(&run.attempts, &run.failures, run.high);
    let failed = run.failures.iter().sum::<u64>() as f64;
    RunMetrics {
        converge: converge(&run.offers, &oracle.offers, &oracle.capacity),
        failed,
        unexplained: unexplained(failed, run.successes() as f64, run.background),
        excess: excess(&run.offers, &run.capacity),
        goodput: if oracle_successes > 0.0 {
            run.successes() as f64 / oracle_successes
        } else {
            0.0
        },
        cv: cv(tail(&run.offers)),
        reversals: reversals(tail(&run.offers)) as f64,
        downs: downs as f64,
        false_downs: false_downs as f64,
        memory_clears: run.memory_clears.map(|c| c as f64),
        over_bound: run
            .latency_bound
            .and_then(|bound| over_bound(&run.latency, bound)),
        latency_ratio: run
            .latency_capacity
            .and_then(|cap| steady_offer(&run.offers).map(|o| o / cap)),
        to_figure: run.figures.as_ref().map(|figures| {
            let truth: Vec<f64> = match run.latency_capacity {
                Some(cap) if run.figures_of_latency => vec![cap; figures.len()],
                _ => run.capacity.clone(),
            };
            to_figure(figures, &truth)
        }),
        touches: touches as f64,
        failed_per_touch: if touches > 0 {
            touch_failures as f64 / touches as f64
        } else {
            0.0
        },
        stalled: match (steady_offer(&run.offers), steady_offer(&run.capacity)) {
            (Some(o), Some(c)) if o <= STALL_SHARE * c => 1.0,
            _ => 0.0,
        },
        wrong_figure: run.figures.as_ref().map(|_| {
            let truth = match run.latency_capacity {
                Some(cap) if run.figures_of_latency => Some(cap),
                _ => run.capacity.last().copied(),
            };
            match (run.claim, truth) {
                (Some(claim), Some(truth)) if wrong_figure(claim, truth) => 1.0,
                _ => 0.0,
            }
        }),
    }
}

/// `wrong_figure`: whether a figure that says a bound binds at `claim`
/// lies more than [`WRONG_BAND`] from the true capacity `truth`.
pub fn wrong_figure(claim: f64, truth: f64) -> bool {
    (claim - truth).abs() > WRONG_BAND * truth
}

/// `unexplained`: the failed attempts beyond what a background failure
/// probability `b` explains for `successes`. An attempt fails to the
/// background with probability `b` whatever the load, so a run that
/// succeeded `s` times made about `s / (1 - b)` attempts the background
/// alone would fail `b / (1 - b) × s` of. Why: on a target with a
/// background, raw failures grow with the goodput, so the fewest raw
/// failures among controllers above a goodput bar go to the one with the
/// least goodput above it, whatever its control; what a controller's
/// decisions cost is what the background does not explain.
pub fn unexplained(failed: f64, successes: f64, background: f64) -> f64 {
    if background > 0.0 && background < 1.0 {
        failed - background / (1.0 - background) * successes
    } else {
        failed
    }
}

/// `to_figure`: windows until every later figure is within
/// ±[`FIGURE_BAND`] of the truth (`t + 1` for the first such window `t`),
/// or `None` (never) when the last one is not.
pub fn to_figure(figures: &[Option<f64>], truth: &[f64]) -> Option<f64> {
    let len = figures.len().min(truth.len());
    let in_band =
        |t: usize| figures[t].is_some_and(|f| (f - truth[t]).abs() <= FIGURE_BAND * truth[t]);
    let first = (0..len).rev().take_while(|&t| in_band(t)).last()?;
    Some((first + 1) as f64)
}

/// `(touches, failed)`: the wall touches (maximal runs of windows whose
/// failure fraction is above `high`; a window without attempts ends one)
/// and the failed attempts in their windows.
pub fn wall_touches(attempts: &[u64], failures: &[u64], high: f64) -> (u64, u64) {
    let mut touches = 0;
    let mut failed = 0;
    let mut touching = false;
    for (&n, &f) in attempts.iter().zip(failures) {
        let over = n > 0 && f as f64 / n as f64 > high;
        if over {
            failed += f;
            if !touching {
                touches += 1;
            }
        }
        touching = over;
    }
    (touches, failed)
}

/// The share of windows with a quantile whose quantile is above `bound`
/// (`None` when no window had one).
pub fn over_bound(latency: &[Option<f64>], bound: f64) -> Option<f64> {
    let known: Vec<f64> = latency.iter().flatten().copied().collect();
    (!known.is_empty())
        .then(|| known.iter().filter(|&&q| q > bound).count() as f64 / known.len() as f64)
}

/// The steady offer: the median offer of the last [`TAIL`] windows (`None`
/// for an empty run).
pub fn steady_offer(offers: &[f64]) -> Option<f64> {
    let v: Vec<Option<f64>> = tail(offers).iter().map(|&o| Some(o)).collect();
    summarize(&v).median
}

fn tail(v: &[f64]) -> &[f64] {
    &v[v.len().saturating_sub(TAIL)..]
}

/// Where epochs start: window 0, and every window whose capacity differs
/// from the previous window's by more than [`CAPACITY_CHANGE`].
pub fn epoch_starts(capacity: &[f64]) -> Vec<usize> {
    let mut starts = vec![0];
    for t in 1..capacity.len() {
        let (prev, now) = (capacity[t - 1], capacity[t]);
        if (now - prev).abs() > CAPACITY_CHANGE * prev {
            starts.push(t);
        }
    }
    starts
}

/// The `converge` metric: the worst epoch's windows until the first run of
/// [`CONVERGE_HOLD`] windows within ±[`CONVERGE_BAND`] of the oracle's offer.
pub fn converge(offers: &[f64], oracle_offers: &[f64], capacity: &[f64]) -> Option<f64> {
    let len = offers.len().min(oracle_offers.len()).min(capacity.len());
    let starts = epoch_starts(&capacity[..len]);
    let mut worst = 0usize;
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(len);
        let in_band =
            |t: usize| (offers[t] - oracle_offers[t]).abs() <= CONVERGE_BAND * oracle_offers[t];
        let mut streak = 0;
        let mut found = None;
        for t in start..end {
            streak = if in_band(t) { streak + 1 } else { 0 };
            if streak == CONVERGE_HOLD {
                found = Some(t + 1 - CONVERGE_HOLD - start);
                break;
            }
        }
        worst = worst.max(found?);
    }
    Some(worst as f64)
}

/// `Σ max(0, offer - capacity)`.
pub fn excess(offers: &[f64], capacity: &[f64]) -> f64 {
    offers
        .iter()
        .zip(capacity)
        .map(|(o, c)| (o - c).max(0.0))
        .sum()
}

/// Population standard deviation over the mean (0 for an empty or all-zero
/// slice).
pub fn cv(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if mean == 0.0 {
        return 0.0;
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    var.sqrt() / mean
}

/// Direction changes between consecutive non-zero moves.
pub fn reversals(v: &[f64]) -> u32 {
    let mut last = 0.0_f64;
    let mut count = 0;
    for pair in v.windows(2) {
        let d = pair[1] - pair[0];
        if d == 0.0 {
            continue;
        }
        if last != 0.0 && d.signum() != last.signum() {
            count += 1;
        }
        last = d;
    }
    count
}

/// `(downs, false_downs)`: decreases of the offer, and those where neither
/// the window nor the one before offered more than its capacity.
pub fn downs(offers: &[f64], capacity: &[f64]) -> (u32, u32) {
    let over = |t: usize| offers[t] > capacity[t];
    let mut downs = 0;
    let mut false_downs = 0;
    for t in 0..offers.len().saturating_sub(1) {
        if offers[t + 1] < offers[t] {
            downs += 1;
            if !over(t) && (t == 0 || !over(t - 1)) {
                false_downs += 1;
            }
        }
    }
    (downs, false_downs)
}

/// A metric's median and p90 over seeds; `None` is *never*.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// The median.
    pub median: Option<f64>,
    /// The 90th percentile (nearest rank).
    pub p90: Option<f64>,
}

/// Summarises values over seeds; `None` sorts above every number.
pub fn summarize(values: &[Option<f64>]) -> Summary {
    if values.is_empty() {
        return Summary {
            median: None,
            p90: None,
        };
    }
    let mut v: Vec<f64> = values.iter().map(|x| x.unwrap_or(f64::INFINITY)).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let rank = (0.9 * n as f64).ceil() as usize;
    let p90 = v[rank.clamp(1, n) - 1];
    let finite = |x: f64| x.is_finite().then_some(x);
    Summary {
        median: finite(median),
        p90: finite(p90),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converge_counts_windows_until_five_in_band() {
        let oracle = vec![100.0; 20];
        let cap = vec![105.0; 20];
        // In band (90..=110) from window 3 on.
        let mut offers = vec![10.0, 50.0, 80.0];
        offers.extend([95.0; 17]);
        assert_eq!(converge(&offers, &oracle, &cap), Some(3.0));
        // Four in band, one out, then five: the first run of five counts.
        let offers = [
            95.0, 95.0, 95.0, 95.0, 120.0, 95.0, 95.0, 95.0, 95.0, 95.0, 95.0,
        ];
        assert_eq!(converge(&offers, &oracle[..11], &cap[..11]), Some(5.0));
        // Never in band.
        assert_eq!(converge(&[50.0; 20], &oracle, &cap), None);
        // The band is inclusive at ±10 %.
        assert_eq!(converge(&[110.0; 20], &oracle, &cap), Some(0.0));
        assert_eq!(converge(&[110.5; 20], &oracle, &cap), None);
    }

    #[test]
    fn converge_is_measured_again_after_every_capacity_change() {
        // Capacity halves at 10 and recovers at 20.
        let cap: Vec<f64> = (0..30)
            .map(|t| if (10..20).contains(&t) { 50.0 } else { 100.0 })
            .collect();
        let oracle: Vec<f64> = cap.iter().map(|c| 0.95 * c).collect();
        assert_eq!(epoch_starts(&cap), vec![0, 10, 20]);
        // Tracks at once except 4 windows late after the drop.
        let mut offers = oracle.clone();
        for o in &mut offers[10..14] {
            *o = 95.0;
        }
        assert_eq!(converge(&offers, &oracle, &cap), Some(4.0));
        // Too late to hold 5 windows before the next change: never.
        for o in &mut offers[10..16] {
            *o = 95.0;
        }
        assert_eq!(converge(&offers, &oracle, &cap), None);
        // Never converging in the last epoch makes the run "never".
        let mut offers = oracle.clone();
        for o in &mut offers[20..] {
            *o = 10.0;
        }
        assert_eq!(converge(&offers, &oracle, &cap), None);
        // A slow drift (warming) is one epoch.
        let drift: Vec<f64> = (0..300).map(|t| 100.0 + t as f64).collect();
        assert_eq!(epoch_starts(&drift), vec![0]);
    }

    #[test]
    fn excess_sums_only_the_overload() {
        assert_eq!(excess(&[90.0, 110.0, 130.0], &[100.0, 100.0, 100.0]), 40.0);
    }

    #[test]
    fn cv_is_std_over_mean() {
        assert_eq!(cv(&[100.0; 40]), 0.0);
        assert!((cv(&[90.0, 110.0]) - 0.1).abs() < 1e-12);
        assert_eq!(cv(&[]), 0.0);
    }

    #[test]
    fn reversals_skip_holds() {
        assert_eq!(reversals(&[1.0, 2.0, 3.0, 4.0]), 0);
        assert_eq!(reversals(&[1.0, 2.0, 2.0, 1.0, 1.0, 3.0]), 2);
        assert_eq!(reversals(&[5.0, 5.0, 5.0]), 0);
    }

    #[test]
    fn downs_and_false_downs() {
        let cap = [100.0; 6];
        // Down after an overload (window 1 over), then a down with no
        // overload in that window or the one before (window 4).
        let offers = [90.0, 120.0, 90.0, 95.0, 99.0, 80.0];
        assert_eq!(downs(&offers, &cap), (2, 1));
        // A down one window after the overload is not false (lag).
        let offers = [120.0, 95.0, 90.0];
        assert_eq!(downs(&offers, &cap), (2, 0));
    }

    #[test]
    fn summaries_use_the_middle_and_the_nearest_rank() {
        let v: Vec<Option<f64>> = (1..=10).map(|x| Some(x as f64)).collect();
        assert_eq!(
            summarize(&v),
            Summary {
                median: Some(5.5),
                p90: Some(9.0)
            }
        );
        let v: Vec<Option<f64>> = (1..=31).map(|x| Some(x as f64)).collect();
        assert_eq!(summarize(&v).median, Some(16.0));
        assert_eq!(summarize(&v).p90, Some(28.0));
        // "never" sorts last.
        let v = [Some(1.0), None, None];
        assert_eq!(summarize(&v).median, None);
        assert_eq!(summarize(&[Some(1.0), Some(2.0), None]).median, Some(2.0));
        assert_eq!(summarize(&[]).median, None);
    }

    /// A run that fails exactly the background's share has no unexplained
    /// failure, whatever its goodput; the load's failures on top are all
    /// unexplained; without a background every failure is.
    #[test]
    fn unexplained_failures_are_those_beyond_the_background() {
        let run = |offer: f64, attempts: u64, failures: u64, background: f64| Trace {
            offers: vec![offer; 10],
            capacity: vec![100.0; 10],
            attempts: vec![attempts; 10],
            failures: vec![failures; 10],
            background,
            ..Trace::default()
        };
        let oracle = run(95.0, 950, 19, 0.02);
        // 2 % of 1,000 attempts a window: 200 failed, 9,800 succeeded.
        let m = measure(&run(100.0, 1000, 20, 0.02), &oracle);
        assert_eq!(m.failed, 200.0);
        assert!(m.unexplained.abs() < 1e-9, "{}", m.unexplained);
        // Half the goodput, the same share: fewer raw failures, still none
        // unexplained.
        let m = measure(&run(50.0, 500, 10, 0.02), &oracle);
        assert_eq!(m.failed, 100.0);
        assert!(m.unexplained.abs() < 1e-9, "{}", m.unexplained);
        // 30 more failures a window than the background's: 300 unexplained
        // (less the background's share of the 300 lost successes: 6.1).
        let m = measure(&run(100.0, 1000, 50, 0.02), &oracle);
        assert!((m.unexplained - (500.0 - 0.02 / 0.98 * 9500.0)).abs() < 1e-9);
        assert!((m.unexplained - 306.1).abs() < 0.1, "{}", m.unexplained);
        // No background: every failure.
        let m = measure(&run(100.0, 1000, 20, 0.0), &oracle);
        assert_eq!(m.unexplained, 200.0);
    }

    #[test]
    fn measure_scores_against_the_oracle() {
        let oracle = Trace {
            offers: vec![95.0; 10],
            capacity: vec![100.0; 10],
            attempts: vec![950; 10],
            failures: vec![0; 10],
            memory_clears: None,
            ..Trace::default()
        };
        let run = Trace {
            offers: vec![120.0; 10],
            capacity: vec![100.0; 10],
            attempts: vec![1200; 10],
            failures: vec![200; 10],
            memory_clears: Some(2),
            ..Trace::default()
        };
        let m = measure(&run, &oracle);
        assert_eq!(m.failed, 2000.0);
        assert_eq!(m.excess, 200.0);
        assert!((m.goodput - 1000.0 / 950.0).abs() < 1e-12);
        assert_eq!(m.converge, None);
        assert_eq!(m.cv, 0.0);
        assert_eq!(m.memory_clears, Some(2.0));
        assert_eq!((m.over_bound, m.latency_ratio), (None, None));
        // High 0 (the default trace's): every failing window is over it,
        // and the ten make one touch.
        assert_eq!((m.touches, m.failed_per_touch), (1.0, 2000.0));
        assert_eq!(m.to_figure, None, "no estimate, no figure time");
    }

    #[test]
    fn to_figure_counts_windows_until_the_figure_stays_in_band() {
        let truth = [100.0; 8];
        // In band from window 3 on (95 and 110 are within ±10 %).
        let figures = [
            None,
            Some(50.0),
            Some(80.0),
            Some(95.0),
            Some(110.0),
            Some(100.0),
            Some(91.0),
            Some(100.0),
        ];
        assert_eq!(to_figure(&figures, &truth), Some(4.0));
        // In band early, lost, back: counted from the return.
        let figures = [
            Some(100.0),
            Some(100.0),
            None,
            Some(100.0),
            Some(100.0),
            Some(100.0),
            Some(100.0),
            Some(100.0),
        ];
        assert_eq!(to_figure(&figures, &truth), Some(4.0));
        // Out of band at the end: never.
        let figures = [Some(100.0); 7]
            .into_iter()
            .chain([Some(111.0)])
            .collect::<Vec<_>>();
        assert_eq!(to_figure(&figures, &truth), None);
        assert_eq!(to_figure(&[None; 8], &truth), None);
        // The truth may move: the band follows it.
        assert_eq!(
            to_figure(&[Some(50.0), Some(100.0)], &[50.0, 100.0]),
            Some(1.0)
        );
    }

    /// A figure that says the bound binds is wrong beyond ±15 % of the
    /// last window's true capacity (or the latency capacity); a lower bound
    /// (no claim) never is; a controller without an estimate has no value.
    #[test]
    fn a_wrong_figure_claims_a_binding_bound_beyond_15_percent() {
        assert!(!wrong_figure(85.0, 100.0) && !wrong_figure(115.0, 100.0));
        assert!(wrong_figure(84.0, 100.0) && wrong_figure(116.0, 100.0));
        let run = |claim: Option<f64>, figures: bool| Trace {
            offers: vec![100.0; 3],
            capacity: vec![40.0, 40.0, 100.0],
            attempts: vec![100; 3],
            failures: vec![0; 3],
            figures: figures.then(|| vec![claim; 3]),
            claim,
            ..Trace::default()
        };
        let oracle = run(None, false);
        let m = |claim, figures| measure(&run(claim, figures), &oracle).wrong_figure;
        // Against the last window's capacity (100), not an earlier one.
        assert_eq!(m(Some(40.0), true), Some(1.0));
        assert_eq!(m(Some(95.0), true), Some(0.0));
        assert_eq!(m(None, true), Some(0.0), "a lower bound claims nothing");
        assert_eq!(m(Some(40.0), false), None, "no estimate kept");
        // With the latency bound, against the latency capacity.
        let latency = Trace {
            latency_capacity: Some(160.0),
            figures_of_latency: true,
            ..run(Some(100.0), true)
        };
        assert_eq!(measure(&latency, &oracle).wrong_figure, Some(1.0));
    }

    #[test]
    fn wall_touches_are_runs_of_windows_over_high() {
        let attempts = [100, 100, 100, 100, 0, 100, 100, 100];
        let failures = [0, 10, 20, 0, 0, 6, 0, 5];
        // Over 5 %: windows 1-2 (one touch), 5 (another); 5 of 100 is not over.
        assert_eq!(wall_touches(&attempts, &failures, 0.05), (2, 36));
        // A window without attempts ends a touch.
        assert_eq!(wall_touches(&[100, 0, 100], &[50, 0, 50], 0.05), (2, 100));
        assert_eq!(wall_touches(&[100; 3], &[0; 3], 0.05), (0, 0));
    }

    #[test]
    fn latency_metrics_count_windows_over_the_bound_and_the_steady_offer() {
        let lat = [Some(1.0), Some(2.6), None, Some(2.5), Some(3.0)];
        assert_eq!(over_bound(&lat, 2.5), Some(0.5), "2 of the 4 known");
        assert_eq!(over_bound(&[None, None], 2.5), None);
        // The median of the last 40 windows: the early climb is left out.
        let mut offers = vec![1.0, 2.0, 4.0, 500.0];
        offers.extend([150.0; 30]);
        offers.extend([160.0; 10]);
        assert_eq!(steady_offer(&offers), Some(150.0));
        let run = Trace {
            offers: offers.clone(),
            capacity: vec![100.0; offers.len()],
            attempts: vec![1000; offers.len()],
            failures: vec![0; offers.len()],
            latency: vec![Some(2.0); offers.len()],
            latency_bound: Some(2.5),
            latency_capacity: Some(200.0),
            ..Trace::default()
        };
        let m = measure(&run, &run);
        assert_eq!(m.over_bound, Some(0.0));
        assert_eq!(m.latency_ratio, Some(0.75));
    }
}
