//! `shell-iou`: the MLPerf agentic reference's inline accuracy check
//! (`AgenticInferenceInlineScorer`) as an agentload scorer component. A
//! coding turn scores the multiset IoU of the canonical shell executables in
//! the recorded assistant row's bash calls and in the model's (the
//! `shell-actions` library); a workflow turn (`sim_N` conversations, the
//! datacenter data set) scores 1 when the model's intent code is one of the
//! recorded row's `intent_codes`. The aggregate is the reference's
//! `scores.json`, byte for byte.

#![forbid(unsafe_code)]

pub mod intent;
pub mod report;
pub mod turn;

#[cfg(test)]
mod dataset_check;

use agentload_sdk::{export_scorer, Completion, Config, Error, Item, Report, Scorer, Verdict};
use shell_actions::canon::{Arguments, Call};
use turn::{Answer, Turn};

/// The scorer: no settings, no data files.
#[derive(Debug, Default)]
pub struct ShellIou;

impl Scorer for ShellIou {
    fn configure(&mut self, config: Config) -> Result<(), Error> {
        config.no_settings()?;
        config.refuse_files()
    }

    fn score(&mut self, item: &Item) -> Result<Verdict, Error> {
        let turn = evaluate(item)?;
        let verdict = match turn.exclusion() {
            Some(reason) => Verdict::excluded(item, reason),
            None => Verdict::new(item, turn.score()),
        };
        Ok(verdict.with_detail(turn.detail()))
    }

