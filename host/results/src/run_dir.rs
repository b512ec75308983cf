//! The run directory as agentload owns it: one writer at a time, and the
//! files agentload writes there, the only ones `--force` removes.
//!
//! **One writer.** Every command that writes a run directory holds an
//! exclusive lock on its [`LOCK_FILE`] (`flock(2)` through
//! [`std::fs::File::try_lock`]) for its whole life. The kernel releases it
//! when the process ends, however it ends (`kill -9` too), so no stale lock
//! is ever left. A second writer is refused before it changes anything,
//! naming the directory and the holder's PID and command.
//!
//! **What `--force` removes.** The run directory's layout is fixed
//! ([`owned`]): the result files a run, a resume, a sweep, `rescore` and
//! `export` write, by name and place. `--force` removes those and nothing
//! else, and only in a directory whose `run_manifest.json` or
//! `run_state.json` is agentload's; a user's own files (`NOTES.md`,
//! `performance/extra.txt`) stay, and so do the folders that hold them. A
//! directory that holds a symbolic link anywhere is refused whole: agentload
//! writes nothing through a link ([`agentload_fs::OutDir`]), and `--force`
//! neither keeps one nor removes what it leads to.

use agentload_fs::OutDir;
use std::fs::{File, TryLockError};
use std::io::{Read as _, Write as _};
use std::path::{Component, Path, PathBuf};

/// The lock file every writer of a run directory holds.
pub const LOCK_FILE: &str = ".agentload.lock";

/// Why a run directory cannot be written or replaced.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// Another process holds the directory's lock.
    #[error(
        "{} is being written by another agentload process ({holder}): one writer at a time; \
         wait for it to end or stop it",
        dir.display()
    )]
    Busy { dir: PathBuf, holder: String },
    /// `--force` in a directory that holds no agentload run.
    #[error(
        "{} holds no agentload run ({reason}): refusing to delete anything in it, even with --force",
        dir.display()
    )]
    NotARun { dir: PathBuf, reason: String },
    /// `--force` in a run directory that holds a symbolic link.
    #[error(
        "{} is a symbolic link: --force refuses a run directory that holds links (agentload \
         writes nothing through one); remove it, or write the run elsewhere",
        link.display()
    )]
    Link { link: PathBuf },
    /// A file of the directory could not be opened as agentload writes it.
    #[error(transparent)]
    Out(#[from] agentload_fs::OutError),
    /// A file system call failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunDirError + '_ {
    move |source| RunDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The exclusive lock of a run directory, held while this value lives (and
/// released by the kernel when the process ends).
#[derive(Debug)]
pub struct WriterLock {
    _file: File,
}

/// Takes `dir`'s writer lock for `command` (`run`, `resume`, ...), or
/// refuses at once, naming the holder. `dir` must exist.
pub fn lock(dir: &Path, command: &str) -> Result<WriterLock, RunDirError> {
    let path = dir.join(LOCK_FILE);
    // Never through a link: a linked lock file would be truncated wherever it leads.
    let mut file = OutDir::new(dir).open_rw(LOCK_FILE, true)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let holder = holder.trim();
            return Err(RunDirError::Busy {
                dir: dir.to_path_buf(),
                holder: if holder.is_empty() {
                    "holder unknown".into()
                } else {
                    holder.to_string()
                },
            });
        }
        Err(TryLockError::Error(e)) => return Err(io(&path)(e)),
    }
    let who = format!("PID {}, agentload {command}\n", std::process::id());
    file.set_len(0)
        .and_then(|()| file.write_all(who.as_bytes()))
        .map_err(io(&path))?;
    Ok(WriterLock { _file: file })
}

