//! Fault injection: the N-th chat-completions request the server receives gets a broken (or, for
//! `repeat-tool-ids`, an unusual but valid) answer, so that a client's handling of each can be
//! tested end to end. Configured as `KIND@N` strings ([`Fault`]); see [`FAULT_HELP`].
//!
//! Kinds that replace the whole answer ([`FaultKind::replaces_answer`]) are answered at once,
//! without the batch scheduler; the others alter the real answer's stream as it leaves the
//! server ([`StreamFault`]), "mid-stream" meaning right after the first token's frame (the role
//! chunk and the first token).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Response, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::body::SimBody;
use crate::stream::{sse_event, ChunkMeta, DONE_EVENT};

/// `--help` text of the fault kinds (the README has the same list).
pub const FAULT_HELP: &str = "\
Inject a fault into the N-th chat-completions request the server receives (1-based, \
counted over all sessions and connections); repeatable, one kind per request. \
\"Mid-stream\" is right after the first token's chunk. KIND is one of:
  sse-error           an SSE `event: error` (after a role and a content chunk), then `data: [DONE]`
  bad-json-chunk      the first content chunk is cut in half (not JSON); the rest of the stream is normal
  non-json            `data:` lines that are not JSON, then `data: [DONE]`
  no-chunks           only `data: [DONE]`
  wrong-content-type  HTTP 200 with a `text/html` page instead of the stream
  truncate            the stream ends cleanly mid-stream: no finish_reason, no `[DONE]`
  reset               the TCP connection is reset mid-stream (RST)
  http-500            HTTP 500 with a llama.cpp-style JSON error
  http-429            HTTP 429 with `Retry-After: 1`
  stall               no more bytes after the first token (the connection is aborted when the server stops)
  repeat-tool-ids     a valid answer whose tool-call deltas all repeat the call's id, type and name
  oversize            4 MiB of extra content chunks after the first token, then the normal end
The stream kinds need a streamed request; a non-streamed one they target gets an HTTP 500 \
saying so. With a `reset` fault configured every connection is closed with RST.";

/// Extra content sent by [`FaultKind::Oversize`], in bytes.
pub const OVERSIZE_BYTES: usize = 4 << 20;
/// Content bytes per chunk of the [`FaultKind::Oversize`] filler.
const OVERSIZE_CHUNK: usize = 64 << 10;

/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    SseError,
    BadJsonChunk,
    NonJson,
    NoChunks,
    WrongContentType,
    Truncate,
    Reset,
    Http500,
    Http429,
    Stall,
    RepeatToolIds,
    Oversize,
}

impl FaultKind {
    /// Every kind, in `--help` order.
    pub const ALL: [FaultKind; 12] = [
        Self::SseError,
        Self::BadJsonChunk,
        Self::NonJson,
        Self::NoChunks,
        Self::WrongContentType,
        Self::Truncate,
        Self::Reset,
        Self::Http500,
        Self::Http429,
        Self::Stall,
        Self::RepeatToolIds,
        Self::Oversize,
    ];

    /// The kind's name in `KIND@N`.
    pub fn name(self) -> &'static str {
        match self {
            Self::SseError => "sse-error",
            Self::BadJsonChunk => "bad-json-chunk",
            Self::NonJson => "non-json",
            Self::NoChunks => "no-chunks",
            Self::WrongContentType => "wrong-content-type",
            Self::Truncate => "truncate",
            Self::Reset => "reset",
            Self::Http500 => "http-500",
            Self::Http429 => "http-429",
            Self::Stall => "stall",
            Self::RepeatToolIds => "repeat-tool-ids",
            Self::Oversize => "oversize",
        }
    }

    /// Whether the whole answer is replaced (answered without generating); the other kinds alter
    /// the generated stream.
    pub fn replaces_answer(self) -> bool {
        matches!(
            self,
            Self::SseError
                | Self::NonJson
                | Self::NoChunks
                | Self::WrongContentType
                | Self::Http500
                | Self::Http429
        )
    }

    /// Whether the kind applies to a non-streamed request too.
    fn applies_unstreamed(self) -> bool {
        matches!(self, Self::WrongContentType | Self::Http500 | Self::Http429)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A fault and the request it hits: `KIND@N`, N the 1-based number of the chat-completions
/// request in the order the server received them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Fault {
    pub kind: FaultKind,
    /// 1-based request number.
    pub request: u64,
}

