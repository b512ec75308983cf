//! Test fixture: a workload plugin that misbehaves in the way its settings ask,
//! so the host's sandbox and limits can be tested against a real component.
//!
//! Settings: `{"behaviour": "ok" | "spin" | "alloc" | "open-file" | "connect" | "env" | "panic" |
//! "error" | "log-flood" | "huge-request" | "over-keep" | "header-injection", "when": "configure" |
//! "start"}`. The misbehaviour happens
//! in the named call (default `start`); `ok` replays one session of two echo turns. `log-flood`
//! writes 200,000 log lines of 1 KiB and then carries on; `huge-request` returns a turn request
//! of 20 MiB; `over-keep` returns a first turn that keeps a message of a previous request it
//! never had; `header-injection` plans a session whose id carries a line break and a header.

wit_bindgen::generate!({
    path: "../../../wit/agentload-plugin@0.2.0",
    world: "workload-plugin",
});

use agentload::plugin::host::{log, LogLevel};
use agentload::plugin::types::{
    ChatMessage, PluginConfig, PluginError, PluginInfo, PluginKind, Role, Sampling, TurnOutcome,
    TurnRequest,
};
use exports::agentload::plugin::workload::{Guest, SessionPlan};
use std::cell::RefCell;

thread_local! {
    static SETTINGS: RefCell<(String, String)> = RefCell::new(("ok".into(), "start".into()));
}

struct Misbehave;

fn misbehave(behaviour: &str) -> Result<(), PluginError> {
    match behaviour {
        "ok" => Ok(()),
        "spin" => {
            let mut x: u64 = 0;
            loop {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        "alloc" => {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![1u8; 16 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        "open-file" => match std::fs::read("/etc/passwd") {
            Ok(bytes) => Err(PluginError::Internal(format!(
                "sandbox escape: read {} bytes of /etc/passwd",
                bytes.len()
            ))),
            Err(e) => Err(PluginError::Internal(format!("open-file denied: {e}"))),
        },
        "connect" => match std::net::TcpStream::connect("127.0.0.1:9") {
            Ok(_) => Err(PluginError::Internal("sandbox escape: connected".into())),
            Err(e) => Err(PluginError::Internal(format!("connect denied: {e}"))),
        },
        "env" => Err(PluginError::Internal(format!(
            "env vars visible: {}",
            std::env::vars().count()
        ))),
        "panic" => panic!("misbehave plugin panicked on purpose"),
        "error" => Err(PluginError::InvalidInput(
            "misbehave error on purpose".into(),
        )),
        "log-flood" => {
            let line = "x".repeat(1024);
            for i in 0..200_000 {
                log(LogLevel::Info, &format!("flood {i} {line}"));
            }
            Ok(())
        }
        // The request itself is built in `start_session`.
        "huge-request" | "over-keep" | "header-injection" => Ok(()),
        other => Err(PluginError::InvalidConfig(format!(
            "unknown behaviour {other}"
        ))),
    }
}

fn turn(session_id: &str, turn: u32) -> TurnRequest {
    TurnRequest {
        session_id: session_id.to_string(),
        turn,
        item_id: format!("{session_id}/{turn}"),
        keep: 0,
        messages: vec![ChatMessage {
            role: Role::User,
            content: Some(format!("hello {turn}")),
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }],
        tools_json: None,
        sampling: Sampling {
            temperature: Some(0.0),
            top_p: None,
            top_k: None,
            seed: Some(42),
            max_completion_tokens: Some(16),
            tool_choice_json: None,
        },
        delay_ms: 0,
        expected_json: "{}".into(),
    }
}

impl Guest for Misbehave {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "misbehave".into(),
            version: "0.1.0".into(),
            kind: PluginKind::Workload,
            description: "test fixture that misbehaves on request".into(),
        }
    }

    fn configure(config: PluginConfig) -> Result<Vec<SessionPlan>, PluginError> {
        let settings: serde_json::Value = serde_json::from_str(&config.settings_json)
            .map_err(|e| PluginError::InvalidConfig(e.to_string()))?;
        let get = |k: &str, d: &str| {
            settings
                .get(k)
                .and_then(|v| v.as_str())
                .unwrap_or(d)
                .to_string()
        };
        let (behaviour, when) = (get("behaviour", "ok"), get("when", "start"));
        log(
            LogLevel::Info,
            &format!("behaviour={behaviour} when={when}"),
        );
        if when == "configure" {
            misbehave(&behaviour)?;
        }
        let first = if behaviour == "header-injection" {
            "s1\r\nX-Injected: 1"
        } else {
            "s1"
        };
        SETTINGS.with(|s| *s.borrow_mut() = (behaviour, when));
        Ok([first, "s2"]
            .iter()
            .map(|id| SessionPlan {
                id: id.to_string(),
                expected_turns: 2,
            })
            .collect())
    }

    fn start_session(session_id: String) -> Result<TurnRequest, PluginError> {
        let (behaviour, when) = SETTINGS.with(|s| s.borrow().clone());
        // Misbehave in the first session only, so tests can see the run go on.
        if when == "start" && session_id == "s1" {
            misbehave(&behaviour)?;
            if behaviour == "huge-request" {
                let mut request = turn(&session_id, 1);
                request.expected_json = "y".repeat(20 << 20);
                return Ok(request);
            }
            if behaviour == "over-keep" {
                let mut request = turn(&session_id, 1);
                request.keep = 1;
                return Ok(request);
            }
        }
        Ok(turn(&session_id, 1))
    }

    fn next_turn(
        session_id: String,
        _outcome: TurnOutcome,
    ) -> Result<Option<TurnRequest>, PluginError> {
        let next = TURNS_SENT.with(|t| {
            let mut t = t.borrow_mut();
            let n = t.entry(session_id.clone()).or_insert(1);
            *n += 1;
            *n
        });
        Ok((next <= 2).then(|| turn(&session_id, next)))
    }
}

thread_local! {
    /// Turns handed out so far, per session.
    static TURNS_SENT: RefCell<std::collections::HashMap<String, u32>> =
        RefCell::new(Default::default());
}

#[cfg(target_arch = "wasm32")]
export!(Misbehave);
