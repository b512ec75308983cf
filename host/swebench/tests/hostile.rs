//! The client against hostile services (loopback servers written here): a
//! status answer without end, an artifact without end, an artifact that
//! drips past the run's deadline, an interrupt during the downloads. Each
//! stops at its cap or deadline, says so, and leaves no partial file.

use agentload_swebench::files::RUNS_DIR;
use agentload_swebench::{Error, RunOptions, RunRequest, Service, Template};
use serde_json::{json, Map};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const RUN: &str = "r1";

/// How the service answers a status poll, and its artifact.
#[derive(Clone, Copy)]
enum Hostile {
    /// A `running` status padded to this many bytes, every time.
    HugeStatus(usize),
    /// The run succeeded; `preds.json` never ends.
    EndlessArtifact,
    /// The run succeeded; `preds.json` (1000 bytes) comes a byte every 100 ms.
    DrippingArtifact,
}

/// Serves one run as `hostile` says; returns its URL.
async fn service(hostile: Hostile) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer(socket, hostile));
        }
    });
    url
}

fn whole(status: u16, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

async fn answer(mut socket: TcpStream, hostile: Hostile) {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if socket.read(&mut byte).await.unwrap_or(0) == 0 {
            return;
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    let mut body = vec![0u8; length];
    let _ = socket.read_exact(&mut body).await;
    let line = head.lines().next().unwrap_or("").to_owned();
    let succeeded = json!({"run_id": RUN, "status": "succeeded",
        "result": {"total_instances": 1, "submitted_instances": 1, "completed_instances": 1,
                   "resolved_instances": 1, "unresolved_instances": 0, "empty_patch_instances": 0,
                   "error_instances": 0, "resolved_ids": ["a__a-1"], "unresolved_ids": [],
                   "schema_version": 2},
        "artifacts": [{"name": "preds.json", "url": format!("/v1/runs/{RUN}/artifacts/preds.json")}]});
    let reply = if line.starts_with("post /v1/runs ") {
        whole(200, &json!({"run_id": RUN, "status": "queued"}).to_string())
    } else if line.starts_with(&format!("post /v1/runs/{RUN}/cancel")) {
        whole(
            200,
            &json!({"run_id": RUN, "status": "cancelled"}).to_string(),
        )
    } else if line.starts_with(&format!("get /v1/runs/{RUN} ")) {
        match hostile {
            Hostile::HugeStatus(n) => {
                let pad = "x".repeat(n);
                whole(
                    200,
                    &json!({"run_id": RUN, "status": "running", "pad": pad}).to_string(),
                )
            }
            _ => whole(200, &succeeded.to_string()),
        }
    } else if line.contains("/artifacts/preds.json") {
        match hostile {
            Hostile::EndlessArtifact => {
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n")
                    .await;
                let block = vec![b'p'; 64 << 10];
                while socket.write_all(&block).await.is_ok() {}
                return;
            }
            _ => {
                let _ = socket
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n")
                    .await;
                while socket.write_all(b"p").await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                return;
            }
        }
    } else {
        whole(404, "{}")
    };
    let _ = socket.write_all(&reply).await;
}

fn request() -> RunRequest {
    RunRequest {
        model_name: "m".into(),
        endpoint_urls: ["http://endpoint:1".into()],
        endpoint_api_key: None,
        generation_params: Map::new(),
        subset: "verified".into(),
        split: "test".into(),
        workers: 1,
        max_eval_workers: 1,
        evaluated_instance_ids: vec!["a__a-1".into()],
        template: Template::QwenTools,
    }
}

fn options(dir: &Path, timeout: Duration, cap: u64) -> RunOptions<'_> {
    RunOptions {
        report_dir: dir,
        poll_interval: Duration::from_millis(5),
        timeout,
        max_artifact_bytes: cap,
    }
}

/// No `.tmp` (nor the artifact) left in the run's folder.
fn no_partial(dir: &Path) {
    let run = dir.join(RUNS_DIR).join(RUN);
    assert!(!run.join("preds.json").exists());
    assert!(!run.join("preds.json.tmp").exists());
}

/// A status answer past 32 MiB (a 300 MB one took 1.2 GB) is refused: the
/// run is abandoned, naming the cap, and cancelled on the service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_past_its_cap_is_refused_and_the_run_cancelled() {
    let url = service(Hostile::HugeStatus(33 << 20)).await;
    let dir = tempfile::tempdir().unwrap();
    let service = Service::new(&url, None).unwrap();
    let err = service
        .run(
            &request(),
            &options(dir.path(), Duration::from_secs(5), 1 << 20),
            |_| {},
            std::future::pending(),
        )
        .await
        .unwrap_err();
    let Error::Abandoned { cause, .. } = &err else {
        panic!("{err}");
    };
    assert!(
        matches!(**cause, Error::TooLarge { cap: 33554432, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("(a JSON answer)"), "{err}");
    assert!(err.to_string().contains("cancel sent"), "{err}");
}

/// An artifact past its cap is stopped there: a warning names the cap, and
/// nothing of it is kept; the run is still scored from its status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_past_its_cap_is_stopped_and_nothing_of_it_kept() {
    let url = service(Hostile::EndlessArtifact).await;
    let dir = tempfile::tempdir().unwrap();
    let service = Service::new(&url, None).unwrap();
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        service.run(
            &request(),
            &options(dir.path(), Duration::from_secs(60), 1 << 20),
            |_| {},
            std::future::pending(),
        ),
    )
    .await
    .expect("an endless artifact is read without end")
    .unwrap();
    assert_eq!(outcome.warnings.len(), 1, "{:?}", outcome.warnings);
    assert!(
        outcome.warnings[0].contains("more than 1048576 bytes")
            && outcome.warnings[0].contains("(an artifact)"),
        "{:?}",
        outcome.warnings
    );
    assert!(outcome.scored.score.is_some());
    no_partial(dir.path());
}