/// Why a `KIND@N` string is not a fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FaultParseError {
    #[error("fault `{0}` is not KIND@N (N: the 1-based chat-completions request number)")]
    Form(String),
    #[error("unknown fault kind `{kind}` (known: {known})")]
    Kind { kind: String, known: String },
    #[error("fault `{0}`: N must be a whole number of at least 1")]
    Number(String),
}

impl FromStr for Fault {
    type Err = FaultParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, n) = s
            .split_once('@')
            .ok_or_else(|| FaultParseError::Form(s.to_owned()))?;
        let kind = FaultKind::ALL
            .into_iter()
            .find(|k| k.name() == kind.trim())
            .ok_or_else(|| FaultParseError::Kind {
                kind: kind.to_owned(),
                known: FaultKind::ALL.map(FaultKind::name).join(", "),
            })?;
        let request = n
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| FaultParseError::Number(s.to_owned()))?;
        Ok(Self { kind, request })
    }
}

impl TryFrom<String> for Fault {
    type Error = FaultParseError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Fault> for String {
    fn from(f: Fault) -> Self {
        f.to_string()
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.kind, self.request)
    }
}

/// What a fault does to one request.
pub(crate) enum Injection {
    /// Answer with this instead of generating.
    Replace(Response<SimBody>),
    /// Generate, and alter the stream with this.
    Alter(StreamFault),
}

/// How `kind` hits request `n`. `meta` shapes the chunks a replaced stream carries; `stop`
/// ends a stall when the server shuts down.
pub(crate) fn inject(
    kind: FaultKind,
    n: u64,
    stream: bool,
    meta: &ChunkMeta,
    stop: &watch::Receiver<bool>,
) -> Injection {
    if !stream && !kind.applies_unstreamed() {
        return Injection::Replace(json_error(
            500,
            "server_error",
            &format!("agentload-sim fault `{kind}` targets request {n}, which is not streamed"),
            None,
        ));
    }
    let replaced = match kind {
        FaultKind::Http500 => json_error(
            500,
            "server_error",
            &format!("simulated internal server error (agentload-sim fault {kind}@{n})"),
            None,
        ),
        FaultKind::Http429 => json_error(
            429,
            "rate_limit_error",
            &format!("simulated rate limit, retry later (agentload-sim fault {kind}@{n})"),
            Some("1"),
        ),
        FaultKind::WrongContentType => with_type(
            200,
            "text/html; charset=utf-8",
            "<!DOCTYPE html>\n<html><head><title>Gateway</title></head>\
             <body><h1>Welcome</h1><p>agentload-sim fault wrong-content-type</p></body></html>\n"
                .to_owned(),
        ),
        FaultKind::NoChunks => sse(DONE_EVENT.to_owned()),
        FaultKind::NonJson => sse(format!(
            "data: upstream temporarily unavailable\n\n\
             data: retrying (agentload-sim fault {kind}@{n})\n\n\
             data: <html>502</html>\n\n{DONE_EVENT}"
        )),
        FaultKind::SseError => sse(format!(
            "{}{}event: error\ndata: {}\n\n{DONE_EVENT}",
            sse_event(&meta.role_chunk()),
            sse_event(&meta.delta_chunk(json!({ "content": "Hel" }))),
            json!({ "message": format!("simulated upstream failure (agentload-sim fault {kind}@{n})") }),
        )),
        FaultKind::BadJsonChunk
        | FaultKind::Truncate
        | FaultKind::Reset
        | FaultKind::Stall
        | FaultKind::RepeatToolIds
        | FaultKind::Oversize => return Injection::Alter(StreamFault::new(kind, stop.clone())),
    };
    Injection::Replace(replaced)
}

