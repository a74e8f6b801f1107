use super::*;

#[test]
fn a_breach_is_decided_early_only_when_certain() {
    // 30 of 40 at high = 5 %: certain.
    assert!(certain_breach(30.0, 40.0, 0.05).is_some());
    // 640 failed of 700 (one user over a 1 ms wall, a second): certain.
    assert!(certain_breach(640.0, 700.0, 0.05).is_some());
    // 4 of 4: too few failures to stand on, whatever the p-value.
    assert!(certain_breach(4.0, 4.0, 0.05).is_none());
    // 3 of 40 (7.5 %): above high, not certain.
    assert!(certain_breach(3.0, 40.0, 0.05).is_none());
}

#[test]
fn a_clean_window_is_never_closed_early() {
    for attempts in [10.0_f64, 100.0, 1_000.0, 100_000.0] {
        for frac in [0.0, 0.005, 0.01, 0.03] {
            let failures: f64 = (attempts * frac).round();
            assert!(
                certain_breach(failures, attempts, 0.05).is_none(),
                "{failures} of {attempts}"
            );
        }
    }
}

#[test]
fn a_noisy_window_at_high_is_not_closed_early() {
    // A window whose true fraction is high: its counts sit at or
    // slightly above 5 % and never settle it, small or large.
    for (f, n) in [
        (5.0, 100.0),
        (6.0, 100.0),
        (55.0, 1_000.0),
        (520.0, 10_000.0),
    ] {
        assert!(certain_breach(f, n, 0.05).is_none(), "{f} of {n}");
    }
    // Over many looks at a true fraction of exactly high, the test
    // fires rarely: simulate the looks of 200 windows at 5 %.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut failed = move || {
        // xorshift64*: a failure with probability 5 %.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        let u = (state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64;
        u < 0.05
    };
    let mut closed = 0;
    for _ in 0..200 {
        let (mut n, mut f) = (0.0, 0.0);
        for _ in 0..PEEKS_PER_WINDOW {
            n += 50.0;
            f += (0..50).filter(|_| failed()).count() as f64;
            if certain_breach(f, n, 0.05).is_some() {
                closed += 1;
                break;
            }
        }
    }
    assert!(closed <= 6, "{closed} of 200 windows at high closed early");
}

#[test]
fn the_same_counts_decide_as_the_point_estimate_at_large_samples() {
    // At 4,000 attempts, 10 % is certain and 5.5 % is not.
    assert!(certain_breach(400.0, 4_000.0, 0.05).is_some());
    assert!(certain_breach(220.0, 4_000.0, 0.05).is_none());
}

#[test]
fn peeks_are_a_48th_of_the_window_and_never_below_50ms() {
    assert_eq!(
        peek_interval(Duration::from_secs(3)),
        Duration::from_micros(62_500)
    );
    assert_eq!(peek_interval(Duration::from_millis(500)), MIN_PEEK);
}
