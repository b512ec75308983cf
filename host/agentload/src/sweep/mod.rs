//! The concurrency sweep (AA-AgentPerf, MLPerf datacenter agentic): the
//! performance phase's workload under `level` concurrent simulated agents,
//! one phase per level, each ended by its rules and measured over its steady
//! state; then the Pareto frontier and the SLO table. Results go to
//! `OUT/sweep/` (`summary.json`, `pareto.json`, one folder of turn logs per
//! phase).
//!
//! The sweep sets two of the workload's settings per phase (coding-replay's
//! keys): `num_trajectories_to_issue` (levels × `max_trajectories_per_agent`,
//! the deterministic recycling list) and `inject_tool_delay` (on for
//! `tool_delay = "recorded"`); salts, distribution-drawn delays and the
//! `max_tokens` cap are applied by the host.

pub mod agents;
pub mod delays;
pub mod frontier;
pub mod metrics;
pub mod salt;

pub use agentload_config::SweepConfig;

use agentload_config::ToolDelayMode;
use agentload_config::{table_json, PhaseConfig, RunConfig};
use agentload_config::{SessionSlo, TokenSource};
use agentload_engine::tokens::LocalCounter;
use agentload_engine::{Console, Instances, LogFiles, Recorder, Stop, TurnSender};
use agentload_plugin_host::types::{GrantedFile, PluginConfig};
use agentload_plugin_host::WorkloadPlugin;
use agentload_results::live::LiveSummary;
use agentload_results::metrics::Definition;
use agentload_results::sessions::{Ends, SessionTurn, SessionsSummary};
use agentload_telemetry::{PhaseTokens, Telemetry, TelemetrySummary};
use anyhow::{Context as _, Result};
use frontier::{LevelResult, Normalized, Point, SloResult};
use metrics::PhaseMetrics;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// One phase in `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseSummary {
    pub index: usize,
    pub level: usize,
    pub end_reason: String,
    pub wall_s: f64,
    /// When every agent was active, s after the phase start.
    pub all_active_s: Option<f64>,
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
    /// Server and accelerator telemetry (`[telemetry]`, the power command).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub telemetry: Option<TelemetrySummary>,
    /// Throughput per accelerator, per MW of measured power (over the
    /// steady-state window) and per rental dollar.
    pub normalized: Normalized,
    /// The harness's own CPU time in the phase, and per request.
    pub harness_cpu_s: Option<f64>,
    pub harness_cpu_ms_per_request: Option<f64>,
    /// The phase's turn log, relative to `sweep/`.
    pub turns: String,
    /// Live-reply replay: the phase's divergence funnel (all its turns).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveSummary>,
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
    fn of(live: bool) -> Option<Self> {
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
    } = input;
    let dir = out.join("sweep");
    // Everything goes under the results directory, never through a link there.
    let results = agentload_fs::OutDir::new(&out);
    results
        .create_dir("sweep")
        .with_context(|| format!("cannot create {}", dir.display()))?;
    let live = phase.live_history();
    let mut phases = Vec::new();
    for (index, &level) in sweep.levels.iter().enumerate() {
        if stop.stopped() {
            break;
        }
        let mut settings = phase.settings.clone();
        settings.insert(
            "num_trajectories_to_issue".into(),
            toml::Value::Integer(i64::from(sweep.max_trajectories_per_agent) * level as i64),
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
        let folder = format!("phase-{index:02}-c{level}");
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
            Console::new(&format!("sweep phase {index} (c{level})"), None, quiet),
        )?;
        let (client, body) = crate::endpoint::client_for(config, level)?;
        if let Err(e) = client.warm_up(level).await {
            agentload_console::line(&format!("warning: {e}"));
        }
        if !quiet {
            agentload_console::line(&format!(
                "sweep phase {index}: {level} agents against {}",
                config.endpoint.url
            ));
        }
        let started = Instant::now();
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
        let run = agents::run(
            sweep,
            agents::PhaseInput {
                index,
                level,
                plan,
                workload: instances,
                sender: TurnSender {
                    client,
                    body,
                    origin: started,
                    segment: 0,
                },
                recorder,
                stop: stop.child(),
                live,
                context: crate::context::context_window(config, live, counter.as_ref()).await?,
                failed_turn: config.load.failed_turn,
            },
        )
        .await?;
        let wall_s = started.elapsed().as_secs_f64();
        let cpu = cpu_before.zip(cpu_seconds()).map(|(a, b)| b - a);
        let measured = metrics::measure(&run, sweep.warmup_s);
        let telemetry = match sampling {
            Some(s) => {
                let window = measured.window.as_ref().map(|w| (w.start_ns, w.end_ns));
                let mut summary = s.finish(window).await;
                summary.account(phase_tokens(&run.facts));
                Some(summary)
            }
            None => None,
        };
        let normalized = frontier::normalize(
            measured.throughput.total_tps,
            telemetry.as_ref().and_then(|t| t.power.as_ref()),
            &sweep.normalize,
        );
        let requests = run.facts.len();
        let sessions = phase_sessions(&run, config.session_slo.as_ref(), wall_s);
        workload = run.workload;
        let summary = PhaseSummary {
            index,
            level,
            end_reason: run.end_reason.clone(),
            wall_s,
            all_active_s: run.all_active_ns.map(|n| n as f64 / 1e9),
            stopped_s: run.stopped_ns as f64 / 1e9,
            requests,
            trajectories_completed: run.per_agent_completed.iter().sum(),
            min_trajectories_per_agent: run.per_agent_completed.iter().copied().min().unwrap_or(0),
            trajectories_cut: run.trajectories_cut,
            trajectories_failed: run.trajectories_failed,
            metrics: measured,
            sessions,
            telemetry,
            normalized,
            harness_cpu_ms_per_request: cpu
                .filter(|_| requests > 0)
                .map(|c| c * 1e3 / requests as f64),
            harness_cpu_s: cpu,
            turns: format!("{folder}/turns.jsonl"),
            live: LiveSummary::of_reviews(
                run.facts
                    .iter()
                    .filter_map(|f| Some((&*f.session_id, f.turn, f.live?))),
            ),
        };
        if !quiet {
            agentload_console::line(&phase_line(&summary));
            if let Some(t) = &summary.telemetry {
                agentload_console::line(&format!("  c{level} {}", t.line()));
            }
        }
        results.write_json(phase_dir.join("summary.json"), &summary)?;
        phases.push(summary);
    }
    let levels: Vec<LevelResult> = phases
        .iter()
        .filter_map(|p| {
            Some(LevelResult {
                level: p.level,
                ttft_p90_ms: p.metrics.ttft_ms.as_ref()?.p90,
                speed_p25_tps: p.metrics.output_speed_tps.as_ref()?.p25,
            })
        })
        .collect();
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

