//! Closed-loop replay (`history = "closed"`) through the real binary
//! against the embedded simulator's script responder: the recording's
//! first request, then the model's own tool calls run in the sandbox and
//! their results sent; the same bytes under any load; bad commands stopped
//! with the run going on; the end rules; refusals before any request.

use super::common::*;
use super::tools::packed;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

const TOOLS: &str = r#"[{"type": "function", "function": {"name": "bash", "description": "Execute a bash command", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]"#;

/// A recording of `conversations`, each a task with one recorded call
/// (`grep -rn 'return 1' .`) and a final answer.
pub(super) fn dataset(dir: &Path, conversations: &[&str]) -> PathBuf {
    let tools: Value = serde_json::from_str(TOOLS).unwrap();
    let mut rows = vec![json!({"_type": "dataset_metadata", "version": 1})];
    for c in conversations {
        rows.push(json!({"conversation_id": c, "turn": 1, "role": "user",
            "system": "You are a helpful assistant that can interact with a computer shell.",
            "content": "Make main return 2 in src/app.py.", "tools": tools}));
        rows.push(json!({"conversation_id": c, "turn": 2, "role": "assistant",
            "tool_calls": [{"id": "functions.bash:0", "type": "function",
                "function": {"name": "bash", "arguments": "{\"command\": \"grep -rn 'return 1' .\"}"}}]}));
        rows.push(json!({"conversation_id": c, "turn": 3, "role": "tool",
            "tool_results": [{"tool_call_id": "functions.bash:0",
                "content": "<returncode>0</returncode>\n<output>\n./src/app.py:2:    return 1\n</output>"}]}));
        rows.push(
            json!({"conversation_id": c, "turn": 4, "role": "assistant", "content": "Done."}),
        );
    }
    let path = dir.join("closed.jsonl");
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// A script line: session `session`'s `n`-th reply calls `bash` with each
/// command (none: a plain answer).
fn reply(session: &str, n: u32, commands: &[&str]) -> Value {
    if commands.is_empty() {
        return json!({"session_id": session, "turn": n, "content": "All done."});
    }
    let calls: Vec<Value> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"id": format!("call_{n}_{i}"), "type": "function",
                   "function": {"name": "bash", "arguments": {"command": c}}})
        })
        .collect();
    json!({"session_id": session, "turn": n, "tool_calls": calls})
}

fn script(dir: &Path, lines: &[Value]) -> PathBuf {
    let path = dir.join("script.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// A closed-loop run config over `archive` (locked by `sha`).
fn config(dir: &Path, url: &str, archive: &Path, sha: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"name = "closed"
data_dir = "{data}"
[model]
name = "test-model"
tokenizer = "none"
[endpoint]
url = "{url}"
[load]
concurrency = 2
[performance]
workload = "coding-replay"
[performance.data]
trajectories = "closed.jsonl"
[performance.settings]
history = "closed"
[tools]
max_turns = 12
[tools.workspace]
archive = "{archive}"
sha256 = "{sha}"
{extra}"#,
        data = dir.display(),
        archive = archive.display(),
    );
    let path = dir.join("closed.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The simulator on `script`, logging every request to `log`.
async fn sim(script: &Path, log: &Path) -> agentload_sim::SimHandle {
    start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Script {
            path: script.to_path_buf(),
        },
        request_log: Some(log.to_path_buf()),
        ..Default::default()
    })
    .await
}

/// Every request body the simulator received, by session, in order.
fn bodies(log: &Path) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for line in read_jsonl(log) {
        let session = line["session"].as_str().unwrap().to_owned();
        out.entry(session).or_default().push(line["body"].clone());
    }
    out
}

/// Every request body's sha256 as the simulator read its bytes, by session.
fn digests(log: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in read_jsonl(log) {
        let session = line["session"].as_str().unwrap().to_owned();
        out.entry(session)
            .or_default()
            .push(line["sha256"].as_str().unwrap().to_owned());
    }
    out
}

