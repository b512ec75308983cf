//! Fault injection on the wire: what the simulator sends for each fault kind, which request it
//! hits, and what it counts.

use std::sync::Arc;
use std::time::Duration;

use agentload_sim::{start, ApproxTokenCounter, Fault, ResponderConfig, SimConfig, SimHandle};
use serde_json::{json, Value};

async fn sim(faults: &[&str], responder: ResponderConfig) -> SimHandle {
    start(
        SimConfig {
            time_scale: 0.0,
            responder,
            faults: faults.iter().map(|f| f.parse::<Fault>().unwrap()).collect(),
            ..SimConfig::default()
        },
        Arc::new(ApproxTokenCounter),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .expect("sim starts")
}

/// A script: session `s` answers every request with a two-call tool answer.
/// The script's file is removed when the returned path is dropped.
fn tool_script() -> (ResponderConfig, tempfile::TempPath) {
    let file = tempfile::Builder::new()
        .prefix("agentload-sim-faults-")
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    let path = file.into_temp_path();
    let lines: Vec<String> = (1..=3)
        .map(|turn| {
            json!({"session_id": "s", "turn": turn, "tool_calls": [
                {"id": "c0", "function": {"name": "bash", "arguments": "{\"command\": \"ls -la src\"}"}},
                {"id": "c1", "function": {"name": "grep", "arguments": "{\"pattern\": \"fix\"}"}},
            ]})
            .to_string()
        })
        .collect();
    std::fs::write(&path, lines.join("\n")).unwrap();
    (
        ResponderConfig::Script {
            path: path.to_path_buf(),
        },
        path,
    )
}

fn request(stream: bool) -> Value {
    json!({"messages": [{"role": "user", "content": "say these five words please"}], "stream": stream})
}

async fn post(sim: &SimHandle, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", sim.url()))
        .header("X-Session-ID", "s")
        .json(body)
        .send()
        .await
        .expect("request sent")
}

/// The `data:` payloads of an SSE body.
fn data(body: &str) -> Vec<&str> {
    body.split("\n\n")
        .filter_map(|e| e.lines().find_map(|l| l.strip_prefix("data: ")))
        .collect()
}

fn is_json(s: &str) -> bool {
    serde_json::from_str::<Value>(s).is_ok()
}

#[tokio::test]
async fn only_the_nth_request_is_hit() {
    let sim = sim(&["no-chunks@2"], ResponderConfig::Echo).await;
    let mut bodies = Vec::new();
    for _ in 0..3 {
        bodies.push(post(&sim, &request(true)).await.text().await.unwrap());
    }
    assert!(bodies[0].ends_with("data: [DONE]\n\n") && bodies[0].len() > 100);
    assert_eq!(bodies[1], "data: [DONE]\n\n");
    assert_eq!(data(&bodies[2]).len(), data(&bodies[0]).len());
    assert_eq!(sim.chat_requests_received(), 3);
    let stats: Value = reqwest::get(format!("{}/agentload/stats", sim.url()))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["chat_requests_received"], 3);
    assert_eq!(stats["requests_served"], 3);
    // One reqwest client per request above, one for the stats: each its own connection.
    assert_eq!(stats["connections_accepted"], 4);
    assert_eq!(sim.connections_accepted(), 4);
    sim.shutdown().await;
}

#[tokio::test]
async fn replaced_answers() {
    let sim = sim(
        &[
            "http-500@1",
            "http-429@2",
            "wrong-content-type@3",
            "non-json@4",
            "sse-error@5",
        ],
        ResponderConfig::Echo,
    )
    .await;
    let r = post(&sim, &request(true)).await;
    assert_eq!(r.status(), 500);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], 500);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("fault http-500@1"));

    let r = post(&sim, &request(true)).await;
    assert_eq!(r.status(), 429);
    assert_eq!(r.headers()["retry-after"], "1");

    let r = post(&sim, &request(true)).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/html; charset=utf-8");
    assert!(r.text().await.unwrap().starts_with("<!DOCTYPE html>"));

    let r = post(&sim, &request(true)).await;
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let body = r.text().await.unwrap();
    let events = data(&body);
    assert_eq!(events.last(), Some(&"[DONE]"));
    assert!(events.len() > 1);
    assert!(
        events[..events.len() - 1].iter().all(|e| !is_json(e)),
        "{body}"
    );

    let body = post(&sim, &request(true)).await.text().await.unwrap();
    let error = body
        .split("\n\n")
        .find(|e| e.starts_with("event: error\n"))
        .expect(&body);
    assert!(error.contains("fault sse-error@5"), "{error}");
    assert!(body.ends_with("data: [DONE]\n\n"));
    assert_eq!(sim.requests_served(), 5);
    sim.shutdown().await;
}

