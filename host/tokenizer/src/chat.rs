//! Chat templates: a model's own Jinja template, rendered as Hugging Face
//! `transformers` renders it in `apply_chat_template`, with minijinja.
//!
//! The environment is the one `transformers` builds (a sandboxed Jinja2
//! environment with `trim_blocks` and `lstrip_blocks`), with its additions:
//! `raise_exception(message)` fails the render with that message, `tojson`
//! is Python's `json.dumps` with `ensure_ascii=False` (`", "` and `": "`
//! separators, input key order kept), and Python's string methods
//! (`startswith`, `split`, `rstrip('\n')`, ...) are available. `trim` and
//! argument-less `strip`/`lstrip`/`rstrip` are Python's `str.strip()`
//! family, whose whitespace set is not Rust's.
//!
//! Before rendering, as the MLPerf endpoints reference does, each
//! `tool_calls[].function.arguments` JSON string that parses to an object is
//! replaced by that object (templates iterate the arguments as a mapping).
//!
//! The built-in template is Qwen3.6's ([`QWEN3_6_TEMPLATE`]); a model config
//! can name another template file ([`ChatTemplate::new`]).

use crate::TokenizerError;
use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Kwargs, Serde, Value as Jinja};
use minijinja::{Environment, Error, ErrorKind, State};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// `chat_template.jinja` of `Qwen/Qwen3.6-27B` on the Hugging Face hub,
/// byte for byte (7,764 bytes, sha256 [`QWEN3_6_TEMPLATE_SHA256`]).
pub const QWEN3_6_TEMPLATE: &str = include_str!("../templates/qwen3.6-27b.jinja");

/// sha256 of [`QWEN3_6_TEMPLATE`], as the fixtures record it.
pub const QWEN3_6_TEMPLATE_SHA256: &str =
    "e84f32a23fdda27689f868aa4a1a5621f41133e51a48d7f3efcbea2839574259";

/// The name the template is registered under in its environment.
const NAME: &str = "chat_template";

/// Template variables besides the messages and tools.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatOptions {
    /// `add_generation_prompt`: append the assistant turn header the model
    /// continues from (the ISL render).
    pub add_generation_prompt: bool,
    /// Further template variables (`chat_template_kwargs`), e.g.
    /// `enable_thinking` or `preserve_thinking`. Unset variables are
    /// undefined in the template, as when `transformers` is not given them.
    pub kwargs: Map<String, Value>,
}

impl Default for ChatOptions {
    /// The reference's ISL render: generation prompt, no template variables.
    fn default() -> Self {
        ChatOptions {
            add_generation_prompt: true,
            kwargs: Map::new(),
        }
    }
}

impl ChatOptions {
    /// No generation prompt, no variables (the reference's OSL render).
    pub fn no_generation_prompt() -> Self {
        ChatOptions {
            add_generation_prompt: false,
            kwargs: Map::new(),
        }
    }

    /// The same options with the template variable `key` set to `value`.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.kwargs.insert(key.to_string(), value.into());
        self
    }
}

/// A compiled chat template.
pub struct ChatTemplate {
    env: Environment<'static>,
    sha256: String,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("sha256", &self.sha256)
            .finish()
    }
}

