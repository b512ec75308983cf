//! Assembles a completion from streamed Chat Completions chunks (or from one
//! non-streamed response): text deltas concatenated, tool calls merged by
//! `index`, and the server's `usage`, llama.cpp `timings` and simulator
//! timestamps kept as sent.
//!
//! A tool call's `id` and `function.name` are set, not concatenated: a server
//! that repeats them in later deltas of the same call (some do, with every
//! argument piece) gives the call once; a later non-empty value that differs
//! replaces the earlier one, as the reference (`merge_tool_calls`) takes them.
//! Only `arguments` pieces are appended.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// One tool call as assembled from its deltas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What the first token-bearing chunk carried (the reference's TPOT
/// denominator counts only what came after it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FirstChunk {
    pub content_bytes: usize,
    pub reasoning_bytes: usize,
    pub tool_call: bool,
}

/// The assembled answer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Assembled {
    pub content: String,
    pub reasoning_content: String,
    pub tool_calls: Vec<ToolCallRecord>,
    pub finish_reason: Option<String>,
    /// The server's `usage` object, verbatim.
    pub usage: Option<Value>,
    /// llama.cpp's `timings` object, verbatim.
    pub timings: Option<Value>,
    /// The embedded simulator's server-side timestamps, verbatim.
    pub server_timestamps: Option<Value>,
    pub first_chunk: Option<FirstChunk>,
    /// An `error` object sent inside the stream.
    pub stream_error: Option<String>,
}

/// An object kept from a chunk: its raw text (typed path) or its value.
#[derive(Debug)]
enum Extra {
    Raw(String),
    Parsed(Value),
}

impl Extra {
    fn into_value(self) -> Option<Value> {
        match self {
            // Raw text a successful parse of its chunk validated.
            Self::Raw(text) => serde_json::from_str(&text).ok(),
            Self::Parsed(value) => Some(value),
        }
    }
}

/// A `data:` payload that is not JSON (the parser's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotJson(pub String);

/// Which chunk stops the TTFT clock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FirstToken {
    /// The reference's: non-empty `content`, else non-empty
    /// `reasoning_content`/`reasoning`, else any delta carrying `tool_calls`
    /// (even one with nothing in its strings).
    #[default]
    Reference,
    /// The Endpoints Rules' reading: the first fragment with `len(s) > 0` in
    /// any category, so a tool-call delta counts only when its function name
    /// or arguments carry text (datacenter spec §8 row 10).
    Rules,
}

/// Accumulates chunks into an [`Assembled`].
#[derive(Debug, Default)]
pub struct CompletionAssembler {
    /// What bears a token.
    first_token: FirstToken,
    out: Assembled,
    /// The last non-null `usage`, `timings` and simulator stamps, as sent;
    /// parsed into `out` by [`finish`](Self::finish).
    extras: [Option<Extra>; 3],
    calls: BTreeMap<u64, ToolCallRecord>,
    /// Chunks with a `choices` array.
    chunks: u32,
}

impl CompletionAssembler {
    /// An assembler whose chunks bear a token as `first_token` says.
    pub fn new(first_token: FirstToken) -> Self {
        Self {
            first_token,
            ..Self::default()
        }
    }

