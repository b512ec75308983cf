//! `bfcl-ast` 0.2.0: the official `bfcl-ast` scorer (0.1.0, a faithful port
//! of the reference) with two documented BFCL checker defects fixed by
//! default. Everything but the defaults is `bfcl-ast`'s code.
//!
//! - `fix_int_in_float_arrays` (BFCL issue #1049): int elements of a Python
//!   float array are promoted to float, so `numbers=[12, 15]` against
//!   `items.type: float` is judged by value, not failed `type_error:nested`.
//! - `fix_malformed_abstention` (BFCL issues #1362, #443): on the
//!   hallucination subsets a malformed call attempt (a `<tool_call>` tag,
//!   tool-call JSON in the content, or a call written as text; see
//!   `bfcl_ast::verdict::call_attempt`) is not credited as an abstention.
//!
//! Either can be turned off in the run's `scorer_settings` (`false`); the
//! other settings are bfcl-ast's. Reports carry `checker_fixes`, the fixes
//! that were on. This is not an official plugin: an auditor re-scores a run
//! with it (`agentload rescore RUN --scorer bfcl_ast_v2.wasm`) and compares
//! (`agentload diff`).

use bfcl_ast::agentload::plugin::types::{PluginConfig, PluginError, PluginInfo};
use bfcl_ast::exports::agentload::plugin::scorer::{Guest, Report, ScoredItem, Verdict};
use bfcl_ast::settings::Settings;
use bfcl_ast::Flavor;

/// bfcl-ast 0.2.0: both fixes on by default.
pub const FIXED: Flavor = Flavor {
    version: env!("CARGO_PKG_VERSION"),
    description: "BFCL v4 single-turn AST checker behind the MLPerf Edge Agentic \
                  reference's function-call extraction, with BFCL checker fixes \
                  (gorilla#1049 ints in float arrays; gorilla#1362/#443 malformed \
                  call attempts on irrelevance) on by default",
    defaults: Settings {
        fix_int_in_float_arrays: true,
        fix_malformed_abstention: true,
        ..Settings::REFERENCE
    },
};

/// The exported scorer (exported on wasm32 only; native builds are for tests).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub struct BfclAstV2;

impl Guest for BfclAstV2 {
    fn describe() -> PluginInfo {
        bfcl_ast::describe(&FIXED)
    }

    fn configure(config: PluginConfig) -> Result<(), PluginError> {
        bfcl_ast::configure(&FIXED, config)
    }

    fn score(items: Vec<ScoredItem>) -> Result<Vec<Verdict>, PluginError> {
        bfcl_ast::score(&FIXED, items)
    }

    fn aggregate(items: Vec<ScoredItem>, verdicts: Vec<Verdict>) -> Result<Report, PluginError> {
        bfcl_ast::aggregate(&FIXED, items, verdicts)
    }
}

#[cfg(target_arch = "wasm32")]
bfcl_ast::export!(BfclAstV2 with_types_in bfcl_ast);

#[cfg(test)]
mod tests {
    use super::*;
    use bfcl_ast::agentload::plugin::types::{Completion, PluginKind, ToolCall};

    fn item(id: &str, subset: &str, content: &str, calls: &[(&str, &str)]) -> ScoredItem {
        let gt = if subset.contains("irrelevance") {
            "null"
        } else {
            r#"[{"avg": {"numbers": [[12.0, 15.0]]}}]"#
        };
        ScoredItem {
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
                content: content.into(),
                reasoning_content: String::new(),
                tool_calls: calls
                    .iter()
                    .map(|(n, a)| ToolCall {
                        id: String::new(),
                        name: (*n).into(),
                        arguments: (*a).into(),
                    })
                    .collect(),
                finish_reason: None,
                usage: None,
            }),
        }
    }

    fn configure(settings: &str) {
        BfclAstV2::configure(PluginConfig {
            settings_json: settings.into(),
            files: vec![],
        })
        .unwrap();
    }

    // One test: the settings are process-wide, as in the component.
    #[test]
    fn fixes_on_by_default_and_can_be_turned_off() {
        let info = BfclAstV2::describe();
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("bfcl-ast", "0.2.0")
        );
        assert!(matches!(info.kind, PluginKind::Scorer));
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
            configure(settings);
            BfclAstV2::score(items.clone())
                .unwrap()
                .iter()
                .map(|v| v.score)
                .collect::<Vec<_>>()
        };
        // The edge config's scorer settings leave the fixes at their defaults.
        let edge = r#"{"underscore_to_dot": true, "golden_overall": 86.23, "golden_normalized": 87.96, "gate_factor": 0.97}"#;
        assert_eq!(scores(edge), [1.0, 0.0, 1.0]);
        let verdicts = BfclAstV2::score(items.clone()).unwrap();
        let report = BfclAstV2::aggregate(items.clone(), verdicts).unwrap();
        let r: serde_json::Value = serde_json::from_str(&report.report_json).unwrap();
        assert_eq!(r["checker_fixes"].as_array().unwrap().len(), 2);
        assert_eq!(
            scores(r#"{"fix_int_in_float_arrays": false, "fix_malformed_abstention": false}"#),
            [0.0, 1.0, 1.0]
        );
        assert_eq!(
            scores(r#"{"fix_malformed_abstention": false}"#),
            [1.0, 1.0, 1.0]
        );
        assert!(BfclAstV2::configure(PluginConfig {
            settings_json: r#"{"fix_it": true}"#.into(),
            files: vec![],
        })
        .is_err());
    }
}
