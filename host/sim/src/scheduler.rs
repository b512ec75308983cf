//! The batch scheduler: one task owns the slots, the queue and the prefix memory, advances the
//! batch iteration by iteration on a simulated clock, and emits each sequence's chunks when its
//! tokens come out (see the crate docs for the model).
//!
//! Simulated time is `f64` seconds since the scheduler's epoch. An iteration starts when the
//! previous one ends (or, on an idle server, when work becomes ready) and its end is planned
//! from the work it holds; the task sleeps until that end, emits what the iteration produced,
//! admits queued requests into freed slots, and plans the next one. Deadlines are absolute, so a
//! late wake-up does not shift later tokens. Work per iteration is linear in the number of
//! sequences in the slots.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{sleep_until, Instant};

use crate::answer::{Answer, Span, Transcript};
use crate::api_error::ApiError;
use crate::cache::{common_prefix_len, PrefixCache};
use crate::metrics::ServerMetrics;
use crate::stamp_log::{self, StampLog, Who};
use crate::stream::{sse_event, ChunkMeta, Closing, Out, SimStamps, Usage};
use crate::timing::{reusable_tokens, whole_pieces_within, Generation, TimingModel, Timings};
use crate::tokens::TokenCounter;
use crate::SimConfig;

/// Iterations run back to back without yielding when the scheduler is behind the clock.
const CATCH_UP_BATCH: u32 = 64;

/// A completed generation.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) transcript: Transcript,
    pub(crate) finish_reason: String,
    pub(crate) usage: Usage,
    pub(crate) timings: Value,
    pub(crate) stamps: SimStamps,
}

/// Where a request's results go.
#[derive(Debug)]
pub(crate) enum Reply {
    /// SSE: `admitted` answers once a slot is taken (an error, such as the context check, ends
    /// the request there); then each token's frame and the closing events go through `tx`.
    Stream {
        /// Taken when answered.
        admitted: Option<oneshot::Sender<Result<(), ApiError>>>,
        tx: mpsc::UnboundedSender<Out>,
        include_usage: bool,
    },
    /// One JSON answer: the finished generation, or the error.
    Whole {
        done: oneshot::Sender<Result<Finished, ApiError>>,
    },
}

/// A chat completion handed to the scheduler.
#[derive(Debug)]
pub(crate) struct Request {
    pub(crate) answer: Answer,
    /// The answer's token pieces.
    pub(crate) spans: Vec<Span>,
    pub(crate) gen: Generation,
    pub(crate) meta: ChunkMeta,
    /// When the request arrived (the first read of its bytes returned).
    pub(crate) received: Instant,
    /// When it was handed to the scheduler: queueing starts.
    pub(crate) enqueued: Instant,
    /// Canonical prompt text.
    pub(crate) prompt: String,
    /// Byte end offsets of the prompt's token pieces; their number is the prompt's length.
    pub(crate) prompt_ends: Vec<u32>,
    pub(crate) cache_prompt: bool,
    pub(crate) reply: Reply,
    /// Its number and session, for the stamp log.
    pub(crate) who: Who,
}

impl Request {
    fn n_prompt(&self) -> u32 {
        u32::try_from(self.prompt_ends.len()).unwrap_or(u32::MAX)
    }

    /// Whether the client went away (a stream's body was dropped). Without a stream there is no
    /// client to lose, so such a generation always finishes.
    fn abandoned(&self) -> bool {
        match &self.reply {
            // The handler holds the receiver from submission on, then the response body does.
            Reply::Stream { tx, .. } => tx.is_closed(),
            Reply::Whole { .. } => false,
        }
    }
}

/// A request holding a slot.
#[derive(Debug)]
struct Seq {
    req: Request,
    n_cached: u32,
    /// Time spent waiting for the slot.
    queued: Duration,
    /// When prompt processing may start: slot taken plus the responder's stall.
    prefill_from: f64,
    /// `prefill_from` plus the first-token overhead: when the sequence joins the batch.
    ready_at: f64,
    /// Uncached prompt tokens not processed yet.
    prefill_left: u32,
    /// Whether the first token came out (prompt processed).
    prefilled: bool,
    /// Tokens decoded so far (the first one included).
    emitted: u32,
    first_t: f64,
    last_t: f64,
    transcript: Transcript,
    stamps: SimStamps,
}

/// What the slots remember for prefix reuse.
#[derive(Debug)]
enum Memory {
    /// Each slot keeps its last prompt plus answer (llama.cpp's slot KV cache); a request takes
    /// the free slot sharing the longest prefix with its prompt, ties to the least recently
    /// used one.
    PerSlot {
        texts: Vec<String>,
        last_used: Vec<u64>,
        tick: u64,
    },
    /// One radix tree shared by all slots.
    Shared(PrefixCache),
}

