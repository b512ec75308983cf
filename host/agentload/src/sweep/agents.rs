//! One sweep phase: `level` simulated agents, each working through its
//! trajectories one after another (closed loop, tool delays before tool
//! turns), until the phase's end rules hold. Each trajectory is a session
//! of the one turn engine; the sweep adds its hooks (salts, the token cap,
//! drawn delays) and its end rules. A shard runs agents `a ≡ index (mod
//! count)` of the level (agent `a`'s trajectories are the same on any
//! shard), holds its share of `min_trajectories`, and keeps its agents going
//! until every shard's end rules hold (the phase-end barrier).

use super::{delays, salt, Barriers, PhaseInput};
use agentload_config::{SweepConfig, ToolDelayMode};
use agentload_engine::{
    drive_or_restart, Engine, PhaseError, SessionEnd, SessionOutcome, SessionTask, StopReason,
    TurnFacts, TurnHooks, TurnRecord,
};
use agentload_plugin_host::SessionPlan;
use agentload_plugin_host::TurnRequest;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What a phase at a level of agents needs.
pub struct AgentsInput {
    /// What every phase needs: its `plan` is the recycling list (agent `i`'s `j`-th
    /// trajectory is `plan[i + j·level]`).
    pub phase: PhaseInput,
    /// Concurrent agents.
    pub level: usize,
    /// The agents this process runs (all of the level, or a shard's `a mod N`).
    pub agents: Vec<usize>,
    /// Trajectories this process's end rules ask for (its share of `min_trajectories`).
    pub wanted: u32,
}

/// How a phase went (a process's, or the shards' merged).
pub struct PhaseRun {
    /// Every turn's facts (the records are in the phase's `turns.jsonl`).
    pub facts: Vec<TurnFacts>,
    pub sessions: Vec<SessionOutcome>,
    /// When the last agent issued its first request (ns after the phase start; open loop:
    /// when the ramp ended).
    pub all_active_ns: Option<u64>,
    /// When this process's end rules held (on shards: before every shard's did), ns after
    /// the start.
    pub rules_held_ns: Option<u64>,
    /// When the end rules held (on shards: on every shard; or the phase was cut), ns after
    /// the start.
    pub stopped_ns: u64,
    /// When the last in-flight turn finished.
    pub drained_ns: u64,
    pub end_reason: String,
    /// Trajectories completed, in all and by the agent with the fewest.
    pub completed: u32,
    pub min_per_agent: u32,
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
    /// Notified once `all_active_ns` is set.
    all_active_set: tokio::sync::Notify,
}

const UNSET: u64 = u64::MAX;

impl SweepHooks {
    /// When the last agent issued its first request (ns after the phase
    /// start), once it has.
    fn all_active(&self) -> Option<u64> {
        let ns = self.all_active_ns.load(Ordering::SeqCst);
        (ns != UNSET).then_some(ns)
    }
}

/// The sweep's changes to a request of phase `index` (the tool delay, the salt, the token
/// cap), and its delay.
pub(super) fn shape(config: &SweepConfig, index: usize, req: &mut TurnRequest) -> Duration {
    let delay_ms = match config.tool_delay {
        ToolDelayMode::Recorded => req.delay_ms,
        ToolDelayMode::Distribution => delays::draw(config, index, req),
        ToolDelayMode::None => 0,
    };
    if config.salt {
        let s = salt::salt(config.seed, index, &req.session_id);
        salt::apply(req, &s);
    }
    let cap = config.max_tokens;
    let capped = |own: Option<u32>| match own {
        Some(own) if config.keep_workload_max_tokens => own.min(cap),
        _ => cap,
    };
    match (req.sampling.max_tokens, req.sampling.max_completion_tokens) {
        // A workload that sends `max_tokens` (AA's replays) keeps that key: the
        // cap applies to it, and no second limit is added.
        (Some(own), None) => req.sampling.max_tokens = Some(capped(Some(own))),
        (_, own) => req.sampling.max_completion_tokens = Some(capped(own)),
    }
    Duration::from_millis(delay_ms)
}

