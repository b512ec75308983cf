//! A misbehaving workload plugin is stopped with a message naming it and the
//! limit it hit, and the run goes on with its other sessions.

mod common;

use agentload_sim::{ResponderConfig, SimConfig};
use common::*;

async fn run_misbehaving(behaviour: &str, when: &str) -> (std::process::Output, tempfile::TempDir) {
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..Default::default()
    })
    .await;
    let dir = scratch(behaviour);
    let config = format!(
        r#"name = "sandbox"
[model]
name = "m"
tokenizer = "none"
[endpoint]
url = "{}"
[plugins.limits]
memory_mib = 64
call_timeout_ms = 500
[performance]
workload = "{}"
report_file = "none.json"
[performance.settings]
behaviour = "{behaviour}"
when = "{when}"
"#,
        sim.url(),
        test_plugin("misbehave").display()
    );
    std::fs::write(dir.path().join("run.toml"), config).unwrap();
    let out = agentload(&["run", "run.toml", "--out", "out"], dir.path()).await;
    sim.shutdown().await;
    (out, dir)
}

/// Runs `behaviour` in the first session and checks the second one completed.
async fn first_session_error(behaviour: &str) -> String {
    let (out, dir) = run_misbehaving(behaviour, "start").await;
    assert!(out.status.success(), "the run survives: {}", text(&out));
    let sessions = json(&dir.path().join("out/sessions.json"));
    assert_eq!(
        sessions[1]["completed"], 2,
        "the next session runs: {sessions}"
    );
    sessions[0]["error"]
        .as_str()
        .expect("first session failed")
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runaway_loop_is_stopped_by_the_time_limit() {
    let e = first_session_error("spin").await;
    assert!(
        e.contains("plugin misbehave") && e.contains("time limit of 500 ms"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bomb_is_stopped_by_the_memory_limit() {
    let e = first_session_error("alloc").await;
    assert!(
        e.contains("plugin misbehave") && e.contains("memory limit of 64 MiB"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_network_and_environment_are_out_of_reach() {
    let e = first_session_error("open-file").await;
    assert!(e.contains("open-file denied"), "{e}");
    let e = first_session_error("connect").await;
    assert!(e.contains("connect denied"), "{e}");
    let e = first_session_error("env").await;
    assert!(e.contains("env vars visible: 0"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_is_reported_with_its_message() {
    let e = first_session_error("panic").await;
    assert!(
        e.contains("trapped") && e.contains("panicked on purpose"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_failing_at_configure_stops_the_run_before_any_request() {
    let (out, _dir) = run_misbehaving("spin", "configure").await;
    assert!(!out.status.success());
    let msg = text(&out);
    assert!(
        msg.contains("plugin misbehave") && msg.contains("`configure` exceeded its time limit"),
        "{msg}"
    );
}
