//! The per-turn record (`turns.jsonl`): timestamps, the raw completion and
//! the workload's expected data, enough to recompute every metric and
//! re-score the run without the server.

use crate::client::{Assembled, FirstChunk, ToolCallRecord};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

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
}

/// The model's answer as recorded.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CompletionRecord {
    pub content: String,
    pub reasoning_content: String,
    pub tool_calls: Vec<ToolCallRecord>,
    pub finish_reason: Option<String>,
}

/// One line of `turns.jsonl`. Times are ns after the phase started, on the
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
    /// Local token counts (Qwen3.6 tokenizer), when a tokenizer is loaded.
    pub local_tokens: Option<LocalTokens>,
    /// The workload's expected data for the scorer.
    pub expected_json: String,
    /// When the turn was due (previous completion + tool delay), for
    /// coordinated-omission checks; sweeps record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_ns: Option<u64>,
    /// The simulated agent that sent it (sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<u32>,
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
            last_token_ns: None,
            complete_ns: None,
            token_chunks: 0,
            completion: None,
            first_chunk: None,
            usage: None,
            timings: None,
            server_timestamps: None,
            local_tokens: None,
            expected_json: expected_json.to_string(),
            scheduled_ns: None,
            agent: None,
        }
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

    /// Server-reported prompt tokens.
    pub fn server_isl(&self) -> Option<u64> {
        self.usage.as_ref()?.get("prompt_tokens")?.as_u64()
    }

    /// Server-reported completion tokens.
    pub fn server_osl(&self) -> Option<u64> {
        self.usage.as_ref()?.get("completion_tokens")?.as_u64()
    }
}

/// Appends records to `turns.jsonl`, flushed after every record.
pub struct TurnLog {
    path: PathBuf,
    out: std::io::BufWriter<std::fs::File>,
}

impl TurnLog {
    /// Creates (truncates) the log at `path`.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let file = std::fs::File::create(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            out: std::io::BufWriter::new(file),
        })
    }

    /// Writes one record and flushes it to the operating system.
    pub fn write(&mut self, record: &TurnRecord) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, record)?;
        self.out.write_all(b"\n")?;
        self.out.flush()
    }

    /// Replaces the log with `records` (e.g. completed with local token
    /// counts), through a temporary file renamed over it.
    pub fn rewrite(self, records: &[TurnRecord]) -> std::io::Result<()> {
        drop(self.out);
        let tmp = self.path.with_extension("jsonl.tmp");
        let mut out = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        for record in records {
            serde_json::to_writer(&mut out, record)?;
            out.write_all(b"\n")?;
        }
        out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, &self.path)
    }

    /// Reads a log back (for re-scoring and tests); names file and line on error.
    pub fn read(path: &Path) -> Result<Vec<TurnRecord>, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l).map_err(|e| format!("{}:{}: {e}", path.display(), i + 1))
            })
            .collect()
    }
}
