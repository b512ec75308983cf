//! Sealing: a submission run accepts only the plugins in
//! `plugins/official.lock` and refuses a tampered one before any request;
//! a development run proceeds and marks its results unsealed.

mod common;

use agentload_sim::{ResponderConfig, SimConfig};
use common::*;
use std::path::{Path, PathBuf};

/// The official plugins as built (scripts/build-plugins.sh).
fn official_dir() -> PathBuf {
    test_plugin("misbehave")
        .parent()
        .unwrap()
        .join("../plugins")
}

/// A copy of the official plugins with one byte of `coding_replay.wasm`
/// changed inside its description string (the component stays valid).
fn tampered_plugins(dir: &Path) -> PathBuf {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    for name in ["coding_replay.wasm", "shell_iou.wasm"] {
        std::fs::copy(official_dir().join(name), plugins.join(name)).unwrap();
    }
    let path = plugins.join("coding_replay.wasm");
    let mut bytes = std::fs::read(&path).unwrap();
    let needle = b"recorded agentic-coding trajectories";
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("the description string is in the component");
    bytes[at] = b'R';
    std::fs::write(&path, bytes).unwrap();
    plugins
}

fn config_with_plugins(dir: &Path, url: &str, plugins: &Path) -> PathBuf {
    let config = edge_config(dir, url, "num_trajectories_to_issue = 1", "");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[performance]\n",
        &format!(
            "[plugins]\ndir = \"{}\"\n\n[performance]\n",
            plugins.display()
        ),
    );
    std::fs::write(&config, text).unwrap();
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_plugin_is_refused_in_submission_and_marked_in_development() {
    let dir = scratch("seal");
    let plugins = tampered_plugins(dir.path());
    // Submission: refused before anything is sent (the endpoint does not even exist).
    let config = config_with_plugins(dir.path(), "http://127.0.0.1:9", &plugins);
    let out = dir.path().join("refused");
    let run = agentload(
        &[
            "run",
            config.to_str().unwrap(),
            "--submission",
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    let msg = text(&run);
    assert!(!run.status.success(), "{msg}");
    assert!(
        msg.contains("coding_replay.wasm") && msg.contains("not the locked coding-replay@"),
        "{msg}"
    );
    let digests = msg.matches("sha256:").count();
    assert!(digests >= 2, "both digests named: {msg}");
    assert!(!out.join("turns.jsonl").exists());

    // Development: the same plugins run, and the results say unsealed.
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let config = config_with_plugins(dir.path(), &sim.url(), &plugins);
    let out = dir.path().join("dev");
    run_ok(&config, &out, &[], dir.path()).await;
    let manifest = json(&out.join("run_manifest.json"));
    assert_eq!(manifest["seal"]["mode"], "development");
    assert_eq!(manifest["seal"]["sealed"], false);
    let statuses: Vec<(&str, &str)> = manifest["seal"]["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["file"].as_str().unwrap(), p["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [
            ("coding_replay.wasm", "unsealed"),
            ("shell_iou.wasm", "sealed")
        ]
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.starts_with("UNSEALED"), "{report}");

    // The untouched official plugins pass a submission run.
    let config = config_with_plugins(dir.path(), &sim.url(), &official_dir());
    let out = dir.path().join("sealed");
    let run = agentload(
        &[
            "run",
            config.to_str().unwrap(),
            "--submission",
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    assert!(run.status.success(), "{}", text(&run));
    let manifest = json(&out.join("run_manifest.json"));
    assert_eq!(manifest["seal"]["mode"], "submission");
    assert_eq!(manifest["seal"]["sealed"], true);
    sim.shutdown().await;
}
