//! One turn as AA's `turns.jsonl` states it, from agentload's record.

use super::{o200k, shell};
use crate::record::{TurnRecord, TurnStatus};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// AA's normalization stops trusting a turn whose output is below half its target.
const SHORT_OUTPUT_RATIO: f64 = 0.5;
/// A first-to-last window needs two output tokens.
const MIN_MEASURABLE_OUTPUT_TOKENS: u64 = 2;

/// What AA's files need of a turn that its record does not hold: the trace
/// row's facts, kept by the workload in the record's expected data under
/// `"aa"`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TurnInfo {
    /// `<task_id>:NNNN`.
    pub turn_id: String,
    pub task_id: String,
    /// 0-based turn index in its task.
    pub conversation_idx: u64,
    /// The request's `max_tokens` (AA's `requested_max_output_tokens`).
    pub max_tokens: Option<u64>,
    pub recorded_prompt_tokens: Option<u64>,
    pub recorded_completion_tokens: Option<u64>,
    /// The row's own `target_output_tokens` (AA falls back to the recorded
    /// completion tokens).
    pub target_output_tokens: Option<u64>,
    /// The row's `simulated_tool_delay_ms_after`.
    pub recorded_tool_delay_ms: f64,
    /// The row's `recorded_tool_calls_after`, in order.
    pub tool_calls: Vec<RecordedToolCall>,
    /// The run's tool mode (`none` or `fixed_delay`), where the turn states it.
    pub tool_mode: Option<String>,
}

/// One recorded tool call after a turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecordedToolCall {
    pub tool_name: Option<String>,
    pub tool_call_id: Option<String>,
    /// `action.command`, verbatim.
    pub command: Option<String>,
    pub step: Option<u64>,
    pub action_index: Option<u64>,
    pub duration_ms: f64,
    pub recorded_returncode: Option<i64>,
}

impl TurnInfo {
    /// The `"aa"` object of a record's expected data; for a record of another
    /// workload, its session as the task and its turn as the index.
    pub fn of(record: &TurnRecord) -> Self {
        serde_json::from_str::<Value>(&record.expected_json)
            .ok()
            .and_then(|mut v| v.get_mut("aa").map(Value::take))
            .and_then(|aa| serde_json::from_value(aa).ok())
            .unwrap_or_else(|| Self {
                turn_id: format!("{}:{:04}", record.session_id, record.turn),
                task_id: record.session_id.clone(),
                conversation_idx: u64::from(record.turn),
                ..Self::default()
            })
    }
}

/// One turn's row of AA's `turns.jsonl`, and what the summary reads of it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnReport {
    pub info: TurnInfo,
    pub success: bool,
    pub error: Option<String>,
    /// The answer was read whole and decoded (AA's `metrics` present).
    pub measured: bool,
    pub e2e_ms: Option<f64>,
    pub ttfb_ms: Option<f64>,
    pub ttft_ms: Option<f64>,
    pub generation_ms: Option<f64>,
    pub server_prompt_tokens: Option<u64>,
    pub server_output_tokens: Option<u64>,
    pub server_cached_prompt_tokens: Option<u64>,
    pub local_output_tokens: Option<u64>,
    pub normalization: Normalization,
    pub replayed_tool_delay_ms: f64,
    /// The replayed tool calls (none after a failed turn, as AA pauses for none).
    pub tool_calls: Vec<ToolReplay>,
    /// Decoded data events (null where the record predates their count).
    pub response_chunks: Option<u64>,
    pub response_tool_calls: u64,
    pub finish_reason: Option<String>,
    pub aborted: bool,
}

/// A recorded tool call as replayed.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolReplay {
    pub call: RecordedToolCall,
    /// The executable the command runs ([`shell::executable`]).
    pub command: Option<String>,
    pub replayed_duration_ms: f64,
    /// `none` or `recorded`.
    pub delay_source: &'static str,
}

/// AA's output-length normalization of one turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Normalization {
    pub observed_output_tokens: Option<u64>,
    pub target_output_tokens: Option<u64>,
    pub normalized_decode_tokens: Option<u64>,
    pub generation_ms_per_token: Option<f64>,
    pub normalized_generation_ms: Option<f64>,
    pub normalized_e2e_latency_ms: Option<f64>,
    pub warning: Option<Warning>,
}

