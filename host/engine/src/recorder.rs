//! Where finished turns go: the append-only log on disk first (before the
//! session's next request), then memory, the token counter and the console.

use super::console::Console;
use super::counting::CountWorker;
use super::journal::{self, Durability, Journal, LoggedTurn, WriteError};
use super::session::SessionOutcome;
use super::writer::Writer;
use crate::tokens::LocalCounter;
use crate::CountingStats;
use crate::{TurnRecord, TurnStatus};
use agentload_client::Assembled;
use bytes::Bytes;
use std::path::Path;
use std::sync::{Arc, Mutex};

fn open<T: serde::Serialize>(path: &Path, files: &LogFiles<'_>) -> Result<Journal<T>, WriteError> {
    if files.append {
        Journal::append(path, files.durability)
    } else {
        Journal::create(path, files.durability)
    }
}

/// Records one phase's turns and session ends.
pub struct Recorder {
    /// The thread that writes `turns.jsonl` and `sessions.jsonl`.
    writer: Option<Writer>,
    /// `turns.jsonl`, and how hard its lines are pushed to disk.
    turns: Option<(std::path::PathBuf, Durability)>,
    /// Every record of the phase with its log line (earlier segments' too).
    records: Mutex<Vec<LoggedTurn>>,
    counting: Option<CountWorker>,
    console: Console,
    /// Records kept by this process that a signal cut (never counted;
    /// a resume sends them again).
    interrupted: std::sync::atomic::AtomicU64,
}

/// Where and how a phase's log is kept.
pub struct LogFiles<'a> {
    /// `turns.jsonl`; the side files go beside it.
    pub turns: &'a Path,
    pub durability: Durability,
    /// Append to the files of an earlier segment (resume) instead of
    /// creating them.
    pub append: bool,
}

impl Recorder {
    /// Opens (or, for a resume, appends to) the phase's files. `prior` are
    /// the records already in the log.
    pub fn open(
        files: LogFiles<'_>,
        prior: Vec<LoggedTurn>,
        counter: Option<Arc<LocalCounter>>,
        console: Console,
    ) -> Result<Self, WriteError> {
        let turns = open(files.turns, &files)?;
        let sessions = open(&journal::sessions_file(files.turns), &files)?;
        let tokens_path = journal::side_file(files.turns, "tokens");
        let counting = counter
            .map(|c| CountWorker::start(c, &tokens_path, files.durability))
            .transpose()?;
        Ok(Self {
            writer: Some(Writer::start(turns, sessions)?),
            turns: Some((files.turns.to_path_buf(), files.durability)),
            records: Mutex::new(prior),
            counting,
            console,
            interrupted: Default::default(),
        })
    }

    /// A recorder that keeps records in memory only (`plugin check`).
    pub fn memory(console: Console) -> Self {
        Self {
            writer: None,
            turns: None,
            records: Mutex::default(),
            counting: None,
            console,
            interrupted: Default::default(),
        }
    }

    /// Writes `record` to the log (on the writer thread; this session
    /// waits for its own line only), keeps it, and queues its local count.
    /// An error means the record is not on disk: the run must stop.
    pub async fn keep(
        &self,
        record: TurnRecord,
        answered: Option<(Bytes, Assembled)>,
    ) -> Result<(), WriteError> {
        let line = match &self.writer {
            Some(writer) => writer.turn(&record).await?,
            None => 0,
        };
        if let (Some(counting), Some((body, answer))) = (&self.counting, answered) {
            counting.count(line, body, answer);
        }
        self.console.turn(&record);
        if record.status == TurnStatus::Interrupted {
            self.interrupted
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        self.records
            .lock()
            .expect("records lock")
            .push(LoggedTurn { line, record });
        Ok(())
    }

    /// Moves the bodies queued for counting from memory to the scratch file (see
    /// [`CountWorker::spill_held`]).
    pub fn spill_held(&self) {
        if let Some(counting) = &self.counting {
            counting.spill_held();
        }
    }

    /// Queues an earlier segment's turn whose count was lost for counting (`body`: the
    /// request's JSON).
    pub fn count(&self, line: u64, body: Bytes, answer: Assembled) {
        if let Some(counting) = &self.counting {
            counting.count(line, body, answer);
        }
    }

    /// Marks the log lines of a session restarted whole: kept, not counted.
    pub fn supersede(&self, lines: &[u64]) -> Result<(), WriteError> {
        let Some((turns, durability)) = &self.turns else {
            return Ok(());
        };
        let path = journal::side_file(turns, "superseded");
        let mut out = Journal::append(&path, *durability)?;
        for &line in lines {
            out.write(&journal::SupersededLine { line })?;
        }
        let gone: std::collections::HashSet<u64> = lines.iter().copied().collect();
        self.records
            .lock()
            .expect("records lock")
            .retain(|t| !gone.contains(&t.line));
        Ok(())
    }

    /// Appends a finished session's outcome to `sessions.jsonl`.
    pub async fn session_ended(&self, outcome: &SessionOutcome) -> Result<(), WriteError> {
        if let Some(writer) = &self.writer {
            writer.session(outcome).await?;
        }
        Ok(())
    }

    /// A copy of the records so far, in log order.
    pub fn snapshot(&self) -> Vec<TurnRecord> {
        self.records
            .lock()
            .expect("records lock")
            .iter()
            .map(|t| t.record.clone())
            .collect()
    }

    /// Turns this process sent that a signal cut (none counted: a resume
    /// sends them again).
    pub fn interrupted(&self) -> u64 {
        self.interrupted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts the phase's turns (nothing streams any more), syncs the files, and returns the
    /// records that count (interrupted ones left out) with their counts merged.
    pub fn finish(self) -> Result<Vec<TurnRecord>, WriteError> {
        Ok(self.finish_with_stats()?.0)
    }

    /// [`Recorder::finish`], and what local counting took (when it ran).
    pub fn finish_with_stats(self) -> Result<(Vec<TurnRecord>, Option<CountingStats>), WriteError> {
        self.console.finish();
        let counted = self.counting.map(CountWorker::finish).transpose()?;
        let (counts, stats) = counted.map_or((None, None), |(c, s)| (Some(c), Some(s)));
        if let Some(writer) = self.writer {
            let files = writer.close();
            files.turns.sync()?;
            files.sessions.sync()?;
        }
        let records = self.records.into_inner().expect("records lock");
        let records = records
            .into_iter()
            .filter(|t| t.record.status != TurnStatus::Interrupted)
            .map(|mut t| {
                if let Some(tokens) = counts.as_ref().and_then(|c| c.get(&t.line)) {
                    t.record.local_tokens = Some(*tokens);
                }
                t.record
            })
            .collect();
        Ok((records, stats))
    }
}
