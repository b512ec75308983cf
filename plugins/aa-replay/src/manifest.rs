//! An agentperf-local replay manifest (`workload/schema.py`
//! `ReplayManifest`), read and checked as agentperf-local reads it: its
//! format markers, each task's fields and trace path, unique task ids, at
//! least one task. Unknown keys are skipped. A refusal names the file, the
//! line and the key.

use crate::fields::{At, Obj};
use agentload_sdk::Error;
use serde_json::value::RawValue;
use serde_json::Value;

/// The manifest format's `mode`.
pub const MODE: &str = "single_user_agentic_replay";
/// The manifest and trace format's `version`.
pub const VERSION: u64 = 1;

/// A manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// Its file name (as granted), for messages and the digest.
    pub file: String,
    pub name: String,
    pub tasks: Vec<Task>,
}

/// One task of a manifest.
#[derive(Debug, Clone)]
pub struct Task {
    pub task_id: String,
    /// The trace's path relative to the manifest's folder (normalized).
    pub trace: String,
    pub model_calls: u64,
    pub tool_calls: u64,
    pub required_context_tokens: Option<u64>,
    /// Lines of the task's keys, for messages.
    pub lines: TaskLines,
}

/// Where a task's keys are in the manifest.
#[derive(Debug, Clone, Default)]
pub struct TaskLines {
    pub task: u32,
    pub trace: u32,
    pub model_calls: u32,
    pub tool_calls: u32,
}

/// Reads and checks the manifest `bytes`, granted as `file`.
///
/// # Errors
/// A data error naming the file, the line and the key of the first rule broken.
pub fn parse(file: &str, bytes: &[u8]) -> Result<Manifest, Error> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| Error::data(file, 0, format!("not UTF-8: {e}")))?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Error::data(file, e.line() as u32, format!("invalid JSON: {e}")))?;
    let root: &RawValue =
        serde_json::from_str(text).map_err(|e| Error::data(file, 0, e.to_string()))?;
    let at = At {
        source: Some((text, root)),
        ..At::row(file, 1)
    };
    let top = Obj::of(&value, at, "the manifest")?;
    for key in ["version", "mode", "tasks"] {
        top.required(key)?;
    }
    let version = top.count("version")?;
    if version != VERSION {
        return Err(top
            .at
            .error("version", format!("must be {VERSION}, got {version}")));
    }
    let mode = top.text("mode")?;
    if mode != MODE {
        return Err(top
            .at
            .error("mode", format!("must be {MODE:?}, got {mode:?}")));
    }
    let name = top.text("name")?.to_owned();
    top.text("source")?;
    let items = top.list("tasks", false)?;
    if items.is_empty() {
        return Err(top.at.error("tasks", "the manifest contains no tasks"));
    }
    let mut tasks: Vec<Task> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let task = top.child("tasks", Some(i), item, "a task")?;
        let task_id = task.text("task_id")?.to_owned();
        let trace = task.inside_path("trace")?;
        task.text("source_recording")?;
        let model_calls = task.count("model_calls")?;
        let tool_calls = task.count("tool_calls")?;
        task.duration("total_recorded_tool_delay_ms")?;
        task.opt_text("family")?;
        task.opt_text("adapter")?;
        let required_context_tokens = task.opt_count("required_context_tokens")?;
        if let Some(env) = task.opt_object("tool_environment")? {
            tool_environment(&task.child(
                "tool_environment",
                None,
                env,
                "the tool environment",
            )?)?;
        }
        if let Some(first) = tasks.iter().find(|t| t.task_id == task_id) {
            return Err(task.at.error(
                "task_id",
                format!(
                    "{task_id:?} is also the id of the task at line {}: task ids must be unique",
                    first.lines.task
                ),
            ));
        }
        tasks.push(Task {
            task_id,
            trace,
            model_calls,
            tool_calls,
            required_context_tokens,
            lines: TaskLines {
                task: task.at.line,
                trace: task.at.line_of("trace"),
                model_calls: task.at.line_of("model_calls"),
                tool_calls: task.at.line_of("tool_calls"),
            },
        });
    }
    Ok(Manifest {
        file: file.to_owned(),
        name,
        tasks,
    })
}

