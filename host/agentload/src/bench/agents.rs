//! `bench --sections agents`: N agents kept alive (open connections and
//! session state) against a simulator in a child process, at a rate this
//! machine can serve; then a floor client doing the same socket I/O without
//! parsing, against the same simulator; then what AA-AgentPerf's rack point
//! needs, projected from the per-unit costs.
//!
//! agentload runs as it would for a user: `agentload run` of a one-level
//! sweep over the synthetic workload (`agentic-synth`, AA-AgentPerf's shape,
//! lengths scaled by `--agents-scale`), in a child process whose CPU time
//! and peak RSS come from `getrusage(RUSAGE_CHILDREN)` once it has exited.
//! The simulator (`fill` responder, one slot per agent, every stream at
//! `--agents-tps`) reports the request bytes it received. Outputs are
//! capped at 15 s of streaming (the phase drains its in-flight turns).
//!
//! The CPU is the phase's own (`harness_cpu_s` of the sweep summary). The
//! rack projection charges all of it to turns, and again all of it to output
//! tokens (each an upper bound on that unit's share), at AA-AgentPerf's rack
//! point: 4,140 agents, a mean output of 440 tokens at `--rack-stream-tps`,
//! and the delays measured here.

use super::Row;
use anyhow::{Context as _, Result};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// AA-AgentPerf's rack point: concurrent agents per NVL72 rack.
pub const AA_RACK_AGENTS: f64 = 4140.0;

/// What the section runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Agents kept alive.
    pub agents: usize,
    /// Steady state measured, seconds (after a 5 s warm-up).
    pub seconds: f64,
    /// Tokens per second of every stream.
    pub stream_tps: f64,
    /// Factor on the synthetic workload's lengths (1: AA-AgentPerf's shape).
    pub scale: f64,
    /// Per-stream output speed assumed at the rack point, tokens/s.
    pub rack_stream_tps: f64,
    /// `plugins.workload_instances` of the run.
    pub instances: usize,
}

/// One client's costs over its run.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Costs {
    pub turns: u64,
    pub output_tokens: u64,
    pub request_bytes: u64,
    pub cpu_s: f64,
    pub wall_s: f64,
}

impl Costs {
    fn per_turn_ms(&self) -> f64 {
        self.cpu_s * 1e3 / self.turns.max(1) as f64
    }

    fn per_token_us(&self) -> f64 {
        self.cpu_s * 1e6 / self.output_tokens.max(1) as f64
    }

    fn per_kib_us(&self) -> f64 {
        self.cpu_s * 1e6 / (self.request_bytes as f64 / 1024.0).max(f64::MIN_POSITIVE)
    }
}

/// What the section measured.
#[derive(Debug, Clone, Serialize)]
pub struct Agents {
    pub agents: usize,
    pub agentload: Costs,
    pub floor: Costs,
    pub peak_rss_mib: f64,
    /// The whole `agentload run` process: CPU and wall time, start-up and reports included.
    pub process_cpu_s: f64,
    pub process_wall_s: f64,
    pub send_lag_p50_ms: Option<f64>,
    pub send_lag_p99_ms: Option<f64>,
    pub failed_turns: u64,
    /// Mean output tokens per turn and mean delay before a turn, s.
    pub mean_osl: f64,
    pub mean_delay_s: f64,
    /// Cores agentload needs at the rack point (projection).
    pub rack_cores: RackCores,
}

/// Cores agentload would need for AA-AgentPerf's rack point, projected.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct RackCores {
    /// Turns per second there times CPU per turn here.
    pub by_turns: f64,
    /// Output tokens per second there times CPU per output token here.
    pub by_tokens: f64,
}

