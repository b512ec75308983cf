//! `agentload export DIR --csv`: a result directory as three CSV tables,
//! `turns.csv` (one row per turn, every phase), `sessions.csv` (one row per
//! session or sweep trajectory) and `phases.csv` (one row per phase: the
//! performance and accuracy phases of a run, or each sweep phase).
//!
//! Text that the server or the dataset controls (ids, finish reasons, error
//! messages) is written as [`Text`]: a cell that a spreadsheet would read as
//! a formula (it begins with `=`, `+`, `-`, `@`, a tab or a carriage return)
//! gets a leading `'`, as OWASP's CSV-injection guidance and the
//! spreadsheet applications document, so opening the file runs nothing.

use crate::error::{io, ReportError, Result};
use crate::read::{self, RunDir, Session, Turn};
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A text cell, neutralised against formula injection (see the module docs).
struct Text<'a>(&'a str);

impl Serialize for Text<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.starts_with(['=', '+', '-', '@', '\t', '\r']) {
            s.serialize_str(&format!("'{}", self.0))
        } else {
            s.serialize_str(self.0)
        }
    }
}

#[derive(Serialize)]
struct TurnRow<'a> {
    phase: &'a str,
    session_id: Text<'a>,
    turn: u32,
    item_id: Text<'a>,
    agent: Option<u32>,
    status: &'static str,
    issued_s: Option<f64>,
    ttft_ms: Option<f64>,
    tpot_ms: Option<f64>,
    latency_ms: Option<f64>,
    output_speed_tps: Option<f64>,
    isl: Option<u64>,
    osl: Option<u64>,
    cached_tokens: Option<u64>,
    finish_reason: Option<Text<'a>>,
    scheduled_s: Option<f64>,
    send_lag_ms: Option<f64>,
    error: Option<Text<'a>>,
}

#[derive(Serialize)]
struct SessionRow<'a> {
    phase: &'a str,
    id: Text<'a>,
    expected_turns: Option<u32>,
    completed: u32,
    failed: u32,
    aborted: u32,
    error: Option<Text<'a>>,
}

/// One phase; empty cells where the phase has no such number.
#[derive(Serialize, Default)]
struct PhaseRow {
    phase: String,
    level: Option<u64>,
    turns: u64,
    completed: u64,
    failed: u64,
    aborted: u64,
    duration_s: Option<f64>,
    turns_per_s: Option<f64>,
    output_tps: Option<f64>,
    total_tps: Option<f64>,
    ttft_p50_ms: Option<f64>,
    ttft_p90_ms: Option<f64>,
    ttft_p99_ms: Option<f64>,
    tpot_p50_ms: Option<f64>,
    tpot_p99_ms: Option<f64>,
    latency_p50_ms: Option<f64>,
    latency_p99_ms: Option<f64>,
    speed_p25_tps: Option<f64>,
    cached_fraction: Option<f64>,
    send_lag_p99_ms: Option<f64>,
    score: Option<f64>,
    end_reason: Option<String>,
}

fn secs(ns: Option<u64>) -> Option<f64> {
    ns.map(|n| n as f64 / 1e9)
}

fn millis(ns: Option<u64>) -> Option<f64> {
    ns.map(|n| n as f64 / 1e6)
}

fn turn_row<'a>(phase: &'a str, t: &'a Turn, local_first: bool) -> TurnRow<'a> {
    TurnRow {
        phase,
        session_id: Text(&t.session_id),
        turn: t.turn,
        item_id: Text(&t.item_id),
        agent: t.agent,
        status: t.status.as_str(),
        issued_s: secs(t.issued_ns),
        ttft_ms: millis(t.ttft_ns()),
        tpot_ms: t.tpot_ns(local_first).map(|ns| ns / 1e6),
        latency_ms: millis(t.latency_ns()),
        output_speed_tps: t.output_speed_tps(),
        isl: t.isl(),
        osl: t.osl(),
        cached_tokens: t.cached(),
        finish_reason: t.finish_reason().map(Text),
        scheduled_s: secs(t.scheduled_ns),
        send_lag_ms: millis(t.send_lag_ns()),
        error: t.error.as_deref().map(Text),
    }
}

