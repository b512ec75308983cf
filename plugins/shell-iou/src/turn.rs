//! One scored item: the workload's expected JSON against the model's
//! answer, in the conversation's domain: `coding` (the IoU of canonical
//! shell executables) or `workflow` (`sim_N` conversations: the intent code).

use serde::Deserialize;
use serde_json::{json, Value};

use pysem::chars;
use shell_actions::canon::{self, Call};
use shell_actions::iou;

use crate::intent;

/// Why a turn without ground truth is excluded (the reference's words).
pub const NO_GROUND_TRUTH: &str = "no ground truth";

/// Why a turn no assistant row follows is left out of the report (the
/// reference never pairs it, so counts it nowhere, not even as issued).
pub const NO_ANSWER_ROW: &str = "no recorded assistant row";

fn yes() -> bool {
    true
}

/// The `expected-json` the `coding-replay` workload attaches to each turn.
#[derive(Deserialize)]
struct Expected {
    conversation_id: String,
    repeat: u64,
    assistant_turn: u64,
    tool_calls: Vec<Value>,
    #[serde(default)]
    intent_codes: Option<Value>,
    #[serde(default = "yes")]
    answer_row: bool,
}

/// What the model answered, as far as scoring reads it.
#[derive(Debug)]
pub struct Answer<'a> {
    /// Its tool calls (coding turns).
    pub calls: Vec<Call<'a>>,
    /// Its reasoning and its content (workflow turns, searched in that order).
    pub reasoning_content: &'a str,
    pub content: &'a str,
}

/// A turn's ground truth and the model's, in its domain.
#[derive(Debug, Clone, PartialEq)]
pub enum Truth {
    /// Canonical executables of the recorded row's and the model's bash calls.
    Coding {
        gt_actions: Vec<String>,
        model_actions: Vec<String>,
    },
    /// The recorded row's intent codes (upper-cased, sorted) and the model's.
    Workflow {
        gt_intents: Vec<String>,
        model_intent: Option<String>,
    },
}

/// A scored turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Dataset conversation id, without a repeat suffix.
    pub conversation_id: String,
    /// Replay pass: 0 for the first, else the `k` of `<id>__repeat_<k>` (k >= 2).
    pub repeat: u64,
    /// Dataset `turn` of the recorded assistant row this turn is scored against.
    pub assistant_turn: u64,
    pub truth: Truth,
    /// The turn was expected but never answered.
    pub missing: bool,
    /// An assistant row follows the turn's client row in the data set;
    /// without one the turn is in no count of the report.
    pub answer_row: bool,
}

impl Turn {
    /// Scores one item; `answer` is `None` for a missing turn. Fails on an
    /// `expected-json` that breaks the contract.
    pub fn evaluate(expected_json: &str, answer: Option<Answer<'_>>) -> Result<Self, String> {
        let expected: Expected = serde_json::from_str(expected_json).map_err(|e| {
            format!("expected-json does not follow the coding-replay contract: {e}")
        })?;
        let missing = answer.is_none();
        let truth = if is_workflow(&expected.conversation_id) {
            Truth::Workflow {
                gt_intents: intent::ground_truth(expected.intent_codes.as_ref()),
                model_intent: answer
                    .and_then(|a| intent::model_intent(a.reasoning_content, a.content)),
            }
        } else {
            Truth::Coding {
                gt_actions: canon::bash_actions(canon::recorded_calls(&expected.tool_calls)),
                model_actions: answer
                    .map(|a| canon::bash_actions(a.calls))
                    .unwrap_or_default(),
            }
        };
        Ok(Self {
            conversation_id: expected.conversation_id,
            repeat: expected.repeat,
            assistant_turn: expected.assistant_turn,
            truth,
            missing,
            answer_row: expected.answer_row,
        })
    }

