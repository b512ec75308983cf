//! Sends one Chat Completions request and timestamps its answer.
//!
//! `issued` is taken after the body is serialised and an idle connection is taken (with the
//! check that the server has not closed it): right before the request's first `writev(2)`
//! on that connection, or, when a connection has to be opened, before it is (so a connect,
//! because there was no live idle connection, is inside the turn's measured time); each network read is timestamped when the `read(2)` returns, in the task
//! that made it and before any parsing ([`super::wire`], [`super::connection`]), so neither
//! parsing nor scheduling shifts a timestamp.
//!
//! An answer that is not a real answer fails the turn, with a cause naming what was wrong: an
//! HTTP error status; a streamed request answered with another content type than
//! `text/event-stream`; an SSE `event: error`; a `data:` payload that is neither JSON nor
//! `[DONE]`; an error object in the stream; a stream with no completion chunk; a stream that
//! ends without a `finish_reason` or without `[DONE]`; a body over the response-size cap; a
//! broken connection; the turn timeout.

use super::assemble::{Assembled, CompletionAssembler, FirstToken};
use super::body::RequestBody;
use super::connection::{
    Connection, Endpoint, EndpointError, HeadProgress, Opened, Pool, WireError,
};
use super::http1::{BodyDecoder, ResponseHead};
use super::reader::StreamReader;
use super::request::{request_target, ClientStyle, Heads};
use super::transport::Transport;
use super::wire::Timestamps;
use bytes::Bytes;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bytes of an error answer's body kept (and read: a longer one closes the connection).
const ERROR_BODY_BYTES: usize = 64 << 10;
/// Bytes of an unexpected answer quoted in its error.
const QUOTE_BYTES: usize = 160;
/// How long the rest of a body is awaited after `[DONE]` (normally its terminating chunk,
/// already on its way), so that the connection can be reused.
pub(super) const DRAIN_AFTER_DONE: Duration = Duration::from_millis(200);

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Base URL, e.g. `http://127.0.0.1:8080` (`/v1/chat/completions` is appended; a base
    /// URL ending in `/v1` gets `/chat/completions`).
    pub endpoint: String,
    /// Sent as `Authorization: Bearer ...` when set.
    pub api_key: Option<String>,
    /// A turn still unanswered after this long fails.
    pub turn_timeout: Duration,
    /// Connections kept open (one per concurrent session).
    pub max_connections: usize,
    /// A response body longer than this fails its turn (`endpoint.max_response_bytes`; 0: no
    /// cap).
    pub max_response_bytes: u64,
    /// Which moment of a read stamps the bytes it returned (`endpoint.timestamps`).
    pub timestamps: Timestamps,
    /// Which chunk stops the TTFT clock (`endpoint.ttft_trigger`).
    pub first_token: FirstToken,
    /// A connection carries more than one request (`endpoint.reuse_connections`); when off,
    /// each request goes out on a connection of its own, with `connection: close`.
    pub reuse_connections: bool,
    /// TLS (for an `https` endpoint) and the proxy.
    pub transport: Transport,
    /// Headers every request carries (`endpoint.headers`, values already taken from the
    /// environment where the config said `${VAR}`).
    pub headers: Vec<(String, String)>,
    /// The header that carries a request's session id (`endpoint.session_header`;
    /// `X-Session-ID` by default; empty: none).
    pub session_header: String,
    /// Whose client to behave as: its headers, its stream rules (`endpoint.client`).
    pub style: ClientStyle,
}

/// The header that carries a session id unless the config names another.
pub const SESSION_HEADER: &str = "X-Session-ID";

impl Default for ClientOptions {
    /// `http://127.0.0.1:8080`, no key, a 600 s turn timeout, one connection, the default
    /// cap, kernel stamps, the reference's first token, no TLS settings of its own, no proxy,
    /// no extra headers, `X-Session-ID`, connections reused, agentload's own client style.
    fn default() -> Self {
        Self {
            endpoint: "http://127.0.0.1:8080".into(),
            api_key: None,
            turn_timeout: Duration::from_secs(600),
            max_connections: 1,
            max_response_bytes: 256 << 20,
            timestamps: Timestamps::default(),
            first_token: FirstToken::default(),
            transport: Transport::default(),
            headers: Vec::new(),
            session_header: SESSION_HEADER.into(),
            reuse_connections: true,
            style: ClientStyle::default(),
        }
    }
}

