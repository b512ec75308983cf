//! The client against a canned HTTP/1.1 server (exact bytes on the wire) and against the
//! simulator: which answers fail a turn and why, and how connections are kept.

use super::*;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

mod hostile;

/// A server answering the i-th request (over all connections) with `responses[i]`, verbatim;
/// after the last one it repeats it. A response ending in `CLOSE` closes its connection.
struct Canned {
    url: String,
    connections: Arc<AtomicU64>,
    /// Request lines received (`POST /v1/chat/completions HTTP/1.1`).
    requests: Arc<Mutex<Vec<String>>>,
}

const CLOSE: &[u8] = b"<close>";
/// In a canned response: the server waits 200 ms before it writes the rest.
const PAUSE: &[u8] = b"<pause>";

async fn canned(responses: Vec<Vec<u8>>) -> Canned {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let connections = Arc::new(AtomicU64::new(0));
    let requests = Arc::new(Mutex::new(Vec::new()));
    let served = Arc::new(AtomicU64::new(0));
    let responses = Arc::new(responses);
    let (c, r) = (connections.clone(), requests.clone());
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            c.fetch_add(1, Ordering::SeqCst);
            let (r, served, responses) = (r.clone(), served.clone(), responses.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    // One request: head, then Content-Length bytes of body.
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        let mut chunk = [0u8; 4096];
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
                    let length: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    while buf.len() < head_end + length {
                        let mut chunk = [0u8; 4096];
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.drain(..head_end + length);
                    r.lock()
                        .unwrap()
                        .push(head.lines().next().unwrap_or("").to_owned());
                    let i = served.fetch_add(1, Ordering::SeqCst) as usize;
                    let response = &responses[i.min(responses.len() - 1)];
                    let (bytes, close) = match response.strip_suffix(CLOSE) {
                        Some(b) => (b, true),
                        None => (&response[..], false),
                    };
                    let (now, later) = match bytes.windows(PAUSE.len()).position(|w| w == PAUSE) {
                        Some(at) => (&bytes[..at], &bytes[at + PAUSE.len()..]),
                        None => (bytes, &[][..]),
                    };
                    if socket.write_all(now).await.is_err() {
                        return;
                    }
                    if !later.is_empty() {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        if socket.write_all(later).await.is_err() {
                            return;
                        }
                    }
                    if close {
                        return;
                    }
                }
            });
        }
    });
    Canned {
        url,
        connections,
        requests,
    }
}

