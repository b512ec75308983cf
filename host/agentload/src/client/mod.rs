//! The HTTP/SSE client. **Every timestamp agentload reports is taken here**,
//! on the monotonic clock, as bytes arrive and before they are parsed.

mod assemble;
mod body;
mod connection;
mod reader;
mod sse;
mod stream;

pub use assemble::{Assembled, CompletionAssembler, FirstChunk, NotJson, ToolCallRecord};
pub use body::{request_body, BodyOptions};
pub use connection::EndpointError;
pub use sse::{SseEvent, SseParser};
pub use stream::{
    ChatClient, ClientError, ClientOptions, Exchange, HttpAnswer, Timeline, TurnError,
};

#[cfg(test)]
mod tests;