    /// From the verdicts: each turn's actions are in its detail, so nothing
    /// is canonicalized twice.
    fn aggregate(&mut self, items: &[Item], verdicts: &[Verdict]) -> Result<Report, Error> {
        let turns = items
            .iter()
            .zip(verdicts)
            .map(|(item, verdict)| {
                Turn::from_verdict(&item.expected_json, verdict.detail.value())
                    .map_err(|e| Error::input(format!("item {}: {e}", item.item_id)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let scores = report::scores(&turns).map_err(Error::input)?;
        Ok(Report::from_json(scores.score, scores.json))
    }
}

export_scorer!(ShellIou);

/// Canonicalizes one item; errors name the item.
fn evaluate(item: &Item) -> Result<Turn, Error> {
    let answer = item.completion.as_ref().map(answer);
    Turn::evaluate(&item.expected_json, answer)
        .map_err(|e| Error::input(format!("item {}: {e}", item.item_id)))
}

/// The model's answer: its tool calls (arguments are JSON text), its
/// reasoning and its content.
fn answer(completion: &Completion) -> Answer<'_> {
    Answer {
        calls: completion
            .tool_calls
            .iter()
            .map(|call| Call {
                name: &call.name,
                arguments: Arguments::Text(&call.arguments),
            })
            .collect(),
        reasoning_content: &completion.reasoning_content,
        content: &completion.content,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_sdk::{package_info, ToolCall};
    use serde_json::{json, Value};

    fn item(id: &str, tool_calls: Value, completion: Option<&[&str]>) -> Item {
        Item {
            item_id: id.into(),
            session_id: "conv".into(),
            turn: 1,
            expected_json: json!({
                "conversation_id": "conv", "repeat": 0,
                "assistant_turn": id.parse::<u64>().unwrap(), "tool_calls": tool_calls,
            })
            .to_string(),
            completion: completion.map(|commands| Completion {
                tool_calls: commands
                    .iter()
                    .map(|command| {
                        ToolCall::new("", "bash", json!({ "command": command }).to_string())
                    })
                    .collect(),
                finish_reason: Some("tool_calls".into()),
                ..Completion::text("")
            }),
        }
    }

    fn bash(command: &str) -> Value {
        json!([{"id": "functions.bash:0", "type": "function",
                "function": {"name": "bash", "arguments": {"command": command}}}])
    }

    #[test]
    fn describe_and_configure() {
        let info = ShellIou::describe(package_info!());
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("shell-iou", "0.2.0")
        );
        assert!(ShellIou.configure(Config::with_settings("{}")).is_ok());
        let e = ShellIou
            .configure(Config::with_settings(r#"{"mode": "strict"}"#))
            .unwrap_err();
        assert!(
            matches!(&e, Error::Config(m) if m.contains("`mode`")),
            "{e}"
        );
        let e = ShellIou
            .configure(Config::with_settings("{}").grant("trajectories", "t.jsonl", ""))
            .unwrap_err();
        assert!(
            matches!(&e, Error::Config(m) if m.contains("`trajectories`")),
            "{e}"
        );
    }

    #[test]
    fn score_and_aggregate() {
        let items = vec![
            item("2", bash("python a.py | grep x"), Some(&["python b.py"])),
            item("4", bash("ls"), None),
            item("6", bash("echo done"), Some(&["ls"])),
        ];
        let verdicts = ShellIou.score_all(&items).unwrap();
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
            verdicts[1].detail,
            json!({"gt_actions": ["ls"], "model_actions": [], "missing": true})
        );

        let report = ShellIou.aggregate(&items, &verdicts).unwrap();
        assert_eq!(report.score, 0.25);
        let json: Value = serde_json::from_str(&report.json).unwrap();
        assert_eq!(
            json["turns"],
            json!({"issued": 3, "expected": 2, "observed": 1, "missing": 1, "scored": 2})
        );
        assert_eq!(json["excluded_turns"][0]["turn"], 6);
        // The reference's `json.dumps(result, indent=2)`, no newline after.
        assert!(report
            .json
            .starts_with("{\n  \"score\": 0.25,\n  \"turns\": {\n"));
        assert!(report.json.ends_with("\n}"));
    }

    #[test]
    fn the_aggregate_from_verdicts_is_the_aggregate_of_the_turns() {
        let items = vec![
            item(
                "2",
                bash("python a.py | grep x && cd /x"),
                Some(&["python b.py", "grep y"]),
            ),
            item("4", bash("ls -la"), None),
            item("6", bash("echo done"), Some(&["ls"])),
            item("8", bash("git diff | head"), Some(&["git status"])),
        ];
        let verdicts = ShellIou.score_all(&items).unwrap();
        let turns: Vec<Turn> = items.iter().map(|i| evaluate(i).unwrap()).collect();
        let direct = report::scores(&turns).unwrap();
        let report = ShellIou.aggregate(&items, &verdicts).unwrap();
        assert_eq!((report.score, &report.json), (direct.score, &direct.json));
        // A detail another scorer wrote is an error naming the item.
        let mut foreign = verdicts.clone();
        foreign[1].detail = json!({"error_type": "missing"}).into();
        let e = ShellIou.aggregate(&items, &foreign).unwrap_err();
        assert!(
            matches!(&e, Error::Input(m) if m.starts_with("item 4:") && m.contains("gt_actions")),
            "{e}"
        );
    }

    #[test]
    fn bad_items_are_invalid_input() {
        let mut bad = item("2", bash("ls"), None);
        bad.expected_json = "{}".into();
        let e = ShellIou.score(&bad).unwrap_err();
        assert!(
            matches!(&e, Error::Input(m) if m.starts_with("item 2:")),
            "{e}"
        );
    }

    /// A workflow item is scored on the completion's text, reasoning first.
    #[test]
    fn workflow_items_score_the_intent_code() {
        let mut workflow = item("2", bash("ls"), None);
        workflow.expected_json = json!({"conversation_id": "sim_3", "repeat": 0,
            "assistant_turn": 2, "tool_calls": [], "intent_codes": ["I010"]})
        .to_string();
        workflow.completion = Some(Completion {
            reasoning_content: "the user wants a refund: intent: I010".into(),
            ..Completion::text("I011")
        });
        let verdict = ShellIou.score(&workflow).unwrap();
        assert_eq!(verdict.score, 1.0);
        assert_eq!(
            verdict.detail,
            json!({"gt_intents": ["I010"], "model_intent": "I010", "missing": false})
        );
        workflow.completion = Some(Completion::text("I011"));
        assert_eq!(ShellIou.score(&workflow).unwrap().score, 0.0);
    }
}
