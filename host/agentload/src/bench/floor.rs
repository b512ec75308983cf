//! The machine's floor: the least a client can add to what it measures. A blocking std
//! socket, one thread, one keep-alive connection, a request written by hand and the response
//! scanned for its first token and the simulator's stamps: no runtime, no HTTP library, no
//! parsing beyond a byte search. `agentload bench` runs it against the same simulator as
//! agentload's own client, in the same run, and prints agentload's error as a ratio to it.

use agentload_results::numbers::pick;
use agentload_wire::clock;
use agentload_wire::hooked::{Hooked, IoHooks, ReadAt};
use memchr::memmem::Finder;
use serde_json::value::RawValue;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Instant;

/// One request's timing error against the simulator's stamps, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Client TTFT minus the simulator's first-token time (`request + response`).
    pub total_ns: i64,
    /// Simulator arrival minus the client's send.
    pub request_ns: i64,
    /// Client first-token read minus the simulator's first-token write (its return: may be a
    /// few µs below zero, loopback delivering inside the write).
    pub response_ns: i64,
}

impl Sample {
    /// From the client's `issued` and `first_token` stamps and the simulator's `agentload_sim`
    /// object; `None` when the simulator's stamps are missing.
    pub fn of(issued: Instant, first_token: Instant, sim: &str) -> Option<Self> {
        let [first_token_ns, received_mono_ns, first_token_mono_ns] = pick(
            sim,
            [
                &["first_token_ns"],
                &["received_mono_ns"],
                &["first_token_mono_ns"],
            ],
        )
        .map(|n| n.as_u64().map(|v| v as i64));
        let issued_mono = agentload_wire::clock::mono_ns(issued) as i64;
        let first_mono = agentload_wire::clock::mono_ns(first_token) as i64;
        let ttft = first_mono - issued_mono;
        Some(Self {
            total_ns: ttft - first_token_ns?,
            request_ns: received_mono_ns? - issued_mono,
            response_ns: first_mono - first_token_mono_ns?,
        })
    }
}

/// Token-bearing deltas as the simulator writes them (the role chunk's delta starts `{"role"`).
const TOKEN_DELTAS: [&[u8]; 3] = [
    b"\"delta\":{\"content\":\"",
    b"\"delta\":{\"reasoning_content\":\"",
    b"\"delta\":{\"tool_calls\"",
];

/// The floor's vectorized searches (a byte-by-byte comparison at every offset would cost the
/// floor more than the socket reads it is there to measure), each built once: `memmem::find`
/// builds its searcher on every call, which was 1.9 % of a c=1000 level's samples (`perf
/// record` of `bench --sections streams --levels 1000`), more than any symbol of agentload's
/// own reading path.
struct Finders {
    deltas: [Finder<'static>; 3],
    done: Finder<'static>,
}

static FINDERS: LazyLock<Finders> = LazyLock::new(|| Finders {
    deltas: TOKEN_DELTAS.map(Finder::new),
    done: Finder::new(b"data: [DONE]"),
});

impl Finders {
    /// Token-bearing deltas in `bytes`.
    fn tokens(&self, bytes: &[u8]) -> u64 {
        self.deltas
            .iter()
            .map(|f| f.find_iter(bytes).count() as u64)
            .sum()
    }

    /// Whether `bytes` hold a token-bearing delta.
    fn any_token(&self, bytes: &[u8]) -> bool {
        self.deltas.iter().any(|f| f.find(bytes).is_some())
    }

