//! `tools`: what the closed-loop sandbox costs, measured on a generated
//! repository (seeded: `files` Python-like files in nested packages).
//!
//! - per call, by class: wall time (p50, p99) and fuel (p50) of the commands
//!   coding agents run most (views, searches over the whole tree, edits,
//!   git), each repeated in one session;
//! - per session: the bytes of its own tree after a typical edit mix (what
//!   its overlay costs), and the instance's linear memory grown per session
//!   over `sessions` sessions;
//! - at scale: `agents` sessions spread over the pool's instances, each
//!   making one call of a realistic mix; the process CPU those calls took
//!   (measured), per call, and the cores a closed-loop run of `agents`
//!   agents would need at a given call rate (projected from the per-call
//!   figure, and said to be).

use super::{percentile, Row};
use agentload_config::tools::ToolLimitsConfig;
use agentload_engine::tools::ToolPool;
use agentload_plugin_host::tools::{ToolCall, WorkspaceSpec};
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// What the section runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Files in the generated repository.
    pub files: usize,
    /// Repetitions of each measured command.
    pub repeats: usize,
    /// Sessions opened for the overlay figures.
    pub sessions: usize,
    /// Concurrent agents of the scale figure.
    pub agents: usize,
    /// Pool instances (0: one per core).
    pub instances: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            files: 3000,
            repeats: 20,
            sessions: 200,
            agents: 1000,
            instances: 0,
        }
    }
}

/// The commands measured, by the class the sandbox gives them (file `i`
/// of the repository is `pkg_{i % 10}/mod_{i / 10 % 10}/file_{i}.py`).
const COMMANDS: &[&str] = &[
    "sed -n '10,40p' pkg_0/mod_0/file_0.py",
    "head -n 50 pkg_1/mod_1/file_11.py",
    "cat pkg_2/mod_3/file_32.py | grep -n def",
    "grep -rn 'def helper_7' --include='*.py' .",
    "find . -name '*.py' | wc -l",
    "ls -la pkg_3/mod_3",
    "grep -rl 'TODO: check 42' .",
    "sed -i 's/return value + 1/return value + 2/' pkg_4/mod_4/file_44.py",
    "cat > scratch.py <<'EOF'\nprint('scratch')\nEOF",
    "git status --short",
    "git diff --stat",
    "echo done && pwd",
];

/// A typical turn's call, for the scale figure (views and searches
/// dominate recorded agent calls).
const MIX: &[&str] = &[
    "sed -n '1,30p' pkg_0/mod_0/file_0.py",
    "grep -n 'def ' pkg_1/mod_2/file_21.py",
    "cat pkg_2/mod_1/file_12.py | head -40",
    "grep -rn 'helper_3' pkg_3/mod_3 | head -20",
    "ls pkg_4/mod_0",
    "sed -i 's/return value + 2/return value + 5/' pkg_1/mod_1/file_11.py",
    "git diff --stat",
    "wc -l pkg_0/mod_1/*.py",
];

/// A repository of `files` files, written under `root`.
pub(super) fn generate(root: &Path, files: usize) -> Result<()> {
    for i in 0..files {
        let dir = root.join(format!("pkg_{}/mod_{}", i % 10, (i / 10) % 10));
        std::fs::create_dir_all(&dir)?;
        let mut text = format!("\"\"\"Module {i}.\"\"\"\nimport os\n\n");
        for h in 0..30 {
            text.push_str(&format!(
                "\ndef helper_{h}(value):\n    # TODO: check {i}\n    return value + {}\n",
                h % 5
            ));
        }
        std::fs::write(dir.join(format!("file_{i}.py")), &text)?;
    }
    Ok(())
}

fn bash(command: &str) -> ToolCall {
    ToolCall {
        name: "bash".into(),
        arguments: serde_json::json!({ "command": command }).to_string(),
    }
}

/// This process's CPU seconds (user + system).
fn cpu_seconds() -> f64 {
    super::process_cpu_seconds(std::process::id()).unwrap_or(0.0)
}

