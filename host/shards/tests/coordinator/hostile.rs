//! The coordinator against callers that are not its shards, or shards that
//! misbehave: forged and early `done`s, forged heartbeats and absurd
//! values, uploads of other names and past the run's budget, oversized JSON,
//! two uploads at once, and more connections than it serves.

use super::*;
use serde_json::{json, Value};
use std::net::SocketAddr;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const TOKEN: &str = "x-agentload-shard-token";

/// Registers shard `index` of `count` as a plain HTTP client; its token.
async fn register(addr: SocketAddr, index: u32, count: u32) -> String {
    let answer: Value = reqwest::Client::new()
        .post(format!("http://{addr}/v1/register"))
        .json(&json!({"index": index, "count": count, "run_id": "run",
                      "config_digest": "sha256:c", "host": format!("host-{index}"),
                      "samples": [{"sent_ns": 1, "coordinator_ns": 2, "received_ns": 3}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["token"]
        .as_str()
        .expect("a registration's token")
        .to_owned()
}

/// A call with `token` (none when empty): its status and answer's text.
async fn call(
    method: reqwest::Method,
    url: String,
    token: &str,
    body: impl Into<reqwest::Body>,
) -> (u16, String) {
    let mut request = reqwest::Client::new().request(method, url).body(body);
    if !token.is_empty() {
        request = request.header(TOKEN, token);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn post(addr: SocketAddr, what: &str, token: &str, body: &Value) -> (u16, String) {
    let url = format!("http://{addr}/v1/{what}");
    call(reqwest::Method::POST, url, token, body.to_string()).await
}

async fn put(addr: SocketAddr, path: &str, token: &str, body: Vec<u8>) -> (u16, String) {
    let url = format!("http://{addr}/v1/upload/{path}");
    call(reqwest::Method::PUT, url, token, body).await
}

/// What the coordinator stored an upload as.
fn stored(answer: &str) -> Value {
    serde_json::from_str(answer).unwrap()
}

/// The `done` of shard `index` listing `files` (the stored answers).
fn done(index: u32, files: &[&Value]) -> Value {
    json!({"index": index, "files": files})
}

/// A forger's `done` for a shard (no token, or another's) is refused, and
/// so is the shard's own early one: `done` takes exactly the files the
/// shard uploaded, `shard.json` among them and a header of this run and
/// shard. The real shard then completes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_or_early_done_is_refused_and_the_real_shard_completes() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator(dir.path(), 2, Duration::from_secs(5));
    let addr = c.addr();
    let (zero, one) = (register(addr, 0, 2).await, register(addr, 1, 2).await);
    let forged = done(1, &[]);
    for token in ["", zero.as_str()] {
        let (status, why) = post(addr, "done", token, &forged).await;
        assert_eq!(status, 403, "{why}");
        assert!(
            why.contains("does not carry shard 1's registration token"),
            "{why}"
        );
    }
    let (status, why) = post(addr, "done", &one, &forged).await;
    assert_eq!(status, 409, "{why}");
    assert!(
        why.contains("shard 1: shard.json was not uploaded"),
        "{why}"
    );
    // A header of another shard, then files listed and not uploaded, or
    // uploaded and not listed.
    let theirs = work(0, 2, &[]);
    let header = std::fs::read(theirs.path().join("shard.json")).unwrap();
    let (status, answer) = put(addr, "1/shard.json", &one, header).await;
    assert_eq!(status, 200, "{answer}");
    let wrong_header = stored(&answer);
    let (status, why) = post(addr, "done", &one, &done(1, &[&wrong_header])).await;
    assert_eq!(status, 409);
    assert!(
        why.contains("shard.json is shard 0 of 2 of run run"),
        "{why}"
    );
    let mine = work(1, 2, &[]);
    let header = std::fs::read(mine.path().join("shard.json")).unwrap();
    let header = stored(&put(addr, "1/shard.json", &one, header).await.1);
    let turns = stored(&put(addr, "1/turns.jsonl", &one, b"{}\n".to_vec()).await.1);
    let (_, why) = post(addr, "done", &one, &done(1, &[&header])).await;
    assert!(
        why.contains("turns.jsonl was uploaded but is not listed"),
        "{why}"
    );
    let mut ghost = turns.clone();
    ghost["path"] = json!("sessions.json");
    let (_, why) = post(addr, "done", &one, &done(1, &[&header, &turns, &ghost])).await;
    assert!(
        why.contains("sessions.json is listed but was not uploaded"),
        "{why}"
    );
    let (status, why) = post(addr, "done", &one, &done(1, &[&header, &turns])).await;
    assert_eq!(status, 200, "{why}");
    let status = c.status();
    assert!(status.shards.iter().any(|s| s.index == 1 && s.uploaded));
    assert!(status.shards.iter().any(|s| s.index == 0 && !s.uploaded));
    assert!(!zero.is_empty());
}

/// An upload of a name no shard uploads (a 2 GiB one was kept in a VALID
/// run's directory) is refused before its body is read; uploads past the
/// run's budget are refused and leave nothing behind; a file uploaded again
/// gives its earlier bytes back to the budget once it replaced them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_of_other_names_or_past_the_budget_are_refused_and_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator_with(dir.path(), 1, Duration::from_secs(5), 1 << 20);
    let addr = c.addr();
    let token = register(addr, 0, 1).await;
    let (status, why) = put(addr, "0/evil.bin", &token, vec![0; 4096]).await;
    assert_eq!(status, 400, "{why}");
    assert!(
        why.contains(r#"\"evil.bin\" is not a file a shard uploads"#),
        "{why}"
    );
    let (status, why) = put(addr, "0/turns.jsonl", "", vec![b'x'; 10]).await;
    assert_eq!(status, 403, "{why}");
    // One byte past the budget (a client still sending much more when the refusal comes
    // would see its connection reset rather than the answer).
    let (status, why) = put(addr, "0/turns.jsonl", &token, vec![b'x'; (1 << 20) + 1]).await;
    assert_eq!(status, 413, "{why}");
    assert!(
        why.contains("would pass their budget of 1048576 bytes"),
        "{why}"
    );
    let shard = dir.path().join("shards/0");
    let left: Vec<_> = std::fs::read_dir(&shard)
        .map(|d| d.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left behind: {left:?}");
    // 500 KiB three times under one name fits a 1 MiB budget (each replaces the one
    // before, once it is whole); 500 KiB more under another name does not.
    for _ in 0..3 {
        let (status, why) = put(addr, "0/turns.jsonl", &token, vec![b'y'; 500 << 10]).await;
        assert_eq!(status, 200, "{why}");
    }
    let (status, _) = put(addr, "0/sessions.jsonl", &token, vec![b'z'; 600 << 10]).await;
    assert_eq!(status, 413);
    assert_eq!(
        std::fs::read(shard.join("turns.jsonl")).unwrap().len(),
        500 << 10
    );
    assert!(!shard.join("sessions.jsonl").exists());
}

/// A JSON call over its cap (a 1 GiB heartbeat took shard 0 to 1.07 GB) is
/// refused at the cap, whatever its content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_json_call_over_its_cap_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator(dir.path(), 1, Duration::from_secs(5));
    let addr = c.addr();
    let token = register(addr, 0, 1).await;
    // A valid heartbeat, padded with JSON whitespace to just past the cap.
    let beat = json!({"index": 0, "phase": "performance",
                      "offset": {"offset_ns": 0, "uncertainty_ns": 1, "samples": 1}});
    let padded = format!("{}{beat}", " ".repeat(1 << 20));
    let url = format!("http://{addr}/v1/heartbeat");
    let (status, why) = call(reqwest::Method::POST, url, &token, padded).await;
    assert_eq!(status, 413, "{why}");
    assert!(
        why.contains("a call's JSON body is at most 1048576 bytes"),
        "{why}"
    );
    let (status, why) = post(addr, "heartbeat", &token, &beat).await;
    assert_eq!(status, 200, "{why}");
}

/// A heartbeat is taken only from the shard that registered (a forger's is
/// refused), with its offset's uncertainty bounded (a huge one would push a
/// barrier's start hours away), and the live sums saturate rather than wrap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_count_only_from_their_shard_within_bounds_and_sums_saturate() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator(dir.path(), 2, Duration::from_secs(5));
    let addr = c.addr();
    let tokens = [register(addr, 0, 2).await, register(addr, 1, 2).await];
    let beat = |index: u32, uncertainty_ns: u64, completed: u64| {
        json!({"index": index, "phase": "performance",
               "offset": {"offset_ns": -5, "uncertainty_ns": uncertainty_ns, "samples": 16},
               "live": {"completed": completed, "failed": 0, "output_tokens": u64::MAX,
                        "ttft_us": [[1000, u64::MAX]]}})
    };
    for token in ["", tokens[0].as_str()] {
        let (status, why) = post(addr, "heartbeat", token, &beat(1, 1, 5)).await;
        assert_eq!(status, 403, "{why}");
    }
    let (status, why) = post(addr, "heartbeat", &tokens[1], &beat(1, u64::MAX, 5)).await;
    assert_eq!(status, 400, "{why}");
    assert!(why.contains("uncertainty"), "{why}");
    let long_phase = json!({"index": 1, "phase": "p".repeat(65),
                            "offset": {"offset_ns": 0, "uncertainty_ns": 1, "samples": 1}});
    assert_eq!(
        post(addr, "heartbeat", &tokens[1], &long_phase).await.0,
        400
    );
    for (i, token) in tokens.iter().enumerate() {
        let (status, why) = post(addr, "heartbeat", token, &beat(i as u32, 1, u64::MAX)).await;
        assert_eq!(status, 200, "{why}");
    }
    let status: Value = reqwest::get(format!("http://{addr}/v1/status"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(status["live"]["completed"], json!(u64::MAX), "{status}");
    assert_eq!(status["live"]["output_tokens"], json!(u64::MAX), "{status}");
    assert_eq!(status["live"]["shards_reporting"], 2);
}

/// `sessions.jsonl` and `sessions.json` uploaded at once (their temporary
/// files were both `sessions.part`): each keeps its own, and both arrive
/// whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_uploads_of_one_stem_at_once_keep_their_own_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator(dir.path(), 1, Duration::from_secs(5));
    let addr = c.addr();
    let token = register(addr, 0, 1).await;
    let long: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    // The first half of sessions.jsonl, by hand; sessions.json whole; then
    // the rest of sessions.jsonl.
    let mut slow = TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "PUT /v1/upload/0/sessions.jsonl HTTP/1.1\r\nhost: x\r\n{TOKEN}: {token}\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        long.len()
    );
    slow.write_all(head.as_bytes()).await.unwrap();
    slow.write_all(&long[..100_000]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, why) = put(addr, "0/sessions.json", &token, b"[1,2,3]".to_vec()).await;
    assert_eq!(status, 200, "{why}");
    slow.write_all(&long[100_000..]).await.unwrap();
    let mut answer = String::new();
    slow.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let shard = dir.path().join("shards/0");
    assert_eq!(
        std::fs::read(shard.join("sessions.json")).unwrap(),
        b"[1,2,3]"
    );
    assert!(std::fs::read(shard.join("sessions.jsonl")).unwrap() == long);
}

/// Connections past the cap are closed as they come, and a connection that
/// sends no request head is closed after the head timeout (10 s), which
/// frees its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_are_closed_and_silent_ones_time_out() {
    let dir = tempfile::tempdir().unwrap();
    let c = coordinator(dir.path(), 1, Duration::from_secs(60));
    let addr = c.addr();
    let mut held = Vec::new();
    for _ in 0..530 {
        held.push(TcpStream::connect(addr).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let closed = |held: &mut Vec<TcpStream>| {
        held.iter_mut()
            .filter(|s| {
                let mut byte = [0u8; 1];
                // Closed: a read returns 0 (or an error) at once.
                !matches!(s.try_read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            })
            .count()
    };
    assert_eq!(closed(&mut held), 530 - 512, "past the cap of 512");
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!(closed(&mut held), 530, "silent heads time out");
    let status = reqwest::get(format!("http://{addr}/v1/status"))
        .await
        .unwrap();
    assert!(status.status().is_success());
}
