//! Windowed latency quantiles: the second signal of an SLO, kept as honest
//! as the first.
//!
//! Why it exists: a target that queues answers every request, only slower,
//! so the attempt plane stays clean until clients time out. A latency bound
//! (`[targets.latency]`) catches it, but only if the quantile belongs to the
//! same window as the failure fraction. A lifetime p99 would hide a queue
//! forming now behind minutes of fast answers, just as a lifetime success
//! rate hides rejections. So, like [`crate::window`], this module turns two
//! cumulative readings into one window, purely (no clock, no I/O):
//!
//! - a **Prometheus histogram** is read as cumulative `_bucket` counters;
//!   the window's quantile is interpolated over the bucket *deltas*, the way
//!   PromQL's `histogram_quantile` does over `rate(..._bucket[w])`;
//! - a source that already gives a windowed quantile (a PromQL expression,
//!   Locust's rolling percentiles) passes its value through.
//!
//! A bucket count that goes down (the tool or target restarted) or a change
//! of the bucket layout rebases, like a counter reset; a window with no
//! observations has no quantile. No quantile is never read as "fast": the
//! governor does not climb on it (see the governor's `latency` module).

/// One cumulative histogram reading: `(le, count)` pairs, sorted by `le`,
/// the last one `+Inf`. Counts are cumulative over buckets (Prometheus
/// `_bucket` semantics) and over time.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Buckets {
    bounds: Vec<(f64, f64)>,
    /// Buckets with no observations may be left out (Goose's response-time
    /// map), so a new bound is not a new layout.
    sparse: bool,
}

/// Why a histogram reading cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HistogramError {
    /// No `le="+Inf"` bucket: the total count is unknown.
    #[error("the histogram has no le=\"+Inf\" bucket")]
    NoInfBucket,
    /// Fewer than two buckets: nothing to interpolate over.
    #[error("the histogram has fewer than two buckets")]
    TooFewBuckets,
    /// A bound or count is NaN, negative or infinite where it must not be.
    #[error("bucket le={le} has an invalid count {count}")]
    BadCount {
        /// The bucket's upper bound.
        le: f64,
        /// The count read.
        count: f64,
    },
    /// A latency bucket with a negative bound: no latency is below 0 s.
    #[error("bucket le={0} has a negative bound; a latency histogram's bounds are >= 0")]
    NegativeBound(f64),
    /// Cumulative counts that go down as `le` grows: not a histogram.
    #[error(
        "bucket le={le} counts {count}, fewer than the {below} of a lower bucket; \
         _bucket counts must not decrease as le grows"
    )]
    NotMonotonic {
        /// The bucket's upper bound.
        le: f64,
        /// Its count.
        count: f64,
        /// The larger count of a lower bucket.
        below: f64,
    },
}

impl Buckets {
    /// Builds a reading from `(le, count)` pairs in any order. Pairs with the
    /// same `le` are summed (a histogram split over several series, such as
    /// one per route, adds up to one). Refused: a NaN, infinite or negative
    /// count, a NaN or negative bound, no `+Inf` bucket, and counts that
    /// decrease as `le` grows; each is a latency signal error, never a
    /// latency value.
    pub fn new(pairs: impl IntoIterator<Item = (f64, f64)>) -> Result<Self, HistogramError> {
        let mut v: Vec<(f64, f64)> = Vec::new();
        for (le, count) in pairs {
            if le.is_nan() || !count.is_finite() || count < 0.0 {
                return Err(HistogramError::BadCount { le, count });
            }
            if le < 0.0 {
                return Err(HistogramError::NegativeBound(le));
            }
            match v.iter_mut().find(|(l, _)| *l == le) {
                Some(slot) => slot.1 += count,
                None => v.push((le, count)),
            }
        }
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        if v.last().is_none_or(|(le, _)| *le != f64::INFINITY) {
            return Err(HistogramError::NoInfBucket);
        }
        if v.len() < 2 {
            return Err(HistogramError::TooFewBuckets);
        }
        // A reading whose counts go down as le grows is not a histogram
        // (issue 27: it gave a p99 of 0.005 s and drove climbs). Torn
        // readings are not forgiven here: one scrape is one snapshot.
        for w in v.windows(2) {
            if w[1].1 < w[0].1 {
                return Err(HistogramError::NotMonotonic {
                    le: w[1].0,
                    count: w[1].1,
                    below: w[0].1,
                });
            }
        }
        Ok(Buckets {
            bounds: v,
            sparse: false,
        })
    }

