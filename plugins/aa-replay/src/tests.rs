//! The workload end to end on small generated manifests, and on AA's own
//! replays when they are in the data directory.

use super::*;
use crate::replay::workload_digest;
use agentload_sdk::{Completion, History};

const NONCE: &str = "0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1";

fn manifest(tasks: &[(&str, u64, u64)]) -> String {
    let tasks: Vec<String> = tasks
        .iter()
        .map(|(id, calls, tools)| {
            format!(
                "    {{\"task_id\": \"{id}\", \"trace\": \"traces/{id}.jsonl\", \"source_recording\": \"r\", \
                 \"model_calls\": {calls}, \"tool_calls\": {tools}, \"total_recorded_tool_delay_ms\": 0}}"
            )
        })
        .collect();
    format!(
        "{{\n  \"name\": \"test\",\n  \"source\": \"s\",\n  \"mode\": \"single_user_agentic_replay\",\n  \"version\": 1,\n  \"tasks\": [\n{}\n  ]\n}}\n",
        tasks.join(",\n")
    )
}

/// A row of task `id`, turn `n`: the system prompt, then n user/assistant pairs.
fn row(id: &str, n: u64, target: Option<u64>, tool_ms: &[f64]) -> String {
    let mut messages = vec![serde_json::json!({"role": "system", "content": "sys é\u{1}"})];
    for i in 0..=n {
        messages.push(serde_json::json!({"role": "user", "content": format!("q{i}")}));
        if i < n {
            messages.push(serde_json::json!({"content": null, "role": "assistant", "tool_calls": [{"index": 0, "id": format!("c{i}"), "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}]}));
        }
    }
    let calls: Vec<serde_json::Value> = tool_ms
        .iter()
        .map(|ms| serde_json::json!({"duration_ms": ms, "tool_name": "bash", "action": {"command": "ls"}}))
        .collect();
    let mut row = serde_json::json!({
        "version": 1, "turn_id": format!("{id}:{n:04}"), "task_id": id, "conversation_id": id,
        "conversation_idx": n, "messages": messages, "tools": [{"type": "function", "function": {"name": "bash", "parameters": {"t": 1.0}}}],
        "simulated_tool_delay_ms_after": tool_ms.iter().sum::<f64>(), "recorded_tool_calls_after": calls,
    });
    if let Some(t) = target {
        row["target_output_tokens"] = t.into();
    }
    row.to_string()
}

fn config(settings: &str, manifest: &str, traces: &[(&str, String)]) -> Config {
    let mut c = Config::with_settings(settings)
        .with_nonce(NONCE)
        .grant("manifest", "manifest.json", manifest)
        .grant("replay/manifest.json", "manifest.json", manifest);
    for (id, text) in traces {
        c = c.grant(
            format!("replay/traces/{id}.jsonl"),
            format!("traces/{id}.jsonl"),
            text.clone(),
        );
    }
    c
}

fn two_tasks() -> Config {
    let a = [
        row("a", 0, Some(5), &[10.4]),
        row("a", 1, Some(7), &[2.0, 3.0]),
    ]
    .join("\n");
    let b = row("b", 0, Some(3), &[]);
    config(
        "{}",
        &manifest(&[("a", 2, 3), ("b", 1, 0)]),
        &[("a", a), ("b", b)],
    )
}

fn data_error(e: Error) -> (String, u32, String) {
    match e {
        Error::Data {
            file,
            line,
            message,
        } => (file, line, message),
        other => panic!("expected a data error, got {other:?}"),
    }
}

#[test]
fn tasks_are_sessions_and_turns_keep_what_the_last_request_had() {
    let mut w = AaReplay::default();
    let sessions = w.configure(two_tasks()).unwrap();
    assert_eq!(sessions, [Session::new("a", 2), Session::new("b", 1)]);
    let first = w.start("a").unwrap().into_request("a");
    assert_eq!(
        (first.turn, first.keep, first.item_id.as_str()),
        (0, 0, "a:0000")
    );
    // The first message carries the run's namespace.
    assert!(first.messages[0]
        .verbatim
        .as_deref()
        .unwrap()
        .starts_with(&format!(
            r#"{{"role":"system","content":"{NONCE}\nPerformance replay"#
        )));
    // Written as agentperf-local writes it: its key order, control characters escaped.
    assert!(first.messages[0]
        .verbatim
        .as_deref()
        .unwrap()
        .ends_with(r#"sys é\u0001"}"#));
    let s = &first.sampling;
    assert_eq!(
        (
            s.temperature,
            s.top_p,
            s.top_k,
            s.min_p,
            s.max_tokens,
            s.ignore_eos
        ),
        (
            Some(0.7),
            Some(0.8),
            Some(20),
            Some(0.0),
            Some(5),
            Some(true)
        )
    );
    assert_eq!(s.max_completion_tokens, None);
    assert_eq!(
        first.tools_json.as_deref(),
        Some(r#"[{"type":"function","function":{"name":"bash","parameters":{"t":1.0}}}]"#)
    );
    let expected: serde_json::Value = serde_json::from_str(&first.expected_json).unwrap();
    assert_eq!(expected["aa"]["turn_id"], "a:0000");
    assert_eq!(expected["aa"]["max_tokens"], 5);
    assert_eq!(expected["aa"]["recorded_tool_delay_ms"], 10.4);
    assert_eq!(expected["aa"]["tool_calls"][0]["command"], "ls");
    // The next turn keeps the two messages it shares with the first.
    let mut history = History::default();
    history.apply(first.keep, &first.messages);
    let next = w
        .next("a", Outcome::Completed(Completion::text("ok")))
        .unwrap()
        .unwrap()
        .into_request("a");
    assert_eq!((next.turn, next.keep, next.messages.len()), (1, 2, 2));
    assert_eq!(history.apply(next.keep, &next.messages).len(), 4);
    // Tool mode `none` (the default): no pause.
    assert_eq!(w.pause_ms("a"), 0);
    assert!(w.next("a", Outcome::Failed("x".into())).unwrap().is_none());
    let facts = w.facts();
    assert_eq!(facts["tasks"], 2);
    assert_eq!(facts["turns"], 3);
    assert_eq!(facts["policy"], "exact");
    assert_eq!(facts["cache_isolation"]["namespace"], NONCE);
    assert!(facts["workload_digest"]
        .as_str()
        .unwrap()
        .starts_with("sha256:"));
}

#[test]
fn fixed_delay_pauses_after_a_successful_turn_only() {
    let mut c = two_tasks();
    c.settings_json = r#"{"tool_mode": "fixed_delay", "policy": "recorded"}"#.into();
    let mut w = AaReplay::default();
    w.configure(c).unwrap();
    let first = w.start("a").unwrap().into_request("a");
    assert_eq!(first.sampling.ignore_eos, None);
    let done = Outcome::Completed(Completion::text("ok"));
    assert!(w.next("a", done.clone()).unwrap().is_some());
    assert_eq!(w.pause_ms("a"), 10, "10.4 ms, to the ms");
    // After the task's last turn the pause still holds (the session's slot waits).
    assert!(w.next("a", done).unwrap().is_none());
    assert_eq!(w.pause_ms("a"), 5);
    w.start("b").unwrap();
    assert!(w
        .next("b", Outcome::Failed("HTTP 500".into()))
        .unwrap()
        .is_none());
    assert_eq!(w.pause_ms("b"), 0, "no pause after a failed turn");
}

/// A sweep's keys: sessions beyond the tasks start them again, each pass
/// its own session ids replaying the same turns; `inject_tool_delay` is the
/// tool mode.
#[test]
fn a_sweep_issues_the_tasks_again_and_sets_the_tool_mode() {
    let mut c = two_tasks();
    c.settings_json = r#"{"num_trajectories_to_issue": 5, "inject_tool_delay": true}"#.into();
    let mut w = AaReplay::default();
    let sessions = w.configure(c).unwrap();
    assert_eq!(
        sessions,
        [
            Session::new("a", 2),
            Session::new("b", 1),
            Session::new("a#1", 2),
            Session::new("b#1", 1),
            Session::new("a#2", 2),
        ]
    );
    // The log line counts the manifest's tasks and turns, and the sessions apart.
    let replay = w.replay.as_ref().unwrap();
    let line = replay.summary_line(&sessions);
    assert!(
        line.contains(": 2 tasks, 3 turns, workload digest sha256:"),
        "{line}"
    );
    assert!(line.ends_with("; 5 sessions planned (8 turns)"), "{line}");
    let one_each = replay.summary_line(&sessions[..2]);
    assert!(!one_each.contains("planned"), "{one_each}");
    let first = w.start("a").unwrap().into_request("a");
    let again = w.start("a#2").unwrap().into_request("a#2");
    assert_eq!(first.messages, again.messages);
    assert_eq!(first.item_id, again.item_id);
    let done = Outcome::Completed(Completion::text("ok"));
    assert!(w.next("a#2", done.clone()).unwrap().is_some());
    assert_eq!(w.pause_ms("a#2"), 10, "fixed_delay");
    assert!(w.start("a#x").is_err() && w.start("c#1").is_err());
    // `false` turns a preset's fixed_delay off; 0 sessions is refused.
    let mut c = two_tasks();
    c.settings_json = r#"{"tool_mode": "fixed_delay", "inject_tool_delay": false}"#.into();
    let mut w = AaReplay::default();
    w.configure(c).unwrap();
    w.start("a").unwrap();
    assert!(w.next("a", done).unwrap().is_some());
    assert_eq!(w.pause_ms("a"), 0);
    let mut c = two_tasks();
    c.settings_json = r#"{"num_trajectories_to_issue": 0}"#.into();
    let e = AaReplay::default().configure(c).unwrap_err().to_string();
    assert!(e.contains("num_trajectories_to_issue"), "{e}");
}

#[test]
fn bad_input_is_refused_naming_file_line_and_key() {
    let a = [row("a", 0, Some(5), &[1.0]), row("a", 1, Some(7), &[])].join("\n");
    // The manifest's count of rows is wrong.
    let e = AaReplay::default()
        .configure(config("{}", &manifest(&[("a", 3, 1)]), &[("a", a.clone())]))
        .unwrap_err();
    let (file, line, message) = data_error(e);
    assert_eq!((file.as_str(), line), ("manifest.json", 7));
    assert!(message.contains("`tasks[0].model_calls`: the manifest records 3 model calls but traces/a.jsonl has 2 rows"), "{message}");
    // Its count of tool calls is wrong.
    let e = AaReplay::default()
        .configure(config("{}", &manifest(&[("a", 2, 4)]), &[("a", a.clone())]))
        .unwrap_err();
    let (_, _, message) = data_error(e);
    assert!(
        message.contains(
            "`tasks[0].tool_calls`: the manifest records 4 tool calls but traces/a.jsonl has 1"
        ),
        "{message}"
    );
    // A turn with no target under exact (and not under recorded).
    let untargeted = [row("a", 0, Some(5), &[1.0]), row("a", 1, None, &[])].join("\n");
    let m = manifest(&[("a", 2, 1)]);
    let e = AaReplay::default()
        .configure(config("{}", &m, &[("a", untargeted.clone())]))
        .unwrap_err();
    let (file, line, message) = data_error(e);
    assert_eq!((file.as_str(), line), ("traces/a.jsonl", 2));
    assert!(
        message.starts_with("`target_output_tokens`: a turn with no recorded output length"),
        "{message}"
    );
    assert!(AaReplay::default()
        .configure(config(
            r#"{"policy": "recorded"}"#,
            &m,
            &[("a", untargeted)]
        ))
        .is_ok());
    // A trace path leaving the folder.
    let escaping = m.replace("traces/a.jsonl", "../a.jsonl");
    let e = AaReplay::default()
        .configure(config("{}", &escaping, &[("a", a.clone())]))
        .unwrap_err();
    let (_, line, message) = data_error(e);
    assert_eq!(line, 7);
    assert!(
        message
            .contains("`tasks[0].trace`: \"../a.jsonl\" must stay within the manifest directory"),
        "{message}"
    );
    // A trace that is not granted.
    let e = AaReplay::default()
        .configure(config("{}", &m, &[]))
        .unwrap_err();
    let (_, _, message) = data_error(e);
    assert!(
        message.contains("traces/a.jsonl is not in the folder granted as `replay`"),
        "{message}"
    );
    // An unknown policy names the key.
    let e = AaReplay::default()
        .configure(config(r#"{"policy": "exactly"}"#, &m, &[("a", a.clone())]))
        .unwrap_err();
    assert!(
        matches!(&e, Error::Config(m) if m.contains("unknown variant `exactly`")),
        "{e:?}"
    );
    // A manifest that is not its folder's.
    let mut other = config("{}", &m, &[("a", a)]);
    other.files[0].bytes = m.replace("\"test\"", "\"other\"").into_bytes();
    let e = AaReplay::default().configure(other).unwrap_err();
    assert!(
        matches!(&e, Error::Config(m) if m.contains("not the one in the folder")),
        "{e:?}"
    );
}

#[test]
fn the_digest_is_agentperf_locals_formula() {
    // sha256 of `[["a.json","sha256:<a>"],["t/b.jsonl","sha256:<b>"]]`, sorted by path.
    let mut members = vec![
        ("t/b.jsonl".to_owned(), &b"b"[..]),
        ("a.json".to_owned(), &b"a"[..]),
    ];
    let digest = workload_digest(&mut members);
    let canonical = format!(
        "[[\"a.json\",\"sha256:{}\"],[\"t/b.jsonl\",\"sha256:{}\"]]",
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"a")),
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"b"))
    );
    assert_eq!(
        digest,
        format!(
            "sha256:{}",
            hex::encode(<sha2::Sha256 as sha2::Digest>::digest(canonical.as_bytes()))
        )
    );
}

/// AA's replays, as fetched by scripts/fetch-aa-replays.sh, when present.
fn aa_replays() -> Option<std::path::PathBuf> {
    let data = std::env::var_os("AGENTLOAD_DATA_DIR").map(std::path::PathBuf::from);
    let cache =
        std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/agentload/data"));
    let found = data
        .into_iter()
        .chain(cache)
        .map(|d| d.join("aa_replays"))
        .find(|d| {
            d.join("agentperf-default-v1/manifest-x86_64.json")
                .is_file()
        });
    if found.is_none() && std::env::var_os("AGENTLOAD_REQUIRE_DATA").is_some() {
        panic!("aa_replays missing: run scripts/fetch-aa-replays.sh DIR");
    }
    found
}

fn granted(dir: &std::path::Path, manifest: &str) -> Config {
    let bytes = std::fs::read(dir.join(manifest)).unwrap();
    let mut c = Config::with_settings("{}")
        .with_nonce(NONCE)
        .grant("manifest", manifest, bytes);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                c = c.grant(
                    format!("replay/{rel}"),
                    rel.clone(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    c
}

#[test]
fn aa_replays_load_with_agentperf_locals_digests() {
    let Some(dir) = aa_replays() else { return };
    let default = dir.join("agentperf-default-v1");
    let mut w = AaReplay::default();
    let sessions = w
        .configure(granted(&default, "manifest-x86_64.json"))
        .unwrap();
    assert_eq!(sessions.len(), 8);
    assert_eq!(sessions.iter().map(|s| s.expected_turns).sum::<u32>(), 168);
    let facts = w.facts();
    assert_eq!(
        facts["workload_digest"],
        "sha256:7d9b1daeeb917156a5a5afa96cae63571dd9ce0ec756d331080fa4db956d802d"
    );
    let mut arm = AaReplay::default();
    arm.configure(granted(&default, "manifest-arm64.json"))
        .unwrap();
    assert!(arm.facts()["workload_digest"]
        .as_str()
        .unwrap()
        .starts_with("sha256:2bd9619d"));
    let mut mini = AaReplay::default();
    let sessions = mini
        .configure(granted(&dir.join("aa-mini-v1"), "manifest.json"))
        .unwrap();
    assert_eq!(sessions, [Session::new("aa-mini-library-01", 6)]);
    assert!(mini.facts()["workload_digest"]
        .as_str()
        .unwrap()
        .starts_with("sha256:4e2ac8ad"));
}