/// Runs the section.
pub async fn run(options: &Options) -> Result<Vec<Row>> {
    let dir = std::env::temp_dir().join(format!("agentload-bench-tools-{}", std::process::id()));
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo)?;
    generate(&repo, options.files)?;
    let archive = dir.join("repo.tar");
    let packed = crate::workspace::pack(&repo, &archive)?;
    let spec = WorkspaceSpec {
        name: "repo".into(),
        archive: std::fs::read(&archive)?,
        mount: "/workspace".into(),
        branch: "main".into(),
    };
    let mut rows = vec![
        Row::new("tools", "workspace files", packed.files as f64, "files"),
        Row::new(
            "tools",
            "workspace bytes",
            packed.bytes as f64 / 1048576.0,
            "MiB",
        ),
    ];
    let limits = super::super::tools::limits(&ToolLimitsConfig::default());
    let env = super::super::tools::environment("shell-tools", None, limits)?;
    let instances = if options.instances == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        options.instances
    };
    let started = Instant::now();
    let pool = {
        let (env, spec) = (env.clone(), spec.clone());
        std::sync::Arc::new(
            tokio::task::spawn_blocking(move || ToolPool::start(env, vec![spec], instances))
                .await?
                .map_err(anyhow::Error::msg)?,
        )
    };
    rows.push(Row::new(
        "tools",
        format!("pool start ({instances} instances, workspace loaded in each)"),
        started.elapsed().as_secs_f64() * 1000.0,
        "ms",
    ));

    // Per call, by class.
    let mut by_class: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    pool.open("calls", "repo", 1)
        .await
        .map_err(anyhow::Error::msg)?;
    for _ in 0..options.repeats {
        for command in COMMANDS {
            let answered = pool.call("calls", vec![("c".into(), bash(command))]).await;
            let a = &answered[0];
            let entry = by_class.entry(a.call.class.clone()).or_default();
            entry.0.push(a.wall.as_secs_f64() * 1000.0);
            entry.1.push(a.call.fuel as f64);
        }
    }
    pool.close("calls");
    for (class, (mut wall, mut fuel)) in by_class {
        rows.push(Row::new(
            "tools",
            format!("{class} call p50"),
            percentile(&mut wall, 50.0),
            "ms",
        ));
        rows.push(Row::new(
            "tools",
            format!("{class} call p99"),
            percentile(&mut wall, 99.0),
            "ms",
        ));
        rows.push(Row::new(
            "tools",
            format!("{class} call fuel p50"),
            percentile(&mut fuel, 50.0) / 1e6,
            "M fuel",
        ));
    }

    // Per session: the overlay after an edit mix.
    let mut overlay = Vec::new();
    for s in 0..options.sessions {
        let id = format!("s{s}");
        pool.open(&id, "repo", s as u64)
            .await
            .map_err(anyhow::Error::msg)?;
        pool.call(
            &id,
            vec![
                (
                    "a".into(),
                    bash("sed -i 's/return value + 1/return value + 9/' pkg_1/mod_1/file_1.py"),
                ),
                (
                    "b".into(),
                    bash("cat > notes.md <<'EOF'\n# Notes\nfix helper_1\nEOF"),
                ),
                (
                    "c".into(),
                    bash("sed -i '1i # edited' pkg_2/mod_3/file_2.py"),
                ),
            ],
        )
        .await;
        if let Some(stats) = pool.stats(&id).await {
            overlay.push(stats.overlay_bytes as f64);
        }
    }
    rows.push(Row::new(
        "tools",
        "session overlay after 3 edits, p50",
        percentile(&mut overlay, 50.0) / 1024.0,
        "KiB",
    ));
    for s in 0..options.sessions {
        pool.close(&format!("s{s}"));
    }

    // At scale: every agent makes one call of the mix.
    let before_cpu = cpu_seconds();
    let started = Instant::now();
    for a in 0..options.agents {
        pool.open(&format!("agent{a}"), "repo", a as u64)
            .await
            .map_err(anyhow::Error::msg)?;
    }
    let opened = started.elapsed();
    let (rss_peak, _) = super::rss_kib().unwrap_or((0, 0));
    let started_calls = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for a in 0..options.agents {
        let pool = pool.clone();
        calls.spawn(async move {
            let command = MIX[a % MIX.len()];
            pool.call(&format!("agent{a}"), vec![("c".into(), bash(command))])
                .await
        });
    }
    let answers = calls.join_all().await;
    let wall = started_calls.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - before_cpu;
    let fuel: u64 = answers.iter().flatten().map(|a| a.call.fuel).sum();
    let n = options.agents as f64;
    rows.push(Row::new(
        "tools",
        format!("{} sessions opened", options.agents),
        opened.as_secs_f64() * 1000.0,
        "ms",
    ));
    rows.push(Row::new(
        "tools",
        format!("{} agents: one call each, wall", options.agents),
        wall * 1000.0,
        "ms",
    ));
    rows.push(Row::new(
        "tools",
        format!(
            "{} agents: process CPU (opening + calls), measured",
            options.agents
        ),
        cpu,
        "s",
    ));
    rows.push(Row::new(
        "tools",
        "CPU per call (opening included), measured",
        cpu / n * 1000.0,
        "ms",
    ));
    rows.push(Row::new(
        "tools",
        "fuel per call, mean",
        fuel as f64 / n / 1e6,
        "M fuel",
    ));
    rows.push(Row::new(
        "tools",
        "peak RSS with the sessions open",
        rss_peak as f64 / 1024.0,
        "MiB",
    ));
    // Projection: agents making one call every 10 s (a model turn of
    // several seconds plus the recorded tool time) need this many cores.
    let per_call = cpu / n;
    rows.push(Row::new(
        "tools",
        format!(
            "cores for {} agents at a call per agent every 10 s (projected)",
            options.agents
        ),
        per_call * n / 10.0,
        "cores",
    ));
    std::fs::remove_dir_all(&dir).ok();
    Ok(rows)
}
