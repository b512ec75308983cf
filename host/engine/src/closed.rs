//! Closed-loop replay (`history = "closed"`): the workload makes a
//! session's first request (the recording's system prompt and task); from
//! then on the host owns the conversation. Each reply's assistant message
//! is appended as the model wrote it, each of its tool calls runs in the
//! session's sandbox (the [`ToolPool`], off the request path, on the
//! session's copy-on-write copy of the workspace), and the results are
//! appended as the tool messages the recording's harness wrote
//! ([`crate::tool_messages`]): that is the next request.
//!
//! A session ends when a reply calls no tool (`no_tool_call`), when it has
//! sent `max_turns` requests (`turn_cap`: the last reply's calls are not
//! run), when its next request would not fit the context window (checked
//! before sending: `context_window`), or when a turn fails.
//!
//! The workload itself runs in recorded mode beside the session: stepped on
//! the same outcomes, it makes the recording's request at each place, so
//! every closed turn is compared with the recorded one (its size, and
//! whether the model's calls are the recorded calls).
//!
//! The schedule never reads the sandbox's wall time: the next request is
//! due at the later of the answer's end plus the recording's delay (when
//! the workload injects tool delays) and the moment its tool results exist.

use super::body::{BodyOptions, SessionBodies};
use super::session::TurnHooks;
use super::tool_messages::{render, Harness};
use super::tools::ToolPool;
use agentload_client::RequestBody;
use agentload_plugin_host::tools::ToolCall;
use agentload_plugin_host::types::{ChatMessage, Role, TurnOutcome};
use agentload_plugin_host::{Message, TurnRequest, WorkloadPlugin};
use agentload_results::record::context_overflow_error;
use agentload_results::tools::{ClosedEnd, ClosedTurn};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Once};
use std::time::Instant;
use tokio::sync::Mutex;

/// What every closed-loop session of a phase shares.
pub struct ClosedLoop {
    pub pool: Arc<ToolPool>,
    /// Each task's workspace, by task (a session's task is its id up to
    /// its first `#`).
    pub workspaces: HashMap<String, Workspace>,
    /// The workspace of a session whose task has none of its own.
    pub default: Workspace,
    /// The most requests one session sends.
    pub max_turns: u32,
    /// How tool results are written.
    pub messages: Harness,
}

/// A workspace sessions open.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// Its name in the pool.
    pub name: String,
    /// Where it came from, as `closed_loop.json` names it: the config key
    /// (`tools.workspace`, `tools.workspaces.<task>`) or `empty`.
    pub grant: String,
}

impl ClosedLoop {
    /// The workspace session `id` works in.
    pub fn workspace_of(&self, id: &str) -> &Workspace {
        let task = id.split_once('#').map_or(id, |(task, _)| task);
        self.workspaces.get(task).unwrap_or(&self.default)
    }
}

/// One closed-loop session's state.
pub struct ClosedSession<'a> {
    closed: &'a ClosedLoop,
    id: String,
    /// Requests sent (or refused before sending) so far.
    sent: u32,
    /// The recording's request at the session's current place; none past
    /// its end.
    recorded: Option<TurnRequest>,
}

/// A closed-loop request as its turn records it: the body's size and
/// sha256 (hex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentRequest {
    pub bytes: u64,
    pub sha256: String,
}

impl SentRequest {
    /// The size and digest of `body` (none: a body that could not be
    /// made, recorded as 0 bytes without a digest).
    pub fn of(body: Option<&RequestBody>) -> Option<Self> {
        let body = body?;
        let mut digest = Sha256::new();
        for part in body.parts() {
            digest.update(part);
        }
        Some(Self {
            bytes: body.len() as u64,
            sha256: hex::encode(digest.finalize()),
        })
    }

