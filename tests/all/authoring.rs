//! Plugin authoring end to end: `agentload plugin new` scaffolds a workload
//! (or, with `--kind scorer`, a scorer) crate on agentload-sdk, cargo builds
//! it for wasm32-wasip2, and `agentload plugin check` reports its world, WIT
//! version, sessions and turns run against the simulator (or its verdicts). A component built against a WIT package
//! version this host does not support (0.0.1) is refused with an error
//! naming it, its version and the supported ones (a supported older version
//! loads: tests/wit_versions.rs).
//!
//! The build compiles a crate and its dependencies (a minute or two the
//! first time on 2 cores); later runs reuse `target/authoring`.

use crate::common::*;
use std::path::{Path, PathBuf};

/// The unsupported-contract fixture (tests/plugins/old-wit/old_wit.wat,
/// assembled): built against `agentload:plugin@0.0.1`, which no host supports.
fn old_wit() -> PathBuf {
    crate::common::manifest_dir().join("../../tests/plugins/old-wit/old_wit.wasm")
}

/// `cargo build --profile plugin --target wasm32-wasip2` in `crate_dir`,
/// into a target folder kept between runs; the component's path.
async fn build(crate_dir: &Path, name: &str) -> PathBuf {
    let target = PathBuf::from(env!("CARGO_BIN_EXE_agentload"))
        .parent()
        .unwrap()
        .join("../authoring");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let build = tokio::process::Command::new(cargo)
        .args(["build", "--profile", "plugin", "--target", "wasm32-wasip2"])
        .current_dir(crate_dir)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .output()
        .await
        .expect("cargo runs");
    assert!(build.status.success(), "cargo build: {}", text(&build));
    let wasm = target.join(format!(
        "wasm32-wasip2/plugin/{}.wasm",
        name.replace('-', "_")
    ));
    assert!(wasm.is_file(), "{} built", wasm.display());
    wasm
}

/// `agentload plugin new NAME [--kind KIND]` into `dir`: the crate's folder,
/// checked to hold `files` and the console's text.
async fn scaffold(dir: &Path, name: &str, kind: &str, files: &[&str]) -> (PathBuf, String) {
    let out = agentload(
        &[
            "plugin",
            "new",
            name,
            "--kind",
            kind,
            "--dir",
            dir.to_str().unwrap(),
        ],
        dir,
    )
    .await;
    assert!(out.status.success(), "plugin new: {}", text(&out));
    let crate_dir = dir.join(name);
    for file in files {
        assert!(crate_dir.join(file).is_file(), "{file} scaffolded");
    }
    (crate_dir, text(&out))
}

