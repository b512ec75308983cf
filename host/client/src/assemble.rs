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

mod scan;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
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
    /// The completion's `id` (the first non-empty one its chunks carried): a reused
    /// connection's answer whose id repeats an earlier one there is not this request's.
    #[serde(skip)]
    pub id: Option<String>,
    pub content: String,
    pub reasoning_content: String,
    pub tool_calls: Vec<ToolCallRecord>,
    pub finish_reason: Option<String>,
    /// The server's `usage` object, verbatim (its text as sent).
    pub usage: Option<Box<RawValue>>,
    /// llama.cpp's `timings` object, verbatim.
    pub timings: Option<Box<RawValue>>,
    /// The embedded simulator's server-side timestamps, verbatim.
    pub server_timestamps: Option<Box<RawValue>>,
    pub first_chunk: Option<FirstChunk>,
    /// An `error` object sent inside the stream.
    pub stream_error: Option<String>,
    /// A stream's `data:` events that were JSON (not `[DONE]`): AA's
    /// `response_chunks`.
    pub data_events: u32,
    /// The `index` of each tool call, in the order of `tool_calls`.
    #[serde(skip)]
    pub tool_call_indices: Vec<u64>,
    /// A tool-call delta had no plain unsigned integer `index` (absent, null,
    /// or a whole float: its call was merged as the index says, 0 when
    /// absent): agentperf-local's transport check fails such an answer.
    #[serde(skip)]
    pub tool_call_index_missing: bool,
}

/// An object kept from a chunk: its raw text (scanned) or its value.
#[derive(Debug)]
enum Extra {
    Raw(String),
    Parsed(Value),
}

impl Extra {
    /// Kept as text: a map of each object, built for every answer, cost more than the rest
    /// of a short answer's parse (docs/performance.md).
    fn into_raw(self) -> Option<Box<RawValue>> {
        match self {
            // Raw text the scan of its chunk checked.
            Self::Raw(text) => RawValue::from_string(text).ok(),
            Self::Parsed(value) => serde_json::value::to_raw_value(&value).ok(),
        }
    }
}

