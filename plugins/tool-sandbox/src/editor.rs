//! `str_replace_based_edit_tool`: the file editor coding agents are given
//! beside a shell (the shape of Anthropic's text editor tool): `view` a
//! file (`cat -n`, optionally a `view_range`) or a directory (two levels,
//! hidden entries left out), `create` a file, `str_replace` one unique
//! occurrence, `insert` after a line, `undo_edit`. Paths are absolute
//! sandbox paths. Its answers and errors are the tool's own text; tabs in
//! files are kept as they are (never expanded on write).

use crate::classify::Class;
use crate::fs::ready;
use crate::{Session, Status, ToolResult};
use bashkit::FileSystem;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;

/// The tool's name.
pub const NAME: &str = "str_replace_based_edit_tool";

/// Lines of context around an edit in its snippet.
const SNIPPET_LINES: usize = 4;
/// Characters of a view kept before it is cut.
const MAX_VIEW_CHARS: usize = 16_000;
const CUT_NOTE: &str = "<response clipped><NOTE>To save on context only part of this file \
has been shown to you. Search inside the file with `grep -n` for the line numbers of what you \
are looking for, then view those lines.</NOTE>";

/// Earlier contents of edited files, for `undo_edit`.
#[derive(Debug, Default)]
pub struct History {
    by_path: HashMap<String, Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    path: String,
    #[serde(default)]
    file_text: Option<String>,
    #[serde(default)]
    old_str: Option<String>,
    #[serde(default)]
    new_str: Option<String>,
    #[serde(default)]
    insert_line: Option<i64>,
    #[serde(default)]
    insert_text: Option<String>,
    #[serde(default)]
    view_range: Option<Vec<i64>>,
}

/// Runs one call of the editor.
pub fn run(session: &Session, arguments: &str) -> ToolResult {
    let args: Args = match serde_json::from_str(arguments) {
        Ok(args) => args,
        Err(e) => return answer(format!("Invalid arguments for {NAME}: {e}"), Class::Other),
    };
    let class = if args.command == "view" {
        Class::View
    } else {
        Class::Edit
    };
    match edit(session, &args) {
        Ok(text) | Err(text) => answer(text, class),
    }
}

fn answer(output: String, class: Class) -> ToolResult {
    ToolResult {
        status: Status::Executed,
        output,
        exit_code: None,
        detail: String::new(),
        class,
    }
}

enum Kind {
    File,
    Dir,
    Missing,
}

fn edit(session: &Session, args: &Args) -> Result<String, String> {
    let path = args.path.as_str();
    if !path.starts_with('/') {
        let mount = &session.workspace.layout.mount;
        return Err(format!(
            "The path {path} is not an absolute path, it should start with `/`. Maybe you meant \
             {}?",
            Path::new(mount).join(path).display()
        ));
    }
    let real = session
        .fs
        .resolve(path)
        .ok_or_else(|| format!("The path {path} has too many levels of symbolic links."))?;
    let fs = &session.fs;
    let kind = match ready(fs.stat(Path::new(&real))) {
        Ok(m) if m.file_type.is_dir() => Kind::Dir,
        Ok(_) => Kind::File,
        Err(_) => Kind::Missing,
    };
    match (args.command.as_str(), &kind) {
        ("create", Kind::File | Kind::Dir) => {
            return Err(format!(
                "File already exists at: {path}. Cannot overwrite files using command `create`."
            ))
        }
        ("create", Kind::Missing) => {}
        (_, Kind::Missing) => {
            return Err(format!(
                "The path {path} does not exist. Please provide a valid path."
            ))
        }
        ("view", Kind::Dir) => {}
        (_, Kind::Dir) => {
            return Err(format!(
                "The path {path} is a directory and only the `view` command can be used on \
                 directories"
            ))
        }
        _ => {}
    }
    match args.command.as_str() {
        "view" => match kind {
            Kind::Dir => view_dir(session, path, &real, args.view_range.is_some()),
            _ => view_file(session, path, &real, args.view_range.as_deref()),
        },
        "create" => {
            let text = args
                .file_text
                .as_deref()
                .ok_or("Parameter `file_text` is required for command: create")?;
            write(session, path, &real, text)?;
            remember(session, path, text.to_owned());
            Ok(format!("File created successfully at: {path}"))
        }
        "str_replace" => {
            let old = args
                .old_str
                .as_deref()
                .ok_or("Parameter `old_str` is required for command: str_replace")?;
            let new = args.new_str.as_deref().unwrap_or("");
            str_replace(session, path, &real, old, new)
        }
        "insert" => {
            let line = args
                .insert_line
                .ok_or("Parameter `insert_line` is required for command: insert")?;
            let text = args
                .insert_text
                .as_deref()
                .or(args.new_str.as_deref())
                .ok_or("Parameter `insert_text` is required for command: insert")?;
            insert(session, path, &real, line, text)
        }
        "undo_edit" => undo(session, path, &real),
        other => Err(format!(
            "Unrecognized command {other}. The allowed commands for the {NAME} tool are: \
             view, create, str_replace, insert, undo_edit"
        )),
    }
}

