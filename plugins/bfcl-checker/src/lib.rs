//! BFCL v4's single-turn AST checker behind the MLPerf Edge Agentic
//! reference's extraction: the library of the `bfcl-ast` scorer components
//! (0.1.0, the reference's behaviour; 0.2.0 with two checker fixes on).
//!
//! Each verdict reproduces the reference (`mlcommons/endpoints`
//! `BFCLv4Scorer` with `FunctionCallExtractor` and bfcl-eval 2026.3.23's
//! `ast_checker`); the report is the reference's accuracy entry with its
//! breakdown and the Edge gate. Python semantics come from `pysem`.
//!
//! Modules: the BFCL port ([`convert_java`], [`convert_js`], [`checker`]),
//! the reference's harness ([`extract`], [`verdict`], [`aggregate`]) and
//! [`settings`]; [`score`] and [`report`] are a scorer's two calls.

#![forbid(unsafe_code)]

pub mod aggregate;
pub mod checker;
pub mod convert_java;
pub mod convert_js;
pub mod extract;
pub mod settings;
pub mod verdict;

use agentload_sdk::{Completion, Error, Item, Report, Verdict};
use extract::ModelOutput;
use settings::Settings;
use verdict::Expected;

/// The verdict on one item; an item whose expected data breaks the
/// `bfcl-single` contract is an error naming it.
pub fn score(settings: &Settings, item: &Item) -> Result<Verdict, Error> {
    let expected = Expected::parse(&item.expected_json)
        .map_err(|e| Error::input(format!("item {}: {e}", item.item_id)))?;
    let output = item.completion.as_ref().map(model_output);
    let judgement = verdict::judge(&expected, output.as_ref(), settings);
    let detail = verdict::detail_json(&expected, &judgement);
    Ok(Verdict::new(item, judgement.score()).with_detail_json(detail))
}

/// The report over a run: the reference's accuracy entry and the gate.
pub fn report(settings: &Settings, items: &[Item], verdicts: &[Verdict]) -> Result<Report, Error> {
    /// Aggregation needs only the subset, which each verdict's detail
    /// carries: the items' expected data (docs, ground truth) is not read.
    #[derive(serde::Deserialize)]
    struct SubsetOnly {
        subset: String,
    }
    let samples = items
        .iter()
        .zip(verdicts)
        .map(|(item, v)| {
            let expected: SubsetOnly = v.detail.parse().map_err(|e| {
                Error::input(format!("item {}: detail has no subset: {e}", item.item_id))
            })?;
            Ok(aggregate::Sample {
                subset: expected.subset,
                score: v.score,
                completed: item.completion.is_some(),
                empty: item.completion.as_ref().is_some_and(|c| {
                    c.content.is_empty()
                        && c.reasoning_content.is_empty()
                        && c.tool_calls.is_empty()
                }),
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let (score, json, gate) = aggregate::report(&samples, settings);
    Ok(Report::from_json(score, json).with_gate(gate))
}

/// The scorer's view of a completion.
pub fn model_output(c: &Completion) -> ModelOutput {
    ModelOutput::new(
        &c.content,
        &c.reasoning_content,
        c.tool_calls
            .iter()
            .map(|t| (t.name.clone(), t.arguments.clone()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_sdk::ToolCall;

    fn item(id: &str, subset: &str, calls: &[(&str, &str)], missing: bool) -> Item {
        let expected = format!(
            r#"{{"id": "{id}", "subset": "{subset}", "category": "non_live", "language": "python",
               "functions": [{{"name": "f", "parameters": {{"type": "dict", "properties": {{"a": {{"type": "integer"}}}}, "required": ["a"]}}}}],
               "ground_truth": [{{"f": {{"a": [1]}}}}]}}"#
        );
        Item {
            item_id: id.into(),
            session_id: id.into(),
            turn: 1,
            expected_json: expected,
            completion: (!missing).then(|| Completion {
                tool_calls: calls
                    .iter()
                    .map(|(n, a)| ToolCall::new("", *n, *a))
                    .collect(),
                finish_reason: Some("tool_calls".into()),
                ..Completion::text("")
            }),
        }
    }

    #[test]
    fn score_and_report() {
        let s = Settings::REFERENCE;
        let items = vec![
            item("a", "simple_python", &[("f", r#"{"a": 1}"#)], false),
            item("b", "simple_python", &[("f", r#"{"a": 2}"#)], false),
            item("c", "simple_python", &[], true),
        ];
        let verdicts: Vec<Verdict> = items.iter().map(|i| score(&s, i).unwrap()).collect();
        assert_eq!(
            verdicts.iter().map(|v| v.score).collect::<Vec<_>>(),
            vec![1.0, 0.0, 0.0]
        );
        assert_eq!(verdicts[1].detail["error_type"], "value_error:others");
        assert_eq!(verdicts[2].detail["error_type"], "missing");
        let report = report(&s, &items, &verdicts).unwrap();
        assert!((report.score - 1.0 / 3.0).abs() < 1e-12);
        let r: serde_json::Value = serde_json::from_str(&report.json).unwrap();
        assert_eq!(r["breakdown"]["overall_accuracy"], 33.33);
        assert_eq!(r["breakdown"]["issued_samples"], 3);
        let mut bad = item("d", "simple_python", &[], true);
        bad.expected_json = "{}".into();
        let e = score(&s, &bad).unwrap_err().to_string();
        assert!(e.starts_with("invalid input: item d:"), "{e}");
    }
}
