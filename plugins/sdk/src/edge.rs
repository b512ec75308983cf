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
        nonce,
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

/// A typed message is a `chat` message, a verbatim one a `json` message.
impl From<Message> for wit::Message {
    fn from(from: Message) -> Self {
        let Message {
            role,
            content,
            reasoning_content,
            tool_calls,
            tool_call_id,
            name,
            verbatim,
        } = from;
        match verbatim {
            Some(json) => Self::Json(json),
            None => Self::Chat(wit::ChatMessage {
                role: role.into(),
                content,
                reasoning_content,
                tool_calls: tool_calls.into_iter().map(Into::into).collect(),
                tool_call_id,
                name,
            }),
        }
    }
}

/// A `json` message reads back as [`Message::verbatim`] reads it (one that
/// is not a message keeps its text, as a user message with no fields).
impl From<wit::Message> for Message {
    fn from(from: wit::Message) -> Self {
        match from {
            wit::Message::Chat(m) => {
                let wit::ChatMessage {
                    role,
                    content,
                    reasoning_content,
                    tool_calls,
                    tool_call_id,
                    name,
                } = m;
                Self {
                    role: role.into(),
                    content,
                    reasoning_content,
                    tool_calls: tool_calls.into_iter().map(Into::into).collect(),
                    tool_call_id,
                    name,
                    verbatim: None,
                }
            }
            wit::Message::Json(json) => Message::verbatim(json.clone()).unwrap_or(Self {
                verbatim: Some(json),
                ..Message::new(Role::User, "")
            }),
        }
    }
}

both_ways!(
    Sampling = wit::Sampling {
        temperature,
        top_p,
        top_k,
        seed,
        max_completion_tokens,
        tool_choice_json,
        max_tokens,
        min_p,
        ignore_eos,
        reasoning_effort,
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
        pub use crate::{Config as PluginConfig, Outcome as TurnOutcome};
    }

    /// A typed message in either world (`chat!(t, role, content, reasoning, calls,
    /// tool_call_id, name)`).
    macro_rules! chat {
        (sdk, $($f:ident: $v:expr),* $(,)?) => {
            crate::Message { $($f: $v,)* verbatim: None }
        };
        (wit, $($f:ident: $v:expr),* $(,)?) => {
            wit::Message::Chat(wit::ChatMessage { $($f: $v),* })
        };
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
                    chat!($t,
                        role: $t::Role::System,
                        content: Some("be brief".into()),
                        reasoning_content: None,
                        tool_calls: vec![],
                        tool_call_id: None,
                        name: None,
                    ),
                    chat!($t,
                        role: $t::Role::User,
                        content: Some("list files".into()),
                        reasoning_content: None,
                        tool_calls: vec![],
                        tool_call_id: None,
                        name: Some("alice".into()),
                    ),
                    chat!($t,
                        role: $t::Role::Assistant,
                        content: Some("on it".into()),
                        reasoning_content: Some("ls first".into()),
                        tool_calls: vec![
                            call!($t, "functions.bash:0", "bash", r#"{"command": "ls"}"#),
                            call!($t, "", "pwd", ""),
                        ],
                        tool_call_id: Some("unusual".into()),
                        name: Some("bot".into()),
                    ),
                    chat!($t,
                        role: $t::Role::Tool,
                        content: Some("a.py".into()),
                        reasoning_content: None,
                        tool_calls: vec![],
                        tool_call_id: Some("functions.bash:0".into()),
                        name: None,
                    ),
                ],
                tools_json: Some(r#"[{"type": "function"}]"#.into()),
                sampling: $t::Sampling {
                    temperature: Some(0.25),
                    top_p: Some(0.5),
                    top_k: Some(40),
                    seed: Some(-7),
                    max_completion_tokens: Some(1024),
                    tool_choice_json: Some(r#""auto""#.into()),
                    max_tokens: Some(733),
                    min_p: Some(0.0),
                    ignore_eos: Some(true),
                    reasoning_effort: Some("low".into()),
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
                messages: vec![chat!($t,
                    role: $t::Role::Assistant,
                    content: None,
                    reasoning_content: None,
                    tool_calls: vec![],
                    tool_call_id: None,
                    name: None,
                    )],
                tools_json: None,
                sampling: $t::Sampling {
                    temperature: None,
                    top_p: None,
                    top_k: None,
                    seed: None,
                    max_completion_tokens: None,
                    tool_choice_json: None,
                    max_tokens: None,
                    min_p: None,
                    ignore_eos: None,
                    reasoning_effort: None,
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
                nonce: "1 2 3".into(),
            }
        };
        ($t:ident, empty) => {
            $t::PluginConfig {
                settings_json: String::new(),
                files: vec![],
                nonce: String::new(),
            }
        };
    }

    #[test]
    fn requests_convert_field_for_field() {
        both_ways(full_request!(sdk), full_request!(wit));
        both_ways(empty_request!(sdk), empty_request!(wit));
    }

    /// A verbatim message crosses as its text, and reads back with its typed fields.
    #[test]
    fn verbatim_messages_cross_as_their_text() {
        let json = r#"{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"a"}],"x":1.50}"#;
        let sdk = crate::Message::verbatim(json).unwrap();
        assert_eq!(sdk.role, crate::Role::Tool);
        assert_eq!(sdk.content.as_deref(), Some("a"));
        assert_eq!(sdk.tool_call_id.as_deref(), Some("c1"));
        both_ways(sdk, wit::Message::Json(json.into()));
        for bad in ["[]", r#"{"role":"developer"}"#, "{", r#"{"content":"x"}"#] {
            assert!(crate::Message::verbatim(bad).is_err(), "{bad}");
        }
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
