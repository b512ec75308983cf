//! The Chat Completions request body for a workload's turn request, written
//! as the reference writes it: absent fields are omitted (an assistant
//! message with tool calls and no content has no `content` key).

use crate::plugin::types::{ChatMessage, Role, ToolCall, TurnRequest};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
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

/// The JSON body for `req`, written straight to bytes: the fields borrowed
/// from the request, no intermediate JSON value (the body of a long coding
/// session is ~100 KiB, built between one turn's end and the next request).
///
/// Top-level fields in order: `model`, `messages`, `tools`, `tool_choice`,
/// `temperature`, `top_p`, `top_k`, `seed`, `max_completion_tokens`,
/// `stream`, `stream_options`; then the run config's extra fields. An extra
/// field with one of those names replaces its value in place (as inserting
/// it into the object would).
///
/// # Errors
/// When `tools-json` or `tool-choice-json` is not valid JSON.
pub fn request_body(req: &TurnRequest, opts: &BodyOptions) -> Result<Vec<u8>, String> {
    let tools: Option<Value> = req
        .tools_json
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| format!("tools-json is not JSON: {e}"))?;
    let s = &req.sampling;
    let choice: Option<Value> = s
        .tool_choice_json
        .as_deref()
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| format!("tool-choice-json is not JSON: {e}"))?;
    let mut out = Vec::with_capacity(estimate(req));
    let mut ser = serde_json::Serializer::new(&mut out);
    let mut map = Fields {
        map: ser.serialize_map(None).map_err(|e| e.to_string())?,
        extra: &opts.extra,
        written: Vec::new(),
    };
    map.entry("model", &opts.model)?;
    map.entry("messages", &Messages(&req.messages))?;
    map.entry_if("tools", tools.as_ref())?;
    map.entry_if("tool_choice", choice.as_ref())?;
    map.entry_if("temperature", s.temperature.as_ref())?;
    map.entry_if("top_p", s.top_p.as_ref())?;
    map.entry_if("top_k", s.top_k.as_ref())?;
    map.entry_if("seed", s.seed.as_ref())?;
    map.entry_if("max_completion_tokens", s.max_completion_tokens.as_ref())?;
    map.entry("stream", &opts.stream)?;
    let usage = serde_json::json!({"include_usage": true});
    map.entry_if(
        "stream_options",
        (opts.stream && opts.include_usage).then_some(&usage),
    )?;
    map.end()?;
    Ok(out)
}

/// The body's top-level object as it is written: a field the run config's
/// extra fields also name gets the extra value in its place; the other
/// extra fields follow.
struct Fields<'a, M> {
    map: M,
    extra: &'a Map<String, Value>,
    written: Vec<&'static str>,
}

impl<M: SerializeMap<Error = serde_json::Error>> Fields<'_, M> {
    fn entry(&mut self, key: &'static str, value: &impl Serialize) -> Result<(), String> {
        self.written.push(key);
        match self.extra.get(key) {
            Some(extra) => self.map.serialize_entry(key, extra),
            None => self.map.serialize_entry(key, value),
        }
        .map_err(|e| e.to_string())
    }

    fn entry_if(
        &mut self,
        key: &'static str,
        value: Option<&impl Serialize>,
    ) -> Result<(), String> {
        value.map_or(Ok(()), |v| self.entry(key, v))
    }

    fn end(mut self) -> Result<(), String> {
        for (key, value) in self.extra {
            if !self.written.contains(&key.as_str()) {
                self.map
                    .serialize_entry(key, value)
                    .map_err(|e| e.to_string())?;
            }
        }
        self.map.end().map(drop).map_err(|e| e.to_string())
    }
}

/// Room for the body: its strings plus the JSON around them.
fn estimate(req: &TurnRequest) -> usize {
    let text = |m: &ChatMessage| {
        m.content.as_ref().map_or(0, String::len)
            + m.reasoning_content.as_ref().map_or(0, String::len)
            + m.tool_calls
                .iter()
                .map(|c| c.arguments.len() + 64)
                .sum::<usize>()
            + 64
    };
    req.messages.iter().map(text).sum::<usize>()
        + req.tools_json.as_ref().map_or(0, String::len)
        + 256
}

/// The `messages` array, each message in OpenAI form.
struct Messages<'a>(&'a [ChatMessage]);

impl Serialize for Messages<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Message))
    }
}

/// One message in OpenAI form: absent fields are left out.
struct Message<'a>(&'a ChatMessage);

