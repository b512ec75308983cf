//! `agentload run CONFIG --shards N`: the run as N local processes, each an
//! `agentload shard` exactly as a Kubernetes pod runs it (shard 0
//! coordinates on a loopback port and merges into the output directory).
//! `agentload resume DIR` continues such a run: every shard resumes its own
//! directory, and the merge is written again.

use super::ShardOpts;
use crate::run::Mode;
use agentload_results::exit;
use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::process::{Child, Command};

/// `sharded.json` in the output directory: what a resume needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sharded {
    pub run_id: String,
    pub shards: u32,
    /// The config as the run was started with it.
    pub config: PathBuf,
    pub endpoint: Option<String>,
    pub mode: String,
    pub submission: bool,
}

/// What `run --shards` may set.
#[derive(Debug, Clone)]
pub struct Launch {
    pub config: PathBuf,
    pub shards: u32,
    pub out: Option<PathBuf>,
    pub endpoint: Option<String>,
    pub mode: Mode,
    pub submission: bool,
    pub force: bool,
    pub require_valid: bool,
    /// Seconds a shard may be silent before the run fails (default 10).
    pub silence_timeout: Duration,
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Performance => "perf",
        Mode::Accuracy => "accuracy",
        Mode::Both => "both",
    }
}

/// Starts the shards and waits for them; returns shard 0's exit code (the
/// merged run's).
pub async fn launch(l: Launch) -> Result<u8> {
    let config = agentload_config::RunConfig::load(&l.config)?;
    let out = l.out.clone().unwrap_or_else(|| config.report_dir.clone());
    std::fs::create_dir_all(&out)
        .with_context(|| format!("cannot create output directory {}", out.display()))?;
    let marker = out.join("sharded.json");
    if agentload_results::run_dir::has_entries(&out)? {
        if !l.force {
            anyhow::bail!(
                "the results directory {} is not empty: pass --force to replace an earlier run's \
                 results{}",
                out.display(),
                if marker.is_file() {
                    format!(", or `agentload resume {}` to continue it", out.display())
                } else {
                    String::new()
                }
            );
        }
        if marker.is_file() {
            for dir in ["shards", "work"] {
                let path = out.join(dir);
                if path.is_dir() {
                    std::fs::remove_dir_all(&path)
                        .with_context(|| format!("cannot remove {}", path.display()))?;
                }
            }
            std::fs::remove_file(&marker)?;
        }
    }
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let sharded = Sharded {
        run_id: format!("run-{secs}-{}", std::process::id()),
        shards: l.shards,
        config: std::fs::canonicalize(&l.config).unwrap_or(l.config.clone()),
        endpoint: l.endpoint.clone(),
        mode: mode_name(l.mode).to_owned(),
        submission: l.submission,
    };
    agentload_fs::OutDir::new(&out).write_json("sharded.json", &sharded)?;
    start(
        &out,
        &sharded,
        l.mode,
        false,
        l.require_valid,
        l.silence_timeout,
    )
    .await
}

/// `agentload resume DIR` of a sharded run.
pub async fn resume(out: &Path, require_valid: bool) -> Result<u8> {
    let sharded: Sharded =
        serde_json::from_slice(&agentload_fs::read::read(out.join("sharded.json"))?)
            .context("sharded.json")?;
    let mode = match sharded.mode.as_str() {
        "perf" => Mode::Performance,
        "accuracy" => Mode::Accuracy,
        _ => Mode::Both,
    };
    start(
        out,
        &sharded,
        mode,
        true,
        require_valid,
        Duration::from_secs(10),
    )
    .await
}

/// Whether `dir` holds a local sharded run.
pub fn is_sharded(dir: &Path) -> bool {
    dir.join("sharded.json").is_file()
}