/// The downloads end at the run's deadline (`service_timeout_s` from the
/// submission): an artifact still dripping then is a warning saying so, and
/// the outcome comes at the deadline, not when the drip ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn downloads_stop_at_the_service_deadline() {
    let url = service(Hostile::DrippingArtifact).await;
    let dir = tempfile::tempdir().unwrap();
    let service = Service::new(&url, None).unwrap();
    let started = Instant::now();
    let outcome = tokio::time::timeout(
        Duration::from_secs(30),
        service.run(
            &request(),
            &options(dir.path(), Duration::from_secs(2), 1 << 20),
            |_| {},
            std::future::pending(),
        ),
    )
    .await
    .expect("a dripping artifact is waited for past the deadline")
    .unwrap();
    // At the 2 s deadline (late on a loaded machine), long before the 100 s drip ends.
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(
        outcome.warnings[0].contains("not downloaded: service_timeout_s ran out (2 s after"),
        "{:?}",
        outcome.warnings
    );
    no_partial(dir.path());
}

/// An interrupt while an artifact downloads ends the run at once: nothing is
/// left half-written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_ends_the_downloads() {
    let url = service(Hostile::DrippingArtifact).await;
    let dir = tempfile::tempdir().unwrap();
    let service = Arc::new(Service::new(&url, None).unwrap());
    let started = Instant::now();
    let interrupt = tokio::time::sleep(Duration::from_millis(500));
    let err = tokio::time::timeout(
        Duration::from_secs(30),
        service.run(
            &request(),
            &options(dir.path(), Duration::from_secs(600), 1 << 20),
            |_| {},
            interrupt,
        ),
    )
    .await
    .expect("an interrupt does not stop the downloads")
    .unwrap_err();
    // The run had ended on the service: nothing to cancel.
    assert!(matches!(err, Error::Interrupted), "{err}");
    // At the interrupt (0.5 s; late on a loaded machine), long before the 100 s drip ends.
    assert!(started.elapsed() < Duration::from_secs(20));
    no_partial(dir.path());
}