    /// Whether `bytes` hold `data: [DONE]`.
    fn done(&self, bytes: &[u8]) -> bool {
        self.done.find(bytes).is_some()
    }
}

/// One keep-alive connection of the floor client, with its request written out once.
#[derive(Debug)]
pub struct FloorClient {
    tcp: TcpStream,
    request: Vec<u8>,
    buf: Vec<u8>,
    answer: Vec<u8>,
}

impl FloorClient {
    /// Opens the connection to `addr` (`TCP_NODELAY`) for requests with `body`.
    ///
    /// # Errors
    /// When the connection cannot be opened.
    pub fn connect(addr: SocketAddr, body: &[u8]) -> std::io::Result<Self> {
        let tcp = TcpStream::connect(addr)?;
        tcp.set_nodelay(true)?;
        Ok(Self {
            tcp,
            request: request(&addr.to_string(), body),
            buf: vec![0u8; 64 << 10],
            answer: Vec::with_capacity(64 << 10),
        })
    }

    /// Sends one streamed request and reads its answer to the end.
    ///
    /// # Errors
    /// A socket error, a non-200 answer, or an answer without the simulator's stamps.
    pub fn send(&mut self) -> std::io::Result<Sample> {
        let bad = |what: &str| std::io::Error::other(format!("floor client: {what}"));
        self.answer.clear();
        let issued = Instant::now();
        self.tcp.write_all(&self.request)?;
        let mut first_token = None;
        loop {
            let n = self.tcp.read(&mut self.buf)?;
            let now = Instant::now();
            if n == 0 {
                return Err(bad("the simulator closed the connection mid-answer"));
            }
            let from = self.answer.len().saturating_sub(40);
            self.answer.extend_from_slice(&self.buf[..n]);
            if first_token.is_none() && FINDERS.any_token(&self.answer[from..]) {
                first_token = Some(now);
            }
            if self.answer.ends_with(b"0\r\n\r\n") && FINDERS.done(&self.answer) {
                break;
            }
        }
        let answer = &self.answer;
        if !answer.starts_with(b"HTTP/1.1 200") {
            return Err(bad(&format!(
                "answer {:?}",
                String::from_utf8_lossy(&answer[..answer.len().min(80)])
            )));
        }
        let first = first_token.ok_or_else(|| bad("no token in the answer"))?;
        let stamps = sim_stamps(answer).ok_or_else(|| bad("no agentload_sim stamps"))?;
        Sample::of(issued, first, stamps.get()).ok_or_else(|| bad("incomplete stamps"))
    }
}

/// Sends `requests` streamed requests with `body` one after another on one connection to
/// `addr`; the samples in order (the first one's connection was opened before it was sent).
///
/// # Errors
/// As [`FloorClient::connect`] and [`FloorClient::send`].
pub fn run(addr: SocketAddr, body: &[u8], requests: usize) -> std::io::Result<Vec<Sample>> {
    let mut client = FloorClient::connect(addr, body)?;
    (0..requests).map(|_| client.send()).collect()
}

/// A streamed chat request to `host` with `body`, written out by hand.
pub fn request(host: &str, body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(body);
    request
}

/// The stream floor's read stamps: until an answer's first token came, each read returns one
/// packet's bytes (as agentload's reads do), and the latest read's stamps, ns on the monotonic
/// clock (0: none).
#[derive(Debug, Default)]
struct FloorReads {
    first_token_due: AtomicBool,
    returned_ns: AtomicU64,
    arrived_ns: AtomicU64,
}

impl IoHooks for FloorReads {
    fn read_returned(&self, at: ReadAt) {
        self.returned_ns
            .store(clock::mono_ns(at.returned), Ordering::Relaxed);
        let arrived = at.arrived.map_or(0, clock::mono_ns);
        self.arrived_ns.store(arrived, Ordering::Relaxed);
    }

    fn split_at_arrivals(&self) -> bool {
        self.first_token_due.load(Ordering::Relaxed)
    }
}

/// What one exchange of a [`StreamFloor`] saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exchange {
    /// Token-bearing chunks in the answer.
    pub tokens: u64,
    /// How long the first token's bytes waited in the kernel for the read that took them, ns;
    /// `None` without kernel stamps or without a token.
    pub read_lag_ns: Option<i64>,
    /// When the request's write began, ns on the monotonic clock.
    pub issued_ns: u64,
    /// When the answer's last bytes arrived (the kernel's stamp; the read's return without
    /// one), ns on the monotonic clock.
    pub ended_ns: u64,
}

