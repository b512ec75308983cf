//! One sweep phase: `level` simulated agents, each working through its
//! trajectories one after another (closed loop, tool delays before tool
//! turns), until the phase's end rules hold. Each trajectory is a session
//! of the one turn engine; the sweep adds its hooks (salts, the token cap,
//! drawn delays) and its end rules.

use super::{delays, salt};
use agentload_config::{SweepConfig, ToolDelayMode};
use agentload_engine::{
    drive_or_restart, ContextWindow, Engine, Instances, Recorder, SessionEnd, SessionOutcome,
    SessionTask, Stop, StopReason, TurnFacts, TurnHooks, TurnRecord, TurnSender, WriteError,
};
use agentload_plugin_host::TurnRequest;
use agentload_plugin_host::{SessionPlan, WorkloadPlugin};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a phase needs.
pub struct PhaseInput {
    /// 0-based phase number (keys the salts and delay draws).
    pub index: usize,
    /// Concurrent agents.
    pub level: usize,
    /// The recycling list: agent `i`'s `j`-th trajectory is `plan[i + j·level]`.
    pub plan: Vec<SessionPlan>,
    /// The workload, configured for this phase, on its instances.
    pub workload: Instances,
    pub sender: TurnSender,
    pub recorder: Recorder,
    /// The phase's stop (a child of the run's).
    pub stop: Stop,
    /// Live-reply replay (`history = "live"`), and its context pre-check.
    pub live: bool,
    pub context: Option<ContextWindow>,
}

/// How a phase went.
pub struct PhaseRun {
    /// Every turn's facts (the records are in the phase's `turns.jsonl`).
    pub facts: Vec<TurnFacts>,
    /// The session ids `facts` number.
    pub session_ids: Vec<String>,
    pub sessions: Vec<SessionOutcome>,
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
    /// Trajectories that ended with a failed turn or a workload error.
    pub trajectories_failed: u32,
}

/// The sweep's additions to every turn.
struct SweepHooks {
    config: SweepConfig,
    index: usize,
    level: u32,
    active: Vec<AtomicBool>,
    n_active: AtomicU32,
    all_active_ns: AtomicU64,
}

const UNSET: u64 = u64::MAX;

impl TurnHooks for SweepHooks {
    fn shape(&self, req: &mut TurnRequest) -> Duration {
        let delay_ms = match self.config.tool_delay {
            ToolDelayMode::Recorded => req.delay_ms,
            ToolDelayMode::Distribution => delays::draw(&self.config, self.index, req),
            ToolDelayMode::None => 0,
        };
        if self.config.salt {
            let s = salt::salt(self.config.seed, self.index, &req.session_id);
            salt::apply(req, &s);
        }
        let cap = self.config.max_tokens;
        req.sampling.max_completion_tokens = Some(match req.sampling.max_completion_tokens {
            Some(own) if self.config.keep_workload_max_tokens => own.min(cap),
            _ => cap,
        });
        Duration::from_millis(delay_ms)
    }

    fn answered(&self, _req: &TurnRequest, record: &TurnRecord) {
        let Some(agent) = record.agent.and_then(|a| self.active.get(a as usize)) else {
            return;
        };
        if !agent.swap(true, Ordering::SeqCst)
            && self.n_active.fetch_add(1, Ordering::SeqCst) + 1 == self.level
        {
            self.all_active_ns
                .store(record.issued_ns.unwrap_or_default(), Ordering::SeqCst);
        }
    }
}

struct Shared {
    config: SweepConfig,
    level: usize,
    plan: Vec<SessionPlan>,
    engine: Arc<Engine>,
    completed: Vec<AtomicU32>,
    cut: AtomicU32,
    failed: AtomicU32,
    sessions: Mutex<Vec<SessionOutcome>>,
    error: Mutex<Option<WriteError>>,
}

