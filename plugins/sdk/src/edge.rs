//! The edge between the SDK's types and the WIT bindings: lossless
//! conversions both ways, used by the export glue. Values are moved, not
//! copied.
//!
//! Each conversion takes its source apart field by field, so a field the
//! WIT contract gains (or the SDK type loses) is a compile error here, not
//! a value silently dropped.

use crate::wit::agentload::plugin::types as wit;
use crate::{
    Completion, Config, GrantedFile, Message, Outcome, Role, Sampling, ToolCall, TurnRequest, Usage,
};

/// `From` both ways between an SDK type and its WIT twin, field by field.
/// A field is moved as is, or converted: `into` (one value), `option` (the
/// value in an `Option`), `list` (each element of a `Vec`).
macro_rules! both_ways {
    ($sdk:ident = wit::$wit:ident { $($field:ident $(: $how:ident)?),* $(,)? }) => {
        impl From<wit::$wit> for $sdk {
            fn from(from: wit::$wit) -> Self {
                let wit::$wit { $($field),* } = from;
                Self { $($field: both_ways!(@$($how)? $field)),* }
            }
        }

        impl From<$sdk> for wit::$wit {
            fn from(from: $sdk) -> Self {
                let $sdk { $($field),* } = from;
                Self { $($field: both_ways!(@$($how)? $field)),* }
            }
        }
    };
    (enum $sdk:ident = wit::$wit:ident { $($variant:ident),* $(,)? }) => {
        impl From<wit::$wit> for $sdk {
            fn from(from: wit::$wit) -> Self {
                match from {
                    $(wit::$wit::$variant => Self::$variant),*
                }
            }
        }

        impl From<$sdk> for wit::$wit {
            fn from(from: $sdk) -> Self {
                match from {
                    $($sdk::$variant => Self::$variant),*
                }
            }
        }
    };
    (@ $field:ident) => { $field };
    (@into $field:ident) => { $field.into() };
    (@option $field:ident) => { $field.map(Into::into) };
    (@list $field:ident) => { $field.into_iter().map(Into::into).collect() };
}

both_ways!(
    Config = wit::PluginConfig {
        settings_json,
        files: list,
    }
);
both_ways!(
    GrantedFile = wit::GrantedFile {
        name,
        file_name,
        bytes,
    }
);
both_ways!(
    ToolCall = wit::ToolCall {
        id,
        name,
        arguments,
    }
);
both_ways!(enum Role = wit::Role { System, User, Assistant, Tool });
both_ways!(
    Message = wit::ChatMessage {
        role: into,
        content,
        reasoning_content,
        tool_calls: list,
        tool_call_id,
        name,
    }
);
both_ways!(
    Sampling = wit::Sampling {
        temperature,
        top_p,
        top_k,
        seed,
        max_completion_tokens,
        tool_choice_json,
    }
);
both_ways!(
    TurnRequest = wit::TurnRequest {
        session_id,
        turn,
        item_id,
        keep,
        messages: list,
        tools_json,
        sampling: into,
        delay_ms,
        expected_json,
    }
);
both_ways!(
    Usage = wit::Usage {
        prompt_tokens,
        completion_tokens,
        cached_tokens,
    }
);
both_ways!(
    Completion = wit::Completion {
        content,
        reasoning_content,
        tool_calls: list,
        finish_reason,
        usage: option,
    }
);

impl From<wit::TurnOutcome> for Outcome {
    fn from(from: wit::TurnOutcome) -> Self {
        match from {
            wit::TurnOutcome::Completed(c) => Self::Completed(c.into()),
            wit::TurnOutcome::Failed(cause) => Self::Failed(cause),
            wit::TurnOutcome::Aborted => Self::Aborted,
        }
    }
}

impl From<Outcome> for wit::TurnOutcome {
    fn from(from: Outcome) -> Self {
        match from {
            Outcome::Completed(c) => Self::Completed(c.into()),
            Outcome::Failed(cause) => Self::Failed(cause),
            Outcome::Aborted => Self::Aborted,
        }
    }
}

