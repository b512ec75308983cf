//! Test fixture: a scorer plugin built against `agentload:plugin@0.1.0`, the
//! previous release, frozen. Its `report` has no typed gate: the gate is the
//! `gate` key of its report JSON, the convention 0.1.0 scorers follow, and
//! the host must read it from there.
//!
//! Settings: `{"min_score": F}` (default 0.5). An item scores 1 when its
//! turn completed with content, else 0; the gate passes when the mean score
//! is at least `min_score`.

wit_bindgen::generate!({
    path: "../../../wit/agentload-plugin@0.1.0",
    world: "scorer-plugin",
});

use agentload::plugin::types::{PluginConfig, PluginError, PluginInfo, PluginKind};
use exports::agentload::plugin::scorer::{Guest, Report, ScoredItem, Verdict};
use std::cell::Cell;

struct OldScorer;

thread_local! {
    static MIN_SCORE: Cell<f64> = const { Cell::new(0.5) };
}

impl Guest for OldScorer {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "old-scorer".into(),
            version: "0.1.0".into(),
            kind: PluginKind::Scorer,
            description: "test fixture built against agentload:plugin@0.1.0".into(),
        }
    }

    fn configure(config: PluginConfig) -> Result<(), PluginError> {
        let settings: serde_json::Value = serde_json::from_str(&config.settings_json)
            .map_err(|e| PluginError::InvalidConfig(e.to_string()))?;
        let min = match settings.get("min_score") {
            None => 0.5,
            Some(v) => v
                .as_f64()
                .ok_or_else(|| PluginError::InvalidConfig("`min_score` must be a number".into()))?,
        };
        MIN_SCORE.with(|m| m.set(min));
        Ok(())
    }

    fn score(items: Vec<ScoredItem>) -> Result<Vec<Verdict>, PluginError> {
        Ok(items
            .into_iter()
            .map(|item| {
                let answered = item.completion.is_some_and(|c| !c.content.is_empty());
                Verdict {
                    item_id: item.item_id,
                    score: if answered { 1.0 } else { 0.0 },
                    excluded: None,
                    detail_json: "{}".into(),
                }
            })
            .collect())
    }

    fn aggregate(_items: Vec<ScoredItem>, verdicts: Vec<Verdict>) -> Result<Report, PluginError> {
        let n = verdicts.len().max(1) as f64;
        let mean = verdicts.iter().map(|v| v.score).sum::<f64>() / n;
        let min = MIN_SCORE.with(Cell::get);
        let passed = mean >= min;
        let report = serde_json::json!({
            "score": mean,
            "gate": {
                "factor": 1.0,
                "passed": passed,
                "metrics": {
                    "answered": {"value": mean, "golden": min, "threshold": min, "passed": passed},
                },
            },
        });
        Ok(Report {
            score: mean,
            report_json: report.to_string(),
        })
    }
}

#[cfg(target_arch = "wasm32")]
export!(OldScorer);
