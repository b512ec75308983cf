//! Assembles a completion from streamed Chat Completions chunks (or from one
//! non-streamed response): text deltas concatenated, tool calls merged by
//! `index`, and the server's `usage`, llama.cpp `timings` and simulator
//! timestamps kept as sent.
//!
//! A tool call's `id` and `function.name` are set, not concatenated: a server
//! that repeats them in later deltas of the same call (some do, with every
//! argument piece) gives the call once; a later non-empty value that differs
//! replaces the earlier one, as the reference (`merge_tool_calls`) takes them.
//! Only `arguments` pieces are appended.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// One tool call as assembled from its deltas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What the first token-bearing chunk carried (the reference's TPOT
/// denominator counts only what came after it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FirstChunk {
    pub content_bytes: usize,
    pub reasoning_bytes: usize,
    pub tool_call: bool,
}

/// The assembled answer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Assembled {
    pub content: String,
    pub reasoning_content: String,
    pub tool_calls: Vec<ToolCallRecord>,
    pub finish_reason: Option<String>,
    /// The server's `usage` object, verbatim.
    pub usage: Option<Value>,
    /// llama.cpp's `timings` object, verbatim.
    pub timings: Option<Value>,
    /// The embedded simulator's server-side timestamps, verbatim.
    pub server_timestamps: Option<Value>,
    pub first_chunk: Option<FirstChunk>,
    /// An `error` object sent inside the stream.
    pub stream_error: Option<String>,
}

/// A `data:` payload that is not JSON (the parser's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotJson(pub String);

/// Accumulates chunks into an [`Assembled`].
#[derive(Debug, Default)]
pub struct CompletionAssembler {
    out: Assembled,
    calls: BTreeMap<u64, ToolCallRecord>,
    /// Chunks with a `choices` array.
    chunks: u32,
}

impl CompletionAssembler {
    /// Adds one `data:` payload; returns whether it carried a token (non-empty
    /// content or reasoning, or any tool-call delta). Role-only and usage-only
    /// chunks do not.
    ///
    /// # Errors
    /// When the payload is not JSON (nothing of it is kept).
    pub fn push_chunk(&mut self, data: &str) -> Result<bool, NotJson> {
        let chunk = serde_json::from_str::<Value>(data).map_err(|e| NotJson(e.to_string()))?;
        self.keep_extras(&chunk);
        if chunk.get("choices").is_some_and(Value::is_array) {
            self.chunks += 1;
        }
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(false);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.out.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(false);
        };
        let content = text(delta, &["content"]);
        let reasoning = text(delta, &["reasoning_content", "reasoning"]);
        let calls = delta.get("tool_calls").and_then(Value::as_array);
        let has_call = calls.is_some_and(|c| !c.is_empty());
        let bearing = !content.is_empty() || !reasoning.is_empty() || has_call;
        if bearing && self.out.first_chunk.is_none() {
            self.out.first_chunk = Some(FirstChunk {
                content_bytes: content.len(),
                reasoning_bytes: reasoning.len(),
                tool_call: has_call,
            });
        }
        self.out.content.push_str(content);
        self.out.reasoning_content.push_str(reasoning);
        for call in calls.into_iter().flatten() {
            self.merge_call(call);
        }
        Ok(bearing)
    }

    /// Completion chunks (JSON objects with a `choices` array) taken so far.
    pub fn chunks(&self) -> u32 {
        self.chunks
    }

    /// The message of an `error` object the stream carried, if any.
    pub fn stream_error(&self) -> Option<&str> {
        self.out.stream_error.as_deref()
    }

    /// Takes a whole non-streamed `chat.completion` response.
    pub fn push_response(&mut self, body: &Value) {
        self.keep_extras(body);
        let Some(choice) = body.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.out.finish_reason = Some(reason.to_string());
        }
        if let Some(message) = choice.get("message") {
            self.out.content = text(message, &["content"]).to_string();
            self.out.reasoning_content =
                text(message, &["reasoning_content", "reasoning"]).to_string();
            let calls = message.get("tool_calls").and_then(Value::as_array);
            // Only objects are tool calls (a server may send anything).
            let calls = calls.into_iter().flatten().filter(|c| c.is_object());
            for (i, call) in calls.enumerate() {
                let mut call = call.clone();
                if call.get("index").is_none() {
                    call["index"] = Value::from(i);
                }
                self.merge_call(&call);
            }
        }
    }

    /// The assembled answer.
    pub fn finish(mut self) -> Assembled {
        self.out.tool_calls = self.calls.into_values().collect();
        self.out
    }

    fn keep_extras(&mut self, chunk: &Value) {
        if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
            self.out.usage = Some(u.clone());
        }
        if let Some(t) = chunk.get("timings").filter(|t| !t.is_null()) {
            self.out.timings = Some(t.clone());
        }
        if let Some(s) = chunk.get("agentload_sim").filter(|s| !s.is_null()) {
            self.out.server_timestamps = Some(s.clone());
        }
        if let Some(e) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = e.get("message").and_then(Value::as_str);
            self.out.stream_error = Some(message.map_or_else(|| e.to_string(), str::to_string));
        }
    }

    fn merge_call(&mut self, delta: &Value) {
        let index = delta.get("index").and_then(Value::as_u64).unwrap_or(0);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = delta
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            id.clone_into(&mut call.id);
        }
        if let Some(f) = delta.get("function") {
            if let Some(name) = f
                .get("name")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                name.clone_into(&mut call.name);
            }
            match f.get("arguments") {
                Some(Value::String(s)) => call.arguments.push_str(s),
                Some(Value::Null) | None => {}
                Some(other) => call.arguments.push_str(&other.to_string()),
            }
        }
    }
}