/// Per-trajectory counts of a sweep phase, from its turns.
fn trajectories(turns: &[Turn]) -> Vec<Session> {
    let mut out: Vec<Session> = Vec::new();
    for t in turns {
        let i = match out.iter().position(|s| s.id == t.session_id) {
            Some(i) => i,
            None => {
                out.push(Session {
                    id: t.session_id.clone(),
                    expected_turns: 0,
                    completed: 0,
                    failed: 0,
                    aborted: 0,
                    error: None,
                });
                out.len() - 1
            }
        };
        let s = &mut out[i];
        match t.status {
            read::Status::Completed => s.completed += 1,
            read::Status::Failed => s.failed += 1,
            _ => s.aborted += 1,
        }
    }
    out
}

fn counts(turns: &[Turn]) -> (u64, u64, u64, u64) {
    let n = |st: read::Status| turns.iter().filter(|t| t.status == st).count() as u64;
    (
        turns.len() as u64,
        n(read::Status::Completed),
        n(read::Status::Failed),
        n(read::Status::Aborted),
    )
}

fn perf_row(run: &RunDir, summary: &Value) -> PhaseRow {
    let (turns, completed, failed, aborted) = counts(&run.turns);
    let p = |k: &str, q: &str| summary[k]["percentiles"][q].as_f64().map(|v| v / 1e6);
    let lag = agentload_results::metrics::Spread::of(
        run.turns
            .iter()
            .filter_map(Turn::send_lag_ns)
            .map(|n| n as f64 / 1e6)
            .collect(),
    );
    PhaseRow {
        phase: "performance".into(),
        turns,
        completed,
        failed,
        aborted,
        duration_s: summary["duration_ns"].as_f64().map(|n| n / 1e9),
        turns_per_s: summary["qps"].as_f64(),
        output_tps: summary["tps"].as_f64(),
        ttft_p50_ms: p("ttft", "50.0"),
        ttft_p90_ms: p("ttft", "90.0"),
        ttft_p99_ms: p("ttft", "99.0"),
        tpot_p50_ms: p("tpot", "50.0"),
        tpot_p99_ms: p("tpot", "99.0"),
        latency_p50_ms: p("latency", "50.0"),
        latency_p99_ms: p("latency", "99.0"),
        send_lag_p99_ms: lag.map(|l| l.p99),
        score: run.scores.as_ref().and_then(|s| s["score"].as_f64()),
        ..PhaseRow::default()
    }
}

fn sweep_row(p: &Value, turns: &[Turn]) -> PhaseRow {
    let (n, completed, failed, aborted) = counts(turns);
    let f = |v: &Value| v.as_f64();
    PhaseRow {
        phase: format!("sweep phase {}", p["index"]),
        level: p["level"].as_u64(),
        turns: n,
        completed,
        failed,
        aborted,
        duration_s: f(&p["window"]["seconds"]),
        turns_per_s: f(&p["window"]["seconds"])
            .zip(f(&p["window"]["measured"]))
            .filter(|(s, _)| *s > 0.0)
            .map(|(s, m)| m / s),
        output_tps: f(&p["throughput"]["output_tps"]),
        total_tps: f(&p["throughput"]["total_tps"]),
        ttft_p50_ms: f(&p["ttft_ms"]["p50"]),
        ttft_p90_ms: f(&p["ttft_ms"]["p90"]),
        ttft_p99_ms: f(&p["ttft_ms"]["p99"]),
        speed_p25_tps: f(&p["output_speed_tps"]["p25"]),
        cached_fraction: f(&p["throughput"]["cached_fraction"]),
        send_lag_p99_ms: f(&p["send_lag_ms"]["p99"]),
        end_reason: p["end_reason"].as_str().map(str::to_owned),
        ..PhaseRow::default()
    }
}

/// One CSV table being written (under a temporary name until it is whole),
/// with its path for messages.
struct Table {
    path: PathBuf,
    csv: csv::Writer<agentload_fs::Staged>,
}

impl Table {
    fn create(out: &agentload_fs::OutDir, rel: &Path) -> Result<Self> {
        let staged = out.staged(rel)?;
        Ok(Self {
            path: staged.path().to_path_buf(),
            csv: csv::Writer::from_writer(staged),
        })
    }

