//! The coordinator: shard 0 serves it beside its own load. It admits the
//! run's shards, releases each phase's start barrier once every shard is
//! there, stores their uploads (synced, then acknowledged with size and
//! digest), notices a shard that falls silent, and then serves the merged
//! results. A shard missing at a barrier's deadline, or silent before its
//! upload completed, fails the run closed: the cause names the shard.
//!
//! It serves whoever connects, so it holds against them: a shard's calls
//! carry its registration's token; JSON bodies, connections, request heads'
//! time and the run's uploads are bounded; only the files a shard uploads
//! are stored, under names of its own; a shard is done only with the files
//! it uploaded, its header among them and of this run; and a heartbeat's
//! values are bounded, their sums saturating.

use crate::clock::Offset;
use crate::protocol::*;
use crate::ShardError;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{HeaderMap, Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};

/// The run's upload budget unless told otherwise: 64 GiB.
pub const DEFAULT_UPLOAD_BUDGET: u64 = 64 << 30;
/// Connections served at once; past it, a new one is closed as it comes.
const MAX_CONNECTIONS: usize = 512;
/// A connection that has not sent a whole request head this long after it
/// began to wait for one is closed.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The first and the longest wait after an accept fails (no descriptor
/// free: EMFILE), doubling between them.
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(10), Duration::from_secs(1));
/// An offset's uncertainty, at most: the start barrier's lead is eight
/// times the largest, so this bounds it to 40 s.
const MAX_UNCERTAINTY_NS: u64 = 5_000_000_000;
/// A phase name's bytes, at most.
const MAX_PHASE_BYTES: usize = 64;
/// Buckets of a heartbeat's TTFT histogram, at most (the layout has about
/// 23,000).
const MAX_LIVE_BUCKETS: usize = 32_768;
/// A `shard.json` read at `done`, at most.
const MAX_HEADER_BYTES: u64 = 16 << 20;

/// What the coordinator admits and how long it waits.
#[derive(Debug, Clone)]
pub struct Setup {
    pub count: u32,
    pub run_id: String,
    pub config_digest: String,
    /// Uploads go to `dir/shards/<i>/`; results are served from `dir`.
    pub dir: PathBuf,
    /// How long a barrier waits, from the first arrival, for a shard that
    /// never joined (a joined shard is waited for while it is alive).
    pub barrier_timeout: Duration,
    /// How long a shard may stay silent before it counts as lost.
    pub silence_timeout: Duration,
    /// Bytes the run's uploads may take together (a file uploaded again
    /// gives its earlier bytes back).
    pub upload_budget: u64,
}

#[derive(Debug)]
struct Shard {
    host: String,
    /// What its calls carry ([`TOKEN_HEADER`]).
    token: String,
    /// The files it uploaded, by path.
    stored: BTreeMap<String, Stored>,
    offset: Offset,
    seen: Instant,
    phase: Option<String>,
    uploaded: Option<Vec<Stored>>,
    /// Silent past the timeout before its upload completed.
    lost: bool,
    /// Its progress in `phase`, as last reported.
    live: Option<Live>,
}

#[derive(Debug, Default)]
struct Barrier {
    first: Option<Instant>,
    arrived: BTreeSet<u32>,
    start_ns: Option<u64>,
}

#[derive(Debug, Default)]
struct Inner {
    shards: BTreeMap<u32, Shard>,
    barriers: BTreeMap<String, Barrier>,
    /// The phase-end barriers (a sweep level's end), by phase.
    ends: BTreeMap<String, Barrier>,
    failed: Option<String>,
    results: Option<Vec<Stored>>,
    /// Bytes the uploads take (stored, or being written).
    upload_bytes: u64,
    /// Uploads begun (each one's temporary file has its number).
    uploads_begun: u64,
}

struct State {
    setup: Setup,
    inner: Mutex<Inner>,
    /// Bumped on every change that a waiting call may be waiting for.
    changed: watch::Sender<u64>,
}

impl State {
    fn bump(&self) {
        self.changed.send_modify(|n| *n += 1);
    }

