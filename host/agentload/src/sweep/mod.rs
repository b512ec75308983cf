//! The sweeps (AA-AgentPerf, MLPerf datacenter agentic, capacity planning): the
//! performance phase's workload at each level, one phase per level, each ended by its
//! rules and measured over its steady state; then the Pareto frontier and the SLO table.
//! A level is a number of concurrent agents (`levels`, closed loop: [`agents`]) or an
//! arrival rate (`rates`, open loop: [`rates`]). Results go to `OUT/sweep/`
//! (`summary.json`, `pareto.json`, one folder of turn logs per phase).
//!
//! The sweep sets two of the workload's settings per phase (coding-replay's and
//! agentic-synth's keys): `num_trajectories_to_issue` (the deterministic recycling list:
//! levels × `max_trajectories_per_agent`, or the sessions a rate level can start) and
//! `inject_tool_delay` (on for `tool_delay = "recorded"`); salts, distribution-drawn
//! delays and the `max_tokens` cap are applied by the host.
//!
//! On shards ([`ShardSweep`]) every phase starts at the coordinator's barrier, each shard
//! runs its slice (agents `a mod N`, or arrivals `k mod N` of the one schedule), keeps it
//! going until every shard's end rules hold, and uploads its phase folders; shard 0 merges
//! them ([`crate::shards::sweep`]) with the same summary code, so every percentile is an
//! order statistic over the union.

pub mod agents;
pub mod delays;
pub mod frontier;
pub mod metrics;
pub mod rates;
pub mod salt;

pub use agentload_config::SweepConfig;

use agentload_config::FailedTurn;
use agentload_config::ToolDelayMode;
use agentload_config::{table_json, PhaseConfig, RunConfig};
use agentload_config::{SessionSlo, TokenSource};
use agentload_engine::arrivals::OpenLoop;
use agentload_engine::tokens::LocalCounter;
use agentload_engine::{
    Console, ContextWindow, Engine, Instances, LogFiles, Recorder, Stop, StopReason, TurnHooks,
    TurnSender,
};
use agentload_plugin_host::types::{GrantedFile, PluginConfig};
use agentload_plugin_host::{SessionPlan, WorkloadPlugin};
use agentload_results::arrivals::{ArrivalsSummary, Dispatch};
use agentload_results::live::LiveSummary;
use agentload_results::metrics::Definition;
use agentload_results::sessions::{Ends, SessionTurn, SessionsSummary};
use agentload_telemetry::{PhaseTokens, Telemetry, TelemetrySummary};
use anyhow::{Context as _, Result};
use frontier::{LevelResult, Normalized, Point, SloResult};
use metrics::PhaseMetrics;
use serde::Serialize;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

/// One phase's load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Level {
    /// Concurrent agents (closed loop).
    Agents(usize),
    /// Arrivals per second (open loop).
    Rate(f64),
}

impl Level {
    /// Every level of `sweep`, in order.
    pub fn all(sweep: &SweepConfig) -> Vec<Level> {
        if sweep.rates.is_empty() {
            sweep.levels.iter().map(|&l| Level::Agents(l)).collect()
        } else {
            sweep.rates.iter().map(|&r| Level::Rate(r)).collect()
        }
    }

    /// `c16` or `r2.5`: in folder names and lines.
    pub fn label(&self) -> String {
        match self {
            Level::Agents(n) => format!("c{n}"),
            Level::Rate(r) => format!("r{r}"),
        }
    }
}

/// The phase folder of phase `index` at `level`, in `sweep/`.
pub fn folder(index: usize, level: Level) -> String {
    format!("phase-{index:02}-{}", level.label())
}

/// A boxed future (a barrier's answer).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A sharded sweep's barriers: the coordinator's, through the shard's link.
pub trait Barriers: Send + Sync {
    /// Phase `index`'s start: when it starts, on this process's clock.
    fn start(&self, index: usize) -> BoxFuture<'_, Result<Instant, String>>;
    /// Phase `index`'s end: arrives (again: the same arrival) and returns when every shard
    /// stops, on this process's clock.
    fn end(&self, index: usize) -> BoxFuture<'_, Result<Instant, String>>;
}

