//! `oracle`: replays the recorded next assistant turn of an agentic trajectory dataset.
//!
//! The dataset is the flat agentic-inference JSONL (one message per row:
//! `{conversation_id, turn, role, content?, reasoning_content?, tool_calls?, …}`). The session
//! is the `X-Session-ID` header without its `__repeat_<k>` suffix (= `conversation_id`); a
//! request holding `m` assistant messages gets that conversation's `(m+1)`-th assistant row.
//!
//! With `error_rate > 0`, a deterministic draw per (seed, session, recorded turn) decides whether
//! the turn's tool calls are perturbed: the shell command of each call (`command`, or `cmd`, in
//! the arguments object) is replaced by a decoy whose executable does not occur in the original,
//! and arguments that carry no command become `{}`. The scorer's IoU of that turn then drops.

use std::collections::HashMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::answer::{Answer, ToolCall};
use crate::api_error::ApiError;
use crate::prompt::{arguments_text, ChatRequest};
use crate::rng::{fnv1a, SplitMix64};
use crate::SimError;

use super::bfcl::BfclGold;
use super::{conversation_id, jsonl_lines, require_session, Rejection, Responder};

/// Decoy commands for perturbed tool calls.
const DECOYS: [&str; 5] = [
    "ls -la",
    "git status",
    "cat README.md",
    "find . -maxdepth 1 -type f",
    "python --version",
];

/// One recorded assistant row.
#[derive(Debug, Clone, PartialEq)]
struct Turn {
    /// The row's `turn` number (the perturbation draw is keyed on it).
    turn: u64,
    reasoning_content: String,
    content: String,
    tool_calls: Vec<ToolCall>,
}

/// The trajectory oracle.
#[derive(Debug)]
pub(crate) struct Oracle {
    /// Assistant rows per conversation id, in turn order.
    sessions: HashMap<String, Vec<Turn>>,
    error_rate: f64,
    seed: u64,
    /// Honour the request's `max_tokens` (see `ResponderConfig::Oracle`).
    cap_to_max_tokens: bool,
    /// BFCL gold answers, consulted first.
    bfcl: Option<BfclGold>,
}

impl Oracle {
    /// Indexes the dataset text read from `path`.
    pub(crate) fn parse(
        path: &Path,
        text: &str,
        error_rate: f64,
        seed: u64,
        cap_to_max_tokens: bool,
    ) -> Result<Self, SimError> {
        let mut sessions: HashMap<String, Vec<Turn>> = HashMap::new();
        for line in jsonl_lines(path, text) {
            let (line, row) = line?;
            let bad = |reason: &str| SimError::Parse {
                path: path.to_owned(),
                line,
                reason: reason.to_owned(),
            };
            if row.get("_type").and_then(Value::as_str) == Some("dataset_metadata") {
                continue;
            }
            let id = row
                .get("conversation_id")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("row without a string 'conversation_id'"))?;
            let role = row
                .get("role")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("row without a string 'role'"))?;
            if role != "assistant" {
                continue;
            }
            let turn = row
                .get("turn")
                .and_then(Value::as_u64)
                .ok_or_else(|| bad("assistant row without an integer 'turn'"))?;
            let text_field = |key: &str| match row.get(key) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(_) => Err(bad(&format!("'{key}' must be a string or null"))),
            };
            let tool_calls = match row.get("tool_calls") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(calls)) => calls
                    .iter()
                    .enumerate()
                    .map(|(i, call)| {
                        let function = call.get("function");
                        let name = function
                            .and_then(|f| f.get("name"))
                            .and_then(Value::as_str)
                            .ok_or_else(|| bad("tool call without a string 'function.name'"))?;
                        Ok(ToolCall {
                            id: call
                                .get("id")
                                .and_then(Value::as_str)
                                .map_or_else(|| format!("call_{turn}_{i}"), str::to_owned),
                            name: name.to_owned(),
                            arguments: arguments_text(function.and_then(|f| f.get("arguments"))),
                        })
                    })
                    .collect::<Result<_, SimError>>()?,
                Some(_) => return Err(bad("'tool_calls' must be an array")),
            };
            sessions.entry(id.to_owned()).or_default().push(Turn {
                turn,
                reasoning_content: text_field("reasoning_content")?,
                content: text_field("content")?,
                tool_calls,
            });
        }
        for turns in sessions.values_mut() {
            turns.sort_by_key(|t| t.turn);
        }
        Ok(Self {
            sessions,
            error_rate,
            seed,
            cap_to_max_tokens,
            bfcl: None,
        })
    }

    /// Also answers BFCL sessions with their gold calls.
    pub(crate) fn set_bfcl(&mut self, gold: BfclGold) {
        self.bfcl = Some(gold);
    }

    /// Whether the (session, turn) draw falls under the error rate.
    fn perturbs(&self, session: &str, turn: u64) -> bool {
        let key = fnv1a(session.as_bytes()) ^ turn.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        SplitMix64::new(self.seed ^ key).next_f64() < self.error_rate
    }
}

