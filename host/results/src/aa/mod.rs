//! Artificial Analysis's own metrics and result files (agentperf-local 0.3.4's
//! `turns.jsonl`, `tasks.json`, `tools.json`, `failures.json`, `summary.json`
//! and `measurement.json`), computed from agentload's turn records: AA's
//! definitions beside agentload's own, from the same records.
//!
//! - **Timing.** TTFT is the first visible-output event (non-empty content,
//!   reasoning, or a tool call with a non-empty name or arguments: the
//!   records' first token under `endpoint.ttft_trigger = "rules"`), TTFB the
//!   first body bytes, generation the first to the last visible event (null
//!   with fewer than two), e2e to the stream's end. agentload stamps each
//!   event with the read that completed it, as AA does; its stamps are the
//!   kernel's arrival times where AA's are its read's return.
//! - **Tokens.** The server's `usage` (its last non-null object; integral
//!   floats accepted) first; `local_output_tokens` is o200k_base
//!   ([`o200k`]) over reasoning, content, then each tool call's name and
//!   arguments.
//! - **Headline.** `output_tokens_per_second` = Σ(n−1)/Σgeneration over
//!   successful turns with no tool calls, generation > 0 and n ≥ 2;
//!   `end_to_end_output_tokens_per_second` = Σn/Σe2e over successful turns.
//!   Distributions are `{count, mean, p50, p95}` with linear interpolation.
//!
//! The per-turn facts AA's files need that a record does not hold (AA's turn
//! and task ids, the request's `max_tokens`, the recorded counts and tool
//! calls) come from the record's expected data under `"aa"` ([`TurnInfo`]);
//! the run's settings from `run_manifest.json` and `config.toml` ([`RunFacts`]). A record without
//! them (a run of another workload) is named by its session and turn.

mod files;
mod measurement;
pub mod o200k;
pub mod shell;
mod summary;
mod turn;

#[cfg(test)]
mod cases;

pub use files::{write, write_run, Written, AA_DIR};
pub use measurement::{measurement, write_measurement, HardwareSnapshot};
pub use summary::{Headline, Report};
pub use turn::{Normalization, RecordedToolCall, TurnInfo, TurnReport};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// AA's full benchmark context: a run that proves less is `reduced`.
pub const BENCHMARK_CONTEXT_TOKENS: u64 = 65_536;

/// AA's transport policy id (`direct-sse-no-retry-v1`): HTTP/1.1, no proxy,
/// no redirect, no retry, only 2xx succeeds; agentload's client does the same.
pub const TRANSPORT_POLICY_ID: &str = "direct-sse-no-retry-v1";

/// A run's settings and preflight outcome as AA's files state them
/// ([`RunFacts::from_run_dir`]). Every field may be absent (an older run,
/// another workload): its place in AA's files is then null.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RunFacts {
    /// AA's run id (a UUIDv4), minted before inference.
    pub run_id: Option<String>,
    /// Wall clock at the replay's start and end, Unix seconds.
    pub started_at: Option<f64>,
    pub ended_at: Option<f64>,
    /// The manifest as named (`summary.json` `manifest`).
    pub manifest: Option<String>,
    /// The manifest's resolved path (`measurement.json` `private.manifest_path`).
    pub manifest_path: Option<String>,
    /// AA's workload digest of the manifest and its traces (`sha256:…`).
    pub workload_digest: Option<String>,
    /// The base URL as AA states it (ending in `/v1`).
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub request_timeout_seconds: Option<f64>,
    /// `exact`, `recorded` or `fixed`.
    pub policy: Option<String>,
    /// The cap when no other rule sets one (16,384).
    pub fallback: Option<u64>,
    /// Tokens added to each target under `recorded`.
    pub margin: Option<u64>,
    /// `{preset, temperature, top_p, extra_body}` as AA's summary writes it.
    pub sampling: Option<Value>,
    pub reasoning_effort: Option<String>,
    /// The 32-digit namespace prefixed to every turn's first message (null: cache
    /// isolation off).
    pub cache_namespace: Option<String>,
    /// `none` or `fixed_delay`.
    pub tool_mode: Option<String>,
    /// The context requested and what `/v1/models` said.
    pub context: Option<ContextFacts>,
    /// The ignore_eos probe's verdict and whatever the run keeps of it.
    pub probe: Option<Value>,
}

