//! Test fixture: a workload plugin built against `agentload:plugin@0.3.0`,
//! frozen (typed messages only, no nonce, no facts, no pause after a turn;
//! its `next-turn` returns a step with an optional review). The host must
//! still load and run it (wit/README.md: the host keeps bindings for every
//! supported version and dispatches on the version a component declares).
//!
//! Settings: `{"sessions": N, "turns": M}` (default 2 and 2), no data files.
//! Each turn after the first keeps the previous request and adds the
//! model's previous answer as an assistant message, so a run shows the host's outcome reaching the plugin;
//! a completed outcome without content is refused as invalid input. Turn
//! `n` asks to wait `n - 1` ms first (`delay-ms`).

wit_bindgen::generate!({
    path: "../../../wit/agentload-plugin@0.3.0",
    world: "workload-plugin",
});

use agentload::plugin::host::{log, LogLevel};
use agentload::plugin::types::{
    ChatMessage, PluginConfig, PluginError, PluginInfo, PluginKind, Role, Sampling, TurnOutcome,
    TurnRequest,
};
use exports::agentload::plugin::workload::{Guest, SessionPlan, TurnStep};
use std::cell::RefCell;
use std::collections::HashMap;

struct V030Workload;

/// The conversation of one session so far.
struct Session {
    turn: u32,
    messages: Vec<ChatMessage>,
    /// Messages of the last request the host holds (the next one keeps them).
    sent: u32,
}

thread_local! {
    static TURNS: RefCell<u32> = const { RefCell::new(2) };
    static SESSIONS: RefCell<HashMap<String, Session>> = RefCell::new(HashMap::new());
}

fn user(text: String) -> ChatMessage {
    ChatMessage {
        role: Role::User,
        content: Some(text),
        reasoning_content: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        name: None,
    }
}

fn request(session_id: &str, session: &Session) -> TurnRequest {
    TurnRequest {
        session_id: session_id.to_string(),
        turn: session.turn,
        item_id: format!("{session_id}/{}", session.turn),
        keep: session.sent,
        messages: session.messages[session.sent as usize..].to_vec(),
        tools_json: None,
        sampling: Sampling {
            temperature: Some(0.0),
            top_p: None,
            top_k: None,
            seed: Some(9),
            max_completion_tokens: Some(16),
            tool_choice_json: None,
        },
        delay_ms: u64::from(session.turn - 1),
        expected_json: format!("{{\"turn\":{}}}", session.turn),
    }
}

fn setting(settings: &serde_json::Value, key: &str) -> Result<u32, PluginError> {
    match settings.get(key) {
        None => Ok(2),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                PluginError::InvalidConfig(format!("`{key}` must be a positive integer"))
            }),
    }
}

impl Guest for V030Workload {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "v030-workload".into(),
            version: "0.3.0".into(),
            kind: PluginKind::Workload,
            description: "test fixture built against agentload:plugin@0.3.0".into(),
        }
    }

    fn configure(config: PluginConfig) -> Result<Vec<SessionPlan>, PluginError> {
        let settings: serde_json::Value = serde_json::from_str(&config.settings_json)
            .map_err(|e| PluginError::InvalidConfig(e.to_string()))?;
        if let Some(file) = config.files.first() {
            return Err(PluginError::InvalidConfig(format!(
                "takes no data files (got `{}`)",
                file.name
            )));
        }
        let (sessions, turns) = (
            setting(&settings, "sessions")?,
            setting(&settings, "turns")?,
        );
        log(
            LogLevel::Info,
            &format!("{sessions} sessions of {turns} turns (WIT 0.3.0)"),
        );
        TURNS.with(|t| *t.borrow_mut() = turns);
        SESSIONS.with(|s| s.borrow_mut().clear());
        Ok((1..=sessions)
            .map(|i| SessionPlan {
                id: format!("v030-{i}"),
                expected_turns: turns,
            })
            .collect())
    }

    fn start_session(session_id: String) -> Result<TurnRequest, PluginError> {
        let session = Session {
            turn: 1,
            messages: vec![user(format!("{session_id} says hello 1"))],
            sent: 0,
        };
        let first = request(&session_id, &session);
        let session = Session { sent: 1, ..session };
        SESSIONS.with(|s| s.borrow_mut().insert(session_id, session));
        Ok(first)
    }

    fn next_turn(session_id: String, outcome: TurnOutcome) -> Result<TurnStep, PluginError> {
        let step = |next| TurnStep { review: None, next };
        let turns = TURNS.with(|t| *t.borrow());
        SESSIONS.with(|s| {
            let mut sessions = s.borrow_mut();
            let session = sessions.get_mut(&session_id).ok_or_else(|| {
                PluginError::InvalidInput(format!("unknown session {session_id}"))
            })?;
            let answer = match outcome {
                TurnOutcome::Completed(c) if c.content.is_empty() => {
                    return Err(PluginError::InvalidInput(format!(
                        "turn {} of {session_id} completed without content",
                        session.turn
                    )))
                }
                TurnOutcome::Completed(c) => c.content,
                TurnOutcome::Failed(_) | TurnOutcome::Aborted => return Ok(step(None)),
            };
            if session.turn >= turns {
                return Ok(step(None));
            }
            session.messages.push(ChatMessage {
                role: Role::Assistant,
                content: Some(answer),
                reasoning_content: None,
                tool_calls: Vec::new(),
                tool_call_id: None,
                name: None,
            });
            session.turn += 1;
            let text = format!("{session_id} says hello {}", session.turn);
            session.messages.push(user(text));
            let next = request(&session_id, session);
            session.sent = session.messages.len() as u32;
            Ok(step(Some(next)))
        })
    }
}

#[cfg(target_arch = "wasm32")]
export!(V030Workload);
