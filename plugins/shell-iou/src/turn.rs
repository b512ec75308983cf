//! One scored item: the workload's expected JSON against the model's calls.

use serde::Deserialize;
use serde_json::{json, Value};

use pysem::chars;
use shell_actions::canon::{self, Call};
use shell_actions::iou;

/// Why a turn without ground-truth actions is excluded (the reference's words).
pub const NO_GROUND_TRUTH: &str = "no ground truth";

/// The `expected-json` the `coding-replay` workload attaches to each turn.
#[derive(Deserialize)]
struct Expected {
    conversation_id: String,
    repeat: u64,
    assistant_turn: u64,
    tool_calls: Vec<Value>,
}

/// A turn with both action lists canonicalized.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Dataset conversation id, without a repeat suffix.
    pub conversation_id: String,
    /// Replay pass: 0 for the first, else the `k` of `<id>__repeat_<k>` (k >= 2).
    pub repeat: u64,
    /// Dataset `turn` of the recorded assistant row this turn is scored against.
    pub assistant_turn: u64,
    /// Canonical executables of the recorded assistant row.
    pub gt_actions: Vec<String>,
    /// Canonical executables of the model's completion (empty when missing).
    pub model_actions: Vec<String>,
    /// The turn was expected but never answered.
    pub missing: bool,
}

impl Turn {
    /// Canonicalizes one item; `completion` is `None` for a missing turn.
    /// Fails on an `expected-json` that breaks the contract and on workflow
    /// conversations, which this scorer does not score.
    pub fn evaluate<'a>(
        expected_json: &str,
        completion: Option<impl IntoIterator<Item = Call<'a>>>,
    ) -> Result<Self, String> {
        let expected: Expected = serde_json::from_str(expected_json).map_err(|e| {
            format!("expected-json does not follow the coding-replay contract: {e}")
        })?;
        if is_workflow(&expected.conversation_id) {
            return Err(format!(
                "workflow conversations (sim_N) are not supported by shell-iou: {:?} is scored \
                 on intent codes, not shell executables",
                expected.conversation_id
            ));
        }
        let gt_actions = canon::bash_actions(canon::recorded_calls(&expected.tool_calls));
        let missing = completion.is_none();
        let model_actions = completion.map(canon::bash_actions).unwrap_or_default();
        Ok(Self {
            conversation_id: expected.conversation_id,
            repeat: expected.repeat,
            assistant_turn: expected.assistant_turn,
            gt_actions,
            model_actions,
            missing,
        })
    }

    /// The turn `score` canonicalized, rebuilt for the aggregate from its
    /// verdict's [`detail`](Self::detail) and the expected JSON's keys (the
    /// recorded calls are skipped, not parsed), without canonicalizing again.
    pub fn from_verdict(expected_json: &str, detail: &Value) -> Result<Self, String> {
        #[derive(Deserialize)]
        struct Key {
            conversation_id: String,
            repeat: u64,
            assistant_turn: u64,
        }
        #[derive(Deserialize)]
        struct Detail {
            gt_actions: Vec<String>,
            model_actions: Vec<String>,
            missing: bool,
        }
        let key: Key = serde_json::from_str(expected_json).map_err(|e| {
            format!("expected-json does not follow the coding-replay contract: {e}")
        })?;
        let detail = Detail::deserialize(detail)
            .map_err(|e| format!("the verdict's detail is not shell-iou's: {e}"))?;
        Ok(Self {
            conversation_id: key.conversation_id,
            repeat: key.repeat,
            assistant_turn: key.assistant_turn,
            gt_actions: detail.gt_actions,
            model_actions: detail.model_actions,
            missing: detail.missing,
        })
    }

    /// The exclusion reason, when the ground truth has no action to score.
    pub fn exclusion(&self) -> Option<&'static str> {
        self.gt_actions.is_empty().then_some(NO_GROUND_TRUTH)
    }

    /// The turn's IoU; 0.0 when missing (no model actions) or excluded.
    pub fn score(&self) -> f64 {
        if self.exclusion().is_some() {
            0.0
        } else {
            iou::iou(&self.gt_actions, &self.model_actions)
        }
    }

    /// The verdict's detail: both action lists and whether the turn is missing.
    pub fn detail(&self) -> Value {
        json!({
            "gt_actions": self.gt_actions,
            "model_actions": self.model_actions,
            "missing": self.missing,
        })
    }
}