fn text<'a>(v: &'a Value, keys: &[&str]) -> &'a str {
    keys.iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_only_and_usage_chunks_bear_no_token() {
        let mut a = CompletionAssembler::default();
        let mut push = |c: &str| a.push_chunk(c).unwrap();
        assert!(!push(
            r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#
        ));
        assert!(!push(
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#
        ));
        assert!(!push(
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#
        ));
        assert!(push(
            r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#
        ));
        assert!(push(
            r#"{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}"#
        ));
        assert!(!push(r#"{"id":"x"}"#), "no choices: not a completion chunk");
        assert_eq!(a.chunks(), 5);
        let out = a.finish();
        assert_eq!(out.content, "ok");
        assert_eq!(out.reasoning_content, "hm");
        assert_eq!(out.usage.unwrap()["completion_tokens"], 2);
        assert_eq!(out.finish_reason.as_deref(), Some("stop"));
        assert_eq!(out.first_chunk.unwrap().reasoning_bytes, 2);
    }

    #[test]
    fn tool_calls_merge_by_index() {
        let mut a = CompletionAssembler::default();
        let chunks = [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"bash","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"ls\"}"}}]}}]}"#,
        ];
        for c in chunks {
            assert!(a.push_chunk(c).unwrap());
        }
        let out = a.finish();
        assert_eq!(out.tool_calls.len(), 2);
        assert_eq!(out.tool_calls[0].arguments, r#"{"command": "ls"}"#);
        assert_eq!(out.tool_calls[1].name, "ls");
        assert!(out.first_chunk.unwrap().tool_call);
    }

    #[test]
    fn repeated_ids_and_names_are_set_not_concatenated() {
        let mut a = CompletionAssembler::default();
        let chunks = [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"bash","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"bash","arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"","function":{"name":"","arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c1","function":{"name":"ls"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c1b","function":{"name":"ls2","arguments":"{}"}}]}}]}"#,
        ];
        for c in chunks {
            a.push_chunk(c).unwrap();
        }
        let out = a.finish();
        let calls: Vec<(&str, &str, &str)> = out
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        // Empty repeats are ignored; a differing later value replaces (the reference's rule).
        assert_eq!(
            calls,
            vec![("c0", "bash", r#"{"a":1}"#), ("c1b", "ls2", "{}")]
        );
    }

    #[test]
    fn non_json_is_an_error_and_error_objects_are_kept() {
        let mut a = CompletionAssembler::default();
        let err = a.push_chunk("{not json").unwrap_err();
        assert!(err.0.contains("key must be a string"), "{err}");
        assert!(a.push_chunk("hello").is_err());
        assert_eq!(a.chunks(), 0);
        a.push_chunk(r#"{"error":{"message":"boom","code":500}}"#)
            .unwrap();
        assert_eq!(a.stream_error(), Some("boom"));
        a.push_chunk(r#"{"error":{"code":7}}"#).unwrap();
        assert_eq!(a.stream_error(), Some(r#"{"code":7}"#));
    }

    #[test]
    fn tool_calls_that_are_not_objects_are_skipped() {
        // Found by the `assemble-response` fuzz target: this panicked.
        let mut a = CompletionAssembler::default();
        a.push_response(&serde_json::json!({
            "choices": [{"message": {"tool_calls": [[], 3, {"function": {"name": "f"}}]}}]
        }));
        let out = a.finish();
        assert_eq!(out.tool_calls.len(), 1);
        assert_eq!(out.tool_calls[0].name, "f");
    }

    #[test]
    fn non_streamed_response() {
        let mut a = CompletionAssembler::default();
        a.push_response(&serde_json::json!({
            "choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}
        }));
        let out = a.finish();
        assert_eq!(out.tool_calls[0].name, "f");
        assert_eq!(out.content, "");
        assert_eq!(out.finish_reason.as_deref(), Some("tool_calls"));
    }
}
