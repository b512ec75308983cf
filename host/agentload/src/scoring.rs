//! Scoring recorded turns with a scorer plugin, shared by `run` and
//! `rescore`: scorer items from turn records, the report file, the
//! per-sample rows, the gate line.

use agentload_config::{table_json, PhaseConfig};
use agentload_engine::{TurnRecord, TurnStatus};
use agentload_plugin_host::types::{GrantedFile, PluginConfig};
use agentload_plugin_host::{Scored, ScoredItem, ScorerPlugin};

use anyhow::{Context as _, Result};
use serde_json::Value;
use std::path::Path;

/// Which phase a scorer scores: the accuracy gate's entry, or the
/// performance phase's inline one, goes into `accuracy_results.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseKind {
    Performance,
    Accuracy,
}

/// Scores a phase's records (granting the scorer `files`) and writes the
/// scorer's report to `out/<report_file>`, except the reference's
/// `accuracy/accuracy_results.json`: a report shaped as the reference's
/// entry goes into `entries` for the wrapper
/// ([`agentload_results::write_accuracy_results`]), as does the performance phase's
/// inline entry. Any other report is written byte for byte as the scorer
/// returned it, once it is known to be JSON. Returns the verdicts and the
/// report.
pub fn score(
    scorer: &ScorerPlugin,
    phase: &PhaseConfig,
    kind: PhaseKind,
    files: &[GrantedFile],
    records: &[TurnRecord],
    out: &Path,
    entries: &mut Vec<Value>,
) -> Result<(Scored, Value)> {
    let report_path = out.join(&phase.report_file);
    let items = scored_items(records);
    let scored = scorer.score(
        &PluginConfig {
            settings_json: table_json(&phase.scorer_settings),
            files: files.to_vec(),
        },
        &items,
    )?;
    let report: Value = serde_json::from_str(&scored.report.report_json).with_context(|| {
        format!(
            "scorer {} returned a report that is not JSON",
            scorer.identity().name
        )
    })?;
    if kind == PhaseKind::Performance {
        entries.push(agentload_results::performance_entry(
            scored.report.score,
            records,
        ));
    }
    let entry = (phase.report_file == agentload_results::ACCURACY_RESULTS)
        .then(|| agentload_results::accuracy_entry(&report, records))
        .flatten();
    match entry {
        Some(entry) => entries.push(entry),
        None => write_report(&report_path, &scored.report.report_json)?,
    }
    Ok((scored, report))
}

/// A scorer's report as it wrote it (the scorer owns its format).
fn write_report(path: &Path, json: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))
}

/// `accuracy gate PASS: bfcl_overall_accuracy 99.90 >= 83.64 (0.97 x 86.23), ...`
/// from a report's `gate` object (`passed`, `factor`, and per metric
/// `value`, `golden`, `threshold`, `passed`).
pub fn gate_line(gate: &Value) -> String {
    let verdict = match gate.get("passed").and_then(Value::as_bool) {
        Some(true) => "PASS",
        Some(false) => "FAIL",
        None => "UNKNOWN",
    };
    let factor = gate.get("factor").and_then(Value::as_f64).unwrap_or(1.0);
    let mut parts = Vec::new();
    for (metric, m) in gate
        .get("metrics")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        let num = |k: &str| m.get(k).and_then(Value::as_f64).unwrap_or(f64::NAN);
        let ok = m.get("passed").and_then(Value::as_bool) == Some(true);
        parts.push(format!(
            "{metric} {:.2} {} {:.2} ({factor} x {:.2})",
            num("value"),
            if ok { ">=" } else { "<" },
            num("threshold"),
            num("golden"),
        ));
    }
    format!("accuracy gate {verdict}: {}", parts.join(", "))
}

/// One JSON object per sample: the verdict's detail plus item id and score.
pub fn write_samples(path: &Path, scored: &Scored) -> Result<()> {
    let mut out = String::new();
    for v in &scored.verdicts {
        let mut row = serde_json::Map::new();
        row.insert("item_id".into(), v.item_id.clone().into());
        row.insert("score".into(), v.score.into());
        if let Ok(Value::Object(detail)) = serde_json::from_str(&v.detail_json) {
            row.extend(detail);
        }
        out.push_str(&Value::Object(row).to_string());
        out.push('\n');
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}

/// Scorer items for every recorded turn, in order; unanswered turns carry
/// no completion (missing).
pub fn scored_items(records: &[TurnRecord]) -> Vec<ScoredItem> {
    records
        .iter()
        .map(|r| ScoredItem {
            item_id: r.item_id.clone(),
            session_id: r.session_id.clone(),
            turn: r.turn,
            expected_json: r.expected_json.clone(),
            completion: match (&r.status, &r.completion) {
                (TurnStatus::Completed, Some(c)) => {
                    Some(agentload_engine::completion_for_plugin(c, r.usage.as_ref()))
                }
                _ => None,
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_line_names_each_metric() {
        let gate = serde_json::json!({"factor": 0.97, "passed": false, "metrics": {
            "bfcl_overall_accuracy": {"value": 80.0, "golden": 86.23, "threshold": 83.6431, "passed": false},
            "bfcl_normalized_accuracy": {"value": 90.0, "golden": 87.96, "threshold": 85.3212, "passed": true}}});
        assert_eq!(
            gate_line(&gate),
            "accuracy gate FAIL: bfcl_overall_accuracy 80.00 < 83.64 (0.97 x 86.23), \
             bfcl_normalized_accuracy 90.00 >= 85.32 (0.97 x 87.96)"
        );
    }
}