/// This process's part of a sharded sweep.
#[derive(Clone)]
pub struct ShardSweep {
    pub index: u32,
    pub count: u32,
    pub barriers: Arc<dyn Barriers>,
}

impl ShardSweep {
    fn owns(&self, k: usize) -> bool {
        k % self.count as usize == self.index as usize
    }

    /// This shard's share of `total` (as slots are split: the first `total mod N` one more).
    fn share(&self, total: u32) -> u32 {
        let n = self.count;
        total / n + u32::from(self.index < total % n)
    }

    /// This shard's share of `min_trajectories` at a level of `agents`: split over the
    /// shards that run any of them (agents `a mod N`: shards `0..min(agents, N)`), so the
    /// union still asks for all of it when the level has fewer agents than shards.
    fn share_of_agents(&self, total: u32, agents: usize) -> u32 {
        let k = (agents.min(self.count as usize) as u32).max(1);
        match self.index < k {
            true => total / k + u32::from(self.index < total % k),
            false => 0,
        }
    }
}

/// One phase in `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseSummary {
    pub index: usize,
    /// Concurrent agents (0 in a rate phase).
    pub level: usize,
    /// Arrivals per second (a rate phase).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    pub end_reason: String,
    pub wall_s: f64,
    /// When every agent was active (a rate phase: when its ramp ended), s after the phase
    /// start.
    pub all_active_s: Option<f64>,
    /// When this process's end rules held, s after the phase start (on shards: this
    /// shard's, before every shard's had; the merged phase: when the last shard's did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rules_held_s: Option<f64>,
    pub stopped_s: f64,
    pub requests: usize,
    pub trajectories_completed: u32,
    pub min_trajectories_per_agent: u32,
    pub trajectories_cut: u32,
    pub trajectories_failed: u32,
    #[serde(flatten)]
    pub metrics: PhaseMetrics,
    /// The phase's sessions together (each agent's trajectories; a
    /// trajectory cut at the phase's end ended `stopped`).
    pub sessions: SessionsSummary,
    /// A rate phase's arrivals: configured against delivered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals: Option<ArrivalsSummary>,
    /// The `[[sweep.slo]]` tiers the phase meets (a phase whose arrivals were delivered
    /// lighter than its schedule meets none).
    pub meets_slo: Vec<String>,
    /// Server and accelerator telemetry (`[telemetry]`, the power command).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetrySummary>,
    /// Throughput per accelerator, per MW of measured power (over the
    /// steady-state window) and per rental dollar.
    pub normalized: Normalized,
    /// The harness's own CPU time in the phase (a sharded phase's: every shard's), and
    /// per request.
    pub harness_cpu_s: Option<f64>,
    pub harness_cpu_ms_per_request: Option<f64>,
    /// The phase's turn log, relative to `sweep/`.
    pub turns: String,
    /// Live-reply replay: the phase's divergence funnel (all its turns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveSummary>,
}

impl PhaseSummary {
    /// Its level.
    pub fn level(&self) -> Level {
        match self.rate {
            Some(r) => Level::Rate(r),
            None => Level::Agents(self.level),
        }
    }
}

/// The label of a live-reply sweep (`live` in `summary.json` and
/// `pareto.json`): never official.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct LiveLabel {
    /// Always `live`.
    pub history: String,
    /// Always false.
    pub official: bool,
}

impl LiveLabel {
    /// The label, for a sweep whose history is live.
    pub fn of(live: bool) -> Option<Self> {
        live.then(|| Self {
            history: "live".into(),
            official: false,
        })
    }
}

/// `sweep/summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct SweepSummary {
    pub run: String,
    /// Live-reply replay: the sweep is not official.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveLabel>,
    pub config: SweepConfig,
    pub phases: Vec<PhaseSummary>,
    pub slo: Vec<SloResult>,
}

