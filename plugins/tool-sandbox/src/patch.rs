//! `apply_patch`: the patch format of OpenAI's Codex agents, as a tool
//! (`{"input": PATCH}`) and as a shell command (`apply_patch <<'EOF' ...`,
//! or the patch as its one argument).
//!
//! ```text
//! *** Begin Patch
//! *** Add File: path            then the file's lines, each `+`
//! *** Delete File: path
//! *** Update File: path         optionally `*** Move to: new path`, then chunks:
//! @@ [a line to find first]     then ` ` context, `-` removed, `+` added lines,
//!                               optionally `*** End of File`
//! *** End Patch
//! ```
//!
//! A chunk's old lines are found in order after the previous chunk,
//! exactly, then ignoring trailing whitespace, then ignoring surrounding
//! whitespace. Nothing is written unless the whole patch applies. Paths are
//! relative to the working directory (the workspace for the tool).

use crate::classify::Class;
use crate::fs::{ready, SessionFs};
use crate::shell::failure;
use crate::{Session, Status, ToolResult};
use bashkit::{BuiltinContext, ExecResult, FileSystem};
use serde::Deserialize;
use std::path::Path;
use std::sync::Arc;

/// The tool's (and the command's) name.
pub const NAME: &str = "apply_patch";

#[derive(Debug, Deserialize)]
struct Args {
    #[serde(alias = "patch")]
    input: String,
}

/// Runs the tool (`{"input": PATCH}`).
pub fn run_tool(session: &Session, arguments: &str) -> ToolResult {
    let output = match serde_json::from_str::<Args>(arguments) {
        Ok(args) => match apply(&session.fs, &session.workspace.layout.mount, &args.input) {
            Ok(done) | Err(done) => done,
        },
        Err(e) => format!("Invalid arguments for {NAME}: {e}; it takes {{\"input\": PATCH}}"),
    };
    ToolResult {
        status: Status::Executed,
        output,
        exit_code: None,
        detail: String::new(),
        class: Class::Edit,
    }
}

/// The shell command.
pub struct PatchCommand {
    pub fs: Arc<SessionFs>,
}

#[bashkit::async_trait]
impl bashkit::Builtin for PatchCommand {
    async fn execute(&self, ctx: BuiltinContext<'_>) -> bashkit::Result<ExecResult> {
        let text = match (ctx.args.first(), ctx.stdin) {
            (Some(arg), _) => arg.clone(),
            (None, Some(stdin)) => String::from_utf8_lossy(stdin.as_bytes()).into_owned(),
            (None, None) => return Ok(failure("Error: apply_patch needs a patch\n", 1)),
        };
        let cwd = ctx.cwd.to_string_lossy().into_owned();
        Ok(match apply(&self.fs, &cwd, &text) {
            Ok(done) => ExecResult::ok(done),
            Err(error) => failure(&format!("{error}\n"), 1),
        })
    }
}