impl Responder for Oracle {
    fn answer(
        &self,
        request: &ChatRequest,
        session: Option<&str>,
        _ids: &mut SplitMix64,
    ) -> Result<Answer, Rejection> {
        let session = require_session(session)?;
        if let Some(answer) = self.bfcl.as_ref().and_then(|b| b.answer(session)) {
            return Ok(answer);
        }
        let session = conversation_id(session);
        let turns = self.sessions.get(session).ok_or_else(|| {
            ApiError::invalid_request(format!("oracle: unknown session '{session}'"))
        })?;
        let index = request.assistant_turns();
        let recorded = turns.get(index).ok_or_else(|| {
            ApiError::invalid_request(format!(
                "oracle: session '{session}' has {} recorded assistant turns; \
                 assistant turn index {index} (0-based) is out of range",
                turns.len()
            ))
        })?;
        let mut tool_calls = recorded.tool_calls.clone();
        if self.perturbs(session, recorded.turn) {
            for call in &mut tool_calls {
                call.arguments = perturb_arguments(&call.arguments);
            }
        }
        Ok(Answer {
            reasoning_content: recorded.reasoning_content.clone(),
            content: recorded.content.clone(),
            tool_calls,
            uncapped: !self.cap_to_max_tokens,
            ..Answer::default()
        })
    }
}

