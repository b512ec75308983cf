//! The edge performance run end to end: the real binary, the real plugins,
//! the embedded simulator.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::Value;

fn fast(responder: ResponderConfig) -> SimConfig {
    SimConfig {
        time_scale: 0.0005,
        responder,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_replay_against_the_oracle_scores_one() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("full");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 20", "");
    let out = dir.path().join("out");
    run_ok(&config, &out, &["--require-valid"], dir.path()).await;

    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(summary["n_samples_issued"], 1007);
    assert_eq!(summary["n_samples_completed"], 1007);
    assert_eq!(summary["n_samples_failed"], 0);
    for key in [
        "ttft",
        "tpot",
        "latency",
        "output_sequence_lengths",
        "input_sequence_lengths",
    ] {
        assert!(
            summary[key]["percentiles"]["99.0"].is_f64(),
            "{key}: {}",
            summary[key]
        );
    }
    assert_eq!(summary["agentload"]["token_count_source"], "server");
    assert_eq!(summary["agentload"]["token_counts"]["configured"], "server");
    assert!(summary["agentload"]["timing_error"]["ttft_minus_server_ns"]["median"].is_f64());
    // The reference's shapes: all six finish reasons, 30 [lo, hi] buckets,
    // the early-stopping order statistics of 1,007 samples.
    assert_eq!(
        summary["finish_reason_counts"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        [
            "stop",
            "length",
            "tool_calls",
            "content_filter",
            "function_call",
            "other"
        ]
    );
    assert_eq!(summary["test_started_at"], 0);
    assert!(summary["legacy_loadgen_window_duration_ns"].is_null());
    let latencies: Vec<u64> = read_jsonl(&out.join("turns.jsonl"))
        .iter()
        .map(|r| r["complete_ns"].as_u64().unwrap() - r["issued_ns"].as_u64().unwrap())
        .collect();
    // The send lag's series covers every issued turn: issued minus due, from the turn log.
    let lags: Vec<u64> = read_jsonl(&out.join("turns.jsonl"))
        .iter()
        .map(|r| r["issued_ns"].as_u64().unwrap() - r["scheduled_ns"].as_u64().unwrap())
        .collect();
    let lag = &summary["agentload"]["send_lag_ns"];
    assert_eq!(lag["max"], *lags.iter().max().unwrap(), "{lag}");
    assert_eq!(lag["total"], lags.iter().sum::<u64>(), "{lag}");
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("send lag (due -> issued"), "{report}");
    let mut sorted = latencies.clone();
    sorted.sort_unstable();
    let es = &summary["latency"]["early_stopping_percentiles"];
    for (key, index) in [
        ("99.0", 1004),
        ("97.0", 990),
        ("95.0", 973),
        ("90.0", 929),
        ("50.0", 541),
    ] {
        assert_eq!(es[key], sorted[index] as f64, "p{key}");
    }
    assert!(es["99.9"].is_null());
    let buckets = summary["latency"]["histogram"]["buckets"]
        .as_array()
        .unwrap();
    assert_eq!(buckets.len(), 30);
    assert!(buckets.iter().all(|b| b.as_array().unwrap().len() == 2));
    // The performance phase's inline entry in the reference's wrapper.
    let acc = json(&out.join("accuracy/accuracy_results.json"));
    assert_eq!(acc["accuracy_scores"][0]["dataset_name"], "performance");
    assert_eq!(acc["accuracy_scores"][0]["total_samples"], 1007);
    assert!(acc.get("average_accuracy").is_none());

    // The oracle replays every recorded turn whole, so every scored turn
    // reproduces its ground truth exactly.
    let scores = json(&out.join("scores.json"));
    for row in scores["per_turn"].as_array().unwrap() {
        assert_eq!(row["score"], 1.0, "{row}");
    }
    assert_eq!(scores["score"], 1.0);
    assert_eq!(scores["turns"]["issued"], 1007);
    assert_eq!(scores["turns"]["expected"], 1006);
    assert_eq!(scores["turns"]["missing"], 0);
    assert_eq!(scores["turns"]["scored"], 1006);
    assert_eq!(scores["excluded_turns"].as_array().unwrap().len(), 1);

    let turns = std::fs::read_to_string(out.join("turns.jsonl")).unwrap();
    assert_eq!(turns.lines().count(), 1007);

    // Re-scoring the recorded completions with the same scorer, no server,
    // reproduces scores.json byte for byte.
    let rescore = agentload(&["rescore", out.to_str().unwrap()], dir.path()).await;
    assert!(rescore.status.success(), "{}", text(&rescore));
    assert_eq!(
        std::fs::read(out.join("rescore/shell-iou@0.2.0/scores.json")).unwrap(),
        std::fs::read(out.join("scores.json")).unwrap()
    );
    let manifest = json(&out.join("run_manifest.json"));
    let digests: Vec<&str> = manifest["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["digest"].as_str().unwrap())
        .collect();
    assert_eq!(digests.len(), 2);
    assert!(digests
        .iter()
        .all(|d| d.starts_with("sha256:") && d.len() == 71));
    assert!(std::fs::read_to_string(out.join("report.txt"))
        .unwrap()
        .contains("VALID"));
    assert_eq!(sim.requests_served(), 1007);
    // Concurrency 1: one keep-alive connection carried all 1,007 requests
    // (counted where they arrive).
    assert_eq!(sim.connections_accepted(), 1);
    sim.shutdown().await;
}

/// One short conversation, answered by a script.
const CONV: &str = "astropy__astropy-12907";

fn script_line(turn: u32, command: &str) -> String {
    serde_json::json!({
        "session_id": CONV,
        "turn": turn,
        "tool_calls": [{"id": format!("c{turn}"), "type": "function",
            "function": {"name": "bash", "arguments": serde_json::json!({"command": command}).to_string()}}],
    })
    .to_string()
}

/// The recorded tool calls' commands of `CONV`, in order.
fn recorded_commands() -> Vec<String> {
    let text = std::fs::read_to_string(trajectories()).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["conversation_id"] == CONV && r["role"] == "assistant")
        .map(|r| {
            let args = r["tool_calls"][0]["function"]["arguments"]
                .as_str()
                .unwrap()
                .to_string();
            serde_json::from_str::<Value>(&args).unwrap()["command"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_outputs_give_the_expected_iou_and_a_failure_aborts_the_rest() {
    let commands = recorded_commands();
    let n = commands.len() as u32;
    assert!(n > 6, "{CONV} has {n} turns");
    let mut lines = Vec::new();
    for (i, cmd) in commands.iter().enumerate() {
        let turn = i as u32 + 1;
        let line = match turn {
            // A wrong executable: IoU 0 against a one-action ground truth.
            1 => script_line(turn, "ls -la"),
            // Recorded plus an extra action: IoU = |GT| / (|GT| + 1).
            2 => script_line(turn, &format!("{cmd} && wc -l x")),
            // Turn 5 fails at the server; 6.. are never sent.
            5 => serde_json::json!({"session_id": CONV, "turn": 5, "http_status": 500, "error": "boom"}).to_string(),
            _ => script_line(turn, cmd),
        };
        lines.push(line);
    }
    let dir = scratch("script");
    let script = dir.path().join("script.jsonl");
    std::fs::write(&script, lines.join("\n")).unwrap();
    let sim = start_sim(fast(ResponderConfig::Script { path: script })).await;
    let config = edge_config(
        dir.path(),
        &sim.url(),
        &format!("conversations = [\"{CONV}\"]"),
        "",
    );
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    assert_eq!(
        sim.requests_served(),
        5,
        "turns after the failure are not sent"
    );

    let scores = json(&out.join("scores.json"));
    let per_turn = scores["per_turn"].as_array().unwrap();
    let t = &scores["turns"];
    // As the reference counts: every turn is issued; expected, observed and
    // missing cover scorable turns only (astropy turn 18 has no ground truth
    // and falls among the aborted ones).
    assert_eq!(t["issued"], n);
    assert_eq!(t["expected"], n - 1);
    assert_eq!(t["observed"], 4);
    assert_eq!(t["missing"], n - 5);
    assert_eq!(per_turn[0]["score"], 0.0);
    let gt2 = per_turn[1]["gt_actions"].as_array().unwrap().len() as f64;
    let expect2 = gt2 / (gt2 + 1.0);
    assert!(
        (per_turn[1]["score"].as_f64().unwrap() - expect2).abs() < 1e-9,
        "{}",
        per_turn[1]
    );
    assert_eq!(per_turn[2]["score"], 1.0);
    assert!(
        per_turn[4]["missing"] == true && per_turn[4]["score"] == 0.0,
        "{}",
        per_turn[4]
    );
    let turns = std::fs::read_to_string(out.join("turns.jsonl")).unwrap();
    let statuses: Vec<String> = turns
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["status"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(statuses[4], "failed");
    assert!(statuses[5..].iter().all(|s| s == "aborted"));
    let failed: Value = serde_json::from_str(turns.lines().nth(4).unwrap()).unwrap();
    assert!(
        failed["error"].as_str().unwrap().contains("HTTP 500"),
        "{failed}"
    );
    assert!(std::fs::read_to_string(out.join("report.txt"))
        .unwrap()
        .contains("INVALID"));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_overflow_fails_the_turn_and_aborts_its_conversation() {
    let sim = start_sim(SimConfig {
        ctx_size: 6000,
        ..replay_sim(trajectories())
    })
    .await;
    let dir = scratch("overflow");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        &format!("conversations = [\"{CONV}\"]"),
        "",
    );
    let out = dir.path().join("out");
    let run = run_config(&config, &out, &["--require-valid"], dir.path()).await;
    assert!(
        !run.status.success(),
        "an invalid run fails --require-valid"
    );
    let turns = std::fs::read_to_string(out.join("turns.jsonl")).unwrap();
    let records: Vec<Value> = turns
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let first_failed = records
        .iter()
        .position(|r| r["status"] == "failed")
        .expect("a turn overflowed");
    assert!(first_failed > 0, "early turns fit in 6000 tokens");
    let error = records[first_failed]["error"].as_str().unwrap();
    assert!(
        error.contains("HTTP 400") && error.contains("context"),
        "{error}"
    );
    assert!(records[first_failed + 1..]
        .iter()
        .all(|r| r["status"] == "aborted"));
    let scores = json(&out.join("scores.json"));
    let missing_rows = scores["per_turn"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["missing"] == true)
        .count();
    assert_eq!(scores["turns"]["missing"], missing_rows);
    assert!(
        missing_rows + 1 >= records.len() - first_failed,
        "{}",
        scores["turns"]
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_trajectory_line_is_named() {
    let dir = scratch("malformed");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let mut lines: Vec<String> = std::fs::read_to_string(trajectories())
        .unwrap()
        .lines()
        .take(10)
        .map(str::to_string)
        .collect();
    lines[6] = "{\"conversation_id\": \"x\", \"turn\": ".into();
    std::fs::write(data.join("broken.jsonl"), lines.join("\n")).unwrap();
    let config = edge_config(dir.path(), "http://127.0.0.1:9", "", "");
    with_trajectories(&config, &data, "broken.jsonl");
    let run = agentload(
        &["run", config.to_str().unwrap(), "--out", "out"],
        dir.path(),
    )
    .await;
    assert!(!run.status.success());
    let msg = text(&run);
    assert!(msg.contains("broken.jsonl:7"), "{msg}");
}

/// Runs a one-conversation replay (user, assistant call, tool row recording
/// a 0.3 s delay, assistant) and returns the second turn's due time after the
/// first turn's completion (the delay applied), and its issue time after it,
/// in ns.
async fn tool_delay_gap_ns(sim_url: &str, inject: bool) -> (u64, u64) {
    let dir = scratch("delay");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let rows = [
        r#"{"conversation_id": "d", "turn": 1, "role": "user", "content": "fix the bug", "system": "sys"}"#,
        r#"{"conversation_id": "d", "turn": 2, "role": "assistant", "tool_calls": [{"id": "functions.bash:0", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]}"#,
        r#"{"conversation_id": "d", "turn": 3, "role": "tool", "delay_seconds": 0.3, "tool_results": [{"tool_call_id": "functions.bash:0", "content": "a.py"}]}"#,
        r#"{"conversation_id": "d", "turn": 4, "role": "assistant", "content": "done"}"#,
    ];
    std::fs::write(data.join("delay.jsonl"), rows.join("\n")).unwrap();
    let config = edge_config(
        dir.path(),
        sim_url,
        &format!("inject_tool_delay = {inject}"),
        "",
    );
    with_trajectories(&config, &data, "delay.jsonl");
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let records: Vec<Value> = read_jsonl(&out.join("turns.jsonl"));
    assert_eq!(records.len(), 2);
    let at = |r: &Value, key: &str| r[key].as_u64().unwrap();
    let answered = at(&records[0], "complete_ns");
    (
        at(&records[1], "scheduled_ns") - answered,
        at(&records[1], "issued_ns") - answered,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_tool_delays_apply_only_when_injected() {
    let sim = start_sim(fast(ResponderConfig::Echo)).await;
    // The second turn is due the recorded 0.3 s after the first's answer, and sent no
    // earlier; without injection it is due at the answer itself.
    let (due, sent) = tool_delay_gap_ns(&sim.url(), true).await;
    assert_eq!(due, 300_000_000, "injected delay");
    assert!(sent >= due, "sent {sent} ns after the answer, due {due}");
    let (due, sent) = tool_delay_gap_ns(&sim.url(), false).await;
    assert_eq!(due, 0, "a delay without injection");
    assert!(sent >= due);
    sim.shutdown().await;
}
