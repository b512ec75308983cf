//! `bench --sections shards`: the same edge replay driven by `run --shards
//! 1` and `run --shards 4` against one `agentload sim` child (oracle
//! responder, fast time scale), alternated so both see the same machine:
//! turns per second over the measured window, wall time, and the 4-to-1
//! ratio. On a machine with fewer cores than shards the ratio is the cost of
//! splitting, not a speed-up: the note in docs/distributed.md says which.

use super::Row;
use anyhow::{Context as _, Result};
use std::path::Path;
use std::time::Instant;

/// Rounds of each split.
const ROUNDS: usize = 2;

/// Runs the section in `dir`.
pub async fn run(dir: &Path, data_dir: &Path) -> Result<Vec<Row>> {
    let exe = std::env::current_exe().context("cannot find the agentload binary")?;
    let dataset = agentload_config::data::locate(data_dir, "agentic_coding_2.5h.jsonl").context(
        "the edge trajectories (agentic_coding_2.5h.jsonl) are not in the data directory",
    )?;
    let mut sim = tokio::process::Command::new(&exe)
        .args([
            "sim",
            "--port",
            "0",
            "--responder",
            "oracle",
            "--time-scale",
            "0.0002",
        ])
        .arg("--dataset")
        .arg(&dataset)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start agentload sim")?;
    let url = super::first_line(&mut sim).await?;
    std::fs::create_dir_all(dir)?;
    let config = dir.join("shards.toml");
    std::fs::write(
        &config,
        format!(
            "name = \"bench-shards\"\n[model]\nname = \"bench\"\ntokenizer = \"none\"\n\
             [endpoint]\nurl = \"{url}\"\n[load]\nconcurrency = 16\n[performance]\n\
             workload = \"coding-replay\"\n[performance.data]\n\
             trajectories = \"agentic_coding_2.5h.jsonl\"\n[performance.settings]\n\
             num_trajectories_to_issue = 20\n"
        ),
    )?;
    let mut qps: [Vec<f64>; 2] = Default::default();
    let mut wall: [Vec<f64>; 2] = Default::default();
    let mut cpu_ms: [Vec<f64>; 2] = Default::default();
    for round in 0..ROUNDS {
        for (k, shards) in [1u32, 4].into_iter().enumerate() {
            let out = dir.join(format!("r{round}-s{shards}"));
            let t = Instant::now();
            let cpu = super::children_usage().cpu_s;
            let status = tokio::process::Command::new(&exe)
                .arg("run")
                .arg(&config)
                .arg("--out")
                .arg(&out)
                .args(["--shards", &shards.to_string(), "--require-valid"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .await?;
            anyhow::ensure!(status.success(), "run --shards {shards} failed ({status})");
            wall[k].push(t.elapsed().as_secs_f64());
            let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(
                out.join("performance/result_summary.json"),
            )?)?;
            qps[k].push(summary["qps"].as_f64().unwrap_or(f64::NAN));
            // The launcher and its shards (waited for), start-up and merge included.
            let journal = std::fs::read(out.join("turns.jsonl"))?;
            let turns = journal.iter().filter(|&&b| b == b'\n').count() as f64;
            cpu_ms[k].push((super::children_usage().cpu_s - cpu) * 1e3 / turns);
        }
    }
    let median = |v: &mut Vec<f64>| super::percentile(v, 50.0);
    let (q1, q4) = (median(&mut qps[0]), median(&mut qps[1]));
    let (c1, c4) = (median(&mut cpu_ms[0]), median(&mut cpu_ms[1]));
    let row = |what: &str, value: f64, unit: &'static str| Row::new("shards", what, value, unit);
    Ok(vec![
        row(
            "1 shard: harness CPU per turn (every process, start-up and merge in)",
            c1,
            "ms",
        ),
        row(
            "4 shards: harness CPU per turn (every process, start-up and merge in)",
            c4,
            "ms",
        ),
        row("4 shards / 1 shard, CPU per turn", c4 / c1, "x"),
        Row::new(
            "shards",
            "1 shard: turns/s over the window, median",
            q1,
            "turns/s",
        ),
        Row::new(
            "shards",
            "4 shards: turns/s over the window, median",
            q4,
            "turns/s",
        ),
        Row::new("shards", "4 shards / 1 shard, turns/s", q4 / q1, "x"),
        Row::new(
            "shards",
            "1 shard: wall time (start-up to merge), median",
            median(&mut wall[0]),
            "s",
        ),
        Row::new(
            "shards",
            "4 shards: wall time (start-up to merge), median",
            median(&mut wall[1]),
            "s",
        ),
    ])
}