/// `sweep/pareto.json`.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ParetoFile {
    /// The interactivity definition the frontier is over (older files:
    /// AA's P25 speed).
    #[serde(default)]
    pub x: Definition,
    /// Live-reply replay: these points are not official.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveLabel>,
    pub points: Vec<Point>,
    pub frontier: Vec<Point>,
}

/// What the sweep needs from the run.
pub struct SweepInput<'a> {
    pub config: &'a RunConfig,
    pub sweep: &'a SweepConfig,
    pub phase: &'a PhaseConfig,
    pub workload: WorkloadPlugin,
    pub files: Vec<GrantedFile>,
    pub counter: Option<Arc<LocalCounter>>,
    pub out: PathBuf,
    pub quiet: bool,
    /// The run's stop: a signal ends the phase in progress.
    pub stop: &'a Stop,
    /// The run's telemetry, sampled during each phase.
    pub telemetry: Option<&'a Telemetry>,
    /// This process's part of a sharded sweep.
    pub shard: Option<ShardSweep>,
}

/// What a phase needs at either kind of level; [`agents::AgentsInput`] and
/// [`rates::RateInput`] add their level's own part.
pub struct PhaseInput {
    /// 0-based phase number (keys the salts, the delay draws and a rate level's schedule).
    pub index: usize,
    /// The sessions the phase can start: agent `i`'s `j`-th trajectory is
    /// `plan[i + j·level]`; a rate level's arrival `k` starts `plan[k]`.
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
    /// What follows a failed turn (`load.failed_turn`).
    pub failed_turn: FailedTurn,
    /// The shards' phase-end barrier.
    pub end: Option<Arc<dyn Barriers>>,
}

impl PhaseInput {
    /// The engine of the phase's sessions, with the sweep's `hooks`; and the phase's plan.
    fn into_engine(self, hooks: Box<dyn TurnHooks>) -> (Engine, Vec<SessionPlan>) {
        let engine = Engine {
            workload: self.workload,
            sender: self.sender,
            recorder: self.recorder,
            stop: self.stop,
            hooks,
            live: self.live,
            context: self.context,
            twins: None,
            failed_turn: self.failed_turn,
            closed: None,
        };
        (engine, self.plan)
    }
}

/// Stops a sharded phase once every shard's end rules held: at the instant the
/// coordinator set (`met`), or at once with the barrier's error.
async fn stop_with_shards(stop: &Stop, met: Result<Instant, String>) {
    match met {
        Ok(at) => {
            tokio::time::sleep_until(at.into()).await;
            stop.stop(StopReason::Done("end rules met on every shard".to_owned()));
        }
        Err(why) => stop.stop(StopReason::Fatal(why)),
    }
}

/// Cuts a phase at its time cap, `max_phase_s`, before its end rules held.
fn cut(stop: &Stop, max_phase_s: f64) {
    stop.stop(StopReason::Done(format!(
        "cut at max_phase_s = {max_phase_s} s before the end rules held"
    )));
}

/// Every shard comes to the phase-end barrier, however its phase ended (a second arrival
/// is the first's): the others are waiting there.
async fn arrive(end: Option<&Arc<dyn Barriers>>, index: usize) {
    if let Some(end) = end {
        let _ = end.end(index).await;
    }
}

/// Sessions a rate level plans: enough arrivals for the ramp, the warm-up and the steady
/// state with half again to spare (and at least 100), never more than `max_phase_s` holds.
pub fn planned_for_rate(config: &RunConfig, sweep: &SweepConfig, rate: f64) -> u64 {
    let ramp = config.load.ramp.map_or(0.0, |r| r.duration_s);
    let horizon = ((ramp + sweep.warmup_s + sweep.steady_state_s) * 1.5).min(sweep.max_phase_s);
    ((rate * horizon).ceil() as u64)
        .max(100)
        .min((rate * sweep.max_phase_s).ceil().max(1.0) as u64)
}

