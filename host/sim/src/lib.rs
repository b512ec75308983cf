//! Embedded simulated OpenAI-compatible endpoint for agentload.
//!
//! The simulator serves `POST /v1/chat/completions` (streaming with `"stream": true`, else one
//! JSON answer), `GET /v1/models` and `GET /health`, shaped like llama.cpp's `llama-server`, with
//! a llama.cpp-like timing model: one slot serving requests one at a time in arrival order,
//! prefix reuse of the previous prompt, prefill and decode rates, a context limit (see
//! [`timing`](crate::SimConfig) for the rules). Answers come from a responder: `echo`, an
//! `oracle` replaying a trajectory dataset, or a `script` of canned completions
//! ([`ResponderConfig`]).
//!
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
