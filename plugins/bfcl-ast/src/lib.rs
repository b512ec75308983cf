//! `bfcl-ast` 0.1.0, the official accuracy-gate scorer: BFCL v4's
//! single-turn AST checker behind the MLPerf Edge Agentic reference's
//! extraction, with the reference's behaviour byte for byte (both checker
//! fixes off). The checker is the `bfcl-checker` library; this crate is its
//! component.

#![forbid(unsafe_code)]

use agentload_sdk::{export_scorer, Config, Error, Item, Report, Scorer, Verdict};
use bfcl_checker::settings::Settings;

/// The scorer; its settings default to the reference's.
#[derive(Debug)]
pub struct BfclAst {
    settings: Settings,
}

impl Default for BfclAst {
    fn default() -> Self {
        Self {
            settings: Settings::REFERENCE,
        }
    }
}

impl Scorer for BfclAst {
    fn configure(&mut self, config: Config) -> Result<(), Error> {
        self.settings = Settings::from_config(&config, Settings::REFERENCE)?;
        Ok(())
    }

    fn score(&mut self, item: &Item) -> Result<Verdict, Error> {
        bfcl_checker::score(&self.settings, item)
    }

    fn aggregate(&mut self, items: &[Item], verdicts: &[Verdict]) -> Result<Report, Error> {
        bfcl_checker::report(&self.settings, items, verdicts)
    }
}

export_scorer!(BfclAst);

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_sdk::{package_info, Completion, ToolCall};

    #[test]
    fn describes_itself_and_scores_with_the_reference_settings() {
        let info = BfclAst::describe(package_info!());
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("bfcl-ast", "0.1.0")
        );
        let mut scorer = BfclAst::default();
        scorer.configure(Config::with_settings("{}")).unwrap();
        let item = Item {
            item_id: "a".into(),
            session_id: "a".into(),
            turn: 1,
            expected_json: r#"{"id": "a", "subset": "simple_python", "category": "non_live",
                "language": "python", "functions": [{"name": "avg", "parameters": {"type": "dict",
                "properties": {"numbers": {"type": "array", "items": {"type": "float"}}},
                "required": ["numbers"]}}], "ground_truth": [{"avg": {"numbers": [[12.0, 15.0]]}}]}"#
                .into(),
            completion: Some(Completion {
                tool_calls: vec![ToolCall::new("", "avg", r#"{"numbers": [12, 15]}"#)],
                ..Completion::text("")
            }),
        };
        // BFCL's defect #1049, as the reference has it: ints in a float array fail.
        let v = scorer.score(&item).unwrap();
        assert_eq!(
            (v.score, &v.detail["error_type"]),
            (0.0, &serde_json::json!("type_error:nested"))
        );
        let report = scorer.aggregate(&[item], &[v]).unwrap();
        let r: serde_json::Value = serde_json::from_str(&report.json).unwrap();
        assert!(r.get("checker_fixes").is_none(), "{r}");
        let e = scorer
            .configure(Config::with_settings(r#"{"bogus": 1}"#))
            .unwrap_err();
        assert!(e.to_string().contains("unknown field `bogus`"), "{e}");
    }
}
