//! One sweep phase: `level` simulated agents, each working through its
//! trajectories one after another (closed loop, tool delays before tool
//! turns), until the phase's end rules hold.

use super::config::{SweepConfig, ToolDelayMode};
use super::{delays, salt};
use crate::plugin::types::TurnOutcome;
use crate::plugin::{SessionPlan, WorkloadPlugin};
use crate::runner::{
    completion_for_plugin, LocalTokens, TurnLog, TurnRecord, TurnSender, TurnStatus,
};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// What a phase needs.
pub struct PhaseInput {
    /// 0-based phase number (keys the salts and delay draws).
    pub index: usize,
    /// Concurrent agents.
    pub level: usize,
    /// The recycling list: agent `i`'s `j`-th trajectory is `plan[i + j·level]`.
    pub plan: Vec<SessionPlan>,
    pub workload: WorkloadPlugin,
    pub sender: TurnSender,
    pub log: TurnLog,
    /// Live progress of the phase.
    pub progress: crate::progress::Progress,
}

/// How a phase went.
pub struct PhaseRun {
    pub records: Vec<TurnRecord>,
    pub workload: WorkloadPlugin,
    /// When the last agent issued its first request (ns after the phase start).
    pub all_active_ns: Option<u64>,
    /// When the end rules held (or the phase was cut), ns after the start.
    pub stopped_ns: u64,
    /// When the last in-flight turn finished.
    pub drained_ns: u64,
    pub end_reason: String,
    pub per_agent_completed: Vec<u32>,
    /// Trajectories stopped at the phase end before their last turn.
    pub trajectories_cut: u32,
    /// Trajectories that ended with a failed turn.
    pub trajectories_failed: u32,
}

struct Shared {
    config: SweepConfig,
    index: usize,
    level: usize,
    plan: Vec<SessionPlan>,
    workload: Mutex<WorkloadPlugin>,
    sender: TurnSender,
    log: Mutex<TurnLog>,
    progress: crate::progress::Progress,
    records: Mutex<Vec<TurnRecord>>,
    counting: Mutex<Vec<(usize, JoinHandle<LocalTokens>)>>,
    stop: AtomicBool,
    stopped: Notify,
    /// Why and when the phase stopped.
    stop_reason: Mutex<Option<(String, Instant)>>,
    /// Agents that have issued a request.
    active: AtomicU32,
    all_active_ns: AtomicU64,
    completed: Vec<AtomicU32>,
    cut: AtomicU32,
    failed: AtomicU32,
}

const UNSET: u64 = u64::MAX;

/// Runs one phase to its end rules (see [`SweepConfig`]).
pub async fn run(config: &SweepConfig, input: PhaseInput) -> PhaseRun {
    let started = input.sender.started;
    let shared = Arc::new(Shared {
        config: config.clone(),
        index: input.index,
        level: input.level,
        plan: input.plan,
        workload: Mutex::new(input.workload),
        sender: input.sender,
        log: Mutex::new(input.log),
        progress: input.progress,
        records: Mutex::new(Vec::new()),
        counting: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
        stopped: Notify::new(),
        stop_reason: Mutex::new(None),
        active: AtomicU32::new(0),
        all_active_ns: AtomicU64::new(UNSET),
        completed: (0..input.level).map(|_| AtomicU32::new(0)).collect(),
        cut: AtomicU32::new(0),
        failed: AtomicU32::new(0),
    });
    let agents: Vec<_> = (0..input.level)
        .map(|i| {
            let shared = shared.clone();
            tokio::spawn(async move { agent(&shared, i).await })
        })
        .collect();
    // The monitor: the time-based end rule, or the time cap. Agents also
    // check the rules each time they complete a trajectory.
    while !agents.iter().all(JoinHandle::is_finished) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if Instant::now().duration_since(started) >= Duration::from_secs_f64(config.max_phase_s) {
            shared.stop_with(format!(
                "cut at max_phase_s = {} s before the end rules held",
                config.max_phase_s
            ));
        } else {
            shared.check_end_rules();
        }
    }
    for a in agents {
        a.await.expect("agent task panicked");
    }
    let drained = Instant::now();
    shared.progress.finish();
    let shared = Arc::try_unwrap(shared).unwrap_or_else(|_| unreachable!("agents joined"));
    let (end_reason, stopped_at) = shared
        .stop_reason
        .into_inner()
        .expect("stop lock")
        .unwrap_or_else(|| {
            (
                "every agent ran out of planned trajectories \
                 (raise sweep.max_trajectories_per_agent)"
                    .to_owned(),
                drained,
            )
        });
    let mut records = shared.records.into_inner().expect("records lock");
    let counting = shared.counting.into_inner().expect("counting lock");
    let log = shared.log.into_inner().expect("log lock");
    if !counting.is_empty() {
        for (i, task) in counting {
            if let Ok(tokens) = task.await {
                records[i].local_tokens = Some(tokens);
            }
        }
        if let Err(e) = log.rewrite(&records) {
            crate::log::line(&format!(
                "error: cannot add local token counts to the turn log: {e}"
            ));
        }
    }
    let ns = |t: Instant| t.duration_since(started).as_nanos() as u64;
    let all_active = shared.all_active_ns.load(Ordering::SeqCst);
    PhaseRun {
        records,
        workload: shared.workload.into_inner().expect("workload lock"),
        all_active_ns: (all_active != UNSET).then_some(all_active),
        stopped_ns: ns(stopped_at),
        drained_ns: ns(drained),
        end_reason,
        per_agent_completed: shared
            .completed
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .collect(),
        trajectories_cut: shared.cut.load(Ordering::SeqCst),
        trajectories_failed: shared.failed.load(Ordering::SeqCst),
    }
}