    /// Why the request a resume made again (`self`) is not the one the
    /// turn `recorded` sent, if it is not: compared by digest, or by size
    /// alone in a record written before digests were kept (said once).
    pub fn differs_from(&self, recorded: &ClosedTurn) -> Option<String> {
        let Some(sha256) = &recorded.request_sha256 else {
            static SAID: Once = Once::new();
            SAID.call_once(|| {
                agentload_console::line(
                    "note: resume: closed-loop turns recorded without their request's sha256 \
                     (an older agentload): the requests made again are checked by size only",
                )
            });
            return (self.bytes != recorded.request_bytes).then(|| {
                format!(
                    "the closed-loop request made again is {} bytes, the one sent {} \
                     (compared by size: the record has no digest)",
                    self.bytes, recorded.request_bytes
                )
            });
        };
        (&self.sha256 != sha256).then(|| {
            format!(
                "the closed-loop request made again (sha256 {}, {} bytes) is not the one sent \
                 (sha256 {}, {} bytes)",
                short(&self.sha256),
                self.bytes,
                short(sha256),
                recorded.request_bytes
            )
        })
    }
}

/// A digest's first 12 hex digits, to name it on the console.
fn short(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}

/// What a closed turn leads to.
pub struct Answered {
    /// The turn's record block.
    pub turn: ClosedTurn,
    /// The next request; none when the session ends.
    pub next: Option<TurnRequest>,
    /// When the next request's tool results existed.
    pub tools_done: Option<Instant>,
}

impl<'a> ClosedSession<'a> {
    /// Opens session `id` on the workspace; `first` is the workload's
    /// first request (the recording's).
    pub async fn open(
        closed: &'a ClosedLoop,
        id: &str,
        first: &TurnRequest,
    ) -> Result<ClosedSession<'a>, String> {
        let workspace = closed.workspace_of(id);
        closed
            .pool
            .open(id, &workspace.name, session_seed(id))
            .await?;
        Ok(Self {
            closed,
            id: id.to_owned(),
            sent: 0,
            recorded: Some(first.clone()),
        })
    }

    /// The turn `req` ended with `outcome` (its request `request`;
    /// `unsent` when the context check kept it back): the recording
    /// stepped, the reply's calls run, the next request made.
    #[allow(clippy::too_many_arguments)]
    pub async fn answered(
        &mut self,
        req: &TurnRequest,
        outcome: &TurnOutcome,
        unsent: bool,
        request: Option<SentRequest>,
        workload: &Mutex<WorkloadPlugin>,
        hooks: &dyn TurnHooks,
        body: &BodyOptions,
    ) -> Answered {
        self.sent += 1;
        let recorded = self.recorded.take();
        let recorded_request_bytes = recorded.as_ref().and_then(|r| {
            let mut shaped = r.clone();
            hooks.shape(&mut shaped);
            let body = SessionBodies::default().body(&shaped, body).ok()?;
            Some(body.len() as u64)
        });
        let mut turn = ClosedTurn {
            index: self.sent,
            calls: Vec::new(),
            follows_recording: None,
            request_bytes: request.as_ref().map_or(0, |r| r.bytes),
            request_sha256: request.map(|r| r.sha256),
            recorded_request_bytes,
            sandbox_us: 0,
            end: None,
            workspace: (self.sent == 1).then(|| self.closed.workspace_of(&self.id).grant.clone()),
            overlay_bytes: None,
        };
        let TurnOutcome::Completed(reply) = outcome else {
            // Kept back by the pre-check, or refused by the server as over
            // its context (the turn failed with the server's cause).
            let over = match outcome {
                TurnOutcome::Failed(error) => context_overflow_error(error),
                _ => false,
            };
            let end = match unsent || over {
                true => ClosedEnd::ContextWindow,
                false => ClosedEnd::Failed,
            };
            return self.end(turn, end).await;
        };
        // The recording's next request (the workload in recorded mode goes
        // on whatever the reply said) and the recorded reply in it.
        let next_recorded = match &recorded {
            Some(r) => match workload.lock().await.next_turn(r, outcome).await {
                Ok(step) => step.next,
                Err(e) => {
                    agentload_console::line(&format!(
                        "note: session {}: the recording could not be followed further ({e}); \
                         the rest of the session is not compared with it",
                        self.id
                    ));
                    None
                }
            },
            None => None,
        };
        if let Some(recorded_calls) = recorded
            .as_ref()
            .and_then(|r| recorded_calls(r, next_recorded.as_ref()))
        {
            turn.follows_recording = Some(same_calls(&reply.tool_calls, &recorded_calls));
        }
        if reply.tool_calls.is_empty() {
            return self.end(turn, ClosedEnd::NoToolCall).await;
        }
        if self.sent >= self.closed.max_turns {
            return self.end(turn, ClosedEnd::TurnCap).await;
        }
        let calls: Vec<(String, ToolCall)> = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let id = match c.id.is_empty() {
                    true => format!("call_{}_{i}", self.sent),
                    false => c.id.clone(),
                };
                let call = ToolCall {
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                };
                (id, call)
            })
            .collect();
        let assistant = ChatMessage {
            role: Role::Assistant,
            content: Some(reply.content.clone()).filter(|c| !c.is_empty()),
            reasoning_content: Some(reply.reasoning_content.clone()).filter(|c| !c.is_empty()),
            tool_calls: calls
                .iter()
                .map(|(id, c)| agentload_plugin_host::types::ToolCall {
                    id: id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                })
                .collect(),
            tool_call_id: None,
            name: None,
        };
        let answers = self.closed.pool.call(&self.id, calls).await;
        let tools_done = Instant::now();
        let mut messages = req.messages.clone();
        messages.push(Arc::new(Message::new(&assistant)));
        for a in &answers {
            let text = render(self.closed.messages, &a.output, a.call.exit_code);
            let tool = ChatMessage {
                role: Role::Tool,
                content: Some(text),
                reasoning_content: None,
                tool_calls: Vec::new(),
                tool_call_id: Some(a.call.id.clone()),
                name: None,
            };
            messages.push(Arc::new(Message::new(&tool)));
        }
        turn.sandbox_us = answers.iter().map(|a| a.wall.as_micros() as u64).sum();
        turn.calls = answers.into_iter().map(|a| a.call).collect();
        let turn_no = req.turn + 1;
        let next = TurnRequest {
            session_id: req.session_id.clone(),
            turn: turn_no,
            item_id: format!("{}:{turn_no}", req.session_id),
            messages,
            tools_json: req.tools_json.clone(),
            sampling: req.sampling.clone(),
            delay_ms: next_recorded.as_ref().map_or(0, |n| n.delay_ms),
            expected_json: next_recorded
                .as_ref()
                .map_or_else(|| "{}".to_owned(), |n| n.expected_json.clone()),
        };
        self.recorded = next_recorded;
        Answered {
            turn,
            next: Some(next),
            tools_done: Some(tools_done),
        }
    }
}

