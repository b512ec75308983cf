//! Local token counting off the request path. A count (a chat-template render and BPE of a
//! prompt of up to ~30K tokens, tens of ms) never runs beside a stream: answered turns are
//! queued as the phase runs, and counted when it ends, when nothing streams any more, on all
//! cores. The queued turns (request bodies of up to ~100 KiB, and the answers' texts) wait in
//! a scratch file beside the side file (`turns.tokens.jsonl.queue`, each turn in one
//! `writev(2)`, removed once counted), so memory stays flat however long the phase; a turn is
//! queued in memory (its body's shared parts, not a copy) and written there by
//! [`CountWorker::spill_held`], which a session calls once its next request is out (the
//! write is not between an answer and the next request). Their counts go to
//! `turns.tokens.jsonl` (the turn log itself is never rewritten); a process killed before
//! its phase ended leaves its turns uncounted, and `agentload resume` counts them
//! ([`super::session`]). The vocabulary loads then too, not at start-up ([`LocalCounter`] is
//! lazy).
//!
//! A session's prompts are counted in order, each after the one before it: a prompt repeats
//! its previous one's start, and only what follows the last special token both share is
//! encoded ([`LocalCounter::count_turn`]), so counting a session costs about its tokens, not
//! its turns times its context.
//!
//! Every count checks that no exchange is in flight in the process
//! ([`agentload_client::exchanges_in_flight`]); [`CountingStats::during_streams`] says how many
//! were not (0, unless the phase's end rules are broken).