/// Whether `rel` (a path inside a run directory) is a file agentload
/// writes there.
pub fn owned(rel: &Path) -> bool {
    let parts: Vec<&str> = rel
        .components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str().unwrap_or("\0"),
            _ => "\0",
        })
        .collect();
    // A file a killed writer left under its temporary name.
    if parts
        .last()
        .is_some_and(|n| agentload_fs::is_staged_name(n))
    {
        return true;
    }
    match parts.as_slice() {
        [name] => top_level(name),
        ["performance", name] => performance(name),
        ["accuracy", name] => {
            journal(name)
                || matches!(
                    *name,
                    "samples.jsonl"
                        | "accuracy_results.json"
                        | "telemetry.jsonl"
                        | "telemetry_summary.json"
                )
        }
        ["sweep", name] => matches!(*name, "summary.json" | "pareto.json"),
        ["sweep", _level, name] => {
            journal(name) || matches!(*name, "summary.json" | "telemetry.jsonl")
        }
        ["export", name] => name.ends_with(".csv"),
        // AA's agentperf-local files (an AA replay, `export --aa`).
        ["aa", name] => matches!(
            *name,
            "turns.jsonl"
                | "tasks.json"
                | "tools.json"
                | "failures.json"
                | "summary.json"
                | "measurement.json"
        ),
        // `rescore` writes RUN_DIR/rescore/<scorer>@<version>/ (its own result files).
        ["rescore", _out, rest @ ..] => !rest.is_empty() && rescore(rest),
        _ => false,
    }
}

/// Whether `rel` is one of the folders agentload makes in a run directory.
fn owned_folder(rel: &Path) -> bool {
    let parts: Vec<_> = rel.components().collect();
    let first = parts.first().and_then(|c| c.as_os_str().to_str());
    match (first, parts.len()) {
        (Some("performance" | "accuracy" | "sweep" | "export" | "rescore" | "aa"), 1) => true,
        (Some("sweep" | "rescore"), 2) => true,
        (Some("rescore"), 3) => parts[2].as_os_str() == "accuracy",
        _ => false,
    }
}

/// A turn or session journal, or a side file of one
/// (`turns.tokens.jsonl`, its `.queue`, `turns.superseded.jsonl`).
fn journal(name: &str) -> bool {
    let name = name.strip_suffix(".queue").unwrap_or(name);
    (name.starts_with("turns.") || name.starts_with("sessions."))
        && (name.ends_with(".jsonl") || name.ends_with(".json"))
}

fn top_level(name: &str) -> bool {
    journal(name)
        || matches!(
            name,
            "config.toml"
                | "config.yaml"
                | "run_manifest.json"
                | "run_state.json"
                | "run_state.json.tmp"
                | "report.txt"
                | "report.html"
                | "scores.json"
                | "telemetry.jsonl"
                | "session_metrics.jsonl"
        )
}

fn performance(name: &str) -> bool {
    name == "result_summary.json" || journal(name)
}

fn rescore(rest: &[&str]) -> bool {
    match rest {
        [name] => matches!(
            *name,
            "scores.json" | "rescore_manifest.json" | "report.txt" | "report.html"
        ),
        ["accuracy", name] => *name == "accuracy_results.json" || *name == "samples.jsonl",
        _ => false,
    }
}

/// With `--force`: removes every file agentload wrote in `dir` (and the
/// folders left empty), after checking that `dir` holds an agentload run.
/// `report_files` are the earlier run's configured report files (relative
/// paths the config confined to the directory). Anything else in it is
/// left as it is. The caller holds `dir`'s lock.
pub fn clear_for_force(dir: &Path, report_files: &[PathBuf]) -> Result<(), RunDirError> {
    is_agentload_run(dir)?;
    refuse_links(dir)?;
    let reports: Vec<PathBuf> = report_files.iter().map(|p| normal(p)).collect();
    clear(dir, Path::new(""), &reports)
}

