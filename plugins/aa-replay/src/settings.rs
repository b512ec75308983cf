//! The plugin's settings table: agentperf-local's run options, with its
//! defaults and its checks (`replay/config.py`).

use agentload_sdk::{Config, Error};
use serde::Deserialize;

/// agentperf-local's `DEFAULT_MAX_OUTPUT_TOKENS`.
pub const FALLBACK_MAX_OUTPUT_TOKENS: u32 = 16_384;

/// How each turn's output length is set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// The recorded length, and `ignore_eos`: every turn generates exactly it.
    #[default]
    Exact,
    /// The recorded length as a cap only.
    Recorded,
    /// One cap (`max_output_tokens`) for every turn.
    Fixed,
}

impl Policy {
    /// Its name, as agentperf-local spells it.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Exact => "exact",
            Policy::Recorded => "recorded",
            Policy::Fixed => "fixed",
        }
    }
}

/// The sampling values sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// temperature 0.7, top_p 0.8, top_k 20, min_p 0.0 (each replaced by a value set here).
    #[default]
    Standard,
    /// Only the values set here.
    Custom,
}

/// How the recorded tool time between turns is replayed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolMode {
    /// No pause between turns.
    #[default]
    None,
    /// After each successful turn, the sum of its recorded tool calls' durations.
    FixedDelay,
}

impl ToolMode {
    pub fn name(self) -> &'static str {
        match self {
            ToolMode::None => "none",
            ToolMode::FixedDelay => "fixed_delay",
        }
    }
}

/// Parsed settings. An unknown key or a wrong type is an error naming the key.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// The grant of the manifest file.
    pub manifest: String,
    /// The grant of the manifest's folder (its traces).
    pub replay: String,
    /// `exact`, `recorded` or `fixed` (agentperf-local's `--output-token-policy`).
    pub policy: Policy,
    /// The cap on every turn's output, and the one output length of `fixed`.
    pub max_output_tokens: u32,
    /// Added to the recorded length under `recorded`.
    pub output_token_margin: u32,
    /// `standard` or `custom`.
    pub sampling: Preset,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<i64>,
    pub min_p: Option<f64>,
    /// `none` sends `tool_choice: "none"`.
    pub tool_choice: Option<String>,
    /// Sent as `reasoning_effort`.
    pub reasoning_effort: Option<String>,
    /// Prefix the first message of every request with the run's cache namespace.
    pub cache_isolation: bool,
    /// The namespace; default: the run's nonce (fresh for every run).
    pub cache_namespace: Option<String>,
    /// `none` or `fixed_delay`.
    pub tool_mode: ToolMode,
    /// The sweep's key: this many sessions, the manifest's tasks one after
    /// another, again from the first when they run out (default: each task once).
    pub num_trajectories_to_issue: Option<u32>,
    /// The sweep's key (`tool_delay = "recorded"`): `true` is
    /// `tool_mode = "fixed_delay"`, `false` is `"none"`.
    pub inject_tool_delay: Option<bool>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            manifest: "manifest".into(),
            replay: "replay".into(),
            policy: Policy::Exact,
            max_output_tokens: FALLBACK_MAX_OUTPUT_TOKENS,
            output_token_margin: 0,
            sampling: Preset::Standard,
            temperature: None,
            top_p: None,
            top_k: None,
            min_p: None,
            tool_choice: None,
            reasoning_effort: None,
            cache_isolation: true,
            cache_namespace: None,
            tool_mode: ToolMode::None,
            num_trajectories_to_issue: None,
            inject_tool_delay: None,
        }
    }
}

/// The sampling values a request carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<u32>,
    pub min_p: Option<f64>,
}

