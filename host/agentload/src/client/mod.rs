//! The HTTP/SSE client. **Every timestamp agentload reports is taken here**,
//! on the monotonic clock, as bytes arrive and before they are parsed.

mod assemble;
mod body;
mod sse;
mod stream;

pub use assemble::{Assembled, CompletionAssembler, FirstChunk, ToolCallRecord};
pub use body::{request_body, BodyOptions};
pub use sse::{SseEvent, SseParser};
pub use stream::{ChatClient, ClientOptions, Exchange, Timeline, TurnError};
