//! Host bindings for the WIT package before the current one, `agentload:plugin@0.2.0`
//! (both worlds), and the conversions between its records and the current
//! (0.3.0) ones the rest of the host works with.
//!
//! 0.2.0 is frozen; its plugins still load and run. Its records are the
//! current ones but for `next-turn`, which returns the next request alone:
//! it becomes a `turn-step` without a review (a 0.2.0 workload has no
//! live-reply replay).
//!
//! The conversions are written out field by field on purpose: a field added
//! to either version breaks the build instead of being dropped silently.
//! Those of the records every older version shares are in
//! `bindings_older.rs`; the ones that differ are here.

use super::bindings::types as current;
use super::bindings::{Gate, GateMetric, Report, ScoredItem, Verdict};
use super::sandbox::StoreState;

/// Bindings for the 0.2.0 `workload-plugin` world (and the shared interfaces).
pub mod workload {
    wasmtime::component::bindgen!({
        path: "../../wit/agentload-plugin@0.2.0",
        world: "workload-plugin",
        exports: { default: async },
    });
}

/// Bindings for the 0.2.0 `scorer-plugin` world.
pub mod scorer {
    wasmtime::component::bindgen!({
        path: "../../wit/agentload-plugin@0.2.0",
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

// ---- 0.2.0 -> 0.3.0 (what an old plugin returns) ----

/// `turn-request`, up.
pub fn turn_request_up(request: old::TurnRequest) -> current::TurnRequest {
    current::TurnRequest {
        session_id: request.session_id,
        turn: request.turn,
        item_id: request.item_id,
        keep: request.keep,
        messages: request.messages.into_iter().map(message_up).collect(),
        tools_json: request.tools_json,
        sampling: sampling_up(request.sampling),
        delay_ms: request.delay_ms,
        expected_json: request.expected_json,
    }
}

/// `report`, up.
pub fn report_up(report: old_scorer::Report) -> Report {
    Report {
        score: report.score,
        report_json: report.report_json,
        gate: report.gate.map(|gate| Gate {
            passed: gate.passed,
            metrics: gate
                .metrics
                .into_iter()
                .map(|m| GateMetric {
                    name: m.name,
                    value: m.value,
                    minimum: m.minimum,
                    maximum: m.maximum,
                    rule: m.rule,
                    passed: m.passed,
                })
                .collect(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_request_keeps_what_it_kept() {
        let up = turn_request_up(old::TurnRequest {
            session_id: "s".into(),
            turn: 4,
            item_id: "s/4".into(),
            keep: 7,
            messages: vec![old::ChatMessage {
                role: old::Role::Tool,
                content: Some("ok".into()),
                reasoning_content: None,
                tool_calls: Vec::new(),
                tool_call_id: Some("c1".into()),
                name: None,
            }],
            tools_json: None,
            sampling: old::Sampling {
                temperature: Some(1.0),
                top_p: Some(0.9),
                top_k: None,
                seed: None,
                max_completion_tokens: Some(64),
                tool_choice_json: Some("\"auto\"".into()),
            },
            delay_ms: 3,
            expected_json: "{}".into(),
        });
        assert_eq!((up.keep, up.turn, up.delay_ms), (7, 4, 3));
        let current::Message::Chat(m) = &up.messages[0] else {
            panic!("an old message is a typed one");
        };
        assert_eq!(m.role, current::Role::Tool);
        assert_eq!(m.tool_call_id.as_deref(), Some("c1"));
        assert_eq!(up.sampling.top_p, Some(0.9));
        assert_eq!(up.sampling.tool_choice_json.as_deref(), Some("\"auto\""));
    }

    #[test]
    fn a_report_keeps_its_typed_gate() {
        let up = report_up(old_scorer::Report {
            score: 0.5,
            report_json: "{}".into(),
            gate: Some(old_scorer::Gate {
                passed: false,
                metrics: vec![old_scorer::GateMetric {
                    name: "m".into(),
                    value: 0.5,
                    minimum: Some(0.6),
                    maximum: None,
                    rule: "r".into(),
                    passed: false,
                }],
            }),
        });
        let gate = up.gate.expect("the gate");
        assert!(!gate.passed);
        assert_eq!(gate.metrics[0].minimum, Some(0.6));
        assert_eq!(gate.metrics[0].rule, "r");
    }

    #[test]
    fn an_outcome_is_passed_down_unchanged() {
        let outcome = current::TurnOutcome::Completed(current::Completion {
            content: "c".into(),
            reasoning_content: "r".into(),
            tool_calls: vec![current::ToolCall {
                id: "1".into(),
                name: "f".into(),
                arguments: "{}".into(),
            }],
            finish_reason: Some("tool_calls".into()),
            usage: None,
        });
        let old::TurnOutcome::Completed(c) = turn_outcome_down(&outcome) else {
            panic!("a completion stays a completion");
        };
        assert_eq!(
            (c.content.as_str(), c.tool_calls[0].name.as_str()),
            ("c", "f")
        );
        assert_eq!(c.finish_reason.as_deref(), Some("tool_calls"));
    }
}
