//! agentload side by side with Artificial Analysis's own harness,
//! agentperf-local 0.3.4, on AA's default replay (`scripts/compare-aa.sh`):
//! every request body byte for byte, every token count, every field of AA's
//! files (timing is reported, not asserted). Runs where the harness is
//! installed (`AGENTLOAD_AA_VENV`; scripts/test.sh installs it where a Python
//! 3.12 is found) and fails when a field differs; about 3 minutes on two cores.

use crate::common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agentload_agrees_with_agentperf_local_on_the_default_replay() {
    let Some(venv) = std::env::var_os("AGENTLOAD_AA_VENV") else {
        eprintln!("note: AGENTLOAD_AA_VENV not set (scripts/test.sh installs agentperf-local 0.3.4): skipped");
        return;
    };
    let root = manifest_dir().join("../..");
    let dir = scratch("aa-compare");
    let out = dir.path().join("compare");
    let run = tokio::process::Command::new(root.join("scripts/compare-aa.sh"))
        // The exact comparison; timing is reported, not asserted (the test
        // binary's other tests load the machine: its jitter, not the clients').
        .args([out.as_os_str(), "--".as_ref(), "--no-check-timing".as_ref()])
        .current_dir(&root)
        .env("AGENTLOAD_BIN", env!("CARGO_BIN_EXE_agentload"))
        .env("AA_VENV", &venv)
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .output()
        .await
        .expect("scripts/compare-aa.sh runs");
    let said = text(&run);
    eprintln!("{said}");
    assert!(
        run.status.success(),
        "the clients disagree or a run failed:\n{said}"
    );
    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["ok"], true);
    assert_eq!(summary["bodies"]["identical"], 170);
    assert_eq!(summary["turns"]["turns"], serde_json::json!([168, 168]));
}