impl Serialize for Message<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let role = match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("role", role)?;
        if let Some(c) = &m.content {
            map.serialize_entry("content", c)?;
        }
        if let Some(r) = &m.reasoning_content {
            map.serialize_entry("reasoning_content", r)?;
        }
        if !m.tool_calls.is_empty() {
            map.serialize_entry("tool_calls", &ToolCalls(&m.tool_calls))?;
        }
        if let Some(id) = &m.tool_call_id {
            map.serialize_entry("tool_call_id", id)?;
        }
        if let Some(n) = &m.name {
            map.serialize_entry("name", n)?;
        }
        map.end()
    }
}

/// An assistant message's `tool_calls`.
struct ToolCalls<'a>(&'a [ToolCall]);

impl Serialize for ToolCalls<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Function<'a>(&'a ToolCall);
        impl Serialize for Function<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("name", &self.0.name)?;
                map.serialize_entry("arguments", &self.0.arguments)?;
                map.end()
            }
        }
        struct Call<'a>(&'a ToolCall);
        impl Serialize for Call<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(3))?;
                map.serialize_entry("id", &self.0.id)?;
                map.serialize_entry("type", "function")?;
                map.serialize_entry("function", &Function(self.0))?;
                map.end()
            }
        }
        s.collect_seq(self.0.iter().map(Call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::types::{Sampling, ToolCall};

    fn request(
        messages: Vec<ChatMessage>,
        tools_json: Option<String>,
        sampling: Sampling,
    ) -> TurnRequest {
        TurnRequest {
            session_id: "c".into(),
            turn: 0,
            item_id: "c/0".into(),
            messages,
            tools_json,
            sampling,
            delay_ms: 0,
            expected_json: "{}".into(),
        }
    }

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
        let req = request(
            vec![assistant, tool],
            Some(r#"[{"type":"function","function":{"name":"bash"}}]"#.into()),
            Sampling {
                temperature: Some(0.0),
                top_p: None,
                top_k: None,
                seed: Some(42),
                max_completion_tokens: Some(1024),
                tool_choice_json: None,
            },
        );
        let opts = BodyOptions {
            model: "m".into(),
            stream: true,
            include_usage: false,
            extra: Map::new(),
        };
        let bytes = request_body(&req, &opts).unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
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
        // Written straight, byte for byte what the object would print.
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            concat!(
                r#"{"model":"m","messages":[{"role":"assistant","reasoning_content":"think","#,
                r#""tool_calls":[{"id":"functions.bash:0","type":"function","function":{"name":"bash","#,
                r#""arguments":"{\"command\":\"ls\"}"}}]},{"role":"tool","content":"out","#,
                r#""tool_call_id":"functions.bash:0"}],"tools":[{"type":"function","function":"#,
                r#"{"name":"bash"}}],"temperature":0.0,"seed":42,"max_completion_tokens":1024,"#,
                r#""stream":true}"#
            )
        );
    }

    #[test]
    fn extra_fields_replace_in_place_or_follow() {
        let mut user = msg(Role::User);
        user.content = Some("hi \"there\"\n".into());
        user.name = Some("u".into());
        let req = request(
            vec![user],
            None,
            Sampling {
                temperature: Some(0.7),
                top_p: Some(0.95),
                top_k: Some(20),
                seed: None,
                max_completion_tokens: None,
                tool_choice_json: Some(r#""auto""#.into()),
            },
        );
        let mut extra = Map::new();
        extra.insert("cache_prompt".into(), true.into());
        extra.insert("temperature".into(), 0.0.into());
        extra.insert("tools".into(), Value::Array(vec![]));
        let opts = BodyOptions {
            model: "m".into(),
            stream: true,
            include_usage: true,
            extra,
        };
        let body = String::from_utf8(request_body(&req, &opts).unwrap()).unwrap();
        assert_eq!(
            body,
            concat!(
                r#"{"model":"m","messages":[{"role":"user","content":"hi \"there\"\n","name":"u"}],"#,
                r#""tool_choice":"auto","temperature":0.0,"top_p":0.95,"top_k":20,"stream":true,"#,
                r#""stream_options":{"include_usage":true},"cache_prompt":true,"tools":[]}"#
            )
        );
        let broken = TurnRequest {
            tools_json: Some("[oops".into()),
            ..req
        };
        let e = request_body(&broken, &opts).unwrap_err();
        assert!(e.starts_with("tools-json is not JSON"), "{e}");
    }
}
