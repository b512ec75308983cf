//! The closed-loop session driver: up to `concurrency` sessions in flight,
//! each with exactly one turn in flight; a failed turn aborts the rest of its
//! session (recorded as missing, never sent), like the reference.
//!
//! Each record is on disk before the session's next request goes out. Local
//! token counting (a chat-template render and BPE of a prompt of up to ~30K
//! tokens) runs on a blocking thread beside the next request, not between
//! requests; the counts are merged into the records, and `turns.jsonl` is
//! rewritten with them, when the phase ends.

use super::record::{LocalTokens, TurnLog, TurnRecord, TurnStatus};
use crate::client::{request_body, BodyOptions, ChatClient, Exchange};
use crate::plugin::types::{Completion, ToolCall, TurnOutcome, TurnRequest, Usage};
use crate::plugin::{SessionPlan, WorkloadPlugin};
use crate::tokens::LocalCounter;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

/// Everything a phase needs.
pub struct PhaseSetup {
    pub client: ChatClient,
    pub body: BodyOptions,
    pub workload: WorkloadPlugin,
    pub sessions: Vec<SessionPlan>,
    pub concurrency: usize,
    /// Stop issuing new turns after this long.
    pub max_duration: Duration,
    pub log: TurnLog,
    pub counter: Option<Arc<LocalCounter>>,
    /// Live progress (a bar on a terminal, periodic lines otherwise).
    pub progress: crate::progress::Progress,
}

/// How one session went.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SessionOutcome {
    pub id: String,
    pub expected_turns: u32,
    pub completed: u32,
    pub failed: u32,
    pub aborted: u32,
    /// A plugin failure or a cut-off that ended the session early.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a phase produced.
pub struct PhaseOutcome {
    pub records: Vec<TurnRecord>,
    pub sessions: Vec<SessionOutcome>,
    pub started: Instant,
    pub wall: Duration,
    /// When the first request was issued and the last completion arrived (ns after start).
    pub window_ns: Option<(u64, u64)>,
    pub workload: WorkloadPlugin,
}

struct Shared {
    workload: Mutex<WorkloadPlugin>,
    log: Mutex<TurnLog>,
    records: Mutex<Vec<TurnRecord>>,
    queue: Mutex<VecDeque<SessionPlan>>,
    sender: TurnSender,
    /// Local counts in progress: (record index, task).
    counting: Mutex<Vec<(usize, JoinHandle<LocalTokens>)>>,
    deadline: Instant,
    progress: crate::progress::Progress,
}

/// Runs every session of the phase and returns the records.
pub async fn run_phase(setup: PhaseSetup) -> PhaseOutcome {
    let started = Instant::now();
    let shared = Arc::new(Shared {
        workload: Mutex::new(setup.workload),
        log: Mutex::new(setup.log),
        records: Mutex::new(Vec::new()),
        queue: Mutex::new(setup.sessions.into_iter().collect()),
        sender: TurnSender {
            client: setup.client,
            body: setup.body,
            counter: setup.counter,
            started,
        },
        counting: Mutex::new(Vec::new()),
        deadline: started + setup.max_duration,
        progress: setup.progress,
    });
    let workers: Vec<_> = (0..setup.concurrency.max(1))
        .map(|_| {
            let shared = shared.clone();
            tokio::spawn(async move {
                let mut done = Vec::new();
                loop {
                    let next = shared.queue.lock().expect("queue lock").pop_front();
                    let Some(plan) = next else { break };
                    done.push(run_session(&shared, plan).await);
                }
                done
            })
        })
        .collect();
    let mut sessions = Vec::new();
    for w in workers {
        sessions.extend(w.await.expect("session worker panicked"));
    }
    let wall = started.elapsed();
    shared.progress.finish();
    let shared = Arc::try_unwrap(shared).unwrap_or_else(|_| unreachable!("workers joined"));
    let mut records = shared.records.into_inner().expect("records lock");
    let counting = shared.counting.into_inner().expect("counting lock");
    if !counting.is_empty() {
        for (index, task) in counting {
            match task.await {
                Ok(tokens) => records[index].local_tokens = Some(tokens),
                Err(e) => crate::log::line(&format!("error: local token count failed: {e}")),
            }
        }
        let log = shared.log.into_inner().expect("log lock");
        if let Err(e) = log.rewrite(&records) {
            crate::log::line(&format!(
                "error: cannot add local token counts to turns.jsonl: {e}"
            ));
        }
    }
    let first = records.iter().filter_map(|r| r.issued_ns).min();
    let last = records.iter().filter_map(|r| r.complete_ns).max();
    PhaseOutcome {
        window_ns: first.zip(last),
        records,
        sessions,
        started,
        wall,
        workload: shared.workload.into_inner().expect("workload lock"),
    }
}

