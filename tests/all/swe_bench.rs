//! The SWE-bench phase through the real binary: the performance phase on
//! the simulator, then SWE-bench on the stand-in service (the reference's
//! service is not shipped), its files and its accuracy entry; and Ctrl-C
//! during the remote run cancels it on the service.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use swebench_standin::{Ending, Script, StandIn};

const TOKEN: &str = "swe-test-token-3f9a";

/// Five instance ids in "Hugging Face order" (a generated fixture).
fn instance_list(dir: &Path) -> PathBuf {
    let path = dir.join("swe_instances.jsonl");
    let lines: String = (0..5)
        .map(|i| format!("{{\"instance_id\": \"repo__repo-{i}\", \"repo\": \"o/repo\"}}\n"))
        .collect();
    std::fs::write(&path, lines).unwrap();
    path
}

/// One edge conversation (concurrency 2 configured), then SWE-bench on `service`
/// (3 of the 5 instances, the token from `SWE_TEST_TOKEN`).
fn config(dir: &Path, sim: &str, service: &str) -> PathBuf {
    let text = format!(
        r#"name = "swe"
[model]
name = "test-model"
tokenizer = "none"
[endpoint]
url = "{sim}"
[load]
concurrency = 2
[performance]
workload = "coding-replay"
scorer = "shell-iou"
[performance.data]
trajectories = "agentic_coding_2.5h.jsonl"
[performance.settings]
conversations = ["astropy__astropy-12907"]
temperature = 1.0
max_completion_tokens = 16
[accuracy]
workload = "swe-bench"
[accuracy.data]
instances = "swe_bench_verified_test.jsonl"
[accuracy.settings]
swebench_service_url = "{service}"
swebench_service_auth_token = "${{SWE_TEST_TOKEN}}"
num_instances = 3
poll_interval_s = 0.01
"#
    );
    let path = dir.join("swe.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Every file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all.extend(files_under(&path));
        } else {
            all.push(path);
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode_both_runs_performance_then_swe_bench_and_writes_the_references_files() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0002,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let script = Script {
        token: Some(TOKEN.into()),
        ..Script::default()
    };
    let run_id = script.run_id.clone();
    let service = StandIn::start(script).await;
    let dir = scratch("swe-both");
    let cfg = config(dir.path(), &sim.url(), &service.url());
    let grant = format!("accuracy.instances={}", instance_list(dir.path()).display());
    let out = dir.path().join("out");
    let run = agentload_env(
        &[
            "run",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--mode",
            "both",
            "--grant",
            &grant,
        ],
        dir.path(),
        &[("SWE_TEST_TOKEN", Path::new(TOKEN))],
    )
    .await;
    let output = text(&run);
    assert!(run.status.success(), "{output}");
    assert!(
        output.contains("swe-bench: running (eval): agent 3/3, eval 1/3"),
        "{output}"
    );

    // The service saw the preflight, the run, its polls and the downloads,
    // each with the token; the payload carries the run's endpoint, model,
    // sampling and the first 3 ids.
    let calls = service.calls();
    assert_eq!(&calls[..2], ["GET /health", "POST /v1/runs"], "{calls:?}");
    let requests = service.requests();
    assert!(requests
        .iter()
        .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {TOKEN}"))));
    let payload: Value = serde_json::from_slice(&requests[1].body).unwrap();
    assert_eq!(
        payload,
        json!({
            "model_name": "test-model",
            "endpoint_urls": [sim.url()],
            "endpoint_api_key": null,
            "generation_params": {"temperature": 1.0, "max_new_tokens": 16},
            "subset": "verified",
            "split": "test",
            "num_instances": 3,
            "workers": 2,
            "max_eval_workers": 10,
            "evaluated_instance_ids": ["repo__repo-0", "repo__repo-1", "repo__repo-2"],
            "template": "default",
        })
    );

    // Performance first, then SWE-bench.
    let modified = |p: PathBuf| std::fs::metadata(p).unwrap().modified().unwrap();
    assert!(
        modified(out.join("performance/result_summary.json"))
            <= modified(out.join("swe_bench_results.json"))
    );
    let results = json(&out.join("swe_bench_results.json"));
    assert_eq!(results["resolved_instances"], 2);
    let run_dir = out.join("swe_bench_runs").join(&run_id);
    let status = json(&run_dir.join("swe_bench_service_status.json"));
    assert_eq!(
        (status["run_id"].as_str(), status["status"].as_str()),
        (Some(run_id.as_str()), Some("succeeded"))
    );
    for name in [
        "preds.json",
        "swe_bench_results.json",
        "swe_bench_agent.log",
    ] {
        assert!(run_dir.join(name).is_file(), "{name}");
    }

    // The accuracy entry, before the inline one.
    let acc = json(&out.join("accuracy/accuracy_results.json"));
    let swe = &acc["accuracy_scores"][0];
    assert_eq!(swe["dataset_name"], "swe_bench");
    assert_eq!(
        (swe["unit_samples"].as_u64(), swe["total_samples"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(swe["score"].as_f64(), Some(2.0 / 3.0));
    assert_eq!(swe["complete"], true);
    assert_eq!(acc["accuracy_scores"][1]["dataset_name"], "performance");
    assert_eq!(acc["average_accuracy"].as_f64(), Some(2.0 / 3.0));
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("swe_bench score 0.6667 over 3 instances (2 resolved, 3 submitted)"),
        "{report}"
    );
    assert!(report.contains("run VALID"), "{report}");

    // The token is in no result file (config.toml keeps the placeholder).
    for file in files_under(&out) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(TOKEN),
            "{} holds the token",
            file.display()
        );
    }
    let config_toml = std::fs::read_to_string(out.join("config.toml")).unwrap();
    assert!(config_toml.contains("${SWE_TEST_TOKEN}"), "{config_toml}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_the_remote_run_cancels_it_on_the_service() {
    let script = Script {
        ending: Ending::Never,
        ..Script::default()
    };
    let run_id = script.run_id.clone();
    let service = StandIn::start(script).await;
    let dir = scratch("swe-cancel");
    // No token configured; the endpoint is never called in accuracy mode.
    let cfg = config(dir.path(), "http://127.0.0.1:9", &service.url());
    let edited = std::fs::read_to_string(&cfg)
        .unwrap()
        .replace("swebench_service_auth_token = \"${SWE_TEST_TOKEN}\"\n", "")
        .replace("[endpoint]\n", "[endpoint]\npreflight = false\n");
    std::fs::write(&cfg, edited).unwrap();
    let grant = format!("accuracy.instances={}", instance_list(dir.path()).display());
    let out = dir.path().join("out");
    let mut child = spawn(
        &[
            "run",
            cfg.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--mode",
            "accuracy",
            "--grant",
            &grant,
        ],
        dir.path(),
    );
    // The run is on the service and polled.
    if tokio::time::timeout(
        std::time::Duration::from_secs(60),
        service.wait_for_requests(4),
    )
    .await
    .is_err()
    {
        let _ = child.start_kill();
        let output = child.wait_with_output().await.unwrap();
        panic!(
            "the run was not polled: {:?}\n{}",
            service.calls(),
            text(&output)
        );
    }
    let pid = child.id().unwrap() as i32;
    // SAFETY: sending SIGINT to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let done = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "no exit 60 s after SIGINT; the service saw {:?}",
                service.calls()
            )
        })
        .unwrap();
    let output = text(&done);
    assert_eq!(done.status.code(), Some(130), "{output}");
    let calls = service.calls();
    assert_eq!(
        calls.last().unwrap(),
        &format!("POST /v1/runs/{run_id}/cancel"),
        "{calls:?}"
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.starts_with("INCOMPLETE: interrupted (SIGINT)"),
        "{report}"
    );
    assert!(
        report.contains(&format!("swe_bench: SWE-bench service run {run_id} abandoned: interrupted; cancel sent (the service reports the run cancelled)")),
        "{report}"
    );
    assert!(!out.join("accuracy/accuracy_results.json").exists());
}