fn read(session: &Session, path: &str, real: &str) -> Result<String, String> {
    ready(session.fs.read_file(Path::new(real)))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| format!("Ran into {e} while trying to read {path}"))
}

fn write(session: &Session, path: &str, real: &str, text: &str) -> Result<(), String> {
    ready(session.fs.write_file(Path::new(real), text.as_bytes()))
        .map_err(|e| format!("Ran into {e} while trying to write to {path}"))
}

fn remember(session: &Session, path: &str, text: String) {
    let mut history = session.edits.lock().unwrap_or_else(|e| e.into_inner());
    history
        .by_path
        .entry(path.to_owned())
        .or_default()
        .push(text);
}

/// `cat -n` of `text` from line `first`, cut when long.
fn numbered(text: &str, what: &str, first: usize) -> String {
    let text = if text.chars().count() > MAX_VIEW_CHARS {
        let cut: String = text.chars().take(MAX_VIEW_CHARS).collect();
        format!("{cut}{CUT_NOTE}")
    } else {
        text.to_owned()
    };
    let lines: Vec<String> = text
        .split('\n')
        .enumerate()
        .map(|(i, line)| format!("{:>6}\t{line}", i + first))
        .collect();
    format!(
        "Here's the result of running `cat -n` on {what}:\n{}\n",
        lines.join("\n")
    )
}

fn view_file(
    session: &Session,
    path: &str,
    real: &str,
    range: Option<&[i64]>,
) -> Result<String, String> {
    let text = read(session, path, real)?;
    let Some(range) = range else {
        return Ok(numbered(&text, path, 1));
    };
    let [start, end] = range else {
        return Err("Invalid `view_range`. It should be a list of two integers.".into());
    };
    let lines: Vec<&str> = text.split('\n').collect();
    let count = lines.len() as i64;
    if *start < 1 || *start > count {
        return Err(format!(
            "Invalid `view_range`: [{start}, {end}]. Its first element `{start}` should be \
             within the range of lines of the file: [1, {count}]"
        ));
    }
    if *end != -1 && *end > count {
        return Err(format!(
            "Invalid `view_range`: [{start}, {end}]. Its second element `{end}` should be \
             smaller than the number of lines in the file: `{count}`"
        ));
    }
    if *end != -1 && end < start {
        return Err(format!(
            "Invalid `view_range`: [{start}, {end}]. Its second element `{end}` should be \
             larger or equal than its first `{start}`"
        ));
    }
    let from = (*start - 1) as usize;
    let to = if *end == -1 {
        lines.len()
    } else {
        *end as usize
    };
    Ok(numbered(&lines[from..to].join("\n"), path, *start as usize))
}

fn view_dir(session: &Session, path: &str, real: &str, ranged: bool) -> Result<String, String> {
    if ranged {
        return Err(
            "The `view_range` parameter is not allowed when `path` points to a directory.".into(),
        );
    }
    let mut out = vec![path.trim_end_matches('/').to_owned()];
    if out[0].is_empty() {
        out[0] = "/".into();
    }
    list(session, real, &out[0].clone(), 1, &mut out);
    Ok(format!(
        "Here's the files and directories up to 2 levels deep in {path}, excluding hidden \
         items:\n{}\n",
        out.join("\n")
    ))
}

