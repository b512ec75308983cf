//! The scorer's settings table (`settings-json`).

use serde_json::Value as Json;

/// Settings with the reference's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Expect `a.b` functions as `a_b` (the reference's model name,
    /// `gpt-4o-2024-11-20-FC`, is registered with `underscore_to_dot`).
    pub underscore_to_dot: bool,
    /// Golden `overall_accuracy`, percent (ruleset `Qwen3_6_27B`).
    pub golden_overall: f64,
    /// Golden `normalized_single_turn_score`, percent.
    pub golden_normalized: f64,
    /// A metric passes at `value >= golden * gate_factor`.
    pub gate_factor: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            underscore_to_dot: true,
            golden_overall: 86.23,
            golden_normalized: 87.96,
            gate_factor: 0.97,
        }
    }
}

pub const KEYS: [&str; 4] = [
    "underscore_to_dot",
    "golden_overall",
    "golden_normalized",
    "gate_factor",
];

/// Parses the settings object; unknown keys and wrong types are errors that
/// name the key.
pub fn parse(settings_json: &str) -> Result<Settings, String> {
    let mut s = Settings::default();
    if settings_json.trim().is_empty() {
        return Ok(s);
    }
    let value: Json = serde_json::from_str(settings_json)
        .map_err(|e| format!("settings are not valid JSON: {e}"))?;
    let Json::Object(map) = value else {
        return Err("settings must be a JSON object".into());
    };
    for (key, v) in &map {
        let number = || {
            v.as_f64()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("setting `{key}` must be a non-negative number"))
        };
        match key.as_str() {
            "underscore_to_dot" => {
                s.underscore_to_dot = v
                    .as_bool()
                    .ok_or_else(|| format!("setting `{key}` must be a boolean"))?
            }
            "golden_overall" => s.golden_overall = number()?,
            "golden_normalized" => s.golden_normalized = number()?,
            "gate_factor" => s.gate_factor = number()?,
            other => {
                return Err(format!(
                    "unknown setting `{other}` (known: {})",
                    KEYS.join(", ")
                ))
            }
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_overrides_and_errors() {
        assert_eq!(parse("{}").unwrap(), Settings::default());
        assert_eq!(parse("").unwrap(), Settings::default());
        let s = parse(r#"{"underscore_to_dot": false, "gate_factor": 0.9, "golden_overall": 80}"#)
            .unwrap();
        assert!(!s.underscore_to_dot);
        assert_eq!(s.gate_factor, 0.9);
        assert_eq!(s.golden_overall, 80.0);
        assert!(parse(r#"{"model": "x"}"#).unwrap_err().contains("`model`"));
        assert!(parse(r#"{"gate_factor": "high"}"#)
            .unwrap_err()
            .contains("`gate_factor`"));
        assert!(parse("[1]").is_err());
    }
}
