//! Host bindings for the WIT package before the current one, `agentload:plugin@0.3.0`
//! (both worlds), and the conversions between its records and the current
//! (0.4.0) ones the rest of the host works with.
//!
//! 0.3.0 is frozen; its plugins still load and run. Its records are the
//! current ones but for what 0.4.0 added: its messages are all typed, its
//! sampling has no `max-tokens`, `min-p`, `ignore-eos` or
//! `reasoning-effort`, its `configure` returns the sessions alone (no
//! facts), its `turn-step` has no pause, its sessions are never closed-loop
//! (no workspace, no tool results), and it sees no nonce.
//!
//! The conversions are written out field by field on purpose: a field added
//! to either version breaks the build instead of being dropped silently.
//! Those of the records every older version shares are in
//! `bindings_older.rs`; the ones that differ are here.

use super::bindings::types as current;
use super::bindings::{Gate, GateMetric, Report, ScoredItem, Verdict};
use super::sandbox::StoreState;

/// Bindings for the 0.3.0 `workload-plugin` world (and the shared interfaces).
pub mod workload {
    wasmtime::component::bindgen!({
        path: "../../wit/agentload-plugin@0.3.0",
        world: "workload-plugin",
        exports: { default: async },
    });
}

/// Bindings for the 0.3.0 `scorer-plugin` world.
pub mod scorer {
    wasmtime::component::bindgen!({
        path: "../../wit/agentload-plugin@0.3.0",
        world: "scorer-plugin",
        with: {
            "agentload:plugin/types": super::workload::agentload::plugin::types,
            "agentload:plugin/host": super::workload::agentload::plugin::host,
        },
    });
}

pub use scorer::exports::agentload::plugin::scorer as old_scorer;
pub use workload::agentload::plugin::types as old;
use workload::exports::agentload::plugin::workload as old_workload;
pub use workload::exports::agentload::plugin::workload::SessionPlan;

use workload::agentload::plugin::host::{Host, LogLevel};

super::bindings_older::same_records!();

// ---- 0.3.0 -> 0.4.0 (what an old plugin returns) ----

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

/// `turn-step`, up: no pause after the turn.
pub fn turn_step_up(step: old_workload::TurnStep) -> crate::bindings::TurnStep {
    use crate::bindings::{Divergence as D, LiveAction as A};
    use old_workload::{Divergence as OldD, LiveAction as OldA};
    crate::bindings::TurnStep {
        review: step.review.map(|r| crate::bindings::TurnReview {
            divergence: match r.divergence {
                OldD::Error => D::Error,
                OldD::Truncated => D::Truncated,
                OldD::Empty => D::Empty,
                OldD::MalformedArgs => D::MalformedArgs,
                OldD::TextForCall => D::TextForCall,
                OldD::CallForText => D::CallForText,
                OldD::MissingCalls => D::MissingCalls,
                OldD::ExtraCalls => D::ExtraCalls,
                OldD::NameDiff => D::NameDiff,
                OldD::ArgsDiff => D::ArgsDiff,
                OldD::Match => D::Match,
            },
            action: match r.action {
                OldA::Kept => A::Kept,
                OldA::Substituted => A::Substituted,
                OldA::Ended => A::Ended,
                OldA::Failed => A::Failed,
            },
            paired_results: r.paired_results,
            dropped_results: r.dropped_results,
            placeholder_results: r.placeholder_results,
            detail: r.detail,
        }),
        next: step.next.map(turn_request_up),
        pause_ms: 0,
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
    fn a_turn_step_keeps_its_review_and_gets_no_pause() {
        let up = turn_step_up(old_workload::TurnStep {
            review: Some(old_workload::TurnReview {
                divergence: old_workload::Divergence::ArgsDiff,
                action: old_workload::LiveAction::Substituted,
                paired_results: 1,
                dropped_results: 2,
                placeholder_results: 3,
                detail: "d".into(),
            }),
            next: Some(old::TurnRequest {
                session_id: "s".into(),
                turn: 2,
                item_id: "s/2".into(),
                keep: 1,
                messages: vec![old::ChatMessage {
                    role: old::Role::User,
                    content: Some("u".into()),
                    reasoning_content: None,
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    name: None,
                }],
                tools_json: None,
                sampling: old::Sampling {
                    temperature: Some(0.5),
                    top_p: None,
                    top_k: Some(3),
                    seed: None,
                    max_completion_tokens: Some(9),
                    tool_choice_json: None,
                },
                delay_ms: 4,
                expected_json: "{}".into(),
            }),
        });
        assert_eq!(up.pause_ms, 0);
        let review = up.review.expect("the review");
        assert_eq!(review.divergence, crate::bindings::Divergence::ArgsDiff);
        assert_eq!(review.action, crate::bindings::LiveAction::Substituted);
        assert_eq!(
            (
                review.paired_results,
                review.dropped_results,
                review.placeholder_results
            ),
            (1, 2, 3)
        );
        let next = up.next.expect("the next request");
        assert_eq!((next.turn, next.keep, next.delay_ms), (2, 1, 4));
        let current::Message::Chat(m) = &next.messages[0] else {
            panic!("an old message is a typed one");
        };
        assert_eq!(m.content.as_deref(), Some("u"));
        assert_eq!(next.sampling.top_k, Some(3));
        assert_eq!(next.sampling.ignore_eos, None);
    }
}
