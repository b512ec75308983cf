//! The HTTP/SSE client: plain JSON bodies in, timestamped answers out (it
//! knows nothing of plugins). **Every timestamp agentload reports is taken here**,
//! on the monotonic clock, as bytes arrive and before they are parsed.

mod assemble;
mod preflight;
mod sse;
mod stream;

pub use assemble::{Assembled, CompletionAssembler, FirstChunk, ToolCallRecord};
pub use preflight::{preflight, PreflightError};
pub use sse::{SseEvent, SseParser};
pub use stream::{ChatClient, ClientOptions, Exchange, Timeline, TurnError};
