//! The workload's settings (the run config's `[accuracy.settings]` table).

use agentload_sdk::{Config, Error};
use serde::Deserialize;
use std::collections::BTreeMap;

/// Settings, with the reference's edge defaults.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// Categories to issue, in the reference's names.
    pub categories: Vec<String>,
    /// Percentage of each category's subsets issued (first rows in file order).
    pub sample_pct: BTreeMap<String, f64>,
    /// Subsets with at most this many rows are issued whole.
    pub subset_floor: usize,
    pub temperature: f64,
    pub seed: i64,
    pub max_completion_tokens: u32,
    /// String sent as `tool_choice` (`"auto"`, as the reference), or `"omit"` to send none.
    pub tool_choice: String,
    /// Apply BFCL's `add_language_specific_hint_to_function_doc` before the
    /// tool conversion (Python/Java/JS description hints, Java/JS parameters
    /// turned into strings). The reference does not, so this is off by default.
    pub language_hints: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            categories: ["non_live", "live", "hallucination"]
                .map(String::from)
                .to_vec(),
            sample_pct: [("non_live", 62.0), ("live", 10.0), ("hallucination", 10.0)]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            subset_floor: 25,
            temperature: 0.0,
            seed: 42,
            max_completion_tokens: 1024,
            tool_choice: "auto".to_owned(),
            language_hints: false,
        }
    }
}

impl Settings {
    /// The settings table, checked; errors name the key.
    pub fn from_config(config: &Config) -> Result<Self, Error> {
        let settings: Settings = config.settings()?;
        settings
            .check()
            .map_err(|e| Error::config(format!("settings: {e}")))?;
        Ok(settings)
    }

    fn check(&self) -> Result<(), String> {
        let settings = self;
        for category in &settings.categories {
            if !crate::subsets::CATEGORIES.contains(&category.as_str()) {
                return Err(format!(
                    "categories: unknown category '{category}' (expected non_live, live, hallucination)"
                ));
            }
        }
        for (category, pct) in &settings.sample_pct {
            if !crate::subsets::CATEGORIES.contains(&category.as_str()) {
                return Err(format!("sample_pct: unknown category '{category}'"));
            }
            if !(pct.is_finite() && *pct > 0.0 && *pct <= 100.0) {
                return Err(format!("sample_pct.{category}: must be in (0, 100]"));
            }
        }
        if settings.temperature.is_nan() || settings.temperature < 0.0 {
            return Err("temperature: must be a non-negative number".into());
        }
        Ok(())
    }

    /// The percentage issued of `category` (100 when not given).
    pub fn pct(&self, category: &str) -> f64 {
        self.sample_pct.get(category).copied().unwrap_or(100.0)
    }

    /// `tool_choice` as JSON text, or `None` to send none.
    pub fn tool_choice_json(&self) -> Option<String> {
        (self.tool_choice != "omit")
            .then(|| serde_json::Value::from(self.tool_choice.as_str()).to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<Settings, String> {
        Settings::from_config(&Config::with_settings(json)).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_the_reference_edge_settings() {
        let s = parse("{}").unwrap();
        assert_eq!(s, Settings::default());
        assert_eq!(s.pct("non_live"), 62.0);
        assert_eq!(s.tool_choice_json().as_deref(), Some("\"auto\""));
        assert!(!s.language_hints);
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse(r#"{"subset_flor": 3}"#).unwrap_err();
        assert!(e.contains("subset_flor"), "{e}");
        let e = parse(r#"{"categories": ["agentic"]}"#).unwrap_err();
        assert!(e.contains("categories") && e.contains("agentic"), "{e}");
        let e = parse(r#"{"sample_pct": {"live": 0}}"#).unwrap_err();
        assert!(e.contains("sample_pct.live"), "{e}");
        let e = parse(r#"{"seed": "x"}"#).unwrap_err();
        assert!(e.contains("invalid type"), "{e}");
        let s = parse(r#"{"tool_choice": "omit"}"#).unwrap();
        assert_eq!(s.tool_choice_json(), None);
    }
}
