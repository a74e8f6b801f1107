//! Criterion benches of the per-window hot path: the governor's decision
//! (both profiles), the counter-window maths and the live capacity
//! estimate (recomputed once per window over a target's last 64 windows).
//!
//! Why: one controller process governs many targets, so the cost of one
//! window must stay far below the window length. Run with
//! `CARGO_TARGET_DIR=... cargo bench --bench governor`; the figures are
//! published in docs/BENCHMARKS.md.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

use throttle_governor::governor::{decide, Control, Params, Profile, ThrottleGovernor};
use throttle_governor::report::live::LiveCapacity;
use throttle_governor::report::SteadyRule;
use throttle_governor::telemetry::WindowRecord;
use throttle_governor::window::{Reading, WindowTracker};

/// Windows that walk the governor through every branch: slow start, a
/// breach, the dead band, probes, thin windows.
const WINDOWS: [(f64, f64); 16] = [
    (100.0, 0.0),
    (200.0, 0.0),
    (400.0, 0.0),
    (800.0, 400.0),
    (400.0, 0.0),
    (600.0, 0.0),
    (650.0, 20.0),
    (650.0, 0.0),
    (660.0, 0.0),
    (670.0, 50.0),
    (30.0, 2.0),
    (30.0, 0.0),
    (30.0, 1.0),
    (30.0, 0.0),
    (0.0, 0.0),
    (700.0, 0.0),
];

fn params() -> Params {
    Params::new(Control::Concurrency, Some(1000.0), 1.0, None, 0.05, None).unwrap()
}

fn bench_decide(c: &mut Criterion) {
    c.bench_function("decide", |b| {
        b.iter(|| {
            decide(
                black_box(0.03),
                black_box(120.0),
                0.05,
                0.01,
                1.0,
                1000.0,
                black_box(Some(130.0)),
            )
        })
    });
}

fn bench_step(c: &mut Criterion) {
    for profile in [Profile::Seed, Profile::Robust] {
        let name = format!("step/{profile}");
        c.bench_function(&name, |b| {
            b.iter_batched_ref(
                || ThrottleGovernor::with_profile(params(), profile),
                |g| {
                    for (n, f) in WINDOWS {
                        black_box(g.step(black_box(n), black_box(f)));
                    }
                },
                BatchSize::SmallInput,
            )
        });
    }
}

fn bench_window(c: &mut Criterion) {
    c.bench_function("window/observe", |b| {
        b.iter_batched_ref(
            WindowTracker::default,
            |w| {
                let (mut attempts, mut failures) = (0.0, 0.0);
                for (i, (n, f)) in WINDOWS.iter().enumerate() {
                    attempts += n;
                    failures += f;
                    let reading = Reading::resolved(i as f64, attempts, failures);
                    black_box(w.observe(black_box(reading)).unwrap());
                }
            },
            BatchSize::SmallInput,
        )
    });
    c.bench_function("governor/observe", |b| {
        b.iter_batched_ref(
            || ThrottleGovernor::new(params()),
            |g| {
                let (mut attempts, mut failures) = (0.0, 0.0);
                for (i, (n, f)) in WINDOWS.iter().enumerate() {
                    attempts += n;
                    failures += f;
                    let reading = Reading::resolved(i as f64, attempts, failures);
                    black_box(g.observe(black_box(reading)).unwrap());
                }
            },
            BatchSize::SmallInput,
        )
    });
}

/// One window pushed into a live estimate that holds a sawtooth 6..11 over
/// a wall at 10 (the ring full: the steady-state cost).
fn bench_live_capacity(c: &mut Criterion) {
    let record = |i: usize| {
        let o = [8.0, 9.0, 10.0, 11.0, 6.0, 7.0][i % 6];
        let bad = (o - 10.0_f64).max(0.0) * 200.0;
        WindowRecord {
            time_secs: i as f64,
            offer: o,
            attempts: Some(o.min(10.0) * 10.0 + bad),
            failures: Some(bad),
            frac: None,
            window_secs: Some(2.0),
            decision: "up",
            to: o,
            label: "",
            discarded: false,
            unconfirmed: false,
            latency_secs: None,
            latency_drove: false,
            confidence: None,
        }
    };
    let mut live = LiveCapacity::new(SteadyRule::default(), 0.05, None);
    for i in 0..64 {
        live.push(&record(i));
    }
    let mut i = 64;
    c.bench_function("live_capacity/push", |b| {
        b.iter(|| {
            i += 1;
            black_box(live.push(black_box(&record(i))))
        })
    });
}

criterion_group!(
    benches,
    bench_decide,
    bench_step,
    bench_window,
    bench_live_capacity
);
criterion_main!(benches);