    /// The turn `score` evaluated, rebuilt for the aggregate from its
    /// verdict's [`detail`](Self::detail) and the expected JSON's keys (the
    /// recorded calls are skipped, not parsed), without evaluating again.
    pub fn from_verdict(expected_json: &str, detail: &Value) -> Result<Self, String> {
        #[derive(Deserialize)]
        struct Key {
            conversation_id: String,
            repeat: u64,
            assistant_turn: u64,
            #[serde(default = "yes")]
            answer_row: bool,
        }
        #[derive(Deserialize)]
        struct Coding {
            gt_actions: Vec<String>,
            model_actions: Vec<String>,
            missing: bool,
        }
        #[derive(Deserialize)]
        struct Workflow {
            gt_intents: Vec<String>,
            model_intent: Option<String>,
            missing: bool,
        }
        let key: Key = serde_json::from_str(expected_json).map_err(|e| {
            format!("expected-json does not follow the coding-replay contract: {e}")
        })?;
        let foreign =
            |e: serde_json::Error| format!("the verdict's detail is not shell-iou's: {e}");
        let (truth, missing) = if is_workflow(&key.conversation_id) {
            let d = Workflow::deserialize(detail).map_err(foreign)?;
            let truth = Truth::Workflow {
                gt_intents: d.gt_intents,
                model_intent: d.model_intent,
            };
            (truth, d.missing)
        } else {
            let d = Coding::deserialize(detail).map_err(foreign)?;
            let truth = Truth::Coding {
                gt_actions: d.gt_actions,
                model_actions: d.model_actions,
            };
            (truth, d.missing)
        };
        Ok(Self {
            conversation_id: key.conversation_id,
            repeat: key.repeat,
            assistant_turn: key.assistant_turn,
            truth,
            missing,
            answer_row: key.answer_row,
        })
    }

