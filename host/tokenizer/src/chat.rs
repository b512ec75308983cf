//! The Qwen3.6 chat template, rendered in plain Rust.
//!
//! Followed: `chat_template.jinja` of `Qwen/Qwen3.6-27B` on the Hugging Face
//! hub (7,764 bytes, sha256 `e84f32a23fdda27689f868aa4a1a5621f41133e51a48d7f3efcbea2839574259`):
//! ChatML with the XML-style tool calls that Qwen3.5 introduced
//! (`<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>…`),
//! `enable_thinking` and `preserve_thinking`. It is rendered as Hugging Face
//! `apply_chat_template` renders it: `tojson` is Python's `json.dumps` with
//! `ensure_ascii=False`, `trim` is Python's `str.strip()`.
//!
//! Shapes: `system` (first only), `user`, `assistant` (`content`,
//! `reasoning_content`, `tool_calls`, or `<think>…</think>` inside
//! `content`) and `tool` messages, content as a string, `null`, absent, or
//! a list of text parts; tools as an array of OpenAI tool objects.
//!
//! Left out: image and video content parts (the template's vision
//! placeholders and `add_vision_id`) are rejected with an error. Added, as
//! the reference benchmark does before rendering: each
//! `tool_calls[].function.arguments` JSON string that parses to an object
//! is rendered as that object (the template itself fails on strings).

use crate::TokenizerError;
use serde_json::Value;
use std::borrow::Cow;

/// The tool-calling instructions the template puts after `</tools>`.
const TOOL_INSTRUCTIONS: &str = "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>";

/// Template variables besides the messages and tools.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChatOptions {
    /// Append the assistant turn header the model continues from (the ISL
    /// render). Default `true`.
    pub add_generation_prompt: bool,
    /// `enable_thinking`: with `false` the generation prompt holds an empty
    /// `<think>\n\n</think>\n\n` block; with `true` it opens `<think>\n`,
    /// as when the variable is not passed at all. Default `false` (reasoning
    /// off, as the edge benchmark's server runs).
    pub enable_thinking: bool,
    /// `preserve_thinking`: keep the `<think>` block of assistant turns
    /// before the last user query too. Default `false`.
    pub preserve_thinking: bool,
}

impl Default for ChatOptions {
    fn default() -> Self {
        ChatOptions {
            add_generation_prompt: true,
            enable_thinking: false,
            preserve_thinking: false,
        }
    }
}

fn template_error(message: &str) -> TokenizerError {
    TokenizerError::Template(message.to_string())
}

/// Renders OpenAI-format `messages` (and `tools`, if any) with the Qwen3.6
/// chat template into the prompt text the server tokenizes.
///
/// Fails where the template raises (no messages, no user query, a system
/// message not first, an unknown role or content type) and where it cannot
/// render: a tool call without a string name or with arguments that are not
/// an object, and image or video content.
pub fn render_chat(
    messages: &[Value],
    tools: Option<&[Value]>,
    opts: &ChatOptions,
) -> Result<String, TokenizerError> {
    let first = messages
        .first()
        .ok_or_else(|| template_error("No messages provided."))?;
    let mut out = String::with_capacity(estimate_len(messages, tools));

    let system = if role(first) == Some("system") {
        Some(content_text(first)?)
    } else {
        None
    };
    match tools.filter(|t| !t.is_empty()) {
        Some(tools) => {
            out.push_str("<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>");
            for tool in tools {
                out.push('\n');
                pysem::json::write(&mut out, tool, false);
            }
            out.push_str("\n</tools>");
            out.push_str(TOOL_INSTRUCTIONS);
            if let Some(system) = &system {
                let system = py_strip(system);
                if !system.is_empty() {
                    out.push_str("\n\n");
                    out.push_str(system);
                }
            }
            out.push_str("<|im_end|>\n");
        }
        None => {
            if let Some(system) = &system {
                out.push_str("<|im_start|>system\n");
                out.push_str(py_strip(system));
                out.push_str("<|im_end|>\n");
            }
        }
    }

    let last_query = last_query_index(messages)?;
    for (i, message) in messages.iter().enumerate() {
        let text = content_text(message)?;
        let content = py_strip(&text);
        match role(message) {
            Some("system") => {
                if i != 0 {
                    return Err(template_error("System message must be at the beginning."));
                }
            }
            Some("user") => {
                out.push_str("<|im_start|>user\n");
                out.push_str(content);
                out.push_str("<|im_end|>\n");
            }
            Some("assistant") => {
                let keep_thinking = opts.preserve_thinking || i > last_query;
                render_assistant(&mut out, message, content, keep_thinking)?;
            }
            Some("tool") => {
                if i > 0 && role(&messages[i - 1]) != Some("tool") {
                    out.push_str("<|im_start|>user");
                }
                out.push_str("\n<tool_response>\n");
                out.push_str(content);
                out.push_str("\n</tool_response>");
                let next_is_tool = messages.get(i + 1).map(|m| role(m) == Some("tool"));
                if next_is_tool != Some(true) {
                    out.push_str("<|im_end|>\n");
                }
            }
            _ => return Err(template_error("Unexpected message role.")),
        }
    }

    if opts.add_generation_prompt {
        out.push_str("<|im_start|>assistant\n");
        out.push_str(if opts.enable_thinking {
            "<think>\n"
        } else {
            "<think>\n\n</think>\n\n"
        });
    }
    Ok(out)
}