    /// Adds one `data:` payload; returns whether it carried a token (non-empty
    /// content or reasoning, or a tool-call delta as [`FirstToken`] reads
    /// it). Role-only and usage-only chunks do not.
    ///
    /// # Errors
    /// When the payload is not JSON (nothing of it is kept).
    pub fn push_chunk(&mut self, data: &str) -> Result<bool, NotJson> {
        // The typed view skips the fields nobody reads without building them
        // (no map per object). A chunk it does not fit (a field of another
        // type, a duplicate key, or not JSON at all) takes the general path,
        // which reads any shape as before and names a parse error.
        match serde_json::from_str::<typed::Chunk<'_>>(data) {
            Ok(chunk) => {
                for (kept, raw) in self.extras.iter_mut().zip(chunk.extras()) {
                    if let Some(raw) = raw.filter(|r| r.get() != "null") {
                        *kept = Some(Extra::Raw(raw.get().to_owned()));
                    }
                }
                if let Some(e) = chunk.error() {
                    self.keep_error(e);
                }
                Ok(self.take(chunk.view()))
            }
            Err(_) => self.push_value_chunk(data),
        }
    }

    /// [`push_chunk`](Self::push_chunk) through a JSON value: any shape.
    fn push_value_chunk(&mut self, data: &str) -> Result<bool, NotJson> {
        let chunk = serde_json::from_str::<Value>(data).map_err(|e| NotJson(e.to_string()))?;
        let view = ChunkView::of(&chunk);
        self.keep_extras(&view);
        Ok(self.take(view))
    }

    fn take(&mut self, chunk: ChunkView<'_>) -> bool {
        if chunk.has_choices {
            self.chunks += 1;
        }
        let Some(choice) = chunk.first_choice else {
            return false;
        };
        if let Some(reason) = choice.finish_reason {
            self.out.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.delta else {
            return false;
        };
        let has_call = delta
            .tool_calls
            .is_some_and(|calls| match self.first_token {
                FirstToken::Reference => !calls.is_empty(),
                FirstToken::Rules => calls.iter().any(call_has_text),
            });
        let bearing = !delta.content.is_empty() || !delta.reasoning.is_empty() || has_call;
        if bearing && self.out.first_chunk.is_none() {
            self.out.first_chunk = Some(FirstChunk {
                content_bytes: delta.content.len(),
                reasoning_bytes: delta.reasoning.len(),
                tool_call: has_call,
            });
        }
        self.out.content.push_str(delta.content);
        self.out.reasoning_content.push_str(delta.reasoning);
        for call in delta.tool_calls.into_iter().flatten() {
            self.merge_call(call);
        }
        bearing
    }

    /// Completion chunks (JSON objects with a `choices` array) taken so far.
    pub fn chunks(&self) -> u32 {
        self.chunks
    }

    /// The message of an `error` object the stream carried, if any.
    pub fn stream_error(&self) -> Option<&str> {
        self.out.stream_error.as_deref()
    }

    /// Takes a whole non-streamed `chat.completion` response.
    pub fn push_response(&mut self, body: &Value) {
        self.keep_extras(&ChunkView::of(body));
        let Some(choice) = body.get("choices").and_then(|c| c.get(0)) else {
            return;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.out.finish_reason = Some(reason.to_string());
        }
        if let Some(message) = choice.get("message") {
            self.out.content = text(message, &["content"]).to_string();
            self.out.reasoning_content =
                text(message, &["reasoning_content", "reasoning"]).to_string();
            let calls = message.get("tool_calls").and_then(Value::as_array);
            // Only objects are tool calls (a server may send anything).
            let calls = calls.into_iter().flatten().filter(|c| c.is_object());
            for (i, call) in calls.enumerate() {
                let mut call = call.clone();
                if call.get("index").is_none() {
                    call["index"] = Value::from(i);
                }
                self.merge_call(&call);
            }
        }
    }

    /// The assembled answer.
    pub fn finish(mut self) -> Assembled {
        self.out.tool_calls = self.calls.into_values().collect();
        let [usage, timings, stamps] = self.extras.map(|e| e.and_then(Extra::into_value));
        self.out.usage = usage;
        self.out.timings = timings;
        self.out.server_timestamps = stamps;
        self.out
    }

    /// Keeps a chunk's extras read as JSON values (the general path).
    fn keep_extras(&mut self, chunk: &ChunkView<'_>) {
        let present = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
        let found = [chunk.usage, chunk.timings, chunk.server_timestamps];
        for (kept, value) in self.extras.iter_mut().zip(found) {
            if let Some(v) = present(value) {
                *kept = Some(Extra::Parsed(v));
            }
        }
        if let Some(e) = chunk.error {
            self.keep_error(e);
        }
    }

    /// An `error` object inside the stream (null is none).
    fn keep_error(&mut self, e: &Value) {
        if e.is_null() {
            return;
        }
        let message = e.get("message").and_then(Value::as_str);
        self.out.stream_error = Some(message.map_or_else(|| e.to_string(), str::to_string));
    }

    fn merge_call(&mut self, delta: &Value) {
        let index = delta.get("index").and_then(Value::as_u64).unwrap_or(0);
        let call = self.calls.entry(index).or_default();
        if let Some(id) = delta
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            id.clone_into(&mut call.id);
        }
        if let Some(f) = delta.get("function") {
            if let Some(name) = f
                .get("name")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                name.clone_into(&mut call.name);
            }
            match f.get("arguments") {
                Some(Value::String(s)) => call.arguments.push_str(s),
                Some(Value::Null) | None => {}
                Some(other) => call.arguments.push_str(&other.to_string()),
            }
        }
    }
}

