//! A chat message as the host holds it: its OpenAI JSON object, written
//! once when the workload hands the message over (or taken as the workload
//! wrote it, for a verbatim message), and shared (`Arc`) by every request,
//! and every session, that carries it. Request bodies are assembled from
//! these bytes (`agentload-engine`'s body builder), never rebuilt. The few
//! fields the host reads without sending (the role, tool call ids and
//! names) are kept beside the JSON; anything else is parsed back from it
//! ([`Message::to_chat`]).

use super::types::{self, ChatMessage, Role, ToolCall};
use bytes::Bytes;
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

/// One message of a request, as sent.
#[derive(Debug)]
pub struct Message {
    role: Role,
    json: Bytes,
    tool_call_id: Option<Box<str>>,
    /// `(id, name)` of each tool call, in order.
    calls: Box<[(Box<str>, Box<str>)]>,
}

impl Message {
    /// `message` written as the reference writes it: absent fields are
    /// omitted (an assistant message with tool calls and no content has no
    /// `content` key).
    pub fn new(message: &ChatMessage) -> Self {
        // Held as long as any request carries the message: no spare capacity.
        let mut json = Vec::with_capacity(estimate(message));
        serde_json::to_writer(&mut json, &OpenAi(message)).expect("a message serialises");
        json.shrink_to_fit();
        Self {
            role: message.role,
            json: json.into(),
            tool_call_id: message.tool_call_id.as_deref().map(Into::into),
            calls: message
                .tool_calls
                .iter()
                .map(|c| (c.id.as_str().into(), c.name.as_str().into()))
                .collect(),
        }
    }

    /// A message as the workload handed it over: a typed one written as
    /// [`Message::new`] writes it, a verbatim one taken byte for byte.
    ///
    /// # Errors
    /// When a verbatim message is not one JSON object with a known `role`.
    pub fn from_wire(message: &types::Message) -> Result<Self, String> {
        match message {
            types::Message::Chat(chat) => Ok(Self::new(chat)),
            types::Message::Json(text) => Self::verbatim(text),
        }
    }

    /// The message whose JSON is `text`, byte for byte: it must be one JSON
    /// object whose `role` is `system`, `user`, `assistant` or `tool`; its
    /// `tool_call_id` and its calls' `id` and `function.name` are read when
    /// they are strings.
    ///
    /// # Errors
    /// When `text` is not such an object (the reason, for the contract error).
    pub fn verbatim(text: &str) -> Result<Self, String> {
        let head: Head = serde_json::from_str(text)
            .map_err(|e| format!("a verbatim message is not a JSON object of a message: {e}"))?;
        let role = match head.role.as_str() {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            "tool" => Role::Tool,
            other => {
                return Err(format!(
                    "a verbatim message's role {other:?} is none of system, user, assistant, tool"
                ))
            }
        };
        let text_of = |v: &serde_json::Value| -> Box<str> { v.as_str().unwrap_or_default().into() };
        Ok(Self {
            role,
            json: Bytes::copy_from_slice(text.as_bytes()),
            tool_call_id: head
                .tool_call_id
                .as_ref()
                .and_then(|v| v.as_str())
                .map(Into::into),
            calls: head
                .tool_calls
                .iter()
                .flatten()
                .map(|c| (text_of(&c["id"]), text_of(&c["function"]["name"])))
                .collect(),
        })
    }

    /// Its author.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Its JSON object, as the request body carries it.
    pub fn json(&self) -> &Bytes {
        &self.json
    }