/// `agentload plugin check WASM ARGS --json`, passed, as JSON.
async fn check_json(dir: &Path, wasm: &Path, args: &[&str]) -> (serde_json::Value, String) {
    let mut all = vec!["plugin", "check", wasm.to_str().unwrap()];
    all.extend_from_slice(args);
    all.push("--json");
    let out = agentload(&all, dir).await;
    assert!(out.status.success(), "plugin check: {}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let json_end = stdout.rfind('}').expect("a JSON report") + 1;
    let report = serde_json::from_str(&stdout[..json_end]).unwrap();
    (report, stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaffold_build_and_check_a_scorer() {
    let scratch = scratch("authoring-scorer");
    let (crate_dir, said) = scaffold(
        scratch.path(),
        "demo-scorer",
        "scorer",
        &["Cargo.toml", "src/lib.rs", "README.md"],
    )
    .await;
    assert!(
        said.contains("created scorer plugin `demo-scorer`"),
        "{said}"
    );
    assert!(!crate_dir.join("prompts.jsonl").exists());
    let wasm = build(&crate_dir, "demo-scorer").await;

    let (report, _) = check_json(
        scratch.path(),
        &wasm,
        &["--expected", r#"{"answer": "hello"}"#],
    )
    .await;
    assert_eq!(report["world"], "scorer-plugin", "{report:#}");
    assert_eq!(report["plugin"]["name"], "demo-scorer");
    assert_eq!(report["plugin"]["kind"], "scorer");
    // The text answer says hello; the tool call and the missing answer do not.
    let verdicts = report["scorer"]["verdicts"].as_array().expect("verdicts");
    let scores: Vec<f64> = verdicts
        .iter()
        .map(|v| v["score"].as_f64().unwrap())
        .collect();
    assert_eq!(scores, [1.0, 0.0, 0.0], "{report:#}");

    // The SDK's settings parsing names a misspelt key.
    let out = agentload(
        &[
            "plugin",
            "check",
            wasm.to_str().unwrap(),
            "--settings",
            r#"{"case_sensitve": true}"#,
        ],
        scratch.path(),
    )
    .await;
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains("unknown field `case_sensitve`"), "{t}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scaffold_build_and_check_a_workload() {
    let scratch = scratch("authoring");
    let (crate_dir, _) = scaffold(
        scratch.path(),
        "demo-workload",
        "workload",
        &[
            "Cargo.toml",
            "src/lib.rs",
            "README.md",
            "run.toml",
            "prompts.jsonl",
        ],
    )
    .await;
    let wasm = build(&crate_dir, "demo-workload").await;

    let prompts = format!("prompts={}", crate_dir.join("prompts.jsonl").display());
    let settings = r#"{"temperature": 0.0, "max_completion_tokens": 32}"#;
    let (report, stdout) = check_json(
        scratch.path(),
        &wasm,
        &["--data", &prompts, "--settings", settings, "--turns", "3"],
    )
    .await;
    assert_eq!(report["world"], "workload-plugin", "{report:#}");
    assert_eq!(
        report["wit_versions"],
        serde_json::json!(["agentload:plugin@0.4.0"])
    );
    assert_eq!(report["plugin"]["name"], "demo-workload");
    assert_eq!(report["plugin"]["kind"], "workload");
    let workload = &report["workload"];
    assert_eq!(workload["sessions"], 3, "{workload:#}");
    assert_eq!(workload["completed_turns"], 3, "{workload:#}");
    assert_eq!(workload["sessions_finished"], 3, "{workload:#}");
    let first = &workload["turns"][0];
    assert_eq!(first["session"], "greeting");
    assert_eq!(first["roles"], serde_json::json!(["user"]));
    assert_eq!(first["sampling"]["max_completion_tokens"], 32);
    assert_eq!(first["status"], "completed");
    assert!(stdout.contains("check passed"), "{stdout}");

    // The SDK's settings parsing names a misspelt key.
    let out = agentload(
        &[
            "plugin",
            "check",
            wasm.to_str().unwrap(),
            "--data",
            &prompts,
            "--settings",
            r#"{"temprature": 0.0}"#,
        ],
        scratch.path(),
    )
    .await;
    assert!(!out.status.success());
    let t = text(&out);
    assert!(
        t.contains("invalid config") && t.contains("unknown field `temprature`"),
        "{t}"
    );

    // A missing grant names the logical file.
    let out = agentload(&["plugin", "check", wasm.to_str().unwrap()], scratch.path()).await;
    assert!(!out.status.success());
    let t = text(&out);
    assert!(t.contains("no data file granted as `prompts`"), "{t}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_refuses_a_component_built_against_an_older_wit() {
    let scratch = scratch("old-wit-check");
    let out = agentload(
        &["plugin", "check", old_wit().to_str().unwrap()],
        scratch.path(),
    )
    .await;
    assert!(!out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("wit        agentload:plugin@0.0.1"), "{t}");
    assert!(
        t.contains(
            "plugin old_wit was built against agentload:plugin@0.0.1, which this agentload \
             does not support (supported: agentload:plugin@0.1.0, agentload:plugin@0.2.0, \
             agentload:plugin@0.3.0, agentload:plugin@0.4.0)"
        ),
        "{t}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_refuses_a_component_built_against_an_older_wit() {
    let scratch = scratch("old-wit-run");
    let config = format!(
        r#"name = "old-wit"
[model]
name = "m"
tokenizer = "none"
[endpoint]
url = "http://127.0.0.1:9"
[performance]
workload = "{}"
"#,
        old_wit().display()
    );
    std::fs::write(scratch.path().join("run.toml"), config).unwrap();
    let out = agentload(&["run", "run.toml", "--out", "out"], scratch.path()).await;
    assert!(!out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(
        t.contains("plugin old_wit was built against agentload:plugin@0.0.1")
            && t.contains(
                "supported: agentload:plugin@0.1.0, agentload:plugin@0.2.0, agentload:plugin@0.3.0, agentload:plugin@0.4.0"
            ),
        "{t}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_reports_a_scorer() {
    let scorer = PathBuf::from(env!("CARGO_BIN_EXE_agentload"))
        .parent()
        .unwrap()
        .join("../plugins/shell_iou.wasm");
    assert!(
        scorer.is_file(),
        "{} missing: run scripts/build-plugins.sh",
        scorer.display()
    );
    let scratch = scratch("check-scorer");
    let out = agentload(
        &["plugin", "check", scorer.to_str().unwrap()],
        scratch.path(),
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let t = text(&out);
    assert!(t.contains("world      scorer-plugin"), "{t}");
    assert!(t.contains("wit        agentload:plugin@0.4.0"), "{t}");
    assert!(t.contains("agentload:plugin/scorer@0.4.0#score"), "{t}");
    assert!(t.contains("plugin     shell-iou"), "{t}");
    // Made-up items do not follow coding-replay's expected-data contract:
    // a typed refusal is reported, not a failure of the check.
    assert!(
        t.contains("warning    the synthetic items were refused"),
        "{t}"
    );
}