/// `path` without `.` parts.
fn normal(path: &Path) -> PathBuf {
    path.components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// An agentload run's directory has its `run_manifest.json` (or, for a run
/// killed before writing it, its `run_state.json`), as agentload writes them.
fn is_agentload_run(dir: &Path) -> Result<(), RunDirError> {
    let not_a_run = |reason: String| RunDirError::NotARun {
        dir: dir.to_path_buf(),
        reason,
    };
    let read = |name: &str| -> Option<serde_json::Value> {
        serde_json::from_slice(&agentload_fs::read::read(dir.join(name)).ok()?).ok()
    };
    if let Some(manifest) = read("run_manifest.json") {
        return match manifest.get("agentload_version") {
            Some(serde_json::Value::String(_)) => Ok(()),
            _ => Err(not_a_run(
                "its run_manifest.json is not agentload's (no agentload_version)".into(),
            )),
        };
    }
    if let Some(state) = read("run_state.json") {
        let has = |k: &str| state.get(k).is_some();
        if has("segments") && has("phases") && has("complete") {
            return Ok(());
        }
        return Err(not_a_run("its run_state.json is not agentload's".into()));
    }
    Err(not_a_run(
        "no run_manifest.json or run_state.json that agentload wrote".into(),
    ))
}

/// An error naming the first symbolic link under `dir` (none is followed).
fn refuse_links(dir: &Path) -> Result<(), RunDirError> {
    let mut todo = vec![dir.to_path_buf()];
    while let Some(here) = todo.pop() {
        for entry in std::fs::read_dir(&here).map_err(io(&here))? {
            let entry = entry.map_err(io(&here))?;
            let kind = entry.file_type().map_err(io(&entry.path()))?;
            if kind.is_symlink() {
                return Err(RunDirError::Link { link: entry.path() });
            }
            if kind.is_dir() {
                todo.push(entry.path());
            }
        }
    }
    Ok(())
}

fn clear(dir: &Path, rel: &Path, reports: &[PathBuf]) -> Result<(), RunDirError> {
    let here = dir.join(rel);
    let entries = std::fs::read_dir(&here).map_err(io(&here))?;
    for entry in entries {
        let entry = entry.map_err(io(&here))?;
        let path = entry.path();
        let inner = rel.join(entry.file_name());
        let kind = entry.file_type().map_err(io(&path))?;
        if kind.is_dir() {
            clear(dir, &inner, reports)?;
            // One of agentload's folders goes when nothing else is left in it.
            if owned_folder(&inner)
                && std::fs::read_dir(&path)
                    .map_err(io(&path))?
                    .next()
                    .is_none()
            {
                std::fs::remove_dir(&path).map_err(io(&path))?;
            }
        } else if kind.is_file() && (owned(&inner) || reports.contains(&inner)) {
            std::fs::remove_file(&path).map_err(io(&path))?;
        }
    }
    Ok(())
}

/// Whether `dir` holds anything but its lock file (missing: nothing).
pub fn has_entries(dir: &Path) -> Result<bool, RunDirError> {
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            for entry in entries {
                if entry.map_err(io(dir))?.file_name() != LOCK_FILE {
                    return Ok(true);
                }
            }
            Ok(false)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(dir)(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_second_writer_is_refused_naming_the_holder_and_a_dropped_lock_is_free() {
        let dir = tempfile::tempdir().unwrap();
        let held = lock(dir.path(), "run").unwrap();
        let err = lock(dir.path(), "resume").unwrap_err().to_string();
        assert!(
            err.contains(&format!("PID {}, agentload run", std::process::id())),
            "{err}"
        );
        assert!(err.contains("one writer at a time"), "{err}");
        drop(held);
        lock(dir.path(), "resume").unwrap();
    }

    #[test]
    fn force_removes_agentloads_files_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write(d, "run_manifest.json", r#"{"agentload_version": "0.1.0"}"#);
        for rel in [
            "turns.jsonl",
            "turns.tokens.jsonl",
            "sessions.jsonl",
            "config.toml",
            "report.txt",
            "performance/result_summary.json",
            "accuracy/turns.jsonl",
            "accuracy/accuracy_results.json",
            "telemetry.jsonl",
            "session_metrics.jsonl",
            "accuracy/telemetry.jsonl",
            "accuracy/telemetry_summary.json",
            "sweep/summary.json",
            "sweep/c8/turns.jsonl",
            "sweep/c8/telemetry.jsonl",
            "export/turns.csv",
            "aa/turns.jsonl",
            "aa/summary.json",
            "aa/measurement.json",
            "rescore/bfcl-ast@0.2.0/scores.json",
        ] {
            write(d, rel, "x");
        }
        for mine in [
            "NOTES.md",
            "mine/file",
            "aa/notes.md",
            "performance/extra.txt",
            "sweep/c8/notes.md",
        ] {
            write(d, mine, "mine");
        }
        std::fs::create_dir(d.join("empty-but-mine")).unwrap();
        write(d, "accuracy/multi_turn_results.json", "x");
        clear_for_force(d, &[PathBuf::from("./accuracy/multi_turn_results.json")]).unwrap();
        let mut left: Vec<String> = walk(d);
        left.sort();
        assert_eq!(
            left,
            [
                "NOTES.md",
                "aa/notes.md",
                "mine/file",
                "performance/extra.txt",
                "sweep/c8/notes.md"
            ]
        );
        assert!(d.join("empty-but-mine").is_dir());
        assert!(!d.join("export").exists() && !d.join("rescore").exists());
    }

    fn walk(d: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut todo = vec![d.to_path_buf()];
        while let Some(p) = todo.pop() {
            for e in std::fs::read_dir(&p).unwrap() {
                let e = e.unwrap();
                if e.file_type().unwrap().is_dir() {
                    todo.push(e.path());
                } else {
                    let rel = e
                        .path()
                        .strip_prefix(d)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned();
                    out.push(rel);
                }
            }
        }
        out
    }

    #[test]
    fn force_refuses_a_folder_that_merely_holds_a_config_toml() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for rel in ["config.toml", "src/main.rs", "performance/mydata.csv"] {
            write(d, rel, "mine");
        }
        let err = clear_for_force(d, &[]).unwrap_err().to_string();
        assert!(err.contains("holds no agentload run"), "{err}");
        write(d, "run_manifest.json", r#"{"name": "not agentload"}"#);
        let err = clear_for_force(d, &[]).unwrap_err().to_string();
        assert!(err.contains("not agentload's"), "{err}");
        assert_eq!(walk(d).len(), 4, "nothing deleted");
    }

    #[test]
    fn force_refuses_a_run_that_holds_a_link_and_removes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("run");
        write(&d, "run_manifest.json", r#"{"agentload_version": "0.1.0"}"#);
        write(&d, "turns.jsonl", "x");
        write(&dir.path().join("outside"), "result_summary.json", "mine");
        std::os::unix::fs::symlink(dir.path().join("outside"), d.join("performance")).unwrap();
        let err = clear_for_force(&d, &[]).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "{} is a symbolic link",
                d.join("performance").display()
            )),
            "{err}"
        );
        assert!(d.join("turns.jsonl").is_file(), "nothing removed");
        assert!(dir.path().join("outside/result_summary.json").is_file());
        // A linked lock file is refused, not truncated where it leads.
        std::fs::remove_file(d.join("performance")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("outside/result_summary.json"),
            d.join(LOCK_FILE),
        )
        .unwrap();
        let err = lock(&d, "run").unwrap_err().to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("outside/result_summary.json")).unwrap(),
            "mine"
        );
        // A temporary file a killed writer left goes with --force.
        std::fs::remove_file(d.join(LOCK_FILE)).unwrap();
        write(
            &d,
            "performance/.result_summary.json.1-0.agentload-part",
            "x",
        );
        clear_for_force(&d, &[]).unwrap();
        assert!(!d.join("performance").exists());
    }

    #[test]
    fn the_lock_file_alone_is_an_empty_directory() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!has_entries(&dir.path().join("new")).unwrap());
        let _held = lock(dir.path(), "run").unwrap();
        assert!(!has_entries(dir.path()).unwrap());
        write(dir.path(), "x", "");
        assert!(has_entries(dir.path()).unwrap());
    }
}