    fn fail(&self, inner: &mut Inner, why: String) {
        if inner.failed.is_none() {
            inner.failed = Some(why);
        }
        self.bump();
    }
}

/// A running coordinator. It serves from a thread and runtime of its own, so
/// that the shard's own load (or a plugin compile blocking a runtime worker)
/// never delays an answer or the silence watch. Dropping it stops it.
pub struct Coordinator {
    state: Arc<State>,
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// The shards' uploads, as far as they came.
#[derive(Debug)]
pub struct Uploads {
    /// The shards whose upload completed, with their files.
    pub complete: BTreeMap<u32, Vec<Stored>>,
    /// Why the run failed (a shard lost), when it did.
    pub failed: Option<String>,
}

impl Coordinator {
    /// Listens on `listen` (port 0: any) and serves until dropped.
    pub fn start(listen: SocketAddr, setup: Setup) -> Result<Coordinator, ShardError> {
        let io = |e: std::io::Error| {
            ShardError::Io(format!("coordinator cannot listen on {listen}: {e}"))
        };
        let listener = std::net::TcpListener::bind(listen).map_err(io)?;
        listener.set_nonblocking(true).map_err(io)?;
        let addr = listener.local_addr().map_err(io)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(io)?;
        let state = Arc::new(State {
            setup,
            inner: Mutex::new(Inner::default()),
            changed: watch::channel(0).0,
        });
        let (stop, mut stopped) = watch::channel(false);
        let served = state.clone();
        let thread = std::thread::Builder::new()
            .name("agentload-coordinator".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::spawn(watch_silence(Arc::downgrade(&served)));
                    tokio::select! {
                        _ = serve(listener, served) => {}
                        _ = stopped.changed() => {}
                    }
                });
            })
            .map_err(io)?;
        Ok(Coordinator {
            state,
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits until every shard's upload is complete; when the run has
    /// failed, until every shard still alive has uploaded (the lost ones
    /// and those that never joined are left out, named in the cause).
    pub async fn uploads(&self) -> Uploads {
        let mut changed = self.state.changed.subscribe();
        loop {
            {
                let inner = self.state.inner.lock().expect("coordinator lock");
                let complete: BTreeMap<u32, Vec<Stored>> = inner
                    .shards
                    .iter()
                    .filter_map(|(i, s)| s.uploaded.clone().map(|f| (*i, f)))
                    .collect();
                let settled = inner
                    .shards
                    .values()
                    .all(|s| s.uploaded.is_some() || s.lost);
                let all = complete.len() == self.state.setup.count as usize;
                if all || (inner.failed.is_some() && settled) {
                    return Uploads {
                        complete,
                        failed: inner.failed.clone(),
                    };
                }
            }
            if changed.changed().await.is_err() {
                unreachable!("the state holds the sender");
            }
        }
    }

    /// Counts shard `index` as lost (its own upload failed, say): the run
    /// fails with `why`, and [`Coordinator::uploads`] no longer waits for it.
    pub fn give_up(&self, index: u32, why: String) {
        let mut inner = self.state.inner.lock().expect("coordinator lock");
        if let Some(shard) = inner.shards.get_mut(&index) {
            shard.lost = true;
        }
        self.state.fail(&mut inner, why);
    }

    /// Serves the merged run's `files` (paths relative to the directory) at `/v1/results`.
    pub fn publish(&self, files: Vec<Stored>) {
        self.state.inner.lock().expect("coordinator lock").results = Some(files);
        self.state.bump();
    }

    /// Shards this coordinator has seen, with their clock offsets.
    pub fn status(&self) -> Status {
        status(&self.state)
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn status(state: &State) -> Status {
    let inner = state.inner.lock().expect("coordinator lock");
    Status {
        run_id: state.setup.run_id.clone(),
        count: state.setup.count,
        shards: inner
            .shards
            .iter()
            .map(|(i, s)| ShardStatus {
                index: *i,
                host: s.host.clone(),
                offset: s.offset,
                silent_s: s.seen.elapsed().as_secs_f64(),
                phase: s.phase.clone(),
                uploaded: s.uploaded.is_some(),
            })
            .collect(),
        failed: inner.failed.clone(),
        results: inner.results.is_some(),
        live: live_total(&inner),
    }
}

/// The progress of the phase most shards report, added up.
fn live_total(inner: &Inner) -> Option<LiveTotal> {
    let mut phases: BTreeMap<&str, u32> = BTreeMap::new();
    for s in inner.shards.values().filter(|s| s.live.is_some()) {
        *phases.entry(s.phase.as_deref()?).or_default() += 1;
    }
    let phase = phases.iter().max_by_key(|(_, n)| **n)?.0.to_string();
    let mut total = LiveTotal {
        phase: phase.clone(),
        shards_reporting: 0,
        completed: 0,
        failed: 0,
        output_tokens: 0,
        ttft_p50_ms: None,
        ttft_p99_ms: None,
    };
    let mut ttft = crate::header::live_histogram();
    for s in inner
        .shards
        .values()
        .filter(|s| s.phase.as_deref() == Some(&phase))
    {
        let Some(live) = &s.live else { continue };
        total.shards_reporting += 1;
        total.completed = total.completed.saturating_add(live.completed);
        total.failed = total.failed.saturating_add(live.failed);
        total.output_tokens = total.output_tokens.saturating_add(live.output_tokens);
        crate::header::add(&mut ttft, &live.ttft_us);
    }
    if !ttft.is_empty() {
        total.ttft_p50_ms = Some(ttft.value_at_quantile(0.5) as f64 / 1e3);
        total.ttft_p99_ms = Some(ttft.value_at_quantile(0.99) as f64 / 1e3);
    }
    Some(total)
}

/// Marks the run failed when a registered shard goes silent before its
/// upload completed, or when a barrier's deadline passes.
async fn watch_silence(state: std::sync::Weak<State>) {
    loop {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let Some(state) = state.upgrade() else { return };
        let mut inner = state.inner.lock().expect("coordinator lock");
        let timeout = state.setup.silence_timeout;
        let mut silent = Vec::new();
        for (i, s) in inner.shards.iter_mut() {
            if s.uploaded.is_none() && !s.lost && s.seen.elapsed() > timeout {
                s.lost = true;
                silent.push(format!("shard {i} ({})", s.host));
            }
        }
        if !silent.is_empty() && inner.failed.is_some() {
            // Settles `uploads` once the last live shard is accounted for.
            state.bump();
            continue;
        }
        if inner.failed.is_some() {
            continue;
        }
        if !silent.is_empty() {
            let why = format!(
                "{} stopped answering (silent for more than {:.1} s) before its upload completed; \
                 its sessions are missing from the merged run",
                silent.join(", "),
                state.setup.silence_timeout.as_secs_f64()
            );
            state.fail(&mut inner, why);
            continue;
        }
        // A barrier waits for every live shard (one still busy with its
        // previous phase is alive: its silence is what would fail it); past
        // the deadline, a shard that never joined fails the run.
        let count = state.setup.count;
        let joined: BTreeSet<u32> = inner.shards.keys().copied().collect();
        let late: Option<String> = inner.barriers.iter().find_map(|(phase, b)| {
            let first = b.first?;
            let missing: Vec<String> = (0..count)
                .filter(|i| !b.arrived.contains(i) && !joined.contains(i))
                .map(|i| i.to_string())
                .collect();
            (b.start_ns.is_none()
                && !missing.is_empty()
                && first.elapsed() > state.setup.barrier_timeout)
                .then(|| {
                    format!(
                        "shard(s) {} never joined: missing at the {phase} start barrier after {:.0} s",
                        missing.join(", "),
                        state.setup.barrier_timeout.as_secs_f64()
                    )
                })
        });
        if let Some(why) = late {
            state.fail(&mut inner, why);
        }
    }
}

/// Accepts and serves connections: at most [`MAX_CONNECTIONS`] at once (one
/// past it is closed as it comes), each closed when a request head takes
/// longer than [`HEAD_TIMEOUT`]; a failed accept (EMFILE) waits before the
/// next, doubling up to a second, rather than spinning.
async fn serve(listener: TcpListener, state: Arc<State>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut backoff = ACCEPT_BACKOFF.0;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(ACCEPT_BACKOFF.1);
                continue;
            }
        };
        backoff = ACCEPT_BACKOFF.0;
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue; // dropped: closed
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| {
                let state = state.clone();
                async move { Ok::<_, std::convert::Infallible>(route(&state, req).await) }
            });
            let _ = http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEAD_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            drop(slot);
        });
    }
}

