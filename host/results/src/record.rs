//! The per-turn record (`turns.jsonl`): timestamps, the raw completion and
//! the workload's expected data, enough to recompute every metric and
//! re-score the run without the server.

use crate::numbers::Num;
use agentload_client::{Assembled, FirstChunk, ToolCallRecord};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::sync::Arc;

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// Answered.
    Completed,
    /// Sent, but failed (HTTP error, timeout, broken stream).
    Failed,
    /// Not sent: an earlier turn of the session failed.
    Aborted,
    /// Sent, but the run was interrupted (SIGINT/SIGTERM) before the answer
    /// ended. Never counted or scored; `agentload resume` sends it again.
    Interrupted,
}

/// The model's answer as recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CompletionRecord {
    pub content: String,
    pub reasoning_content: String,
    pub tool_calls: Vec<ToolCallRecord>,
    pub finish_reason: Option<String>,
}

/// One line of `turns.jsonl`. Times are ns after the start of the record's
/// segment (the phase's first process, or the resume that sent it), on the
/// monotonic clock.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TurnRecord {
    pub session_id: String,
    pub turn: u32,
    pub item_id: String,
    pub status: TurnStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub issued_ns: Option<u64>,
    pub first_byte_ns: Option<u64>,
    pub first_token_ns: Option<u64>,
    pub last_token_ns: Option<u64>,
    pub complete_ns: Option<u64>,
    /// How long the first token's bytes waited in the kernel before agentload read them
    /// (its read's return minus their arrival; absent without kernel receive stamps): the
    /// harness's own backlog, kept out of `first_token_ns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_read_lag_ns: Option<u64>,
    /// Token-bearing chunks received.
    pub token_chunks: u32,
    /// The stream's JSON `data:` events, token-bearing or not (AA's `response_chunks`;
    /// absent in records written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_events: Option<u32>,
    pub completion: Option<CompletionRecord>,
    /// What the first token-bearing chunk carried.
    pub first_chunk: Option<FirstChunk>,
    /// Server `usage`, verbatim (its text as sent).
    pub usage: Option<Box<RawValue>>,
    /// llama.cpp `timings`, verbatim.
    pub timings: Option<Box<RawValue>>,
    /// Simulator server-side timestamps, verbatim.
    pub server_timestamps: Option<Box<RawValue>>,
    /// `issued_ns` on the machine's monotonic clock (`CLOCK_MONOTONIC`), to pair with the
    /// simulator's `received_mono_ns` / `first_token_mono_ns` (the timing error by direction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued_mono_ns: Option<u64>,
    /// Local token counts (Qwen3.6 tokenizer). Never written in the log
    /// itself: counted after the turn, they live in `turns.tokens.jsonl`
    /// and are merged in when the log is read (older logs carry them inline).
    #[serde(default, skip_serializing)]
    pub local_tokens: Option<LocalTokens>,
    /// Live-reply replay: the recorded turn's counts, beside `local_tokens` (also in
    /// `turns.tokens.jsonl`, never in the log itself).
    #[serde(default, skip_serializing)]
    pub recorded_tokens: Option<RecordedTokens>,
    /// The workload's expected data for the scorer.
    pub expected_json: String,
    /// When the turn was due: the previous answer's end (or the session's
    /// start) plus the delay before this turn. `issued_ns - scheduled_ns` is
    /// the harness's send lag, where coordinated omission would show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_ns: Option<u64>,
    /// The simulated agent that sent it (sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<u32>,
    /// Which process sent it: 0 for the run itself, n for its n-th
    /// `agentload resume` (the time origin of the record's timestamps).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub segment: u32,
    /// The shard that sent it, in a merged sharded run (its times are then
    /// mapped onto the coordinator's clock; see `docs/distributed.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
    /// Live-reply replay: the workload's review of this reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<Box<crate::live::LiveReview>>,
    /// Closed-loop replay (`history = "closed"`): how the reply's tool calls
    /// were answered, and the turn beside the recording.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed: Option<Box<crate::tools::ClosedTurn>>,
    /// The connection this turn opened, when it had to open one mid-run (none was idle, or
    /// the idle one was closed): its connect and TLS handshake are inside the turn's times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opened_connection: Option<Box<agentload_client::Opened>>,
}

/// What the metrics read of a turn's server `usage`, llama.cpp `timings` and simulator
/// stamps: [`TurnFacts`] keep these numbers instead of the maps.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ServerNumbers {
    prompt_tokens: Packed,
    completion_tokens: Packed,
    /// `usage.prompt_tokens_details.cached_tokens`.
    cached_tokens: Packed,
    prompt_ms: PackedF64,
    predicted_n: PackedF64,
    predicted_per_second: PackedF64,
    first_token_ns: Packed,
    last_token_ns: Packed,
    received_mono_ns: Packed,
    first_token_mono_ns: Packed,
}

