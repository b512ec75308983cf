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

/// A run config against the simulator at `url` for the test model (no tokenizer), built
/// from its parts in the order TOML needs (top-level keys, then tables).
#[derive(Default)]
pub struct RunToml<'a> {
    pub name: &'a str,
    pub url: &'a str,
    /// More top-level keys (`data_dir = ...`).
    pub top: &'a str,
    /// More `[endpoint]` keys.
    pub endpoint: &'a str,
    /// Tables before the workload's (`[load.arrivals]`).
    pub load: &'a str,
    /// The workload's tables ([`CODING_REPLAY`], [`SMALL_SYNTH`], ...).
    pub workload: &'a str,
    /// `[sweep]`'s keys and the tables after it; none: no sweep.
    pub sweep: Option<&'a str>,
}

impl RunToml<'_> {
    /// The config's text.
    pub fn text(&self) -> String {
        let Self {
            name,
            url,
            top,
            endpoint,
            load,
            workload,
            sweep,
        } = self;
        let sweep = sweep.map_or_else(String::new, |s| format!("[sweep]\n{s}"));
        format!(
            "name = \"{name}\"\n{top}[model]\nname = \"test-model\"\ntokenizer = \"none\"\n\
             [endpoint]\nurl = \"{url}\"\n{endpoint}{load}{workload}{sweep}"
        )
    }

    /// Writes it to `path`; returns `path`.
    pub fn write(&self, path: &Path) -> PathBuf {
        std::fs::write(path, self.text()).unwrap();
        path.to_owned()
    }
}

/// coding-replay over the edge trajectories.
pub const CODING_REPLAY: &str = r#"[performance]
workload = "coding-replay"
[performance.data]
trajectories = "agentic_coding_2.5h.jsonl"
"#;

/// agentic-synth's small sessions: 2 or 3 turns of about 100 words of context, 8 output
/// tokens, 20 ms tool delays.
pub const SMALL_SYNTH: &str = r#"[performance]
workload = "agentic-synth"
[performance.settings]
seed = 1
turns_min = 2
turns_max = 3
system_words = 20
max_context = 1024
context = { median = 100.0, sigma = 0.3, min = 20, max = 400 }
tool_output = { median = 20.0, sigma = 0.3, min = 5, max = 80 }
tool_call_osl = { median = 4.0, sigma = 0.2, min = 2, max = 8 }
reasoning_osl = { median = 8.0, sigma = 0.2, min = 4, max = 16 }
tool_delay_ms = { median = 20.0, sigma = 0.3, min = 5, max = 50 }
"#;

/// A short agents sweep's end rules: 3 trajectories, 1 per agent, 0.3 s of steady state
/// after 0.1 s of warm-up (`levels` not included).
pub const SHORT_AGENT_RULES: &str = r#"min_trajectories = 3
min_per_agent = 1
steady_state_s = 0.3
warmup_s = 0.1
max_tokens = 64
tool_delay = "none"
max_trajectories_per_agent = 20
"#;

/// A short rate sweep's rules: 1 s of steady state after 0.2 s of warm-up, the recorded
/// tool delays (`rates`, `min_trajectories` and `max_phase_s` not included).
pub const SHORT_RATE_RULES: &str = r#"min_per_agent = 0
steady_state_s = 1.0
warmup_s = 0.2
max_tokens = 64
keep_workload_max_tokens = true
tool_delay = "recorded"
"#;

/// Poisson arrivals of sessions, seeded `seed`.
pub fn poisson_sessions(seed: u64) -> String {
    format!("[load.arrivals]\nof = \"sessions\"\nprocess = \"poisson\"\nseed = {seed}\n")
}

/// Points an [`edge_config`] at the trajectories `file` of the data directory `data`.
pub fn with_trajectories(config: &Path, data: &Path, file: &str) {
    edit_config(
        config,
        &[
            (
                "trajectories = \"agentic_coding_2.5h.jsonl\"",
                &format!("trajectories = \"{file}\""),
            ),
            (
                "[model]",
                &format!("data_dir = \"{}\"\n[model]", data.display()),
            ),
        ],
    );
}

/// Rewrites `config`, each `(from, to)` replaced; every `from` must be there.
pub fn edit_config(config: &Path, pairs: &[(&str, &str)]) {
    let mut text = std::fs::read_to_string(config).unwrap();
    for (from, to) in pairs {
        assert!(text.contains(from), "{from:?} is not in the config");
        text = text.replace(from, to);
    }
    std::fs::write(config, text).unwrap();
}

/// `v[key]`, a whole number (a stamp in ns, say); panics naming the key.
pub fn stamp(v: &serde_json::Value, key: &str) -> i64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("`{key}` missing in {v}")) as i64
}

/// `agentload bench ARGS --out DIR/bench.json` in `dir`, which must succeed and print a
/// row with each of `rows`; returns its table and its JSON file.
pub async fn bench_ok(dir: &Path, args: &[&str], rows: &[&str]) -> (String, serde_json::Value) {
    let out = dir.join("bench.json");
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    all.extend(["--out", out.to_str().unwrap()]);
    let run = agentload(&all, dir).await;
    let table = text(&run);
    assert!(run.status.success(), "{table}");
    for row in rows {
        assert!(table.contains(row), "`{row}` missing:\n{table}");
    }
    (table, json(&out))
}

/// `kubernetes-validate` (`AGENTLOAD_K8S_VALIDATE`; scripts/test.sh installs it), or none
/// where it is not installed and the test data is not required: the test skips, saying so.
pub fn k8s_validator() -> Option<PathBuf> {
    match std::env::var_os("AGENTLOAD_K8S_VALIDATE") {
        Some(t) => Some(PathBuf::from(t)),
        None if std::env::var_os("AGENTLOAD_REQUIRE_DATA").is_some() => {
            panic!(
                "AGENTLOAD_K8S_VALIDATE is not set (scripts/test.sh installs kubernetes-validate)"
            )
        }
        None => {
            eprintln!("skipped: kubernetes-validate not installed (scripts/test.sh installs it)");
            None
        }
    }
}

/// `TOOL --strict FILE` ([`k8s_validator`]): whether the objects passed, and what it said.
pub fn k8s_validate(tool: &Path, file: &Path) -> (bool, String) {
    let check = std::process::Command::new(tool)
        .arg("--strict")
        .arg(file)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    (check.status.success(), said)
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