/// One keep-alive connection of the floor at many streams: the socket I/O agentload's client
/// does (a tokio socket read through the same stamped `recvmsg(2)`, one packet per read until
/// the first token), the request written as given, and the answer read to its end with a byte
/// search and nothing parsed.
#[derive(Debug)]
pub struct StreamFloor {
    io: Hooked<Arc<FloorReads>>,
    reads: Arc<FloorReads>,
    buf: Vec<u8>,
    tail: Vec<u8>,
}

impl StreamFloor {
    /// Opens the connection to `addr` (`TCP_NODELAY`, kernel receive stamps where the kernel
    /// gives them).
    ///
    /// # Errors
    /// When the connection cannot be opened.
    pub async fn connect(addr: SocketAddr) -> std::io::Result<Self> {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let reads = Arc::new(FloorReads::default());
        Ok(Self {
            io: Hooked::with_arrival_stamps(tcp, reads.clone()),
            reads,
            buf: vec![0u8; 64 << 10],
            tail: Vec::with_capacity(64),
        })
    }

    /// Writes `request` (a whole HTTP/1.1 request) and reads its streamed answer up to the
    /// chunked body's end after `data: [DONE]`.
    ///
    /// # Errors
    /// A socket error, or the simulator closing the connection mid-answer.
    pub async fn exchange(&mut self, request: &[u8]) -> std::io::Result<Exchange> {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        self.reads.first_token_due.store(true, Ordering::Relaxed);
        let mut seen = Exchange {
            tokens: 0,
            read_lag_ns: None,
            issued_ns: clock::mono_ns(Instant::now()),
            ended_ns: 0,
        };
        self.io.write_all(request).await?;
        self.tail.clear();
        let mut done = false;
        loop {
            let n = self.io.read(&mut self.buf).await?;
            if n == 0 {
                return Err(std::io::Error::other(
                    "floor client: the simulator closed the connection mid-answer",
                ));
            }
            let got = &self.buf[..n];
            let tokens = FINDERS.tokens(got);
            if seen.tokens == 0 && tokens > 0 {
                self.reads.first_token_due.store(false, Ordering::Relaxed);
                let arrived = self.reads.arrived_ns.load(Ordering::Relaxed);
                let returned = self.reads.returned_ns.load(Ordering::Relaxed);
                seen.read_lag_ns = (arrived > 0).then(|| returned as i64 - arrived as i64);
            }
            seen.tokens += tokens;
            // A marker may straddle two reads: the last bytes of the previous one stay.
            self.tail.extend_from_slice(got);
            done = done || FINDERS.done(&self.tail);
            if done && self.tail.ends_with(b"0\r\n\r\n") {
                let arrived = self.reads.arrived_ns.load(Ordering::Relaxed);
                seen.ended_ns = match arrived {
                    0 => self.reads.returned_ns.load(Ordering::Relaxed),
                    at => at,
                };
                return Ok(seen);
            }
            let keep = self.tail.len().saturating_sub(16);
            self.tail.drain(..keep);
        }
    }
}

