//! The llama.cpp-like timing model: prefix reuse, prefill and decode durations, token limits,
//! and llama.cpp's `timings` object. The batch scheduler ([`crate::scheduler`]) applies them.
//!
//! Like llama-server:
//! - the new prompt's tokens that a cached text shares as a prefix are reused ("cached"), except
//!   that at least one prompt token is always evaluated (llama.cpp needs fresh logits);
//!   `"cache_prompt": false` disables reuse;
//! - the first token comes out when prefill ends (it is sampled from the prompt's logits), each
//!   later token one decode step after the previous one;
//! - a prompt of `n_ctx` tokens or more is refused (`n_prompt_tokens >= n_ctx`);
//! - generation stops with `length` once the token budget is used: `max_tokens` or the context
//!   room `n_ctx - n_prompt_tokens`, whichever is smaller (llama.cpp stops when
//!   `n_past + 1 >= n_ctx`);
//! - a natural stop costs one more decode step: the end-of-generation token, which is counted in
//!   `completion_tokens` and `predicted_n` but not streamed.

use serde_json::{json, Value};

use crate::SimConfig;

/// Rates and scale of the simulated model, as scaled durations in seconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimingModel {
    prefill_tokens_per_s: f64,
    decode_tokens_per_s: f64,
    decode_batch_slowdown: f64,
    time_scale: f64,
    first_token_overhead_ms: f64,
}

impl TimingModel {
    pub(crate) fn new(config: &SimConfig) -> Self {
        Self {
            prefill_tokens_per_s: config.prefill_tokens_per_s,
            decode_tokens_per_s: config.decode_tokens_per_s,
            decode_batch_slowdown: config.decode_batch_slowdown,
            time_scale: config.time_scale,
            first_token_overhead_ms: config.first_token_overhead_ms,
        }
    }

    /// Time to process `tokens` prompt tokens, scaled.
    pub(crate) fn prefill(&self, tokens: u32) -> f64 {
        f64::from(tokens) / self.prefill_tokens_per_s * self.time_scale
    }

    /// The fixed first-token overhead, scaled.
    pub(crate) fn overhead(&self) -> f64 {
        self.first_token_overhead_ms / 1000.0 * self.time_scale
    }

    /// One decode step of a batch of `active` sequences (at least 1), scaled:
    /// `(1 + decode_batch_slowdown * (active - 1)) / decode_tokens_per_s`.
    pub(crate) fn decode_step(&self, active: usize) -> f64 {
        let extra = active.saturating_sub(1) as f64;
        (1.0 + self.decode_batch_slowdown * extra) / self.decode_tokens_per_s * self.time_scale
    }
}

/// Number of leading pieces (byte end offsets `ends`, ascending) that lie entirely within the
/// first `shared` bytes: the whole tokens of a prompt that a cached text of which it shares
/// `shared` bytes covers.
pub(crate) fn whole_pieces_within(ends: &[u32], shared: usize) -> u32 {
    u32::try_from(ends.partition_point(|&e| e as usize <= shared)).unwrap_or(u32::MAX)
}

/// Prompt tokens llama.cpp would reuse: the shared prefix, but at least one token is evaluated.
pub(crate) fn reusable_tokens(shared: u32, n_prompt: u32) -> u32 {
    shared.min(n_prompt.saturating_sub(1))
}

/// How many tokens are generated and why generation stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Generation {
    /// Pieces streamed.
    pub(crate) visible: u32,
    /// Tokens decoded: `visible`, plus the end-of-generation token on a natural stop.
    pub(crate) decoded: u32,
    /// Whether the budget cut the answer (finish reason `length`).
    pub(crate) truncated: bool,
}

impl Generation {
    /// The most tokens a request may generate: `max_tokens` (`None`: unlimited) within the
    /// context's room after a prompt of `n_prompt` tokens; llama.cpp samples the first token
    /// before checking the budget, so at least one.
    pub(crate) fn budget(max_tokens: Option<u32>, n_prompt: u32, n_ctx: u32) -> u32 {
        let room = n_ctx.saturating_sub(n_prompt);
        max_tokens.map_or(room, |m| m.min(room)).max(1)
    }

    /// `pieces` answer tokens, `max_tokens` from the request (`None`: unlimited), prompt of
    /// `n_prompt` tokens in a context of `n_ctx` (`n_prompt < n_ctx`).
    pub(crate) fn plan(pieces: u32, max_tokens: Option<u32>, n_prompt: u32, n_ctx: u32) -> Self {
        let budget = Self::budget(max_tokens, n_prompt, n_ctx);
        if pieces < budget {
            Self {
                visible: pieces,
                decoded: pieces + 1,
                truncated: false,
            }
        } else {
            Self {
                visible: budget,
                decoded: budget,
                truncated: true,
            }
        }
    }
}

/// llama.cpp's `timings` object (`result_timings::to_json`), from simulated durations:
/// `prompt_ms` spans prefill (from when the sequence may start it to its first token),
/// `predicted_ms` the first to the last decoded token, as llama.cpp measures
/// `t_token_generation`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Timings {
    pub(crate) cache_n: u32,
    pub(crate) prompt_n: u32,
    pub(crate) prompt_ms: f64,
    pub(crate) predicted_n: u32,
    pub(crate) predicted_ms: f64,
}

