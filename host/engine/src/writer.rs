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

use super::journal::{Journal, WriteError};
use super::session::SessionOutcome;
use crate::TurnRecord;
use serde::Serialize;
use std::path::PathBuf;
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

/// A line handed to the writer thread.
pub(crate) struct Queued {
    /// The line, when the queue was full: it goes in on [`Queued::written`].
    later: Option<(mpsc::Sender<Job>, Job)>,
    written: oneshot::Receiver<Result<u64, WriteError>>,
    path: PathBuf,
}

impl Queued {
    /// The line's 1-based number once it is written.
    pub async fn written(self) -> Result<u64, WriteError> {
        if let Some((queue, job)) = self.later {
            queue.send(job).await.map_err(|_| gone(&self.path))?;
        }
        self.written.await.map_err(|_| gone(&self.path))?
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

/// A phase's writer thread and the queue to it.
pub(crate) struct Writer {
    queue: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<Closed>>,
    turns_path: PathBuf,
}

impl Writer {
    /// Starts the thread that owns `turns` and `sessions`.
    pub fn start(
        turns: Journal<TurnRecord>,
        sessions: Journal<SessionOutcome>,
    ) -> Result<Self, WriteError> {
        let turns_path = turns.path().to_path_buf();
        let (queue, jobs) = mpsc::channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("agentload-writer".into())
            .spawn(move || write_loop(jobs, Closed { turns, sessions }))
            .map_err(|cause| WriteError {
                path: turns_path.clone(),
                cause,
            })?;
        Ok(Self {
            queue: Some(queue),
            thread: Some(thread),
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
        let (done, written) = oneshot::channel();
        let job = Job { target, line, done };
        let queue = self.queue.as_ref().ok_or_else(|| gone(&self.turns_path))?;
        let later = match queue.try_send(job) {
            Ok(()) => None,
            // A full queue: the line is sent when its writer waits.
            Err(mpsc::error::TrySendError::Full(job)) => Some((queue.clone(), job)),
            Err(mpsc::error::TrySendError::Closed(_)) => return Err(gone(&self.turns_path)),
        };
        Ok(Queued {
            later,
            written,
            path: self.turns_path.clone(),
        })
    }

    /// Waits until every queued line is written; hands the journals back.
    pub fn close(mut self) -> Closed {
        self.queue = None;
        self.thread
            .take()
            .expect("closed once")
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
}

/// The thread: batches of queued lines, one write per journal per batch.
fn write_loop(mut jobs: mpsc::Receiver<Job>, mut files: Closed) -> Closed {
    let mut failed: Option<(PathBuf, std::io::ErrorKind, String)> = None;
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
            let result = match &failed {
                Some(_) => Err(None),
                None => match target {
                    Target::Turns => files.turns.write_lines(&lines),
                    Target::Sessions => files.sessions.write_lines(&lines),
                }
                .map_err(Some),
            };
            match result {
                Ok(first_line) => {
                    for (i, job) in jobs.into_iter().enumerate() {
                        let _ = job.done.send(Ok(first_line + i as u64));
                    }
                }
                Err(e) => {
                    if let Some(e) = e {
                        failed = Some((e.path.clone(), e.cause.kind(), e.cause.to_string()));
                    }
                    let (path, kind, text) = failed.clone().expect("set above");
                    for job in jobs {
                        let _ = job.done.send(Err(WriteError {
                            path: path.clone(),
                            cause: std::io::Error::new(kind, text.clone()),
                        }));
                    }
                }
            }
        }
    }
    files
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
    use std::sync::Arc;

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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_session_gets_its_own_line_and_nothing_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let turns = dir.path().join("turns.jsonl");
        let sessions = dir.path().join("sessions.jsonl");
        let writer = Arc::new(
            Writer::start(
                Journal::create(&turns, Durability::Sync).unwrap(),
                Journal::create(&sessions, Durability::Sync).unwrap(),
            )
            .unwrap(),
        );
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
            // Each acknowledgement names the line that holds that record,
            // and a session's lines come in its order.
            for &(turn, line) in lines {
                let r = &written[line as usize - 1];
                assert_eq!((r.session_id.as_str(), r.turn), (&*format!("s{s}"), turn));
            }
            assert!(lines.windows(2).all(|w| w[0].1 < w[1].1));
        }
        assert_eq!(read_lines::<SessionOutcome>(&sessions).unwrap().len(), 64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_queue_pushes_back_without_losing_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let turns = dir.path().join("turns.jsonl");
        let writer = Writer::start(
            Journal::create(&turns, Durability::Write).unwrap(),
            Journal::create(&dir.path().join("s.jsonl"), Durability::Write).unwrap(),
        )
        .unwrap();
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn after_a_failed_write_every_line_is_refused_with_its_cause() {
        let full = std::path::Path::new("/dev/full");
        if !full.exists() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let device = std::fs::OpenOptions::new().write(true).open(full).unwrap();
        let writer = Writer::start(
            Journal::on_file(full, device, Durability::Write),
            Journal::create(&dir.path().join("s.jsonl"), Durability::Write).unwrap(),
        )
        .unwrap();
        let r = TurnRecord::aborted("s", 1, "i", "{}");
        let first = writer.queue_turn(&r).unwrap().written().await.unwrap_err();
        assert_eq!(first.cause.kind(), std::io::ErrorKind::StorageFull);
        // The sessions file is fine, but the run is already broken.
        let later = writer.session(&outcome("s")).await.unwrap_err();
        assert_eq!(later.path, full);
        assert!(later.to_string().contains("No space left"), "{later}");
        writer.close();
    }
}