/// Why a `data:` payload (or a whole answer) cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadChunk {
    /// Not JSON (the parser's message).
    #[error("{0}")]
    NotJson(String),
    /// A tool call's `index` is there but not a call's index (an unsigned integer): taken as
    /// 0 it would merge the call into another one.
    #[error(
        "`tool_calls[{position}].index` is `{value}`, not a call's index (an unsigned integer)"
    )]
    BadIndex { position: usize, value: String },
}

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
    /// When the payload is not JSON, or a tool call's `index` is not an unsigned integer
    /// (nothing of it is kept).
    pub fn push_chunk(&mut self, data: &str) -> Result<bool, BadChunk> {
        // The scanner reads the usual shapes in one pass, building nothing for
        // the fields nobody reads. A chunk it does not read (another shape,
        // or not JSON at all) takes the general path, which reads any shape
        // and names a parse error.
        match scan::chunk(data) {
            Some(chunk) => {
                for (kept, raw) in self.extras.iter_mut().zip(chunk.extras) {
                    if let Some(raw) = raw {
                        *kept = Some(Extra::Raw(raw.to_owned()));
                    }
                }
                Ok(self.take(scanned(&chunk)))
            }
            None => self.push_value_chunk(data),
        }
    }

    /// [`push_chunk`](Self::push_chunk) through a JSON value: any shape.
    fn push_value_chunk(&mut self, data: &str) -> Result<bool, BadChunk> {
        let chunk =
            serde_json::from_str::<Value>(data).map_err(|e| BadChunk::NotJson(e.to_string()))?;
        let view = ChunkView::of(&chunk);
        let delta = view.first_choice.as_ref().and_then(|c| c.delta.as_ref());
        if let Some(Calls::Values(calls)) = delta.and_then(|d| d.tool_calls.as_ref()) {
            check_indexes(calls.iter())?;
        }
        self.keep_extras(&view);
        Ok(self.take(view))
    }

    fn take(&mut self, chunk: ChunkView<'_>) -> bool {
        if chunk.has_choices {
            self.chunks += 1;
        }
        if self.out.id.is_none() {
            self.out.id = chunk.id.filter(|id| !id.is_empty()).map(str::to_owned);
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
            .as_ref()
            .is_some_and(|calls| match self.first_token {
                FirstToken::Reference => !calls.is_empty(),
                FirstToken::Rules => calls.iter().any(|c| c.has_text),
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
        for call in delta.tool_calls.iter().flat_map(Calls::iter) {
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
    ///
    /// # Errors
    /// When a tool call's `index` is there but not an unsigned integer (nothing is kept).
    pub fn push_response(&mut self, body: &Value) -> Result<(), BadChunk> {
        let choice = body.get("choices").and_then(|c| c.get(0));
        let calls = choice
            .and_then(|c| c.get("message"))
            .and_then(|m| m.get("tool_calls"))
            .and_then(Value::as_array);
        check_indexes(calls.into_iter().flatten())?;
        let view = ChunkView::of(body);
        self.out.id = view.id.filter(|id| !id.is_empty()).map(str::to_owned);
        self.keep_extras(&view);
        let Some(choice) = choice else {
            return Ok(());
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
                let mut view = CallView::of(call);
                if call.get("index").is_none() {
                    (view.index, view.plain_index) = (i as u64, true);
                }
                self.merge_call(view);
            }
        }
        Ok(())
    }

    /// The assembled answer.
    pub fn finish(mut self) -> Assembled {
        self.out.tool_call_indices = self.calls.keys().copied().collect();
        self.out.tool_calls = self.calls.into_values().collect();
        let [usage, timings, stamps] = self.extras.map(|e| e.and_then(Extra::into_raw));
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

    fn merge_call(&mut self, delta: CallView<'_>) {
        self.out.tool_call_index_missing |= !delta.plain_index;
        let call = self.calls.entry(delta.index).or_default();
        if !delta.id.is_empty() {
            delta.id.clone_into(&mut call.id);
        }
        if !delta.name.is_empty() {
            delta.name.clone_into(&mut call.name);
        }
        if let Some(arguments) = delta.arguments {
            call.arguments.push_str(&arguments);
        }
    }
}

/// A delta's tool calls, whichever way the chunk was parsed.
enum Calls<'a> {
    Values(&'a [Value]),
    Scanned(&'a [scan::Call<'a>]),
}

impl<'a> Calls<'a> {
    fn is_empty(&self) -> bool {
        match self {
            Self::Values(calls) => calls.is_empty(),
            Self::Scanned(calls) => calls.is_empty(),
        }
    }

    fn iter(&self) -> impl Iterator<Item = CallView<'a>> {
        let (values, scanned) = match *self {
            Self::Values(calls) => (calls, &[][..]),
            Self::Scanned(calls) => (&[][..], calls),
        };
        values
            .iter()
            .map(CallView::of)
            .chain(scanned.iter().map(CallView::scanned))
    }
}

/// A tool call's `index`, when it is a call's index: an unsigned integer (`1.0` too: the
/// reference's Python reads it as 1); `None` for anything else.
fn call_index(index: &Value) -> Option<u64> {
    index.as_u64().or_else(|| {
        let f = index.as_f64()?;
        // Integers an f64 holds exactly.
        (f >= 0.0 && f.fract() == 0.0 && f < 9_007_199_254_740_992.0).then_some(f as u64)
    })
}

/// Refuses the first of `calls` whose `index` is there (not null) and not a call's index.
fn check_indexes<'a>(calls: impl Iterator<Item = &'a Value>) -> Result<(), BadChunk> {
    for (position, call) in calls.enumerate() {
        match call.get("index") {
            None | Some(Value::Null) => {}
            Some(index) if call_index(index).is_some() => {}
            Some(index) => {
                let mut value = index.to_string();
                if value.len() > 64 {
                    value.truncate(value.floor_char_boundary(64));
                    value.push('…');
                }
                return Err(BadChunk::BadIndex { position, value });
            }
        }
    }
    Ok(())
}

/// One tool-call delta as the assembler reads it.
struct CallView<'a> {
    /// `index` (0 when absent or null; anything else that is not a call's index was refused
    /// before, see [`check_indexes`]).
    index: u64,
    /// The `index` was a plain unsigned integer (not absent, null or a whole float).
    plain_index: bool,
    /// `id` and `function.name` ("" when absent, empty or not strings).
    id: &'a str,
    name: &'a str,
    /// `function.arguments`: a string's text, another value's JSON; `None` when absent or
    /// null.
    arguments: Option<Cow<'a, str>>,
    /// The function's name or arguments carry text: a string that is not empty, or any
    /// other value but null (what bears the rules' first token).
    has_text: bool,
}

