//! Embedded simulated OpenAI-compatible endpoint for agentload.
//!
//! The simulator serves `POST /v1/chat/completions` (streaming with `"stream": true`, else one
//! JSON answer), `GET /v1/models` and `GET /health`, shaped like llama.cpp's `llama-server`
//! (chunk layout, error bodies, `usage`, `timings`). Answers come from a responder: `echo`, an
//! `oracle` replaying a trajectory dataset, or a `script` of canned completions
//! ([`ResponderConfig`]).
//!
//! # Timing model (llama-server with one slot)
//! - Requests are served one at a time, in arrival order; a queued request waits for the slot.
//! - The prompt is counted on a canonical rendering (role markers, reasoning, content, tool
//!   calls, tools JSON) with the [`TokenCounter`]. The slot remembers its previous prompt and
//!   answer; tokens the new prompt shares as a prefix are reused at no cost, except that at least
//!   one prompt token is always processed. `"cache_prompt": false` disables reuse.
//! - Prefill takes `uncached / prefill_tokens_per_s` plus `first_token_overhead_ms`; the first
//!   token is emitted when prefill ends and each later one `1 / decode_tokens_per_s` after the
//!   previous one; a natural stop costs one more (unstreamed) end-of-generation token, counted in
//!   `completion_tokens`. All durations are multiplied by `time_scale`.
//! - A prompt of `ctx_size` tokens or more is refused with llama.cpp's HTTP 400
//!   `exceed_context_size_error`. Generation stops with `finish_reason: "length"` after
//!   `max_tokens` (`max_completion_tokens`, `n_predict`) tokens or when the context is full
//!   (`ctx_size - prompt_tokens` generated tokens).
//!
//! # Server-side timestamps
//! Besides llama.cpp's `usage` and `timings`, the closing chunks (and the non-streaming answer)
//! carry `"agentload_sim": {"first_token_ns", "last_token_ns", "queued_ns"}`: nanoseconds from
//! the request's arrival (head read) to the moment the first / last token-bearing chunk was put
//! into the response body, and the time spent waiting for the slot. Clients compare them with
//! their own measurements to estimate their timing error.
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
mod config;
mod error;
mod generate;
mod prompt;
mod responder;
mod rng;
mod server;
mod stream;
mod timing;
mod tokens;

pub use config::{ResponderConfig, SimConfig};
pub use error::SimError;
pub use server::{start, SimHandle};
pub use tokens::{ApproxTokenCounter, TokenCounter};