/// Why a turn's normalization is not to be trusted.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    /// `observed_output_below_target` or `decode_window_unmeasurable`.
    pub code: &'static str,
    pub observed_output_tokens: u64,
    pub target_output_tokens: u64,
    pub ratio: f64,
}

fn ms(from: Option<u64>, to: Option<u64>) -> Option<f64> {
    Some(to?.saturating_sub(from?) as f64 / 1e6)
}

/// Bytes of an error answer's body AA quotes.
const ERROR_BODY_BYTES: usize = 512;

/// A failed turn's error as AA words it: an HTTP error status as AA's client
/// reports it (`CompletionError: endpoint returned HTTP <code>: <the body's first
/// 512 bytes>`); any other cause (AA's own verification messages among them)
/// verbatim.
fn aa_error(error: &str) -> String {
    let http = error.strip_prefix("HTTP ").and_then(|rest| {
        let code = rest
            .get(..3)
            .filter(|c| c.bytes().all(|b| b.is_ascii_digit()))?;
        let mut after = &rest[3..];
        // `HTTP 429 (Retry-After: 5): body`: the header is agentload's addition.
        if after.starts_with(" (Retry-After:") {
            after = &after[after.find(')')? + 1..];
        }
        Some((code, after.strip_prefix(": ")?))
    });
    match http {
        Some((code, body)) => {
            let cut = &body.as_bytes()[..body.len().min(ERROR_BODY_BYTES)];
            format!(
                "CompletionError: endpoint returned HTTP {code}: {}",
                String::from_utf8_lossy(cut)
            )
        }
        None => error.to_owned(),
    }
}

/// A usage count: a non-negative integer, or a float that is one.
fn count(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    v.as_u64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 2f64.powi(63))
            .map(|f| f as u64)
    })
}

/// `usage`'s prompt, completion and cached prompt tokens.
fn usage(record: &TurnRecord) -> [Option<u64>; 3] {
    let Some(usage) = record
        .usage
        .as_ref()
        .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
    else {
        return [None; 3];
    };
    [
        count(usage.get("prompt_tokens")),
        count(usage.get("completion_tokens")),
        count(
            usage
                .get("prompt_tokens_details")
                .and_then(|d| d.get("cached_tokens")),
        ),
    ]
}