/// Why a turn failed. The `Display` text is the cause recorded in `turns.jsonl` `error`.
#[derive(Debug, Clone, thiserror::Error, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnError {
    /// The server answered with a non-2xx status.
    #[error("HTTP {status}{}{}: {}",
        retry_after.as_ref().map(|r| format!(" (Retry-After: {r})")).unwrap_or_default(),
        location.as_ref().map(|l| format!(" (Location: {l}; agentload follows no redirect: point endpoint.url at the server)")).unwrap_or_default(),
        if body.is_empty() { "(no body)" } else { body })]
    Http {
        status: u16,
        body: String,
        /// The `Retry-After` header, verbatim.
        retry_after: Option<String>,
        /// The `Location` header of a 3xx answer, quoted.
        #[serde(skip_serializing_if = "Option::is_none")]
        location: Option<String>,
    },
    /// The request could not be sent or the connection broke.
    #[error("transport error: {message}")]
    Transport { message: String },
    /// No complete answer within the turn timeout.
    #[error("turn timed out after {after_s} s ({detail})")]
    Timeout { after_s: f64, detail: String },
    /// A streamed request got an answer that is not an event stream.
    #[error("a stream was asked for but the answer is `{content_type}`, not text/event-stream; it starts {head}")]
    ContentType { content_type: String, head: String },
    /// The body passed `endpoint.max_response_bytes`.
    #[error(
        "answer exceeded endpoint.max_response_bytes = {cap} bytes (cut after {received} bytes)"
    )]
    TooLarge { cap: u64, received: u64 },
    /// The answer is compressed (no `accept-encoding` was sent; agentload reads none).
    #[error("the answer is encoded (Content-Encoding: {encoding}), though no encoding was asked for: agentload reads answers as sent, uncompressed; turn the server's or proxy's compression off")]
    Encoded { encoding: String },
    /// The stream ended badly or carried an error.
    #[error("stream error: {message}")]
    Stream { message: String },
    /// What came cannot be the answer to this request (see [`super::connection`]): the
    /// connection is closed.
    #[error("answer out of step with its request: {message}; the connection was closed (a server or proxy that sends answers nobody asked for needs endpoint.reuse_connections = false)")]
    OutOfStep { message: String },
}

impl TurnError {
    pub(super) fn stream(message: impl Into<String>) -> Self {
        Self::Stream {
            message: message.into(),
        }
    }
}

/// Why a client cannot be made.
pub type ClientError = EndpointError;

/// Monotonic timestamps of one exchange.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Just before a connection was taken for the request.
    pub issued: Instant,
    /// First byte of the response body (or headers, for errors).
    pub first_byte: Option<Instant>,
    /// First token-bearing chunk (when its bytes arrived, see [`Timestamps`]).
    pub first_token: Option<Instant>,
    /// When the read that returned the first token-bearing chunk returned, where the kernel
    /// stamped its arrival: after `first_token` by the time its bytes waited in the kernel
    /// for agentload to read them.
    pub first_token_read: Option<Instant>,
    /// Last token-bearing chunk.
    pub last_token: Option<Instant>,
    /// End of the answer (`[DONE]`, end of stream, or the failure).
    pub complete: Instant,
    /// Arrival of every token-bearing chunk, in ns after `issued`.
    pub token_chunks_ns: Vec<u64>,
    /// Response body bytes received.
    pub bytes_received: u64,
    /// Arrival of the last body bytes.
    pub last_byte: Option<Instant>,
    /// The request had to open a connection (none was idle, or the idle one was closed).
    pub new_connection: bool,
    /// What came of the answer's head (for the cause of a timeout before it was whole).
    pub(super) head: HeadProgress,
    /// How that connection was opened (its connect and TLS handshake are inside this
    /// exchange's time).
    pub opened: Option<Opened>,
    /// With a `not_before` ([`ChatClient::send_json_at`]): when the request was ready to
    /// write (made, a connection taken), before it waited for that instant.
    pub ready: Option<Instant>,
    /// The instant the request's write waits for (taken by its first attempt only).
    not_before: Option<Instant>,
}

impl Timeline {
    fn new() -> Self {
        let now = Instant::now();
        Self {
            issued: now,
            first_byte: None,
            first_token: None,
            first_token_read: None,
            last_token: None,
            complete: now,
            token_chunks_ns: Vec::new(),
            bytes_received: 0,
            last_byte: None,
            new_connection: false,
            head: HeadProgress::default(),
            opened: None,
            ready: None,
            not_before: None,
        }
    }