impl ServerNumbers {
    /// Each object read once.
    fn of(record: &TurnRecord) -> Self {
        let [prompt_tokens, completion_tokens, cached_tokens] =
            record.usage_numbers().map(|n| Packed::new(n.as_u64()));
        let [prompt_ms, predicted_n, predicted_per_second] =
            record.timings_numbers().map(|n| PackedF64::new(n.as_f64()));
        let [first_token_ns, last_token_ns, received_mono_ns, first_token_mono_ns] =
            record.stamp_numbers().map(|n| Packed::new(n.as_u64()));
        Self {
            prompt_tokens,
            completion_tokens,
            cached_tokens,
            prompt_ms,
            predicted_n,
            predicted_per_second,
            first_token_ns,
            last_token_ns,
            received_mono_ns,
            first_token_mono_ns,
        }
    }
}

/// An `Option<u64>` in 8 bytes, not 16: absent is `u64::MAX` (a value that large, 584
/// years in ns, is kept as one less).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Packed(u64);

impl Packed {
    fn new(v: Option<u64>) -> Self {
        Self(v.map_or(u64::MAX, |v| v.min(u64::MAX - 1)))
    }

    fn get(self) -> Option<u64> {
        (self.0 != u64::MAX).then_some(self.0)
    }
}

/// An `Option<f64>` in 8 bytes: absent is NaN (JSON has no NaN, so no server sends one).
#[derive(Debug, Clone, Copy, PartialEq)]
struct PackedF64(f64);

impl PackedF64 {
    fn new(v: Option<f64>) -> Self {
        Self(v.unwrap_or(f64::NAN))
    }

    fn get(self) -> Option<f64> {
        (!self.0.is_nan()).then_some(self.0)
    }
}

/// A llama.cpp `timings` key the metrics read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    PromptMs,
    PredictedN,
    PredictedPerSecond,
}

impl Timing {
    /// Where each value is in `timings`, in the enum's order.
    const PATHS: [&[&str]; 3] = [&["prompt_ms"], &["predicted_n"], &["predicted_per_second"]];
}

/// A simulator stamp (`agentload_sim`) the metrics read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerStamp {
    FirstToken,
    LastToken,
    ReceivedMono,
    FirstTokenMono,
}

impl ServerStamp {
    /// Where each stamp is in the simulator's object, in the enum's order.
    const PATHS: [&[&str]; 4] = [
        &["first_token_ns"],
        &["last_token_ns"],
        &["received_mono_ns"],
        &["first_token_mono_ns"],
    ];
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Token counts computed by agentload itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocalTokens {
    /// Chat-template render of messages and tools, generation prompt added.
    pub isl: u32,
    /// The whole output.
    pub osl: u32,
    /// Output after the first token-bearing chunk (reference TPOT denominator).
    pub osl_after_first: u32,
    /// Time spent counting the output tokens, ns (the reference's
    /// `osl_tokenize_s` in `accuracy_results.json` sums it).
    #[serde(default)]
    pub osl_count_ns: u64,
}

/// Live-reply replay: what the recording would have had at a turn, counted as
/// [`LocalTokens`] are. The request is the one the workload makes in recorded mode (a
/// twin of it, driven in step with the live one); the reply is the recorded assistant
/// message that follows the turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedTokens {
    /// The recorded request's ISL.
    pub isl: u32,
    /// The recorded reply's OSL (absent where no recorded reply follows: a session's
    /// last turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub osl: Option<u32>,
}

impl TurnRecord {
    /// A record for a turn that was never sent.
    pub fn aborted(session_id: &str, turn: u32, item_id: &str, expected_json: &str) -> Self {
        Self {
            session_id: session_id.to_string(),
            turn,
            item_id: item_id.to_string(),
            status: TurnStatus::Aborted,
            error: Some("aborted: an earlier turn of this session failed".into()),
            issued_ns: None,
            first_byte_ns: None,
            first_token_ns: None,
            first_token_read_lag_ns: None,
            last_token_ns: None,
            complete_ns: None,
            token_chunks: 0,
            data_events: None,
            completion: None,
            first_chunk: None,
            usage: None,
            timings: None,
            server_timestamps: None,
            issued_mono_ns: None,
            local_tokens: None,
            recorded_tokens: None,
            expected_json: expected_json.to_string(),
            scheduled_ns: None,
            agent: None,
            segment: 0,
            shard: None,
            live: None,
            closed: None,
            opened_connection: None,
        }
    }

