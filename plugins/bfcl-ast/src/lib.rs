//! `bfcl-ast`: BFCL v4's single-turn AST checker behind the MLPerf Edge
//! Agentic reference's extraction, as an agentload scorer component.
//!
//! Each verdict reproduces the reference (`mlcommons/endpoints`
//! `BFCLv4Scorer` with `FunctionCallExtractor` and bfcl-eval 2026.3.23's
//! `ast_checker`); the aggregate is the reference's accuracy entry with its
//! breakdown and the Edge gate.
//!
//! Modules: Python semantics ([`pychar`], [`pynum`], [`pyvalue`], [`pyjson`],
//! [`pyre`], [`pyexpr`]), the BFCL port ([`convert_java`], [`convert_js`],
//! [`checker`]), the reference's harness ([`extract`], [`verdict`],
//! [`aggregate`]) and [`settings`].

pub mod aggregate;
pub mod checker;
pub mod convert_java;
pub mod convert_js;
pub mod extract;
pub mod pychar;
pub mod pyexpr;
pub mod pyjson;
pub mod pynum;
pub mod pyre;
pub mod pyvalue;
pub mod settings;
pub mod verdict;

use std::sync::Mutex;

wit_bindgen::generate!({
    path: "../../wit/agentload-plugin@0.1.0",
    world: "scorer-plugin",
    // `bfcl_ast::export!(T with_types_in bfcl_ast)` exports another flavour
    // of this scorer from a crate that depends on this one (bfcl-ast-v2).
    pub_export_macro: true,
    default_bindings_module: "bfcl_ast",
});

use agentload::plugin::types::{Completion, PluginConfig, PluginError, PluginInfo, PluginKind};
use exports::agentload::plugin::scorer::{Report, ScoredItem, Verdict};

use extract::ModelOutput;
use settings::Settings;
use verdict::{Expected, Judgement};

/// What a scorer component built from this crate says about itself, and the
/// settings it scores with when the run's settings do not say otherwise.
#[derive(Debug, Clone, Copy)]
pub struct Flavor {
    pub version: &'static str,
    pub description: &'static str,
    pub defaults: Settings,
}

/// The official scorer: the reference's behaviour, byte for byte.
pub const OFFICIAL: Flavor = Flavor {
    version: env!("CARGO_PKG_VERSION"),
    description: "BFCL v4 single-turn AST checker behind the MLPerf Edge Agentic \
                  reference's function-call extraction",
    defaults: Settings::REFERENCE,
};

static SETTINGS: Mutex<Option<Settings>> = Mutex::new(None);

fn current_settings(flavor: &Flavor) -> Settings {
    SETTINGS
        .lock()
        .map(|s| s.unwrap_or(flavor.defaults))
        .unwrap_or(flavor.defaults)
}

/// The exported scorer (exported on wasm32 with the `component` feature;
/// native builds are for tests).
#[cfg_attr(
    not(all(target_arch = "wasm32", feature = "component")),
    allow(dead_code)
)]
struct BfclAst;

impl exports::agentload::plugin::scorer::Guest for BfclAst {
    fn describe() -> PluginInfo {
        describe(&OFFICIAL)
    }

    fn configure(config: PluginConfig) -> Result<(), PluginError> {
        configure(&OFFICIAL, config)
    }

    fn score(items: Vec<ScoredItem>) -> Result<Vec<Verdict>, PluginError> {
        score(&OFFICIAL, items)
    }

    fn aggregate(items: Vec<ScoredItem>, verdicts: Vec<Verdict>) -> Result<Report, PluginError> {
        aggregate(&OFFICIAL, items, verdicts)
    }
}

/// `describe` for a flavour of the scorer (always named `bfcl-ast`).
pub fn describe(flavor: &Flavor) -> PluginInfo {
    PluginInfo {
        name: "bfcl-ast".into(),
        version: flavor.version.into(),
        kind: PluginKind::Scorer,
        description: flavor.description.into(),
    }
}

/// `configure`: the settings table over the flavour's defaults.
pub fn configure(flavor: &Flavor, config: PluginConfig) -> Result<(), PluginError> {
    if let Some(f) = config.files.first() {
        return Err(PluginError::InvalidConfig(format!(
            "bfcl-ast reads no data files, but `{}` was granted",
            f.name
        )));
    }
    let parsed = settings::parse_over(flavor.defaults, &config.settings_json)
        .map_err(PluginError::InvalidConfig)?;
    if let Ok(mut s) = SETTINGS.lock() {
        *s = Some(parsed);
    }
    Ok(())
}