/// The iteration in progress.
#[derive(Debug)]
struct Iteration {
    end: f64,
    /// `(slot, tokens)` of prompt processing in this iteration, in the order of `prefilling`.
    prefill: Vec<(usize, u32)>,
}

/// Handle used by the connections: hands requests to the scheduler task.
#[derive(Debug, Clone)]
pub(crate) struct SchedulerHandle {
    tx: mpsc::UnboundedSender<Request>,
}

impl SchedulerHandle {
    /// Queues `request`; its results come through its [`Reply`]. Returns the request when the
    /// scheduler is gone.
    pub(crate) fn submit(&self, request: Request) -> Result<(), Box<Request>> {
        self.tx.send(request).map_err(|e| Box::new(e.0))
    }
}

/// Starts the scheduler task; it ends once every handle is dropped and its work is done.
pub(crate) fn spawn(
    config: &SimConfig,
    counter: Arc<dyn TokenCounter>,
    served: Arc<AtomicU64>,
    metrics: Arc<ServerMetrics>,
    stamps: Option<StampLog>,
) -> SchedulerHandle {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut scheduler = Scheduler::new(config, counter, served, metrics);
    scheduler.stamps = stamps;
    tokio::spawn(scheduler.run(rx));
    SchedulerHandle { tx }
}

struct Scheduler {
    epoch: Instant,
    timing: TimingModel,
    ctx_size: u32,
    prefill_chunk: u32,
    counter: Arc<dyn TokenCounter>,
    served: Arc<AtomicU64>,
    /// `GET /metrics`'s counters and gauges.
    metrics: Arc<ServerMetrics>,
    /// The sequence in each slot.
    slots: Vec<Option<Seq>>,
    free: Vec<usize>,
    memory: Memory,
    /// Requests waiting for a slot, in arrival order.
    waiting: VecDeque<Request>,
    /// Slots whose sequence is not ready yet (stall or first-token overhead).
    stalled: Vec<usize>,
    /// Slots processing their prompt, in the order they became ready.
    prefilling: VecDeque<usize>,
    /// Slots generating.
    decoding: Vec<usize>,
    iteration: Option<Iteration>,
    /// [`SimConfig::request_stamps`], open.
    stamps: Option<StampLog>,
}

impl Scheduler {
    fn new(
        config: &SimConfig,
        counter: Arc<dyn TokenCounter>,
        served: Arc<AtomicU64>,
        metrics: Arc<ServerMetrics>,
    ) -> Self {
        let n = config.slots as usize;
        let memory = if config.cache_tokens == 0 {
            Memory::PerSlot {
                texts: vec![String::new(); n],
                last_used: vec![0; n],
                tick: 0,
            }
        } else {
            Memory::Shared(PrefixCache::new(config.cache_tokens))
        };
        Self {
            epoch: Instant::now(),
            timing: TimingModel::new(config),
            ctx_size: config.ctx_size,
            prefill_chunk: config.prefill_chunk_tokens,
            counter,
            served,
            metrics,
            slots: (0..n).map(|_| None).collect(),
            // Popped from the end: slot 0 first.
            free: (0..n).rev().collect(),
            memory,
            waiting: VecDeque::new(),
            stalled: Vec::new(),
            prefilling: VecDeque::new(),
            decoding: Vec::new(),
            iteration: None,
            stamps: None,
        }
    }

    fn now(&self) -> f64 {
        self.epoch.elapsed().as_secs_f64()
    }

    fn instant(&self, t: f64) -> Instant {
        Duration::try_from_secs_f64(t)
            .ok()
            .and_then(|d| self.epoch.checked_add(d))
            .unwrap_or_else(|| self.epoch + Duration::from_secs(86_400 * 365))
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Request>) {
        let mut open = true;
        let mut batch = CATCH_UP_BATCH;
        loop {
            while open {
                match rx.try_recv() {
                    Ok(request) => self.arrive(request),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => open = false,
                }
            }
            let deadline = self.next_deadline();
            if let Some(t) = deadline.filter(|&t| t <= self.now()) {
                self.advance(t);
                batch -= 1;
                if batch == 0 {
                    batch = CATCH_UP_BATCH;
                    tokio::task::yield_now().await;
                }
                continue;
            }
            batch = CATCH_UP_BATCH;
            if !open && deadline.is_none() && self.waiting.is_empty() {
                // No handle left and nothing in flight (a slot holds work only with a deadline).
                break;
            }
            let wake = deadline.map(|t| self.instant(t));
            tokio::select! {
                request = rx.recv(), if open => match request {
                    Some(request) => self.arrive(request),
                    None => open = false,
                },
                () = async { sleep_until(wake.unwrap_or_else(Instant::now)).await }, if wake.is_some() => {}
                // Unreachable: with no handle left, queued work implies a deadline.
                else => break,
            }
        }
    }