type Answer = Response<Full<Bytes>>;

fn json<T: serde::Serialize>(status: StatusCode, body: &T) -> Answer {
    let mut r = Response::new(Full::new(Bytes::from(
        serde_json::to_vec(body).expect("plain data serializes"),
    )));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// A refused call: its status and the message the caller sees.
struct Refusal(StatusCode, String);

fn error(status: StatusCode, why: impl Into<String>) -> Refusal {
    Refusal(status, why.into())
}

/// A JSON body of at most [`MAX_JSON_BYTES`].
async fn read_json<T: serde::de::DeserializeOwned>(body: Incoming) -> Result<T, Refusal> {
    let body = http_body_util::Limited::new(body, MAX_JSON_BYTES)
        .collect()
        .await
        .map_err(|e| match e.is::<http_body_util::LengthLimitError>() {
            true => error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("a call's JSON body is at most {MAX_JSON_BYTES} bytes"),
            ),
            false => error(StatusCode::BAD_REQUEST, e.to_string()),
        })?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|e| error(StatusCode::BAD_REQUEST, e.to_string()))
}

/// The registration token a call carries ("" when none).
fn token(headers: &HeaderMap) -> &str {
    headers
        .get(TOKEN_HEADER)
        .and_then(|t| t.to_str().ok())
        .unwrap_or("")
}

