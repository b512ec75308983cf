//! `agentload merge`: a sharded run's result files from its shards' raw
//! records. Each shard's times are mapped onto the coordinator's clock (one
//! constant per shard and process, so every latency stays exactly what the
//! shard measured), the records are brought together, and the run's files
//! are written by the same code a single-process run uses: every
//! percentile is an order statistic over the union. The shards' latency
//! histograms, added together, are checked against those exact values.

use agentload_engine::journal::{read_turns, side_file, TokenLine};
use agentload_engine::{SessionOutcome, TurnRecord, TurnStatus};
use agentload_results::distributed::{Distributed, HistogramCheck, ShardLoad};
use agentload_shards::header::{self, histogram, ShardHeader};
use agentload_shards::PhaseAnchor;
use anyhow::{Context as _, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Quantiles the histogram cross-check compares.
const QUANTILES: [f64; 6] = [0.5, 0.9, 0.95, 0.99, 0.999, 1.0];

/// A shard's directory as uploaded (or as it wrote it).
#[derive(Debug)]
pub struct ShardDir {
    pub dir: PathBuf,
    pub header: ShardHeader,
}

/// One phase's records from every shard, on one time line.
#[derive(Debug, Default)]
pub struct MergedPhase {
    /// Every journal line, interrupted ones included, mapped and tagged.
    pub lines: Vec<TurnRecord>,
    pub sessions: Vec<SessionOutcome>,
    /// Every shard finished the phase.
    pub complete: bool,
}

impl MergedPhase {
    /// The records that count (not interrupted).
    pub fn records(&self) -> Vec<TurnRecord> {
        self.lines
            .iter()
            .filter(|r| r.status != TurnStatus::Interrupted)
            .cloned()
            .collect()
    }

    /// Turns a signal cut.
    pub fn interrupted(&self) -> u64 {
        self.lines
            .iter()
            .filter(|r| r.status == TurnStatus::Interrupted)
            .count() as u64
    }

    /// Writes the merged journal (`turns.jsonl` and its token side file).
    pub fn write_journal(&self, turns: &Path) -> Result<()> {
        let mut text = String::new();
        let mut tokens = String::new();
        for (i, r) in self.lines.iter().enumerate() {
            text.push_str(&serde_json::to_string(r)?);
            text.push('\n');
            if let Some(t) = r.local_tokens {
                tokens.push_str(&serde_json::to_string(&TokenLine {
                    line: i as u64 + 1,
                    tokens: t,
                    recorded: r.recorded_tokens,
                })?);
                tokens.push('\n');
            }
        }
        if let Some(dir) = turns.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(turns, text).with_context(|| format!("cannot write {}", turns.display()))?;
        let side = side_file(turns, "tokens");
        std::fs::write(&side, tokens).with_context(|| format!("cannot write {}", side.display()))
    }
}

/// The shards of one run, checked to belong together.
#[derive(Debug)]
pub struct Merged {
    pub run_id: String,
    pub count: u32,
    pub shards: Vec<ShardDir>,
    /// Why shards are missing (a lost shard), when they are.
    pub lost: Option<String>,
    pub performance: Option<MergedPhase>,
    pub accuracy: Option<MergedPhase>,
    pub distributed: Option<Distributed>,
}

/// Where a phase's journal is in a run directory.
pub fn phase_log(phase: &str) -> &'static str {
    match phase {
        "accuracy" => "accuracy/turns.jsonl",
        _ => "turns.jsonl",
    }
}