    /// The next moment the scheduler has work: the end of the iteration in progress, else the
    /// earliest stalled sequence's start.
    fn next_deadline(&self) -> Option<f64> {
        match &self.iteration {
            Some(it) => Some(it.end),
            None => self
                .stalled
                .iter()
                .filter_map(|&s| self.slots[s].as_ref().map(|q| q.ready_at))
                .reduce(f64::min),
        }
    }

    fn arrive(&mut self, request: Request) {
        if self.free.is_empty() || !self.waiting.is_empty() {
            self.waiting.push_back(request);
        } else {
            let now = self.now();
            self.admit(request, now);
            if self.iteration.is_none() {
                self.plan(now);
            }
        }
        self.report_queue();
    }

    /// Completes the iteration ending at `t` (if any) and plans the next one from `t`.
    fn advance(&mut self, t: f64) {
        if let Some(it) = self.iteration.take() {
            self.complete(it);
        }
        self.admit_waiting(t);
        self.plan(t);
        self.report_queue();
    }

    fn report_queue(&self) {
        self.metrics
            .queue(self.slots.len() - self.free.len(), self.waiting.len());
    }

    /// Takes a free slot for `request` at time `t`; answers errors at once.
    fn admit(&mut self, request: Request, t: f64) {
        if request.abandoned() {
            self.stamp(&request, stamp_log::Outcome::Abandoned, None);
            return;
        }
        let n_prompt = request.n_prompt();
        let (slot, shared_bytes) = self.take_slot(&request.prompt);
        if n_prompt >= self.ctx_size {
            self.free.push(slot);
            self.stamp(&request, stamp_log::Outcome::Refused, None);
            let error = ApiError::exceed_context(n_prompt, self.ctx_size);
            match request.reply {
                Reply::Stream { admitted, .. } => {
                    if let Some(admitted) = admitted {
                        let _ = admitted.send(Err(error));
                    }
                }
                Reply::Whole { done } => {
                    let _ = done.send(Err(error));
                }
            }
            return;
        }
        let n_cached = if request.cache_prompt {
            reusable_tokens(
                whole_pieces_within(&request.prompt_ends, shared_bytes),
                n_prompt,
            )
        } else {
            0
        };
        let started = self.instant(t);
        let prefill_from = t + request.answer.stall.as_secs_f64();
        let ready_at = prefill_from + self.timing.overhead();
        let mut request = request;
        if let Reply::Stream { admitted, .. } = &mut request.reply {
            if let Some(admitted) = admitted.take() {
                let _ = admitted.send(Ok(()));
            }
        }
        let seq = Seq {
            queued: started.saturating_duration_since(request.enqueued),
            n_cached,
            prefill_from,
            ready_at,
            prefill_left: n_prompt - n_cached,
            prefilled: false,
            emitted: 0,
            first_t: ready_at,
            last_t: ready_at,
            transcript: Transcript::default(),
            stamps: SimStamps::default(),
            req: request,
        };
        self.slots[slot] = Some(seq);
        if ready_at <= t {
            self.prefilling.push_back(slot);
        } else {
            self.stalled.push(slot);
        }
    }

    /// Picks a free slot (there is one) and returns it with the bytes of `prompt` its memory
    /// covers.
    fn take_slot(&mut self, prompt: &str) -> (usize, usize) {
        match &mut self.memory {
            Memory::Shared(cache) => {
                let slot = self.free.pop().expect("a free slot");
                (slot, cache.lookup(prompt))
            }
            Memory::PerSlot {
                texts,
                last_used,
                tick,
            } => {
                let (index, shared) = self
                    .free
                    .iter()
                    .enumerate()
                    .map(|(i, &s)| (i, common_prefix_len(texts[s].as_bytes(), prompt.as_bytes())))
                    .max_by(|&(i, a), &(j, b)| {
                        a.cmp(&b)
                            .then(last_used[self.free[j]].cmp(&last_used[self.free[i]]))
                    })
                    .expect("a free slot");
                let slot = self.free.swap_remove(index);
                *tick += 1;
                last_used[slot] = *tick;
                (slot, shared)
            }
        }
    }

