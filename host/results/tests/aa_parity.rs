//! agentload's AA writer against agentperf-local 0.3.4's own files
//! (`tests/data/aa-mini`, see its README): each of AA's turns is turned back
//! into an agentload record (its stamps, usage, answer and the trace row's
//! facts), and the writer must give AA's files back: every key, every count,
//! every derived value (normalization, totals, tool groups, headline,
//! distributions), floats to 1e-9 relative (the stamps pass through
//! nanoseconds; AA's mean is Python's fsum).

use agentload_results::aa::{self, ContextFacts, Report, RunFacts};
use agentload_results::{CompletionRecord, TurnRecord, TurnStatus};
use serde_json::{json, Value};
use std::path::Path;

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/aa-mini")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn ns(ms: &Value) -> Option<u64> {
    ms.as_f64().map(|ms| (ms * 1e6).round() as u64)
}

/// AA's turn line as the record agentload would have written for it.
fn record(t: &Value) -> TurnRecord {
    let aa = json!({"aa": {
        "turn_id": t["turn_id"], "task_id": t["task_id"], "conversation_idx": t["conversation_idx"],
        "max_tokens": t["requested_max_output_tokens"],
        "recorded_prompt_tokens": t["tokens"]["recorded_prompt_tokens"],
        "recorded_completion_tokens": t["tokens"]["recorded_completion_tokens"],
        "target_output_tokens": t["tokens"]["target_output_tokens"],
        "recorded_tool_delay_ms": t["recorded_tool_delay_ms"],
        "tool_calls": t["tool_calls"].as_array().unwrap().iter().map(|c| json!({
            "tool_name": c["tool_name"], "tool_call_id": c["tool_call_id"], "command": c["command"],
            "step": c["step"], "action_index": c["action_index"],
            "duration_ms": c["recorded_duration_ms"], "recorded_returncode": c["recorded_returncode"],
        })).collect::<Vec<_>>(),
    }});
    let mut r = TurnRecord::aborted(
        t["task_id"].as_str().unwrap(),
        t["conversation_idx"].as_u64().unwrap() as u32,
        t["turn_id"].as_str().unwrap(),
        &aa.to_string(),
    );
    let timing = &t["timing"];
    if t["success"] == true {
        r.status = TurnStatus::Completed;
        r.error = None;
    } else {
        r.status = TurnStatus::Failed;
        // agentload's words for an HTTP error: `HTTP <code>: <body>`.
        let aa_text = t["error"].as_str().unwrap();
        r.error = Some(
            aa_text
                .strip_prefix("CompletionError: endpoint returned ")
                .unwrap_or(aa_text)
                .to_owned(),
        );
    }
    if timing["e2e_latency_ms"].is_null() {
        return r;
    }
    r.issued_ns = Some(0);
    r.first_byte_ns = ns(&timing["time_to_first_byte_ms"]);
    r.first_token_ns = ns(&timing["time_to_first_token_ms"]);
    r.complete_ns = ns(&timing["e2e_latency_ms"]);
    match timing["generation_ms"].as_f64() {
        Some(g) => {
            r.last_token_ns = Some(r.first_token_ns.unwrap() + (g * 1e6).round() as u64);
            r.token_chunks = 2;
        }
        None => {
            r.last_token_ns = r.first_token_ns;
            r.token_chunks = 1;
        }
    }
    r.data_events = t["response_chunks"].as_u64().map(|n| n as u32);
    let tokens = &t["tokens"];
    r.completion = Some(CompletionRecord {
        // One o200k_base token per word.
        content: " data".repeat(tokens["local_output_tokens"].as_u64().unwrap() as usize),
        finish_reason: t["finish_reason"].as_str().map(str::to_owned),
        ..CompletionRecord::default()
    });
    r.usage = serde_json::value::to_raw_value(&json!({
        "prompt_tokens": tokens["server_prompt_tokens"],
        "completion_tokens": tokens["server_output_tokens"],
        "prompt_tokens_details": {"cached_tokens": tokens["server_cached_prompt_tokens"]},
    }))
    .ok();
    r
}

