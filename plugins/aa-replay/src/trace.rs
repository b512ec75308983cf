//! An agentperf-local trace (`workload/schema.py` `TraceRow`): one JSON
//! object per non-empty line, one model turn each, read and checked as
//! agentperf-local reads it. Unknown keys are skipped (in messages too: a
//! message is sent with `role`, `content`, `name`, `tool_calls` and
//! `tool_call_id` only, in that order, as agentperf-local writes it). A
//! refusal names the file, the line and the key.

use crate::fields::{At, Obj};
use crate::manifest::VERSION;
use agentload_sdk::Error;
use serde_json::{Map, Value};

/// One model turn.
#[derive(Debug, Clone)]
pub struct Row {
    /// Its line in the trace.
    pub line: u32,
    pub turn_id: String,
    pub task_id: String,
    pub conversation_idx: u64,
    /// The messages as agentperf-local sends them (`RequestMessage.to_dict`).
    pub messages: Vec<Map<String, Value>>,
    /// The tool definitions, as recorded.
    pub tools: Vec<Value>,
    pub target_output_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub recorded_prompt_tokens: Option<u64>,
    pub recorded_completion_tokens: Option<u64>,
    pub simulated_tool_delay_ms_after: f64,
    pub tool_calls_after: Vec<RecordedCall>,
}

/// A recorded tool call after a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCall {
    pub duration_ms: f64,
    pub action_index: Option<u64>,
    pub step: Option<u64>,
    pub recorded_returncode: Option<i64>,
    pub tool_call_id: Option<String>,
    pub tool_name: Option<String>,
    /// `action.command`, when it is a string.
    pub command: Option<String>,
}

impl Row {
    /// The recorded output length: `target_output_tokens`, else `recorded_completion_tokens`.
    pub fn target(&self) -> Option<u64> {
        self.target_output_tokens
            .or(self.recorded_completion_tokens)
    }

    /// The recorded tool time after the turn (the sum of its calls' durations).
    pub fn tool_time_ms(&self) -> f64 {
        self.tool_calls_after.iter().map(|c| c.duration_ms).sum()
    }
}

/// Reads every non-empty line of the trace `bytes`, named `file`.
///
/// # Errors
/// A data error naming the file, the line and the key of the first rule broken.
pub fn parse(file: &str, bytes: &[u8]) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let n = i as u32 + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: Value = serde_json::from_slice(line)
            .map_err(|e| Error::data(file, n, format!("invalid JSON: {e}")))?;
        rows.push(row(&value, At::row(file, n))?);
    }
    Ok(rows)
}

fn row(value: &Value, at: At<'_>) -> Result<Row, Error> {
    let line = at.line;
    let o = Obj::of(value, at, "a trace row")?;
    for key in ["version", "simulated_tool_delay_ms_after"] {
        o.required(key)?;
    }
    let version = o.count("version")?;
    if version != VERSION {
        return Err(o
            .at
            .error("version", format!("must be {VERSION}, got {version}")));
    }
    let turn_id = o.text("turn_id")?.to_owned();
    let task_id = o.text("task_id")?.to_owned();
    o.text("conversation_id")?;
    let conversation_idx = o.count("conversation_idx")?;
    let messages = o
        .list("messages", false)?
        .iter()
        .enumerate()
        .map(|(i, m)| message(&o.child("messages", Some(i), m, "a message")?))
        .collect::<Result<Vec<_>, Error>>()?;
    let tools = o.list("tools", true)?;
    for (i, t) in tools.iter().enumerate() {
        o.child("tools", Some(i), t, "a tool definition")?;
    }
    let max_output_tokens = o.opt_count("max_output_tokens")?;
    if max_output_tokens == Some(0) {
        return Err(o
            .at
            .error("max_output_tokens", "must be a positive integer or null"));
    }
    o.opt_count("recorded_total_tokens")?;
    o.opt_duration("recorded_model_duration_ms")?;
    let tool_calls_after = o
        .list("recorded_tool_calls_after", true)?
        .iter()
        .enumerate()
        .map(|(i, c)| {
            recorded_call(&o.child(
                "recorded_tool_calls_after",
                Some(i),
                c,
                "a recorded tool call",
            )?)
        })
        .collect::<Result<Vec<_>, Error>>()?;
    if let Some(source) = o.opt_object("source")? {
        trace_source(&o.child("source", None, source, "the source")?)?;
    }
    Ok(Row {
        line,
        turn_id,
        task_id,
        conversation_idx,
        messages,
        tools: tools.to_vec(),
        target_output_tokens: o.opt_count("target_output_tokens")?,
        max_output_tokens,
        recorded_prompt_tokens: o.opt_count("recorded_prompt_tokens")?,
        recorded_completion_tokens: o.opt_count("recorded_completion_tokens")?,
        simulated_tool_delay_ms_after: o.duration("simulated_tool_delay_ms_after")?,
        tool_calls_after,
    })
}

/// A message as agentperf-local writes it: `role`, `content` (when the key
/// is there, null included), `name`, `tool_calls`, `tool_call_id` (when not
/// null); nothing else.
fn message(m: &Obj<'_>) -> Result<Map<String, Value>, Error> {
    let mut out = Map::new();
    out.insert("role".into(), Value::String(m.text("role")?.to_owned()));
    if let Some(content) = m.map.get("content") {
        out.insert("content".into(), content.clone());
    }
    if let Some(name) = m.opt_text("name")? {
        out.insert("name".into(), Value::String(name.to_owned()));
    }
    if let Some(calls) = m.get("tool_calls") {
        let Value::Array(items) = calls else {
            return Err(m
                .at
                .error("tool_calls", "must be a list of objects or null"));
        };
        for (i, c) in items.iter().enumerate() {
            m.child("tool_calls", Some(i), c, "a tool call")?;
        }
        out.insert("tool_calls".into(), calls.clone());
    }
    if let Some(id) = m.opt_text("tool_call_id")? {
        out.insert("tool_call_id".into(), Value::String(id.to_owned()));
    }
    Ok(out)
}

