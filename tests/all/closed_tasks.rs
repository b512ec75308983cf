//! Closed-loop replay of an AA-shaped replay with a workspace per task
//! (`[tools.workspaces.<task>]`, packed by `agentload dataset
//! aa-workspaces`): each session works on its own task's files, a task
//! with none granted works in an empty workspace and says so; a wrong
//! digest and a task no session has are refused before any request. The
//! shipped `configs/aa-closed-loop.toml` locks what packing AA's pinned
//! data gives. Without `model.context_window` (and without a tokenizer)
//! the window is the server's (llama.cpp's `GET /props`, vLLM's `GET
//! /v1/models`), and a session ends `context_window` before a request its
//! lower bound puts over it, or when the server refuses one as over it.

use super::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The tasks: two with a workspace of their own, one with none.
const TASKS: [&str; 3] = ["task-a", "task-b", "task-c"];

/// An AA replay (manifest, traces, workspaces) of one recorded turn per
/// task, in `dir/replay`.
fn replay(dir: &Path) -> PathBuf {
    replay_of(dir, 16)
}

/// [`replay`] with each turn's recorded length `tokens`.
fn replay_of(dir: &Path, tokens: u32) -> PathBuf {
    let root = dir.join("replay");
    std::fs::create_dir_all(root.join("traces")).unwrap();
    let bash = json!({"type": "function", "function": {"name": "bash",
        "description": "Run a shell command", "parameters": {"type": "object",
        "properties": {"command": {"type": "string"}}, "required": ["command"]}}});
    let mut tasks = Vec::new();
    for task in TASKS {
        let row = json!({"version": 1, "turn_id": format!("{task}:0000"), "task_id": task,
            "conversation_id": task, "conversation_idx": 0,
            "messages": [{"role": "system", "content": "You are an agent with a shell."},
                         {"role": "user", "content": format!("Summarise the notes of {task}.")}],
            "tools": [bash], "target_output_tokens": tokens, "simulated_tool_delay_ms_after": 0,
            "recorded_tool_calls_after": []});
        std::fs::write(
            root.join(format!("traces/{task}.jsonl")),
            format!("{row}\n"),
        )
        .unwrap();
        let mut env = json!({"type": "docker", "image": "agentperf-pinchbench:latest",
            "cwd": "/workspace", "network": "none", "interpreter": ["bash", "-c"],
            "workspace_mount": task != "task-c"});
        if task != "task-c" {
            let ws = root.join("workspaces").join(task);
            std::fs::create_dir_all(ws.join("docs")).unwrap();
            std::fs::write(ws.join("notes.txt"), format!("the notes of {task}\n")).unwrap();
            std::fs::write(ws.join(format!("docs/{task}.md")), "# only here\n").unwrap();
            env["workspace_path"] = json!(format!("workspaces/{task}"));
        }
        tasks.push(
            json!({"task_id": task, "trace": format!("traces/{task}.jsonl"),
            "source_recording": "generated", "model_calls": 1, "tool_calls": 0,
            "total_recorded_tool_delay_ms": 0, "tool_environment": env}),
        );
    }
    let manifest = json!({"name": "tasks", "source": "generated",
        "mode": "single_user_agentic_replay", "version": 1, "tasks": tasks});
    std::fs::write(
        root.join("manifest.json"),
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
    root
}

/// The script: every session's model lists its workspace and reads its
/// notes, then answers.
fn script(dir: &Path) -> PathBuf {
    script_of(dir, "pwd; find . -type f | sort; cat notes.txt")
}

/// [`script`] with the first reply's `command`.
fn script_of(dir: &Path, command: &str) -> PathBuf {
    let mut text = String::new();
    for task in TASKS {
        let call = json!({"id": "call_1", "type": "function", "function": {"name": "bash",
            "arguments": {"command": command}}});
        text.push_str(&format!(
            "{}\n{}\n",
            json!({"session_id": task, "turn": 1, "tool_calls": [call]}),
            json!({"session_id": task, "turn": 2, "content": "Done."})
        ));
    }
    let path = dir.join("script.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

/// A closed-loop run of the replay with `tables` (`[tools.workspaces.*]`).
fn config(dir: &Path, url: &str, tables: &str) -> PathBuf {
    config_with(
        dir,
        url,
        "policy = \"fixed\"\nmax_output_tokens = 64",
        tables,
    )
}

/// [`config`] with the workload's `policy` lines.
fn config_with(dir: &Path, url: &str, policy: &str, tables: &str) -> PathBuf {
    let text = format!(
        r#"name = "closed-tasks"
data_dir = "{data}"
[model]
name = "m"
tokenizer = "none"
[endpoint]
url = "{url}"
[load]
concurrency = 3
[performance]
workload = "aa-replay"
[performance.data]
manifest = "replay/manifest.json"
replay = "replay/"
[performance.settings]
history = "closed"
{policy}
[tools]
max_turns = 4
{tables}"#,
        data = dir.display(),
    );
    let path = dir.join("closed-tasks.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The tool messages' text of every session's second request.
fn second_tool_texts(log: &Path) -> BTreeMap<String, String> {
    let mut seen: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in read_jsonl(log) {
        let Some(session) = line["session"].as_str() else {
            continue;
        };
        seen.entry(session.to_owned())
            .or_default()
            .push(line["body"].clone());
    }
    seen.into_iter()
        .map(|(session, bodies)| {
            assert_eq!(bodies.len(), 2, "{session}: {bodies:#?}");
            let texts: Vec<String> = bodies[1]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "tool")
                .map(|m| m["content"].as_str().unwrap().to_owned())
                .collect();
            (session, texts.join("\n"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_task_works_in_its_own_workspace_and_a_task_without_one_in_an_empty_one() {
    let dir = scratch("closed-tasks");
    let replay = replay(dir.path());
    let packed = agentload(
        &[
            "dataset",
            "aa-workspaces",
            replay.join("manifest.json").to_str().unwrap(),
            "--out",
            dir.path().join("ws").to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    assert!(packed.status.success(), "{}", text(&packed));
    let tables = String::from_utf8(packed.stdout).unwrap();
    assert!(tables.contains("[tools.workspaces.task-a]"), "{tables}");
    assert!(tables.contains("[tools.workspaces.task-b]"), "{tables}");
    assert!(
        tables.contains("# task-c: tool_environment.workspace_mount is false"),
        "{tables}"
    );
    let log = dir.path().join("requests.jsonl");
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Script {
            path: script(dir.path()),
        },
        request_log: Some(log.clone()),
        ..Default::default()
    })
    .await;
    let config = config(dir.path(), &sim.url(), &tables);
    let out = dir.path().join("out");
    let output = run_ok(&config, &out, &[], dir.path()).await;
    sim.shutdown().await;
    assert!(
        output.contains(
            "1 session(s) of a task with no workspace granted (task-c) work in an empty workspace"
        ),
        "{output}"
    );
    // What each session's `find` and `cat` saw: its own task's files.
    let seen = second_tool_texts(&log);
    assert_eq!(seen.len(), 3, "{seen:#?}");
    for task in ["task-a", "task-b"] {
        let other = if task == "task-a" { "task-b" } else { "task-a" };
        let said = &seen[task];
        assert!(said.contains("/workspace"), "{said}");
        assert!(said.contains(&format!("./docs/{task}.md")), "{said}");
        assert!(said.contains(&format!("the notes of {task}")), "{said}");
        assert!(!said.contains(other), "{task} saw {other}'s files: {said}");
    }
    let bare = &seen["task-c"];
    assert!(
        bare.contains("/workspace") && !bare.contains("notes of") && !bare.contains(".md"),
        "{bare}"
    );
    assert!(bare.contains("No such file"), "{bare}");
    // closed_loop.json names each session's workspace.
    let summary = json(&out.join("performance/closed_loop.json"));
    let by: BTreeMap<&str, &str> = summary["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["session_id"].as_str().unwrap(),
                s["workspace"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by,
        BTreeMap::from([
            ("task-a", "tools.workspaces.task-a"),
            ("task-b", "tools.workspaces.task-b"),
            ("task-c", "empty"),
        ])
    );
    assert_eq!(summary["workspaces"]["empty"], 1);
    // Every session ended on its own (no tool call) with its overlay measured.
    for s in summary["sessions"].as_array().unwrap() {
        assert_eq!(s["end"], "no_tool_call", "{s}");
        assert!(s["overlay_bytes"].is_u64(), "{s}");
    }
    assert_eq!(summary["overlay_bytes"]["sessions"], 3);
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("1 of a task with no workspace granted worked in an empty workspace"),
        "{report}"
    );
    // One expected turn per session: the progress total, the validity line.
    assert!(output.contains("running 3 sessions (3 turns)"), "{output}");
    assert!(
        report.contains("performance: 0 of 3 expected turns missing")
            && report.contains("run VALID"),
        "{report}"
    );

    // A changed archive under its locked digest, and a task no session
    // has: refused naming the key, before any request.
    let ws_b = dir.path().join("ws/task-b.tar");
    let good_b = std::fs::read(&ws_b).unwrap();
    std::fs::write(&ws_b, b"another archive").unwrap();
    let refused = run_config(&config, &dir.path().join("digest"), &[], dir.path()).await;
    let said = text(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains("tools.workspaces.task-b.sha256")
            && said.contains("refused before any request"),
        "{said}"
    );
    std::fs::write(&ws_b, good_b).unwrap();
    let unknown = tables.replace("[tools.workspaces.task-b]", "[tools.workspaces.task-z]");
    let config = self::config(dir.path(), "http://127.0.0.1:9", &unknown);
    let refused = run_config(&config, &dir.path().join("unknown"), &[], dir.path()).await;
    let said = text(&refused);
    assert!(!refused.status.success(), "{said}");
    assert!(
        said.contains("tools.workspaces.task-z: no session of the phase is of task `task-z`")
            && said.contains("refused before any request"),
        "{said}"
    );
    assert_eq!(read_jsonl(&log).len(), 6, "only the first run's requests");
}

/// `configs/aa-closed-loop.toml` locks the archives `agentload dataset
/// aa-workspaces` packs from AA's pinned data.
#[tokio::test]
async fn the_shipped_aa_config_locks_what_packing_the_pinned_workspaces_gives() {
    let Some(replays) = super::aa_replay::replays() else {
        return;
    };
    let dir = scratch("closed-aa-ws");
    let manifest = replays.join("agentperf-default-v1/manifest-x86_64.json");
    let packed = agentload(
        &[
            "dataset",
            "aa-workspaces",
            manifest.to_str().unwrap(),
            "--out",
            "aa_replays/workspaces",
        ],
        dir.path(),
    )
    .await;
    assert!(packed.status.success(), "{}", text(&packed));
    let tables: toml::Table = toml::from_str(&String::from_utf8(packed.stdout).unwrap()).unwrap();
    let packed = &tables["tools"]["workspaces"];
    let shipped: toml::Table = toml::from_str(
        &std::fs::read_to_string(manifest_dir().join("../../configs/aa-closed-loop.toml")).unwrap(),
    )
    .unwrap();
    let shipped = &shipped["tools"]["workspaces"];
    assert_eq!(packed.as_table().unwrap().len(), 5, "{packed:#?}");
    assert_eq!(packed, shipped);
}

/// A run of the replay against the simulator serving as `serve_as` with a
/// window of `ctx` tokens; `(output, run dir, requests the server saw)`.
async fn window_run(
    name: &str,
    serve_as: agentload_sim::ServeAs,
    ctx: u32,
    recorded_tokens: u32,
    policy: &str,
    command: &str,
) -> (String, PathBuf, Vec<Value>, tempfile::TempDir) {
    let dir = scratch(name);
    replay_of(dir.path(), recorded_tokens);
    let log = dir.path().join("requests.jsonl");
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        ctx_size: ctx,
        serve_as,
        responder: ResponderConfig::Script {
            path: script_of(dir.path(), command),
        },
        request_log: Some(log.clone()),
        ..Default::default()
    })
    .await;
    let tables = "[tools.workspace]\narchive = \"empty.tar\"\nsha256 = \"5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef\"\n";
    std::fs::write(dir.path().join("empty.tar"), [0u8; 1024]).unwrap();
    let config = config_with(dir.path(), &sim.url(), policy, tables);
    let out = dir.path().join("out");
    let output = run_ok(&config, &out, &[], dir.path()).await;
    sim.shutdown().await;
    let seen = read_jsonl(&log);
    (output, out, seen, dir)
}

/// The closed blocks and errors of a run's turns, by session.
fn turns_of(out: &Path) -> BTreeMap<String, Vec<Value>> {
    let mut by: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut turns = read_jsonl(&out.join("turns.jsonl"));
    turns.sort_by_key(|t| t["turn"].as_u64());
    for t in turns {
        by.entry(t["session_id"].as_str().unwrap().to_owned())
            .or_default()
            .push(t);
    }
    by
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_comes_from_props_and_a_request_its_lower_bound_puts_over_is_not_sent() {
    // Each recorded turn asks for more tokens than the window holds, with
    // ignore_eos: the reply fills the window after its tool call, so the
    // next request (that prompt, that reply, the tool's result) cannot fit.
    let (output, out, seen, _dir) = window_run(
        "closed-window-props",
        agentload_sim::ServeAs::LlamaCpp,
        1024,
        4000,
        "policy = \"exact\"",
        "echo hello",
    )
    .await;
    let source = "GET /props default_generation_settings.n_ctx";
    assert!(
        output.contains(&format!("context window: 1024 tokens ({source})")),
        "{output}"
    );
    let manifest = json(&out.join("run_manifest.json"));
    assert_eq!(manifest["context_window"]["tokens"], 1024);
    assert_eq!(manifest["context_window"]["source"], source);
    // The server saw each session's first request only.
    assert_eq!(seen.len(), 3, "{seen:#?}");
    for (session, turns) in turns_of(&out) {
        assert_eq!(turns.len(), 2, "{session}: {turns:#?}");
        let first = &turns[0];
        let prompt = first["usage"]["prompt_tokens"].as_u64().unwrap();
        let reply = first["usage"]["completion_tokens"].as_u64().unwrap();
        assert_eq!(prompt + reply, 1024, "{first}");
        assert_eq!(first["closed"]["calls"][0]["status"], "executed");
        let unsent = &turns[1];
        assert_eq!(unsent["status"], "failed");
        assert_eq!(unsent["closed"]["end"], "context_window");
        let error = unsent["error"].as_str().unwrap();
        assert!(
            error.starts_with("not sent")
                && error.contains(&format!("at least 1024 tokens: the previous request's {prompt} prompt tokens and its reply's {reply}"))
                && error.contains(&format!("(1024 tokens, {source})")),
            "{error}"
        );
    }
    let summary = json(&out.join("performance/closed_loop.json"));
    assert_eq!(summary["ends"]["context_window"], 3, "{summary:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_window_comes_from_v1_models_and_a_request_the_server_refuses_ends_the_session() {
    // vLLM's facts (no /props): the window is the model's max_model_len.
    // The lower bound of the second request is far inside it, so it is
    // sent; the tool's long output puts it over, and the server refuses it.
    let (output, out, seen, _dir) = window_run(
        "closed-window-models",
        agentload_sim::ServeAs::Vllm,
        2048,
        16,
        "policy = \"fixed\"\nmax_output_tokens = 64",
        "seq 1 3000",
    )
    .await;
    let source = "GET /v1/models max_model_len of `agentload-sim`";
    assert!(
        output.contains(&format!("context window: 2048 tokens ({source})")),
        "{output}"
    );
    assert_eq!(
        json(&out.join("run_manifest.json"))["context_window"]["source"],
        source
    );
    assert_eq!(seen.len(), 6, "both requests of each session were sent");
    for (session, turns) in turns_of(&out) {
        assert_eq!(turns.len(), 2, "{session}: {turns:#?}");
        let refused = &turns[1];
        assert_eq!(refused["status"], "failed");
        let error = refused["error"].as_str().unwrap();
        assert!(
            !error.starts_with("not sent") && error.contains("exceeds the available context size"),
            "{error}"
        );
        assert_eq!(refused["closed"]["end"], "context_window", "{session}");
    }
}