/// What a phase ran: its records and its ends, from this process or the shards merged.
pub struct Ran {
    pub run: agents::PhaseRun,
    pub wall_s: f64,
    pub cpu_s: Option<f64>,
    pub telemetry: Option<TelemetrySummary>,
    /// A rate phase's dispatch (the shards': added up).
    pub dispatch: Option<Dispatch>,
}

/// Runs every level and writes the sweep's result files.
pub async fn run(input: SweepInput<'_>) -> Result<SweepSummary> {
    let SweepInput {
        config,
        sweep,
        phase,
        mut workload,
        files,
        counter,
        out,
        quiet,
        stop,
        telemetry,
        shard,
    } = input;
    let dir = out.join("sweep");
    // Everything goes under the results directory, never through a link there.
    let results = agentload_fs::OutDir::new(&out);
    results
        .create_dir("sweep")
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let live = phase.live_history();
    if let (Some(s), Some(cap)) = (&shard, config.load.arrivals.as_ref().and_then(|a| a.cap())) {
        anyhow::ensure!(
            cap >= s.count as usize || sweep.rates.is_empty(),
            "load.arrivals.max_in_flight = {cap} cannot be split over {} shards: every shard \
             needs at least one",
            s.count
        );
    }
    let mut phases = Vec::new();
    for (index, level) in Level::all(sweep).into_iter().enumerate() {
        if stop.stopped() {
            break;
        }
        let planned = match level {
            Level::Agents(n) => u64::from(sweep.max_trajectories_per_agent) * n as u64,
            Level::Rate(r) => planned_for_rate(config, sweep, r),
        };
        let mut settings = phase.settings.clone();
        settings.insert(
            "num_trajectories_to_issue".into(),
            toml::Value::Integer(planned as i64),
        );
        settings.insert(
            "inject_tool_delay".into(),
            toml::Value::Boolean(sweep.tool_delay == ToolDelayMode::Recorded),
        );
        let plan = workload
            .configure(PluginConfig {
                settings_json: table_json(&settings),
                files: files.clone(),
                // A fresh one per phase: no prompt cache carries over.
                nonce: crate::run_state::draw_nonce(),
            })
            .await?;
        let instances = config.plugins.workload_instances.unwrap_or(1);
        let instances = Instances::pool(workload, instances).await?;
        let folder = folder(index, level);
        let phase_dir = Path::new("sweep").join(&folder);
        results.create_dir(&phase_dir)?;
        let recorder = Recorder::open(
            LogFiles {
                out: results.clone(),
                turns: &phase_dir.join("turns.jsonl"),
                durability: config.output.durability,
                append: false,
            },
            agentload_engine::PriorTurns::default(),
            counter.clone(),
            Console::new(
                &format!("sweep phase {index} ({})", level.label()),
                None,
                quiet,
            ),
        )?;
        // This process's agents, or its arrivals' cap share.
        let agent_ids: Vec<usize> = match level {
            Level::Agents(n) => (0..n)
                .filter(|&a| shard.as_ref().is_none_or(|s| s.owns(a)))
                .collect(),
            Level::Rate(_) => Vec::new(),
        };
        let arrivals = config
            .load
            .arrivals
            .clone()
            .unwrap_or_else(default_arrivals);
        let cap = arrivals.cap().map(|c| match &shard {
            Some(s) => s.share(c as u32) as usize,
            None => c,
        });
        let connections = match level {
            Level::Agents(_) => agent_ids.len().max(1),
            Level::Rate(_) => cap.unwrap_or(planned as usize).clamp(1, 1024),
        };
        let (client, body) = crate::endpoint::client_for(config, connections)?;
        if let Err(e) = client.warm_up(connections).await {
            agentload_console::line(&format!("warning: {e}"));
        }
        if !quiet {
            let what = match level {
                Level::Agents(n) => format!("{n} agents"),
                Level::Rate(r) => format!(
                    "{} arrivals of {} at {r}/s",
                    arrivals.process.name(),
                    crate::open_loop::unit_name(arrivals.of)
                ),
            };
            agentload_console::line(&format!(
                "sweep phase {index}: {what} against {}",
                config.endpoint.url
            ));
        }
        let started = match &shard {
            Some(s) => s
                .barriers
                .start(index)
                .await
                .map_err(|e| anyhow::anyhow!("sweep phase {index}: {e}"))?,
            None => Instant::now(),
        };
        let sampling = match telemetry {
            Some(t) => Some(
                t.start(
                    started,
                    &results,
                    &phase_dir.join("telemetry.jsonl"),
                    "telemetry.jsonl",
                    0,
                )
                .await?,
            ),
            None => None,
        };
        let cpu_before = cpu_seconds();
        let sender = TurnSender {
            client,
            body,
            origin: started,
            segment: 0,
        };
        let context = crate::context::context_window(config, live, counter.as_ref()).await?;
        let input = PhaseInput {
            index,
            plan,
            workload: instances,
            sender,
            recorder,
            stop: stop.child(),
            live,
            context,
            failed_turn: config.load.failed_turn,
            end: shard.as_ref().map(|s| s.barriers.clone()),
        };
        let (run, dispatch, back) = match level {
            Level::Agents(n) => {
                let wanted = match &shard {
                    Some(s) => s.share_of_agents(sweep.min_trajectories, n),
                    None => sweep.min_trajectories,
                };
                let level = agents::AgentsInput {
                    phase: input,
                    level: n,
                    agents: agent_ids,
                    wanted,
                };
                let (run, back) = agents::run(sweep, level).await?;
                (run, None, back)
            }
            Level::Rate(r) => {
                let level = rates::RateInput {
                    phase: input,
                    spec: crate::open_loop::spec(&arrivals, r, config.load.ramp.as_ref())
                        .for_level(index),
                    open: OpenLoop {
                        cap,
                        one_turn: arrivals.of == agentload_config::ArrivalUnit::Requests,
                        finished: None,
                    },
                    slice: shard.as_ref().map(|s| (s.index, s.count)),
                };
                let (run, dispatch, back) = rates::run(sweep, level).await?;
                (run, Some(dispatch), back)
            }
        };
        workload = back;
        let wall_s = started.elapsed().as_secs_f64();
        let cpu_s = cpu_before.zip(cpu_seconds()).map(|(a, b)| b - a);
        let telemetry = match sampling {
            Some(s) => {
                let window = metrics::measure(&run, sweep.warmup_s)
                    .window
                    .map(|w| (w.start_ns, w.end_ns));
                let mut summary = s.finish(window).await;
                summary.account(phase_tokens(&run.facts));
                Some(summary)
            }
            None => None,
        };
        let summary = summarize(
            config,
            sweep,
            index,
            level,
            Ran {
                run,
                wall_s,
                cpu_s,
                telemetry,
                dispatch,
            },
        );
        if !quiet {
            agentload_console::line(&phase_line(&summary));
            if let Some(t) = &summary.telemetry {
                agentload_console::line(&format!("  {} {}", level.label(), t.line()));
            }
            if let Some(a) = &summary.arrivals {
                for why in &a.behind {
                    agentload_console::line(&format!(
                        "warning: {} behind schedule: {why}",
                        level.label()
                    ));
                }
            }
        }
        results.write_json(phase_dir.join("summary.json"), &summary)?;
        phases.push(summary);
    }
    finish(config, sweep, &results, phases, live)
}

