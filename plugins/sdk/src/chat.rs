//! Chat messages, completions, tools and sampling parameters: the SDK's own
//! types, converted to and from the WIT records at the export edge.

use crate::Error;
use serde_json::{json, Value};

/// Author of a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One OpenAI Chat Completions message. The host serialises it: `None`
/// fields are left out of the JSON (an assistant message with tool calls
/// and no `content` is sent without a `content` key). A verbatim message
/// ([`Message::verbatim`]) is sent as its JSON text, byte for byte; its
/// typed fields are what that text says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: Option<String>,
    pub reasoning_content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    /// For `tool` messages: the call they answer.
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
    /// The message's JSON object text, sent as is (set by
    /// [`Message::verbatim`]); `None` for a typed message.
    pub verbatim: Option<String>,
}

/// One function call made by (or recorded for) the assistant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// Call id, e.g. `functions.bash:0`; may be empty.
    pub id: String,
    /// Function name.
    pub name: String,
    /// Arguments exactly as the model produced them (normally a JSON object text).
    pub arguments: String,
}

/// What the model answered to one turn, assembled by the host from the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub content: String,
    pub reasoning_content: String,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

/// Token usage as the server reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
    /// `prompt_tokens_details.cached_tokens`, when the server sends it.
    pub cached_tokens: Option<u32>,
}

/// Per-request sampling parameters; `None` ones are not sent (the default:
/// the server's defaults).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<u32>,
    pub seed: Option<i64>,
    pub max_completion_tokens: Option<u32>,
    /// `tool_choice` as JSON text (e.g. `"auto"`).
    pub tool_choice_json: Option<String>,
    /// Sent as `max_tokens` (the older name of the output budget).
    pub max_tokens: Option<u32>,
    /// Sent as `min_p`.
    pub min_p: Option<f64>,
    /// Sent as `ignore_eos`: with `true` the server generates the whole
    /// output budget.
    pub ignore_eos: Option<bool>,
    /// Sent as `reasoning_effort` (e.g. `low`).
    pub reasoning_effort: Option<String>,
}

impl Message {
    fn of(role: Role, content: Option<String>) -> Self {
        Self {
            role,
            content,
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            verbatim: None,
        }
    }

    /// A message sent as `json`, the text of one JSON object, byte for byte
    /// (a recorded message whose bytes must go out as recorded: its key
    /// order, its numbers, keys agentload does not know). Its typed fields
    /// are read from it: `content` is the text of a string, or the `text`
    /// of each part of a list, joined.
    ///
    /// # Errors
    /// When `json` is not one JSON object whose `role` is `system`, `user`,
    /// `assistant` or `tool` (the host would refuse it).
    pub fn verbatim(json: impl Into<String>) -> Result<Self, Error> {
        let json = json.into();
        let value: Value = serde_json::from_str(&json)
            .map_err(|e| Error::internal(format!("a verbatim message is not JSON: {e}")))?;
        let Value::Object(map) = &value else {
            return Err(Error::internal("a verbatim message is not a JSON object"));
        };
        let role = match map.get("role").and_then(Value::as_str) {
            Some("system") => Role::System,
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("tool") => Role::Tool,
            other => {
                return Err(Error::internal(format!(
                    "a verbatim message's role {other:?} is none of system, user, assistant, tool"
                )))
            }
        };
        let text = |key: &str| match map.get(key) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(parts)) => Some(
                parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect(),
            ),
            _ => None,
        };
        let string = |v: &Value| v.as_str().unwrap_or_default().to_owned();
        let tool_calls = map
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| ToolCall {
                id: string(&c["id"]),
                name: string(&c["function"]["name"]),
                arguments: string(&c["function"]["arguments"]),
            })
            .collect();
        Ok(Self {
            role,
            content: text("content"),
            reasoning_content: text("reasoning_content"),
            tool_calls,
            tool_call_id: map
                .get("tool_call_id")
                .and_then(Value::as_str)
                .map(Into::into),
            name: map.get("name").and_then(Value::as_str).map(Into::into),
            verbatim: Some(json),
        })
    }

    /// A message of any role with text (a `tool` message also wants
    /// [`tool`](Self::tool)'s call id).
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self::of(role, Some(content.into()))
    }

    /// A `system` message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::of(Role::System, Some(content.into()))
    }

    /// A `user` message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::of(Role::User, Some(content.into()))
    }

    /// An `assistant` message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::of(Role::Assistant, Some(content.into()))
    }

    /// An `assistant` message with tool calls (and text, when there is some;
    /// without it the message is sent with no `content` key).
    pub fn assistant_calls(content: Option<String>, calls: Vec<ToolCall>) -> Self {
        let mut m = Self::of(Role::Assistant, content);
        m.tool_calls = calls;
        m
    }

    /// The assistant message a completion amounts to, to append to the
    /// conversation (reasoning kept).
    pub fn from_completion(c: &Completion) -> Self {
        let content = (!c.content.is_empty() || c.tool_calls.is_empty()).then(|| c.content.clone());
        let mut m = Self::assistant_calls(content, c.tool_calls.clone());
        if !c.reasoning_content.is_empty() {
            m.reasoning_content = Some(c.reasoning_content.clone());
        }
        m
    }

    /// A `tool` message answering the call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        let mut m = Self::of(Role::Tool, Some(content.into()));
        m.tool_call_id = Some(tool_call_id.into());
        m
    }

    /// The same message with a `name`.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }
}

impl ToolCall {
    /// A call of `name` with `arguments` (a JSON object text).
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

impl Completion {
    /// A completion with text only (for tests).
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            reasoning_content: String::new(),
            tool_calls: Vec::new(),
            finish_reason: Some("stop".into()),
            usage: None,
        }
    }
}

impl Sampling {
    /// `tool_choice` as a JSON value (e.g. `json!("auto")`).
    pub fn with_tool_choice(mut self, choice: &Value) -> Self {
        self.tool_choice_json = Some(choice.to_string());
        self
    }
}

/// An OpenAI tool definition (`{"type": "function", "function": {...}}`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tool(pub Value);

impl Tool {
    /// A function tool; `parameters_json` is its JSON Schema as text.
    pub fn function(name: &str, description: &str, parameters_json: &str) -> Result<Self, Error> {
        let parameters: Value = serde_json::from_str(parameters_json)
            .map_err(|e| Error::internal(format!("tool `{name}`: parameters are not JSON: {e}")))?;
        Ok(Self::function_value(name, description, parameters))
    }

    /// A function tool with its JSON Schema as a value.
    pub fn function_value(name: &str, description: &str, parameters: Value) -> Self {
        Self(json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": parameters},
        }))
    }

    /// The function's name.
    pub fn name(&self) -> Option<&str> {
        self.0["function"]["name"].as_str()
    }
}
