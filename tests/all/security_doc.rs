//! `SECURITY.md` names the test behind each claim: every row of its "What
//! each test shows" table names at least one test, and every test, test
//! module and test file it names exists. A test renamed or removed fails
//! here, not in an audit.

use crate::common::{cargo_metadata, manifest_dir};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The workspace's crates, by the name code uses (`agentload_client`): their folders.
fn crate_dirs() -> BTreeMap<String, PathBuf> {
    cargo_metadata()["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap().replace('-', "_");
            let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap());
            (name, manifest.parent().unwrap().to_path_buf())
        })
        .collect()
}

/// Every `.rs` file below `dir`, with its text.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if path.is_dir() {
                if name != "target" && !name.to_string_lossy().starts_with('.') {
                    stack.push(path);
                }
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    found
}

/// Whether `text` defines a test function `name` (a `fn name` with a test
/// attribute in the lines above it).
fn defines_test(text: &str, name: &str) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    lines.iter().enumerate().any(|(i, line)| {
        let Some(at) = line.find(&format!("fn {name}")) else {
            return false;
        };
        let after = &line[at + 3 + name.len()..];
        after.starts_with(['(', '<'])
            && lines[i.saturating_sub(6)..i]
                .iter()
                .any(|l| l.trim_start().starts_with("#[") && l.contains("test"))
    })
}

/// Whether `text` holds a module `name` (`mod name`), or `path` is its file
/// (`name.rs`, `name/mod.rs`).
fn defines_module(path: &Path, text: &str, name: &str) -> bool {
    path.file_stem().is_some_and(|s| s == name)
        || (path.ends_with("mod.rs") && path.parent().is_some_and(|d| d.ends_with(name)))
        || text.lines().any(|l| {
            l.trim_start()
                .trim_start_matches("pub ")
                .starts_with(&format!("mod {name}"))
        })
}

/// The backquoted words of `cell`.
fn quoted(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

fn is_test_name(word: &str) -> bool {
    word.chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && word.matches('_').count() >= 2
}

#[test]
fn every_claim_names_a_test_that_exists() {
    let root = manifest_dir().join("../..").canonicalize().unwrap();
    let doc = std::fs::read_to_string(root.join("SECURITY.md")).unwrap();
    let table = doc
        .split("## What each test shows")
        .nth(1)
        .expect("SECURITY.md has its table of tests")
        .split("\n## ")
        .next()
        .unwrap();
    let crates = crate_dirs();
    let all = sources(&root);
    let mut problems = Vec::new();
    let mut rows = 0;
    for row in table.lines().filter(|l| l.starts_with("| ")).skip(2) {
        rows += 1;
        let cells: Vec<&str> = row.trim_matches('|').split(" | ").collect();
        let [defence, tests] = cells[..] else {
            problems.push(format!("not two cells: {row}"));
            continue;
        };
        let claim: String = defence.chars().take(70).collect();
        let mut named = 0;
        for part in tests.split(';') {
            // What a name is looked up in: the files and crate named before it in
            // this part of the cell, else the whole workspace.
            let mut base = root.clone();
            let mut file: Option<PathBuf> = None;
            for word in quoted(part) {
                if word.contains(' ') {
                    continue;
                }
                if word.contains('/') {
                    let path = base.join(word);
                    if !path.exists() {
                        problems.push(format!("{claim}…: no file {word}"));
                    } else if word.ends_with(".rs") {
                        file = Some(path);
                        named += 1;
                    }
                } else if let Some(dir) = crates.get(word) {
                    base = dir.clone();
                } else if word.contains("::") {
                    let segments: Vec<&str> = word.split("::").collect();
                    let Some(dir) = crates.get(segments[0]) else {
                        problems.push(format!("{claim}…: no crate {}", segments[0]));
                        continue;
                    };
                    let in_crate: Vec<_> = all.iter().filter(|(p, _)| p.starts_with(dir)).collect();
                    let (last, modules) = segments[1..].split_last().unwrap();
                    let module =
                        |name: &str| in_crate.iter().any(|(p, t)| defines_module(p, t, name));
                    let found = modules.iter().all(|m| module(m))
                        && (module(last) || in_crate.iter().any(|(_, t)| defines_test(t, last)));
                    if found {
                        named += 1;
                    } else {
                        problems.push(format!("{claim}…: no test or module {word}"));
                    }
                } else if is_test_name(word) {
                    let found = match &file {
                        Some(f) => defines_test(&std::fs::read_to_string(f).unwrap(), word),
                        None => all.iter().any(|(_, t)| defines_test(t, word)),
                    };
                    if found {
                        named += 1;
                    } else {
                        let place = file.as_deref().map_or("the workspace".into(), |f| {
                            f.strip_prefix(&root).unwrap_or(f).display().to_string()
                        });
                        problems.push(format!("{claim}…: no test {word} in {place}"));
                    }
                }
            }
        }
        if named == 0 {
            problems.push(format!("{claim}…: names no test"));
        }
    }
    assert!(rows > 20, "{rows} rows read from SECURITY.md's table");
    assert!(
        problems.is_empty(),
        "SECURITY.md's tests:\n{}",
        problems.join("\n")
    );
}
