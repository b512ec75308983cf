//! `bench --sections aa-agents`: AA-AgentPerf's concurrency sweep over
//! Artificial Analysis's own traces (`configs/aa-agentperf-sweep.toml`,
//! agentperf-local's default replay as the trajectory pool) beside the
//! synthetic workload (`agentic-synth`, AA-AgentPerf's shape, the `agents`
//! section's config), both at the same agent count against a fresh
//! simulator each, alternated over rounds (the order swapped every other
//! round) on the same machine, the simulator niced to 10.
//!
//! Each run is `agentload run` of a two-level sweep, `--aa-base-agents`
//! then `--agents`, in a child process. Memory per agent is the growth of
//! the child's largest resident set (sampled every 100 ms) from the first
//! level's span to the second's, over the agents added: the fixed cost
//! (wasmtime, the components, the parsed traces) and start-up are out of it. Send lag (issued minus due,
//! every turn of the second level), CPU per turn (the level's own CPU,
//! `harness_cpu_s`, over its turns) and failed turns are the second level's.
//! Both workloads' outputs are capped to 15 s at `--agents-tps` (an AA turn
//! still generates exactly its cap or its recorded length, whichever is
//! smaller, as `ignore_eos` asks).

use super::agents::{self, Options as AgentsOptions};
use super::Row;
use anyhow::{Context as _, Result};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

/// The shipped sweep over AA's traces; the bench shrinks its windows.
const AA_SWEEP: &str = include_str!("../../../../configs/aa-agentperf-sweep.toml");

/// The manifest the sweep reads (in the data folder).
const AA_MANIFEST: &str = "aa_replays/agentperf-default-v1/manifest-x86_64.json";

/// What the section runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Agents of the measured (second) level.
    pub agents: usize,
    /// Agents of the first level, the baseline of the memory growth.
    pub base_agents: usize,
    /// Steady state per level, s (after a 5 s warm-up).
    pub seconds: f64,
    /// Tokens per second of every simulated stream.
    pub stream_tps: f64,
    /// Rounds, each one run of each workload.
    pub rounds: usize,
}

/// The two workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Workload {
    AaReplay,
    AgenticSynth,
}

impl Workload {
    fn name(self) -> &'static str {
        match self {
            Self::AaReplay => "aa-replay",
            Self::AgenticSynth => "agentic-synth",
        }
    }
}

/// One run of one workload.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    pub round: usize,
    pub workload: Workload,
    pub agents: usize,
    pub base_agents: usize,
    /// The process's peak resident set (start-up included).
    pub peak_rss_mib: f64,
    /// The largest resident set during the first level, and the second.
    pub rss_base_mib: f64,
    pub rss_top_mib: f64,
    /// The growth from the first level's to the second's, per added agent.
    pub rss_growth_per_agent_kib: f64,
    pub turns: u64,
    pub failed_turns: u64,
    pub send_lag_p50_ms: f64,
    pub send_lag_p99_ms: f64,
    pub send_lag_max_ms: f64,
    pub harness_cpu_s: f64,
    pub cpu_per_turn_ms: f64,
    /// Mean request body the simulator received (both levels), KiB.
    pub mean_request_kib: f64,
    pub mean_output_tokens: f64,
}