/// Replaces the shell command in tool-call arguments by a decoy (see the module docs).
fn perturb_arguments(arguments: &str) -> String {
    let mut object: Map<String, Value> = match serde_json::from_str(arguments) {
        Ok(Value::Object(object)) => object,
        _ => return "{}".to_owned(),
    };
    let Some((key, original)) = ["command", "cmd"].iter().find_map(|k| {
        object
            .get(*k)
            .and_then(Value::as_str)
            .map(|c| (*k, c.to_owned()))
    }) else {
        return "{}".to_owned();
    };
    let words: Vec<&str> = original
        .split(|c: char| c.is_whitespace() || "|;&/()".contains(c))
        .collect();
    let decoy = DECOYS
        .iter()
        .find(|d| !d.split(' ').next().is_some_and(|exe| words.contains(&exe)))
        .copied()
        .unwrap_or("echo perturbed");
    object.insert(key.to_owned(), Value::String(decoy.to_owned()));
    Value::Object(object).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DATA: &str = r#"{"_type": "dataset_metadata", "version": 1}
{"conversation_id": "c1", "turn": 1, "role": "user", "content": "fix it", "system": "sys"}
{"conversation_id": "c1", "turn": 2, "role": "assistant", "reasoning_content": "look", "tool_calls": [{"id": "functions.bash:0", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"grep -rn foo . | head\"}"}}]}
{"conversation_id": "c1", "turn": 3, "role": "tool", "tool_results": [{"tool_call_id": "functions.bash:0", "content": "x"}]}
{"conversation_id": "c1", "turn": 4, "role": "assistant", "content": "done", "tool_calls": [{"id": "b", "type": "function", "function": {"name": "bash", "arguments": {"command": "ls"}}}]}
"#;

    fn oracle(error_rate: f64) -> Oracle {
        Oracle::parse(Path::new("d.jsonl"), DATA, error_rate, 42, false).unwrap()
    }

    fn request(assistants: usize) -> ChatRequest {
        let mut messages = vec![json!({"role": "user", "content": "fix it"})];
        for _ in 0..assistants {
            messages.push(json!({"role": "assistant", "content": "a"}));
            messages.push(json!({"role": "tool", "content": "t"}));
        }
        ChatRequest::parse(&json!({ "messages": messages })).unwrap()
    }

    fn ask(o: &Oracle, session: Option<&str>, assistants: usize) -> Result<Answer, Rejection> {
        o.answer(&request(assistants), session, &mut SplitMix64::new(0))
    }

    #[test]
    fn returns_next_recorded_assistant_row() {
        let o = oracle(0.0);
        let a = ask(&o, Some("c1"), 0).unwrap();
        assert_eq!(a.reasoning_content, "look");
        assert_eq!(a.tool_calls[0].id, "functions.bash:0");
        assert_eq!(
            a.tool_calls[0].arguments,
            r#"{"command": "grep -rn foo . | head"}"#
        );
        let b = ask(&o, Some("c1__repeat_2"), 1).unwrap();
        assert_eq!(b.content, "done");
        assert_eq!(b.tool_calls[0].arguments, r#"{"command":"ls"}"#);
    }

    #[test]
    fn unknown_session_and_out_of_range_are_400() {
        let o = oracle(0.0);
        let e = ask(&o, Some("nope"), 0).unwrap_err().error;
        assert_eq!(e.status, 400);
        assert!(e.body()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'nope'"));
        let e = ask(&o, Some("c1"), 2).unwrap_err().error;
        assert!(e.body()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("index 2"));
        assert_eq!(ask(&o, None, 0).unwrap_err().error.status, 400);
    }

    #[test]
    fn perturbation_is_deterministic_and_changes_the_command() {
        let always = oracle(1.0);
        let a = ask(&always, Some("c1"), 0).unwrap();
        let args: Value = serde_json::from_str(&a.tool_calls[0].arguments).unwrap();
        assert_eq!(args["command"], "ls -la");
        let b = ask(&always, Some("c1"), 1).unwrap();
        let args: Value = serde_json::from_str(&b.tool_calls[0].arguments).unwrap();
        assert_eq!(args["command"], "git status");
        assert_eq!(a, ask(&always, Some("c1"), 0).unwrap());

        let half = Oracle::parse(Path::new("d"), "", 0.5, 7, false).unwrap();
        let hits = (0..1000).filter(|t| half.perturbs("s", *t)).count();
        assert!((400..600).contains(&hits), "{hits}");
        assert!(!oracle(0.0).perturbs("c1", 2));
    }

    #[test]
    fn perturb_without_command() {
        assert_eq!(perturb_arguments(r#"{"path": "x"}"#), "{}");
        assert_eq!(perturb_arguments("not json"), "{}");
        assert_eq!(
            perturb_arguments(r#"{"cmd": "ls; git log; cat x; find .; python -c 1"}"#),
            r#"{"cmd":"echo perturbed"}"#
        );
    }

    #[test]
    fn malformed_rows_report_line() {
        let e = Oracle::parse(
            Path::new("d.jsonl"),
            "{\"role\": \"user\"}\n",
            0.0,
            0,
            false,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "d.jsonl:1: row without a string 'conversation_id'"
        );
        let e = Oracle::parse(
            Path::new("d.jsonl"),
            "\n{\"conversation_id\": \"c\", \"role\": \"assistant\"}\n",
            0.0,
            0,
            false,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("d.jsonl:2: "), "{e}");
    }
}