    /// The call a `tool` message answers.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.tool_call_id.as_deref()
    }

    /// `(id, name)` of each tool call an assistant message makes.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str)> {
        self.calls.iter().map(|(id, name)| (&**id, &**name))
    }

    /// This message with `prefix` before its text content (a sweep's salt before a system
    /// prompt), as [`Message::new`] would write it; `None` when it has no text content.
    /// Its JSON is spliced, not parsed and written again: `content` is the key after
    /// `role`, as [`Message::new`] writes them.
    pub fn with_content_prefix(&self, prefix: &str) -> Option<Self> {
        let head = format!(r#"{{"role":"{}","content":""#, role_name(self.role));
        let rest = self.json.strip_prefix(head.as_bytes())?;
        let quoted = serde_json::to_string(prefix).expect("a string serialises");
        let escaped = &quoted[1..quoted.len() - 1];
        let mut json = Vec::with_capacity(head.len() + escaped.len() + rest.len());
        json.extend_from_slice(head.as_bytes());
        json.extend_from_slice(escaped.as_bytes());
        json.extend_from_slice(rest);
        Some(Self {
            role: self.role,
            json: json.into(),
            tool_call_id: self.tool_call_id.clone(),
            calls: self.calls.clone(),
        })
    }

    /// The message as the workload made it, parsed back from its JSON. A
    /// verbatim message of another shape is read leniently: list content
    /// becomes its text parts joined, a value that is not text none.
    pub fn to_chat(&self) -> ChatMessage {
        let Ok(wire) = serde_json::from_slice::<Wire>(&self.json) else {
            return self.lenient_chat();
        };
        ChatMessage {
            role: self.role,
            content: wire.content,
            reasoning_content: wire.reasoning_content,
            tool_calls: wire
                .tool_calls
                .into_iter()
                .map(|c| ToolCall {
                    id: c.id,
                    name: c.function.name,
                    arguments: c.function.arguments,
                })
                .collect(),
            tool_call_id: wire.tool_call_id,
            name: wire.name,
        }
    }
}

impl Message {
    /// [`Message::to_chat`] of a verbatim message that is not of the typed
    /// shape.
    fn lenient_chat(&self) -> ChatMessage {
        use serde_json::Value;
        let value: Value = serde_json::from_slice(&self.json).unwrap_or_default();
        let text = |v: &Value| match v {
            Value::String(s) => Some(s.clone()),
            Value::Array(parts) => Some(
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect(),
            ),
            _ => None,
        };
        let calls = value.get("tool_calls").and_then(Value::as_array);
        ChatMessage {
            role: self.role,
            content: value.get("content").and_then(text),
            reasoning_content: value.get("reasoning_content").and_then(text),
            tool_calls: calls
                .into_iter()
                .flatten()
                .map(|c| ToolCall {
                    id: c["id"].as_str().unwrap_or_default().into(),
                    name: c["function"]["name"].as_str().unwrap_or_default().into(),
                    arguments: match &c["function"]["arguments"] {
                        Value::String(s) => s.clone(),
                        Value::Null => String::new(),
                        other => other.to_string(),
                    },
                })
                .collect(),
            tool_call_id: self.tool_call_id.as_deref().map(Into::into),
            name: value.get("name").and_then(Value::as_str).map(Into::into),
        }
    }
}

/// What the host reads of a verbatim message.
#[derive(Deserialize)]
struct Head {
    role: String,
    tool_call_id: Option<serde_json::Value>,
    tool_calls: Option<Vec<serde_json::Value>>,
}

/// About the length of `message`'s JSON: its text, the keys, and some
/// room for escapes.
fn estimate(m: &ChatMessage) -> usize {
    let text = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let calls: usize = m
        .tool_calls
        .iter()
        .map(|c| c.id.len() + c.name.len() + c.arguments.len() + 64)
        .sum();
    let len = text(&m.content) + text(&m.reasoning_content) + text(&m.tool_call_id) + text(&m.name);
    len + len / 16 + calls + 96
}

/// Messages are equal when their JSON is.
impl PartialEq for Message {
    fn eq(&self, other: &Self) -> bool {
        self.json == other.json
    }
}

impl Eq for Message {}

/// A role as OpenAI names it.
fn role_name(role: Role) -> &'static str {
    match role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    }
}

/// A message in OpenAI form: absent fields are left out.
struct OpenAi<'a>(&'a ChatMessage);

impl Serialize for OpenAi<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("role", role_name(m.role))?;
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

/// The JSON read back.
#[derive(Deserialize)]
struct Wire {
    content: Option<String>,
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<WireCall>,
    tool_call_id: Option<String>,
    name: Option<String>,
}

