//! `tool-sandbox`: a coding agent's tools, run deterministically over a
//! copy-on-write virtual workspace.
//!
//! A [`Sandbox`] holds workspaces (a repository snapshot read from an
//! archive into an immutable [tree](tree)) and sessions (each a copy-on-write
//! view of one workspace that its tool calls change). It offers the tools a
//! coding agent calls:
//!
//! - `bash` (`{"command": ...}`): a fresh shell per call (as `bash -c` in
//!   the agent's container), bashkit's interpreter with its built-in
//!   commands, over the session's files; stdout and stderr merged as `2>&1`;
//! - `str_replace_based_edit_tool` ([`editor`]): view, create, str_replace,
//!   insert, undo_edit;
//! - `apply_patch` ([`patch`]), also a shell command;
//! - `git` ([`git`]) inside the shell: status, diff, log, show, checkout,
//!   restore, stash, add, reset and a few plumbing commands, computed from
//!   the session's tree against the workspace's.
//!
//! A command the sandbox cannot run (Python, package managers, compilers,
//! the network: [`stubs`]) answers a fixed result and marks the call
//! `stubbed`. Nothing reads the host: no clock ([`clock`]: a fixed epoch
//! that moves only on `sleep`), no entropy ([`rng`]: seeded per session and
//! call), no files, no network. Runaway commands are stopped by step
//! budgets ([`Budgets`]) and the session's quota ([`fs::Quota`]), never by
//! time, so the same calls on the same workspace give the same bytes on any
//! machine under any load.

#![forbid(unsafe_code)]

pub mod archive;
pub mod classify;
pub mod clock;
pub mod delegate;
pub mod editor;
pub mod fs;
pub mod git;
pub mod mktemp;
pub mod output;
pub mod patch;
pub mod rng;
pub mod shell;
pub mod shuf;
pub mod sort;
pub mod stubs;
pub mod tree;

use archive::{ArchiveLimits, Commit};
use clock::Clock;
use fs::{Quota, SessionFs};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tree::{Dir, Usage};

pub use classify::Class;

/// The tools a sandbox offers, by the names a model calls them.
pub const TOOLS: [&str; 3] = ["bash", editor::NAME, patch::NAME];

/// How a call was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The tool ran (whatever its exit status; a budget that stopped it is
    /// in `detail`).
    Executed,
    /// The sandbox answered a fixed result instead of running it: a
    /// command it cannot run, or a tool it does not have.
    Stubbed,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Executed => "executed",
            Status::Stubbed => "stubbed",
        }
    }
}

/// What a tool call gave.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolResult {
    pub status: Status,
    /// What the tool printed (bash: stdout and stderr merged in order).
    pub output: String,
    /// The exit status (`bash`).
    pub exit_code: Option<i32>,
    /// One line: the stubbed commands, the budget that stopped the call;
    /// empty otherwise.
    pub detail: String,
    /// The kind of command, for the latency model and the cost tables.
    pub class: Class,
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub name: String,
    /// The arguments as the model wrote them (a JSON object).
    pub arguments: String,
}

/// Why the sandbox could not take a request (not a tool's own error,
/// which is a result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxError {
    /// The archive was refused.
    Workspace(String),
    /// No workspace or session of that name.
    Unknown(String),
    /// A request the sandbox cannot use (a session opened twice...).
    Input(String),
}

impl std::fmt::Display for SandboxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SandboxError::Workspace(m) | SandboxError::Unknown(m) | SandboxError::Input(m) => {
                f.write_str(m)
            }
        }
    }
}

/// The per-call step budgets: what stops a runaway command, counted in
/// steps, so it stops at the same point on every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// Commands one call may run.
    pub commands: usize,
    /// Iterations of one loop.
    pub loop_iterations: usize,
    /// Iterations of all loops of a call together.
    pub total_loop_iterations: usize,
    /// bashkit's work units (parsing, expansion, builtins' work).
    pub work_units: u64,
    /// Bytes of output a call keeps (stdout and stderr together).
    pub output_bytes: usize,
    /// Nesting of functions, subshells and sourced files.
    pub depth: usize,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            commands: 100_000,
            loop_iterations: 100_000,
            total_loop_iterations: 1_000_000,
            work_units: 200_000_000,
            output_bytes: 1 << 20,
            depth: 16,
        }
    }
}

