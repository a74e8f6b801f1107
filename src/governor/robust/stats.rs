//! The statistics the robust layer's verdicts rest on: the exact
//! binomial upper tail and the one-sided tests built on it.
//!
//! Why it exists: the pool's verdicts ([`super::evidence`]), the
//! background's clean rule ([`super::background`]) and the dead-band proof
//! ([`super::probe`]) all ask one question of counts, "is the failure
//! probability above this level, at this significance?"; it is a leaf, so
//! each of them can ask without importing the others.
//!
//! What it may touch: nothing; pure functions of counts.

use super::tunables::{EVIDENCE_ALPHA, GRAIN_ALPHA};

/// `ln(n!)`: exact below 20, else Stirling's series (error below 1e-12).
pub(super) fn ln_factorial(n: f64) -> f64 {
    if n < 20.0 {
        let mut acc = 0.0;
        let mut k = 2.0;
        while k <= n {
            acc += f64::ln(k);
            k += 1.0;
        }
        return acc;
    }
    let (x2, x3) = (n * n, n * n * n);
    n * n.ln() - n + 0.5 * (2.0 * std::f64::consts::PI * n).ln() + 1.0 / (12.0 * n)
        - 1.0 / (360.0 * x3)
        + 1.0 / (1260.0 * x3 * x2)
}

/// `P(X >= failures)` for `X ~ Binomial(attempts, p)`: the exact upper tail.
///
/// The sum starts at the probability mass at `failures` and walks away from
/// the mean (up for the tail, or down for its complement when `failures` is
/// below the mean) until the terms vanish, so its cost grows with the
/// spread of the distribution, not with the number of failures. Counts are
/// rounded to whole numbers; `p` must lie in (0, 1).
pub fn binomial_tail(failures: f64, attempts: f64, p: f64) -> f64 {
    let n = attempts.round().max(0.0);
    let f = failures.round().clamp(0.0, n);
    if f <= 0.0 {
        return 1.0;
    }
    let ratio = p / (1.0 - p);
    let ln_pmf = |k: f64| {
        ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
            + k * p.ln()
            + (n - k) * (1.0 - p).ln()
    };
    if f > n * p {
        // Σ_{k >= f} pmf(k), decreasing from k = f.
        let (mut k, mut term, mut sum) = (f, ln_pmf(f).exp(), 0.0);
        while term > 0.0 && term >= sum * 1e-17 {
            sum += term;
            if k >= n {
                break;
            }
            term *= (n - k) / (k + 1.0) * ratio;
            k += 1.0;
        }
        sum.min(1.0)
    } else {
        // 1 - Σ_{k < f} pmf(k), decreasing from k = f - 1.
        let (mut k, mut term, mut sum) = (f - 1.0, ln_pmf(f - 1.0).exp(), 0.0);
        while term > 0.0 && term >= sum * 1e-17 {
            sum += term;
            if k <= 0.0 {
                break;
            }
            term *= k / (n - k + 1.0) / ratio;
            k -= 1.0;
        }
        (1.0 - sum).max(0.0)
    }
}

/// Whether `failures` of `attempts` show, at significance
/// [`EVIDENCE_ALPHA`], a failure probability above `high` (a one-sided
/// exact binomial test).
pub(super) fn significant_breach(failures: f64, attempts: f64, high: f64) -> bool {
    significantly_above(failures, attempts, high)
}

/// Whether `failures` of `attempts` show, at significance
/// [`EVIDENCE_ALPHA`], a failure probability above `level`.
pub(super) fn significantly_above(failures: f64, attempts: f64, level: f64) -> bool {
    significantly_above_at(failures, attempts, level, EVIDENCE_ALPHA)
}

/// Whether `failures` of `attempts` show, at significance `alpha`, a
/// failure probability above `level` (`level` 0: any failure does).
pub(super) fn significantly_above_at(failures: f64, attempts: f64, level: f64, alpha: f64) -> bool {
    if attempts <= 0.0 || failures / attempts <= level {
        return false;
    }
    level <= 0.0 || binomial_tail(failures, attempts, level) <= alpha
}

/// Whether `failures` of `attempts` fail significantly (at `alpha`) more
/// often than `ref_failures` of `ref_attempts`: the conditional test of
/// two Poisson counts. Given all the failures, the number that fell among
/// the first attempts is `Binomial(all failures, attempts / all attempts)`
/// when both fail alike; the test asks how likely at least `failures` is.
/// It weighs the reference's own sample: 0 failures in 30 attempts prove
/// far less than 0 in 3,000.
pub(super) fn significantly_more_than(
    failures: f64,
    attempts: f64,
    ref_failures: f64,
    ref_attempts: f64,
    alpha: f64,
) -> bool {
    if attempts <= 0.0 || ref_attempts <= 0.0 || failures / attempts <= ref_failures / ref_attempts
    {
        return false;
    }
    let share = attempts / (attempts + ref_attempts);
    binomial_tail(failures, failures + ref_failures, share) <= alpha
}

/// Whether `attempts` without a failure, at `offer` workers, rule out (at
/// [`GRAIN_ALPHA`]) that one worker of them is over a rejecting wall: that
/// worker would make one in `offer` of the attempts and fail each, so none
/// failing has probability `(1 - 1 / offer)^attempts`. About `3 offer`
/// attempts; 1 at one worker, whose wall would fail everything.
pub(super) fn one_worker_ruled_out(attempts: f64, offer: f64) -> bool {
    if attempts < 1.0 {
        return false;
    }
    offer <= 1.0 || attempts * (1.0 - 1.0 / offer).ln() <= GRAIN_ALPHA.ln()
}
