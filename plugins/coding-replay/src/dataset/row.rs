//! One JSONL row: field presence, types and ranges.
//!
//! As in the reference (pandas turns JSON `null` into a missing cell), a `null`
//! value counts as an absent key. Keys the schema does not name are allowed
//! (`additionalProperties: true`).

use serde_json::{Map, Value};

use super::fields::Fields;
use super::{Body, Row, ToolCall, ToolResult};

type Object = Map<String, Value>;

/// Parses a row's keys found at `line`; returns its conversation id and the row. Rules are
/// checked in a fixed order (id, turn, role and its payload, generation parameters, `system`,
/// `name`): a row breaking several reports the first.
pub(super) fn parse(f: Fields, line: u32) -> Result<(String, Row), String> {
    let id = conversation_id(f.conversation_id.as_ref())?;
    let turn = turn(f.turn.as_ref())?;
    let body = match f.role.as_ref().map(Value::as_str) {
        None => return Err("missing required key 'role'".to_owned()),
        Some(Some("user")) => user(f.content)?,
        Some(Some("assistant")) => assistant(
            f.content,
            f.reasoning_content,
            f.tool_calls,
            f.intent_codes.as_ref(),
        )?,
        Some(Some("tool")) => tool(f.tool_results)?,
        Some(_) => return Err("'role' must be one of \"user\", \"assistant\", \"tool\"".to_owned()),
    };
    let parameter = |key: &str| Fields::parameter_in(&f.parameters, key);
    for (key, check) in GENERATION_PARAMETERS {
        if let Some(value) = parameter(key) {
            check.apply(key, value)?;
        }
    }
    let row = Row {
        line,
        turn,
        body,
        system: optional_string(f.system, "system")?,
        name: optional_string(f.name, "name")?,
        tools_json: parameter("tools").map(Value::to_string),
        delay_seconds: parameter("delay_seconds").and_then(Value::as_f64),
        max_new_tokens: token_limit(parameter("max_new_tokens")),
        max_completion_tokens: token_limit(parameter("max_completion_tokens")),
    };
    Ok((id, row))
}

/// The value of `key` in a nested object, unless it is absent or `null`.
fn present<'a>(object: &'a Object, key: &str) -> Option<&'a Value> {
    object.get(key).filter(|value| !value.is_null())
}

fn required<'a>(value: Option<&'a Value>, key: &str) -> Result<&'a Value, String> {
    value.ok_or_else(|| format!("missing required key '{key}'"))
}

/// A string taken out of its value (no copy).
fn into_string(value: Value) -> Result<String, Value> {
    match value {
        Value::String(text) => Ok(text),
        other => Err(other),
    }
}

fn optional_string(value: Option<Value>, key: &str) -> Result<Option<String>, String> {
    value
        .map(|value| into_string(value).map_err(|_| format!("'{key}' must be a string")))
        .transpose()
}

/// A JSON integer, or a number with no fractional part (JSON Schema draft-07 `integer`).
fn integer(value: &Value) -> Option<i64> {
    value.as_i64().or_else(|| {
        let float = value.as_f64()?;
        // Every float in this range converts to i64 exactly.
        (float.fract() == 0.0 && float.abs() < 9.0e18).then_some(float as i64)
    })
}

fn token_limit(value: Option<&Value>) -> Option<u32> {
    value.and_then(integer).and_then(|n| u32::try_from(n).ok())
}

fn conversation_id(value: Option<&Value>) -> Result<String, String> {
    let id = required(value, "conversation_id")?
        .as_str()
        .ok_or("'conversation_id' must be a string")?;
    if id.is_empty() {
        return Err("'conversation_id' must be a non-empty string".to_owned());
    }
    if !id.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
        return Err("'conversation_id' must contain only printable ASCII characters".to_owned());
    }
    Ok(id.to_owned())
}

fn turn(value: Option<&Value>) -> Result<u32, String> {
    integer(required(value, "turn")?)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n >= 1)
        .ok_or_else(|| "'turn' must be an integer >= 1".to_owned())
}

fn user(content: Option<Value>) -> Result<Body, String> {
    let content = content
        .and_then(|value| into_string(value).ok())
        .filter(|content| !content.is_empty())
        .ok_or("user rows need a non-empty string 'content'")?;
    Ok(Body::User { content })
}

fn assistant(
    content: Option<Value>,
    reasoning_content: Option<Value>,
    tool_calls: Option<Value>,
    intent_codes: Option<&Value>,
) -> Result<Body, String> {
    let content = optional_string(content, "content")?;
    let reasoning_content = optional_string(reasoning_content, "reasoning_content")?;
    let (tool_calls, tool_calls_json) = match &tool_calls {
        None => (Vec::new(), "[]".to_owned()),
        Some(value) => {
            let calls = value
                .as_array()
                .filter(|calls| !calls.is_empty())
                .ok_or("'tool_calls' must be a non-empty list when present")?;
            let calls = calls
                .iter()
                .enumerate()
                .map(|(index, call)| tool_call(index, call))
                .collect::<Result<_, _>>()?;
            (calls, value.to_string())
        }
    };
    if content.as_deref().is_none_or(str::is_empty) && tool_calls.is_empty() {
        return Err(
            "assistant rows need a non-empty 'content' or a non-empty 'tool_calls' list".to_owned(),
        );
    }
    Ok(Body::Assistant {
        content,
        reasoning_content,
        tool_calls,
        tool_calls_json,
        // Any JSON value, as the reference's loader keeps it: the scorer
        // reads the string entries of a list and ignores anything else.
        intent_codes_json: intent_codes.map(Value::to_string),
    })
}

