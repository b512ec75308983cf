//! `agentload bench`: the harness's own costs, measured (not asserted) and
//! printed as a table, with the raw numbers in JSON when `--out` is given.
//!
//! - `streams`: the machine's floor (a blocking-socket client) and many
//!   concurrent streams against `agentload sim` in a child process (pinned
//!   to its own CPUs with `--sim-cpus`): harness TTFT minus the simulator's
//!   first-token time (p50/p99, by direction, and as a ratio to the floor),
//!   the first request per stream and the connection set-up apart, tokens/s
//!   the client ingests, harness CPU and RSS.
//! - `agents`: N agents of the synthetic workload kept alive by `agentload
//!   run` against `agentload sim` (both child processes): peak RSS, send lag,
//!   CPU per turn, per output token and per request KiB beside a floor client
//!   doing the same socket I/O, and the cores AA-AgentPerf's rack point
//!   would need (see [`agents`]).
//! - `aa-agents`: AA-AgentPerf's sweep over Artificial Analysis's own traces
//!   (`configs/aa-agentperf-sweep.toml`) beside `agentic-synth` at the same
//!   agent count, alternated over rounds: memory per agent, send lag and CPU
//!   per turn of each, and their ratios (see [`aa_agents`]).
//! - `build`: host + plugin time per turn to produce a request, at the edge
//!   dataset's peak ISL and on average.
//! - `counting`: local token counting at a phase's end, each edge replay
//!   prompt counted whole and after its session's last one, side by side, and
//!   what a 27K-token prompt costs each way.
//! - `load`: component load time, cold (compiling) vs cached.
//! - `shards`: the edge replay by `run --shards 1` and `--shards 4` against
//!   one simulator, alternated: turns/s and the 4-to-1 ratio.
//! - `tools`: the closed-loop sandbox on a generated repository: per-call
//!   wall time and fuel by class, a session overlay's bytes, and one call
//!   from each of 1,000 agents (CPU measured, cores projected; see [`tools`]).
//! - `edge`: a full `agentload demo` in a child process (wall time, peak
//!   RSS), then its recorded completions re-scored (IoU over 1,007 turns,
//!   the BFCL gate over 995 samples).

pub mod aa_agents;
pub mod affinity;
pub mod agents;
pub mod answers;
pub mod build;
pub mod closed;
pub mod counting;
pub mod edge;
pub mod floor;
pub mod shards;
pub mod streams;
pub mod tls;
pub mod tools;

use anyhow::{Context as _, Result};
use serde::Serialize;
use std::path::PathBuf;

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub section: &'static str,
    pub what: String,
    pub value: f64,
    pub unit: &'static str,
}

impl Row {
    pub fn new(
        section: &'static str,
        what: impl Into<String>,
        value: f64,
        unit: &'static str,
    ) -> Self {
        Self {
            section,
            what: what.into(),
            value,
            unit,
        }
    }
}

/// The rows as an aligned table.
pub fn table(rows: &[Row]) -> String {
    let width = rows
        .iter()
        .map(|r| r.what.len())
        .max()
        .unwrap_or(10)
        .max(10);
    let mut s = format!(
        "{:<8} {:<width$} {:>14} unit\n",
        "section", "measure", "value"
    );
    for r in rows {
        let value = if r.value.abs() >= 1000.0 || r.value == r.value.trunc() {
            format!("{:.0}", r.value)
        } else {
            format!("{:.3}", r.value)
        };
        s.push_str(&format!(
            "{:<8} {:<width$} {:>14} {}\n",
            r.section, r.what, value, r.unit
        ));
    }
    s
}

/// Peak and current resident set of this process (KiB), from `/proc/self/status`.
pub fn rss_kib() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

/// Resets this process's peak resident set (`VmHWM`) to its current one
/// (`/proc/self/clear_refs`, Linux 4.0+); false where that is refused.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// User + system CPU seconds a process (another one: the simulator child)
/// has used so far, from `/proc/PID/stat`; `None` where it cannot be read.
pub fn process_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command name (in parentheses, which may hold spaces): state
    // is field 3, utime 14 and stime 15, in clock ticks.
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace().skip(11);
    let ticks: f64 = fields.next()?.parse::<f64>().ok()? + fields.next()?.parse::<f64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (per_second > 0).then(|| ticks / per_second as f64)
}

/// What the waited-for children used, together.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChildrenUsage {
    /// The largest resident set of any of them, KiB.
    pub max_rss_kib: i64,
    /// User and system CPU time, s.
    pub cpu_s: f64,
}

/// `getrusage(RUSAGE_CHILDREN)`: every child waited for so far (zero where it fails).
pub fn children_usage() -> ChildrenUsage {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given; RUSAGE_CHILDREN is valid.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr()) };
    if rc != 0 {
        return ChildrenUsage::default();
    }
    // SAFETY: initialised by the successful call above.
    let u = unsafe { usage.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    ChildrenUsage {
        max_rss_kib: u.ru_maxrss,
        cpu_s: secs(u.ru_utime) + secs(u.ru_stime),
    }
}

