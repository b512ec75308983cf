//! One reported series (`ttft`, `tpot`, `latency`, ISL, OSL): the reference's
//! object `{total, min, max, median, avg, std_dev, percentiles,
//! early_stopping_percentiles, histogram}`.

use super::early_stopping::early_stopping_index;
use serde::Serialize;
use serde_json::{Map, Value};

/// The reference's percentile grid (`DEFAULT_PERCENTILES`).
pub const PERCENTILE_GRID: [f64; 12] = [
    99.9, 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0,
];

/// Histogram buckets, log-spaced between the observed min and max.
const HISTOGRAM_BUCKETS: usize = 30;

/// `sorted[floor(p/100 * (n-1))]`: numpy's `method="lower"`.
pub fn lower_percentile(sorted: &[u64], p: f64) -> u64 {
    let n = sorted.len();
    let idx = ((p / 100.0) * (n - 1) as f64).floor() as usize;
    sorted[idx.min(n - 1)]
}

/// The summary of one series.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub total: u64,
    pub min: u64,
    pub max: u64,
    pub median: u64,
    pub avg: f64,
    pub std_dev: f64,
    pub percentiles: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_stopping_percentiles: Option<Map<String, Value>>,
    pub histogram: Histogram,
}

/// Counts per bucket; `buckets` are the lower edges, plus the final upper edge.
#[derive(Debug, Clone, Serialize)]
pub struct Histogram {
    pub buckets: Vec<f64>,
    pub counts: Vec<u64>,
}

/// The key the reference uses for a percentile: Python's `str(float)`.
fn key(p: f64) -> String {
    if p.fract() == 0.0 {
        format!("{p:.1}")
    } else {
        format!("{p}")
    }
}

impl Series {
    /// Summarises `values`; none when empty. `early_stopping` adds the MLPerf
    /// estimates (for latency-like series).
    pub fn of(values: &[u64], early_stopping: bool) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        let total: u64 = sorted.iter().sum();
        let avg = total as f64 / n as f64;
        let var = if n > 1 {
            sorted
                .iter()
                .map(|&v| (v as f64 - avg).powi(2))
                .sum::<f64>()
                / (n - 1) as f64
        } else {
            0.0
        };
        let percentiles = PERCENTILE_GRID
            .iter()
            .map(|&p| (key(p), Value::from(lower_percentile(&sorted, p))))
            .collect();
        let early = early_stopping.then(|| {
            PERCENTILE_GRID
                .iter()
                .filter(|&&p| p >= 50.0)
                .map(|&p| {
                    let v = early_stopping_index(n, p / 100.0, 0.99)
                        .map_or(Value::Null, |i| Value::from(sorted[i]));
                    (key(p), v)
                })
                .collect()
        });
        Some(Self {
            total,
            min: sorted[0],
            max: sorted[n - 1],
            median: lower_percentile(&sorted, 50.0),
            avg,
            std_dev: var.sqrt(),
            percentiles,
            early_stopping_percentiles: early,
            histogram: histogram(&sorted),
        })
    }
}

fn histogram(sorted: &[u64]) -> Histogram {
    let (lo, hi) = (
        sorted[0].max(1) as f64,
        sorted[sorted.len() - 1].max(1) as f64,
    );
    let edges: Vec<f64> = if hi <= lo {
        vec![lo, hi]
    } else {
        let (a, b) = (lo.ln(), hi.ln());
        (0..=HISTOGRAM_BUCKETS)
            .map(|i| (a + (b - a) * i as f64 / HISTOGRAM_BUCKETS as f64).exp())
            .collect()
    };
    let buckets = edges.len() - 1;
    let mut counts = vec![0u64; buckets];
    for &v in sorted {
        let i = edges[1..]
            .iter()
            .position(|&edge| (v as f64) < edge)
            .unwrap_or(buckets - 1);
        counts[i] += 1;
    }
    Histogram {
        buckets: edges,
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_method_matches_numpy() {
        // np.percentile([1..=10], p, method="lower")
        let v: Vec<u64> = (1..=10).collect();
        assert_eq!(lower_percentile(&v, 50.0), 5);
        assert_eq!(lower_percentile(&v, 99.0), 9);
        assert_eq!(lower_percentile(&v, 99.9), 9);
        assert_eq!(lower_percentile(&v, 90.0), 9);
        assert_eq!(lower_percentile(&v, 10.0), 1);
        assert_eq!(lower_percentile(&[7], 99.9), 7);
    }

    #[test]
    fn series_object() {
        let s = Series::of(&[4, 1, 3, 2], true).unwrap();
        assert_eq!((s.total, s.min, s.max, s.median), (10, 1, 4, 2));
        assert!((s.avg - 2.5).abs() < 1e-12);
        assert!((s.std_dev - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(s.percentiles["99.0"], 3);
        assert_eq!(s.percentiles["99.9"], 3);
        assert_eq!(s.percentiles.len(), 12);
        assert_eq!(s.early_stopping_percentiles.unwrap()["99.0"], Value::Null);
        assert_eq!(s.histogram.counts.iter().sum::<u64>(), 4);
        assert!(Series::of(&[], false).is_none());
    }
}
