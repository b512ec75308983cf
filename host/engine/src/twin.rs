//! Live-reply replay's recorded twin: a second set of the workload's instances, configured
//! in recorded mode, driven in step with the live session on the same outcomes. In recorded
//! mode a workload ignores what a reply says, so the twin's request at each turn is the
//! recording's, and its next request carries the recorded reply that followed the turn.
//! Both are counted beside the live turn when the phase ends ([`RecordedTurn`]): the ISL
//! drift against the recording and the OSL against the recorded reply's, per turn, in the
//! live run itself.
//!
//! The twin costs its own instances (the workload's data held again), one more `next-turn`
//! per turn, and twice the counting at the phase's end. It never changes the live session:
//! a twin that fails, ends, or reaches another turn number than the live session's stops
//! (the rest of that session is not compared), and says so on the console.

use super::body::{BodyOptions, SessionBodies};
use super::counting::RecordedTurn;
use super::instances::Instances;
use super::session::TurnHooks;
use agentload_client::{Assembled, ToolCallRecord};
use agentload_plugin_host::types::{Role, TurnOutcome};
use agentload_plugin_host::{TurnRequest, WorkloadPlugin};
use tokio::sync::Mutex;

/// One session's twin: its instance and the request it makes at the live session's turn.
pub struct Twin<'a> {
    workload: &'a Mutex<WorkloadPlugin>,
    /// `None` once it is out of step.
    req: Option<TurnRequest>,
}

impl<'a> Twin<'a> {
    /// Starts session `id` on a twin instance; none without twins, or when it fails to start.
    pub async fn start(twins: Option<&'a Instances>, id: &str) -> Option<Self> {
        let workload = twins?.assign();
        let started = workload.lock().await.start_session(id).await;
        match started {
            Ok(req) => Some(Self {
                workload,
                req: Some(req),
            }),
            Err(e) => {
                stopped(id, &e.to_string());
                None
            }
        }
    }

    /// The live turn `live` ended with `outcome`: the recording's turn there (for a
    /// completed turn), and the twin moved on by the same outcome. The recording's request
    /// is shaped as the live one was (`hooks`: a salt, a token cap).
    pub async fn step(
        &mut self,
        live: &TurnRequest,
        outcome: &TurnOutcome,
        hooks: &dyn TurnHooks,
        body: &BodyOptions,
    ) -> Option<RecordedTurn> {
        let req = self.req.take()?;
        if req.turn != live.turn {
            let why = format!("it reached turn {} at live turn {}", req.turn, live.turn);
            stopped(&live.session_id, &why);
            return None;
        }
        // A failed turn aborts the rest of the session: nothing more to compare.
        if !matches!(outcome, TurnOutcome::Completed(_)) {
            return None;
        }
        let mut shaped = req.clone();
        hooks.shape(&mut shaped);
        let request = SessionBodies::default()
            .body(&shaped, body)
            .ok()?
            .to_bytes();
        let next = self.workload.lock().await.next_turn(&req, outcome).await;
        let next = match next {
            Ok(step) => step.next,
            Err(e) => {
                stopped(&live.session_id, &e.to_string());
                None
            }
        };
        let reply = next.as_ref().and_then(|n| recorded_reply(&req, n));
        self.req = next;
        Some(RecordedTurn {
            body: request,
            reply,
        })
    }
}

/// The assistant message `next` adds right after `req`'s messages: the recorded reply.
fn recorded_reply(req: &TurnRequest, next: &TurnRequest) -> Option<Assembled> {
    let message = next.messages.get(req.messages.len())?;
    if message.role() != Role::Assistant {
        return None;
    }
    let chat = message.to_chat();
    Some(Assembled {
        content: chat.content.unwrap_or_default(),
        reasoning_content: chat.reasoning_content.unwrap_or_default(),
        tool_calls: chat
            .tool_calls
            .into_iter()
            .map(|c| ToolCallRecord {
                id: c.id,
                name: c.name,
                arguments: c.arguments,
            })
            .collect(),
        ..Assembled::default()
    })
}

/// Says on the console that a session's twin stopped.
fn stopped(session: &str, why: &str) {
    agentload_console::line(&format!(
        "note: session {session}: the recorded twin stopped ({why}); the rest of the session \
         is not compared with the recording"
    ));
}