#[derive(Debug)]
enum Op {
    Add {
        path: String,
        text: String,
    },
    Delete {
        path: String,
    },
    Update {
        path: String,
        to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

#[derive(Debug, Default)]
struct Chunk {
    /// The `@@` line's text, found before the old lines.
    anchor: Option<String>,
    old: Vec<String>,
    new: Vec<String>,
    at_end: bool,
}

fn parse(text: &str) -> Result<Vec<Op>, String> {
    let lines: Vec<&str> = text.trim().lines().collect();
    if lines.first().map(|l| l.trim()) != Some("*** Begin Patch") {
        return Err("Invalid patch: The first line of the patch must be '*** Begin Patch'".into());
    }
    if lines.last().map(|l| l.trim()) != Some("*** End Patch") {
        return Err("Invalid patch: The last line of the patch must be '*** End Patch'".into());
    }
    let body = &lines[1..lines.len() - 1];
    let mut ops = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            i += 1;
            let mut text = String::new();
            while i < body.len() && !body[i].starts_with("*** ") {
                let Some(added) = body[i].strip_prefix('+') else {
                    return Err(format!(
                        "Invalid patch: line {}: every line of an added file starts with '+'",
                        i + 2
                    ));
                };
                text.push_str(added);
                text.push('\n');
                i += 1;
            }
            ops.push(Op::Add {
                path: path.trim().to_owned(),
                text,
            });
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            ops.push(Op::Delete {
                path: path.trim().to_owned(),
            });
            i += 1;
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            i += 1;
            let mut to = None;
            if let Some(dest) = body.get(i).and_then(|l| l.strip_prefix("*** Move to: ")) {
                to = Some(dest.trim().to_owned());
                i += 1;
            }
            let mut chunks: Vec<Chunk> = Vec::new();
            while i < body.len() && !body[i].starts_with("*** ")
                || body.get(i) == Some(&"*** End of File")
            {
                let line = body[i];
                if line == "*** End of File" {
                    chunks
                        .last_mut()
                        .ok_or("Invalid patch: `*** End of File` before any chunk")?
                        .at_end = true;
                } else if let Some(anchor) = line.strip_prefix("@@") {
                    let anchor = anchor.trim();
                    chunks.push(Chunk {
                        anchor: (!anchor.is_empty()).then(|| anchor.to_owned()),
                        ..Chunk::default()
                    });
                } else {
                    if chunks.is_empty() {
                        chunks.push(Chunk::default());
                    }
                    let chunk = chunks.last_mut().expect("one chunk at least");
                    match line.chars().next() {
                        Some('+') => chunk.new.push(line[1..].to_owned()),
                        Some('-') => chunk.old.push(line[1..].to_owned()),
                        Some(' ') => {
                            chunk.old.push(line[1..].to_owned());
                            chunk.new.push(line[1..].to_owned());
                        }
                        None => {
                            chunk.old.push(String::new());
                            chunk.new.push(String::new());
                        }
                        Some(_) => {
                            return Err(format!(
                                "Invalid patch: line {}: '{line}' is not a context (' '), removed \
                                 ('-') or added ('+') line",
                                i + 2
                            ))
                        }
                    }
                }
                i += 1;
            }
            if chunks.is_empty() {
                return Err(format!("Invalid patch: update of `{path}` has no changes"));
            }
            ops.push(Op::Update {
                path: path.trim().to_owned(),
                to,
                chunks,
            });
        } else if line.trim().is_empty() {
            i += 1;
        } else {
            return Err(format!(
                "Invalid patch: line {}: '{line}' is not a valid hunk header. Valid hunk headers: \
                 '*** Add File: {{path}}', '*** Delete File: {{path}}', '*** Update File: {{path}}'",
                i + 2
            ));
        }
    }
    if ops.is_empty() {
        return Err("Invalid patch: no files to change".into());
    }
    Ok(ops)
}

/// Applies `text` with paths relative to `cwd`: the summary, or the error.
fn apply(fs: &SessionFs, cwd: &str, text: &str) -> Result<String, String> {
    let ops = parse(text)?;
    let at = |path: &str| -> String {
        let joined = if path.starts_with('/') {
            path.to_owned()
        } else {
            format!("{}/{path}", cwd.trim_end_matches('/'))
        };
        fs.resolve(&joined).unwrap_or(joined)
    };
    // Everything is worked out before anything is written.
    let mut writes: Vec<(String, Option<String>)> = Vec::new();
    let mut summary = Vec::new();
    for op in &ops {
        match op {
            Op::Add { path, text } => {
                writes.push((at(path), Some(text.clone())));
                summary.push(format!("A {path}"));
            }
            Op::Delete { path } => {
                if ready(fs.read_file(Path::new(&at(path)))).is_err() {
                    return Err(format!(
                        "Failed to delete file {path}: No such file or directory"
                    ));
                }
                writes.push((at(path), None));
                summary.push(format!("D {path}"));
            }
            Op::Update { path, to, chunks } => {
                let old = ready(fs.read_file(Path::new(&at(path)))).map_err(|_| {
                    format!("Failed to read file to update {path}: No such file or directory")
                })?;
                let new = update(&String::from_utf8_lossy(&old), chunks).map_err(|lines| {
                    format!("Failed to find expected lines in {path}:\n{lines}")
                })?;
                match to {
                    Some(dest) => {
                        writes.push((at(path), None));
                        writes.push((at(dest), Some(new)));
                    }
                    None => writes.push((at(path), Some(new))),
                }
                summary.push(format!("M {}", to.as_deref().unwrap_or(path)));
            }
        }
    }
    for (path, text) in writes {
        let path = Path::new(&path);
        let result = match text {
            Some(text) => {
                if let Some(parent) = path.parent() {
                    let _ = ready(fs.mkdir(parent, true));
                }
                ready(fs.write_file(path, text.as_bytes()))
            }
            None => ready(fs.remove(path, false)),
        };
        result.map_err(|e| format!("Failed to write {}: {e}", path.display()))?;
    }
    Ok(format!(
        "Success. Updated the following files:\n{}\n",
        summary.join("\n")
    ))
}

