//! The HTTP server: listening, routing, and handing chat completions to the batch scheduler.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::api_error::ApiError;
use crate::body::SimBody;
use crate::fault::{self, FaultKind, Injection};
use crate::metrics::ServerMetrics;
use crate::prompt::ChatRequest;
use crate::responder::{self, Responder};
use crate::rng::SplitMix64;
use crate::scheduler::{self, Reply, Request as Job, SchedulerHandle};
use crate::session_prompts::SessionPrompts;
use crate::stamp_log::{StampLog, Who};
use crate::stream::ChunkMeta;
use crate::timing::Generation;
use crate::tokens::TokenCounter;
use crate::wire::{cipher_io, wire_io, TlsWire, WireStamps};
use crate::{ServeAs, SimConfig, SimError};

/// Largest request body accepted.
const MAX_BODY_BYTES: usize = 64 << 20;

/// Shared by all connections.
struct State {
    model: String,
    ctx_size: u32,
    serve_as: ServeAs,
    counter: Arc<dyn TokenCounter>,
    responder: Box<dyn Responder>,
    scheduler: SchedulerHandle,
    served: Arc<AtomicU64>,
    requests: AtomicU64,
    id_seed: u64,
    counters: Arc<Counters>,
    /// `GET /metrics` (llama.cpp's page).
    metrics: Arc<ServerMetrics>,
    /// Injected faults by 1-based chat-completions request number.
    faults: HashMap<u64, FaultKind>,
    /// Ends stalls when the server stops.
    stop: watch::Receiver<bool>,
    /// [`SimConfig::request_log`], open.
    request_log: Option<std::sync::Mutex<std::fs::File>>,
    /// Each session's last prompt, when the counter can split after it.
    prompts: Option<SessionPrompts>,
}

/// What the server counts, for [`SimHandle`] and `GET /agentload/stats`.
#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    /// TLS handshakes that failed (no request came through them).
    tls_failures: AtomicU64,
    chat_requests: AtomicU64,
    /// Body bytes of the chat requests, by their `Content-Length`.
    chat_request_bytes: AtomicU64,
}

/// A running simulator. Dropping it also stops the server (gracefully, like
/// [`SimHandle::shutdown`], but without waiting).
#[derive(Debug)]
pub struct SimHandle {
    addr: SocketAddr,
    /// HTTPS.
    tls: bool,
    served: Arc<AtomicU64>,
    counters: Arc<Counters>,
    stop: watch::Sender<bool>,
    server: JoinHandle<()>,
}

impl SimHandle {
    /// The bound address (with the actual port when port 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL, e.g. `http://127.0.0.1:43125` (`https://` with TLS; append
    /// `/v1/chat/completions`).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// TLS handshakes that failed so far (a client that did not trust the certificate, or
    /// had no client certificate where one is required).
    pub fn tls_failures(&self) -> u64 {
        self.counters.tls_failures.load(Ordering::SeqCst)
    }

    /// Chat completion requests answered so far: completed answers and error answers (a stream
    /// counts when its closing events are sent; one the client abandoned does not count).
    pub fn requests_served(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }

    /// TCP connections accepted so far.
    pub fn connections_accepted(&self) -> u64 {
        self.counters.connections.load(Ordering::SeqCst)
    }

    /// Chat-completions requests received so far (the count faults' `N` refers to).
    pub fn chat_requests_received(&self) -> u64 {
        self.counters.chat_requests.load(Ordering::SeqCst)
    }

    /// Stops accepting connections, lets in-flight requests (streams included) finish, closes
    /// idle connections, and returns when every connection is done.
    pub async fn shutdown(self) {
        // Fails only if the server task already ended.
        let _ = self.stop.send(true);
        // A panicked server task has nothing left to wait for.
        let _ = self.server.await;
    }
}

