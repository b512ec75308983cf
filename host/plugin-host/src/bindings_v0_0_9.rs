//! Host bindings for the older WIT package `agentload:plugin@0.0.9` (its
//! `workload-plugin` world), and the conversions between its records and
//! the current (0.1.0) ones the rest of the host works with.
//!
//! `0.0.9` is a test-only package (`tests/wit/agentload-plugin@0.0.9`) that
//! stands for "the previous release": it is 0.1.0 without `turn-request`'s
//! `delay-ms`. A 0.0.9 turn is sent at once (`delay-ms = 0`); everything
//! else maps field for field. Only workloads are supported at 0.0.9;
//! scorers must target 0.1.0.
//!
//! The conversions are written out field by field on purpose: a field added
//! to either version breaks the build here instead of being dropped silently.

use super::bindings::types as current;
use super::sandbox::StoreState;

/// Bindings for the 0.0.9 `workload-plugin` world.
pub mod workload {
    wasmtime::component::bindgen!({
        path: "../../tests/wit/agentload-plugin@0.0.9",
        world: "workload-plugin",
        exports: { default: async },
    });
}

pub use workload::agentload::plugin::types as old;
pub use workload::exports::agentload::plugin::workload::SessionPlan;
pub use workload::{WorkloadPlugin, WorkloadPluginPre};

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

// ---- 0.0.9 -> 0.1.0 (what an old plugin returns) ----

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

/// `turn-request`, up: 0.0.9 has no `delay-ms`, so the turn is sent at once.
pub fn turn_request_up(request: old::TurnRequest) -> current::TurnRequest {
    current::TurnRequest {
        session_id: request.session_id,
        turn: request.turn,
        item_id: request.item_id,
        messages: request.messages.into_iter().map(chat_message_up).collect(),
        tools_json: request.tools_json,
        sampling: sampling_up(request.sampling),
        delay_ms: 0,
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

// ---- 0.1.0 -> 0.0.9 (what the host passes an old plugin) ----

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
        current::TurnOutcome::Completed(c) => old::TurnOutcome::Completed(old::Completion {
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
        }),
        current::TurnOutcome::Failed(cause) => old::TurnOutcome::Failed(cause.clone()),
        current::TurnOutcome::Aborted => old::TurnOutcome::Aborted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_turn_request_is_sent_at_once() {
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
            expected_json: "{\"x\":1}".into(),
        };
        let up = turn_request_up(old);
        assert_eq!(up.delay_ms, 0);
        assert_eq!((up.session_id.as_str(), up.turn), ("s", 3));
        assert_eq!(up.item_id, "s/3");
        assert_eq!(up.messages[0].role, current::Role::Assistant);
        assert_eq!(up.messages[0].reasoning_content.as_deref(), Some("r"));
        assert_eq!(up.messages[0].tool_calls[0].name, "f");
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
}
