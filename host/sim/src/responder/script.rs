//! `script`: canned completions from a JSONL file.
//!
//! Each line is
//! `{"session_id": str, "turn": int, "content"?: str, "reasoning_content"?: str,
//!   "tool_calls"?: [{"id"?, "type"?, "function": {"name", "arguments"}}], "finish_reason"?: str,
//!   "http_status"?: int, "error"?: str, "delay_ms"?: int}`.
//!
//! The simulator counts requests per `X-Session-ID` header value; a request is answered by the
//! line whose `session_id` is that header without its `__repeat_<k>` suffix and whose `turn` is
//! the request's 1-based index within that header value. `http_status` / `error` make it an error
//! answer (status default 500, message default `scripted error`); `delay_ms` stalls that many
//! wall-clock milliseconds (not scaled) before the first token, or before the error answer.
//! Tool calls without `id` get a generated one; `arguments` may be a string (streamed verbatim)
//! or any other JSON (streamed compact).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::answer::{Answer, ToolCall};
use crate::api_error::ApiError;
use crate::prompt::{arguments_text, ChatRequest};
use crate::rng::SplitMix64;
use crate::SimError;

use super::{conversation_id, jsonl_lines, require_session, Rejection, Responder};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    session_id: String,
    turn: u32,
    content: Option<String>,
    reasoning_content: Option<String>,
    tool_calls: Option<Vec<LineCall>>,
    finish_reason: Option<String>,
    http_status: Option<u16>,
    error: Option<String>,
    delay_ms: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LineCall {
    id: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    function: LineFunction,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LineFunction {
    name: String,
    arguments: Value,
}

/// What one script line says to do.
#[derive(Debug, Clone, PartialEq)]
enum Entry {
    /// Stream this answer; tool calls with an empty id get a generated one.
    Answer(Answer),
    /// Answer this error after `stall`.
    Fail(Rejection),
}

/// The script responder.
#[derive(Debug)]
pub(crate) struct Script {
    entries: HashMap<(String, u32), Entry>,
    /// Requests seen per raw `X-Session-ID` value.
    counts: Mutex<HashMap<String, u32>>,
}

impl Script {
    /// Parses the script text read from `path`; malformed lines are reported with file and line.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<Self, SimError> {
        let mut entries = HashMap::new();
        for line in jsonl_lines(path, text) {
            let (line, value) = line?;
            let bad = |reason: String| SimError::Parse {
                path: path.to_owned(),
                line,
                reason,
            };
            let parsed: Line = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
            if parsed.turn == 0 {
                return Err(bad("'turn' is 1-based".to_owned()));
            }
            let key = (parsed.session_id.clone(), parsed.turn);
            let entry = Self::entry(parsed).map_err(bad)?;
            if entries.insert(key.clone(), entry).is_some() {
                return Err(bad(format!(
                    "duplicate entry for session '{}' turn {}",
                    key.0, key.1
                )));
            }
        }
        Ok(Self {
            entries,
            counts: Mutex::new(HashMap::new()),
        })
    }

    fn entry(line: Line) -> Result<Entry, String> {
        let stall = Duration::from_millis(line.delay_ms.unwrap_or(0));
        if line.http_status.is_some() || line.error.is_some() {
            let status = line.http_status.unwrap_or(500);
            if !(400..=599).contains(&status) {
                return Err(format!(
                    "'http_status' {status} is not an error status (400-599)"
                ));
            }
            let message = line.error.unwrap_or_else(|| "scripted error".to_owned());
            return Ok(Entry::Fail(Rejection {
                error: ApiError::with_status(status, message),
                stall,
            }));
        }
        let tool_calls = line
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .map(|call| match call.kind.as_deref() {
                None | Some("function") => Ok(ToolCall {
                    id: call.id.unwrap_or_default(),
                    name: call.function.name,
                    arguments: arguments_text(Some(&call.function.arguments)),
                }),
                Some(other) => Err(format!("tool call type '{other}' is not 'function'")),
            })
            .collect::<Result<_, _>>()?;
        Ok(Entry::Answer(Answer {
            reasoning_content: line.reasoning_content.unwrap_or_default(),
            content: line.content.unwrap_or_default(),
            tool_calls,
            finish_reason: line.finish_reason,
            stall,
            uncapped: false,
        }))
    }
}