    fn admit_waiting(&mut self, t: f64) {
        while !self.free.is_empty() {
            let Some(request) = self.waiting.pop_front() else {
                break;
            };
            self.admit(request, t);
        }
    }

    /// Plans the iteration starting at `t`: one decode step for every generating sequence plus
    /// up to `prefill_chunk_tokens` prompt tokens of the ready sequences, first come first
    /// served. Leaves the server idle when nothing is ready.
    fn plan(&mut self, t: f64) {
        if !self.stalled.is_empty() {
            let mut ready: Vec<(f64, usize)> = Vec::new();
            self.stalled.retain(|&s| match &self.slots[s] {
                Some(q) if q.ready_at <= t => {
                    ready.push((q.ready_at, s));
                    false
                }
                Some(_) => true,
                None => false,
            });
            ready.sort_by(|a, b| a.0.total_cmp(&b.0));
            self.prefilling.extend(ready.into_iter().map(|(_, s)| s));
        }
        if self.decoding.is_empty() && self.prefilling.is_empty() {
            self.iteration = None;
            return;
        }
        let mut budget = self.prefill_chunk;
        let mut prefill = Vec::new();
        let mut tokens = 0;
        for &s in &self.prefilling {
            let Some(seq) = &self.slots[s] else { continue };
            let take = seq.prefill_left.min(budget);
            if take == 0 && seq.prefill_left > 0 {
                break;
            }
            prefill.push((s, take));
            budget -= take;
            tokens += take;
        }
        let decode = if self.decoding.is_empty() {
            0.0
        } else {
            self.timing.decode_step(self.decoding.len())
        };
        self.iteration = Some(Iteration {
            end: t + decode + self.timing.prefill(tokens),
            prefill,
        });
    }

    /// Applies an iteration that ended: every generating sequence gets its next token, prompt
    /// chunks are done (a finished prompt gives its first token), abandoned streams leave.
    fn complete(&mut self, it: Iteration) {
        let t = it.end;
        let decoding = std::mem::take(&mut self.decoding);
        let mut still = Vec::with_capacity(decoding.len() + it.prefill.len());
        for s in decoding {
            if self.emit(s, t) {
                still.push(s);
            }
        }
        for (s, take) in it.prefill {
            if let Some(seq) = &mut self.slots[s] {
                seq.prefill_left -= take;
            }
        }
        while let Some(&s) = self.prefilling.front() {
            match &mut self.slots[s] {
                Some(seq) if seq.prefill_left > 0 => break,
                Some(seq) => {
                    self.prefilling.pop_front();
                    seq.prefilled = true;
                    if let Memory::Shared(cache) = &mut self.memory {
                        cache.insert(&seq.req.prompt, &seq.req.prompt_ends);
                    }
                    if self.emit(s, t) {
                        still.push(s);
                    }
                }
                None => {
                    self.prefilling.pop_front();
                }
            }
        }
        self.decoding = still;
        // Streams whose client left, wherever they are.
        for s in 0..self.slots.len() {
            if self.slots[s].as_ref().is_some_and(|q| q.req.abandoned()) {
                self.release(s, false);
            }
        }
        let slots = &self.slots;
        self.decoding.retain(|&s| slots[s].is_some());
        self.prefilling.retain(|&s| slots[s].is_some());
        self.stalled.retain(|&s| slots[s].is_some());
    }

    /// Emits the next token of the sequence in slot `s` at time `t`; returns whether it goes on
    /// generating (false: finished or abandoned, and the slot is freed).
    fn emit(&mut self, s: usize, t: f64) -> bool {
        let Some(seq) = &mut self.slots[s] else {
            return false;
        };
        let k = seq.emitted;
        if k == 0 {
            seq.first_t = t;
        }
        seq.last_t = t;
        seq.emitted += 1;
        if k < seq.req.gen.visible {
            let req = &seq.req;
            let piece = req.answer.piece(req.spans[k as usize]);
            seq.transcript.push(&req.answer, piece);
            if let Reply::Stream { tx, .. } = &req.reply {
                let mut frame = String::new();
                if k == 0 {
                    frame.push_str(&sse_event(&req.meta.role_chunk()));
                }
                frame.push_str(&req.meta.delta_event(&req.answer.delta(piece)));
                let stamp = ns_since(req.received);
                if tx.send(Out::Frame(Bytes::from(frame))).is_err() {
                    self.release(s, false);
                    return false;
                }
                seq.stamps.last_token_ns = stamp;
            } else {
                seq.stamps.last_token_ns = ns_since(req.received);
            }
            if k == 0 {
                seq.stamps.first_token_ns = seq.stamps.last_token_ns;
            }
        }
        if seq.emitted >= seq.req.gen.decoded {
            self.release(s, true);
            return false;
        }
        true
    }

