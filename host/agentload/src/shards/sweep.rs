//! A sharded sweep: each shard's barriers through its link (a phase starts at the
//! coordinator's start barrier and ends at its phase-end barrier, keyed `sweep-NN`), and
//! the merge of the shards' phase folders into the run's sweep (shard 0). A merged phase's
//! records are every shard's, moved onto one time line by one constant per shard (every
//! latency stays what its shard measured), and its summary is written by the code a
//! one-host sweep uses: every percentile is an order statistic over the union.

use super::merge::{merge_phase_at, Merged};
use crate::sweep::{self, agents::PhaseRun, Barriers, BoxFuture, Level, Ran, SweepConfig};
use agentload_config::RunConfig;
use agentload_engine::journal::sessions_file;
use agentload_engine::{Interner, SessionOutcome, TurnFacts, TurnStatus};
use agentload_results::arrivals::Dispatch;
use agentload_shards::Link;
use anyhow::{Context as _, Result};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The coordinator's key of sweep phase `index`.
pub fn key(index: usize) -> String {
    format!("sweep-{index:02}")
}

/// A shard's sweep barriers, through its link.
pub struct LinkBarriers {
    pub link: Arc<Link>,
    /// This shard's process (0, or its n-th resume).
    pub segment: u32,
}

impl Barriers for LinkBarriers {
    fn start(&self, index: usize) -> BoxFuture<'_, Result<Instant, String>> {
        Box::pin(async move {
            self.link
                .barrier(&key(index), self.segment)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn end(&self, index: usize) -> BoxFuture<'_, Result<Instant, String>> {
        Box::pin(async move {
            // The phase's offset, refreshed through it, maps its records.
            self.link.end_phase().map_err(|e| e.to_string())?;
            self.link
                .phase_end(&key(index))
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// A shard's phase as its own `summary.json` has it.
struct ShardPhase {
    index: u32,
    summary: Value,
    /// Its records' move onto the merged time line, ns.
    shift_ns: u64,
}

impl ShardPhase {
    fn ns(&self, key: &str) -> Option<u64> {
        let s = self.summary[key].as_f64()?;
        Some((s * 1e9) as u64 + self.shift_ns)
    }

    fn count(&self, key: &str) -> u32 {
        self.summary[key].as_u64().unwrap_or(0) as u32
    }
}

/// Agents of a `level` shard `index` of `count` ran (`a mod count == index`).
fn agents_on(level: usize, index: u32, count: u32) -> usize {
    let (n, i) = (count as usize, index as usize);
    level / n + usize::from(i < level % n)
}

/// The run's sweep from its shards' phase folders: the merged journals in
/// `out/sweep/<phase>/`, each phase's summary, `summary.json` and `pareto.json`.
pub fn merge(
    config: &RunConfig,
    sweep_config: &SweepConfig,
    out: &Path,
    merged: &Merged,
    live: bool,
) -> Result<sweep::SweepSummary> {
    let results = agentload_fs::OutDir::new(out);
    results
        .create_dir("sweep")
        .with_context(|| format!("cannot create {}", out.join("sweep").display()))?;
    let mut phases = Vec::new();
    for (index, level) in Level::all(sweep_config).into_iter().enumerate() {
        let folder = sweep::folder(index, level);
        let log = format!("sweep/{folder}/turns.jsonl");
        let Some((phase, _)) = merge_phase_at(&merged.shards, &key(index), &log)? else {
            // No shard ran it (the sweep stopped before).
            break;
        };
        let mut strings = Interner::default();
        let mut facts = Vec::new();
        let phase_dir = Path::new("sweep").join(&folder);
        results.create_dir(&phase_dir)?;
        phase.write_journal(&results, &phase_dir.join("turns.jsonl"), |r, line| {
            if r.status != TurnStatus::Interrupted {
                facts.push(TurnFacts::of(r, line, &mut strings));
            }
        })?;
        let mut shards = Vec::new();
        let mut sessions: Vec<SessionOutcome> = Vec::new();
        for s in &merged.shards {
            let at = s.dir.join("sweep").join(&folder);
            let Ok(bytes) = agentload_fs::read::read(at.join("summary.json")) else {
                continue;
            };
            let summary: Value = serde_json::from_slice(&bytes)
                .with_context(|| format!("{} is not a phase summary", at.display()))?;
            let journal = sessions_file(&at.join("turns.jsonl"));
            if let Ok(text) = agentload_fs::read::read_to_string(&journal) {
                for line in text.lines().filter(|l| !l.trim().is_empty()) {
                    sessions.push(serde_json::from_str(line).with_context(|| {
                        format!("{} is not a session journal", journal.display())
                    })?);
                }
            }
            shards.push(ShardPhase {
                index: s.header.index,
                summary,
                shift_ns: phase.shift_ns(s.header.index).unwrap_or(0),
            });
        }
        let zero = shards.iter().find(|s| s.index == 0).or(shards.first());
        let with_agents: Vec<&ShardPhase> = shards
            .iter()
            .filter(|s| match level {
                Level::Agents(n) => agents_on(n, s.index, merged.count) > 0,
                Level::Rate(_) => true,
            })
            .collect();
        let latest = |key: &str| shards.iter().filter_map(|s| s.ns(key)).max();
        let mut dispatch = Dispatch::default();
        for s in &shards {
            if let Ok(d) =
                serde_json::from_value::<Dispatch>(s.summary["arrivals"]["dispatch"].clone())
            {
                dispatch.released += d.released;
                dispatch.held_back += d.held_back;
                dispatch.held_max_ns = dispatch.held_max_ns.max(d.held_max_ns);
                dispatch.held_total_ns += d.held_total_ns;
            }
        }
        let run = PhaseRun {
            facts,
            sessions,
            // Steady state starts once every shard's agents are active.
            all_active_ns: with_agents
                .iter()
                .map(|s| s.ns("all_active_s"))
                .collect::<Option<Vec<u64>>>()
                .and_then(|v| v.into_iter().max()),
            stopped_ns: latest("stopped_s").unwrap_or(0),
            rules_held_ns: latest("rules_held_s"),
            drained_ns: latest("wall_s").unwrap_or(0),
            end_reason: zero.map_or_else(String::new, |s| {
                s.summary["end_reason"].as_str().unwrap_or("").to_owned()
            }),
            completed: shards
                .iter()
                .map(|s| s.count("trajectories_completed"))
                .sum(),
            min_per_agent: with_agents
                .iter()
                .map(|s| s.count("min_trajectories_per_agent"))
                .min()
                .unwrap_or(0),
            trajectories_cut: shards.iter().map(|s| s.count("trajectories_cut")).sum(),
            trajectories_failed: shards.iter().map(|s| s.count("trajectories_failed")).sum(),
        };
        let cpu: Vec<f64> = shards
            .iter()
            .filter_map(|s| s.summary["harness_cpu_s"].as_f64())
            .collect();
        let summary = sweep::summarize(
            config,
            sweep_config,
            index,
            level,
            Ran {
                wall_s: run.drained_ns as f64 / 1e9,
                run,
                cpu_s: (!cpu.is_empty()).then(|| cpu.iter().sum()),
                telemetry: zero
                    .and_then(|s| serde_json::from_value(s.summary["telemetry"].clone()).ok()),
                dispatch: matches!(level, Level::Rate(_)).then_some(dispatch),
            },
        );
        results.write_json(phase_dir.join("summary.json"), &summary)?;
        phases.push(summary);
    }
    sweep::finish(config, sweep_config, &results, phases, live)
}

/// The sweep files of a shard's directory it uploads (those it has).
pub fn uploads(work: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for f in ["sweep/summary.json", "sweep/pareto.json"] {
        if work.join(f).is_file() {
            files.push(f.to_owned());
        }
    }
    let Ok(entries) = std::fs::read_dir(work.join("sweep")) else {
        return files;
    };
    let mut folders: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| agentload_shards::protocol::sweep_phase_folder(n))
        .collect();
    folders.sort();
    for folder in folders {
        for f in agentload_shards::protocol::SWEEP_PHASE_FILES {
            let path = format!("sweep/{folder}/{f}");
            if work.join(&path).is_file() {
                files.push(path);
            }
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_s_agents_are_dealt_as_slots_are() {
        let on: Vec<usize> = (0..4).map(|i| agents_on(6, i, 4)).collect();
        assert_eq!(on, [2, 2, 1, 1]);
        assert_eq!(agents_on(1, 3, 4), 0);
        assert_eq!(key(3), "sweep-03");
    }

    #[test]
    fn a_shard_uploads_its_phase_folders_files_only() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            "sweep/summary.json",
            "sweep/phase-00-c4/turns.jsonl",
            "sweep/phase-00-c4/summary.json",
            "sweep/phase-01-r2.5/sessions.jsonl",
            "sweep/phase-01-r2.5/notes.txt",
            "sweep/other/turns.jsonl",
        ] {
            let path = dir.path().join(f);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        }
        assert_eq!(
            uploads(dir.path()),
            [
                "sweep/summary.json",
                "sweep/phase-00-c4/turns.jsonl",
                "sweep/phase-00-c4/summary.json",
                "sweep/phase-01-r2.5/sessions.jsonl",
            ]
        );
        assert!(uploads(&dir.path().join("none")).is_empty());
    }
}