/// Whether a tool-call delta carries text: a non-empty function name or
/// arguments.
fn call_has_text(call: &Value) -> bool {
    let f = &call["function"];
    let text = |v: &Value| match v {
        Value::String(s) => !s.is_empty(),
        Value::Null => false,
        _ => true,
    };
    text(&f["name"]) || text(&f["arguments"])
}

/// What a chunk says, whichever way it was parsed.
struct ChunkView<'a> {
    /// `choices` is an array.
    has_choices: bool,
    first_choice: Option<ChoiceView<'a>>,
    usage: Option<&'a Value>,
    timings: Option<&'a Value>,
    server_timestamps: Option<&'a Value>,
    error: Option<&'a Value>,
}

/// The first choice: its finish reason (when a string) and delta (when present).
struct ChoiceView<'a> {
    finish_reason: Option<&'a str>,
    delta: Option<DeltaView<'a>>,
}

/// A delta's text (empty when absent, empty or not a string) and tool calls
/// (when an array).
struct DeltaView<'a> {
    content: &'a str,
    reasoning: &'a str,
    tool_calls: Option<&'a [Value]>,
}

impl<'a> ChunkView<'a> {
    /// The view of any JSON value.
    fn of(chunk: &'a Value) -> Self {
        let choices = chunk.get("choices");
        let first_choice = choices.and_then(|c| c.get(0)).map(|choice| ChoiceView {
            finish_reason: choice.get("finish_reason").and_then(Value::as_str),
            delta: choice.get("delta").map(|delta| DeltaView {
                content: text(delta, &["content"]),
                reasoning: text(delta, &["reasoning_content", "reasoning"]),
                tool_calls: delta
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .map(Vec::as_slice),
            }),
        });
        Self {
            has_choices: choices.is_some_and(Value::is_array),
            first_choice,
            usage: chunk.get("usage"),
            timings: chunk.get("timings"),
            server_timestamps: chunk.get("agentload_sim"),
            error: chunk.get("error"),
        }
    }
}

/// The typed view of a chunk: the fields the assembler reads, borrowed
/// where they need no unescaping; every other field skipped unread.
mod typed {
    use super::{ChoiceView, ChunkView, DeltaView};
    use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
    use serde::Deserialize;
    use serde_json::value::RawValue;
    use serde_json::Value;
    use std::borrow::Cow;
    use std::fmt;
    use std::marker::PhantomData;

