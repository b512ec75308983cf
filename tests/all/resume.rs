//! Runs that are killed, interrupted or starved of disk: nothing measured is
//! lost, nothing broken is counted, and `agentload resume` finishes the run
//! as an uninterrupted one would have.

use crate::common::*;
use agentload_sim::SimConfig;
use std::collections::HashMap;
use std::path::Path;

use std::time::Duration;

/// The complete lines of the file, as bytes.
fn complete_prefix(path: &Path) -> Vec<u8> {
    let bytes = std::fs::read(path).unwrap();
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    bytes[..end].to_vec()
}

/// Every expected turn completed exactly once, the replay scored 1.0, the
/// run VALID: what an uninterrupted run gives.
fn assert_whole_run(out: &Path) {
    let records = read_jsonl(&out.join("turns.jsonl"));
    let mut completed: HashMap<(String, u64), usize> = HashMap::new();
    for r in &records {
        if r["status"] == "completed" {
            let key = (
                r["session_id"].as_str().unwrap().to_string(),
                r["turn"].as_u64().unwrap(),
            );
            *completed.entry(key).or_default() += 1;
        }
        assert!(
            matches!(r["status"].as_str(), Some("completed" | "interrupted")),
            "no turn failed: {r}"
        );
    }
    assert_eq!(completed.len(), 1007, "distinct completed turns");
    assert!(completed.values().all(|&n| n == 1), "each completed once");
    let scores = json(&out.join("scores.json"));
    assert_eq!(scores["score"], 1.0);
    assert_eq!(scores["turns"]["missing"], 0);
    assert_eq!(scores["turns"]["expected"], 1006);
    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(summary["n_samples_completed"], 1007);
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("run VALID"), "{report}");
    assert!(!report.contains("INCOMPLETE"), "{report}");
    let state = json(&out.join("run_state.json"));
    assert_eq!(state["complete"], true);
    // Every record's due time and send lag is there.
    for r in records.iter().filter(|r| r["status"] == "completed") {
        assert!(
            r["scheduled_ns"].as_u64().unwrap() <= r["issued_ns"].as_u64().unwrap(),
            "{r}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_twice_and_resumed_the_run_is_whole() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("kill");
    // With telemetry: each process's readings are kept, apart by segment.
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 20",
        "[telemetry]\ninterval_s = 0.05\n[[telemetry.scrape]]\nurl = \"/metrics\"\n",
    );
    let out = dir.path().join("out");
    let log = out.join("turns.jsonl");
    let out_s = out.to_str().unwrap();

    let mut run = spawn(
        &["run", config.to_str().unwrap(), "--out", out_s],
        dir.path(),
    );
    wait_for_lines(&log, 150, &mut run).await;
    run.start_kill().unwrap(); // SIGKILL
    run.wait().await.unwrap();
    let first = complete_prefix(&log);
    assert!(lines(&log) < 1007, "killed before the end");

    let mut resumed = spawn(&["resume", out_s], dir.path());
    wait_for_lines(
        &log,
        first.iter().filter(|&&b| b == b'\n').count() + 300,
        &mut resumed,
    )
    .await;
    resumed.start_kill().unwrap();
    resumed.wait().await.unwrap();
    let second = complete_prefix(&log);
    assert_eq!(
        &second[..first.len()],
        &first[..],
        "lines before the first kill unchanged"
    );

    let done = agentload(&["resume", out_s, "--require-valid"], dir.path()).await;
    assert!(done.status.success(), "{}", text(&done));
    let last = std::fs::read(&log).unwrap();
    assert_eq!(
        &last[..second.len()],
        &second[..],
        "lines before the second kill unchanged"
    );
    assert_whole_run(&out);
    let state = json(&out.join("run_state.json"));
    assert_eq!(state["segments"].as_array().unwrap().len(), 3);
    // Every process's telemetry readings are whole lines, in process order.
    let readings = read_jsonl(&out.join("telemetry.jsonl"));
    let segments: Vec<u64> = readings
        .iter()
        .map(|r| r["segment"].as_u64().unwrap_or(0))
        .collect();
    assert!(segments.windows(2).all(|w| w[0] <= w[1]), "{segments:?}");
    for segment in 0..3 {
        assert!(
            segments.contains(&segment),
            "segment {segment}: {segments:?}"
        );
    }
    let summary = json(&out.join("performance/result_summary.json"));
    let t = &summary["agentload"]["telemetry"];
    assert_eq!(t["sources"][0]["failed"], 0, "{t}");
    assert_eq!(
        t["sources"][0]["samples"].as_u64().unwrap() as usize,
        segments.iter().filter(|s| **s == 2).count(),
        "the summary is the last process's"
    );

    // A complete run has nothing to resume; a non-empty --out is refused.
    let again = agentload(&["resume", out_s], dir.path()).await;
    assert!(!again.status.success());
    assert!(
        text(&again).contains("nothing to resume"),
        "{}",
        text(&again)
    );
    let over = agentload(
        &["run", config.to_str().unwrap(), "--out", out_s],
        dir.path(),
    )
    .await;
    assert_eq!(over.status.code(), Some(1));
    assert!(text(&over).contains("--force"), "{}", text(&over));
    assert_eq!(
        std::fs::read(&log).unwrap(),
        last,
        "a refused run touches nothing"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_writes_an_incomplete_report_and_resume_completes_it() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("sigint");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 20", "");
    let out = dir.path().join("out");
    let log = out.join("turns.jsonl");
    let out_s = out.to_str().unwrap();

    let mut run = spawn(
        &["run", config.to_str().unwrap(), "--out", out_s],
        dir.path(),
    );
    wait_for_lines(&log, 200, &mut run).await;
    let pid = run.id().unwrap() as i32;
    // SAFETY: sending SIGINT to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = tokio::time::timeout(Duration::from_secs(60), run.wait())
        .await
        .expect("exits after SIGINT")
        .unwrap();
    assert_eq!(status.code(), Some(130), "exit code of an interrupted run");
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.starts_with("INCOMPLETE: interrupted (SIGINT)"),
        "{report}"
    );
    assert!(report.contains("run INCOMPLETE"), "{report}");
    let summary = json(&out.join("performance/result_summary.json"));
    let n = summary["n_samples_completed"].as_u64().unwrap();
    assert!((200..1007).contains(&n), "{n}");
    assert_eq!(json(&out.join("run_state.json"))["complete"], false);
    // Rescoring a partial run works and says what it covers.
    let rescore = agentload(&["rescore", out_s], dir.path()).await;
    assert!(rescore.status.success(), "{}", text(&rescore));
    assert!(text(&rescore).contains("partial run"), "{}", text(&rescore));

    let before = complete_prefix(&log);
    let done = agentload(&["resume", out_s, "--require-valid"], dir.path()).await;
    assert!(done.status.success(), "{}", text(&done));
    assert_eq!(&std::fs::read(&log).unwrap()[..before.len()], &before[..]);
    assert_whole_run(&out);
    sim.shutdown().await;
}