/// The file after `chunks`, or the old lines that were not found.
fn update(text: &str, chunks: &[Chunk]) -> Result<String, String> {
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    let mut from = 0;
    // (start, old count, new lines), applied from the end.
    let mut edits: Vec<(usize, usize, Vec<String>)> = Vec::new();
    for chunk in chunks {
        if let Some(anchor) = &chunk.anchor {
            match find(&lines, std::slice::from_ref(anchor), from, false) {
                Some(i) => from = i + 1,
                None => return Err(anchor.clone()),
            }
        }
        if chunk.old.is_empty() {
            edits.push((
                lines
                    .len()
                    .min(if chunk.at_end { lines.len() } else { from }),
                0,
                chunk.new.clone(),
            ));
            continue;
        }
        let mut old = chunk.old.clone();
        let mut new = chunk.new.clone();
        let mut found = find(&lines, &old, from, chunk.at_end);
        if found.is_none() && old.last().is_some_and(String::is_empty) {
            // A blank last line stands for the end of the file.
            old.pop();
            if new.last().is_some_and(String::is_empty) {
                new.pop();
            }
            found = find(&lines, &old, from, chunk.at_end);
        }
        let Some(start) = found else {
            return Err(chunk.old.join("\n"));
        };
        edits.push((start, old.len(), new));
        from = start + old.len();
    }
    for (start, count, new) in edits.into_iter().rev() {
        lines.splice(start..start + count, new);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    Ok(out)
}

/// Where `wanted` starts in `lines` at or after `from` (at the very end with
/// `at_end`), matched exactly, then without trailing, then without any
/// surrounding whitespace.
fn find(lines: &[String], wanted: &[String], from: usize, at_end: bool) -> Option<usize> {
    if wanted.len() > lines.len() {
        return None;
    }
    let last = lines.len() - wanted.len();
    let starts: Vec<usize> = if at_end {
        vec![last]
    } else {
        (from.min(last + 1)..=last).collect()
    };
    let exact = |a: &str, b: &str| a == b;
    let end = |a: &str, b: &str| a.trim_end() == b.trim_end();
    let both = |a: &str, b: &str| a.trim() == b.trim();
    for same in [&exact as &dyn Fn(&str, &str) -> bool, &end, &both] {
        for &start in &starts {
            if wanted.iter().zip(&lines[start..]).all(|(w, l)| same(l, w)) {
                return Some(start);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(patch: &str) -> Vec<Chunk> {
        match parse(patch).unwrap().remove(0) {
            Op::Update { chunks, .. } => chunks,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_update_replaces_the_old_lines_after_its_anchor() {
        let patch = "*** Begin Patch\n*** Update File: a.py\n@@ def g():\n     x = 1\n-    return x\n+    return x + 1\n*** End Patch";
        let text = "def f():\n    x = 1\n    return x\n\ndef g():\n    x = 1\n    return x\n";
        assert_eq!(
            update(text, &chunks(patch)).unwrap(),
            "def f():\n    x = 1\n    return x\n\ndef g():\n    x = 1\n    return x + 1\n"
        );
    }

    #[test]
    fn whitespace_differences_are_forgiven_in_steps() {
        let patch = "*** Begin Patch\n*** Update File: a\n-a  \n+b\n*** End Patch";
        assert_eq!(update("  a\n", &chunks(patch)).unwrap(), "b\n");
    }

    #[test]
    fn missing_lines_and_bad_patches_are_named() {
        let patch = "*** Begin Patch\n*** Update File: a\n-nope\n+b\n*** End Patch";
        assert_eq!(update("a\n", &chunks(patch)).unwrap_err(), "nope");
        assert!(parse("garbage").unwrap_err().contains("'*** Begin Patch'"));
        assert!(parse("*** Begin Patch\n*** Frobnicate: x\n*** End Patch")
            .unwrap_err()
            .contains("not a valid hunk header"));
        assert!(
            parse("*** Begin Patch\n*** Add File: x\nno plus\n*** End Patch")
                .unwrap_err()
                .contains("starts with '+'")
        );
    }
}