use super::journal::{Durability, Journal, TokenLine, WriteError};
use crate::tokens::LocalCounter;
use crate::{CountingStats, LocalTokens, RecordedTokens};
use agentload_client::{exchanges_in_flight, Assembled, FirstChunk, RequestBody, ToolCallRecord};
use agentload_fs::OutDir;
use agentload_tokenizer::PromptCount;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{IoSlice, Write as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A queued turn as the session left it.
struct Held {
    body: RequestBody,
    /// Live-reply replay: the recording's request at this turn.
    recorded: Option<RequestBody>,
    replies: Replies,
}

/// What the output counts need of a turn's answers. The rest of an [`Assembled`] (`usage`,
/// `timings`, the simulator's stamps) is dropped when the turn is queued.
#[derive(Clone, Serialize, Deserialize)]
struct Replies {
    answer: Reply,
    /// Live-reply replay: the recorded reply after the turn, where the recording has one.
    recorded: Option<Reply>,
}

/// An answer's texts, calls, and what its first chunk carried.
#[derive(Clone, Serialize, Deserialize)]
struct Reply {
    content: String,
    reasoning_content: String,
    tool_calls: Vec<ToolCallRecord>,
    first_chunk: Option<FirstChunk>,
}

impl From<Assembled> for Reply {
    fn from(a: Assembled) -> Self {
        Self {
            content: a.content,
            reasoning_content: a.reasoning_content,
            tool_calls: a.tool_calls,
            first_chunk: a.first_chunk,
        }
    }
}

impl From<Reply> for Assembled {
    fn from(r: Reply) -> Self {
        Self {
            content: r.content,
            reasoning_content: r.reasoning_content,
            tool_calls: r.tool_calls,
            first_chunk: r.first_chunk,
            ..Self::default()
        }
    }
}

/// Where a queued turn is.
enum Stored {
    /// In memory (not spilled yet, or the scratch file could not take it).
    Held(Arc<Held>),
    /// In the scratch file from `offset`: the body, the recorded body (where there is one,
    /// `recorded` bytes), then the replies as JSON.
    Spilled {
        offset: u64,
        body: u32,
        recorded: Option<u32>,
        replies: u32,
    },
}

/// The queued turns, in queue order.
#[derive(Default)]
struct Queue {
    jobs: Vec<Job>,
    /// Jobs from here on have not been offered to the scratch file yet.
    unspilled: usize,
}

/// A queued turn: 40 bytes in memory once spilled.
struct Job {
    line: u64,
    /// The session's id, hashed: its turns are counted in a row.
    session: u64,
    turn: Stored,
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

/// The scratch file of queued turns and its length.
struct Spill {
    path: PathBuf,
    file: Option<File>,
    len: u64,
    /// False after a failed write (the turns before it stay readable).
    writable: bool,
}

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
    /// Opens `file` in the results directory `out` (appended to, for a resume); counting
    /// waits for [`CountWorker::finish`].
    pub fn start(
        counter: Arc<LocalCounter>,
        out: &OutDir,
        file: &Path,
        durability: Durability,
    ) -> Result<Self, WriteError> {
        let journal = Journal::<TokenLine>::append(out, file, durability)?;
        let mut name = file.file_name().unwrap_or_default().to_os_string();
        name.push(".queue");
        let queue = file.with_file_name(name);
        let path = out.path(&queue);
        // A scratch file left by a killed process holds nothing needed (resume recounts).
        let file = out
            .open_rw(&queue, true)
            .ok()
            .filter(|f| f.set_len(0).is_ok());
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

    /// Queues the turn recorded at `line` of session `session` (`body`: its request's JSON,
    /// shared, not copied; `recorded`: the recording's turn, in live-reply replay) for
    /// counting. The turn is held in memory until [`CountWorker::spill_held`].
    pub fn count(
        &self,
        line: u64,
        session: &str,
        body: RequestBody,
        answer: Assembled,
        recorded: Option<RecordedTurn>,
    ) {
        let (recorded, recorded_reply) = match recorded {
            Some(r) => (Some(r.body.into()), r.reply.map(Reply::from)),
            None => (None, None),
        };
        let held = Held {
            body,
            recorded,
            replies: Replies {
                answer: answer.into(),
                recorded: recorded_reply,
            },
        };
        self.queue.lock().expect("count queue lock").jobs.push(Job {
            line,
            session: session_key(session),
            turn: Stored::Held(Arc::new(held)),
        });
    }

    /// Writes the turns queued since the last call to the scratch file (those it cannot
    /// take stay in memory). The queue is not locked while they are written.
    pub fn spill_held(&self) {
        let held: Vec<(usize, Arc<Held>)> = {
            let mut queue = self.queue.lock().expect("count queue lock");
            let queued = queue.jobs.len();
            let from = std::mem::replace(&mut queue.unspilled, queued);
            queue.jobs[from..]
                .iter()
                .enumerate()
                .filter_map(|(i, job)| match &job.turn {
                    Stored::Held(held) => Some((from + i, held.clone())),
                    Stored::Spilled { .. } => None,
                })
                .collect()
        };
        if held.is_empty() {
            return;
        }
        let placed: Vec<(usize, Stored)> = {
            let mut spill = self.spill.lock().expect("count queue lock");
            held.into_iter()
                .filter_map(|(i, held)| Some((i, spill.put(&held)?)))
                .collect()
        };
        let mut queue = self.queue.lock().expect("count queue lock");
        for (i, spilled) in placed {
            queue.jobs[i].turn = spilled;
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
            let Some((counted, reused)) = counted else {
                continue;
            };
            self.journal.write(&TokenLine {
                line: job.line,
                tokens: counted.tokens,
                recorded: counted.recorded,
            })?;
            stats.prompt_tokens += u64::from(counted.tokens.isl);
            stats.prompt_tokens_reused += reused as u64;
            counts.insert(job.line, counted);
        }
        self.journal.sync()?;
        stats.turns = counts.len() as u64;
        stats.wall_ms = started.elapsed().as_secs_f64() * 1e3;
        stats.during_streams = during.load(Ordering::SeqCst);
        Ok((counts, stats))
    }
}

/// A session id as the queue keeps it. Two sessions that hash alike are counted as one chain:
/// their counts are still exact, the second's prompts just share less with the first's.
fn session_key(session: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    session.hash(&mut hasher);
    hasher.finish()
}

/// The counts of a session's last prompts, live and recorded, which its next ones are
/// counted after (any earlier count gives exact counts; the session's last one saves the
/// most work).
#[derive(Default)]
struct Chain {
    prompt: Option<PromptCount>,
    recorded: Option<PromptCount>,
}

/// The fewest turns a session's chain is cut into pieces of. Each piece starts with a whole
/// count (3.4x one after the last prompt in `bench --sections counting`), so pieces of 32 cost
/// about 7 % more than one chain, and a few long sessions still spread over every core.
const PIECE_MIN: usize = 32;

/// `jobs` (in log order) as runs of one session's turns in log order, each counted in a
/// row: sessions cut into pieces small enough to give each of `threads` about four, but not
/// under [`PIECE_MIN`] turns; the longest first.
fn pieces(jobs: &[Job], threads: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    // Stable: a session's turns stay in log order.
    order.sort_by_key(|&i| jobs[i].session);
    let piece = jobs.len().div_ceil(threads.max(1) * 4).max(PIECE_MIN);
    let mut pieces: Vec<Vec<usize>> = order
        .chunk_by(|&a, &b| jobs[a].session == jobs[b].session)
        .flat_map(|session| session.chunks(piece))
        .map(<[usize]>::to_vec)
        .collect();
    pieces.sort_by_key(|turns| std::cmp::Reverse(turns.len()));
    pieces
}

/// Counts `jobs` (in log order) on every core, each session's in a row ([`pieces`]); the
/// counts (with the prompt tokens reused) in the jobs' order. `during` counts the counts
/// that began or ended with an exchange in flight.
fn count_all(
    counter: &LocalCounter,
    jobs: &[Job],
    spill: Option<&File>,
    during: &AtomicU64,
    streaming: fn() -> usize,
) -> Vec<Option<(Counted, usize)>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let sessions = pieces(jobs, cores);
    let threads = cores.min(sessions.len()).max(1);
    let next = AtomicUsize::new(0);
    let mut counted: Vec<Option<(Counted, usize)>> = Vec::new();
    counted.resize_with(jobs.len(), || None);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    lower_priority();
                    let mut out = Vec::new();
                    while let Some(turns) = sessions.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let mut chain = Chain::default();
                        for &i in turns {
                            let busy = streaming() > 0;
                            let tokens = jobs[i].count(counter, spill, &mut chain);
                            if busy || streaming() > 0 {
                                during.fetch_add(1, Ordering::SeqCst);
                            }
                            out.push((i, tokens));
                        }
                    }
                    out
                })
            })
            .collect();
        for handle in handles {
            for (i, tokens) in handle.join().expect("a token-count thread panicked") {
                counted[i] = tokens;
            }
        }
    });
    counted
}