/// A turn log that cannot be written stops the run with the file and the
/// OS error; the run is never VALID and exits non-zero.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stops_the_run_naming_the_file() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("full-disk");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 20", "");
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&disk)
        .status()
        .expect("mount runs");
    assert!(
        mounted.success(),
        "this test mounts a 256 KiB tmpfs as a full disk (needs root, as CI has)"
    );
    let out = disk.join("out");
    let run = run_config(&config, &out, &[], dir.path()).await;
    let output = text(&run);
    let records = std::fs::read_to_string(out.join("turns.jsonl"));
    let report = std::fs::read_to_string(out.join("report.txt"));
    std::process::Command::new("umount")
        .arg(&disk)
        .status()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "{output}");
    assert!(output.contains("turns.jsonl"), "{output}");
    assert!(output.contains("No space left on device"), "{output}");
    // The disk may have had no room for the report either; one that was written is INVALID.
    match report {
        Ok(report) => assert!(report.contains("run INVALID"), "{report}"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "report.txt: {e}"),
    }
    let records = records.expect("the turns written before the disk filled are kept");
    let written: Vec<_> = records.lines().collect();
    assert!(
        !written.is_empty() && written.len() < 1007,
        "{}",
        written.len()
    );
    for line in written {
        serde_json::from_str::<serde_json::Value>(line).expect("every line on disk is whole");
    }
    sim.shutdown().await;
}