impl Responder for Script {
    fn answer(
        &self,
        _request: &ChatRequest,
        session: Option<&str>,
        ids: &mut SplitMix64,
    ) -> Result<Answer, Rejection> {
        let session = require_session(session)?;
        let index = {
            let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            let n = counts.entry(session.to_owned()).or_insert(0);
            *n += 1;
            *n
        };
        let id = conversation_id(session);
        match self.entries.get(&(id.to_owned(), index)) {
            None => Err(ApiError::invalid_request(format!(
                "script: no entry for session '{id}' request index {index}"
            ))
            .into()),
            Some(Entry::Fail(rejection)) => Err(rejection.clone()),
            Some(Entry::Answer(answer)) => {
                let mut answer = answer.clone();
                for call in &mut answer.tool_calls {
                    if call.id.is_empty() {
                        call.id = ids.alphanumeric(32);
                    }
                }
                Ok(answer)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SCRIPT: &str = r#"{"session_id": "s", "turn": 1, "reasoning_content": "hmm", "content": "hello"}
{"session_id": "s", "turn": 2, "tool_calls": [{"function": {"name": "bash", "arguments": {"command": "ls"}}}], "delay_ms": 5}

{"session_id": "s", "turn": 3, "http_status": 503, "error": "overloaded", "delay_ms": 7}
{"session_id": "t", "turn": 1, "content": "cut", "finish_reason": "length"}
"#;

    fn ask(script: &Script, session: Option<&str>) -> Result<Answer, Rejection> {
        let request =
            ChatRequest::parse(&json!({"messages": [{"role": "user", "content": "x"}]})).unwrap();
        script.answer(&request, session, &mut SplitMix64::new(1))
    }

    #[test]
    fn answers_by_session_and_request_index() {
        let s = Script::parse(Path::new("s.jsonl"), SCRIPT).unwrap();
        let a = ask(&s, Some("s")).unwrap();
        assert_eq!(
            (a.reasoning_content.as_str(), a.content.as_str()),
            ("hmm", "hello")
        );
        let b = ask(&s, Some("s")).unwrap();
        assert_eq!(b.tool_calls[0].arguments, r#"{"command":"ls"}"#);
        assert_eq!(b.tool_calls[0].id.len(), 32);
        assert_eq!(b.stall, Duration::from_millis(5));
        let c = ask(&s, Some("s")).unwrap_err();
        assert_eq!(c.error.status, 503);
        assert_eq!(c.error.body()["error"]["message"], "overloaded");
        assert_eq!(c.stall, Duration::from_millis(7));
        let d = ask(&s, Some("s")).unwrap_err();
        assert_eq!(d.error.status, 400);
        assert!(d.error.body()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session 's' request index 4"));
        // Repeats count separately but share the script lines.
        assert_eq!(ask(&s, Some("s__repeat_1")).unwrap().content, "hello");
        assert_eq!(
            ask(&s, Some("t")).unwrap().finish_reason.as_deref(),
            Some("length")
        );
        assert_eq!(ask(&s, None).unwrap_err().error.status, 400);
    }

    #[test]
    fn malformed_lines_report_file_and_line() {
        let cases = [
            (
                "{\"session_id\": \"s\"}\n",
                "s.jsonl:1: missing field `turn`",
            ),
            (
                "\n{\"session_id\": \"s\", \"turn\": 1, \"contnet\": \"x\"}\n",
                "s.jsonl:2: unknown field `contnet`",
            ),
            (
                "{\"session_id\": \"s\", \"turn\": 1, \"http_status\": 200}\n",
                "s.jsonl:1: 'http_status' 200",
            ),
            (
                "{\"session_id\": \"s\", \"turn\": 1}\n{\"session_id\": \"s\", \"turn\": 1}\n",
                "s.jsonl:2: duplicate entry",
            ),
            (
                "{\"session_id\": \"s\", \"turn\": 0}\n",
                "s.jsonl:1: 'turn' is 1-based",
            ),
        ];
        for (text, expected) in cases {
            let e = Script::parse(Path::new("s.jsonl"), text)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(expected), "{e} vs {expected}");
        }
    }
}
