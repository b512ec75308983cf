//! A sharded run's merge: which shards it holds, how their clocks were
//! mapped, how well they started together, and what load each achieved.
//! (`result_summary.json`, `agentload.distributed`; see
//! `docs/distributed.md`.)

use serde::{Deserialize, Serialize};

/// The shards of a merged run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Distributed {
    pub run_id: String,
    /// Shards the run was split into.
    pub shards: u32,
    /// Shards whose records are in the merge.
    pub merged: Vec<u32>,
    /// Why a shard is missing (the run is then INVALID).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    /// Spread of the moments the shards woke for the phase's start, on the
    /// coordinator's clock, ns (timer lateness and offset error together).
    pub start_skew_ns: u64,
    /// Spread of the shards' first requests on the coordinator's clock, ns.
    pub first_issue_skew_ns: Option<u64>,
    /// The largest clock-offset uncertainty among the shards, ns: cross-shard
    /// times (the skews, the merged time line) are good to about this much;
    /// latencies are exact.
    pub max_offset_uncertainty_ns: u64,
    pub per_shard: Vec<ShardLoad>,
    /// The shards' latency histograms added together against the exact
    /// order statistics of the merged records.
    pub histogram_check: HistogramCheck,
}

/// One shard's part.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardLoad {
    pub index: u32,
    pub host: String,
    pub sessions: usize,
    /// Its share of `load.concurrency` (the target).
    pub concurrency: usize,
    /// Turns in flight on average over the phase window (achieved).
    pub mean_in_flight: f64,
    pub turns_completed: u64,
    pub turns_failed: u64,
    /// Coordinator clock minus the shard's, ns, and the bound (min RTT / 2).
    pub offset_ns: i64,
    pub offset_uncertainty_ns: u64,
    /// The offset at the phase's end minus at its start, ns (clock drift
    /// plus estimation noise).
    pub offset_drift_ns: i64,
    /// The shard's phase start on the merged time line, ns.
    pub start_ns: u64,
}

/// The HdrHistogram cross-check.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistogramCheck {
    /// Every checked quantile of TTFT and end-to-end latency falls in the
    /// same histogram bucket as the exact value (3 significant digits).
    pub agrees: bool,
    pub quantiles: Vec<f64>,
    pub values: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disagreement: Option<String>,
}

impl Distributed {
    /// The lines `report.txt` gets.
    pub fn lines(&self) -> String {
        let mut text = format!(
            "shards: {} of {} merged (run {}); start skew {:.3} ms, first requests within {}, \
             clock offsets good to {:.3} ms; histogram cross-check {}\n",
            self.merged.len(),
            self.shards,
            self.run_id,
            self.start_skew_ns as f64 / 1e6,
            self.first_issue_skew_ns
                .map_or_else(|| "-".to_owned(), |ns| format!("{:.3} ms", ns as f64 / 1e6)),
            self.max_offset_uncertainty_ns as f64 / 1e6,
            if self.histogram_check.agrees {
                "agrees"
            } else {
                "DISAGREES"
            }
        );
        for s in &self.per_shard {
            text.push_str(&format!(
                "  shard {} ({}): {} sessions, {} completed, {} failed, in flight {:.2} of {} \
                 target, offset {:+.3} ms ± {:.3} ms\n",
                s.index,
                s.host,
                s.sessions,
                s.turns_completed,
                s.turns_failed,
                s.mean_in_flight,
                s.concurrency,
                s.offset_ns as f64 / 1e6,
                s.offset_uncertainty_ns as f64 / 1e6
            ));
        }
        if let Some(why) = &self.lost {
            text.push_str(&format!("INVALID: {why}\n"));
        }
        text
    }
}
