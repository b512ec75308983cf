//! One reported series (`ttft`, `tpot`, `latency`, ISL, OSL) as the
//! reference's `result_summary.json` writes it: `{total, min, max, median,
//! avg, std_dev, percentiles, early_stopping_percentiles?, histogram:
//! {buckets: [[lo, hi], ...], counts}}`.
//!
//! Value types follow the reference's: an integer series (ns, tokens) has
//! integer `total`/`min`/`max`, a float series (TPOT) float ones; `median`,
//! `avg`, `std_dev`, percentiles, estimates and bucket edges are floats.

use super::early_stopping::early_stopping_index;
use serde::Serialize;
use serde_json::{Map, Number, Value};

/// The reference's percentile grid (`DEFAULT_PERCENTILES`).
pub const PERCENTILE_GRID: [f64; 12] = [
    99.9, 99.0, 97.0, 95.0, 90.0, 80.0, 75.0, 50.0, 25.0, 10.0, 5.0, 1.0,
];

/// Early-stopping estimates cover the grid's entries from the median up.
const ES_MIN_PERCENTILE: f64 = 50.0;

/// The estimates' confidence (the reference's `CONFIDENCE`).
const ES_CONFIDENCE: f64 = 0.99;

/// Histogram buckets, log-spaced over the observed range.
const HISTOGRAM_BUCKETS: usize = 30;

/// `sorted[floor((n-1) * p/100)]`: numpy's `method="lower"`.
pub fn lower_percentile<T: Copy>(sorted: &[T], p: f64) -> T {
    let n = sorted.len();
    let idx = (((n - 1) as f64) * (p / 100.0)).floor() as usize;
    sorted[idx.min(n - 1)]
}

/// The summary of one series.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// Sum of the values (integer for an integer series).
    pub total: Number,
    pub min: Number,
    pub max: Number,
    pub median: f64,
    pub avg: f64,
    /// Sample standard deviation (n - 1).
    pub std_dev: f64,
    /// Grid key (`"99.0"`) to value.
    pub percentiles: Map<String, Value>,
    /// Grid key to estimate, `null` where the run is too short.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub early_stopping_percentiles: Option<Map<String, Value>>,
    pub histogram: Histogram,
}

/// Counts per bucket; each bucket is `[lo, hi]` (the last one closed).
#[derive(Debug, Clone, Serialize)]
pub struct Histogram {
    pub buckets: Vec<[f64; 2]>,
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

fn float(v: f64) -> Value {
    Number::from_f64(v).map_or(Value::Null, Value::Number)
}

impl Series {
    /// Summarises an integer series (ns, tokens), values in arrival order;
    /// none when empty. `early_stopping` adds the estimates (latency-like
    /// series).
    pub fn of(values: &[u64], early_stopping: bool) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as u128;
        let total: u128 = values.iter().map(|&v| u128::from(v)).sum();
        let sum_sq: u128 = values.iter().map(|&v| u128::from(v) * u128::from(v)).sum();
        // The reference's exact integer form: sqrt(n·Σx² − (Σx)²) / sqrt(n(n−1)).
        let std_dev = if n > 1 {
            ((n * sum_sq).saturating_sub(total * total) as f64).sqrt()
                / ((n * (n - 1)) as f64).sqrt()
        } else {
            0.0
        };
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let as_f64: Vec<f64> = sorted.iter().map(|&v| v as f64).collect();
        // A total past u64 (584 years of ns) saturates.
        Some(Self::build(
            Number::from(u64::try_from(total).unwrap_or(u64::MAX)),
            Number::from(sorted[0]),
            Number::from(sorted[sorted.len() - 1]),
            total as f64 / n as f64,
            std_dev,
            &as_f64,
            early_stopping,
        ))
    }

    /// Summarises a float series (TPOT), values in arrival order; none when
    /// empty or when a value is not finite.
    pub fn of_floats(values: &[f64], early_stopping: bool) -> Option<Self> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len() as f64;
        // Summed in arrival order, as the reference accumulates them.
        let total: f64 = values.iter().sum();
        let sum_sq: f64 = values.iter().map(|v| v * v).sum();
        let std_dev = if values.len() > 1 {
            ((sum_sq - total * total / n) / (n - 1.0)).max(0.0).sqrt()
        } else {
            0.0
        };
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let finite = |v: f64| Number::from_f64(v).expect("finite");
        Some(Self::build(
            finite(total),
            finite(sorted[0]),
            finite(sorted[sorted.len() - 1]),
            total / n,
            std_dev,
            &sorted,
            early_stopping,
        ))
    }

    fn build(
        total: Number,
        min: Number,
        max: Number,
        avg: f64,
        std_dev: f64,
        sorted: &[f64],
        early_stopping: bool,
    ) -> Self {
        let n = sorted.len();
        let percentiles = PERCENTILE_GRID
            .iter()
            .map(|&p| (key(p), float(lower_percentile(sorted, p))))
            .collect();
        let early = early_stopping.then(|| {
            PERCENTILE_GRID
                .iter()
                .filter(|&&p| (ES_MIN_PERCENTILE..100.0).contains(&p))
                .map(|&p| {
                    let v = early_stopping_index(n, p / 100.0, ES_CONFIDENCE)
                        .map_or(Value::Null, |i| float(sorted[i]));
                    (key(p), v)
                })
                .collect()
        });
        Self {
            total,
            min,
            max,
            median: lower_percentile(sorted, 50.0),
            avg,
            std_dev,
            percentiles,
            early_stopping_percentiles: early,
            histogram: histogram(sorted),
        }
    }

    /// A grid percentile's value (`"99.0"`), if the series has it.
    pub fn percentile(&self, key: &str) -> Option<f64> {
        self.percentiles.get(key).and_then(Value::as_f64)
    }

    /// `max` as a float.
    pub fn max_f64(&self) -> f64 {
        self.max.as_f64().unwrap_or(f64::NAN)
    }

    /// `total` as a float.
    pub fn total_f64(&self) -> f64 {
        self.total.as_f64().unwrap_or(f64::NAN)
    }
}

