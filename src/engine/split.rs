//! The split of a group's offer across its instances (pure).
//!
//! Why it exists: a group decides once and must hand each instance a share
//! that respects the instance's weight and its ceiling share, in whole
//! numbers for integer knobs, without losing or inventing load.

/// Splits `offer` across members by `weights`, each capped at its `caps`
/// entry; what a capped member cannot take goes to the others by weight.
/// Integer knobs get whole numbers: the floor of each share, then one more
/// to the largest fractional parts (ties: the earlier member) while caps
/// allow. The shares sum to `min(offer, sum of caps)`.
pub fn split(offer: f64, weights: &[f64], caps: &[f64], integer: bool) -> Vec<f64> {
    let n = weights.len();
    let mut alloc = vec![0.0; n];
    let eligible = |i: usize| weights[i] > 0.0 && caps[i] > 0.0;
    if offer.is_infinite() && offer > 0.0 {
        return (0..n)
            .map(|i| if eligible(i) { f64::INFINITY } else { 0.0 })
            .collect();
    }
    if n == 0 || offer.is_nan() || offer <= 0.0 {
        return alloc;
    }
    let mut active: Vec<usize> = (0..n).filter(|&i| eligible(i)).collect();
    let mut remaining = offer;
    while !active.is_empty() && remaining > 0.0 {
        let total: f64 = active.iter().map(|&i| weights[i]).sum();
        let capped: Vec<usize> = active
            .iter()
            .copied()
            .filter(|&i| remaining * weights[i] / total >= caps[i])
            .collect();
        if capped.is_empty() {
            for &i in &active {
                alloc[i] = remaining * weights[i] / total;
            }
            break;
        }
        for &i in &capped {
            alloc[i] = caps[i];
            remaining -= caps[i];
        }
        active.retain(|i| !capped.contains(i));
    }
    if !integer {
        return alloc;
    }
    let placed: f64 = alloc.iter().sum();
    let total = (placed + 1e-9).floor();
    let mut shares: Vec<f64> = alloc.iter().map(|a| (a + 1e-9).floor()).collect();
    let mut left = total - shares.iter().sum::<f64>();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        let fa = alloc[a] - shares[a];
        let fb = alloc[b] - shares[b];
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    for i in order {
        if left < 0.5 {
            break;
        }
        if eligible(i) && shares[i] + 1.0 <= caps[i] + 1e-9 {
            shares[i] += 1.0;
            left -= 1.0;
        }
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(v: &[f64]) -> f64 {
        v.iter().sum()
    }

    #[test]
    fn even_split_gives_the_remainder_to_the_first() {
        let inf = [f64::INFINITY; 3];
        assert_eq!(split(10.0, &[1.0; 3], &inf, true), vec![4.0, 3.0, 3.0]);
        assert_eq!(split(2.0, &[1.0; 3], &inf, true), vec![1.0, 1.0, 0.0]);
        assert_eq!(split(9.0, &[1.0; 3], &inf, true), vec![3.0, 3.0, 3.0]);
        let r = split(10.0, &[1.0; 3], &inf, false);
        assert!(r.iter().all(|s| (s - 10.0 / 3.0).abs() < 1e-12), "{r:?}");
    }

    #[test]
    fn weights_shape_the_split() {
        let inf = [f64::INFINITY; 3];
        assert_eq!(
            split(90.0, &[2.0, 3.0, 4.0], &inf, true),
            vec![20.0, 30.0, 40.0]
        );
        // 100 * (2/9, 3/9, 4/9) = 22.2, 33.3, 44.4: 99 placed, one to the largest fraction.
        assert_eq!(
            split(100.0, &[2.0, 3.0, 4.0], &inf, true),
            vec![22.0, 33.0, 45.0]
        );
    }

    #[test]
    fn capped_shares_spill_to_the_others() {
        // Caps 10, 100, 100: the first takes 10, the rest split 140.
        assert_eq!(
            split(150.0, &[1.0; 3], &[10.0, 100.0, 100.0], true),
            vec![10.0, 70.0, 70.0]
        );
        // More than all caps: each gets its cap, the rest is not placed.
        assert_eq!(
            split(500.0, &[1.0; 2], &[30.0, 40.0], true),
            vec![30.0, 40.0]
        );
        // Rates are not rounded.
        assert_eq!(split(3.0, &[1.0, 1.0], &[0.5, 10.0], false), vec![0.5, 2.5]);
    }

    #[test]
    fn split_invariants_hold_over_many_inputs() {
        let mut seed = 7u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for _ in 0..2000 {
            let n = 1 + next(6) as usize;
            let weights: Vec<f64> = (0..n).map(|_| 1.0 + next(5) as f64).collect();
            let caps: Vec<f64> = (0..n).map(|_| next(60) as f64).collect();
            let offer = next(250) as f64;
            for integer in [true, false] {
                let s = split(offer, &weights, &caps, integer);
                let want = offer.min(sum(&caps));
                assert!(
                    (sum(&s) - want).abs() < 1e-6,
                    "{offer} {weights:?} {caps:?} {s:?}"
                );
                for (i, v) in s.iter().enumerate() {
                    assert!(*v >= 0.0 && *v <= caps[i] + 1e-9, "{s:?} caps {caps:?}");
                    if integer {
                        assert_eq!(v.fract(), 0.0, "{s:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn unbounded_rate_ceilings_stay_unbounded() {
        let s = split(f64::INFINITY, &[1.0, 0.0], &[f64::INFINITY; 2], false);
        assert_eq!(s, vec![f64::INFINITY, 0.0]);
    }
}