async fn run_session(shared: &Shared, plan: SessionPlan) -> SessionOutcome {
    let mut out = SessionOutcome {
        id: plan.id.clone(),
        expected_turns: plan.expected_turns,
        completed: 0,
        failed: 0,
        aborted: 0,
        error: None,
    };
    let first = shared.workload().start_session(&plan.id);
    let mut req = match first {
        Ok(req) => req,
        Err(e) => {
            crate::log::line(&format!("session {} failed: {e}", plan.id));
            out.error = Some(e.to_string());
            return out;
        }
    };
    let failure = loop {
        if Instant::now() >= shared.deadline {
            out.error = Some("max_duration reached: remaining turns not issued".into());
            return out;
        }
        if req.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(req.delay_ms)).await;
        }
        let (record, counting) = shared.sender.send(&req).await;
        let outcome = match (&record.status, &record.completion) {
            (TurnStatus::Completed, Some(c)) => {
                out.completed += 1;
                TurnOutcome::Completed(completion_for_plugin(c, record.usage.as_ref()))
            }
            _ => {
                out.failed += 1;
                TurnOutcome::Failed(record.error.clone().unwrap_or_default())
            }
        };
        let failed = matches!(outcome, TurnOutcome::Failed(_));
        let index = shared.keep(record);
        if let Some(task) = counting {
            shared
                .counting
                .lock()
                .expect("counting lock")
                .push((index, task));
        }
        match shared.workload().next_turn(&plan.id, &outcome) {
            Ok(Some(next)) if failed => break Some(next),
            Ok(Some(next)) => req = next,
            Ok(None) => break None,
            Err(e) => {
                crate::log::line(&format!("session {} failed: {e}", plan.id));
                out.error = Some(e.to_string());
                return out;
            }
        }
    };
    // Record the turns an earlier failure aborted, as the reference does.
    let mut next = failure;
    let limit = plan.expected_turns as usize + 1;
    while let Some(req) = next.take() {
        if out.aborted as usize >= limit {
            out.error = Some("workload kept returning turns after the session was aborted".into());
            break;
        }
        out.aborted += 1;
        shared.keep(TurnRecord::aborted(
            &req.session_id,
            req.turn,
            &req.item_id,
            &req.expected_json,
        ));
        match shared.workload().next_turn(&plan.id, &TurnOutcome::Aborted) {
            Ok(n) => next = n,
            Err(e) => {
                out.error = Some(e.to_string());
                break;
            }
        }
    }
    out
}

impl Shared {
    fn workload(&self) -> std::sync::MutexGuard<'_, WorkloadPlugin> {
        self.workload.lock().expect("workload lock")
    }

    /// Writes a record to disk, then keeps it; returns its index.
    fn keep(&self, record: TurnRecord) -> usize {
        if let Err(e) = self.log.lock().expect("log lock").write(&record) {
            crate::log::line(&format!("error: cannot write turn log: {e}"));
        }
        self.progress.record(&record);
        let mut records = self.records.lock().expect("records lock");
        records.push(record);
        let n = records.len();
        n - 1
    }
}

/// Nanoseconds from `origin` to `t`.
fn ns(origin: Instant, t: Instant) -> u64 {
    t.duration_since(origin).as_nanos() as u64
}

/// Sends turns and builds their records; times are relative to `started`.
pub struct TurnSender {
    pub client: ChatClient,
    pub body: BodyOptions,
    pub counter: Option<Arc<LocalCounter>>,
    /// The phase's time origin.
    pub started: Instant,
}

impl TurnSender {
    /// Sends one turn and builds its record, with the local token count
    /// started in the background when a tokenizer is loaded.
    pub async fn send(&self, req: &TurnRequest) -> (TurnRecord, Option<JoinHandle<LocalTokens>>) {
        let mut record =
            TurnRecord::aborted(&req.session_id, req.turn, &req.item_id, &req.expected_json);
        record.error = None;
        let body = match request_body(req, &self.body) {
            Ok(body) => body,
            Err(e) => {
                record.status = TurnStatus::Failed;
                record.error = Some(format!("cannot build request: {e}"));
                return (record, None);
            }
        };
        let Exchange {
            timeline: t,
            result,
        } = self.client.send(&body, &req.session_id).await;
        record.issued_ns = Some(ns(self.started, t.issued));
        record.first_byte_ns = t.first_byte.map(|i| ns(self.started, i));
        record.first_token_ns = t.first_token.map(|i| ns(self.started, i));
        record.last_token_ns = t.last_token.map(|i| ns(self.started, i));
        record.complete_ns = Some(ns(self.started, t.complete));
        record.token_chunks = t.token_chunks_ns.len() as u32;
        let mut counting = None;
        match result {
            Ok(answer) => {
                if let Some(counter) = &self.counter {
                    let (counter, answer) = (counter.clone(), answer.clone());
                    counting = Some(tokio::task::spawn_blocking(move || {
                        counter.count_turn(&body, &answer)
                    }));
                }
                record.status = TurnStatus::Completed;
                record.set_answer(answer);
            }
            Err(e) => {
                record.status = TurnStatus::Failed;
                record.error = Some(e.to_string());
            }
        }
        (record, counting)
    }
}

/// The completion in WIT form, for the workload.
pub(crate) fn completion_for_plugin(
    c: &super::CompletionRecord,
    usage: Option<&serde_json::Value>,
) -> Completion {
    Completion {
        content: c.content.clone(),
        reasoning_content: c.reasoning_content.clone(),
        tool_calls: c
            .tool_calls
            .iter()
            .map(|t| ToolCall {
                id: t.id.clone(),
                name: t.name.clone(),
                arguments: t.arguments.clone(),
            })
            .collect(),
        finish_reason: c.finish_reason.clone(),
        usage: usage.and_then(usage_for_plugin),
    }
}

/// Server usage in WIT form.
pub(crate) fn usage_for_plugin(u: &serde_json::Value) -> Option<Usage> {
    let n = |k: &str| {
        u.get(k)
            .and_then(serde_json::Value::as_u64)
            .map(|v| v as u32)
    };
    Some(Usage {
        prompt_tokens: n("prompt_tokens")?,
        completion_tokens: n("completion_tokens")?,
        cached_tokens: u
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))
            .and_then(serde_json::Value::as_u64)
            .map(|v| v as u32),
    })
}