/// The reference's display histogram: 30 log-spaced edges from
/// `max(min, 1)` to `max(max, 10 · that)`, values clipped into the range,
/// each bucket `[lo, hi)` and the last `[lo, hi]` (numpy's `histogram`).
fn histogram(sorted: &[f64]) -> Histogram {
    let low = sorted[0].max(1.0);
    let high = sorted[sorted.len() - 1].max(low * 10.0);
    let (log_lo, log_hi) = (low.ln(), high.ln());
    let step = (log_hi - log_lo) / HISTOGRAM_BUCKETS as f64;
    let edges: Vec<f64> = (0..=HISTOGRAM_BUCKETS)
        .map(|i| (log_lo + i as f64 * step).exp())
        .collect();
    let (first, last) = (edges[0], edges[HISTOGRAM_BUCKETS]);
    // Values below each edge ("left" search), the last edge inclusive.
    let mut below: Vec<usize> = edges
        .iter()
        .map(|&e| sorted.partition_point(|&v| v.clamp(first, last) < e))
        .collect();
    below[HISTOGRAM_BUCKETS] = sorted.partition_point(|&v| v.clamp(first, last) <= last);
    Histogram {
        buckets: edges.windows(2).map(|w| [w[0], w[1]]).collect(),
        counts: below.windows(2).map(|w| (w[1] - w[0]) as u64).collect(),
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
    fn integer_series_object() {
        let s = Series::of(&[4, 1, 3, 2], true).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            (&v["total"], &v["min"], &v["max"]),
            (&Value::from(10), &Value::from(1), &Value::from(4))
        );
        assert!(v["total"].is_u64() && v["median"].is_f64());
        assert_eq!(v["median"], 2.0);
        assert!((s.avg - 2.5).abs() < 1e-12);
        assert!((s.std_dev - (5.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(v["percentiles"]["99.0"], 3.0);
        assert!(v["percentiles"]["99.0"].is_f64());
        assert_eq!(s.percentiles.len(), 12);
        let keys: Vec<&String> = s.percentiles.keys().collect();
        assert_eq!(keys[0], "99.9");
        assert_eq!(keys[11], "1.0");
        let es = s.early_stopping_percentiles.as_ref().unwrap();
        let es_keys: Vec<&str> = es.keys().map(String::as_str).collect();
        assert_eq!(
            es_keys,
            ["99.9", "99.0", "97.0", "95.0", "90.0", "80.0", "75.0", "50.0"]
        );
        assert!(es.values().all(Value::is_null));
        assert_eq!(s.histogram.counts.iter().sum::<u64>(), 4);
        assert!(Series::of(&[], false).is_none());
        assert!(Series::of(&[1], false)
            .unwrap()
            .early_stopping_percentiles
            .is_none());
    }

    #[test]
    fn float_series_keeps_float_types() {
        let s = Series::of_floats(&[2.5, 1.0, 3.0], true).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert!(v["total"].is_f64() && v["min"].is_f64() && v["max"].is_f64());
        assert_eq!(v["total"], 6.5);
        assert!(Series::of_floats(&[1.0, f64::NAN], false).is_none());
    }

    #[test]
    fn estimates_are_order_statistics_of_the_series() {
        let values: Vec<u64> = (0..1007).rev().collect();
        let s = Series::of(&values, true).unwrap();
        let es = s.early_stopping_percentiles.unwrap();
        assert_eq!(es["99.0"], 1004.0);
        assert_eq!(es["90.0"], 929.0);
        assert_eq!(es["50.0"], 541.0);
        assert_eq!(es["99.9"], Value::Null);
        assert_eq!(s.percentiles["99.0"], 995.0);
    }

    /// numpy: `np.histogram(np.clip(a, e[0], e[-1]), bins=e)` with the
    /// reference's edges.
    #[test]
    fn histogram_has_thirty_pairs_and_counts_every_value() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        let h = histogram(&values);
        assert_eq!(h.buckets.len(), 30);
        assert_eq!(h.counts.len(), 30);
        assert_eq!(h.counts.iter().sum::<u64>(), 100);
        // Edges from 1 to 100 (max >= 10 x min), contiguous.
        assert!((h.buckets[0][0] - 1.0).abs() < 1e-12);
        assert!((h.buckets[29][1] - 100.0).abs() < 1e-9);
        assert!(h.buckets.windows(2).all(|w| w[0][1] == w[1][0]));
        // The range spans at least a decade: a narrow series gets edges up to
        // 10 x its minimum, and every value lands in the first buckets.
        let narrow = histogram(&[1000.0, 1001.0, 1002.0]);
        assert!((narrow.buckets[29][1] - 10_000.0).abs() < 1e-6);
        assert_eq!(narrow.counts[0], 3);
        // The maximum is counted in the closed last bucket.
        let two = histogram(&[1.0, 10.0]);
        assert_eq!((two.counts[0], two.counts[29]), (1, 1));
        // Values below 1 are clipped into the first bucket.
        let zero = histogram(&[0.0, 0.5, 20.0]);
        assert_eq!(zero.counts[0], 2);
        assert_eq!(zero.counts.iter().sum::<u64>(), 3);
    }
}