    /// `coding` or `workflow`.
    pub fn domain(&self) -> &'static str {
        match self.truth {
            Truth::Coding { .. } => "coding",
            Truth::Workflow { .. } => "workflow",
        }
    }

    /// The exclusion reason, when there is nothing to score: no assistant
    /// row, or a ground truth without actions or codes.
    pub fn exclusion(&self) -> Option<&'static str> {
        if !self.answer_row {
            return Some(NO_ANSWER_ROW);
        }
        let empty = match &self.truth {
            Truth::Coding { gt_actions, .. } => gt_actions.is_empty(),
            Truth::Workflow { gt_intents, .. } => gt_intents.is_empty(),
        };
        empty.then_some(NO_GROUND_TRUTH)
    }

    /// The turn's score: the IoU, or 1.0 when the model's intent is one of
    /// the recorded ones; 0.0 when missing or excluded.
    pub fn score(&self) -> f64 {
        if self.exclusion().is_some() {
            return 0.0;
        }
        match &self.truth {
            Truth::Coding {
                gt_actions,
                model_actions,
            } => iou::iou(gt_actions, model_actions),
            Truth::Workflow {
                gt_intents,
                model_intent,
            } => {
                let hit = model_intent
                    .as_ref()
                    .is_some_and(|m| gt_intents.contains(m));
                if hit {
                    1.0
                } else {
                    0.0
                }
            }
        }
    }

    /// The verdict's detail: both sides of the domain's comparison and
    /// whether the turn is missing.
    pub fn detail(&self) -> Value {
        match &self.truth {
            Truth::Coding {
                gt_actions,
                model_actions,
            } => json!({
                "gt_actions": gt_actions,
                "model_actions": model_actions,
                "missing": self.missing,
            }),
            Truth::Workflow {
                gt_intents,
                model_intent,
            } => json!({
                "gt_intents": gt_intents,
                "model_intent": model_intent,
                "missing": self.missing,
            }),
        }
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

    fn calls(arguments: &[&'static str]) -> Option<Answer<'static>> {
        Some(Answer {
            calls: arguments
                .iter()
                .map(|a| Call {
                    name: "bash",
                    arguments: Arguments::Text(a),
                })
                .collect(),
            reasoning_content: "",
            content: "",
        })
    }

    fn actions(turn: &Turn) -> (&[String], &[String]) {
        match &turn.truth {
            Truth::Coding {
                gt_actions,
                model_actions,
            } => (gt_actions, model_actions),
            Truth::Workflow { .. } => panic!("a coding turn: {turn:?}"),
        }
    }

    #[test]
    fn scores_iou_of_the_two_lists() {
        let exp = expected(
            "django__django-1",
            json!([bash("python a.py | grep x"), bash("python b.py")]),
        );
        let turn = Turn::evaluate(
            &exp,
            calls(&[r#"{"command": "python t.py && grep y f | grep z"}"#]),
        )
        .unwrap();
        let (gt, model) = actions(&turn);
        assert_eq!(gt, ["python", "grep", "python"]);
        assert_eq!(model, ["python", "grep", "grep"]);
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
        let turn = Turn::evaluate(&exp, None).unwrap();
        assert!(turn.missing);
        assert!(actions(&turn).1.is_empty());
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
            let answered = Turn::evaluate(&exp, calls(&[r#"{"command": "ls"}"#])).unwrap();
            let missing = Turn::evaluate(&exp, None).unwrap();
            for turn in [answered, missing] {
                assert_eq!(turn.exclusion(), Some("no ground truth"));
                assert_eq!(turn.score(), 0.0);
            }
        }
    }

    fn answer(reasoning_content: &'static str, content: &'static str) -> Option<Answer<'static>> {
        Some(Answer {
            calls: Vec::new(),
            reasoning_content,
            content,
        })
    }

    /// `^sim_\d+$` conversations are scored on intent codes; others are
    /// coding conversations whatever their rows hold.
    #[test]
    fn workflow_conversations_are_scored_on_intent_codes() {
        let exp = |id: &str, codes: Value| {
            json!({"conversation_id": id, "repeat": 0, "assistant_turn": 4,
                   "tool_calls": [], "intent_codes": codes})
            .to_string()
        };
        for id in ["sim_1", "sim_0042", "sim_\u{661}", "sim_7\n"] {
            let hit = Turn::evaluate(
                &exp(id, json!(["i042", "I043"])),
                answer("", "intent: I042"),
            )
            .unwrap();
            assert_eq!(hit.domain(), "workflow", "{id:?}");
            assert_eq!(hit.score(), 1.0);
            assert_eq!(
                hit.detail(),
                json!({"gt_intents": ["I042", "I043"], "model_intent": "I042", "missing": false})
            );
            let miss = Turn::evaluate(&exp(id, json!(["I042"])), answer("I007", "")).unwrap();
            assert_eq!(miss.score(), 0.0);
            let missing = Turn::evaluate(&exp(id, json!(["I042"])), None).unwrap();
            assert_eq!((missing.score(), missing.missing), (0.0, true));
            assert_eq!(
                missing.detail(),
                json!({"gt_intents": ["I042"], "model_intent": null, "missing": true})
            );
            // No string code: excluded, as the reference excludes it.
            let none = Turn::evaluate(&exp(id, json!([null, 7])), answer("", "I042")).unwrap();
            assert_eq!(none.exclusion(), Some(NO_GROUND_TRUTH));
            let round_trip = Turn::from_verdict(&exp(id, json!([])), &hit.detail()).unwrap();
            assert_eq!(round_trip.truth, hit.truth);
        }
        for id in ["sim_", "sim_1a", "xsim_1", "sim_1\n\n", "SIM_1"] {
            let turn =
                Turn::evaluate(&exp(id, json!(["I042"])), answer("", "intent: I042")).unwrap();
            assert_eq!(turn.domain(), "coding", "{id:?}");
            assert_eq!(
                turn.exclusion(),
                Some(NO_GROUND_TRUTH),
                "no bash call recorded"
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
            assert!(Turn::evaluate(text, None).is_err(), "{text}");
        }
    }
}
