//! What every older WIT version's bindings module has in common: the
//! records that did not change shape since 0.1.0, converted field by field
//! (a field added on either side breaks the build here instead of being
//! dropped), and its `host` import forwarded to the current one. Each
//! `bindings_v<version>.rs` invokes [`same_records!`] where its generated
//! `old` (types), `old_scorer` and `SessionPlan` are in scope, beside
//! `current` (the current types) and the current scorer records, and
//! writes out what differs.

/// The conversions and `host` import every older version shares.
macro_rules! same_records {
    () => {
        impl Host for StoreState {
            fn log(&mut self, level: LogLevel, message: String) {
                let level = match level {
                    LogLevel::Trace => $crate::bindings::LogLevel::Trace,
                    LogLevel::Debug => $crate::bindings::LogLevel::Debug,
                    LogLevel::Info => $crate::bindings::LogLevel::Info,
                    LogLevel::Warn => $crate::bindings::LogLevel::Warn,
                    LogLevel::Error => $crate::bindings::LogLevel::Error,
                };
                $crate::bindings::log(self, level, &message);
            }
        }

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

        /// `session-plan`, up (no closed-loop workspace before 0.4.0).
        pub fn session_plan_up(plan: SessionPlan) -> $crate::bindings::SessionPlan {
            $crate::bindings::SessionPlan {
                id: plan.id,
                expected_turns: plan.expected_turns,
                workspace: None,
            }
        }

        /// `configure`'s sessions, up: a plan without facts (none before 0.4.0).
        pub fn workload_plan_up(plans: Vec<SessionPlan>) -> $crate::bindings::WorkloadPlan {
            $crate::bindings::WorkloadPlan {
                sessions: plans.into_iter().map(session_plan_up).collect(),
                facts_json: "{}".into(),
            }
        }

        /// `plugin-error`, up.
        pub fn plugin_error_up(error: old::PluginError) -> current::PluginError {
            match error {
                old::PluginError::InvalidConfig(m) => current::PluginError::InvalidConfig(m),
                old::PluginError::InvalidData(e) => {
                    current::PluginError::InvalidData(current::DataError {
                        file: e.file,
                        line: e.line,
                        message: e.message,
                    })
                }
                old::PluginError::InvalidInput(m) => current::PluginError::InvalidInput(m),
                old::PluginError::Internal(m) => current::PluginError::Internal(m),
            }
        }

        /// A message, up: typed (every message was, before 0.4.0).
        fn message_up(message: old::ChatMessage) -> current::Message {
            current::Message::Chat(chat_message_up(message))
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
                // Fields of 0.4.0: never sent by an older plugin.
                max_tokens: None,
                min_p: None,
                ignore_eos: None,
                reasoning_effort: None,
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

        /// `plugin-config`, down (an older plugin sees no nonce).
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
                current::TurnOutcome::Completed(c) => {
                    old::TurnOutcome::Completed(completion_down(c))
                }
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
    };
}

pub(crate) use same_records;