/// Every difference between `ours` and `theirs` (floats to 1e-9 relative).
fn differences(ours: &Value, theirs: &Value, path: &str, out: &mut Vec<String>) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let (x, y) = (a.get(k), b.get(k));
                match (x, y) {
                    (Some(x), Some(y)) => differences(x, y, &format!("{path}.{k}"), out),
                    _ => out.push(format!("{path}.{k}: {x:?} vs {y:?}")),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                differences(x, y, &format!("{path}[{i}]"), out);
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            let (x, y) = (a.as_f64().unwrap(), b.as_f64().unwrap());
            if (x - y).abs() > 1e-9 * x.abs().max(y.abs()).max(1.0) {
                out.push(format!("{path}: {a} vs {b}"));
            }
        }
        _ if ours == theirs => {}
        _ => out.push(format!("{path}: {ours} vs {theirs}")),
    }
}

#[test]
fn the_writer_gives_back_aas_own_files() {
    let aa_turns: Vec<Value> = data("turns.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Value = serde_json::from_str(&data("summary.json")).unwrap();
    let c = &summary["config"];
    let facts = RunFacts {
        run_id: summary["run_id"].as_str().map(str::to_owned),
        started_at: summary["started_at"].as_f64(),
        ended_at: summary["ended_at"].as_f64(),
        manifest: summary["manifest"].as_str().map(str::to_owned),
        base_url: c["base_url"].as_str().map(str::to_owned),
        model: c["model"].as_str().map(str::to_owned),
        request_timeout_seconds: c["request_timeout_seconds"].as_f64(),
        policy: c["output_tokens"]["policy"].as_str().map(str::to_owned),
        fallback: c["output_tokens"]["fallback"].as_u64(),
        margin: c["output_tokens"]["margin"].as_u64(),
        sampling: Some(c["sampling"].clone()),
        reasoning_effort: None,
        cache_namespace: c["cache_isolation"]["namespace"]
            .as_str()
            .map(str::to_owned),
        tool_mode: c["tool_replay"]["mode"].as_str().map(str::to_owned),
        context: Some(ContextFacts {
            requested_tokens: c["context"]["requested_tokens"].as_u64(),
            observed_tokens: c["context"]["observed_tokens"].as_u64(),
            observed_reason: c["context"]["observed_reason"].as_str().map(str::to_owned),
        }),
        ..RunFacts::default()
    };
    let records: Vec<TurnRecord> = aa_turns.iter().map(record).collect();
    let mut report = Report::of(facts, &records);
    // The replay's span is AA's own clock's, not in its turns.
    report.measured_duration_ms = summary["measured_duration_ms"].as_f64();

    let mut found = Vec::new();
    for (ours, theirs) in report.turns.iter().zip(&aa_turns) {
        let id = theirs["turn_id"].as_str().unwrap();
        differences(&ours.to_json(), theirs, id, &mut found);
    }
    let mut ours = report.summary_json();
    // The one field that names the client.
    assert_eq!(ours["config"]["client_backend"], "agentload");
    ours["config"]["client_backend"] = json!("python");
    for (name, ours) in [
        ("summary.json", ours),
        ("tasks.json", report.tasks_json()),
        ("tools.json", report.tools_json()),
        ("failures.json", report.failures_json()),
    ] {
        let theirs: Value = serde_json::from_str(&data(name)).unwrap();
        differences(&ours, &theirs, name, &mut found);
    }
    assert!(
        found.is_empty(),
        "{} differences:\n{}",
        found.len(),
        found.join("\n")
    );
    // And the headline AA printed.
    let h = report.headline();
    assert_eq!(h.turns, 6);
    assert_eq!(h.failed_turns, 1);
    let tps = summary["output_tokens_per_second"].as_f64().unwrap();
    assert!((h.output_tokens_per_second.unwrap() - tps).abs() < 1e-6 * tps);
    let _ = aa::AA_DIR;
}