impl TurnReport {
    /// The turn `record` made; `tool_mode` is the run's (`none` or `fixed_delay`), unless
    /// the turn states its own.
    pub fn of(record: &TurnRecord, tool_mode: &str) -> Self {
        let info = TurnInfo::of(record);
        let tool_mode = info.tool_mode.as_deref().unwrap_or(tool_mode);
        let success = record.status == TurnStatus::Completed;
        let completion = record.completion.as_ref();
        let measured = completion.is_some();
        let [server_prompt_tokens, server_output_tokens, server_cached_prompt_tokens] =
            if measured { usage(record) } else { [None; 3] };
        let local_output_tokens = completion.map(|c| {
            let mut text = String::with_capacity(c.reasoning_content.len() + c.content.len());
            text.push_str(&c.reasoning_content);
            text.push_str(&c.content);
            for call in &c.tool_calls {
                text.push_str(&call.name);
                text.push_str(&call.arguments);
            }
            o200k::count(&text)
        });
        let (e2e_ms, ttfb_ms, ttft_ms, generation_ms) = if measured {
            (
                ms(record.issued_ns, record.complete_ns),
                ms(record.issued_ns, record.first_byte_ns),
                ms(record.issued_ns, record.first_token_ns),
                if record.token_chunks >= 2 {
                    ms(record.first_token_ns, record.last_token_ns)
                } else {
                    None
                },
            )
        } else {
            (None, None, None, None)
        };
        let observed = server_output_tokens.or(local_output_tokens);
        let target = info
            .target_output_tokens
            .or(info.recorded_completion_tokens);
        let normalization = Normalization::of(e2e_ms, generation_ms, observed, target);
        let tool_calls: Vec<ToolReplay> = if success {
            info.tool_calls
                .iter()
                .map(|call| {
                    let recorded = tool_mode == "fixed_delay";
                    ToolReplay {
                        command: shell::executable(call.command.as_deref()),
                        replayed_duration_ms: if recorded { call.duration_ms } else { 0.0 },
                        delay_source: if recorded { "recorded" } else { "none" },
                        call: call.clone(),
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        Self {
            success,
            error: if success {
                None
            } else {
                record.error.as_deref().map(aa_error)
            },
            measured,
            e2e_ms,
            ttfb_ms,
            ttft_ms,
            generation_ms,
            server_prompt_tokens,
            server_output_tokens,
            server_cached_prompt_tokens,
            local_output_tokens,
            normalization,
            replayed_tool_delay_ms: super::summary::py_sum(
                tool_calls.iter().map(|t| t.replayed_duration_ms),
            ),
            tool_calls,
            response_chunks: if measured {
                record.data_events.map(u64::from)
            } else {
                Some(0)
            },
            response_tool_calls: completion.map_or(0, |c| c.tool_calls.len() as u64),
            finish_reason: completion.and_then(|c| c.finish_reason.clone()),
            aborted: record.status == TurnStatus::Interrupted,
            info,
        }
    }

    /// The output count the turn reports: the server's, else the local one.
    pub fn reported_output_tokens(&self) -> Option<u64> {
        self.server_output_tokens.or(self.local_output_tokens)
    }

    /// `prompt − cached`, where the server reports both.
    pub fn server_uncached_prompt_tokens(&self) -> Option<u64> {
        Some(
            self.server_prompt_tokens?
                .saturating_sub(self.server_cached_prompt_tokens?),
        )
    }

    /// The turn's target: the row's, else its recorded completion tokens.
    pub fn target_output_tokens(&self) -> Option<u64> {
        self.info
            .target_output_tokens
            .or(self.info.recorded_completion_tokens)
    }

    /// The row as AA writes it (keys sorted when written).
    pub fn to_json(&self) -> Value {
        let info = &self.info;
        json!({
            "version": 1,
            "kind": "turn",
            "turn_id": info.turn_id,
            "task_id": info.task_id,
            "conversation_idx": info.conversation_idx,
            "success": self.success,
            "error": self.error,
            "requested_max_output_tokens": info.max_tokens,
            "timing": {
                "e2e_latency_ms": self.e2e_ms,
                "time_to_first_byte_ms": self.ttfb_ms,
                "time_to_first_token_ms": self.ttft_ms,
                "generation_ms": self.generation_ms,
            },
            "tokens": {
                "server_prompt_tokens": self.server_prompt_tokens,
                "server_output_tokens": self.server_output_tokens,
                "local_output_tokens": self.local_output_tokens,
                "recorded_prompt_tokens": info.recorded_prompt_tokens,
                "recorded_completion_tokens": info.recorded_completion_tokens,
                "target_output_tokens": self.target_output_tokens(),
                "server_cached_prompt_tokens": self.server_cached_prompt_tokens,
                "server_uncached_prompt_tokens": self.server_uncached_prompt_tokens(),
            },
            "normalization": self.normalization.to_json(),
            "recorded_tool_delay_ms": info.recorded_tool_delay_ms,
            "replayed_tool_delay_ms": self.replayed_tool_delay_ms,
            "tool_calls": self.tool_calls.iter().map(ToolReplay::to_json).collect::<Vec<_>>(),
            "response_chunks": self.response_chunks,
            "response_tool_calls": self.response_tool_calls,
            "finish_reason": self.finish_reason,
            "aborted": self.aborted,
        })
    }
}

impl ToolReplay {
    pub fn to_json(&self) -> Value {
        let c = &self.call;
        json!({
            "tool_name": c.tool_name,
            "tool_call_id": c.tool_call_id,
            "command": self.command,
            "step": c.step,
            "action_index": c.action_index,
            "recorded_duration_ms": c.duration_ms,
            "replayed_duration_ms": self.replayed_duration_ms,
            "delay_source": self.delay_source,
            "recorded_returncode": c.recorded_returncode,
            "returncode": null,
            "returncode_matches_recorded": null,
            "exception_info": "",
            "profile_key": null,
        })
    }
}

impl Warning {
    fn below_target(observed: Option<u64>, target: Option<u64>) -> Option<Self> {
        let (observed, target) = (observed?, target.filter(|&t| t > 0)?);
        let ratio = observed as f64 / target as f64;
        (ratio < SHORT_OUTPUT_RATIO).then_some(Self {
            code: "observed_output_below_target",
            observed_output_tokens: observed,
            target_output_tokens: target,
            ratio,
        })
    }

    fn unmeasurable(observed: u64, target: Option<u64>) -> Self {
        let target = target.unwrap_or(observed);
        Self {
            code: "decode_window_unmeasurable",
            observed_output_tokens: observed,
            target_output_tokens: target,
            ratio: if target > 0 {
                observed as f64 / target as f64
            } else {
                0.0
            },
        }
    }

    fn to_json(&self) -> Value {
        let message = if self.code == "decode_window_unmeasurable" {
            "the turn has no measurable first-to-last output token window".to_owned()
        } else {
            format!(
                "observed output is less than {:.0}% of the normalization target",
                SHORT_OUTPUT_RATIO * 100.0
            )
        };
        json!({
            "code": self.code,
            "message": message,
            "observed_output_tokens": self.observed_output_tokens,
            "target_output_tokens": self.target_output_tokens,
            "observed_to_target_ratio": self.ratio,
            "threshold": SHORT_OUTPUT_RATIO,
        })
    }
}

impl Normalization {
    /// AA's `normalize_output_length`.
    pub fn of(
        e2e_ms: Option<f64>,
        generation_ms: Option<f64>,
        observed: Option<u64>,
        target: Option<u64>,
    ) -> Self {
        let unnormalized = |warning| Self {
            observed_output_tokens: observed,
            target_output_tokens: target,
            warning,
            ..Self::default()
        };
        let (Some(n), Some(e2e)) = (observed, e2e_ms) else {
            return unnormalized(Warning::below_target(observed, target));
        };
        let Some(generation) =
            generation_ms.filter(|&g| g > 0.0 && n >= MIN_MEASURABLE_OUTPUT_TOKENS)
        else {
            return unnormalized(Some(Warning::unmeasurable(n, target)));
        };
        let target = target.unwrap_or(n);
        let per_token = generation / (n - 1) as f64;
        let decode = target.saturating_sub(1);
        let normalized_generation = per_token * decode as f64;
        Self {
            observed_output_tokens: Some(n),
            target_output_tokens: Some(target),
            normalized_decode_tokens: Some(decode),
            generation_ms_per_token: Some(per_token),
            normalized_generation_ms: Some(normalized_generation),
            normalized_e2e_latency_ms: Some((e2e - generation + normalized_generation).max(0.0)),
            warning: Warning::below_target(Some(n), Some(target)),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "observed_output_tokens": self.observed_output_tokens,
            "target_output_tokens": self.target_output_tokens,
            "normalized_decode_tokens": self.normalized_decode_tokens,
            "generation_ms_per_token": self.generation_ms_per_token,
            "normalized_generation_ms": self.normalized_generation_ms,
            "normalized_e2e_latency_ms": self.normalized_e2e_latency_ms,
            "warning": self.warning.as_ref().map(Warning::to_json),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::aa_error;

    #[test]
    fn http_errors_read_as_aas_client_words_them() {
        assert_eq!(
            aa_error("HTTP 500: {\"error\": 1}"),
            "CompletionError: endpoint returned HTTP 500: {\"error\": 1}"
        );
        assert_eq!(
            aa_error("HTTP 429 (Retry-After: 5): slow down"),
            "CompletionError: endpoint returned HTTP 429: slow down"
        );
        let long = format!("HTTP 400: {}é", "x".repeat(511));
        // 512 bytes: the cut splits the é, which reads as U+FFFD as in Python.
        assert_eq!(
            aa_error(&long),
            format!(
                "CompletionError: endpoint returned HTTP 400: {}\u{fffd}",
                "x".repeat(511)
            )
        );
        let exact = "exact output policy: server finished with 'stop' instead of generating the full length";
        assert_eq!(aa_error(exact), exact);
        assert_eq!(aa_error("transport error: reset"), "transport error: reset");
    }
}
