//! A misbehaving workload plugin is stopped with a message naming it and the
//! limit it hit, and the run goes on with its other sessions; its output
//! (log lines, requests) is bounded, and its memory is counted as a whole.

// Its own binary, not a module of tests/all: the memory cap test measures a
// child's peak RSS with wait4, and the kernel counts in it the RSS of the
// process that spawned it (at exec), which in the one big test binary is
// hundreds of MiB.
#[path = "all/common/mod.rs"]
mod common;

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};

async fn run_misbehaving(behaviour: &str, when: &str) -> (std::process::Output, tempfile::TempDir) {
    run_misbehaving_with(behaviour, when, "memory_mib = 64\ncall_timeout_ms = 500").await
}

/// As [`run_misbehaving`], under the `[plugins.limits]` lines `limits`.
async fn run_misbehaving_with(
    behaviour: &str,
    when: &str,
    limits: &str,
) -> (std::process::Output, tempfile::TempDir) {
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
{limits}
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_flood_is_capped_with_a_note() {
    // 200,000 lines of 1 KiB in `configure`; the run goes on. (A debug
    // build takes more than the usual 500 ms test limit to make them.)
    let (out, dir) =
        run_misbehaving_with("log-flood", "configure", "call_timeout_ms = 60000").await;
    let msg = text(&out);
    assert!(out.status.success(), "{msg}");
    let written = msg.lines().filter(|l| l.contains("] info: flood ")).count();
    // The first line of the call is the plugin's own `behaviour=` line.
    assert_eq!(written, 999, "lines per call capped");
    let note = msg
        .lines()
        .find(|l| l.contains("note: `configure` logged"))
        .unwrap_or_else(|| panic!("no truncation note: {}", &msg[..msg.len().min(2000)]));
    assert!(
        note.contains("[plugin misbehave]")
            && note.contains("199001 more lines")
            && note.contains("plugins.limits.log_lines_per_call = 1000"),
        "{note}"
    );
    assert!(
        msg.len() < 2 << 20,
        "output stays small: {} bytes",
        msg.len()
    );
    let sessions = json(&dir.path().join("out/sessions.json"));
    assert_eq!(sessions[0]["completed"], 2, "{sessions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_turn_request_is_refused_naming_the_limit() {
    let e = first_session_error("huge-request").await;
    assert!(
        e.contains("plugin misbehave")
            && e.contains("returned a turn request of")
            && e.contains("plugins.limits.request_mib = 16 MiB"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_keeping_messages_it_never_had_is_refused_naming_the_plugin() {
    let e = first_session_error("over-keep").await;
    assert!(
        e.contains("plugin misbehave")
            && e.contains("`start-session` broke the contract")
            && e.contains("first turn keeps 1 messages (it must keep 0)"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_id_that_would_inject_a_header_is_refused_before_any_request() {
    let (out, dir) = run_misbehaving("header-injection", "start").await;
    assert!(!out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("plugin misbehave")
            && t.contains("`configure` broke the contract")
            && t.contains(r#"session id "s1\r\nX-Injected: 1" has a control character"#),
        "{t}"
    );
    assert!(
        !dir.path().join("out/turns.jsonl").exists()
            || std::fs::read_to_string(dir.path().join("out/turns.jsonl"))
                .unwrap()
                .is_empty()
    );
}

/// The peak RSS (KiB) and output of `agentload ARGS` in `cwd`, measured
/// for that one child with `wait4`.
fn peak_rss(args: &[&str], cwd: &std::path::Path) -> (i64, bool, String) {
    let log = cwd.join("child.log");
    let file = std::fs::File::create(&log).unwrap();
    // Reaped by `wait4` below, which also reports its peak RSS.
    #[allow(clippy::zombie_processes)]
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_agentload"))
        .args(args)
        .current_dir(cwd)
        .env("AGENTLOAD_DATA_DIR", data_dir())
        // A printed error's backtrace would be symbolized from the debug
        // binary: ~200 MB of RSS that is not the plugin's.
        .env("RUST_BACKTRACE", "0")
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: rusage is plain integers; all zeroes is a valid value.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child, once; `usage` is a valid out-pointer.
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t);
    let ok = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    (usage.ru_maxrss, ok, std::fs::read_to_string(&log).unwrap())
}

fn sandbox_config(dir: &std::path::Path, url: &str, plugin: &std::path::Path, memory_mib: u64) {
    std::fs::write(
        dir.join("run.toml"),
        format!(
            "name = \"mm\"\n[model]\nname = \"m\"\ntokenizer = \"none\"\n[endpoint]\nurl = \"{url}\"\n\
             [plugins.limits]\nmemory_mib = {memory_mib}\n[performance]\nworkload = \"{}\"\n\
             report_file = \"none.json\"\n",
            plugin.display()
        ),
    )
    .unwrap();
}

/// Eight extra core instances of 60 MiB each (`tests/plugins/multi-memory`):
/// under a 64 MiB cap the component is stopped at instantiation with a
/// memory-limit error naming it, and the host's RSS stays near the
/// baseline plus the cap; with the cap raised it really takes ~480 MiB.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_memory_component_is_stopped_by_the_store_wide_cap() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..Default::default()
    })
    .await;
    let dir = scratch("multi-memory");
    let args = ["run", "run.toml", "--out", "out", "--force"];
    let measure = |plugin: &std::path::Path, mib: u64| {
        sandbox_config(dir.path(), &sim.url(), plugin, mib);
        let dir = dir.path().to_path_buf();
        let args = args.map(String::from);
        async move {
            tokio::task::spawn_blocking(move || {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                peak_rss(&args, &dir)
            })
            .await
            .unwrap()
        }
    };
    let (baseline, ok, log) = measure(&test_plugin("misbehave"), 64).await;
    assert!(ok, "{log}");
    // misbehave with eight extra core instances of 60 MiB each.
    let wrapped = dir.path().join("multi_memory.wasm");
    let misbehave = std::fs::read(test_plugin("misbehave")).unwrap();
    std::fs::write(
        &wrapped,
        multi_memory_fixture::wrap(&misbehave, 8, 60).expect("the fixture wraps misbehave"),
    )
    .unwrap();
    let (capped, ok, log) = measure(&wrapped, 64).await;
    assert!(!ok, "the component is refused: {log}");
    assert!(
        log.contains("plugin multi_memory")
            && log.contains("`instantiate` exceeded its memory limit of 64 MiB")
            && log.contains("all linear memories together"),
        "{log}"
    );
    let (uncapped, ok, log) = measure(&wrapped, 1024).await;
    assert!(ok, "with room it runs: {log}");
    eprintln!(
        "peak RSS: baseline {} MiB, multi-memory capped at 64 MiB {} MiB, uncapped {} MiB",
        baseline >> 10,
        capped >> 10,
        uncapped >> 10
    );
    assert!(
        capped < baseline + (64 + 32) * 1024,
        "RSS near the cap: {capped} KiB vs baseline {baseline} KiB"
    );
    assert!(
        uncapped > baseline + 400 * 1024,
        "the fixture does take its memory when allowed: {uncapped} KiB"
    );
    sim.shutdown().await;
}