/// A chunked 200 answer of `content_type` carrying `body` in one chunk.
fn answer(content_type: &str, body: &str) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    .into_bytes();
    if !body.is_empty() {
        out.extend_from_slice(format!("{:x}\r\n{body}\r\n", body.len()).as_bytes());
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

fn sse(body: &str) -> Vec<u8> {
    answer("text/event-stream", body)
}

const ROLE: &str = r#"data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#;
const HI: &str = r#"data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#;
const FINISH: &str = r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#;

/// A complete, valid stream.
fn good() -> String {
    format!("{ROLE}\n\n{HI}\n\n{FINISH}\n\ndata: [DONE]\n\n")
}

fn client(url: &str, cap: u64, timeout: Duration) -> ChatClient {
    ChatClient::new(&ClientOptions {
        endpoint: url.to_owned(),
        api_key: Some("k".into()),
        turn_timeout: timeout,
        max_connections: 1,
        max_response_bytes: cap,
        timestamps: Timestamps::default(),
        first_token: Default::default(),
        reuse_connections: true,
        ..Default::default()
    })
    .unwrap()
}

fn body() -> serde_json::Value {
    json!({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": true})
}

/// The error of one request answered with `response`.
async fn failure(response: Vec<u8>) -> String {
    let server = canned(vec![response]).await;
    failure_at(&server.url, Duration::from_secs(10)).await
}

/// The error of one request to `url` with a turn timeout of `timeout`.
async fn failure_at(url: &str, timeout: Duration) -> String {
    match client(url, 0, timeout).send(&body(), "s").await.result {
        Ok(a) => panic!("completed: {a:?}"),
        Err(e) => e.to_string(),
    }
}

/// A server whose one connection, once the request came, is written `chunks` one after
/// another, `every` apart, for as long as the client listens; its URL.
async fn dripping(
    chunks: impl Iterator<Item = Vec<u8>> + Send + 'static,
    every: Duration,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let _ = socket.read(&mut [0u8; 4096]).await;
        for chunk in chunks {
            if socket.write_all(&chunk).await.is_err() {
                return;
            }
            tokio::time::sleep(every).await;
        }
    });
    url
}

#[tokio::test]
async fn a_valid_stream_completes_on_one_connection() {
    let server = canned(vec![sse(&good())]).await;
    let c = client(&format!("{}/v1/", server.url), 0, Duration::from_secs(10));
    c.warm_up(1).await.unwrap();
    for _ in 0..5 {
        let ex = c.send(&body(), "s").await;
        let a = ex.result.unwrap();
        assert_eq!(a.content, "Hi");
        assert_eq!(a.finish_reason.as_deref(), Some("stop"));
        assert!(!ex.timeline.new_connection, "warmed up");
        assert!(ex.timeline.first_token.is_some());
        assert_eq!(ex.timeline.token_chunks_ns.len(), 1);
        // Role, token and finish chunks: every JSON event, [DONE] not (AA's response_chunks).
        assert_eq!(a.data_events, 3);
    }
    assert_eq!(c.connections_opened(), 1);
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 5);
    assert!(requests
        .iter()
        .all(|r| r == "POST /v1/chat/completions HTTP/1.1"));
}

