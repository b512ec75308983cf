//! The one session driver, used by every schedule: ask the workload for the
//! turn, wait until it is due, send it, record it (on disk before anything
//! else happens), tell the workload how it went, repeat.
//!
//! The failure rule is the run's (`load.failed_turn`): by default the
//! reference's, a failed turn is reported to the workload and whatever it
//! returns after that is recorded as aborted and never sent; with
//! `continue` (agentperf-local's rule) the failed turn is reported and the
//! workload's next turn is sent. A workload may ask for a pause after a
//! turn (its tools' time): the next request is due that much later, and a
//! session's last pause holds its slot. A session resumed from an earlier process first
//! replays its recorded outcomes into the workload (no request is sent):
//! workloads are deterministic (no clock, no entropy), so this rebuilds the
//! exact state the session had, and it continues with its next turn.

use super::arrivals::Arrival;
use super::body::{request_body, SessionBodies};
use super::closed::{ClosedLoop, ClosedSession, SentRequest};
use super::context::{ContextWindow, LastPrompt};
use super::instances::Instances;
use super::journal::WriteError;
use super::prior::History;
use super::recorder::Recorder;
use super::stop::{Stop, StopReason};
use super::turn::{completion_for_plugin, Sent, TurnSender};
use super::twin::Twin;
use crate::{TurnRecord, TurnStatus};
use agentload_config::FailedTurn;
use agentload_plugin_host::types::TurnOutcome;
use agentload_plugin_host::TurnRequest;
use agentload_plugin_host::{PluginFailure, SessionPlan, Step, TurnReview, WorkloadPlugin};
use agentload_results::live::{LiveAction, LiveReview};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// What a schedule adds to the turn; the defaults are the edge run's.
pub trait TurnHooks: Send + Sync {
    /// Changes the schedule makes to a request (a salt, a token cap), and
    /// the delay before it is due, counted from the previous answer's end.
    fn shape(&self, req: &mut TurnRequest) -> Duration {
        Duration::from_millis(req.delay_ms)
    }

    /// A turn ended (before its record is kept).
    fn answered(&self, _req: &TurnRequest, _record: &TurnRecord) {}

    /// What the workload said after the turn that [`TurnHooks::answered`] saw.
    fn then(&self, _next: Next<'_>) {}
}

/// Shared hooks: the schedule keeps a handle to read their state.
impl<T: TurnHooks> TurnHooks for std::sync::Arc<T> {
    fn shape(&self, req: &mut TurnRequest) -> Duration {
        (**self).shape(req)
    }

    fn answered(&self, req: &TurnRequest, record: &TurnRecord) {
        (**self).answered(req, record);
    }

    fn then(&self, next: Next<'_>) {
        (**self).then(next);
    }
}

/// The workload's answer to a turn's outcome.
#[derive(Debug, Clone, Copy)]
pub enum Next<'a> {
    Turn,
    Over,
    Error(&'a PluginFailure),
}

/// The edge and accuracy phases' hooks: the workload's own delays.
pub struct WorkloadDelays;

impl TurnHooks for WorkloadDelays {}

/// Everything the sessions of one phase share.
pub struct Engine {
    pub workload: Instances,
    pub sender: TurnSender,
    pub recorder: Recorder,
    pub stop: Stop,
    pub hooks: Box<dyn TurnHooks>,
    /// Live-reply replay (`history = "live"`): the workload reviews each
    /// reply before its record is kept, and the record carries the review.
    pub live: bool,
    /// Live-reply replay's pre-check of each request against the context
    /// window (`model.context_window`).
    pub context: Option<ContextWindow>,
    /// Live-reply replay's recorded twins ([`super::twin`]): the workload in
    /// recorded mode, whose turns are counted beside the live ones.
    pub twins: Option<Instances>,
    /// What follows a failed turn (`load.failed_turn`).
    pub failed_turn: FailedTurn,
    /// Closed-loop replay (`history = "closed"`, [`super::closed`]): after
    /// the workload's first request the host makes each next one from the
    /// reply and its tool calls' results.
    pub closed: Option<Arc<ClosedLoop>>,
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionEnd {
    /// The workload ended it.
    Finished,
    /// A turn failed and the rest was recorded as aborted (the
    /// `abort_session` rule; under `continue` a session goes on and ends
    /// `finished`, its failed turns counted).
    Failed,
    /// The workload failed (a trap, an error, a broken promise).
    PluginError,
    /// Issuing stopped before the session ended (end rules, max duration,
    /// a fatal error); its remaining turns were not issued.
    Stopped,
    /// SIGINT/SIGTERM cut it; `agentload resume` continues it.
    Interrupted,
    /// Live-reply replay: a reply departed from the recording and the
    /// workload's policy for its class ends the session.
    Diverged,
}

impl SessionEnd {
    /// Its name in the result files (`finished`, `failed`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Finished => "finished",
            Self::Failed => "failed",
            Self::PluginError => "plugin_error",
            Self::Stopped => "stopped",
            Self::Interrupted => "interrupted",
            Self::Diverged => "diverged",
        }
    }

