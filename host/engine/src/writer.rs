//! The thread that writes a phase's journals, off the async runtime.
//!
//! A session serializes its line on its own task, queues it (a bounded
//! queue: a slow disk pushes back on the sessions instead of filling
//! memory), and awaits its own acknowledgement: "a turn's record is on disk
//! before its session's next request" holds per session, and no session
//! waits for another's write. The thread drains whatever is queued and
//! writes each journal's share in one `write(2)` (and one `fdatasync` under
//! `durability = "sync"`: a group commit), then acknowledges each line with
//! its line number. After a failed write every later line is refused with
//! the same cause: the run stops on the first.
//!
//! One exception saves the hand-off where nothing else is going on: a
//! session alone in the process (no other session being driven, no exchange
//! in flight) whose line goes to a journal without `fdatasync` writes its
//! own line at once, under the same lock, unless the thread is writing.
//! Nobody's read or send can wait behind that `write(2)` (there is no other
//! session), and the session would wait for the line anyway; it saves
//! waking the thread and being woken back, tens of microseconds on a
//! virtual machine, in the edge replay's gap between turns (at concurrency
//! one). With other sessions (a disk stall in a `write(2)` would hold a
//! runtime worker and their sends), or under `durability = "sync"`, every
//! line goes through the thread.

use super::journal::{Durability, Journal, WriteError};
use super::session::SessionOutcome;
use crate::TurnRecord;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tokio::sync::{mpsc, oneshot};

/// Lines waiting for the thread, at most (each a few KiB).
const QUEUE: usize = 4096;

/// Which journal a line goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Turns,
    Sessions,
}

/// One serialized line (with its newline) and who waits for it.
struct Job {
    target: Target,
    line: Vec<u8>,
    done: oneshot::Sender<Result<u64, WriteError>>,
}

/// A line handed to the writer thread, or already written.
pub(crate) enum Queued {
    /// Written by the session itself (see the module's doc).
    Written(Result<u64, WriteError>),
    /// With the thread.
    Thread(Handed),
}

/// A line with the thread.
pub(crate) struct Handed {
    /// The line, when the queue was full: it goes in on [`Queued::written`].
    later: Option<(mpsc::Sender<Job>, Job)>,
    written: oneshot::Receiver<Result<u64, WriteError>>,
    path: PathBuf,
}

impl Queued {
    /// The line's 1-based number once it is written.
    pub async fn written(self) -> Result<u64, WriteError> {
        match self {
            Self::Written(result) => result,
            Self::Thread(Handed {
                later,
                written,
                path,
            }) => {
                if let Some((queue, job)) = later {
                    queue.send(job).await.map_err(|_| gone(&path))?;
                }
                written.await.map_err(|_| gone(&path))?
            }
        }
    }
}

/// The error of a line the stopped thread cannot take.
fn gone(path: &std::path::Path) -> WriteError {
    WriteError {
        path: path.to_path_buf(),
        cause: std::io::Error::other("the journal writer has stopped"),
    }
}

/// The journals, as the thread hands them back.
pub(crate) struct Closed {
    pub turns: Journal<TurnRecord>,
    pub sessions: Journal<SessionOutcome>,
}

/// The journals, and the first failed write's cause: once one write failed,
/// every later line is refused with it.
struct Files {
    closed: Closed,
    failed: Option<(PathBuf, std::io::ErrorKind, String)>,
}

impl Files {
    /// Appends `lines` to `target`'s journal; returns the first one's line.
    fn write(&mut self, target: Target, lines: &[&[u8]]) -> Result<u64, WriteError> {
        if let Some((path, kind, text)) = &self.failed {
            return Err(WriteError {
                path: path.clone(),
                cause: std::io::Error::new(*kind, text.clone()),
            });
        }
        let result = match target {
            Target::Turns => self.closed.turns.write_lines(lines),
            Target::Sessions => self.closed.sessions.write_lines(lines),
        };
        if let Err(e) = &result {
            self.failed = Some((e.path.clone(), e.cause.kind(), e.cause.to_string()));
        }
        result
    }

    /// Whether a line to `target` is written without `fdatasync`.
    fn unsynced(&self, target: Target) -> bool {
        let durability = match target {
            Target::Turns => self.closed.turns.durability(),
            Target::Sessions => self.closed.sessions.durability(),
        };
        durability != Durability::Sync
    }
}