async fn route(state: &Arc<State>, req: Request<Incoming>) -> Answer {
    let path = req.uri().path().to_owned();
    let answer = match (req.method().clone(), path.as_str()) {
        (Method::GET, "/v1/clock") => Ok(json(
            StatusCode::OK,
            &ClockReading {
                mono_ns: agentload_wire::clock::clock_monotonic_ns(),
            },
        )),
        (Method::POST, "/v1/register") => register(state, req.into_body()).await,
        (Method::POST, "/v1/barrier") => barrier(state, req).await,
        (Method::POST, "/v1/phase-end") => phase_end(state, req).await,
        (Method::POST, "/v1/heartbeat") => heartbeat(state, req).await,
        (Method::POST, "/v1/done") => done(state, req).await,
        (Method::GET, "/v1/status") => Ok(json(StatusCode::OK, &status(state))),
        (Method::GET, "/v1/results") => results(state),
        (Method::GET, p) if p.starts_with("/v1/results/") => {
            result_file(state, &p["/v1/results/".len()..]).await
        }
        (Method::PUT, p) if p.starts_with("/v1/upload/") => {
            upload(state, &p["/v1/upload/".len()..], req).await
        }
        _ => Err(error(
            StatusCode::NOT_FOUND,
            format!("no such call: {path}"),
        )),
    };
    answer.unwrap_or_else(|Refusal(status, error)| json(status, &ErrorBody { error }))
}

/// Marks shard `index` alive; an unknown shard, or a call without its
/// registration's token, is refused.
fn seen<'a>(inner: &'a mut Inner, index: u32, token: &str) -> Result<&'a mut Shard, Refusal> {
    let shard = inner.shards.get_mut(&index).ok_or_else(|| {
        error(
            StatusCode::CONFLICT,
            format!("shard {index} has not registered"),
        )
    })?;
    if token != shard.token {
        return Err(error(
            StatusCode::FORBIDDEN,
            format!("the call does not carry shard {index}'s registration token"),
        ));
    }
    shard.seen = Instant::now();
    Ok(shard)
}