    /// Whether the turn was answered.
    pub fn completed(&self) -> bool {
        self.status == TurnStatus::Completed
    }

    /// Send lag: how long after its due time the turn was issued.
    pub fn send_lag_ns(&self) -> Option<u64> {
        Some(self.issued_ns?.saturating_sub(self.scheduled_ns?))
    }

    /// Fills the answer fields from an assembled completion.
    pub fn set_answer(&mut self, a: Assembled) {
        self.completion = Some(CompletionRecord {
            content: a.content,
            reasoning_content: a.reasoning_content,
            tool_calls: a.tool_calls,
            finish_reason: a.finish_reason,
        });
        self.first_chunk = a.first_chunk;
        self.data_events = Some(a.data_events);
        self.usage = a.usage;
        self.timings = a.timings;
        self.server_timestamps = a.server_timestamps;
    }

    /// The answer as the client assembled it (for counting a recorded turn).
    pub fn answer(&self) -> Assembled {
        let c = self.completion.clone().unwrap_or_default();
        Assembled {
            content: c.content,
            reasoning_content: c.reasoning_content,
            tool_calls: c.tool_calls,
            finish_reason: c.finish_reason,
            usage: self.usage.clone(),
            timings: self.timings.clone(),
            server_timestamps: self.server_timestamps.clone(),
            first_chunk: self.first_chunk.clone(),
            data_events: self.data_events.unwrap_or_default(),
            ..Assembled::default()
        }
    }

    /// Server-reported prompt tokens.
    pub fn server_isl(&self) -> Option<u64> {
        self.usage_numbers()[0].as_u64()
    }

    /// Server-reported completion tokens.
    pub fn server_osl(&self) -> Option<u64> {
        self.usage_numbers()[1].as_u64()
    }

    /// Server-reported prompt tokens taken from its cache
    /// (`usage.prompt_tokens_details.cached_tokens`).
    pub fn cached_tokens(&self) -> Option<u64> {
        self.usage_numbers()[2].as_u64()
    }

    /// A llama.cpp `timings` value.
    pub fn timing(&self, which: Timing) -> Option<f64> {
        self.timings_numbers()[which as usize].as_f64()
    }

    /// A simulator stamp, ns.
    pub fn server_stamp(&self, which: ServerStamp) -> Option<u64> {
        self.stamp_numbers()[which as usize].as_u64()
    }

    /// `usage`'s prompt, completion and cached tokens, read at once.
    pub fn usage_counts(&self) -> [Option<u64>; 3] {
        self.usage_numbers().map(Num::as_u64)
    }

    fn usage_numbers(&self) -> [Num; 3] {
        numbers(&self.usage, USAGE_PATHS)
    }

    /// `timings`' values, in [`Timing`]'s order.
    fn timings_numbers(&self) -> [Num; 3] {
        numbers(&self.timings, Timing::PATHS)
    }

    /// The simulator's stamps, in [`ServerStamp`]'s order.
    fn stamp_numbers(&self) -> [Num; 4] {
        numbers(&self.server_timestamps, ServerStamp::PATHS)
    }
}

/// Where `usage` holds the prompt, completion and cached tokens.
pub const USAGE_PATHS: [&[&str]; 3] = [
    &["prompt_tokens"],
    &["completion_tokens"],
    &["prompt_tokens_details", "cached_tokens"],
];

/// `value` as a record keeps a server's object (tests build records with `json!`).
#[cfg(test)]
pub(crate) fn raw(value: serde_json::Value) -> Option<Box<RawValue>> {
    serde_json::value::to_raw_value(&value).ok()
}

/// The numbers at `paths` of an object kept verbatim (absent where it is).
fn numbers<const N: usize>(raw: &Option<Box<RawValue>>, paths: [&[&str]; N]) -> [Num; N] {
    raw.as_ref().map_or([Num::Absent; N], |raw| {
        crate::numbers::pick(raw.get(), paths)
    })
}

/// What counting a phase's turns took.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct CountingStats {
    /// Turns counted.
    pub turns: u64,
    /// Wall time from the phase's end to the last count written (vocabulary load included), ms.
    pub wall_ms: f64,
    /// Counts that ran while an exchange was in flight (0: counting never competed with a
    /// stream).
    pub during_streams: u64,
    /// The counted turns' prompt tokens (their ISL, summed).
    pub prompt_tokens: u64,
    /// Of `prompt_tokens`, those taken from the count of the session's previous prompt
    /// rather than encoded again.
    pub prompt_tokens_reused: u64,
}

