//! One writer per run directory, and `--force` that removes only what
//! agentload wrote: two processes writing one directory, `--force` over a
//! directory in use, over a user's folder, and over a run with the user's
//! own files in it.

use crate::common::*;
use agentload_sim::SimConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_writer_is_refused_before_it_changes_anything() {
    let sim = start_sim(SimConfig {
        time_scale: 0.01,
        ..replay_sim(trajectories())
    })
    .await;
    let dir = scratch("one-writer");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 2", "");
    let out = dir.path().join("out");
    let mut first = spawn(
        &[
            "run",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        dir.path(),
    );
    wait_for_lines(&out.join("turns.jsonl"), 1, &mut first).await;
    let manifest_before = std::fs::read(out.join("run_manifest.json")).unwrap();
    let out_s = out.to_str().unwrap();
    let sub = dir.path().join("sub");
    let sub_s = sub.to_str().unwrap();
    for args in [
        vec!["run", config.to_str().unwrap(), "--out", out_s, "--force"],
        vec!["resume", out_s],
        vec!["rescore", out_s],
        vec![
            "submission",
            "--run",
            out_s,
            "--division",
            "open",
            "--submitter",
            "O",
            "--system",
            "S",
            "--benchmark",
            "b",
            "--output",
            sub_s,
        ],
        vec!["export", out_s, "--csv"],
        vec!["report", out_s],
    ] {
        let second = agentload(&args, dir.path()).await;
        let msg = text(&second);
        assert_eq!(second.status.code(), Some(1), "{args:?}: {msg}");
        assert!(
            msg.contains("is being written by another agentload process")
                && msg.contains(&format!("PID {}, agentload run", first.id().unwrap())),
            "{args:?}: {msg}"
        );
    }
    assert!(
        first.try_wait().unwrap().is_none(),
        "the first run is still going"
    );
    assert_eq!(
        std::fs::read(out.join("run_manifest.json")).unwrap(),
        manifest_before,
        "nothing of the first run was replaced"
    );
    // kill -9: the kernel releases the lock, so a resume may take over at once.
    first.start_kill().unwrap();
    first.wait().await.unwrap();
    let resumed = agentload(&["resume", out_s], dir.path()).await;
    assert!(resumed.status.success(), "{}", text(&resumed));
    let records = read_jsonl(&out.join("turns.jsonl"));
    assert!(!records.is_empty());
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_refuses_a_users_folder_and_keeps_a_users_files_in_a_run() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("force");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 1", "");
    // A project folder that merely holds a config.toml.
    let project = dir.path().join("project");
    for (rel, text) in [
        ("config.toml", "[package]\nname = \"mine\"\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("performance/mydata.csv", "a,b\n"),
    ] {
        std::fs::create_dir_all(project.join(rel).parent().unwrap()).unwrap();
        std::fs::write(project.join(rel), text).unwrap();
    }
    let refused = run_config(&config, &project, &["--force"], dir.path()).await;
    let msg = text(&refused);
    assert!(!refused.status.success(), "{msg}");
    assert!(msg.contains("holds no agentload run"), "{msg}");
    for rel in ["config.toml", "src/main.rs", "performance/mydata.csv"] {
        assert!(project.join(rel).is_file(), "{rel} deleted: {msg}");
    }
    // A real run with the user's own files beside its results.
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    for rel in ["NOTES.md", "mine/file", "performance/extra.txt"] {
        std::fs::create_dir_all(out.join(rel).parent().unwrap()).unwrap();
        std::fs::write(out.join(rel), "mine").unwrap();
    }
    let turns_before = std::fs::metadata(out.join("turns.jsonl"))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    run_ok(&config, &out, &["--force"], dir.path()).await;
    for rel in ["NOTES.md", "mine/file", "performance/extra.txt"] {
        assert_eq!(
            std::fs::read_to_string(out.join(rel)).unwrap(),
            "mine",
            "{rel}"
        );
    }
    assert!(
        std::fs::metadata(out.join("turns.jsonl"))
            .unwrap()
            .modified()
            .unwrap()
            > turns_before,
        "the run's own files were replaced"
    );
    assert!(json(&out.join("performance/result_summary.json")).is_object());
    sim.shutdown().await;
}