async fn start(
    out: &Path,
    s: &Sharded,
    mode: Mode,
    resume: bool,
    require_valid: bool,
    silence: Duration,
) -> Result<u8> {
    let exe = std::env::current_exe().context("cannot find the agentload binary")?;
    let addr_file = out.join("coordinator.addr");
    let _ = std::fs::remove_file(&addr_file);
    let opts = |index: u32, coordinator: Option<String>| ShardOpts {
        config: s.config.clone(),
        shards: s.shards,
        index: Some(index),
        run_id: s.run_id.clone(),
        coordinator,
        listen: "127.0.0.1:0".parse().expect("an address"),
        addr_file: (index == 0).then(|| addr_file.clone()),
        out: out.to_path_buf(),
        work: None,
        endpoint: s.endpoint.clone(),
        mode,
        submission: s.submission,
        resume: resume
            && out
                .join("work")
                .join(index.to_string())
                .join("run_state.json")
                .is_file(),
        barrier_timeout: Duration::from_secs(60),
        silence_timeout: silence,
        linger: Duration::ZERO,
        upload_budget: agentload_shards::coordinator::DEFAULT_UPLOAD_BUDGET,
        require_valid,
    };
    let mut children: Vec<(u32, Child)> = vec![(0, spawn(&exe, &opts(0, None))?)];
    // Shard 0 says where its coordinator listens.
    let since = Instant::now();
    let addr = loop {
        if let Ok(text) = agentload_fs::read::read_to_string(&addr_file) {
            if !text.is_empty() {
                break text;
            }
        }
        if let Some(status) = children[0].1.try_wait()? {
            anyhow::bail!("shard 0 ended ({status}) before its coordinator listened");
        }
        if since.elapsed() > Duration::from_secs(120) {
            anyhow::bail!("shard 0's coordinator did not start within 120 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for index in 1..s.shards {
        children.push((
            index,
            spawn(&exe, &opts(index, Some(format!("http://{addr}"))))?,
        ));
    }
    // A shard that ends badly is said at once (shard 0's coordinator fails
    // the run when it misses it); the run ends with shard 0, whose exit code
    // is the merged run's.
    let mut workers = tokio::task::JoinSet::new();
    let mut zero = None;
    for (index, mut child) in children {
        if index == 0 {
            zero = Some(child);
            continue;
        }
        workers.spawn(async move {
            match child.wait().await {
                Ok(status) if !status.success() => {
                    agentload_console::line(&format!("shard {index} ended: {status}"))
                }
                Err(e) => agentload_console::line(&format!("shard {index}: {e}")),
                Ok(_) => {}
            }
        });
    }
    let status = zero.expect("shard 0 was started").wait().await?;
    // The others have uploaded by now (or are lost); give them a moment to exit.
    let _ = tokio::time::timeout(Duration::from_secs(10), async {
        while workers.join_next().await.is_some() {}
    })
    .await;
    Ok(status.code().map_or(exit::FAILURE, |c| c as u8))
}

fn spawn(exe: &Path, o: &ShardOpts) -> Result<Child> {
    let mut cmd = Command::new(exe);
    cmd.arg("shard")
        .arg(&o.config)
        .args(["--shards", &o.shards.to_string()])
        .args(["--index", &o.index.expect("set").to_string()])
        .args(["--run-id", &o.run_id])
        .args(["--listen", &o.listen.to_string()])
        .arg("--out")
        .arg(&o.out)
        .args(["--mode", mode_name(o.mode)])
        .args(["--linger-s", "0"])
        .args([
            "--silence-timeout-s",
            &o.silence_timeout.as_secs_f64().to_string(),
        ])
        .stdin(Stdio::null());
    if let Some(c) = &o.coordinator {
        cmd.args(["--coordinator", c]);
    }
    if let Some(f) = &o.addr_file {
        cmd.arg("--addr-file").arg(f);
    }
    if let Some(e) = &o.endpoint {
        cmd.args(["--endpoint", e]);
    }
    if o.submission {
        cmd.arg("--submission");
    }
    if o.resume {
        cmd.arg("--resume");
    }
    if o.require_valid {
        cmd.arg("--require-valid");
    }
    cmd.kill_on_drop(true)
        .spawn()
        .with_context(|| format!("cannot start {}", exe.display()))
}