#[cfg(test)]
mod tests {
    //! Every fixture is written once and built in both type worlds (the
    //! SDK's, and the bindings'): each conversion must turn the one into the
    //! other exactly, so a field dropped, defaulted or swapped on either way
    //! fails. The "full" fixtures set every field (every option `Some`,
    //! every list non-empty, every role and outcome case: a field left at
    //! its empty value on the way would show); the "empty" ones leave them
    //! all unset.

    use crate::wit::agentload::plugin::types as wit;
    use std::fmt::Debug;

    /// The SDK's types under their WIT names, for the fixtures.
    mod sdk {
        pub use crate::{Completion, GrantedFile, Role, Sampling, ToolCall, TurnRequest, Usage};
        pub use crate::{Config as PluginConfig, Message as ChatMessage, Outcome as TurnOutcome};
    }

    /// `sdk` converts to `wit` and `wit` to `sdk`: so each round-trips.
    fn both_ways<S, W>(sdk: S, wit: W)
    where
        S: From<W> + Clone + PartialEq + Debug,
        W: From<S> + Clone + PartialEq + Debug,
    {
        assert_eq!(W::from(sdk.clone()), wit, "SDK -> WIT");
        assert_eq!(S::from(wit.clone()), sdk, "WIT -> SDK");
        assert_eq!(S::from(W::from(sdk.clone())), sdk, "SDK -> WIT -> SDK");
        assert_eq!(W::from(S::from(wit.clone())), wit, "WIT -> SDK -> WIT");
    }

    macro_rules! call {
        ($t:ident, $id:literal, $name:literal, $arguments:literal) => {
            $t::ToolCall {
                id: $id.into(),
                name: $name.into(),
                arguments: $arguments.into(),
            }
        };
    }