/// A phase's writer thread and the queue to it.
pub(crate) struct Writer {
    queue: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    files: Arc<Mutex<Files>>,
    /// Whether anything else is going on in the process (a test's own answer in tests).
    busy: fn() -> bool,
    turns_path: PathBuf,
}

impl Writer {
    /// Starts the thread that owns `turns` and `sessions`.
    pub fn start(
        turns: Journal<TurnRecord>,
        sessions: Journal<SessionOutcome>,
    ) -> Result<Self, WriteError> {
        Self::with_busy(turns, sessions, || {
            super::session::sessions_driven() > 1 || agentload_client::exchanges_in_flight() > 0
        })
    }

    fn with_busy(
        turns: Journal<TurnRecord>,
        sessions: Journal<SessionOutcome>,
        busy: fn() -> bool,
    ) -> Result<Self, WriteError> {
        let turns_path = turns.path().to_path_buf();
        let (queue, jobs) = mpsc::channel(QUEUE);
        let files = Arc::new(Mutex::new(Files {
            closed: Closed { turns, sessions },
            failed: None,
        }));
        let shared = files.clone();
        let thread = std::thread::Builder::new()
            .name("agentload-writer".into())
            .spawn(move || write_loop(jobs, &shared))
            .map_err(|cause| WriteError {
                path: turns_path.clone(),
                cause,
            })?;
        Ok(Self {
            queue: Some(queue),
            thread: Some(thread),
            files,
            busy,
            turns_path,
        })
    }

    /// Hands a turn record to the thread without waiting:
    /// [`Queued::written`] waits for its line.
    pub fn queue_turn(&self, record: &TurnRecord) -> Result<Queued, WriteError> {
        self.queue(Target::Turns, record)
    }

    /// Writes a session's outcome once it is written.
    pub async fn session(&self, outcome: &SessionOutcome) -> Result<u64, WriteError> {
        self.queue(Target::Sessions, outcome)?.written().await
    }

    fn queue(&self, target: Target, row: &impl Serialize) -> Result<Queued, WriteError> {
        let mut line = serde_json::to_vec(row).map_err(|e| WriteError {
            path: self.turns_path.clone(),
            cause: std::io::Error::other(e),
        })?;
        line.push(b'\n');
        if let Some(written) = self.alone(target, &line) {
            return Ok(Queued::Written(written));
        }
        let (done, written) = oneshot::channel();
        let job = Job { target, line, done };
        let queue = self.queue.as_ref().ok_or_else(|| gone(&self.turns_path))?;
        let later = match queue.try_send(job) {
            Ok(()) => None,
            // A full queue: the line is sent when its writer waits.
            Err(mpsc::error::TrySendError::Full(job)) => Some((queue.clone(), job)),
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(gone(&self.turns_path)),
        };
        Ok(Queued::Thread(Handed {
            later,
            written,
            path: self.turns_path.clone(),
        }))
    }

    /// Writes `line` at once when nothing else is going on (see the
    /// module's doc); `None` hands it to the thread.
    fn alone(&self, target: Target, line: &[u8]) -> Option<Result<u64, WriteError>> {
        if (self.busy)() {
            return None;
        }
        // Busy means the thread is writing: it will take this line next.
        let mut files = self.files.try_lock().ok()?;
        files.unsynced(target).then(|| files.write(target, &[line]))
    }

    /// Waits until every queued line is written; hands the journals back.
    pub fn close(mut self) -> Closed {
        self.queue = None;
        self.thread
            .take()
            .expect("closed once")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        let files =
            Arc::try_unwrap(self.files).unwrap_or_else(|_| unreachable!("the thread has ended"));
        files.into_inner().expect("journal lock").closed
    }
}

