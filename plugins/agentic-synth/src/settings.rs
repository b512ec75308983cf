//! The plugin's settings table. Lengths are in words of the built-in
//! vocabulary: each word is one token for the Qwen3 vocabulary and for the
//! simulator's approximate counter, so words stand for tokens.

use crate::draw::LogNormal;
use agentload_sdk::live::{HistoryMode, LiveSettings};
use agentload_sdk::{Config, Error};
use serde::Deserialize;

/// Parsed settings, AA-AgentPerf's shape by default. An unknown key or a
/// wrong type is an error naming the key.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Seed of every draw: the same seed gives the same trajectories.
    pub seed: u64,
    /// Sessions to run when `num_trajectories_to_issue` is not set.
    pub trajectories: u32,
    /// Sessions to run (a sweep sets it: agents × trajectories per agent).
    pub num_trajectories_to_issue: Option<u32>,
    /// Wait each tool call's drawn execution time before the next request.
    pub inject_tool_delay: bool,
    /// Requests per session (a session may end earlier at `max_context`).
    pub turns_min: u32,
    pub turns_max: u32,
    /// Words of the system prompt, shared by every session.
    pub system_words: u32,
    /// Words of the first user message (the task and the files it shows).
    pub context: LogNormal,
    /// Words a tool call's result adds to the context.
    pub tool_output: LogNormal,
    /// Output length of a turn that only calls a tool.
    pub tool_call_osl: LogNormal,
    /// Output length of a turn that reasons at length (then calls a tool, or
    /// answers: the session's last turn).
    pub reasoning_osl: LogNormal,
    /// Share of tool-calling turns that reason at length first.
    pub reasoning_share: f64,
    /// A tool's execution time before the next request, in ms.
    pub tool_delay_ms: LogNormal,
    /// No request's prompt plus its output exceeds this many words: the
    /// session ends at the turn before.
    pub max_context: u32,
    /// Sent on every turn when set.
    pub temperature: Option<f64>,
    /// `recorded` (the drawn answers; the default) or `live` (each request
    /// carries the model's own earlier replies; never official).
    pub history: HistoryMode,
    /// Live-reply replay: the policy per class, the placeholder, reasoning.
    pub live: LiveSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            seed: 0,
            trajectories: 1000,
            num_trajectories_to_issue: None,
            inject_tool_delay: true,
            turns_min: 4,
            turns_max: 24,
            system_words: 1500,
            context: LogNormal {
                median: 14_000.0,
                sigma: 0.75,
                min: 3_500,
                max: 110_000,
            },
            tool_output: LogNormal {
                median: 500.0,
                sigma: 1.0,
                min: 20,
                max: 8_000,
            },
            tool_call_osl: LogNormal {
                median: 120.0,
                sigma: 0.6,
                min: 16,
                max: 1_024,
            },
            reasoning_osl: LogNormal {
                median: 1_200.0,
                sigma: 0.8,
                min: 256,
                max: 16_384,
            },
            reasoning_share: 0.2,
            tool_delay_ms: LogNormal {
                median: 1_000.0,
                sigma: 0.9,
                min: 50,
                max: 5_000,
            },
            max_context: 131_072,
            temperature: None,
            history: HistoryMode::Recorded,
            live: LiveSettings::default(),
        }
    }
}

impl Settings {
    /// The settings table, checked.
    pub fn from_config(config: &Config) -> Result<Self, Error> {
        let s: Settings = config.settings()?;
        let bad = |key: &str, rule: &str| Err(Error::config(format!("settings: `{key}` {rule}")));
        if s.num_trajectories_to_issue.unwrap_or(s.trajectories) == 0 {
            return bad("trajectories", "must be at least 1");
        }
        if s.turns_min == 0 || s.turns_min > s.turns_max {
            return bad("turns_min", "must be at least 1 and at most `turns_max`");
        }
        for (key, dist) in [
            ("context", &s.context),
            ("tool_output", &s.tool_output),
            ("tool_call_osl", &s.tool_call_osl),
            ("reasoning_osl", &s.reasoning_osl),
            ("tool_delay_ms", &s.tool_delay_ms),
        ] {
            if let Some(rule) = dist.invalid() {
                return bad(key, rule);
            }
        }
        if s.tool_call_osl.min == 0 || s.reasoning_osl.min == 0 {
            return bad(
                "tool_call_osl",
                "and `reasoning_osl` need `min` of at least 1",
            );
        }
        if !(0.0..=1.0).contains(&s.reasoning_share) {
            return bad("reasoning_share", "must be in [0, 1]");
        }
        let first = s.system_words + s.context.max + s.reasoning_osl.max;
        if first > s.max_context {
            return bad(
                "max_context",
                &format!(
                    "must hold the longest first turn: system_words + context.max + \
                     reasoning_osl.max = {first}"
                ),
            );
        }
        if s.temperature.is_some_and(|t| t.is_nan() || t < 0.0) {
            return bad("temperature", "must be a non-negative number");
        }
        s.live.check()?;
        Ok(s)
    }

    /// Sessions to run.
    pub fn sessions(&self) -> u32 {
        self.num_trajectories_to_issue.unwrap_or(self.trajectories)
    }
}
