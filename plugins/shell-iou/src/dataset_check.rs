//! Canonicalizes every recorded assistant row of the edge dataset and checks
//! the counts an independent implementation of the reference rules found.
//! Skipped (with a note) when the dataset is not on this machine.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::{json, Value};

use agentload_sdk::{Completion, Item, Scorer, ToolCall};
use shell_actions::canon;

use crate::ShellIou;

const DATASET: &str = "agentic_coding_2.5h.jsonl";

fn dataset_path() -> PathBuf {
    let dir = std::env::var_os("AGENTLOAD_DATA_DIR").unwrap_or_else(|| "/work/shared/data".into());
    PathBuf::from(dir).join(DATASET)
}

/// The dataset's recorded assistant rows, or `None` (with a note) when the
/// dataset is absent.
fn assistant_rows() -> Option<Vec<Value>> {
    let path = dataset_path();
    let Ok(text) = std::fs::read_to_string(&path) else {
        assert!(
            std::env::var_os("AGENTLOAD_REQUIRE_DATA").is_none(),
            "{} is absent",
            path.display()
        );
        println!("note: {} not found; dataset check skipped", path.display());
        return None;
    };
    let rows = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| serde_json::from_str::<Value>(line).expect("dataset rows are JSON"))
        .filter(|row| row["_type"] != "dataset_metadata" && row["role"] == "assistant")
        .collect();
    Some(rows)
}

#[test]
fn edge_dataset_ground_truth() {
    let Some(rows) = assistant_rows() else {
        return;
    };
    let assistant_rows = rows.len();
    let mut unscorable = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for row in &rows {
        let tool_calls = row["tool_calls"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let actions = canon::bash_actions(canon::recorded_calls(tool_calls));
        if actions.is_empty() {
            unscorable.push((
                row["conversation_id"].as_str().unwrap().to_owned(),
                row["turn"].as_u64().unwrap(),
            ));
        }
        for action in actions {
            *counts.entry(action).or_default() += 1;
        }
    }
    assert_eq!(assistant_rows, 1007);
    assert_eq!(unscorable, [("astropy__astropy-12907".to_owned(), 18)]);
    for (action, expected) in [
        ("python", 361),
        ("grep", 228),
        ("sed", 227),
        ("cat", 143),
        ("head", 134),
        ("tail", 84),
        ("git", 71),
        ("pip", 61),
    ] {
        assert_eq!(counts.get(action), Some(&expected), "{action}");
    }
}

/// Replays the recorded calls as the model's answers (the last turn left
/// unanswered): every scored turn but one scores 1.0.
#[test]
fn edge_dataset_self_replay() {
    let Some(rows) = assistant_rows() else {
        return;
    };
    let last = rows.len() - 1;
    let items: Vec<Item> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let tool_calls = row["tool_calls"].as_array().cloned().unwrap_or_default();
            let calls = tool_calls
                .iter()
                .map(|call| {
                    ToolCall::new(
                        call["id"].as_str().unwrap_or(""),
                        call["function"]["name"].as_str().unwrap_or(""),
                        match &call["function"]["arguments"] {
                            Value::String(text) => text.clone(),
                            other => other.to_string(),
                        },
                    )
                })
                .collect();
            Item {
                item_id: i.to_string(),
                session_id: row["conversation_id"].as_str().unwrap().into(),
                turn: row["turn"].as_u64().unwrap() as u32 - 1,
                expected_json: json!({
                    "conversation_id": row["conversation_id"], "repeat": 0,
                    "assistant_turn": row["turn"], "tool_calls": tool_calls,
                })
                .to_string(),
                completion: (i != last).then(|| Completion {
                    tool_calls: calls,
                    finish_reason: Some("tool_calls".into()),
                    ..Completion::text("")
                }),
            }
        })
        .collect();
    let verdicts = ShellIou.score_all(&items).expect("dataset items score");
    let report = ShellIou
        .aggregate(&items, &verdicts)
        .expect("dataset items aggregate");
    let scores: Value = serde_json::from_str(&report.json).unwrap();
    assert_eq!(
        scores["turns"],
        json!({"issued": 1007, "expected": 1006, "observed": 1005, "missing": 1, "scored": 1006})
    );
    assert_eq!(report.score, 0.999, "1005 / 1006 rounded");
    assert_eq!(scores["score"], json!(0.999));
    assert_eq!(
        scores["excluded_turns"],
        json!([{"conversation_id": "astropy__astropy-12907", "turn": 18,
                "domain": "coding", "exclude_reason": "no ground truth"}])
    );
}
