//! The tool sandbox in a run config: `[tools]`, what closed-loop replay
//! (`history = "closed"`) runs its sessions' tool calls on (the tool
//! environment, the granted workspace, the session's turn cap, how tool
//! results are written), and `[tools.limits]`, what the environment's
//! instances and sessions may use and the step and fuel budgets of one call
//! (`agentload tools exec` and `fidelity` run under the defaults).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// `[tools]`: closed-loop replay's sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// The tool environment: a plugin name found where plugins are
    /// (`shell-tools`, the default) or a path to a `.wasm`.
    #[serde(default = "default_environment")]
    pub environment: String,
    /// The repository a closed-loop session works in (each session on a
    /// copy-on-write copy of its own) when `workspaces` has none for its
    /// task. A session with neither works in an empty workspace, and
    /// `closed_loop.json` says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<WorkspaceGrant>,
    /// A workspace per task: `[tools.workspaces.<task>]`, the task being
    /// the session id up to its first `#` (the AA replay's `task_id`; a
    /// sweep's later pass `<task_id>#<pass>` is the same task). Every key
    /// must be a task of the phase: another is refused before any request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub workspaces: BTreeMap<String, WorkspaceGrant>,
    /// The most requests one closed-loop session sends: after the reply to
    /// the last one the session ends (`turn_cap`), its calls not run.
    #[serde(default = "default_max_turns")]
    pub max_turns: u32,
    /// Tool environment instances, each on a thread of its own, sessions
    /// spread over them (each session bound to one).
    #[serde(default = "default_instances")]
    pub instances: usize,
    /// How a tool result is written into the next request: as the
    /// recording's agent harness wrote it. Default: `openclaw` for the
    /// `aa-replay` workload, `mini-swe-agent` otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<ToolMessages>,
    #[serde(default)]
    pub limits: ToolLimitsConfig,
}

/// A workspace archive, locked by its digest (`[tools.workspace]`,
/// `[tools.workspaces.<task>]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceGrant {
    /// The archive (`agentload dataset workspace DIR --out F` makes one);
    /// relative to the data directory unless absolute.
    pub archive: PathBuf,
    /// Its sha256 (hex): another archive is refused before any request.
    pub sha256: String,
    /// Where its files are in the sandbox; the shell starts there.
    #[serde(default = "default_mount")]
    pub mount: String,
    /// The branch `git` names.
    #[serde(default = "default_branch")]
    pub branch: String,
}

/// `tools.messages`: which harness's words a tool result is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ToolMessages {
    /// mini-swe-agent's (the MLPerf Edge Agentic trajectories):
    /// `<returncode>N</returncode>` then `<output>`, long outputs cut to
    /// their ends with its warning.
    MiniSweAgent,
    /// OpenClaw's (AA's replays): a two-space indented JSON object,
    /// `returncode` then `output`.
    Openclaw,
    /// The tool's output as it is.
    Plain,
}

fn default_environment() -> String {
    "shell-tools".into()
}
fn default_max_turns() -> u32 {
    50
}
fn default_instances() -> usize {
    2
}
fn default_mount() -> String {
    "/workspace".into()
}
fn default_branch() -> String {
    "main".into()
}

impl ToolsConfig {
    /// Checks the table; the error names the key.
    pub fn check(&self) -> Result<(), (String, String)> {
        let bad = |key: &str, why: &str| Err((format!("tools.{key}"), why.to_owned()));
        if self.max_turns == 0 {
            return bad("max_turns", "must be at least 1");
        }
        if self.instances == 0 || self.instances > 256 {
            return bad("instances", "must be between 1 and 256");
        }
        if self.workspace.is_none() && self.workspaces.is_empty() {
            return bad(
                "workspace",
                "a [tools.workspace] table or at least one [tools.workspaces.<task>] is needed",
            );
        }
        for (_, key, grant) in self.grants() {
            grant
                .check()
                .map_err(|(k, why)| (format!("{key}.{k}"), why))?;
        }
        self.limits.check()
    }

    /// Every granted workspace: its task (none: `[tools.workspace]`, the
    /// other sessions'), its key (`tools.workspace`,
    /// `tools.workspaces.<task>`) and the grant.
    pub fn grants(&self) -> impl Iterator<Item = (Option<&str>, String, &WorkspaceGrant)> {
        let default = self
            .workspace
            .as_ref()
            .map(|g| (None, "tools.workspace".to_owned(), g));
        let tasks = self.workspaces.iter().map(|(task, g)| {
            let key = format!("tools.workspaces.{}", quoted_key(task));
            (Some(task.as_str()), key, g)
        });
        default.into_iter().chain(tasks)
    }
}

/// The task a session belongs to: its id up to the first `#`.
pub fn task_of(session: &str) -> &str {
    session.split_once('#').map_or(session, |(task, _)| task)
}

