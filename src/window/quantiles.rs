//! Windowed latency quantiles: the second signal of an SLO, kept as honest
//! as the first.
//!
//! Why it exists: a target that queues answers every request, only slower,
//! so the attempt plane stays clean until clients time out. A latency bound
//! (`[targets.latency]`) catches it, but only if the quantile belongs to the
//! same window as the failure fraction. A lifetime p99 would hide a queue
//! forming now behind minutes of fast answers, just as a lifetime success
//! rate hides rejections. So, like [`super::counters`], this module turns two
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
//! governor does not climb on it (see the governor's latency bound,
//! `governor::latency_bound`).

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
    pub(crate) fn sparse(
        pairs: impl IntoIterator<Item = (f64, f64)>,
    ) -> Result<Self, HistogramError> {
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
mod tests;
