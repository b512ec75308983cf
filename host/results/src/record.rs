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
    /// Server `usage`, verbatim (`None` in a thin record: see `thin_numbers`).
    pub usage: Option<Value>,
    /// llama.cpp `timings`, verbatim (`None` in a thin record).
    pub timings: Option<Value>,
    /// Simulator server-side timestamps, verbatim (`None` in a thin record).
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
    /// A [thin](TurnRecord::thin) record's server numbers, in place of its `usage`, `timings`
    /// and `server_timestamps` maps (then `None`); never written. Metrics read them through
    /// [`TurnRecord::server_isl`], [`TurnRecord::cached_tokens`], [`TurnRecord::timing`] and
    /// [`TurnRecord::server_stamp`], which read whichever the record holds.
    #[serde(skip)]
    pub thin_numbers: Option<ServerNumbers>,
}

/// What the metrics read of a turn's server `usage`, llama.cpp `timings` and simulator
/// stamps: a thin record keeps these numbers instead of the maps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerNumbers {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`.
    pub cached_tokens: Option<u64>,
    pub prompt_ms: Option<f64>,
    pub predicted_n: Option<f64>,
    pub predicted_per_second: Option<f64>,
    pub first_token_ns: Option<u64>,
    pub last_token_ns: Option<u64>,
    pub received_mono_ns: Option<u64>,
    pub first_token_mono_ns: Option<u64>,
}

/// A llama.cpp `timings` key the metrics read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timing {
    PromptMs,
    PredictedN,
    PredictedPerSecond,
}

impl Timing {
    fn key(self) -> &'static str {
        match self {
            Self::PromptMs => "prompt_ms",
            Self::PredictedN => "predicted_n",
            Self::PredictedPerSecond => "predicted_per_second",
        }
    }
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
    fn key(self) -> &'static str {
        match self {
            Self::FirstToken => "first_token_ns",
            Self::LastToken => "last_token_ns",
            Self::ReceivedMono => "received_mono_ns",
            Self::FirstTokenMono => "first_token_mono_ns",
        }
    }
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
            thin_numbers: None,
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
    /// `timings` and stamps as the few numbers the metrics read ([`ServerNumbers`]) rather than
    /// maps: about a seventh of a whole record's bytes, and no allocation of its own but its ids.
    pub fn thin(mut self) -> Self {
        if let Some(c) = &mut self.completion {
            *c = CompletionRecord {
                finish_reason: c.finish_reason.take(),
                ..CompletionRecord::default()
            };
        }
        self.expected_json = String::new();
        if self.thin_numbers.is_none() {
            self.thin_numbers = Some(ServerNumbers {
                prompt_tokens: self.server_isl(),
                completion_tokens: self.server_osl(),
                cached_tokens: self.cached_tokens(),
                prompt_ms: self.timing(Timing::PromptMs),
                predicted_n: self.timing(Timing::PredictedN),
                predicted_per_second: self.timing(Timing::PredictedPerSecond),
                first_token_ns: self.server_stamp(ServerStamp::FirstToken),
                last_token_ns: self.server_stamp(ServerStamp::LastToken),
                received_mono_ns: self.server_stamp(ServerStamp::ReceivedMono),
                first_token_mono_ns: self.server_stamp(ServerStamp::FirstTokenMono),
            });
        }
        self.usage = None;
        self.timings = None;
        self.server_timestamps = None;
        self
    }

    /// `usage[key]`, or a thin record's number for it.
    fn usage_count(&self, key: &str, thin: fn(&ServerNumbers) -> Option<u64>) -> Option<u64> {
        match &self.thin_numbers {
            Some(n) => thin(n),
            None => self.usage.as_ref()?.get(key)?.as_u64(),
        }
    }

    /// Server-reported prompt tokens.
    pub fn server_isl(&self) -> Option<u64> {
        self.usage_count("prompt_tokens", |n| n.prompt_tokens)
    }

    /// Server-reported completion tokens.
    pub fn server_osl(&self) -> Option<u64> {
        self.usage_count("completion_tokens", |n| n.completion_tokens)
    }

    /// Server-reported prompt tokens taken from its cache
    /// (`usage.prompt_tokens_details.cached_tokens`).
    pub fn cached_tokens(&self) -> Option<u64> {
        match &self.thin_numbers {
            Some(n) => n.cached_tokens,
            None => self
                .usage
                .as_ref()?
                .get("prompt_tokens_details")?
                .get("cached_tokens")?
                .as_u64(),
        }
    }

    /// A llama.cpp `timings` value.
    pub fn timing(&self, which: Timing) -> Option<f64> {
        match &self.thin_numbers {
            Some(n) => match which {
                Timing::PromptMs => n.prompt_ms,
                Timing::PredictedN => n.predicted_n,
                Timing::PredictedPerSecond => n.predicted_per_second,
            },
            None => self.timings.as_ref()?.get(which.key())?.as_f64(),
        }
    }

    /// A simulator stamp, ns.
    pub fn server_stamp(&self, which: ServerStamp) -> Option<u64> {
        match &self.thin_numbers {
            Some(n) => match which {
                ServerStamp::FirstToken => n.first_token_ns,
                ServerStamp::LastToken => n.last_token_ns,
                ServerStamp::ReceivedMono => n.received_mono_ns,
                ServerStamp::FirstTokenMono => n.first_token_mono_ns,
            },
            None => self.server_timestamps.as_ref()?.get(which.key())?.as_u64(),
        }
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
            prompt_tokens: record.server_isl(),
            completion_tokens: record.server_osl(),
            cached_tokens: record.cached_tokens(),
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