    /// The exchange ended at `now`: never before its last token's stamp
    /// (the kernel keeps the newer stamp of packets it merges, so a token
    /// can carry a stamp a few hundred ns after the read that ends the
    /// stream; seen under load as a completion 20-300 ns before the first
    /// token, which dropped the turn's TPOT sample).
    fn end(&mut self, now: Instant) {
        self.complete = self.last_token.map_or(now, |last| now.max(last));
    }

    /// Counts `n` body bytes arrived at `now`.
    pub(super) fn received(&mut self, n: usize, now: Instant) {
        self.first_byte.get_or_insert(now);
        self.last_byte = Some(now);
        self.bytes_received += n as u64;
    }

    /// What had arrived when the turn timed out after `limit`: a stream
    /// that went quiet (stalled), or one still arriving when time ran out.
    fn stall_detail(&self, now: Instant, limit: Duration) -> String {
        match self.last_byte {
            None if self.first_byte.is_some() => "no body byte after the response head".into(),
            None => match self.head {
                HeadProgress { bytes: 0, .. } => "no response".into(),
                HeadProgress { bytes, interim: 0 } => {
                    format!("no complete response head: {bytes} bytes of one received")
                }
                HeadProgress { bytes, interim } => format!(
                    "no final response head: {interim} interim (1xx) heads, {bytes} bytes in all"
                ),
            },
            Some(last) => {
                let quiet = now.duration_since(last);
                if quiet >= Duration::from_secs(1).min(limit / 2) {
                    format!(
                        "stalled: {} bytes received, none in the last {:.1} s",
                        self.bytes_received,
                        quiet.as_secs_f64()
                    )
                } else {
                    format!(
                        "still streaming: {} bytes received, the last {} ms before the limit; \
                         the answer takes longer than load.turn_timeout_s",
                        self.bytes_received,
                        quiet.as_millis()
                    )
                }
            }
        }
    }
}

/// Exchanges in flight in this process, for [`exchanges_in_flight`].
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// Chat-completions exchanges in flight in this process now (local token counting checks it
/// never runs beside one).
pub fn exchanges_in_flight() -> usize {
    IN_FLIGHT.load(Ordering::SeqCst)
}

/// Counts an exchange in flight while it lives (a cut exchange is dropped, and uncounted).
struct InFlight;

impl InFlight {
    fn new() -> Self {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The connections opened before a phase ([`ChatClient::warm_up`]), apart from the measured
/// turns.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Setup {
    /// Connections idle and ready when the phase started.
    pub connections: u64,
    /// Of them, opened by the warm-up (the rest were open already, e.g. by the endpoint
    /// check).
    pub opened: u64,
    /// Wall time to open them, ms.
    pub ms: f64,
    /// The TLS sessions of the connections ready (https): the warm-up's, and any open
    /// already (the endpoint check's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSetup>,
}

/// The TLS sessions of a warm-up's connections: how many of each version, cipher suite and
/// application protocol, how many resumed, and the handshakes' times.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TlsSetup {
    pub versions: std::collections::BTreeMap<String, u64>,
    pub cipher_suites: std::collections::BTreeMap<String, u64>,
    pub alpn: std::collections::BTreeMap<String, u64>,
    pub resumed: u64,
    /// Handshake time per connection, µs: min, p50, p99 (`sorted[floor(p·(n−1))]`), max,
    /// mean.
    pub handshake_us: HandshakeTimes,
}

/// Handshake times, µs.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct HandshakeTimes {
    pub min: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl TlsSetup {
    /// The summary of `sessions` (`None` when there are none: plain HTTP).
    fn of<'a>(sessions: impl Iterator<Item = &'a super::tls::TlsSession>) -> Option<Self> {
        let mut out = Self::default();
        let mut times = Vec::new();
        for s in sessions {
            *out.versions.entry(s.version.clone()).or_default() += 1;
            *out.cipher_suites.entry(s.cipher_suite.clone()).or_default() += 1;
            if let Some(alpn) = &s.alpn {
                *out.alpn.entry(alpn.clone()).or_default() += 1;
            }
            out.resumed += u64::from(s.resumed);
            times.push(s.handshake_us);
        }
        if times.is_empty() {
            return None;
        }
        times.sort_by(f64::total_cmp);
        let at = |p: f64| times[((times.len() - 1) as f64 * p).floor() as usize];
        out.handshake_us = HandshakeTimes {
            min: times[0],
            p50: at(0.5),
            p99: at(0.99),
            max: times[times.len() - 1],
            mean: times.iter().sum::<f64>() / times.len() as f64,
        };
        Some(out)
    }
}