/// `[load.arrivals]` of a rate sweep without one: Poisson arrivals of sessions.
fn default_arrivals() -> agentload_config::Arrivals {
    agentload_config::Arrivals {
        of: agentload_config::ArrivalUnit::Sessions,
        process: agentload_config::Process::Poisson,
        rate: None,
        cv: None,
        seed: 1,
        count: None,
        max_in_flight: None,
        time_scale: 1.0,
    }
}

/// A phase's summary from what it ran (this process's, or the shards' merged).
pub fn summarize(
    config: &RunConfig,
    sweep: &SweepConfig,
    index: usize,
    level: Level,
    ran: Ran,
) -> PhaseSummary {
    let Ran {
        run,
        wall_s,
        cpu_s,
        telemetry,
        dispatch,
    } = ran;
    let measured = metrics::measure(&run, sweep.warmup_s);
    let normalized = frontier::normalize(
        measured.throughput.total_tps,
        telemetry.as_ref().and_then(|t| t.power.as_ref()),
        &sweep.normalize,
    );
    let requests = run.facts.len();
    let sessions = phase_sessions(&run, config.session_slo.as_ref(), wall_s);
    let arrivals = match level {
        Level::Rate(r) => {
            let a = config
                .load
                .arrivals
                .clone()
                .unwrap_or_else(default_arrivals);
            let ramp_s = crate::open_loop::spec(&a, r, config.load.ramp.as_ref()).ramp_end_s();
            Some(ArrivalsSummary::of(
                &run.facts,
                crate::open_loop::configured(&a, r, None, ramp_s),
                dispatch.unwrap_or_default(),
            ))
        }
        Level::Agents(_) => None,
    };
    let mut summary = PhaseSummary {
        index,
        level: match level {
            Level::Agents(n) => n,
            Level::Rate(_) => 0,
        },
        rate: match level {
            Level::Rate(r) => Some(r),
            Level::Agents(_) => None,
        },
        end_reason: run.end_reason.clone(),
        wall_s,
        all_active_s: run.all_active_ns.map(|n| n as f64 / 1e9),
        rules_held_s: run.rules_held_ns.map(|n| n as f64 / 1e9),
        stopped_s: run.stopped_ns as f64 / 1e9,
        requests,
        trajectories_completed: run.completed,
        min_trajectories_per_agent: run.min_per_agent,
        trajectories_cut: run.trajectories_cut,
        trajectories_failed: run.trajectories_failed,
        metrics: measured,
        sessions,
        arrivals,
        meets_slo: Vec::new(),
        telemetry,
        normalized,
        harness_cpu_ms_per_request: cpu_s
            .filter(|_| requests > 0)
            .map(|c| c * 1e3 / requests as f64),
        harness_cpu_s: cpu_s,
        turns: format!("{}/turns.jsonl", folder(index, level)),
        live: LiveSummary::of_reviews(
            run.facts
                .iter()
                .filter_map(|f| Some((&*f.session_id, f.turn, f.live?))),
        ),
    };
    summary.meets_slo = level_result(&summary).map_or_else(Vec::new, |l| {
        (sweep.slo.iter())
            .filter(|t| l.meets(t))
            .map(|t| t.name.clone())
            .collect()
    });
    summary
}

