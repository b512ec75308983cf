//! A phase's append-only files, and reading them back.
//!
//! - `turns.jsonl`: one [`TurnRecord`] per line, written with a single
//!   `write(2)` before the session's next request goes out (so a `kill -9`
//!   never loses a finished turn); with [`Durability::Sync`] each line is
//!   also `fdatasync`ed (it then survives a power cut too).
//! - `turns.tokens.jsonl`: local token counts, keyed by the record's line in
//!   `turns.jsonl`; counted after the turn, off the request path.
//! - `sessions.jsonl`: one [`SessionOutcome`](super::SessionOutcome) per
//!   session that ended.
//! - `turns.superseded.jsonl`: lines of sessions that `agentload resume`
//!   restarted whole (their records are kept, but not counted).
//!
//! Nothing is ever rewritten: summaries are separate files derived from these.

use crate::{LocalTokens, RecordedTokens, TurnRecord, TurnStatus};
pub use agentload_config::Durability;
use agentload_fs::OutDir;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

/// A line that could not be written: the run stops on it.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {cause}", path.display())]
pub struct WriteError {
    pub path: PathBuf,
    /// The OS error, named in the message (not a source: a cause chain would print it twice).
    pub cause: std::io::Error,
}

/// An append-only JSON-lines file.
pub struct Journal<T> {
    path: PathBuf,
    file: File,
    lines: u64,
    /// The file's length after its last whole line.
    bytes: u64,
    durability: Durability,
    _rows: PhantomData<fn(&T)>,
}

impl<T: Serialize> Journal<T> {
    /// Creates the file `rel` of the results directory `out`; it must not
    /// exist yet (a run never overwrites results), and no link is followed.
    pub fn create(
        out: &OutDir,
        rel: impl AsRef<Path>,
        durability: Durability,
    ) -> Result<Self, WriteError> {
        let path = out.path(&rel);
        let file = out.create_new(rel).map_err(|e| WriteError {
            path: path.clone(),
            cause: e.into(),
        })?;
        Ok(Self {
            path,
            file,
            lines: 0,
            bytes: 0,
            durability,
            _rows: PhantomData,
        })
    }

    /// Tests: creates the file at `path`, its folder taken as the results directory.
    #[cfg(test)]
    pub(crate) fn create_file(path: &Path, durability: Durability) -> Result<Self, WriteError> {
        let out = OutDir::new(path.parent().expect("a file in a folder"));
        Self::create(&out, path.file_name().expect("a file name"), durability)
    }

    /// Tests: [`Journal::append`] to the file at `path`, its folder taken as the results
    /// directory.
    #[cfg(test)]
    pub(crate) fn append_file(path: &Path, durability: Durability) -> Result<Self, WriteError> {
        let out = OutDir::new(path.parent().expect("a file in a folder"));
        Self::append(&out, path.file_name().expect("a file name"), durability)
    }

    /// A journal on an open, empty file (tests: a device that fails writes).
    #[cfg(test)]
    pub(crate) fn on_file(path: &Path, file: File, durability: Durability) -> Self {
        Self {
            path: path.to_path_buf(),
            file,
            lines: 0,
            bytes: 0,
            durability,
            _rows: PhantomData,
        }
    }

