//! Local files someone crafted: a run directory whose result files or folders
//! are symbolic links out of it, turn logs and summaries that are FIFOs, and
//! a data set command pointed at its own input. Each writer refuses to write
//! through a link (and nothing outside changes), each reader refuses a FIFO
//! at once instead of waiting on it, and nothing is overwritten unasked.

use crate::common::*;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

/// Runs the real binary, killed if it is still going after `secs` (a command
/// waiting on a FIFO would otherwise hang the test): `None` when it was.
async fn bounded(args: &[&str], cwd: &Path, secs: u64) -> Option<Output> {
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentload"))
        .args(args)
        .current_dir(cwd)
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("agentload starts");
    tokio::time::timeout(Duration::from_secs(secs), child.wait_with_output())
        .await
        .ok()
        .map(|o| o.expect("agentload ran"))
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success());
}

/// A finished one-trajectory run in `dir/out`, its config, and the simulator it ran against.
async fn one_run(
    dir: &Path,
) -> (
    std::path::PathBuf,
    std::path::PathBuf,
    agentload_sim::SimHandle,
) {
    let sim = start_sim(replay_sim(trajectories())).await;
    let config = edge_config(dir, &sim.url(), "num_trajectories_to_issue = 1", "");
    let out = dir.join("out");
    run_ok(&config, &out, &[], dir).await;
    (config, out, sim)
}