impl<'a> CallView<'a> {
    /// The view of a call of any shape.
    fn of(call: &'a Value) -> Self {
        let f = call.get("function");
        let str_of = |v: Option<&'a Value>| v.and_then(Value::as_str).unwrap_or("");
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Null) | None => false,
            Some(_) => true,
        };
        let name = f.and_then(|f| f.get("name"));
        let arguments = f.and_then(|f| f.get("arguments"));
        Self {
            index: call.get("index").and_then(call_index).unwrap_or(0),
            plain_index: call.get("index").is_some_and(|i| i.as_u64().is_some()),
            id: str_of(call.get("id")),
            name: str_of(name),
            arguments: match arguments {
                Some(Value::String(s)) => Some(Cow::Borrowed(s)),
                Some(Value::Null) | None => None,
                Some(other) => Some(Cow::Owned(other.to_string())),
            },
            has_text: text(name) || text(arguments),
        }
    }
}

/// What a chunk says, whichever way it was parsed.
struct ChunkView<'a> {
    /// The completion's `id`, when a string.
    id: Option<&'a str>,
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
    tool_calls: Option<Calls<'a>>,
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
                    .map(|calls| Calls::Values(calls)),
            }),
        });
        Self {
            id: chunk.get("id").and_then(Value::as_str),
            has_choices: choices.is_some_and(Value::is_array),
            first_choice,
            usage: chunk.get("usage"),
            timings: chunk.get("timings"),
            server_timestamps: chunk.get("agentload_sim"),
            error: chunk.get("error"),
        }
    }
}

/// The view of a chunk the scanner read.
fn scanned<'a>(chunk: &'a scan::Chunk<'a>) -> ChunkView<'a> {
    let nonempty = |t: &'a Option<Cow<'a, str>>| t.as_deref().filter(|t| !t.is_empty());
    let first_choice = chunk
        .choices
        .as_ref()
        .and_then(Option::as_ref)
        .map(|choice| ChoiceView {
            finish_reason: choice.finish_reason.as_deref(),
            // `"delta": null` reads as no delta: both views then add nothing.
            delta: choice.delta.as_ref().map(|d| DeltaView {
                content: nonempty(&d.content).unwrap_or(""),
                reasoning: nonempty(&d.reasoning_content)
                    .or(nonempty(&d.reasoning))
                    .unwrap_or(""),
                tool_calls: d.tool_calls.as_deref().map(Calls::Scanned),
            }),
        });
    ChunkView {
        id: chunk.id.as_deref(),
        has_choices: chunk.choices.is_some(),
        first_choice,
        usage: None,
        timings: None,
        server_timestamps: None,
        error: None,
    }
}