impl Shared {
    /// Stops the phase (the first reason wins): agents issue no new turn.
    fn stop_with(&self, reason: String) {
        let mut slot = self.stop_reason.lock().expect("stop lock");
        if slot.is_none() {
            *slot = Some((reason, Instant::now()));
            self.stop.store(true, Ordering::SeqCst);
            self.stopped.notify_waiters();
        }
    }

    /// Stops the phase when its end rules hold.
    fn check_end_rules(&self) {
        if !self.stopping() && self.end_rules_hold(self.sender.started, Instant::now()) {
            self.stop_with("end rules met".to_owned());
        }
    }

    /// At least `min_trajectories` completed, every agent at least
    /// `min_per_agent`, and `steady_state_s` of steady state behind us.
    fn end_rules_hold(&self, started: Instant, now: Instant) -> bool {
        let all_active = self.all_active_ns.load(Ordering::SeqCst);
        if all_active == UNSET {
            return false;
        }
        let steady_from = started
            + Duration::from_nanos(all_active)
            + Duration::from_secs_f64(self.config.warmup_s);
        let per_agent: Vec<u32> = self
            .completed
            .iter()
            .map(|c| c.load(Ordering::SeqCst))
            .collect();
        per_agent.iter().sum::<u32>() >= self.config.min_trajectories
            && per_agent.iter().all(|&c| c >= self.config.min_per_agent)
            && now >= steady_from + Duration::from_secs_f64(self.config.steady_state_s)
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Writes the record, keeps it, and queues its local count.
    fn keep(&self, record: TurnRecord, counting: Option<JoinHandle<LocalTokens>>) {
        if let Err(e) = self.log.lock().expect("log lock").write(&record) {
            crate::log::line(&format!("error: cannot write turn log: {e}"));
        }
        self.progress.record(&record);
        let mut records = self.records.lock().expect("records lock");
        records.push(record);
        if let Some(task) = counting {
            self.counting
                .lock()
                .expect("counting lock")
                .push((records.len() - 1, task));
        }
    }

    /// Waits until `deadline`; false when the phase stopped meanwhile.
    async fn wait(&self, deadline: Instant) -> bool {
        let stopped = self.stopped.notified();
        tokio::pin!(stopped);
        stopped.as_mut().enable();
        if self.stopping() {
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep_until(deadline.into()) => !self.stopping(),
            () = stopped => false,
        }
    }
}

/// Agent `i`: trajectory after trajectory until the phase stops.
async fn agent(shared: &Shared, i: usize) {
    let started = shared.sender.started;
    let mut first_request = true;
    for j in 0.. {
        let Some(plan) = shared.plan.get(i + j * shared.level) else {
            return;
        };
        if shared.stopping() {
            return;
        }
        let session = plan.id.clone();
        let mut next = match shared
            .workload
            .lock()
            .expect("workload lock")
            .start_session(&session)
        {
            Ok(req) => Some(req),
            Err(e) => {
                crate::log::line(&format!("sweep: session {session} failed to start: {e}"));
                shared.failed.fetch_add(1, Ordering::SeqCst);
                continue;
            }
        };
        let salt = shared
            .config
            .salt
            .then(|| salt::salt(shared.config.seed, shared.index, &session));
        let mut ready = Instant::now();
        while let Some(mut req) = next.take() {
            let delay_ms = match shared.config.tool_delay {
                ToolDelayMode::Recorded => req.delay_ms,
                ToolDelayMode::Distribution => delays::draw(&shared.config, shared.index, &req),
                ToolDelayMode::None => 0,
            };
            let due = ready + Duration::from_millis(delay_ms);
            if !shared.wait(due).await {
                shared.cut.fetch_add(1, Ordering::SeqCst);
                return;
            }
            if let Some(salt) = &salt {
                salt::apply(&mut req, salt);
            }
            req.sampling.max_completion_tokens = Some(shared.config.max_tokens);
            let (mut record, counting) = shared.sender.send(&req).await;
            if first_request {
                first_request = false;
                if shared.active.fetch_add(1, Ordering::SeqCst) + 1 == shared.level as u32 {
                    let at = record.issued_ns.unwrap_or_default();
                    shared.all_active_ns.store(at, Ordering::SeqCst);
                }
            }
            record.scheduled_ns = Some(due.duration_since(started).as_nanos() as u64);
            record.agent = Some(i as u32);
            let outcome = match (&record.status, &record.completion) {
                (TurnStatus::Completed, Some(c)) => {
                    TurnOutcome::Completed(completion_for_plugin(c, record.usage.as_ref()))
                }
                _ => TurnOutcome::Failed(record.error.clone().unwrap_or_default()),
            };
            let failed = matches!(outcome, TurnOutcome::Failed(_));
            shared.keep(record, counting);
            ready = Instant::now();
            if failed {
                // As in the edge run, a failed turn ends its trajectory.
                shared.failed.fetch_add(1, Ordering::SeqCst);
                break;
            }
            match shared
                .workload
                .lock()
                .expect("workload lock")
                .next_turn(&session, &outcome)
            {
                Ok(Some(req)) => next = Some(req),
                Ok(None) => {
                    shared.completed[i].fetch_add(1, Ordering::SeqCst);
                    shared.check_end_rules();
                }
                Err(e) => {
                    crate::log::line(&format!("sweep: session {session}: {e}"));
                    shared.failed.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    }
}