/// The sweep's `sweep/summary.json` and `sweep/pareto.json` under `results`, from its phases.
pub fn finish(
    config: &RunConfig,
    sweep: &SweepConfig,
    results: &agentload_fs::OutDir,
    phases: Vec<PhaseSummary>,
    live: bool,
) -> Result<SweepSummary> {
    let levels: Vec<LevelResult> = phases.iter().filter_map(level_result).collect();
    let summary = SweepSummary {
        run: config.name.clone(),
        live: LiveLabel::of(live),
        config: sweep.clone(),
        slo: frontier::max_agents(&levels, &sweep.slo),
        phases,
    };
    results.write_json("sweep/summary.json", &summary)?;
    let points = points_of(&summary);
    results.write_json(
        "sweep/pareto.json",
        &ParetoFile {
            x: Definition::AaP25,
            live: LiveLabel::of(live),
            frontier: frontier::pareto(&points),
            points,
        },
    )?;
    Ok(summary)
}

/// How `p` stands against the SLO tiers (none without a TTFT and a speed).
fn level_result(p: &PhaseSummary) -> Option<LevelResult> {
    Some(LevelResult {
        level: p.level,
        rate: p.rate,
        ttft_p90_ms: p.metrics.ttft_ms.as_ref()?.p90,
        speed_p25_tps: p.metrics.output_speed_tps.as_ref()?.p25,
        on_schedule: p.arrivals.as_ref().is_none_or(|a| !a.lighter),
    })
}