/// Refuses an offset whose uncertainty would put a barrier's start minutes
/// away, and a phase name longer than any.
fn bounded(offset: &Offset, phase: &str) -> Result<(), Refusal> {
    if offset.uncertainty_ns > MAX_UNCERTAINTY_NS {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!(
                "an offset uncertainty of {} ns is over the {MAX_UNCERTAINTY_NS} ns a shard can have",
                offset.uncertainty_ns
            ),
        ));
    }
    if phase.len() > MAX_PHASE_BYTES {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!("a phase name is at most {MAX_PHASE_BYTES} bytes"),
        ));
    }
    Ok(())
}

/// A new registration's token: 128 bits from the kernel's random source.
fn new_token() -> Result<String, Refusal> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| {
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("/dev/urandom: {e}"),
            )
        })?;
    Ok(hex::encode(bytes))
}

async fn register(state: &Arc<State>, body: Incoming) -> Result<Answer, Refusal> {
    let r: Register = read_json(body).await?;
    let setup = &state.setup;
    let refuse = |why: String| Err(error(StatusCode::CONFLICT, why));
    let Some(offset) = Offset::estimate(&r.samples) else {
        return refuse(format!("shard {} sent no clock samples", r.index));
    };
    if r.run_id != setup.run_id {
        return refuse(format!(
            "shard {} belongs to run {}, this coordinator runs {}",
            r.index, r.run_id, setup.run_id
        ));
    }
    if r.config_digest != setup.config_digest {
        return refuse(format!(
            "shard {} runs config {}, the coordinator's is {}: every shard must run the same config",
            r.index, r.config_digest, setup.config_digest
        ));
    }
    if r.count != setup.count || r.index >= setup.count {
        return refuse(format!(
            "shard {} of {} does not fit a run of {} shards",
            r.index, r.count, setup.count
        ));
    }
    let mut inner = state.inner.lock().expect("coordinator lock");
    if let Some(earlier) = inner.shards.get(&r.index) {
        if earlier.host != r.host && earlier.seen.elapsed() < setup.silence_timeout {
            return refuse(format!(
                "shard {} is already registered from {} (a second pod with the same index?)",
                r.index, earlier.host
            ));
        }
    }
    let token = new_token()?;
    inner.shards.insert(
        r.index,
        Shard {
            host: r.host,
            token: token.clone(),
            stored: BTreeMap::new(),
            offset,
            seen: Instant::now(),
            phase: None,
            uploaded: None,
            lost: false,
            live: None,
        },
    );
    state.bump();
    Ok(json(StatusCode::OK, &Registered { token }))
}

/// Lead time between the last arrival and the start: enough for every
/// shard to hear the answer and sleep until it.
fn lead(inner: &Inner) -> Duration {
    let worst = inner
        .shards
        .values()
        .map(|s| s.offset.uncertainty_ns)
        .max()
        .unwrap_or(0);
    Duration::from_millis(200).max(Duration::from_nanos(worst.saturating_mul(8)))
}

/// The two points every shard meets at: a phase's start and a sweep level's end.
#[derive(Debug, Clone, Copy)]
enum Meeting {
    Start,
    End,
}

impl Inner {
    fn meetings(&mut self, meeting: Meeting) -> &mut BTreeMap<String, Barrier> {
        match meeting {
            Meeting::Start => &mut self.barriers,
            Meeting::End => &mut self.ends,
        }
    }
}

/// A phase's start: answers every shard with one start time once all have arrived.
async fn barrier(state: &Arc<State>, req: Request<Incoming>) -> Result<Answer, Refusal> {
    let start_ns = meet(state, req, Meeting::Start).await?;
    Ok(json(StatusCode::OK, &Start { start_ns }))
}

/// A sweep level's end: answers every shard with one end time once all have arrived (a
/// shard whose end rules hold keeps its load going until then). A shard arriving again
/// (its phase ended another way after it arrived) is the same arrival.
async fn phase_end(state: &Arc<State>, req: Request<Incoming>) -> Result<Answer, Refusal> {
    let end_ns = meet(state, req, Meeting::End).await?;
    Ok(json(StatusCode::OK, &End { end_ns }))
}

