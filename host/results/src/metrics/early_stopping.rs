//! MLPerf early-stopping estimates for tail percentiles, as the reference's
//! `es_percentile_estimate` defines them (LoadGen's SingleStream estimate,
//! confidence 0.99, tolerance 0).
//!
//! With `n` ascending samples and percentile `p`, the estimate is
//! `sorted[n - t]`, the `t`-th highest sample, where `t` is the largest
//! over-latency budget the run can absorb: the largest `t >= 1` with
//! `n >= find_min_passing(t) + t`, `find_min_passing(t)` being the fewest
//! under-latency samples `h` for which seeing at most `t` samples above the
//! true `p`-percentile among `h + t` has probability below `1 - c`. That
//! probability falls as trials are added, so the condition is
//! `P(Binomial(n, 1 - p) <= t) < 1 - c`, which is what is computed here (the
//! binomial CDF term by term in log space). No estimate when `t = 1` fails:
//! the documented floors, 662 samples for p99 and 64 for p90.

/// Index into the ascending-sorted samples of the estimate, or none when
/// there are too few samples. `p` and `confidence` are fractions.
pub fn early_stopping_index(n: usize, p: f64, confidence: f64) -> Option<usize> {
    let q = 1.0 - p;
    let alpha = 1.0 - confidence;
    if n < 2 || !(q > 0.0 && q < 1.0) || !(alpha > 0.0 && alpha < 1.0) {
        return None;
    }
    // cdf(k) = P(Binomial(n, q) <= k); t is the largest k with cdf(k) < alpha.
    let (ln_q, ln_1q) = (q.ln(), (1.0 - q).ln());
    let mut ln_term = n as f64 * ln_1q; // ln P(X = 0)
    let mut cdf = ln_term.exp();
    let mut t = None;
    for k in 0..n {
        if cdf >= alpha {
            break;
        }
        t = Some(k);
        // P(X = k + 1) from P(X = k).
        ln_term += ((n - k) as f64).ln() - ((k + 1) as f64).ln() + ln_q - ln_1q;
        cdf += ln_term.exp();
    }
    let t = t.filter(|&t| t >= 1)?;
    Some(n - t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented floors: the smallest run that certifies each
    /// percentile at all (`find_min_passing(1) + 1`).
    #[test]
    fn documented_minimum_sample_counts() {
        for (p, floor) in [
            (0.50, 11),
            (0.75, 24),
            (0.80, 31),
            (0.90, 64),
            (0.95, 130),
            (0.97, 219),
            (0.99, 662),
            (0.999, 6_636),
        ] {
            assert_eq!(early_stopping_index(floor - 1, p, 0.99), None, "p{p}");
            // At the floor the budget is one sample: the estimate is the maximum.
            assert_eq!(
                early_stopping_index(floor, p, 0.99),
                Some(floor - 1),
                "p{p}"
            );
        }
    }

    /// Order statistics derived by hand from the definition.
    ///
    /// p50, n = 11: P(X <= 1) = (1 + 11) / 2^11 = 0.00586 < 0.01, and
    /// P(X <= 2) = 67 / 2^11 = 0.0327 >= 0.01, so t = 1 and the estimate is
    /// sorted[10]; at n = 10, P(X <= 1) = 11 / 2^10 = 0.0107: no estimate.
    ///
    /// p50, n = 20 (2^20 = 1,048,576): P(X <= 4) = (1 + 20 + 190 + 1140 +
    /// 4845) / 2^20 = 6196 / 2^20 = 0.00591 < 0.01 and P(X <= 5) = (6196 +
    /// 15504) / 2^20 = 0.0207, so t = 4: sorted[16] (the plain median is
    /// sorted[9]).
    ///
    /// p90, n = 64: P(X <= 1) = 0.9^64 + 64 * 0.1 * 0.9^63 = 7.3 * 0.9^63 =
    /// 0.00956 < 0.01, P(X <= 2) = 0.9^62 * (0.81 + 6.4 * 0.9 + 20.16) =
    /// 0.0388: t = 1, sorted[63]; at n = 63, 7.2 * 0.9^62 = 0.01047: none.
    #[test]
    fn hand_derived_order_statistics() {
        assert_eq!(early_stopping_index(11, 0.50, 0.99), Some(10));
        assert_eq!(early_stopping_index(10, 0.50, 0.99), None);
        assert_eq!(early_stopping_index(20, 0.50, 0.99), Some(16));
        assert_eq!(early_stopping_index(64, 0.90, 0.99), Some(63));
        assert_eq!(early_stopping_index(63, 0.90, 0.99), None);
    }

    /// The edge run's 1,007 turns: the indices the reference picks, one
    /// order statistic above the ones agentload used to report.
    #[test]
    fn edge_run_indices() {
        let at = |p| early_stopping_index(1007, p, 0.99);
        assert_eq!(at(0.999), None);
        assert_eq!(at(0.99), Some(1004));
        assert_eq!(at(0.97), Some(990));
        assert_eq!(at(0.95), Some(973));
        assert_eq!(at(0.90), Some(929));
        assert_eq!(at(0.80), Some(836));
        assert_eq!(at(0.75), Some(788));
        assert_eq!(at(0.50), Some(541));
    }

    #[test]
    fn estimate_is_never_below_the_plain_percentile() {
        for n in [11, 64, 100, 662, 1007, 5000] {
            for p in [0.5, 0.75, 0.9, 0.95, 0.99] {
                if let Some(idx) = early_stopping_index(n, p, 0.99) {
                    let plain = (p * (n - 1) as f64).floor() as usize;
                    assert!(idx >= plain && idx < n, "n {n} p {p}: {idx} vs {plain}");
                }
            }
        }
    }

    #[test]
    fn degenerate_inputs_give_no_estimate() {
        assert_eq!(early_stopping_index(0, 0.99, 0.99), None);
        assert_eq!(early_stopping_index(1, 0.5, 0.99), None);
        assert_eq!(early_stopping_index(1000, 1.0, 0.99), None);
        assert_eq!(early_stopping_index(1000, 0.9, 1.0), None);
        assert_eq!(early_stopping_index(1000, f64::NAN, 0.99), None);
    }
}
