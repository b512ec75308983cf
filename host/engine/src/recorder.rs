//! Where finished turns go: the append-only log on disk first (before the
//! session's next request), then memory, the token counter and the console.

use super::console::Console;
use super::counting::{CountWorker, Counted, RecordedTurn};
use super::journal::{self, Durability, Journal, LoggedTurn, WriteError};
use super::session::SessionOutcome;
use super::writer::{Queued, Writer};
use crate::tokens::LocalCounter;
use crate::CountingStats;
use crate::{TurnFacts, TurnRecord, TurnStatus};
use agentload_client::{Assembled, RequestBody};
use std::collections::HashMap;
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
    /// Every turn of the phase (earlier segments' too): records, or their facts only (see
    /// [`Recorder::keeping_facts`]).
    kept: Mutex<Kept>,
    /// Records are kept [thin](TurnRecord::thin): the log holds them whole.
    thin: bool,
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
        // Thinned before the lock every session takes.
        let record = if recorder.thin {
            self.record.thin()
        } else {
            self.record
        };
        recorder
            .kept
            .lock()
            .expect("records lock")
            .push(line, record);
        Ok(())
    }
}

/// What a recorder keeps in memory of each turn.
enum Kept {
    /// Records with their log lines.
    Records(Vec<LoggedTurn>),
    /// The facts a sweep's metrics need (the records are on disk), and the
    /// session ids they refer to by number.
    Facts(Vec<TurnFacts>, SessionIds),
}

/// Session ids, each held once, numbered in order of first turn.
#[derive(Default)]
struct SessionIds {
    names: Vec<String>,
    numbers: std::collections::HashMap<String, u32>,
}

impl SessionIds {
    fn number(&mut self, id: &str) -> u32 {
        if let Some(n) = self.numbers.get(id) {
            return *n;
        }
        let n = u32::try_from(self.names.len()).expect("fewer than 2^32 sessions");
        self.names.push(id.to_owned());
        self.numbers.insert(id.to_owned(), n);
        n
    }

    fn facts(&mut self, t: &LoggedTurn) -> TurnFacts {
        TurnFacts::of(&t.record, t.line, self.number(&t.record.session_id))
    }
}

impl Kept {
    fn push(&mut self, line: u64, record: TurnRecord) {
        match self {
            Self::Records(all) => all.push(LoggedTurn { line, record }),
            Self::Facts(all, ids) => {
                let n = ids.number(&record.session_id);
                all.push(TurnFacts::of(&record, line, n));
            }
        }
    }

    fn retain_lines(&mut self, keep: impl Fn(u64) -> bool) {
        match self {
            Self::Records(all) => all.retain(|t| keep(t.line)),
            Self::Facts(all, _) => all.retain(|f| keep(f.line)),
        }
    }
}

/// A phase's facts ([`Recorder::finish_facts`]).
pub struct Facts {
    /// The turns that count, local counts merged.
    pub turns: Vec<TurnFacts>,
    /// `turns[i].session` names `sessions[turns[i].session]`.
    pub sessions: Vec<String>,
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
            kept: Mutex::new(Kept::Records(
                prior
                    .into_iter()
                    .map(|t| LoggedTurn {
                        line: t.line,
                        record: t.record.thin(),
                    })
                    .collect(),
            )),
            thin: true,
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
            thin: false,
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
        let Some((turns, durability)) = &self.turns else {
            return Ok(());
        };
        let path = journal::side_file(turns, "superseded");
        let mut out = Journal::append(&path, *durability)?;
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

    /// Keeps only each turn's [`TurnFacts`] in memory from now on (those
    /// kept so far too): memory then grows by about 190 bytes a turn, not by
    /// the record's kilobytes. [`Recorder::finish_facts`] returns them.
    pub fn keeping_facts(self) -> Self {
        let kept = match self.kept.into_inner().expect("records lock") {
            Kept::Records(all) => {
                let mut ids = SessionIds::default();
                let facts = all.iter().map(|t| ids.facts(t)).collect();
                Kept::Facts(facts, ids)
            }
            facts => facts,
        };
        Self {
            kept: Mutex::new(kept),
            // Facts are taken from the record as it is: nothing to thin.
            thin: false,
            ..self
        }
    }

    /// A copy of the records so far, in the order they were kept (none when keeping facts;
    /// thin ones from a recorder with a log).
    pub fn snapshot(&self) -> Vec<TurnRecord> {
        match &*self.kept.lock().expect("records lock") {
            Kept::Records(all) => all.iter().map(|t| t.record.clone()).collect(),
            Kept::Facts(..) => Vec::new(),
        }
    }