#[tokio::test]
async fn a_connection_the_server_closes_is_replaced() {
    let mut closing = sse(&good());
    closing.extend_from_slice(CLOSE);
    let server = canned(vec![closing.clone(), closing, sse(&good())]).await;
    let c = client(&server.url, 0, Duration::from_secs(10));
    for _ in 0..4 {
        c.send(&body(), "s").await.result.unwrap();
        // Let the client see the close before the next request.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(c.connections_opened(), 3);
    assert_eq!(server.connections.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn an_answer_saying_connection_close_is_not_followed_on_its_connection() {
    // The server says it closes, and does not (yet): the client does not wait to find out.
    let text = String::from_utf8(sse(&good())).unwrap();
    let closing = text.replacen("\r\n\r\n", "\r\nconnection: close\r\n\r\n", 1);
    let server = canned(vec![
        closing.clone().into_bytes(),
        closing.into_bytes(),
        sse(&good()),
    ])
    .await;
    let c = client(&server.url, 0, Duration::from_secs(10));
    for i in 0..4 {
        let ex = c.send(&body(), "s").await;
        ex.result.unwrap();
        assert_eq!(ex.timeline.new_connection, i < 3, "request {i}");
    }
    assert_eq!(c.connections_opened(), 3);
}

/// An event stream framed by `Content-Length`, or by the connection's close, is read as a
/// chunked one is; the one ended by the close takes its connection with it.
#[tokio::test]
async fn streams_framed_by_length_or_by_close_complete() {
    let text = good();
    let length = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{text}",
        text.len()
    );
    let mut until_close =
        format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n{text}").into_bytes();
    until_close.extend_from_slice(CLOSE);
    let responses = vec![
        length.clone().into_bytes(),
        length.clone().into_bytes(),
        until_close,
    ];
    let server = canned([responses, vec![length.into_bytes()]].concat()).await;
    let c = client(&server.url, 0, Duration::from_secs(10));
    for i in 0..4 {
        let ex = c.send(&body(), "s").await;
        assert_eq!(ex.result.unwrap().content, "Hi", "request {i}");
        assert_eq!(ex.timeline.bytes_received, text.len() as u64, "request {i}");
        assert_eq!(ex.timeline.new_connection, i == 0 || i == 3, "request {i}");
    }
    // The two framed by length and the one read to the close on the first connection.
    assert_eq!(c.connections_opened(), 2);
}

#[tokio::test]
async fn a_stream_cut_in_the_middle_of_a_chunk_fails_saying_where() {
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    let role = format!("{ROLE}\n\n");
    let mut cut = format!("{head}{:x}\r\n{role}\r\n100\r\n{HI}", role.len()).into_bytes();
    cut.extend_from_slice(CLOSE);
    let e = failure(cut).await;
    let received = role.len() + HI.len();
    let want = format!(
        "stream error: connection broke mid-stream after {received} bytes: the connection \
         closed in the middle of a chunk after {received} body bytes ({} more were announced)",
        0x100 - HI.len()
    );
    assert_eq!(e, want);
    // A chunk size line that is not hex.
    let e = failure(format!("{head}zz\r\n{role}\r\n0\r\n\r\n").into_bytes()).await;
    assert_eq!(
        e,
        "stream error: connection broke mid-stream after 0 bytes: chunk size line `zz` is not hex"
    );
    // A head that is not HTTP.
    let e = failure(b"SSH-2.0-OpenSSH_9.6\r\n\r\n".to_vec()).await;
    assert!(
        e.starts_with("transport error: request to 127.0.0.1:") && e.contains("is not HTTP"),
        "{e}"
    );
}

#[tokio::test]
async fn sse_error_events_fail_whatever_their_data() {
    for data in ["{\"message\":\"boom\"}", "not json at all", ""] {
        let line = if data.is_empty() {
            String::new()
        } else {
            format!("data: {data}\n")
        };
        let e = failure(sse(&format!(
            "{ROLE}\n\nevent: error\n{line}\n{FINISH}\n\ndata: [DONE]\n\n"
        )))
        .await;
        let quoted = if data.is_empty() {
            "(nothing)".to_owned()
        } else {
            format!("`{data}`")
        };
        assert_eq!(
            e,
            format!("stream error: the server sent an SSE error event: {quoted}")
        );
    }
}

#[tokio::test]
async fn other_named_events_are_skipped() {
    let server = canned(vec![sse(&format!(
        "event: ping\ndata: 12345\n\n{ROLE}\n\nevent: message\n{HI}\n\n{FINISH}\n\ndata: [DONE]\n\n"
    ))])
    .await;
    let ex = client(&server.url, 0, Duration::from_secs(10))
        .send(&body(), "s")
        .await;
    assert_eq!(ex.result.unwrap().content, "Hi");
}

#[tokio::test]
async fn data_that_is_neither_json_nor_done_fails() {
    let e = failure(sse(&format!(
        "{ROLE}\n\n{}\n\n{FINISH}\n\ndata: [DONE]\n\n",
        &HI[..30]
    )))
    .await;
    assert_eq!(
        e,
        format!(
            "stream error: SSE data #2 is neither JSON nor [DONE] (EOF while parsing a string at line 1 column 24): `{}`",
            &HI[6..30]
        )
    );
    let e = failure(sse("data: hello\n\ndata: [DONE]\n\n")).await;
    assert!(
        e.ends_with(
            "SSE data #1 is neither JSON nor [DONE] (expected value at line 1 column 1): `hello`"
        ),
        "{e}"
    );
}

#[tokio::test]
async fn a_chunk_that_is_not_utf8_fails_the_turn_naming_it() {
    // The content's "Hi" with an invalid byte in it: never recorded as U+FFFD.
    let mut response = sse(&format!("{ROLE}\n\n{HI}\n\n{FINISH}\n\ndata: [DONE]\n\n"));
    let at = response.windows(4).position(|w| w == b"\"Hi\"").unwrap();
    response[at + 2] = 0xff;
    let e = failure(response).await;
    assert!(
        e.starts_with("stream error: SSE data #2 is not valid UTF-8"),
        "{e}"
    );
}

#[tokio::test]
async fn a_stream_without_chunks_fails() {
    assert_eq!(
        failure(sse("data: [DONE]\n\n")).await,
        "stream error: the stream carried no completion chunk, only [DONE]"
    );
    assert_eq!(
        failure(sse(": keep-alive\n\n")).await,
        "stream error: the stream ended without any completion chunk or [DONE]"
    );
    // JSON, but not a completion chunk.
    assert_eq!(
        failure(sse("data: {\"id\":1}\n\ndata: [DONE]\n\n")).await,
        "stream error: the stream carried no completion chunk, only [DONE]"
    );
}

#[tokio::test]
async fn a_stream_must_end_with_a_finish_reason_and_done() {
    assert_eq!(
        failure(sse(&format!("{ROLE}\n\n{HI}\n\n"))).await,
        "stream error: the stream ended without a finish_reason or [DONE] after 2 chunks"
    );
    assert_eq!(
        failure(sse(&format!("{ROLE}\n\n{HI}\n\n{FINISH}\n\n"))).await,
        "stream error: the stream ended without [DONE] after finish_reason \"stop\""
    );
    assert_eq!(
        failure(sse(&format!("{ROLE}\n\n{HI}\n\ndata: [DONE]\n\n"))).await,
        "stream error: the stream ended with [DONE] but none of its 2 chunks had a finish_reason"
    );
}

#[tokio::test]
async fn an_error_object_in_the_stream_fails() {
    let e = failure(sse(&format!(
        "{ROLE}\n\ndata: {{\"error\":{{\"message\":\"out of memory\",\"code\":500}}}}\n\ndata: [DONE]\n\n"
    )))
    .await;
    assert_eq!(
        e,
        "stream error: the server sent an error in the stream: out of memory"
    );
}

#[tokio::test]
async fn a_stream_answered_with_another_content_type_fails() {
    let e = failure(answer(
        "text/html; charset=utf-8",
        "<html><body>Bad gateway</body></html>\n",
    ))
    .await;
    assert_eq!(
        e,
        "a stream was asked for but the answer is `text/html; charset=utf-8`, not text/event-stream; it starts `<html><body>Bad gateway</body></html>\\n`"
    );
    let e = failure(b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\ndata: x".to_vec()).await;
    assert!(
        e.contains("answer is `(no Content-Type)`") && e.ends_with("it starts `data: x`"),
        "{e}"
    );
    // Parameters and case do not matter.
    let server = canned(vec![answer("Text/Event-Stream; charset=utf-8", &good())]).await;
    let ex = client(&server.url, 0, Duration::from_secs(10))
        .send(&body(), "s")
        .await;
    ex.result.unwrap();
}

#[tokio::test]
async fn http_errors_name_status_retry_after_and_body() {
    let body429 = r#"{"error":{"message":"slow down"}}"#;
    let e = failure(
        format!(
            "HTTP/1.1 429 Too Many Requests\r\nretry-after: 7\r\ncontent-length: {}\r\n\r\n{body429}",
            body429.len()
        )
        .into_bytes(),
    )
    .await;
    assert_eq!(e, format!("HTTP 429 (Retry-After: 7): {body429}"));
    let e = failure(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy".to_vec())
        .await;
    assert_eq!(e, "HTTP 503: busy");
}

#[tokio::test]
async fn the_response_cap_fails_a_longer_answer() {
    let stream = good();
    let server = canned(vec![sse(&stream)]).await;
    let cap = stream.len() as u64 - 1;
    let ex = client(&server.url, cap, Duration::from_secs(10))
        .send(&body(), "s")
        .await;
    assert_eq!(
        ex.result.unwrap_err().to_string(),
        format!(
            "answer exceeded endpoint.max_response_bytes = {cap} bytes (cut after {} bytes)",
            stream.len()
        )
    );
    // At the cap exactly, the answer is fine.
    let ex = client(&server.url, cap + 1, Duration::from_secs(10))
        .send(&body(), "s")
        .await;
    ex.result.unwrap();
}

/// A stream still arriving when the turn's time runs out is not "stalled".
#[tokio::test]
async fn a_stream_still_arriving_at_the_limit_says_so() {
    let head =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    // A keep-alive comment every 20 ms, for as long as the client listens.
    let keep_alive = std::iter::repeat(b"4\r\n: x\n\r\n".to_vec());
    let url = dripping(
        std::iter::once(head.to_vec()).chain(keep_alive),
        Duration::from_millis(20),
    )
    .await;
    let e = failure_at(&url, Duration::from_millis(400)).await;
    assert!(
        e.starts_with("turn timed out after 0.4 s (still streaming: ")
            && e.contains("the answer takes longer than load.turn_timeout_s"),
        "{e}"
    );
}

#[tokio::test]
async fn a_stalled_stream_times_out_saying_what_came() {
    // The head and the role chunk, then nothing (the chunked body never ends).
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{ROLE}\n\n\r\n",
        ROLE.len() + 2
    );
    let server = canned(vec![head.into_bytes()]).await;
    let ex = client(&server.url, 0, Duration::from_millis(300))
        .send(&body(), "s")
        .await;
    let e = ex.result.unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "turn timed out after 0.3 s (stalled: {} bytes received, none in the last 0.",
            ROLE.len() + 2
        )),
        "{e}"
    );
    let server = canned(vec![Vec::new()]).await;
    let e = failure_at(&server.url, Duration::from_millis(200)).await;
    assert_eq!(e, "turn timed out after 0.2 s (no response)");
    let e = client(&server.url, 0, Duration::from_secs(60))
        .get("/v1/models", Duration::from_millis(200))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(e, "turn timed out after 0.2 s (GET /v1/models)");
}