/// Runs the section.
pub async fn run(opts: &Options, data_dir: &Path) -> Result<(Vec<Measured>, Vec<Row>)> {
    anyhow::ensure!(
        opts.base_agents < opts.agents,
        "--aa-base-agents ({}) must be below --agents ({})",
        opts.base_agents,
        opts.agents
    );
    anyhow::ensure!(
        agentload_config::data::locate(data_dir, AA_MANIFEST).is_some(),
        "AA's replays are neither in {} nor in the cache: run scripts/fetch-aa-replays.sh DIR",
        data_dir.display()
    );
    let dir =
        std::env::temp_dir().join(format!("agentload-bench-aa-agents-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut measured = Vec::new();
    let mut result = Ok(());
    'rounds: for round in 0..opts.rounds.max(1) {
        let order = if round % 2 == 0 {
            [Workload::AaReplay, Workload::AgenticSynth]
        } else {
            [Workload::AgenticSynth, Workload::AaReplay]
        };
        for workload in order {
            eprintln!("bench: aa-agents round {round}: {}", workload.name());
            let run_dir = dir.join(format!("{round}-{}", workload.name()));
            match measure(opts, workload, round, &run_dir).await {
                Ok(m) => measured.push(m),
                Err(e) => {
                    result = Err(e.context(format!("round {round}, {}", workload.name())));
                    break 'rounds;
                }
            }
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    result?;
    let rows = rows(opts, &measured);
    Ok((measured, rows))
}

async fn measure(opts: &Options, workload: Workload, round: usize, dir: &Path) -> Result<Measured> {
    std::fs::create_dir_all(dir)?;
    let exe = std::env::current_exe().context("cannot find the agentload binary")?;
    let (mut sim, url, addr) = agents::start_sim(&exe, opts.agents, opts.stream_tps).await?;
    if let Some(pid) = sim.id() {
        // Niced, as `SIM_NICE=10 scripts/scale-run.sh` does: the kernel gives
        // agentload the cores first when both want them, as it would have them
        // with the server on another machine (the send lag is agentload's).
        // SAFETY: setpriority has no memory preconditions; a failure only
        // leaves the simulator at its niceness.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, pid, 10) };
    }
    let levels = [opts.base_agents, opts.agents];
    let config = dir.join("sweep.toml");
    let text = match workload {
        Workload::AaReplay => aa_config(opts, &url, &levels)?,
        Workload::AgenticSynth => agents::config_text(
            &AgentsOptions {
                agents: opts.agents,
                seconds: opts.seconds,
                stream_tps: opts.stream_tps,
                scale: 1.0,
                rack_stream_tps: 0.0,
                instances: 1,
            },
            &url,
            &levels,
        ),
    };
    std::fs::write(&config, text)?;
    let out = dir.join("run");
    // The resident set's largest in each level's own span (its folder made,
    // its workload configured, to its summary): start-up is out of both.
    let sweep = out.join("sweep");
    let first = sweep.join(format!("phase-00-c{}", opts.base_agents));
    let first_done = first.join("summary.json");
    let second = sweep.join(format!("phase-01-c{}", opts.agents));
    let marks = [first.as_path(), first_done.as_path(), second.as_path()];
    let child = agents::run_agentload(&exe, &config, &out, &marks).await?;
    let stats = agents::sim_stats(addr).await?;
    sim.kill().await.ok();
    let (base_kib, top_kib) = (child.rss_by_stage_kib[1], child.rss_by_stage_kib[3]);
    anyhow::ensure!(
        base_kib > 0 && top_kib > 0,
        "the levels' resident sets were not sampled (by stage: {:?} KiB)",
        child.rss_by_stage_kib
    );
    let turns =
        agents::read_turns(&out.join(format!("sweep/phase-01-c{}/turns.jsonl", opts.agents)))?;
    let summary: Value = serde_json::from_slice(&std::fs::read(out.join("sweep/summary.json"))?)?;
    let phase = &summary["phases"][1];
    let harness_cpu_s = phase["harness_cpu_s"]
        .as_f64()
        .context("the sweep summary has no harness_cpu_s")?;
    let mut lag = turns.send_lag_ms.clone();
    let added = (opts.agents - opts.base_agents) as f64;
    Ok(Measured {
        round,
        workload,
        agents: opts.agents,
        base_agents: opts.base_agents,
        peak_rss_mib: child.peak_rss_kib as f64 / 1024.0,
        rss_base_mib: base_kib as f64 / 1024.0,
        rss_top_mib: top_kib as f64 / 1024.0,
        rss_growth_per_agent_kib: (top_kib - base_kib) as f64 / added,
        turns: turns.turns,
        failed_turns: phase["errors"]["failed_turns"].as_u64().unwrap_or_default(),
        send_lag_p50_ms: super::percentile(&mut lag, 50.0),
        send_lag_p99_ms: super::percentile(&mut lag, 99.0),
        send_lag_max_ms: lag.iter().copied().fold(f64::NAN, f64::max),
        harness_cpu_s,
        cpu_per_turn_ms: harness_cpu_s * 1e3 / turns.turns.max(1) as f64,
        mean_request_kib: stats.request_bytes as f64 / 1024.0 / stats.requests.max(1) as f64,
        mean_output_tokens: turns.output_tokens as f64 / turns.turns.max(1) as f64,
    })
}

/// `configs/aa-agentperf-sweep.toml` against `url` at `levels`, its windows
/// shrunk to the section's and every output capped like the synthetic one's.
fn aa_config(opts: &Options, url: &str, levels: &[usize]) -> Result<String> {
    let mut config: toml::Table = toml::from_str(AA_SWEEP).context("the shipped AA sweep")?;
    let table = |config: &mut toml::Table, key: &str| -> Result<toml::Table> {
        config
            .remove(key)
            .and_then(|v| v.as_table().cloned())
            .with_context(|| format!("the shipped AA sweep has no [{key}]"))
    };
    let mut endpoint = table(&mut config, "endpoint")?;
    endpoint.insert("url".into(), url.into());
    config.insert("endpoint".into(), endpoint.into());
    let mut sweep = table(&mut config, "sweep")?;
    let levels: Vec<toml::Value> = levels.iter().map(|&n| (n as i64).into()).collect();
    sweep.insert("levels".into(), levels.into());
    sweep.insert("min_trajectories".into(), 0.into());
    sweep.insert("steady_state_s".into(), opts.seconds.into());
    sweep.insert("warmup_s".into(), 5.0.into());
    sweep.insert("max_phase_s".into(), (opts.seconds * 3.0 + 60.0).into());
    sweep.insert(
        "max_tokens".into(),
        (agents::osl_cap(opts.stream_tps) as i64).into(),
    );
    config.insert("sweep".into(), sweep.into());
    config.remove("report_dir");
    Ok(toml::to_string(&config)?)
}

fn rows(opts: &Options, runs: &[Measured]) -> Vec<Row> {
    let s = "aa-agents";
    let mut rows = vec![Row::new(
        s,
        format!(
            "agents (memory from {} to {}; {} tok/s per stream, outputs capped at {})",
            opts.base_agents,
            opts.agents,
            opts.stream_tps,
            agents::osl_cap(opts.stream_tps)
        ),
        opts.agents as f64,
        "",
    )];
    for m in runs {
        let w = format!("r{} {}", m.round, m.workload.name());
        for (what, value, unit) in [
            ("peak RSS (start-up included)", m.peak_rss_mib, "MiB"),
            ("RSS at the first level", m.rss_base_mib, "MiB"),
            ("RSS at the second level", m.rss_top_mib, "MiB"),
            ("RSS growth per agent", m.rss_growth_per_agent_kib, "KiB"),
            ("turns", m.turns as f64, ""),
            ("failed turns", m.failed_turns as f64, ""),
            ("send lag p50", m.send_lag_p50_ms, "ms"),
            ("send lag p99", m.send_lag_p99_ms, "ms"),
            ("send lag max", m.send_lag_max_ms, "ms"),
            ("CPU per turn", m.cpu_per_turn_ms, "ms"),
            ("mean request", m.mean_request_kib, "KiB"),
            ("mean output", m.mean_output_tokens, "tokens"),
        ] {
            rows.push(Row::new(s, format!("{w} {what}"), value, unit));
        }
    }
    // Each round's ratio, AA's traces over the synthetic workload.
    for round in 0..opts.rounds.max(1) {
        let of = |w| runs.iter().find(|m| m.round == round && m.workload == w);
        let (Some(aa), Some(synth)) = (of(Workload::AaReplay), of(Workload::AgenticSynth)) else {
            continue;
        };
        for (what, a, b) in [
            (
                "RSS growth per agent",
                aa.rss_growth_per_agent_kib,
                synth.rss_growth_per_agent_kib,
            ),
            ("CPU per turn", aa.cpu_per_turn_ms, synth.cpu_per_turn_ms),
            ("send lag p99", aa.send_lag_p99_ms, synth.send_lag_p99_ms),
        ] {
            rows.push(Row::new(
                s,
                format!("r{round} {what} aa-replay / agentic-synth"),
                a / b,
                "x",
            ));
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_sweep_is_run_with_the_sections_levels_windows_and_cap() {
        let opts = Options {
            agents: 1000,
            base_agents: 100,
            seconds: 30.0,
            stream_tps: 5.0,
            rounds: 1,
        };
        let text = aa_config(&opts, "http://127.0.0.1:9", &[100, 1000]).unwrap();
        let config: agentload_config::RunConfig = toml::from_str(&text).unwrap();
        let sweep = config.sweep.as_ref().unwrap();
        assert_eq!(sweep.levels, vec![100, 1000]);
        assert_eq!(sweep.steady_state_s, 30.0);
        assert_eq!(sweep.max_tokens, 75);
        assert_eq!(config.endpoint.url, "http://127.0.0.1:9");
        assert_eq!(config.performance.as_ref().unwrap().workload, "aa-replay");
        // What the shipped file says of AA's runs is kept.
        assert!(sweep.keep_workload_max_tokens);
        assert_eq!(config.plugins.workload_instances, Some(1));
    }
}
