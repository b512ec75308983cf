//! Where finished turns go: the append-only log on disk first (before the
//! session's next request), then memory, the token counter and the console.

use super::console::Console;
use super::counting::{CountWorker, Counted, RecordedTurn};
use super::journal::{self, Durability, Journal, WriteError};
use super::prior::PriorTurns;
use super::session::SessionOutcome;
use super::writer::{Queued, Writer};
use crate::tokens::LocalCounter;
use crate::CountingStats;
use crate::{Interner, TurnFacts, TurnRecord, TurnStatus};
use agentload_client::{Assembled, RequestBody};
use agentload_fs::OutDir;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

fn open<T: serde::Serialize>(rel: &Path, files: &LogFiles<'_>) -> Result<Journal<T>, WriteError> {
    if files.append {
        Journal::append(&files.out, rel, files.durability)
    } else {
        Journal::create(&files.out, rel, files.durability)
    }
}

/// Records one phase's turns and session ends.
pub struct Recorder {
    /// The thread that writes `turns.jsonl` and `sessions.jsonl`.
    writer: Option<Writer>,
    /// The results directory, `turns.jsonl` in it, and how hard its lines are pushed to
    /// disk.
    turns: Option<(OutDir, std::path::PathBuf, Durability)>,
    /// Every turn of the phase (earlier segments' too): its facts, or (without a log) its
    /// whole record.
    kept: Mutex<Kept>,
    counting: Option<CountWorker>,
    console: Console,
    /// Records kept by this process that a signal cut (never counted;
    /// a resume sends them again).
    interrupted: std::sync::atomic::AtomicU64,
}

/// A turn record on its way to the log.
pub struct Keeping<'a> {
    recorder: &'a Recorder,
    queued: Option<Queued>,
    record: TurnRecord,
    answered: Option<(RequestBody, Assembled)>,
    recorded: Option<RecordedTurn>,
}

impl Keeping<'_> {
    /// Live-reply replay: the recording's turn, counted beside the answered one.
    pub fn with_recorded(mut self, recorded: Option<RecordedTurn>) -> Self {
        self.recorded = recorded;
        self
    }

    /// Waits until the record is written, then keeps it and queues its
    /// local count. An error means it is not on disk: the run must stop.
    pub async fn kept(self) -> Result<(), WriteError> {
        let line = match self.queued {
            Some(queued) => queued.written().await?,
            None => 0,
        };
        let recorder = self.recorder;
        if let (Some(counting), Some((body, answer))) = (&recorder.counting, self.answered) {
            // The body's shared parts, not a copy: it is written to the scratch file
            // once the next request is out.
            counting.count(line, &self.record.session_id, body, answer, self.recorded);
        }
        recorder.console.turn(&self.record);
        if self.record.status == TurnStatus::Interrupted {
            recorder
                .interrupted
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        recorder
            .kept
            .lock()
            .expect("records lock")
            .push(line, self.record);
        Ok(())
    }
}

/// What a recorder keeps in memory of each turn.
enum Kept {
    /// Whole records (a recorder without a log).
    Records(Vec<TurnRecord>),
    /// The facts the metrics need, with their log lines (the records are on disk), and the
    /// strings they share.
    Facts(Vec<TurnFacts>, Interner),
}

impl Kept {
    fn push(&mut self, line: u64, record: TurnRecord) {
        match self {
            Self::Records(all) => all.push(record),
            Self::Facts(all, strings) => all.push(TurnFacts::of(&record, line, strings)),
        }
    }

    fn retain_lines(&mut self, keep: impl Fn(u64) -> bool) {
        if let Self::Facts(all, _) = self {
            all.retain(|f| keep(f.line));
        }
    }
}

/// Where and how a phase's log is kept.
pub struct LogFiles<'a> {
    /// The results directory: nothing is written through a link in it.
    pub out: OutDir,
    /// `turns.jsonl`, relative to `out`; the side files go beside it.
    pub turns: &'a Path,
    pub durability: Durability,
    /// Append to the files of an earlier segment (resume) instead of
    /// creating them.
    pub append: bool,
}