/// Why a failed turn failed, as far as a session's end reason names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    None,
    ContextOverflow,
    Timeout,
    Other,
}

/// Whether a failed turn's error is a refusal for exceeding the context:
/// llama.cpp's (`exceed_context_size_error`, `exceeds the available
/// context size`, also agentload's own pre-check's words), vLLM's (`This
/// model's maximum context length is ...`) or SGLang's (`... is longer than
/// the model's context length ...`).
pub fn context_overflow_error(error: &str) -> bool {
    error.contains("exceed_context_size")
        || error.contains("exceeds the available context")
        || error.contains("maximum context length")
        || error.contains("longer than the model's context length")
}

impl Failure {
    /// The cause of `record`'s failure (`None` unless it failed).
    pub fn of(record: &TurnRecord) -> Self {
        let error = record.error.as_deref().unwrap_or("");
        if record.status != TurnStatus::Failed {
            Self::None
        } else if context_overflow_error(error) {
            Self::ContextOverflow
        } else if error.contains("timed out") || error.contains("timeout") {
            Self::Timeout
        } else {
            Self::Other
        }
    }
}

/// What the metrics need of one turn, without its texts, expected data or server maps: a
/// phase keeps these in memory, one per turn, hundreds of thousands in a long one, while the
/// records themselves are on disk (`turns.jsonl`; scoring reads them back from there). No
/// heap of its own: the session id and the finish reason are shared with the phase's other
/// turns ([`Interner`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TurnFacts {
    /// The record's 1-based line in `turns.jsonl` (0: not written).
    pub line: u64,
    pub session_id: Arc<str>,
    /// The workload's turn number.
    pub turn: u32,
    /// The process that sent it (see [`TurnRecord::segment`]).
    pub segment: u32,
    pub status: TurnStatus,
    pub failure: Failure,
    /// Token-bearing chunks received.
    pub token_chunks: u32,
    /// The answer's `finish_reason`.
    pub finish_reason: Option<Arc<str>>,
    pub local_tokens: Option<LocalTokens>,
    pub recorded_tokens: Option<RecordedTokens>,
    /// Live-reply replay: the workload's review.
    pub live: Option<crate::live::LiveFact>,
    /// The record's stamps (read through the methods of the same names).
    stamps: Stamps,
    /// What the metrics read of the server's `usage`, `timings` and stamps.
    server: ServerNumbers,
}

/// A record's stamps, ns ([`TurnRecord`]'s fields of the same names).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stamps {
    scheduled_ns: Packed,
    issued_ns: Packed,
    first_byte_ns: Packed,
    first_token_ns: Packed,
    last_token_ns: Packed,
    complete_ns: Packed,
    first_token_read_lag_ns: Packed,
    issued_mono_ns: Packed,
}

/// Strings many turns share (session ids, finish reasons), each held once.
#[derive(Debug, Default)]
pub struct Interner(std::collections::HashSet<Arc<str>>);

impl Interner {
    /// The shared copy of `s`.
    pub fn get(&mut self, s: &str) -> Arc<str> {
        if let Some(held) = self.0.get(s) {
            return held.clone();
        }
        let held: Arc<str> = Arc::from(s);
        self.0.insert(held.clone());
        held
    }
}

impl TurnFacts {
    /// The facts of `record`, written at `line`; `strings` shares its session id and finish
    /// reason with the other turns'.
    pub fn of(record: &TurnRecord, line: u64, strings: &mut Interner) -> Self {
        Self {
            line,
            session_id: strings.get(&record.session_id),
            turn: record.turn,
            segment: record.segment,
            status: record.status,
            failure: Failure::of(record),
            token_chunks: record.token_chunks,
            finish_reason: record
                .completion
                .as_ref()
                .and_then(|c| c.finish_reason.as_deref())
                .map(|r| strings.get(r)),
            local_tokens: record.local_tokens,
            recorded_tokens: record.recorded_tokens,
            live: record.live.as_deref().map(crate::live::LiveFact::of),
            stamps: Stamps {
                scheduled_ns: Packed::new(record.scheduled_ns),
                issued_ns: Packed::new(record.issued_ns),
                first_byte_ns: Packed::new(record.first_byte_ns),
                first_token_ns: Packed::new(record.first_token_ns),
                last_token_ns: Packed::new(record.last_token_ns),
                complete_ns: Packed::new(record.complete_ns),
                first_token_read_lag_ns: Packed::new(record.first_token_read_lag_ns),
                issued_mono_ns: Packed::new(record.issued_mono_ns),
            },
            server: ServerNumbers::of(record),
        }
    }