/// One request and what came back.
#[derive(Debug)]
pub struct Exchange {
    pub timeline: Timeline,
    pub result: Result<Assembled, TurnError>,
    /// The request body as sent (shared, not copied).
    pub body: RequestBody,
}

/// An answer to a plain request ([`ChatClient::get`]).
#[derive(Debug, Clone)]
pub struct HttpAnswer {
    pub status: u16,
    /// The `Content-Type` header ("" when absent).
    pub content_type: String,
    pub body: Bytes,
}

/// A client for one endpoint with one keep-alive HTTP/1.1 connection per concurrent request
/// (see [`super::connection`]). Cloning shares the connections.
#[derive(Clone)]
pub struct ChatClient {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// The request heads' parts, made once.
    heads: Heads,
    turn_timeout: Duration,
    max_response_bytes: u64,
    first_token: FirstToken,
    style: ClientStyle,
    /// The latest warm-up.
    setup: Mutex<Option<Setup>>,
}

impl ChatClient {
    /// A client for `opts.endpoint`; connects lazily (or on [`ChatClient::warm_up`]).
    ///
    /// # Errors
    /// When the base URL is not `http(s)://host[:port][/prefix]`, or the API key, a header
    /// or the session header's name cannot go in a request head.
    pub fn new(opts: &ClientOptions) -> Result<Self, ClientError> {
        let endpoint = Endpoint::parse(&opts.endpoint)?;
        let heads = Heads::new(
            &endpoint,
            &opts.endpoint,
            opts.api_key.as_deref(),
            !opts.reuse_connections,
            &opts.headers,
            &opts.session_header,
            opts.style,
        )?;
        Ok(Self {
            inner: Arc::new(Inner {
                heads,
                pool: Pool::new(
                    endpoint,
                    opts.max_connections,
                    opts.timestamps,
                    opts.reuse_connections,
                    opts.transport.clone(),
                ),
                turn_timeout: opts.turn_timeout,
                max_response_bytes: opts.max_response_bytes,
                first_token: opts.first_token,
                style: opts.style,
                setup: Mutex::new(None),
            }),
        })
    }

    /// TCP connections this client opened so far.
    pub fn connections_opened(&self) -> u64 {
        self.inner.pool.opened()
    }

    /// Opens connections until `n` are idle, so that no turn of the phase has to open one
    /// (unless one breaks), and says how many it opened and how long that took (also kept:
    /// [`ChatClient::setup`]). Each connect is bounded by the turn timeout.
    ///
    /// # Errors
    /// When a connection cannot be opened (the cause names the address).
    pub async fn warm_up(&self, n: usize) -> Result<Setup, TurnError> {
        let pool = &self.inner.pool;
        let (started, opened) = (Instant::now(), pool.opened());
        while pool.idle() < n {
            let conn = tokio::time::timeout(self.inner.turn_timeout, pool.open())
                .await
                .map_err(|_| TurnError::Timeout {
                    after_s: self.inner.turn_timeout.as_secs_f64(),
                    detail: format!("connecting to {}", pool.endpoint.address()),
                })??;
            pool.checkin(conn);
        }
        let done = Setup {
            connections: pool.idle() as u64,
            opened: pool.opened() - opened,
            ms: started.elapsed().as_secs_f64() * 1e3,
            tls: TlsSetup::of(pool.idle_sessions().iter()),
        };
        *self.inner.setup.lock().expect("setup lock") = Some(done.clone());
        Ok(done)
    }

    /// Whether a plain `http://` endpoint's port speaks TLS (the endpoint check's hint when it
    /// failed); `false` for an `https://` endpoint.
    pub async fn port_speaks_tls(&self) -> bool {
        let pool = &self.inner.pool;
        !pool.endpoint.tls && pool.speaks_tls().await
    }

    /// The latest warm-up's connections and time ([`ChatClient::warm_up`]).
    pub fn setup(&self) -> Option<Setup> {
        self.inner.setup.lock().expect("setup lock").clone()
    }

    /// The full URL of `route` (e.g. `/v1/models`), for messages.
    pub fn url(&self, route: &str) -> String {
        let endpoint = &self.inner.pool.endpoint;
        format!(
            "{}://{}{}",
            endpoint.scheme(),
            endpoint.authority,
            endpoint.path(route)
        )
    }