    /// Opens the file `rel` of `out` (or creates it) to append to; no link
    /// is followed. A last line without its newline (the process was killed
    /// mid-write) is cut off: every complete line stays byte for byte.
    pub fn append(
        out: &OutDir,
        rel: impl AsRef<Path>,
        durability: Durability,
    ) -> Result<Self, WriteError> {
        let path = &out.path(&rel);
        let err = |cause| WriteError {
            path: path.to_path_buf(),
            cause,
        };
        let mut file = out.open_rw(rel, true).map_err(|e| err(e.into()))?;
        let mut text = Vec::new();
        file.read_to_end(&mut text).map_err(err)?;
        let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if keep < text.len() {
            // A record the killed process was writing: it never counted, and
            // appending after it would glue two records into one line.
            agentload_console::line(&format!(
                "resume: {} ended in a torn record ({} bytes after its last whole line); cut",
                path.display(),
                text.len() - keep
            ));
            file.set_len(keep as u64).map_err(err)?;
        }
        file.seek(SeekFrom::End(0)).map_err(err)?;
        let lines = text[..keep].iter().filter(|&&b| b == b'\n').count() as u64;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            lines,
            bytes: keep as u64,
            durability,
            _rows: PhantomData,
        })
    }

    /// Appends one row in a single `write(2)`; returns its 1-based line.
    /// A write that fails half-way (a full disk) is cut back off, so the
    /// file only ever holds whole lines.
    pub fn write(&mut self, row: &T) -> Result<u64, WriteError> {
        let mut line = serde_json::to_vec(row).map_err(|e| WriteError {
            path: self.path.clone(),
            cause: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        self.write_lines(&[&line])
    }

    /// Appends serialized rows (each ending in its newline) in a single
    /// `write(2)`, and one `fdatasync` under [`Durability::Sync`]; returns
    /// the first one's 1-based line. A write that fails half-way is cut
    /// back off, so the file only ever holds whole lines.
    pub(crate) fn write_lines(&mut self, lines: &[&[u8]]) -> Result<u64, WriteError> {
        let err = |cause| WriteError {
            path: self.path.clone(),
            cause,
        };
        let joined;
        let bytes: &[u8] = match lines {
            [one] => one,
            many => {
                joined = many.concat();
                &joined
            }
        };
        if let Err(e) = self.file.write_all(bytes) {
            // Best effort: shrinking needs no space.
            if self.file.set_len(self.bytes).is_ok() {
                let _ = self.file.seek(SeekFrom::End(0));
            }
            return Err(err(e));
        }
        if self.durability == Durability::Sync {
            self.file.sync_data().map_err(err)?;
        }
        let first = self.lines + 1;
        self.lines += lines.len() as u64;
        self.bytes += bytes.len() as u64;
        Ok(first)
    }

    /// `fdatasync`: everything written so far reaches the disk.
    pub fn sync(&self) -> Result<(), WriteError> {
        self.file.sync_data().map_err(|cause| WriteError {
            path: self.path.clone(),
            cause,
        })
    }

    /// Lines in the file.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// How hard lines are pushed to disk.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads a JSON-lines file; a missing file is empty. A last line without its
/// newline (a write cut short by a kill) is ignored; any other bad line is an
/// error naming file and line.
pub fn read_lines<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>, String> {
    let mut all = Vec::new();
    each_line(path, |_, _, row| all.push(row))?;
    Ok(all)
}

/// Where a line lies in its file: its first byte and its length, newline included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub offset: u64,
    pub len: u64,
}

/// [`read_lines`] one line at a time: calls `each` with each row, its place among the
/// file's non-empty lines (1-based) and its span; the file is never held whole.
fn each_line<T: DeserializeOwned>(
    path: &Path,
    mut each: impl FnMut(u64, Span, T),
) -> Result<(), String> {
    let file = match agentload_fs::read::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let mut reader = std::io::BufReader::new(file);
    let (mut line, mut physical, mut rows, mut offset) = (Vec::new(), 0u64, 0u64, 0u64);
    loop {
        line.clear();
        let read = std::io::BufRead::read_until(&mut reader, b'\n', &mut line)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if read == 0 || line.last() != Some(&b'\n') {
            return Ok(()); // the end, or a last line cut short
        }
        let span = Span {
            offset,
            len: read as u64,
        };
        offset += span.len;
        physical += 1;
        if line.trim_ascii().is_empty() {
            continue;
        }
        rows += 1;
        let row = serde_json::from_slice(&line)
            .map_err(|e| format!("{}:{physical}: {e}", path.display()))?;
        each(rows, span, row);
    }
}

/// A line of `turns.tokens.jsonl`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct TokenLine {
    /// The record's 1-based line in `turns.jsonl`.
    pub line: u64,
    #[serde(flatten)]
    pub tokens: LocalTokens,
    /// Live-reply replay: the recording's counts at this turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<RecordedTokens>,
}

/// A line of `turns.superseded.jsonl`: a record line not to count.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct SupersededLine {
    pub line: u64,
}

/// The side files of the turn log at `turns`.
pub fn side_file(turns: &Path, kind: &str) -> PathBuf {
    let name = turns
        .file_stem()
        .map_or_else(|| "turns".into(), |s| s.to_string_lossy().into_owned());
    turns.with_file_name(format!("{name}.{kind}.jsonl"))
}

/// The session journal beside a turn log.
pub fn sessions_file(turns: &Path) -> PathBuf {
    turns.with_file_name("sessions.jsonl")
}

/// One record as read back, with its line in `turns.jsonl`.
#[derive(Debug, Clone)]
pub struct LoggedTurn {
    pub line: u64,
    pub record: TurnRecord,
}

