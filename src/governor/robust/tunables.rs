//! The numbers of the `robust` and `gentle` profiles: every threshold,
//! share and wait that the rules of [`super`] name, and the [`Tunables`]
//! that differ between the two profiles.
//!
//! Why it exists: the rules are argued in [`super`]'s docs and measured in
//! docs/BENCHMARKS.md by these names; keeping the numbers together shows
//! at a glance what a profile is made of, apart from the code that uses
//! them.

/// Significance level of the one-sided exact test for a breach on few
/// attempts: under a true failure probability of exactly `high`, a pool is
/// called a breach at most 1 % of the time.
pub const EVIDENCE_ALPHA: f64 = 0.01;
/// The first re-probe increment after a memory clear, as a share of the
/// offer at which the memory cleared (10 %).
pub const REPROBE_START: f64 = 0.10;
/// The most consecutive clean verdicts an additive probe waits for.
pub const MAX_DWELL: u32 = 128;
/// The opening slow start doubles below this offer; from it on, each Up
/// grows the offer by a gain that starts at [`SLOW_START_GAIN`] and halves
/// with every Up, down to [`SLOW_START_MIN_GAIN`].
pub const SLOW_START_DOUBLING_BELOW: f64 = 64.0;
/// The opening slow start's first gain from [`SLOW_START_DOUBLING_BELOW`]
/// on (x1.5).
pub const SLOW_START_GAIN: f64 = 0.5;
/// The opening slow start's smallest gain (x1.125).
pub const SLOW_START_MIN_GAIN: f64 = 0.125;
/// A failed probe's failures are paid by clean attempts at this share of
/// `high` (2.5 % at `high` = 5 %).
pub const PROBE_COST_SHARE: f64 = 0.5;
/// Memory-clear evidence: a clean verdict at or above `last_bad` counts
/// only below this share of `low` (0.25 % at `low` = 1 %).
pub const CLEAR_BELOW: f64 = 0.25;
/// A clean verdict whose successes per unit of offer fall below this share
/// of the best seen (70 %) adds offer but not goodput: it does not climb.
pub const PLATEAU_SHARE: f64 = 0.7;
/// The most clean verdicts a failed probe's cost makes the next probe from
/// its start (or higher) wait for.
pub const MAX_COST_DWELL: u32 = 64;
/// The Down after a non-additive Up whose first verdict is in the dead
/// band: the default's smallest back-off factor.
pub const BAND_BACK_OFF: f64 = 0.9;
/// A probe that lands in the dead band is undone only above this share of
/// `high`.
pub const BAND_RETREAT_ABOVE: f64 = 0.4;
/// A breach at least this large (20 %) after steady windows is
/// tested for a load-independent burst.
pub const BURST_MIN_FRAC: f64 = 0.2;
/// Verdicts at an offer without a breach before a breach there counts as
/// unprovoked.
pub const BURST_STEADY: u32 = 2;
/// A settle window whose fraction stays above this share of the breach's
/// did not fall with the offer: a burst, not congestion.
pub const BURST_NOT_FALLING: f64 = 0.7;
/// Dead-band verdicts in a row at one offer before it steps down a probe.
pub const BAND_PATIENCE: u32 = 12;
/// `gentle`: a dead band is proven, and stepped out of, when every window
/// at the offer, pooled, is above the clean level at this significance (a
/// one-sided exact binomial test, taken at every verdict: 0.1 % keeps a
/// burst or a run of bad luck from proving it).
pub const BAND_PROOF_ALPHA: f64 = 0.001;
/// `gentle`, without a background estimate: a dead band proven above the
/// clean level (at [`BAND_PROOF_ALPHA`]) is left only when the offers just
/// below fail less at this significance (1 %; a one-sided test of the two
/// counts), so that the failures follow the load and are not a background
/// above `low`. Taken at every verdict against offers that were judged
/// clean, a background passes it now and then: one step down shows that
/// (one probe lower fails as much) and measures the background. At 5 % it
/// changed 12 of 30 runs of `rejector n=40 bg=2%`, most for the worse.
pub const FOLLOWS_LOAD_ALPHA: f64 = 0.01;
/// `gentle`, with a thin background estimate: a dead band that the
/// offer's own counts, all told, prove above the clean level (at
/// [`BAND_PROOF_ALPHA`]), where the offers just below hold too few
/// attempts for [`FOLLOWS_LOAD_ALPHA`]'s test to pass even without a
/// failure, steps down one probe, so that the step can measure the
/// background. Only when the offer's recent windows hold at least this
/// share of `1 / low` attempts on average (50 at `low` = 1 %): a verdict
/// every window or two. Measured (docs/BENCHMARKS.md, "A band the offers
/// below are too thin to test", with the rule in the opening too): at
/// 0.25 the default bench's `noisy` (about 30 attempts a window) is lost
/// at three sizes, and without the condition `rejector n=40 bg=2%` as
/// well; at 1 no goal moves.
pub const THIN_BAND_WINDOW_SHARE: f64 = 0.5;
/// `gentle`'s opening climbs through silence while the attempts that the
/// tool's rate predicts for it stay under this many (no attempt in 3
/// expected happens about 5 % of the time): the `silence` module.
pub const SILENCE_EXPECTED: f64 = 3.0;
/// Before the tool's first attempt, the opening doubles on silent windows
/// below this offer (1, 2, 4, 8: three windows).
pub const BLIND_CLIMB_BELOW: f64 = 8.0;
/// `gentle`: a thin background estimate excuses pools failing up to this
/// many times `high` (10 % at `high` = 5 %): a background within the bound
/// rarely shows that much on a verdict's sample (3 % on 30 attempts: 1 %
/// of the time), a wall crossed by a probe often does.
pub const THIN_EXCUSE_HIGHS: f64 = 2.0;
/// `gentle`: while the failures of a breach below an offer held clean go
/// on at the lower offer, the burst test waits there this many more
/// windows before it returns (a burst lasts a few windows; waiting at the
/// lower offer fails fewer attempts than returning into it).
pub const BURST_TEST_WAITS: u32 = 2;
/// `gentle`, an integer knob: a run of attempts at `offer` workers without
/// a failure rules out one worker over a rejecting wall when it would
/// happen at most this often (5 %: about `3 offer` attempts;
/// the `stats` module).
pub const GRAIN_ALPHA: f64 = 0.05;
/// `gentle`, an integer knob: within this many probes of `last_bad`, with
/// no failure seen below, a pool under the clean level is clean only when
/// it also rules out one worker over a wall ([`GRAIN_ALPHA`]; the
/// `evidence` module, eighteenth round).
pub const GRAIN_NEAR_WALL_PROBES: f64 = 2.0;
/// Windows at the current offer that the breach test pools.
pub const BREACH_WINDOWS: usize = 8;