    /// `GET route` (e.g. `/v1/models`) on the pooled connections (so an endpoint check opens
    /// the connection the first turn then uses), body read whole (up to the response cap),
    /// within `timeout`.
    ///
    /// # Errors
    /// A transport failure, the timeout, or a body over the cap; any status is an answer.
    pub async fn get(&self, route: &str, timeout: Duration) -> Result<HttpAnswer, TurnError> {
        let inner = &*self.inner;
        let path = inner.pool.endpoint.path(route);
        let work = async {
            if !request_target(&path) {
                return Err(TurnError::Transport {
                    message: format!("GET {path}: not a valid request target"),
                });
            }
            let head = inner.heads.get(&path);
            let mut t = Timeline::new();
            let (mut conn, resp, mut body) = self
                .send_request(
                    inner.pool.take_idle(),
                    &head,
                    &RequestBody::default(),
                    &mut t,
                    false,
                    &mut None::<fn()>,
                )
                .await?;
            encoding(&resp)?;
            let content_type = header(&resp, "content-type").unwrap_or_default();
            let cap = inner.cap();
            let (body, ended) = read_some(&mut conn, &mut body, cap, &mut t).await?;
            if !ended {
                return Err(TurnError::TooLarge {
                    cap,
                    received: t.bytes_received,
                });
            }
            inner.pool.checkin(conn);
            Ok(HttpAnswer {
                status: resp.status,
                content_type,
                body,
            })
        };
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or_else(|_| {
                Err(TurnError::Timeout {
                    after_s: timeout.as_secs_f64(),
                    detail: format!("GET {path}"),
                })
            })
    }

    /// Sends `body`, tagged with `session_id` in the session header.
    pub async fn send(&self, body: &Value, session_id: &str) -> Exchange {
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let bytes = serde_json::to_vec(body).expect("a JSON value serialises");
        self.send_json(bytes.into(), stream, session_id).await
    }

    /// Sends a body already written as JSON (`stream`: whether it asks for a
    /// streamed answer), tagged with `session_id` in the session header.
    pub async fn send_json(&self, bytes: RequestBody, stream: bool, session_id: &str) -> Exchange {
        self.send_json_then(bytes, stream, session_id, || {}).await
    }

    /// [`ChatClient::send_json`], doing `once_sent` as soon as the request is written whole
    /// to the socket, while the server works on it (or, at the latest, once the answer's head
    /// came): work that need not come before the request is done then, not between the
    /// previous answer and this request. The answer's bytes are stamped by the kernel on
    /// arrival ([`Timestamps::Arrival`]), so the work shifts no timestamp; with read-return
    /// stamps ([`Timestamps::Read`]) it would, if the answer came during it, so there the work
    /// is done before the request. A turn cut before its request went out drops `once_sent`
    /// undone.
    pub async fn send_json_then(
        &self,
        bytes: RequestBody,
        stream: bool,
        session_id: &str,
        once_sent: impl FnOnce(),
    ) -> Exchange {
        self.send_json_at(bytes, stream, session_id, None, once_sent)
            .await
    }

    /// [`ChatClient::send_json_then`], writing the request not before `not_before`: the
    /// head is made and a connection taken first, then the sending task spins (yielding to
    /// the runtime's other tasks) until `not_before` and writes, so that nothing but the
    /// write lies between the instant and the request's first byte. For a due time the caller wakes shortly
    /// before (an open-loop arrival): the spin is that short.
    pub async fn send_json_at(
        &self,
        bytes: RequestBody,
        stream: bool,
        session_id: &str,
        not_before: Option<Instant>,
        once_sent: impl FnOnce(),
    ) -> Exchange {
        let once_sent = match self.inner.pool.timestamps() {
            Timestamps::Arrival => Some(once_sent),
            Timestamps::Read => {
                once_sent();
                None
            }
        };
        let _in_flight = InFlight::new();
        // Made and taken before the stamp: the stamp is the write, not the head's making or
        // the pool's check of an idle connection. On an idle connection the stamp is taken
        // again right before the write (`send_request`).
        let head = self.inner.heads.chat(stream, session_id, bytes.len());
        let idle = self.inner.pool.take_idle();
        let mut timeline = Timeline::new();
        timeline.not_before = not_before;
        timeline.issued = Instant::now();
        agentload_wire::clock::mark_first_request(timeline.issued);
        let limit = self.inner.turn_timeout;
        let outcome = tokio::time::timeout(
            limit,
            self.exchange(idle, &head, &bytes, stream, &mut timeline, once_sent),
        )
        .await;
        let result = match outcome {
            Ok(result) => result,
            Err(_) => {
                let now = Instant::now();
                timeline.complete = now;
                Err(TurnError::Timeout {
                    after_s: limit.as_secs_f64(),
                    detail: timeline.stall_detail(now, limit),
                })
            }
        };
        Exchange {
            timeline,
            result,
            body: bytes,
        }
    }

