//! Closed-loop replay in a run (`history = "closed"`): the checks made
//! before anything is compiled or sent (never in a submission run, never
//! resumed, the granted workspace the locked one), and the tool pool the
//! phase's sessions run their calls in.

use agentload_config::tools::{ToolMessages, ToolsConfig};
use agentload_config::{PhaseConfig, RunConfig};
use agentload_engine::closed::ClosedLoop;
use agentload_engine::tools::ToolPool;
use agentload_plugin_host::tools::WorkspaceSpec;
use agentload_results::tools::ClosedLoopSummary;
use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The name sessions open the granted workspace by.
const WORKSPACE: &str = "workspace";

/// The phase that runs closed-loop, if one does.
fn closed_phase(config: &RunConfig) -> Option<(&'static str, &PhaseConfig)> {
    [
        ("performance", &config.performance),
        ("accuracy", &config.accuracy),
    ]
    .into_iter()
    .find_map(|(name, p)| Some((name, p.as_ref().filter(|p| p.closed_history())?)))
}

/// Refuses a closed-loop run that cannot be made, before anything is
/// compiled, read or sent: in a submission run (closed-loop replay is not
/// official), on a resume, or with a workspace archive that is not the
/// locked one.
pub fn check(config: &RunConfig, submission: bool, resume: bool) -> Result<()> {
    let Some((name, _)) = closed_phase(config) else {
        return Ok(());
    };
    if submission {
        bail!(
            "{name}.settings.history = \"closed\" is refused in a submission run: closed-loop \
             replay answers the model with its own tool calls' results, not the recording, and \
             is not an official mode"
        );
    }
    if resume {
        bail!(
            "{name}.settings.history = \"closed\": a closed-loop run cannot be resumed (run it \
             again)"
        );
    }
    let tools = config
        .tools
        .as_ref()
        .context("closed-loop replay needs a [tools] table")?;
    read_workspace(config, tools).map(drop)
}

/// The granted archive, read and checked against its digest; an error
/// names the key.
fn read_workspace(config: &RunConfig, tools: &ToolsConfig) -> Result<WorkspaceSpec> {
    let grant = &tools.workspace;
    let path = agentload_config::data::data_dir(config.data_dir.as_deref()).join(&grant.archive);
    let archive = std::fs::read(&path)
        .with_context(|| format!("tools.workspace.archive: cannot read {}", path.display()))?;
    let want = grant
        .sha256
        .strip_prefix("sha256:")
        .unwrap_or(&grant.sha256)
        .to_ascii_lowercase();
    let got = hex::encode(Sha256::digest(&archive));
    if got != want {
        bail!(
            "tools.workspace.sha256: {} has sha256 {got}, the config locks {want}: refused \
             before any request",
            path.display()
        );
    }
    Ok(WorkspaceSpec {
        name: WORKSPACE.to_owned(),
        archive,
        mount: grant.mount.clone(),
        branch: grant.branch.clone(),
    })
}

/// The phase's closed loop: the workspace read again (and checked again
/// against its digest), the tool environment loaded, its pool started with
/// the workspace in every instance (a refused archive stops the run here,
/// before the phase's first request). None for a phase that does not run
/// closed-loop.
pub async fn start(config: &RunConfig, phase: &PhaseConfig) -> Result<Option<Arc<ClosedLoop>>> {
    let (true, Some(tools)) = (phase.closed_history(), &config.tools) else {
        return Ok(None);
    };
    let spec = read_workspace(config, tools)?;
    let limits = super::limits(&tools.limits);
    let env = super::environment(&tools.environment, config.plugins.dir.as_deref(), limits)
        .with_context(|| format!("tools.environment `{}`", tools.environment))?;
    let instances = tools.instances;
    let pool = tokio::task::spawn_blocking(move || ToolPool::start(env, vec![spec], instances))
        .await?
        .map_err(|e| anyhow::anyhow!("tools.workspace: {e}"))?;
    let messages = tools.messages.unwrap_or(if phase.workload == "aa-replay" {
        ToolMessages::Openclaw
    } else {
        ToolMessages::MiniSweAgent
    });
    Ok(Some(Arc::new(ClosedLoop {
        pool: Arc::new(pool),
        workspace: WORKSPACE.to_owned(),
        max_turns: tools.max_turns,
        messages,
    })))
}

/// After a closed-loop performance phase: its numbers, from the records in
/// `log`, written to `performance/closed_loop.json`; the report's lines.
/// Nothing for a phase that is not closed-loop.
pub fn after_performance(
    phase: &PhaseConfig,
    log: &std::path::Path,
    order: &[String],
    dir: &agentload_fs::OutDir,
) -> Result<String> {
    if !phase.closed_history() {
        return Ok(String::new());
    }
    let mut blocks = Vec::new();
    agentload_engine::each_record(log, |r| {
        if let Some(closed) = r.closed {
            blocks.push((r.session_id, *closed));
        }
    })
    .map_err(anyhow::Error::msg)?;
    let summary = ClosedLoopSummary::of(blocks.iter().map(|(s, b)| (s.as_str(), b)), order);
    dir.write_json("performance/closed_loop.json", &summary)?;
    Ok(summary.report_lines())
}

/// A run's turn records as JSON, in log order (the closed-loop bench reads
/// their times and `closed` blocks).
pub fn read_turns(log: &std::path::Path) -> Result<Vec<serde_json::Value>> {
    let text =
        std::fs::read_to_string(log).with_context(|| format!("cannot read {}", log.display()))?;
    text.lines()
        .map(|l| serde_json::from_str(l).with_context(|| format!("{}: not JSON", log.display())))
        .collect()
}