fn tool_call(index: usize, call: &Value) -> Result<ToolCall, String> {
    let at = |rule: &str| format!("tool_calls[{index}]{rule}");
    let call = call.as_object().ok_or_else(|| at(" must be an object"))?;
    let id = non_empty_string(call, "id").ok_or_else(|| at(".id must be a non-empty string"))?;
    if present(call, "type").and_then(Value::as_str) != Some("function") {
        return Err(at(".type must be \"function\""));
    }
    let function = present(call, "function")
        .and_then(Value::as_object)
        .ok_or_else(|| at(".function must be an object"))?;
    let name = non_empty_string(function, "name")
        .ok_or_else(|| at(".function.name must be a non-empty string"))?;
    let arguments = match present(function, "arguments") {
        Some(Value::String(text)) => text.clone(),
        Some(object @ Value::Object(_)) => object.to_string(),
        _ => return Err(at(".function.arguments must be a JSON string or an object")),
    };
    Ok(ToolCall {
        id,
        name,
        arguments,
    })
}

fn tool(tool_results: Option<Value>) -> Result<Body, String> {
    let results = tool_results
        .as_ref()
        .and_then(Value::as_array)
        .filter(|results| !results.is_empty())
        .ok_or("tool rows need a non-empty 'tool_results' list")?;
    let results = results
        .iter()
        .enumerate()
        .map(|(index, result)| {
            let at = |rule: &str| format!("tool_results[{index}]{rule}");
            let result = result.as_object().ok_or_else(|| at(" must be an object"))?;
            let tool_call_id = non_empty_string(result, "tool_call_id")
                .ok_or_else(|| at(".tool_call_id must be a non-empty string"))?;
            let content = present(result, "content")
                .and_then(Value::as_str)
                .ok_or_else(|| at(".content must be a string"))?
                .to_owned();
            Ok(ToolResult {
                tool_call_id,
                content,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Body::Tool { results })
}

fn non_empty_string(object: &Object, key: &str) -> Option<String> {
    present(object, key)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
        .map(str::to_owned)
}

/// The schema's `generationParameters`, allowed on every row.
pub(super) const GENERATION_PARAMETERS: [(&str, Check); 18] = [
    ("model", Check::String),
    ("max_new_tokens", Check::Integer(1, u32::MAX as i64)),
    ("max_completion_tokens", Check::Integer(1, u32::MAX as i64)),
    ("stream", Check::Boolean),
    ("temperature", Check::Number(0.0, 2.0)),
    ("top_p", Check::Number(0.0, 1.0)),
    ("top_k", Check::Integer(1, u32::MAX as i64)),
    ("seed", Check::Integer(i64::MIN, i64::MAX)),
    ("repetition_penalty", Check::Number(0.0, f64::INFINITY)),
    ("frequency_penalty", Check::Number(-2.0, 2.0)),
    ("presence_penalty", Check::Number(-2.0, 2.0)),
    ("stop", Check::StringOrStrings),
    ("n", Check::Integer(1, i64::MAX)),
    ("logit_bias", Check::Object),
    ("user", Check::String),
    ("chat_template", Check::String),
    ("delay_seconds", Check::Number(0.0, f64::INFINITY)),
    ("tools", Check::ListOfObjects),
];

/// A type (and range) rule for one key.
#[derive(Clone, Copy)]
pub(super) enum Check {
    String,
    Boolean,
    Object,
    /// An integer within the inclusive bounds.
    Integer(i64, i64),
    /// A number within the inclusive bounds.
    Number(f64, f64),
    StringOrStrings,
    ListOfObjects,
}

impl Check {
    fn apply(self, key: &str, value: &Value) -> Result<(), String> {
        let (ok, expected) = match self {
            Check::String => (value.is_string(), "a string".to_owned()),
            Check::Boolean => (value.is_boolean(), "a boolean".to_owned()),
            Check::Object => (value.is_object(), "an object".to_owned()),
            Check::Integer(min, max) => (
                integer(value).is_some_and(|n| (min..=max).contains(&n)),
                match (min, max) {
                    (i64::MIN, _) => "an integer".to_owned(),
                    (min, i64::MAX) => format!("an integer >= {min}"),
                    (min, max) => format!("an integer from {min} to {max}"),
                },
            ),
            Check::Number(min, max) => (
                value.as_f64().is_some_and(|n| (min..=max).contains(&n)),
                if max.is_infinite() {
                    format!("a number >= {min}")
                } else {
                    format!("a number from {min} to {max}")
                },
            ),
            Check::StringOrStrings => (
                value.is_string()
                    || value
                        .as_array()
                        .is_some_and(|items| items.iter().all(Value::is_string)),
                "a string or a list of strings".to_owned(),
            ),
            Check::ListOfObjects => (
                value
                    .as_array()
                    .is_some_and(|items| items.iter().all(Value::is_object)),
                "a list of objects".to_owned(),
            ),
        };
        if ok {
            Ok(())
        } else {
            Err(format!("'{key}' must be {expected}"))
        }
    }
}
