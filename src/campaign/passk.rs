//! pass^k: the chance that k independent runs all pass. From n runs of which c passed, the
//! unbiased estimate is C(c, k) / C(n, k) — the chance that k runs drawn without replacement
//! from the n all passed — as tau-bench computes it. pass^1 is the plain pass rate.

/// C(c, k) / C(n, k), or `None` when k is 0 or more than n.
pub fn pass_hat(n: usize, c: usize, k: usize) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    // A product of k ratios stays in range where the binomials themselves would not.
    let mut p = 1.0;
    for i in 0..k {
        if c < i + 1 {
            return Some(0.0);
        }
        p *= (c - i) as f64 / (n - i) as f64;
    }
    Some(p)
}

/// pass^1 … pass^max_k (at most n), in order.
pub fn table(n: usize, c: usize, max_k: usize) -> Vec<(usize, f64)> {
    (1..=max_k.min(n))
        .filter_map(|k| pass_hat(n, c, k).map(|p| (k, p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_binomial_ratio() {
        // 20 runs, 15 passed: pass^1 = 0.75, pass^2 = (15·14)/(20·19), pass^4 = C(15,4)/C(20,4).
        assert_eq!(pass_hat(20, 15, 1), Some(0.75));
        let p2 = pass_hat(20, 15, 2).expect("k=2");
        assert!((p2 - 210.0 / 380.0).abs() < 1e-12);
        let p4 = pass_hat(20, 15, 4).expect("k=4");
        assert!((p4 - 1365.0 / 4845.0).abs() < 1e-12);
        // More passes needed than there are: zero; every run passed: one.
        assert_eq!(pass_hat(5, 2, 3), Some(0.0));
        assert_eq!(pass_hat(5, 5, 5), Some(1.0));
        assert_eq!(pass_hat(5, 5, 6), None);
        assert_eq!(pass_hat(5, 5, 0), None);
        assert_eq!(table(3, 2, 8).len(), 3);
    }
}