/// What a session may hold beyond its workspace, and how big a workspace
/// may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub budgets: Budgets,
    /// Bytes a session may add to its workspace.
    pub session_bytes: u64,
    /// Bytes of one file.
    pub file_bytes: u64,
    /// Files and directories a session may add.
    pub session_entries: u64,
    pub archive: ArchiveLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            budgets: Budgets::default(),
            session_bytes: 64 << 20,
            file_bytes: 32 << 20,
            session_entries: 100_000,
            archive: ArchiveLimits {
                max_entries: 200_000,
                max_bytes: 1 << 30,
            },
        }
    }
}

/// How a workspace is laid out in the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Where the workspace's files are (`/workspace`, `/testbed`); the
    /// shell starts there.
    pub mount: String,
    /// The branch `git status` names.
    pub branch: String,
}

impl Default for Layout {
    fn default() -> Self {
        Self {
            mount: "/workspace".into(),
            branch: "main".into(),
        }
    }
}

/// A loaded workspace: the tree every session of it starts from.
#[derive(Debug)]
pub struct Workspace {
    pub name: String,
    pub layout: Layout,
    /// `mount` as components.
    pub mount: Vec<String>,
    /// The whole sandbox tree: the skeleton and the files at `mount`.
    pub root: Arc<Dir>,
    pub usage: Usage,
    /// The repository's own files (the git base).
    pub files: Usage,
    pub commit: Commit,
}

impl Workspace {
    /// The repository tree under `root` (`mount`), or an empty one.
    pub fn top(&self, root: &Arc<Dir>) -> Arc<Dir> {
        let mount: Vec<&str> = self.mount.iter().map(String::as_str).collect();
        match tree::lookup(root, &mount) {
            Ok(tree::Found::Dir(d)) => d.clone(),
            _ => Arc::new(Dir::default()),
        }
    }
}

/// What a loaded workspace holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkspaceInfo {
    pub files: u64,
    pub directories: u64,
    pub bytes: u64,
}

/// One session: its files, its git state, its editor history.
#[derive(Debug)]
pub struct Session {
    pub workspace: Arc<Workspace>,
    pub fs: Arc<SessionFs>,
    pub git: Arc<Mutex<git::GitState>>,
    pub edits: Mutex<editor::History>,
    pub seed: u64,
    /// Calls made so far (each call's randomness is seeded with its number).
    pub calls: u64,
}

/// What a session holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SessionStats {
    /// Bytes of the session's own tree nodes (what its changes cost).
    pub overlay_bytes: u64,
    pub files: u64,
    pub bytes: u64,
    /// Seconds the session's clock has moved (its sleeps).
    pub slept_ms: u64,
}

/// Workspaces and sessions, and the tools over them.
pub struct Sandbox {
    limits: Limits,
    workspaces: HashMap<String, Arc<Workspace>>,
    sessions: HashMap<String, Session>,
    runtime: tokio::runtime::Runtime,
}

