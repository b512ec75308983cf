//! The per-turn record (`turns.jsonl`): timestamps, the raw completion and
//! the workload's expected data, enough to recompute every metric and
//! re-score the run without the server.

use agentload_client::{Assembled, FirstChunk, ToolCallRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
    pub completion: Option<CompletionRecord>,
    /// What the first token-bearing chunk carried.
    pub first_chunk: Option<FirstChunk>,
    /// Server `usage`, verbatim.
    pub usage: Option<Value>,
    /// llama.cpp `timings`, verbatim.
    pub timings: Option<Value>,
    /// Simulator server-side timestamps, verbatim.
    pub server_timestamps: Option<Value>,
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
}

/// The keys of the server's `usage` the metrics read (of `prompt_tokens_details`, its
/// `cached_tokens`); [`TurnRecord::thin`] keeps these.
pub const KEPT_USAGE: &[(&str, &[&str])] = &[
    ("prompt_tokens", &[]),
    ("completion_tokens", &[]),
    ("prompt_tokens_details", &["cached_tokens"]),
];

/// The keys of llama.cpp's `timings` the summary reads; [`TurnRecord::thin`] keeps these.
pub const KEPT_TIMINGS: [&str; 3] = ["prompt_ms", "predicted_n", "predicted_per_second"];

/// The keys of the simulator's stamps the summary reads; [`TurnRecord::thin`] keeps these.
pub const KEPT_SERVER_STAMPS: [&str; 4] = [
    "first_token_ns",
    "last_token_ns",
    "received_mono_ns",
    "first_token_mono_ns",
];

/// An object `value` rebuilt with only `keys` (each with the keys its own object keeps; none:
/// the whole value), in a map of its new size: a map cut in place would keep its capacity.
/// Anything but an object is kept as it is.
fn only(value: Option<Value>, keys: &[(&str, &[&str])]) -> Option<Value> {
    let Some(Value::Object(mut all)) = value else {
        return value;
    };
    let mut kept = serde_json::Map::with_capacity(keys.len());
    for &(key, inner) in keys {
        if let Some(v) = all.remove(key) {
            let v = if inner.is_empty() {
                v
            } else {
                let inner: Vec<(&str, &[&str])> = inner.iter().map(|k| (*k, &[][..])).collect();
                only(Some(v), &inner).unwrap_or_default()
            };
            kept.insert(key.to_owned(), v);
        }
    }
    Some(Value::Object(kept))
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Token counts computed by agentload itself.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
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
            ..Assembled::default()
        }
    }

    /// The record as a phase keeps it in memory once its line is in `turns.jsonl`: what the
    /// metrics read, without the answer's texts and tool calls or the workload's expected data
    /// (scoring reads the whole records back from the log), and with the server's `usage`,
    /// `timings` and stamps cut to the keys the metrics read ([`KEPT_USAGE`], [`KEPT_TIMINGS`],
    /// [`KEPT_SERVER_STAMPS`]), in maps of that size: a third of a whole record's bytes.
    pub fn thin(mut self) -> Self {
        if let Some(c) = &mut self.completion {
            *c = CompletionRecord {
                finish_reason: c.finish_reason.take(),
                ..CompletionRecord::default()
            };
        }
        self.expected_json = String::new();
        self.usage = only(self.usage, KEPT_USAGE);
        self.timings = only(self.timings, &KEPT_TIMINGS.map(|k| (k, &[][..])));
        self.server_timestamps = only(
            self.server_timestamps,
            &KEPT_SERVER_STAMPS.map(|k| (k, &[][..])),
        );
        self
    }

    /// Server-reported prompt tokens.
    pub fn server_isl(&self) -> Option<u64> {
        self.usage.as_ref()?.get("prompt_tokens")?.as_u64()
    }

    /// Server-reported completion tokens.
    pub fn server_osl(&self) -> Option<u64> {
        self.usage.as_ref()?.get("completion_tokens")?.as_u64()
    }
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

/// What a sweep's metrics need of one turn, without its texts: about 190
/// bytes where a [`TurnRecord`] with its completion, usage and timings holds
/// kilobytes. A phase of hundreds of thousands of turns keeps these in
/// memory; the records themselves are on disk (`turns.jsonl`).
#[derive(Debug, Clone, Copy)]
pub struct TurnFacts {
    /// The record's 1-based line in `turns.jsonl` (0: not written).
    pub line: u64,
    /// Its session, as an index into the phase's session ids (the recorder
    /// keeping facts holds the table).
    pub session: u32,
    /// The workload's turn number.
    pub turn: u32,
    pub status: TurnStatus,
    /// Refused for exceeding the server's context.
    pub context_overflow: bool,
    pub scheduled_ns: Option<u64>,
    pub issued_ns: Option<u64>,
    pub first_token_ns: Option<u64>,
    pub last_token_ns: Option<u64>,
    pub complete_ns: Option<u64>,
    /// The server's `usage`.
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub cached_tokens: Option<u64>,
    pub local_tokens: Option<LocalTokens>,
    /// Live-reply replay: the workload's review.
    pub live: Option<crate::live::LiveFact>,
}

impl TurnFacts {
    /// The facts of `record`, written at `line`, of session number `session`.
    pub fn of(record: &TurnRecord, line: u64, session: u32) -> Self {
        let usage = |key: &str| record.usage.as_ref()?.get(key)?.as_u64();
        Self {
            line,
            session,
            turn: record.turn,
            status: record.status,
            context_overflow: record.error.as_deref().is_some_and(|e| {
                e.contains("exceed_context_size") || e.contains("exceeds the available context")
            }),
            scheduled_ns: record.scheduled_ns,
            issued_ns: record.issued_ns,
            first_token_ns: record.first_token_ns,
            last_token_ns: record.last_token_ns,
            complete_ns: record.complete_ns,
            prompt_tokens: usage("prompt_tokens"),
            completion_tokens: usage("completion_tokens"),
            cached_tokens: record.usage.as_ref().and_then(|u| {
                u.get("prompt_tokens_details")?
                    .get("cached_tokens")?
                    .as_u64()
            }),
            local_tokens: record.local_tokens,
            live: record.live.as_deref().map(crate::live::LiveFact::of),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sweep keeps one of these per turn in memory: hundreds of
    /// thousands of them in a long phase. The budget is the figure
    /// docs/performance.md projects from.
    #[test]
    fn turn_facts_stay_small() {
        let size = std::mem::size_of::<TurnFacts>();
        eprintln!("TurnFacts: {size} bytes");
        assert!(size <= 192, "TurnFacts grew to {size} bytes");
    }
}
