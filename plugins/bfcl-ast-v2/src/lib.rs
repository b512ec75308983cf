//! `bfcl-ast` 0.2.0: the official `bfcl-ast` scorer (0.1.0, a faithful port
//! of the reference) with two documented BFCL checker defects fixed by
//! default. Everything but the defaults is the official scorer's code (the
//! `bfcl-checker` library).
//!
//! - `fix_int_in_float_arrays` (BFCL issue #1049): int elements of a Python
//!   float array are promoted to float, so `numbers=[12, 15]` against
//!   `items.type: float` is judged by value, not failed `type_error:nested`.
//! - `fix_malformed_abstention` (BFCL issues #1362, #443): on the
//!   hallucination subsets a malformed call attempt (a `<tool_call>` tag,
//!   tool-call JSON in the content, or a call written as text; see
//!   `bfcl_checker::verdict::call_attempt`) is not credited as an abstention.
//!
//! Either can be turned off in the run's `scorer_settings` (`false`); the
//! other settings are bfcl-ast's. Reports carry `checker_fixes`, the fixes
//! that were on. This is not an official plugin: an auditor re-scores a run
//! with it (`agentload rescore RUN --scorer bfcl_ast_v2.wasm`) and compares
//! (`agentload diff`).

#![forbid(unsafe_code)]

use agentload_sdk::{export_scorer, Config, Error, Info, Item, Report, Scorer, Verdict};
use bfcl_checker::settings::Settings;

/// bfcl-ast 0.2.0's defaults: both fixes on.
pub const FIXED: Settings = Settings {
    fix_int_in_float_arrays: true,
    fix_malformed_abstention: true,
    ..Settings::REFERENCE
};

/// The scorer; its settings default to [`FIXED`].
#[derive(Debug)]
pub struct BfclAstV2 {
    settings: Settings,
}

impl Default for BfclAstV2 {
    fn default() -> Self {
        Self { settings: FIXED }
    }
}

impl Scorer for BfclAstV2 {
    /// Named `bfcl-ast` (a flavour of the official scorer), versioned by this crate.
    fn describe(package: Info) -> Info {
        Info::new("bfcl-ast", package.version, package.description)
    }

    fn configure(&mut self, config: Config) -> Result<(), Error> {
        self.settings = Settings::from_config(&config, FIXED)?;
        Ok(())
    }

    fn score(&mut self, item: &Item) -> Result<Verdict, Error> {
        bfcl_checker::score(&self.settings, item)
    }

    fn aggregate(&mut self, items: &[Item], verdicts: &[Verdict]) -> Result<Report, Error> {
        bfcl_checker::report(&self.settings, items, verdicts)
    }
}

export_scorer!(BfclAstV2);

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_sdk::{package_info, Completion, ToolCall};

    fn item(id: &str, subset: &str, content: &str, calls: &[(&str, &str)]) -> Item {
        let gt = if subset.contains("irrelevance") {
            "null"
        } else {
            r#"[{"avg": {"numbers": [[12.0, 15.0]]}}]"#
        };
        Item {
            item_id: id.into(),
            session_id: id.into(),
            turn: 1,
            expected_json: format!(
                r#"{{"id": "{id}", "subset": "{subset}", "category": "x", "language": "python",
                   "functions": [{{"name": "avg", "parameters": {{"type": "dict", "properties":
                   {{"numbers": {{"type": "array", "items": {{"type": "float"}}}}}}, "required": ["numbers"]}}}}],
                   "ground_truth": {gt}}}"#
            ),
            completion: Some(Completion {
                tool_calls: calls
                    .iter()
                    .map(|(n, a)| ToolCall::new("", *n, *a))
                    .collect(),
                finish_reason: None,
                ..Completion::text(content)
            }),
        }
    }

    #[test]
    fn fixes_on_by_default_and_can_be_turned_off() {
        let info = BfclAstV2::describe(package_info!());
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("bfcl-ast", "0.2.0")
        );
        let items = vec![
            item(
                "a",
                "simple_python",
                "",
                &[("avg", r#"{"numbers": [12, 15]}"#)],
            ),
            item("b", "irrelevance", "avg(numbers=[1])", &[]),
            item("c", "irrelevance", "No function fits.", &[]),
        ];
        let scores = |settings: &str| {
            let mut s = BfclAstV2::default();
            s.configure(Config::with_settings(settings)).unwrap();
            let verdicts = s.score_all(&items).unwrap();
            let report = s.aggregate(&items, &verdicts).unwrap();
            let r: serde_json::Value = serde_json::from_str(&report.json).unwrap();
            (verdicts.iter().map(|v| v.score).collect::<Vec<_>>(), r)
        };
        // The edge config's scorer settings leave the fixes at their defaults.
        let edge = r#"{"underscore_to_dot": true, "golden_overall": 86.23, "golden_normalized": 87.96, "gate_factor": 0.97}"#;
        let (edge_scores, report) = scores(edge);
        assert_eq!(edge_scores, [1.0, 0.0, 1.0]);
        assert_eq!(report["checker_fixes"].as_array().unwrap().len(), 2);
        assert_eq!(
            scores(r#"{"fix_int_in_float_arrays": false, "fix_malformed_abstention": false}"#).0,
            [0.0, 1.0, 1.0]
        );
        assert_eq!(
            scores(r#"{"fix_malformed_abstention": false}"#).0,
            [1.0, 1.0, 1.0]
        );
        assert!(BfclAstV2::default()
            .configure(Config::with_settings(r#"{"fix_it": true}"#))
            .is_err());
    }
}
