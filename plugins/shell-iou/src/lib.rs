//! `shell-iou`: the MLPerf Edge Agentic reference's inline accuracy check
//! as an agentload scorer component. Each turn scores the multiset IoU of the
//! canonical shell executables in the recorded assistant row's bash calls
//! and in the model's; the aggregate is the reference's `scores.json`.

pub mod canon;
pub mod config;
pub mod iou;
pub mod pychar;
pub mod pyjson;
pub mod report;
pub mod turn;

#[cfg(test)]
mod dataset_check;

wit_bindgen::generate!({
    path: "../../wit/agentload-plugin@0.1.0",
    world: "scorer-plugin",
});

use agentload::plugin::types::{Completion, PluginConfig, PluginError, PluginInfo, PluginKind};
use exports::agentload::plugin::scorer::{Guest, Report, ScoredItem, Verdict};

use canon::{Arguments, Call};
use turn::Turn;

/// The exported scorer. Exported only on wasm32: component export names
/// (`agentload:plugin/scorer@0.1.0#score`) cannot be linked into a native
/// cdylib, so native builds keep the glue for tests alone.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct ShellIou;

impl Guest for ShellIou {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "shell-iou".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            kind: PluginKind::Scorer,
            description: "Multiset IoU of canonical shell executables in bash tool calls \
                          (MLPerf Edge Agentic inline accuracy)"
                .into(),
        }
    }

    fn configure(config: PluginConfig) -> Result<(), PluginError> {
        let files: Vec<&str> = config.files.iter().map(|f| f.name.as_str()).collect();
        config::check(&config.settings_json, &files).map_err(PluginError::InvalidConfig)
    }

    fn score(items: Vec<ScoredItem>) -> Result<Vec<Verdict>, PluginError> {
        items
            .iter()
            .map(|item| {
                let turn = evaluate(item)?;
                Ok(Verdict {
                    item_id: item.item_id.clone(),
                    score: turn.score(),
                    excluded: turn.exclusion().map(str::to_owned),
                    detail_json: turn.detail_json(),
                })
            })
            .collect()
    }

    fn aggregate(items: Vec<ScoredItem>, verdicts: Vec<Verdict>) -> Result<Report, PluginError> {
        if items.len() != verdicts.len()
            || items
                .iter()
                .zip(&verdicts)
                .any(|(i, v)| i.item_id != v.item_id)
        {
            return Err(PluginError::InvalidInput(
                "verdicts do not match the items one for one".into(),
            ));
        }
        let turns = items.iter().map(evaluate).collect::<Result<Vec<_>, _>>()?;
        let scores = report::scores(&turns).map_err(PluginError::InvalidInput)?;
        Ok(Report {
            score: scores.score,
            report_json: scores.json,
        })
    }
}

/// Canonicalizes one item; errors name the item.
fn evaluate(item: &ScoredItem) -> Result<Turn, PluginError> {
    let calls = item.completion.as_ref().map(model_calls);
    Turn::evaluate(&item.expected_json, calls)
        .map_err(|e| PluginError::InvalidInput(format!("item {}: {e}", item.item_id)))
}

/// The model's tool calls; their arguments are JSON text.
fn model_calls(completion: &Completion) -> Vec<Call<'_>> {
    completion
        .tool_calls
        .iter()
        .map(|call| Call {
            name: &call.name,
            arguments: Arguments::Text(&call.arguments),
        })
        .collect()
}

#[cfg(target_arch = "wasm32")]
export!(ShellIou);

#[cfg(test)]
mod tests {
    use super::*;
    use agentload::plugin::types::{GrantedFile, ToolCall};
    use serde_json::{json, Value};

    fn item(id: &str, tool_calls: Value, completion: Option<&[&str]>) -> ScoredItem {
        ScoredItem {
            item_id: id.into(),
            session_id: "conv".into(),
            turn: 1,
            expected_json: json!({
                "conversation_id": "conv", "repeat": 0,
                "assistant_turn": id.parse::<u64>().unwrap(), "tool_calls": tool_calls,
            })
            .to_string(),
            completion: completion.map(|commands| Completion {
                content: String::new(),
                reasoning_content: String::new(),
                tool_calls: commands
                    .iter()
                    .map(|command| ToolCall {
                        id: String::new(),
                        name: "bash".into(),
                        arguments: json!({ "command": command }).to_string(),
                    })
                    .collect(),
                finish_reason: Some("tool_calls".into()),
                usage: None,
            }),
        }
    }

    fn bash(command: &str) -> Value {
        json!([{"id": "functions.bash:0", "type": "function",
                "function": {"name": "bash", "arguments": {"command": command}}}])
    }

    #[test]
    fn describe_and_configure() {
        let info = ShellIou::describe();
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("shell-iou", "0.1.0")
        );
        assert!(matches!(info.kind, PluginKind::Scorer));
        let config = |settings: &str, files: Vec<GrantedFile>| PluginConfig {
            settings_json: settings.into(),
            files,
        };
        assert!(ShellIou::configure(config("{}", vec![])).is_ok());
        match ShellIou::configure(config(r#"{"mode": "strict"}"#, vec![])) {
            Err(PluginError::InvalidConfig(message)) => assert!(message.contains("`mode`")),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn score_and_aggregate() {
        let items = vec![
            item("2", bash("python a.py | grep x"), Some(&["python b.py"])),
            item("4", bash("ls"), None),
            item("6", bash("echo done"), Some(&["ls"])),
        ];
        let verdicts = ShellIou::score(items.clone()).unwrap();
        let summary: Vec<_> = verdicts
            .iter()
            .map(|v| (v.item_id.as_str(), v.score, v.excluded.as_deref()))
            .collect();
        assert_eq!(
            summary,
            [
                ("2", 0.5, None),
                ("4", 0.0, None),
                ("6", 0.0, Some("no ground truth"))
            ]
        );
        assert_eq!(
            verdicts[1].detail_json,
            r#"{"gt_actions":["ls"],"model_actions":[],"missing":true}"#
        );

        let report = ShellIou::aggregate(items.clone(), verdicts.clone()).unwrap();
        assert_eq!(report.score, 0.25);
        let json: Value = serde_json::from_str(&report.report_json).unwrap();
        assert_eq!(
            json["turns"],
            json!({"issued": 3, "expected": 2, "observed": 1, "missing": 1, "scored": 2})
        );
        assert_eq!(json["excluded_turns"][0]["turn"], 6);

        assert!(ShellIou::aggregate(items[..2].to_vec(), verdicts).is_err());
    }

    #[test]
    fn bad_items_are_invalid_input() {
        let mut bad = item("2", bash("ls"), None);
        bad.expected_json = "{}".into();
        match ShellIou::score(vec![bad]) {
            Err(PluginError::InvalidInput(message)) => assert!(message.starts_with("item 2:")),
            other => panic!("unexpected {other:?}"),
        }
        let mut workflow = item("2", bash("ls"), None);
        workflow.expected_json = json!({"conversation_id": "sim_3", "repeat": 0,
            "assistant_turn": 2, "tool_calls": []})
        .to_string();
        match ShellIou::score(vec![workflow]) {
            Err(PluginError::InvalidInput(message)) => assert!(message.contains("sim_N")),
            other => panic!("unexpected {other:?}"),
        }
    }
}