/// Records a shard's arrival at `meeting` of its phase and waits for the time
/// every shard is given once the last has arrived: the lead after that arrival.
async fn meet(
    state: &Arc<State>,
    req: Request<Incoming>,
    meeting: Meeting,
) -> Result<u64, Refusal> {
    let (head, body) = req.into_parts();
    let a: Arrive = read_json(body).await?;
    bounded(&a.offset, &a.phase)?;
    let mut changed = state.changed.subscribe();
    {
        let mut inner = state.inner.lock().expect("coordinator lock");
        let shard = seen(&mut inner, a.index, token(&head.headers))?;
        shard.offset = a.offset;
        if let Meeting::Start = meeting {
            shard.phase = Some(a.phase.clone());
        }
        let lead = lead(&inner);
        let b = inner.meetings(meeting).entry(a.phase.clone()).or_default();
        b.first.get_or_insert_with(Instant::now);
        b.arrived.insert(a.index);
        if b.start_ns.is_none() && b.arrived.len() == state.setup.count as usize {
            b.start_ns = Some(agentload_wire::clock::clock_monotonic_ns() + lead.as_nanos() as u64);
        }
        state.bump();
    }
    loop {
        {
            let mut inner = state.inner.lock().expect("coordinator lock");
            if let Some(at) = inner
                .meetings(meeting)
                .get(&a.phase)
                .and_then(|b| b.start_ns)
            {
                return Ok(at);
            }
            if let Some(why) = &inner.failed {
                return Err(error(StatusCode::CONFLICT, why.clone()));
            }
        }
        if changed.changed().await.is_err() {
            return Err(error(
                StatusCode::SERVICE_UNAVAILABLE,
                "coordinator stopping",
            ));
        }
    }
}

async fn heartbeat(state: &Arc<State>, req: Request<Incoming>) -> Result<Answer, Refusal> {
    let (head, body) = req.into_parts();
    let h: Heartbeat = read_json(body).await?;
    bounded(&h.offset, &h.phase)?;
    if h.live
        .as_ref()
        .is_some_and(|l| l.ttft_us.len() > MAX_LIVE_BUCKETS)
    {
        return Err(error(
            StatusCode::BAD_REQUEST,
            format!("a heartbeat's TTFT histogram has at most {MAX_LIVE_BUCKETS} buckets"),
        ));
    }
    let mut inner = state.inner.lock().expect("coordinator lock");
    let shard = seen(&mut inner, h.index, token(&head.headers))?;
    shard.offset = h.offset;
    shard.phase = Some(h.phase);
    shard.live = h.live;
    Ok(json(
        StatusCode::OK,
        &Ack {
            failed: inner.failed.clone(),
        },
    ))
}

/// A relative path of plain names (`a/b.jsonl`), at most 4 deep: nothing
/// an upload or a download can use to leave its directory.
pub fn safe_path(path: &str) -> Option<&str> {
    let parts: Vec<&str> = path.split('/').collect();
    let plain = |p: &&str| {
        !p.is_empty()
            && *p != "."
            && *p != ".."
            && p.len() <= 128
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    };
    (parts.len() <= 4 && parts.iter().all(plain)).then_some(path)
}

