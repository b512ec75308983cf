//! The scorer's settings table (`settings-json`).

use agentload_sdk::{Config, Error};
use serde::{Deserialize, Serialize};

/// Settings with the reference's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// Fix for BFCL issue #1049 (off in the reference): inside a Python
    /// `array`/`tuple` parameter whose `items.type` is `float`, an int
    /// element is promoted to float before the type check, as BFCL already
    /// does for a top-level `float` parameter; such answers are then judged
    /// by value instead of failing `type_error:nested`.
    pub fix_int_in_float_arrays: bool,
    /// Fix for BFCL issues #1362 and #443 (off in the reference): on the
    /// hallucination subsets, an output that is not native tool-call JSON but
    /// is a malformed call attempt ([`crate::verdict::call_attempt`]) is not
    /// credited as an abstention (`irrelevance_error:malformed_call_attempt`).
    pub fix_malformed_abstention: bool,
}

impl Settings {
    /// The reference's settings: the Edge golden values, both fixes off.
    pub const REFERENCE: Settings = Settings {
        underscore_to_dot: true,
        golden_overall: 86.23,
        golden_normalized: 87.96,
        gate_factor: 0.97,
        fix_int_in_float_arrays: false,
        fix_malformed_abstention: false,
    };

    /// The fixes that are on, named with their BFCL issues (for reports).
    pub fn fixes(&self) -> Vec<&'static str> {
        let mut on = Vec::new();
        if self.fix_int_in_float_arrays {
            on.push("fix_int_in_float_arrays (gorilla#1049)");
        }
        if self.fix_malformed_abstention {
            on.push("fix_malformed_abstention (gorilla#1362, gorilla#443)");
        }
        on
    }
}

impl Default for Settings {
    fn default() -> Settings {
        Settings::REFERENCE
    }
}

impl Settings {
    /// The run's settings table over `defaults` (keys it does not set keep
    /// them): an unknown key or a wrong type is an error naming the key, and
    /// so is a golden value or factor that is not a non-negative number.
    /// The scorer reads no data files: a grant is refused.
    pub fn from_config(config: &Config, defaults: Settings) -> Result<Settings, Error> {
        config.refuse_files()?;
        let s = config.settings_over(&defaults)?;
        for (key, value) in [
            ("golden_overall", s.golden_overall),
            ("golden_normalized", s.golden_normalized),
            ("gate_factor", s.gate_factor),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(Error::config(format!(
                    "settings: `{key}` must be a non-negative number, got {value}"
                )));
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_over(defaults: Settings, settings: &str) -> Result<Settings, String> {
        Settings::from_config(&Config::with_settings(settings), defaults).map_err(|e| e.to_string())
    }

    fn parse(settings: &str) -> Result<Settings, String> {
        parse_over(Settings::REFERENCE, settings)
    }

    #[test]
    fn defaults_overrides_and_errors() {
        assert_eq!(parse("{}").unwrap(), Settings::default());
        assert_eq!(parse("").unwrap(), Settings::default());
        let s = parse(r#"{"underscore_to_dot": false, "gate_factor": 0.9, "golden_overall": 80}"#)
            .unwrap();
        assert!(!s.underscore_to_dot);
        assert_eq!(s.gate_factor, 0.9);
        assert_eq!(s.golden_overall, 80.0);
        let e = parse(r#"{"model": "x"}"#).unwrap_err();
        assert!(
            e.contains("unknown field `model`") && e.contains("`gate_factor`"),
            "{e}"
        );
        assert!(parse(r#"{"gate_factor": "high"}"#).is_err());
        let e = parse(r#"{"gate_factor": -1}"#).unwrap_err();
        assert!(
            e.contains("`gate_factor` must be a non-negative number"),
            "{e}"
        );
        assert!(parse("[1]").is_err());
        let granted = Config::with_settings("{}").grant("data", "d.json", "{}");
        let e = Settings::from_config(&granted, Settings::REFERENCE).unwrap_err();
        assert!(e.to_string().contains("`data`"), "{e}");
    }

    #[test]
    fn fixes_are_off_by_default_and_named() {
        let s = Settings::default();
        assert!(!s.fix_int_in_float_arrays && !s.fix_malformed_abstention);
        assert!(s.fixes().is_empty());
        let s = parse(r#"{"fix_int_in_float_arrays": true}"#).unwrap();
        assert!(s.fix_int_in_float_arrays && !s.fix_malformed_abstention);
        assert_eq!(s.fixes(), ["fix_int_in_float_arrays (gorilla#1049)"]);
        let e = parse(r#"{"fix_malformed_abstention": 1}"#).unwrap_err();
        assert!(e.contains("expected a boolean"), "{e}");
        // Other defaults: keys not given keep them.
        let fixed = Settings {
            fix_int_in_float_arrays: true,
            fix_malformed_abstention: true,
            ..Settings::REFERENCE
        };
        let s = parse_over(fixed, r#"{"fix_malformed_abstention": false}"#).unwrap();
        assert!(s.fix_int_in_float_arrays && !s.fix_malformed_abstention);
        assert_eq!(parse_over(fixed, "").unwrap(), fixed);
        assert!(parse_over(fixed, r#"{"fix_everything": true}"#)
            .unwrap_err()
            .contains("unknown field `fix_everything`"));
    }
}
