//! The plugin's settings table (`plugin-config.settings-json`).

use serde_json::Value;

use crate::agentload::plugin::types::PluginError;

/// Every key the settings table may hold, in the order error messages list them.
pub const KNOWN_KEYS: [&str; 7] = [
    "dataset",
    "num_trajectories_to_issue",
    "inject_tool_delay",
    "temperature",
    "seed",
    "max_completion_tokens",
    "conversations",
];

/// Parsed settings, with the reference's edge defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Logical name of the granted file that holds the trajectories.
    pub dataset: String,
    /// How many conversation instances to run; `None` runs each selected conversation once.
    pub num_trajectories_to_issue: Option<u32>,
    /// Wait each client row's recorded `delay_seconds` before sending it.
    pub inject_tool_delay: bool,
    /// Sampling temperature sent on every turn.
    pub temperature: f64,
    /// Sampling seed sent on every turn.
    pub seed: i64,
    /// `max_completion_tokens` when the dataset does not set one.
    pub max_completion_tokens: u32,
    /// Conversation ids to run (run in dataset order); `None` runs them all.
    pub conversations: Option<Vec<String>>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            dataset: "trajectories".to_owned(),
            num_trajectories_to_issue: None,
            inject_tool_delay: false,
            temperature: 0.0,
            seed: 42,
            max_completion_tokens: 1024,
            conversations: None,
        }
    }
}

impl Settings {
    /// Parses the settings JSON object; unknown keys and wrong types are `invalid-config`.
    pub fn parse(settings_json: &str) -> Result<Self, PluginError> {
        let value: Value = serde_json::from_str(settings_json)
            .map_err(|e| invalid(format!("settings are not valid JSON: {e}")))?;
        let table = value
            .as_object()
            .ok_or_else(|| invalid("settings must be a JSON object".to_owned()))?;
        let mut settings = Self::default();
        for (key, value) in table {
            settings.set(key, value)?;
        }
        Ok(settings)
    }

    fn set(&mut self, key: &str, value: &Value) -> Result<(), PluginError> {
        match key {
            "dataset" => self.dataset = string(key, value)?,
            "num_trajectories_to_issue" => {
                self.num_trajectories_to_issue =
                    Some(integer(key, value, 1, u32::MAX.into())? as u32);
            }
            "inject_tool_delay" => {
                self.inject_tool_delay = value
                    .as_bool()
                    .ok_or_else(|| wrong_type(key, "a boolean", value))?;
            }
            "temperature" => {
                self.temperature = value
                    .as_f64()
                    .filter(|t| *t >= 0.0)
                    .ok_or_else(|| wrong_type(key, "a non-negative number", value))?;
            }
            "seed" => self.seed = integer(key, value, i64::MIN, i64::MAX)?,
            "max_completion_tokens" => {
                self.max_completion_tokens = integer(key, value, 1, u32::MAX.into())? as u32;
            }
            "conversations" => self.conversations = Some(string_list(key, value)?),
            unknown => {
                return Err(invalid(format!(
                    "unknown setting '{unknown}'; known settings: {}",
                    KNOWN_KEYS.join(", ")
                )))
            }
        }
        Ok(())
    }
}

fn invalid(message: String) -> PluginError {
    PluginError::InvalidConfig(message)
}

fn wrong_type(key: &str, expected: &str, got: &Value) -> PluginError {
    invalid(format!("setting '{key}' must be {expected}, got {got}"))
}

fn string(key: &str, value: &Value) -> Result<String, PluginError> {
    value
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| wrong_type(key, "a string", value))
}

fn integer(key: &str, value: &Value, min: i64, max: i64) -> Result<i64, PluginError> {
    value
        .as_i64()
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(|| {
            let expected = if min == i64::MIN {
                "an integer".to_owned()
            } else {
                format!("an integer from {min} to {max}")
            };
            wrong_type(key, &expected, value)
        })
}

fn string_list(key: &str, value: &Value) -> Result<Vec<String>, PluginError> {
    let expected = "a non-empty list of conversation id strings";
    let items = value
        .as_array()
        .filter(|items| !items.is_empty())
        .ok_or_else(|| wrong_type(key, expected, value))?;
    items
        .iter()
        .map(|item| item.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| wrong_type(key, expected, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config_error(json: &str) -> String {
        match Settings::parse(json) {
            Err(PluginError::InvalidConfig(message)) => message,
            other => panic!("expected invalid-config, got {other:?}"),
        }
    }

    #[test]
    fn empty_table_gives_the_edge_defaults() {
        let settings = Settings::parse("{}").unwrap();
        assert_eq!(settings, Settings::default());
        assert_eq!(settings.dataset, "trajectories");
        assert_eq!(settings.temperature, 0.0);
        assert_eq!(settings.seed, 42);
        assert_eq!(settings.max_completion_tokens, 1024);
        assert!(!settings.inject_tool_delay);
    }

    #[test]
    fn every_key_is_read() {
        let settings = Settings::parse(
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
        assert_eq!(
            config_error(r#"{"top_p": 0.9}"#),
            "unknown setting 'top_p'; known settings: dataset, num_trajectories_to_issue, \
             inject_tool_delay, temperature, seed, max_completion_tokens, conversations"
        );
    }

    #[test]
    fn wrong_types_are_rejected() {
        assert_eq!(
            config_error(r#"{"seed": "42"}"#),
            "setting 'seed' must be an integer, got \"42\""
        );
        assert_eq!(
            config_error(r#"{"inject_tool_delay": 1}"#),
            "setting 'inject_tool_delay' must be a boolean, got 1"
        );
        assert_eq!(
            config_error(r#"{"max_completion_tokens": 0}"#),
            "setting 'max_completion_tokens' must be an integer from 1 to 4294967295, got 0"
        );
        assert_eq!(
            config_error(r#"{"num_trajectories_to_issue": 2.5}"#),
            "setting 'num_trajectories_to_issue' must be an integer from 1 to 4294967295, got 2.5"
        );
        assert_eq!(
            config_error(r#"{"temperature": -1}"#),
            "setting 'temperature' must be a non-negative number, got -1"
        );
        assert_eq!(
            config_error(r#"{"conversations": []}"#),
            "setting 'conversations' must be a non-empty list of conversation id strings, got []"
        );
        assert_eq!(
            config_error(r#"{"dataset": null}"#),
            "setting 'dataset' must be a string, got null"
        );
        assert_eq!(config_error("[]"), "settings must be a JSON object");
    }
}
