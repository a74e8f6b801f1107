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
    let LatencyOutcome::Window(Some(q)) = t.observe(0.99, LatencySample::Histogram(slow)) else {
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