/// `/v1/upload/{i}/{path}`: a name the shard uploads ([`uploaded`]), from
/// the shard that registered; the body streams to a temporary file of its
/// own within the run's upload budget, is synced, then renamed; the answer
/// carries what was written.
async fn upload(state: &Arc<State>, rest: &str, req: Request<Incoming>) -> Result<Answer, Refusal> {
    let bad = |why: String| error(StatusCode::BAD_REQUEST, why);
    let (index, path) = rest
        .split_once('/')
        .ok_or_else(|| bad(format!("upload path {rest:?} is not {{index}}/{{path}}")))?;
    let index: u32 = index
        .parse()
        .map_err(|_| bad(format!("shard index {index:?} is not a number")))?;
    let path = safe_path(path)
        .filter(|p| uploaded(p))
        .ok_or_else(|| bad(format!("{path:?} is not a file a shard uploads")))?;
    let (head, body) = req.into_parts();
    let begun = {
        let mut inner = state.inner.lock().expect("coordinator lock");
        let shard = seen(&mut inner, index, token(&head.headers))?;
        if shard.uploaded.is_some() {
            return Err(error(
                StatusCode::CONFLICT,
                format!("shard {index} has already completed its upload"),
            ));
        }
        inner.uploads_begun += 1;
        inner.uploads_begun
    };
    let target = state
        .setup
        .dir
        .join("shards")
        .join(index.to_string())
        .join(path);
    let stored = store(state, &target, begun, body).await?;
    let stored = Stored {
        path: path.to_owned(),
        ..stored
    };
    let mut inner = state.inner.lock().expect("coordinator lock");
    let replaced = match seen(&mut inner, index, token(&head.headers)) {
        Ok(shard) => shard.stored.insert(path.to_owned(), stored.clone()),
        Err(refusal) => {
            // Registered again meanwhile: this upload is not the new registration's.
            inner.upload_bytes -= stored.bytes;
            let _ = std::fs::remove_file(&target);
            return Err(refusal);
        }
    };
    // The earlier file of that name is gone: its bytes are the budget's again.
    inner.upload_bytes -= replaced.map_or(0, |r| r.bytes);
    Ok(json(StatusCode::OK, &stored))
}

/// Streams `body` to `target` through a temporary file named for upload
/// number `begun` (`.{name}.{begun}.part`: no two uploads share one), each
/// frame counted against the run's budget; on any failure the temporary
/// file is removed and its bytes given back.
async fn store(
    state: &State,
    target: &Path,
    begun: u64,
    mut body: Incoming,
) -> Result<Stored, Refusal> {
    let failed = |e: std::io::Error| {
        error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot store {}: {e}", target.display()),
        )
    };
    let dir = target.parent().expect("an upload's target is in a folder");
    let name = target.file_name().expect("an upload's target has a name");
    let mut part_name = std::ffi::OsString::from(".");
    part_name.push(name);
    part_name.push(format!(".{begun}.part"));
    let part = dir.join(part_name);
    let mut bytes = 0u64;
    let written = async {
        tokio::fs::create_dir_all(dir).await.map_err(failed)?;
        let mut file = tokio::fs::File::create(&part).await.map_err(failed)?;
        let mut hash = Sha256::new();
        while let Some(frame) = body.frame().await {
            let frame =
                frame.map_err(|e| error(StatusCode::BAD_REQUEST, format!("upload cut: {e}")))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            state.spend(data.len() as u64)?;
            bytes += data.len() as u64;
            hash.update(&data);
            file.write_all(&data).await.map_err(failed)?;
        }
        file.sync_all().await.map_err(failed)?;
        drop(file);
        tokio::fs::rename(&part, target).await.map_err(failed)?;
        Ok(hex::encode(hash.finalize()))
    }
    .await;
    match written {
        Ok(sha256) => Ok(Stored {
            path: String::new(),
            bytes,
            sha256,
        }),
        Err(refusal) => {
            let _ = tokio::fs::remove_file(&part).await;
            state.inner.lock().expect("coordinator lock").upload_bytes -= bytes;
            Err(refusal)
        }
    }
}

impl State {
    /// Takes `n` bytes of the run's upload budget, or refuses.
    fn spend(&self, n: u64) -> Result<(), Refusal> {
        let mut inner = self.inner.lock().expect("coordinator lock");
        let budget = self.setup.upload_budget;
        if inner.upload_bytes.saturating_add(n) > budget {
            return Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the run's uploads would pass their budget of {budget} bytes \
                     (--upload-budget-mib on shard 0)"
                ),
            ));
        }
        inner.upload_bytes += n;
        Ok(())
    }
}

