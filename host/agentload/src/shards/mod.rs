//! The pieces of sharded runs that a run uses: this process's place in one
//! ([`ShardRun`]), the merge of the shards' directories ([`merge`]), a sweep's
//! barriers and merge ([`sweep`]), and the Kubernetes objects ([`k8s`]). The
//! commands that start shards and merges are [`crate::shard_commands`]. The
//! design and its clock model: `docs/distributed.md`.

pub mod k8s;
pub mod merge;
pub mod sweep;

use agentload_shards::{Link, Slice};
use std::sync::Arc;

/// This process's place in a sharded run (see [`crate::run::Overrides::shard`]).
#[derive(Clone)]
pub struct ShardRun {
    pub slice: Slice,
    pub link: Arc<Link>,
}

impl std::fmt::Debug for ShardRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ShardRun({})", self.slice)
    }
}

/// Shard 0's telemetry summary (only it samples the server).
pub(crate) fn shard_zero_telemetry(
    merged: &merge::Merged,
) -> Option<agentload_telemetry::TelemetrySummary> {
    let zero = merged.shards.iter().find(|s| s.header.index == 0)?;
    let summary: serde_json::Value = serde_json::from_slice(
        &agentload_fs::read::read(zero.dir.join("performance/result_summary.json")).ok()?,
    )
    .ok()?;
    serde_json::from_value(summary["agentload"]["telemetry"].clone()).ok()
}

/// The shards' open-loop dispatches added up (each released and held back its own slice of
/// the one schedule).
pub(crate) fn shards_dispatch(merged: &merge::Merged) -> agentload_results::arrivals::Dispatch {
    let mut total = agentload_results::arrivals::Dispatch::default();
    for shard in &merged.shards {
        let Some(summary) = std::fs::read(shard.dir.join("performance/result_summary.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        else {
            continue;
        };
        let Ok(d) = serde_json::from_value::<agentload_results::arrivals::Dispatch>(
            summary["agentload"]["arrivals"]["dispatch"].clone(),
        ) else {
            continue;
        };
        total.released += d.released;
        total.held_back += d.held_back;
        total.held_max_ns = total.held_max_ns.max(d.held_max_ns);
        total.held_total_ns += d.held_total_ns;
    }
    total
}

#[cfg(test)]
mod tests {
    use agentload_engine::journal::{sessions_file, side_file};
    use agentload_shards::protocol::UPLOADED;
    use std::path::Path;

    #[test]
    fn every_journal_a_merge_reads_is_uploaded() {
        for turns in ["turns.jsonl", "accuracy/turns.jsonl"] {
            let turns = Path::new(turns);
            let mut needed = vec![turns.to_path_buf(), sessions_file(turns)];
            needed.extend(["tokens", "superseded"].map(|k| side_file(turns, k)));
            needed.push(turns.with_file_name("sessions.json"));
            for path in needed {
                let path = path.to_str().unwrap().to_owned();
                assert!(UPLOADED.contains(&path.as_str()), "{path} is not uploaded");
            }
        }
        assert!(UPLOADED.contains(&"shard.json"));
    }
}
