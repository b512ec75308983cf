//! Generating one completion on the slot: waiting out the simulated prefill and decode times,
//! emitting chunks as their time comes, and remembering the tokens for prefix reuse.

use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::{sleep_until, Instant};

use crate::answer::{Answer, Transcript};
use crate::stream::{sse_event, ChunkMeta, SimStamps, Usage};
use crate::timing::{Generation, Schedule, TimingModel, Timings};
use crate::tokens::TokenCounter;

/// The single slot's state: what its KV cache holds, as canonical text.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    pub(crate) memory: String,
}

/// Everything needed to generate one completion once the slot is held.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) answer: Answer,
    pub(crate) meta: ChunkMeta,
    /// When the request arrived (head read).
    pub(crate) received: Instant,
    /// When the slot was acquired: prompt processing starts.
    pub(crate) started: Instant,
    /// Time spent waiting for the slot.
    pub(crate) queued: Duration,
    /// Canonical prompt text.
    pub(crate) prompt: String,
    pub(crate) n_prompt: u32,
    pub(crate) n_cached: u32,
    pub(crate) n_ctx: u32,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) timing: TimingModel,
}

/// A completed generation.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) transcript: Transcript,
    pub(crate) finish_reason: String,
    pub(crate) usage: Usage,
    pub(crate) timings: Value,
    pub(crate) stamps: SimStamps,
}

/// Nanoseconds since `since`.
fn ns_since(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Waits until `deadline`; with a stream, gives up (returns false) when the client goes away.
async fn wait_until(deadline: Instant, tx: Option<&mpsc::Sender<Bytes>>) -> bool {
    match tx {
        None => {
            sleep_until(deadline).await;
            true
        }
        Some(tx) => tokio::select! {
            () = sleep_until(deadline) => true,
            () = tx.closed() => false,
        },
    }
}

impl Job {
    /// Runs the generation on `slot`. With `tx`, each token's chunk is sent as it is due (the
    /// role chunk rides with the first one) and the closing events are left to the caller;
    /// returns `None` when the client went away. The slot remembers the prompt and whatever was
    /// generated either way.
    pub(crate) async fn run(
        &self,
        slot: &mut Slot,
        counter: &dyn TokenCounter,
        tx: Option<&mpsc::Sender<Bytes>>,
    ) -> Option<Finished> {
        let pieces = self.answer.pieces(counter);
        let pieces_n = u32::try_from(pieces.len()).unwrap_or(u32::MAX);
        let gen = Generation::plan(pieces_n, self.max_tokens, self.n_prompt, self.n_ctx);
        let prefill = self.timing.prefill(self.n_prompt - self.n_cached);
        let schedule = Schedule {
            first: self.started + self.answer.stall + prefill,
            interval: self.timing.decode_interval(),
        };
        let mut stamps = SimStamps {
            queued_ns: u64::try_from(self.queued.as_nanos()).unwrap_or(u64::MAX),
            ..SimStamps::default()
        };
        let mut transcript = Transcript::default();
        let mut client_gone = false;
        for (k, &piece) in (0..gen.visible).zip(&pieces) {
            if !wait_until(schedule.token(k), tx).await {
                client_gone = true;
                break;
            }
            transcript.push(&self.answer, piece);
            let stamp = match tx {
                None => ns_since(self.received),
                Some(tx) => {
                    let mut frame = String::new();
                    if k == 0 {
                        frame.push_str(&sse_event(&self.meta.role_chunk()));
                    }
                    frame.push_str(&sse_event(&self.meta.delta_chunk(self.answer.delta(piece))));
                    let stamp = ns_since(self.received);
                    if tx.send(Bytes::from(frame)).await.is_err() {
                        client_gone = true;
                        break;
                    }
                    stamp
                }
            };
            if k == 0 {
                stamps.first_token_ns = stamp;
            }
            stamps.last_token_ns = stamp;
        }
        slot.memory.clone_from(&self.prompt);
        transcript.render_into(&mut slot.memory);
        if client_gone || !wait_until(schedule.token(gen.decoded - 1), tx).await {
            return None;
        }
        if gen.visible == 0 {
            stamps.first_token_ns = ns_since(self.received);
            stamps.last_token_ns = stamps.first_token_ns;
        }
        let finish_reason = if gen.truncated {
            "length".to_owned()
        } else if let Some(reason) = &self.answer.finish_reason {
            reason.clone()
        } else if self.answer.tool_calls.is_empty() {
            "stop".to_owned()
        } else {
            "tool_calls".to_owned()
        };
        let timings = Timings::new(
            self.n_cached,
            self.n_prompt - self.n_cached,
            prefill,
            gen,
            schedule.interval,
        );
        Some(Finished {
            transcript,
            finish_reason,
            usage: Usage {
                prompt_tokens: self.n_prompt,
                cached_tokens: self.n_cached,
                completion_tokens: gen.decoded,
            },
            timings: timings.to_json(),
            stamps,
        })
    }
}
