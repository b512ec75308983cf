//! Fail fast, and fail clearly: what can be checked before the first
//! measured request is checked then, and a user error prints its cause.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use std::path::Path;
use std::process::Stdio;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn echo() -> SimConfig {
    SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..Default::default()
    }
}

/// A server on loopback that answers every request with `response`.
async fn canned_server(response: &'static str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = sock.read(&mut buf).await;
                let _ = sock.write_all(response.as_bytes()).await;
            });
        }
    });
    url
}

async fn run_against(url: &str, dir: &Path, extra: &str) -> std::process::Output {
    let config = edge_config(dir, url, "num_trajectories_to_issue = 1", extra);
    agentload(&["run", config.to_str().unwrap(), "--out", "out"], dir).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_endpoint_stops_the_run_before_any_turn_naming_the_cause() {
    // A closed port.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let html = canned_server(
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 26\r\nConnection: close\r\n\r\n<html><body>hi</body></html>",
    )
    .await;
    let missing = canned_server(
        "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 9\r\nConnection: close\r\n\r\nnot found",
    )
    .await;
    let cases = [
        (format!("http://127.0.0.1:{closed}"), "Connection refused"),
        (
            html,
            "did not answer with an OpenAI model list (content type text/html",
        ),
        (missing, "answered HTTP 404: not found"),
    ];
    for (url, cause) in cases {
        let dir = scratch("endpoint");
        let run = run_against(&url, dir.path(), "").await;
        let out = text(&run);
        assert_eq!(run.status.code(), Some(1), "{url}: {out}");
        assert!(out.contains("endpoint check failed"), "{url}: {out}");
        assert!(
            out.to_lowercase().contains(&cause.to_lowercase()),
            "{url}: {out}"
        );
        assert!(
            !dir.path().join("out/turns.jsonl").exists(),
            "{url}: no turn was sent"
        );
    }
    // A malformed URL names itself.
    let dir = scratch("endpoint");
    let run = run_against("htp:/127.0.0.1:1", dir.path(), "").await;
    assert_eq!(run.status.code(), Some(1));
    assert!(text(&run).contains("endpoint.url"), "{}", text(&run));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_base_url_ending_in_v1_works_and_the_key_stays_out_of_the_results() {
    let sim = start_sim(echo()).await;
    let dir = scratch("v1");
    let config = edge_config(
        dir.path(),
        &format!("{}/v1/", sim.url()),
        "num_trajectories_to_issue = 1",
        "",
    );
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentload"))
        .args(["run", config.to_str().unwrap(), "--out", "out"])
        .current_dir(dir.path())
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .env("AGENTLOAD_API_KEY", "sk-agentload-test-secret")
        .output()
        .await
        .unwrap();
    assert!(run.status.success(), "{}", text(&run));
    assert!(sim.requests_served() > 0);
    for entry in walk(&dir.path().join("out")) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("sk-agentload-test-secret"),
            "the API key leaked into {}",
            entry.display()
        );
    }
    sim.shutdown().await;
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// An edge config with these workload settings and a misspelt scorer setting (`alias_tabel`).
fn with_scorer_typo(dir: &Path, url: &str, settings: &str) -> std::path::PathBuf {
    let config = edge_config(dir, url, settings, "");
    let text = std::fs::read_to_string(&config).unwrap()
        + "[performance.scorer_settings]\nalias_tabel = true\n";
    std::fs::write(&config, text).unwrap();
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scorer_setting_typo_stops_the_run_before_any_request() {
    let sim = start_sim(echo()).await;
    let dir = scratch("typo");
    let config = with_scorer_typo(dir.path(), &sim.url(), "num_trajectories_to_issue = 2");
    let run = agentload(
        &["run", config.to_str().unwrap(), "--out", "out"],
        dir.path(),
    )
    .await;
    let out = text(&run);
    assert_eq!(run.status.code(), Some(1), "{out}");
    assert!(
        out.contains("shell-iou") && out.contains("alias_tabel"),
        "{out}"
    );
    assert_eq!(sim.requests_served(), 0, "nothing was sent");
    sim.shutdown().await;
}

/// The scorer is prepared beside the workload's `configure`: when both are misconfigured,
/// the workload's error is the one reported, as when they were prepared one after the other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_both_plugins_misconfigured_the_workloads_error_comes_first() {
    let sim = start_sim(echo()).await;
    let dir = scratch("typos");
    let config = with_scorer_typo(dir.path(), &sim.url(), "num_trajectories_to_isue = 2");
    for _ in 0..3 {
        let run = agentload(
            &["run", config.to_str().unwrap(), "--out", "out"],
            dir.path(),
        )
        .await;
        let out = text(&run);
        assert_eq!(run.status.code(), Some(1), "{out}");
        assert!(
            out.contains("num_trajectories_to_isue") && !out.contains("alias_tabel"),
            "{out}"
        );
    }
    assert_eq!(sim.requests_served(), 0, "nothing was sent");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phase_in_which_every_turn_failed_exits_non_zero() {
    // A 16-token context: every turn overflows it.
    let sim = start_sim(SimConfig {
        ctx_size: 16,
        ..echo()
    })
    .await;
    let dir = scratch("all-failed");
    let run = run_against(&sim.url(), dir.path(), "").await;
    let out = text(&run);
    assert_eq!(run.status.code(), Some(4), "{out}");
    assert!(
        out.contains("failed:"),
        "each failure is on the console: {out}"
    );
    assert!(
        out.contains("every issued turn failed in the performance phase"),
        "{out}"
    );
    let report = std::fs::read_to_string(dir.path().join("out/report.txt")).unwrap();
    assert!(report.contains("run INVALID"), "{report}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_errors_print_their_cause_and_a_closed_stdout_ends_quietly() {
    let dir = scratch("cli");
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentload"))
        .args(["run", "no-such-config.toml"])
        .current_dir(dir.path())
        .env("RUST_BACKTRACE", "1")
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1));
    assert!(
        err.starts_with("error: cannot read config no-such-config.toml"),
        "{err}"
    );
    assert!(!err.to_lowercase().contains("backtrace"), "{err}");

    // `agentload ... | head -0`: the reader is gone before anything is written.
    let sim = start_sim(echo()).await;
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 1", "");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentload"))
        .args(["run", config.to_str().unwrap(), "--out", "out"])
        .current_dir(dir.path())
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().await.unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    sim.shutdown().await;
}

