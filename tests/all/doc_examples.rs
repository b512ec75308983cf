//! Examples that cannot rot: the command blocks of the guide (docs/) and the
//! README.md.
//!
//! A fenced block with an `agentload` command carries one mark in its info
//! string, after the language (```` ```sh test ````):
//! - `test`: it runs here, as written, against the embedded simulator;
//! - `server`: it needs a real server, a service or the network;
//! - `cluster`: it needs several machines or Kubernetes;
//! - `example`: not run here: a command's shape on the reader's own results
//!   or files (`results/a`, `my_workload.wasm`), or a run too long for the
//!   suite.
//!
//! Each page's `test` blocks run in order as one `bash -euo pipefail` script,
//! as a reader runs them in one shell from the repository root: in a scratch
//! directory holding `configs/` and `tests/` (the checkout's) and `data/` (the
//! data directory, read-only), with the built `agentload` first on `PATH`. A
//! job started in the background (`agentload sim ... &`) is waited for until
//! its `--port` answers, and stopped when the page ends. A page that reads
//! `results/demo` without running `agentload demo` itself finds there a copy
//! of an earlier page's demo (the README's), as a reader who followed the
//! README has it.

use crate::common::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

const MARKS: &[&str] = &["test", "server", "cluster", "example"];

/// One fenced block: where it starts, its info string's words and its lines.
struct Block {
    line: usize,
    marks: Vec<String>,
    body: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim_start();
        let fence: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        if fence.len() < 3 {
            continue;
        }
        let info = &trimmed[fence.len()..];
        let marks = info
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(String::from)
            .collect();
        let body = lines
            .by_ref()
            .map(|(_, l)| l)
            .take_while(|l| !l.trim_start().starts_with(fence.as_str()))
            .map(String::from)
            .collect();
        out.push(Block {
            line: i + 1,
            marks,
            body,
        });
    }
    out
}

fn is_command(line: &str) -> bool {
    let line = line.trim_start();
    let line = line.strip_prefix("$ ").unwrap_or(line);
    line.starts_with("agentload ")
        || line.contains("&& agentload ")
        || line.contains("| agentload ")
}

fn root() -> PathBuf {
    manifest_dir().join("../..")
}

/// The guide's pages and the README.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut out = vec![root().join("README.md")];
    walk(&root().join("docs"), &mut out);
    out.sort();
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn every_command_block_of_the_guide_and_readme_is_marked() {
    let mut unmarked = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for block in blocks(&text) {
            if !block.body.iter().any(|l| is_command(l)) {
                continue;
            }
            let marked = block
                .marks
                .iter()
                .filter(|m| MARKS.contains(&m.as_str()))
                .count();
            if marked != 1 {
                unmarked.push(format!("{}:{}", relative(&page), block.line));
            }
        }
    }
    assert!(
        unmarked.is_empty(),
        "these blocks run agentload without exactly one of {MARKS:?} after the \
         language (e.g. ```sh test): {unmarked:#?}"
    );
}

#[test]
fn the_parser_reads_marks_and_bodies() {
    let text = "a\n```sh test\nagentload demo\n```\n~~~\nagentload x \\\n  --y\n~~~\n```rust\nfn main() {}\n```\n";
    let found = blocks(text);
    assert_eq!(found.len(), 3);
    assert_eq!(
        (found[0].line, found[0].marks.clone()),
        (2, vec!["sh".into(), "test".into()])
    );
    assert_eq!(found[0].body, vec!["agentload demo"]);
    assert!(found[1].marks.is_empty() && found[1].body.len() == 2);
    assert!(is_command(&found[1].body[0]) && !is_command(&found[2].body[0]));
}

