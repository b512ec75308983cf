//! Scoring recorded turns with a scorer plugin, shared by `run` and
//! `rescore`: scorer items from turn records, the report file, the
//! per-sample rows, the gate line.

use agentload_config::{table_json, PhaseConfig};
use agentload_engine::{TurnFacts, TurnRecord, TurnStatus};
use agentload_plugin_host::types::{GrantedFile, PluginConfig};
use agentload_plugin_host::{Gate, Scored, ScoredItem, ScorerPlugin};

use agentload_fs::OutDir;
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

impl PhaseKind {
    /// `performance` or `accuracy`: as the run's folders and the rescore manifest say it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Performance => "performance",
            Self::Accuracy => "accuracy",
        }
    }
}

/// Scores a phase's `items` (granting the scorer `files`) and writes the
/// scorer's report to `out/<report_file>`, except the reference's
/// `accuracy/accuracy_results.json`: a report shaped as the reference's
/// entry goes into `entries` for the wrapper
/// ([`agentload_results::write_accuracy_results`]), as does the performance phase's
/// inline entry. Any other report is written byte for byte as the scorer
/// returned it, once it is known to be JSON. `turns` are the facts of the phase's turns, for
/// the entries' times and counts. Returns the verdicts and the report.
#[allow(clippy::too_many_arguments)]
pub fn score(
    scorer: &ScorerPlugin,
    phase: &PhaseConfig,
    kind: PhaseKind,
    files: &[GrantedFile],
    items: &[ScoredItem],
    turns: &[TurnFacts],
    out: &OutDir,
    entries: &mut Vec<Value>,
) -> Result<Scored> {
    let scored = scorer.score(
        &PluginConfig {
            settings_json: table_json(&phase.scorer_settings),
            files: files.to_vec(),
            // A scorer's verdicts depend on its items alone.
            nonce: String::new(),
        },
        items,
    )?;
    let report: Value = serde_json::from_str(&scored.report.report_json).with_context(|| {
        format!(
            "scorer {} returned a report that is not JSON",
            scorer.identity().name
        )
    })?;
    check_gate(
        &scorer.identity().name,
        &report,
        scored.report.gate.as_ref(),
    )?;
    if kind == PhaseKind::Performance {
        entries.push(agentload_results::performance_entry(
            scored.report.score,
            turns,
        ));
    }
    let entry = (phase.report_file == agentload_results::ACCURACY_RESULTS)
        .then(|| agentload_results::accuracy_entry(&report, turns))
        .flatten();
    match entry {
        Some(entry) => entries.push(entry),
        None => out
            .write(&phase.report_file, &scored.report.report_json)
            .with_context(|| format!("cannot write {}", out.path(&phase.report_file).display()))?,
    }
    Ok(scored)
}

/// `accuracy gate PASS: bfcl_overall_accuracy 99.90 >= 83.64 (0.97 x 86.23), ...`
/// from a scorer's typed gate.
pub fn gate_line(gate: &Gate) -> String {
    let verdict = if gate.passed { "PASS" } else { "FAIL" };
    let parts: Vec<String> = gate
        .metrics
        .iter()
        .map(|m| {
            let bound = match (m.minimum, m.maximum) {
                (Some(lo), None) => format!("{} {lo:.2}", if m.passed { ">=" } else { "<" }),
                (None, Some(hi)) => format!("{} {hi:.2}", if m.passed { "<=" } else { ">" }),
                (Some(lo), Some(hi)) => format!(
                    "{} [{lo:.2}, {hi:.2}]",
                    if m.passed { "in" } else { "outside" }
                ),
                (None, None) => (if m.passed { "passed" } else { "failed" }).to_owned(),
            };
            let rule = if m.rule.is_empty() {
                String::new()
            } else {
                format!(" ({})", m.rule)
            };
            format!("{} {:.2} {bound}{rule}", m.name, m.value)
        })
        .collect();
    format!("accuracy gate {verdict}: {}", parts.join(", "))
}

