//! Host bindings for the previous WIT package, `agentload:plugin@0.2.0`
//! (both worlds), and the conversions between its records and the current
//! (0.3.0) ones the rest of the host works with.
//!
//! 0.2.0 is frozen; its plugins still load and run. Its records are the
//! current ones but for `next-turn`, which returns the next request alone:
//! it becomes a `turn-step` without a review (a 0.2.0 workload has no
//! live-reply replay).
//!
//! The conversions are written out field by field on purpose: a field added
//! to either version breaks the build here instead of being dropped silently.

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

impl Host for StoreState {
    fn log(&mut self, level: LogLevel, message: String) {
        let level = match level {
            LogLevel::Trace => super::bindings::LogLevel::Trace,
            LogLevel::Debug => super::bindings::LogLevel::Debug,
            LogLevel::Info => super::bindings::LogLevel::Info,
            LogLevel::Warn => super::bindings::LogLevel::Warn,
            LogLevel::Error => super::bindings::LogLevel::Error,
        };
        super::bindings::log(self, level, &message);
    }
}

// ---- 0.2.0 -> 0.3.0 (what an old plugin returns) ----

/// `plugin-info`, up.
pub fn plugin_info_up(info: old::PluginInfo) -> current::PluginInfo {
    current::PluginInfo {
        name: info.name,
        version: info.version,
        kind: match info.kind {
            old::PluginKind::Workload => current::PluginKind::Workload,
            old::PluginKind::Scorer => current::PluginKind::Scorer,
        },
        description: info.description,
    }
}

/// `session-plan`, up.
pub fn session_plan_up(plan: SessionPlan) -> super::bindings::SessionPlan {
    super::bindings::SessionPlan {
        id: plan.id,
        expected_turns: plan.expected_turns,
    }
}

/// `plugin-error`, up.
pub fn plugin_error_up(error: old::PluginError) -> current::PluginError {
    match error {
        old::PluginError::InvalidConfig(m) => current::PluginError::InvalidConfig(m),
        old::PluginError::InvalidData(e) => current::PluginError::InvalidData(current::DataError {
            file: e.file,
            line: e.line,
            message: e.message,
        }),
        old::PluginError::InvalidInput(m) => current::PluginError::InvalidInput(m),
        old::PluginError::Internal(m) => current::PluginError::Internal(m),
    }
}

/// `turn-request`, up.
pub fn turn_request_up(request: old::TurnRequest) -> current::TurnRequest {
    current::TurnRequest {
        session_id: request.session_id,
        turn: request.turn,
        item_id: request.item_id,
        keep: request.keep,
        messages: request.messages.into_iter().map(chat_message_up).collect(),
        tools_json: request.tools_json,
        sampling: sampling_up(request.sampling),
        delay_ms: request.delay_ms,
        expected_json: request.expected_json,
    }
}

fn chat_message_up(message: old::ChatMessage) -> current::ChatMessage {
    current::ChatMessage {
        role: match message.role {
            old::Role::System => current::Role::System,
            old::Role::User => current::Role::User,
            old::Role::Assistant => current::Role::Assistant,
            old::Role::Tool => current::Role::Tool,
        },
        content: message.content,
        reasoning_content: message.reasoning_content,
        tool_calls: message.tool_calls.into_iter().map(tool_call_up).collect(),
        tool_call_id: message.tool_call_id,
        name: message.name,
    }
}

fn tool_call_up(call: old::ToolCall) -> current::ToolCall {
    current::ToolCall {
        id: call.id,
        name: call.name,
        arguments: call.arguments,
    }
}

fn sampling_up(sampling: old::Sampling) -> current::Sampling {
    current::Sampling {
        temperature: sampling.temperature,
        top_p: sampling.top_p,
        top_k: sampling.top_k,
        seed: sampling.seed,
        max_completion_tokens: sampling.max_completion_tokens,
        tool_choice_json: sampling.tool_choice_json,
    }
}

/// `verdict`, up.
pub fn verdict_up(verdict: old_scorer::Verdict) -> Verdict {
    Verdict {
        item_id: verdict.item_id,
        score: verdict.score,
        excluded: verdict.excluded,
        detail_json: verdict.detail_json,
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

// ---- 0.3.0 -> 0.2.0 (what the host passes an old plugin) ----

/// `plugin-config`, down.
pub fn plugin_config_down(config: &current::PluginConfig) -> old::PluginConfig {
    old::PluginConfig {
        settings_json: config.settings_json.clone(),
        files: config
            .files
            .iter()
            .map(|f| old::GrantedFile {
                name: f.name.clone(),
                file_name: f.file_name.clone(),
                bytes: f.bytes.clone(),
            })
            .collect(),
    }
}

/// `turn-outcome`, down.
pub fn turn_outcome_down(outcome: &current::TurnOutcome) -> old::TurnOutcome {
    match outcome {
        current::TurnOutcome::Completed(c) => old::TurnOutcome::Completed(completion_down(c)),
        current::TurnOutcome::Failed(cause) => old::TurnOutcome::Failed(cause.clone()),
        current::TurnOutcome::Aborted => old::TurnOutcome::Aborted,
    }
}

fn completion_down(c: &current::Completion) -> old::Completion {
    old::Completion {
        content: c.content.clone(),
        reasoning_content: c.reasoning_content.clone(),
        tool_calls: c
            .tool_calls
            .iter()
            .map(|t| old::ToolCall {
                id: t.id.clone(),
                name: t.name.clone(),
                arguments: t.arguments.clone(),
            })
            .collect(),
        finish_reason: c.finish_reason.clone(),
        usage: c.usage.as_ref().map(|u| old::Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            cached_tokens: u.cached_tokens,
        }),
    }
}

/// `scored-item`, down.
pub fn scored_item_down(item: &ScoredItem) -> old_scorer::ScoredItem {
    old_scorer::ScoredItem {
        item_id: item.item_id.clone(),
        session_id: item.session_id.clone(),
        turn: item.turn,
        expected_json: item.expected_json.clone(),
        completion: item.completion.as_ref().map(completion_down),
    }
}

/// `verdict`, down (for `aggregate`).
pub fn verdict_down(verdict: &Verdict) -> old_scorer::Verdict {
    old_scorer::Verdict {
        item_id: verdict.item_id.clone(),
        score: verdict.score,
        excluded: verdict.excluded.clone(),
        detail_json: verdict.detail_json.clone(),
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
        assert_eq!(up.messages[0].role, current::Role::Tool);
        assert_eq!(up.messages[0].tool_call_id.as_deref(), Some("c1"));
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