    /// Whether a resume leaves the session as it is.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Self::Finished | Self::Failed | Self::PluginError | Self::Diverged
        )
    }
}

/// How one session went (a line of `sessions.jsonl`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionOutcome {
    pub id: String,
    pub expected_turns: u32,
    pub completed: u32,
    pub failed: u32,
    pub aborted: u32,
    pub ended: SessionEnd,
    /// The simulated agent that ran it (sweeps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<u32>,
    /// Why it ended early.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A session to drive.
pub struct SessionTask {
    pub plan: SessionPlan,
    pub agent: Option<u32>,
    /// Its records from an earlier process (resume), in log order;
    /// interrupted ones left out.
    pub history: History,
    /// An open-loop arrival ([`crate::arrivals`]): the session prepares its
    /// first request, then waits for its due time and its place under the cap.
    pub arrival: Option<Arrival>,
}

impl SessionTask {
    /// A session of the plan, from its start (no history, no arrival).
    pub fn fresh(plan: SessionPlan, agent: Option<u32>) -> Self {
        Self {
            plan,
            agent,
            history: History::default(),
            arrival: None,
        }
    }
}

/// Why a session could not be driven to an outcome.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// A record could not be written: the run must stop.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A record of the earlier process could not be read again while the session was
    /// replayed (the log changed under the resume): the run must stop.
    #[error("session {session}: {why}")]
    Reread { session: String, why: String },
    /// The workload asked for another turn than the recorded one while a
    /// resumed session was replayed: it must restart whole.
    #[error("session {session}: the workload's turn {turn} differs from the recorded one ({why})")]
    Diverged {
        session: String,
        turn: u32,
        why: String,
    },
}

/// Sessions being driven in this process now.
static DRIVEN: AtomicUsize = AtomicUsize::new(0);

/// How many sessions are being driven in this process now (the journal
/// writer lets a session alone write its own line).
pub(crate) fn sessions_driven() -> usize {
    DRIVEN.load(Ordering::SeqCst)
}

/// Counts a session in [`sessions_driven`] while it lives.
struct Driven;

impl Driven {
    fn new() -> Self {
        DRIVEN.fetch_add(1, Ordering::SeqCst);
        Self
    }
}

