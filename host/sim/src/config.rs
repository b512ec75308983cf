//! Simulator configuration.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{Fault, SimError};

/// Whose model facts the simulator reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServeAs {
    /// llama-server's: `GET /props`, `meta.n_ctx` in `/v1/models`.
    #[default]
    LlamaCpp,
    /// vLLM's: `max_model_len` in `/v1/models`, no `/props`.
    Vllm,
}

/// Configuration of the simulated endpoint. Every field has a default, so `{}` is a valid config.
///
/// Durations follow a llama.cpp-like batching model (see the crate docs): prefill of the uncached
/// prompt tokens at `prefill_tokens_per_s`, then one token per decode step, a step taking
/// `1 / decode_tokens_per_s` for a lone sequence and longer in a batch, all multiplied by
/// `time_scale`. The defaults (one slot) are llama-server with `-np 1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SimConfig {
    /// Model id reported by `/v1/models`, and in answers when the request names none.
    pub model: String,
    /// Prompt processing rate, tokens per second (default 1000).
    pub prefill_tokens_per_s: f64,
    /// Generation rate, tokens per second (default 50).
    pub decode_tokens_per_s: f64,
    /// Context size of each slot, in tokens (default 32768).
    pub ctx_size: u32,
    /// Sequences processed concurrently (default 1, llama-server's `-np 1`); requests beyond
    /// them wait in arrival order.
    pub slots: u32,
    /// Slowdown of a decode step per additional generating sequence (default 0.1): a step of
    /// `n` sequences takes `(1 + decode_batch_slowdown * (n - 1)) / decode_tokens_per_s`. 0 is
    /// perfect batching, 1 no batching gain at all.
    pub decode_batch_slowdown: f64,
    /// Prompt tokens processed per batch iteration, on top of the decode step (default 512,
    /// llama.cpp's `n_ubatch`): a long prefill stretches the others' decode steps chunk by
    /// chunk instead of stopping them for its whole length.
    pub prefill_chunk_tokens: u32,
    /// Capacity in tokens of a prefix cache shared by all slots, with least-recently-used
    /// eviction (default 0: no shared cache, each slot reuses only its own previous prompt and
    /// answer, as llama-server without a prompt cache does).
    pub cache_tokens: u64,
    /// Multiplies every simulated duration (default 1; 0.01 runs 100 times faster).
    pub time_scale: f64,
    /// Fixed extra time before the first token, in milliseconds (default 0; scaled too).
    pub first_token_overhead_ms: f64,
    /// What the assistant answers (default: echo).
    pub responder: ResponderConfig,
    /// Faults injected into given requests (default none), as `"KIND@N"` strings (see
    /// [`crate::FAULT_HELP`]); at most one per request.
    pub faults: Vec<Fault>,
    /// Appends every chat-completions request to this JSONL file (default
    /// none): its number, `X-Session-ID`, body, and the body's length and
    /// sha256 as it came (`bytes`, `sha256`), for comparing what two clients
    /// sent, byte for byte. Each line is written and flushed as the request
    /// arrives.
    pub request_log: Option<std::path::PathBuf>,
    /// Writes one JSON line per chat request to this file when it ends (default none): its
    /// number and `X-Session-ID`, its arrival on the machine's monotonic clock
    /// (`received_mono_ns`), how it ended, and its prompt, cached and completion tokens. What
    /// a client delivered, on the server's clock: open-loop arrivals and prefix-cache hits are
    /// checked against it.
    pub request_stamps: Option<std::path::PathBuf>,
    /// Whose model facts the server reports (default `llama-cpp`): llama-server's (`GET
    /// /props` with `default_generation_settings.n_ctx`, and `meta.n_ctx` in `/v1/models`) or
    /// vLLM's (no `/props`; `max_model_len` in `/v1/models`).
    pub serve_as: ServeAs,
    /// Serve HTTPS from a certificate and key (default: plain HTTP).
    pub tls: Option<SimTls>,
}

