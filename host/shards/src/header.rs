//! `shard.json`: what a shard's journals need to join the others: the run
//! and config it belongs to, which slice it ran, the anchors that map its
//! clock onto the coordinator's, and its latency histograms (the merge's
//! cross-check).

use crate::worker::PhaseAnchor;
use agentload_results::TurnFacts;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// The header a shard writes beside its journals.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardHeader {
    pub run_id: String,
    pub config_digest: String,
    pub index: u32,
    pub count: u32,
    pub host: String,
    /// This shard's share of `load.concurrency`.
    pub concurrency: usize,
    /// When it started, UTC (for people; never used for a measurement).
    pub started_at: String,
    /// One per phase and process that ran it.
    pub anchors: Vec<PhaseAnchor>,
    /// The performance phase's completed turns.
    pub histograms: LatencyHistograms,
}

/// Bounds and precision every shard uses, so histograms add bucket for bucket.
const HIGHEST_NS: u64 = 3_600_000_000_000;
const SIGNIFICANT_DIGITS: u8 = 3;

/// A fresh histogram with the shared layout (1 ns to 1 h, 3 digits).
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS).expect("valid bounds")
}

/// The live progress histogram's layout (µs, 1 µs to 1 h, 3 digits: the
/// engine's progress histogram).
pub fn live_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, SIGNIFICANT_DIGITS).expect("valid bounds")
}

/// A histogram's recorded buckets as `[value, count]`.
pub fn to_buckets(h: &Histogram<u64>) -> Vec<[u64; 2]> {
    h.iter_recorded()
        .map(|b| [b.value_iterated_to(), b.count_at_value()])
        .collect()
}

/// TTFT and end-to-end latency, ns, as `[value, count]` per recorded bucket:
/// lossless for the histogram, readable in JSON.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LatencyHistograms {
    pub ttft_ns: Vec<[u64; 2]>,
    pub e2e_ns: Vec<[u64; 2]>,
}

impl LatencyHistograms {
    /// Of a phase's completed turns (see [`latencies`]).
    pub fn of_turns(turns: &[TurnFacts]) -> Self {
        let (ttft, e2e) = latencies(turns);
        Self::of(&ttft, &e2e)
    }

    /// From the values themselves.
    pub fn of(ttft_ns: &[u64], e2e_ns: &[u64]) -> Self {
        Self {
            ttft_ns: buckets(ttft_ns),
            e2e_ns: buckets(e2e_ns),
        }
    }
}

/// TTFT (issue to first token) and end-to-end latency (issue to the
/// answer's end) of the completed turns, ns: same-process durations, exact
/// under any clock offset.
pub fn latencies(turns: &[TurnFacts]) -> (Vec<u64>, Vec<u64>) {
    let (mut ttft, mut e2e) = (Vec::new(), Vec::new());
    for (t, e) in turns.iter().map(latency) {
        ttft.extend(t);
        e2e.extend(e);
    }
    (ttft, e2e)
}

/// One turn's TTFT and end-to-end latency as [`latencies`] counts them: none unless the
/// turn was answered.
pub fn latency(turn: &TurnFacts) -> (Option<u64>, Option<u64>) {
    if !turn.completed() {
        return (None, None);
    }
    let span = |a: Option<u64>, b: Option<u64>| b?.checked_sub(a?);
    (
        span(turn.issued_ns(), turn.first_token_ns()),
        span(turn.issued_ns(), turn.complete_ns()),
    )
}

fn buckets(values: &[u64]) -> Vec<[u64; 2]> {
    let mut h = histogram();
    for v in values {
        h.saturating_record(*v);
    }
    to_buckets(&h)
}

/// Adds serialized buckets into `into`.
pub fn add(into: &mut Histogram<u64>, buckets: &[[u64; 2]]) {
    for [v, n] in buckets {
        into.saturating_record_n(*v, *n);
    }
}

/// Whether the histogram's quantiles agree with the exact order statistics
/// of `values` (nearest rank) within its precision, at `quantiles`. Returns
/// the first disagreement.
pub fn check(h: &Histogram<u64>, values: &[u64], quantiles: &[f64]) -> Result<(), String> {
    if h.len() != values.len() as u64 {
        return Err(format!(
            "the histograms hold {} values, the records {}",
            h.len(),
            values.len()
        ));
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    for q in quantiles {
        let Some(exact) = nearest_rank(&sorted, *q) else {
            continue;
        };
        let approx = h.value_at_quantile(*q);
        if !h.equivalent(exact, approx) {
            return Err(format!(
                "p{} is {exact} ns exactly, {approx} ns in the merged histogram",
                q * 100.0
            ));
        }
    }
    Ok(())
}

/// The nearest-rank quantile of sorted values.
pub fn nearest_rank(sorted: &[u64], q: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deterministic spread of latencies (xorshift, lognormal-ish).
    fn latencies(seed: u64, n: usize, scale: u64) -> Vec<u64> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                scale + (x % 1000) * (x % 1000) * scale / 1000
            })
            .collect()
    }

    #[test]
    fn shard_histograms_add_up_to_the_single_process_one() {
        let shards: Vec<Vec<u64>> = (0..8)
            .map(|i| latencies(i + 1, 5_000, 1_000_000 * (i + 1)))
            .collect();
        let mut merged = histogram();
        for s in &shards {
            add(&mut merged, &LatencyHistograms::of(s, &[]).ttft_ns);
        }
        let all: Vec<u64> = shards.concat();
        let mut single = histogram();
        for v in &all {
            single.record(*v).unwrap();
        }
        assert_eq!(merged, single);
        check(&merged, &all, &[0.5, 0.9, 0.99, 0.999]).unwrap();
        // The mean of the shards' p99s is not the pooled p99.
        let mean_p99 = shards
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.sort_unstable();
                nearest_rank(&s, 0.99).unwrap() as f64
            })
            .sum::<f64>()
            / 8.0;
        let mut sorted = all.clone();
        sorted.sort_unstable();
        let pooled = nearest_rank(&sorted, 0.99).unwrap() as f64;
        assert!(
            (mean_p99 - pooled).abs() / pooled > 0.05,
            "{mean_p99} {pooled}"
        );
    }

    #[test]
    fn a_lost_value_fails_the_check() {
        let values = latencies(7, 1000, 1000);
        let mut h = histogram();
        add(&mut h, &LatencyHistograms::of(&values[1..], &[]).ttft_ns);
        assert!(check(&h, &values, &[0.5]).unwrap_err().contains("999"));
    }
}