/// A TOML key as a config writes it (quoted unless bare).
pub fn quoted_key(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    match bare {
        true => key.to_owned(),
        false => format!("{key:?}"),
    }
}

impl WorkspaceGrant {
    /// Checks the grant; the error names the key below the grant's own.
    fn check(&self) -> Result<(), (String, String)> {
        let hex = self.sha256.strip_prefix("sha256:").unwrap_or(&self.sha256);
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err((
                "sha256".into(),
                "must be 64 hex digits (the archive's sha256)".into(),
            ));
        }
        if !self.mount.starts_with('/') {
            return Err((
                "mount".into(),
                "must be an absolute path in the sandbox".into(),
            ));
        }
        Ok(())
    }
}

/// `[tools.limits]`: what the environment's instances and sessions may use.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ToolLimitsConfig {
    /// All linear memories of one instance together (its workspaces and
    /// the files of every session bound to it), in MiB.
    pub memory_mib: u64,
    /// Fuel (executed WebAssembly instructions) one call may spend: the
    /// deterministic stop behind the step budgets below.
    pub fuel_per_call: u64,
    /// The wall-clock safety net of one call, in ms. Runaway commands are
    /// stopped by budgets; this fires only when something else is wrong,
    /// and is recorded as the call's `error`.
    pub call_timeout_ms: u64,
    /// MiB a session may add to its workspace.
    pub session_mib: u64,
    /// MiB of one file.
    pub file_mib: u64,
    /// Files and directories a session may add.
    pub session_entries: u64,
    /// Entries a workspace archive may hold.
    pub archive_entries: u64,
    /// MiB of file contents a workspace archive may hold.
    pub archive_mib: u64,
    /// Commands one call may run.
    pub commands: u32,
    /// Iterations of one loop.
    pub loop_iterations: u32,
    /// Iterations of all loops of one call together.
    pub total_loop_iterations: u32,
    /// The shell's own work units of one call.
    pub work_units: u64,
    /// KiB of output one call keeps.
    pub output_kib: u32,
}

impl Default for ToolLimitsConfig {
    fn default() -> Self {
        Self {
            memory_mib: 2048,
            fuel_per_call: 50_000_000_000,
            call_timeout_ms: 120_000,
            session_mib: 64,
            file_mib: 32,
            session_entries: 100_000,
            archive_entries: 200_000,
            archive_mib: 1024,
            commands: 100_000,
            loop_iterations: 100_000,
            total_loop_iterations: 1_000_000,
            work_units: 200_000_000,
            output_kib: 1024,
        }
    }
}

impl ToolLimitsConfig {
    /// Checks the limits; the error names the key (below `tools.limits`).
    pub fn check(&self) -> Result<(), (String, String)> {
        let bad = |key: &str, why: &str| Err((format!("tools.limits.{key}"), why.to_owned()));
        let l = self;
        for (key, value) in [
            ("memory_mib", l.memory_mib),
            ("fuel_per_call", l.fuel_per_call),
            ("call_timeout_ms", l.call_timeout_ms),
            ("file_mib", l.file_mib),
            ("archive_entries", l.archive_entries),
            ("archive_mib", l.archive_mib),
            ("commands", u64::from(l.commands)),
            ("work_units", l.work_units),
            ("output_kib", u64::from(l.output_kib)),
        ] {
            if value == 0 {
                return bad(key, "must be positive");
            }
        }
        if l.memory_mib > 4096 {
            return bad("memory_mib", "must be at most 4096 (wasm32's 4 GiB)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_is_the_session_id_up_to_its_pass_and_grants_name_their_key() {
        assert_eq!(task_of("task_k8s_debugging"), "task_k8s_debugging");
        assert_eq!(task_of("task_k8s_debugging#2"), "task_k8s_debugging");
        let tools: ToolsConfig = toml::from_str(
            "[workspaces.a]\narchive = \"a.tar\"\nsha256 = \"00\"\n\
             [workspaces.\"x y\"]\narchive = \"b.tar\"\nsha256 = \"00\"\n",
        )
        .unwrap();
        let keys: Vec<String> = tools.grants().map(|(_, k, _)| k).collect();
        assert_eq!(keys, ["tools.workspaces.a", "tools.workspaces.\"x y\""]);
        assert_eq!(tools.check().unwrap_err().0, "tools.workspaces.a.sha256");
        let none: ToolsConfig = toml::from_str("max_turns = 3\n").unwrap();
        assert_eq!(none.check().unwrap_err().0, "tools.workspace");
    }

    #[test]
    fn bad_limits_name_their_key() {
        let limits: ToolLimitsConfig = toml::from_str("fuel_per_call = 0\n").unwrap();
        assert_eq!(limits.check().unwrap_err().0, "tools.limits.fuel_per_call");
        assert!(toml::from_str::<ToolLimitsConfig>("bogus = 1\n")
            .unwrap_err()
            .to_string()
            .contains("unknown field `bogus`"));
    }
}