    #[derive(Deserialize)]
    pub(super) struct Chunk<'a> {
        #[serde(borrow)]
        choices: Option<First<Choice<'a>>>,
        #[serde(borrow)]
        usage: Option<&'a RawValue>,
        #[serde(borrow)]
        timings: Option<&'a RawValue>,
        #[serde(borrow)]
        agentload_sim: Option<&'a RawValue>,
        error: Option<Value>,
    }

    #[derive(Deserialize)]
    struct Choice<'a> {
        #[serde(borrow)]
        finish_reason: Option<Text<'a>>,
        #[serde(borrow)]
        delta: Option<Delta<'a>>,
    }

    #[derive(Deserialize)]
    struct Delta<'a> {
        #[serde(borrow)]
        content: Option<Text<'a>>,
        #[serde(borrow)]
        reasoning_content: Option<Text<'a>>,
        #[serde(borrow)]
        reasoning: Option<Text<'a>>,
        tool_calls: Option<Vec<Value>>,
    }

    /// An array's first element (the others skipped unread): the assembler reads only the
    /// first choice, and keeps no `Vec` of them.
    struct First<T>(Option<T>);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Seq<T>(PhantomData<T>);
            impl<'de, T: Deserialize<'de>> Visitor<'de> for Seq<T> {
                type Value = First<T>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("an array")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<First<T>, A::Error> {
                    let first = seq.next_element()?;
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    Ok(First(first))
                }
            }
            d.deserialize_seq(Seq(PhantomData))
        }
    }

    /// A string borrowed from the chunk when it has no escapes (serde's own `Cow` inside an
    /// `Option` always copies).
    struct Text<'a>(Cow<'a, str>);

    impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Str;
            impl<'de> Visitor<'de> for Str {
                type Value = Text<'de>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a string")
                }
                fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                    Ok(Text(Cow::Borrowed(s)))
                }
                fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                    Ok(Text(Cow::Owned(s.to_owned())))
                }
                fn visit_string<E: de::Error>(self, s: String) -> Result<Text<'de>, E> {
                    Ok(Text(Cow::Owned(s)))
                }
            }
            d.deserialize_str(Str)
        }
    }

    /// A text field: `None` when absent, null or empty.
    fn nonempty<'s>(s: &'s Option<Text<'_>>) -> Option<&'s str> {
        s.as_ref().map(|t| &*t.0).filter(|s| !s.is_empty())
    }

    impl<'a> Chunk<'a> {
        /// `usage`, `timings` and the simulator's stamps, as sent.
        pub(super) fn extras(&self) -> [Option<&'a RawValue>; 3] {
            [self.usage, self.timings, self.agentload_sim]
        }

        /// The `error` object, when there is one.
        pub(super) fn error(&self) -> Option<&Value> {
            self.error.as_ref()
        }

        pub(super) fn view(&self) -> ChunkView<'_> {
            let first_choice = self
                .choices
                .as_ref()
                .and_then(|c| c.0.as_ref())
                .map(|choice| ChoiceView {
                    finish_reason: choice.finish_reason.as_ref().map(|t| &*t.0),
                    // `"delta": null` reads as no delta: both views then add nothing.
                    delta: choice.delta.as_ref().map(|d| DeltaView {
                        content: nonempty(&d.content).unwrap_or(""),
                        reasoning: nonempty(&d.reasoning_content)
                            .or(nonempty(&d.reasoning))
                            .unwrap_or(""),
                        tool_calls: d.tool_calls.as_deref(),
                    }),
                });
            ChunkView {
                has_choices: self.choices.is_some(),
                first_choice,
                usage: None,
                timings: None,
                server_timestamps: None,
                error: None,
            }
        }
    }
}

