//! The HTTP/SSE client: plain JSON bodies in, timestamped answers out (it
//! knows nothing of plugins). **Every timestamp agentload reports is taken here**,
//! on the monotonic clock, as bytes arrive and before they are parsed.

pub mod agentperf;
mod assemble;
mod body;
mod connection;
mod http1;
mod preflight;
mod proxy;
mod reader;
mod request;
mod sse;
mod stream;
mod tls;
mod tls_layer;
mod transport;
mod wire;

pub use assemble::{
    Assembled, BadChunk, CompletionAssembler, FirstChunk, FirstToken, ToolCallRecord,
};
pub use body::RequestBody;
pub use connection::{EndpointError, Opened};
pub use preflight::{preflight, served_window, PreflightError, ServedWindow};
pub use proxy::{Proxy, ProxyError, ProxyOptions, ProxyRoute};
pub use request::ClientStyle;
pub use sse::{SseEvent, SseParser};
pub use stream::{
    exchanges_in_flight, ChatClient, ClientError, ClientOptions, Exchange, HandshakeTimes,
    HttpAnswer, Setup, Timeline, TlsSetup, TurnError, SESSION_HEADER,
};
pub use tls::{Roots, Tls, TlsDescription, TlsOptions, TlsSession, TlsSetupError};
pub use transport::{Transport, TransportDescription, TransportError};
pub use wire::Timestamps;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tls_tests;