#[tokio::test]
async fn a_refused_connection_names_the_address() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let c = client(&format!("http://{addr}"), 0, Duration::from_secs(5));
    let e = c.send(&body(), "s").await.result.unwrap_err().to_string();
    assert!(
        e.starts_with(&format!("transport error: cannot connect to {addr}: ")),
        "{e}"
    );
    assert!(c.warm_up(1).await.is_err());
    assert_eq!(c.connections_opened(), 0);
}

#[tokio::test]
async fn get_reads_a_plain_answer_on_the_pooled_connection() {
    let models = r#"{"data":[{"id":"m"}]}"#;
    let server = canned(vec![
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{models}",
            models.len()
        )
        .into_bytes(),
        sse(&good()),
    ])
    .await;
    let c = client(&server.url, 0, Duration::from_secs(5));
    assert_eq!(c.url("/v1/models"), format!("{}/v1/models", server.url));
    let a = c.get("/v1/models", Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        (a.status, a.content_type.as_str()),
        (200, "application/json")
    );
    assert_eq!(&a.body[..], models.as_bytes());
    c.send(&body(), "s").await.result.unwrap();
    assert_eq!(server.connections.load(Ordering::SeqCst), 1);
    assert_eq!(
        server.requests.lock().unwrap()[0],
        "GET /v1/models HTTP/1.1"
    );
}