/// The last `"agentload_sim": {...}` object in an answer, as sent.
fn sim_stamps(answer: &[u8]) -> Option<Box<RawValue>> {
    const KEY: &[u8] = b"\"agentload_sim\":";
    let at = (0..answer.len().saturating_sub(KEY.len()))
        .rev()
        .find(|&i| answer[i..].starts_with(KEY))?;
    let mut values = serde_json::Deserializer::from_slice(&answer[at + KEY.len()..])
        .into_iter::<Box<RawValue>>();
    values.next()?.ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn samples_split_by_direction_and_add_up() {
        let issued = Instant::now();
        let first = issued + std::time::Duration::from_micros(900);
        let received = agentload_wire::clock::mono_ns(issued) + 100_000;
        let sim = json!({
            "first_token_ns": 700_000,
            "received_mono_ns": received,
            "first_token_mono_ns": received + 700_000,
        });
        let s = Sample::of(issued, first, &sim.to_string()).unwrap();
        assert_eq!(s.request_ns, 100_000);
        assert_eq!(s.response_ns, 100_000);
        assert_eq!(s.total_ns, 200_000);
        // The total is the client's TTFT minus the simulator's own first-token time, not the
        // sum of the two paths: with a first-token time that disagrees with its mono stamps,
        // the paths stay and the total follows the TTFT.
        let skewed = json!({
            "first_token_ns": 600_000,
            "received_mono_ns": received,
            "first_token_mono_ns": received + 700_000,
        });
        let s = Sample::of(issued, first, &skewed.to_string()).unwrap();
        assert_eq!(
            (s.request_ns, s.response_ns, s.total_ns),
            (100_000, 100_000, 300_000)
        );
        assert!(Sample::of(issued, first, r#"{"first_token_ns": 1}"#).is_none());
    }

    #[test]
    fn the_last_stamps_object_is_found() {
        let text = b"data: {\"agentload_sim\":{\"a\":1}}\n\ndata: {\"x\":2,\"agentload_sim\":{\"a\":2,\"b\":[3]},\"timings\":{}}\n\ndata: [DONE]\n\n";
        assert_eq!(sim_stamps(text).unwrap().get(), r#"{"a":2,"b":[3]}"#);
        assert!(sim_stamps(b"data: [DONE]").is_none());
    }

    /// A fast echo simulator, and a streamed request body of four tokens for it.
    async fn echo_sim() -> (agentload_sim::SimHandle, Vec<u8>) {
        let sim = agentload_sim::start(
            agentload_sim::SimConfig {
                decode_tokens_per_s: 10_000.0,
                ..Default::default()
            },
            std::sync::Arc::new(agentload_sim::ApproxTokenCounter),
            "127.0.0.1:0".parse().unwrap(),
        )
        .await
        .unwrap();
        let body = serde_json::to_vec(&json!({
            "model": "m", "stream": true,
            "messages": [{"role": "user", "content": "word word word word"}],
        }))
        .unwrap();
        (sim, body)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_floor_client_measures_against_the_simulator() {
        let (sim, body) = echo_sim().await;
        let addr = sim.addr();
        let samples = tokio::task::spawn_blocking(move || run(addr, &body, 5))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(samples.len(), 5);
        for s in samples {
            // The request cannot reach the simulator before it was sent; the client's read can
            // come before the simulator's write(2) returned (no bound on that: a preempted
            // writer returns late).
            assert!(s.request_ns >= 0, "{s:?}");
        }
        assert_eq!(sim.connections_accepted(), 1);
        sim.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_floor_reads_each_answer_to_its_end_on_one_connection() {
        let (sim, body) = echo_sim().await;
        let request = request(&sim.addr().to_string(), &body);
        let mut conn = StreamFloor::connect(sim.addr()).await.unwrap();
        // Each answer (the simulator echoes the prompt's four tokens) is read to its chunked
        // end: a leftover would be counted in the next answer, or leave the next exchange
        // waiting.
        let mut lags = Vec::new();
        for _ in 0..10 {
            let seen = conn.exchange(&request).await.unwrap();
            assert_eq!(seen.tokens, 4);
            assert!(seen.issued_ns < seen.ended_ns, "{seen:?}");
            lags.extend(seen.read_lag_ns);
        }
        // Loopback packets carry kernel stamps on Linux (the machine's first stamping socket
        // may see a few unstamped ones): the first token's wait is measured, never negative.
        assert!(
            !lags.is_empty() && lags.iter().all(|&ns| ns >= 0),
            "{lags:?}"
        );
        assert_eq!(sim.connections_accepted(), 1);
        sim.shutdown().await;
    }
}