/// SIGTERM, then SIGINT while a turn streams: the second signal cuts it; it
/// is recorded as interrupted, never counted, and sent again on resume
/// (here against another server, as after a move).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_signal_cuts_the_turn_in_flight_and_resume_sends_it_again() {
    // Real-time speeds: an answer takes seconds.
    let slow = start_sim(SimConfig {
        time_scale: 1.0,
        ..replay_sim(trajectories())
    })
    .await;
    let dir = scratch("sigterm");
    let config = edge_config(dir.path(), &slow.url(), "num_trajectories_to_issue = 1", "");
    let out = dir.path().join("out");
    let log = out.join("turns.jsonl");
    let out_s = out.to_str().unwrap();
    let mut run = spawn(
        &["run", config.to_str().unwrap(), "--out", out_s],
        dir.path(),
    );
    wait_for_lines(&log, 1, &mut run).await;
    let pid = run.id().unwrap() as i32;
    // SAFETY: signalling our own child process.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
        std::thread::sleep(Duration::from_millis(200));
        libc::kill(pid, libc::SIGINT);
    }
    let status = tokio::time::timeout(Duration::from_secs(60), run.wait())
        .await
        .expect("exits after the second signal")
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let records = read_jsonl(&log);
    let cut: Vec<_> = records
        .iter()
        .filter(|r| r["status"] == "interrupted")
        .collect();
    assert_eq!(
        cut.len(),
        1,
        "the turn in flight is recorded as interrupted"
    );
    assert!(
        cut[0]["error"].as_str().unwrap().contains("SIGTERM"),
        "{}",
        cut[0]
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.starts_with("INCOMPLETE: interrupted (SIGTERM)"),
        "{report}"
    );
    // The cut turn was sent: the report says so, though nothing counts it.
    assert!(
        report.contains("and 1 sent but cut by the signal"),
        "{report}"
    );
    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(
        summary["agentload"]["n_samples_interrupted"], 1,
        "{summary}"
    );
    slow.shutdown().await;

    let fast = start_sim(replay_sim(trajectories())).await;
    let done = agentload(&["resume", out_s, "--endpoint", &fast.url()], dir.path()).await;
    assert!(done.status.success(), "{}", text(&done));
    // The run spans two endpoints, and says so.
    let summary = json(&out.join("performance/result_summary.json"));
    let endpoints = summary["agentload"]["endpoints"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(endpoints.len(), 2, "{summary}");
    assert_eq!(endpoints[1], fast.url().trim_end_matches('/'), "{summary}");
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("this run spans 2 endpoints"), "{report}");
    let records = read_jsonl(&log);
    let (turn, session) = (cut[0]["turn"].clone(), cut[0]["session_id"].clone());
    let again: Vec<_> = records
        .iter()
        .filter(|r| r["turn"] == turn && r["session_id"] == session)
        .collect();
    assert_eq!(again.len(), 2, "the cut turn and its resend");
    assert_eq!(again[1]["status"], "completed");
    assert_eq!(again[1]["segment"], 1);
    let scores = json(&out.join("scores.json"));
    assert_eq!(scores["turns"]["missing"], 0);
    assert_eq!(scores["score"], 1.0);
    let summary = json(&out.join("performance/result_summary.json"));
    let completed = records
        .iter()
        .filter(|r| r["status"] == "completed")
        .count();
    assert_eq!(summary["n_samples_completed"], completed as u64);
    assert_eq!(
        summary["n_samples_issued"], completed as u64,
        "the cut turn is not counted"
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("run VALID"), "{report}");
    fast.shutdown().await;
}