impl ChatTemplate {
    /// Compiles a template's source; a syntax error names the line.
    pub fn new(source: impl Into<String>) -> Result<Self, TokenizerError> {
        let source = source.into();
        let sha256 = Sha256::digest(source.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut env = Environment::new();
        env.set_syntax(
            SyntaxConfig::builder()
                .trim_blocks(true)
                .lstrip_blocks(true)
                .keep_trailing_newline(false)
                .build()
                .expect("the default delimiters are valid"),
        );
        env.add_function("raise_exception", raise_exception);
        env.add_filter("tojson", tojson);
        env.add_filter("trim", trim);
        env.set_unknown_method_callback(python_method);
        env.add_template_owned(NAME, source)
            .map_err(|e| TokenizerError::Template(describe(&e)))?;
        Ok(ChatTemplate { env, sha256 })
    }

    /// The built-in Qwen3.6 template.
    pub fn qwen3_6() -> Self {
        Self::new(QWEN3_6_TEMPLATE).expect("the built-in template compiles")
    }

    /// sha256 of the template source (hex).
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Renders OpenAI-format `messages` (and `tools`, if any) into the prompt
    /// text the server tokenizes. Fails where the template raises or cannot
    /// render the input.
    pub fn render(
        &self,
        messages: &[Value],
        tools: Option<&[Value]>,
        opts: &ChatOptions,
    ) -> Result<String, TokenizerError> {
        let template = self
            .env
            .get_template(NAME)
            .map_err(|e| TokenizerError::Template(describe(&e)))?;
        let mut context = opts.kwargs.clone();
        context.insert("messages".into(), Value::Array(parse_arguments(messages)));
        // `transformers` passes `tools=None` when there are none.
        context.insert(
            "tools".into(),
            tools.map_or(Value::Null, |t| Value::Array(t.to_vec())),
        );
        context.insert(
            "add_generation_prompt".into(),
            opts.add_generation_prompt.into(),
        );
        template
            .render(Jinja::from(Serde(&context)))
            .map_err(|e| TokenizerError::Template(describe(&e)))
    }
}

/// Renders with the built-in Qwen3.6 template (see [`ChatTemplate::render`]).
pub fn render_chat(
    messages: &[Value],
    tools: Option<&[Value]>,
    opts: &ChatOptions,
) -> Result<String, TokenizerError> {
    static QWEN: std::sync::OnceLock<ChatTemplate> = std::sync::OnceLock::new();
    QWEN.get_or_init(ChatTemplate::qwen3_6)
        .render(messages, tools, opts)
}

/// The messages with each `tool_calls[].function.arguments` JSON string that
/// parses to an object replaced by the object.
fn parse_arguments(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .map(|message| {
            let Some(calls) = message.get("tool_calls").and_then(Value::as_array) else {
                return message.clone();
            };
            let calls: Vec<Value> = calls
                .iter()
                .map(|call| {
                    let parsed = call
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .and_then(|s| serde_json::from_str::<Value>(s).ok())
                        .filter(Value::is_object);
                    match parsed {
                        Some(arguments) => {
                            let mut call = call.clone();
                            call["function"]["arguments"] = arguments;
                            call
                        }
                        None => call.clone(),
                    }
                })
                .collect();
            let mut message = message.clone();
            message["tool_calls"] = Value::Array(calls);
            message
        })
        .collect()
}

/// An error with its cause chain (minijinja puts the template line in the
/// detail).
fn describe(e: &Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

fn raise_exception(message: String) -> Result<Jinja, Error> {
    Err(Error::new(ErrorKind::InvalidOperation, message))
}

/// `transformers`' `tojson`: `json.dumps(x, ensure_ascii=False)`; the
/// `ensure_ascii` keyword is honoured, the layout keywords are refused.
fn tojson(value: Jinja, kwargs: Kwargs) -> Result<Jinja, Error> {
    let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    kwargs.assert_all_used().map_err(|e| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("tojson supports only ensure_ascii here ({e})"),
        )
    })?;
    let json = serde_json::to_value(&value).map_err(|e| {
        Error::new(
            ErrorKind::InvalidOperation,
            format!("tojson: not JSON-serialisable: {e}"),
        )
    })?;
    Ok(Jinja::from_safe_string(pysem::json::dumps(
        &json,
        ensure_ascii.unwrap_or(false),
    )))
}

/// Jinja2's `trim`: Python's `str.strip(chars)`.
fn trim(value: String, chars: Option<String>) -> String {
    match chars {
        Some(chars) => value.trim_matches(|c| chars.contains(c)).to_string(),
        None => pysem::chars::strip(&value).to_string(),
    }
}