fn with_type(status: u16, content_type: &'static str, body: String) -> Response<SimBody> {
    let mut response = Response::new(SimBody::full(body));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

fn sse(body: String) -> Response<SimBody> {
    with_type(200, "text/event-stream", body)
}

fn json_error(
    status: u16,
    kind: &str,
    message: &str,
    retry_after: Option<&'static str>,
) -> Response<SimBody> {
    let body = json!({ "error": { "code": status, "message": message, "type": kind } });
    let mut response = with_type(status, "application/json; charset=utf-8", body.to_string());
    if let Some(seconds) = retry_after {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static(seconds));
    }
    response
}

/// How long `reset` waits before aborting, so that what was sent before reaches the client
/// (a reset discards what the peer has not read yet).
const RESET_AFTER: std::time::Duration = std::time::Duration::from_millis(50);

/// What the body does with one frame of the generated stream.
pub(crate) enum Step {
    Send(Bytes),
    /// End the body cleanly (a complete chunked body) without this frame.
    End,
    /// Send nothing more, then abort the connection when [`StreamFault::poll_wait`] is ready.
    Abort,
}

/// Alters a generated stream frame by frame (a frame is the SSE events of one token, or the
/// closing events).
pub(crate) struct StreamFault {
    kind: FaultKind,
    frames: u32,
    /// `(id, name)` of each tool call opened so far, by index (`repeat-tool-ids`).
    calls: Vec<(Value, Value)>,
    stop: watch::Receiver<bool>,
    /// Set once the stream stopped sending: ready when the connection is to be aborted.
    wait: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl StreamFault {
    fn new(kind: FaultKind, stop: watch::Receiver<bool>) -> Self {
        Self {
            kind,
            frames: 0,
            calls: Vec::new(),
            stop,
            wait: None,
        }
    }

    /// The next step for `frame`.
    pub(crate) fn step(&mut self, frame: Bytes) -> Step {
        self.frames += 1;
        let first = self.frames == 1;
        match self.kind {
            FaultKind::BadJsonChunk if first => Step::Send(cut_last_event(&frame)),
            FaultKind::Oversize if first => {
                let mut out = String::from_utf8_lossy(&frame).into_owned();
                let filler = "x".repeat(OVERSIZE_CHUNK);
                let chunk = sse_event(&json!({
                    "choices": [{ "finish_reason": null, "index": 0, "delta": { "content": filler } }],
                    "object": "chat.completion.chunk",
                }));
                for _ in 0..OVERSIZE_BYTES / OVERSIZE_CHUNK {
                    out.push_str(&chunk);
                }
                Step::Send(Bytes::from(out))
            }
            FaultKind::Truncate if !first => Step::End,
            FaultKind::Reset if !first => {
                self.wait = Some(Box::pin(tokio::time::sleep(RESET_AFTER)));
                Step::Abort
            }
            FaultKind::Stall if !first => {
                let mut stop = self.stop.clone();
                self.wait = Some(Box::pin(async move {
                    // Err: the server is gone; either way the stall is over.
                    let _ = stop.wait_for(|stopped| *stopped).await;
                }));
                Step::Abort
            }
            FaultKind::RepeatToolIds => Step::Send(self.repeat_ids(&frame)),
            _ => Step::Send(frame),
        }
    }

    /// Whether the stream stopped sending (`reset`, `stall`).
    pub(crate) fn is_waiting(&self) -> bool {
        self.wait.is_some()
    }

    /// Ready when a stream that stopped sending is to be aborted: `reset` shortly after, `stall`
    /// once the server stops.
    pub(crate) fn poll_wait(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.wait {
            Some(wait) => wait.as_mut().poll(cx),
            None => Poll::Ready(()),
        }
    }

    /// Adds the call's id, type and name to every tool-call delta of `frame` that lacks them.
    fn repeat_ids(&mut self, frame: &Bytes) -> Bytes {
        let text = String::from_utf8_lossy(frame);
        let mut out = String::with_capacity(text.len() * 2);
        for event in text.split_inclusive("\n\n") {
            let Some(mut chunk) = event
                .strip_prefix("data: ")
                .and_then(|d| serde_json::from_str::<Value>(d.trim_end()).ok())
            else {
                out.push_str(event);
                continue;
            };
            let deltas = chunk
                .pointer_mut("/choices/0/delta/tool_calls")
                .and_then(Value::as_array_mut);
            for call in deltas.into_iter().flatten() {
                let index = call.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
                if let Some(id) = call.get("id") {
                    let name = call.pointer("/function/name").cloned().unwrap_or_default();
                    if self.calls.len() <= index {
                        self.calls.resize(index + 1, (Value::Null, Value::Null));
                    }
                    self.calls[index] = (id.clone(), name);
                } else if let Some((id, name)) = self.calls.get(index) {
                    call["id"] = id.clone();
                    call["type"] = json!("function");
                    call["function"]["name"] = name.clone();
                }
            }
            out.push_str(&sse_event(&chunk));
        }
        Bytes::from(out)
    }
}

/// `frame` with its last event's JSON cut in half (an unbalanced object, never valid JSON).
fn cut_last_event(frame: &Bytes) -> Bytes {
    let text = String::from_utf8_lossy(frame);
    let Some(start) = text.rfind("data: ") else {
        return frame.clone();
    };
    let json = text[start + "data: ".len()..].trim_end();
    let mut cut = json.len() / 2;
    while !json.is_char_boundary(cut) {
        cut -= 1;
    }
    Bytes::from(format!("{}data: {}\n\n", &text[..start], &json[..cut]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_kind_at_n() {
        for kind in FaultKind::ALL {
            let f: Fault = format!("{kind}@7").parse().unwrap();
            assert_eq!(f, Fault { kind, request: 7 });
            assert_eq!(f.to_string(), format!("{}@7", kind.name()));
            assert!(
                FAULT_HELP.contains(&format!("\n  {} ", kind.name())),
                "{kind}"
            );
        }
        assert!(matches!(
            "reset".parse::<Fault>(),
            Err(FaultParseError::Form(_))
        ));
        assert!(matches!(
            "reset@0".parse::<Fault>(),
            Err(FaultParseError::Number(_))
        ));
        assert!(matches!(
            "reset@x".parse::<Fault>(),
            Err(FaultParseError::Number(_))
        ));
        let err = "boom@1".parse::<Fault>().unwrap_err().to_string();
        assert!(
            err.contains("unknown fault kind `boom`") && err.contains("oversize"),
            "{err}"
        );
        let json: Fault = serde_json::from_str("\"http-429@3\"").unwrap();
        assert_eq!(json.kind, FaultKind::Http429);
        assert_eq!(serde_json::to_string(&json).unwrap(), "\"http-429@3\"");
        assert!(serde_json::from_str::<Fault>("\"nope@3\"").is_err());
    }

    #[test]
    fn cut_event_is_not_json() {
        let frame = Bytes::from(
            "data: {\"a\":1}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"é\"}}]}\n\n",
        );
        let cut = cut_last_event(&frame);
        let text = std::str::from_utf8(&cut).unwrap();
        let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events[0], "data: {\"a\":1}");
        let last = events[1].strip_prefix("data: ").unwrap();
        assert!(serde_json::from_str::<Value>(last).is_err(), "{last}");
        assert!(!last.is_empty());
    }

    #[test]
    fn repeat_ids_fills_later_deltas() {
        let (_tx, rx) = watch::channel(false);
        let mut f = StreamFault::new(FaultKind::RepeatToolIds, rx);
        let open = Bytes::from(format!(
            "data: {}\n\n",
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c0", "type": "function", "function": {"name": "bash", "arguments": ""}}]}}]})
        ));
        let args = Bytes::from(format!(
            "data: {}\n\ndata: [DONE]\n\n",
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}}]})
        ));
        let Step::Send(_) = f.step(open) else {
            panic!()
        };
        let Step::Send(out) = f.step(args) else {
            panic!()
        };
        let text = std::str::from_utf8(&out).unwrap();
        let chunk: Value = serde_json::from_str(
            text.split("\n\n")
                .next()
                .unwrap()
                .strip_prefix("data: ")
                .unwrap(),
        )
        .unwrap();
        let call = &chunk["choices"][0]["delta"]["tool_calls"][0];
        assert_eq!(call["id"], "c0");
        assert_eq!(call["function"]["name"], "bash");
        assert_eq!(call["function"]["arguments"], "{}");
        assert!(text.ends_with("data: [DONE]\n\n"));
    }
}