    /// Sends a request (`head`, then `body`) on a pooled connection and reads its answer's
    /// head. A reused connection that turns out closed before any byte of the answer came
    /// (the server closed it while idle) is replaced once by a new one.
    ///
    /// `first_token_due`: the answer is a stream whose first token is to be stamped exactly
    /// ([`super::wire::ReadStamp::first_token_due`]). `once_sent` runs (taken) once the request
    /// is written whole to the socket.
    async fn send_request(
        &self,
        idle: Option<Connection>,
        head: &[u8],
        body: &RequestBody,
        t: &mut Timeline,
        first_token_due: bool,
        once_sent: &mut Option<impl FnOnce()>,
    ) -> Result<(Connection, ResponseHead, BodyDecoder), TurnError> {
        let pool = &self.inner.pool;
        let (mut conn, reused) = pool.checkout(idle).await?;
        t.new_connection = !reused;
        t.opened = (!reused).then(|| conn.opened.clone());
        let broken = |e: &WireError| match e {
            WireError::OutOfStep(message) => TurnError::OutOfStep {
                message: message.clone(),
            },
            e => TurnError::Transport {
                message: format!("request to {} failed: {e}", pool.endpoint.address()),
            },
        };
        // On an idle connection the turn is issued when its request is written; a connect is
        // inside the turn (`issued` stays where the exchange began), unless the request waits
        // for `not_before` after it: the connect was made ahead of the turn.
        let not_before = t.not_before.take();
        let issued = (reused || not_before.is_some()).then_some(&mut t.issued);
        if let Some(at) = not_before {
            t.ready = Some(Instant::now());
            spin_until(at).await;
        }
        let sent = answer_head(
            &mut conn,
            head,
            body,
            first_token_due,
            once_sent,
            issued,
            &mut t.head,
        );
        match sent.await {
            Ok((resp, decoder)) => Ok((conn, resp, decoder)),
            Err(e) if reused && e.unanswered() => {
                let mut conn = pool.open().await?;
                t.new_connection = true;
                t.opened = Some(conn.opened.clone());
                t.head = HeadProgress::default();
                let (resp, decoder) = answer_head(
                    &mut conn,
                    head,
                    body,
                    first_token_due,
                    once_sent,
                    None,
                    &mut t.head,
                )
                .await
                .map_err(|e| broken(&e))?;
                Ok((conn, resp, decoder))
            }
            Err(e) => Err(broken(&e)),
        }
    }