/// Reads a phase's turn log with its local counts merged in, leaving out
/// superseded lines. Interrupted records are kept (callers decide: they are
/// never counted or scored).
pub fn read_turns(turns: &Path) -> Result<Vec<LoggedTurn>, String> {
    let mut all = Vec::new();
    each_turn(turns, |t| all.push(t))?;
    Ok(all)
}

/// [`read_turns`] one record at a time, in log order: the log is never held whole.
pub fn each_turn(turns: &Path, mut each: impl FnMut(LoggedTurn)) -> Result<(), String> {
    each_turn_at(turns, |t, _| each(t))
}

/// [`each_turn`] with each record's span in the log, to read it again later with
/// [`TurnLog::turn`].
pub fn each_turn_at(turns: &Path, mut each: impl FnMut(LoggedTurn, Span)) -> Result<(), String> {
    let counts = token_counts(turns)?;
    let superseded: HashSet<u64> = read_lines::<SupersededLine>(&side_file(turns, "superseded"))?
        .into_iter()
        .map(|s| s.line)
        .collect();
    each_line(turns, |line, span, mut record: TurnRecord| {
        if superseded.contains(&line) {
            return;
        }
        add_counts(&counts, line, &mut record);
        each(LoggedTurn { line, record }, span);
    })
}

/// A turn log's local counts, by line.
fn token_counts(turns: &Path) -> Result<HashMap<u64, TokenLine>, String> {
    Ok(read_lines::<TokenLine>(&side_file(turns, "tokens"))?
        .into_iter()
        .map(|t| (t.line, t))
        .collect())
}

fn add_counts(counts: &HashMap<u64, TokenLine>, line: u64, record: &mut TurnRecord) {
    if let Some(counted) = counts.get(&line) {
        record.local_tokens = Some(counted.tokens);
        record.recorded_tokens = counted.recorded;
    }
}

/// A turn log read again one chosen line at a time, in any order (a merge writes the
/// shards' lines in time order, not in the order it read them; resumed sessions read
/// theirs as they replay them, side by side): only its local counts are held.
#[derive(Debug)]
pub struct TurnLog {
    path: PathBuf,
    file: File,
    counts: HashMap<u64, TokenLine>,
}

impl TurnLog {
    /// Opens the turn log at `turns` and reads its local counts.
    pub fn open(turns: &Path) -> Result<Self, String> {
        Ok(Self {
            file: agentload_fs::read::open(turns)
                .map_err(|e| format!("cannot read {}: {e}", turns.display()))?,
            counts: token_counts(turns)?,
            path: turns.to_path_buf(),
        })
    }

    /// Keeps the local counts of the lines `keep` names only (those it will be asked for).
    pub fn keep_counts(&mut self, keep: impl Fn(u64) -> bool) {
        self.counts.retain(|&line, _| keep(line));
        self.counts.shrink_to_fit();
    }

    /// The record at `line` (as [`each_turn_at`] numbered it), whose bytes are `span`,
    /// with its local counts.
    pub fn turn(&self, line: u64, span: Span) -> Result<TurnRecord, String> {
        use std::os::unix::fs::FileExt;
        let len = usize::try_from(span.len).map_err(|e| e.to_string())?;
        let mut bytes = vec![0; len];
        self.file
            .read_exact_at(&mut bytes, span.offset)
            .map_err(|e| format!("cannot read {}: {e}", self.path.display()))?;
        let mut record: TurnRecord = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "{}: line {line} changed since it was read: {e}",
                self.path.display()
            )
        })?;
        add_counts(&self.counts, line, &mut record);
        Ok(record)
    }
}

/// The records that count (for metrics and scoring): every record but the
/// superseded and the interrupted ones, in log order.
pub fn read_records(turns: &Path) -> Result<Vec<TurnRecord>, String> {
    let mut all = Vec::new();
    each_record(turns, |r| all.push(r))?;
    Ok(all)
}