/// `  c16: 1,234 tok/s total, P25 speed 31.2 tok/s, TTFT p90 210 ms, e2e interactivity 28.1 tok/s, 412 requests (end rules met)`.
fn phase_line(p: &PhaseSummary) -> String {
    let speed = p
        .metrics
        .output_speed_tps
        .as_ref()
        .map_or(f64::NAN, |s| s.p25);
    let ttft = p.metrics.ttft_ms.as_ref().map_or(f64::NAN, |s| s.p90);
    format!(
        "  c{}: {:.0} tok/s total, P25 speed {:.1} tok/s, TTFT p90 {:.0} ms, MLPerf e2e interactivity {:.1} tok/s, tps_per_user {:.1}, AgentX P90 {:.1}, {} requests, {} measured ({})",
        p.level,
        p.metrics.throughput.total_tps,
        speed,
        ttft,
        p.metrics.interactivity.mlperf_e2e_interactivity.unwrap_or(f64::NAN),
        p.metrics.interactivity.mlperf_tps_per_user.unwrap_or(f64::NAN),
        p.metrics.interactivity.agentx_e2e_normalized_p90.unwrap_or(f64::NAN),
        p.requests,
        p.metrics.window.as_ref().map_or(0, |w| w.measured),
        p.end_reason
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
}