/// The numbers of this code path that differ between the profiles that
/// take it: [`Tunables::ROBUST`] (exactly the rules above) and
/// [`Tunables::GENTLE`] (the default profile, issue 26). Everything else is
/// shared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tunables {
    /// The most clean verdicts a failed probe's cost makes the next probe
    /// from its start (or higher) wait for; also the wait after a probe
    /// that left leftovers.
    pub max_cost_dwell: u32,
    /// A dead band that the counts at the offer prove steps down (a probe
    /// there goes back), and a reclimb far below the wall climbs on one
    /// clean window (issue 30); `false`: robust's older rules (a band
    /// low enough to hold steps down after [`BAND_PATIENCE`] verdicts, a
    /// reclimb pools a full sample).
    pub prove_the_band: bool,
    /// A thin background estimate (under `1 / low` attempts) excuses no
    /// pool failing more than [`THIN_EXCUSE_HIGHS`] × `high`
    /// ([`super::background`]); `false`: robust's rule, where it may
    /// excuse any pool its weak test cannot tell from it.
    pub cap_thin_excuse: bool,
    /// A large breach at least a probe below the highest offer held clean
    /// (since the last breach there) is tested as a burst, as an
    /// unprovoked one is, even right after an Up: the target carried
    /// more, so a wall there is not the likely reading; `false`: robust's
    /// rule, where only an unprovoked breach is tested.
    pub test_breaches_below_held: bool,
    /// On a concurrency knob, a run without a failure that rules out one
    /// worker over a wall ([`GRAIN_ALPHA`]) is a clean verdict, and a
    /// large breach after one is tested as a burst; `false`: robust's
    /// rules, where a clean verdict needs `1 / low` attempts.
    pub worker_grain: bool,
    /// A large breach whose failure share the step from the last offer
    /// judged clean cannot explain (a wall between them fails at most the
    /// step's share of the offer, plus the clean level; significantly more
    /// at [`EVIDENCE_ALPHA`]) is tested as a burst, and a clean verdict
    /// far under the breach that set `last_bad` refutes it (the memory
    /// clears); `false`: only the tests above.
    pub test_unexplained_breaches: bool,
    /// A dead-band verdict that the offer's own counts, all told, call
    /// clean, and that fails no more than the offer's earlier windows (at
    /// [`FOLLOWS_LOAD_ALPHA`]), leaves the clean run standing
    /// ([`ThrottleGovernor::band_is_the_offers_noise`](crate::governor::ThrottleGovernor)):
    /// under a background, such verdicts come by chance now and then (far
    /// more often under an estimate read low) and restarted every wait for
    /// a probe; `false`: robust's rule, where any verdict that is not clean
    /// restarts it.
    pub noise_keeps_the_run: bool,
    /// With a thin background estimate and a wall known, a dead band that
    /// the offer's own counts prove above the clean level, where the offers
    /// just below are too thin to test it, steps down one probe at once,
    /// and the counts it left wait for the excuse through clean verdicts
    /// ([`THIN_BAND_WINDOW_SHARE`]); `false`: the band's patience.
    pub thin_band_proof: bool,
}

impl Tunables {
    /// The `robust` profile: [`MAX_COST_DWELL`] (64).
    pub const ROBUST: Tunables = Tunables {
        max_cost_dwell: MAX_COST_DWELL,
        prove_the_band: false,
        cap_thin_excuse: false,
        test_breaches_below_held: false,
        worker_grain: false,
        test_unexplained_breaches: false,
        noise_keeps_the_run: false,
        thin_band_proof: false,
    };
    /// The `gentle` profile: [`GENTLE_MAX_COST_DWELL`] (192).
    pub const GENTLE: Tunables = Tunables {
        max_cost_dwell: GENTLE_MAX_COST_DWELL,
        prove_the_band: true,
        cap_thin_excuse: true,
        test_breaches_below_held: true,
        worker_grain: true,
        test_unexplained_breaches: true,
        noise_keeps_the_run: true,
        thin_band_proof: true,
    };
}

/// `gentle`: the longest cost dwell, in clean verdicts. At 2 s windows a
/// settled run on a fast-failing wall probes it about once every 384 s
/// instead of every 128 s.
pub const GENTLE_MAX_COST_DWELL: u32 = 192;