/// The simulator's TLS: its certificate chain and key, and optionally the CA whose client
/// certificates it requires (mTLS).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimTls {
    /// The certificate chain (PEM, leaf first).
    pub cert: PathBuf,
    /// The leaf's private key (PEM).
    pub key: PathBuf,
    /// Require a client certificate issued by a CA in this PEM file; a client without one
    /// is refused during the handshake.
    #[serde(default)]
    pub client_ca: Option<PathBuf>,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            model: "agentload-sim".to_owned(),
            prefill_tokens_per_s: 1000.0,
            decode_tokens_per_s: 50.0,
            ctx_size: 32768,
            slots: 1,
            decode_batch_slowdown: 0.1,
            prefill_chunk_tokens: 512,
            cache_tokens: 0,
            time_scale: 1.0,
            first_token_overhead_ms: 0.0,
            responder: ResponderConfig::Echo,
            faults: Vec::new(),
            request_log: None,
            tls: None,
            request_stamps: None,
            serve_as: ServeAs::LlamaCpp,
        }
    }
}

impl SimConfig {
    /// Checks value ranges; [`crate::start`] calls it.
    pub fn validate(&self) -> Result<(), SimError> {
        let invalid = |field, reason: &str| {
            Err(SimError::InvalidConfig {
                field,
                reason: reason.to_owned(),
            })
        };
        if !(self.prefill_tokens_per_s.is_finite() && self.prefill_tokens_per_s > 0.0) {
            return invalid("prefill_tokens_per_s", "must be a positive number");
        }
        if !(self.decode_tokens_per_s.is_finite() && self.decode_tokens_per_s > 0.0) {
            return invalid("decode_tokens_per_s", "must be a positive number");
        }
        if self.ctx_size == 0 {
            return invalid("ctx_size", "must be at least 1");
        }
        if self.slots == 0 {
            return invalid("slots", "must be at least 1");
        }
        if !(self.decode_batch_slowdown.is_finite() && self.decode_batch_slowdown >= 0.0) {
            return invalid("decode_batch_slowdown", "must be a non-negative number");
        }
        if self.prefill_chunk_tokens == 0 {
            return invalid("prefill_chunk_tokens", "must be at least 1");
        }
        if !(self.time_scale.is_finite() && self.time_scale >= 0.0) {
            return invalid("time_scale", "must be a non-negative number");
        }
        if !(self.first_token_overhead_ms.is_finite() && self.first_token_overhead_ms >= 0.0) {
            return invalid("first_token_overhead_ms", "must be a non-negative number");
        }
        let mut hit = std::collections::HashSet::new();
        if let Some(twice) = self.faults.iter().find(|f| !hit.insert(f.request)) {
            return Err(SimError::InvalidConfig {
                field: "faults",
                reason: format!("request {} has two faults", twice.request),
            });
        }
        if let ResponderConfig::Oracle {
            error_rate,
            dataset,
            bfcl,
            ..
        } = &self.responder
        {
            if !(0.0..=1.0).contains(error_rate) {
                return invalid("responder.error_rate", "must be within [0, 1]");
            }
            if dataset.is_none() && bfcl.is_none() {
                return invalid(
                    "responder.dataset",
                    "the oracle needs a dataset, a BFCL folder, or both",
                );
            }
        }
        Ok(())
    }
}