    /// [`Self::new`] for a histogram that lists only the buckets holding
    /// observations: a bound missing from one reading has the cumulative
    /// count of the highest bound below it, so readings with different
    /// bounds still subtract.
    pub fn sparse(pairs: impl IntoIterator<Item = (f64, f64)>) -> Result<Self, HistogramError> {
        let mut b = Self::new(pairs)?;
        b.sparse = true;
        Ok(b)
    }

    /// The cumulative count at `le` of a sparse reading.
    fn cum_at(&self, le: f64) -> f64 {
        self.bounds
            .iter()
            .take_while(|(l, _)| *l <= le)
            .last()
            .map_or(0.0, |b| b.1)
    }

    /// The `(le, cumulative count)` pairs, sorted by `le`.
    pub fn pairs(&self) -> &[(f64, f64)] {
        &self.bounds
    }

    /// Observations counted (the `+Inf` bucket).
    pub fn total(&self) -> f64 {
        self.bounds.last().map_or(0.0, |b| b.1)
    }

    /// This reading minus an earlier one, bucket by bucket; `None` when the
    /// layouts differ or any count went down (a reset).
    pub fn since(&self, earlier: &Buckets) -> Option<Buckets> {
        if self.sparse && earlier.sparse {
            let mut les: Vec<f64> = self
                .bounds
                .iter()
                .chain(&earlier.bounds)
                .map(|b| b.0)
                .collect();
            les.sort_by(f64::total_cmp);
            les.dedup();
            let mut out = Vec::with_capacity(les.len());
            for le in les {
                let d = self.cum_at(le) - earlier.cum_at(le);
                if d < 0.0 {
                    return None;
                }
                out.push((le, d));
            }
            return Some(Buckets {
                bounds: out,
                sparse: true,
            });
        }
        if self.bounds.len() != earlier.bounds.len() {
            return None;
        }
        let mut out = Vec::with_capacity(self.bounds.len());
        for (&(le, now), &(le0, then)) in self.bounds.iter().zip(&earlier.bounds) {
            if le != le0 || now < then {
                return None;
            }
            out.push((le, now - then));
        }
        Some(Buckets {
            bounds: out,
            sparse: false,
        })
    }

    /// The `q` quantile, interpolated linearly within its bucket as PromQL's
    /// `histogram_quantile` does: the lowest bucket starts at 0 (when its
    /// bound is positive), and a rank that falls in the `+Inf` bucket gives
    /// the highest finite bound. `None` without observations. Counts that
    /// are not monotonic over buckets (a scrape torn between series) are
    /// raised to their running maximum first, as Prometheus does.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.total();
        if total <= 0.0 || q.is_nan() {
            return None;
        }
        let q = q.clamp(0.0, 1.0);
        let mut cum = Vec::with_capacity(self.bounds.len());
        let mut max = 0.0_f64;
        for &(le, c) in &self.bounds {
            max = max.max(c);
            cum.push((le, max));
        }
        let total = max;
        let rank = q * total;
        let i = cum.iter().position(|&(_, c)| c >= rank)?;
        let n = cum.len();
        if i == n - 1 {
            // In the +Inf bucket: the highest finite bound is all we know.
            return Some(cum[n - 2].0);
        }
        let (end, count) = cum[i];
        let (start, below) = if i == 0 {
            (if end > 0.0 { 0.0 } else { end }, 0.0)
        } else {
            cum[i - 1]
        };
        if i == 0 && end <= 0.0 {
            return Some(end);
        }
        let in_bucket = count - below;
        if in_bucket <= 0.0 {
            return Some(end);
        }
        Some(start + (end - start) * ((rank - below) / in_bucket))
    }
}

/// One read of a latency source.
#[derive(Debug, Clone, PartialEq)]
pub enum LatencySample {
    /// Cumulative histogram buckets: the window comes from deltas.
    Histogram(Buckets),
    /// A quantile the source already computed over (about) the window, in
    /// seconds; `None` when the source had no observations.
    Quantile(Option<f64>),
}

/// What one latency reading gave, next to the counter window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LatencyOutcome {
    /// The first histogram reading only sets the baseline.
    Baseline,
    /// A bucket went down or the layout changed: rebased, no quantile.
    Reset,
    /// The window's quantile in seconds (`None`: no observations).
    Window(Option<f64>),
}

/// Turns latency readings into windowed quantiles (one per member).
#[derive(Debug, Clone, Default)]
pub struct LatencyTracker {
    last: Option<Buckets>,
}

