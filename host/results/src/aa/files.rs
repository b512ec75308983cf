//! Writing AA's files: a folder of new files (never replacing one), mode
//! 0600, each opened without following a link, the four data files synced
//! before `summary.json`, which is renamed into place last as the
//! completion marker (AA's `commit_new_file_set`). Keys are sorted, as AA's
//! orjson writes them: `turns.jsonl` one compact line per turn, the others
//! indented by two spaces with a final newline.

use super::summary::Report;
use super::turn::TurnReport;
use super::RunFacts;
use crate::record::TurnRecord;
use serde_json::{Map, Value};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// AA's files' folder inside a result directory (agentload owns `DIR/turns.jsonl`).
pub const AA_DIR: &str = "aa";

/// The files written, in the order written.
#[derive(Debug, Clone)]
pub struct Written {
    pub dir: PathBuf,
    pub files: Vec<PathBuf>,
    pub report: Report,
}

impl Report {
    /// AA's report of `records` (in replay order; interrupted turns that a resume sent
    /// again are the caller's to leave out).
    pub fn of<'a>(facts: RunFacts, records: impl IntoIterator<Item = &'a TurnRecord>) -> Self {
        let run_mode = facts.tool_mode.clone().unwrap_or_else(|| "none".into());
        let mut turns = Vec::new();
        let (mut first, mut last, mut segments) =
            (u64::MAX, 0u64, std::collections::BTreeSet::new());
        for r in records {
            let turn = TurnReport::of(r, &run_mode);
            segments.insert(r.segment);
            if let Some(issued) = r.issued_ns {
                first = first.min(issued);
            }
            if let Some(end) = r.complete_ns {
                // The replay waits out the turn's tool pause before the next request.
                let paused = (turn.replayed_tool_delay_ms * 1e6) as u64;
                last = last.max(end + paused);
            }
            turns.push(turn);
        }
        // Spans of several processes (a resumed run) have no common clock.
        let measured_duration_ms =
            (segments.len() == 1 && last >= first).then(|| (last - first) as f64 / 1e6);
        Self {
            facts,
            turns,
            measured_duration_ms,
        }
    }
}

/// `value` with every object's keys in sorted order.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, sorted(v)))
                    .collect::<Map<_, _>>(),
            )
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

pub(super) fn pretty(value: Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(&sorted(value)).expect("a JSON value serialises");
    bytes.push(b'\n');
    bytes
}

/// A new private file: created (never an existing one or a link), written whole, synced.
pub(super) fn create(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    file.write_all(bytes)?;
    file.sync_all()
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Writes AA's five result files for `report` into `dir` (created when absent;
/// a link is refused), `summary.json` last. An existing file of the set is
/// never replaced: the write is refused before anything is written.
pub fn write(dir: &Path, report: Report) -> std::io::Result<Written> {
    if dir
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink())
    {
        return Err(std::io::Error::other(format!(
            "{} is a symbolic link: AA's files go into a real directory",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir)?;
    let names = [
        "turns.jsonl",
        "tasks.json",
        "tools.json",
        "failures.json",
        "summary.json",
    ];
    if let Some(taken) = names
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.symlink_metadata().is_ok())
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} exists: AA's files are never replaced; remove {} to write them again",
                taken.display(),
                dir.display()
            ),
        ));
    }
    let mut turns = Vec::new();
    for t in &report.turns {
        serde_json::to_writer(&mut turns, &sorted(t.to_json())).map_err(std::io::Error::other)?;
        turns.push(b'\n');
    }
    let data = [
        (names[0], turns),
        (names[1], pretty(report.tasks_json())),
        (names[2], pretty(report.tools_json())),
        (names[3], pretty(report.failures_json())),
    ];
    let mut files = Vec::new();
    for (name, bytes) in &data {
        let path = dir.join(name);
        create(&path, bytes)?;
        files.push(path);
    }
    sync_dir(dir)?;
    // The completion marker: written whole under a hidden name, then renamed.
    let summary = dir.join(names[4]);
    let staged = dir.join(format!(".summary.json.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&staged);
    create(&staged, &pretty(report.summary_json()))?;
    std::fs::rename(&staged, &summary)?;
    sync_dir(dir)?;
    files.push(summary);
    Ok(Written {
        dir: dir.to_owned(),
        files,
        report,
    })
}

/// AA's files for the run in `run_dir`, from its `records` (in log order), into
/// `out` (default `run_dir/aa`).
pub fn write_run<'a>(
    run_dir: &Path,
    records: impl IntoIterator<Item = &'a TurnRecord>,
    out: Option<&Path>,
) -> std::io::Result<Written> {
    let facts = RunFacts::from_run_dir(run_dir)?;
    let out = out.map_or_else(|| run_dir.join(AA_DIR), Path::to_owned);
    write(&out, Report::of(facts, records))
}
