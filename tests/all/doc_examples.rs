//! Examples that cannot rot: the command blocks of the guide (docs/) and the
//! README.md.
//!
//! A fenced block with an `agentload` command carries one mark in its info
//! string, after the language (```` ```sh test ````):
//! - `test`: it runs here, as written, against the embedded simulator;
//! - `server`: it needs a real server, a service or the network;
//! - `cluster`: it needs several machines or Kubernetes.
//!
//! There is no mark for "not run": a command on the reader's own files runs
//! here on files the page made first, and a long run is shown at a size that
//! runs in seconds, its full size said in the text.
//!
//! Each page's `test` blocks run in order as one `bash -euo pipefail` script,
//! as a reader runs them in one shell from the repository root (the README
//! first, then the other pages two at a time): in a scratch
//! directory holding `configs/`, `tests/` and `plugins/sdk/` (the
//! checkout's) and `data/` (the data directory's files and the cache's, as
//! `scripts/fetch-data.sh data` lays them out; read-only), with the built
//! `agentload` first on `PATH`. A job started in the background (`agentload
//! sim ... &`) is waited for until its `--port` answers, and stopped when the
//! page ends. Every port a page's simulators listen on is replaced, in the
//! whole page, by a free one, so two runs on one machine do not collide. A
//! page that reads `results/demo` without running `agentload demo` itself
//! finds there a copy of an earlier page's demo (the README's), as a reader
//! who followed the README has it. `cargo` in a page builds with its own
//! target folder (the crate's `target/`), its intermediate files in the
//! authoring tests' (`CARGO_BUILD_BUILD_DIR`), so dependencies build once;
//! `mktemp` makes its folders in the scratch directory.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const MARKS: &[&str] = &["test", "server", "cluster"];

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

/// The lines of `text`'s blocks that run `agentload` without exactly one
/// of [`MARKS`].
fn unmarked(text: &str) -> Vec<usize> {
    blocks(text)
        .into_iter()
        .filter(|block| block.body.iter().any(|l| is_command(l)))
        .filter(|block| {
            let marks = block.marks.iter();
            marks.filter(|m| MARKS.contains(&m.as_str())).count() != 1
        })
        .map(|block| block.line)
        .collect()
}

#[test]
fn every_command_block_of_the_guide_and_readme_is_marked() {
    let mut found = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for line in unmarked(&text) {
            found.push(format!("{}:{line}", relative(&page)));
        }
    }
    assert!(
        found.is_empty(),
        "these blocks run agentload without exactly one of {MARKS:?} after the \
         language (e.g. ```sh test): {found:#?}"
    );
    // A block that is not run is no mark: it fails like an unmarked one.
    let text = "```sh example\nagentload demo\n```\n```sh\nagentload demo\n```\n\
                ```sh test server\nagentload demo\n```\n```sh server\nagentload demo\n```\n";
    assert_eq!(unmarked(text), vec![1, 4, 7]);
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

/// A block's commands: its lines, a line ending with `\\` joined with the
/// next (each command keeps its newlines).
fn commands(body: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut command = String::new();
    for line in body {
        command.push_str(line);
        command.push('\n');
        if !line.trim_end().ends_with('\\') {
            out.push(std::mem::take(&mut command));
        }
    }
    if !command.is_empty() {
        out.push(command);
    }
    out
}

/// The `--port` of a command that starts `agentload` in the background.
fn background_port(command: &str) -> Option<&str> {
    let words: Vec<&str> = command.split_whitespace().collect();
    if !command.trim_end().ends_with('&') || words.first() != Some(&"agentload") {
        return None;
    }
    let at = words.iter().position(|w| *w == "--port")?;
    words.get(at + 1).copied()
}

/// Each port the blocks' background simulators listen on, with a free port
/// of this machine to use instead (held until all are chosen, so distinct).
fn free_ports(blocks: &[Block]) -> BTreeMap<String, String> {
    let mut held = Vec::new();
    let mut out = BTreeMap::new();
    for block in blocks {
        for command in commands(&block.body) {
            if let Some(port) = background_port(&command) {
                if !out.contains_key(port) {
                    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
                    out.insert(
                        port.to_owned(),
                        listener.local_addr().unwrap().port().to_string(),
                    );
                    held.push(listener);
                }
            }
        }
    }
    out
}