/// [`read_records`] one record at a time: what scoring reads of a long phase without
/// holding its whole records.
pub fn each_record(turns: &Path, mut each: impl FnMut(TurnRecord)) -> Result<(), String> {
    each_turn(turns, |t| {
        if t.record.status != TurnStatus::Interrupted {
            each(t.record);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(turn: u32) -> TurnRecord {
        let mut r = TurnRecord::aborted("s", turn, &format!("s/{turn}"), "{}");
        r.status = TurnStatus::Completed;
        r
    }

    #[test]
    fn create_refuses_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("turns.jsonl");
        std::fs::write(&path, "old\n").unwrap();
        let err = Journal::<TurnRecord>::create_file(&path, Durability::Write)
            .err()
            .unwrap();
        assert!(err.to_string().contains("turns.jsonl"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
    }

    #[test]
    fn append_cuts_only_a_partial_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("turns.jsonl");
        let mut log = Journal::create_file(&path, Durability::Sync).unwrap();
        log.write(&record(1)).unwrap();
        log.write(&record(2)).unwrap();
        drop(log);
        let whole = std::fs::read(&path).unwrap();
        std::fs::write(&path, [&whole[..], b"{\"session_id\":\"s\",\"tu"].concat()).unwrap();
        let mut log = Journal::<TurnRecord>::append_file(&path, Durability::Write).unwrap();
        assert_eq!(log.lines(), 2);
        assert_eq!(log.write(&record(3)).unwrap(), 3);
        let after = std::fs::read(&path).unwrap();
        assert_eq!(&after[..whole.len()], &whole[..], "earlier lines unchanged");
        assert_eq!(read_records(&path).unwrap().len(), 3);
    }

    #[test]
    fn counts_merge_by_line_and_superseded_lines_drop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("turns.jsonl");
        let mut log = Journal::create_file(&path, Durability::Write).unwrap();
        for t in 1..=3 {
            log.write(&record(t)).unwrap();
        }
        let mut interrupted = record(4);
        interrupted.status = TurnStatus::Interrupted;
        log.write(&interrupted).unwrap();
        let mut tokens =
            Journal::create_file(&side_file(&path, "tokens"), Durability::Write).unwrap();
        let t = LocalTokens {
            isl: 10,
            osl: 5,
            osl_after_first: 4,
            osl_count_ns: 0,
        };
        tokens
            .write(&TokenLine {
                line: 3,
                tokens: t,
                recorded: None,
            })
            .unwrap();
        let mut gone =
            Journal::create_file(&side_file(&path, "superseded"), Durability::Write).unwrap();
        gone.write(&SupersededLine { line: 1 }).unwrap();
        let all = read_turns(&path).unwrap();
        assert_eq!(
            all.iter().map(|t| t.line).collect::<Vec<_>>(),
            vec![2, 3, 4]
        );
        let counted = read_records(&path).unwrap();
        assert_eq!(counted.len(), 2);
        assert_eq!(counted[1].local_tokens.unwrap().isl, 10);
        assert!(counted[0].local_tokens.is_none());
        // Counts never appear in the log itself.
        assert!(!std::fs::read_to_string(&path)
            .unwrap()
            .contains("local_tokens"));
    }

    #[test]
    fn a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("turns.jsonl");
        std::fs::write(&path, "{}\n").unwrap();
        let err = read_records(&path).unwrap_err();
        assert!(err.contains("turns.jsonl:1"), "{err}");
        // Named by its line in the file, blank lines included.
        let good = serde_json::to_string(&record(1)).unwrap();
        std::fs::write(&path, format!("{good}\n\n{{\"turn\": 2}}\n")).unwrap();
        let err = read_records(&path).unwrap_err();
        assert!(err.contains("turns.jsonl:3"), "{err}");
    }

    /// Read one line at a time: a blank line is not a record (the records' lines count the
    /// records), a last line cut short by a kill is left out, and the interrupted record is
    /// read by `each_turn` and left out by `each_record`.
    #[test]
    fn records_stream_as_they_were_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("turns.jsonl");
        let line = |r: &TurnRecord| serde_json::to_string(r).unwrap();
        let mut cut = record(2);
        cut.status = TurnStatus::Interrupted;
        let torn = line(&record(4));
        std::fs::write(
            &path,
            format!(
                "{}\n\n{}\n{}\n{}",
                line(&record(1)),
                line(&cut),
                line(&record(3)),
                &torn[..torn.len() / 2]
            ),
        )
        .unwrap();
        let mut turns = Vec::new();
        each_turn(&path, |t| turns.push((t.line, t.record.turn))).unwrap();
        assert_eq!(turns, [(1, 1), (2, 2), (3, 3)]);
        let mut counted = Vec::new();
        each_record(&path, |r| counted.push(r.turn)).unwrap();
        assert_eq!(counted, [1, 3]);
        let read: Vec<u32> = read_records(&path)
            .unwrap()
            .iter()
            .map(|r| r.turn)
            .collect();
        assert_eq!(read, counted);
    }
}
