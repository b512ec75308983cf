//! The endpoint's keep-alive HTTP/1.1 connections, owned by agentload rather than a generic
//! pool, and spoken by agentload itself: a request goes out as one `writev(2)` of its head
//! and its body's shared slices (nothing joined, nothing copied), and the answer is read into
//! the connection's own buffer and decoded in place ([`super::http1`]); every read goes
//! through the stamped socket ([`super::wire`]) in the task that consumes its bytes.
//!
//! A request takes an idle connection (the most recently used one) or, when none is idle or the
//! idle ones were closed by the server, opens one; the connection goes back only after its
//! response body was read to its end, before the exchange returns. So a session's next request
//! always finds its previous connection idle: at concurrency N at most N connections are ever
//! open, and a new one is opened only when one broke or the server closed it. (reqwest's pool,
//! used before hyper was, races a new connection against the return of the previous one, and
//! returns a connection only from a task spawned after the body ended: at concurrency 1 it
//! opened 216 to 250 connections over the 1,007 turns of the edge replay.) Every connection
//! opened is counted ([`Pool::opened`]).

use super::http1::{parse_head, BodyDecoder, Decoded, ProtocolError, ResponseHead};
use super::stream::TurnError;
use super::tls::TlsSession;
use super::tls_layer::TlsLayer;
use super::transport::Transport;
use super::wire::{stamped, ReadStamp, Stamped, Timestamps};
use bytes::{Bytes, BytesMut};
use http::Uri;
use std::io::{self, IoSlice};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Room made in the read buffer before a read, when less is left.
const READ_ROOM: usize = 16 << 10;
/// Empty read buffers the pool keeps for the next exchanges, at most (1 MiB of them): an
/// exchange takes one instead of asking the allocator for 16 KiB, and the heap's top does not
/// grow and shrink with every answer (measured at 1,000 streams: `sysmalloc` and the page
/// faults after it were 5 % of the samples).
const SPARE_BUFFERS: usize = 64;
/// A read buffer larger than this (grown for a large answer) is let go, not kept as a spare.
const SPARE_MAX_BYTES: usize = 4 * READ_ROOM;
/// The most slices one `writev(2)` takes (Linux's `IOV_MAX`).
const MAX_SLICES: usize = 1024;

/// Completion ids of the latest answers a connection keeps (as hashes) to know an answer
/// that repeats one of them.
const RECENT_IDS: usize = 4;
/// Interim (1xx) heads taken before an answer's final head, at most.
const MAX_INTERIM_HEADS: u32 = 32;

/// One keep-alive connection: its socket (and TLS session, for https), the bytes read (and
/// decrypted) and not consumed yet, and its read stamps.
#[derive(Debug)]
pub(super) struct Connection {
    io: Stamped,
    /// The TLS session (https).
    tls: Option<Box<TlsLayer>>,
    buf: BytesMut,
    /// When the latest socket read returned bytes.
    pub(super) reads: ReadStamp,
    /// The latest answer allows another request on the connection.
    keep_alive: bool,
    /// Right before the latest request's first byte was handed to the kernel (`None`: no
    /// request went out on it yet).
    written_at: Option<Instant>,
    /// Hashes of the completion ids of its latest answers (0: none), newest at
    /// `ids[answers % RECENT_IDS]`.
    ids: [u64; RECENT_IDS],
    /// Answers whose completion id it keeps.
    answers: usize,
    /// How it was opened.
    pub(super) opened: Opened,
}

/// How far an answer's head came (for the cause of a turn that timed out waiting for it).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct HeadProgress {
    /// Bytes read while the head was awaited (interim heads included).
    pub(super) bytes: u64,
    /// Interim (1xx) heads taken.
    pub(super) interim: u32,
}

impl Drop for Connection {
    /// A TLS session is closed with `close_notify` (a server then knows the answer it sent
    /// was not cut).
    fn drop(&mut self) {
        if let Some(tls) = &mut self.tls {
            tls.close(&mut self.io);
        }
    }
}

/// How a connection was opened (recorded in the results: the set-up's, and a turn's that had
/// to open one).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Opened {
    /// TCP connect (through the proxy's tunnel, when there is one), µs.
    pub connect_us: f64,
    /// The TLS session (https).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSession>,
}