    fn serialize(&mut self, row: impl Serialize) -> Result<()> {
        self.csv.serialize(row).map_err(|source| ReportError::Csv {
            path: self.path.clone(),
            source,
        })
    }

    /// Puts the whole table in place.
    fn commit(self) -> Result<()> {
        let staged = self
            .csv
            .into_inner()
            .map_err(|e| io("write", &self.path)(e.into_error()))?;
        Ok(staged.commit()?)
    }
}

/// Writes the three tables for `dir` into `out` (default `dir/export`);
/// returns their paths.
pub fn csv(dir: &Path, out: Option<&Path>) -> Result<Vec<PathBuf>> {
    let run = RunDir::read(dir)?;
    let local_first = run.local_counts_first();
    // Into the run directory, or a folder the user named: never through a link.
    let (root, folder) = match out {
        Some(out) => (agentload_fs::OutDir::new(out), PathBuf::new()),
        None => (agentload_fs::OutDir::new(dir), PathBuf::from("export")),
    };
    let rels: Vec<PathBuf> = ["turns.csv", "sessions.csv", "phases.csv"]
        .iter()
        .map(|f| folder.join(f))
        .collect();
    let (mut turns, mut sessions, mut phases) = (
        Table::create(&root, &rels[0])?,
        Table::create(&root, &rels[1])?,
        Table::create(&root, &rels[2])?,
    );
    let paths: Vec<PathBuf> = rels.iter().map(|r| root.path(r)).collect();
    for t in &run.turns {
        turns.serialize(turn_row("performance", t, local_first))?;
    }
    for t in &run.accuracy_turns {
        turns.serialize(turn_row("accuracy", t, local_first))?;
    }
    for s in &run.sessions {
        sessions.serialize(session_row("performance", s, true))?;
    }
    for s in &run.accuracy_sessions {
        sessions.serialize(session_row("accuracy", s, true))?;
    }
    if let Some(summary) = &run.summary {
        phases.serialize(perf_row(&run, summary))?;
    }
    if let Some(sw) = &run.sweep {
        for (p, phase_turns) in sw.phases().iter().zip(&sw.phase_turns) {
            let name = format!("sweep phase {} (c{})", p["index"], p["level"]);
            for t in phase_turns {
                turns.serialize(turn_row(&name, t, local_first))?;
            }
            for s in trajectories(phase_turns) {
                sessions.serialize(session_row(&name, &s, false))?;
            }
            phases.serialize(sweep_row(p, phase_turns))?;
        }
    }
    if !run.accuracy_turns.is_empty() || run.accuracy.is_some() {
        let (n, completed, failed, aborted) = counts(&run.accuracy_turns);
        let entry = run
            .accuracy
            .as_ref()
            .and_then(|a| a.bfcl().or(a.multi_turn()).or(a.entries.first()));
        phases.serialize(PhaseRow {
            phase: "accuracy".into(),
            turns: n,
            completed,
            failed,
            aborted,
            score: entry.and_then(|e| e["score"].as_f64()),
            ..PhaseRow::default()
        })?;
    }
    for table in [turns, sessions, phases] {
        table.commit()?;
    }
    Ok(paths)
}