impl TurnHooks for SweepHooks {
    fn shape(&self, req: &mut TurnRequest) -> Duration {
        shape(&self.config, self.index, req)
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
            self.all_active_set.notify_one();
        }
    }
}

struct Shared {
    config: SweepConfig,
    index: usize,
    level: usize,
    agents: Vec<usize>,
    wanted: u32,
    end: Option<Arc<dyn Barriers>>,
    /// The end rules held here: the barrier is being waited at.
    arriving: AtomicBool,
    /// When they first held (ns after the start; [`UNSET`] before).
    rules_held_ns: AtomicU64,
    plan: Vec<SessionPlan>,
    engine: Arc<Engine>,
    /// By agent (of the whole level; this process's are counted).
    completed: Vec<AtomicU32>,
    cut: AtomicU32,
    failed: AtomicU32,
    sessions: Mutex<Vec<SessionOutcome>>,
    error: Mutex<Option<PhaseError>>,
}

/// Runs one phase to its end rules (see [`SweepConfig`]); returns it and its workload.
pub async fn run(
    config: &SweepConfig,
    input: AgentsInput,
) -> Result<(PhaseRun, agentload_plugin_host::WorkloadPlugin), PhaseError> {
    let started = input.phase.sender.origin;
    let (index, end) = (input.phase.index, input.phase.end.clone());
    let hooks = Arc::new(SweepHooks {
        config: config.clone(),
        index,
        level: input.agents.len() as u32,
        active: (0..input.level).map(|_| AtomicBool::new(false)).collect(),
        n_active: AtomicU32::new(0),
        all_active_ns: AtomicU64::new(UNSET),
        all_active_set: tokio::sync::Notify::new(),
    });
    let stop = input.phase.stop.clone();
    let (engine, plan) = input.phase.into_engine(Box::new(hooks.clone()));
    let shared = Arc::new(Shared {
        config: config.clone(),
        index,
        level: input.level,
        agents: input.agents.clone(),
        wanted: input.wanted,
        end: end.clone(),
        arriving: AtomicBool::new(false),
        rules_held_ns: AtomicU64::new(UNSET),
        plan,
        engine: Arc::new(engine),
        completed: (0..input.level).map(|_| AtomicU32::new(0)).collect(),
        cut: AtomicU32::new(0),
        failed: AtomicU32::new(0),
        sessions: Mutex::default(),
        error: Mutex::default(),
    });
    let mut agents = tokio::task::JoinSet::new();
    for i in input.agents.iter().copied() {
        let (shared, hooks) = (shared.clone(), hooks.clone());
        agents.spawn(async move { agent(&shared, &hooks, i).await });
    }
    // The monitor wakes at the phase's time cap and when steady state has
    // lasted long enough, nothing in between: the count rules are checked by
    // the agents as they complete trajectories.
    let cap_at = started + Duration::from_secs_f64(config.max_phase_s);
    loop {
        let steady_at = shared
            .steady_end(&hooks, started)
            .filter(|&at| at > Instant::now());
        let wake = steady_at.map_or(cap_at, |at| at.min(cap_at));
        tokio::select! {
            joined = agents.join_next() => match joined {
                None => break,
                Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Some(_) => {}
            },
            // Steady state's start is known once the last agent is active.
            () = hooks.all_active_set.notified(), if hooks.all_active().is_none() => {}
            () = tokio::time::sleep_until(wake.into()), if !stop.stopped() => {
                if Instant::now() >= cap_at {
                    super::cut(&stop, config.max_phase_s);
                } else {
                    shared.check_end_rules(&hooks, started);
                }
            }
        }
    }
    super::arrive(end.as_ref(), index).await;
    let drained = Instant::now();
    let shared = Arc::try_unwrap(shared).unwrap_or_else(|_| unreachable!("agents joined"));
    if let Some(e) = shared.error.into_inner().expect("error lock") {
        return Err(e);
    }
    let (end_reason, stopped_at) = stop.reason().map_or_else(
        || {
            let why = if input.agents.is_empty() {
                "no agent of this level on this shard"
            } else {
                "every agent ran out of planned trajectories \
                 (raise sweep.max_trajectories_per_agent)"
            };
            (why.to_owned(), drained)
        },
        |(reason, at)| (reason.to_string(), at),
    );
    let engine = Arc::try_unwrap(shared.engine).unwrap_or_else(|_| unreachable!("agents joined"));
    let (facts, _) = engine.recorder.finish()?;
    let ns = |t: Instant| t.saturating_duration_since(started).as_nanos() as u64;
    let all_active = hooks.all_active();
    let per_agent: Vec<u32> = input
        .agents
        .iter()
        .map(|&a| shared.completed[a].load(Ordering::SeqCst))
        .collect();
    let run = PhaseRun {
        facts,
        sessions: shared.sessions.into_inner().expect("sessions lock"),
        all_active_ns: all_active,
        stopped_ns: ns(stopped_at),
        drained_ns: ns(drained),
        rules_held_ns: Some(shared.rules_held_ns.load(Ordering::SeqCst)).filter(|&n| n != UNSET),
        end_reason,
        completed: per_agent.iter().sum(),
        min_per_agent: per_agent.iter().copied().min().unwrap_or(0),
        trajectories_cut: shared.cut.load(Ordering::SeqCst),
        trajectories_failed: shared.failed.load(Ordering::SeqCst),
    };
    Ok((run, engine.workload.into_first()))
}

