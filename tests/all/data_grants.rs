//! Data grants stay inside the data directory and the cache: a `..`, an
//! absolute path or a symlink out is refused before the file is read, with
//! a message naming it; a file elsewhere is granted only when the user
//! names it on the command line (`--grant PHASE.NAME=PATH`).

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use std::path::Path;

/// Runs the edge replay (one trajectory) granting `trajectories = file`
/// from `data`; returns the output.
async fn run_with_grant(
    dir: &Path,
    data: &Path,
    file: &str,
    extra: &[&str],
) -> std::process::Output {
    let config = edge_config(
        dir,
        "http://127.0.0.1:9",
        "num_trajectories_to_issue = 1",
        "",
    );
    with_trajectories(&config, data, file);
    let mut args = vec!["run", config.to_str().unwrap(), "--out", "out"];
    args.extend_from_slice(extra);
    agentload(&args, dir).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_leaving_the_data_directory_are_refused_before_reading() {
    let dir = scratch("grants");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    // A FIFO outside the data directory: reading it would block forever, so
    // a prompt refusal shows nothing was read.
    let fifo = dir.path().join("fifo.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let depth = data.components().count();
    let passwd = format!("{}etc/passwd", "../".repeat(depth));
    for file in [
        "../fifo.jsonl",
        passwd.as_str(),
        fifo.to_str().unwrap(),
        "/etc/passwd",
    ] {
        let run = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            run_with_grant(dir.path(), &data, file, &[]),
        )
        .await
        .expect("refused without reading the FIFO");
        let msg = text(&run);
        assert!(!run.status.success(), "{file}: {msg}");
        assert!(
            msg.contains(&format!("data grant `{file}` refused before reading"))
                && msg.contains("--grant PHASE.NAME=PATH"),
            "{file}: {msg}"
        );
    }
    // A symlink inside the data directory pointing out of it.
    std::os::unix::fs::symlink(&fifo, data.join("link.jsonl")).unwrap();
    let run = run_with_grant(dir.path(), &data, "link.jsonl", &[]).await;
    let msg = text(&run);
    assert!(!run.status.success(), "{msg}");
    assert!(
        msg.contains("data grant `link.jsonl` refused before reading")
            && msg.contains("resolves to")
            && msg.contains("fifo.jsonl"),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_elsewhere_is_granted_when_named_on_the_command_line() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let dir = scratch("grants-explicit");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let copy = elsewhere.join("agentic_coding_2.5h.jsonl");
    std::fs::copy(trajectories(), &copy).unwrap();
    let grant = format!("performance.trajectories={}", copy.display());
    let data = dir.path().join("empty-data");
    std::fs::create_dir_all(&data).unwrap();
    let run = run_with_grant(
        dir.path(),
        &data,
        "agentic_coding_2.5h.jsonl",
        &["--endpoint", &sim.url(), "--grant", &grant],
    )
    .await;
    assert!(run.status.success(), "{}", text(&run));
    let manifest = json(&dir.path().join("out/run_manifest.json"));
    assert_eq!(
        manifest["datasets"][0]["path"].as_str(),
        copy.to_str(),
        "{manifest}"
    );
    // A grant the phase does not have is a typo, not a new file.
    let run = run_with_grant(
        dir.path(),
        &data,
        "agentic_coding_2.5h.jsonl",
        &[
            "--force",
            "--grant",
            &format!("performance.trajectory={}", copy.display()),
        ],
    )
    .await;
    let msg = text(&run);
    assert!(!run.status.success());
    assert!(msg.contains("has no grant `trajectory`"), "{msg}");
    sim.shutdown().await;
}

/// A FIFO inside the data directory (where a config grant may point), or
/// named with `--grant`, and `/dev/zero` named with `--grant`, are refused
/// by their type before a byte is read: a read would block forever, or fill
/// the size cap with zeroes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn special_files_are_refused_by_type_before_they_are_read() {
    let dir = scratch("grants-special");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let fifo = data.join("fifo.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let within = |run: &std::process::Output| text(run);
    let started = std::time::Instant::now();
    let run = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        run_with_grant(dir.path(), &data, "fifo.jsonl", &[]),
    )
    .await
    .expect("a FIFO in the data directory is refused without being opened for a blocking read");
    let msg = within(&run);
    assert!(!run.status.success(), "{msg}");
    assert!(
        msg.contains("is a FIFO, not a plain file: refused before reading"),
        "{msg}"
    );
    for (path, kind) in [
        (fifo.to_str().unwrap(), "FIFO"),
        ("/dev/zero", "character device"),
    ] {
        let grant = format!("performance.trajectories={path}");
        let run = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            run_with_grant(
                dir.path(),
                &data,
                "agentic_coding_2.5h.jsonl",
                &["--force", "--grant", &grant],
            ),
        )
        .await
        .expect("refused without reading");
        let msg = within(&run);
        assert!(!run.status.success(), "{msg}");
        assert!(
            msg.contains(&format!("is a {kind}, not a plain file")),
            "{path}: {msg}"
        );
    }
    // /dev/zero read to the 256 MiB cap took seconds; refused by type, it takes none of that.
    eprintln!("three refusals in {:?}", started.elapsed());
}
