//! `agentload tools exec`: tool calls run in a sandbox session over a
//! workspace archive, as a closed-loop run runs them.

use agentload_config::tools::ToolLimitsConfig;
use agentload_engine::tools::{Answered, ToolPool};
use agentload_plugin_host::tools::{ToolCall, WorkspaceSpec};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// What `agentload tools exec` was asked.
#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// The workspace archive (`agentload dataset workspace DIR --out F`
    /// makes one).
    #[arg(long)]
    pub workspace: PathBuf,
    /// The archive's sha256 (hex): another archive is refused before any
    /// call runs.
    #[arg(long)]
    pub sha256: Option<String>,
    /// Where its files are in the sandbox; the shell starts there.
    #[arg(long, default_value = "/workspace")]
    pub mount: String,
    /// The branch git names.
    #[arg(long, default_value = "main")]
    pub branch: String,
    /// The tool environment (a name found where plugins are, or a path).
    #[arg(long, default_value = "shell-tools")]
    pub environment: String,
    /// Seeds the session's randomness.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// One JSON line per call (status, exit code, class, fuel, output).
    #[arg(long)]
    pub json: bool,
    /// Calls as JSON lines (`{"name": ..., "arguments": {...}}`) from this
    /// file (`-`: stdin); without it each COMMAND is a `bash` call.
    #[arg(long)]
    pub calls: Option<PathBuf>,
    /// Shell commands, each one `bash` call, in one session.
    pub commands: Vec<String>,
}

/// One call of a `--calls` file.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    name: String,
    arguments: serde_json::Value,
}

/// A pool of one instance with `archive` loaded as `workspace`, and a
/// session `session` open on it.
pub async fn session(
    environment: &str,
    plugin_dir: Option<&Path>,
    spec: WorkspaceSpec,
    session: &str,
    seed: u64,
) -> Result<ToolPool> {
    let limits = super::limits(&ToolLimitsConfig::default());
    let env = super::environment(environment, plugin_dir, limits)?;
    let name = spec.name.clone();
    let pool = tokio::task::spawn_blocking(move || ToolPool::start(env, vec![spec], 1))
        .await?
        .map_err(anyhow::Error::msg)?;
    pool.open(session, &name, seed)
        .await
        .map_err(anyhow::Error::msg)?;
    Ok(pool)
}

/// `agentload tools exec`.
pub async fn exec(args: ExecArgs) -> Result<()> {
    let spec = super::read_workspace(
        "workspace",
        &args.workspace,
        args.sha256.as_deref(),
        &args.mount,
        &args.branch,
    )?;
    let pool = session(&args.environment, None, spec, "cli", args.seed).await?;
    let calls = match &args.calls {
        Some(file) => read_calls(file)?,
        None => args
            .commands
            .iter()
            .map(|c| ToolCall {
                name: "bash".into(),
                arguments: serde_json::json!({ "command": c }).to_string(),
            })
            .collect(),
    };
    for (i, call) in calls.into_iter().enumerate() {
        let answers = pool.call("cli", vec![(format!("call_{i}"), call)]).await;
        for a in answers {
            print(&a, args.json);
        }
    }
    Ok(())
}

fn read_calls(file: &Path) -> Result<Vec<ToolCall>> {
    let text = if file == Path::new("-") {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            let line: Line = serde_json::from_str(l)
                .with_context(|| format!("{}:{}: not a call", file.display(), n + 1))?;
            Ok(ToolCall {
                name: line.name,
                arguments: line.arguments.to_string(),
            })
        })
        .collect()
}

fn print(answer: &Answered, json: bool) {
    let c = &answer.call;
    if json {
        let line = serde_json::json!({
            "name": c.name,
            "status": c.status.name(),
            "exit_code": c.exit_code,
            "class": c.class,
            "fuel": c.fuel,
            "detail": c.detail,
            "output": answer.output,
        });
        agentload_console::out(&format!("{line}\n"));
    } else {
        agentload_console::out(&answer.output);
        let mut note = format!("[{}", c.status.name());
        if let Some(code) = c.exit_code {
            note.push_str(&format!(", exit {code}"));
        }
        if !c.detail.is_empty() {
            note.push_str(&format!(", {}", c.detail));
        }
        note.push(']');
        agentload_console::line(&note);
    }
}