/// Starts the simulator on `addr` (port 0 picks a free port): loads the responder's input,
/// binds, and serves until [`SimHandle::shutdown`].
///
/// Endpoints: `POST /v1/chat/completions` (also `/chat/completions`), `GET /v1/models` (also
/// `/models`), `GET /health`, `GET /metrics` (llama.cpp's Prometheus page), `GET
/// /agentload/stats` (`{"connections_accepted", "tls_failures", "chat_requests_received",
/// "chat_request_bytes", "requests_served"}`); anything else is a 404 with a JSON error.
pub async fn start(
    config: SimConfig,
    counter: Arc<dyn TokenCounter>,
    addr: SocketAddr,
) -> Result<SimHandle, SimError> {
    config.validate()?;
    let tls = config
        .tls
        .as_ref()
        .map(crate::tls::server_config)
        .transpose()?;
    let responder = responder::build(&config.responder).await?;
    let listener = listen(addr).map_err(|source| SimError::Bind { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| SimError::Bind { addr, source })?;
    let served = Arc::new(AtomicU64::new(0));
    let counters = Arc::new(Counters::default());
    let metrics = Arc::new(ServerMetrics::default());
    let (stop, stopped) = watch::channel(false);
    let id_seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let request_log = match &config.request_log {
        Some(path) => Some(std::sync::Mutex::new(std::fs::File::create(path).map_err(
            |source| SimError::RequestLog {
                path: path.clone(),
                source,
            },
        )?)),
        None => None,
    };
    let stamps = match &config.request_stamps {
        Some(path) => Some(StampLog::create(path)?),
        None => None,
    };
    let state = Arc::new(State {
        request_log,
        model: config.model.clone(),
        ctx_size: config.ctx_size,
        serve_as: config.serve_as,
        scheduler: scheduler::spawn(
            &config,
            Arc::clone(&counter),
            Arc::clone(&served),
            Arc::clone(&metrics),
            stamps,
        ),
        metrics,
        responder,
        served: Arc::clone(&served),
        requests: AtomicU64::new(0),
        id_seed,
        counters: Arc::clone(&counters),
        faults: config.faults.iter().map(|f| (f.request, f.kind)).collect(),
        stop: stopped.clone(),
        prompts: counter.reuses_prefixes().then(SessionPrompts::new),
        counter,
    });
    let server = tokio::spawn(accept_loop(listener, state, stopped, tls.clone()));
    Ok(SimHandle {
        addr,
        tls: tls.is_some(),
        served,
        counters,
        stop,
        server,
    })
}

/// The connections waiting to be accepted, at most (the kernel caps it at
/// `net.core.somaxconn`): thousands of agents connect at once when a sweep
/// level starts, and a full queue resets their connects.
const BACKLOG: u32 = 65_535;

/// A listening socket on `addr` with a deep accept queue.
fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

async fn accept_loop(
    listener: TcpListener,
    state: Arc<State>,
    mut stopped: watch::Receiver<bool>,
    tls: Option<Arc<rustls::ServerConfig>>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            // A value or a dropped handle both mean stop.
            _ = stopped.changed() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                // Accept errors (e.g. too many open files) are per connection; keep serving.
                if let Ok((stream, _)) = accepted {
                    state.counters.connections.fetch_add(1, Ordering::SeqCst);
                    if state.faults.values().any(|&k| k == FaultKind::Reset) {
                        // The `reset` fault aborts its connection: closing it then sends RST.
                        let _ = stream.set_zero_linger();
                    }
                    let (state, stopped) = (Arc::clone(&state), stopped.clone());
                    match &tls {
                        None => connections.spawn(serve_plain(stream, state, stopped)),
                        Some(tls) => connections.spawn(serve_tls(stream, state, stopped, tls.clone())),
                    };
                }
            }
        }
    }
    drop(listener);
    while connections.join_next().await.is_some() {}
}

async fn serve_plain(stream: TcpStream, state: Arc<State>, stopped: watch::Receiver<bool>) {
    // Token chunks are small writes that must leave at once.
    let _ = stream.set_nodelay(true);
    let (io, wire) = wire_io(stream);
    serve_connection(io, wire, state, stopped).await;
}