/// `text` with each port of `ports` replaced where it is a port: after
/// `--port ` or a `:` (`127.0.0.1:8090`, `localhost:8090`), not followed by
/// another digit.
fn with_ports(text: &str, ports: &BTreeMap<String, String>) -> String {
    let mut text = text.to_owned();
    for (old, new) in ports {
        let mut out = String::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find(old.as_str()) {
            let (before, after) = (&rest[..at], &rest[at + old.len()..]);
            out.push_str(before);
            let is_port = out.ends_with(':') || out.ends_with("--port ");
            let whole = !after.starts_with(|c: char| c.is_ascii_digit());
            out.push_str(if is_port && whole { new } else { old });
            rest = after;
        }
        out.push_str(rest);
        text = out;
    }
    text
}

/// The script a page's `test` blocks run as, one after another as a reader
/// runs them in one shell: each block announced on stderr (`block
/// PAGE:LINE`), its simulators' ports replaced by `ports`, a simulator
/// started with `&` waited for until its port answers, and every background
/// job stopped at the end.
fn script(page: &str, blocks: &[Block], ports: &BTreeMap<String, String>) -> String {
    let mut out = String::from("trap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT\n");
    for block in blocks {
        out.push_str(&format!("echo 'block {page}:{}' >&2\n", block.line));
        for command in commands(&block.body) {
            let command = with_ports(&command, ports);
            out.push_str(&command);
            if let Some(port) = background_port(&command) {
                out.push_str(&format!(
                    "for _ in $(seq 600); do (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null \
                     && break; sleep 0.1; done\n"
                ));
            }
        }
    }
    out
}

#[test]
fn a_page_s_simulator_ports_are_replaced_by_free_ones() {
    let text = "```sh test\nagentload sim --port 8090 --slots 4 &\nagentload run c.toml \\\n    --endpoint http://127.0.0.1:8090 --out results/18090\ncat > c.toml <<EOF\nurl = \"http://localhost:8090/v1\"\nEOF\n```\n";
    let found = blocks(text);
    let ports = free_ports(&found);
    let new = &ports["8090"];
    assert_ne!(new, "8090");
    let script = script("p.md", &found, &ports);
    assert!(
        script.contains(&format!("--port {new} --slots 4 &\nfor _ in")),
        "{script}"
    );
    assert!(
        script.contains(&format!("/dev/tcp/127.0.0.1/{new})")),
        "{script}"
    );
    assert!(
        script.contains(&format!(
            "--endpoint http://127.0.0.1:{new} --out results/18090\n"
        )),
        "{script}"
    );
    assert!(
        script.contains(&format!("url = \"http://localhost:{new}/v1\"")),
        "{script}"
    );
    assert!(
        !script.contains(":8090") && !script.contains("--port 8090"),
        "{script}"
    );
    assert_eq!(
        with_ports("a:80901 b:8090", &ports),
        format!("a:80901 b:{new}")
    );
}

/// The `test` blocks of a page.
struct Page {
    name: String,
    tests: Vec<Block>,
}

