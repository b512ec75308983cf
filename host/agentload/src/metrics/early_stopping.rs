//! MLPerf early-stopping estimates for latency percentiles.
//!
//! With `n` samples, the estimate for percentile `p` at confidence `c` is the
//! order statistic with `h` samples above it, where `h` is the largest count
//! such that seeing at most `h` samples above the true percentile has
//! probability at most `1 - c` (Binomial(n, 1 - p)). The reference reports no
//! estimate unless `h >= 1`; that reproduces its documented minimum sample
//! counts (662 for p99, 64 for p90 at c = 0.99, tolerance 0).

/// Index into the ascending-sorted samples of the estimate, or none when
/// there are too few samples.
pub fn early_stopping_index(n: usize, p: f64, confidence: f64) -> Option<usize> {
    let q = 1.0 - p;
    let alpha = 1.0 - confidence;
    if n == 0 || q <= 0.0 {
        return None;
    }
    // Binomial(n, q) CDF, summed in log space term by term.
    let (ln_q, ln_1q) = (q.ln(), (1.0 - q).ln());
    let mut ln_term = n as f64 * ln_1q; // P(X = 0)
    let mut cdf = ln_term.exp();
    let mut h = None;
    for k in 0..n {
        if cdf > alpha {
            break;
        }
        h = Some(k);
        // P(X = k + 1) from P(X = k).
        ln_term += ((n - k) as f64).ln() - ((k + 1) as f64).ln() + ln_q - ln_1q;
        cdf += ln_term.exp();
    }
    let h = h.filter(|&h| h >= 1)?;
    Some(n - 1 - h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_minimum_sample_counts() {
        assert_eq!(early_stopping_index(661, 0.99, 0.99), None);
        assert!(early_stopping_index(662, 0.99, 0.99).is_some());
        assert_eq!(early_stopping_index(63, 0.90, 0.99), None);
        assert!(early_stopping_index(64, 0.90, 0.99).is_some());
    }

    #[test]
    fn estimate_is_above_the_plain_percentile() {
        let n = 1007;
        let idx = early_stopping_index(n, 0.90, 0.99).unwrap();
        let plain = ((0.90 * (n - 1) as f64).floor()) as usize;
        assert!(idx > plain && idx < n, "{idx} vs {plain}");
    }
}