    /// The facts of `records` (not from a log: every line 0), their strings shared.
    pub fn all<'a>(records: impl IntoIterator<Item = &'a TurnRecord>) -> Vec<Self> {
        let mut strings = Interner::default();
        records
            .into_iter()
            .map(|r| Self::of(r, 0, &mut strings))
            .collect()
    }

    /// Whether the turn was answered.
    pub fn completed(&self) -> bool {
        self.status == TurnStatus::Completed
    }

    /// When the turn was due ([`TurnRecord::scheduled_ns`]).
    pub fn scheduled_ns(&self) -> Option<u64> {
        self.stamps.scheduled_ns.get()
    }

    pub fn issued_ns(&self) -> Option<u64> {
        self.stamps.issued_ns.get()
    }

    pub fn first_byte_ns(&self) -> Option<u64> {
        self.stamps.first_byte_ns.get()
    }

    pub fn first_token_ns(&self) -> Option<u64> {
        self.stamps.first_token_ns.get()
    }

    pub fn last_token_ns(&self) -> Option<u64> {
        self.stamps.last_token_ns.get()
    }

    pub fn complete_ns(&self) -> Option<u64> {
        self.stamps.complete_ns.get()
    }

    /// [`TurnRecord::first_token_read_lag_ns`].
    pub fn first_token_read_lag_ns(&self) -> Option<u64> {
        self.stamps.first_token_read_lag_ns.get()
    }

    /// [`TurnRecord::issued_mono_ns`].
    pub fn issued_mono_ns(&self) -> Option<u64> {
        self.stamps.issued_mono_ns.get()
    }

    /// Send lag: how long after its due time the turn was issued.
    pub fn send_lag_ns(&self) -> Option<u64> {
        Some(self.issued_ns()?.saturating_sub(self.scheduled_ns()?))
    }

    /// Server-reported prompt tokens.
    pub fn server_isl(&self) -> Option<u64> {
        self.server.prompt_tokens.get()
    }

    /// Server-reported completion tokens.
    pub fn server_osl(&self) -> Option<u64> {
        self.server.completion_tokens.get()
    }

    /// Server-reported prompt tokens taken from its cache.
    pub fn cached_tokens(&self) -> Option<u64> {
        self.server.cached_tokens.get()
    }

    /// A llama.cpp `timings` value.
    pub fn timing(&self, which: Timing) -> Option<f64> {
        let n = &self.server;
        match which {
            Timing::PromptMs => n.prompt_ms,
            Timing::PredictedN => n.predicted_n,
            Timing::PredictedPerSecond => n.predicted_per_second,
        }
        .get()
    }

    /// A simulator stamp, ns.
    pub fn server_stamp(&self, which: ServerStamp) -> Option<u64> {
        let n = &self.server;
        match which {
            ServerStamp::FirstToken => n.first_token_ns,
            ServerStamp::LastToken => n.last_token_ns,
            ServerStamp::ReceivedMono => n.received_mono_ns,
            ServerStamp::FirstTokenMono => n.first_token_mono_ns,
        }
        .get()
    }

    /// Refused for exceeding the server's context.
    pub fn context_overflow(&self) -> bool {
        self.failure == Failure::ContextOverflow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_over_the_context_are_read_in_each_servers_words() {
        for refusal in [
            r#"HTTP 400: {"error":{"type":"exceed_context_size_error"}}"#,
            "not sent: the request (5000 tokens, local count) exceeds the available context size",
            "HTTP 400: This model's maximum context length is 4096 tokens. However, you requested 5000 tokens",
            "HTTP 400: The input (5000 tokens) is longer than the model's context length (4096 tokens).",
        ] {
            assert!(context_overflow_error(refusal), "{refusal}");
        }
        assert!(!context_overflow_error("HTTP 500: overloaded"));
    }

    /// A phase keeps one of these per turn in memory: hundreds of thousands of them in a
    /// long one. The budget is the figure docs/performance.md projects from.
    #[test]
    fn turn_facts_stay_small() {
        let size = std::mem::size_of::<TurnFacts>();
        eprintln!("TurnFacts: {size} bytes");
        assert!(size <= 256, "TurnFacts grew to {size} bytes");
    }

    #[test]
    fn packed_numbers_keep_absent_apart_from_every_value() {
        for v in [None, Some(0), Some(1), Some(u64::MAX - 1)] {
            assert_eq!(Packed::new(v).get(), v);
        }
        assert_eq!(Packed::new(Some(u64::MAX)).get(), Some(u64::MAX - 1));
        for v in [None, Some(0.0), Some(-1.5), Some(f64::MAX)] {
            assert_eq!(PackedF64::new(v).get(), v);
        }
    }
}