impl Spill {
    /// Appends `held` to the scratch file (its parts in one `writev(2)` as far as the kernel
    /// takes them); `None` (it stays in memory) when that fails.
    fn put(&mut self, held: &Held) -> Option<Stored> {
        let file = self.file.as_mut().filter(|_| self.writable)?;
        let replies = Bytes::from(serde_json::to_vec(&held.replies).ok()?);
        let recorded = held.recorded.as_ref();
        let parts: Vec<&Bytes> = held
            .body
            .parts()
            .iter()
            .chain(recorded.map_or(&[][..], RequestBody::parts))
            .chain([&replies])
            .collect();
        let spilled = Stored::Spilled {
            offset: self.len,
            body: u32::try_from(held.body.len()).ok()?,
            recorded: match recorded {
                Some(r) => Some(u32::try_from(r.len()).ok()?),
                None => None,
            },
            replies: u32::try_from(replies.len()).ok()?,
        };
        if write_parts(file, &parts).is_err() {
            // A short write leaves the file's end unknown: hold the rest in memory.
            self.writable = false;
            return None;
        }
        self.len += parts.iter().map(|p| p.len() as u64).sum::<u64>();
        Some(spilled)
    }
}

/// Writes `parts` in order, in as few `writev(2)` as the kernel takes them.
fn write_parts(file: &mut File, parts: &[&Bytes]) -> std::io::Result<()> {
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

/// A queued turn read back for counting.
struct Loaded {
    /// The request, parsed (`None`: unreadable).
    body: Option<serde_json::Value>,
    /// The recording's request, parsed, where there is one (`None` inside: unreadable).
    recorded: Option<Option<serde_json::Value>>,
    replies: Replies,
}

impl Job {
    /// The turn's counts and the prompt tokens reused from the session's last prompt
    /// (`None`: the turn unreadable, so left uncounted); `chain` moves on to this turn's
    /// prompts where they were counted. A recorded request that cannot be read or rendered
    /// leaves the recording's counts out.
    fn count(
        &self,
        counter: &LocalCounter,
        spill: Option<&File>,
        chain: &mut Chain,
    ) -> Option<(Counted, usize)> {
        let Loaded {
            body,
            recorded,
            replies,
        } = self.turn.load(spill)?;
        let (tokens, prompt) = counter
            .count_turn(chain.prompt.as_ref(), &body?, &replies.answer.into())
            .ok()?;
        let reused = prompt.as_ref().map_or(0, PromptCount::reused_tokens);
        chain.prompt = prompt.or(chain.prompt.take());
        let recorded = recorded.and_then(|body| {
            let prompt = counter
                .count_prompt_after(chain.recorded.as_ref(), &body?)
                .ok()?;
            let isl = prompt.tokens();
            chain.recorded = Some(prompt);
            let osl = match replies.recorded {
                Some(reply) => Some(counter.count_reply(&reply.into()).ok()? as u32),
                None => None,
            };
            Some(RecordedTokens {
                isl: isl as u32,
                osl,
            })
        });
        Some((Counted { tokens, recorded }, reused))
    }
}

impl Stored {
    /// The turn, read back (`None`: the scratch file could not be read, or its replies do
    /// not parse).
    fn load(&self, spill: Option<&File>) -> Option<Loaded> {
        let parse = |bytes: &[u8]| serde_json::from_slice(bytes).ok();
        match self {
            Self::Held(held) => Some(Loaded {
                body: parse(&held.body.to_bytes()),
                recorded: held.recorded.as_ref().map(|r| parse(&r.to_bytes())),
                replies: held.replies.clone(),
            }),
            Self::Spilled {
                offset,
                body,
                recorded,
                replies,
            } => {
                let (body, recorded_len, replies) = (
                    *body as usize,
                    recorded.map(|r| r as usize),
                    *replies as usize,
                );
                let mut buf = vec![0u8; body + recorded_len.unwrap_or(0) + replies];
                spill?.read_exact_at(&mut buf, *offset).ok()?;
                let (body_bytes, rest) = buf.split_at(body);
                let (recorded_bytes, replies_bytes) = rest.split_at(recorded_len.unwrap_or(0));
                Some(Loaded {
                    body: parse(body_bytes),
                    recorded: recorded_len.map(|_| parse(recorded_bytes)),
                    replies: serde_json::from_slice(replies_bytes).ok()?,
                })
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

    /// The Qwen3.6 counter, loaded once for every test (`None`: no vocabulary here).
    fn counter() -> Option<Arc<LocalCounter>> {
        static COUNTER: std::sync::OnceLock<Option<Arc<LocalCounter>>> = std::sync::OnceLock::new();
        COUNTER
            .get_or_init(|| {
                let data = agentload_config::data::data_dir(None);
                let vocab = crate::tokens::load_qwen(&data).ok()?;
                let tokenizer = agentload_tokenizer::Tokenizer::qwen(Arc::new(vocab));
                Some(Arc::new(LocalCounter::new(Arc::new(tokenizer))))
            })
            .clone()
    }

    /// A worker writing its counts to `dir`, with this test's exchanges in flight.
    fn worker(counter: Arc<LocalCounter>, dir: &Path) -> CountWorker {
        let mut worker = CountWorker::start(
            counter,
            &OutDir::new(dir),
            Path::new("turns.tokens.jsonl"),
            Durability::Write,
        )
        .unwrap();
        worker.streaming = streams;
        worker
    }

    /// The counts of a queue, with an exchange held in flight while counting when `busy`.
    fn counted(busy: bool) -> Option<(HashMap<u64, Counted>, CountingStats, String)> {
        let dir = tempfile::tempdir().unwrap();
        let worker = worker(counter()?, dir.path());
        let out = dir.path().join("turns.tokens.jsonl");
        let answer = Assembled {
            content: "done".into(),
            // What the counts do not need is not kept.
            usage: serde_json::value::to_raw_value(
                &serde_json::json!({"prompt_tokens": 123456789}),
            )
            .ok(),
            ..Assembled::default()
        };
        let text = |p: &Path| std::fs::read_to_string(p).unwrap();
        let queue = dir.path().join("turns.tokens.jsonl.queue");
        worker.count(
            3,
            "s3",
            Bytes::from_static(BODY).into(),
            answer.clone(),
            None,
        );
        worker.count(1, "s1", in_parts(BODY), answer.clone(), None);
        assert_eq!(text(&queue), "", "queued turns are held until spilled");
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
            "s2",
            Bytes::from_static(BODY).into(),
            answer.clone(),
            Some(recorded),
        );
        worker.spill_held();
        worker.spill_held();
        // A body the scratch file could not take is held in memory instead.
        worker.spill.lock().unwrap().writable = false;
        worker.count(4, "s4", in_parts(BODY), answer, None);
        worker.spill_held();
        assert_eq!(text(&out), "", "nothing counted yet");
        let spilled = text(&queue);
        let body = std::str::from_utf8(BODY).unwrap();
        assert!(spilled.starts_with(body), "{spilled}");
        assert_eq!(spilled.matches(body).count(), 3, "{spilled}");
        assert_eq!(
            spilled.matches("\"content\":\"done\"").count(),
            3,
            "{spilled}"
        );
        assert!(
            spilled.contains(std::str::from_utf8(RECORDED).unwrap())
                && spilled.contains("the recorded reply is longer"),
            "the recording's turn waits beside the live one: {spilled}"
        );
        assert!(!spilled.contains("123456789"), "{spilled}");
        let queued = worker.queue.lock().unwrap();
        let held: Vec<bool> = queued
            .jobs
            .iter()
            .map(|j| matches!(j.turn, Stored::Held(_)))
            .collect();
        assert_eq!(held, [false, false, false, true]);
        drop(queued);
        STREAMS.store(usize::from(busy), Ordering::SeqCst);
        let (counts, stats) = worker.finish().unwrap();
        STREAMS.store(0, Ordering::SeqCst);
        assert!(!queue.exists(), "the scratch file is removed once counted");
        Some((counts, stats, text(&out)))
    }

    /// A full disk (`/dev/full`): the turn is kept in memory, and the scratch file is not
    /// tried again.
    #[test]
    fn a_turn_the_scratch_file_cannot_take_stays_in_memory() {
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
        let held = Held {
            body: in_parts(BODY),
            recorded: None,
            replies: Replies {
                answer: Assembled::default().into(),
                recorded: None,
            },
        };
        assert!(
            spill.put(&held).is_none(),
            "a failed write must not be recorded as spilled"
        );
        assert!(!spill.writable);
        assert_eq!(spill.len, 0);
        assert!(spill.put(&held).is_none());
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

    /// Turn `turn` of session `name`'s conversation: its system prompt, then a user message,
    /// then `turn` exchanges.
    fn conversation(name: &str, turn: usize) -> RequestBody {
        let system = format!("You are agent {name}. {}", "Follow the plan. ".repeat(60));
        let mut messages = vec![
            serde_json::json!({"role": "system", "content": system}),
            serde_json::json!({"role": "user", "content": "start"}),
        ];
        for i in 0..turn {
            messages.push(serde_json::json!({"role": "assistant", "content": format!("step {i}")}));
            messages.push(serde_json::json!({"role": "user", "content": format!("ok {i}, go on")}));
        }
        Bytes::from(serde_json::to_vec(&serde_json::json!({ "messages": messages })).unwrap())
            .into()
    }

    #[test]
    fn a_sessions_prompts_are_counted_after_each_other_and_as_whole() {
        let Some(counter) = counter() else {
            bfcl_test_data::skip_without(
                "no Qwen3.6 vocabulary (host/tokenizer/fetch-qwen-tokenizer.sh)",
            );
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let worker = worker(counter.clone(), dir.path());
        let answer = Assembled::default;
        // Two sessions, interleaved in the log; a turn of the first is unreadable.
        let turns: [(u64, &str, usize); 7] = [
            (1, "a", 0),
            (2, "b", 0),
            (3, "a", 1),
            (4, "b", 1),
            (5, "a", 2),
            (6, "a", 3),
            (7, "b", 2),
        ];
        for (line, session, turn) in turns {
            let body = if line == 5 {
                Bytes::from_static(b"{not json").into()
            } else {
                conversation(session, turn)
            };
            worker.count(line, session, body, answer(), None);
            if line % 2 == 0 {
                worker.spill_held();
            }
        }
        let (counts, stats) = worker.finish().unwrap();
        assert!(
            !counts.contains_key(&5),
            "an unreadable turn is left uncounted"
        );
        let mut isl = 0;
        for (line, session, turn) in turns.into_iter().filter(|t| t.0 != 5) {
            let body: serde_json::Value =
                serde_json::from_slice(&conversation(session, turn).to_bytes()).unwrap();
            let whole = counter.count_prompt(&body).unwrap();
            assert_eq!(counts[&line].tokens.isl as usize, whole, "line {line}");
            isl += whole as u64;
        }
        assert_eq!((stats.turns, stats.prompt_tokens), (6, isl), "{stats:?}");
        // Each session's prompts after its own last one (the unreadable turn's skipped): most
        // of each is its system prompt, which the other session's does not share.
        assert!(
            stats.prompt_tokens_reused * 2 > stats.prompt_tokens,
            "{stats:?}"
        );
    }

    #[test]
    fn long_sessions_are_cut_into_pieces_for_the_cores() {
        let job = |line: u64, session: u64| Job {
            line,
            session,
            turn: Stored::Spilled {
                offset: 0,
                body: 0,
                recorded: None,
                replies: 0,
            },
        };
        // One session of 1,000 turns, another of 10, interleaved at the start.
        let mut jobs: Vec<Job> = (0..10)
            .flat_map(|t| [job(2 * t, 7), job(2 * t + 1, 3)])
            .collect();
        jobs.extend((20..1_010).map(|line| job(line, 7)));
        let lines = |p: &[usize]| p.iter().map(|&i| jobs[i].line).collect::<Vec<_>>();
        // Sixteen cores: the long session in 32 pieces of 32 turns or fewer, in log order.
        let pieces = pieces(&jobs, 16);
        assert_eq!(pieces.len(), 33);
        assert!(pieces.iter().all(|p| p.len() <= 32));
        let mut long: Vec<u64> = pieces
            .iter()
            .filter(|p| jobs[p[0]].session == 7)
            .flat_map(|p| lines(p))
            .collect();
        assert!(pieces.iter().all(|p| lines(p).is_sorted()));
        long.sort_unstable();
        assert_eq!(long.len(), 1_000);
        assert_eq!(
            lines(pieces.iter().find(|p| jobs[p[0]].session == 3).unwrap()),
            (0..10).map(|t| 2 * t + 1).collect::<Vec<_>>()
        );
        // Two cores: pieces of a quarter of a core's share each.
        let pieces = super::pieces(&jobs, 2);
        assert_eq!(pieces[0].len(), 1_010_usize.div_ceil(8));
        assert_eq!(
            pieces.len(),
            9,
            "{:?}",
            pieces.iter().map(Vec::len).collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_spilled_turn_is_small() {
        // What a phase keeps in memory per queued turn once spilled.
        assert!(
            std::mem::size_of::<Job>() <= 40,
            "{}",
            std::mem::size_of::<Job>()
        );
    }
}