/// The phase's sessions, from its facts, over its `seconds`.
fn phase_sessions(
    run: &agents::PhaseRun,
    slo: Option<&SessionSlo>,
    seconds: f64,
) -> SessionsSummary {
    // Local counts where they ran, else the server's.
    let turns: Vec<SessionTurn<'_>> = run
        .facts
        .iter()
        .map(|f| SessionTurn::of(f, TokenSource::Local))
        .collect();
    // The sessions in the order of their first turns.
    let mut seen = std::collections::HashSet::new();
    let order: Vec<String> = run
        .facts
        .iter()
        .filter(|f| seen.insert(&*f.session_id))
        .map(|f| f.session_id.to_string())
        .collect();
    let ends: Ends = run
        .sessions
        .iter()
        .map(|o| (o.id.clone(), o.ended.name().to_owned()))
        .collect();
    agentload_results::sessions::sessions(&turns, &order, &ends, slo, Some(seconds)).1
}

/// The turns' server `usage`, summed (for the telemetry summary).
pub fn phase_tokens<'a>(
    facts: impl IntoIterator<Item = &'a agentload_engine::TurnFacts>,
) -> PhaseTokens {
    let mut tokens = PhaseTokens::default();
    for f in facts {
        if f.server_isl().is_some() || f.server_osl().is_some() {
            tokens.turns += 1;
            tokens.prompt_tokens += f.server_isl().unwrap_or(0);
            tokens.completion_tokens += f.server_osl().unwrap_or(0);
        }
    }
    tokens
}

/// The (throughput, P25 speed) point of every measured phase.
pub fn points_of(summary: &SweepSummary) -> Vec<Point> {
    summary
        .phases
        .iter()
        .filter_map(|p| {
            Some(Point {
                run: summary.run.clone(),
                level: p.level,
                rate: p.rate,
                total_tps: p.metrics.throughput.total_tps,
                speed_p25_tps: p.metrics.output_speed_tps.as_ref()?.p25,
                interactivity: p.metrics.interactivity.clone(),
                live: summary.live.is_some(),
            })
        })
        .collect()
}

/// The frontier across several sweeps (`sweep/pareto.json` files or the
/// run directories holding them) over interactivity definition `x`;
/// `labels[i]`, when given, replaces the run name of the `i`-th sweep's
/// points (two runs of one config would otherwise share a name).
pub fn pareto_of(paths: &[PathBuf], labels: &[String], x: Definition) -> Result<ParetoFile> {
    anyhow::ensure!(
        labels.len() <= paths.len(),
        "{} labels for {} sweeps: give at most one --label per sweep",
        labels.len(),
        paths.len()
    );
    let mut points = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        let file = if path.is_dir() {
            path.join("sweep/pareto.json")
        } else {
            path.clone()
        };
        let text = agentload_fs::read::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let p: ParetoFile = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a sweep pareto.json", file.display()))?;
        points.extend(p.points.into_iter().map(|mut point| {
            if let Some(label) = labels.get(i) {
                point.run.clone_from(label);
            }
            point
        }));
    }
    Ok(ParetoFile {
        x,
        live: LiveLabel::of(points.iter().any(|p| p.live)),
        frontier: frontier::pareto_by(&points, x),
        points,
    })
}

