//! Test helpers: small inline trajectories and a JSON view of requests.

use serde_json::{json, Map, Value};

use agentload_sdk::{Config, Message, Role};

/// A user row.
pub fn user(conversation: &str, turn: u32) -> Value {
    json!({"conversation_id": conversation, "turn": turn, "role": "user", "content": "fix the bug"})
}

/// An assistant row with one `bash` tool call (`functions.bash:0`).
pub fn call(conversation: &str, turn: u32) -> Value {
    json!({"conversation_id": conversation, "turn": turn, "role": "assistant",
           "tool_calls": [{"id": "functions.bash:0", "type": "function",
                           "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]})
}

/// A tool row answering `functions.bash:0`.
pub fn result(conversation: &str, turn: u32) -> Value {
    json!({"conversation_id": conversation, "turn": turn, "role": "tool",
           "tool_results": [{"tool_call_id": "functions.bash:0", "content": "a.py"}]})
}

/// A plain assistant reply.
pub fn reply(conversation: &str, turn: u32) -> Value {
    json!({"conversation_id": conversation, "turn": turn, "role": "assistant", "content": "done"})
}

/// `row` with `key` set to `value`.
pub fn with(mut row: Value, key: &str, value: Value) -> Value {
    row[key] = value;
    row
}

/// `row` without `key`.
pub fn without(mut row: Value, key: &str) -> Value {
    row.as_object_mut().unwrap().remove(key);
    row
}

/// Rows as JSONL text.
pub fn jsonl(rows: &[Value]) -> String {
    rows.iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Two conversations exercising every message shape.
///
/// `a` (system, tools): user 1, assistant 2 (reasoning, two calls), tool 3 (two
/// results, delay 0.0625 s), assistant 4 (content), user 5, assistant 6 (one call).
/// `b` (no system, no tools): user 1, assistant 2 (content), user 3, assistant 4
/// (object arguments), tool 5, assistant 6 (content).
pub fn two_conversations() -> String {
    let tools = json!([{"type": "function", "function": {"name": "bash",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]);
    jsonl(&[
        json!({"_type": "dataset_metadata", "version": 1}),
        with(
            with(user("a", 1), "system", json!("You are a shell agent.")),
            "tools",
            tools,
        ),
        json!({"conversation_id": "a", "turn": 2, "role": "assistant", "reasoning_content": "look first",
               "tool_calls": [
                   {"id": "functions.bash:0", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}},
                   {"id": "functions.bash:1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"pwd\"}"}}]}),
        json!({"conversation_id": "a", "turn": 3, "role": "tool", "delay_seconds": 0.0625,
               "tool_results": [{"tool_call_id": "functions.bash:0", "content": "a.py"},
                                {"tool_call_id": "functions.bash:1", "content": "/repo"}]}),
        reply("a", 4),
        with(user("a", 5), "content", json!("and the tests")),
        call("a", 6),
        user("b", 1),
        reply("b", 2),
        user("b", 3),
        json!({"conversation_id": "b", "turn": 4, "role": "assistant",
               "tool_calls": [{"id": "call_9", "type": "function",
                               "function": {"name": "bash", "arguments": {"command": "cat a.py", "timeout": 5}}}]}),
        with(
            result("b", 5),
            "tool_results",
            json!([{"tool_call_id": "call_9", "content": "print(1)"}]),
        ),
        reply("b", 6),
    ])
}

/// A configuration granting `text` as the `trajectories` file `t.jsonl`.
pub fn config(settings: Value, text: &str) -> Config {
    Config::with_settings(settings.to_string()).grant("trajectories", "t.jsonl", text)
}

/// A message as the host serialises it: absent options and empty lists omitted.
pub fn shape(message: &Message) -> Value {
    let mut out = Map::new();
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    out.insert("role".into(), json!(role));
    let options = [
        ("content", &message.content),
        ("reasoning_content", &message.reasoning_content),
        ("tool_call_id", &message.tool_call_id),
        ("name", &message.name),
    ];
    for (key, value) in options {
        if let Some(value) = value {
            out.insert(key.into(), json!(value));
        }
    }
    if !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
            .collect();
        out.insert("tool_calls".into(), Value::Array(calls));
    }
    Value::Object(out)
}
