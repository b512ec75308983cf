//! Parsing a Chat Completions request and rendering its prompt to canonical text.
//!
//! The simulator has no chat template; it counts tokens on a canonical rendering instead:
//!
//! ```text
//! <|tools|>\n{tools as compact JSON}\n<|end|>\n        (only when `tools` is a non-empty array)
//! <|{role}|>\n{body}<|end|>\n                          (once per message)
//! <|assistant|>\n                                       (generation prompt)
//! ```
//!
//! where a message body is `<think>\n{reasoning_content}\n</think>\n` (when non-empty), then the
//! content text (array content: its text parts joined with `\n`), then per tool call
//! `<tool_call>\n{name}\n{arguments}\n</tool_call>\n` (a string `arguments` verbatim, any other
//! JSON compact). An answer renders with the same body rule, so when a client sends the answer back
//! as history, the slot's previous prompt plus answer is a prefix of the new prompt.

use serde_json::Value;

use crate::api_error::ApiError;

/// The parts of a Chat Completions request body the simulator uses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChatRequest {
    pub(crate) messages: Vec<Message>,
    /// The `tools` array, when present and non-empty.
    pub(crate) tools: Option<Value>,
    pub(crate) stream: bool,
    /// `stream_options.include_usage`.
    pub(crate) include_usage: bool,
    /// llama.cpp's precedence: `n_predict`, then `max_completion_tokens`, then `max_tokens`;
    /// `None` (absent or negative) is unlimited.
    pub(crate) max_tokens: Option<u32>,
    /// `cache_prompt` (llama.cpp extension, default true): reuse the slot's cached prefix.
    pub(crate) cache_prompt: bool,
    /// `ignore_eos` (llama.cpp and vLLM extension, default false): generation goes on past
    /// the model's end of answer, to the token budget.
    pub(crate) ignore_eos: bool,
    pub(crate) model: Option<String>,
}

/// One request message, reduced to what the rendering and the responders read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Message {
    pub(crate) role: String,
    pub(crate) content: String,
    pub(crate) reasoning_content: String,
    pub(crate) tool_calls: Vec<CallText>,
}

/// A tool call as rendered: name and arguments text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallText {
    pub(crate) name: String,
    pub(crate) arguments: String,
}

impl ChatRequest {
    /// Reads the fields the simulator needs; answers llama.cpp-like 400s for malformed ones.
    pub(crate) fn parse(body: &Value) -> Result<Self, ApiError> {
        let obj = body
            .as_object()
            .ok_or_else(|| ApiError::invalid_request("request body must be a JSON object"))?;
        let messages = obj
            .get("messages")
            .and_then(Value::as_array)
            .filter(|m| !m.is_empty())
            .ok_or_else(|| ApiError::invalid_request("'messages' must be a non-empty array"))?
            .iter()
            .map(Message::parse)
            .collect::<Result<Vec<_>, _>>()?;
        let tools = obj
            .get("tools")
            .filter(|t| t.as_array().is_some_and(|a| !a.is_empty()))
            .cloned();
        let flag = |value: Option<&Value>, name: &str, default: bool| match value {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(ApiError::invalid_request(format!(
                "'{name}' must be a boolean"
            ))),
        };
        let stream = flag(obj.get("stream"), "stream", false)?;
        let include_usage = flag(
            obj.get("stream_options")
                .and_then(|o| o.get("include_usage")),
            "stream_options.include_usage",
            false,
        )?;
        let cache_prompt = flag(obj.get("cache_prompt"), "cache_prompt", true)?;
        let ignore_eos = flag(obj.get("ignore_eos"), "ignore_eos", false)?;
        let max_tokens = ["n_predict", "max_completion_tokens", "max_tokens"]
            .iter()
            .find_map(|key| obj.get(*key).filter(|v| !v.is_null()).map(|v| (key, v)))
            .map(|(key, v)| {
                v.as_i64()
                    .map(|n| u32::try_from(n).ok())
                    .ok_or_else(|| ApiError::invalid_request(format!("'{key}' must be an integer")))
            })
            .transpose()?
            .flatten();
        let model = obj.get("model").and_then(Value::as_str).map(str::to_owned);
        Ok(Self {
            messages,
            tools,
            stream,
            include_usage,
            max_tokens,
            cache_prompt,
            ignore_eos,
            model,
        })
    }

    /// Number of `assistant` messages in the request.
    pub(crate) fn assistant_turns(&self) -> usize {
        self.messages
            .iter()
            .filter(|m| m.role == "assistant")
            .count()
    }

