//! AA's metrics and files from hand-built records, against values worked out
//! by hand from AA's formulas.

use super::*;
use crate::record::{CompletionRecord, TurnRecord, TurnStatus};
use agentload_client::ToolCallRecord;
use serde_json::json;

const MS: u64 = 1_000_000;

/// A completed turn of task `task` issued at `issued` ms: first byte +5 ms, first
/// visible event +10 ms, last +`gen` ms after it, end +2 ms after that; `n` output
/// tokens by the server's count.
fn turn(task: &str, idx: u64, issued: u64, gen: u64, n: u64, chunks: u32) -> TurnRecord {
    let mut r = TurnRecord::aborted(
        task,
        idx as u32,
        "i",
        &json!({"aa": {
            "turn_id": format!("{task}:{idx:04}"), "task_id": task, "conversation_idx": idx,
            "max_tokens": n, "recorded_prompt_tokens": 1000 + idx, "recorded_completion_tokens": n,
            "target_output_tokens": n, "recorded_tool_delay_ms": 40.0,
            "tool_calls": [{"tool_name": "bash", "tool_call_id": format!("c{idx}"),
                            "command": "cd /repo && ls -la", "step": idx, "action_index": 0,
                            "duration_ms": 40.0, "recorded_returncode": 0}],
        }})
        .to_string(),
    );
    r.status = TurnStatus::Completed;
    r.error = None;
    r.issued_ns = Some(issued * MS);
    r.first_byte_ns = Some((issued + 5) * MS);
    r.first_token_ns = Some((issued + 10) * MS);
    r.last_token_ns = Some((issued + 10 + gen) * MS);
    r.complete_ns = Some((issued + 12 + gen) * MS);
    r.token_chunks = chunks;
    r.data_events = Some(chunks + 3);
    r.completion = Some(CompletionRecord {
        content: " data".repeat(n as usize),
        finish_reason: Some("length".into()),
        ..CompletionRecord::default()
    });
    r.usage = crate::record::raw(json!({
        "prompt_tokens": 1000 + idx, "completion_tokens": n as f64,
        "prompt_tokens_details": {"cached_tokens": 900}
    }));
    r
}

fn facts() -> RunFacts {
    RunFacts {
        run_id: Some("run".into()),
        model: Some("m".into()),
        policy: Some("exact".into()),
        tool_mode: Some("fixed_delay".into()),
        cache_namespace: Some("1 2 3".into()),
        context: Some(ContextFacts {
            requested_tokens: Some(65_536),
            observed_tokens: Some(65_536),
            observed_reason: Some("reported".into()),
        }),
        ..RunFacts::default()
    }
}

#[test]
fn a_turns_row_is_aas() {
    let r = turn("t", 3, 100, 90, 10, 10);
    let t = TurnReport::of(&r, "fixed_delay");
    let row = t.to_json();
    assert_eq!(row["turn_id"], "t:0003");
    assert_eq!(row["success"], true);
    assert_eq!(row["requested_max_output_tokens"], 10);
    assert_eq!(row["timing"]["e2e_latency_ms"], 102.0);
    assert_eq!(row["timing"]["time_to_first_byte_ms"], 5.0);
    assert_eq!(row["timing"]["time_to_first_token_ms"], 10.0);
    assert_eq!(row["timing"]["generation_ms"], 90.0);
    // An integral float in usage is a count.
    assert_eq!(row["tokens"]["server_output_tokens"], 10);
    assert_eq!(row["tokens"]["local_output_tokens"], 10);
    assert_eq!(row["tokens"]["server_uncached_prompt_tokens"], 103);
    // Exact: normalized = raw; 90 ms over 9 decode steps.
    assert_eq!(row["normalization"]["generation_ms_per_token"], 10.0);
    assert_eq!(row["normalization"]["normalized_e2e_latency_ms"], 102.0);
    assert_eq!(row["normalization"]["warning"], Value::Null);
    assert_eq!(row["tool_calls"][0]["command"], "ls");
    assert_eq!(row["tool_calls"][0]["delay_source"], "recorded");
    assert_eq!(row["replayed_tool_delay_ms"], 40.0);
    assert_eq!(row["response_chunks"], 13);
    assert_eq!(row["finish_reason"], "length");
}

#[test]
fn one_visible_event_has_no_generation_window() {
    let r = turn("t", 0, 0, 0, 1, 1);
    let t = TurnReport::of(&r, "none");
    assert_eq!(t.generation_ms, None);
    let w = t.normalization.warning.as_ref().unwrap();
    assert_eq!(w.code, "decode_window_unmeasurable");
    assert_eq!(t.tool_calls[0].delay_source, "none");
    assert_eq!(t.replayed_tool_delay_ms, 0.0);
}

#[test]
fn short_output_is_normalized_with_a_warning() {
    // Recorded policy: 4 tokens of a 20-token target, 30 ms over 3 steps.
    let n = Normalization::of(Some(100.0), Some(30.0), Some(4), Some(20));
    assert_eq!(n.generation_ms_per_token, Some(10.0));
    assert_eq!(n.normalized_generation_ms, Some(190.0));
    assert_eq!(n.normalized_e2e_latency_ms, Some(260.0));
    let w = n.warning.unwrap();
    assert_eq!(w.code, "observed_output_below_target");
    assert_eq!(w.ratio, 0.2);
}