#[tokio::test]
async fn bad_json_chunk_is_one_cut_chunk_in_a_normal_stream() {
    let sim = sim(&["bad-json-chunk@1"], ResponderConfig::Echo).await;
    let body = post(&sim, &request(true)).await.text().await.unwrap();
    let events = data(&body);
    let bad: Vec<&&str> = events
        .iter()
        .filter(|e| !is_json(e) && **e != "[DONE]")
        .collect();
    assert_eq!(bad.len(), 1, "{body}");
    assert!(bad[0].starts_with("{\"choices\""), "{}", bad[0]);
    assert_eq!(events.last(), Some(&"[DONE]"));
    assert!(body.contains("\"finish_reason\":\"stop\""));
    sim.shutdown().await;
}

#[tokio::test]
async fn truncate_ends_the_body_cleanly_mid_stream() {
    let sim = sim(&["truncate@1"], ResponderConfig::Echo).await;
    let body = post(&sim, &request(true))
        .await
        .text()
        .await
        .expect("a clean end");
    let events = data(&body);
    assert_eq!(events.len(), 2, "role and first token only: {body}");
    assert!(events.iter().all(|e| is_json(e)));
    assert!(!body.contains("finish_reason\":\"") && !body.contains("[DONE]"));
    // The connection is still usable: the server is fine.
    let body = post(&sim, &request(true)).await.text().await.unwrap();
    assert!(body.ends_with("data: [DONE]\n\n"));
    sim.shutdown().await;
}

#[tokio::test]
async fn reset_breaks_the_connection_mid_stream() {
    let sim = sim(&["reset@1"], ResponderConfig::Echo).await;
    let mut r = post(&sim, &request(true)).await;
    assert_eq!(r.status(), 200);
    let first = r.chunk().await.unwrap().expect("the first token's frame");
    assert!(String::from_utf8_lossy(&first).contains("\"role\":\"assistant\""));
    let mut broke = false;
    loop {
        match r.chunk().await {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(_) => {
                broke = true;
                break;
            }
        }
    }
    assert!(broke, "the body does not end cleanly");
    sim.shutdown().await;
}

#[tokio::test]
async fn stall_sends_nothing_after_the_first_token_until_shutdown() {
    let sim = sim(&["stall@1"], ResponderConfig::Echo).await;
    let mut r = post(&sim, &request(true)).await;
    r.chunk().await.unwrap().expect("the first token's frame");
    let next = tokio::time::timeout(Duration::from_millis(500), r.chunk()).await;
    assert!(next.is_err(), "stalled: {next:?}");
    // Shutdown does not wait for the stall forever.
    tokio::time::timeout(Duration::from_secs(5), sim.shutdown())
        .await
        .expect("shutdown ends the stall");
}

#[tokio::test]
async fn repeat_tool_ids_repeats_id_and_name_in_every_delta() {
    let (script, _file) = tool_script();
    let sim = sim(&["repeat-tool-ids@2"], script).await;
    let plain = post(&sim, &request(true)).await.text().await.unwrap();
    let repeated = post(&sim, &request(true)).await.text().await.unwrap();
    let deltas = |body: &str| -> Vec<Value> {
        data(body)
            .into_iter()
            .filter(|e| *e != "[DONE]")
            .map(|e| serde_json::from_str::<Value>(e).unwrap())
            .filter_map(|c| c.pointer("/choices/0/delta/tool_calls/0").cloned())
            .collect()
    };
    let (plain, repeated) = (deltas(&plain), deltas(&repeated));
    assert_eq!(plain.len(), repeated.len());
    assert!(plain.iter().any(|d| d.get("id").is_none()));
    for d in &repeated {
        let (id, name) = match d["index"].as_u64().unwrap() {
            0 => ("c0", "bash"),
            _ => ("c1", "grep"),
        };
        assert_eq!(
            (d["id"].as_str(), d["function"]["name"].as_str()),
            (Some(id), Some(name)),
            "{d}"
        );
    }
    // The argument pieces are the same.
    let args = |ds: &[Value]| -> String {
        ds.iter()
            .map(|d| d["function"]["arguments"].as_str().unwrap())
            .collect()
    };
    assert_eq!(args(&plain), args(&repeated));
    sim.shutdown().await;
}

#[tokio::test]
async fn oversize_adds_four_mib_of_content() {
    let sim = sim(&["oversize@1"], ResponderConfig::Echo).await;
    let body = post(&sim, &request(true)).await.text().await.unwrap();
    let content: usize = data(&body)
        .into_iter()
        .filter(|e| *e != "[DONE]")
        .map(|e| serde_json::from_str::<Value>(e).unwrap())
        .filter_map(|c| {
            c.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                .map(str::len)
        })
        .sum();
    assert_eq!(
        content,
        agentload_sim::OVERSIZE_BYTES + "say these five words please".len()
    );
    assert!(body.ends_with("data: [DONE]\n\n"));
    sim.shutdown().await;
}

#[tokio::test]
async fn stream_faults_on_a_non_streamed_request_say_so() {
    let sim = sim(&["truncate@1", "http-500@2"], ResponderConfig::Echo).await;
    let r = post(&sim, &request(false)).await;
    assert_eq!(r.status(), 500);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "agentload-sim fault `truncate` targets request 1, which is not streamed"
    );
    assert_eq!(post(&sim, &request(false)).await.status(), 500);
    assert_eq!(post(&sim, &request(false)).await.status(), 200);
    sim.shutdown().await;
}
