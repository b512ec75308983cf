//! `agentload merge`: a sharded run's result files from its shards' raw
//! records. Each shard's times are mapped onto the coordinator's clock (one
//! constant per shard and process, so every latency stays exactly what the
//! shard measured), the records are brought together, and the run's files
//! are written by the same code a single-process run uses: every
//! percentile is an order statistic over the union. The shards' latency
//! histograms, added together, are checked against those exact values.

use agentload_engine::journal::{each_turn_at, side_file, Span, TokenLine, TurnLog};
use agentload_engine::{Interner, SessionOutcome, TurnFacts, TurnRecord, TurnStatus};
use agentload_results::distributed::{Distributed, HistogramCheck, ShardLoad};
use agentload_shards::header::{self, histogram, ShardHeader};
use agentload_shards::{Offset, PhaseAnchor};
use anyhow::{Context as _, Result};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// Quantiles the histogram cross-check compares.
const QUANTILES: [f64; 6] = [0.5, 0.9, 0.95, 0.99, 0.999, 1.0];

/// A shard's directory as uploaded (or as it wrote it).
#[derive(Debug)]
pub struct ShardDir {
    pub dir: PathBuf,
    pub header: ShardHeader,
}

/// One phase's journal lines from every shard, placed on one time line. A line is held
/// as where to read it again (a few dozen bytes), not as its record: the merged journal
/// is written by reading each line once more, in order.
#[derive(Debug, Default)]
pub struct MergedPhase {
    /// Every journal line, interrupted ones included, in the merged order.
    lines: Vec<Placed>,
    /// The shards' turn logs, by [`Placed::log`].
    logs: Vec<ShardLog>,
    /// Each (shard, process)'s move onto the merged time line.
    shifts: BTreeMap<(u32, u32), Shift>,
    interrupted: u64,
    pub sessions: Vec<SessionOutcome>,
    /// Every shard finished the phase.
    pub complete: bool,
}

/// A journal line of a shard: its key on the merged time line and where it is.
#[derive(Debug, Clone, Copy)]
struct Placed {
    segment: u32,
    /// Issued, on the merged time line (`u64::MAX`: never issued).
    issued_ns: u64,
    turn: u32,
    /// Which of [`MergedPhase::logs`] (in shard order: it also orders by shard), its line
    /// there and its bytes.
    log: u32,
    line: u64,
    span: Span,
}

#[derive(Debug)]
struct ShardLog {
    shard: u32,
    path: PathBuf,
}

/// How a (shard, process)'s records move onto the merged time line.
#[derive(Debug, Clone, Copy)]
struct Shift {
    /// Added to every phase-relative stamp.
    by_ns: u64,
    /// The shard's clock against the coordinator's.
    offset: Offset,
}

impl MergedPhase {
    /// How far shard `shard`'s first process's phase-relative times move onto the merged
    /// time line, ns.
    pub fn shift_ns(&self, shard: u32) -> Option<u64> {
        self.shifts.get(&(shard, 0)).map(|s| s.by_ns)
    }

    /// Turns a signal cut.
    pub fn interrupted(&self) -> u64 {
        self.interrupted
    }

    /// Writes the merged journal (`turns.jsonl` and its token side file), one line at a
    /// time; `each` sees every record (interrupted ones included) with its merged line.
    pub fn write_journal(
        &self,
        out: &agentload_fs::OutDir,
        turns: &Path,
        mut each: impl FnMut(&TurnRecord, u64),
    ) -> Result<()> {
        let create = |rel: &Path| {
            out.staged(rel)
                .map(std::io::BufWriter::new)
                .with_context(|| format!("cannot write {}", out.path(rel).display()))
        };
        let side = side_file(turns, "tokens");
        let (mut text, mut tokens) = (create(turns)?, create(&side)?);
        let logs = self
            .logs
            .iter()
            .map(|l| TurnLog::open(&l.path).map_err(anyhow::Error::msg))
            .collect::<Result<Vec<_>>>()?;
        for (line, at) in (1u64..).zip(&self.lines) {
            let mut r = logs[at.log as usize]
                .turn(at.line, at.span)
                .map_err(anyhow::Error::msg)?;
            let shard = self.logs[at.log as usize].shard;
            self.place(&mut r, shard)?;
            serde_json::to_writer(&mut text, &r)?;
            text.write_all(b"\n")?;
            if let Some(t) = r.local_tokens {
                serde_json::to_writer(
                    &mut tokens,
                    &TokenLine {
                        line,
                        tokens: t,
                        recorded: r.recorded_tokens,
                    },
                )?;
                tokens.write_all(b"\n")?;
            }
            each(&r, line);
        }
        for (file, rel) in [(text, turns), (tokens, side.as_path())] {
            file.into_inner()
                .map_err(|e| anyhow::Error::new(e.into_error()))
                .and_then(|f| f.commit().map_err(anyhow::Error::new))
                .with_context(|| format!("cannot write {}", out.path(rel).display()))?;
        }
        Ok(())
    }

