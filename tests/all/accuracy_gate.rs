//! The BFCL v4 accuracy gate end to end: the real binary with the shipped
//! edge config (`--accuracy-only`), the bfcl-single workload and bfcl-ast
//! scorer plugins, and the simulator's oracle answering with the gold calls.

use crate::common::*;
use agentload_sim::SimConfig;
use serde_json::Value;
use std::path::PathBuf;

/// The BFCL data folder (data directory, else the agentload cache).
fn bfcl_dir() -> PathBuf {
    let found = agentload_config::data::locate(&data_dir(), "bfcl_v4/possible_answer");
    found
        .and_then(|p| p.parent().map(PathBuf::from))
        .expect("BFCL v4 data missing: run scripts/fetch-bfcl.sh ~/.cache/agentload/data")
}

fn edge_config() -> PathBuf {
    crate::common::manifest_dir().join("../../configs/edge-full-run.toml")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gold_answers_pass_the_gate_except_the_unpassable_entry() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: gold_responder(None, Some(bfcl_dir())),
        ..SimConfig::default()
    })
    .await;
    let dir = scratch("gate");
    let out = dir.path().join("out");
    let run = agentload(
        &[
            "run",
            edge_config().to_str().unwrap(),
            "--accuracy-only",
            "--endpoint",
            &sim.url(),
            "--out",
            out.to_str().unwrap(),
            "--require-valid",
        ],
        dir.path(),
    )
    .await;
    let output = text(&run);
    assert!(run.status.success(), "{output}");
    assert!(output.contains("accuracy gate PASS"), "{output}");
    assert!(!out.join("turns.jsonl").exists(), "no performance phase");

    let samples: Vec<Value> = read_jsonl(&out.join("accuracy/samples.jsonl"));
    assert_eq!(samples.len(), 995);
    for s in &samples {
        for key in ["id", "subset", "category", "valid", "error_type"] {
            assert!(s.get(key).is_some(), "{key} missing in {s}");
        }
    }
    let failed: Vec<&Value> = samples.iter().filter(|s| s["valid"] != true).collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0]["id"], "simple_java_36");

    let results = json(&out.join("accuracy/accuracy_results.json"));
    let text = results.to_string();
    for subset in [
        "simple_python",
        "simple_java",
        "simple_javascript",
        "multiple",
        "parallel",
        "parallel_multiple",
        "live_simple",
        "live_multiple",
        "live_parallel",
        "live_parallel_multiple",
        "irrelevance",
        "live_irrelevance",
    ] {
        assert!(
            text.contains(&format!("\"{subset}\"")),
            "{subset} not reported"
        );
    }
    // The reference's wrapper, with the gate's entry alone (no
    // performance phase ran).
    let entries = results["accuracy_scores"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(entry["dataset_name"], "bfcl_v4::function_calling");
    assert_eq!(results["average_accuracy"], entry["score"]);
    assert_eq!(entry["breakdown"]["total_samples"], 995);
    assert!(entry["duration_s"].as_f64().unwrap() > 0.0);
    // config.yaml is YAML in the reference's schema, single-stream as the
    // reference writes it for --accuracy-only.
    let reference = agentload_results::yaml::from_yaml(
        &std::fs::read_to_string(out.join("config.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        reference["settings"]["load_pattern"]["target_concurrency"],
        1
    );
    assert_eq!(reference["settings"]["client"]["max_connections"], 1);
    assert_eq!(reference["model_params"]["temperature"], 0.0);
    assert_eq!(
        reference["settings"]["runtime"]["dataloader_random_seed"],
        42
    );

    // Re-scoring the recorded answers reproduces the report byte for byte.
    let rescore = agentload(
        &["rescore", out.to_str().unwrap(), "--out", "again"],
        dir.path(),
    )
    .await;
    assert!(
        rescore.status.success(),
        "{}",
        crate::common::text(&rescore)
    );
    assert_eq!(
        std::fs::read(dir.path().join("again/accuracy/accuracy_results.json")).unwrap(),
        std::fs::read(out.join("accuracy/accuracy_results.json")).unwrap()
    );
    assert_eq!(
        std::fs::read(dir.path().join("again/accuracy/samples.jsonl")).unwrap(),
        std::fs::read(out.join("accuracy/samples.jsonl")).unwrap()
    );
    sim.shutdown().await;
}