impl Timings {
    pub(crate) fn to_json(self) -> Value {
        let per_token = |ms: f64, n: u32| if n > 0 { ms / f64::from(n) } else { 0.0 };
        let per_second = |ms: f64, n: u32| {
            if ms > 0.0 {
                1e3 / ms * f64::from(n)
            } else {
                0.0
            }
        };
        json!({
            "cache_n": self.cache_n,
            "prompt_n": self.prompt_n,
            "prompt_ms": self.prompt_ms,
            "prompt_per_token_ms": per_token(self.prompt_ms, self.prompt_n),
            "prompt_per_second": per_second(self.prompt_ms, self.prompt_n),
            "predicted_n": self.predicted_n,
            "predicted_ms": self.predicted_ms,
            "predicted_per_token_ms": per_token(self.predicted_ms, self.predicted_n),
            "predicted_per_second": per_second(self.predicted_ms, self.predicted_n),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::common_prefix_len;
    use crate::tokens::{ApproxTokenCounter, TokenCounter};

    #[test]
    fn durations_follow_rates_and_scale() {
        let model = TimingModel::new(&SimConfig {
            prefill_tokens_per_s: 1000.0,
            decode_tokens_per_s: 50.0,
            time_scale: 0.5,
            first_token_overhead_ms: 10.0,
            decode_batch_slowdown: 0.25,
            ..SimConfig::default()
        });
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(model.prefill(2000), 1.0));
        assert!(close(model.overhead(), 0.005));
        assert!(close(model.decode_step(1), 0.01));
        assert!(close(model.decode_step(0), 0.01));
        // Five active sequences: 1 + 0.25 * 4 = 2 times the single-sequence step.
        assert!(close(model.decode_step(5), 0.02));
        let instant = TimingModel::new(&SimConfig {
            time_scale: 0.0,
            ..SimConfig::default()
        });
        assert_eq!(instant.prefill(5000), 0.0);
        assert_eq!(instant.decode_step(100), 0.0);
    }

    #[test]
    fn prefix_reuse_counts_whole_shared_tokens() {
        let c = ApproxTokenCounter;
        let previous = "<|user|>\nhello there<|end|>\n<|assistant|>\nanswer text";
        let new = "<|user|>\nhello there<|end|>\n<|assistant|>\nanswer text<|end|>\n<|user|>\nmore";
        let pieces = c.split(new);
        let mut end = 0;
        let ends: Vec<u32> = pieces
            .iter()
            .map(|p| {
                end += p.len() as u32;
                end
            })
            .collect();
        let shared_bytes = common_prefix_len(previous.as_bytes(), new.as_bytes());
        let shared = whole_pieces_within(&ends, shared_bytes);
        let shared_text: String = pieces[..shared as usize].concat();
        assert!(previous.starts_with(&shared_text));
        assert!(shared as usize >= c.split(previous).len() - 1);
        assert_eq!(whole_pieces_within(&ends, 0), 0);
        // "<|x" shares two bytes, less than the first piece.
        assert_eq!(
            whole_pieces_within(&ends, common_prefix_len(b"<|x", new.as_bytes())),
            0
        );
        assert_eq!(whole_pieces_within(&ends, new.len()), ends.len() as u32);
    }

    #[test]
    fn at_least_one_prompt_token_is_evaluated() {
        assert_eq!(reusable_tokens(100, 100), 99);
        assert_eq!(reusable_tokens(40, 100), 40);
        assert_eq!(reusable_tokens(0, 1), 0);
    }

    #[test]
    fn generation_budget() {
        // Natural stop: the end-of-generation token is decoded too.
        assert_eq!(
            Generation::plan(10, Some(100), 50, 1000),
            Generation {
                visible: 10,
                decoded: 11,
                truncated: false
            }
        );
        // max_tokens cuts.
        assert_eq!(
            Generation::plan(10, Some(10), 50, 1000),
            Generation {
                visible: 10,
                decoded: 10,
                truncated: true
            }
        );
        assert_eq!(
            Generation::plan(10, Some(4), 50, 1000),
            Generation {
                visible: 4,
                decoded: 4,
                truncated: true
            }
        );
        // The context fills: room is n_ctx - n_prompt.
        assert_eq!(
            Generation::plan(10, None, 995, 1000),
            Generation {
                visible: 5,
                decoded: 5,
                truncated: true
            }
        );
        // At least one token.
        assert_eq!(
            Generation::plan(10, Some(0), 50, 1000),
            Generation {
                visible: 1,
                decoded: 1,
                truncated: true
            }
        );
    }

    #[test]
    fn timings_json_matches_llama_cpp_fields() {
        let t = Timings {
            cache_n: 100,
            prompt_n: 400,
            prompt_ms: 400.0,
            predicted_n: 11,
            predicted_ms: 200.0,
        };
        let j = t.to_json();
        let keys: Vec<&str> = j.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "cache_n",
                "prompt_n",
                "prompt_ms",
                "prompt_per_token_ms",
                "prompt_per_second",
                "predicted_n",
                "predicted_ms",
                "predicted_per_token_ms",
                "predicted_per_second"
            ]
        );
        assert_eq!(j["prompt_per_token_ms"], 1.0);
        assert_eq!(j["prompt_per_second"], 1000.0);
        assert_eq!(j["predicted_n"], 11);
        assert_eq!(j["predicted_ms"], 200.0);
        assert_eq!(j["predicted_per_second"], 55.0);
        let zero = Timings {
            cache_n: 0,
            prompt_n: 1,
            prompt_ms: 0.0,
            predicted_n: 1,
            predicted_ms: 0.0,
        };
        assert_eq!(zero.to_json()["prompt_per_second"], 0.0);
        assert_eq!(zero.to_json()["predicted_per_second"], 0.0);
    }
}
