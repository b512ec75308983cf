//! What the sandbox cannot run, and what it answers instead.
//!
//! The sandbox has no Python, no package managers, no compilers, no
//! container or cluster tools and no network. A command among them (the
//! names in [`NAMES`], and any other command the shell does not have) is
//! answered the way a machine without it answers, with a fixed result:
//! `bash: NAME: command not found` on stderr, exit status 127. The call is
//! then tagged `stubbed` and its detail names the commands, so a report
//! never counts such a call as executed. A call to a tool the sandbox does
//! not offer is stubbed the same way ([`unknown_tool`]).

use crate::classify::Class;
use crate::shell::failure;
use crate::{Status, ToolResult};
use bashkit::{BuiltinContext, ExecResult};
use std::sync::{Arc, Mutex};

/// Commands the sandbox answers with the stub even where bashkit has a
/// built-in of that name (its `pip` says more than a real machine would;
/// its `curl` and `wget` would reach for a network there is none of).
pub const NAMES: &[&str] = &[
    "python",
    "python2",
    "python3",
    "pip",
    "pip3",
    "pipx",
    "conda",
    "mamba",
    "micromamba",
    "uv",
    "poetry",
    "pdm",
    "hatch",
    "pytest",
    "py.test",
    "tox",
    "nox",
    "coverage",
    "mypy",
    "pyright",
    "ruff",
    "flake8",
    "black",
    "isort",
    "pylint",
    "django-admin",
    "sphinx-build",
    "sphinx-quickstart",
    "node",
    "nodejs",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "deno",
    "bun",
    "tsc",
    "cargo",
    "rustc",
    "rustup",
    "go",
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "cmake",
    "ninja",
    "java",
    "javac",
    "mvn",
    "gradle",
    "ruby",
    "gem",
    "bundle",
    "perl",
    "php",
    "docker",
    "podman",
    "kubectl",
    "helm",
    "apt",
    "apt-get",
    "dpkg",
    "yum",
    "dnf",
    "apk",
    "brew",
    "sudo",
    "curl",
    "wget",
    "ssh",
    "scp",
    "rsync",
    "nc",
    "ping",
];

/// A stubbed command: prints the stub, records its name.
pub struct Stubbed {
    pub name: &'static str,
    pub stubbed: Arc<Mutex<Vec<String>>>,
}

/// The fixed answer to a command the sandbox does not have.
pub fn not_found(name: &str) -> ExecResult {
    failure(&format!("bash: {name}: command not found\n"), 127)
}

fn record(stubbed: &Mutex<Vec<String>>, name: &str) {
    let mut names = stubbed.lock().unwrap_or_else(|e| e.into_inner());
    if !names.iter().any(|n| n == name) {
        names.push(name.to_owned());
    }
}

#[bashkit::async_trait]
impl bashkit::Builtin for Stubbed {
    async fn execute(&self, _ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        record(&self.stubbed, self.name);
        Ok(not_found(self.name))
    }
}

/// Any other command the shell does not have: stubbed too (a real machine
/// might have it; the sandbox cannot say what it would print).
pub struct Resolver {
    pub stubbed: Arc<Mutex<Vec<String>>>,
}

struct Missing {
    name: String,
    stubbed: Arc<Mutex<Vec<String>>>,
}

#[bashkit::async_trait]
impl bashkit::Builtin for Missing {
    async fn execute(&self, _ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        record(&self.stubbed, &self.name);
        Ok(not_found(&self.name))
    }
}

impl bashkit::CommandResolver for Resolver {
    fn resolve(&self, name: &str) -> Option<Arc<dyn bashkit::Builtin>> {
        // A path (`./run.sh`) is the shell's to run or to refuse.
        if name.contains('/') {
            return None;
        }
        Some(Arc::new(Missing {
            name: name.to_owned(),
            stubbed: self.stubbed.clone(),
        }))
    }
}

/// The answer to a call of a tool the sandbox does not offer.
pub fn unknown_tool(name: &str) -> ToolResult {
    ToolResult {
        status: Status::Stubbed,
        output: format!(
            "error: there is no tool `{name}`; the tools are bash, {} and {}",
            crate::editor::NAME,
            crate::patch::NAME
        ),
        exit_code: None,
        detail: format!("unknown tool `{name}`"),
        class: Class::Stub,
    }
}