#[derive(Deserialize)]
struct WireCall {
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    arguments: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(role: Role) -> ChatMessage {
        ChatMessage {
            role,
            content: None,
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    /// The splice writes what a whole new message would, escapes included.
    #[test]
    fn a_content_prefix_is_spliced_as_a_new_message_would_write_it() {
        for role in [Role::System, Role::User, Role::Tool] {
            let mut m = chat(role);
            m.content = Some("be \"brief\"\n\u{1}é".into());
            m.tool_call_id = (role == Role::Tool).then(|| "call_1".into());
            let prefix = "[run 7 \"x\"]\n";
            let spliced = Message::new(&m).with_content_prefix(prefix).unwrap();
            m.content = Some(format!("{prefix}{}", m.content.as_deref().unwrap()));
            let whole = Message::new(&m);
            assert_eq!(spliced.json(), whole.json(), "{role:?}");
            assert_eq!(spliced.tool_call_id(), whole.tool_call_id());
            assert_eq!(spliced.to_chat(), m);
        }
        // No text content: nothing to put a prefix before.
        let calls = Message::new(&ChatMessage {
            tool_calls: vec![ToolCall {
                id: "c".into(),
                name: "ls".into(),
                arguments: "{}".into(),
            }],
            ..chat(Role::Assistant)
        });
        assert!(calls.with_content_prefix("[run]").is_none());
        assert!(Message::new(&chat(Role::System))
            .with_content_prefix("[run]")
            .is_none());
    }

    #[test]
    fn a_verbatim_message_is_sent_byte_for_byte() {
        let text = concat!(
            r#"{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"c1","#,
            r#""type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}"#
        );
        let m = Message::verbatim(text).unwrap();
        assert_eq!(m.json().as_ref(), text.as_bytes());
        assert_eq!(m.role(), Role::Assistant);
        assert_eq!(m.tool_calls().collect::<Vec<_>>(), [("c1", "bash")]);
        let chat = m.to_chat();
        assert_eq!(chat.tool_calls[0].arguments, r#"{"command":"ls"}"#);
        // List content reads back as its text parts.
        let parts = Message::verbatim(
            r#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"role":"user","x":1}"#,
        )
        .unwrap();
        assert_eq!(parts.to_chat().content.as_deref(), Some("ab"));
        let tool =
            Message::verbatim(r#"{"role":"tool","tool_call_id":"c1","content":"out"}"#).unwrap();
        assert_eq!(tool.tool_call_id(), Some("c1"));
        // Not a message: refused with the reason.
        for bad in [
            "[1]",
            r#"{"role":"developer","content":"x"}"#,
            r#"{"content":"no role"}"#,
            r#"{"role":"user"} trailing"#,
            r#"{"role":"user","role":"user"}"#,
        ] {
            assert!(Message::verbatim(bad).is_err(), "{bad}");
        }
        let wire = types::Message::Json(text.into());
        assert_eq!(Message::from_wire(&wire).unwrap(), m);
    }

    #[test]
    fn absent_fields_are_omitted_and_everything_reads_back() {
        let mut call = chat(Role::Assistant);
        call.reasoning_content = Some("look \"first\"\n".into());
        call.tool_calls = vec![
            ToolCall {
                id: "functions.bash:0".into(),
                name: "bash".into(),
                arguments: r#"{"command": "ls"}"#.into(),
            },
            ToolCall {
                id: String::new(),
                name: "pwd".into(),
                arguments: String::new(),
            },
        ];
        let m = Message::new(&call);
        assert_eq!(
            std::str::from_utf8(m.json()).unwrap(),
            concat!(
                r#"{"role":"assistant","reasoning_content":"look \"first\"\n","tool_calls":["#,
                r#"{"id":"functions.bash:0","type":"function","function":{"name":"bash","arguments":"{\"command\": \"ls\"}"}},"#,
                r#"{"id":"","type":"function","function":{"name":"pwd","arguments":""}}]}"#
            )
        );
        assert_eq!(m.role(), Role::Assistant);
        let calls: Vec<_> = m.tool_calls().collect();
        assert_eq!(calls, [("functions.bash:0", "bash"), ("", "pwd")]);
        assert_eq!(m.to_chat(), call);

        let mut result = chat(Role::Tool);
        result.content = Some(String::new());
        result.tool_call_id = Some("functions.bash:0".into());
        result.name = Some("n".into());
        let m = Message::new(&result);
        assert_eq!(
            std::str::from_utf8(m.json()).unwrap(),
            r#"{"role":"tool","content":"","tool_call_id":"functions.bash:0","name":"n"}"#
        );
        assert_eq!(m.tool_call_id(), Some("functions.bash:0"));
        assert_eq!(m.to_chat(), result);
        assert_eq!(Message::new(&chat(Role::User)).to_chat(), chat(Role::User));
    }
}