fn list(session: &Session, real: &str, shown: &str, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = ready(session.fs.read_dir(Path::new(real))) else {
        return;
    };
    for entry in entries {
        if entry.name.starts_with('.') {
            continue;
        }
        let shown_child = format!("{}/{}", shown.trim_end_matches('/'), entry.name);
        out.push(shown_child.clone());
        if depth < 2 && entry.metadata.file_type.is_dir() {
            let real_child = format!("{}/{}", real.trim_end_matches('/'), entry.name);
            list(session, &real_child, &shown_child, depth + 1, out);
        }
    }
}

/// A snippet of `text` around lines `[from, to)` (0-based), numbered.
fn snippet(text: &str, what: &str, from: usize, to: usize) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let start = from.saturating_sub(SNIPPET_LINES);
    let end = (to + SNIPPET_LINES).min(lines.len());
    numbered(&lines[start..end].join("\n"), what, start + 1)
}

fn str_replace(
    session: &Session,
    path: &str,
    real: &str,
    old: &str,
    new: &str,
) -> Result<String, String> {
    let text = read(session, path, real)?;
    if old.is_empty() {
        return Err(format!(
            "No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
        ));
    }
    let found: Vec<usize> = text.match_indices(old).map(|(i, _)| i).collect();
    match found.len() {
        0 => Err(format!(
            "No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
        )),
        1 => {
            let at = found[0];
            let edited = format!("{}{new}{}", &text[..at], &text[at + old.len()..]);
            write(session, path, real, &edited)?;
            remember(session, path, text.clone());
            let line = text[..at].matches('\n').count();
            let what = format!("a snippet of {path}");
            Ok(format!(
                "The file {path} has been edited. {}Review the changes and make sure they are \
                 as expected. Edit the file again if necessary.",
                snippet(&edited, &what, line, line + new.matches('\n').count() + 1)
            ))
        }
        _ => {
            let lines: Vec<String> = found
                .iter()
                .map(|at| (text[..*at].matches('\n').count() + 1).to_string())
                .collect();
            Err(format!(
                "No replacement was performed. Multiple occurrences of old_str `{old}` in lines \
                 [{}]. Please ensure it is unique",
                lines.join(", ")
            ))
        }
    }
}

fn insert(
    session: &Session,
    path: &str,
    real: &str,
    line: i64,
    new: &str,
) -> Result<String, String> {
    let text = read(session, path, real)?;
    let lines: Vec<&str> = text.split('\n').collect();
    let count = lines.len() as i64;
    if line < 0 || line > count {
        return Err(format!(
            "Invalid `insert_line` parameter: {line}. It should be within the range of lines \
             of the file: [0, {count}]"
        ));
    }
    let at = line as usize;
    let new_lines: Vec<&str> = new.split('\n').collect();
    let mut edited: Vec<&str> = lines[..at].to_vec();
    edited.extend(&new_lines);
    edited.extend(&lines[at..]);
    let edited = edited.join("\n");
    write(session, path, real, &edited)?;
    remember(session, path, text);
    Ok(format!(
        "The file {path} has been edited. {}Review the changes and make sure they are as \
         expected (correct indentation, no duplicate lines, etc). Edit the file again if \
         necessary.",
        snippet(
            &edited,
            "a snippet of the edited file",
            at,
            at + new_lines.len()
        )
    ))
}

fn undo(session: &Session, path: &str, real: &str) -> Result<String, String> {
    let previous = {
        let mut history = session.edits.lock().unwrap_or_else(|e| e.into_inner());
        history.by_path.get_mut(path).and_then(Vec::pop)
    };
    let Some(previous) = previous else {
        return Err(format!("No edit history found for {path}."));
    };
    write(session, path, real, &previous)?;
    Ok(format!(
        "Last edit to {path} undone successfully. {}",
        numbered(&previous, path, 1)
    ))
}
