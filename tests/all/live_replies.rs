//! Live-reply replay (`history = "live"`): each request carries the model's
//! own earlier replies, every reply is reviewed against the recording, and
//! the run says how far it departed. Never official.

use crate::common::browser;
use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;

/// The edge conversation the scripted tests answer (44 turns; its first
/// recorded answer has two calls, the others one).
const CONV: &str = "astropy__astropy-12907";

fn sim_config(responder: ResponderConfig, log: &Path) -> SimConfig {
    SimConfig {
        time_scale: 0.0,
        responder,
        request_log: Some(log.to_path_buf()),
        ..Default::default()
    }
}

/// Every request's body by (session, its n-th request), from a request log.
fn bodies(log: &Path) -> HashMap<(String, usize), Value> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    read_jsonl(log)
        .into_iter()
        .map(|line| {
            let session = line["session"].as_str().unwrap().to_owned();
            let n = seen.entry(session.clone()).or_insert(0);
            *n += 1;
            ((session, *n), line["body"].clone())
        })
        .collect()
}

/// Every tool call in a request is answered before the next non-tool
/// message, and every tool message answers an open call.
fn every_call_answered(body: &Value) {
    let mut open: Vec<String> = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        match m["role"].as_str().unwrap() {
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap();
                let at = open.iter().position(|o| o == id);
                assert!(at.is_some(), "tool result {id} answers no open call");
                open.remove(at.unwrap());
            }
            role => {
                assert!(
                    open.is_empty(),
                    "calls {open:?} unanswered before a {role} message"
                );
                if let Some(calls) = m["tool_calls"].as_array() {
                    open = calls
                        .iter()
                        .map(|c| c["id"].as_str().unwrap().to_owned())
                        .collect();
                }
            }
        }
    }
    assert!(
        open.is_empty(),
        "the request ends on unanswered calls {open:?}"
    );
}