    /// Frees slot `s`: remembers the prompt and what was generated, and for a finished
    /// generation sends the closing events (or the whole answer).
    fn release(&mut self, s: usize, finished: bool) {
        let Some(mut seq) = self.slots[s].take() else {
            return;
        };
        self.free.push(s);
        let n_prompt = seq.req.n_prompt();
        match &mut self.memory {
            Memory::PerSlot { texts, .. } => {
                let text = &mut texts[s];
                text.clone_from(&seq.req.prompt);
                seq.transcript.render_into(text);
            }
            Memory::Shared(cache) => {
                if seq.prefilled {
                    let mut text = seq.req.prompt.clone();
                    seq.transcript.render_into(&mut text);
                    let mut ends = std::mem::take(&mut seq.req.prompt_ends);
                    let base = seq.req.prompt.len();
                    let base_end = u32::try_from(base).unwrap_or(u32::MAX);
                    ends.extend(self.counter.ends(&text[base..], base_end));
                    cache.insert(&text, &ends);
                }
            }
        }
        if !finished {
            self.stamp(&seq.req, stamp_log::Outcome::Abandoned, None);
            return;
        }
        let gen = seq.req.gen;
        if gen.visible == 0 {
            seq.stamps.first_token_ns = ns_since(seq.req.received);
            seq.stamps.last_token_ns = seq.stamps.first_token_ns;
        }
        seq.stamps.queued_ns = u64::try_from(seq.queued.as_nanos()).unwrap_or(u64::MAX);
        seq.stamps.received_mono_ns = agentload_wire::clock::mono_ns(seq.req.received.into_std());
        let finish_reason = if gen.truncated {
            "length".to_owned()
        } else if let Some(reason) = &seq.req.answer.finish_reason {
            reason.clone()
        } else if seq.req.answer.tool_calls.is_empty() {
            "stop".to_owned()
        } else {
            "tool_calls".to_owned()
        };
        let timings = Timings {
            cache_n: seq.n_cached,
            prompt_n: n_prompt - seq.n_cached,
            prompt_ms: (seq.first_t - seq.prefill_from) * 1e3,
            predicted_n: gen.decoded,
            predicted_ms: (seq.last_t - seq.first_t) * 1e3,
        };
        let usage = Usage {
            prompt_tokens: n_prompt,
            cached_tokens: seq.n_cached,
            completion_tokens: gen.decoded,
        };
        self.metrics.finished(
            usage.prompt_tokens,
            usage.cached_tokens,
            usage.completion_tokens,
        );
        self.stamp(
            &seq.req,
            stamp_log::Outcome::Finished,
            Some((usage, seq.stamps)),
        );
        self.served.fetch_add(1, Ordering::SeqCst);
        match seq.req.reply {
            Reply::Stream {
                tx, include_usage, ..
            } => {
                let closing = Closing {
                    meta: seq.req.meta,
                    finish_reason,
                    usage: include_usage.then_some(usage),
                    timings: timings.to_json(),
                    stamps: seq.stamps,
                    after_tokens: gen.visible > 0,
                };
                // The client may have left after the last token; nothing more to do then.
                let _ = tx.send(Out::Closing(Box::new(closing)));
            }
            Reply::Whole { done } => {
                let _ = done.send(Ok(Finished {
                    transcript: seq.transcript,
                    finish_reason,
                    usage,
                    timings: timings.to_json(),
                    stamps: seq.stamps,
                }));
            }
        }
    }
}

impl Scheduler {
    /// The stamp log's line for `req` (with a finished one's usage and stamps).
    fn stamp(
        &mut self,
        req: &Request,
        outcome: stamp_log::Outcome,
        finished: Option<(Usage, SimStamps)>,
    ) {
        let Some(log) = &mut self.stamps else { return };
        let (usage, stamps) = finished.unwrap_or_default();
        log.write(&stamp_log::Line {
            n: req.who.n,
            session: req.who.session.as_deref(),
            received_mono_ns: agentload_wire::clock::mono_ns(req.received.into_std()),
            outcome,
            queued_ns: stamps.queued_ns,
            first_token_ns: stamps.first_token_ns,
            prompt_tokens: usage.prompt_tokens,
            cached_tokens: usage.cached_tokens,
            completion_tokens: usage.completion_tokens,
        });
    }
}

/// Nanoseconds since `since`.
fn ns_since(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}