/// An absurd concurrency is bounded by the sessions there are to run; one
/// the open-file limit cannot hold is refused before any request, naming the
/// key and both numbers (it used to die on EMFILE with no turn log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_is_bounded_by_the_plan_and_the_open_file_limit() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("concurrency");
    let huge = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 2",
        "[load]\nconcurrency = 1000000000",
    );
    run_ok(&huge, &dir.path().join("huge"), &[], dir.path()).await;
    assert_eq!(
        sim.connections_accepted(),
        2,
        "one connection per session run"
    );

    let many = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 20",
        "[load]\nconcurrency = 100",
    );
    let before = sim.chat_requests_received();
    let out = dir.path().join("limited");
    // `ulimit -n 40` sets the soft and the hard limit: 20 sessions need more.
    let script = format!(
        "ulimit -n 40 && exec \"$0\" run {} --out {}",
        many.display(),
        out.display()
    );
    let run = tokio::process::Command::new("sh")
        .args(["-c", &script, env!("CARGO_BIN_EXE_agentload")])
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .current_dir(dir.path())
        .output()
        .await
        .unwrap();
    let msg = text(&run);
    assert_eq!(run.status.code(), Some(1), "{msg}");
    assert!(
        msg.contains("load.concurrency: 20 concurrent sessions need about 84 open files")
            && msg.contains("hard limit 40"),
        "{msg}"
    );
    assert_eq!(sim.chat_requests_received(), before, "nothing sent");
    sim.shutdown().await;
}