/// `re.match(r"^sim_\d+$", id)`: Unicode digits, and `$` also matches before
/// a final newline.
fn is_workflow(conversation_id: &str) -> bool {
    let Some(number) = conversation_id.strip_prefix("sim_") else {
        return false;
    };
    let number = number.strip_suffix('\n').unwrap_or(number);
    !number.is_empty() && number.chars().all(chars::is_decimal)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shell_actions::canon::Arguments;

    fn expected(id: &str, tool_calls: Value) -> String {
        json!({"conversation_id": id, "repeat": 0, "assistant_turn": 4, "tool_calls": tool_calls})
            .to_string()
    }

    fn bash(command: &str) -> Value {
        json!({"id": "functions.bash:0", "type": "function", "function": {
            "name": "bash", "arguments": json!({"command": command}).to_string()}})
    }

    fn calls(arguments: &[&'static str]) -> Vec<Call<'static>> {
        arguments
            .iter()
            .map(|a| Call {
                name: "bash",
                arguments: Arguments::Text(a),
            })
            .collect()
    }

    #[test]
    fn scores_iou_of_the_two_lists() {
        let exp = expected(
            "django__django-1",
            json!([bash("python a.py | grep x"), bash("python b.py")]),
        );
        let turn = Turn::evaluate(
            &exp,
            Some(calls(&[
                r#"{"command": "python t.py && grep y f | grep z"}"#,
            ])),
        )
        .unwrap();
        assert_eq!(turn.gt_actions, ["python", "grep", "python"]);
        assert_eq!(turn.model_actions, ["python", "grep", "grep"]);
        assert_eq!(turn.exclusion(), None);
        assert_eq!(turn.score(), 0.5);
        assert!(!turn.missing);
        assert_eq!(
            turn.detail().to_string(),
            r#"{"gt_actions":["python","grep","python"],"model_actions":["python","grep","grep"],"missing":false}"#
        );
    }

    #[test]
    fn missing_scores_zero() {
        let exp = expected("c", json!([bash("ls")]));
        let turn = Turn::evaluate(&exp, None::<Vec<Call>>).unwrap();
        assert!(turn.missing);
        assert!(turn.model_actions.is_empty());
        assert_eq!(turn.score(), 0.0);
        assert_eq!(
            turn.detail().to_string(),
            r#"{"gt_actions":["ls"],"model_actions":[],"missing":true}"#
        );
    }

    #[test]
    fn empty_ground_truth_is_excluded_even_when_missing() {
        for tool_calls in [json!([]), json!([bash("echo done")])] {
            let exp = expected("c", tool_calls);
            let answered = Turn::evaluate(&exp, Some(calls(&[r#"{"command": "ls"}"#]))).unwrap();
            let missing = Turn::evaluate(&exp, None::<Vec<Call>>).unwrap();
            for turn in [answered, missing] {
                assert_eq!(turn.exclusion(), Some("no ground truth"));
                assert_eq!(turn.score(), 0.0);
            }
        }
    }

    #[test]
    fn workflow_conversations_are_rejected() {
        for id in ["sim_1", "sim_0042", "sim_\u{661}", "sim_7\n"] {
            let err = Turn::evaluate(&expected(id, json!([])), None::<Vec<Call>>).unwrap_err();
            assert!(
                err.starts_with("workflow conversations (sim_N) are not supported"),
                "{err}"
            );
        }
        for id in ["sim_", "sim_1a", "xsim_1", "sim_1\n\n", "SIM_1"] {
            assert!(
                Turn::evaluate(&expected(id, json!([])), None::<Vec<Call>>).is_ok(),
                "{id:?}"
            );
        }
    }

    #[test]
    fn contract_violations_are_errors() {
        for text in [
            "not json",
            r#"{"conversation_id": "c", "repeat": 0, "assistant_turn": 2}"#,
            r#"{"conversation_id": "c", "repeat": -1, "assistant_turn": 2, "tool_calls": []}"#,
            r#"{"conversation_id": "c", "repeat": 0, "assistant_turn": 2, "tool_calls": null}"#,
            r#"{"conversation_id": 3, "repeat": 0, "assistant_turn": 2, "tool_calls": []}"#,
        ] {
            assert!(Turn::evaluate(text, None::<Vec<Call>>).is_err(), "{text}");
        }
    }
}