impl LatencyTracker {
    /// Folds one reading and returns the `q` quantile over the window since
    /// the previous one.
    pub fn observe(&mut self, q: f64, sample: LatencySample) -> LatencyOutcome {
        match sample {
            LatencySample::Quantile(v) => {
                self.last = None;
                LatencyOutcome::Window(v.filter(|v| v.is_finite() && *v >= 0.0))
            }
            LatencySample::Histogram(now) => {
                let delta = self.last.as_ref().map(|then| now.since(then));
                self.last = Some(now);
                match delta {
                    None => LatencyOutcome::Baseline,
                    Some(None) => LatencyOutcome::Reset,
                    Some(Some(d)) => LatencyOutcome::Window(d.quantile(q)),
                }
            }
        }
    }

    /// Forgets the baseline (the member's counters rebased too).
    pub fn reset(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(pairs: &[(f64, f64)]) -> Buckets {
        Buckets::new(pairs.iter().copied()).unwrap()
    }

    const INF: f64 = f64::INFINITY;

    #[test]
    fn quantile_interpolates_within_the_bucket_like_histogram_quantile() {
        // 100 observations: 50 in (0, 0.1], 40 in (0.1, 0.2], 10 in (0.2, 0.4].
        let h = b(&[(0.1, 50.0), (0.2, 90.0), (0.4, 100.0), (INF, 100.0)]);
        // rank 50 -> end of the first bucket.
        assert!((h.quantile(0.5).unwrap() - 0.1).abs() < 1e-12);
        // rank 25 -> halfway through (0, 0.1].
        assert!((h.quantile(0.25).unwrap() - 0.05).abs() < 1e-12);
        // rank 70 -> 0.1 + 0.1 * 20/40.
        assert!((h.quantile(0.7).unwrap() - 0.15).abs() < 1e-12);
        // rank 99 -> 0.2 + 0.2 * 9/10.
        assert!((h.quantile(0.99).unwrap() - 0.38).abs() < 1e-12);
        assert_eq!(h.quantile(1.0), Some(0.4));
    }

    #[test]
    fn a_rank_in_the_inf_bucket_gives_the_highest_finite_bound() {
        let h = b(&[(0.1, 10.0), (0.5, 20.0), (INF, 100.0)]);
        assert_eq!(h.quantile(0.99), Some(0.5));
    }

    #[test]
    fn an_empty_window_has_no_quantile() {
        let h = b(&[(0.1, 0.0), (INF, 0.0)]);
        assert_eq!(h.quantile(0.99), None);
    }

    #[test]
    fn series_with_the_same_bound_add_up_and_order_does_not_matter() {
        let h = Buckets::new([(INF, 4.0), (0.1, 1.0), (0.1, 2.0), (INF, 6.0)]).unwrap();
        assert_eq!(h.pairs(), &[(0.1, 3.0), (INF, 10.0)]);
    }

    #[test]
    fn bad_layouts_are_refused() {
        assert_eq!(
            Buckets::new([(0.1, 1.0)]).unwrap_err(),
            HistogramError::NoInfBucket
        );
        assert_eq!(
            Buckets::new([(INF, 1.0)]).unwrap_err(),
            HistogramError::TooFewBuckets
        );
        assert!(matches!(
            Buckets::new([(0.1, -1.0), (INF, 1.0)]),
            Err(HistogramError::BadCount { .. })
        ));
        assert!(matches!(
            Buckets::new([(0.1, f64::NAN), (INF, 1.0)]),
            Err(HistogramError::BadCount { .. })
        ));
    }

    #[test]
    fn non_monotonic_buckets_are_raised_to_their_running_maximum() {
        // A window whose 0.2 bucket gained less than the 0.1 bucket (each
        // reading is monotonic; a reading that is not is refused).
        let then = b(&[(0.1, 0.0), (0.2, 20.0), (0.4, 20.0), (INF, 20.0)]);
        let now = b(&[(0.1, 60.0), (0.2, 70.0), (0.4, 120.0), (INF, 120.0)]);
        let h = now.since(&then).unwrap();
        assert_eq!(h.pairs()[1], (0.2, 50.0));
        let q = h.quantile(0.5).unwrap();
        assert!((0.0..=0.1).contains(&q), "{q}");
    }

    #[test]
    fn the_tracker_windows_deltas_and_never_lifetime_totals() {
        let mut t = LatencyTracker::default();
        // A long fast history: 10,000 observations under 0.1 s.
        let first = b(&[(0.1, 10_000.0), (1.0, 10_000.0), (INF, 10_000.0)]);
        assert_eq!(
            t.observe(0.99, LatencySample::Histogram(first)),
            LatencyOutcome::Baseline
        );
        // Then a slow window: 100 observations, all in (0.1, 1].
        let slow = b(&[(0.1, 10_000.0), (1.0, 10_100.0), (INF, 10_100.0)]);
        let LatencyOutcome::Window(Some(q)) = t.observe(0.99, LatencySample::Histogram(slow))
        else {
            panic!("expected a window");
        };
        // The lifetime p99 would be under 0.1 s; the window's is near 1 s.
        assert!(q > 0.9, "{q}");
    }

    #[test]
    fn the_tracker_rebases_on_a_reset_and_on_a_new_layout() {
        let mut t = LatencyTracker::default();
        let a = b(&[(0.1, 50.0), (INF, 60.0)]);
        t.observe(0.5, LatencySample::Histogram(a));
        let restarted = b(&[(0.1, 5.0), (INF, 6.0)]);
        assert_eq!(
            t.observe(0.5, LatencySample::Histogram(restarted)),
            LatencyOutcome::Reset
        );
        // The next window is taken from the rebased reading.
        let next = b(&[(0.1, 15.0), (INF, 16.0)]);
        let LatencyOutcome::Window(Some(q)) = t.observe(0.5, LatencySample::Histogram(next)) else {
            panic!("expected a window");
        };
        assert!((q - 0.05).abs() < 1e-12, "{q}");
        let relaid = b(&[(0.1, 15.0), (0.2, 16.0), (INF, 16.0)]);
        assert_eq!(
            t.observe(0.5, LatencySample::Histogram(relaid)),
            LatencyOutcome::Reset
        );
    }

    #[test]
    fn sparse_readings_with_new_bounds_still_subtract() {
        let s = |p: &[(f64, f64)]| Buckets::sparse(p.iter().copied()).unwrap();
        let r1 = s(&[(0.1, 10.0), (INF, 10.0)]);
        // A slower bucket appears: 10 observations in (0.1, 0.5].
        let r2 = s(&[(0.1, 10.0), (0.5, 20.0), (INF, 20.0)]);
        let d = r2.since(&r1).unwrap();
        assert_eq!(d.total(), 10.0);
        assert!(d.quantile(0.5).unwrap() > 0.1);
        // A count that went down is still a reset.
        let r3 = s(&[(0.1, 2.0), (INF, 2.0)]);
        assert_eq!(r3.since(&r2), None);
        // Dense readings keep the strict layout rule.
        assert_eq!(
            b(&[(0.1, 1.0), (0.5, 2.0), (INF, 2.0)]).since(&b(&[(0.1, 1.0), (INF, 1.0)])),
            None
        );
    }

    #[test]
    fn an_idle_window_has_no_quantile() {
        let mut t = LatencyTracker::default();
        let a = b(&[(0.1, 50.0), (INF, 60.0)]);
        t.observe(0.99, LatencySample::Histogram(a.clone()));
        assert_eq!(
            t.observe(0.99, LatencySample::Histogram(a)),
            LatencyOutcome::Window(None)
        );
    }

    #[test]
    fn a_computed_quantile_passes_through_and_garbage_reads_as_none() {
        let mut t = LatencyTracker::default();
        assert_eq!(
            t.observe(0.99, LatencySample::Quantile(Some(0.25))),
            LatencyOutcome::Window(Some(0.25))
        );
        for bad in [f64::NAN, -1.0, f64::INFINITY] {
            assert_eq!(
                t.observe(0.99, LatencySample::Quantile(Some(bad))),
                LatencyOutcome::Window(None)
            );
        }
    }

    /// Issue 27 #4: invalid histograms are errors, never a latency. Each of
    /// these was accepted by the old `Buckets::new` (p99 0.005 s, -1 s).
    #[test]
    fn invalid_histograms_are_refused() {
        let decreasing = Buckets::new([(0.005, 100.0), (0.1, 10.0), (INF, 10.0)]);
        assert!(
            matches!(decreasing, Err(HistogramError::NotMonotonic { le, .. }) if le == 0.1),
            "{decreasing:?}"
        );
        let inf_below = Buckets::new([(0.1, 5.0), (0.5, 8.0), (INF, 7.0)]);
        assert!(matches!(
            inf_below,
            Err(HistogramError::NotMonotonic { .. })
        ));
        let negative = Buckets::new([(-1.0, 10.0), (0.1, 10.0), (INF, 10.0)]);
        assert_eq!(negative, Err(HistogramError::NegativeBound(-1.0)));
        for nan in [
            Buckets::new([(0.1, f64::NAN), (INF, 1.0)]),
            Buckets::new([(f64::NAN, 1.0), (INF, 1.0)]),
            Buckets::new([(0.1, 1.0), (INF, f64::NAN)]),
        ] {
            assert!(
                matches!(nan, Err(HistogramError::BadCount { .. })),
                "{nan:?}"
            );
        }
        // A valid one still reads.
        assert!(Buckets::new([(0.0, 0.0), (0.1, 1.0), (INF, 1.0)]).is_ok());
    }
}