/// Runs the section.
pub async fn run(opts: &Options) -> Result<(Agents, Vec<Row>)> {
    let dir = std::env::temp_dir().join(format!("agentload-bench-agents-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = measure(opts, &dir).await;
    std::fs::remove_dir_all(&dir).ok();
    let agents = result?;
    let rows = rows(opts, &agents);
    Ok((agents, rows))
}

async fn measure(opts: &Options, dir: &Path) -> Result<Agents> {
    let exe = std::env::current_exe().context("cannot find the agentload binary")?;
    let (mut sim, url, addr) = start_sim(&exe, opts.agents, opts.stream_tps).await?;
    let config = dir.join("agents.toml");
    std::fs::write(&config, config_text(opts, &url, &[opts.agents]))?;
    let out = dir.join("run");
    let child = run_agentload(&exe, &config, &out, &[]).await?;
    let (peak_kib, wall_s) = (child.peak_rss_kib, child.wall_s);
    let stats = sim_stats(addr).await?;
    let turns = read_turns(&out.join(format!("sweep/phase-00-c{}/turns.jsonl", opts.agents)))?;
    let summary: Value = serde_json::from_slice(&std::fs::read(out.join("sweep/summary.json"))?)?;
    let phase = &summary["phases"][0];
    let lag = |p: &str| phase["send_lag_ms"][p].as_f64();
    // The phase's own CPU (the sweep measures it around the phase), not
    // the process's start-up (loading, `configure`) or its reports.
    let agentload = Costs {
        turns: turns.turns,
        output_tokens: turns.output_tokens,
        request_bytes: stats.request_bytes,
        cpu_s: phase["harness_cpu_s"]
            .as_f64()
            .context("the sweep summary has no harness_cpu_s")?,
        wall_s: phase["wall_s"].as_f64().unwrap_or(wall_s),
    };
    let mean_request = stats.request_bytes / stats.requests.max(1);
    let mean_osl = turns.output_tokens as f64 / turns.turns.max(1) as f64;
    let mean_delay_s = turns.delay_ms as f64 / 1e3 / turns.turns.max(1) as f64;
    let floor = floor(
        addr,
        opts,
        mean_request as usize,
        mean_osl.round().max(1.0) as u32,
        mean_delay_s,
    )
    .await?;
    sim.kill().await.ok();
    // A rack-point turn: AA's mean output at the assumed speed, then its
    // delay. Its cost counted two ways, each charging all of the measured
    // CPU to one unit (so each is an upper bound on that unit's share):
    // per turn, and per output token at AA's mean output.
    let turn_s = AA_MEAN_OSL / opts.rack_stream_tps + mean_delay_s;
    let rack_turns_per_s = AA_RACK_AGENTS / turn_s;
    let rack_cores = RackCores {
        by_turns: rack_turns_per_s * agentload.cpu_s / agentload.turns.max(1) as f64,
        by_tokens: rack_turns_per_s * AA_MEAN_OSL * agentload.cpu_s
            / agentload.output_tokens.max(1) as f64,
    };
    Ok(Agents {
        agents: opts.agents,
        agentload,
        floor,
        peak_rss_mib: peak_kib as f64 / 1024.0,
        process_cpu_s: child.cpu_s,
        process_wall_s: wall_s,
        send_lag_p50_ms: lag("p50"),
        send_lag_p99_ms: lag("p99"),
        failed_turns: phase["errors"]["failed_turns"].as_u64().unwrap_or_default(),
        mean_osl,
        mean_delay_s,
        rack_cores,
    })
}

/// A simulator child (`fill` responder, a slot per agent and 16 spare, every
/// stream at `stream_tps`), its URL and address.
pub(super) async fn start_sim(
    exe: &Path,
    agents: usize,
    stream_tps: f64,
) -> Result<(tokio::process::Child, String, std::net::SocketAddr)> {
    let slots = (agents + 16).to_string();
    let tps = stream_tps.to_string();
    let mut sim = tokio::process::Command::new(exe)
        .args([
            "sim",
            "--port",
            "0",
            "--responder",
            "fill",
            "--tokenizer",
            "approx",
            "--slots",
            &slots,
            "--decode-tps",
            &tps,
            "--decode-batch-slowdown",
            "0",
            "--prefill-tps",
            "1e9",
            "--prefill-chunk-tokens",
            "1000000000",
            "--ctx-size",
            "1000000",
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .context("cannot start agentload sim")?;
    let url = super::first_line(&mut sim).await?;
    let addr: std::net::SocketAddr = url
        .trim_start_matches("http://")
        .parse()
        .with_context(|| format!("agentload sim printed `{url}`, not http://ADDR"))?;
    Ok((sim, url, addr))
}

/// What an `agentload run` child used.
pub(super) struct Child {
    /// Its peak resident set, KiB.
    pub peak_rss_kib: i64,
    /// The largest resident set seen (sampled every 100 ms) in each stage:
    /// stage `i` is while the first `i` of the marks exist (and not the next).
    pub rss_by_stage_kib: Vec<i64>,
    /// Its CPU time (start-up and reports included) and wall time, s.
    pub cpu_s: f64,
    pub wall_s: f64,
}

/// `agentload run CONFIG --out OUT` in a child process, to its end (a
/// failure is an error); its resident set is sampled by stage, each `marks`
/// file that appears (in order) starting the next.
pub(super) async fn run_agentload(
    exe: &Path,
    config: &Path,
    out: &Path,
    marks: &[&Path],
) -> Result<Child> {
    let log = out.with_extension("log");
    let stderr =
        std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let before = super::children_usage();
    let started = Instant::now();
    let mut run = tokio::process::Command::new(exe)
        .arg("run")
        .arg(config)
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .context("cannot run agentload")?;
    // Its peak RSS as the kernel counts it (`VmHWM`), read until it exits;
    // `getrusage` gives the exact figure when this child set a new maximum.
    let mut hwm_kib = 0;
    let mut by_stage = vec![0; marks.len() + 1];
    let mut stage = 0;
    let status = loop {
        while stage < marks.len() && marks[stage].exists() {
            stage += 1;
        }
        if let Some(pid) = run.id() {
            if let Some(kib) = status_kib(pid, "VmHWM:") {
                hwm_kib = kib;
            }
            if let Some(kib) = status_kib(pid, "VmRSS:") {
                by_stage[stage] = by_stage[stage].max(kib);
            }
        }
        tokio::select! {
            status = run.wait() => break status?,
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    };
    let wall_s = started.elapsed().as_secs_f64();
    let after = super::children_usage();
    if !status.success() {
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: Vec<&str> = said.lines().rev().take(10).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        anyhow::bail!("agentload run failed ({status}):\n{}", tail.join("\n"));
    }
    let peak_rss_kib = if after.max_rss_kib > before.max_rss_kib {
        after.max_rss_kib
    } else {
        hwm_kib
    };
    Ok(Child {
        peak_rss_kib,
        rss_by_stage_kib: by_stage,
        cpu_s: after.cpu_s - before.cpu_s,
        wall_s,
    })
}

/// Seconds a turn may stream at most (its output is capped to fit).
const OSL_CAP_S: f64 = 15.0;

/// The output cap: [`OSL_CAP_S`] at the stream rate.
pub(super) fn osl_cap(stream_tps: f64) -> u64 {
    ((stream_tps * OSL_CAP_S) as u64).max(1)
}

/// Mean output of AA-AgentPerf's shape (the synthetic workload's defaults),
/// tokens per turn: the rack projection's turn length.
const AA_MEAN_OSL: f64 = 440.0;

/// The one-level sweep agentload runs.
pub(super) fn config_text(opts: &Options, url: &str, levels: &[usize]) -> String {
    let s = opts.scale;
    let words = |w: f64| ((w * s).round() as u64).max(1);
    format!(
        r#"name = "bench-agents"
version = "1.0"
[model]
name = "bench"
tokenizer = "none"
[endpoint]
url = "{url}"
stream = true
include_usage = true
preflight = false
[load]
turn_timeout_s = 3600.0
[plugins]
workload_instances = {instances}
[performance]
workload = "agentic-synth"
[performance.settings]
seed = 7
system_words = {system}
max_context = {max_context}
context = {{ median = {context}.0, sigma = 0.75, min = {context_min}, max = {context_max} }}
tool_output = {{ median = {tool}.0, sigma = 1.0, min = 1, max = {tool_max} }}
tool_call_osl = {{ median = {call}.0, sigma = 0.6, min = 1, max = {call_max} }}
reasoning_osl = {{ median = {reason}.0, sigma = 0.8, min = 1, max = {reason_max} }}
[sweep]
levels = {levels:?}
# On time alone: a synthetic trajectory lasts minutes at a slow stream rate.
min_trajectories = 0
min_per_agent = 0
steady_state_s = {seconds}
warmup_s = 5.0
max_phase_s = {max_phase}
# Every turn ends within OSL_CAP_S at the stream rate: the phase drains
# in-flight turns after its window, and a 16K-token answer at a few tokens
# a second would hold it for an hour.
max_tokens = {max_tokens}
keep_workload_max_tokens = true
salt = true
tool_delay = "recorded"
seed = 7
max_trajectories_per_agent = 50
"#,
        system = words(1500.0),
        max_context = words(131_072.0).max(8),
        context = words(14_000.0),
        context_min = words(3_500.0),
        context_max = words(110_000.0),
        tool = words(500.0),
        tool_max = words(8_000.0),
        call = words(120.0),
        call_max = words(1_024.0),
        reason = words(1_200.0),
        reason_max = words(16_384.0),
        instances = opts.instances,
        seconds = opts.seconds,
        max_phase = opts.seconds * 3.0 + 60.0,
        max_tokens = osl_cap(opts.stream_tps),
    )
}

/// Totals of a phase's `turns.jsonl`.
pub(super) struct Turns {
    pub turns: u64,
    pub output_tokens: u64,
    /// Sum of the delays before the turns (due minus the previous answer's end).
    pub delay_ms: u64,
    /// Each sent turn's send lag (issued minus due), ms.
    pub send_lag_ms: Vec<f64>,
}

pub(super) fn read_turns(path: &Path) -> Result<Turns> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut t = Turns {
        turns: 0,
        output_tokens: 0,
        delay_ms: 0,
        send_lag_ms: Vec::new(),
    };
    let mut last_end: std::collections::HashMap<String, u64> = Default::default();
    for line in text.lines() {
        let r: Value = serde_json::from_str(line)?;
        t.turns += 1;
        t.output_tokens += r["usage"]["completion_tokens"].as_u64().unwrap_or_default();
        let session = r["session_id"].as_str().unwrap_or_default().to_owned();
        if let (Some(&end), Some(due)) = (last_end.get(&session), r["scheduled_ns"].as_u64()) {
            t.delay_ms += due.saturating_sub(end) / 1_000_000;
        }
        if let (Some(due), Some(issued)) = (r["scheduled_ns"].as_u64(), r["issued_ns"].as_u64()) {
            t.send_lag_ms.push(issued.saturating_sub(due) as f64 / 1e6);
        }
        if let Some(end) = r["complete_ns"].as_u64() {
            last_end.insert(session, end);
        }
    }
    Ok(t)
}

/// The simulator's request count and request bytes so far.
pub(super) struct SimStats {
    pub requests: u64,
    pub request_bytes: u64,
}

pub(super) async fn sim_stats(addr: std::net::SocketAddr) -> Result<SimStats> {
    let mut tcp = tokio::net::TcpStream::connect(addr).await?;
    tcp.write_all(b"GET /agentload/stats HTTP/1.1\r\nHost: sim\r\nConnection: close\r\n\r\n")
        .await?;
    let mut text = String::new();
    tcp.read_to_string(&mut text).await?;
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    let v: Value = serde_json::from_str(body).context("the simulator's stats")?;
    Ok(SimStats {
        requests: v["chat_requests_received"].as_u64().unwrap_or_default(),
        request_bytes: v["chat_request_bytes"].as_u64().unwrap_or_default(),
    })
}

/// The floor: `opts.agents` keep-alive connections ([`super::floor::StreamFloor`]:
/// agentload's kernel-stamped reads), each sending a request of `body_bytes`
/// for `osl` tokens, reading until `[DONE]` (a byte search, no parsing),
/// waiting `delay_s`, for `opts.seconds`; its CPU is this process's over that
/// time (nothing else runs in it meanwhile).
async fn floor(
    addr: std::net::SocketAddr,
    opts: &Options,
    body_bytes: usize,
    osl: u32,
    delay_s: f64,
) -> Result<Costs> {
    let head = format!(
        r#"{{"model":"bench","stream":true,"stream_options":{{"include_usage":true}},"max_completion_tokens":{osl},"messages":[{{"role":"user","content":""#
    );
    let tail = r#""}]}"#;
    let fill = body_bytes.saturating_sub(head.len() + tail.len()).max(5);
    let body = format!("{head}{}{tail}", " data".repeat(fill / 5));
    let request: std::sync::Arc<[u8]> = super::floor::request("sim", body.as_bytes()).into();
    let until = Instant::now() + Duration::from_secs_f64(opts.seconds + 5.0);
    let cpu_before = super::process_cpu_seconds(std::process::id()).unwrap_or_default();
    let started = Instant::now();
    let n = opts.agents.max(1);
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let request = request.clone();
            tokio::spawn(async move {
                // The first requests spread over one delay.
                let stagger = delay_s * i as f64 / n as f64;
                tokio::time::sleep(Duration::from_secs_f64(stagger)).await;
                floor_agent(addr, &request, delay_s, until).await
            })
        })
        .collect();
    let mut costs = Costs::default();
    for t in tasks {
        let (turns, tokens) = t.await.context("a floor agent panicked")??;
        costs.turns += turns;
        costs.output_tokens += tokens;
        costs.request_bytes += turns * body.len() as u64;
    }
    costs.wall_s = started.elapsed().as_secs_f64();
    costs.cpu_s = super::process_cpu_seconds(std::process::id()).unwrap_or_default() - cpu_before;
    Ok(costs)
}

/// One floor agent; returns its turns and the token chunks it read.
async fn floor_agent(
    addr: std::net::SocketAddr,
    request: &[u8],
    delay_s: f64,
    until: Instant,
) -> Result<(u64, u64)> {
    let mut conn = super::floor::StreamFloor::connect(addr).await?;
    let (mut turns, mut tokens) = (0, 0);
    while Instant::now() < until {
        tokens += conn.exchange(request).await?.tokens;
        turns += 1;
        tokio::time::sleep(Duration::from_secs_f64(delay_s)).await;
    }
    Ok((turns, tokens))
}

/// A `/proc/PID/status` field in KiB (`VmHWM:`, `VmRSS:`).
fn status_kib(pid: u32, field: &str) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn rows(opts: &Options, a: &Agents) -> Vec<Row> {
    let (l, f) = (&a.agentload, &a.floor);
    let ratio = |x: f64, y: f64| if y > 0.0 { x / y } else { f64::NAN };
    let mut rows = vec![
        Row::new(
            "agents",
            format!(
                "agents alive (scale {}, {} workload instance(s))",
                opts.scale, opts.instances
            ),
            a.agents as f64,
            "",
        ),
        Row::new("agents", "agentload peak RSS", a.peak_rss_mib, "MiB"),
        Row::new(
            "agents",
            "agentload RSS per agent",
            a.peak_rss_mib * 1024.0 / a.agents.max(1) as f64,
            "KiB",
        ),
        Row::new("agents", "agentload turns", l.turns as f64, ""),
        Row::new("agents", "agentload phase wall time", l.wall_s, "s"),
        Row::new(
            "agents",
            "agentload process CPU (start-up, reports)",
            a.process_cpu_s,
            "s",
        ),
        Row::new(
            "agents",
            "agentload process wall time",
            a.process_wall_s,
            "s",
        ),
        Row::new("agents", "floor turns", f.turns as f64, ""),
        Row::new("agents", "failed turns", a.failed_turns as f64, ""),
    ];
    if let (Some(p50), Some(p99)) = (a.send_lag_p50_ms, a.send_lag_p99_ms) {
        rows.push(Row::new("agents", "send lag p50", p50, "ms"));
        rows.push(Row::new("agents", "send lag p99", p99, "ms"));
    }
    for (what, mine, floor, unit) in [
        ("CPU per turn", l.per_turn_ms(), f.per_turn_ms(), "ms"),
        (
            "CPU per output token",
            l.per_token_us(),
            f.per_token_us(),
            "µs",
        ),
        ("CPU per request KiB", l.per_kib_us(), f.per_kib_us(), "µs"),
    ] {
        rows.push(Row::new("agents", format!("agentload {what}"), mine, unit));
        rows.push(Row::new("agents", format!("floor {what}"), floor, unit));
        rows.push(Row::new(
            "agents",
            format!("{what} / floor"),
            ratio(mine, floor),
            "x",
        ));
    }
    rows.push(Row::new(
        "agents",
        format!(
            "mean output per turn (capped at {})",
            osl_cap(opts.stream_tps)
        ),
        a.mean_osl,
        "tokens",
    ));
    rows.push(Row::new(
        "agents",
        "mean delay before a turn",
        a.mean_delay_s,
        "s",
    ));
    let rack = format!(
        "{AA_RACK_AGENTS} agents, OSL {AA_MEAN_OSL}, {} tok/s per stream",
        opts.rack_stream_tps
    );
    rows.push(Row::new(
        "agents",
        format!("projected cores by CPU per turn ({rack})"),
        a.rack_cores.by_turns,
        "cores",
    ));
    rows.push(Row::new(
        "agents",
        format!("projected cores by CPU per token ({rack})"),
        a.rack_cores.by_tokens,
        "cores",
    ));
    rows
}
