//! Host bindings for an earlier WIT package, `agentload:plugin@0.1.0`
//! (both worlds), and the conversions between its records and the current
//! ones the rest of the host works with.
//!
//! 0.1.0 is frozen; its plugins still load and run:
//! - its `turn-request` carries the whole history: it becomes a current one
//!   that keeps nothing (`keep = 0`), and the host shares the messages equal
//!   to the previous request's (`crate::request`);
//! - its scorer `report` has no typed gate: the gate is read from the
//!   `gate` key of `report-json`, the convention 0.1.0 scorers follow
//!   (`{"passed": bool, "factor": f, "metrics": {name: {"value",
//!   "threshold", "golden", "passed"}}}`).
//!
//! The conversions are written out field by field on purpose: a field added
//! to either version breaks the build instead of being dropped silently.
//! Those of the records every older version shares are in
//! `bindings_older.rs`; the ones that differ are here.

use super::bindings::types as current;
use super::bindings::{Gate, GateMetric, Report, ScoredItem, Verdict};
use super::sandbox::StoreState;

/// Bindings for the 0.1.0 `workload-plugin` world (and the shared interfaces).
pub mod workload {
    wasmtime::component::bindgen!({
        path: "../../wit/agentload-plugin@0.1.0",
        world: "workload-plugin",
        exports: { default: async },
    });
}

/// Bindings for the 0.1.0 `scorer-plugin` world.
pub mod scorer {
    wasmtime::component::bindgen!({
        path: "../../wit/agentload-plugin@0.1.0",
        world: "scorer-plugin",
        with: {
            "agentload:plugin/types": super::workload::agentload::plugin::types,
            "agentload:plugin/host": super::workload::agentload::plugin::host,
        },
    });
}

pub use scorer::exports::agentload::plugin::scorer as old_scorer;
pub use workload::agentload::plugin::types as old;
pub use workload::exports::agentload::plugin::workload::SessionPlan;

use workload::agentload::plugin::host::{Host, LogLevel};

super::bindings_older::same_records!();

// ---- 0.1.0 -> current (what an old plugin returns) ----

/// `turn-request`, up: the whole history, keeping nothing.
pub fn turn_request_up(request: old::TurnRequest) -> current::TurnRequest {
    current::TurnRequest {
        session_id: request.session_id,
        turn: request.turn,
        item_id: request.item_id,
        keep: 0,
        messages: request.messages.into_iter().map(message_up).collect(),
        tools_json: request.tools_json,
        sampling: sampling_up(request.sampling),
        delay_ms: request.delay_ms,
        expected_json: request.expected_json,
    }
}

/// `report`, up: the typed gate read from `report-json`'s `gate` key.
pub fn report_up(report: old_scorer::Report) -> Report {
    let gate = gate_from_json(&report.report_json);
    Report {
        score: report.score,
        report_json: report.report_json,
        gate,
    }
}