    /// Moves a record of `shard` onto the merged time line and tags it with its shard.
    fn place(&self, r: &mut TurnRecord, shard: u32) -> Result<()> {
        let shift = self.shifts.get(&(shard, r.segment)).with_context(|| {
            format!(
                "shard {shard}: a record of process {}, whose clock anchor is not in shard.json",
                r.segment
            )
        })?;
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
            *t += shift.by_ns;
        }
        // The machine-wide stamp (paired with a simulator's) moves onto the
        // coordinator's clock too.
        r.issued_mono_ns = r.issued_mono_ns.map(|m| shift.offset.to_coordinator(m));
        r.shard = Some(shard);
        Ok(())
    }
}

/// What the `distributed` block reads of a phase, gathered while its logs are read.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    shards: BTreeMap<u32, ShardTally>,
    /// Every answered turn's TTFT and end-to-end latency, ns.
    ttft: Vec<u64>,
    e2e: Vec<u64>,
}

/// One shard's counted turns.
#[derive(Debug, Default)]
struct ShardTally {
    first_issued: Option<u64>,
    last_complete: Option<u64>,
    /// Issue to completion, summed.
    busy_ns: u64,
    completed: u64,
    failed: u64,
    sessions: HashSet<std::sync::Arc<str>>,
}

impl Tally {
    fn add(&mut self, shard: u32, turn: &TurnFacts) {
        let (ttft, e2e) = header::latency(turn);
        self.ttft.extend(ttft);
        self.e2e.extend(e2e);
        let s = self.shards.entry(shard).or_default();
        if let Some(at) = turn.issued_ns() {
            s.first_issued = Some(s.first_issued.map_or(at, |first| first.min(at)));
        }
        s.last_complete = s.last_complete.max(turn.complete_ns());
        if let (Some(a), Some(b)) = (turn.issued_ns(), turn.complete_ns()) {
            s.busy_ns += b.saturating_sub(a);
        }
        s.completed += u64::from(turn.completed());
        s.failed += u64::from(turn.status == TurnStatus::Failed);
        s.sessions.insert(turn.session_id.clone());
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
                &agentload_fs::read::read(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?,
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
        let performance = merge_phase(&shards, "performance")?;
        let accuracy = merge_phase(&shards, "accuracy")?.map(|(phase, _)| phase);
        let mut merged = Merged {
            run_id,
            count,
            performance: None,
            accuracy,
            shards,
            lost,
            distributed: None,
        };
        if let Some((phase, tally)) = performance {
            merged.distributed = Some(merged.describe(&phase, tally));
            merged.performance = Some(phase);
        }
        Ok(merged)
    }

    /// The `distributed` block of the performance phase's summary.
    fn describe(&self, phase: &MergedPhase, tally: Tally) -> Distributed {
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
                let mine = tally.shards.get(&index);
                let first = mine.and_then(|t| t.first_issued);
                first_issues.extend(first);
                let last = mine.and_then(|t| t.last_complete);
                let window = match (first, last) {
                    (Some(a), Some(b)) if b > a => (b - a) as f64,
                    _ => f64::NAN,
                };
                ShardLoad {
                    index,
                    host: s.header.host.clone(),
                    sessions: mine.map_or(0, |t| {
                        phase
                            .sessions
                            .iter()
                            .filter(|o| t.sessions.contains(o.id.as_str()))
                            .count()
                    }),
                    concurrency: s.header.concurrency,
                    mean_in_flight: mine.map_or(0, |t| t.busy_ns) as f64 / window,
                    turns_completed: mine.map_or(0, |t| t.completed),
                    turns_failed: mine.map_or(0, |t| t.failed),
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
        let (exact_ttft, exact_e2e) = (tally.ttft, tally.e2e);
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
/// earliest such origin, so the merged time line starts at 0. The logs are read
/// one line at a time; what the `distributed` block needs is tallied on the way.
/// `shards` are in index order (a line's log then orders it by shard).
fn merge_phase(shards: &[ShardDir], phase: &str) -> Result<Option<(MergedPhase, Tally)>> {
    merge_phase_at(shards, phase, phase_log(phase))
}

/// As [`merge_phase`], for the phase whose anchors are keyed `phase` and whose journal is
/// at `log` in each shard's directory (a sweep phase's).
pub(crate) fn merge_phase_at(
    shards: &[ShardDir],
    phase: &str,
    log: &str,
) -> Result<Option<(MergedPhase, Tally)>> {
    let present: Vec<&ShardDir> = shards
        .iter()
        .filter(|s| s.dir.join(log).is_file())
        .collect();
    if present.is_empty() {
        return Ok(None);
    }
    // (shard, segment) -> its anchor's origin on the coordinator's clock, and its clock.
    let mut origins: BTreeMap<(u32, u32), (u64, Offset)> = BTreeMap::new();
    for s in &present {
        for a in s.header.anchors.iter().filter(|a| a.phase == phase) {
            origins.insert(
                (s.header.index, a.segment),
                (a.offset.to_coordinator(a.origin_mono_ns), a.offset),
            );
        }
    }
    // Each segment's time line starts at its earliest shard.
    let mut base: BTreeMap<u32, u64> = BTreeMap::new();
    for ((_, segment), (at, _)) in &origins {
        let b = base.entry(*segment).or_insert(*at);
        *b = (*b).min(*at);
    }
    let mut merged = MergedPhase {
        complete: true,
        shifts: origins
            .iter()
            .map(|(&(shard, segment), &(at, offset))| {
                let by_ns = at - base[&segment];
                ((shard, segment), Shift { by_ns, offset })
            })
            .collect(),
        ..MergedPhase::default()
    };
    let mut tally = Tally::default();
    let mut strings = Interner::default();
    for s in &present {
        let index = s.header.index;
        let path = s.dir.join(log);
        let source = merged.logs.len() as u32;
        let mut failed = None;
        each_turn_at(&path, |t, span| {
            if failed.is_some() {
                return;
            }
            let mut r = t.record;
            if let Err(e) = merged.place(&mut r, index) {
                failed = Some(e.context(format!("{} ({phase} phase)", path.display())));
                return;
            }
            if r.status == TurnStatus::Interrupted {
                merged.interrupted += 1;
            } else {
                tally.add(index, &TurnFacts::of(&r, 0, &mut strings));
            }
            merged.lines.push(Placed {
                segment: r.segment,
                issued_ns: r.issued_ns.unwrap_or(u64::MAX),
                turn: r.turn,
                log: source,
                line: t.line,
                span,
            });
        })
        .map_err(anyhow::Error::msg)?;
        if let Some(e) = failed {
            return Err(e);
        }
        merged.logs.push(ShardLog { shard: index, path });
        let sessions = s.dir.join(log).with_file_name("sessions.json");
        match agentload_fs::read::read(&sessions) {
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
        .sort_by_key(|l| (l.segment, l.issued_ns, l.log, l.turn));
    Ok(Some((merged, tally)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_state::{Mode, PhaseState, RunState};
    use agentload_engine::LocalTokens;
    use agentload_shards::LatencyHistograms;

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
        agentload_fs::OutDir::new(&dir)
            .write_json("shard.json", &header)
            .unwrap();
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
        let turns = root.path().join("merged/turns.jsonl");
        let mut lines = Vec::new();
        (merged.performance.as_ref().unwrap())
            .write_journal(
                &agentload_fs::OutDir::new(root.path()),
                Path::new("merged/turns.jsonl"),
                |_, line| lines.push(line),
            )
            .unwrap();
        assert_eq!(lines, [1, 2]);
        let records = agentload_engine::read_records(&turns).unwrap();
        let by_shard = |i| records.iter().find(|r| r.shard == Some(i)).unwrap();
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

    /// Rewrites a shard's journal: a completed record per `(session, turn, issued ms)`,
    /// `interrupted` turns cut by a signal, local counts for every line and the lines in
    /// `superseded` superseded.
    fn write_log(dir: &Path, turns: &[(&str, u32, u64, bool)], superseded: &[u64]) {
        let (mut text, mut counts, mut gone) = (String::new(), String::new(), String::new());
        for (i, &(session, turn, issued_ms, interrupted)) in turns.iter().enumerate() {
            let mut r = TurnRecord::aborted(session, turn, "i", "{}");
            r.status = if interrupted {
                TurnStatus::Interrupted
            } else {
                TurnStatus::Completed
            };
            r.issued_ns = Some(issued_ms * 1_000_000);
            r.first_token_ns = Some(issued_ms * 1_000_000 + 500);
            r.complete_ns = Some(issued_ms * 1_000_000 + 1_000);
            text += &(serde_json::to_string(&r).unwrap() + "\n");
            let tokens = LocalTokens {
                isl: 100 + turn,
                osl: 7,
                osl_after_first: 6,
                osl_count_ns: 0,
            };
            counts += &(serde_json::to_string(&TokenLine {
                line: i as u64 + 1,
                tokens,
                recorded: None,
            })
            .unwrap()
                + "\n");
        }
        for line in superseded {
            gone += &format!("{{\"line\":{line}}}\n");
        }
        let turns = dir.join("turns.jsonl");
        std::fs::write(&turns, text).unwrap();
        std::fs::write(side_file(&turns, "tokens"), counts).unwrap();
        std::fs::write(side_file(&turns, "superseded"), gone).unwrap();
    }

    #[test]
    fn the_merged_journal_is_in_issue_order_with_its_counts_moved_to_its_lines() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (
            shard(root.path(), 0, 1_000_000_000, 0),
            shard(root.path(), 1, 1_000_000_000, 0),
        );
        // Logs are in completion order, not issue order; shard 0's second line was
        // superseded by a resume, shard 1's last was cut by a signal.
        write_log(
            &a,
            &[("a", 2, 30, false), ("a", 9, 5, false), ("a", 1, 10, false)],
            &[2],
        );
        write_log(
            &b,
            &[("b", 2, 20, false), ("b", 1, 1, false), ("b", 3, 40, true)],
            &[],
        );
        let merged = Merged::read(&[a, b], None).unwrap();
        let phase = merged.performance.as_ref().unwrap();
        assert_eq!(phase.interrupted(), 1);
        let turns = root.path().join("merged/turns.jsonl");
        let mut seen = Vec::new();
        phase
            .write_journal(
                &agentload_fs::OutDir::new(root.path()),
                Path::new("merged/turns.jsonl"),
                |r, line| {
                    seen.push((
                        line,
                        r.session_id.clone(),
                        r.turn,
                        r.local_tokens.unwrap().isl,
                    ))
                },
            )
            .unwrap();
        let want = [("b", 1), ("a", 1), ("b", 2), ("a", 2), ("b", 3)];
        let got: Vec<(&str, u32)> = seen.iter().map(|(_, s, t, _)| (s.as_str(), *t)).collect();
        assert_eq!(got, want);
        for (i, (line, _, turn, isl)) in seen.iter().enumerate() {
            assert_eq!(*line, i as u64 + 1);
            assert_eq!(*isl, 100 + turn, "a line keeps its own local counts");
        }
        // Read back, the journal and its side file agree with what `each` saw.
        let read = agentload_engine::journal::read_turns(&turns).unwrap();
        assert_eq!(read.len(), 5);
        for (t, (line, session, turn, isl)) in read.iter().zip(&seen) {
            assert_eq!(
                (t.line, &t.record.session_id, t.record.turn),
                (*line, session, *turn)
            );
            assert_eq!(t.record.local_tokens.unwrap().isl, *isl);
        }
        let d = merged.distributed.as_ref().unwrap();
        assert_eq!(d.per_shard[0].turns_completed, 2);
        assert_eq!(
            d.per_shard[1].turns_completed, 2,
            "the interrupted turn is not counted"
        );
        assert_eq!(
            d.histogram_check.values, 8,
            "4 counted turns, TTFT and e2e each"
        );
    }

    #[test]
    fn a_log_that_changes_between_its_reads_fails_the_merge_naming_it() {
        let root = tempfile::tempdir().unwrap();
        let (a, b) = (
            shard(root.path(), 0, 1_000_000_000, 0),
            shard(root.path(), 1, 1_000_000_000, 0),
        );
        let merged = Merged::read(&[a.clone(), b], None).unwrap();
        std::fs::write(a.join("turns.jsonl"), "x".repeat(4096)).unwrap();
        let err = (merged.performance.as_ref().unwrap())
            .write_journal(
                &agentload_fs::OutDir::new(root.path()),
                Path::new("merged/turns.jsonl"),
                |_, _| {},
            )
            .unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("turns.jsonl") && text.contains("changed since it was read"),
            "{text}"
        );
    }

    #[test]
    fn a_record_of_a_process_without_an_anchor_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let a = shard(root.path(), 0, 1_000_000_000, 0);
        let mut r = TurnRecord::aborted("a", 1, "i", "{}");
        r.segment = 3;
        std::fs::write(
            a.join("turns.jsonl"),
            serde_json::to_string(&r).unwrap() + "\n",
        )
        .unwrap();
        let err = format!("{:#}", Merged::read(&[a], None).unwrap_err());
        assert!(
            err.contains("process 3") && err.contains("clock anchor"),
            "{err}"
        );
        assert!(err.contains("turns.jsonl"), "{err}");
    }

    #[test]
    fn a_merged_line_is_held_in_48_bytes() {
        // docs/performance.md counts on it: a merge's memory per line, whatever the record.
        assert_eq!(std::mem::size_of::<Placed>(), 48);
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
        agentload_fs::OutDir::new(&b)
            .write_json("shard.json", &h)
            .unwrap();
        let err = Merged::read(&[a.clone(), b], None).unwrap_err().to_string();
        assert!(err.contains("only one run's shards merge"), "{err}");
        // A shard left out is named, and the run is not whole.
        let merged = Merged::read(&[a], None).unwrap();
        assert!(merged.lost.unwrap().contains("shard(s) 1 of 2"));
    }
}