impl Shared {
    /// Stops the phase when its end rules hold: at once, or (shards) when they hold on
    /// every shard, the agents going on meanwhile.
    fn check_end_rules(&self, hooks: &SweepHooks, started: Instant) {
        let stop = &self.engine.stop;
        let now = Instant::now();
        if stop.stopped() || !self.end_rules_hold(hooks, started, now) {
            return;
        }
        let held = now.saturating_duration_since(started).as_nanos() as u64;
        let _ =
            self.rules_held_ns
                .compare_exchange(UNSET, held, Ordering::SeqCst, Ordering::SeqCst);
        let Some(end) = &self.end else {
            stop.stop(StopReason::Done("end rules met".to_owned()));
            return;
        };
        if self.arriving.swap(true, Ordering::SeqCst) {
            return;
        }
        let (end, stop, index) = (end.clone(), stop.clone(), self.index);
        tokio::spawn(async move { super::stop_with_shards(&stop, end.end(index).await).await });
    }

    /// When `steady_state_s` of steady state (after the warm-up) will be
    /// behind us; unknown until every agent is active.
    fn steady_end(&self, hooks: &SweepHooks, started: Instant) -> Option<Instant> {
        let all_active = hooks.all_active()?;
        Some(
            started
                + Duration::from_nanos(all_active)
                + Duration::from_secs_f64(self.config.warmup_s)
                + Duration::from_secs_f64(self.config.steady_state_s),
        )
    }

    /// At least `min_trajectories` completed, every agent at least
    /// `min_per_agent`, and `steady_state_s` of steady state behind us.
    fn end_rules_hold(&self, hooks: &SweepHooks, started: Instant, now: Instant) -> bool {
        let Some(steady_end) = self.steady_end(hooks, started) else {
            return false;
        };
        let per_agent: Vec<u32> = self
            .agents
            .iter()
            .map(|&a| self.completed[a].load(Ordering::SeqCst))
            .collect();
        per_agent.iter().sum::<u32>() >= self.wanted
            && per_agent.iter().all(|&c| c >= self.config.min_per_agent)
            && now >= steady_end
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
        let task = SessionTask::fresh(plan.clone(), Some(i as u32));
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