    /// The canonical prompt text (see the module docs).
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        if let Some(tools) = &self.tools {
            out.push_str("<|tools|>\n");
            out.push_str(&tools.to_string());
            out.push_str("\n<|end|>\n");
        }
        for m in &self.messages {
            out.push_str("<|");
            out.push_str(&m.role);
            out.push_str("|>\n");
            render_body(&mut out, &m.reasoning_content, &m.content, &m.tool_calls);
            out.push_str("<|end|>\n");
        }
        out.push_str("<|assistant|>\n");
        out
    }
}

impl Message {
    fn parse(value: &Value) -> Result<Self, ApiError> {
        let bad = |what: &str| ApiError::invalid_request(format!("invalid message: {what}"));
        let role = value
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("'role' must be a string"))?
            .to_owned();
        let content = match value.get("content") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            Some(_) => return Err(bad("'content' must be a string, an array or null")),
        };
        let reasoning_content = value
            .get("reasoning_content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let tool_calls = match value.get("tool_calls") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(calls)) => calls
                .iter()
                .map(|c| {
                    let function = c
                        .get("function")
                        .ok_or_else(|| bad("tool call without 'function'"))?;
                    let name = function
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad("tool call without a string 'function.name'"))?;
                    Ok(CallText {
                        name: name.to_owned(),
                        arguments: arguments_text(function.get("arguments")),
                    })
                })
                .collect::<Result<_, ApiError>>()?,
            Some(_) => return Err(bad("'tool_calls' must be an array")),
        };
        Ok(Self {
            role,
            content,
            reasoning_content,
            tool_calls,
        })
    }
}

/// Tool-call `arguments` as text: a string verbatim, other JSON compact, absent as empty.
pub(crate) fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Appends a message body (reasoning, content, tool calls) in canonical form.
pub(crate) fn render_body(out: &mut String, reasoning: &str, content: &str, calls: &[CallText]) {
    if !reasoning.is_empty() {
        out.push_str("<think>\n");
        out.push_str(reasoning);
        out.push_str("\n</think>\n");
    }
    out.push_str(content);
    for call in calls {
        out.push_str("<tool_call>\n");
        out.push_str(&call.name);
        out.push('\n');
        out.push_str(&call.arguments);
        out.push_str("\n</tool_call>\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_fields_and_limits() {
        let r = ChatRequest::parse(&json!({
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 10,
            "max_completion_tokens": 20,
            "cache_prompt": false,
            "ignore_eos": true
        }))
        .unwrap();
        assert!(r.stream && r.include_usage && !r.cache_prompt && r.ignore_eos);
        assert_eq!(r.max_tokens, Some(20));
        assert_eq!(r.model.as_deref(), Some("m"));

        let r =
            ChatRequest::parse(&json!({"messages": [{"role": "user"}], "max_tokens": -1})).unwrap();
        assert_eq!(r.max_tokens, None);
        assert!(!r.stream && r.cache_prompt && !r.ignore_eos);
    }

    #[test]
    fn rejects_malformed_requests() {
        for body in [
            json!([]),
            json!({"messages": []}),
            json!({"messages": [{"content": "x"}]}),
            json!({"messages": [{"role": "user"}], "max_tokens": "ten"}),
            json!({"messages": [{"role": "user"}], "stream": "yes"}),
            json!({"messages": [{"role": "user"}], "ignore_eos": 1}),
        ] {
            let e = ChatRequest::parse(&body).unwrap_err();
            assert_eq!(e.status, 400, "{body}");
        }
    }

    #[test]
    fn renders_canonical_prompt() {
        let r = ChatRequest::parse(&json!({
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                {"role": "assistant", "reasoning_content": "think",
                 "tool_calls": [{"id": "c1", "type": "function",
                                 "function": {"name": "bash", "arguments": {"command": "ls"}}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "out"}
            ],
            "tools": [{"type": "function", "function": {"name": "bash"}}]
        }))
        .unwrap();
        assert_eq!(r.assistant_turns(), 1);
        assert_eq!(
            r.render(),
            "<|tools|>\n[{\"type\":\"function\",\"function\":{\"name\":\"bash\"}}]\n<|end|>\n\
             <|system|>\nsys<|end|>\n\
             <|user|>\na\nb<|end|>\n\
             <|assistant|>\n<think>\nthink\n</think>\n<tool_call>\nbash\n{\"command\":\"ls\"}\n</tool_call>\n<|end|>\n\
             <|tool|>\nout<|end|>\n\
             <|assistant|>\n"
        );
    }

    #[test]
    fn answer_body_extends_previous_prompt() {
        let first =
            ChatRequest::parse(&json!({"messages": [{"role": "user", "content": "q"}]})).unwrap();
        let mut memory = first.render();
        render_body(&mut memory, "r", "c", &[]);
        let second = ChatRequest::parse(&json!({"messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "c", "reasoning_content": "r"},
            {"role": "user", "content": "next"}
        ]}))
        .unwrap();
        assert!(second.render().starts_with(&memory));
    }
}