/// A resumed session whose replay departs from its records (here: a record
/// whose expected data was changed after the kill) restarts whole in a fresh
/// workload instance and completes; its earlier lines are kept aside, not
/// counted, and the run is VALID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diverging_session_restarts_in_a_fresh_instance_and_completes() {
    let sim = start_sim(SimConfig {
        time_scale: 0.005,
        ..replay_sim(trajectories())
    })
    .await;
    let dir = scratch("diverge");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 2", "");
    let out = killed_run(dir.path(), &config, 4).await;
    let out_s = out.to_str().unwrap();
    // The session of the last whole record was cut short: change its first record.
    let mut tampered = records(&out);
    let cut = tampered.last().unwrap()["session_id"].clone();
    let first = tampered
        .iter_mut()
        .find(|r| r["session_id"] == cut)
        .unwrap();
    first["expected_json"] = serde_json::Value::String("{\"changed\": true}".into());
    write_records(&out, &tampered);

    let resumed = agentload(&["resume", out_s, "--require-valid"], dir.path()).await;
    let output = text(&resumed);
    assert!(resumed.status.success(), "{output}");
    assert!(
        output.contains(&format!("session {}", cut.as_str().unwrap()))
            && output.contains("restarting it whole"),
        "{output}"
    );
    let superseded = std::fs::read_to_string(out.join("turns.superseded.jsonl")).unwrap();
    assert!(!superseded.is_empty());
    let summary = json(&out.join("performance/result_summary.json"));
    let sessions = read_jsonl(&out.join("sessions.jsonl"));
    assert!(
        sessions
            .iter()
            .any(|s| s["id"] == cut && s["ended"] == "finished"),
        "the restarted session finished: {sessions:?}"
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("run VALID"), "{report}\n{summary}");
    sim.shutdown().await;
}