/// Index of the last user message that is not a wrapped tool response.
fn last_query_index(messages: &[Value]) -> Result<usize, TokenizerError> {
    for (i, message) in messages.iter().enumerate().rev() {
        if role(message) == Some("user") {
            let text = content_text(message)?;
            let content = py_strip(&text);
            if !(content.starts_with("<tool_response>") && content.ends_with("</tool_response>")) {
                return Ok(i);
            }
        }
    }
    Err(template_error("No user query found in messages."))
}

/// One assistant turn, from its header to `<|im_end|>\n`; `content` is the
/// stripped content text.
fn render_assistant(
    out: &mut String,
    message: &Value,
    content: &str,
    keep_thinking: bool,
) -> Result<(), TokenizerError> {
    let (reasoning, content) = match message.get("reasoning_content") {
        Some(Value::String(reasoning)) => (reasoning.as_str(), content),
        _ if content.contains("</think>") => {
            let before = content.split("</think>").next().unwrap_or_default();
            let reasoning = before
                .trim_end_matches('\n')
                .rsplit("<think>")
                .next()
                .unwrap_or_default()
                .trim_start_matches('\n');
            let after = content.rsplit("</think>").next().unwrap_or_default();
            (reasoning, after.trim_start_matches('\n'))
        }
        _ => ("", content),
    };
    out.push_str("<|im_start|>assistant\n");
    if keep_thinking {
        out.push_str("<think>\n");
        out.push_str(py_strip(reasoning));
        out.push_str("\n</think>\n\n");
    }
    out.push_str(content);

    let calls: &[Value] = match message.get("tool_calls") {
        None | Some(Value::Null) => &[],
        Some(Value::Array(calls)) => calls,
        Some(_) => return Err(template_error("tool_calls must be an array.")),
    };
    for (j, call) in calls.iter().enumerate() {
        let function = call.get("function").unwrap_or(call);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| template_error("Tool call without a string name."))?;
        out.push_str(match (j, py_strip(content).is_empty()) {
            (0, true) => "<tool_call>\n<function=",
            (0, false) => "\n\n<tool_call>\n<function=",
            _ => "\n<tool_call>\n<function=",
        });
        out.push_str(name);
        out.push_str(">\n");
        if let Some(arguments) = function.get("arguments") {
            let parsed = match arguments {
                Value::String(s) if call.get("function").is_some() => {
                    serde_json::from_str::<Value>(s)
                        .ok()
                        .filter(Value::is_object)
                }
                _ => None,
            };
            let Value::Object(arguments) = parsed.as_ref().unwrap_or(arguments) else {
                return Err(template_error(
                    "Tool call arguments are not a JSON object (Can only get item pairs from a mapping).",
                ));
            };
            for (key, value) in arguments {
                out.push_str("<parameter=");
                out.push_str(key);
                out.push_str(">\n");
                match value {
                    Value::String(s) => out.push_str(s),
                    other => pysem::json::write(out, other, false),
                }
                out.push_str("\n</parameter>\n");
            }
        }
        out.push_str("</function>\n</tool_call>");
    }
    out.push_str("<|im_end|>\n");
    Ok(())
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

/// The template's `render_content`: a string as is, nothing for `null` or
/// absent, the text parts of a list joined.
fn content_text(message: &Value) -> Result<Cow<'_, str>, TokenizerError> {
    match message.get("content") {
        None | Some(Value::Null) => Ok(Cow::Borrowed("")),
        Some(Value::String(s)) => Ok(Cow::Borrowed(s)),
        Some(Value::Array(parts)) => {
            let mut text = String::new();
            for part in parts {
                let kind = part.get("type").and_then(Value::as_str);
                let has = |key: &str| part.get(key).is_some();
                if has("image")
                    || has("image_url")
                    || has("video")
                    || matches!(kind, Some("image" | "video"))
                {
                    return Err(template_error(
                        "Image and video content is not supported by this renderer.",
                    ));
                }
                match part.get("text") {
                    Some(Value::String(s)) => text.push_str(s),
                    _ => return Err(template_error("Unexpected item type in content.")),
                }
            }
            Ok(Cow::Owned(text))
        }
        Some(_) => Err(template_error("Unexpected content type.")),
    }
}