/// Which responder produces the assistant's answers; tagged by `kind`
/// (`{"kind": "oracle", "dataset": "…"}`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ResponderConfig {
    /// Answers with the last user message's content (or the last message's), truncated to the
    /// token limit.
    #[default]
    Echo,
    /// Answers with exactly the request's `max_tokens` tokens of filler text (finish reason
    /// `length`): loads whose output lengths the workload draws, such as the synthetic agentic
    /// workload. With `decode_batch_slowdown = 0` and enough `slots`, every stream decodes at
    /// `decode_tokens_per_s`: a per-stream token rate.
    Fill {
        /// Tokens when the request sets no cap (default 256).
        #[serde(default = "default_fill_tokens")]
        default_tokens: u32,
    },
    /// Replays the recorded next assistant row of an agentic trajectory dataset (JSONL rows
    /// `{conversation_id, turn, role, …}`), keyed by the `X-Session-ID` header.
    Oracle {
        /// The trajectory dataset file.
        #[serde(default)]
        dataset: Option<PathBuf>,
        /// The BFCL v4 data folder (`bfcl_v4`, with `possible_answer/`): session ids that are
        /// BFCL single-turn entry ids get the gold calls.
        #[serde(default)]
        bfcl: Option<PathBuf>,
        /// Probability in `[0, 1]` of perturbing a turn's tool calls (default 0).
        #[serde(default)]
        error_rate: f64,
        /// Seed of the per-(session, turn) perturbation draw (default 0).
        #[serde(default)]
        seed: u64,
        /// Cut answers at the request's `max_tokens` as llama.cpp would (default false). The
        /// oracle stands for the model that produced the recording, which ran without the edge
        /// config's 1,024-token cap: 10 of the 1,007 recorded turns are longer in Qwen3.6
        /// tokens, and capped they lose their tool calls.
        #[serde(default)]
        cap_to_max_tokens: bool,
    },
    /// Canned completions from a JSONL script keyed by `X-Session-ID` and the 1-based index of
    /// that session's request.
    Script {
        /// The script file.
        path: PathBuf,
    },
}

/// `fill`'s answer length when the request sets no cap.
fn default_fill_tokens() -> u32 {
    256
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_config_gets_defaults() {
        let c: SimConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(c, SimConfig::default());
        c.validate().unwrap();
    }

    #[test]
    fn unknown_fields_are_rejected() {
        assert!(serde_json::from_str::<SimConfig>(r#"{"decode_rate": 3}"#).is_err());
        assert!(serde_json::from_str::<SimConfig>(
            r#"{"responder": {"kind": "script", "path": "x", "typo": 1}}"#
        )
        .is_err());
    }

    #[test]
    fn responder_variants_parse() {
        let c: SimConfig = serde_json::from_str(
            r#"{"time_scale": 0.5, "responder": {"kind": "oracle", "dataset": "d.jsonl", "error_rate": 0.25, "seed": 7}}"#,
        )
        .unwrap();
        assert_eq!(
            c.responder,
            ResponderConfig::Oracle {
                dataset: Some("d.jsonl".into()),
                bfcl: None,
                error_rate: 0.25,
                seed: 7,
                cap_to_max_tokens: false,
            }
        );
        let c: SimConfig = serde_json::from_str(r#"{"responder": {"kind": "echo"}}"#).unwrap();
        assert_eq!(c.responder, ResponderConfig::Echo);
        let round_trip: SimConfig =
            serde_json::from_value(serde_json::to_value(&c).unwrap()).unwrap();
        assert_eq!(round_trip, c);
    }

    #[test]
    fn validation_rejects_bad_values() {
        let bad = SimConfig {
            decode_tokens_per_s: 0.0,
            ..SimConfig::default()
        };
        assert!(matches!(
            bad.validate(),
            Err(SimError::InvalidConfig {
                field: "decode_tokens_per_s",
                ..
            })
        ));
        let bad = SimConfig {
            responder: ResponderConfig::Oracle {
                dataset: Some("d".into()),
                bfcl: None,
                error_rate: 1.5,
                seed: 0,
                cap_to_max_tokens: false,
            },
            ..SimConfig::default()
        };
        assert!(bad.validate().is_err());
        let twice: SimConfig =
            serde_json::from_str(r#"{"faults": ["reset@2", "stall@3", "http-500@2"]}"#).unwrap();
        let err = twice.validate().unwrap_err().to_string();
        assert!(err.contains("`faults` request 2 has two faults"), "{err}");
    }
}
