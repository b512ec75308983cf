//! `agentload k8s fetch` against hostile coordinators (loopback servers
//! written here): a file that drips, a file that never ends, a redirect, a
//! listing without end or with too many names, a server that never
//! answers, a file that fails its digest. Each fails with its cause within
//! its deadline, and leaves OUT as it was: nothing is written into OUT
//! until the whole listing is verified, and an OUT that holds files is
//! refused without `--force`.

use crate::common::*;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does for one path.
#[derive(Clone)]
enum Serve {
    /// These bytes (a whole response), then close.
    Bytes(Vec<u8>),
    /// The head, then one byte of body every 100 ms, forever.
    Drip(&'static str),
    /// The head, then 64 KiB of body after 64 KiB, forever.
    Endless(&'static str),
    /// Nothing, ever (the connection stays open).
    Silent,
}

/// A server answering `GET path` as `routes` says (404 otherwise); counts
/// the requests it read.
async fn coordinator(routes: Vec<(String, Serve)>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let (routes, counted) = (Arc::new(routes), hits.clone());
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let (routes, hits) = (routes.clone(), counted.clone());
            tokio::spawn(serve(socket, routes, hits));
        }
    });
    (url, hits)
}

async fn serve(mut socket: TcpStream, routes: Arc<Vec<(String, Serve)>>, hits: Arc<AtomicUsize>) {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if socket.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    hits.fetch_add(1, Ordering::SeqCst);
    let line = String::from_utf8_lossy(&head).into_owned();
    let path = line.split(' ').nth(1).unwrap_or("").to_owned();
    let serve = routes
        .iter()
        .find(|(p, _)| *p == path)
        .map(|(_, s)| s.clone())
        .unwrap_or_else(|| Serve::Bytes(plain(404, "")));
    match serve {
        Serve::Bytes(bytes) => {
            let _ = socket.write_all(&bytes).await;
        }
        Serve::Drip(head) => {
            let _ = socket.write_all(head.as_bytes()).await;
            while socket.write_all(b"x").await.is_ok() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        Serve::Endless(head) => {
            let _ = socket.write_all(head.as_bytes()).await;
            let block = vec![b'x'; 64 << 10];
            while socket.write_all(&block).await.is_ok() {}
        }
        Serve::Silent => tokio::time::sleep(Duration::from_secs(3600)).await,
    }
}

/// A whole response with `body`.
fn plain(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A listing entry for `bytes` stored at `path`.
fn entry(path: &str, bytes: &[u8]) -> serde_json::Value {
    serde_json::json!({"path": path, "bytes": bytes.len(), "sha256": hex::encode(Sha256::digest(bytes))})
}

/// `agentload k8s fetch URL OUT EXTRA…` in `dir`, killed if it runs past
/// `limit`: its output and status, or `None` when it had to be killed.
async fn fetch(
    url: &str,
    out: &Path,
    extra: &[&str],
    dir: &Path,
    limit: u64,
) -> Option<(bool, String)> {
    let mut args = vec!["k8s", "fetch", url, out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let child = spawn(&args, dir);
    let done = tokio::time::timeout(Duration::from_secs(limit), child.wait_with_output()).await;
    done.ok().map(|o| {
        let o = o.unwrap();
        (o.status.success(), text(&o))
    })
}

/// Nothing of the fetch is left beside OUT either (its staging folder).
fn nothing_beside(out: &Path) {
    let parent = out.parent().unwrap();
    let left: Vec<String> = std::fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".fetch-"))
        .collect();
    assert!(left.is_empty(), "staging left: {left:?}");
}

/// A file listed as 1,000 bytes that comes one byte every 100 ms, and a
/// coordinator that never answers: each fails within its deadline
/// (`--timeout-s 1`), naming what it waited for, and OUT is not created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dripping_file_or_a_silent_coordinator_fails_within_its_deadline() {
    let dir = scratch("fetch-drip");
    let listing = serde_json::json!([entry("turns.jsonl", &[b'x'; 1000])]).to_string();
    let (url, _) = coordinator(vec![
        ("/v1/results".into(), Serve::Bytes(plain(200, &listing))),
        (
            "/v1/results/turns.jsonl".into(),
            Serve::Drip("HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n"),
        ),
    ])
    .await;
    let out = dir.path().join("out");
    let started = Instant::now();
    let (ok, output) = fetch(&url, &out, &["--timeout-s", "1"], dir.path(), 60)
        .await
        .expect("the fetch hangs on a dripping file");
    assert!(
        !ok && output.contains("turns.jsonl: not whole after 1."),
        "{output}"
    );
    // At the 1 s deadline (late on a loaded machine), long before the 100 s drip ends.
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(!out.exists());
    nothing_beside(&out);
    let (silent, _) = coordinator(vec![("/v1/results".into(), Serve::Silent)]).await;
    let (ok, output) = fetch(&silent, &out, &["--timeout-s", "1"], dir.path(), 60)
        .await
        .expect("the fetch hangs on a coordinator that never answers");
    assert!(!ok && output.contains("/v1/results"), "{output}");
    assert!(!out.exists());
}