fn text<'a>(v: &'a Value, keys: &[&str]) -> &'a str {
    keys.iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str).filter(|s| !s.is_empty()))
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extras_kept_raw_equal_those_read_as_values_and_the_last_non_null_wins() {
        let chunks = [
            r#"{"choices":[{"delta":{"content":"a"}}],"usage":null,"timings":{"n":1,"f":0.1},"agentload_sim":{"first_token_ns":5}}"#,
            r#"{"choices":[{"delta":{"content":"b"}}],"timings":{"n":2,"f":1e-7}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2},"timings":null}"#,
        ];
        let (mut typed, mut general) = (
            CompletionAssembler::default(),
            CompletionAssembler::default(),
        );
        for c in chunks {
            typed.push_chunk(c).unwrap();
            general.push_value_chunk(c).unwrap();
        }
        let (t, g) = (typed.finish(), general.finish());
        assert_eq!(t.usage, g.usage);
        assert_eq!(t.timings, g.timings);
        assert_eq!(t.server_timestamps, g.server_timestamps);
        assert_eq!(t.usage.unwrap()["completion_tokens"], 2);
        assert_eq!(
            t.timings.unwrap()["n"],
            2,
            "null does not replace a kept object"
        );
        assert_eq!(t.server_timestamps.unwrap()["first_token_ns"], 5);
        assert_eq!(t.content, "ab");
    }

    /// The typed view and the general one agree chunk for chunk, on the
    /// shapes servers send and on the odd ones the typed view refuses.
    #[test]
    fn both_views_assemble_the_same_answer() {
        let chunks = [
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1,"id":"x","model":"m","object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"He"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"l\u00e9 \"q\""}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"","reasoning":"why"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":7,"reasoning":"odd"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"bash","arguments":"{\"a\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":{"not":"an array"}}}]}"#,
            r#"{"choices":[{"index":0,"delta":"text"}]}"#,
            r#"{"choices":[{"index":0,"delta":null}]}"#,
            r#"{"choices":[{"index":0},"second"]}"#,
            r#"{"choices":{"0":{}}}"#,
            r#"{"choices":null,"usage":null}"#,
            r#"{"choices":[{"finish_reason":5,"delta":{"content":"x"}}]}"#,
            r#"{"choices":[{"delta":{"content":"a"}}],"choices":[{"delta":{"content":"b"}}]}"#,
            r#"{"choices":[{"finish_reason":"stop","index":0,"delta":{}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2},"timings":{"n":1},"agentload_sim":{"first_token_ns":1}}"#,
            r#"{"error":{"message":"boom"}}"#,
            r#"{"error":"plain"}"#,
            "not json",
        ];
        let (mut both, mut general) = (
            CompletionAssembler::default(),
            CompletionAssembler::default(),
        );
        for c in chunks {
            assert_eq!(both.push_chunk(c), general.push_value_chunk(c), "{c}");
            assert_eq!(both.chunks(), general.chunks(), "{c}");
        }
        let json = |a: CompletionAssembler| serde_json::to_string(&a.finish()).unwrap();
        assert_eq!(json(both), json(general));
    }

    /// What a streaming server sends fits the typed view (it is not a
    /// path that always falls back).
    #[test]
    fn server_chunks_fit_the_typed_view() {
        for c in [
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1,"id":"x","model":"m","system_fingerprint":"b1","object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi"}}],"created":1,"id":"x","model":"m","object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"finish_reason":"tool_calls","index":0,"delta":{}}],"created":1,"id":"x","model":"m","object":"chat.completion.chunk","timings":{"prompt_n":3}}"#,
            r#"{"choices":[],"created":1,"id":"x","model":"m","object":"chat.completion.chunk","usage":{"completion_tokens":1,"prompt_tokens":2,"total_tokens":3}}"#,
        ] {
            assert!(serde_json::from_str::<typed::Chunk<'_>>(c).is_ok(), "{c}");
        }
    }

    /// The typed view copies nothing it reads: text without escapes is borrowed from the
    /// chunk, and only the first choice is read (a second one of any shape is skipped).
    #[test]
    fn the_typed_view_borrows_its_text_and_reads_one_choice() {
        let c = r#"{"choices":[{"finish_reason":"stop","delta":{"content":"plain"}},"second",7]}"#;
        let chunk = serde_json::from_str::<typed::Chunk<'_>>(c).unwrap();
        let choice = chunk.view().first_choice.unwrap();
        let inside = |s: &str| c.as_bytes().as_ptr_range().contains(&s.as_ptr());
        assert!(inside(choice.delta.unwrap().content));
        assert!(inside(choice.finish_reason.unwrap()));
        let escaped = r#"{"choices":[{"delta":{"content":"a\nb"}}]}"#;
        let chunk = serde_json::from_str::<typed::Chunk<'_>>(escaped).unwrap();
        assert_eq!(
            chunk.view().first_choice.unwrap().delta.unwrap().content,
            "a\nb"
        );
    }

    #[test]
    fn role_only_and_usage_chunks_bear_no_token() {
        let mut a = CompletionAssembler::default();
        let mut push = |c: &str| a.push_chunk(c).unwrap();
        assert!(!push(
            r#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#
        ));
        assert!(!push(
            r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#
        ));
        assert!(!push(
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#
        ));
        assert!(push(
            r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#
        ));
        assert!(push(
            r#"{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}"#
        ));
        assert!(!push(r#"{"id":"x"}"#), "no choices: not a completion chunk");
        assert_eq!(a.chunks(), 5);
        let out = a.finish();
        assert_eq!(out.content, "ok");
        assert_eq!(out.reasoning_content, "hm");
        assert_eq!(out.usage.unwrap()["completion_tokens"], 2);
        assert_eq!(out.finish_reason.as_deref(), Some("stop"));
        assert_eq!(out.first_chunk.unwrap().reasoning_bytes, 2);
    }

    /// A tool-call delta with nothing in its strings bears the reference's
    /// first token, not the rules' (which wait for a name or arguments);
    /// content bears both.
    #[test]
    fn the_first_token_trigger() {
        let empty_call = r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"","arguments":""}}]}}]}"#;
        let named =
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"name":"bash"}}]}}]}"#;
        let text = r#"{"choices":[{"delta":{"content":"x"}}]}"#;
        let bears = |trigger, chunk: &str| {
            let mut a = CompletionAssembler::new(trigger);
            a.push_chunk(chunk).unwrap()
        };
        assert!(bears(FirstToken::Reference, empty_call));
        assert!(!bears(FirstToken::Rules, empty_call));
        assert!(bears(FirstToken::Rules, named));
        assert!(bears(FirstToken::Rules, text) && bears(FirstToken::Reference, text));
        let mut rules = CompletionAssembler::new(FirstToken::Rules);
        assert!(!rules.push_chunk(empty_call).unwrap());
        assert!(rules.push_chunk(named).unwrap());
        let first = rules.finish().first_chunk.unwrap();
        assert!(first.tool_call, "{first:?}");
    }

    #[test]
    fn tool_calls_merge_by_index() {
        let mut a = CompletionAssembler::default();
        let chunks = [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"bash","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c1","type":"function","function":{"name":"ls","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"ls\"}"}}]}}]}"#,
        ];
        for c in chunks {
            assert!(a.push_chunk(c).unwrap());
        }
        let out = a.finish();
        assert_eq!(out.tool_calls.len(), 2);
        assert_eq!(out.tool_calls[0].arguments, r#"{"command": "ls"}"#);
        assert_eq!(out.tool_calls[1].name, "ls");
        assert!(out.first_chunk.unwrap().tool_call);
    }

    #[test]
    fn repeated_ids_and_names_are_set_not_concatenated() {
        let mut a = CompletionAssembler::default();
        let chunks = [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"bash","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"bash","arguments":"{\"a\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"","function":{"name":"","arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c1","function":{"name":"ls"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c1b","function":{"name":"ls2","arguments":"{}"}}]}}]}"#,
        ];
        for c in chunks {
            a.push_chunk(c).unwrap();
        }
        let out = a.finish();
        let calls: Vec<(&str, &str, &str)> = out
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        // Empty repeats are ignored; a differing later value replaces (the reference's rule).
        assert_eq!(
            calls,
            vec![("c0", "bash", r#"{"a":1}"#), ("c1b", "ls2", "{}")]
        );
    }

    #[test]
    fn non_json_is_an_error_and_error_objects_are_kept() {
        let mut a = CompletionAssembler::default();
        let err = a.push_chunk("{not json").unwrap_err();
        assert!(err.0.contains("key must be a string"), "{err}");
        assert!(a.push_chunk("hello").is_err());
        assert_eq!(a.chunks(), 0);
        a.push_chunk(r#"{"error":{"message":"boom","code":500}}"#)
            .unwrap();
        assert_eq!(a.stream_error(), Some("boom"));
        a.push_chunk(r#"{"error":{"code":7}}"#).unwrap();
        assert_eq!(a.stream_error(), Some(r#"{"code":7}"#));
    }

    #[test]
    fn tool_calls_that_are_not_objects_are_skipped() {
        // Found by the `assemble-response` fuzz target: this panicked.
        let mut a = CompletionAssembler::default();
        a.push_response(&serde_json::json!({
            "choices": [{"message": {"tool_calls": [[], 3, {"function": {"name": "f"}}]}}]
        }));
        let out = a.finish();
        assert_eq!(out.tool_calls.len(), 1);
        assert_eq!(out.tool_calls[0].name, "f");
    }

    #[test]
    fn non_streamed_response() {
        let mut a = CompletionAssembler::default();
        a.push_response(&serde_json::json!({
            "choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}
        }));
        let out = a.finish();
        assert_eq!(out.tool_calls[0].name, "f");
        assert_eq!(out.content, "");
        assert_eq!(out.finish_reason.as_deref(), Some("tool_calls"));
    }
}