impl Merged {
    /// Reads the shard directories; `lost` is the coordinator's cause when
    /// a shard never completed its upload.
    pub fn read(dirs: &[PathBuf], lost: Option<String>) -> Result<Merged> {
        let mut shards: Vec<ShardDir> = Vec::new();
        for dir in dirs {
            let path = dir.join("shard.json");
            let header: ShardHeader = serde_json::from_slice(
                &std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?,
            )
            .with_context(|| format!("{} is not a shard header", path.display()))?;
            shards.push(ShardDir {
                dir: dir.clone(),
                header,
            });
        }
        let first = shards.first().context("no shard directories to merge")?;
        let (run_id, digest, count) = (
            first.header.run_id.clone(),
            first.header.config_digest.clone(),
            first.header.count,
        );
        let mut seen = BTreeSet::new();
        for s in &shards {
            let h = &s.header;
            if h.run_id != run_id || h.config_digest != digest || h.count != count {
                anyhow::bail!(
                    "{} is shard {} of {} of run {} (config {}), not of run {run_id} ({count} shards, \
                     config {digest}): only one run's shards merge",
                    s.dir.display(),
                    h.index,
                    h.count,
                    h.run_id,
                    h.config_digest
                );
            }
            if !seen.insert(h.index) {
                anyhow::bail!("shard {} is given twice ({})", h.index, s.dir.display());
            }
        }
        shards.sort_by_key(|s| s.header.index);
        let missing: Vec<String> = (0..count)
            .filter(|i| !seen.contains(i))
            .map(|i| i.to_string())
            .collect();
        let lost = match (lost, missing.is_empty()) {
            (Some(why), _) => Some(why),
            (None, false) => Some(format!(
                "shard(s) {} of {count} are not in the merge: their sessions are missing",
                missing.join(", ")
            )),
            (None, true) => None,
        };
        let mut merged = Merged {
            run_id,
            count,
            performance: merge_phase(&shards, "performance")?,
            accuracy: merge_phase(&shards, "accuracy")?,
            shards,
            lost,
            distributed: None,
        };
        merged.distributed = merged.performance.as_ref().map(|p| merged.describe(p));
        Ok(merged)
    }

    /// The `distributed` block of the performance phase's summary.
    fn describe(&self, phase: &MergedPhase) -> Distributed {
        let anchors: Vec<(&ShardDir, &PhaseAnchor)> = self
            .shards
            .iter()
            .filter_map(|s| last_anchor(&s.header, "performance").map(|a| (s, a)))
            .collect();
        let starts: Vec<u64> = anchors
            .iter()
            .map(|(_, a)| a.offset.to_coordinator(a.origin_mono_ns))
            .collect();
        let origin = starts.iter().copied().min().unwrap_or(0);
        let woke: Vec<u64> = anchors
            .iter()
            .map(|(_, a)| a.offset.to_coordinator(a.woke_mono_ns))
            .collect();
        let spread = |v: &[u64]| -> Option<u64> { Some(v.iter().max()? - v.iter().min()?) };
        let mut first_issues = Vec::new();
        let per_shard: Vec<ShardLoad> = anchors
            .iter()
            .zip(&starts)
            .map(|((s, a), start)| {
                let index = s.header.index;
                let mine: Vec<&TurnRecord> = phase
                    .lines
                    .iter()
                    .filter(|r| r.shard == Some(index) && r.status != TurnStatus::Interrupted)
                    .collect();
                let first = mine.iter().filter_map(|r| r.issued_ns).min();
                first_issues.extend(first);
                let last = mine.iter().filter_map(|r| r.complete_ns).max();
                let busy: u64 = mine
                    .iter()
                    .filter_map(|r| Some(r.complete_ns?.saturating_sub(r.issued_ns?)))
                    .sum();
                let window = match (first, last) {
                    (Some(a), Some(b)) if b > a => (b - a) as f64,
                    _ => f64::NAN,
                };
                ShardLoad {
                    index,
                    host: s.header.host.clone(),
                    sessions: phase
                        .sessions
                        .iter()
                        .filter(|o| mine.iter().any(|r| r.session_id == o.id))
                        .count(),
                    concurrency: s.header.concurrency,
                    mean_in_flight: busy as f64 / window,
                    turns_completed: mine.iter().filter(|r| r.completed()).count() as u64,
                    turns_failed: mine
                        .iter()
                        .filter(|r| r.status == TurnStatus::Failed)
                        .count() as u64,
                    offset_ns: a.offset.offset_ns,
                    offset_uncertainty_ns: a.offset.uncertainty_ns,
                    offset_drift_ns: a.offset.offset_ns - a.offset_at_start.offset_ns,
                    start_ns: start - origin,
                }
            })
            .collect();
        // The shards' histograms added up, against the exact values.
        let (mut ttft, mut e2e) = (histogram(), histogram());
        for s in &self.shards {
            header::add(&mut ttft, &s.header.histograms.ttft_ns);
            header::add(&mut e2e, &s.header.histograms.e2e_ns);
        }
        let (exact_ttft, exact_e2e) =
            header::latencies(&agentload_engine::TurnFacts::all(&phase.records()));
        let disagreement = header::check(&ttft, &exact_ttft, &QUANTILES)
            .map_err(|e| format!("TTFT: {e}"))
            .and_then(|()| {
                header::check(&e2e, &exact_e2e, &QUANTILES).map_err(|e| format!("e2e: {e}"))
            })
            .err();
        Distributed {
            run_id: self.run_id.clone(),
            shards: self.count,
            merged: self.shards.iter().map(|s| s.header.index).collect(),
            lost: self.lost.clone(),
            start_skew_ns: spread(&woke).unwrap_or(0),
            first_issue_skew_ns: spread(&first_issues),
            max_offset_uncertainty_ns: anchors
                .iter()
                .map(|(_, a)| a.offset.uncertainty_ns)
                .max()
                .unwrap_or(0),
            per_shard,
            histogram_check: HistogramCheck {
                agrees: disagreement.is_none(),
                quantiles: QUANTILES.to_vec(),
                values: (exact_ttft.len() + exact_e2e.len()) as u64,
                disagreement,
            },
        }
    }