/// Runs a page's `test` blocks in a scratch directory of its own; `demo`
/// holds the results of `agentload demo` once a page made them (copied
/// there from the first page that does, made here for a page that reads
/// them before any did). Panics, naming the block, when one fails.
async fn run_page(page: Page, demo: PathBuf) -> usize {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_agentload"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // Intermediate build files of the pages' `cargo build`s: the authoring
    // tests' target folder, so the plugin's dependencies are built once.
    let build_dir = bin.parent().unwrap().join("../authoring");
    let Page { name, tests } = page;
    let dir = scratch("doc-examples");
    std::os::unix::fs::symlink(root().join("configs"), dir.path().join("configs")).unwrap();
    std::os::unix::fs::symlink(root().join("tests"), dir.path().join("tests")).unwrap();
    reader_data(&dir.path().join("data"));
    std::fs::create_dir_all(dir.path().join("plugins")).unwrap();
    std::os::unix::fs::symlink(root().join("plugins/sdk"), dir.path().join("plugins/sdk")).unwrap();
    std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
    let script = script(&name, &tests, &free_ports(&tests));
    if needs_demo(&script) {
        if !demo.is_dir() {
            run_ok(
                std::process::Command::new(&bin)
                    .args(["demo", "--out"])
                    .arg(&demo)
                    .env("AGENTLOAD_DATA_DIR", data_dir()),
            );
        }
        std::fs::create_dir_all(dir.path().join("results")).unwrap();
        copy_dir(&demo, &dir.path().join("results/demo"));
    }
    let started = std::time::Instant::now();
    let run = tokio::process::Command::new("bash")
        .args(["-euo", "pipefail", "-c", &script])
        .current_dir(dir.path())
        .env("PATH", &path)
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .env("TMPDIR", dir.path().join("tmp"))
        .env("CARGO_BUILD_BUILD_DIR", &build_dir)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        // A page that commits to a git repository of its own.
        .envs([
            ("GIT_AUTHOR_NAME", "A Reader"),
            ("GIT_AUTHOR_EMAIL", "reader@example.org"),
            ("GIT_COMMITTER_NAME", "A Reader"),
            ("GIT_COMMITTER_EMAIL", "reader@example.org"),
        ])
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
    eprintln!(
        "{name}: {} blocks ran in {:.1} s",
        tests.len(),
        started.elapsed().as_secs_f64()
    );
    let made = dir.path().join("results/demo");
    if !demo.is_dir() && made.join("run_manifest.json").is_file() {
        copy_dir(&made, &demo);
    }
    tests.len()
}

/// Whether a page's script reads `results/demo` without making it.
fn needs_demo(script: &str) -> bool {
    script.contains("results/demo") && !script.contains("agentload demo")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_blocks_marked_test_run_as_written() {
    trajectories();
    // While editing pages: `AGENTLOAD_DOC_PAGE=authoring,sweeps` runs only
    // the pages whose path contains one of the words.
    let only = std::env::var("AGENTLOAD_DOC_PAGE").ok();
    let mut pages = pages().into_iter().filter_map(|page| {
        let name = relative(&page);
        if only
            .as_ref()
            .is_some_and(|o| !o.split(',').any(|w| name.contains(w)))
        {
            return None;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        let tests: Vec<Block> = blocks(&text)
            .into_iter()
            .filter(|b| b.marks.iter().any(|m| m == "test"))
            .collect();
        (!tests.is_empty()).then_some(Page { name, tests })
    });
    let demo = scratch("doc-examples-demo");
    let demo_results = demo.path().join("demo");
    // The first page (the README, whose demo the later pages read) alone,
    // then the others two at a time: most of a page's time is simulated
    // time, and each page has its own directory and ports.
    let mut ran = 0;
    if let Some(first) = pages.next() {
        ran += run_page(first, demo_results.clone()).await;
    }
    let rest: Vec<Page> = pages.collect();
    let needs = |p: &Page| {
        let bodies: Vec<String> = p.tests.iter().map(|b| b.body.join("\n")).collect();
        needs_demo(&bodies.join("\n"))
    };
    if !demo_results.is_dir() && rest.iter().any(needs) {
        run_ok(
            std::process::Command::new(env!("CARGO_BIN_EXE_agentload"))
                .args(["demo", "--out"])
                .arg(&demo_results)
                .env("AGENTLOAD_DATA_DIR", data_dir()),
        );
    }
    let mut rest = rest.into_iter();
    let mut running = tokio::task::JoinSet::new();
    loop {
        while running.len() < 2 {
            let Some(page) = rest.next() else { break };
            running.spawn(run_page(page, demo_results.clone()));
        }
        let Some(done) = running.join_next().await else {
            break;
        };
        ran += done.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
    }
    assert!(only.is_some() || ran >= 3, "only {ran} blocks marked test");
}

/// `data/` as a reader has it after `scripts/fetch-data.sh data`: every
/// entry of the data directory, and of the cache's data folder where the
/// data directory lacks it (BFCL's and AA's data in CI), linked.
fn reader_data(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let cache = agentload_config::data::cache_data_dir();
    for from in std::iter::once(data_dir()).chain(cache) {
        let Ok(entries) = std::fs::read_dir(&from) else {
            continue;
        };
        for entry in entries {
            let entry = entry.unwrap();
            let link = to.join(entry.file_name());
            if !link.exists() {
                std::os::unix::fs::symlink(entry.path(), link).unwrap();
            }
        }
    }
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