/// Starts a run of `trajectories` sessions, kills it (-9) once its turn log
/// has `lines` whole lines, and returns the output directory.
async fn killed_run(dir: &Path, config: &Path, lines: usize) -> std::path::PathBuf {
    let out = dir.join("out");
    let mut run = spawn(
        &[
            "run",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        dir,
    );
    wait_for_lines(&out.join("turns.jsonl"), lines, &mut run).await;
    run.start_kill().unwrap();
    run.wait().await.unwrap();
    out
}

/// `agentload resume OUT`, which must be refused with `why` in its message
/// before any request: the simulator sees none.
async fn resume_refused(out: &Path, cwd: &Path, sim: &agentload_sim::SimHandle, why: &[&str]) {
    let before = sim.chat_requests_received();
    let resumed = agentload(&["resume", out.to_str().unwrap()], cwd).await;
    let msg = text(&resumed);
    assert_eq!(resumed.status.code(), Some(1), "{msg}");
    for w in why {
        assert!(msg.contains(w), "`{w}` not in: {msg}");
    }
    assert_eq!(sim.chat_requests_received(), before, "nothing sent: {msg}");
}

/// The turn log's whole lines, parsed.
fn records(out: &Path) -> Vec<serde_json::Value> {
    let prefix = String::from_utf8(complete_prefix(&out.join("turns.jsonl"))).unwrap();
    prefix
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn write_records(out: &Path, records: &[serde_json::Value]) {
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(out.join("turns.jsonl"), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_data_file_changed_after_the_kill_is_refused_on_resume() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("resume-data");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    // Under a name no lock knows, so only the run's own manifest pins it.
    std::fs::copy(trajectories(), data.join("mine.jsonl")).unwrap();
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 5", "");
    with_trajectories(&config, &data, "mine.jsonl");
    let out = killed_run(dir.path(), &config, 20).await;
    // Drop the last trajectory: the first five, which the run plans, are unchanged.
    let rows = std::fs::read_to_string(data.join("mine.jsonl")).unwrap();
    let kept: Vec<&str> = rows.lines().collect();
    std::fs::write(
        data.join("mine.jsonl"),
        kept[..kept.len() - 1].join("\n") + "\n",
    )
    .unwrap();
    resume_refused(
        &out,
        dir.path(),
        &sim,
        &["cannot resume", "data files", "trajectories"],
    )
    .await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_the_run_did_not_write_is_refused_on_resume() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("resume-foreign");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 3", "");
    let out = killed_run(dir.path(), &config, 20).await;
    let good = records(&out);
    let n = good.len();
    // A session the plan never had.
    let mut foreign = good.clone();
    let mut extra = good[0].clone();
    extra["session_id"] = "not-planned".into();
    foreign.push(extra);
    write_records(&out, &foreign);
    resume_refused(
        &out,
        dir.path(),
        &sim,
        &[
            &format!("turns.jsonl:{}", n + 1),
            "session `not-planned` is not one of the phase's planned sessions",
        ],
    )
    .await;
    // An implausible time: a million seconds into a process that lasted seconds.
    let mut late = good.clone();
    let complete = late[2]["complete_ns"].as_u64().unwrap();
    late[2]["complete_ns"] = (complete + 1_000_000_000_000_000).into();
    write_records(&out, &late);
    resume_refused(
        &out,
        dir.path(),
        &sim,
        &["turns.jsonl:3", "complete_ns is", "s into its segment"],
    )
    .await;
    // Times out of order.
    let mut backwards = good.clone();
    backwards[1]["first_token_ns"] = 0.into();
    write_records(&out, &backwards);
    resume_refused(
        &out,
        dir.path(),
        &sim,
        &["turns.jsonl:2", "is before issued_ns"],
    )
    .await;
    // The log as the run left it resumes to a whole run.
    write_records(&out, &good);
    let done = agentload(
        &["resume", out.to_str().unwrap(), "--require-valid"],
        dir.path(),
    )
    .await;
    assert!(done.status.success(), "{}", text(&done));
    sim.shutdown().await;
}

/// A turn log cut in the middle of a record (and of the run: later records
/// gone) is reported, and the sessions whose recorded ends it no longer
/// bears out are driven on from their records: the run ends whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_cut_mid_record_is_reported_and_its_sessions_rebuilt() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("resume-cut");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 20", "");
    let out = killed_run(dir.path(), &config, 400).await;
    let sessions_before = read_jsonl(&out.join("sessions.jsonl")).len();
    assert!(sessions_before > 0, "some sessions ended before the kill");
    let log = out.join("turns.jsonl");
    let bytes = complete_prefix(&log);
    // Keep 150 whole lines and half of the 151st.
    let ends: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b'\n')
        .map(|(i, _)| i + 1)
        .collect();
    let cut = ends[149] + (ends[150] - ends[149]) / 2;
    std::fs::write(&log, &bytes[..cut]).unwrap();
    let done = agentload(
        &["resume", out.to_str().unwrap(), "--require-valid"],
        dir.path(),
    )
    .await;
    let msg = text(&done);
    assert!(done.status.success(), "{msg}");
    assert!(
        msg.contains("ended in a torn record") && msg.contains("bytes after its last whole line"),
        "{msg}"
    );
    assert_whole_run(&out);
    sim.shutdown().await;
}

/// Local counts run when a phase ends, so a kill leaves the turns answered
/// before it uncounted, sessions that ended too: the resume replays those
/// (nothing sent) and counts them, and the run's counts are all local.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turns_answered_before_the_kill_are_counted_locally_on_resume() {
    if !vocabulary() {
        return;
    }
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("resume-count");
    let config = edge_config(dir.path(), &sim.url(), "num_trajectories_to_issue = 6", "");
    let text_cfg = std::fs::read_to_string(&config)
        .unwrap()
        .replace("tokenizer = \"none\"", "tokenizer = \"qwen3.6\"");
    std::fs::write(&config, text_cfg).unwrap();
    let out = killed_run(dir.path(), &config, 200).await;
    assert!(
        !read_jsonl(&out.join("sessions.jsonl")).is_empty(),
        "some sessions ended before the kill"
    );
    let before = sim.chat_requests_received();
    let done = agentload(
        &["resume", out.to_str().unwrap(), "--require-valid"],
        dir.path(),
    )
    .await;
    assert!(done.status.success(), "{}", text(&done));
    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(
        summary["agentload"]["token_count_source"], "local",
        "{}",
        summary["agentload"]
    );
    let completed = read_jsonl(&out.join("turns.jsonl"))
        .iter()
        .filter(|r| r["status"] == "completed")
        .count();
    assert_eq!(
        summary["agentload"]["token_counts"]["turns_local"], completed as u64,
        "every completed turn counted locally"
    );
    // Only the turns the kill left unsent were sent again.
    assert!(sim.chat_requests_received() - before < completed as u64);
    sim.shutdown().await;
}