impl Recorder {
    /// Opens (or, for a resume, appends to) the phase's files. `prior` are
    /// the facts of the records already in the log.
    pub fn open(
        files: LogFiles<'_>,
        prior: PriorTurns,
        counter: Option<Arc<LocalCounter>>,
        console: Console,
    ) -> Result<Self, WriteError> {
        let turns = open(files.turns, &files)?;
        let sessions = open(&journal::sessions_file(files.turns), &files)?;
        let tokens_path = journal::side_file(files.turns, "tokens");
        let counting = counter
            .map(|c| CountWorker::start(c, &files.out, &tokens_path, files.durability))
            .transpose()?;
        Ok(Self {
            writer: Some(Writer::start(turns, sessions)?),
            turns: Some((
                files.out.clone(),
                files.turns.to_path_buf(),
                files.durability,
            )),
            kept: Mutex::new(Kept::Facts(prior.facts, prior.strings)),
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
            kept: Mutex::new(Kept::Records(Vec::new())),
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
        answered: Option<(RequestBody, Assembled)>,
    ) -> Result<(), WriteError> {
        self.submit(record, answered)?.kept().await
    }

    /// Hands `record` to the writer thread and returns at once (or writes it
    /// at once when nothing else is going on: see [`super::writer`]); the
    /// session does what it can meanwhile (ask the workload for its next
    /// turn) and awaits [`Keeping::kept`] before its next request.
    pub fn submit(
        &self,
        record: TurnRecord,
        answered: Option<(RequestBody, Assembled)>,
    ) -> Result<Keeping<'_>, WriteError> {
        let queued = self
            .writer
            .as_ref()
            .map(|w| w.queue_turn(&record))
            .transpose()?;
        Ok(Keeping {
            recorder: self,
            queued,
            record,
            answered,
            recorded: None,
        })
    }

    /// Moves the bodies queued for counting from memory to the scratch file (see
    /// [`CountWorker::spill_held`]).
    pub fn spill_held(&self) {
        if let Some(counting) = &self.counting {
            counting.spill_held();
        }
    }

    /// Queues an earlier segment's turn of `session` whose count was lost for counting
    /// (`body`: the request's JSON; `recorded`: the recording's turn, in live-reply replay).
    pub fn count(
        &self,
        line: u64,
        session: &str,
        body: RequestBody,
        answer: Assembled,
        recorded: Option<RecordedTurn>,
    ) {
        if let Some(counting) = &self.counting {
            counting.count(line, session, body, answer, recorded);
        }
    }

    /// Marks the log lines of a session restarted whole: kept, not counted.
    pub fn supersede(&self, lines: &[u64]) -> Result<(), WriteError> {
        let Some((out, turns, durability)) = &self.turns else {
            return Ok(());
        };
        let path = journal::side_file(turns, "superseded");
        let mut out = Journal::append(out, &path, *durability)?;
        for &line in lines {
            out.write(&journal::SupersededLine { line })?;
        }
        let gone: std::collections::HashSet<u64> = lines.iter().copied().collect();
        self.kept
            .lock()
            .expect("records lock")
            .retain_lines(|line| !gone.contains(&line));
        Ok(())
    }

    /// Appends a finished session's outcome to `sessions.jsonl`.
    pub async fn session_ended(&self, outcome: &SessionOutcome) -> Result<(), WriteError> {
        if let Some(writer) = &self.writer {
            writer.session(outcome).await?;
        }
        Ok(())
    }

    /// A copy of the records so far, in the order they were kept: a recorder without a log's
    /// (a recorder with one keeps facts, and its records are in the log).
    pub fn snapshot(&self) -> Vec<TurnRecord> {
        match &*self.kept.lock().expect("records lock") {
            Kept::Records(all) => all.clone(),
            Kept::Facts(..) => Vec::new(),
        }
    }

    /// Turns this process sent that a signal cut (none counted: a resume
    /// sends them again).
    pub fn interrupted(&self) -> u64 {
        self.interrupted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts the phase's turns (nothing streams any more), syncs the files, and returns the
    /// facts of the turns that count (interrupted ones left out), their counts merged, and
    /// what local counting took (when it ran). The whole records are read back from the log
    /// where texts are needed (`read_records`, as scoring does).
    pub fn finish(self) -> Result<(Vec<TurnFacts>, Option<CountingStats>), WriteError> {
        let Closed {
            kept,
            counts,
            stats,
        } = self.close()?;
        let facts = match kept {
            Kept::Facts(all, _) => all,
            Kept::Records(all) => TurnFacts::all(&all),
        };
        let facts = facts
            .into_iter()
            .filter(|f| f.status != TurnStatus::Interrupted)
            .map(|mut f| {
                if let Some(counted) = counts.as_ref().and_then(|c| c.get(&f.line)) {
                    f.local_tokens = Some(counted.tokens);
                    f.recorded_tokens = counted.recorded;
                }
                f
            })
            .collect();
        Ok((facts, stats))
    }

    fn close(self) -> Result<Closed, WriteError> {
        self.console.finish();
        let counted = self.counting.map(CountWorker::finish).transpose()?;
        let (counts, stats) = counted.map_or((None, None), |(c, s)| (Some(c), Some(s)));
        if let Some(writer) = self.writer {
            let files = writer.close();
            files.turns.sync()?;
            files.sessions.sync()?;
        }
        Ok(Closed {
            kept: self.kept.into_inner().expect("records lock"),
            counts,
            stats,
        })
    }
}

/// A closed recorder's turns, local counts by log line, and what counting took.
struct Closed {
    kept: Kept,
    counts: Option<HashMap<u64, Counted>>,
    stats: Option<CountingStats>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_files(log: &Path, append: bool) -> LogFiles<'_> {
        LogFiles {
            out: OutDir::new(log.parent().unwrap()),
            turns: Path::new(log.file_name().unwrap()),
            durability: Durability::Write,
            append,
        }
    }

    /// A recorder of a new log at `log`, silent, counting nothing.
    fn fresh(log: &Path) -> Recorder {
        Recorder::open(
            log_files(log, false),
            PriorTurns::default(),
            None,
            Console::silent(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn with_a_log_memory_keeps_what_the_metrics_need_and_not_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("turns.jsonl");
        let recorder = fresh(&log);
        let mut answered = TurnRecord::aborted("s", 1, "s:1", "{}");
        answered.status = TurnStatus::Completed;
        answered.error = None;
        answered.issued_ns = Some(5);
        answered.usage = serde_json::value::to_raw_value(&serde_json::json!({
            "prompt_tokens": 7, "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": 2}
        }))
        .ok();
        recorder.keep(answered.clone(), None).await.unwrap();
        let mut cut = answered.clone();
        cut.status = TurnStatus::Interrupted;
        recorder.keep(cut, None).await.unwrap();
        let mut overflow = TurnRecord::aborted("s", 2, "s:2", "{}");
        overflow.status = TurnStatus::Failed;
        overflow.error = Some("HTTP 400: exceed_context_size_error".into());
        recorder.keep(overflow, None).await.unwrap();
        let mut other = TurnRecord::aborted("t", 1, "t:1", "{}");
        other.status = TurnStatus::Aborted;
        recorder.keep(other, None).await.unwrap();
        assert!(recorder.snapshot().is_empty(), "no records are kept");
        let (facts, _) = recorder.finish().unwrap();
        let named: Vec<(&str, u32, u64)> = facts
            .iter()
            .map(|f| (&*f.session_id, f.turn, f.line))
            .collect();
        assert_eq!(
            named,
            [("s", 1, 1), ("s", 2, 3), ("t", 1, 4)],
            "an interrupted turn does not count"
        );
        assert!(Arc::ptr_eq(&facts[0].session_id, &facts[1].session_id));
        let f = &facts[0];
        assert_eq!(f.issued_ns(), Some(5));
        assert_eq!(
            (f.server_isl(), f.server_osl(), f.cached_tokens()),
            (Some(7), Some(3), Some(2))
        );
        assert!(!f.context_overflow() && facts[1].context_overflow());
        assert_eq!(facts[1].status, TurnStatus::Failed);
        // All four are in the log; reading it leaves the interrupted one out.
        assert_eq!(journal::read_lines::<TurnRecord>(&log).unwrap().len(), 4);
    }

    /// A recorder with a log keeps facts, a resume's earlier turns' too; the log keeps the
    /// whole records, and reading it back gives them. A recorder without a log (`plugin
    /// check`) keeps them whole.
    #[tokio::test]
    async fn with_a_log_memory_keeps_facts_and_the_log_whole_records() {
        let answered = |turn: u32| {
            let mut r = TurnRecord::aborted("s", turn, &format!("s:{turn}"), r#"{"want": "ls"}"#);
            r.status = TurnStatus::Completed;
            r.error = None;
            r.completion = Some(crate::CompletionRecord {
                content: "done".into(),
                reasoning_content: "thinking it over".into(),
                tool_calls: Vec::new(),
                finish_reason: Some("stop".into()),
            });
            r.timings = serde_json::value::RawValue::from_string(
                r#"{"prompt_ms": 1.5, "predicted_ms": 9.0}"#.into(),
            )
            .ok();
            r
        };
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("turns.jsonl");
        let first = fresh(&log);
        first.keep(answered(1), None).await.unwrap();
        first.finish().unwrap();
        // A resume appends a turn; the first comes back from the log as the prior.
        let plans = [agentload_plugin_host::SessionPlan {
            id: "s".into(),
            expected_turns: 2,
            workspace: None,
        }];
        let prior = crate::Prior::read(&log, &plans, &[None]).unwrap();
        let (_, tasks) = prior.split(plans.to_vec(), false).unwrap();
        assert_eq!(
            tasks[0]
                .history
                .records()
                .next()
                .unwrap()
                .unwrap()
                .record
                .expected_json,
            r#"{"want": "ls"}"#
        );
        let resumed =
            Recorder::open(log_files(&log, true), prior.turns, None, Console::silent()).unwrap();
        resumed.keep(answered(2), None).await.unwrap();
        let (kept, _) = resumed.finish().unwrap();
        assert_eq!(kept.iter().map(|f| f.line).collect::<Vec<_>>(), [1, 2]);
        for f in &kept {
            assert_eq!(f.finish_reason.as_deref(), Some("stop"));
            assert_eq!(
                f.timing(agentload_results::record::Timing::PromptMs),
                Some(1.5)
            );
        }
        let whole = journal::read_records(&log).unwrap();
        assert_eq!(whole.len(), 2);
        for r in &whole {
            assert_eq!(
                r.completion.as_ref().unwrap().reasoning_content,
                "thinking it over"
            );
            assert_eq!(r.expected_json, r#"{"want": "ls"}"#);
            assert_eq!(
                r.timings.as_ref().unwrap().get(),
                r#"{"prompt_ms": 1.5, "predicted_ms": 9.0}"#,
                "kept as sent"
            );
        }
        let memory = Recorder::memory(Console::silent());
        memory.keep(answered(1), None).await.unwrap();
        let kept = memory.snapshot();
        assert_eq!(kept[0].completion.as_ref().unwrap().content, "done");
        assert_eq!(kept[0].expected_json, r#"{"want": "ls"}"#);
    }
}