    async fn exchange(
        &self,
        idle: Option<Connection>,
        head: &[u8],
        body: &RequestBody,
        stream: bool,
        t: &mut Timeline,
        mut once_sent: Option<impl FnOnce()>,
    ) -> Result<Assembled, TurnError> {
        let inner = &*self.inner;
        let (mut conn, resp, mut decoder) = self
            .send_request(idle, head, body, t, stream, &mut once_sent)
            .await
            .inspect_err(|_| {
                t.complete = Instant::now();
            })?;
        let status = resp.status;
        if !(200..300).contains(&status) {
            t.first_byte = Some(arrival(&conn, t));
            let retry_after = header(&resp, "retry-after");
            let location = (300..400)
                .contains(&status)
                .then(|| resp.header("location").map(quote))
                .flatten();
            let (bytes, ended) =
                read_some(&mut conn, &mut decoder, ERROR_BODY_BYTES as u64, t).await?;
            t.complete = Instant::now();
            if ended {
                inner.pool.checkin(conn);
            }
            // The server's text, its control characters shown as escapes: the cause is
            // printed, and lands in report.txt and report.html.
            let body: String = String::from_utf8_lossy(&bytes).chars().take(2000).collect();
            return Err(TurnError::Http {
                status,
                body: agentload_console::escape(&body).into_owned(),
                retry_after,
                location,
            });
        }
        encoding(&resp).inspect_err(|_| t.complete = Instant::now())?;
        let content_type = header(&resp, "content-type");
        if stream
            && !content_type
                .as_deref()
                .is_some_and(|c| mime_is(c, "text/event-stream"))
        {
            let (head, _) = read_some(&mut conn, &mut decoder, QUOTE_BYTES as u64, t).await?;
            t.complete = Instant::now();
            return Err(TurnError::ContentType {
                content_type: content_type.unwrap_or_else(|| "(no Content-Type)".into()),
                head: quote(&head),
            });
        }
        let cap = inner.cap();
        if !stream {
            let (bytes, ended) = read_some(&mut conn, &mut decoder, cap, t).await?;
            let now = t.last_byte.unwrap_or_else(Instant::now);
            t.first_token = Some(now);
            t.first_token_read = conn.reads.read_of_arrival();
            t.last_token = Some(now);
            t.complete = now;
            if !ended {
                return Err(TurnError::TooLarge {
                    cap,
                    received: t.bytes_received,
                });
            }
            let answer = serde_json::from_slice::<Value>(&bytes)
                .map_err(|e| {
                    TurnError::stream(format!(
                        "response is not JSON ({e}; content type {}); it starts {}",
                        content_type.as_deref().unwrap_or("absent"),
                        quote(&bytes)
                    ))
                })
                .and_then(|value| {
                    let mut assembler = CompletionAssembler::default();
                    assembler
                        .push_response(&value)
                        .map_err(|e| TurnError::stream(format!("the answer's {e}")))?;
                    stream_error(assembler.finish())
                });
            return self.settle(conn, true, answer);
        }
        let mut reader = StreamReader::new(inner.first_token, inner.style);
        let mut first_token_due = true;
        let ended = loop {
            let data = conn.body_data(&mut decoder).await;
            // The read that delivered the data's last bytes, not this moment.
            let now = arrival(&conn, t);
            let bytes = match data {
                Ok(Some(bytes)) => bytes,
                Err(e) => {
                    t.end(now);
                    return Err(TurnError::stream(format!(
                        "connection broke mid-stream after {} bytes: {e}",
                        t.bytes_received
                    )));
                }
                Ok(None) => {
                    reader.finish(t, now)?;
                    t.end(now);
                    break true;
                }
            };
            t.received(bytes.len(), now);
            if cap > 0 && t.bytes_received > cap {
                t.end(now);
                return Err(TurnError::TooLarge {
                    cap,
                    received: t.bytes_received,
                });
            }
            reader.feed(&bytes, t, now).inspect_err(|_| t.end(now))?;
            if first_token_due && t.first_token.is_some() {
                first_token_due = false;
                t.first_token_read = conn.reads.read_of_arrival();
                conn.reads.first_token_due(false);
            }
            if reader.done() {
                t.end(now);
                break drain(&mut conn, &mut decoder).await;
            }
        };
        self.settle(conn, ended, reader.end())
    }

    /// Ends an exchange whose answer was read (`ended`: its body to its end): a complete
    /// answer that cannot be this request's (bytes after its end, or its completion id an
    /// earlier answer's on the connection) fails with the connection closed; otherwise the
    /// connection goes back to the pool when its body ended.
    fn settle(
        &self,
        mut conn: Connection,
        ended: bool,
        answer: Result<Assembled, TurnError>,
    ) -> Result<Assembled, TurnError> {
        let id = answer.as_ref().ok().and_then(|a| a.id.as_deref());
        if let Err(message) = conn.settle(ended, id) {
            return Err(TurnError::OutOfStep { message });
        }
        if ended {
            self.inner.pool.checkin(conn);
        }
        answer
    }
}

impl Inner {
    /// The response cap in bytes (`u64::MAX`: none).
    fn cap(&self) -> u64 {
        match self.max_response_bytes {
            0 => u64::MAX,
            n => n,
        }
    }
}

/// When the bytes of the connection's latest read arrived (or now, before any read), never
/// before the request was issued: a wall-clock step between a packet's arrival and its read
/// could otherwise move a kernel stamp ([`super::wire`]) there.
fn arrival(conn: &Connection, t: &Timeline) -> Instant {
    conn.reads.last_or(Instant::now()).max(t.issued)
}

/// A non-streamed answer's `error` object fails the turn.
fn stream_error(out: Assembled) -> Result<Assembled, TurnError> {
    match &out.stream_error {
        Some(message) => Err(TurnError::stream(format!(
            "the server sent an error in the answer: {message}"
        ))),
        None => Ok(out),
    }
}