impl<'a> CallView<'a> {
    /// The view of a call the scanner read.
    fn scanned(call: &'a scan::Call<'a>) -> Self {
        let f = call.function.as_ref();
        let nonempty = |t: Option<&'a Cow<'a, str>>| t.map(|t| &**t).filter(|t| !t.is_empty());
        let name = nonempty(f.and_then(|f| f.name.as_ref())).unwrap_or("");
        let arguments = f.and_then(|f| f.arguments.as_deref()).map(Cow::Borrowed);
        Self {
            index: call.index.unwrap_or(0),
            plain_index: call.index.is_some(),
            id: nonempty(call.id.as_ref()).unwrap_or(""),
            name,
            has_text: !name.is_empty() || arguments.as_ref().is_some_and(|a| !a.is_empty()),
            arguments,
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
        let (mut scanned, mut general) = (
            CompletionAssembler::default(),
            CompletionAssembler::default(),
        );
        for c in chunks {
            scanned.push_chunk(c).unwrap();
            general.push_value_chunk(c).unwrap();
        }
        let (t, g) = (scanned.finish(), general.finish());
        let value = |raw: &Option<Box<RawValue>>| -> Value {
            serde_json::from_str(raw.as_ref().unwrap().get()).unwrap()
        };
        for (a, b) in [
            (&t.usage, &g.usage),
            (&t.timings, &g.timings),
            (&t.server_timestamps, &g.server_timestamps),
        ] {
            assert_eq!(value(a), value(b));
        }
        // The scanned path keeps each object's text as sent.
        let usage = t.usage.as_ref().unwrap().get();
        assert_eq!(usage, r#"{"prompt_tokens":3,"completion_tokens":2}"#);
        assert_eq!(
            t.timings.as_ref().unwrap().get(),
            r#"{"n":2,"f":1e-7}"#,
            "null does not replace a kept object"
        );
        assert_eq!(value(&t.server_timestamps)["first_token_ns"], 5);
        assert_eq!(t.content, "ab");
    }

    /// The scanned view and the general one agree chunk for chunk, on the
    /// shapes servers send and on the odd ones the scanner leaves alone.
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
            r#"{"choices":[{"delta":{"tool_calls":[[1,"id",null],{"index":"1","function":{"name":7}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":2,"id":null,"function":null},{"index":2.5,"function":{"arguments":{"k":1}}}]}}]}"#,
            r#"{"choices":[[null,{"content":"a seq, not a choice"}]]}"#,
            r#"{"choices":[{"delta":{"content":"\ud83d\ude00 \/ \b"}}],"created":1.5e3,"x":[{},[],-0]}"#,
            r#"{"choices":[{"delta":{"content":"deep"}}],"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}"#,
            r#"{"choices":[{"delta":{"content":"big"}}],"x":1e400}"#,
            r#"{"choices":[{"delta":{"content":"lone \ud800"}}]}"#,
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

    /// What streaming servers send is read by the scanner (it is not a path
    /// that always falls back).
    #[test]
    fn server_chunks_are_scanned() {
        for c in [
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1,"id":"x","model":"m","system_fingerprint":"b1","object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi"}}],"created":1,"id":"x","model":"m","object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"finish_reason":"tool_calls","index":0,"delta":{}}],"created":1,"id":"x","model":"m","object":"chat.completion.chunk","timings":{"prompt_n":3}}"#,
            r#"{"choices":[],"created":1,"id":"x","model":"m","object":"chat.completion.chunk","usage":{"completion_tokens":1,"prompt_tokens":2,"total_tokens":3}}"#,
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"sed"}}]}}],"created":1796329485,"id":"chatcmpl-7E","model":"m","system_fingerprint":"b0-agentload-sim-0.1.0","object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,"id":"x","model":"m","object":"chat.completion.chunk","usage":{"completion_tokens":5,"prompt_tokens":22,"total_tokens":27,"prompt_tokens_details":{"cached_tokens":0}},"timings":{"cache_n":0,"prompt_ms":22.00000000000002,"predicted_per_second":62.500000000000036}}"#,
        ] {
            assert!(scan::chunk(c).is_some(), "{c}");
        }
    }

    /// The scanner copies nothing it reads: text without escapes is borrowed from the
    /// chunk, and only the first choice is read (a second one of any shape is skipped).
    #[test]
    fn the_scanned_view_borrows_its_text_and_reads_one_choice() {
        let c = r#"{"choices":[{"finish_reason":"stop","delta":{"content":"plain"}},"second",7]}"#;
        let chunk = scan::chunk(c).unwrap();
        let choice = scanned(&chunk).first_choice.unwrap();
        let inside = |s: &str| c.as_bytes().as_ptr_range().contains(&s.as_ptr());
        assert!(inside(choice.delta.unwrap().content));
        assert!(inside(choice.finish_reason.unwrap()));
        let escaped = r#"{"choices":[{"delta":{"content":"a\nb"}}]}"#;
        let chunk = scan::chunk(escaped).unwrap();
        assert_eq!(
            scanned(&chunk).first_choice.unwrap().delta.unwrap().content,
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
        assert_eq!(out.id.as_deref(), Some("x"), "the first non-empty id");
        assert_eq!(out.reasoning_content, "hm");
        let usage: Value = serde_json::from_str(out.usage.unwrap().get()).unwrap();
        assert_eq!(usage["completion_tokens"], 2);
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
        assert!(err.to_string().contains("key must be a string"), "{err}");
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
        }))
        .unwrap();
        let out = a.finish();
        assert_eq!(out.tool_calls.len(), 1);
        assert_eq!(out.tool_calls[0].name, "f");
    }

    #[test]
    fn non_streamed_response() {
        let mut a = CompletionAssembler::default();
        a.push_response(&serde_json::json!({
            "id": "chatcmpl-9",
            "choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1}
        }))
        .unwrap();
        let out = a.finish();
        assert_eq!(out.id.as_deref(), Some("chatcmpl-9"));
        assert_eq!(out.tool_calls[0].name, "f");
        assert_eq!(out.content, "");
        assert_eq!(out.finish_reason.as_deref(), Some("tool_calls"));
    }
}