fn refused_for_the_link(out: &Output, link: &Path) -> String {
    let msg = text(out);
    assert!(!out.status.success(), "{msg}");
    assert!(
        msg.contains(&format!("{} is a symbolic link", link.display())),
        "the refusal names the link {}: {msg}",
        link.display()
    );
    msg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_never_follow_a_link_out_of_the_run_directory() {
    let dir = scratch("links");
    let (config, out, sim) = one_run(dir.path()).await;
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let victim = outside.join("outside.html");
    std::fs::write(&victim, "mine").unwrap();
    let untouched = |what: &str| {
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "mine",
            "{what} wrote through a link"
        );
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            1,
            "{what} wrote a file outside the run directory"
        );
    };

    // `report` through a linked report.html.
    std::fs::remove_file(out.join("report.html")).unwrap();
    symlink(&victim, out.join("report.html")).unwrap();
    let report = agentload(&["report", &s(&out)], dir.path()).await;
    refused_for_the_link(&report, &out.join("report.html"));
    untouched("report");
    std::fs::remove_file(out.join("report.html")).unwrap();

    // `export --csv` into a linked export/.
    symlink(&outside, out.join("export")).unwrap();
    let export = agentload(&["export", &s(&out), "--csv"], dir.path()).await;
    refused_for_the_link(&export, &out.join("export"));
    untouched("export --csv");
    std::fs::remove_file(out.join("export")).unwrap();

    // `rescore` into a linked rescore/.
    symlink(&outside, out.join("rescore")).unwrap();
    let rescore = agentload(&["rescore", &s(&out)], dir.path()).await;
    refused_for_the_link(&rescore, &out.join("rescore"));
    untouched("rescore");
    std::fs::remove_file(out.join("rescore")).unwrap();

    // The writer lock itself, linked to someone's file: never truncated.
    std::fs::remove_file(out.join(".agentload.lock")).unwrap();
    symlink(&victim, out.join(".agentload.lock")).unwrap();
    let locked = agentload(&["report", &s(&out)], dir.path()).await;
    refused_for_the_link(&locked, &out.join(".agentload.lock"));
    untouched("the writer lock");
    std::fs::remove_file(out.join(".agentload.lock")).unwrap();

    // `run --force` over a run whose performance/ is a link: refused before
    // anything is removed or written.
    let kept = std::fs::read(out.join("turns.jsonl")).unwrap();
    std::fs::remove_dir_all(out.join("performance")).unwrap();
    symlink(&outside, out.join("performance")).unwrap();
    let forced = agentload(
        &["run", &s(&config), "--out", &s(&out), "--force"],
        dir.path(),
    )
    .await;
    let msg = refused_for_the_link(&forced, &out.join("performance"));
    assert!(msg.contains("--force"), "{msg}");
    untouched("run --force");
    assert_eq!(
        std::fs::read(out.join("turns.jsonl")).unwrap(),
        kept,
        "the refused --force removed the run's files"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reader_refuses_a_fifo_at_once() {
    let dir = scratch("fifos");
    // The simulator stays up: a resume checks the endpoint before it reads the log.
    let (_, out, sim) = one_run(dir.path()).await;
    // A run a kill cut short, so that `resume` reads its log.
    let state = out.join("run_state.json");
    let complete = std::fs::read_to_string(&state).unwrap();
    let cut = complete.replace("\"complete\": true", "\"complete\": false");
    assert_ne!(cut, complete);
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let o = s(&out);
    let sub = s(&dir.path().join("submission"));
    let submission = [
        "submission",
        "--run",
        &o,
        "--division",
        "open",
        "--submitter",
        "O",
        "--system",
        "S",
        "--benchmark",
        "b",
        "--output",
        &sub,
        "--force",
    ];
    // (the file made a FIFO, [(command, whether it must refuse naming it)])
    type Cases<'a> = [(&'a str, Vec<(Vec<&'a str>, bool)>); 2];
    let cases: Cases = [
        (
            "turns.jsonl",
            vec![
                (vec!["report", &o], true),
                (vec!["export", &o, "--csv"], true),
                (vec!["resume", &o], true),
                (vec!["rescore", &o], false),
                (vec!["diff", &o, &o], false),
                (submission.to_vec(), false),
            ],
        ),
        (
            "performance/result_summary.json",
            vec![
                (vec!["report", &o], true),
                (vec!["diff", &o, &o], true),
                (vec!["pareto", &o], false),
                (submission.to_vec(), false),
            ],
        ),
    ];
    for (fifo, commands) in cases {
        let path = out.join(fifo);
        let saved = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        mkfifo(&path);
        for (args, named) in commands {
            let resume = args[0] == "resume";
            if resume {
                std::fs::write(&state, &cut).unwrap();
            }
            let Some(result) = bounded(&args, dir.path(), 60).await else {
                panic!("agentload {args:?} hung on the FIFO {fifo}");
            };
            let msg = text(&result);
            if named {
                assert!(!result.status.success(), "{args:?} read a FIFO: {msg}");
            }
            if !result.status.success() && (named || msg.contains(fifo)) {
                assert!(
                    msg.contains("FIFO, not a plain file"),
                    "{args:?}: the refusal says what {fifo} is: {msg}"
                );
                assert_eq!(
                    msg.matches("FIFO, not a plain file").count(),
                    1,
                    "{args:?}: the refusal says it once: {msg}"
                );
            }
            if resume {
                std::fs::write(&state, &complete).unwrap();
            }
        }
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, saved).unwrap();
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dataset_datacenter_refuses_its_own_input_and_an_existing_out_without_force() {
    let dir = scratch("dataset-out");
    let edge = dir.path().join("edge.jsonl");
    std::fs::copy(trajectories(), &edge).unwrap();
    let before = std::fs::read(&edge).unwrap();
    let e = edge.to_str().unwrap();
    let linked = dir.path().join("linked.jsonl");
    symlink(&edge, &linked).unwrap();
    let hard = dir.path().join("hard.jsonl");
    std::fs::hard_link(&edge, &hard).unwrap();
    for same in [e, linked.to_str().unwrap(), hard.to_str().unwrap()] {
        for force in [false, true] {
            let mut args = vec!["dataset", "datacenter", "--edge", e, "--out", same];
            if force {
                args.push("--force");
            }
            let run = agentload(&args, dir.path()).await;
            let msg = text(&run);
            assert!(!run.status.success(), "{args:?}: {msg}");
            assert!(msg.contains("is the input (--edge)"), "{args:?}: {msg}");
            assert_eq!(std::fs::read(&edge).unwrap(), before, "{args:?}");
        }
    }
    // An existing --out is replaced only with --force.
    let out = dir.path().join("dc.jsonl");
    std::fs::write(&out, "mine").unwrap();
    let o = out.to_str().unwrap();
    let run = agentload(
        &["dataset", "datacenter", "--edge", e, "--out", o],
        dir.path(),
    )
    .await;
    let msg = text(&run);
    assert!(!run.status.success(), "{msg}");
    assert!(
        msg.contains(&format!("{o} exists: --force replaces it")),
        "{msg}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine");
    let run = agentload(
        &["dataset", "datacenter", "--edge", e, "--out", o, "--force"],
        dir.path(),
    )
    .await;
    assert!(run.status.success(), "{}", text(&run));
    let rows = read_jsonl(&out);
    assert!(rows.len() > 100, "{}", rows.len());
    assert_eq!(std::fs::read(&edge).unwrap(), before);
}