    /// Turns this process sent that a signal cut (none counted: a resume
    /// sends them again).
    pub fn interrupted(&self) -> u64 {
        self.interrupted.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Counts the phase's turns (nothing streams any more), syncs the files, and returns the
    /// records that count (interrupted ones left out) with their counts merged: a recorder
    /// with a log returns them [thin](TurnRecord::thin), and the whole ones are read back from
    /// the log where texts are needed (`read_records`, as scoring does).
    pub fn finish(self) -> Result<Vec<TurnRecord>, WriteError> {
        Ok(self.finish_with_stats()?.0)
    }

    /// [`Recorder::finish`], and what local counting took (when it ran).
    /// A recorder [keeping facts](Recorder::keeping_facts) returns no records.
    pub fn finish_with_stats(self) -> Result<(Vec<TurnRecord>, Option<CountingStats>), WriteError> {
        let Closed {
            kept,
            counts,
            stats,
        } = self.close()?;
        let Kept::Records(records) = kept else {
            return Ok((Vec::new(), stats));
        };
        let records = records
            .into_iter()
            .filter(|t| t.record.status != TurnStatus::Interrupted)
            .map(|mut t| {
                if let Some(counted) = counts.as_ref().and_then(|c| c.get(&t.line)) {
                    t.record.local_tokens = Some(counted.tokens);
                    t.record.recorded_tokens = counted.recorded;
                }
                t.record
            })
            .collect();
        Ok((records, stats))
    }

    /// As [`Recorder::finish`], for a recorder [keeping
    /// facts](Recorder::keeping_facts): the facts that count, counts merged.
    pub fn finish_facts(self) -> Result<Facts, WriteError> {
        let Closed { kept, counts, .. } = self.close()?;
        let (facts, ids) = match kept {
            Kept::Facts(all, ids) => (all, ids),
            Kept::Records(all) => {
                let mut ids = SessionIds::default();
                let facts = all.iter().map(|t| ids.facts(t)).collect();
                (facts, ids)
            }
        };
        let turns = facts
            .into_iter()
            .filter(|f| f.status != TurnStatus::Interrupted)
            .map(|mut f| {
                if let Some(counted) = counts.as_ref().and_then(|c| c.get(&f.line)) {
                    f.local_tokens = Some(counted.tokens);
                }
                f
            })
            .collect();
        Ok(Facts {
            turns,
            sessions: ids.names,
        })
    }

    /// Counts the phase's turns, closes and syncs the files.
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

    #[tokio::test]
    async fn keeping_facts_keeps_what_the_metrics_need_and_not_the_record() {
        let recorder = Recorder::memory(Console::silent()).keeping_facts();
        let mut answered = TurnRecord::aborted("s", 1, "s:1", "{}");
        answered.status = TurnStatus::Completed;
        answered.error = None;
        answered.issued_ns = Some(5);
        answered.usage = Some(serde_json::json!({
            "prompt_tokens": 7, "completion_tokens": 3,
            "prompt_tokens_details": {"cached_tokens": 2}
        }));
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
        let kept = recorder.finish_facts().unwrap();
        // Session ids are held once, numbered in order of first turn.
        assert_eq!(kept.sessions, ["s", "t"]);
        let named: Vec<(&str, u32)> = kept
            .turns
            .iter()
            .map(|f| (kept.sessions[f.session as usize].as_str(), f.turn))
            .collect();
        assert_eq!(named, [("s", 1), ("s", 2), ("t", 1)]);
        let facts = &kept.turns[..2];
        assert_eq!(facts.len(), 2, "an interrupted turn does not count");
        let f = facts[0];
        assert_eq!(f.issued_ns, Some(5));
        assert_eq!(
            (f.prompt_tokens, f.completion_tokens, f.cached_tokens),
            (Some(7), Some(3), Some(2))
        );
        assert!(!f.context_overflow && facts[1].context_overflow);
        assert_eq!(facts[1].status, TurnStatus::Failed);
    }

    /// A recorder with a log keeps thin records, a resume's earlier ones too; the log keeps
    /// the whole, and reading it back gives them. A recorder without a log (`plugin check`)
    /// keeps them whole.
    #[tokio::test]
    async fn with_a_log_memory_keeps_thin_records_and_the_log_whole_ones() {
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
            r.timings = Some(serde_json::json!({"prompt_ms": 1.5, "predicted_ms": 9.0}));
            r
        };
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("turns.jsonl");
        let files = |append| LogFiles {
            turns: &log,
            durability: Durability::Write,
            append,
        };
        let first = Recorder::open(files(false), Vec::new(), None, Console::silent()).unwrap();
        first.keep(answered(1), None).await.unwrap();
        first.finish().unwrap();
        // A resume appends a turn; the first comes back from the log as the prior.
        let prior = journal::read_turns(&log).unwrap();
        assert_eq!(prior[0].record.expected_json, r#"{"want": "ls"}"#);
        let resumed = Recorder::open(files(true), prior, None, Console::silent()).unwrap();
        resumed.keep(answered(2), None).await.unwrap();
        let kept = resumed.finish().unwrap();
        assert_eq!(kept.len(), 2);
        for r in &kept {
            let c = r.completion.as_ref().unwrap();
            assert_eq!((c.content.as_str(), c.reasoning_content.as_str()), ("", ""));
            assert_eq!(c.finish_reason.as_deref(), Some("stop"));
            assert_eq!(r.expected_json, "");
            assert_eq!(r.timings, None);
            assert_eq!(
                r.timing(agentload_results::record::Timing::PromptMs),
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
            assert_eq!(r.timings.as_ref().unwrap()["predicted_ms"], 9.0);
        }
        let memory = Recorder::memory(Console::silent());
        memory.keep(answered(1), None).await.unwrap();
        let kept = memory.snapshot();
        assert_eq!(kept[0].completion.as_ref().unwrap().content, "done");
        assert_eq!(kept[0].expected_json, r#"{"want": "ls"}"#);
    }
}
