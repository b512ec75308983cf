//! Broken answers never count: the real binary replays three short generated
//! conversations against the in-process simulator with one injected fault.
//! The faulted turn is `failed` with its cause in `turns.jsonl`, the rest of
//! its conversation `aborted`, the other conversations complete and on disk,
//! and the run INVALID; `repeat-tool-ids` (a valid answer) completes with the
//! right call. One connection serves a whole clean run. A proxy that replays
//! an answer on a kept connection fails that turn, not the ones after it.

use crate::common::*;
use agentload_sim::{Fault, FaultKind, SimConfig};
use serde_json::{json, Value};

/// Conversations `a`, `b`, `c`, each: user, then three assistant turns (two
/// `bash` calls, a closing reply) with their tool results: 3 requests each,
/// 9 in all, sent in order at concurrency 1.
const CONVERSATIONS: [&str; 3] = ["a", "b", "c"];
const TURNS_EACH: usize = 3;

fn dataset() -> String {
    let mut rows = Vec::new();
    for c in CONVERSATIONS {
        let call = |turn: u32, id: &str, command: &str| {
            json!({"conversation_id": c, "turn": turn, "role": "assistant",
                   "tool_calls": [{"id": id, "type": "function",
                       "function": {"name": "bash", "arguments": json!({"command": command}).to_string()}}]})
        };
        let result = |turn: u32, id: &str| {
            json!({"conversation_id": c, "turn": turn, "role": "tool",
                   "tool_results": [{"tool_call_id": id, "content": "ok"}]})
        };
        rows.push(json!({"conversation_id": c, "turn": 1, "role": "user",
                         "content": format!("fix bug {c}"), "system": "You are a coding agent."}));
        rows.push(call(2, &format!("functions.bash:{c}0"), "ls src"));
        rows.push(result(3, &format!("functions.bash:{c}0")));
        rows.push(call(
            4,
            &format!("functions.bash:{c}1"),
            "grep -n fix src/lib.rs",
        ));
        rows.push(result(5, &format!("functions.bash:{c}1")));
        rows.push(
            json!({"conversation_id": c, "turn": 6, "role": "assistant", "content": "Fixed."}),
        );
    }
    rows.iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// A finished run: its records, report, console output and exit status.
struct Run {
    records: Vec<Value>,
    report: String,
    output: String,
    success: bool,
    connections: u64,
    chat_requests: u64,
}

impl Run {
    fn statuses(&self) -> Vec<(String, String)> {
        self.records
            .iter()
            .map(|r| {
                (
                    r["session_id"].as_str().unwrap().to_owned(),
                    r["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }
}

/// Replays the three conversations against the oracle with `faults`;
/// `endpoint` goes into the config's `[endpoint]` table (more tables may
/// follow it).
async fn replay(faults: &[&str], endpoint: &str) -> Run {
    replay_through(faults, endpoint, None).await
}

/// [`replay`], the client reaching the simulator through a proxy that
/// replays an answer before the `n`-th chat request, when `replay_at` is
/// `Some(n)` ([`replaying_proxy`]).
async fn replay_through(faults: &[&str], endpoint: &str, replay_at: Option<usize>) -> Run {
    let dir = scratch("faults");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let dataset_path = data.join("three.jsonl");
    std::fs::write(&dataset_path, dataset()).unwrap();
    let sim = start_sim(SimConfig {
        time_scale: 0.0005,
        responder: gold_responder(Some(dataset_path), None),
        faults: faults.iter().map(|f| f.parse::<Fault>().unwrap()).collect(),
        ..Default::default()
    })
    .await;
    let url = match replay_at {
        Some(n) => replaying_proxy(&sim.url(), n).await,
        None => sim.url(),
    };
    let config = edge_config(dir.path(), &url, "", endpoint);
    with_trajectories(&config, &data, "three.jsonl");
    let out = dir.path().join("out");
    let run = run_config(&config, &out, &["--require-valid"], dir.path()).await;
    let result = Run {
        records: read_jsonl(&out.join("turns.jsonl")),
        report: std::fs::read_to_string(out.join("report.txt")).unwrap_or_default(),
        output: text(&run),
        success: run.status.success(),
        connections: sim.connections_accepted(),
        chat_requests: sim.chat_requests_received(),
    };
    sim.shutdown().await;
    result
}

/// Request `n` (1-based) fails with a cause containing `cause`; the rest of
/// its conversation is aborted, every other turn completed and on disk, the
/// run INVALID. Returns the recorded cause.
fn assert_failed_at(run: &Run, n: usize, cause: &str) -> String {
    assert_eq!(
        run.records.len(),
        CONVERSATIONS.len() * TURNS_EACH,
        "{}",
        run.output
    );
    let failed = &run.records[n - 1];
    assert_eq!(failed["status"], "failed", "{failed}");
    let error = failed["error"].as_str().unwrap().to_owned();
    assert!(error.contains(cause), "cause {error:?} lacks {cause:?}");
    let session = failed["session_id"].as_str().unwrap();
    let first_of_session = (n - 1) / TURNS_EACH * TURNS_EACH;
    for (i, (s, status)) in run.statuses().into_iter().enumerate() {
        let expected = if i == n - 1 {
            "failed"
        } else if s == session && i > n - 1 {
            "aborted"
        } else {
            "completed"
        };
        assert_eq!(status, expected, "record {i} ({s}): {}", run.records[i]);
        if expected == "completed" {
            let completion = &run.records[i]["completion"];
            assert!(
                completion["finish_reason"].is_string(),
                "record {i}: {completion}"
            );
        }
    }
    assert!(first_of_session < n);
    assert!(
        run.report.contains("run INVALID"),
        "report: {}\n{}",
        run.report,
        run.output
    );
    assert!(!run.success, "--require-valid fails an INVALID run");
    // Nothing after the failure of that conversation was sent.
    let aborted = (first_of_session + TURNS_EACH) - n;
    assert_eq!(
        run.chat_requests as usize,
        CONVERSATIONS.len() * TURNS_EACH - aborted
    );
    eprintln!("fault matrix: request {n}: failed: {error}");
    error
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_error_event_fails_the_turn() {
    let run = replay(&["sse-error@5"], "").await;
    assert_failed_at(
        &run,
        5,
        "stream error: the server sent an SSE error event: `{\"message\":\"simulated upstream failure (agentload-sim fault sse-error@5)\"}`",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_json_chunk_fails_the_turn() {
    let run = replay(&["bad-json-chunk@5"], "").await;
    let cause = assert_failed_at(
        &run,
        5,
        "stream error: SSE data #2 is neither JSON nor [DONE] (EOF while parsing",
    );
    assert!(
        cause.contains("): `{\"choices\":[{"),
        "quotes the chunk: {cause}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_json_data_fails_the_turn() {
    let run = replay(&["non-json@5"], "").await;
    assert_failed_at(
        &run,
        5,
        "SSE data #1 is neither JSON nor [DONE] (expected value at line 1 column 1): `upstream temporarily unavailable`",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_done_fails_the_turn() {
    let run = replay(&["no-chunks@5"], "").await;
    assert_failed_at(
        &run,
        5,
        "stream error: the stream carried no completion chunk, only [DONE]",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn html_instead_of_a_stream_fails_the_turn() {
    let run = replay(&["wrong-content-type@5"], "").await;
    assert_failed_at(
        &run,
        5,
        "a stream was asked for but the answer is `text/html; charset=utf-8`, not text/event-stream; it starts `<!DOCTYPE html>\\n<html>",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_stream_fails_the_turn() {
    let run = replay(&["truncate@5"], "").await;
    assert_failed_at(
        &run,
        5,
        "stream error: the stream ended without a finish_reason or [DONE] after 2 chunks",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_reset_fails_the_turn_and_one_new_connection_follows() {
    let run = replay(&["reset@5"], "").await;
    let cause = assert_failed_at(&run, 5, "stream error: connection broke mid-stream after ");
    assert!(
        cause.to_lowercase().contains("reset"),
        "names the reset: {cause}"
    );
    // The broken connection is replaced once; the rest of the run reuses it.
    assert_eq!(run.connections, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_500_fails_the_turn() {
    let run = replay(&["http-500@5"], "").await;
    assert_failed_at(
        &run,
        5,
        "HTTP 500: {\"error\":{\"code\":500,\"message\":\"simulated internal server error (agentload-sim fault http-500@5)\"",
    );
    // An error answer read whole keeps its connection.
    assert_eq!(run.connections, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_429_fails_the_turn_with_retry_after() {
    let run = replay(&["http-429@5"], "").await;
    assert_failed_at(&run, 5, "HTTP 429 (Retry-After: 1): {\"error\":");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_stream_times_out() {
    let run = replay(&["stall@5"], "[load]\nturn_timeout_s = 1.5").await;
    let cause = assert_failed_at(&run, 5, "turn timed out after 1.5 s (stalled: ");
    assert!(
        cause.contains("bytes received, none in the last 1."),
        "{cause}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_tool_ids_are_assembled_once() {
    let run = replay(&["repeat-tool-ids@5"], "").await;
    assert!(run.success, "{}", run.output);
    assert!(run.report.contains("run VALID"), "{}", run.report);
    assert!(run.records.iter().all(|r| r["status"] == "completed"));
    // Request 5 is b's second turn: the call recorded as functions.bash:b1.
    let calls = &run.records[4]["completion"]["tool_calls"];
    assert_eq!(
        calls,
        &json!([{"id": "functions.bash:b1", "name": "bash",
                 "arguments": "{\"command\":\"grep -n fix src/lib.rs\"}"}]),
        "{}",
        run.records[4]
    );
    assert_eq!(run.connections, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_answer_fails_naming_the_cap() {
    let run = replay(&["oversize@5"], "max_response_bytes = 1048576").await;
    assert_failed_at(
        &run,
        5,
        "answer exceeded endpoint.max_response_bytes = 1048576 bytes (cut after ",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_answer_under_the_default_cap_completes() {
    let run = replay(&["oversize@5"], "").await;
    assert!(run.success, "{}", run.output);
    let content = run.records[4]["completion"]["content"].as_str().unwrap();
    assert_eq!(content.len(), agentload_sim::OVERSIZE_BYTES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_run_uses_one_connection() {
    let run = replay(&[], "").await;
    assert!(run.success, "{}", run.output);
    assert_eq!(run.chat_requests, 9);
    assert_eq!(
        run.connections, 1,
        "one keep-alive connection for the phase"
    );
}

/// A proxy in front of `upstream` (`http://host:port`) that forwards each
/// connection's bytes both ways, except that before it forwards the `n`-th
/// chat request (counted over all connections) it sends the client, on that
/// connection, the answer to the request before it again: a proxy that
/// replays an answer nobody asked for. Returns its base URL.
async fn replaying_proxy(upstream: &str, n: usize) -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const CHAT: &[u8] = b"POST /v1/chat/completions HTTP/1.1\r\n";
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let upstream = upstream.trim_start_matches("http://").to_owned();
    let requests = std::sync::Arc::new(AtomicUsize::new(0));
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let (upstream, requests) = (upstream.clone(), requests.clone());
            tokio::spawn(async move {
                let mut server = tokio::net::TcpStream::connect(&upstream).await.unwrap();
                // The answer to the latest request, as forwarded so far.
                let mut answer: Vec<u8> = Vec::new();
                let (mut up, mut down) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
                loop {
                    tokio::select! {
                        read = client.read(&mut up) => {
                            let Ok(got @ 1..) = read else { return };
                            let request = &up[..got];
                            // Forwarded first: the simulator has the request
                            // before the client can read the replayed answer
                            // and close the connection.
                            if server.write_all(request).await.is_err() {
                                return;
                            }
                            if request.starts_with(CHAT) {
                                let i = requests.fetch_add(1, Ordering::SeqCst) + 1;
                                if i == n && !answer.is_empty() {
                                    let _ = client.write_all(&answer).await;
                                }
                                answer.clear();
                            }
                        }
                        read = server.read(&mut down) => {
                            let Ok(got @ 1..) = read else { return };
                            answer.extend_from_slice(&down[..got]);
                            if client.write_all(&down[..got]).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    url
}

/// A proxy replays request 4's answer to request 5 on the same keep-alive
/// connection (the answer out of step: taken as request 5's, every
/// later answer would shift by one). Its completion id repeats request 4's,
/// so turn 5 fails with that cause, its connection is closed, the rest of
/// the run gets its own answers on a new one, and the run is INVALID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_answer_on_a_kept_connection_fails_the_turn_not_the_run_after_it() {
    let run = replay_through(&[], "", Some(5)).await;
    let cause = assert_failed_at(
        &run,
        5,
        "answer out of step with its request: its completion id `chatcmpl-",
    );
    assert!(
        cause.contains(
            "is that of the answer 1 before it on this connection; the connection was closed"
        ),
        "{cause}"
    );
    assert_eq!(
        run.connections, 2,
        "the out-of-step connection was replaced"
    );
    assert!(run.output.contains("answer out of step"), "{}", run.output);
}

/// `endpoint.reuse_connections = false`: each request goes out on a
/// connection of its own, where the same proxy has no earlier answer to
/// replay, and the run is VALID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_reused_connections_a_replaying_proxy_changes_nothing() {
    let run = replay_through(&[], "reuse_connections = false", Some(5)).await;
    assert!(run.success, "{}", run.output);
    assert!(run.report.contains("run VALID"), "{}", run.report);
    assert!(run.records.iter().all(|r| r["status"] == "completed"));
    assert_eq!(run.chat_requests, 9);
    assert!(run.connections >= 9, "{} connections", run.connections);
}

/// Every fault kind has its test above (a new kind must get one).
#[test]
fn every_kind_is_tested() {
    let source = include_str!("faults.rs");
    for kind in FaultKind::ALL {
        assert!(
            source.contains(&format!("[\"{}@5\"]", kind.name())),
            "no test injects {kind}"
        );
    }
}