/// The simulator's replay at concurrency 1: one connection for every request, counted at both
/// ends; the `reset` fault breaks one, and exactly one replaces it.
#[tokio::test]
async fn one_connection_against_the_simulator() {
    use agentload_sim::{ApproxTokenCounter, SimConfig};
    let sim = agentload_sim::start(
        SimConfig {
            time_scale: 0.0,
            faults: vec!["reset@4".parse().unwrap()],
            ..Default::default()
        },
        Arc::new(ApproxTokenCounter),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let c = client(&sim.url(), 0, Duration::from_secs(10));
    c.warm_up(1).await.unwrap();
    let mut failed = Vec::new();
    for i in 1..=10 {
        let body = json!({"messages": [{"role": "user", "content": "echo these words back"}],
                          "stream": true, "stream_options": {"include_usage": true}});
        let ex = c.send(&body, "s").await;
        match ex.result {
            Ok(a) => assert_eq!(a.content, "echo these words back"),
            Err(e) => failed.push((i, e.to_string())),
        }
        assert_eq!(ex.timeline.new_connection, i == 5, "request {i}");
    }
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].0, 4);
    assert!(
        failed[0]
            .1
            .starts_with("stream error: connection broke mid-stream after "),
        "{failed:?}"
    );
    assert_eq!(c.connections_opened(), 2);
    assert_eq!(sim.connections_accepted(), 2);
    sim.shutdown().await;
}

