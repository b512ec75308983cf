//! Summary statistics of one per-request quantity (f64, signed), for the
//! sweep's per-phase numbers and the server-timings check.

use serde::{Deserialize, Serialize};

/// Percentiles of one per-request quantity.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Spread {
    pub n: usize,
    pub p25: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub mean: f64,
}

impl Spread {
    /// "Lower" percentiles (`sorted[floor(p·(n−1))]`), as everywhere in agentload.
    pub fn of(mut values: Vec<f64>) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let at = |p: f64| values[((p / 100.0) * (values.len() - 1) as f64).floor() as usize];
        Some(Self {
            n: values.len(),
            p25: at(25.0),
            p50: at(50.0),
            p90: at(90.0),
            p99: at(99.0),
            mean: values.iter().sum::<f64>() / values.len() as f64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_use_lower_percentiles() {
        let s = Spread::of((1..=100).map(f64::from).collect()).unwrap();
        assert_eq!((s.p25, s.p50, s.p90, s.p99), (25.0, 50.0, 90.0, 99.0));
        assert_eq!(s.mean, 50.5);
        assert!(Spread::of(vec![]).is_none());
    }
}
