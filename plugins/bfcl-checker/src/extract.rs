//! What the reference scorer reads from a completion, and its
//! `FunctionCallExtractor` (mlcommons/endpoints `evaluation/extractor.py`).
//!
//! A completion with tool calls is serialized as OpenAI `tool_calls` JSON;
//! one without is scored on `reasoning + content` (no separator). The
//! extractor then tries, first match wins: (1) OpenAI `tool_calls` JSON,
//! (2) a JSON array of `{name, arguments}`, (3) text calls `f(a=1)` found by
//! a regex and balanced parentheses, whose keyword values go through
//! `ast.literal_eval` (or `ast.unparse` when that fails). The result is
//! `json.dumps`-ed and `json.loads`-ed again by the scorer; [`lit_to_value`]
//! applies that round trip to text-call values.

use std::sync::OnceLock;

use pysem::ast::{lit_to_value, literal_eval, parse_dict_call, unparse, CallArgs, LitError};
use pysem::chars::strip;
use pysem::json::loads;
use pysem::re::{chars, Regex};
use pysem::value::{PyErr, Value};

/// A call as the extractor emits it: `{"name": ..., "arguments": ...}`.
/// `arguments` is still a string when stage 1 could not decode it.
#[derive(Debug, Clone)]
pub struct RawCall {
    pub name: Value,
    pub arguments: Value,
}

/// What the model returned, as the scorer sees it.
#[derive(Debug, Clone)]
pub enum ModelOutput {
    /// Non-empty tool calls: `(name, arguments)` exactly as streamed.
    ToolCalls(Vec<(String, String)>),
    /// No tool calls: reasoning followed by content (what the reference
    /// reads); the content starts at byte `content_at`.
    Text { text: String, content_at: usize },
}

impl ModelOutput {
    pub fn new(content: &str, reasoning: &str, tool_calls: Vec<(String, String)>) -> ModelOutput {
        if tool_calls.is_empty() {
            ModelOutput::Text {
                text: format!("{reasoning}{content}"),
                content_at: reasoning.len(),
            }
        } else {
            ModelOutput::ToolCalls(tool_calls)
        }
    }

    /// Whether the output parses as native tool-call JSON (the hallucination
    /// rule). Serialized tool calls always do; text does when it is itself
    /// such JSON.
    pub fn has_native_tool_calls(&self) -> bool {
        match self {
            ModelOutput::ToolCalls(_) => true,
            ModelOutput::Text { text, .. } => tool_calls_json(text).is_some(),
        }
    }

    /// The reasoning and the content, for text outputs.
    pub fn text_parts(&self) -> Option<(&str, &str)> {
        match self {
            ModelOutput::ToolCalls(_) => None,
            ModelOutput::Text { text, content_at } => Some(text.split_at(*content_at)),
        }
    }

    /// `FunctionCallExtractor.extract(output, default="[]")`, decoded.
    pub fn extract(&self) -> Result<Vec<RawCall>, PyErr> {
        match self {
            ModelOutput::ToolCalls(calls) => Ok(calls
                .iter()
                .map(|(name, arguments)| RawCall {
                    name: Value::Str(name.clone()),
                    arguments: decode_arguments(arguments),
                })
                .collect()),
            ModelOutput::Text { text, .. } => extract_text(text),
        }
    }
}

/// Stage 1 decodes a string `arguments` once, keeping the string on failure.
fn decode_arguments(arguments: &str) -> Value {
    loads(arguments).unwrap_or_else(|| Value::str(arguments))
}

/// The three stages on free text.
pub fn extract_text(text: &str) -> Result<Vec<RawCall>, PyErr> {
    let text = strip(text);
    if text.is_empty() {
        return Ok(Vec::new());
    }
    if let Some(calls) = tool_calls_json(text) {
        return Ok(calls);
    }
    if let Some(calls) = function_array(text) {
        return Ok(calls);
    }
    Ok(text_calls(text)?.unwrap_or_default())
}

/// Stage 1: `[{"function": {"name": ..., "arguments": ...}}, ...]`.
pub(crate) fn tool_calls_json(text: &str) -> Option<Vec<RawCall>> {
    let Value::List(items) = loads(text)? else {
        return None;
    };
    let mut calls = Vec::new();
    for item in &items {
        let Value::Dict(_) = item else { return None };
        let function = item.get("function")?;
        let Value::Dict(_) = function else {
            return None;
        };
        let name = function
            .get("name")
            .cloned()
            .unwrap_or_else(|| Value::str(""));
        let arguments = match function.get("arguments") {
            None => decode_arguments("{}"),
            Some(Value::Str(s)) => decode_arguments(s),
            Some(other) => other.clone(),
        };
        calls.push(RawCall { name, arguments });
    }
    (!calls.is_empty()).then_some(calls)
}