/// Why a request could not be written, or its answer read.
#[derive(Debug, thiserror::Error)]
pub(super) enum WireError {
    /// The request could not be written, or the connection broke before a byte of the
    /// answer came.
    #[error("{0}")]
    Unanswered(io::Error),
    /// The server closed the connection before the answer's head was whole.
    #[error("the connection closed before the answer's head ({received} bytes of it received)")]
    ClosedBeforeHead { received: usize },
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// What arrived cannot be the answer to the request just written.
    #[error("{0}")]
    OutOfStep(String),
    #[error("more than {MAX_INTERIM_HEADS} interim (1xx) heads came, and no answer")]
    EndlessInterim,
}

impl WireError {
    /// Nothing of an answer came: on a reused connection, the server closed it (or reset it)
    /// while the request was on its way, and it may be sent again on a new one.
    pub(super) fn unanswered(&self) -> bool {
        match self {
            Self::Unanswered(_) => true,
            Self::ClosedBeforeHead { received } => *received == 0,
            Self::Io(_) | Self::Protocol(_) | Self::OutOfStep(_) | Self::EndlessInterim => false,
        }
    }
}

impl Connection {
    fn new(io: Stamped, reads: ReadStamp, tls: Option<Box<TlsLayer>>, opened: Opened) -> Self {
        Self {
            io,
            tls,
            buf: BytesMut::new(),
            reads,
            keep_alive: true,
            written_at: None,
            ids: [0; RECENT_IDS],
            answers: 0,
            opened,
        }
    }