#[tokio::test]
async fn a_body_left_open_after_done_completes_and_its_connection_is_not_reused() {
    // [DONE], then the chunked body never ends.
    let events = good();
    let open = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{events}\r\n",
        events.len()
    );
    let server = canned(vec![open.into_bytes(), sse(&good())]).await;
    let c = client(&server.url, 0, Duration::from_secs(10));
    let first = c.send(&body(), "s").await;
    let returned = std::time::Instant::now();
    assert_eq!(first.result.unwrap().content, "Hi");
    // The turn completed at [DONE]; the wait for the body's end came after it.
    assert!(returned.duration_since(first.timeline.complete) >= super::stream::DRAIN_AFTER_DONE);
    let second = c.send(&body(), "s").await;
    second.result.unwrap();
    assert!(second.timeline.new_connection);
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
}

/// At concurrency N the client holds N connections, whatever the number of requests.
#[tokio::test]
async fn concurrent_sessions_keep_one_connection_each() {
    use agentload_sim::{ApproxTokenCounter, SimConfig};
    let sim = agentload_sim::start(
        SimConfig {
            time_scale: 0.0,
            slots: 4,
            ..Default::default()
        },
        Arc::new(ApproxTokenCounter),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let c = ChatClient::new(&ClientOptions {
        endpoint: sim.url(),
        api_key: None,
        turn_timeout: Duration::from_secs(10),
        max_connections: 4,
        max_response_bytes: 0,
        timestamps: Timestamps::default(),
        first_token: Default::default(),
        reuse_connections: true,
        ..Default::default()
    })
    .unwrap();
    c.warm_up(4).await.unwrap();
    let sessions: Vec<_> = (0..4)
        .map(|i| {
            let c = c.clone();
            tokio::spawn(async move {
                for _ in 0..25 {
                    let body = json!({"messages": [{"role": "user", "content": format!("session {i}")}],
                                      "stream": true});
                    let ex = c.send(&body, &format!("s{i}")).await;
                    assert_eq!(ex.result.unwrap().content, format!("session {i}"));
                    assert!(!ex.timeline.new_connection);
                }
            })
        })
        .collect();
    for s in sessions {
        s.await.unwrap();
    }
    assert_eq!(c.connections_opened(), 4);
    assert_eq!(sim.connections_accepted(), 4);
    assert_eq!(sim.chat_requests_received(), 100);
    sim.shutdown().await;
}

#[tokio::test]
async fn an_exchange_counts_in_flight_until_it_ends() {
    // The head, then nothing: the exchange stays in flight until its timeout.
    let head =
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
    let server = canned(vec![head.as_bytes().to_vec()]).await;
    let c = client(&server.url, 0, Duration::from_millis(400));
    let send = tokio::spawn(async move { c.send(&body(), "s").await });
    // Other tests of this process may have exchanges in flight too: at least this one.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while super::exchanges_in_flight() == 0 {
        assert!(std::time::Instant::now() < deadline, "never counted");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ex = send.await.unwrap();
    assert!(ex.result.is_err());
}

/// `send_json_then`'s work runs once the whole request is in the kernel, and before the
/// answer. The work blocks the client's task for a while: the request's bytes that are in
/// the kernel by then still reach the server meanwhile, those not written yet do not. The
/// body is larger than the socket buffers, so the writes wait for room (a work run at the
/// first pause would be caught), and the server holds its answer until the work ran (a work
/// run only after the answer's head would hang the turn).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_work_after_a_request_waits_for_its_last_byte_not_for_the_answer() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (ran, mut work_ran) = tokio::sync::mpsc::unbounded_channel::<()>();
    let content = "x".repeat(8 << 20);
    let request = json!({"messages": [{"role": "user", "content": content}], "stream": true});
    let body = bytes::Bytes::from(serde_json::to_vec(&request).unwrap());
    let length = body.len();
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 64 << 10];
        let mut read = async |buf: &mut Vec<u8>| {
            let n = socket.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
        };
        // Read as the bytes come, until the work runs.
        loop {
            tokio::select! {
                () = read(&mut buf) => {}
                _ = work_ran.recv() => break,
            }
        }
        // The work blocks the client for 1 s: what the kernel holds comes in well within.
        let _ = tokio::time::timeout(Duration::from_millis(500), async {
            loop {
                read(&mut buf).await;
            }
        })
        .await;
        let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let had = buf.len() - head_end;
        socket.write_all(&sse(&good())).await.unwrap();
        had
    });
    let c = client(&url, 0, Duration::from_secs(20));
    let work = || {
        ran.send(()).unwrap();
        std::thread::sleep(Duration::from_secs(1));
    };
    let ex = c.send_json_then(body.into(), true, "s", work).await;
    ex.result.unwrap();
    let had = server.await.unwrap();
    assert_eq!(
        had, length,
        "the whole body was in the kernel when the work ran"
    );
}