/// Stage 2: `[{"name": ..., "arguments": ...}, ...]`.
pub(crate) fn function_array(text: &str) -> Option<Vec<RawCall>> {
    let Value::List(items) = loads(text)? else {
        return None;
    };
    let mut calls = Vec::new();
    for item in &items {
        let Value::Dict(_) = item else { return None };
        let name = item.get("name")?.clone();
        let arguments = item
            .get("arguments")
            .cloned()
            .unwrap_or(Value::Dict(Vec::new()));
        calls.push(RawCall { name, arguments });
    }
    (!calls.is_empty()).then_some(calls)
}

const SKIP_NAMES: [&str; 35] = [
    "print",
    "return",
    "if",
    "for",
    "while",
    "def",
    "class",
    "import",
    "from",
    "with",
    "assert",
    "raise",
    "try",
    "except",
    "len",
    "str",
    "int",
    "float",
    "list",
    "dict",
    "set",
    "tuple",
    "type",
    "isinstance",
    "range",
    "enumerate",
    "zip",
    "map",
    "filter",
    "Note",
    "Example",
    "Here",
    "This",
    "The",
    "For",
];

fn func_start() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"\b([A-Za-z_]\w*)\s*\(", false))
}

fn signature_part() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"[A-Za-z_]\w*(?:\s*:\s*\w+)?", false))
}

