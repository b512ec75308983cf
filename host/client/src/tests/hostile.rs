//! Hostile servers: answers out of step with their requests, compressed and redirected
//! answers, heads that never end, tool calls whose `index` cannot be one.

use super::*;

/// A valid stream whose chunks carry the completion id `id` and the content `text`.
fn stream_with_id(id: &str, text: &str) -> Vec<u8> {
    let chunk = |delta: &str, finish: &str| {
        format!(
            r#"data: {{"id":"{id}","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
        )
    };
    sse(&format!(
        "{}\n\n{}\n\n{}\n\ndata: [DONE]\n\n",
        chunk(r#"{"role":"assistant","content":null}"#, "null"),
        chunk(&format!(r#"{{"content":"{text}"}}"#), "null"),
        chunk("{}", r#""stop""#)
    ))
}

/// `answer`, then 200 ms later the same answer again, unasked (a proxy that replays).
fn echoed(answer: Vec<u8>) -> Vec<u8> {
    [&answer[..], PAUSE, &answer[..]].concat()
}

/// A server that sends each answer a second time 200 ms after it: the next request, sent at
/// once, reads the copy. Its completion id repeats the previous answer's, so the turn fails
/// and its connection is closed; the next request opens a new one and gets its own answer.
#[tokio::test]
async fn an_answer_repeating_an_earlier_completion_id_fails_the_turn_and_closes_the_connection() {
    let answers = ["one", "two", "three"]
        .iter()
        .enumerate()
        .map(|(i, text)| echoed(stream_with_id(&format!("chatcmpl-{i}"), text)))
        .collect();
    let server = canned(answers).await;
    let c = client(&server.url, 0, Duration::from_secs(10));
    assert_eq!(c.send(&body(), "s").await.result.unwrap().content, "one");
    let second = c.send(&body(), "s").await;
    let e = second.result.unwrap_err().to_string();
    assert!(
        e.starts_with(
            "answer out of step with its request: its completion id `chatcmpl-0` is that of \
             the answer 1 before it on this connection; the connection was closed"
        ),
        "{e}"
    );
    assert!(!second.timeline.new_connection);
    let third = c.send(&body(), "s").await;
    assert_eq!(third.result.unwrap().content, "three");
    assert!(
        third.timeline.new_connection,
        "the out-of-step one was closed"
    );
    assert_eq!(c.connections_opened(), 2);
}

/// `endpoint.reuse_connections = false`: against the same server, every request goes out on
/// a connection of its own, asking the server to close it, and gets its own answer.
#[tokio::test]
async fn with_reuse_off_each_request_gets_its_own_connection_and_answer() {
    let texts = ["one", "two", "three"];
    let answers = texts
        .iter()
        .enumerate()
        .map(|(i, text)| echoed(stream_with_id(&format!("chatcmpl-{i}"), text)))
        .collect();
    let server = canned(answers).await;
    let c = ChatClient::new(&ClientOptions {
        endpoint: server.url.clone(),
        api_key: None,
        turn_timeout: Duration::from_secs(10),
        max_connections: 1,
        max_response_bytes: 0,
        timestamps: Timestamps::default(),
        first_token: Default::default(),
        reuse_connections: false,
        ..Default::default()
    })
    .unwrap();
    // A warmed-up connection carries the first request, and no other.
    c.warm_up(1).await.unwrap();
    for (i, text) in texts.iter().enumerate() {
        let ex = c.send(&body(), "s").await;
        assert_eq!(ex.result.unwrap().content, *text);
        assert_eq!(ex.timeline.new_connection, i > 0, "request {i}");
    }
    assert_eq!(c.connections_opened(), 3);
    assert_eq!(server.connections.load(Ordering::SeqCst), 3);
}

/// Two answers back to back for one request: which one is this request's cannot be told, so
/// the bytes after the first one's end fail the turn, and the connection is closed.
#[tokio::test]
async fn bytes_after_an_answers_end_fail_the_turn_and_close_the_connection() {
    let both = [
        stream_with_id("chatcmpl-a", "stray"),
        stream_with_id("chatcmpl-b", "mine"),
    ]
    .concat();
    let server = canned(vec![both, stream_with_id("chatcmpl-c", "next")]).await;
    let c = client(&server.url, 0, Duration::from_secs(10));
    let e = c.send(&body(), "s").await.result.unwrap_err().to_string();
    assert!(
        e.starts_with("answer out of step with its request: ")
            && e.contains(" bytes followed the answer's end on its connection: they start `HTTP/1.1 200 OK\\r\\n"),
        "{e}"
    );
    let next = c.send(&body(), "s").await;
    assert_eq!(next.result.unwrap().content, "next");
    assert!(next.timeline.new_connection);
}

/// A gzip-compressed answer (nobody asked for one) fails naming the encoding, not as a
/// stream without chunks.
#[tokio::test]
async fn a_gzip_encoded_answer_fails_naming_the_encoding() {
    let mut gzip = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\ncontent-length: 10\r\n\r\n".to_vec();
    gzip.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]);
    let e = failure(gzip).await;
    assert!(
        e.starts_with(
            "the answer is encoded (Content-Encoding: `gzip`), though no encoding was asked for"
        ),
        "{e}"
    );
}

/// A redirect fails naming where it points (quoted: server text; control characters never
/// pass the head's parser), and that agentload follows none.
#[tokio::test]
async fn a_redirect_fails_naming_its_location() {
    let e = failure(
        b"HTTP/1.1 301 Moved Permanently\r\nlocation: https://llm.example/v1/chat/completions\r\ncontent-length: 0\r\n\r\n"
            .to_vec(),
    )
    .await;
    assert_eq!(
        e,
        "HTTP 301 (Location: `https://llm.example/v1/chat/completions`; agentload follows no \
         redirect: point endpoint.url at the server): (no body)"
    );
    let e = failure(
        b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /v2/\xff\r\ncontent-length: 5\r\n\r\nmoved"
            .to_vec(),
    )
    .await;
    assert!(
        e.starts_with("HTTP 307 (Location: `/v2/\u{fffd}`;") && e.ends_with("): moved"),
        "{e}"
    );
}

/// A server that answers only with interim heads: past a few dozen, the turn fails at once
/// saying so; fewer, slowly, until the timeout, which says how many came.
#[tokio::test]
async fn endless_interim_heads_fail_saying_what_came() {
    let e = failure(b"HTTP/1.1 100 Continue\r\n\r\n".repeat(100)).await;
    assert!(
        e.ends_with("more than 32 interim (1xx) heads came, and no answer"),
        "{e}"
    );
    let url = dripping(
        std::iter::repeat(b"HTTP/1.1 103 Early Hints\r\n\r\n".to_vec()),
        Duration::from_millis(100),
    )
    .await;
    let e = failure_at(&url, Duration::from_millis(450)).await;
    assert!(
        e.starts_with("turn timed out after 0.45 s (no final response head: ")
            && e.contains(" interim (1xx) heads, "),
        "{e}"
    );
}

/// A head that drips one byte at a time times out saying how much of it came, not "no
/// response".
#[tokio::test]
async fn a_head_dripping_a_byte_at_a_time_times_out_saying_what_came() {
    let head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n";
    let url = dripping(
        head.iter().cycle().map(|byte| vec![*byte]),
        Duration::from_millis(50),
    )
    .await;
    let e = failure_at(&url, Duration::from_millis(500)).await;
    assert!(
        e.starts_with("turn timed out after 0.5 s (no complete response head: ")
            && e.ends_with(" bytes of one received)"),
        "{e}"
    );
}

/// A tool call whose `index` is -1, a string or 2.5 would merge into call 0's arguments: the
/// turn fails naming the field, streamed or not. (`1.0` is the index 1, as in the
/// reference's Python.)
#[tokio::test]
async fn a_tool_call_index_that_is_no_index_fails_the_turn_naming_the_field() {
    let call = |index: &str, args: &str| {
        format!(
            r#"{{"index":{index},"id":"c{args}","type":"function","function":{{"name":"f","arguments":"{args}"}}}}"#
        )
    };
    for index in ["-1", r#""1""#, "2.5"] {
        let chunk = |calls: &str| {
            format!(r#"data: {{"choices":[{{"index":0,"delta":{{"tool_calls":[{calls}]}}}}]}}"#)
        };
        let stream = format!(
            "{ROLE}\n\n{}\n\n{}\n\n{FINISH}\n\ndata: [DONE]\n\n",
            chunk(&call("0", "a")),
            chunk(&call(index, "b"))
        );
        let e = failure(sse(&stream)).await;
        assert!(
            e.starts_with(&format!(
                "stream error: SSE data #3: `tool_calls[0].index` is `{index}`, not a call's \
                 index (an unsigned integer): `"
            )),
            "{e}"
        );
        // Not streamed: the second call of the message.
        let message = format!(
            r#"{{"id":"x","choices":[{{"index":0,"finish_reason":"tool_calls","message":{{"role":"assistant","content":null,"tool_calls":[{},{}]}}}}]}}"#,
            call("0", "a"),
            call(index, "b")
        );
        let server = canned(vec![format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{message}",
            message.len()
        )
        .into_bytes()])
        .await;
        let mut plain = body();
        plain["stream"] = json!(false);
        let e = client(&server.url, 0, Duration::from_secs(10))
            .send(&plain, "s")
            .await
            .result
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            format!(
                "stream error: the answer's `tool_calls[1].index` is `{index}`, not a call's \
                 index (an unsigned integer)"
            )
        );
    }
    // An index written as 1.0 is call 1.
    let stream = format!(
        "{ROLE}\n\ndata: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{},{}]}}}}]}}\n\n{FINISH}\n\ndata: [DONE]\n\n",
        call("0", "a"),
        call("1.0", "b")
    );
    let server = canned(vec![sse(&stream)]).await;
    let a = client(&server.url, 0, Duration::from_secs(10))
        .send(&body(), "s")
        .await
        .result
        .unwrap();
    let args: Vec<&str> = a.tool_calls.iter().map(|c| c.arguments.as_str()).collect();
    assert_eq!(args, ["a", "b"]);
}