fn live_of(turn: &Value) -> (&str, &str) {
    let live = &turn["live"];
    (
        live["divergence"]
            .as_str()
            .unwrap_or_else(|| panic!("no review: {turn}")),
        live["action"].as_str().unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_run_against_the_oracle_matches_every_turn_and_sends_the_recorded_bodies() {
    let dir = scratch("live-oracle");
    let settings = "num_trajectories_to_issue = 3";
    let mut logs = Vec::new();
    let mut counts = false;
    for (name, extra) in [("recorded", ""), ("live", "\nhistory = \"live\"")] {
        let log = dir.path().join(format!("{name}.jsonl"));
        let sim = start_sim(sim_config(gold_responder(Some(trajectories()), None), &log)).await;
        let config = edge_config(dir.path(), &sim.url(), &format!("{settings}{extra}"), "");
        counts = counted_locally(&config);
        let out = dir.path().join(name);
        run_ok(&config, &out, &[], dir.path()).await;
        sim.shutdown().await;
        logs.push((log, out));
    }
    let (recorded, live) = (bodies(&logs[0].0), bodies(&logs[1].0));
    assert!(recorded.len() > 50, "{}", recorded.len());
    // The oracle answers with the recorded call ids: every body is the
    // recorded one, byte for byte as JSON.
    assert_eq!(live.len(), recorded.len());
    for (key, body) in &recorded {
        assert_eq!(live.get(key), Some(body), "request {key:?}");
        every_call_answered(body);
    }
    let turns = read_jsonl(&logs[1].1.join("turns.jsonl"));
    assert_eq!(turns.len(), recorded.len());
    for turn in &turns {
        assert_eq!(live_of(turn), ("match", "kept"), "{turn}");
    }
    let summary = json(&logs[1].1.join("performance/result_summary.json"));
    let block = &summary["agentload"]["live"];
    assert_eq!(block["official"], false, "{block:#}");
    assert_eq!(block["turns_reviewed"], turns.len(), "{block:#}");
    assert_eq!(block["funnel"][0]["class"], "match");
    assert_eq!(block["funnel"][0]["turns"], turns.len());
    assert_eq!(
        (
            block["sessions"].clone(),
            block["sessions_diverged"].clone()
        ),
        (json!(3), json!(0))
    );
    let report = std::fs::read_to_string(logs[1].1.join("report.txt")).unwrap();
    assert!(
        report.contains("NON-OFFICIAL: live-reply replay"),
        "{report}"
    );
    // The recorded run has no review and no live block.
    let recorded_turns = read_jsonl(&logs[0].1.join("turns.jsonl"));
    assert!(recorded_turns.iter().all(|t| t.get("live").is_none()));
    let summary = json(&logs[0].1.join("performance/result_summary.json"));
    assert!(summary["agentload"].get("live").is_none());
    // The recorded twin's counts, turn by turn, are the recorded run's own: its request is
    // the recording's, and the reply after it the one the oracle gave the recorded run.
    if counts {
        recorded_twin_counts_are_the_recorded_runs(&logs[0].1, &logs[1].1, turns.len());
    }
    // Turn by turn, the live run's lengths are the recording's: no drift.
    let out = agentload(
        &[
            "diff",
            logs[0].1.to_str().unwrap(),
            logs[1].1.to_str().unwrap(),
            "--json",
        ],
        dir.path(),
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let diffs: Value = serde_json::from_slice(&out.stdout).unwrap();
    let drift = diffs
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["report"] == "turns.jsonl")
        .unwrap_or_else(|| panic!("no turn drift in {diffs:#}"));
    assert_eq!(drift["turns"]["paired"], turns.len(), "{drift}");
    assert_eq!(drift["turns"]["isl"]["changed"], 0, "{drift}");
    assert_eq!(drift["turns"]["osl"]["changed"], 0, "{drift}");
    // The two compared: the live one is labelled, TTFT by turn overlaid.
    let compared = dir.path().join("compared.html");
    let report = agentload(
        &[
            "report",
            logs[0].1.to_str().unwrap(),
            logs[1].1.to_str().unwrap(),
            "--out",
            compared.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    assert!(report.status.success(), "{}", text(&report));
    let Some(chromium) = browser::chromium() else {
        return;
    };
    let shots = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    let page = browser::load(&chromium, &compared, &shots, "live-compared");
    page.assert_clean(&["ttft-by-turn-overlay", "isl-overlay"]);
    assert!(page.text.contains("live (not official)"), "no history row");
}

/// The oracle test's recorded twin: turn by turn, its counts are the recorded run's, and the
/// live run's summary shows no drift over `n` turns.
fn recorded_twin_counts_are_the_recorded_runs(recorded: &Path, live: &Path, n: usize) {
    let (recorded_counts, live_counts) = (token_lines(recorded), token_lines(live));
    let block = json(&live.join("performance/result_summary.json"))["agentload"]["live"].clone();
    assert_eq!(live_counts.len(), n);
    let mut with_reply = 0;
    for (key, counts) in &live_counts {
        let twin = &counts["recorded"];
        let recorded = &recorded_counts[key];
        assert_eq!(twin["isl"], recorded["isl"], "{key:?}: {counts}");
        assert_eq!(counts["isl"], recorded["isl"], "{key:?}: {counts}");
        if let Some(osl) = twin.get("osl") {
            assert_eq!(osl, &recorded["osl"], "{key:?}: {counts}");
            with_reply += 1;
        }
    }
    // Every turn but each session's last has a recorded reply after it.
    assert_eq!(with_reply, n - 3);
    for (key, total) in [("isl_drift", n), ("osl_vs_expected", with_reply)] {
        let drift = &block[key];
        assert_eq!(drift["turns"], total, "{key}: {block:#}");
        assert_eq!(drift["delta"]["changed"], 0, "{key}: {block:#}");
        assert_eq!(drift["ratio_p50"], 1.0, "{key}: {block:#}");
        assert_eq!(drift["live_tokens"], drift["recorded_tokens"], "{key}");
    }
    let report = std::fs::read_to_string(live.join("report.txt")).unwrap();
    assert!(
        report.contains("ISL against the recorded request: "),
        "{report}"
    );
}

/// The recorded answers' tool calls of `CONV`, in order: (name, arguments).
fn recorded_calls() -> Vec<Vec<(String, String)>> {
    let text = std::fs::read_to_string(trajectories()).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["conversation_id"] == CONV && r["role"] == "assistant")
        .map(|r| {
            r["tool_calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    let f = &c["function"];
                    let args = match &f["arguments"] {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (f["name"].as_str().unwrap().to_owned(), args)
                })
                .collect()
        })
        .collect()
}

fn call(n: usize, k: usize, name: &str, args: &str) -> Value {
    json!({"id": format!("s{n}-{k}"), "type": "function", "function": {"name": name, "arguments": args}})
}

/// The script: request `n` answered as `plan` says, the recorded calls otherwise.
fn departing_script(dir: &Path) -> (std::path::PathBuf, usize) {
    let recorded = recorded_calls();
    let lines: Vec<String> = recorded
        .iter()
        .enumerate()
        .map(|(i, calls)| {
            let n = i + 1;
            let same: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(k, (name, args))| call(n, k, name, args))
                .collect();
            let (first_name, first_args) = &calls[0];
            let line = match n {
                1 => json!({"tool_calls": [same[0]]}),
                3 => json!({"tool_calls": [call(n, 0, first_name, r#"{"command":"ls -la /"}"#)]}),
                4 => json!({"content": "I think the bug is in separable.py."}),
                5 => json!({"tool_calls": [same[0], call(n, 1, "bash", r#"{"command":"git status"}"#)]}),
                6 => json!({"tool_calls": [call(n, 0, first_name, r#"{"command": "grep -r"#)]}),
                7 => json!({"tool_calls": same, "finish_reason": "length"}),
                8 => json!({"tool_calls": [call(n, 0, "python", first_args)]}),
                9 => json!({"content": ""}),
                _ => json!({"tool_calls": same}),
            };
            let mut line = line;
            line["session_id"] = json!(CONV);
            line["turn"] = json!(n);
            line.to_string()
        })
        .collect();
    let path = dir.join("script.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    (path, recorded.len())
}

/// What each scripted departure is classed as, and done about, by default.
const PLAN: [(&str, &str); 9] = [
    ("missing_calls", "kept"),
    ("match", "kept"),
    ("args_diff", "kept"),
    ("text_for_call", "substituted"),
    ("extra_calls", "kept"),
    ("malformed_args", "substituted"),
    ("truncated", "substituted"),
    ("name_diff", "kept"),
    ("empty", "substituted"),
];

async fn live_run(dir: &Path, name: &str, policy: &str) -> (std::path::PathBuf, Vec<Value>, u64) {
    let (script, _) = departing_script(dir);
    let log = dir.join(format!("{name}.requests.jsonl"));
    let sim = start_sim(sim_config(ResponderConfig::Script { path: script }, &log)).await;
    let settings = format!(
        "conversations = [\"{CONV}\"]\nhistory = \"live\"\n[performance.settings.live]\nplaceholder = \"no result\"\n{policy}"
    );
    let config = edge_config(dir, &sim.url(), &settings, "");
    counted_locally(&config);
    let out = dir.join(name);
    let run = run_config(&config, &out, &[], dir).await;
    let output = text(&run);
    let served = sim.requests_served();
    sim.shutdown().await;
    assert!(out.join("turns.jsonl").exists(), "{output}");
    (log, read_jsonl(&out.join("turns.jsonl")), served)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_departure_is_classed_its_policy_applied_and_every_call_answered() {
    let dir = scratch("live-departures");
    let (log, turns, served) = live_run(dir.path(), "default", "").await;
    let n = recorded_calls().len();
    assert_eq!((turns.len(), served as usize), (n, n));
    for (i, (class, action)) in PLAN.iter().enumerate() {
        assert_eq!(
            live_of(&turns[i]),
            (*class, *action),
            "turn {}: {}",
            i + 1,
            turns[i]
        );
    }
    for turn in &turns[PLAN.len()..] {
        assert_eq!(live_of(turn), ("match", "kept"), "{turn}");
    }
    // Turn 1: one live call of two recorded: one result paired, one dropped.
    assert_eq!(turns[0]["live"]["paired_results"], 1);
    assert_eq!(turns[0]["live"]["dropped_results"], 1);
    // Turn 5: an extra call, answered with the placeholder.
    assert_eq!(turns[4]["live"]["placeholder_results"], 1);
    let bodies = bodies(&log);
    for body in bodies.values() {
        every_call_answered(body);
    }
    let request = |n: usize| {
        bodies[&(CONV.to_owned(), n)]["messages"]
            .as_array()
            .unwrap()
            .clone()
    };
    let recorded = recorded_calls();
    // After a substituted reply the next request carries the recorded one.
    for substituted in [4, 6, 7, 9] {
        let messages = request(substituted + 1);
        let reply = &messages[messages.len() - 2];
        assert_eq!(reply["role"], "assistant");
        let args = reply["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap();
        assert_eq!(
            args,
            recorded[substituted - 1][0].1,
            "after turn {substituted}"
        );
    }
    // After a kept one, the live reply with its own ids.
    let after_extra = request(6);
    let calls = after_extra[after_extra.len() - 3]["tool_calls"]
        .as_array()
        .unwrap();
    assert_eq!(calls.len(), 2);
    assert_eq!(after_extra[after_extra.len() - 1]["content"], "no result");
    assert_eq!(after_extra[after_extra.len() - 1]["tool_call_id"], "s5-1");
    let summary = json(&dir.path().join("default/performance/result_summary.json"));
    let live = &summary["agentload"]["live"];
    assert_eq!(live["substitutions"], 4, "{live:#}");
    assert_eq!(live["sessions_diverged"], 1);
    assert_eq!(live["first_divergent_turn"], json!([[1, 1]]));
    // The session's own line says the same, recomputed from turns.jsonl.
    let metrics = read_jsonl(&dir.path().join("default/session_metrics.jsonl"));
    let session = &metrics[0]["live"];
    let mut by_class: HashMap<String, u64> = HashMap::new();
    for turn in &turns {
        *by_class.entry(live_of(turn).0.to_owned()).or_insert(0) += 1;
    }
    let first = turns
        .iter()
        .find(|t| live_of(t).0 != "match")
        .map(|t| t["turn"].clone());
    assert_eq!(session["first_divergent_turn"], first.unwrap(), "{session}");
    assert_eq!(
        serde_json::from_value::<HashMap<String, u64>>(session["by_class"].clone()).unwrap(),
        by_class
    );
    assert_eq!(session["substituted"], 4);
    if vocabulary() {
        recorded_twin_drifts(&dir.path().join("default"), live, n);
    }
    // The page says so first, and draws the funnel.
    let Some(chromium) = browser::chromium() else {
        return;
    };
    let shots = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    let page = browser::load(
        &chromium,
        &dir.path().join("default/report.html"),
        &shots,
        "live",
    );
    page.assert_clean(&["divergence-funnel"]);
    assert_eq!(page.sections[..2], ["run", "live"]);
    for needle in ["NON-OFFICIAL", "text_for_call", "malformed_args", "1 of 1"] {
        assert!(page.text.contains(needle), "{needle} not on the page");
    }
    if vocabulary() {
        assert!(page.text.contains("Lengths against the recording"));
    }
}

/// The departures test's recorded twin: turn 1's request is the recording's; from the first
/// kept departure on (turn 3's other arguments stay in the history) the requests drift; turn
/// 4's text where a call was recorded has another length than the recorded reply.
fn recorded_twin_drifts(out: &Path, live: &Value, n: usize) {
    // One session: its turns in log order.
    let counts = read_jsonl(&out.join("turns.tokens.jsonl"));
    assert_eq!(counts.len(), n);
    let at = |turn: usize| &counts[turn - 1];
    assert_eq!(at(1)["isl"], at(1)["recorded"]["isl"], "{}", at(1));
    for turn in 4..=n {
        assert_ne!(at(turn)["isl"], at(turn)["recorded"]["isl"], "{}", at(turn));
    }
    assert_ne!(at(4)["osl"], at(4)["recorded"]["osl"], "{}", at(4));
    let drift = &live["isl_drift"];
    assert_eq!(drift["turns"], n, "{live:#}");
    assert!(
        drift["delta"]["changed"].as_u64().unwrap() >= n as u64 - 3,
        "{live:#}"
    );
    assert!(
        live["osl_vs_expected"]["delta"]["changed"]
            .as_u64()
            .unwrap()
            >= 1,
        "{live:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_ends_the_session_or_fails_the_turn() {
    let dir = scratch("live-policies");
    // args_diff (turn 3) ends the session: nothing after it is sent.
    let (_, turns, served) = live_run(
        dir.path(),
        "end",
        "[performance.settings.live.policy]\nargs_diff = \"end\"",
    )
    .await;
    assert_eq!((turns.len(), served), (3, 3));
    assert_eq!(live_of(&turns[2]), ("args_diff", "ended"));
    let sessions = read_jsonl(&dir.path().join("end/sessions.jsonl"));
    assert_eq!(
        sessions.last().unwrap()["ended"],
        "diverged",
        "{sessions:?}"
    );
    // ... or fails it: it is recorded failed, the rest missing, never sent.
    let (_, turns, served) = live_run(
        dir.path(),
        "fail",
        "[performance.settings.live.policy]\nargs_diff = \"fail\"",
    )
    .await;
    assert_eq!(served, 3);
    assert_eq!(turns[2]["status"], "failed");
    assert!(
        turns[2]["error"]
            .as_str()
            .unwrap()
            .contains("live reply diverged from the recording (args_diff"),
        "{}",
        turns[2]
    );
    assert!(turns[3..].iter().all(|t| t["status"] == "aborted"));
    assert_eq!(turns.len(), recorded_calls().len());
}

/// Every request body by (session, message count): the turn it is, whichever
/// process sent it (a turn cut by the kill is sent again, the same).
fn bodies_by_turn(log: &Path) -> HashMap<(String, usize), Value> {
    let mut out: HashMap<(String, usize), Value> = HashMap::new();
    for line in read_jsonl(log) {
        let key = (
            line["session"].as_str().unwrap().to_owned(),
            line["body"]["messages"].as_array().unwrap().len(),
        );
        if let Some(earlier) = out.get(&key) {
            assert_eq!(
                earlier, &line["body"],
                "turn {key:?} sent twice, differently"
            );
        }
        out.insert(key, line["body"].clone());
    }
    out
}

/// Each (session, turn)'s review.
fn reviews(turns: &Path) -> HashMap<(String, u64), Value> {
    read_jsonl(turns)
        .into_iter()
        .filter(|t| t["status"] != "interrupted")
        .map(|t| {
            let key = (
                t["session_id"].as_str().unwrap().to_owned(),
                t["turn"].as_u64().unwrap(),
            );
            (key, t["live"].clone())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_live_run_resumes_exactly() {
    let dir = scratch("live-resume");
    // The oracle perturbs about a third of the turns' commands: their
    // replies depart (args_diff) and are carried on, so later requests
    // hold the live replies and a resume must rebuild them.
    let sim = |log: &Path| {
        let mut config = replay_sim(trajectories());
        config.responder = ResponderConfig::Oracle {
            dataset: Some(trajectories()),
            bfcl: None,
            error_rate: 0.3,
            seed: 7,
            cap_to_max_tokens: false,
        };
        config.request_log = Some(log.to_path_buf());
        start_sim(config)
    };
    let settings = "num_trajectories_to_issue = 6\nhistory = \"live\"";
    let whole_log = dir.path().join("whole.requests.jsonl");
    let whole_sim = sim(&whole_log).await;
    let config = edge_config(dir.path(), &whole_sim.url(), settings, "");
    let counts = counted_locally(&config);
    let whole = dir.path().join("whole");
    run_ok(&config, &whole, &[], dir.path()).await;
    whole_sim.shutdown().await;

    let cut_log = dir.path().join("cut.requests.jsonl");
    let cut_sim = sim(&cut_log).await;
    let config = edge_config(dir.path(), &cut_sim.url(), settings, "");
    counted_locally(&config);
    let cut = dir.path().join("cut");
    let cut_s = cut.to_str().unwrap();
    let mut run = spawn(
        &["run", config.to_str().unwrap(), "--out", cut_s],
        dir.path(),
    );
    let turns = cut.join("turns.jsonl");
    wait_for_lines(&turns, 60, &mut run).await;
    run.start_kill().unwrap(); // SIGKILL
    run.wait().await.unwrap();
    let total = read_jsonl(&whole.join("turns.jsonl")).len();
    assert!(lines(&turns) < total, "killed before the end");
    let resumed = agentload(&["resume", cut_s], dir.path()).await;
    assert!(resumed.status.success(), "{}", text(&resumed));
    cut_sim.shutdown().await;

    let (a, b) = (reviews(&whole.join("turns.jsonl")), reviews(&turns));
    assert_eq!(a.len(), total);
    let departed = a.values().filter(|r| r["divergence"] != "match").count();
    assert!(departed > 10, "the oracle perturbed {departed} turns");
    assert_eq!(a, b, "every turn's review, with and without the kill");
    assert_eq!(bodies_by_turn(&whole_log), bodies_by_turn(&cut_log));
    let summary = json(&cut.join("performance/result_summary.json"));
    assert_eq!(summary["agentload"]["live"]["turns_reviewed"], total);
    if !counts {
        return;
    }
    // The turns the kill left uncounted are counted by the resume, the recorded twin
    // replayed in step: every count, the recording's too, is the whole run's.
    let lengths = |out: &Path| -> HashMap<(String, u64), [Value; 3]> {
        token_lines(out)
            .into_iter()
            .map(|(key, t)| {
                (
                    key,
                    [t["isl"].clone(), t["osl"].clone(), t["recorded"].clone()],
                )
            })
            .collect()
    };
    let (a, b) = (lengths(&whole), lengths(&cut));
    assert_eq!(a.len(), total);
    assert!(a.values().all(|[_, _, recorded]| recorded["isl"].is_u64()));
    assert_eq!(a, b);
    let drift = |out: &Path| {
        json(&out.join("performance/result_summary.json"))["agentload"]["live"]["isl_drift"].clone()
    };
    assert_eq!(drift(&whole), drift(&cut));
    assert!(drift(&whole)["delta"]["changed"].as_u64().unwrap() > 0);
}

/// Counts `config`'s turns locally (Qwen3.6) where the vocabulary is installed, so that the
/// recorded twin's counts are there to compare; whether it did.
fn counted_locally(config: &Path) -> bool {
    if !vocabulary() {
        return false;
    }
    let text = std::fs::read_to_string(config).unwrap();
    let text = text.replace("tokenizer = \"none\"", "tokenizer = \"qwen3.6\"");
    std::fs::write(config, text).unwrap();
    true
}

/// The lines of a run's `turns.tokens.jsonl` by (session, turn).
fn token_lines(out: &Path) -> HashMap<(String, u64), Value> {
    let turns = read_jsonl(&out.join("turns.jsonl"));
    read_jsonl(&out.join("turns.tokens.jsonl"))
        .into_iter()
        .map(|t| {
            let record = &turns[t["line"].as_u64().unwrap() as usize - 1];
            let key = (
                record["session_id"].as_str().unwrap().to_owned(),
                record["turn"].as_u64().unwrap(),
            );
            (key, t)
        })
        .collect()
}

/// Local prompt counts by (session, turn) from a run's `turns.tokens.jsonl`.
fn local_isl(out: &Path) -> HashMap<(String, u64), u64> {
    token_lines(out)
        .into_iter()
        .map(|(key, t)| (key, t["isl"].as_u64().unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_over_the_context_window_is_never_sent_and_ends_its_session() {
    if !vocabulary() {
        return;
    }
    let dir = scratch("live-context");
    let settings = "num_trajectories_to_issue = 3\nhistory = \"live\"";
    let run = |name: &str, window: Option<u64>| {
        let dir = dir.path().to_path_buf();
        let name = name.to_owned();
        async move {
            let log = dir.join(format!("{name}.requests.jsonl"));
            let sim = start_sim(sim_config(gold_responder(Some(trajectories()), None), &log)).await;
            // Without the server's usage every request after the first is counted, so which
            // ones are not sent follows from the local counts alone (the bound that spares
            // counting is the unit tests' business).
            let config = edge_config(&dir, &sim.url(), settings, "include_usage = false");
            let window = window.map_or(String::new(), |w| format!("\ncontext_window = {w}"));
            let text = std::fs::read_to_string(&config).unwrap().replace(
                "tokenizer = \"none\"",
                &format!("tokenizer = \"qwen3.6\"{window}"),
            );
            std::fs::write(&config, text).unwrap();
            let out = dir.join(&name);
            let output = run_ok(&config, &out, &[], &dir).await;
            sim.shutdown().await;
            (out, log, output)
        }
    };
    // Without a window: every prompt's local count.
    let (free, _, _) = run("free", None).await;
    let isl = local_isl(&free);
    // A window the longest session outgrows half way.
    let longest = isl.keys().map(|(s, t)| (*t, s.clone())).max().unwrap().1;
    let mut own: Vec<(u64, u64)> = isl
        .iter()
        .filter(|((s, _), _)| *s == longest)
        .map(|((_, t), n)| (*t, *n))
        .collect();
    own.sort_unstable();
    let window = own[own.len() / 2].1;
    let (out, log, output) = run("bounded", Some(window)).await;
    let turns = read_jsonl(&out.join("turns.jsonl"));
    let served: Vec<String> = read_jsonl(&log)
        .iter()
        .map(|l| l["session"].as_str().unwrap().to_owned())
        .collect();
    let mut overflowed = 0;
    for session in isl
        .keys()
        .map(|(s, _)| s.clone())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let mine: Vec<&Value> = turns
            .iter()
            .filter(|t| t["session_id"] == session)
            .collect();
        // The first request past turn 1 at or over the window is not sent.
        let over = mine
            .iter()
            .map(|t| t["turn"].as_u64().unwrap())
            .find(|&t| t > 1 && isl[&(session.clone(), t)] >= window);
        let sent = served.iter().filter(|s| **s == session).count() as u64;
        for t in &mine {
            let turn = t["turn"].as_u64().unwrap();
            let status = t["status"].as_str().unwrap();
            match over {
                Some(o) if turn == o => {
                    assert_eq!(status, "failed", "{t}");
                    assert!(t["issued_ns"].is_null(), "{t}");
                    let error = t["error"].as_str().unwrap();
                    let count = isl[&(session.clone(), turn)];
                    assert!(
                        error.starts_with("not sent")
                            && error.contains(&format!("({count} tokens, local count)"))
                            && error.contains(&format!("({window} tokens, model.context_window)")),
                        "{error}"
                    );
                }
                Some(o) if turn > o => assert_eq!(status, "aborted", "{t}"),
                _ => assert_eq!(status, "completed", "{t}"),
            }
        }
        match over {
            Some(o) => {
                overflowed += 1;
                let before = mine
                    .iter()
                    .filter(|t| t["turn"].as_u64().unwrap() < o)
                    .count();
                assert_eq!(sent, before as u64, "{session}: requests served");
            }
            None => assert_eq!(sent, mine.len() as u64, "{session}"),
        }
    }
    assert!(overflowed >= 1, "window {window} overflowed nothing");
    assert!(
        output.contains("not sent"),
        "the console names the cause: {output}"
    );
    let metrics = read_jsonl(&out.join("session_metrics.jsonl"));
    let ended = metrics
        .iter()
        .filter(|m| m["end_reason"] == "context_overflow")
        .count();
    assert_eq!(ended, overflowed, "{metrics:?}");
    let summary = json(&out.join("performance/result_summary.json"));
    let sessions = &summary["agentload"]["sessions"];
    assert_eq!(sessions["context_overflow_flagged"], true, "{sessions:#}");
    assert_eq!(
        sessions["ended"]["context_overflow"], overflowed,
        "{sessions:#}"
    );
}

/// A small synthetic agentic workload (`agentic-synth`), `history` as given.
fn synth_config(dir: &Path, url: &str, history: &str) -> std::path::PathBuf {
    let text = format!(
        r#"name = "synth-{history}"
[model]
name = "synthetic"
tokenizer = "none"
[endpoint]
url = "{url}"
[performance]
workload = "agentic-synth"
[performance.settings]
seed = 7
trajectories = 4
turns_min = 3
turns_max = 6
system_words = 40
inject_tool_delay = false
history = "{history}"
context = {{ median = 200.0, sigma = 0.2, min = 100, max = 400 }}
tool_output = {{ median = 30.0, sigma = 0.2, min = 10, max = 60 }}
tool_call_osl = {{ median = 12.0, sigma = 0.2, min = 4, max = 24 }}
reasoning_osl = {{ median = 40.0, sigma = 0.2, min = 20, max = 80 }}
"#
    );
    let path = dir.join(format!("synth-{history}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synthetic_live_run_falls_back_on_truncated_replies_and_sends_the_drawn_requests() {
    let dir = scratch("live-synth");
    let mut runs = Vec::new();
    for history in ["recorded", "live"] {
        let log = dir.path().join(format!("{history}.requests.jsonl"));
        let fill = ResponderConfig::Fill { default_tokens: 16 };
        let sim = start_sim(sim_config(fill, &log)).await;
        let config = synth_config(dir.path(), &sim.url(), history);
        let out = dir.path().join(history);
        run_ok(&config, &out, &[], dir.path()).await;
        sim.shutdown().await;
        runs.push((out, bodies(&log)));
    }
    let turns = read_jsonl(&runs[1].0.join("turns.jsonl"));
    assert!(turns.len() >= 12, "{}", turns.len());
    // The fill responder answers text cut at max_tokens: every reply is
    // `truncated`, and its default policy carries the drawn answer instead;
    // a session's last reply is carried nowhere.
    let mut last: HashMap<String, u64> = HashMap::new();
    for t in &turns {
        let turn = t["turn"].as_u64().unwrap();
        let at = last
            .entry(t["session_id"].as_str().unwrap().into())
            .or_default();
        *at = (*at).max(turn);
    }
    for t in &turns {
        let session = t["session_id"].as_str().unwrap();
        let action = if t["turn"].as_u64() == Some(last[session]) {
            "kept"
        } else {
            "substituted"
        };
        assert_eq!(live_of(t), ("truncated", action), "{t}");
    }
    // Every reply substituted: the live requests are the drawn ones.
    let (recorded, live) = (&runs[0].1, &runs[1].1);
    assert_eq!(live.len(), turns.len());
    assert_eq!(live, recorded);
    for body in live.values() {
        every_call_answered(body);
    }
    let summary = json(&runs[1].0.join("performance/result_summary.json"));
    let block = &summary["agentload"]["live"];
    assert_eq!(block["official"], false, "{block:#}");
    assert_eq!(block["turns_reviewed"], turns.len(), "{block:#}");
    let substituted = turns.len() - last.len();
    assert_eq!(block["substitutions"], substituted, "{block:#}");
}

/// A reply with thousands of calls: each turn's result counts go into the run's
/// sums whole (they were held in a byte each, so 5,000 placeholders a turn read
/// as 255).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_counts_of_thousands_of_calls_are_summed_whole() {
    let dir = scratch("live-many-calls");
    let recorded = recorded_calls();
    const CALLS: usize = 5000;
    let lines: Vec<String> = recorded
        .iter()
        .enumerate()
        .map(|(i, calls)| {
            let n = i + 1;
            let (name, args) = &calls[0];
            let many: Vec<Value> = match n {
                1 | 2 => (0..CALLS).map(|k| call(n, k, name, "{}")).collect(),
                _ => (0..calls.len()).map(|k| call(n, k, name, args)).collect(),
            };
            let mut line = json!({"tool_calls": many});
            line["session_id"] = json!(CONV);
            line["turn"] = json!(n);
            line.to_string()
        })
        .collect();
    let script = dir.path().join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).unwrap();
    let log = dir.path().join("requests.jsonl");
    let sim = start_sim(SimConfig {
        // Thousands of calls, and their results in the next requests.
        ctx_size: 4_000_000,
        ..sim_config(ResponderConfig::Script { path: script }, &log)
    })
    .await;
    let settings = format!(
        "conversations = [\"{CONV}\"]\nhistory = \"live\"\nmax_completion_tokens = 1000000\n\
         [performance.settings.live]\nplaceholder = \"no result\"\n"
    );
    let config = edge_config(dir.path(), &sim.url(), &settings, "");
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    sim.shutdown().await;
    let turns = read_jsonl(&out.join("turns.jsonl"));
    let sum = |key: &str| -> u64 {
        turns
            .iter()
            .map(|t| t["live"][key].as_u64().unwrap_or(0))
            .sum()
    };
    let placeholders = sum("placeholder_results");
    assert!(
        turns[0]["live"]["placeholder_results"].as_u64().unwrap() > 255,
        "{}",
        turns[0]["live"]
    );
    let live = &json(&out.join("performance/result_summary.json"))["agentload"]["live"];
    assert_eq!(live["placeholder_results"], placeholders, "{live:#}");
    assert_eq!(live["paired_results"], sum("paired_results"), "{live:#}");
    assert_eq!(live["dropped_results"], sum("dropped_results"), "{live:#}");
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains(&format!("{placeholders} placeholders")),
        "{report}"
    );
}