/// With read-return stamps ([`Timestamps::Read`]) the work would be timed into an answer that
/// came during it, so it runs before the request: when it runs, no byte of the request has
/// reached the server's socket (it peeks).
#[tokio::test]
async fn with_read_stamps_the_work_runs_before_the_request() {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(Mutex::new(None::<std::net::TcpStream>));
    let shared = accepted.clone();
    let server = std::thread::spawn(move || {
        let (mut socket, _) = listener.accept().unwrap();
        *shared.lock().unwrap() = Some(socket.try_clone().unwrap());
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        // The body is one JSON object: the request ends with its `}`.
        while buf.last() != Some(&b'}') {
            let n = socket.read(&mut chunk).unwrap();
            buf.extend_from_slice(&chunk[..n]);
        }
        socket.write_all(&sse(&good())).unwrap();
    });
    let c = ChatClient::new(&ClientOptions {
        endpoint: url,
        api_key: None,
        turn_timeout: Duration::from_secs(10),
        max_connections: 1,
        max_response_bytes: 0,
        timestamps: Timestamps::Read,
        first_token: Default::default(),
        reuse_connections: true,
        ..Default::default()
    })
    .unwrap();
    c.warm_up(1).await.unwrap();
    while accepted.lock().unwrap().is_none() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let nothing_yet = std::sync::atomic::AtomicBool::new(false);
    let work = || {
        let guard = accepted.lock().unwrap();
        let socket = guard.as_ref().unwrap();
        socket.set_nonblocking(true).unwrap();
        let peeked = socket.peek(&mut [0u8; 1]);
        socket.set_nonblocking(false).unwrap();
        let empty = matches!(&peeked, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        nothing_yet.store(empty, Ordering::SeqCst);
    };
    let bytes = bytes::Bytes::from(serde_json::to_vec(&body()).unwrap());
    c.send_json_then(bytes.into(), true, "s", work)
        .await
        .result
        .unwrap();
    server.join().unwrap();
    assert!(
        nothing_yet.load(Ordering::SeqCst),
        "the work was done before the request went out"
    );
}

/// A reused connection that the server closes after reading the request, without answering,
/// is replaced and the request sent again on a new one; the work after the request ran once,
/// when the request was first written, and is not done again for the resend.
#[tokio::test]
async fn a_request_resent_after_its_connection_broke_does_its_work_once() {
    let server = canned(vec![sse(&good()), CLOSE.to_vec(), sse(&good())]).await;
    let c = client(&server.url, 0, Duration::from_secs(10));
    c.send(&body(), "s").await.result.unwrap();
    let runs = AtomicU64::new(0);
    let bytes = bytes::Bytes::from(serde_json::to_vec(&body()).unwrap());
    let ex = c
        .send_json_then(bytes.into(), true, "s", || {
            runs.fetch_add(1, Ordering::SeqCst);
        })
        .await;
    assert_eq!(ex.result.unwrap().content, "Hi");
    assert!(ex.timeline.new_connection, "resent on a new connection");
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the work ran once");
    assert_eq!(
        server.requests.lock().unwrap().len(),
        3,
        "the request was resent"
    );
    assert_eq!(c.connections_opened(), 2);
}

/// A body of many slices (more than one `writev(2)` takes, short and long) reaches the server
/// byte for byte, with its exact `Content-Length`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_slices_arrives_whole_with_its_length() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let mut parts = vec![bytes::Bytes::from_static(b"{\"messages\":[")];
    for i in 0..1500 {
        if i > 0 {
            parts.push(bytes::Bytes::from_static(b","));
        }
        // Short messages, and every 50th one long (a slice of its own).
        let n = if i % 50 == 7 { 40_000 + i } else { 10 + i };
        let m = json!({"role": "user", "content": "y".repeat(n)});
        parts.push(serde_json::to_vec(&m).unwrap().into());
    }
    parts.push(bytes::Bytes::from_static(b"],\"stream\":true}"));
    let whole: Vec<u8> = parts.concat();
    let body = RequestBody::from_parts(parts);
    let server = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 64 << 10];
        let (head_end, length) = loop {
            let n = socket.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..i]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map(|v| v.trim().parse().unwrap())
                    .expect("a Content-Length");
                break (i + 4, length);
            }
        };
        while buf.len() < head_end + length {
            let n = socket.read(&mut chunk).await.unwrap();
            buf.extend_from_slice(&chunk[..n]);
        }
        socket.write_all(&sse(&good())).await.unwrap();
        (length, buf[head_end..].to_vec())
    });
    let c = client(&url, 0, Duration::from_secs(20));
    let ex = c.send_json(body, true, "s").await;
    ex.result.unwrap();
    let (length, received) = server.await.unwrap();
    assert_eq!(length, whole.len());
    assert_eq!(received, whole);
    assert_eq!(ex.body.to_bytes(), whole);
}

/// An idle connection the server closed after a whole answer is left in the pool's check, not
/// written to: the next request goes out on a new connection, counted as opened in its turn,
/// and does not fail.
#[tokio::test]
async fn an_idle_connection_the_server_closed_is_not_used() {
    let mut closing = sse(&good());
    closing.extend_from_slice(CLOSE);
    let server = canned(vec![closing, sse(&good())]).await;
    let c = client(&server.url, 0, Duration::from_secs(10));
    let first = c.send(&body(), "s").await;
    assert_eq!(first.result.unwrap().content, "Hi");
    // The close reaches the idle connection.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let second = c.send(&body(), "s").await;
    assert_eq!(second.result.unwrap().content, "Hi");
    assert!(second.timeline.new_connection);
    assert_eq!(c.connections_opened(), 2);
    assert_eq!(server.connections.load(Ordering::SeqCst), 2);
    assert_eq!(server.requests.lock().unwrap().len(), 2);
}