/// Runs one phase to its end rules (see [`SweepConfig`]).
pub async fn run(config: &SweepConfig, input: PhaseInput) -> Result<PhaseRun, WriteError> {
    let started = input.sender.origin;
    let hooks = Arc::new(SweepHooks {
        config: config.clone(),
        index: input.index,
        level: input.level as u32,
        active: (0..input.level).map(|_| AtomicBool::new(false)).collect(),
        n_active: AtomicU32::new(0),
        all_active_ns: AtomicU64::new(UNSET),
    });
    let stop = input.stop.clone();
    let shared = Arc::new(Shared {
        config: config.clone(),
        level: input.level,
        plan: input.plan,
        engine: Arc::new(Engine {
            workload: input.workload,
            sender: input.sender,
            recorder: input.recorder,
            stop: input.stop,
            hooks: Box::new(hooks.clone()),
            live: input.live,
            context: input.context,
            twins: None,
        }),
        completed: (0..input.level).map(|_| AtomicU32::new(0)).collect(),
        cut: AtomicU32::new(0),
        failed: AtomicU32::new(0),
        sessions: Mutex::default(),
        error: Mutex::default(),
    });
    let agents: Vec<_> = (0..input.level)
        .map(|i| {
            let (shared, hooks) = (shared.clone(), hooks.clone());
            tokio::spawn(async move { agent(&shared, &hooks, i).await })
        })
        .collect();
    // The monitor: the time-based end rule, or the time cap. Agents also
    // check the rules each time they complete a trajectory.
    let cap = Duration::from_secs_f64(config.max_phase_s);
    while !agents.iter().all(tokio::task::JoinHandle::is_finished) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        if started.elapsed() >= cap {
            stop.stop(StopReason::Done(format!(
                "cut at max_phase_s = {} s before the end rules held",
                config.max_phase_s
            )));
        } else {
            shared.check_end_rules(&hooks, started);
        }
    }
    for a in agents {
        a.await.expect("agent task panicked");
    }
    let drained = Instant::now();
    let shared = Arc::try_unwrap(shared).unwrap_or_else(|_| unreachable!("agents joined"));
    if let Some(e) = shared.error.into_inner().expect("error lock") {
        return Err(e);
    }
    let (end_reason, stopped_at) = stop.reason().map_or_else(
        || {
            (
                "every agent ran out of planned trajectories \
                 (raise sweep.max_trajectories_per_agent)"
                    .to_owned(),
                drained,
            )
        },
        |(reason, at)| (reason.to_string(), at),
    );
    let engine = Arc::try_unwrap(shared.engine).unwrap_or_else(|_| unreachable!("agents joined"));
    let kept = engine.recorder.finish_facts()?;
    let ns = |t: Instant| t.saturating_duration_since(started).as_nanos() as u64;
    let all_active = hooks.all_active_ns.load(Ordering::SeqCst);
    Ok(PhaseRun {
        facts: kept.turns,
        session_ids: kept.sessions,
        sessions: shared.sessions.into_inner().expect("sessions lock"),
        workload: engine.workload.into_first(),
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
    })
}

impl Shared {
    /// Stops the phase when its end rules hold.
    fn check_end_rules(&self, hooks: &SweepHooks, started: Instant) {
        if !self.engine.stop.stopped() && self.end_rules_hold(hooks, started, Instant::now()) {
            self.engine
                .stop
                .stop(StopReason::Done("end rules met".to_owned()));
        }
    }

    /// At least `min_trajectories` completed, every agent at least
    /// `min_per_agent`, and `steady_state_s` of steady state behind us.
    fn end_rules_hold(&self, hooks: &SweepHooks, started: Instant, now: Instant) -> bool {
        let all_active = hooks.all_active_ns.load(Ordering::SeqCst);
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
}

/// Agent `i`: trajectory after trajectory until the phase stops.
async fn agent(shared: &Shared, hooks: &SweepHooks, i: usize) {
    let engine = &shared.engine;
    for j in 0.. {
        let Some(plan) = shared.plan.get(i + j * shared.level) else {
            return;
        };
        if engine.stop.stopped() {
            return;
        }
        let task = SessionTask {
            plan: plan.clone(),
            agent: Some(i as u32),
            history: Vec::new(),
        };
        let outcome = match drive_or_restart(engine, task).await {
            Ok(outcome) => outcome,
            Err(e) => {
                engine.stop.stop(StopReason::Fatal(e.to_string()));
                shared.error.lock().expect("error lock").get_or_insert(e);
                return;
            }
        };
        let ended = outcome.ended;
        shared.sessions.lock().expect("sessions lock").push(outcome);
        match ended {
            SessionEnd::Finished => {
                shared.completed[i].fetch_add(1, Ordering::SeqCst);
                shared.check_end_rules(hooks, engine.sender.origin);
            }
            SessionEnd::Failed | SessionEnd::PluginError | SessionEnd::Diverged => {
                shared.failed.fetch_add(1, Ordering::SeqCst);
            }
            SessionEnd::Stopped | SessionEnd::Interrupted => {
                shared.cut.fetch_add(1, Ordering::SeqCst);
                return;
            }
        }
    }
}