/// A task's `tool_environment` (agentperf-local's `DockerToolEnvironmentSpec`):
/// checked only (live tool replay is not run).
fn tool_environment(env: &Obj<'_>) -> Result<(), Error> {
    for key in ["type", "network"] {
        env.required(key)?;
    }
    if env.text("type")? != "docker" {
        return Err(env.at.error("type", "must be \"docker\""));
    }
    env.text("network")?;
    env.text("image")?;
    env.text("cwd")?;
    env.flag("workspace_mount")?;
    let interpreter = env.list("interpreter", false)?;
    if interpreter.is_empty() || !interpreter.iter().all(Value::is_string) {
        return Err(env
            .at
            .error("interpreter", "must be a non-empty list of strings"));
    }
    if env.opt_text("workspace_path")?.is_some() {
        env.inside_path("workspace_path")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{
  "name": "m",
  "source": "s",
  "mode": "single_user_agentic_replay",
  "version": 1,
  "tasks": [
    {
      "task_id": "a",
      "trace": "traces/a.jsonl",
      "source_recording": "r",
      "model_calls": 2,
      "tool_calls": 1,
      "total_recorded_tool_delay_ms": 5,
      "unknown_key": [1, 2]
    }
  ]
}
"#;

    fn refusal(text: &str) -> (u32, String) {
        match parse("manifest.json", text.as_bytes()) {
            Err(Error::Data {
                file,
                line,
                message,
            }) => {
                assert_eq!(file, "manifest.json");
                (line, message)
            }
            other => panic!("expected a data error, got {other:?}"),
        }
    }

    #[test]
    fn a_manifest_reads_with_its_tasks() {
        let m = parse("manifest.json", GOOD.as_bytes()).unwrap();
        assert_eq!(m.name, "m");
        assert_eq!(m.tasks.len(), 1);
        let t = &m.tasks[0];
        assert_eq!(
            (t.task_id.as_str(), t.trace.as_str()),
            ("a", "traces/a.jsonl")
        );
        assert_eq!((t.model_calls, t.tool_calls), (2, 1));
        assert_eq!(
            (
                t.lines.task,
                t.lines.trace,
                t.lines.model_calls,
                t.lines.tool_calls
            ),
            (7, 9, 11, 12)
        );
    }

    #[test]
    fn broken_manifests_are_refused_naming_line_and_key() {
        for (edit, line, says) in [
            (
                ("\"version\": 1", "\"version\": 2"),
                5,
                "`version`: must be 1, got 2",
            ),
            (
                ("\"version\": 1", "\"version\": 1.0"),
                5,
                "`version`: must be a non-negative integer",
            ),
            (
                ("single_user_agentic_replay", "other"),
                4,
                "`mode`: must be",
            ),
            (
                ("\"traces/a.jsonl\"", "\"../a.jsonl\""),
                9,
                "`tasks[0].trace`: \"../a.jsonl\" must stay within the manifest directory",
            ),
            (
                ("\"traces/a.jsonl\"", "\"/etc/passwd\""),
                9,
                "`tasks[0].trace`",
            ),
            (
                ("\"model_calls\": 2", "\"model_calls\": -2"),
                11,
                "`tasks[0].model_calls`: must be a non-negative integer",
            ),
            (
                ("\"task_id\": \"a\"", "\"task_id\": \"\""),
                8,
                "`tasks[0].task_id`: must not be empty",
            ),
            (
                ("\"source_recording\": \"r\",", ""),
                7,
                "`tasks[0].source_recording`: is required",
            ),
            (
                ("\"tasks\": [", "\"tasks\": [], \"x\": ["),
                6,
                "`tasks`: the manifest contains no tasks",
            ),
        ] {
            let text = GOOD.replacen(edit.0, edit.1, 1);
            assert_ne!(text, GOOD, "{edit:?}");
            let (got_line, message) = refusal(&text);
            assert!(message.contains(says), "{edit:?}: {message}");
            assert_eq!(got_line, line, "{edit:?}: {message}");
        }
        let (line, message) = refusal("{\"name\": \"m\",\n \"oops\"\n}");
        assert!(message.starts_with("invalid JSON"), "{message}");
        assert_eq!(line, 3);
        let (_, message) = refusal(&GOOD.replace("\"mode\": \"single_user_agentic_replay\",", ""));
        assert!(message.contains("`mode`: is required"), "{message}");
    }

    #[test]
    fn task_ids_are_unique() {
        let task = &GOOD[GOOD.find("    {").unwrap()..GOOD.find("    }").unwrap() + 5];
        let two = GOOD.replace(task, &format!("{task},\n{task}"));
        let (line, message) = refusal(&two);
        assert!(
            message.contains("`tasks[1].task_id`: \"a\" is also the id of the task at line 7"),
            "{message}"
        );
        assert_eq!(line, 17, "{message}");
    }

    #[test]
    fn a_tool_environment_is_checked() {
        let env = r#""tool_environment": {"type": "docker", "image": "i", "cwd": "/w", "network": "none", "interpreter": ["bash", "-c"], "workspace_mount": true, "workspace_path": "../w"},"#;
        let text = GOOD.replace("\"unknown_key\"", &format!("{env}\n      \"unknown_key\""));
        let (_, message) = refusal(&text);
        assert!(
            message.contains("`tasks[0].tool_environment.workspace_path`"),
            "{message}"
        );
        let ok = text.replace("\"../w\"", "\"workspaces/a\"");
        assert!(parse("manifest.json", ok.as_bytes()).is_ok());
    }
}