/// The tool messages' text of a request body.
fn tool_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

/// The closed-loop blocks of a run's turns, by session, in turn order,
/// without their machine-dependent wall time.
fn closed_turns(out: &Path) -> BTreeMap<String, Vec<Value>> {
    let mut turns = read_jsonl(&out.join("turns.jsonl"));
    turns.sort_by_key(|t| {
        (
            t["session_id"].as_str().unwrap().to_owned(),
            t["turn"].as_u64(),
        )
    });
    let mut by: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for t in turns {
        let mut block = t["closed"].clone();
        assert!(block.is_object(), "no closed block: {t}");
        block.as_object_mut().unwrap().remove("sandbox_us");
        by.entry(t["session_id"].as_str().unwrap().to_owned())
            .or_default()
            .push(block);
    }
    by
}

/// A copy of run directory `from` at `to`, each line of its turns.jsonl
/// rewritten by `edit` (given the record and its text).
fn copy_run(from: &Path, to: &Path, edit: impl Fn(&Value, &str) -> String) {
    let copied = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(copied.success());
    let journal = to.join("turns.jsonl");
    let text: String = std::fs::read_to_string(&journal)
        .unwrap()
        .lines()
        .map(|line| edit(&serde_json::from_str(line).unwrap(), line) + "\n")
        .collect();
    std::fs::write(&journal, text).unwrap();
}