/// Python string methods: `strip`, `lstrip` and `rstrip` without arguments
/// strip Python's whitespace; everything else is minijinja-contrib's
/// Python compatibility layer.
fn python_method(
    state: &mut State,
    value: &Jinja,
    method: &str,
    args: &[Jinja],
) -> Result<Jinja, Error> {
    if let (Some(s), true) = (value.as_str(), args.is_empty()) {
        let stripped = match method {
            "strip" => Some(pysem::chars::strip(s)),
            "lstrip" => Some(s.trim_start_matches(pysem::chars::is_space)),
            "rstrip" => Some(s.trim_end_matches(pysem::chars::is_space)),
            _ => None,
        };
        if let Some(stripped) = stripped {
            return Ok(Jinja::from(stripped));
        }
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
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
    fn built_in_template_is_the_pinned_file() {
        assert_eq!(QWEN3_6_TEMPLATE.len(), 7_764);
        assert_eq!(ChatTemplate::qwen3_6().sha256(), QWEN3_6_TEMPLATE_SHA256);
    }

    #[test]
    fn plain_chat_with_generation_prompt() {
        let off = ChatOptions::default().with("enable_thinking", false);
        let text = render(
            json!([{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi\n"}]),
            None,
            off,
        );
        assert_eq!(
            text,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
        );
        // No variables: `enable_thinking` is undefined and the prompt opens
        // the think block, as `transformers` renders it.
        let text = render(
            json!([{"role": "user", "content": "Hi"}]),
            None,
            ChatOptions::default(),
        );
        assert_eq!(
            text,
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n"
        );
    }

    #[test]
    fn tool_call_arguments_strings_are_parsed() {
        let messages = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls\", \"n\": 2, \"z\": 0.5}"}}
            ]}
        ]);
        let text = render(messages, None, ChatOptions::no_generation_prompt());
        assert!(
            text.ends_with(
                "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n<parameter=n>\n2\n</parameter>\n<parameter=z>\n0.5\n</parameter>\n</function>\n</tool_call><|im_end|>\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn tojson_is_python_json_dumps() {
        let t = ChatTemplate::new("{{ x | tojson }}|{{ x | tojson(ensure_ascii=true) }}").unwrap();
        let opts = ChatOptions::default()
            .with("x", json!({"b": "Zürich \"q\"", "a": [1, 2.0, null, true]}));
        let text = t.render(&[], None, &opts).unwrap();
        assert_eq!(
            text,
            r#"{"b": "Zürich \"q\"", "a": [1, 2.0, null, true]}|{"b": "Z\u00fcrich \"q\"", "a": [1, 2.0, null, true]}"#
        );
        let err = ChatTemplate::new("{{ x | tojson(indent=2) }}")
            .unwrap()
            .render(&[], None, &opts)
            .unwrap_err()
            .to_string();
        assert!(err.contains("ensure_ascii"), "{err}");
    }

    #[test]
    fn strip_and_trim_are_python_strip() {
        let t = ChatTemplate::new(
            "[{{ s | trim }}][{{ s.strip() }}][{{ s.lstrip() }}][{{ s.rstrip('\\n') }}][{{ z | trim }}]",
        )
        .unwrap();
        let opts = ChatOptions::default()
            .with("s", "\u{1f}\u{3000} a b\u{85}\n")
            .with("z", "\u{200b}a");
        assert_eq!(
            t.render(&[], None, &opts).unwrap(),
            "[a b][a b][a b\u{85}\n][\u{1f}\u{3000} a b\u{85}][\u{200b}a]"
        );
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
        // Unparseable arguments stay a string, which the template cannot
        // iterate as a mapping (the reference then falls back).
        err(
            json!([{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [
            {"function": {"name": "f", "arguments": "{not json"}}]}]),
        );
        let syntax = ChatTemplate::new("line one\n{% if %}")
            .unwrap_err()
            .to_string();
        assert!(syntax.contains("chat_template:2"), "{syntax}");
    }
}