/// The first line a child prints (a simulator's URL), within 30 s.
pub async fn first_line(child: &mut tokio::process::Child) -> Result<String> {
    use tokio::io::AsyncBufReadExt as _;
    let stdout = child
        .stdout
        .take()
        .context("the child's stdout is not piped")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
        .await
        .context("the child printed nothing within 30 s")??
        .context("the child exited")
}

/// p-th "lower" percentile of unsorted values.
pub fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    values[((p / 100.0) * (values.len() - 1) as f64).floor() as usize]
}

/// Runs the named bench `sections` and prints their table (and writes it
/// as JSON to `out`).
pub async fn sections(
    sections: &[String],
    streams_options: &streams::Options,
    agents_options: &agents::Options,
    aa_agents_options: &aa_agents::Options,
    tls_options: &tls::Options,
    out: Option<PathBuf>,
) -> Result<()> {
    let data_dir = agentload_config::data::data_dir(None);
    let mut rows = Vec::new();
    let mut streams = None;
    let mut agents = None;
    let mut aa_agents = None;
    let mut tls = None;
    for section in sections {
        eprintln!("bench: {section}");
        match section.as_str() {
            "streams" => {
                let (measured, r) = streams::run(streams_options).await?;
                streams = Some(measured);
                rows.extend(r);
            }
            "agents" => {
                let (measured, r) = agents::run(agents_options).await?;
                agents = Some(measured);
                rows.extend(r);
            }
            "aa-agents" => {
                let (measured, r) = aa_agents::run(aa_agents_options, &data_dir).await?;
                aa_agents = Some(measured);
                rows.extend(r);
            }
            "tls" => {
                let dir = std::env::temp_dir()
                    .join(format!("agentload-bench-tls-{}", std::process::id()));
                let r = tls::run(tls_options, &dir).await;
                std::fs::remove_dir_all(&dir).ok();
                let (measured, r) = r?;
                tls = Some(measured);
                rows.extend(r);
            }
            "build" => rows.extend(tokio::task::block_in_place(|| build::requests(&data_dir))?),
            "answers" => rows.extend(tokio::task::block_in_place(answers::run)?),
            "counting" => {
                rows.extend(tokio::task::block_in_place(|| counting::run(&data_dir))?);
            }
            "load" => rows.extend(tokio::task::block_in_place(build::loads)?),
            "edge" => {
                let dir = std::env::temp_dir()
                    .join(format!("agentload-bench-edge-{}", std::process::id()));
                let r = tokio::task::block_in_place(|| edge::run(&dir, 5));
                std::fs::remove_dir_all(&dir).ok();
                rows.extend(r?);
            }
            "tools" => rows.extend(tools::run(&tools::Options::default()).await?),
            "closed" => {
                let dir = std::env::temp_dir()
                    .join(format!("agentload-bench-closed-{}", std::process::id()));
                let r = closed::run(&dir, agents_options.agents).await;
                std::fs::remove_dir_all(&dir).ok();
                rows.extend(r?);
            }
            "shards" => {
                let dir = std::env::temp_dir()
                    .join(format!("agentload-bench-shards-{}", std::process::id()));
                let r = shards::run(&dir, &data_dir).await;
                std::fs::remove_dir_all(&dir).ok();
                rows.extend(r?);
            }
            other => anyhow::bail!(
                "unknown bench section `{other}` (streams, tls, agents, aa-agents, build, \
                 answers, counting, load, edge, shards, tools, closed)"
            ),
        }
    }
    agentload_console::out(&table(&rows));
    if let Some(path) = out {
        let (dir, name) = agentload_fs::OutDir::of_file(&path)?;
        dir.write_json(
            name,
            &serde_json::json!({"rows": rows, "streams": streams, "agents": agents, "aa_agents": aa_agents, "tls": tls}),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn another_process_cpu_time_is_readable() {
        let pid = std::process::id();
        let before = super::process_cpu_seconds(pid).expect("/proc/PID/stat");
        // Spin until it reads 50 ms more (a loaded machine gives this thread a small
        // share of the wall clock: up to a minute of it).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut x = 0u64;
        loop {
            for _ in 0..1_000_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            let after = super::process_cpu_seconds(pid).unwrap();
            if after - before >= 0.05 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{before} -> {after} in a minute"
            );
        }
        assert_eq!(super::process_cpu_seconds(u32::MAX), None);
    }

    #[test]
    fn the_peak_resident_set_resets_to_the_current_one() {
        let grown = vec![1u8; 64 << 20];
        std::hint::black_box(&grown);
        drop(grown);
        let (peak, _) = super::rss_kib().unwrap();
        if !super::reset_peak_rss() {
            eprintln!("note: /proc/self/clear_refs refused: not checked");
            return;
        }
        let (after, now) = super::rss_kib().unwrap();
        assert!(after < peak, "peak {peak} KiB, after the reset {after} KiB");
        assert!(after >= now.saturating_sub(1024), "{after} vs {now}");
    }
}