/// The determinism scenario's script: two sessions that read, edit, look
/// at the clock and entropy, diff, run something stubbed, then finish.
fn edits() -> Vec<Value> {
    vec![
        reply("fix-1", 1, &["grep -rn 'return 1' ."]),
        reply(
            "fix-1",
            2,
            &["sed -i 's/return 1/return 2/' src/app.py", "cat src/app.py"],
        ),
        reply(
            "fix-1",
            3,
            &[
                "echo $RANDOM $RANDOM; date +%s; mktemp",
                "git diff",
                "python3 -c 1",
            ],
        ),
        reply("fix-1", 4, &[]),
        reply("fix-2", 1, &["grep -rn 'return 1' ."]),
        reply(
            "fix-2",
            2,
            &["printf 'x\\n' > new.txt; ls; git status --short"],
        ),
        reply("fix-2", 3, &[]),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_closed_loop_runs_one_under_cpu_load_send_the_same_bytes() {
    let dir = scratch("closed-same");
    let (archive, sha) = packed(dir.path()).await;
    dataset(dir.path(), &["fix-1", "fix-2"]);
    let script = script(dir.path(), &edits());
    let mut runs = Vec::new();
    for (i, loaded) in [false, true, false].into_iter().enumerate() {
        let log = dir.path().join(format!("requests-{i}.jsonl"));
        let sim = sim(&script, &log).await;
        let config = config(dir.path(), &sim.url(), &archive, &sha, "");
        let out = dir.path().join(format!("run-{i}"));
        // The loaded run: every core kept busy by spinning threads.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let spinners: Vec<_> = (0..if loaded { 2 * cores } else { 0 })
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                    }
                })
            })
            .collect();
        let output = run_ok(&config, &out, &[], dir.path()).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for s in spinners {
            s.join().unwrap();
        }
        sim.shutdown().await;
        runs.push((digests(&log), closed_turns(&out), output, out, bodies(&log)));
    }
    let (digests0, turns0, output, out, bodies0) = &runs[0];
    for (digests, turns, _, _, _) in &runs[1..] {
        assert_eq!(digests, digests0, "request bodies differ between runs");
        assert_eq!(turns, turns0, "tool results differ between runs");
    }
    // What was sent: the recording's first request, then the model's own
    // calls answered in mini-swe-agent's words, from the session's files.
    let fix1 = &bodies0["fix-1"];
    assert_eq!(fix1.len(), 4, "{fix1:#?}");
    assert_eq!(fix1[0]["messages"].as_array().unwrap().len(), 2);
    assert_eq!(
        fix1[0]["messages"][1]["content"],
        "Make main return 2 in src/app.py."
    );
    assert_eq!(
        tool_texts(&fix1[1]),
        ["<returncode>0</returncode>\n<output>\n./src/app.py:2:    return 1\n</output>"]
    );
    let second = tool_texts(&fix1[2]);
    assert_eq!(
        second[2],
        "<returncode>0</returncode>\n<output>\ndef main():\n    return 2\n</output>"
    );
    let third = tool_texts(&fix1[3]);
    assert!(
        third[4].contains("-    return 1\n+    return 2"),
        "{}",
        third[4]
    );
    assert!(third[4].starts_with("<returncode>0</returncode>"));
    assert!(
        third[5].starts_with(
            "<returncode>127</returncode>\n<output>\nbash: python3: command not found"
        ),
        "{}",
        third[5]
    );
    // Each request carries the model's assistant message with its calls.
    let assistant = &fix1[2]["messages"][4];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"].as_array().unwrap().len(), 2);
    // The other session's files are its own: no edit from fix-1.
    let fix2 = &bodies0["fix-2"];
    assert_eq!(fix2.len(), 3);
    assert!(
        tool_texts(&fix2[2])[1].contains("new.txt\nsrc\n"),
        "{:?}",
        tool_texts(&fix2[2])
    );
    // The records: every call tagged, the end named, the recording beside.
    let t1 = &turns0["fix-1"];
    assert_eq!(t1.len(), 4);
    assert_eq!(t1[0]["follows_recording"], true, "{:#}", t1[0]);
    assert_eq!(t1[1]["follows_recording"], false);
    assert!(
        t1[2].get("follows_recording").is_none(),
        "past the recording"
    );
    let statuses: Vec<&str> = t1[2]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["executed", "executed", "stubbed"]);
    assert_eq!(t1[3]["end"], "no_tool_call");
    assert!(t1[3].get("calls").is_none());
    assert!(t1[0]["recorded_request_bytes"].as_u64().unwrap() > 0);
    assert_eq!(t1[0]["request_bytes"], t1[0]["recorded_request_bytes"]);
    // Not official, and said so.
    assert!(output.contains("NON-OFFICIAL: closed-loop"), "{output}");
    let summary = json(&out.join("performance/closed_loop.json"));
    assert_eq!(summary["official"], false);
    assert_eq!(summary["sessions"].as_array().unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_commands_from_the_model_are_stopped_and_the_session_and_run_go_on() {
    let dir = scratch("closed-bad");
    let (archive, sha) = packed(dir.path()).await;
    dataset(dir.path(), &["bad", "good"]);
    let bad = [
        ":(){ :|:& };:",
        "yes > y.txt",
        "head -c 10000000000 /dev/zero > big.bin",
        "cd ../../../..; pwd",
        "echo x > /etc/agentload-closed-escape; ln -s /etc/passwd pw && cat pw | head -1",
    ];
    let mut lines: Vec<Value> = bad
        .iter()
        .enumerate()
        .map(|(i, c)| reply("bad", i as u32 + 1, &[c]))
        .collect();
    lines.push(reply("bad", 6, &["echo still here; ls"]));
    lines.push(reply("bad", 7, &[]));
    lines.push(reply("good", 1, &["grep -rn 'return 1' ."]));
    lines.push(reply("good", 2, &[]));
    let script = script(dir.path(), &lines);
    let log = dir.path().join("requests.jsonl");
    let sim = sim(&script, &log).await;
    let config = config(dir.path(), &sim.url(), &archive, &sha, "");
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    sim.shutdown().await;
    let sent = bodies(&log);
    assert_eq!(
        sent["bad"].len(),
        7,
        "every turn of the bad session was sent"
    );
    assert_eq!(sent["good"].len(), 2);
    let last = tool_texts(&sent["bad"][6]);
    // Each result is in the last request: stopped, with a clear result.
    assert!(last[0].contains("stopped by the sandbox"), "{}", last[0]);
    assert!(last[1].contains("output limit"), "{}", last[1]);
    assert!(
        last[2].contains("No space left on device") || last[2].contains("stopped by the sandbox"),
        "{}",
        last[2]
    );
    assert!(last[3].contains("<output>\n/\n"), "{}", last[3]);
    assert!(!last[4].contains("root:x:0:0"), "{}", last[4]);
    assert!(
        last[5].contains("still here\nREADME.md\npw\nsrc\ny.txt\n"),
        "{}",
        last[5]
    );
    // Nothing on the host was touched.
    assert!(!Path::new("/etc/agentload-closed-escape").exists());
    for f in ["y.txt", "big.bin", "pw"] {
        assert!(!dir.path().join(f).exists(), "{f} on the host");
    }
    let turns = closed_turns(&out);
    let statuses: Vec<&str> = turns["bad"][..5]
        .iter()
        .map(|t| t["calls"][0]["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["executed"; 5], "{:#?}", turns["bad"]);
    assert_eq!(turns["bad"][6]["end"], "no_tool_call");
    let sessions = read_jsonl(&out.join("sessions.jsonl"));
    assert!(
        sessions.iter().all(|s| s["ended"] == "finished"),
        "{sessions:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_at_its_turn_cap_and_before_a_request_over_the_context_window() {
    let dir = scratch("closed-ends");
    let (archive, sha) = packed(dir.path()).await;
    dataset(dir.path(), &["cap"]);
    // A model that never stops calling.
    let lines: Vec<Value> = (1..=10).map(|n| reply("cap", n, &["ls"])).collect();
    let cap_script = script(dir.path(), &lines);
    let log = dir.path().join("cap.jsonl");
    let server = sim(&cap_script, &log).await;
    let capped = config(dir.path(), &server.url(), &archive, &sha, "");
    let text = std::fs::read_to_string(&capped)
        .unwrap()
        .replace("max_turns = 12", "max_turns = 3");
    std::fs::write(&capped, text).unwrap();
    let out = dir.path().join("cap");
    run_ok(&capped, &out, &[], dir.path()).await;
    server.shutdown().await;
    assert_eq!(bodies(&log)["cap"].len(), 3, "the cap's requests only");
    let turns = closed_turns(&out);
    assert_eq!(turns["cap"].len(), 3);
    assert_eq!(turns["cap"][2]["end"], "turn_cap");
    assert!(
        turns["cap"][2].get("calls").is_none(),
        "the last calls are not run"
    );
    // Shorter than its recording, ended by its own rule: nothing is missing.
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("performance: 0 of ") && report.contains("run VALID"),
        "{report}"
    );

    if !vocabulary() {
        return;
    }
    // A call whose output cannot fit: the next request is counted, and
    // never sent.
    let lines = vec![reply("cap", 1, &["seq 1 3000"]), reply("cap", 2, &[])];
    let window_script = script(dir.path(), &lines);
    let log = dir.path().join("window.jsonl");
    let server = sim(&window_script, &log).await;
    let windowed = config(dir.path(), &server.url(), &archive, &sha, "");
    let text = std::fs::read_to_string(&windowed).unwrap().replace(
        "tokenizer = \"none\"",
        "tokenizer = \"qwen3.6\"\ncontext_window = 2000",
    );
    std::fs::write(&windowed, text).unwrap();
    let out = dir.path().join("window");
    let output = run_ok(&windowed, &out, &[], dir.path()).await;
    server.shutdown().await;
    assert_eq!(
        bodies(&log)["cap"].len(),
        1,
        "the request over the window went out"
    );
    let records = read_jsonl(&out.join("turns.jsonl"));
    assert_eq!(records.len(), 2);
    let unsent = &records[1];
    assert_eq!(unsent["status"], "failed");
    assert!(unsent["issued_ns"].is_null());
    assert!(
        unsent["error"].as_str().unwrap().starts_with("not sent"),
        "{unsent}"
    );
    assert_eq!(unsent["closed"]["end"], "context_window");
    assert!(output.contains("not sent"), "{output}");
    // The request not sent is missing, as a live-reply run counts it.
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("performance: 1 of ") && report.contains("run INVALID"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_run_and_a_workspace_not_the_locked_one_are_refused_before_any_request() {
    let dir = scratch("closed-refused");
    let (archive, sha) = packed(dir.path()).await;
    dataset(dir.path(), &["fix-1"]);
    let script = script(dir.path(), &edits());
    let log = dir.path().join("requests.jsonl");
    let sim = sim(&script, &log).await;
    let config_path = config(dir.path(), &sim.url(), &archive, &sha, "");
    let run = |extra: &'static [&'static str], out: &'static str| {
        let (config, dir) = (config_path.clone(), dir.path().to_path_buf());
        async move {
            let mut args = vec![
                "run".to_owned(),
                config.display().to_string(),
                "--out".into(),
                dir.join(out).display().to_string(),
            ];
            args.extend(extra.iter().map(|s| s.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            agentload(&args, &dir).await
        }
    };
    let refused = run(&["--submission"], "submission").await;
    assert!(!refused.status.success());
    let said = text(&refused);
    assert!(
        said.contains("history = \"closed\" is refused in a submission run")
            && said.contains("not an official mode"),
        "{said}"
    );
    // Another archive under the locked name.
    std::fs::write(&archive, b"not the archive").unwrap();
    let refused = run(&[], "digest").await;
    assert!(!refused.status.success());
    let said = text(&refused);
    assert!(
        said.contains("tools.workspace.sha256") && said.contains("refused before any request"),
        "{said}"
    );
    // A closed-loop phase without a [tools] table names the key.
    let text_cfg = std::fs::read_to_string(&config_path).unwrap();
    let cut = text_cfg.find("[tools]").unwrap();
    std::fs::write(&config_path, &text_cfg[..cut]).unwrap();
    let refused = run(&[], "no-tools").await;
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("performance.settings.history"),
        "{}",
        text(&refused)
    );
    sim.shutdown().await;
    let served = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(served.is_empty(), "requests were sent: {served}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_aa_replay_runs_closed_loop_from_its_recorded_first_request() {
    let Some(replays) = super::aa_replay::replays() else {
        return;
    };
    let dir = scratch("closed-aa");
    let (archive, sha) = packed(dir.path()).await;
    let log = dir.path().join("requests.jsonl");
    // Echo answers text: the model calls no tool, each session ends there.
    let server = start_sim(SimConfig {
        time_scale: 0.0,
        request_log: Some(log.clone()),
        ..Default::default()
    })
    .await;
    let config = super::aa_replay::preset(
        dir.path(),
        "aa-mini.toml",
        &server.url(),
        "history = \"closed\"",
    );
    let text = std::fs::read_to_string(&config).unwrap();
    let text = format!(
        "data_dir = \"{}\"\n{text}\n[tools.workspace]\narchive = \"{}\"\nsha256 = \"{sha}\"\n",
        replays.parent().unwrap().display(),
        archive.display()
    );
    std::fs::write(&config, text).unwrap();
    let out = dir.path().join("out");
    let output = run_ok(&config, &out, &[], dir.path()).await;
    server.shutdown().await;
    assert!(output.contains("NON-OFFICIAL: closed-loop"), "{output}");
    let turns = closed_turns(&out);
    assert!(!turns.is_empty());
    for blocks in turns.values() {
        assert_eq!(blocks.len(), 1, "{blocks:?}");
        assert_eq!(blocks[0]["end"], "no_tool_call");
        // The first request is the recording's, byte for byte.
        assert_eq!(
            blocks[0]["request_bytes"],
            blocks[0]["recorded_request_bytes"]
        );
    }
    // The server saw the sessions' requests (and the client's probes).
    assert!(read_jsonl(&log).len() >= turns.len());
    // Each session answered at once, far shorter than its recording, and
    // ended by its own rule: no turn is missing.
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("performance: 0 of ") && report.contains("run VALID"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_closed_loop_run_resumes_with_the_same_requests_and_tool_results() {
    let dir = scratch("closed-resume");
    let (archive, sha) = packed(dir.path()).await;
    dataset(dir.path(), &["fix-1", "fix-2"]);
    // The whole run.
    let whole_log = dir.path().join("whole.requests.jsonl");
    let sim_whole = sim(&script(dir.path(), &edits()), &whole_log).await;
    let config = config(dir.path(), &sim_whole.url(), &archive, &sha, "");
    let whole = dir.path().join("whole");
    run_ok(&config, &whole, &[], dir.path()).await;
    sim_whole.shutdown().await;

    // The same run killed (SIGKILL) while fix-1's third request, the one
    // after its edit, waits for its answer (held far longer than fix-2's
    // turns can take on a loaded machine; the kill ends the wait).
    // Two slots, one a session: the held answer keeps its slot, and fix-2's
    // turns, however late on a loaded machine, take the other.
    let mut slow = edits();
    slow[2]["delay_ms"] = json!(120_000);
    let cut_log = dir.path().join("cut.requests.jsonl");
    let sim_cut = start_sim(SimConfig {
        time_scale: 0.0,
        slots: 2,
        responder: ResponderConfig::Script {
            path: script(dir.path(), &slow),
        },
        request_log: Some(cut_log.clone()),
        ..Default::default()
    })
    .await;
    let config = self::config(dir.path(), &sim_cut.url(), &archive, &sha, "");
    let cut = dir.path().join("cut");
    let cut_s = cut.to_str().unwrap();
    let mut run = spawn(
        &["run", config.to_str().unwrap(), "--out", cut_s],
        dir.path(),
    );
    // fix-2's three turns and fix-1's first two are on disk.
    wait_for_lines(&cut.join("turns.jsonl"), 5, &mut run).await;
    while bodies(&cut_log).get("fix-1").map_or(0, Vec::len) < 3 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    run.start_kill().unwrap();
    run.wait().await.unwrap();
    sim_cut.shutdown().await;
    let done = closed_turns(&cut);
    assert_eq!(
        (done["fix-1"].len(), done["fix-2"].len()),
        (2, 3),
        "{done:#?}"
    );

    // A copy of the killed run with one character of fix-1's first recorded
    // reply flipped (its call's id, in the next request twice: the same
    // size, other bytes). Its resume makes fix-1's second request again,
    // sees by the digest that it is not the one sent and restarts fix-1
    // whole, saying so; fix-2 is not sent again.
    let tampered = dir.path().join("tampered");
    copy_run(&cut, &tampered, |t, line| {
        match (t["session_id"].as_str(), t["turn"].as_u64()) {
            (Some("fix-1"), Some(1)) => {
                assert!(line.contains("\"call_1_0\""), "{line}");
                line.replace("\"call_1_0\"", "\"call_1_9\"")
            }
            _ => line.to_owned(),
        }
    });
    // A copy as an older agentload wrote it: no request digests.
    let older = dir.path().join("older");
    copy_run(&cut, &older, |t, _| {
        let mut t = t.clone();
        let digest = t["closed"]
            .as_object_mut()
            .unwrap()
            .remove("request_sha256");
        assert!(digest.is_some(), "{t}");
        t.to_string()
    });
    let again_log = dir.path().join("tampered.requests.jsonl");
    let sim_again = sim(&script(dir.path(), &edits()), &again_log).await;
    let again = agentload(
        &[
            "resume",
            tampered.to_str().unwrap(),
            "--endpoint",
            &sim_again.url(),
        ],
        dir.path(),
    )
    .await;
    let said = text(&again);
    assert!(again.status.success(), "{said}");
    sim_again.shutdown().await;
    assert!(
        said.contains("resume: session fix-1: the workload's turn 2 differs")
            && said.contains("is not the one sent")
            && said.contains("restarting it whole"),
        "{said}"
    );
    assert!(!said.contains("session fix-2: the workload"), "{said}");
    assert!(!said.contains("checked by size only"), "{said}");
    // The restarted session is the whole run's, request for request.
    let resent = digests(&again_log);
    assert_eq!(resent.keys().collect::<Vec<_>>(), ["fix-1"], "{said}");
    assert_eq!(resent["fix-1"], digests(&whole_log)["fix-1"], "{said}");

    // The resume, against a server whose script goes on from fix-1's third
    // request: only the requests not answered are sent again.
    let rest: Vec<Value> = edits()[2..4]
        .iter()
        .map(|l| {
            let mut l = l.clone();
            l["turn"] = json!(l["turn"].as_u64().unwrap() - 2);
            l
        })
        .collect();
    let rest_path = dir.path().join("rest");
    std::fs::create_dir_all(&rest_path).unwrap();
    let resume_log = dir.path().join("resume.requests.jsonl");
    let sim_resume = sim(&script(&rest_path, &rest), &resume_log).await;
    // Another archive under the locked name: the resume is refused.
    let good = std::fs::read(&archive).unwrap();
    std::fs::write(&archive, b"another archive").unwrap();
    let refused = agentload(
        &["resume", cut_s, "--endpoint", &sim_resume.url()],
        dir.path(),
    )
    .await;
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("tools.workspace.sha256"),
        "{}",
        text(&refused)
    );
    std::fs::write(&archive, good).unwrap();
    let resumed = agentload(
        &["resume", cut_s, "--endpoint", &sim_resume.url()],
        dir.path(),
    )
    .await;
    let said = text(&resumed);
    assert!(resumed.status.success(), "{said}");
    assert!(!said.contains("resume: session"), "{said}");
    sim_resume.shutdown().await;
    // Without digests the sizes are compared, and the console says so;
    // the same requests are sent.
    let older_log = dir.path().join("older.requests.jsonl");
    let sim_older = sim(&rest_path.join("script.jsonl"), &older_log).await;
    let resumed = agentload(
        &[
            "resume",
            older.to_str().unwrap(),
            "--endpoint",
            &sim_older.url(),
        ],
        dir.path(),
    )
    .await;
    let said_older = text(&resumed);
    assert!(resumed.status.success(), "{said_older}");
    sim_older.shutdown().await;
    assert!(said_older.contains("checked by size only"), "{said_older}");
    assert!(!said_older.contains("resume: session"), "{said_older}");
    assert_eq!(digests(&older_log), digests(&resume_log), "{said_older}");

    // Every request, the answered ones of the killed process then the
    // resume's, is the whole run's, byte for byte; so is every tool result.
    let mut sent = digests(&cut_log);
    sent.get_mut("fix-1").unwrap().truncate(2);
    for (session, more) in digests(&resume_log) {
        sent.entry(session).or_default().extend(more);
    }
    assert_eq!(sent, digests(&whole_log), "{said}");
    assert_eq!(closed_turns(&cut), closed_turns(&whole));
    let summary = |out: &Path| {
        let mut s = json(&out.join("performance/closed_loop.json"));
        s.as_object_mut().unwrap().remove("sandbox_ms");
        for x in s["sessions"].as_array_mut().unwrap() {
            x.as_object_mut().unwrap().remove("sandbox_ms");
        }
        s
    };
    assert_eq!(summary(&cut), summary(&whole));
    let report = std::fs::read_to_string(cut.join("report.txt")).unwrap();
    assert!(report.contains("run VALID"), "{report}");
}