    /// A phase's merged records.
    pub fn phase(&self, name: &str) -> Option<&MergedPhase> {
        match name {
            "accuracy" => self.accuracy.as_ref(),
            _ => self.performance.as_ref(),
        }
    }
}

/// The anchor of `phase` in the latest process that ran it.
fn last_anchor<'a>(h: &'a ShardHeader, phase: &str) -> Option<&'a PhaseAnchor> {
    h.anchors
        .iter()
        .filter(|a| a.phase == phase)
        .max_by_key(|a| a.segment)
}

/// One phase from every shard that has it: each record's times move by its
/// shard's (and process's) origin on the coordinator's clock, less the
/// earliest such origin, so the merged time line starts at 0.
fn merge_phase(shards: &[ShardDir], phase: &str) -> Result<Option<MergedPhase>> {
    let log = phase_log(phase);
    let present: Vec<&ShardDir> = shards
        .iter()
        .filter(|s| s.dir.join(log).is_file())
        .collect();
    if present.is_empty() {
        return Ok(None);
    }
    // (shard, segment) -> its anchor, and its origin on the coordinator's clock.
    let mut origins: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    let mut anchors: BTreeMap<(u32, u32), &PhaseAnchor> = BTreeMap::new();
    for s in &present {
        for a in s.header.anchors.iter().filter(|a| a.phase == phase) {
            origins.insert(
                (s.header.index, a.segment),
                a.offset.to_coordinator(a.origin_mono_ns),
            );
            anchors.insert((s.header.index, a.segment), a);
        }
    }
    // Each segment's time line starts at its earliest shard.
    let mut base: BTreeMap<u32, u64> = BTreeMap::new();
    for ((_, segment), at) in &origins {
        let b = base.entry(*segment).or_insert(*at);
        *b = (*b).min(*at);
    }
    let mut merged = MergedPhase {
        complete: true,
        ..MergedPhase::default()
    };
    for s in &present {
        let index = s.header.index;
        let path = s.dir.join(log);
        let turns = read_turns(&path).map_err(anyhow::Error::msg)?;
        for t in turns {
            let mut r = t.record;
            let shift = origins.get(&(index, r.segment)).with_context(|| {
                format!(
                    "{}: a record of process {} of the {phase} phase, whose clock anchor is not in \
                     shard.json",
                    path.display(),
                    r.segment
                )
            })? - base[&r.segment];
            for t in [
                &mut r.issued_ns,
                &mut r.first_byte_ns,
                &mut r.first_token_ns,
                &mut r.last_token_ns,
                &mut r.complete_ns,
                &mut r.scheduled_ns,
            ]
            .into_iter()
            .flatten()
            {
                *t += shift;
            }
            // The machine-wide stamp (paired with a simulator's) moves onto
            // the coordinator's clock too.
            let offset = anchors[&(index, r.segment)].offset;
            r.issued_mono_ns = r.issued_mono_ns.map(|m| offset.to_coordinator(m));
            r.shard = Some(index);
            merged.lines.push(r);
        }
        let sessions = path.with_file_name("sessions.json");
        match std::fs::read(&sessions) {
            Ok(bytes) => merged.sessions.extend(
                serde_json::from_slice::<Vec<SessionOutcome>>(&bytes)
                    .with_context(|| format!("{} is not a sessions list", sessions.display()))?,
            ),
            Err(_) => merged.complete = false,
        }
        let state = crate::run_state::RunState::load(&s.dir)?;
        merged.complete &= state.phase(phase) == crate::run_state::PhaseState::Complete;
    }
    merged
        .lines
        .sort_by_key(|r| (r.segment, r.issued_ns.unwrap_or(u64::MAX), r.shard, r.turn));
    Ok(Some(merged))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_state::{Mode, PhaseState, RunState};
    use agentload_shards::{LatencyHistograms, Offset};

    fn offset(offset_ns: i64) -> Offset {
        Offset {
            offset_ns,
            uncertainty_ns: 100,
            samples: 16,
        }
    }

    /// A shard directory whose phase started at `origin` on its own clock,
    /// `offset` behind the coordinator's, with one turn issued at 1 ms
    /// (its first token at 3 ms, its end at 10 ms).
    fn shard(root: &Path, index: u32, origin: u64, off: i64) -> PathBuf {
        let dir = root.join(index.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let mut r = TurnRecord::aborted(&format!("s{index}"), 1, "i", "{}");
        r.status = TurnStatus::Completed;
        (r.issued_ns, r.first_token_ns, r.complete_ns) =
            (Some(1_000_000), Some(3_000_000), Some(10_000_000));
        r.scheduled_ns = Some(900_000);
        std::fs::write(
            dir.join("turns.jsonl"),
            serde_json::to_string(&r).unwrap() + "\n",
        )
        .unwrap();
        std::fs::write(dir.join("sessions.json"), "[]").unwrap();
        let mut state = RunState::new(Mode::Performance, false);
        state.set_phase("performance", PhaseState::Complete);
        state.save(&dir).unwrap();
        let header = ShardHeader {
            run_id: "r".into(),
            config_digest: "d".into(),
            index,
            count: 2,
            host: format!("h{index}"),
            concurrency: 1,
            started_at: String::new(),
            anchors: vec![PhaseAnchor {
                phase: "performance".into(),
                segment: 0,
                origin_mono_ns: origin,
                start_coordinator_ns: 0,
                woke_mono_ns: origin + 50,
                offset_at_start: offset(off),
                offset: offset(off),
            }],
            histograms: LatencyHistograms::of(&[2_000_000], &[9_000_000]),
        };
        agentload_results::write_json(&dir.join("shard.json"), &header).unwrap();
        dir
    }

    #[test]
    fn records_move_onto_one_time_line_and_keep_their_durations() {
        let root = tempfile::tempdir().unwrap();
        // Shard 1's clock runs 7 s ahead of the coordinator's, and it started
        // 2 ms after shard 0 on the coordinator's clock.
        let a = shard(root.path(), 0, 50_000_000_000, 0);
        let b = shard(root.path(), 1, 57_002_000_000, -7_000_000_000);
        let merged = Merged::read(&[b, a], None).unwrap();
        assert!(merged.lost.is_none());
        let p = merged.performance.as_ref().unwrap();
        let by_shard = |i| p.lines.iter().find(|r| r.shard == Some(i)).unwrap();
        assert_eq!(by_shard(0).issued_ns, Some(1_000_000));
        assert_eq!(by_shard(1).issued_ns, Some(3_000_000));
        assert_eq!(by_shard(1).scheduled_ns, Some(2_900_000));
        for i in [0, 1] {
            let r = by_shard(i);
            assert_eq!(r.complete_ns.unwrap() - r.issued_ns.unwrap(), 9_000_000);
        }
        let d = merged.distributed.as_ref().unwrap();
        assert_eq!(d.start_skew_ns, 2_000_000);
        assert!(d.histogram_check.agrees, "{d:?}");
        assert_eq!(d.per_shard[1].start_ns, 2_000_000);
    }

    #[test]
    fn shards_of_another_run_or_given_twice_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let a = shard(root.path(), 0, 0, 0);
        let err = Merged::read(&[a.clone(), a.clone()], None).unwrap_err();
        assert!(err.to_string().contains("given twice"), "{err}");
        let b = shard(root.path(), 1, 0, 0);
        let mut h: ShardHeader =
            serde_json::from_slice(&std::fs::read(b.join("shard.json")).unwrap()).unwrap();
        h.config_digest = "other".into();
        agentload_results::write_json(&b.join("shard.json"), &h).unwrap();
        let err = Merged::read(&[a.clone(), b], None).unwrap_err().to_string();
        assert!(err.contains("only one run's shards merge"), "{err}");
        // A shard left out is named, and the run is not whole.
        let merged = Merged::read(&[a], None).unwrap();
        assert!(merged.lost.unwrap().contains("shard(s) 1 of 2"));
    }
}