impl RunFacts {
    /// The facts a run directory holds: `run_manifest.json` (`endpoint`, `model`, the
    /// workload's `workload_facts.performance`, the host's `aa_preflight`, the
    /// `manifest` dataset's path) and `config.toml` (`load.turn_timeout_s`). Absent
    /// files and keys leave their fields empty.
    pub fn from_run_dir(dir: &Path) -> std::io::Result<Self> {
        let json = |name: &str| -> std::io::Result<Value> {
            match agentload_fs::read::read_to_string(dir.join(name)) {
                Ok(text) => serde_json::from_str(&text).map_err(|e| {
                    std::io::Error::other(format!("{}: {e}", dir.join(name).display()))
                }),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Null),
                Err(e) => Err(e),
            }
        };
        let manifest = json("run_manifest.json")?;
        let workload = &manifest["workload_facts"]["performance"];
        let preflight = &manifest["aa_preflight"];
        let text = |v: &Value| v.as_str().map(str::to_owned);
        let timeout = agentload_fs::read::read_to_string(dir.join("config.toml"))
            .ok()
            .and_then(|t| t.parse::<toml::Table>().ok())
            .and_then(|t| {
                let v = t.get("load")?.get("turn_timeout_s")?;
                v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
            });
        let manifest_path = manifest["datasets"]
            .as_array()
            .and_then(|d| d.iter().find(|d| d["name"] == "manifest"))
            .and_then(|d| text(&d["path"]))
            .map(|p| std::fs::canonicalize(&p).map_or(p, |abs| abs.to_string_lossy().into_owned()));
        let endpoint = text(&manifest["endpoint"]).map(|e| {
            let e = e.trim_end_matches('/');
            if e.ends_with("/v1") {
                e.to_owned()
            } else {
                format!("{e}/v1")
            }
        });
        let context = &preflight["context"];
        Ok(Self {
            run_id: text(&preflight["run_id"]),
            started_at: preflight["started_at"].as_f64(),
            ended_at: preflight["ended_at"].as_f64(),
            manifest: text(&workload["manifest"]),
            manifest_path,
            workload_digest: text(&workload["workload_digest"]),
            base_url: endpoint,
            model: text(&manifest["model"]),
            request_timeout_seconds: timeout,
            policy: text(&workload["policy"]),
            fallback: workload["fallback"].as_u64(),
            margin: workload["margin"].as_u64(),
            sampling: Some(workload["sampling"].clone()).filter(|v| !v.is_null()),
            reasoning_effort: text(&workload["reasoning_effort"]),
            cache_namespace: text(&workload["cache_isolation"]["namespace"]),
            tool_mode: text(&workload["tool_mode"]),
            context: context.is_object().then(|| ContextFacts {
                requested_tokens: context["requested_tokens"].as_u64(),
                observed_tokens: context["observed_tokens"].as_u64(),
                observed_reason: text(&context["observed_reason"]),
            }),
            probe: Some(preflight["ignore_eos_probe"].clone()).filter(|v| !v.is_null()),
        })
    }

    /// Whether the run replayed an AA manifest (its workload stated AA's workload digest).
    pub fn is_aa_run(&self) -> bool {
        self.workload_digest.is_some()
    }
}

/// The served context: requested, and observed by the preflight.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ContextFacts {
    pub requested_tokens: Option<u64>,
    pub observed_tokens: Option<u64>,
    /// `reported`, `endpoint-unreachable`, `http-error`, `malformed-response`,
    /// `model-not-listed`, `context-not-reported` or `non-positive-context`.
    pub observed_reason: Option<String>,
}

impl ContextFacts {
    /// AA's rule: reduced when less than the full context was requested, or the
    /// server proved less (or nothing).
    pub fn reduced(&self) -> bool {
        let below = |n: u64| n < BENCHMARK_CONTEXT_TOKENS;
        self.requested_tokens.is_some_and(below) || self.observed_tokens.is_none_or(below)
    }
}

/// AA's linear-interpolation percentile (`rank = (n−1)·q`); `None` without values.
pub fn percentile(values: &[f64], q: f64) -> Option<f64> {
    match values {
        [] => None,
        [one] => Some(*one),
        _ => {
            let mut sorted = values.to_vec();
            sorted.sort_by(f64::total_cmp);
            let rank = (sorted.len() - 1) as f64 * q;
            let lower = rank as usize;
            let upper = (lower + 1).min(sorted.len() - 1);
            let w = rank - lower as f64;
            Some(sorted[lower] * (1.0 - w) + sorted[upper] * w)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate_linearly() {
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[7.0], 0.95), Some(7.0));
        assert_eq!(percentile(&[4.0, 1.0, 3.0, 2.0], 0.5), Some(2.5));
        // rank 0.95 × 3 = 2.85: 3 × 0.15 + 4 × 0.85
        let p95 = percentile(&[1.0, 2.0, 3.0, 4.0], 0.95).unwrap();
        assert!((p95 - 3.85).abs() < 1e-12, "{p95}");
    }

    #[test]
    fn reduced_unless_the_full_context_is_proved() {
        let c = |requested, observed| ContextFacts {
            requested_tokens: requested,
            observed_tokens: observed,
            observed_reason: None,
        };
        assert!(!c(Some(65_536), Some(65_536)).reduced());
        assert!(!c(Some(65_536), Some(131_072)).reduced());
        assert!(c(Some(65_536), Some(32_768)).reduced());
        assert!(c(Some(65_536), None).reduced());
        assert!(c(Some(8_192), Some(65_536)).reduced());
    }
}
