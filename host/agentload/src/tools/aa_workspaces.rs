//! `agentload dataset aa-workspaces MANIFEST --out DIR`: the workspaces of
//! an AA replay's tasks (a manifest's `tool_environment.workspace_path`,
//! where `workspace_mount` is true), each packed as a locked workspace
//! archive (`DIR/<task_id>.tar`, [`crate::workspace::pack`]), and the
//! `[tools.workspaces.<task>]` tables a closed-loop run grants them by.

use agentload_config::tools::quoted_key;
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Component, Path};

/// One task of the manifest: packed, or why not.
pub enum Task {
    Packed {
        task: String,
        archive: String,
        sha256: String,
        mount: String,
        files: usize,
    },
    /// No workspace is mounted for it (its sessions work in an empty one).
    Bare { task: String, why: String },
}

/// Packs every task's workspace of `manifest` into `out`.
pub fn pack(manifest: &Path, out: &Path) -> Result<Vec<Task>> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let json: Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", manifest.display()))?;
    let root = manifest.parent().unwrap_or(Path::new("."));
    let tasks = json["tasks"]
        .as_array()
        .with_context(|| format!("{}: `tasks` is not a list", manifest.display()))?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut done = Vec::new();
    for (i, t) in tasks.iter().enumerate() {
        let key = |k: &str| format!("{}: `tasks[{i}].{k}`", manifest.display());
        let task = t["task_id"]
            .as_str()
            .with_context(|| format!("{} is not a string", key("task_id")))?
            .to_owned();
        let env = &t["tool_environment"];
        if env["workspace_mount"] == Value::Bool(false) {
            done.push(Task::Bare {
                task,
                why: "tool_environment.workspace_mount is false".into(),
            });
            continue;
        }
        let Some(rel) = env["workspace_path"].as_str() else {
            done.push(Task::Bare {
                task,
                why: "no tool_environment.workspace_path".into(),
            });
            continue;
        };
        let inside = Path::new(rel)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !inside || task.contains(['/', '\\']) || task.starts_with('.') {
            bail!(
                "{}: {rel:?} (task {task:?}) must stay within the manifest directory",
                key("tool_environment.workspace_path")
            );
        }
        let archive = out.join(format!("{task}.tar"));
        let packed = crate::workspace::pack(&root.join(rel), &archive)
            .with_context(|| key("tool_environment.workspace_path"))?;
        done.push(Task::Packed {
            task,
            archive: archive.display().to_string(),
            sha256: packed.sha256,
            mount: env["cwd"].as_str().unwrap_or("/workspace").to_owned(),
            files: packed.files,
        });
    }
    Ok(done)
}

/// The `[tools.workspaces.<task>]` tables of `tasks` (a comment for each
/// task with no workspace).
pub fn tables(tasks: &[Task]) -> String {
    let mut text = String::new();
    for t in tasks {
        match t {
            Task::Packed {
                task,
                archive,
                sha256,
                mount,
                ..
            } => {
                let _ = write!(
                    text,
                    "[tools.workspaces.{}]\narchive = {archive:?}\nsha256 = \"{sha256}\"\nmount = \
                     {mount:?}\n\n",
                    quoted_key(task)
                );
            }
            Task::Bare { task, why } => {
                let _ = writeln!(
                    text,
                    "# {task}: {why}; its sessions work in an empty workspace\n"
                );
            }
        }
    }
    text
}
