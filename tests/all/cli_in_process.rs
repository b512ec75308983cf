//! Commands driven in process through the CLI library
//! (`agentload::cli::{Opts, execute}`), where a subprocess adds nothing:
//! the same parsing and the same code `main` runs.

use crate::common::*;
use agentload::cli::{execute, Opts};
use clap::Parser;

fn opts(args: &[&str]) -> Opts {
    Opts::try_parse_from(std::iter::once("agentload").chain(args.iter().copied()))
        .expect("the arguments parse")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_runs_in_process_and_its_errors_come_back_as_values() {
    let dir = scratch("in-process");
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("run_manifest.json"), "{}").unwrap();
    std::fs::write(
        run.join("turns.jsonl"),
        r#"{"session_id":"s","turn":1,"status":"completed","issued_ns":1,"first_token_ns":2,"complete_ns":3,"expected_json":"{}"}"#.to_owned() + "\n",
    )
    .unwrap();
    let code = execute(opts(&["export", run.to_str().unwrap(), "--csv"]))
        .await
        .unwrap();
    assert_eq!(code, agentload_results::exit::SUCCESS);
    let turns = std::fs::read_to_string(run.join("export/turns.csv")).unwrap();
    assert!(
        turns
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("performance,s,1,"),
        "{turns}"
    );
    // A usage error is clap's (exit 2 from `main`), a failed command an error value.
    assert!(Opts::try_parse_from(["agentload", "export"]).is_err());
    let missing = dir.path().join("nowhere");
    let err = execute(opts(&[
        "diff",
        missing.to_str().unwrap(),
        run.to_str().unwrap(),
    ]))
    .await
    .unwrap_err();
    assert!(format!("{err:#}").contains("nowhere"), "{err:#}");
}

/// The CSV export neutralises a formula the server or the dataset put in a
/// cell, and a config that would write a report outside the results
/// directory is refused naming the key, before anything runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exported_cells_are_neutralised_and_report_files_stay_in_the_results() {
    let dir = scratch("in-process-hostile");
    let run = dir.path().join("run");
    std::fs::create_dir_all(&run).unwrap();
    std::fs::write(run.join("run_manifest.json"), "{}").unwrap();
    std::fs::write(
        run.join("turns.jsonl"),
        r#"{"session_id":"=HYPERLINK(\"http://x\")","turn":1,"status":"failed","error":"@SUM(1)","expected_json":"{}"}"#.to_owned() + "\n",
    )
    .unwrap();
    execute(opts(&["export", run.to_str().unwrap(), "--csv"]))
        .await
        .unwrap();
    let turns = std::fs::read_to_string(run.join("export/turns.csv")).unwrap();
    let row = turns.lines().nth(1).unwrap();
    assert!(
        row.starts_with(r#"performance,"'=HYPERLINK(""http://x"")",1,"#)
            && row.ends_with(",'@SUM(1)"),
        "{row}"
    );
    let config = edge_config(dir.path(), "http://127.0.0.1:9", "", "");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[performance.data]",
        "report_file = \"../../escaped.json\"\n[performance.data]",
    );
    std::fs::write(&config, text).unwrap();
    let out = dir.path().join("out");
    let err = execute(opts(&[
        "run",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]))
    .await
    .unwrap_err();
    let msg = format!("{err:#}");
    assert!(
        msg.contains("performance.report_file") && msg.contains("`..`"),
        "{msg}"
    );
    assert!(!out.exists(), "nothing ran");
}

/// `plugin check` reads its component as a run does: a FIFO is refused at
/// once by its type (it used to block forever), and a file over the run's
/// component cap is refused by its size before it is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_check_refuses_a_fifo_and_an_oversized_component_before_reading() {
    let dir = scratch("check-special");
    let fifo = dir.path().join("fifo.wasm");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let err = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        execute(opts(&["plugin", "check", fifo.to_str().unwrap()])),
    )
    .await
    .expect("refused without waiting for a writer")
    .unwrap_err();
    assert!(
        format!("{err:#}").contains("is a FIFO, not a plain file"),
        "{err:#}"
    );
    // A sparse 100 MiB file: reading it whole would take 100 MiB.
    let big = dir.path().join("big.wasm");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(100 << 20)
        .unwrap();
    let err = execute(opts(&["plugin", "check", big.to_str().unwrap()]))
        .await
        .unwrap_err();
    assert!(
        format!("{err:#}").contains("over plugins.limits.component_mib = 64 MiB"),
        "{err:#}"
    );
}