/// The script a page's `test` blocks run as, one after another as a reader
/// runs them in one shell: each block announced on stderr (`block
/// PAGE:LINE`), a simulator started with `&` waited for until its port
/// answers, and every background job stopped at the end.
fn script(page: &str, blocks: &[Block]) -> String {
    let mut out = String::from("trap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT\n");
    for block in blocks {
        out.push_str(&format!("echo 'block {page}:{}' >&2\n", block.line));
        let mut command = String::new();
        for line in &block.body {
            command.push_str(line);
            command.push('\n');
            if line.trim_end().ends_with('\\') {
                continue;
            }
            out.push_str(&command);
            let words: Vec<&str> = command.split_whitespace().collect();
            if command.trim_end().ends_with('&') && words.first() == Some(&"agentload") {
                if let Some(port) = words
                    .iter()
                    .position(|w| *w == "--port")
                    .and_then(|i| words.get(i + 1))
                {
                    out.push_str(&format!(
                        "for _ in $(seq 600); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null \
                         && break; sleep 0.1; done\n"
                    ));
                }
            }
            command.clear();
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_blocks_marked_test_run_as_written() {
    trajectories();
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_agentload"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    // `agentload demo`'s results, from the first page that made them.
    let demo = scratch("doc-examples-demo");
    let demo_results = demo.path().join("demo");
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let tests: Vec<Block> = blocks(&text)
            .into_iter()
            .filter(|b| b.marks.iter().any(|m| m == "test"))
            .collect();
        if tests.is_empty() {
            continue;
        }
        let name = relative(&page);
        let dir = scratch("doc-examples");
        std::os::unix::fs::symlink(root().join("configs"), dir.path().join("configs")).unwrap();
        std::os::unix::fs::symlink(root().join("tests"), dir.path().join("tests")).unwrap();
        std::os::unix::fs::symlink(data_dir(), dir.path().join("data")).unwrap();
        let script = script(&name, &tests);
        if script.contains("results/demo") && !script.contains("agentload demo") {
            if !demo_results.is_dir() {
                run_ok(
                    std::process::Command::new(&bin)
                        .args(["demo", "--out"])
                        .arg(&demo_results)
                        .env("AGENTLOAD_DATA_DIR", data_dir()),
                );
            }
            std::fs::create_dir_all(dir.path().join("results")).unwrap();
            copy_dir(&demo_results, &dir.path().join("results/demo"));
        }
        let run = tokio::process::Command::new("bash")
            .args(["-euo", "pipefail", "-c", &script])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("AGENTLOAD_DATA_DIR", data_dir())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(900), run)
            .await
            .unwrap_or_else(|_| panic!("{name}: still running after 900 s"))
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rfind(|l| l.starts_with("block "));
        assert!(
            out.status.success(),
            "{} failed ({}):\n{}",
            last.unwrap_or(&name),
            out.status,
            text_of(&out)
        );
        ran += tests.len();
        let made = dir.path().join("results/demo");
        if !demo_results.is_dir() && made.join("run_manifest.json").is_file() {
            copy_dir(&made, &demo_results);
        }
    }
    assert!(ran >= 3, "only {ran} blocks marked test");
}

/// Runs a command to its end; it must succeed.
fn run_ok(command: &mut std::process::Command) {
    let out = command.output().unwrap();
    assert!(out.status.success(), "{command:?}: {}", text_of(&out));
}

/// A copy of the directory `from` at `to` (`cp -a`: links kept as links).
fn copy_dir(from: &Path, to: &Path) {
    run_ok(std::process::Command::new("cp").arg("-a").arg(from).arg(to));
}

fn text_of(out: &std::process::Output) -> String {
    let tail = |b: &[u8]| {
        let s = String::from_utf8_lossy(b).into_owned();
        let start = s.len().saturating_sub(4000);
        let start = (start..s.len())
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(0);
        s[start..].to_owned()
    };
    format!(
        "stdout:\n{}\nstderr:\n{}",
        tail(&out.stdout),
        tail(&out.stderr)
    )
}

/// The relative link targets of a Markdown text outside its code blocks
/// (`[text](target)` and `![alt](target)`), without their #fragment.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split('#').next().unwrap_or("");
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                out.push(target.to_owned());
            }
            rest = &rest[end..];
        }
    }
    out
}

#[test]
fn every_relative_link_of_the_readme_names_a_file() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let links = relative_links(&text);
    assert!(!links.is_empty());
    let broken: Vec<&String> = links.iter().filter(|l| !root().join(l).exists()).collect();
    assert!(broken.is_empty(), "README.md links to nothing: {broken:?}");
    assert_eq!(
        relative_links("[a](docs/x.md#h) ![p](i.png) [w](https://x.org)\n```\n[c](no.md)\n```\n"),
        vec!["docs/x.md", "i.png"]
    );
}