/// Refuses a report whose JSON states a gate verdict other than its typed
/// gate's: the typed gate decides, and the files must not say otherwise.
fn check_gate(scorer: &str, report: &Value, gate: Option<&Gate>) -> Result<()> {
    let stated = report
        .get("gate")
        .and_then(|g| g.get("passed"))
        .and_then(Value::as_bool);
    match (stated, gate) {
        (Some(json), Some(typed)) if json != typed.passed => anyhow::bail!(
            "scorer {scorer}: its report JSON says the gate {} but its typed gate says it {}",
            if json { "passed" } else { "failed" },
            if typed.passed { "passed" } else { "failed" }
        ),
        _ => Ok(()),
    }
}

/// One JSON object per sample, into `rel` of `out`: the verdict's detail plus item id and
/// score.
pub fn write_samples(out: &OutDir, rel: &str, scored: &Scored) -> Result<()> {
    let mut text = String::new();
    for v in &scored.verdicts {
        let mut row = serde_json::Map::new();
        row.insert("item_id".into(), v.item_id.clone().into());
        row.insert("score".into(), v.score.into());
        if let Ok(Value::Object(detail)) = serde_json::from_str(&v.detail_json) {
            row.extend(detail);
        }
        text.push_str(&Value::Object(row).to_string());
        text.push('\n');
    }
    out.write(rel, text)
        .with_context(|| format!("cannot write {}", out.path(rel).display()))
}

/// The scorer items of every turn that counts in the log `turns`, in log order, read one
/// record at a time: a long phase's whole records are never in memory together. `then` gets
/// each record once its item is taken (to keep its facts, or drop it).
pub fn logged_items(turns: &Path, mut then: impl FnMut(TurnRecord)) -> Result<Vec<ScoredItem>> {
    let mut items = Vec::new();
    agentload_engine::each_record(turns, |r| {
        items.push(scored_item(&r));
        then(r);
    })
    .map_err(anyhow::Error::msg)?;
    Ok(items)
}

/// A recorded turn as a scorer item; an unanswered turn carries no completion (missing).
fn scored_item(r: &TurnRecord) -> ScoredItem {
    ScoredItem {
        item_id: r.item_id.clone(),
        session_id: r.session_id.clone(),
        turn: r.turn,
        expected_json: r.expected_json.clone(),
        completion: match (&r.status, &r.completion) {
            (TurnStatus::Completed, Some(c)) => Some(agentload_engine::completion_for_plugin(c, r)),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_plugin_host::GateMetric;

    fn metric(
        name: &str,
        value: f64,
        bounds: (Option<f64>, Option<f64>),
        passed: bool,
    ) -> GateMetric {
        GateMetric {
            name: name.into(),
            value,
            minimum: bounds.0,
            maximum: bounds.1,
            rule: if bounds.1.is_none() {
                "0.97 x 86.23".into()
            } else {
                String::new()
            },
            passed,
        }
    }

    #[test]
    fn gate_line_names_each_metric() {
        let gate = Gate {
            passed: false,
            metrics: vec![
                metric("bfcl_overall_accuracy", 80.0, (Some(83.6431), None), false),
                metric(
                    "bfcl_normalized_accuracy",
                    90.0,
                    (Some(85.3212), None),
                    true,
                ),
                metric("osl_mean", 700.0, (Some(500.0), Some(650.0)), false),
            ],
        };
        assert_eq!(
            gate_line(&gate),
            "accuracy gate FAIL: bfcl_overall_accuracy 80.00 < 83.64 (0.97 x 86.23), \
             bfcl_normalized_accuracy 90.00 >= 85.32 (0.97 x 86.23), \
             osl_mean 700.00 outside [500.00, 650.00]"
        );
    }

    #[test]
    fn a_report_contradicting_its_typed_gate_is_refused() {
        let gate = Gate {
            passed: false,
            metrics: Vec::new(),
        };
        let says_passed = serde_json::json!({"gate": {"passed": true}});
        let err = check_gate("s", &says_passed, Some(&gate)).unwrap_err();
        assert!(
            err.to_string()
                .contains("says the gate passed but its typed gate says it failed"),
            "{err}"
        );
        assert!(check_gate(
            "s",
            &serde_json::json!({"gate": {"passed": false}}),
            Some(&gate)
        )
        .is_ok());
        assert!(check_gate("s", &serde_json::json!({}), Some(&gate)).is_ok());
        assert!(check_gate("s", &says_passed, None).is_ok());
    }
}