/// A file listed as 10 bytes that streams without end (and one whose
/// Content-Length says 4 GiB) is stopped past its listed size, not held or
/// written whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_past_its_listed_size_is_stopped() {
    let dir = scratch("fetch-endless");
    let listing = serde_json::json!([entry("turns.jsonl", b"0123456789")]).to_string();
    let (url, _) = coordinator(vec![
        ("/v1/results".into(), Serve::Bytes(plain(200, &listing))),
        (
            "/v1/results/turns.jsonl".into(),
            Serve::Endless("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n"),
        ),
    ])
    .await;
    let out = dir.path().join("out");
    let (ok, output) = fetch(&url, &out, &[], dir.path(), 60)
        .await
        .expect("the fetch reads an endless file");
    assert!(
        !ok && output.contains("turns.jsonl: the coordinator sends more than its listed 10 bytes"),
        "{output}"
    );
    assert!(!out.exists());
    nothing_beside(&out);
    let (url, _) = coordinator(vec![
        ("/v1/results".into(), Serve::Bytes(plain(200, &listing))),
        (
            "/v1/results/turns.jsonl".into(),
            Serve::Endless("HTTP/1.1 200 OK\r\ncontent-length: 4294967296\r\n\r\n"),
        ),
    ])
    .await;
    let (ok, output) = fetch(&url, &out, &[], dir.path(), 60).await.unwrap();
    assert!(
        !ok && output.contains("more than its listed 10 bytes (4294967296 so far)"),
        "{output}"
    );
}

/// A redirect is an error naming where it points; it is not followed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_is_named_and_not_followed() {
    let dir = scratch("fetch-redirect");
    let (elsewhere, hits) =
        coordinator(vec![("/v1/results".into(), Serve::Bytes(plain(200, "[]")))]).await;
    let redirect = format!(
        "HTTP/1.1 302 Found\r\nlocation: {elsewhere}/v1/results\r\ncontent-length: 0\r\n\r\n"
    );
    let (url, _) = coordinator(vec![(
        "/v1/results".into(),
        Serve::Bytes(redirect.into_bytes()),
    )])
    .await;
    let out = dir.path().join("out");
    let (ok, output) = fetch(&url, &out, &[], dir.path(), 60).await.unwrap();
    assert!(
        !ok && output.contains(&format!(
            "redirects (HTTP 302) to `{elsewhere}/v1/results`: redirects are not followed"
        )),
        "{output}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0, "the redirect was followed");
    assert!(!out.exists());
}

/// A listing over 1 MiB (3 million names would take 836 MB), and one of
/// more files than a run has, are refused before any file is asked for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_without_bounds_is_refused() {
    let dir = scratch("fetch-listing");
    let out = dir.path().join("out");
    let one = r#"{"path":"a","bytes":0,"sha256":""}"#;
    let (url, hits) = coordinator(vec![(
        "/v1/results".into(),
        Serve::Endless("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n"),
    )])
    .await;
    let (ok, output) = fetch(&url, &out, &[], dir.path(), 60).await.unwrap();
    assert!(
        !ok && output.contains("the listing is over 1048576 bytes"),
        "{output}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let many = format!("[{}]", vec![one; 10_001].join(","));
    let (url, hits) = coordinator(vec![(
        "/v1/results".into(),
        Serve::Bytes(plain(200, &many)),
    )])
    .await;
    let (ok, output) = fetch(&url, &out, &[], dir.path(), 60).await.unwrap();
    assert!(
        !ok && output.contains("the listing names 10001 files, more than the 10000 a run has"),
        "{output}"
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1, "no file was asked for");
    assert!(!out.exists());
}

/// OUT gets nothing until every file is verified (the second one's digest
/// is wrong: the first is not left in OUT either); an OUT holding files is
/// refused untouched without `--force`, and with it the files go in beside
/// the user's own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_reaches_out_until_the_whole_listing_is_verified() {
    let dir = scratch("fetch-verify");
    let (a, b) = (b"first file\n".as_slice(), b"second file\n".as_slice());
    let mut wrong = entry("performance/b.json", b);
    wrong["sha256"] = serde_json::json!(hex::encode(Sha256::digest(b"another")));
    let routes = |second: serde_json::Value| {
        vec![
            (
                "/v1/results".into(),
                Serve::Bytes(plain(
                    200,
                    &serde_json::json!([entry("a.txt", a), second]).to_string(),
                )),
            ),
            (
                "/v1/results/a.txt".into(),
                Serve::Bytes(plain(200, std::str::from_utf8(a).unwrap())),
            ),
            (
                "/v1/results/performance/b.json".into(),
                Serve::Bytes(plain(200, std::str::from_utf8(b).unwrap())),
            ),
        ]
    };
    let (bad, _) = coordinator(routes(wrong)).await;
    let out = dir.path().join("out");
    let (ok, output) = fetch(&bad, &out, &[], dir.path(), 60).await.unwrap();
    assert!(
        !ok && output.contains("performance/b.json arrived as 12 bytes"),
        "{output}"
    );
    assert!(
        !out.exists(),
        "a.txt was written before b.json was verified"
    );
    nothing_beside(&out);
    // An OUT holding a file: refused untouched, then written into with --force.
    let (good, _) = coordinator(routes(entry("performance/b.json", b))).await;
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("mine.txt"), "keep").unwrap();
    let (ok, output) = fetch(&good, &out, &[], dir.path(), 60).await.unwrap();
    assert!(!ok && output.contains("already holds files"), "{output}");
    assert!(!out.join("a.txt").exists());
    let (ok, output) = fetch(&good, &out, &["--force"], dir.path(), 60)
        .await
        .unwrap();
    assert!(ok, "{output}");
    assert_eq!(std::fs::read(out.join("a.txt")).unwrap(), a);
    assert_eq!(std::fs::read(out.join("performance/b.json")).unwrap(), b);
    assert_eq!(
        std::fs::read_to_string(out.join("mine.txt")).unwrap(),
        "keep"
    );
    nothing_beside(&out);
}
