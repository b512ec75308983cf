//! `bfcl-multi-score`: BFCL v4's multi-turn evaluation on the `bfcl-multi`
//! workload's recorded steps, as an agentload scorer component.
//!
//! The items of one session are one BFCL entry's steps. Each completion is
//! decoded again (BFCL's FC decoding), the decoded steps are re-executed on
//! fresh model instances (`{model}_eval`) next to the ground truth
//! (`{model}_ground_truth_eval`), and BFCL's checker decides: the entry's
//! verdict (`valid`, `error_type` such as `multi_turn:force_terminated`,
//! `multi_turn:empty_turn_model_response`,
//! `multi_turn:instance_state_mismatch`,
//! `multi_turn:execution_response_mismatch`, `multi_turn:inference_error`
//! for a failed or unsent request, and the executed call trace) is given on
//! its last item; its other items are excluded as `step of <id>`. The
//! aggregate is per-category and overall accuracy, not a gate.
//!
//! Granted files (`[phase.scorer_data]`): `multi_turn_<category>` and
//! `multi_turn_<category>_answers` for each category run, and
//! `long_context_constants`.

pub mod score;

wit_bindgen::generate!({ path: "../../wit/agentload-plugin@0.1.0", world: "scorer-plugin" });

use agentload::plugin::types::{DataError, PluginConfig, PluginError, PluginInfo, PluginKind};
use bfcl_multi::data::Dataset;
use exports::agentload::plugin::scorer::{Guest, Report, ScoredItem, Verdict};
use std::cell::RefCell;

struct State {
    settings: score::Settings,
    data: Dataset,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
}

fn steps(items: &[ScoredItem]) -> Result<Vec<score::Step>, PluginError> {
    items
        .iter()
        .map(|it| {
            Ok(score::Step {
                item_id: it.item_id.clone(),
                session_id: it.session_id.clone(),
                expected: serde_json::from_str(&it.expected_json).map_err(|e| {
                    PluginError::InvalidInput(format!(
                        "item {}: expected-json is not JSON: {e}",
                        it.item_id
                    ))
                })?,
                completion: it.completion.as_ref().map(|c| {
                    (
                        c.tool_calls
                            .iter()
                            .map(|t| (t.id.clone(), t.name.clone(), t.arguments.clone()))
                            .collect(),
                        c.content.clone(),
                    )
                }),
            })
        })
        .collect()
}

fn with_state<T>(f: impl FnOnce(&State) -> Result<T, PluginError>) -> Result<T, PluginError> {
    STATE.with_borrow(|s| match s {
        Some(s) => f(s),
        None => Err(PluginError::InvalidInput(
            "configure has not been called".into(),
        )),
    })
}

/// The exported scorer (exported on wasm32; native builds are for tests).
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct BfclMultiScore;

impl Guest for BfclMultiScore {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "bfcl-multi-score".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            kind: PluginKind::Scorer,
            description: "BFCL v4 multi-turn checker (state and execution-response checks) \
                          on the bfcl-multi workload's steps"
                .to_owned(),
        }
    }

    fn configure(config: PluginConfig) -> Result<(), PluginError> {
        let settings =
            score::Settings::parse(&config.settings_json).map_err(PluginError::InvalidConfig)?;
        let data = Dataset::parse(
            config
                .files
                .iter()
                .map(|f| (f.name.as_str(), f.bytes.as_slice())),
        )
        .map_err(|e| {
            PluginError::InvalidData(DataError {
                file: e.file,
                line: e.line,
                message: e.message,
            })
        })?;
        STATE.with_borrow_mut(|s| *s = Some(State { settings, data }));
        Ok(())
    }

    fn score(items: Vec<ScoredItem>) -> Result<Vec<Verdict>, PluginError> {
        let steps = steps(&items)?;
        with_state(|s| {
            let verdicts =
                score::score(&s.settings, &s.data, &steps).map_err(PluginError::InvalidInput)?;
            Ok(verdicts
                .into_iter()
                .map(|v| Verdict {
                    item_id: v.item_id,
                    score: v.score,
                    excluded: v.excluded,
                    detail_json: v.detail.to_string(),
                })
                .collect())
        })
    }

    fn aggregate(_items: Vec<ScoredItem>, verdicts: Vec<Verdict>) -> Result<Report, PluginError> {
        with_state(|s| {
            let verdicts: Vec<score::StepVerdict> = verdicts
                .into_iter()
                .map(|v| score::StepVerdict {
                    item_id: v.item_id,
                    score: v.score,
                    excluded: v.excluded,
                    detail: serde_json::from_str(&v.detail_json).unwrap_or_default(),
                })
                .collect();
            let report = score::aggregate(&s.settings, &s.data, &verdicts);
            Ok(Report {
                score: report["score"].as_f64().unwrap_or(0.0),
                report_json: report.to_string(),
            })
        })
    }
}

#[cfg(target_arch = "wasm32")]
export!(BfclMultiScore);