/// `/v1/done`: the shard lists exactly the files it uploaded, with the sizes
/// and digests they were stored with, `shard.json` among them and a header
/// of this run and this shard.
async fn done(state: &Arc<State>, req: Request<Incoming>) -> Result<Answer, Refusal> {
    let (head, body) = req.into_parts();
    let d: Done = read_json(body).await?;
    let conflict = |why: String| error(StatusCode::CONFLICT, format!("shard {}: {why}", d.index));
    let stored = {
        let mut inner = state.inner.lock().expect("coordinator lock");
        seen(&mut inner, d.index, token(&head.headers))?
            .stored
            .clone()
    };
    let listed: BTreeMap<&str, &Stored> = d.files.iter().map(|f| (f.path.as_str(), f)).collect();
    if listed.len() != d.files.len() {
        return Err(conflict("a file is listed twice".into()));
    }
    for (path, file) in &stored {
        match listed.get(path.as_str()) {
            Some(f) if *f == file => {}
            Some(f) => {
                return Err(conflict(format!(
                    "{path} is stored as {} bytes (sha256 {}), the shard lists {} (sha256 {})",
                    file.bytes, file.sha256, f.bytes, f.sha256
                )))
            }
            None => return Err(conflict(format!("{path} was uploaded but is not listed"))),
        }
    }
    if let Some(path) = listed.keys().find(|p| !stored.contains_key(**p)) {
        return Err(conflict(format!("{path} is listed but was not uploaded")));
    }
    let dir = state.setup.dir.join("shards").join(d.index.to_string());
    check_header(&state.setup, d.index, &dir).map_err(conflict)?;
    let mut inner = state.inner.lock().expect("coordinator lock");
    let shard = seen(&mut inner, d.index, token(&head.headers))?;
    shard.uploaded = Some(d.files);
    let failed = inner.failed.clone();
    state.bump();
    Ok(json(StatusCode::OK, &Ack { failed }))
}

/// The uploaded `shard.json` in `dir` is shard `index`'s header of this run.
fn check_header(setup: &Setup, index: u32, dir: &Path) -> Result<(), String> {
    use std::io::Read as _;
    let path = dir.join("shard.json");
    let mut bytes = Vec::new();
    std::fs::File::open(&path)
        .and_then(|f| f.take(MAX_HEADER_BYTES).read_to_end(&mut bytes))
        .map_err(|e| format!("shard.json was not uploaded ({e})"))?;
    let h: crate::ShardHeader = serde_json::from_slice(&bytes)
        .map_err(|e| format!("shard.json is not a shard header: {e}"))?;
    if h.run_id != setup.run_id
        || h.config_digest != setup.config_digest
        || h.index != index
        || h.count != setup.count
    {
        return Err(format!(
            "shard.json is shard {} of {} of run {} (config {}), not shard {index} of this run",
            h.index, h.count, h.run_id, h.config_digest
        ));
    }
    Ok(())
}

fn results(state: &Arc<State>) -> Result<Answer, Refusal> {
    let inner = state.inner.lock().expect("coordinator lock");
    match &inner.results {
        Some(files) => Ok(json(StatusCode::OK, files)),
        None => Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            match &inner.failed {
                Some(why) => format!("the run failed: {why}; the merge is not written yet"),
                None => "the run is still going: no merged results yet".to_owned(),
            },
        )),
    }
}

async fn result_file(state: &Arc<State>, path: &str) -> Result<Answer, Refusal> {
    let listed = state
        .inner
        .lock()
        .expect("coordinator lock")
        .results
        .as_ref()
        .is_some_and(|files| files.iter().any(|f| f.path == path));
    if !listed || safe_path(path).is_none() {
        return Err(error(
            StatusCode::NOT_FOUND,
            format!("no result file {path:?}"),
        ));
    }
    let bytes = tokio::fs::read(state.setup.dir.join(path))
        .await
        .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let mut r = Response::new(Full::new(Bytes::from(bytes)));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/octet-stream"),
    );
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_paths_stay_inside() {
        assert!(safe_path("turns.jsonl").is_some());
        assert!(safe_path("accuracy/turns.jsonl").is_some());
        for bad in [
            "../x",
            "a/../../b",
            "/etc/passwd",
            "a//b",
            "",
            "a/./b",
            "a b",
            "a/b/c/d/e",
        ] {
            assert!(safe_path(bad).is_none(), "{bad}");
        }
    }
}