/// The thread: batches of queued lines, one write per journal per batch.
fn write_loop(mut jobs: mpsc::Receiver<Job>, files: &Mutex<Files>) {
    let mut batch = Vec::new();
    while let Some(first) = jobs.blocking_recv() {
        batch.push(first);
        while batch.len() < QUEUE {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        for target in [Target::Turns, Target::Sessions] {
            let jobs: Vec<Job> = extract(&mut batch, target);
            if jobs.is_empty() {
                continue;
            }
            let lines: Vec<&[u8]> = jobs.iter().map(|j| j.line.as_slice()).collect();
            let result = files.lock().expect("journal lock").write(target, &lines);
            match result {
                Ok(first_line) => {
                    for (i, job) in jobs.into_iter().enumerate() {
                        let _ = job.done.send(Ok(first_line + i as u64));
                    }
                }
                Err(e) => {
                    for job in jobs {
                        let _ = job.done.send(Err(WriteError {
                            path: e.path.clone(),
                            cause: std::io::Error::new(e.cause.kind(), e.cause.to_string()),
                        }));
                    }
                }
            }
        }
    }
}

/// Takes `target`'s jobs out of `batch`, in order.
fn extract(batch: &mut Vec<Job>, target: Target) -> Vec<Job> {
    let (mine, rest): (Vec<Job>, Vec<Job>) = batch.drain(..).partition(|j| j.target == target);
    *batch = rest;
    mine
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{read_lines, Durability};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    fn outcome(id: &str) -> SessionOutcome {
        SessionOutcome {
            id: id.into(),
            expected_turns: 1,
            completed: 1,
            failed: 0,
            aborted: 0,
            ended: crate::SessionEnd::Finished,
            agent: None,
            error: None,
        }
    }

    /// A session alone: it may write its own line.
    fn idle() -> bool {
        false
    }

    /// Other sessions or streams: every line goes to the thread.
    fn busy() -> bool {
        true
    }

    /// Idle and busy by turns, so both paths write into the same journals at once.
    fn by_turns() -> bool {
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        CALLS.fetch_add(1, Ordering::Relaxed) % 2 == 1
    }

    fn writer(
        dir: &std::path::Path,
        durability: Durability,
        busy: fn() -> bool,
    ) -> (Writer, PathBuf, PathBuf) {
        let turns = dir.join("turns.jsonl");
        let sessions = dir.join("sessions.jsonl");
        let writer = Writer::with_busy(
            Journal::create_file(&turns, durability).unwrap(),
            Journal::create_file(&sessions, durability).unwrap(),
            busy,
        )
        .unwrap();
        (writer, turns, sessions)
    }

    /// 64 sessions of 20 turns write at once; every acknowledgement names
    /// the line that holds its record, and a session's lines come in its
    /// order.
    async fn every_session_gets_its_own_line(durability: Durability, busy: fn() -> bool) {
        let dir = tempfile::tempdir().unwrap();
        let (writer, turns, sessions) = writer(dir.path(), durability, busy);
        let writer = Arc::new(writer);
        let tasks: Vec<_> = (0..64)
            .map(|s| {
                let writer = writer.clone();
                tokio::spawn(async move {
                    let mut lines = Vec::new();
                    for t in 1..=20 {
                        let r = TurnRecord::aborted(&format!("s{s}"), t, "i", "{}");
                        lines.push((t, writer.queue_turn(&r).unwrap().written().await.unwrap()));
                    }
                    writer.session(&outcome(&format!("s{s}"))).await.unwrap();
                    lines
                })
            })
            .collect();
        let mut acked = Vec::new();
        for t in tasks {
            acked.push(t.await.unwrap());
        }
        let closed = Arc::try_unwrap(writer).ok().unwrap().close();
        assert_eq!((closed.turns.lines(), closed.sessions.lines()), (1280, 64));
        let written: Vec<TurnRecord> = read_lines(&turns).unwrap();
        for (s, lines) in acked.iter().enumerate() {
            for &(turn, line) in lines {
                let r = &written[line as usize - 1];
                assert_eq!((r.session_id.as_str(), r.turn), (&*format!("s{s}"), turn));
            }
            assert!(lines.windows(2).all(|w| w[0].1 < w[1].1));
        }
        assert_eq!(read_lines::<SessionOutcome>(&sessions).unwrap().len(), 64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_session_gets_its_own_line_and_nothing_is_lost() {
        every_session_gets_its_own_line(Durability::Sync, busy).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lines_written_alone_and_by_the_thread_at_once_lose_nothing() {
        every_session_gets_its_own_line(Durability::Write, by_turns).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn alone_a_line_is_on_disk_before_queueing_returns() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, turns, _) = writer(dir.path(), Durability::Write, idle);
        for t in 1..=3 {
            let queued = writer
                .queue_turn(&TurnRecord::aborted("s", t, "i", "{}"))
                .unwrap();
            assert!(matches!(queued, Queued::Written(Ok(line)) if line == u64::from(t)));
            // In the file already, before anyone awaits it.
            let written: Vec<TurnRecord> = read_lines(&turns).unwrap();
            assert_eq!(written.last().map(|r| r.turn), Some(t));
        }
        assert_eq!(writer.session(&outcome("s")).await.unwrap(), 1);
        assert_eq!(writer.close().turns.lines(), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn under_load_or_with_fdatasync_a_line_goes_to_the_thread() {
        for (durability, others) in [
            (Durability::Write, busy as fn() -> bool),
            (Durability::Sync, idle),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let (writer, turns, _) = writer(dir.path(), durability, others);
            let queued = writer
                .queue_turn(&TurnRecord::aborted("s", 1, "i", "{}"))
                .unwrap();
            assert!(matches!(queued, Queued::Thread(_)), "{durability:?}");
            assert_eq!(queued.written().await.unwrap(), 1);
            writer.close();
            assert_eq!(read_lines::<TurnRecord>(&turns).unwrap().len(), 1);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn while_the_thread_writes_a_line_waits_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, turns, _) = writer(dir.path(), Durability::Write, idle);
        // The thread holds the journals (as while it writes a batch).
        let held = writer.files.lock().unwrap();
        let queued = writer
            .queue_turn(&TurnRecord::aborted("s", 1, "i", "{}"))
            .unwrap();
        assert!(matches!(queued, Queued::Thread(_)));
        drop(held);
        assert_eq!(queued.written().await.unwrap(), 1);
        writer.close();
        assert_eq!(read_lines::<TurnRecord>(&turns).unwrap().len(), 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_pushes_back_without_losing_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let (writer, turns, _) = writer(dir.path(), Durability::Write, busy);
        // More lines queued at once than the queue holds.
        let n = QUEUE as u32 * 2;
        let queued: Vec<Queued> = (1..=n)
            .map(|t| {
                writer
                    .queue_turn(&TurnRecord::aborted("s", t, "i", "{}"))
                    .unwrap()
            })
            .collect();
        let mut lines = Vec::new();
        for q in queued {
            lines.push(q.written().await.unwrap());
        }
        lines.sort_unstable();
        lines.dedup();
        assert_eq!(lines.len() as u32, n, "every line acknowledged once");
        writer.close();
        let written: Vec<TurnRecord> = read_lines(&turns).unwrap();
        assert_eq!(written.len() as u32, n);
        let mut seen: Vec<u32> = written.iter().map(|r| r.turn).collect();
        seen.sort_unstable();
        assert_eq!(seen, (1..=n).collect::<Vec<_>>());
    }

    /// The first write fails on a full disk; every later line, on either
    /// path, is refused with its cause.
    async fn after_a_failed_write_every_line_is_refused(first_alone: bool) {
        static BUSY: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];
        fn alone_first() -> bool {
            BUSY[0].load(Ordering::Relaxed)
        }
        fn thread_first() -> bool {
            BUSY[1].load(Ordering::Relaxed)
        }
        let (flag, busy): (_, fn() -> bool) = if first_alone {
            (&BUSY[0], alone_first)
        } else {
            (&BUSY[1], thread_first)
        };
        let full = std::path::Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let device = std::fs::OpenOptions::new().write(true).open(full).unwrap();
        flag.store(!first_alone, Ordering::Relaxed);
        let writer = Writer::with_busy(
            Journal::on_file(full, device, Durability::Write),
            Journal::create_file(&dir.path().join("s.jsonl"), Durability::Write).unwrap(),
            busy,
        )
        .unwrap();
        let r = TurnRecord::aborted("s", 1, "i", "{}");
        let queued = writer.queue_turn(&r).unwrap();
        assert_eq!(matches!(queued, Queued::Written(_)), first_alone);
        let first = queued.written().await.unwrap_err();
        assert_eq!(first.cause.kind(), std::io::ErrorKind::StorageFull);
        // The sessions file is fine, but the run is already broken, on both paths.
        for others in [false, true] {
            flag.store(others, Ordering::Relaxed);
            let later = writer.session(&outcome("s")).await.unwrap_err();
            assert_eq!(later.path, full);
            assert!(later.to_string().contains("No space left"), "{later}");
        }
        assert_eq!(writer.close().sessions.lines(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn after_a_failed_write_every_line_is_refused_with_its_cause() {
        after_a_failed_write_every_line_is_refused(false).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn after_a_failed_write_alone_every_line_is_refused_with_its_cause() {
        after_a_failed_write_every_line_is_refused(true).await;
    }
}
