//! Local token counting at a phase's end, on the edge replay's requests: each prompt counted
//! whole (as every turn was counted before) and after its session's previous prompt (as the
//! counting queue counts them now), alternated prompt by prompt, with the same count
//! required of both. From the two, what a turn of AA-AgentPerf's shape (a 27K-token prompt)
//! costs to count each way.

use super::build::{timed, EdgeReplay};
use super::Row;
use agentload_engine::tokens::{load_qwen, LocalCounter};
use agentload_tokenizer::{PromptCount, Tokenizer};
use anyhow::{Context as _, Result};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// AA-AgentPerf's mean context, tokens (`../shared/spec/agentperf.md`).
const AA_MEAN_CONTEXT: f64 = 27_000.0;

/// Counts every request of the edge replay both ways, one thread.
pub fn run(data_dir: &Path) -> Result<Vec<Row>> {
    let sessions = EdgeReplay::load(data_dir)?.sessions()?;
    let vocab = load_qwen(data_dir).map_err(anyhow::Error::msg)?;
    let counter = LocalCounter::new(Arc::new(Tokenizer::qwen(Arc::new(vocab))));
    let (mut whole_s, mut after_s) = (0.0, 0.0);
    let (mut prompts, mut bytes, mut tokens, mut reused) = (0usize, 0usize, 0usize, 0usize);
    for (s, bodies) in sessions.iter().enumerate() {
        let mut earlier: Option<PromptCount> = None;
        for (t, body) in bodies.iter().enumerate() {
            bytes += body.len();
            // Each way parses the body, as the counting queue does.
            let parse = || serde_json::from_slice::<Value>(body).context("a request body");
            let whole = |counter: &LocalCounter| -> Result<usize> {
                counter.count_prompt(&parse()?).map_err(anyhow::Error::msg)
            };
            let after = |counter: &LocalCounter| -> Result<PromptCount> {
                counter
                    .count_prompt_after(earlier.as_ref(), &parse()?)
                    .map_err(anyhow::Error::msg)
            };
            // Neither always goes first (and finds the other's caches warm).
            let ((n, whole_took), (counted, after_took)) = if prompts % 2 == 0 {
                let w = timed(|| whole(&counter));
                (w, timed(|| after(&counter)))
            } else {
                let a = timed(|| after(&counter));
                (timed(|| whole(&counter)), a)
            };
            let (n, counted) = (n?, counted?);
            anyhow::ensure!(
                n == counted.tokens(),
                "session {s} turn {t}: {n} tokens counted whole, {} after the last prompt",
                counted.tokens()
            );
            whole_s += whole_took / 1e3;
            after_s += after_took / 1e3;
            prompts += 1;
            tokens += n;
            reused += counted.reused_tokens();
            earlier = Some(counted);
        }
    }
    let turns_per_session = prompts as f64 / sessions.len().max(1) as f64;
    let mean_isl = tokens as f64 / prompts.max(1) as f64;
    let new_per_turn = (tokens - reused) as f64 / prompts.max(1) as f64;
    // Both ways parse, render and normalize the whole prompt (a cost per prompt token, a);
    // whole counts encode every token, after only the new ones (b per token encoded):
    // whole = (a + b) * tokens, after = a * tokens + b * (tokens - reused).
    let b = (whole_s - after_s) / reused.max(1) as f64;
    let a = (whole_s / tokens.max(1) as f64 - b).max(0.0);
    // A turn of AA's shape: a 27K-token prompt that adds what the edge replay's add.
    let aa_whole = (a + b) * AA_MEAN_CONTEXT * 1e3;
    let aa_after = (a * AA_MEAN_CONTEXT + b * new_per_turn) * 1e3;
    Ok(vec![
        Row::new(
            "counting",
            "prompts (edge replay)",
            prompts as f64,
            "prompts",
        ),
        Row::new("counting", "turns per session", turns_per_session, "turns"),
        Row::new("counting", "mean prompt", mean_isl, "tokens"),
        Row::new(
            "counting",
            "mean prompt",
            bytes as f64 / prompts.max(1) as f64 / 1024.0,
            "KiB",
        ),
        Row::new("counting", "whole prompts, all", whole_s, "s"),
        Row::new(
            "counting",
            "after the session's last prompt, all",
            after_s,
            "s",
        ),
        Row::new(
            "counting",
            "whole / after the last prompt",
            whole_s / after_s,
            "x",
        ),
        Row::new(
            "counting",
            "prompt tokens reused",
            reused as f64 / tokens.max(1) as f64 * 100.0,
            "%",
        ),
        Row::new("counting", "new tokens per prompt", new_per_turn, "tokens"),
        Row::new(
            "counting",
            "render and compare, per prompt token",
            a * 1e9,
            "ns",
        ),
        Row::new("counting", "encode, per token encoded", b * 1e9, "ns"),
        Row::new(
            "counting",
            "AA turn (27K prompt) whole, one core",
            aa_whole,
            "ms",
        ),
        Row::new(
            "counting",
            "AA turn (27K prompt) after the last, one core",
            aa_after,
            "ms",
        ),
    ])
}