    /// Whether the server closed the connection (or sent bytes nobody asked for) while it was
    /// idle: it cannot take a request. Over TLS what came is handed to the session first: a
    /// session ticket or a key update leaves the connection usable, `close_notify` does not.
    fn closed_while_idle(&mut self) -> bool {
        if let Some(tls) = &mut self.tls {
            return tls.closed_while_idle(&mut self.io);
        }
        let mut probe = [0u8; 1];
        !matches!(self.io.tcp().try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// Writes a request: `head`, then `body`'s slices, in as few `writev(2)` as the kernel
    /// takes them; done when its last byte is in the kernel. `issued`, when given, is stamped
    /// right before the first `writev(2)`.
    pub(super) async fn write_request(
        &mut self,
        head: &[u8],
        body: &[Bytes],
        issued: Option<&mut Instant>,
    ) -> Result<(), WireError> {
        let mut slices: Vec<IoSlice<'_>> = std::iter::once(head)
            .chain(body.iter().map(|b| &b[..]))
            .filter(|s| !s.is_empty())
            .map(IoSlice::new)
            .collect();
        if let Some(tls) = &mut self.tls {
            let mut at = Instant::now();
            let sent = tls.write(&mut self.io, &slices, &mut at).await;
            self.written_at = Some(at);
            if let Some(issued) = issued {
                *issued = at;
            }
            return sent.map_err(WireError::Unanswered);
        }
        let now = Instant::now();
        self.written_at = Some(now);
        if let Some(issued) = issued {
            *issued = now;
        }
        let mut left = &mut slices[..];
        while !left.is_empty() {
            let n = left.len().min(MAX_SLICES);
            let written = self
                .io
                .write_vectored(&left[..n])
                .await
                .map_err(WireError::Unanswered)?;
            if written == 0 {
                return Err(WireError::Unanswered(io::ErrorKind::WriteZero.into()));
            }
            IoSlice::advance_slices(&mut left, written);
        }
        Ok(())
    }

    /// Reads more bytes into the buffer; how many (0: the server closed the connection).
    async fn fill(&mut self) -> io::Result<usize> {
        if self.buf.capacity() - self.buf.len() < READ_ROOM / 4 {
            self.buf.reserve(READ_ROOM);
        }
        match &mut self.tls {
            Some(tls) => tls.fill(&mut self.io, &mut self.buf).await,
            None => self.io.read_buf(&mut self.buf).await,
        }
    }

    /// Reads the answer's head (up to [`MAX_INTERIM_HEADS`] 1xx heads skipped), and a decoder
    /// for its body; `progress` counts what came meanwhile. The first bytes must have arrived
    /// after the request was written (where the kernel stamps arrivals): bytes that were on
    /// their way before are no answer to it.
    pub(super) async fn read_head(
        &mut self,
        progress: &mut HeadProgress,
    ) -> Result<(ResponseHead, BodyDecoder), WireError> {
        loop {
            if let Some(head) = parse_head(&mut self.buf, &mut progress.interim)? {
                self.keep_alive = head.keep_alive;
                let body = BodyDecoder::new(head.framing);
                return Ok((head, body));
            }
            if progress.interim > MAX_INTERIM_HEADS {
                return Err(WireError::EndlessInterim);
            }
            let first = progress.bytes == 0;
            match self.fill().await {
                Ok(0) => {
                    return Err(WireError::ClosedBeforeHead {
                        received: self.buf.len(),
                    })
                }
                Ok(n) => {
                    progress.bytes += n as u64;
                    if first {
                        self.arrived_after_the_request(n)?;
                    }
                }
                Err(e) if self.buf.is_empty() => return Err(WireError::Unanswered(e)),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Refuses the `n` bytes just read when the kernel stamped their arrival before the request
    /// was written: they were sent before the server had it (a stray answer on a reused
    /// connection, or a server's greeting on a new one).
    fn arrived_after_the_request(&self, n: usize) -> Result<(), WireError> {
        let arrived = self.reads.latest().and_then(|at| at.arrived);
        match (arrived, self.written_at) {
            (Some(arrived), Some(written)) if arrived < written => {
                Err(WireError::OutOfStep(format!(
                    "{n} bytes arrived {} µs before the request was written: they start {}",
                    written.duration_since(arrived).as_micros(),
                    super::stream::quote(&self.buf[self.buf.len() - n..])
                )))
            }
            _ => Ok(()),
        }
    }

    /// Ends an exchange whose answer (`id`: its completion id) was read (`ended`: to the end
    /// of its body): refused when bytes followed its end (anything but line ends), or when
    /// its id is one an earlier answer on this connection carried. Otherwise the id is kept.
    pub(super) fn settle(&mut self, ended: bool, id: Option<&str>) -> Result<(), String> {
        if ended && self.buf.iter().any(|b| !matches!(b, b'\r' | b'\n')) {
            return Err(format!(
                "{} bytes followed the answer's end on its connection: they start {}",
                self.buf.len(),
                super::stream::quote(&self.buf)
            ));
        }
        let Some(id) = id else { return Ok(()) };
        let hash = {
            use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
            BuildHasherDefault::<DefaultHasher>::default()
                .hash_one(id)
                .max(1)
        };
        if let Some(back) = (1..=self.answers.min(RECENT_IDS))
            .find(|back| self.ids[(self.answers - back) % RECENT_IDS] == hash)
        {
            return Err(format!(
                "its completion id {} is that of the answer {back} before it on this connection",
                super::stream::quote(id.as_bytes())
            ));
        }
        self.ids[self.answers % RECENT_IDS] = hash;
        self.answers += 1;
        Ok(())
    }

    /// The next piece of the body (in the order it came, as read: no copy), `None` at its end.
    pub(super) async fn body_data(
        &mut self,
        body: &mut BodyDecoder,
    ) -> Result<Option<Bytes>, WireError> {
        loop {
            match body.decode(&mut self.buf)? {
                Decoded::Data(bytes) => return Ok(Some(bytes)),
                Decoded::End => return Ok(None),
                Decoded::NeedMore => {
                    if self.fill().await? == 0 {
                        body.closed()?;
                        self.keep_alive = false;
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Whether the connection can take another request: the answer allowed it and nothing
    /// followed its end.
    fn reusable(&self) -> bool {
        self.keep_alive && self.buf.is_empty()
    }
}

/// Why a base URL cannot be used.
#[derive(Debug, Clone, thiserror::Error)]
#[error("endpoint `{url}`: {reason}")]
pub struct EndpointError {
    pub url: String,
    pub reason: String,
}

/// Where requests go: the server's address, whether it speaks TLS, the `Host` header and the
/// path prefix.
#[derive(Debug, Clone)]
pub(super) struct Endpoint {
    pub(super) host: String,
    port: u16,
    /// `https`.
    pub(super) tls: bool,
    /// The `Host` header (the URL's authority).
    pub(super) authority: String,
    /// The base URL's path without its trailing `/` (empty for `http://host:port`).
    pub(super) prefix: String,
}

impl Endpoint {
    /// Parses a base URL `http(s)://host[:port][/prefix]`.
    pub(super) fn parse(url: &str) -> Result<Self, EndpointError> {
        let bad = |reason: &str| EndpointError {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let uri: Uri = url
            .parse()
            .map_err(|e: http::uri::InvalidUri| bad(&format!("not a URL ({e})")))?;
        let tls = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            Some(other) => return Err(bad(&format!("scheme `{other}` is not http or https"))),
            None => return Err(bad("no scheme (write http://host:port)")),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| bad("no host"))?
            .as_str()
            .to_owned();
        if authority.contains('@') {
            return Err(bad(
                "credentials in the URL are not supported (use the API key)",
            ));
        }
        if uri.query().is_some() {
            return Err(bad("a query string is not supported"));
        }
        let host = uri.host().ok_or_else(|| bad("no host"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        Ok(Self {
            host,
            port: uri.port_u16().unwrap_or(if tls { 443 } else { 80 }),
            tls,
            authority,
            prefix: uri.path().trim_end_matches('/').to_owned(),
        })
    }

    /// The path of `route` (`/v1/...`) under the base URL; a base URL that already ends in
    /// `/v1` is not given a second one.
    pub(super) fn path(&self, route: &str) -> String {
        match route.strip_prefix("/v1") {
            Some(rest) if self.prefix.ends_with("/v1") => format!("{}{rest}", self.prefix),
            _ => format!("{}{route}", self.prefix),
        }
    }

    /// `host:port`, for messages.
    pub(super) fn address(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    /// `host:port` as a request target (`CONNECT`): an IPv6 host in brackets.
    fn connect_target(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            self.address()
        }
    }

    /// The base URL's scheme.
    pub(super) fn scheme(&self) -> &'static str {
        if self.tls {
            "https"
        } else {
            "http"
        }
    }
}

/// The idle connections, and the empty read buffers kept for the next exchanges.
#[derive(Debug, Default)]
struct Idle {
    conns: Vec<Connection>,
    buffers: Vec<BytesMut>,
}

/// The idle connections and the count of connections opened.
#[derive(Debug)]
pub(super) struct Pool {
    pub(super) endpoint: Endpoint,
    idle: Mutex<Idle>,
    max_idle: usize,
    opened: AtomicU64,
    /// Which moment of a read stamps its bytes.
    timestamps: Timestamps,
    /// A connection carries more than one request (`endpoint.reuse_connections`).
    reuse: bool,
    /// TLS and the proxy.
    transport: Transport,
}

impl Pool {
    /// Which moment of a read stamps its bytes on this pool's connections.
    pub(super) fn timestamps(&self) -> Timestamps {
        self.timestamps
    }

    /// A pool of up to `max_idle` idle connections to `endpoint`; `reuse`: a connection
    /// carries more than one request (else each request has one of its own, opened for it or
    /// by a warm-up).
    pub(super) fn new(
        endpoint: Endpoint,
        max_idle: usize,
        timestamps: Timestamps,
        reuse: bool,
        transport: Transport,
    ) -> Self {
        Self {
            endpoint,
            idle: Mutex::new(Idle::default()),
            max_idle: max_idle.max(1),
            opened: AtomicU64::new(0),
            timestamps,
            reuse,
            transport,
        }
    }

    /// Connections opened so far.
    pub(super) fn opened(&self) -> u64 {
        self.opened.load(Ordering::SeqCst)
    }

    /// Connections idle now.
    pub(super) fn idle(&self) -> usize {
        self.idle.lock().expect("pool lock").conns.len()
    }

    /// The TLS sessions of the connections idle now.
    pub(super) fn idle_sessions(&self) -> Vec<TlsSession> {
        let idle = self.idle.lock().expect("pool lock");
        idle.conns
            .iter()
            .filter_map(|c| c.opened.tls.clone())
            .collect()
    }

    /// An idle connection the server has not closed (closed ones are dropped), with a spare
    /// read buffer when the pool has one; `None` when no idle one is left. A request takes it
    /// before its `issued` stamp: the check, a `recv(2)` that must find nothing, is no part of
    /// sending it.
    pub(super) fn take_idle(&self) -> Option<Connection> {
        loop {
            let (mut conn, spare) = {
                let mut idle = self.idle.lock().expect("pool lock");
                let conn = idle.conns.pop()?;
                (conn, idle.buffers.pop())
            };
            // Checked outside the lock: thousands of sessions share it.
            if conn.closed_while_idle() {
                if let Some(buf) = spare {
                    self.idle.lock().expect("pool lock").buffers.push(buf);
                }
                continue;
            }
            conn.buf = spare.unwrap_or_default();
            return Some(conn);
        }
    }

    /// A connection for a request: `idle` (from [`Pool::take_idle`]; `true`: reused), else a
    /// new one, with a spare read buffer when the pool has one.
    pub(super) async fn checkout(
        &self,
        idle: Option<Connection>,
    ) -> Result<(Connection, bool), TurnError> {
        if let Some(conn) = idle {
            return Ok((conn, true));
        }
        let spare = self.idle.lock().expect("pool lock").buffers.pop();
        let mut conn = self.open().await?;
        conn.buf = spare.unwrap_or_default();
        Ok((conn, false))
    }

    /// Gives back a connection whose exchange ended cleanly (response read to its end). Its
    /// read buffer, empty, goes to the pool's spares (up to [`SPARE_BUFFERS`]) or is let go:
    /// an idle connection holds no buffer (thousands of agents keep thousands idle between
    /// turns).
    pub(super) fn checkin(&self, mut conn: Connection) {
        if !conn.reusable() || (!self.reuse && conn.written_at.is_some()) {
            return;
        }
        let mut buf = std::mem::take(&mut conn.buf);
        let mut idle = self.idle.lock().expect("pool lock");
        // Only a buffer no answer's bytes still point into, whole again, and not one that
        // grew for a large answer.
        if idle.buffers.len() < SPARE_BUFFERS
            && buf.capacity() <= SPARE_MAX_BYTES
            && buf.try_reclaim(READ_ROOM)
        {
            idle.buffers.push(buf);
        }
        if idle.conns.len() < self.max_idle {
            idle.conns.push(conn);
        }
    }

    /// Opens a connection (TCP with `TCP_NODELAY`; through the proxy's `CONNECT` tunnel when
    /// one is configured; then the TLS handshake, for https) and counts it.
    pub(super) async fn open(&self) -> Result<Connection, TurnError> {
        let endpoint = &self.endpoint;
        let address = endpoint.address();
        let transport = |what: &str, e: &dyn std::error::Error| TurnError::Transport {
            message: format!("{what} {address}: {}", super::stream::error_chain(e)),
        };
        let started = Instant::now();
        let route = self.transport.proxy.route(endpoint.tls, &endpoint.host);
        let (host, port) = match route {
            Some(proxy) => (proxy.host.as_str(), proxy.port),
            None => (endpoint.host.as_str(), endpoint.port),
        };
        let tcp = connect(host, port).await.map_err(|e| match route {
            Some(proxy) => transport(
                &format!("cannot connect to the proxy {} for", proxy.shown),
                &e,
            ),
            None => transport("cannot connect to", &e),
        })?;
        self.opened.fetch_add(1, Ordering::SeqCst);
        tcp.set_nodelay(true)
            .map_err(|e| transport("cannot set TCP_NODELAY on the connection to", &e))?;
        let (mut io, reads) = stamped(tcp, self.timestamps);
        if let Some(proxy) = route {
            super::proxy::tunnel(&mut io, proxy, &endpoint.connect_target())
                .await
                .map_err(|e| transport("cannot reach", &e))?;
        }
        let connect_us = started.elapsed().as_secs_f64() * 1e6;
        let (tls, session) = if endpoint.tls {
            let (layer, session) =
                TlsLayer::handshake(&mut io, &self.transport.tls, &endpoint.host)
                    .await
                    .map_err(|e| transport("TLS handshake with", &e))?;
            (Some(Box::new(layer)), Some(session))
        } else {
            (None, None)
        };
        Ok(Connection::new(
            io,
            reads,
            tls,
            Opened {
                connect_us,
                tls: session,
            },
        ))
    }
}

impl Pool {
    /// Whether the endpoint's port answers a TLS ClientHello with a TLS record: asked when a
    /// plain `http://` endpoint check failed, so that its message can say the port speaks
    /// TLS. Sends no HTTP request; gives up after [`TLS_PROBE_TIMEOUT`].
    pub(super) async fn speaks_tls(&self) -> bool {
        use tokio::io::AsyncWriteExt as _;
        let endpoint = &self.endpoint;
        let probe = async {
            let mut tcp = connect(&endpoint.host, endpoint.port).await.ok()?;
            let name = self
                .transport
                .tls
                .server_name(&endpoint.host)
                .or_else(|_| self.transport.tls.server_name("localhost"))
                .ok()?;
            let mut conn =
                rustls::ClientConnection::new(self.transport.tls.config().clone(), name).ok()?;
            let mut hello = Vec::new();
            conn.write_tls(&mut hello).ok()?;
            tcp.write_all(&hello).await.ok()?;
            let mut head = [0u8; 2];
            tcp.read_exact(&mut head).await.ok()?;
            Some(matches!(head, [21 | 22, 3]))
        };
        tokio::time::timeout(TLS_PROBE_TIMEOUT, probe)
            .await
            .ok()
            .flatten()
            .unwrap_or(false)
    }
}

/// How long [`Pool::speaks_tls`] waits for an answer.
const TLS_PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Connects, trying again a connect the server reset: when thousands of
/// agents connect at once the server's accept queue overflows and the
/// kernel resets the extra connects before any byte is sent, so trying
/// again is safe. Up to [`CONNECT_RETRIES`] more tries, [`CONNECT_BACKOFF`]
/// apart and doubling (about 0.6 s in all); any other error (nothing
/// listening: refused) fails at once.
async fn connect(host: &str, port: u16) -> std::io::Result<TcpStream> {
    retry_reset(|| TcpStream::connect((host, port))).await
}

/// `attempt` until it does not fail with a reset, at most
/// `1 + CONNECT_RETRIES` times (see [`connect`]).
async fn retry_reset<T, F>(mut attempt: impl FnMut() -> F) -> std::io::Result<T>
where
    F: std::future::Future<Output = std::io::Result<T>>,
{
    let mut backoff = CONNECT_BACKOFF;
    for _ in 0..CONNECT_RETRIES {
        match attempt().await {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
            done => return done,
        }
    }
    attempt().await
}

/// Tries after a reset connect, at most.
const CONNECT_RETRIES: u32 = 6;

/// The first wait before trying a reset connect again.
const CONNECT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(10);

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};
    use std::time::{Duration, Instant};

    /// Runs `retry_reset` over attempts that fail with `errors` in turn, then
    /// succeed; returns its result, the attempts made and the time taken.
    async fn attempts(errors: Vec<ErrorKind>) -> (std::io::Result<u32>, u32, Duration) {
        let mut errors = errors.into_iter();
        let mut made = 0;
        let started = Instant::now();
        let result = retry_reset(|| {
            made += 1;
            let next = errors.next();
            async move {
                match next {
                    Some(kind) => Err(Error::from(kind)),
                    None => Ok(made),
                }
            }
        })
        .await;
        (result, made, started.elapsed())
    }

    /// A pool for a listener that accepts and holds every connection.
    async fn held_pool() -> Pool {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = Endpoint::parse(&format!("http://{}", listener.local_addr().unwrap()));
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((tcp, _)) = listener.accept().await {
                held.push(tcp);
            }
        });
        Pool::new(
            endpoint.unwrap(),
            4,
            Timestamps::Read,
            true,
            Transport::default(),
        )
    }

    #[tokio::test]
    async fn read_buffers_go_back_to_the_pool_unless_shared_or_grown() {
        let pool = held_pool().await;
        let (mut conn, reused) = pool.checkout(pool.take_idle()).await.unwrap();
        assert!(!reused);
        conn.buf.reserve(READ_ROOM);
        let allocation = conn.buf.as_ptr();
        pool.checkin(conn);
        // The next exchange reads into the same allocation.
        let (mut conn, reused) = pool.checkout(pool.take_idle()).await.unwrap();
        assert!(reused);
        assert_eq!(conn.buf.as_ptr(), allocation);
        assert!(conn.buf.capacity() >= READ_ROOM);
        // A buffer an answer's bytes still point into is not kept (they would be
        // overwritten), nor is one grown for a large answer.
        conn.buf.extend_from_slice(b"answer");
        let answer = conn.buf.split_to(6).freeze();
        pool.checkin(conn);
        let (mut conn, _) = pool.checkout(pool.take_idle()).await.unwrap();
        assert_eq!(conn.buf.capacity(), 0);
        assert_eq!(&answer[..], b"answer");
        conn.buf.reserve(SPARE_MAX_BYTES + 1);
        pool.checkin(conn);
        let (conn, _) = pool.checkout(pool.take_idle()).await.unwrap();
        assert_eq!(conn.buf.capacity(), 0);
        // At most SPARE_BUFFERS are kept.
        let conns: Vec<Connection> = checkouts(&pool, SPARE_BUFFERS + 3).await;
        drop(conn);
        for mut c in conns {
            c.buf.reserve(READ_ROOM);
            pool.checkin(c);
        }
        assert_eq!(pool.idle.lock().unwrap().buffers.len(), SPARE_BUFFERS);
    }

    /// An idle connection whose server closed it is dropped by `take_idle`, before any
    /// request would be written to it, and the spare buffer taken with it stays in the pool.
    #[tokio::test]
    async fn a_closed_idle_connection_is_dropped_and_its_buffer_kept() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = Endpoint::parse(&format!("http://{}", listener.local_addr().unwrap()));
        let pool = Pool::new(
            endpoint.unwrap(),
            4,
            Timestamps::Read,
            true,
            Transport::default(),
        );
        let (mut conn, _) = pool.checkout(None).await.unwrap();
        let (server, _) = listener.accept().await.unwrap();
        conn.buf.reserve(READ_ROOM);
        let allocation = conn.buf.as_ptr();
        pool.checkin(conn);
        assert_eq!(
            (pool.idle(), pool.idle.lock().unwrap().buffers.len()),
            (1, 1)
        );
        drop(server);
        // The close reaches the idle connection.
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(
            pool.take_idle().is_none(),
            "a closed connection is not handed out"
        );
        assert_eq!(pool.idle(), 0);
        let buffers = &pool.idle.lock().unwrap().buffers;
        assert_eq!(buffers.len(), 1);
        assert_eq!(buffers[0].as_ptr(), allocation);
    }

    /// An answer nobody asked for reaches an idle connection after the pool's check and before
    /// the request is written (a proxy's late copy of the previous answer): the kernel's
    /// arrival stamp puts its bytes before the write, so it is refused as out of step, not
    /// taken as the request's answer.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn an_answer_sent_before_the_request_is_refused_as_out_of_step() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = Endpoint::parse(&format!("http://{}", listener.local_addr().unwrap()));
        let pool = Pool::new(
            endpoint.unwrap(),
            4,
            Timestamps::Arrival,
            true,
            Transport::default(),
        );
        let (mut conn, _) = pool.checkout(None).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        // Nagle's algorithm would hold the stray answer back until the request's packet
        // acknowledged the previous one.
        server.set_nodelay(true).unwrap();
        const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        const REQUEST: &[u8] = b"GET / HTTP/1.1\r\nhost: x\r\n\r\n";
        // Exchanges in step, until the kernel stamps arrivals (the first socket of the machine
        // to ask turns stamping on through deferred work).
        for _ in 0..1000 {
            conn.write_request(REQUEST, &[], None).await.unwrap();
            server.read_exact(&mut [0u8; REQUEST.len()]).await.unwrap();
            server.write_all(ANSWER).await.unwrap();
            let (_, mut body) = conn.read_head(&mut HeadProgress::default()).await.unwrap();
            while conn.body_data(&mut body).await.unwrap().is_some() {}
            if conn.reads.latest().unwrap().arrived.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        pool.checkin(conn);
        let mut conn = pool
            .take_idle()
            .expect("nothing arrived yet: the check passes");
        server.write_all(ANSWER).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        conn.write_request(REQUEST, &[], None).await.unwrap();
        let Err(WireError::OutOfStep(why)) = conn.read_head(&mut HeadProgress::default()).await
        else {
            panic!("an answer sent before the request was taken as its answer");
        };
        assert!(
            why.starts_with(&format!("{} bytes arrived ", ANSWER.len()))
                && why.contains(" µs before the request was written: they start `HTTP/1.1 200 OK"),
            "{why}"
        );
    }

    /// `n` connections checked out at once.
    async fn checkouts(pool: &Pool, n: usize) -> Vec<Connection> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(pool.checkout(pool.take_idle()).await.unwrap().0);
        }
        out
    }

    #[tokio::test]
    async fn a_reset_connect_is_tried_again_with_a_doubling_wait() {
        // Three resets: tried again after 10, 20 and 40 ms.
        let (result, made, took) = attempts(vec![ErrorKind::ConnectionReset; 3]).await;
        assert_eq!((result.unwrap(), made), (4, 4));
        assert!(took >= Duration::from_millis(70), "{took:?}");
        // Every retry used: the last reset is the answer.
        let (result, made, took) = attempts(vec![ErrorKind::ConnectionReset; 10]).await;
        assert_eq!(result.unwrap_err().kind(), ErrorKind::ConnectionReset);
        assert_eq!(made, 1 + CONNECT_RETRIES);
        assert!(took >= Duration::from_millis(630), "{took:?}");
    }

    #[tokio::test]
    async fn any_other_connect_error_fails_at_once() {
        for kind in [ErrorKind::ConnectionRefused, ErrorKind::TimedOut] {
            let (result, made, _) = attempts(vec![kind, ErrorKind::ConnectionReset]).await;
            assert_eq!(result.unwrap_err().kind(), kind);
            assert_eq!(made, 1, "{kind:?}");
        }
        // A reset, then a refusal: the refusal stops the retries.
        let errors = vec![ErrorKind::ConnectionReset, ErrorKind::ConnectionRefused];
        let (result, made, _) = attempts(errors).await;
        assert_eq!(result.unwrap_err().kind(), ErrorKind::ConnectionRefused);
        assert_eq!(made, 2);
    }

    #[test]
    fn base_urls() {
        let e = Endpoint::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!(e.address(), "127.0.0.1:8080");
        assert_eq!(e.authority, "127.0.0.1:8080");
        assert_eq!(e.path("/v1/chat/completions"), "/v1/chat/completions");
        let e = Endpoint::parse("http://localhost:9000/v1/").unwrap();
        assert_eq!(e.path("/v1/chat/completions"), "/v1/chat/completions");
        assert_eq!(e.path("/v1/models"), "/v1/models");
        let e = Endpoint::parse("http://[::1]/proxy/llm").unwrap();
        assert_eq!(e.address(), "::1:80");
        assert_eq!(e.authority, "[::1]");
        assert_eq!(e.path("/v1/models"), "/proxy/llm/v1/models");
        let e = Endpoint::parse("https://api.example.com/v1").unwrap();
        assert!(e.tls);
        assert_eq!(e.address(), "api.example.com:443");
        assert_eq!(
            Endpoint::parse("https://[::1]:8443")
                .unwrap()
                .connect_target(),
            "[::1]:8443"
        );
        for (url, why) in [
            ("127.0.0.1:8080", "no scheme"),
            ("localhost", "no scheme"),
            ("ftp://x", "scheme `ftp` is not http or https"),
            ("http://u:p@x:1", "credentials"),
            ("http://x:1/?a=b", "query string"),
            ("http://x:1 2", "not a URL"),
        ] {
            let err = Endpoint::parse(url).unwrap_err().to_string();
            assert!(err.contains(why) && err.contains(url), "{url}: {err}");
        }
    }
}