fn recorded_call(c: &Obj<'_>) -> Result<RecordedCall, Error> {
    let action = c.opt_object("action")?;
    c.opt_object("output")?;
    Ok(RecordedCall {
        duration_ms: c.duration("duration_ms")?,
        action_index: c.opt_count("action_index")?,
        step: c.opt_count("step")?,
        recorded_returncode: c.opt_int("recorded_returncode")?,
        tool_call_id: c.opt_text("tool_call_id")?.map(Into::into),
        tool_name: c.opt_text("tool_name")?.map(Into::into),
        command: action
            .and_then(|a| a.get("command"))
            .and_then(Value::as_str)
            .map(Into::into),
    })
}

/// A row's `source` (agentperf-local's `TraceSource`): checked only.
fn trace_source(s: &Obj<'_>) -> Result<(), Error> {
    s.required("format")?;
    s.text("format")?;
    s.text("recording")?;
    s.count("model_call_index")?;
    match s.text("message_source")? {
        "provider-request" | "request-messages" => {}
        other => {
            return Err(s.at.error(
                "message_source",
                format!("must be \"provider-request\" or \"request-messages\", not {other:?}"),
            ))
        }
    }
    s.opt_text("family")?;
    s.opt_text("adapter")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROW: &str = r#"{"version": 1, "turn_id": "t:0000", "task_id": "t", "conversation_id": "t", "conversation_idx": 0, "messages": [{"role": "system", "content": "sys"}, {"tool_call_id": "c1", "role": "tool", "content": "out", "extra": 1, "name": null}, {"role": "assistant", "tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]}], "tools": [{"type": "function"}], "target_output_tokens": 12, "simulated_tool_delay_ms_after": 3, "recorded_tool_calls_after": [{"duration_ms": 3, "step": 2, "tool_name": "bash", "action": {"command": "ls -la"}}]}"#;

    fn refusal(text: &str) -> (u32, String) {
        match parse("traces/t.jsonl", text.as_bytes()) {
            Err(Error::Data { line, message, .. }) => (line, message),
            other => panic!("expected a data error, got {other:?}"),
        }
    }

    #[test]
    fn a_row_reads_with_agentperf_locals_messages() {
        let rows = parse("traces/t.jsonl", format!("\n{ROW}\n\n").as_bytes()).unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (r.line, r.turn_id.as_str(), r.conversation_idx),
            (2, "t:0000", 0)
        );
        let json: Vec<String> = r
            .messages
            .iter()
            .map(|m| serde_json::to_string(m).unwrap())
            .collect();
        assert_eq!(
            json,
            [
                r#"{"role":"system","content":"sys"}"#,
                // Its keys in agentperf-local's order; `extra` and the null `name` left out.
                r#"{"role":"tool","content":"out","tool_call_id":"c1"}"#,
                // A call keeps its own keys and order, `index` included.
                r#"{"role":"assistant","tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"bash","arguments":"{}"}}]}"#,
            ]
        );
        assert_eq!(r.target(), Some(12));
        assert_eq!(r.tool_time_ms(), 3.0);
        assert_eq!(r.tool_calls_after[0].command.as_deref(), Some("ls -la"));
        assert_eq!(r.tool_calls_after[0].step, Some(2));
    }

    #[test]
    fn broken_rows_are_refused_naming_line_and_key() {
        for (from, to, says) in [
            (
                "\"version\": 1",
                "\"version\": 2",
                "`version`: must be 1, got 2",
            ),
            (
                "\"simulated_tool_delay_ms_after\": 3",
                "\"x\": 3",
                "`simulated_tool_delay_ms_after`: is required",
            ),
            (
                "{\"role\": \"system\", ",
                "{",
                "`messages[0].role`: is required",
            ),
            (
                "\"conversation_idx\": 0",
                "\"conversation_idx\": \"0\"",
                "`conversation_idx`: must be a non-negative integer",
            ),
            (
                "\"target_output_tokens\": 12",
                "\"target_output_tokens\": 12.5",
                "`target_output_tokens`",
            ),
            (
                "\"duration_ms\": 3",
                "\"duration_ms\": -3",
                "`recorded_tool_calls_after[0].duration_ms`",
            ),
            (
                "\"tools\": [{\"type\": \"function\"}]",
                "\"tools\": [1]",
                "`tools[0]`: a tool definition must be a JSON object",
            ),
            (
                "\"tool_calls\": [{",
                "\"tool_calls\": [7, {",
                "`messages[2].tool_calls[0]`: a tool call must be a JSON object",
            ),
        ] {
            let bad = ROW.replacen(from, to, 1);
            assert_ne!(bad, ROW, "{from}");
            let (line, message) = refusal(&format!("{ROW}\n{bad}\n"));
            assert_eq!(line, 2, "{message}");
            assert!(message.contains(says), "{from}: {message}");
        }
        let (line, message) = refusal(&format!("{ROW}\n\n{{oops\n"));
        assert_eq!(line, 3);
        assert!(message.starts_with("invalid JSON"), "{message}");
        let (_, message) = refusal(
            &ROW.replace("\"max_output_tokens\"", "x")
                .replace("\"target_output_tokens\": 12", "\"max_output_tokens\": 0"),
        );
        assert!(message.contains("`max_output_tokens`"), "{message}");
    }
}