/// `_find_balanced_parens`: index of the `)` closing the `(` at `start`,
/// skipping quoted spans (with backslash escapes inside them).
fn balanced_close(t: &[char], start: usize) -> Option<usize> {
    let mut depth = 0i64;
    let (mut single, mut double) = (false, false);
    let mut i = start;
    while i < t.len() {
        let c = t[i];
        if c == '\\' && (single || double) {
            i += 2;
            continue;
        }
        if c == '\'' && !double {
            single = !single;
        } else if c == '"' && !single {
            double = !double;
        } else if !single && !double {
            if c == '(' {
                depth += 1;
            } else if c == ')' {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
        }
        i += 1;
    }
    None
}

/// `_looks_like_signature`: every non-empty comma part is a bare identifier,
/// optionally `name: type`.
fn looks_like_signature(args: &str) -> bool {
    args.split(',')
        .map(strip)
        .filter(|p| !p.is_empty())
        .all(|p| signature_part().fullmatch(&chars(p)).is_some())
}

/// `_parse_arguments_string`, with the `json.dumps`/`loads` round trip.
fn parse_arguments(args: &str) -> Result<Value, PyErr> {
    if args.is_empty() {
        return Ok(Value::Dict(Vec::new()));
    }
    match parse_dict_call(args) {
        CallArgs::Invalid => Ok(Value::Dict(vec![("_raw".into(), Value::str(args))])),
        CallArgs::NotCall => Ok(Value::Dict(Vec::new())),
        CallArgs::Keywords(keywords) => {
            let mut out: Vec<(String, Value)> = Vec::new();
            for (name, expr) in keywords {
                let value = match literal_eval(&expr) {
                    Ok(lit) => lit_to_value(&lit)?,
                    Err(LitError::Malformed) => Value::Str(unparse(&expr)),
                    Err(LitError::Raised(e)) => return Err(e),
                };
                match out.iter_mut().find(|(k, _)| *k == name) {
                    Some(slot) => slot.1 = value,
                    None => out.push((name, value)),
                }
            }
            Ok(Value::Dict(out))
        }
    }
}

/// Not the reference's (for `fix_malformed_abstention`): whether `text`,
/// stripped, is nothing but calls in BFCL's prompting format, `f(...)` or
/// `[f(...), a.g(...)]`: each name (dotted parts of letters, digits and `_`,
/// not starting with a digit) right before its `(`, the parentheses balanced
/// as stage 3 balances them, calls separated by commas.
pub(crate) fn only_calls(text: &str) -> bool {
    let t = chars(strip(text));
    let (mut i, end) = match (t.first(), t.last()) {
        (Some('['), Some(']')) if t.len() >= 2 => (1, t.len() - 1),
        _ => (0, t.len()),
    };
    let space = |i: &mut usize| {
        while *i < end && t[*i].is_whitespace() {
            *i += 1;
        }
    };
    loop {
        space(&mut i);
        loop {
            if i >= end || !(t[i].is_alphabetic() || t[i] == '_') {
                return false;
            }
            while i < end && (t[i].is_alphanumeric() || t[i] == '_') {
                i += 1;
            }
            if i < end && t[i] == '.' {
                i += 1;
            } else {
                break;
            }
        }
        if i >= end || t[i] != '(' {
            return false;
        }
        match balanced_close(&t, i) {
            Some(close) if close < end => i = close + 1,
            _ => return false,
        }
        space(&mut i);
        if i == end {
            return true;
        }
        if t[i] != ',' {
            return false;
        }
        i += 1;
    }
}

/// Stage 3: `_try_parse_text_function_calls`.
pub(crate) fn text_calls(text: &str) -> Result<Option<Vec<RawCall>>, PyErr> {
    let t = chars(text);
    let mut calls = Vec::new();
    let mut consumed: Vec<(usize, usize)> = Vec::new();
    for m in func_start().finditer(&t) {
        let start = m.start();
        if consumed.iter().any(|&(s, e)| s <= start && start < e) {
            continue;
        }
        let name = m.group(&t, 1).unwrap_or_default();
        if SKIP_NAMES.contains(&name.as_str()) {
            continue;
        }
        let open = m.end() - 1;
        let Some(close) = balanced_close(&t, open) else {
            continue;
        };
        consumed.push((open, close + 1));
        let inner: String = t[open + 1..close].iter().collect();
        let args = strip(&inner);
        if !args.is_empty() && looks_like_signature(args) {
            continue;
        }
        calls.push(RawCall {
            name: Value::Str(name),
            arguments: parse_arguments(args)?,
        });
    }
    Ok((!calls.is_empty()).then_some(calls))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(calls: &[RawCall]) -> String {
        calls
            .iter()
            .map(|c| format!("{}:{}", c.name.repr(), c.arguments.repr()))
            .collect::<Vec<_>>()
            .join(" | ")
    }

    fn text(s: &str) -> String {
        show(&extract_text(s).unwrap())
    }

    #[test]
    fn stages_in_order() {
        let native = r#"[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"London\"}"}}]"#;
        assert_eq!(text(native), "'get_weather':{'city': 'London'}");
        assert!(ModelOutput::new(native, "", vec![]).has_native_tool_calls());
        assert_eq!(
            text(r#"[{"name": "f", "arguments": {"a": 1}}]"#),
            "'f':{'a': 1}"
        );
        assert!(!ModelOutput::new(r#"[{"name": "f"}]"#, "", vec![]).has_native_tool_calls());
        assert_eq!(
            text("get_weather(city='London')"),
            "'get_weather':{'city': 'London'}"
        );
        assert_eq!(
            text("[spotify.play(artist='X', duration=20)]"),
            "'play':{'artist': 'X', 'duration': 20}"
        );
        assert_eq!(text("f(a=true, b=null)"), "'f':{'a': 'true', 'b': 'null'}");
        assert_eq!(text("I cannot help with that."), "");
        assert_eq!(
            text("The area (in square units) is 25"),
            "'area':{'_raw': 'in square units'}"
        );
        assert_eq!(text("use f(x, y) or print(1)"), "");
        assert_eq!(text("f(g(1), k=h(2))"), "'f':{'k': 'h(2)'}");
        assert_eq!(text("f(a=')')"), "'f':{'a': ')'}");
    }

    #[test]
    fn tool_call_arguments() {
        let out = ModelOutput::new(
            "",
            "",
            vec![
                ("f".into(), "{\"a\": 5.0}".into()),
                ("g".into(), "not json".into()),
                ("h".into(), "\"{\\\"x\\\": 1}\"".into()),
            ],
        );
        assert_eq!(
            show(&out.extract().unwrap()),
            "'f':{'a': 5.0} | 'g':'not json' | 'h':'{\"x\": 1}'"
        );
        assert!(out.has_native_tool_calls());
        let text = ModelOutput::new("b(x=1)", "a ", vec![]);
        assert_eq!(show(&text.extract().unwrap()), "'b':{'x': 1}");
        assert_eq!(text.text_parts(), Some(("a ", "b(x=1)")));
        assert_eq!(out.text_parts(), None);
    }

    #[test]
    fn whole_text_calls() {
        for yes in [
            "lookup(query='x')",
            " [spotify.play(artist='X', duration=20), f()]\n",
            "[a.b_1(x=\")\"), c()]",
            "f(1, 2)",
        ] {
            assert!(only_calls(yes), "{yes}");
        }
        for no in [
            "",
            "[]",
            "The answer (as computed) is unknown.",
            "Sorry (no function fits).",
            "f (a=1)",
            "f(a=1) and g(b=2)",
            "f(a=1",
            "[f(a=1)",
            "1f(a=1)",
            "f(a=1),",
            "I cannot help with that.",
        ] {
            assert!(!only_calls(no), "{no}");
        }
    }

    #[test]
    fn unserializable_values_raise() {
        assert_eq!(extract_text("f(a=1j)").unwrap_err().kind, "TypeError");
    }
}