/// Python's `str.strip()`: trims chars for which `str.isspace()` holds, which
/// are Unicode `White_Space` plus U+001C..U+001F.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// A capacity hint for the rendered text.
fn estimate_len(messages: &[Value], tools: Option<&[Value]>) -> usize {
    let text_len = |v: &Value| match v.get("content") {
        Some(Value::String(s)) => s.len(),
        _ => 0,
    } + match v.get("reasoning_content") {
        Some(Value::String(s)) => s.len(),
        _ => 0,
    };
    let messages: usize = messages.iter().map(|m| text_len(m) + 64).sum();
    messages + tools.map_or(0, |t| 1024 + 512 * t.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(messages: Value, tools: Option<Value>, opts: ChatOptions) -> String {
        let messages = messages.as_array().expect("array").clone();
        let tools = tools.map(|t| t.as_array().expect("array").clone());
        render_chat(&messages, tools.as_deref(), &opts).expect("renders")
    }

    #[test]
    fn plain_chat_with_generation_prompt() {
        let text = render(
            json!([{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi\n"}]),
            None,
            ChatOptions::default(),
        );
        assert_eq!(
            text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        );
        let thinking = ChatOptions {
            enable_thinking: true,
            ..ChatOptions::default()
        };
        let text = render(json!([{"role": "user", "content": "Hi"}]), None, thinking);
        assert_eq!(
            text,
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"
        );
    }

    #[test]
    fn tools_tool_calls_and_responses() {
        let tools = json!([{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]);
        let messages = json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "reasoning_content": " plan ", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\", \"n\": 2}"}},
                {"id": "b", "type": "function", "function": {"name": "bash", "arguments": {"command": "pwd"}}}
            ]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "tool", "tool_call_id": "b", "content": "/"}
        ]);
        let opts = ChatOptions {
            add_generation_prompt: false,
            ..ChatOptions::default()
        };
        let text = render(messages, Some(tools), opts);
        let expected = [
            "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n",
            r#"{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}"#,
            "\n</tools>",
            TOOL_INSTRUCTIONS,
            "\n\nsys<|im_end|>\n<|im_start|>user\ngo<|im_end|>\n",
            "<|im_start|>assistant\n<think>\nplan\n</think>\n\n",
            "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n<parameter=n>\n2\n</parameter>\n</function>\n</tool_call>",
            "\n<tool_call>\n<function=bash>\n<parameter=command>\npwd\n</parameter>\n</function>\n</tool_call><|im_end|>\n",
            "<|im_start|>user\n<tool_response>\nx\n</tool_response>\n<tool_response>\n/\n</tool_response><|im_end|>\n",
        ]
        .concat();
        assert_eq!(text, expected);
    }

    #[test]
    fn older_reasoning_is_dropped_and_think_in_content_is_split() {
        let messages = json!([
            {"role": "user", "content": "q1"},
            {"role": "assistant", "reasoning_content": "r1", "content": "a1"},
            {"role": "user", "content": "q2"},
            {"role": "assistant", "content": "<think>\nr2\n</think>\n\na2"}
        ]);
        let opts = ChatOptions {
            add_generation_prompt: false,
            ..ChatOptions::default()
        };
        assert_eq!(
            render(messages.clone(), None, opts),
            "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\nr2\n</think>\n\na2<|im_end|>\n"
        );
        let preserve = ChatOptions {
            preserve_thinking: true,
            ..opts
        };
        assert!(render(messages, None, preserve)
            .contains("<|im_start|>assistant\n<think>\nr1\n</think>\n\na1"));
    }

    #[test]
    fn template_errors() {
        let opts = ChatOptions::default();
        let err = |m: Value| {
            render_chat(m.as_array().expect("array"), None, &opts)
                .expect_err("fails")
                .to_string()
        };
        assert!(err(json!([])).contains("No messages"));
        assert!(err(json!([{"role": "assistant", "content": "x"}])).contains("No user query"));
        assert!(
            err(json!([{"role": "user", "content": "x"}, {"role": "system", "content": "s"}]))
                .contains("beginning")
        );
        assert!(
            err(json!([{"role": "user", "content": "x"}, {"role": "critic", "content": "s"}]))
                .contains("role")
        );
        assert!(err(json!([{"role": "user", "content": 5}])).contains("content type"));
        assert!(err(
            json!([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}])
        )
        .contains("not supported"));
        assert!(err(
            json!([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
            {"function": {"name": "f", "arguments": "{not json"}}]}])
        )
        .contains("not a JSON object"));
    }

    #[test]
    fn strip_is_python_strip() {
        assert_eq!(py_strip("\u{1f}\u{3000} a b\u{85}\n"), "a b");
        assert_eq!(py_strip("\u{200b}a"), "\u{200b}a");
    }
}
