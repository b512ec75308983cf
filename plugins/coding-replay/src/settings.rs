//! The plugin's settings table (`plugin-config.settings-json`).

use crate::salt::SaltMode;
use agentload_sdk::live::{HistoryMode, LiveSettings};
use agentload_sdk::{Config, Error};
use serde::Deserialize;

/// Parsed settings, with the reference's edge defaults filled in. An unknown
/// key or a wrong type is an error naming the key.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Logical name of the granted file that holds the trajectories.
    pub dataset: String,
    /// How many conversation instances to run; `None` runs each selected conversation once.
    pub num_trajectories_to_issue: Option<u32>,
    /// Wait each client row's recorded `delay_seconds` before sending it.
    pub inject_tool_delay: bool,
    /// Sampling temperature sent on every turn.
    pub temperature: f64,
    /// Sampling seed sent on every turn (unless `send_seed` is false).
    pub seed: i64,
    /// Send `seed` (the datacenter benchmark sends none).
    pub send_seed: bool,
    /// `top_p` sent on every turn, when set.
    pub top_p: Option<f64>,
    /// `top_k` sent on every turn, when set.
    pub top_k: Option<u32>,
    /// `max_completion_tokens` when the dataset does not set one.
    pub max_completion_tokens: u32,
    /// Conversation ids to run (run in dataset order); `None` runs them all.
    pub conversations: Option<Vec<String>>,
    /// Salt every conversation instance's system prompt (the datacenter
    /// benchmark's `enable_salt`; see `salt.rs`).
    pub enable_salt: bool,
    /// `reference` (byte-exact) or `seeded64`.
    pub salt_mode: SaltMode,
    /// The seed of `seeded64` salts.
    pub salt_seed: u64,
    /// `recorded` (every request carries the recorded history; official)
    /// or `live` (each request carries the model's own earlier replies).
    pub history: HistoryMode,
    /// Live-reply replay: the policy per divergence class, the placeholder
    /// result, whether reasoning is carried.
    pub live: LiveSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            dataset: "trajectories".to_owned(),
            num_trajectories_to_issue: None,
            inject_tool_delay: false,
            temperature: 0.0,
            seed: 42,
            send_seed: true,
            top_p: None,
            top_k: None,
            max_completion_tokens: 1024,
            conversations: None,
            enable_salt: false,
            salt_mode: SaltMode::Reference,
            salt_seed: 42,
            history: HistoryMode::Recorded,
            live: LiveSettings::default(),
        }
    }
}

impl Settings {
    /// The settings table, checked.
    pub fn from_config(config: &Config) -> Result<Self, Error> {
        let settings: Settings = config.settings()?;
        let bad =
            |key: &str, rule: &str| Err(Error::config(format!("settings: `{key}` must be {rule}")));
        if settings.num_trajectories_to_issue == Some(0) {
            return bad("num_trajectories_to_issue", "at least 1");
        }
        if settings.temperature.is_nan() || settings.temperature < 0.0 {
            return bad("temperature", "a non-negative number");
        }
        if settings.top_p.is_some_and(|p| !(p > 0.0 && p <= 1.0)) {
            return bad("top_p", "in (0, 1]");
        }
        if settings.top_k == Some(0) {
            return bad("top_k", "at least 1");
        }
        if settings.max_completion_tokens == 0 {
            return bad("max_completion_tokens", "at least 1");
        }
        if settings.conversations.as_ref().is_some_and(Vec::is_empty) {
            return bad("conversations", "a non-empty list of conversation ids");
        }
        settings.live.check()?;
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Settings, Error> {
        Settings::from_config(&Config::with_settings(json))
    }

    fn config_error(json: &str) -> String {
        match parse(json) {
            Err(Error::Config(message)) => message,
            other => panic!("expected invalid-config, got {other:?}"),
        }
    }

    #[test]
    fn empty_table_gives_the_edge_defaults() {
        let settings = parse("{}").unwrap();
        assert_eq!(settings, Settings::default());
        assert_eq!(settings.dataset, "trajectories");
        assert_eq!(settings.temperature, 0.0);
        assert_eq!(settings.seed, 42);
        assert_eq!(settings.max_completion_tokens, 1024);
        assert!(!settings.inject_tool_delay);
    }

    #[test]
    fn every_key_is_read() {
        let settings = parse(
            r#"{"dataset": "d", "num_trajectories_to_issue": 3, "inject_tool_delay": true,
                "temperature": 1, "seed": -7, "max_completion_tokens": 64,
                "conversations": ["a", "b"]}"#,
        )
        .unwrap();
        assert_eq!(settings.dataset, "d");
        assert_eq!(settings.num_trajectories_to_issue, Some(3));
        assert!(settings.inject_tool_delay);
        assert_eq!(settings.temperature, 1.0);
        assert_eq!(settings.seed, -7);
        assert_eq!(settings.max_completion_tokens, 64);
        assert_eq!(settings.conversations, Some(vec!["a".into(), "b".into()]));
    }

    #[test]
    fn unknown_key_is_named_with_the_known_ones() {
        let e = config_error(r#"{"top_pp": 0.9}"#);
        assert!(
            e.starts_with("settings: unknown field `top_pp`, expected one of `dataset`"),
            "{e}"
        );
        assert!(e.contains("`conversations`"), "{e}");
    }

    #[test]
    fn wrong_types_and_values_are_rejected() {
        for (json, key) in [
            (
                r#"{"seed": "42"}"#,
                "invalid type: string \"42\", expected i64",
            ),
            (r#"{"inject_tool_delay": 1}"#, "expected a boolean"),
            (
                r#"{"max_completion_tokens": 0}"#,
                "`max_completion_tokens` must be at least 1",
            ),
            (r#"{"max_completion_tokens": -1}"#, "expected u32"),
            (r#"{"num_trajectories_to_issue": 2.5}"#, "expected u32"),
            (
                r#"{"num_trajectories_to_issue": 0}"#,
                "`num_trajectories_to_issue` must be at least 1",
            ),
            (
                r#"{"temperature": -1}"#,
                "`temperature` must be a non-negative number",
            ),
            (
                r#"{"conversations": []}"#,
                "`conversations` must be a non-empty list",
            ),
            (r#"{"conversations": [1]}"#, "expected a string"),
            (r#"{"dataset": null}"#, "expected a string"),
        ] {
            let e = config_error(json);
            assert!(e.contains(key), "{json}: {e}");
        }
        assert_eq!(
            config_error("[]"),
            "settings: a table (a JSON object) is needed, not []"
        );
    }
}
