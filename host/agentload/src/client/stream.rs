//! Sends one Chat Completions request and timestamps its answer.
//!
//! `issued` is taken after the body is serialised, immediately before the
//! request is handed to the connection; each network read is timestamped on
//! arrival, before any parsing, so parsing cost never shifts a timestamp.

use super::assemble::{Assembled, CompletionAssembler};
use super::sse::SseParser;
use serde_json::Value;
use std::time::{Duration, Instant};

/// Client settings.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Base URL, e.g. `http://127.0.0.1:8080` (`/v1/chat/completions` is appended).
    pub endpoint: String,
    /// Sent as `Authorization: Bearer ...` when set.
    pub api_key: Option<String>,
    /// A turn still unanswered after this long fails.
    pub turn_timeout: Duration,
    /// Connections kept open (one per concurrent session).
    pub max_connections: usize,
}

/// Why a turn failed.
#[derive(Debug, Clone, thiserror::Error, serde::Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnError {
    /// The server answered with a non-2xx status.
    #[error("HTTP {status}: {body}")]
    Http { status: u16, body: String },
    /// The request could not be sent or the connection broke.
    #[error("transport error: {message}")]
    Transport { message: String },
    /// No complete answer within the turn timeout.
    #[error("turn timed out after {after_s} s")]
    Timeout { after_s: f64 },
    /// The stream ended badly or carried an error.
    #[error("stream error: {message}")]
    Stream { message: String },
}

/// Monotonic timestamps of one exchange.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Just before the request was handed to the connection.
    pub issued: Instant,
    /// First byte of the response body (or headers, for errors).
    pub first_byte: Option<Instant>,
    /// First token-bearing chunk.
    pub first_token: Option<Instant>,
    /// Last token-bearing chunk.
    pub last_token: Option<Instant>,
    /// End of the answer (`[DONE]`, end of stream, or the failure).
    pub complete: Instant,
    /// Arrival of every token-bearing chunk, in ns after `issued`.
    pub token_chunks_ns: Vec<u64>,
}

/// One request and what came back.
#[derive(Debug)]
pub struct Exchange {
    pub timeline: Timeline,
    pub result: Result<Assembled, TurnError>,
}

/// A pooled HTTP/1.1 client for one endpoint.
#[derive(Clone)]
pub struct ChatClient {
    http: reqwest::Client,
    url: String,
    api_key: Option<String>,
    turn_timeout: Duration,
}

impl ChatClient {
    /// A client with `max_connections` keep-alive connections.
    pub fn new(opts: &ClientOptions) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(opts.max_connections.max(1))
            .pool_idle_timeout(None)
            .tcp_nodelay(true)
            .build()?;
        Ok(Self {
            http,
            url: format!(
                "{}/v1/chat/completions",
                opts.endpoint.trim_end_matches('/')
            ),
            api_key: opts.api_key.clone(),
            turn_timeout: opts.turn_timeout,
        })
    }

    /// Sends `body`, tagged with `session_id` in `X-Session-ID`.
    pub async fn send(&self, body: &Value, session_id: &str) -> Exchange {
        let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
        let bytes = serde_json::to_vec(body).expect("a JSON value serialises");
        let mut req = self
            .http
            .post(&self.url)
            .header("Content-Type", "application/json")
            .header("X-Session-ID", session_id)
            .body(bytes);
        if stream {
            req = req.header("Accept", "text/event-stream");
        }
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let mut timeline = Timeline {
            issued: Instant::now(),
            first_byte: None,
            first_token: None,
            last_token: None,
            complete: Instant::now(),
            token_chunks_ns: Vec::new(),
        };
        timeline.issued = Instant::now();
        let outcome =
            tokio::time::timeout(self.turn_timeout, exchange(req, stream, &mut timeline)).await;
        let result = match outcome {
            Ok(result) => result,
            Err(_) => {
                timeline.complete = Instant::now();
                Err(TurnError::Timeout {
                    after_s: self.turn_timeout.as_secs_f64(),
                })
            }
        };
        Exchange { timeline, result }
    }
}

async fn exchange(
    req: reqwest::RequestBuilder,
    stream: bool,
    t: &mut Timeline,
) -> Result<Assembled, TurnError> {
    let transport = |e: reqwest::Error| TurnError::Transport {
        message: format!("{e:#}"),
    };
    let mut resp = req.send().await.map_err(|e| {
        t.complete = Instant::now();
        transport(e)
    })?;
    let status = resp.status();
    if !status.is_success() {
        t.first_byte = Some(Instant::now());
        let body = resp.text().await.unwrap_or_default();
        t.complete = Instant::now();
        return Err(TurnError::Http {
            status: status.as_u16(),
            body: body.chars().take(2000).collect(),
        });
    }
    let mut assembler = CompletionAssembler::default();
    if !stream {
        let body = resp.bytes().await.map_err(transport)?;
        let now = Instant::now();
        t.first_byte = Some(now);
        t.first_token = Some(now);
        t.last_token = Some(now);
        t.complete = now;
        let value: Value = serde_json::from_slice(&body).map_err(|e| TurnError::Stream {
            message: format!("response is not JSON: {e}"),
        })?;
        assembler.push_response(&value);
        return finish(assembler);
    }
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    let mut done = false;
    loop {
        let chunk = resp.chunk().await;
        let now = Instant::now();
        let bytes = match chunk {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                parser.finish(&mut events);
                t.complete = now;
                break;
            }
            Err(e) => {
                t.complete = now;
                return Err(TurnError::Stream {
                    message: format!("connection broke mid-stream: {e:#}"),
                });
            }
        };
        t.first_byte.get_or_insert(now);
        parser.feed(&bytes, &mut events);
        for event in events.drain(..) {
            if event.is_done() {
                done = true;
                continue;
            }
            if assembler.push_chunk(&event.data) {
                t.first_token.get_or_insert(now);
                t.last_token = Some(now);
                t.token_chunks_ns
                    .push(now.duration_since(t.issued).as_nanos() as u64);
            }
        }
        if done {
            t.complete = now;
            break;
        }
    }
    for event in events.drain(..) {
        if !event.is_done() && assembler.push_chunk(&event.data) {
            t.first_token.get_or_insert(t.complete);
            t.last_token = Some(t.complete);
        }
    }
    let out = finish(assembler)?;
    if !done && out.finish_reason.is_none() {
        return Err(TurnError::Stream {
            message: "stream ended without a finish_reason or [DONE]".into(),
        });
    }
    Ok(out)
}

fn finish(assembler: CompletionAssembler) -> Result<Assembled, TurnError> {
    let out = assembler.finish();
    match &out.stream_error {
        Some(message) => Err(TurnError::Stream {
            message: message.clone(),
        }),
        None => Ok(out),
    }
}
