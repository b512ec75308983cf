//! Local token counting off the request path: one thread at the lowest
//! scheduling priority (nice 19) counts each answered turn (a chat-template
//! render and BPE of a prompt of up to ~30K tokens) and appends the counts
//! to `turns.tokens.jsonl`, so it never competes with a stream for a core
//! and never rewrites the turn log.

use super::log::{Durability, Journal, TokenLine, WriteError};
use super::record::LocalTokens;
use crate::client::Assembled;
use crate::tokens::LocalCounter;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

struct Job {
    line: u64,
    body: Value,
    answer: Assembled,
}

/// The counting thread of one phase.
pub struct CountWorker {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<Result<HashMap<u64, LocalTokens>, WriteError>>>,
    /// The first write error, seen by the recorder before the next request.
    failed: Arc<Mutex<Option<String>>>,
}

impl CountWorker {
    /// Starts the thread; counts go to `out` (appended to, for a resume).
    pub fn start(
        counter: Arc<LocalCounter>,
        out: &Path,
        durability: Durability,
    ) -> Result<Self, WriteError> {
        let mut journal = Journal::<TokenLine>::append(out, durability)?;
        let (tx, rx) = mpsc::channel::<Job>();
        let failed = Arc::new(Mutex::new(None));
        let failed_slot = failed.clone();
        let thread = std::thread::Builder::new()
            .name("token-count".into())
            .spawn(move || {
                lower_priority();
                let mut counts = HashMap::new();
                for job in rx {
                    let tokens = counter.count_turn(&job.body, &job.answer);
                    if let Err(e) = journal.write(&TokenLine {
                        line: job.line,
                        tokens,
                    }) {
                        *failed_slot.lock().expect("count error lock") = Some(e.to_string());
                        return Err(e);
                    }
                    counts.insert(job.line, tokens);
                }
                journal.sync()?;
                Ok(counts)
            })
            .map_err(|e| WriteError {
                path: out.to_path_buf(),
                cause: e,
            })?;
        Ok(Self {
            jobs: Some(tx),
            thread: Some(thread),
            failed,
        })
    }

    /// Queues the turn recorded at `line` for counting.
    pub fn count(&self, line: u64, body: Value, answer: Assembled) {
        if let Some(jobs) = &self.jobs {
            // A send fails only when the thread stopped on a write error,
            // which `failure` reports.
            let _ = jobs.send(Job { line, body, answer });
        }
    }

    /// The write error that stopped the thread, if any.
    pub fn failure(&self) -> Option<String> {
        self.failed.lock().expect("count error lock").clone()
    }

    /// Waits for the queue to drain; the counts by record line.
    pub fn finish(mut self) -> Result<HashMap<u64, LocalTokens>, WriteError> {
        drop(self.jobs.take());
        self.thread
            .take()
            .expect("finished once")
            .join()
            .unwrap_or_else(|_| panic!("the token-count thread panicked"))
    }
}

/// Puts the calling thread at nice 19 (Linux schedules threads by their
/// own nice value); best effort.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no preconditions; setpriority on our own thread id
    // only changes this thread's nice value.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 19);
    }
}