/// `score`: one verdict per item.
pub fn score(flavor: &Flavor, items: Vec<ScoredItem>) -> Result<Vec<Verdict>, PluginError> {
    let settings = current_settings(flavor);
    items
        .iter()
        .map(|item| {
            let (expected, judgement) = evaluate(item, &settings)?;
            Ok(Verdict {
                item_id: item.item_id.clone(),
                score: judgement.score(),
                excluded: None,
                detail_json: verdict::detail_json(&expected, &judgement),
            })
        })
        .collect()
}

/// `aggregate`: the reference's accuracy entry and the gate.
pub fn aggregate(
    flavor: &Flavor,
    items: Vec<ScoredItem>,
    verdicts: Vec<Verdict>,
) -> Result<Report, PluginError> {
    if items.len() != verdicts.len()
        || items
            .iter()
            .zip(&verdicts)
            .any(|(i, v)| i.item_id != v.item_id)
    {
        return Err(PluginError::InvalidInput(
            "verdicts do not match the items one for one".into(),
        ));
    }
    /// Aggregation needs only the subset: skip parsing the docs and ground truth.
    #[derive(serde::Deserialize)]
    struct SubsetOnly {
        subset: String,
    }
    let samples = items
        .iter()
        .zip(&verdicts)
        .map(|(item, v)| {
            let expected: SubsetOnly = serde_json::from_str(&item.expected_json)
                .map_err(|e| PluginError::InvalidInput(format!("item {}: {e}", item.item_id)))?;
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
        .collect::<Result<Vec<_>, PluginError>>()?;
    let (score, report_json) = aggregate::report(&samples, &current_settings(flavor));
    Ok(Report { score, report_json })
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

fn evaluate(item: &ScoredItem, settings: &Settings) -> Result<(Expected, Judgement), PluginError> {
    let expected = Expected::parse(&item.expected_json)
        .map_err(|e| PluginError::InvalidInput(format!("item {}: {e}", item.item_id)))?;
    let output = item.completion.as_ref().map(model_output);
    let judgement = verdict::judge(&expected, output.as_ref(), settings);
    Ok((expected, judgement))
}

#[cfg(all(target_arch = "wasm32", feature = "component"))]
export!(BfclAst with_types_in crate);

#[cfg(test)]
mod tests {
    use super::*;
    use agentload::plugin::types::ToolCall;
    use exports::agentload::plugin::scorer::Guest;

    fn item(id: &str, subset: &str, calls: &[(&str, &str)], missing: bool) -> ScoredItem {
        let expected = format!(
            r#"{{"id": "{id}", "subset": "{subset}", "category": "non_live", "language": "python",
               "functions": [{{"name": "f", "parameters": {{"type": "dict", "properties": {{"a": {{"type": "integer"}}}}, "required": ["a"]}}}}],
               "ground_truth": [{{"f": {{"a": [1]}}}}]}}"#
        );
        ScoredItem {
            item_id: id.into(),
            session_id: id.into(),
            turn: 1,
            expected_json: expected,
            completion: (!missing).then(|| Completion {
                content: String::new(),
                reasoning_content: String::new(),
                tool_calls: calls
                    .iter()
                    .map(|(n, a)| ToolCall {
                        id: String::new(),
                        name: (*n).into(),
                        arguments: (*a).into(),
                    })
                    .collect(),
                finish_reason: Some("tool_calls".into()),
                usage: None,
            }),
        }
    }

    #[test]
    fn score_and_aggregate() {
        BfclAst::configure(PluginConfig {
            settings_json: "{}".into(),
            files: vec![],
        })
        .unwrap();
        let items = vec![
            item("a", "simple_python", &[("f", r#"{"a": 1}"#)], false),
            item("b", "simple_python", &[("f", r#"{"a": 2}"#)], false),
            item("c", "simple_python", &[], true),
        ];
        let verdicts = BfclAst::score(items.clone()).unwrap();
        assert_eq!(
            verdicts.iter().map(|v| v.score).collect::<Vec<_>>(),
            vec![1.0, 0.0, 0.0]
        );
        let d: serde_json::Value = serde_json::from_str(&verdicts[1].detail_json).unwrap();
        assert_eq!(d["error_type"], "value_error:others");
        let d: serde_json::Value = serde_json::from_str(&verdicts[2].detail_json).unwrap();
        assert_eq!(d["error_type"], "missing");
        let report = BfclAst::aggregate(items, verdicts).unwrap();
        assert!((report.score - 1.0 / 3.0).abs() < 1e-12);
        let r: serde_json::Value = serde_json::from_str(&report.report_json).unwrap();
        assert_eq!(r["breakdown"]["overall_accuracy"], 33.33);
        assert_eq!(r["breakdown"]["issued_samples"], 3);
        assert!(BfclAst::configure(PluginConfig {
            settings_json: r#"{"bogus": 1}"#.into(),
            files: vec![],
        })
        .unwrap_err()
        .to_string()
        .contains("bogus"));
    }
}