impl Settings {
    /// The settings table, checked as agentperf-local checks its run options.
    pub fn from_config(config: &Config) -> Result<Self, Error> {
        if let Ok(table) = serde_json::from_str::<serde_json::Value>(&config.settings_json) {
            if table.get("tool_mode").and_then(|v| v.as_str()) == Some("live") {
                return Err(Error::config(
                    "settings: `tool_mode = \"live\"` (running the recorded commands in Docker) is \
                     not supported; use \"none\" or \"fixed_delay\"",
                ));
            }
        }
        let mut s: Settings = config.settings()?;
        match s.inject_tool_delay {
            Some(true) => s.tool_mode = ToolMode::FixedDelay,
            Some(false) => s.tool_mode = ToolMode::None,
            None => {}
        }
        let bad = |key: &str, rule: &str| Err(Error::config(format!("settings: `{key}` {rule}")));
        for (key, v) in [
            ("temperature", s.temperature),
            ("top_p", s.top_p),
            ("min_p", s.min_p),
        ] {
            if v.is_some_and(|v| !v.is_finite()) {
                return bad(key, "must be a finite number");
            }
        }
        if s.num_trajectories_to_issue == Some(0) {
            return bad("num_trajectories_to_issue", "must be at least 1");
        }
        if s.max_output_tokens == 0 {
            return bad("max_output_tokens", "must be at least 1");
        }
        if s.policy == Policy::Exact && s.output_token_margin != 0 {
            return bad(
                "output_token_margin",
                "must be 0 under policy \"exact\" (it pins each turn to its recorded length)",
            );
        }
        if s.temperature.is_some_and(|t| t < 0.0) {
            return bad("temperature", "must not be negative");
        }
        if s.top_p.is_some_and(|p| !(p > 0.0 && p <= 1.0)) {
            return bad("top_p", "must be greater than zero and at most one");
        }
        if s.top_k.is_some_and(|k| k <= 0 || k > i64::from(u32::MAX)) {
            return bad("top_k", "must be a positive integer");
        }
        if s.min_p.is_some_and(|p| !(0.0..=1.0).contains(&p)) {
            return bad("min_p", "must be between zero and one");
        }
        if s.tool_choice.as_deref().is_some_and(|c| c != "none") {
            return bad("tool_choice", "must be \"none\" (or left out)");
        }
        if s.reasoning_effort.as_deref() == Some("") {
            return bad("reasoning_effort", "must not be empty");
        }
        if !s.cache_isolation && s.cache_namespace.is_some() {
            return bad("cache_namespace", "needs cache_isolation = true");
        }
        if s.cache_namespace.as_deref() == Some("") {
            return bad("cache_namespace", "must not be empty");
        }
        Ok(s)
    }

    /// The sampling values sent: the preset's, each replaced by a value set here.
    pub fn sampling_values(&self) -> Sampling {
        let standard = self.sampling == Preset::Standard;
        Sampling {
            temperature: self.temperature.or(standard.then_some(0.7)),
            top_p: self.top_p.or(standard.then_some(0.8)),
            top_k: self.top_k.map(|k| k as u32).or(standard.then_some(20)),
            min_p: self.min_p.or(standard.then_some(0.0)),
        }
    }

    /// The preset's name.
    pub fn preset_name(&self) -> &'static str {
        match self.sampling {
            Preset::Standard => "standard",
            Preset::Custom => "custom",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Settings, Error> {
        Settings::from_config(&Config::with_settings(json))
    }

    fn refusal(json: &str) -> String {
        match parse(json) {
            Err(Error::Config(m)) => m,
            other => panic!("{json}: expected invalid-config, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_agentperf_locals() {
        let s = parse("{}").unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(s.policy, Policy::Exact);
        assert_eq!(s.max_output_tokens, 16_384);
        assert_eq!(
            s.sampling_values(),
            Sampling {
                temperature: Some(0.7),
                top_p: Some(0.8),
                top_k: Some(20),
                min_p: Some(0.0),
            }
        );
        let custom = parse(r#"{"sampling": "custom", "temperature": 0.0}"#).unwrap();
        assert_eq!(
            custom.sampling_values(),
            Sampling {
                temperature: Some(0.0),
                top_p: None,
                top_k: None,
                min_p: None,
            }
        );
        let over = parse(r#"{"top_k": 40}"#).unwrap();
        assert_eq!(over.sampling_values().top_k, Some(40));
    }

    #[test]
    fn bad_settings_name_their_key() {
        for (json, key) in [
            (r#"{"policy": "fast"}"#, "unknown variant `fast`"),
            (r#"{"polcy": "exact"}"#, "unknown field `polcy`"),
            (r#"{"output_token_margin": 8}"#, "`output_token_margin`"),
            (r#"{"temperature": -1}"#, "`temperature`"),
            (r#"{"top_p": 0}"#, "`top_p`"),
            (r#"{"top_k": 0}"#, "`top_k`"),
            (r#"{"min_p": 2}"#, "`min_p`"),
            (r#"{"tool_choice": "auto"}"#, "`tool_choice`"),
            (r#"{"reasoning_effort": ""}"#, "`reasoning_effort`"),
            (
                r#"{"cache_isolation": false, "cache_namespace": "1"}"#,
                "`cache_namespace`",
            ),
            (r#"{"max_output_tokens": 0}"#, "`max_output_tokens`"),
            (r#"{"tool_mode": "live"}"#, "not supported"),
        ] {
            let m = refusal(json);
            assert!(m.contains(key), "{json}: {m}");
        }
        assert!(parse(r#"{"policy": "recorded", "output_token_margin": 8}"#).is_ok());
    }
}