/// A session's row; `planned`: whether its expected turn count is known.
fn session_row<'a>(phase: &'a str, s: &'a Session, planned: bool) -> SessionRow<'a> {
    SessionRow {
        phase,
        id: Text(&s.id),
        expected_turns: planned.then_some(s.expected_turns),
        completed: s.completed,
        failed: s.failed,
        aborted: s.aborted,
        error: s.error.as_deref().map(Text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_turn_session_and_phase() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("run_manifest.json"), "{}").unwrap();
        std::fs::write(
            d.join("turns.jsonl"),
            concat!(
                r#"{"session_id":"a","turn":1,"status":"completed","issued_ns":1000000,"first_token_ns":3000000,"complete_ns":5000000,"usage":{"prompt_tokens":10,"completion_tokens":3},"error":null}"#,
                "\n",
                r#"{"session_id":"a","turn":2,"status":"failed","issued_ns":6000000,"complete_ns":7000000,"error":"HTTP 500, \"boom\""}"#,
                "\n",
                r#"{"session_id":"a","turn":3,"status":"aborted","error":"aborted"}"#,
                "\n"
            ),
        )
        .unwrap();
        std::fs::write(
            d.join("sessions.json"),
            r#"[{"id":"a","expected_turns":3,"completed":1,"failed":1,"aborted":1}]"#,
        )
        .unwrap();
        std::fs::create_dir_all(d.join("performance")).unwrap();
        std::fs::write(
            d.join("performance/result_summary.json"),
            r#"{"duration_ns":6000000,"qps":166.7,"tps":500.0,"ttft":{"percentiles":{"50.0":2000000}}}"#,
        )
        .unwrap();
        let paths = csv(d, None).unwrap();
        let read = |i: usize| std::fs::read_to_string(&paths[i]).unwrap();
        let turns = read(0);
        let lines: Vec<&str> = turns.lines().collect();
        assert_eq!(lines.len(), 4, "{turns}");
        assert!(lines[0].starts_with("phase,session_id,turn,item_id,agent,status,issued_s,ttft_ms"));
        assert!(
            lines[1].starts_with("performance,a,1,,,completed,0.001,2.0,"),
            "{}",
            lines[1]
        );
        // Quotes and commas in errors survive.
        assert!(
            lines[2].ends_with(r#""HTTP 500, ""boom""""#),
            "{}",
            lines[2]
        );
        assert!(read(1).contains("performance,a,3,1,1,1,"), "{}", read(1));
        let phases = read(2);
        assert!(
            phases
                .lines()
                .nth(1)
                .unwrap()
                .starts_with("performance,,3,1,1,1,0.006,166.7,500.0,,2.0,"),
            "{phases}"
        );
    }

    #[test]
    fn cells_a_spreadsheet_would_run_are_neutralised() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("run_manifest.json"), "{}").unwrap();
        let evil = [
            r#"{"session_id":"=1+1","turn":1,"item_id":"@SUM(A1)","status":"completed","issued_ns":1,"first_token_ns":2,"complete_ns":3,"completion":{"content":"hi","finish_reason":"=HYPERLINK(\"http://x\",\"y\")"},"error":null}"#,
            r#"{"session_id":"+cmd","turn":2,"item_id":"-2+3","status":"failed","error":"\tleading tab"}"#,
            r#"{"session_id":"ok","turn":3,"status":"failed","error":"\rcarriage"}"#,
        ];
        std::fs::write(d.join("turns.jsonl"), evil.join("\n") + "\n").unwrap();
        std::fs::write(
            d.join("sessions.json"),
            r#"[{"id":"=1+1","expected_turns":1,"completed":1,"failed":0,"aborted":0,"error":"@x"}]"#,
        )
        .unwrap();
        let paths = csv(d, None).unwrap();
        let mut reader = ::csv::Reader::from_path(&paths[0]).unwrap();
        let headers = reader.headers().unwrap().clone();
        let rows: Vec<::csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
        let (sid, item, fin, err) = (
            col("session_id"),
            col("item_id"),
            col("finish_reason"),
            col("error"),
        );
        assert_eq!(&rows[0][sid], "'=1+1");
        assert_eq!(&rows[0][item], "'@SUM(A1)");
        assert_eq!(&rows[0][fin], "'=HYPERLINK(\"http://x\",\"y\")");
        assert_eq!(&rows[1][sid], "'+cmd");
        assert_eq!(&rows[1][item], "'-2+3");
        assert_eq!(&rows[1][err], "'\tleading tab");
        assert_eq!(&rows[2][sid], "ok", "plain text is left as it is");
        assert_eq!(&rows[2][err], "'\rcarriage");
        let sessions = std::fs::read_to_string(&paths[1]).unwrap();
        assert!(
            sessions.contains("performance,'=1+1,1,1,0,0,'@x"),
            "{sessions}"
        );
        // Every cell, of every file: none begins with a formula character.
        for path in &paths {
            let mut r = ::csv::Reader::from_path(path).unwrap();
            for row in r.records() {
                for cell in row.unwrap().iter() {
                    assert!(
                        !cell.starts_with(['=', '+', '@', '\t', '\r']),
                        "{cell:?} in {}",
                        path.display()
                    );
                }
            }
        }
    }
}