impl Drop for Driven {
    fn drop(&mut self) {
        DRIVEN.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Drives one session to its end (see the module docs), on the workload
/// instance the phase assigns it.
pub async fn drive(engine: &Engine, task: SessionTask) -> Result<SessionOutcome, DriveError> {
    drive_on(engine, engine.workload.assign(), task).await
}

/// As [`drive`], on the given workload instance.
pub async fn drive_on(
    engine: &Engine,
    workload: &Mutex<WorkloadPlugin>,
    task: SessionTask,
) -> Result<SessionOutcome, DriveError> {
    let _driven = Driven::new();
    let SessionTask {
        plan,
        agent,
        history,
        arrival,
    } = task;
    let mut out = SessionOutcome {
        id: plan.id.clone(),
        expected_turns: plan.expected_turns,
        completed: 0,
        failed: 0,
        aborted: 0,
        ended: SessionEnd::Finished,
        agent,
        error: None,
    };
    let mut twin = Twin::start(engine.twins.as_ref(), &plan.id).await;
    let first = workload.lock().await.start_session(&plan.id).await;
    let mut req = match first {
        Ok(req) => req,
        Err(e) => return end(engine, out, SessionEnd::PluginError, Some(&e)).await,
    };
    let mut closed = match &engine.closed {
        Some(c) => match ClosedSession::open(c, &plan.id, &req).await {
            Ok(session) => Some(session),
            Err(e) => {
                let msg = format!("session {}: the tool sandbox: {e}", plan.id);
                agentload_console::line(&msg);
                out.error = Some(msg);
                return end(engine, out, SessionEnd::PluginError, None).await;
            }
        },
        None => None,
    };
    let abort_rule = engine.failed_turn == FailedTurn::AbortSession;
    let mut aborting = false;
    for logged in history.records() {
        let logged = logged.map_err(|why| DriveError::Reread {
            session: plan.id.clone(),
            why,
        })?;
        let r = &logged.record;
        if let Some(why) = differs(&req, r) {
            return Err(DriveError::Diverged {
                session: plan.id.clone(),
                turn: r.turn,
                why: why.to_owned(),
            });
        }
        let outcome = match r.status {
            TurnStatus::Completed => {
                out.completed += 1;
                let c = r.completion.clone().unwrap_or_default();
                TurnOutcome::Completed(completion_for_plugin(&c, r))
            }
            TurnStatus::Failed => {
                out.failed += 1;
                aborting = abort_rule;
                TurnOutcome::Failed(r.error.clone().unwrap_or_default())
            }
            TurnStatus::Aborted | TurnStatus::Interrupted => {
                out.aborted += 1;
                TurnOutcome::Aborted
            }
        };
        let recorded = match &mut twin {
            Some(twin) => {
                twin.step(&req, &outcome, &*engine.hooks, &engine.sender.body)
                    .await
            }
            None => None,
        };
        if r.status == TurnStatus::Completed && r.local_tokens.is_none() {
            // Killed before its count was written: count it now.
            if let Ok(body) = request_body(&req, &engine.sender.body) {
                let recorder = &engine.recorder;
                recorder.count(
                    logged.line,
                    &r.session_id,
                    body.into(),
                    r.answer(),
                    recorded,
                );
            }
        }
        if let Some(session) = &mut closed {
            // Closed loop: the recorded reply's calls run again in the
            // session's sandbox (deterministic: the same files, the same
            // results), the recording is stepped, and the next request is
            // made again from them, as the first process made it.
            let Some(block) = r.closed.as_deref() else {
                return Err(DriveError::Diverged {
                    session: plan.id.clone(),
                    turn: r.turn,
                    why: "a closed-loop turn without its closed block".into(),
                });
            };
            // Made again as it was sent (shaped by the schedule), then
            // compared byte for byte (by its digest) with the one sent.
            let mut shaped = req.clone();
            engine.hooks.shape(&mut shaped);
            let made = SessionBodies::default().body(&shaped, &engine.sender.body);
            let made = SentRequest::of(made.as_ref().ok());
            let why = match &made {
                Some(made) => made.differs_from(block),
                None => Some("the closed-loop request could not be made again".to_owned()),
            };
            if let Some(why) = why {
                return Err(DriveError::Diverged {
                    session: plan.id.clone(),
                    turn: r.turn,
                    why,
                });
            }
            let unsent = r.status == TurnStatus::Failed
                && r.error
                    .as_deref()
                    .is_some_and(|e| e.starts_with("not sent"));
            let step = session
                .answered(
                    &req,
                    &outcome,
                    unsent,
                    made,
                    workload,
                    &*engine.hooks,
                    &engine.sender.body,
                )
                .await;
            match step.next {
                Some(n) => req = n,
                None => return end(engine, out, ending(aborting, None), None).await,
            }
            continue;
        }
        // The reviews of replayed turns are in their records already.
        let next = workload.lock().await.next_turn(&req, &outcome).await;
        match next {
            Ok(Step { next: Some(n), .. }) => req = n,
            Ok(Step { next: None, .. }) => {
                let ended = ending(aborting, r.live.as_deref());
                return end(engine, out, ended, None).await;
            }
            Err(e) => return end(engine, out, SessionEnd::PluginError, Some(&e)).await,
        }
    }
    let sender = &engine.sender;
    let mut bodies = SessionBodies::default();
    let (mut ready, one_turn) = match &arrival {
        Some(a) => (a.due, a.one_turn),
        None => (Instant::now(), false),
    };
    let mut arrival = arrival;
    // The place under the in-flight cap, held until the session ends.
    let mut place = None;
    // The context pre-check's bound: the last answered request's size.
    let mut last: Option<LastPrompt> = None;
    let mut first = history.is_empty();
    loop {
        if req.session_id != plan.id {
            let msg = format!(
                "session `{}`: the workload returned a turn for session `{}`",
                plan.id, req.session_id
            );
            agentload_console::line(&msg);
            out.error = Some(msg);
            return end(engine, out, SessionEnd::PluginError, None).await;
        }
        if aborting {
            if out.aborted > plan.expected_turns {
                out.error =
                    Some("the workload kept returning turns after the session failed".into());
                return end(engine, out, SessionEnd::Failed, None).await;
            }
            let mut record =
                TurnRecord::aborted(&req.session_id, req.turn, &req.item_id, &req.expected_json);
            record.segment = sender.segment;
            record.agent = agent;
            engine.recorder.keep(record, None).await?;
            out.aborted += 1;
            let next = workload
                .lock()
                .await
                .next_turn(&req, &TurnOutcome::Aborted)
                .await;
            match next.map(|step| step.next) {
                Ok(Some(n)) => req = n,
                Ok(None) => return end(engine, out, SessionEnd::Failed, None).await,
                Err(e) => return end(engine, out, SessionEnd::PluginError, Some(&e)).await,
            }
            continue;
        }
        // The request as sent: the schedule's changes (a salt) go on a copy
        // that shares the messages, so the workload's next `keep` counts in
        // its own request.
        let mut shaped = req.clone();
        let due = ready + engine.hooks.shape(&mut shaped);
        let shaped = Arc::new(shaped);
        // An arrival's first request: at real-time priority woken just before its due
        // time and written at it, else woken at it.
        let mut not_before = None;
        if let Some(a) = arrival.take() {
            let early = super::precise::realtime();
            match a.admit(&engine.stop, due, early).await {
                Some(p) => (place, not_before) = (Some(p), early.then_some(due)),
                // The phase stopped before it was due: it never arrived.
                None => {
                    out.ended = SessionEnd::Stopped;
                    return Ok(out);
                }
            }
        }
        let unsent = match &engine.context {
            Some(window) => too_long(window, sender, &shaped, &mut bodies, due, last, first).await,
            None => None,
        };
        first = false;
        let kept_back = unsent.is_some();
        let sent = match unsent {
            Some(record) => Sent {
                record,
                answered: None,
                ready: None,
            },
            None => {
                let go = match not_before {
                    Some(_) => !engine.stop.stopped(),
                    None => engine.stop.wait_until(due).await,
                };
                if !go {
                    return stopped(engine, out).await;
                }
                // The previous answer's body goes to the counting queue's
                // scratch file once this request is out.
                let spill = || engine.recorder.spill_held();
                sender
                    .send(&shaped, &mut bodies, due, not_before, &engine.stop, spill)
                    .await
            }
        };
        if let (Some(p), Some(at), Some(ready)) = (&place, not_before, sent.ready) {
            p.sent(ready, at);
        }
        last = prompt_size(&sent);
        let mut record = sent.record;
        record.agent = agent;
        engine.hooks.answered(&shaped, &record);
        if record.status == TurnStatus::Interrupted {
            engine.recorder.keep(record, None).await?;
            return stopped(engine, out).await;
        }
        ready = sender.origin + Duration::from_nanos(record.complete_ns.unwrap_or_default());
        let outcome = match (&record.status, &record.completion) {
            (TurnStatus::Completed, Some(c)) => {
                out.completed += 1;
                TurnOutcome::Completed(completion_for_plugin(c, &record))
            }
            _ => {
                out.failed += 1;
                aborting = abort_rule;
                TurnOutcome::Failed(record.error.clone().unwrap_or_default())
            }
        };
        let (next, review) = if engine.live {
            // Live-reply replay: the workload reviews the reply first, and
            // the record carries the review (a few µs more before the write);
            // the recorded twin makes the recording's turn, to count beside it.
            let next = workload.lock().await.next_turn(&req, &outcome).await;
            let review = next.as_ref().ok().and_then(|s| s.review.as_ref());
            let answered = record.status == TurnStatus::Completed;
            let review = review.map(|r| apply_review(&mut record, r));
            if answered && record.status == TurnStatus::Failed {
                (out.completed, out.failed) = (out.completed - 1, out.failed + 1);
                aborting = abort_rule;
            }
            let recorded = match &mut twin {
                Some(twin) => {
                    twin.step(&req, &outcome, &*engine.hooks, &sender.body)
                        .await
                }
                None => None,
            };
            engine
                .recorder
                .submit(record, sent.answered)?
                .with_recorded(recorded)
                .kept()
                .await?;
            (next, review)
        } else if let Some(session) = &mut closed {
            // Closed loop: the reply's tool calls run in the sandbox and
            // the record carries how each was answered; it is on disk
            // before the next request (made from their results) is sent.
            let request = match &sent.answered {
                Some((body, _)) => SentRequest::of(Some(body)),
                None => SentRequest::of(bodies.body(&shaped, &sender.body).ok().as_ref()),
            };
            let step = session
                .answered(
                    &req,
                    &outcome,
                    kept_back,
                    request,
                    workload,
                    &*engine.hooks,
                    &sender.body,
                )
                .await;
            if let Some(done) = step.tools_done {
                ready = ready.max(done);
            }
            record.closed = Some(Box::new(step.turn));
            engine
                .recorder
                .submit(record, sent.answered)?
                .kept()
                .await?;
            let next = Ok(Step {
                review: None,
                next: step.next,
                pause_ms: 0,
            });
            (next, None)
        } else {
            // The record is written (by the writer thread while the workload
            // makes the next turn, or at once when nothing else is going on);
            // it is on disk before that turn is sent.
            let keeping = engine.recorder.submit(record, sent.answered)?;
            let next = workload.lock().await.next_turn(&req, &outcome).await;
            keeping.kept().await?;
            (next, None)
        };
        if one_turn {
            // An arrival of one request: the session ends with its first turn.
            let ended = ending(aborting, review.as_ref());
            return end(engine, out, ended, None).await;
        }
        match next {
            Ok(Step {
                next: Some(n),
                pause_ms,
                ..
            }) => {
                engine.hooks.then(Next::Turn);
                ready += Duration::from_millis(pause_ms);
                req = n;
            }
            Ok(Step {
                next: None,
                pause_ms,
                ..
            }) => {
                engine.hooks.then(Next::Over);
                if pause_ms > 0 && !aborting {
                    // The last tools' time holds the slot (a stop ends it early).
                    engine
                        .stop
                        .wait_until(ready + Duration::from_millis(pause_ms))
                        .await;
                }
                let ended = ending(aborting, review.as_ref());
                return end(engine, out, ended, None).await;
            }
            Err(e) => {
                engine.hooks.then(Next::Error(&e));
                return end(engine, out, SessionEnd::PluginError, Some(&e)).await;
            }
        }
    }
}

/// A live request's pre-check: the record of a turn not sent because its
/// request does not fit the context window (see [`ContextWindow`]).
async fn too_long(
    window: &ContextWindow,
    sender: &TurnSender,
    req: &Arc<TurnRequest>,
    bodies: &mut SessionBodies,
    due: Instant,
    last: Option<LastPrompt>,
    first: bool,
) -> Option<TurnRecord> {
    let body = bodies.body(req, &sender.body).ok()?;
    let error = window.check(&body, last, first).await.error()?;
    Some(sender.unsent(req, due, error))
}

/// The size of a request the server answered with its prompt's count,
/// and its reply's completion tokens (0 when the reply carried reasoning,
/// which a chat template may drop from the history, or when not reported).
fn prompt_size(sent: &Sent) -> Option<LastPrompt> {
    let (body, _) = sent.answered.as_ref()?;
    let record = &sent.record;
    let reasoned = record
        .completion
        .as_ref()
        .is_none_or(|c| !c.reasoning_content.is_empty());
    Some(LastPrompt {
        bytes: body.len(),
        tokens: record.server_isl()?,
        reply_tokens: match reasoned {
            true => 0,
            false => record.server_osl().unwrap_or(0),
        },
    })
}

/// How a session the workload ended ended: after a failed turn, by a live
/// review's policy, or finished.
fn ending(aborting: bool, review: Option<&LiveReview>) -> SessionEnd {
    if aborting {
        SessionEnd::Failed
    } else if review.is_some_and(|r| r.action == LiveAction::Ended) {
        SessionEnd::Diverged
    } else {
        SessionEnd::Finished
    }
}

/// Puts a live review on its turn's record: a turn its policy fails is
/// recorded as failed, with the class as the cause.
fn apply_review(record: &mut TurnRecord, review: &TurnReview) -> LiveReview {
    let review = crate::live::review_record(review);
    if review.action == LiveAction::Failed && record.status == TurnStatus::Completed {
        record.status = TurnStatus::Failed;
        record.error = Some(format!(
            "live reply diverged from the recording ({}{}); the workload's policy fails the turn",
            review.divergence.name(),
            if review.detail.is_empty() {
                String::new()
            } else {
                format!(": {}", review.detail)
            }
        ));
    }
    record.live = Some(Box::new(review.clone()));
    review
}

/// Why a replayed request is not the recorded turn, if it is not.
fn differs(req: &TurnRequest, r: &TurnRecord) -> Option<&'static str> {
    if req.session_id != r.session_id {
        Some("session id")
    } else if req.turn != r.turn {
        Some("turn number")
    } else if req.item_id != r.item_id {
        Some("item id")
    } else if req.expected_json != r.expected_json {
        Some("expected data")
    } else {
        None
    }
}

/// Ends a session that issuing stopped under.
async fn stopped(engine: &Engine, mut out: SessionOutcome) -> Result<SessionOutcome, DriveError> {
    let reason = engine.stop.reason().map(|(r, _)| r);
    out.error = reason.as_ref().map(ToString::to_string);
    let ended = match reason {
        Some(StopReason::Interrupted(_)) => SessionEnd::Interrupted,
        _ => SessionEnd::Stopped,
    };
    end(engine, out, ended, None).await
}

async fn end(
    engine: &Engine,
    mut out: SessionOutcome,
    ended: SessionEnd,
    failure: Option<&PluginFailure>,
) -> Result<SessionOutcome, DriveError> {
    if let Some(e) = failure {
        agentload_console::line(&format!("session {} stopped: {e}", out.id));
        out.error = Some(e.to_string());
    }
    out.ended = ended;
    engine.recorder.session_ended(&out).await?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_counted_while_it_is_driven() {
        // No other test in this crate drives a session.
        assert_eq!(sessions_driven(), 0);
        let (a, b) = (Driven::new(), Driven::new());
        assert_eq!(sessions_driven(), 2);
        drop(a);
        assert_eq!(sessions_driven(), 1);
        drop(b);
        assert_eq!(sessions_driven(), 0);
    }

    #[test]
    fn end_names_are_the_journals_spelling() {
        for end in [
            SessionEnd::Finished,
            SessionEnd::Failed,
            SessionEnd::PluginError,
            SessionEnd::Stopped,
            SessionEnd::Interrupted,
            SessionEnd::Diverged,
        ] {
            assert_eq!(serde_json::to_value(end).unwrap(), end.name());
        }
    }
}