/// The gate a 0.1.0 scorer wrote into its report JSON, when it wrote one
/// with a boolean `passed`.
fn gate_from_json(report_json: &str) -> Option<Gate> {
    let report: serde_json::Value = serde_json::from_str(report_json).ok()?;
    let gate = report.get("gate")?;
    let passed = gate.get("passed")?.as_bool()?;
    let factor = gate.get("factor").and_then(serde_json::Value::as_f64);
    let metrics = gate
        .get("metrics")
        .and_then(serde_json::Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, m)| {
            let num = |k: &str| m.get(k).and_then(serde_json::Value::as_f64);
            let rule = match (factor, num("golden")) {
                (Some(f), Some(g)) => format!("{f} x {g:.2}"),
                (None, Some(g)) => format!("golden {g:.2}"),
                _ => String::new(),
            };
            GateMetric {
                name: name.clone(),
                value: num("value").unwrap_or(f64::NAN),
                minimum: num("threshold"),
                maximum: None,
                rule,
                passed: m.get("passed").and_then(serde_json::Value::as_bool) == Some(true),
            }
        })
        .collect();
    Some(Gate { passed, metrics })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_turn_request_keeps_nothing_and_loses_nothing() {
        let old = old::TurnRequest {
            session_id: "s".into(),
            turn: 3,
            item_id: "s/3".into(),
            messages: vec![old::ChatMessage {
                role: old::Role::Assistant,
                content: None,
                reasoning_content: Some("r".into()),
                tool_calls: vec![old::ToolCall {
                    id: "c".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                }],
                tool_call_id: None,
                name: None,
            }],
            tools_json: Some("[]".into()),
            sampling: old::Sampling {
                temperature: Some(0.5),
                top_p: None,
                top_k: Some(4),
                seed: Some(-1),
                max_completion_tokens: Some(8),
                tool_choice_json: None,
            },
            delay_ms: 250,
            expected_json: "{\"x\":1}".into(),
        };
        let up = turn_request_up(old);
        assert_eq!((up.keep, up.delay_ms), (0, 250));
        assert_eq!((up.session_id.as_str(), up.turn), ("s", 3));
        assert_eq!(up.item_id, "s/3");
        let current::Message::Chat(m) = &up.messages[0] else {
            panic!("an old message is a typed one");
        };
        assert_eq!(m.role, current::Role::Assistant);
        assert_eq!(m.reasoning_content.as_deref(), Some("r"));
        assert_eq!(m.tool_calls[0].name, "f");
        assert_eq!(up.tools_json.as_deref(), Some("[]"));
        assert_eq!(up.sampling.top_k, Some(4));
        assert_eq!(up.sampling.seed, Some(-1));
        assert_eq!(up.expected_json, "{\"x\":1}");
    }

    #[test]
    fn an_outcome_is_passed_down_unchanged() {
        let outcome = current::TurnOutcome::Completed(current::Completion {
            content: "hi".into(),
            reasoning_content: "think".into(),
            tool_calls: vec![current::ToolCall {
                id: "1".into(),
                name: "g".into(),
                arguments: "{\"a\":2}".into(),
            }],
            finish_reason: Some("stop".into()),
            usage: Some(current::Usage {
                prompt_tokens: 10,
                completion_tokens: 2,
                cached_tokens: Some(4),
            }),
        });
        let old::TurnOutcome::Completed(c) = turn_outcome_down(&outcome) else {
            panic!("a completion stays a completion");
        };
        assert_eq!(
            (c.content.as_str(), c.reasoning_content.as_str()),
            ("hi", "think")
        );
        assert_eq!(c.tool_calls[0].arguments, "{\"a\":2}");
        assert_eq!(c.finish_reason.as_deref(), Some("stop"));
        let u = c.usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.cached_tokens),
            (10, 2, Some(4))
        );
        assert!(matches!(
            turn_outcome_down(&current::TurnOutcome::Failed("x".into())),
            old::TurnOutcome::Failed(m) if m == "x"
        ));
        assert!(matches!(
            turn_outcome_down(&current::TurnOutcome::Aborted),
            old::TurnOutcome::Aborted
        ));
    }

    #[test]
    fn an_old_error_keeps_its_location() {
        let e = plugin_error_up(old::PluginError::InvalidData(old::DataError {
            file: "f.jsonl".into(),
            line: 7,
            message: "bad".into(),
        }));
        assert_eq!(
            super::super::bindings::error_text(&e),
            "invalid data: f.jsonl:7: bad"
        );
    }

    #[test]
    fn an_old_reports_gate_is_read_from_its_json() {
        let json = r#"{"accuracy": 0.5, "gate": {"factor": 0.97, "passed": false, "metrics": {
            "bfcl_overall_accuracy": {"value": 50.0, "golden": 86.23, "threshold": 83.6431, "passed": false},
            "bfcl_normalized_accuracy": {"value": 90.0, "golden": 87.96, "threshold": 85.3212, "passed": true}}}}"#;
        let up = report_up(old_scorer::Report {
            score: 0.5,
            report_json: json.into(),
        });
        assert_eq!(up.report_json, json);
        let gate = up.gate.expect("a gate");
        assert!(!gate.passed);
        let overall = &gate.metrics[0];
        assert_eq!(overall.name, "bfcl_overall_accuracy");
        assert_eq!((overall.value, overall.minimum), (50.0, Some(83.6431)));
        assert_eq!(overall.rule, "0.97 x 86.23");
        assert!(!overall.passed && gate.metrics[1].passed);
        for no_gate in [
            r#"{"accuracy": 1}"#,
            r#"{"gate": {"passed": "yes"}}"#,
            "not json",
        ] {
            let up = report_up(old_scorer::Report {
                score: 1.0,
                report_json: no_gate.into(),
            });
            assert!(up.gate.is_none(), "{no_gate}");
        }
    }
}