#[test]
fn a_failed_turn_has_no_metrics_and_no_tool_pause() {
    let mut r = turn("t", 1, 0, 10, 5, 5);
    r.status = TurnStatus::Failed;
    r.error = Some("HTTP 500: boom".into());
    r.completion = None;
    let t = TurnReport::of(&r, "fixed_delay");
    assert!(!t.success);
    assert_eq!((t.e2e_ms, t.local_output_tokens), (None, None));
    assert!(t.tool_calls.is_empty());
    assert_eq!(t.response_chunks, Some(0));
}

#[test]
fn the_headline_pools_decode_over_turns_without_tool_calls() {
    let a = turn("t", 0, 0, 90, 10, 10); // 9 decode tokens in 90 ms
    let b = turn("t", 1, 200, 30, 4, 4); // 3 in 30 ms
    let mut c = turn("u", 0, 400, 50, 6, 6); // a tool call: out of the decode rate
    c.completion
        .as_mut()
        .unwrap()
        .tool_calls
        .push(ToolCallRecord {
            id: "x".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        });
    let mut failed = turn("u", 1, 600, 10, 3, 3);
    failed.status = TurnStatus::Failed;
    failed.error = Some(
        "exact output policy: server finished with 'stop' instead of generating the full length"
            .into(),
    );
    let report = Report::of(facts(), [&a, &b, &c, &failed]);
    let h = report.headline();
    // (9 + 3) / 0.120 s
    assert!(
        (h.output_tokens_per_second.unwrap() - 100.0).abs() < 1e-9,
        "{h:?}"
    );
    // (10 + 4 + 6) / (0.102 + 0.042 + 0.062) s
    let e2e = 20.0 / 0.206;
    assert!((h.end_to_end_output_tokens_per_second.unwrap() - e2e).abs() < 1e-9);
    assert_eq!((h.turns, h.failed_turns), (4, 1));
    assert_eq!(h.e2e_p50_ms, Some(62.0));

    let summary = report.summary_json();
    assert_eq!(summary["success"], false);
    assert_eq!(summary["failed_turn_ids"], json!(["u:0001"]));
    assert_eq!(
        summary["length_finished_turn_ids"],
        json!(["t:0000", "t:0001", "u:0000", "u:0001"])
    );
    assert_eq!(summary["latency_distributions_ms"]["e2e"]["count"], 3);
    assert_eq!(summary["latency_distributions_ms"]["e2e"]["p95"], 98.0);
    assert_eq!(summary["config"]["context"]["reduced"], false);
    assert_eq!(
        summary["config"]["cache_isolation"]["mode"],
        "run_namespace_prefix"
    );
    let totals = &summary["totals"];
    assert_eq!(totals["successful_turns"], 3);
    assert_eq!(totals["tool_calls"], 3);
    assert_eq!(totals["total_recorded_tool_delay_ms"], 160.0);
    assert_eq!(totals["total_replayed_tool_delay_ms"], 120.0);
    assert_eq!(totals["total_server_output_tokens"], 20);
    assert_eq!(totals["total_recorded_completion_tokens"], 23);
    assert_eq!(totals["total_server_cached_prompt_tokens"], 2700);

    let tasks = report.tasks_json();
    assert_eq!(tasks["tasks"][1]["task_id"], "u");
    assert_eq!(tasks["tasks"][1]["failed_turn_ids"], json!(["u:0001"]));
    let tools = report.tools_json();
    assert_eq!(tools["overall"]["calls"], 3);
    assert_eq!(tools["by_command"][0]["key"], "ls");
    assert_eq!(
        report.failures_json()["failures"][0]["request_error"],
        json!(failed.error)
    );
}

#[test]
fn files_are_new_private_sorted_and_never_replaced() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("aa");
    let records = [turn("t", 0, 0, 90, 10, 10), turn("t", 1, 200, 30, 4, 4)];
    let written = write(&out, Report::of(facts(), &records)).unwrap();
    let names: Vec<_> = written
        .files
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "turns.jsonl",
            "tasks.json",
            "tools.json",
            "failures.json",
            "summary.json"
        ]
    );
    for f in &written.files {
        assert_eq!(
            std::fs::metadata(f).unwrap().permissions().mode() & 0o777,
            0o600,
            "{f:?}"
        );
    }
    let turns = std::fs::read_to_string(out.join("turns.jsonl")).unwrap();
    let first = turns.lines().next().unwrap();
    assert!(
        first.starts_with(r#"{"aborted":false,"conversation_idx":0,"error":null,"#),
        "{first}"
    );
    let summary = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(
        summary.starts_with("{\n  \"artifacts\": {\n    \"failures\": \"failures.json\","),
        "{summary}"
    );
    assert!(summary.ends_with("}\n"));
    // A second write refuses, and leaves the first intact.
    let again = write(&out, Report::of(facts(), &records)).unwrap_err();
    assert!(again.to_string().contains("never replaced"), "{again}");
    assert_eq!(
        std::fs::read_to_string(out.join("summary.json")).unwrap(),
        summary
    );
    // A link where the folder should be is refused.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), &link).unwrap();
    assert!(write(&link, Report::of(facts(), &records)).is_err());
    assert!(!dir.path().join("elsewhere").exists());
}

#[test]
fn a_record_of_another_workload_is_named_by_its_session() {
    let mut r = turn("t", 2, 0, 10, 5, 5);
    r.expected_json = "{\"want\": 1}".into();
    r.session_id = "django__django-1".into();
    let t = TurnReport::of(&r, "none");
    assert_eq!(t.info.turn_id, "django__django-1:0002");
    assert_eq!(t.info.task_id, "django__django-1");
    assert_eq!(t.info.max_tokens, None);
    assert!(t.tool_calls.is_empty());
}
