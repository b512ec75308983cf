//! The Chat Completions request body for a workload's turn request, written
//! as the reference writes it: absent fields are omitted (an assistant
//! message with tool calls and no content has no `content` key).

use crate::plugin::types::{ChatMessage, Role, TurnRequest};
use serde_json::{Map, Value};

/// What the host adds to every request.
#[derive(Debug, Clone, Default)]
pub struct BodyOptions {
    /// The `model` field.
    pub model: String,
    /// Ask for a streamed answer.
    pub stream: bool,
    /// Send `stream_options: {include_usage: true}` when streaming.
    pub include_usage: bool,
    /// Extra top-level fields from the run config (e.g. `cache_prompt`).
    pub extra: Map<String, Value>,
}

/// Builds the JSON body for `req`.
///
/// # Errors
/// When `tools-json` or `tool-choice-json` is not valid JSON.
pub fn request_body(req: &TurnRequest, opts: &BodyOptions) -> Result<Value, String> {
    let mut body = Map::new();
    body.insert("model".into(), opts.model.clone().into());
    body.insert(
        "messages".into(),
        req.messages.iter().map(message_json).collect(),
    );
    if let Some(tools) = &req.tools_json {
        let tools: Value =
            serde_json::from_str(tools).map_err(|e| format!("tools-json is not JSON: {e}"))?;
        body.insert("tools".into(), tools);
    }
    let s = &req.sampling;
    if let Some(choice) = &s.tool_choice_json {
        let choice: Value = serde_json::from_str(choice)
            .map_err(|e| format!("tool-choice-json is not JSON: {e}"))?;
        body.insert("tool_choice".into(), choice);
    }
    if let Some(t) = s.temperature {
        body.insert("temperature".into(), t.into());
    }
    if let Some(p) = s.top_p {
        body.insert("top_p".into(), p.into());
    }
    if let Some(k) = s.top_k {
        body.insert("top_k".into(), k.into());
    }
    if let Some(seed) = s.seed {
        body.insert("seed".into(), seed.into());
    }
    if let Some(n) = s.max_completion_tokens {
        body.insert("max_completion_tokens".into(), n.into());
    }
    body.insert("stream".into(), opts.stream.into());
    if opts.stream && opts.include_usage {
        body.insert(
            "stream_options".into(),
            serde_json::json!({"include_usage": true}),
        );
    }
    for (k, v) in &opts.extra {
        body.insert(k.clone(), v.clone());
    }
    Ok(Value::Object(body))
}

/// One message in OpenAI form.
pub fn message_json(m: &ChatMessage) -> Value {
    let mut out = Map::new();
    let role = match m.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    out.insert("role".into(), role.into());
    if let Some(c) = &m.content {
        out.insert("content".into(), c.clone().into());
    }
    if let Some(r) = &m.reasoning_content {
        out.insert("reasoning_content".into(), r.clone().into());
    }
    if !m.tool_calls.is_empty() {
        let calls = m
            .tool_calls
            .iter()
            .map(|c| {
                serde_json::json!({
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                })
            })
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &m.tool_call_id {
        out.insert("tool_call_id".into(), id.clone().into());
    }
    if let Some(n) = &m.name {
        out.insert("name".into(), n.clone().into());
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::types::{Sampling, ToolCall};

    fn msg(role: Role) -> ChatMessage {
        ChatMessage {
            role,
            content: None,
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    #[test]
    fn reference_shape() {
        let mut assistant = msg(Role::Assistant);
        assistant.reasoning_content = Some("think".into());
        assistant.tool_calls.push(ToolCall {
            id: "functions.bash:0".into(),
            name: "bash".into(),
            arguments: r#"{"command":"ls"}"#.into(),
        });
        let mut tool = msg(Role::Tool);
        tool.tool_call_id = Some("functions.bash:0".into());
        tool.content = Some("out".into());
        let req = TurnRequest {
            session_id: "c".into(),
            turn: 3,
            item_id: "c/4".into(),
            messages: vec![assistant, tool],
            tools_json: Some(r#"[{"type":"function","function":{"name":"bash"}}]"#.into()),
            sampling: Sampling {
                temperature: Some(0.0),
                top_p: None,
                top_k: None,
                seed: Some(42),
                max_completion_tokens: Some(1024),
                tool_choice_json: None,
            },
            delay_ms: 0,
            expected_json: "{}".into(),
        };
        let opts = BodyOptions {
            model: "m".into(),
            stream: true,
            include_usage: false,
            extra: Map::new(),
        };
        let body = request_body(&req, &opts).unwrap();
        let a = &body["messages"][0];
        assert!(a.get("content").is_none(), "no content key: {a}");
        assert_eq!(a["reasoning_content"], "think");
        assert_eq!(
            a["tool_calls"][0]["function"]["arguments"],
            r#"{"command":"ls"}"#
        );
        assert_eq!(body["messages"][1]["tool_call_id"], "functions.bash:0");
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["seed"], 42);
        assert_eq!(body["max_completion_tokens"], 1024);
        assert_eq!(body["stream"], true);
        assert!(body.get("tool_choice").is_none());
        assert!(body.get("stream_options").is_none());
        assert_eq!(body["tools"][0]["function"]["name"], "bash");
    }
}