    macro_rules! full_request {
        ($t:ident) => {
            $t::TurnRequest {
                session_id: "s-1".into(),
                turn: 7,
                item_id: "s-1/8".into(),
                keep: 3,
                messages: vec![
                    $t::ChatMessage {
                        role: $t::Role::System,
                        content: Some("be brief".into()),
                        reasoning_content: None,
                        tool_calls: vec![],
                        tool_call_id: None,
                        name: None,
                    },
                    $t::ChatMessage {
                        role: $t::Role::User,
                        content: Some("list files".into()),
                        reasoning_content: None,
                        tool_calls: vec![],
                        tool_call_id: None,
                        name: Some("alice".into()),
                    },
                    $t::ChatMessage {
                        role: $t::Role::Assistant,
                        content: Some("on it".into()),
                        reasoning_content: Some("ls first".into()),
                        tool_calls: vec![
                            call!($t, "functions.bash:0", "bash", r#"{"command": "ls"}"#),
                            call!($t, "", "pwd", ""),
                        ],
                        tool_call_id: Some("unusual".into()),
                        name: Some("bot".into()),
                    },
                    $t::ChatMessage {
                        role: $t::Role::Tool,
                        content: Some("a.py".into()),
                        reasoning_content: None,
                        tool_calls: vec![],
                        tool_call_id: Some("functions.bash:0".into()),
                        name: None,
                    },
                ],
                tools_json: Some(r#"[{"type": "function"}]"#.into()),
                sampling: $t::Sampling {
                    temperature: Some(0.25),
                    top_p: Some(0.5),
                    top_k: Some(40),
                    seed: Some(-7),
                    max_completion_tokens: Some(1024),
                    tool_choice_json: Some(r#""auto""#.into()),
                },
                delay_ms: 1500,
                expected_json: r#"{"n": 5.0}"#.into(),
            }
        };
    }

    macro_rules! empty_request {
        ($t:ident) => {
            $t::TurnRequest {
                session_id: String::new(),
                turn: 0,
                item_id: String::new(),
                keep: 0,
                messages: vec![$t::ChatMessage {
                    role: $t::Role::Assistant,
                    content: None,
                    reasoning_content: None,
                    tool_calls: vec![],
                    tool_call_id: None,
                    name: None,
                }],
                tools_json: None,
                sampling: $t::Sampling {
                    temperature: None,
                    top_p: None,
                    top_k: None,
                    seed: None,
                    max_completion_tokens: None,
                    tool_choice_json: None,
                },
                delay_ms: 0,
                expected_json: String::new(),
            }
        };
    }

    macro_rules! completion {
        ($t:ident, full) => {
            $t::Completion {
                content: "done".into(),
                reasoning_content: "thought".into(),
                tool_calls: vec![call!($t, "c1", "bash", r#"{"command":"ls"}"#)],
                finish_reason: Some("tool_calls".into()),
                usage: Some($t::Usage {
                    prompt_tokens: 120,
                    completion_tokens: 30,
                    cached_tokens: Some(64),
                }),
            }
        };
        ($t:ident, empty) => {
            $t::Completion {
                content: String::new(),
                reasoning_content: String::new(),
                tool_calls: vec![],
                finish_reason: None,
                usage: None,
            }
        };
        ($t:ident, uncached) => {
            $t::Completion {
                usage: Some($t::Usage {
                    prompt_tokens: 1,
                    completion_tokens: 2,
                    cached_tokens: None,
                }),
                ..completion!($t, empty)
            }
        };
    }

    macro_rules! config {
        ($t:ident, full) => {
            $t::PluginConfig {
                settings_json: r#"{"limit": 3}"#.into(),
                files: vec![
                    $t::GrantedFile {
                        name: "prompts".into(),
                        file_name: "p.jsonl".into(),
                        bytes: vec![0, 1, 0xfe, 0xff],
                    },
                    $t::GrantedFile {
                        name: "empty".into(),
                        file_name: "e.jsonl".into(),
                        bytes: vec![],
                    },
                ],
            }
        };
        ($t:ident, empty) => {
            $t::PluginConfig {
                settings_json: String::new(),
                files: vec![],
            }
        };
    }

    #[test]
    fn requests_convert_field_for_field() {
        both_ways(full_request!(sdk), full_request!(wit));
        both_ways(empty_request!(sdk), empty_request!(wit));
    }

    #[test]
    fn outcomes_convert_field_for_field() {
        both_ways(
            sdk::TurnOutcome::Completed(completion!(sdk, full)),
            wit::TurnOutcome::Completed(completion!(wit, full)),
        );
        both_ways(
            sdk::TurnOutcome::Completed(completion!(sdk, empty)),
            wit::TurnOutcome::Completed(completion!(wit, empty)),
        );
        both_ways(
            sdk::TurnOutcome::Completed(completion!(sdk, uncached)),
            wit::TurnOutcome::Completed(completion!(wit, uncached)),
        );
        both_ways(
            sdk::TurnOutcome::Failed("HTTP 500".into()),
            wit::TurnOutcome::Failed("HTTP 500".into()),
        );
        both_ways(
            sdk::TurnOutcome::Failed(String::new()),
            wit::TurnOutcome::Failed(String::new()),
        );
        both_ways(sdk::TurnOutcome::Aborted, wit::TurnOutcome::Aborted);
    }

    #[test]
    fn configs_convert_field_for_field() {
        both_ways(config!(sdk, full), config!(wit, full));
        both_ways(config!(sdk, empty), config!(wit, empty));
    }

    /// Lists are moved, not copied: the granted bytes keep their buffer.
    #[test]
    fn bytes_are_moved() {
        let config = config!(wit, full);
        let buffer = config.files[0].bytes.as_ptr();
        let config = sdk::PluginConfig::from(config);
        assert_eq!(config.files[0].bytes.as_ptr(), buffer);
        let config = wit::PluginConfig::from(config);
        assert_eq!(config.files[0].bytes.as_ptr(), buffer);
    }
}
