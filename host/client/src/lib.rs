//! The HTTP/SSE client: plain JSON bodies in, timestamped answers out (it
//! knows nothing of plugins). **Every timestamp agentload reports is taken here**,
//! on the monotonic clock, as bytes arrive and before they are parsed.

mod assemble;
mod body;
mod connection;
mod http1;
mod preflight;
mod reader;
mod request;
mod sse;
mod stream;
mod wire;

pub use assemble::{
    Assembled, BadChunk, CompletionAssembler, FirstChunk, FirstToken, ToolCallRecord,
};
pub use body::RequestBody;
pub use connection::EndpointError;
pub use preflight::{preflight, PreflightError};
pub use sse::{SseEvent, SseParser};
pub use stream::{
    exchanges_in_flight, ChatClient, ClientError, ClientOptions, Exchange, HttpAnswer, Setup,
    Timeline, TurnError,
};
pub use wire::Timestamps;

#[cfg(test)]
mod tests;