/// A TLS connection: the handshake (bounded, so a client that never finishes it does not hold
/// the task), then HTTP over the stamped TLS stream.
async fn serve_tls(
    stream: TcpStream,
    state: Arc<State>,
    mut stopped: watch::Receiver<bool>,
    tls: Arc<rustls::ServerConfig>,
) {
    let _ = stream.set_nodelay(true);
    let (io, cipher, wire) = cipher_io(stream);
    let handshake = tokio::time::timeout(
        TLS_HANDSHAKE_TIMEOUT,
        tokio_rustls::TlsAcceptor::from(tls).accept(io),
    );
    let accepted = tokio::select! {
        accepted = handshake => accepted,
        _ = stopped.changed() => return,
    };
    match accepted {
        Ok(Ok(io)) => serve_connection(TlsWire::new(io, cipher), wire, state, stopped).await,
        _ => {
            state.counters.tls_failures.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// How long a client may take over its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

async fn serve_connection<I>(
    io: I,
    wire: Arc<WireStamps>,
    state: Arc<State>,
    mut stopped: watch::Receiver<bool>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let state = Arc::clone(&state);
        let wire = Arc::clone(&wire);
        async move { Ok::<_, Infallible>(route(state, request, wire).await) }
    });
    let connection = http1::Builder::new().serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    // Connection errors (client resets) end this connection only.
    tokio::select! {
        _ = connection.as_mut() => {}
        _ = stopped.changed() => {
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        }
    }
}

fn json_response(status: u16, body: &Value) -> Response<SimBody> {
    let mut response = Response::new(SimBody::full(body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    response
}

fn error_response(error: &ApiError) -> Response<SimBody> {
    json_response(error.status, &error.body())
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

async fn route(
    state: Arc<State>,
    request: Request<Incoming>,
    wire: Arc<WireStamps>,
) -> Response<SimBody> {
    // The first read of the request's bytes (before hyper parsed its head).
    let received = wire
        .request_at()
        .map_or_else(Instant::now, Instant::from_std);
    match (request.method(), request.uri().path()) {
        (&Method::POST, "/v1/chat/completions" | "/chat/completions") => {
            let n = state.counters.chat_requests.fetch_add(1, Ordering::SeqCst) + 1;
            let length = request
                .headers()
                .get(hyper::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
            state
                .counters
                .chat_request_bytes
                .fetch_add(length.unwrap_or(0), Ordering::Relaxed);
            let fault = state.faults.get(&n).map(|&kind| (kind, n));
            match chat(&state, request, received, fault, wire).await {
                Ok(response) => response,
                Err(error) => {
                    state.served.fetch_add(1, Ordering::SeqCst);
                    error_response(&error)
                }
            }
        }
        (&Method::GET, "/v1/models" | "/models") => {
            let model = match state.serve_as {
                // llama-server's model facts; `n_ctx` is what clients read as the
                // served context (AA's preflight does).
                ServeAs::LlamaCpp => json!({
                    "id": state.model,
                    "object": "model",
                    "created": unix_now(),
                    "owned_by": "llamacpp",
                    "meta": {"n_ctx": state.ctx_size, "n_ctx_train": state.ctx_size},
                }),
                ServeAs::Vllm => json!({
                    "id": state.model,
                    "object": "model",
                    "created": unix_now(),
                    "owned_by": "vllm",
                    "max_model_len": state.ctx_size,
                }),
            };
            json_response(200, &json!({"object": "list", "data": [model]}))
        }
        // llama-server's server facts: one slot's window.
        (&Method::GET, "/props") if state.serve_as == ServeAs::LlamaCpp => json_response(
            200,
            &json!({
                "default_generation_settings": {"n_ctx": state.ctx_size},
                "model_path": state.model,
            }),
        ),
        (&Method::GET, "/health") => json_response(200, &json!({ "status": "ok" })),
        (&Method::GET, "/metrics") => {
            let mut response = Response::new(SimBody::full(state.metrics.page()));
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            response
        }
        (&Method::GET, "/agentload/stats") => json_response(
            200,
            &json!({
                "connections_accepted": state.counters.connections.load(Ordering::SeqCst),
                "tls_failures": state.counters.tls_failures.load(Ordering::SeqCst),
                "chat_requests_received": state.counters.chat_requests.load(Ordering::SeqCst),
                "chat_request_bytes": state.counters.chat_request_bytes.load(Ordering::Relaxed),
                "requests_served": state.served.load(Ordering::SeqCst),
            }),
        ),
        _ => error_response(&ApiError::with_status(404, "File Not Found")),
    }
}

/// One line of the request log: `{"n", "session", "body", "bytes", "sha256"}`,
/// `bytes` and `sha256` of the body exactly as it came (so two clients' bodies
/// compare byte for byte). A failed write is reported once per request on
/// stderr; the request is still answered.
fn log_request(
    log: &std::sync::Mutex<std::fs::File>,
    n: u64,
    session: Option<&str>,
    raw: &[u8],
    body: &Value,
) {
    use sha2::Digest;
    use std::io::Write;
    let sha256 = hex::encode(sha2::Sha256::digest(raw));
    let line =
        json!({"n": n, "session": session, "body": body, "bytes": raw.len(), "sha256": sha256});
    let mut line = line.to_string();
    line.push('\n');
    let mut file = log
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Err(e) = file.write_all(line.as_bytes()) {
        eprintln!("agentload sim: request {n} not logged: {e}");
    }
}

/// Answers one chat completion: prepares the job (prompt and answer tokens) and hands it to the
/// scheduler. Errors (including the context-size check, made once a slot is taken, as llama.cpp
/// does) are answered before any streaming starts. `fault` is the fault injected into this
/// request (request `n`), if any.
async fn chat(
    state: &Arc<State>,
    request: Request<Incoming>,
    received: Instant,
    fault: Option<(FaultKind, u64)>,
    wire: Arc<WireStamps>,
) -> Result<Response<SimBody>, ApiError> {
    let session = request
        .headers()
        .get("x-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = Limited::new(request.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
        .map_err(|e| ApiError::invalid_request(format!("cannot read body: {e}")))?
        .to_bytes();
    let raw = body;
    let body: Value = serde_json::from_slice(&raw)
        .map_err(|e| ApiError::invalid_request(format!("invalid JSON body: {e}")))?;
    let n = state.requests.fetch_add(1, Ordering::Relaxed);
    if let Some(log) = &state.request_log {
        log_request(log, n, session.as_deref(), &raw, &body);
    }
    let chat = ChatRequest::parse(&body)?;
    let mut ids = SplitMix64::new(state.id_seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut answer = match state.responder.answer(&chat, session.as_deref(), &mut ids) {
        Ok(answer) => answer,
        Err(rejection) => {
            tokio::time::sleep(rejection.stall).await;
            return Err(rejection.error);
        }
    };
    let prompt = chat.render();
    let prompt_ends = match (&state.prompts, &session) {
        (Some(prompts), Some(session)) => prompts.ends(&*state.counter, session, &prompt),
        _ => state.counter.ends(&prompt, 0),
    };
    let n_prompt = u32::try_from(prompt_ends.len()).unwrap_or(u32::MAX);
    let mut spans = answer.spans(&*state.counter);
    let max_tokens = if answer.uncapped {
        None
    } else {
        chat.max_tokens
    };
    if chat.ignore_eos {
        // The model does not stop at its end of answer: it generates the whole budget.
        let budget = Generation::budget(max_tokens, n_prompt, state.ctx_size);
        answer.extend_to(&mut spans, budget as usize);
    }
    let gen = Generation::plan(
        u32::try_from(spans.len()).unwrap_or(u32::MAX),
        max_tokens,
        n_prompt,
        state.ctx_size,
    );
    let meta = ChunkMeta {
        id: format!("chatcmpl-{}", ids.alphanumeric(32)),
        created: unix_now(),
        model: chat.model.clone().unwrap_or_else(|| state.model.clone()),
    };
    let mut altered = None;
    if let Some((kind, n)) = fault {
        match fault::inject(kind, n, chat.stream, &meta, &state.stop) {
            Injection::Replace(response) => {
                state.served.fetch_add(1, Ordering::SeqCst);
                return Ok(response);
            }
            Injection::Alter(f) => altered = Some(Box::new(f)),
        }
    }
    let reply_meta = meta.clone();
    let gone = || ApiError::with_status(503, "the simulator is shutting down");
    let job = |reply| Job {
        answer,
        spans,
        gen,
        meta,
        received,
        enqueued: Instant::now(),
        prompt,
        prompt_ends,
        cache_prompt: chat.cache_prompt,
        reply,
        who: Who {
            n,
            session: session.clone(),
        },
    };

    if !chat.stream {
        let (done, finished) = oneshot::channel();
        state
            .scheduler
            .submit(job(Reply::Whole { done }))
            .map_err(|_| gone())?;
        let done = finished.await.map_err(|_| gone())??;
        let body = reply_meta.completion(
            done.transcript.message(),
            &done.finish_reason,
            done.usage,
            done.timings,
            done.stamps,
        );
        return Ok(json_response(200, &body));
    }

    let (tx, mut rx) = mpsc::unbounded_channel();
    let (admitted, admission) = oneshot::channel();
    state
        .scheduler
        .submit(job(Reply::Stream {
            admitted: Some(admitted),
            tx,
            include_usage: chat.include_usage,
        }))
        .map_err(|_| gone())?;
    admission.await.map_err(|_| gone())??;
    // Like llama-server, the response head goes out with the first result (first token).
    let first = rx.recv().await;
    let mut response = Response::new(SimBody::Stream {
        first,
        rx,
        fault: altered,
        wire,
    });
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    Ok(response)
}
