//! Embedded simulated OpenAI-compatible endpoint for agentload.
//!
//! The simulator serves `POST /v1/chat/completions` (streaming with `"stream": true`, else one
//! JSON answer), `GET /v1/models` (with llama-server's `meta.n_ctx`, the configured
//! `ctx_size`) and `GET /health`, shaped like llama.cpp's `llama-server`
//! (chunk layout, error bodies, `usage`, `timings`). Answers come from a responder: `echo`, an
//! `oracle` replaying a trajectory dataset, or a `script` of canned completions
//! ([`ResponderConfig`]).
//!
//! # Timing model (continuous batching over `slots`)
//! The defaults (`slots = 1`, no shared cache) are llama-server with one slot (`-np 1`); more
//! slots model a continuous-batching server (llama-server `-np N`, vLLM, SGLang) under many
//! concurrent agents. One scheduler task advances the batch; every duration below is multiplied
//! by `time_scale`.
//! - **Slots and queue.** Up to `slots` requests are processed at once; a request arriving when
//!   all slots are taken waits, in arrival order (FIFO), until one is freed. The wait is
//!   `queued_ns`. A client that drops its stream frees its slot at the next iteration boundary
//!   (a queued one is skipped when its turn comes); a non-streamed request always runs to the
//!   end.
//! - **Prompt tokens and reuse.** The prompt is counted on a canonical rendering (role markers,
//!   reasoning, content, tool calls, tools JSON) with the [`TokenCounter`]. The new prompt's
//!   leading tokens that lie entirely within a remembered text are reused at no cost, except
//!   that at least one prompt token is always processed; `"cache_prompt": false` disables
//!   reuse. Reuse is reported as `usage.prompt_tokens_details.cached_tokens` and
//!   `timings.cache_n`. What is remembered depends on `cache_tokens`:
//!   - `0` (default): each slot remembers its own previous prompt and answer (llama.cpp's slot
//!     KV cache). A request takes the free slot whose memory shares the longest prefix with its
//!     prompt, ties going to the least recently used slot.
//!   - `> 0`: one prefix cache shared by all slots, a radix tree holding at most `cache_tokens`
//!     tokens. A prompt is added once it is processed (so a request on another slot can reuse it
//!     while its first owner is still generating), and prompt plus answer when the slot is
//!     freed; a request reuses the longest cached prefix of any cached sequence. Shared
//!     prefixes are stored once. When over capacity, the least recently used (looked up or
//!     added) leaf is evicted from its tail: cut short when that suffices, else removed whole.
//!     Token counts of cached text come from the piece boundaries of the texts added (the
//!     answer's rendering is split on its own), so they are close to, not exactly, the model's.
//! - **Iterations.** The server runs the batch in iterations, back to back while there is work.
//!   An iteration holds one decode step for each of the `n` sequences that are generating, plus
//!   up to `prefill_chunk_tokens` uncached prompt tokens of the sequences still processing
//!   their prompt (first ready, first served; a chunk may span several prompts). It lasts
//!   `step(n) + chunk / prefill_tokens_per_s`, where `chunk` is the prompt tokens it processes,
//!   `step(0) = 0` and `step(n) = (1 + decode_batch_slowdown * (n - 1)) / decode_tokens_per_s`.
//!   So a batch of `n` gives each sequence `decode_tokens_per_s / (1 + s (n - 1))` tokens per
//!   second and the server `n` times that (saturating at `decode_tokens_per_s / s` for
//!   `s = decode_batch_slowdown > 0`), and a long prompt stretches the other sequences' steps
//!   chunk by chunk rather than stopping them for its whole prefill.
//! - **Tokens.** A sequence joins the batch `first_token_overhead_ms` after taking its slot
//!   (plus a script responder's `delay_ms`): the overhead holds the slot, not the batch. Its
//!   first token comes out at the end of the iteration that processes its last prompt token (it
//!   is sampled from the prompt's logits), each later token at the end of each following
//!   iteration. A natural stop costs one more (unstreamed) end-of-generation token, counted in
//!   `completion_tokens`. Chunks are put into the response when their iteration ends; iteration
//!   ends are absolute times, so a late wake-up does not shift later tokens.
//! - With one slot this is exactly the single-slot model: prefill takes
//!   `uncached / prefill_tokens_per_s` plus the overhead, and tokens follow each other every
//!   `1 / decode_tokens_per_s`.
//! - **Limits.** A prompt of `ctx_size` tokens or more is refused, once a slot is taken, with
//!   llama.cpp's HTTP 400 `exceed_context_size_error`. Generation stops with
//!   `finish_reason: "length"` after `max_tokens` (`max_completion_tokens`, `n_predict`)
//!   tokens or when the slot's context is full (`ctx_size - prompt_tokens` generated tokens).
//!   KV memory of running sequences is not modelled beyond the cache capacity (no preemption).
//!   With `"ignore_eos": true` the model does not stop at its answer's end: filler tokens follow
//!   it until the budget is spent (exactly `max_tokens` streamed tokens, `length`,
//!   `completion_tokens == max_tokens`), as llama.cpp and vLLM generate past end-of-sequence.
//! - **`timings`.** `prompt_ms` spans from when the sequence could start its prompt (slot taken
//!   plus stall) to its first token, so it includes the overhead and, in a busy batch, the wait
//!   for the next iteration; `predicted_ms` spans the first to the last decoded token.
//!
//! # Server-side timestamps
//! Besides llama.cpp's `usage` and `timings`, the closing chunks (and the non-streaming answer)
//! carry `"agentload_sim": {"first_token_ns", "last_token_ns", "queued_ns", "received_mono_ns",
//! "first_token_mono_ns"}`, stamped at the wire: a request arrives when its first bytes reached
//! the machine (the kernel's receive stamp of the first `read(2)` of them, or that read's
//! return where the kernel stamps nothing); a stream's first token is out when the first
//! `write(2)` of its response (head and first token together) returns. `first_token_ns` is the time between the
//! two; `last_token_ns` the time from arrival to the moment the last token-bearing chunk was
//! put into the response body (for a non-streamed answer both are the scheduler's, the answer
//! being written at once); `queued_ns` the time spent waiting for a slot. The `_mono_ns` fields
//! are the same arrival and first-token moments on the machine's monotonic clock
//! (`CLOCK_MONOTONIC`, what `Instant` reads on Linux), so a client on the same machine, even in
//! another process, splits its timing error by direction: request path = arrival minus its
//! send, response path = its first-token stamp minus `first_token_mono_ns`.
//!
//! # TLS
//! With [`SimConfig::tls`] the simulator serves HTTPS (TLS 1.2 and 1.3, ring, ALPN
//! `http/1.1`) from a certificate and key, optionally requiring client certificates (mTLS).
//! Its stamps stay at the wire: a request arrives with the ciphertext read that completed its
//! first TLS record (that read's kernel stamp), its first token is out when the write of its
//! response's first record returns. A failed handshake is counted
//! ([`SimHandle::tls_failures`]); it never reaches the request counters.
//!
//! # Fault injection
//! [`SimConfig::faults`] (`agentload sim --fault KIND@N`) breaks the answer to the N-th
//! chat-completions request the server receives (1-based, over all connections): error
//! events, malformed or missing chunks, a wrong content type, truncation, a connection reset,
//! HTTP 500 and 429, a stall, repeated tool-call ids, an oversized answer ([`FAULT_HELP`] lists
//! them). The server counts what it accepted: [`SimHandle::connections_accepted`],
//! [`SimHandle::chat_requests_received`], also served as JSON by `GET /agentload/stats`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentload_sim::SimError> {
//! use std::sync::Arc;
//! use agentload_sim::{start, ApproxTokenCounter, SimConfig};
//!
//! let sim = start(SimConfig::default(), Arc::new(ApproxTokenCounter), "127.0.0.1:0".parse().unwrap()).await?;
//! println!("serving at {}/v1/chat/completions", sim.url());
//! sim.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod answer;
mod api_error;
mod body;
mod cache;
mod config;
mod error;
mod fault;
mod metrics;
pub mod pki;

mod prompt;
mod responder;
mod rng;
mod scheduler;
mod server;
mod session_prompts;
mod stamp_log;
mod stream;
mod timing;
mod tls;
mod tokens;
mod wire;

pub use config::{ResponderConfig, ServeAs, SimConfig, SimTls};
pub use error::SimError;
pub use fault::{Fault, FaultKind, FaultParseError, FAULT_HELP, OVERSIZE_BYTES};
pub use server::{start, SimHandle};
pub use tokens::{ApproxTokenCounter, TokenCounter};
