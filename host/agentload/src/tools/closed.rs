//! Closed-loop replay in a run (`history = "closed"`): the checks made
//! before anything is compiled or sent (never in a submission run, the
//! granted workspaces the locked ones), and the tool pool the
//! phase's sessions run their calls in.

use agentload_config::tools::{task_of, ToolMessages, ToolsConfig};
use agentload_config::{PhaseConfig, RunConfig};
use agentload_engine::closed::{ClosedLoop, Workspace};
use agentload_engine::tools::ToolPool;
use agentload_plugin_host::tools::WorkspaceSpec;
use agentload_plugin_host::SessionPlan;
use agentload_results::tools::ClosedLoopSummary;
use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The pool's name of the empty workspace (sessions of a task with no
/// workspace granted).
const EMPTY: &str = "empty";

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
/// official), or with a workspace archive that is not the locked one (on a
/// resume too: the sessions' files are made again from it).
pub fn check(config: &RunConfig, submission: bool) -> Result<()> {
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
    let tools = config
        .tools
        .as_ref()
        .context("closed-loop replay needs a [tools] table")?;
    read_workspaces(config, tools).map(drop)
}

/// The phase's sessions as they are planned: a closed-loop session is as
/// long as the model makes it, so only its first request (the
/// recording's) is expected of it, whatever the recording's length: the
/// progress total, the missing count and the validity line all count one
/// turn per session. A `[tools.workspaces.<task>]` of no session's task is
/// refused here, before any request.
pub fn planned(
    config: &RunConfig,
    phase: &PhaseConfig,
    mut sessions: Vec<SessionPlan>,
) -> Result<Vec<SessionPlan>> {
    if phase.closed_history() {
        let ids: Vec<String> = sessions.iter().map(|s| s.id.clone()).collect();
        check_tasks(config, phase, &ids)?;
        for s in &mut sessions {
            s.expected_turns = 1;
        }
    }
    Ok(sessions)
}

/// Refuses a `[tools.workspaces.<task>]` whose task no session of the
/// phase has (the phase's sessions as the workload planned them), naming
/// the key: before any request.
pub fn check_tasks(config: &RunConfig, phase: &PhaseConfig, sessions: &[String]) -> Result<()> {
    let (true, Some(tools)) = (phase.closed_history(), &config.tools) else {
        return Ok(());
    };
    let tasks: BTreeSet<&str> = sessions.iter().map(|s| task_of(s)).collect();
    for task in tools.workspaces.keys() {
        if !tasks.contains(task.as_str()) {
            let key = tools
                .grants()
                .find(|(t, _, _)| *t == Some(task.as_str()))
                .map_or_else(|| format!("tools.workspaces.{task}"), |(_, k, _)| k);
            let known: Vec<&str> = tasks.iter().copied().collect();
            bail!(
                "{key}: no session of the phase is of task `{task}` (its tasks: {}): refused \
                 before any request",
                known.join(", ")
            );
        }
    }
    Ok(())
}

/// Every granted archive, read and checked against its digest: `(task,
/// key, spec)` (no task: `[tools.workspace]`, every other session's); an
/// error names the key.
fn read_workspaces(
    config: &RunConfig,
    tools: &ToolsConfig,
) -> Result<Vec<(Option<String>, String, WorkspaceSpec)>> {
    let data = agentload_config::data::data_dir(config.data_dir.as_deref());
    tools
        .grants()
        .map(|(task, key, grant)| {
            let path = data.join(&grant.archive);
            let archive = std::fs::read(&path)
                .with_context(|| format!("{key}.archive: cannot read {}", path.display()))?;
            let want = grant
                .sha256
                .strip_prefix("sha256:")
                .unwrap_or(&grant.sha256)
                .to_ascii_lowercase();
            let got = hex::encode(Sha256::digest(&archive));
            if got != want {
                bail!(
                    "{key}.sha256: {} has sha256 {got}, the config locks {want}: refused before \
                     any request",
                    path.display()
                );
            }
            let spec = WorkspaceSpec {
                name: key.clone(),
                archive,
                mount: grant.mount.clone(),
                branch: grant.branch.clone(),
            };
            Ok((task.map(str::to_owned), key, spec))
        })
        .collect()
}

/// An empty workspace at `mount`: what a session of a task with no
/// workspace granted works in.
fn empty_workspace(mount: &str) -> Result<WorkspaceSpec> {
    let archive = tar::Builder::new(Vec::new())
        .into_inner()
        .context("an empty archive")?;
    Ok(WorkspaceSpec {
        name: EMPTY.to_owned(),
        archive,
        mount: mount.to_owned(),
        branch: "main".to_owned(),
    })
}

/// The phase's closed loop: the workspaces read again (and checked again
/// against their digests), the tool environment loaded, its pool started
/// with every workspace in every instance (a refused archive stops the run
/// here, before the phase's first request). `sessions` are the phase's
/// sessions: one of a task with no workspace granted works in an empty one
/// (said on the console, and in `closed_loop.json`). None for a phase that
/// does not run closed-loop.
pub async fn start(
    config: &RunConfig,
    phase: &PhaseConfig,
    sessions: &[String],
) -> Result<Option<Arc<ClosedLoop>>> {
    let (true, Some(tools)) = (phase.closed_history(), &config.tools) else {
        return Ok(None);
    };
    check_tasks(config, phase, sessions)?;
    let mut specs = Vec::new();
    let mut workspaces = HashMap::new();
    let mut default = None;
    for (task, key, spec) in read_workspaces(config, tools)? {
        let workspace = Workspace {
            name: key.clone(),
            grant: key,
        };
        match task {
            Some(task) => {
                workspaces.insert(task, workspace);
            }
            None => default = Some(workspace),
        }
        specs.push(spec);
    }
    let bare: Vec<&str> = sessions
        .iter()
        .map(String::as_str)
        .filter(|s| default.is_none() && !workspaces.contains_key(task_of(s)))
        .collect();
    let default = match default {
        Some(d) => d,
        None => {
            let mount = tools
                .workspaces
                .values()
                .next()
                .map_or("/workspace", |g| g.mount.as_str());
            specs.push(empty_workspace(mount)?);
            Workspace {
                name: EMPTY.to_owned(),
                grant: EMPTY.to_owned(),
            }
        }
    };
    if !bare.is_empty() {
        agentload_console::line(&format!(
            "note: closed loop: {} session(s) of a task with no workspace granted ({}) work in an \
             empty workspace (no [tools.workspace], no [tools.workspaces.<task>] for them)",
            bare.len(),
            bare.join(", ")
        ));
    }
    let limits = super::limits(&tools.limits);
    let env = super::environment(&tools.environment, config.plugins.dir.as_deref(), limits)
        .with_context(|| format!("tools.environment `{}`", tools.environment))?;
    let instances = tools.instances;
    let pool = tokio::task::spawn_blocking(move || ToolPool::start(env, specs, instances))
        .await?
        .map_err(|e| anyhow::anyhow!("tools: {e}"))?;
    let messages = tools.messages.unwrap_or(if phase.workload == "aa-replay" {
        ToolMessages::Openclaw
    } else {
        ToolMessages::MiniSweAgent
    });
    Ok(Some(Arc::new(ClosedLoop {
        pool: Arc::new(pool),
        workspaces,
        default,
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