/// `  c16: 1,234 tok/s total, P25 speed 31.2 tok/s, TTFT p90 210 ms, e2e interactivity 28.1 tok/s, 412 requests (end rules met)`;
/// a rate phase adds its delivered rate and send lag.
fn phase_line(p: &PhaseSummary) -> String {
    let speed = p
        .metrics
        .output_speed_tps
        .as_ref()
        .map_or(f64::NAN, |s| s.p25);
    let ttft = p.metrics.ttft_ms.as_ref().map_or(f64::NAN, |s| s.p90);
    format!(
        "  {}: {:.0} tok/s total, P25 speed {:.1} tok/s, TTFT p90 {:.0} ms, MLPerf e2e interactivity {:.1} tok/s, tps_per_user {:.1}, AgentX P90 {:.1}, {} requests, {} measured ({}){}",
        p.level().label(),
        p.metrics.throughput.total_tps,
        speed,
        ttft,
        p.metrics.interactivity.mlperf_e2e_interactivity.unwrap_or(f64::NAN),
        p.metrics.interactivity.mlperf_tps_per_user.unwrap_or(f64::NAN),
        p.metrics.interactivity.agentx_e2e_normalized_p90.unwrap_or(f64::NAN),
        p.requests,
        p.metrics.window.as_ref().map_or(0, |w| w.measured),
        p.end_reason,
        p.arrivals.as_ref().map_or_else(String::new, delivered)
    )
}

/// `; delivered 2.491/s of 2.5/s (scheduled 2.488/s), send lag p99 0.40 ms`.
pub fn delivered(a: &ArrivalsSummary) -> String {
    let rate = |r: Option<f64>| r.map_or_else(|| "-".to_owned(), |r| format!("{r:.3}"));
    format!(
        "; delivered {}/s of {}/s{}, send lag p99 {} ms",
        rate(a.delivered.rate),
        a.configured.rate,
        a.delivered
            .scheduled_rate
            .map_or_else(String::new, |s| format!(" (scheduled {s:.3}/s)")),
        a.delivered
            .send_lag_ms
            .map_or_else(|| "-".to_owned(), |l| format!("{:.2}", l.p99))
    )
}

/// This process's user + system CPU time (s), from `getrusage(RUSAGE_SELF)`
/// (microsecond resolution).
pub fn cpu_seconds() -> Option<f64> {
    cpu_times().map(|t| t.user + t.system)
}

/// A process's CPU time (s), in its own code and in the kernel's on its behalf.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuTimes {
    pub user: f64,
    pub system: f64,
}

/// This process's CPU time so far, from `getrusage(RUSAGE_SELF)`. The kernel splits its
/// precise total by the share of clock ticks that found the process in user space, so a
/// difference is a fair split over seconds, not over milliseconds.
pub fn cpu_times() -> Option<CpuTimes> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_SELF is valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: initialised by the successful call above.
    let u = unsafe { usage.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(CpuTimes {
        user: secs(u.ru_utime),
        system: secs(u.ru_stime),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_readable() {
        let a = cpu_seconds().expect("getrusage");
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        assert!(x > 0);
        assert!(cpu_seconds().unwrap() > a);
    }

    struct NoBarriers;

    impl Barriers for NoBarriers {
        fn start(&self, _: usize) -> BoxFuture<'_, Result<Instant, String>> {
            Box::pin(async { Err("none".to_owned()) })
        }
        fn end(&self, _: usize) -> BoxFuture<'_, Result<Instant, String>> {
            Box::pin(async { Err("none".to_owned()) })
        }
    }

    #[test]
    fn the_end_rules_split_over_the_shards_that_run_agents() {
        let shard = |index| ShardSweep {
            index,
            count: 4,
            barriers: Arc::new(NoBarriers),
        };
        let shares = |total, agents| -> Vec<u32> {
            (0..4)
                .map(|i| shard(i).share_of_agents(total, agents))
                .collect()
        };
        assert_eq!(shares(8, 5), [2, 2, 2, 2]);
        assert_eq!(shares(10, 16), [3, 3, 2, 2]);
        // One agent: shard 0 alone runs it, and holds all of the level's trajectories.
        assert_eq!(shares(8, 1), [8, 0, 0, 0]);
        assert_eq!(shares(7, 2), [4, 3, 0, 0]);
        assert!((0..4).all(|i| shard(i).owns(i as usize + 4)));
    }
}