/// Writes a request on `conn` and reads its answer's head (see [`ChatClient::send_request`]).
async fn answer_head(
    conn: &mut Connection,
    head: &[u8],
    body: &RequestBody,
    first_token_due: bool,
    once_sent: &mut Option<impl FnOnce()>,
    issued: Option<&mut Instant>,
    progress: &mut HeadProgress,
) -> Result<(ResponseHead, BodyDecoder), WireError> {
    conn.reads.first_token_due(first_token_due);
    conn.write_request(head, body.parts(), issued).await?;
    if let Some(work) = once_sent.take() {
        work();
    }
    conn.read_head(progress).await
}

/// Spins until `at`: the caller woke shortly before it (see [`ChatClient::send_json_at`]),
/// and a wait on any timer would end tens of microseconds after it. Until [`HOLD`] before
/// `at` the spin yields to the runtime between looks at the clock, so that the worker's
/// other tasks (another arrival's spin, an answer's read) go on meanwhile; the last
/// [`HOLD`] it keeps the worker, so that no other task's turn runs past `at`.
async fn spin_until(at: Instant) {
    while at.checked_sub(HOLD).is_some_and(|t| Instant::now() < t) {
        tokio::task::yield_now().await;
    }
    while Instant::now() < at {
        std::hint::spin_loop();
    }
}

/// How long before a `not_before` its task keeps its worker, spinning ([`spin_until`]).
const HOLD: Duration = Duration::from_micros(50);

/// Refuses an answer whose body is encoded (`content-encoding` other than `identity`).
fn encoding(resp: &ResponseHead) -> Result<(), TurnError> {
    match resp.header("content-encoding") {
        Some(e) if !e.trim_ascii().eq_ignore_ascii_case(b"identity") => {
            Err(TurnError::Encoded { encoding: quote(e) })
        }
        _ => Ok(()),
    }
}

/// Reads `body` until its end or until more than `limit` bytes came; returns the bytes (at most
/// `limit`) and whether the body ended.
async fn read_some(
    conn: &mut Connection,
    body: &mut BodyDecoder,
    limit: u64,
    t: &mut Timeline,
) -> Result<(Bytes, bool), TurnError> {
    let mut out = Vec::new();
    loop {
        let data = conn
            .body_data(body)
            .await
            .map_err(|e| TurnError::Transport {
                message: format!(
                    "connection broke while reading the body after {} bytes: {e}",
                    t.bytes_received
                ),
            })?;
        let Some(bytes) = data else {
            return Ok((out.into(), true));
        };
        t.received(bytes.len(), arrival(conn, t));
        let room = (limit as usize).saturating_sub(out.len());
        out.extend_from_slice(&bytes[..bytes.len().min(room)]);
        if t.bytes_received > limit {
            return Ok((out.into(), false));
        }
    }
}

/// Reads what follows `[DONE]` (normally nothing: the body's end) for a short while; whether
/// the body ended, so that its connection can be reused.
async fn drain(conn: &mut Connection, body: &mut BodyDecoder) -> bool {
    let rest = async {
        loop {
            match conn.body_data(body).await {
                Ok(Some(_)) => {}
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    };
    tokio::time::timeout(DRAIN_AFTER_DONE, rest)
        .await
        .unwrap_or(false)
}

/// A header of an answer's head, as text (control characters shown as escapes: a value
/// may be printed).
fn header(resp: &ResponseHead, name: &str) -> Option<String> {
    resp.header(name)
        .map(|v| agentload_console::escape(&String::from_utf8_lossy(v)).into_owned())
}

/// Whether a `Content-Type` value is `mime` (parameters and case aside).
fn mime_is(value: &str, mime: &str) -> bool {
    value
        .split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(mime))
}

/// The first bytes of `bytes` as text in backticks, line ends and other control characters
/// escaped; `(nothing)` when empty.
pub(super) fn quote(bytes: &[u8]) -> String {
    agentload_console::quote(bytes, QUOTE_BYTES)
}

/// An error and its sources, `: `-joined.
pub(super) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod timeline_tests {
    use super::Timeline;
    use std::time::Duration;

    /// The end is never before the last token's stamp, and otherwise the
    /// moment given.
    #[test]
    fn the_end_is_never_before_the_last_token() {
        let mut t = Timeline::new();
        let read = t.issued + Duration::from_millis(5);
        t.last_token = Some(read + Duration::from_nanos(281));
        t.end(read);
        assert_eq!(t.complete, read + Duration::from_nanos(281));
        t.end(read + Duration::from_millis(1));
        assert_eq!(t.complete, read + Duration::from_millis(1));
    }
}