impl ClosedSession<'_> {
    /// The session ends after `turn`: what its copy-on-write overlay holds
    /// (its own changes to the workspace) recorded with it.
    async fn end(&self, mut turn: ClosedTurn, end: ClosedEnd) -> Answered {
        turn.end = Some(end);
        turn.overlay_bytes = self
            .closed
            .pool
            .stats(&self.id)
            .await
            .map(|s| s.overlay_bytes);
        Answered {
            turn,
            next: None,
            tools_done: None,
        }
    }
}

impl Drop for ClosedSession<'_> {
    fn drop(&mut self) {
        self.closed.pool.close(&self.id);
    }
}

/// The seed of a session's sandbox randomness: from its id alone, so the
/// same session gets the same `$RANDOM`s in every run.
pub fn session_seed(id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The recorded reply's calls `(name, arguments)` after `req`: the
/// assistant message the recording's next request adds right after `req`'s
/// messages, else (at the recording's last request) the calls its expected
/// data names (`tool_calls`, as the coding replay writes them); none when
/// neither says.
fn recorded_calls(req: &TurnRequest, next: Option<&TurnRequest>) -> Option<Vec<(String, String)>> {
    if let Some(next) = next {
        return match next.messages.get(req.messages.len()) {
            Some(m) if m.role() == Role::Assistant => Some(
                m.to_chat()
                    .tool_calls
                    .into_iter()
                    .map(|c| (c.name, c.arguments))
                    .collect(),
            ),
            _ => None,
        };
    }
    let expected: serde_json::Value = serde_json::from_str(&req.expected_json).ok()?;
    expected["tool_calls"]
        .as_array()?
        .iter()
        .map(|c| {
            let f = &c["function"];
            let arguments = match &f["arguments"] {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            Some((f["name"].as_str()?.to_owned(), arguments))
        })
        .collect()
}

/// Whether the model's calls are the recorded ones: the same functions in
/// the same order, with arguments equal as JSON (or as text when either
/// is not JSON).
fn same_calls(
    live: &[agentload_plugin_host::types::ToolCall],
    recorded: &[(String, String)],
) -> bool {
    let json = |s: &str| serde_json::from_str::<serde_json::Value>(s).ok();
    live.len() == recorded.len()
        && live.iter().zip(recorded).all(|(l, (name, args))| {
            l.name == *name
                && match (json(&l.arguments), json(args)) {
                    (Some(a), Some(b)) => a == b,
                    _ => l.arguments == *args,
                }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentload_plugin_host::types::ToolCall as Call;

    fn call(name: &str, arguments: &str) -> Call {
        Call {
            id: String::new(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn calls_follow_the_recording_by_name_order_and_json_arguments() {
        let recorded = vec![("bash".to_owned(), r#"{"command": "ls"}"#.to_owned())];
        assert!(same_calls(
            &[call("bash", r#"{"command":"ls"}"#)],
            &recorded
        ));
        assert!(!same_calls(
            &[call("bash", r#"{"command":"pwd"}"#)],
            &recorded
        ));
        assert!(!same_calls(
            &[call("edit", r#"{"command":"ls"}"#)],
            &recorded
        ));
        assert!(!same_calls(&[], &recorded));
        assert!(same_calls(&[], &[]));
        // Not JSON: compared as text.
        assert!(!same_calls(&[call("bash", "{ls")], &recorded));
    }

    #[test]
    fn the_last_recorded_reply_is_read_from_the_expected_data() {
        let mut req = TurnRequest::new("s", 3, Vec::new());
        req.expected_json = r#"{"assistant_turn":4,"tool_calls":[{"id":"x","type":"function","function":{"name":"bash","arguments":"{\"command\": \"ls\"}"}}]}"#.into();
        let calls = recorded_calls(&req, None).unwrap();
        assert_eq!(
            calls,
            [("bash".to_owned(), r#"{"command": "ls"}"#.to_owned())]
        );
        req.expected_json = r#"{"assistant_turn":4,"tool_calls":[]}"#.into();
        assert_eq!(recorded_calls(&req, None), Some(Vec::new()));
        req.expected_json = "{}".into();
        assert_eq!(recorded_calls(&req, None), None);
    }

    #[test]
    fn a_request_made_again_is_compared_by_digest_and_by_size_without_one() {
        use bytes::Bytes;
        let of = |parts: &[&'static str]| {
            let body = RequestBody::from_parts(parts.iter().map(|p| Bytes::from(*p)).collect());
            SentRequest::of(Some(&body)).unwrap()
        };
        // The digest of the whole body, however it is cut into slices.
        let sent = of(&[r#"{"messages":"#, r#"[{"content":"Done."}]}"#]);
        assert_eq!(sent, of(&[r#"{"messages":[{"content":"Done."}]}"#]));
        assert_eq!(sent.bytes, 34);
        let recorded = ClosedTurn {
            index: 2,
            calls: Vec::new(),
            follows_recording: None,
            request_bytes: sent.bytes,
            request_sha256: Some(sent.sha256.clone()),
            recorded_request_bytes: None,
            sandbox_us: 0,
            end: None,
            workspace: None,
            overlay_bytes: None,
        };
        assert_eq!(sent.differs_from(&recorded), None);
        // One character flipped: the same size, another request.
        let flipped = of(&[r#"{"messages":[{"content":"Dune."}]}"#]);
        assert_eq!(flipped.bytes, sent.bytes);
        let why = flipped.differs_from(&recorded).unwrap();
        assert!(why.contains(&sent.sha256[..12]), "{why}");
        assert!(why.contains(&flipped.sha256[..12]), "{why}");
        // A record without a digest: only a size that differs is seen.
        let older = ClosedTurn {
            request_sha256: None,
            ..recorded
        };
        assert_eq!(flipped.differs_from(&older), None);
        let longer = of(&[r#"{"messages":[{"content":"Done!!"}]}"#]);
        let why = longer.differs_from(&older).unwrap();
        assert!(why.contains("35 bytes") && why.contains("by size"), "{why}");
    }

    #[test]
    fn a_sessions_seed_is_its_ids() {
        assert_eq!(session_seed("a"), session_seed("a"));
        assert_ne!(session_seed("a"), session_seed("b"));
    }
}