impl Sandbox {
    pub fn new(limits: Limits) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime");
        Self {
            limits,
            workspaces: HashMap::new(),
            sessions: HashMap::new(),
            runtime,
        }
    }

    /// Reads `archive` as workspace `name`, laid out as `layout`.
    pub fn load_workspace(
        &mut self,
        name: &str,
        archive: &[u8],
        layout: Layout,
    ) -> Result<WorkspaceInfo, SandboxError> {
        if self.workspaces.contains_key(name) {
            return Err(SandboxError::Input(format!(
                "workspace `{name}` is loaded already"
            )));
        }
        let mount: Vec<String> = tree::components(&layout.mount)
            .into_iter()
            .map(str::to_owned)
            .collect();
        if mount.is_empty() || !layout.mount.starts_with('/') {
            return Err(SandboxError::Input(format!(
                "workspace `{name}`: mount `{}` must be an absolute path below `/`",
                layout.mount
            )));
        }
        if fs::RESERVED.contains(&mount[0].as_str()) {
            return Err(SandboxError::Input(format!(
                "workspace `{name}`: mount `{}` is inside the sandbox's own `/{}`",
                layout.mount, mount[0]
            )));
        }
        let snap = archive::read(archive, self.limits.archive)
            .map_err(|e| SandboxError::Workspace(format!("workspace `{name}`: {e}")))?;
        let commit = snap
            .commit
            .clone()
            .unwrap_or_else(|| git::default_commit(name));
        let mut root = Arc::new(Dir {
            entries: Default::default(),
            mode: tree::DIR_MODE,
            mtime: commit.date,
        });
        fs::skeleton(&mut root, commit.date);
        let refs: Vec<&str> = mount.iter().map(String::as_str).collect();
        let mut top = snap.root.clone();
        {
            let top = Arc::make_mut(&mut top);
            top.mode = tree::DIR_MODE;
            top.mtime = commit.date;
        }
        tree::put(&mut root, &refs, Some(tree::Node::Dir(top)), commit.date).map_err(|_| {
            SandboxError::Input(format!(
                "workspace `{name}`: mount `{}` collides with the sandbox's own directories",
                layout.mount
            ))
        })?;
        let usage = Usage::of(&root);
        let info = WorkspaceInfo {
            files: snap.usage.files,
            directories: snap.usage.dirs,
            bytes: snap.usage.bytes,
        };
        self.workspaces.insert(
            name.to_owned(),
            Arc::new(Workspace {
                name: name.to_owned(),
                layout,
                mount,
                root,
                usage,
                files: snap.usage,
                commit,
            }),
        );
        Ok(info)
    }

    /// Opens session `id` on workspace `workspace`; `seed` seeds its
    /// randomness.
    pub fn open(&mut self, id: &str, workspace: &str, seed: u64) -> Result<(), SandboxError> {
        if self.sessions.contains_key(id) {
            return Err(SandboxError::Input(format!(
                "session `{id}` is open already"
            )));
        }
        let ws = self
            .workspaces
            .get(workspace)
            .ok_or_else(|| SandboxError::Unknown(format!("no workspace `{workspace}`")))?
            .clone();
        let quota = Quota {
            max_bytes: ws.usage.bytes.saturating_add(self.limits.session_bytes),
            max_file_bytes: self.limits.file_bytes,
            max_entries: (ws.usage.files + ws.usage.dirs)
                .saturating_add(self.limits.session_entries),
        };
        let clock = Arc::new(Clock::new(clock::EPOCH));
        let fs = Arc::new(SessionFs::new(
            ws.root.clone(),
            ws.usage,
            quota,
            clock,
            seed,
        ));
        let git = Arc::new(Mutex::new(git::GitState::new(&ws)));
        self.sessions.insert(
            id.to_owned(),
            Session {
                workspace: ws,
                fs,
                git,
                edits: Mutex::new(editor::History::default()),
                seed,
                calls: 0,
            },
        );
        Ok(())
    }

    /// Runs one tool call in session `id`.
    pub fn call(&mut self, id: &str, call: &ToolCall) -> Result<ToolResult, SandboxError> {
        let budgets = self.limits.budgets;
        let session = self
            .sessions
            .get_mut(id)
            .ok_or_else(|| SandboxError::Unknown(format!("no session `{id}`")))?;
        session.calls += 1;
        let seed = rng::seed_of(&[&session.seed.to_le_bytes(), &session.calls.to_le_bytes()]);
        let session = &*session;
        Ok(match call.name.as_str() {
            "bash" => {
                self.runtime
                    .block_on(shell::run_tool(session, &call.arguments, budgets, seed))
            }
            editor::NAME => editor::run(session, &call.arguments),
            patch::NAME => patch::run_tool(session, &call.arguments),
            other => stubs::unknown_tool(other),
        })
    }

    /// What session `id` holds now.
    pub fn stats(&self, id: &str) -> Result<SessionStats, SandboxError> {
        let session = self
            .sessions
            .get(id)
            .ok_or_else(|| SandboxError::Unknown(format!("no session `{id}`")))?;
        let state = session.fs.lock();
        Ok(SessionStats {
            overlay_bytes: tree::own_bytes(&state.root, &session.workspace.root),
            files: state.usage.files,
            bytes: state.usage.bytes,
            slept_ms: session.fs.clock().slept().as_millis() as u64,
        })
    }

    /// Ends session `id` (its changes are dropped).
    pub fn close(&mut self, id: &str) {
        self.sessions.remove(id);
    }

    /// The workspaces loaded, by name.
    pub fn workspace(&self, name: &str) -> Option<&Arc<Workspace>> {
        self.workspaces.get(name)
    }
}

#[cfg(test)]
mod tests;

/// The canonical-ABI glue of a tool environment component: the bindings of
/// the `agentload:tools` world (`wit/agentload-tools@0.1.0`) as module
/// `bindings`, exporting `$environment` (its `Guest`). The calling crate
/// depends on `wit-bindgen`; the generated glue is its only unsafe code, and
/// it stays here, so the component's own crate forbids unsafe code.
#[macro_export]
macro_rules! tool_environment_bindings {
    ($environment:path) => {
        #[allow(clippy::all)]
        mod bindings {
            wit_bindgen::generate!({
                path: "../../wit/agentload-tools@0.1.0",
                world: "tool-environment",
            });

            use $environment as Environment;
            export!(Environment with_types_in self);
        }
    };
}
