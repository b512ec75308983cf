//! Sharded runs through the real binary: `run --shards N` (N local
//! processes, the coordinator and the merge Kubernetes uses) against one
//! process, a shard killed mid-run, shards on their own network stacks with
//! a shifted clock, and the Kubernetes objects checked offline.

use crate::common::*;
use agentload_results::metrics::Series;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// `(session, turn)` of every record in a journal, with its status.
fn keys(path: &Path) -> Vec<((String, u64), String)> {
    read_jsonl(path)
        .iter()
        .map(|r| {
            (
                (
                    r["session_id"].as_str().unwrap().to_owned(),
                    r["turn"].as_u64().unwrap(),
                ),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn span(r: &Value, from: &str, to: &str) -> Option<u64> {
    r[to].as_u64()?.checked_sub(r[from].as_u64()?)
}

/// The summary's series fields that are order statistics or sums.
fn exact_fields(series: &Value) -> Value {
    serde_json::json!({
        "total": series["total"], "min": series["min"], "max": series["max"],
        "median": series["median"], "percentiles": series["percentiles"],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_shards_merge_exactly_into_the_one_shard_run() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("shards");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 20",
        "[load]\nconcurrency = 8",
    );
    let one = dir.path().join("one");
    let four = dir.path().join("four");
    run_ok(
        &config,
        &one,
        &["--shards", "1", "--require-valid"],
        dir.path(),
    )
    .await;
    let out = run_ok(
        &config,
        &four,
        &["--shards", "4", "--require-valid"],
        dir.path(),
    )
    .await;
    assert!(out.contains("shards: 4 of 4 merged"), "{out}");

    // The same (session, turn) records, each completed once.
    let a = keys(&one.join("turns.jsonl"));
    let b = keys(&four.join("turns.jsonl"));
    assert_eq!(a.len(), 1007);
    assert!(
        b.iter().all(|(_, s)| s == "completed"),
        "every turn completed"
    );
    let set =
        |k: &[((String, u64), String)]| k.iter().map(|(k, _)| k.clone()).collect::<BTreeSet<_>>();
    assert_eq!(set(&a), set(&b));
    assert_eq!(set(&b).len(), b.len(), "no turn twice");

    // A session never crosses shards; every shard ran some.
    let merged = read_jsonl(&four.join("turns.jsonl"));
    let mut owner: BTreeMap<&str, u64> = BTreeMap::new();
    for r in &merged {
        let shard = r["shard"]
            .as_u64()
            .expect("merged records name their shard");
        let s = r["session_id"].as_str().unwrap();
        assert_eq!(
            *owner.entry(s).or_insert(shard),
            shard,
            "{s} crossed shards"
        );
    }
    assert_eq!(owner.values().collect::<BTreeSet<_>>().len(), 4);

    // Percentiles: exact order statistics over the union of the shards' raw
    // records (their own journals, on their own clocks), value for value,
    // over the turns the merged run counts.
    let summary = json(&four.join("performance/result_summary.json"));
    let stop = summary["agentload"]["tracking"]["stop_ns"].as_u64();
    let counted: BTreeSet<(String, u64)> = merged
        .iter()
        .filter(|r| stop.is_none_or(|s| r["issued_ns"].as_u64().unwrap() < s))
        .map(|r| {
            (
                r["session_id"].as_str().unwrap().to_owned(),
                r["turn"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut raw = Vec::new();
    for i in 0..4 {
        raw.extend(read_jsonl(&four.join(format!("work/{i}/turns.jsonl"))));
    }
    assert_eq!(raw.len(), 1007);
    let raw: Vec<&Value> = raw
        .iter()
        .filter(|r| {
            counted.contains(&(
                r["session_id"].as_str().unwrap().to_owned(),
                r["turn"].as_u64().unwrap(),
            ))
        })
        .collect();
    for (name, from, to) in [
        ("ttft", "issued_ns", "first_token_ns"),
        ("latency", "issued_ns", "complete_ns"),
    ] {
        let values: Vec<u64> = raw.iter().filter_map(|r| span(r, from, to)).collect();
        let exact = serde_json::to_value(Series::of(&values, true).unwrap()).unwrap();
        assert_eq!(exact_fields(&summary[name]), exact_fields(&exact), "{name}");
    }

    // The shards' histograms, added up, agree with the exact values; each
    // shard ran its share of the slots.
    let d = &summary["agentload"]["distributed"];
    eprintln!(
        "4 shards: start skew {} ns, first requests within {} ns, largest offset bound {} ns",
        d["start_skew_ns"], d["first_issue_skew_ns"], d["max_offset_uncertainty_ns"]
    );
    assert_eq!(d["merged"], serde_json::json!([0, 1, 2, 3]));
    assert_eq!(d["histogram_check"]["agrees"], true, "{d}");
    let shares: Vec<u64> = d["per_shard"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(shares, [2, 2, 2, 2]);
    // One machine: every offset is about zero, within its bound.
    for s in d["per_shard"].as_array().unwrap() {
        let (o, u) = (
            s["offset_ns"].as_i64().unwrap(),
            s["offset_uncertainty_ns"].as_u64().unwrap(),
        );
        assert!(o.unsigned_abs() <= u, "{s}");
    }
    let report = std::fs::read_to_string(four.join("report.txt")).unwrap();
    assert!(report.contains("run VALID"), "{report}");

    // `agentload merge` from the uploaded shard directories, offline, writes
    // the same numbers again.
    let again = dir.path().join("again");
    let mut args = vec![
        "merge".to_owned(),
        "--out".into(),
        again.to_str().unwrap().into(),
    ];
    args.extend((0..4).map(|i| {
        four.join(format!("shards/{i}"))
            .to_str()
            .unwrap()
            .to_owned()
    }));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let merged_again = agentload(&args, dir.path()).await;
    assert!(merged_again.status.success(), "{}", text(&merged_again));
    let second = json(&again.join("performance/result_summary.json"));
    for key in [
        "ttft",
        "latency",
        "tpot",
        "n_samples_completed",
        "duration_ns",
        "qps",
    ] {
        assert_eq!(second[key], summary[key], "{key}");
    }
    assert_eq!(
        second["agentload"]["distributed"],
        summary["agentload"]["distributed"]
    );
    // A shard given twice is refused before anything is written.
    let twice = agentload(
        &[
            "merge",
            "--out",
            dir.path().join("twice").to_str().unwrap(),
            four.join("shards/1").to_str().unwrap(),
            four.join("shards/1").to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    assert!(!twice.status.success());
    assert!(
        text(&twice).contains("shard 1 is given twice"),
        "{}",
        text(&twice)
    );
    sim.shutdown().await;
}

/// The address shard 0 writes to `file` once its coordinator listens.
async fn coordinator_addr(file: &Path) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        match std::fs::read_to_string(file) {
            Ok(a) if !a.is_empty() => return a,
            _ => {
                assert!(
                    std::time::Instant::now() < deadline,
                    "no coordinator address"
                );
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        }
    }
}

/// `agentload run CONFIG --out OUT EXTRA...`, started (from OUT's parent).
fn spawn_sharded(config: &Path, out: &Path, extra: &[&str]) -> tokio::process::Child {
    let mut args = vec![
        "run",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    spawn(&args, out.parent().unwrap())
}

/// A two-shard run `run_id` started by hand, each shard `agentload shard CONFIG --shards 2
/// --index I --run-id RUN_ID --listen 127.0.0.1:0` and `both`: shard 0 (the coordinator,
/// writing `out`, with `zero` too) spawned, shard 1 (writing `dir/one`) run to its end
/// against it. Returns shard 0, shard 1's output and the coordinator's URL.
async fn two_shards(
    dir: &Path,
    config: &Path,
    run_id: &str,
    out: &Path,
    both: &[&str],
    zero: &[&str],
) -> (tokio::process::Child, std::process::Output, String) {
    let (addr_file, one) = (dir.join("addr"), dir.join("one"));
    let head = [
        "shard",
        config.to_str().unwrap(),
        "--shards",
        "2",
        "--run-id",
        run_id,
        "--listen",
        "127.0.0.1:0",
    ];
    let own = [
        "--index",
        "0",
        "--addr-file",
        addr_file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let coordinator = spawn(&[&head[..], both, &own, zero].concat(), dir);
    let url = format!("http://{}", coordinator_addr(&addr_file).await);
    let own = [
        "--index",
        "1",
        "--coordinator",
        &url,
        "--out",
        one.to_str().unwrap(),
    ];
    let worker = agentload(&[&head[..], both, &own].concat(), dir).await;
    (coordinator, worker, url)
}

/// The pid of the `agentload shard` process with this index writing to `out`.
fn shard_pid(out: &Path, index: u32) -> Option<i32> {
    let want = format!("--index\0{index}\0");
    let out = out.to_str().unwrap();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: i32 = e.file_name().to_str()?.parse().ok()?;
        let cmd = std::fs::read(e.path().join("cmdline")).ok()?;
        let cmd = String::from_utf8_lossy(&cmd);
        (cmd.contains("\0shard\0") && cmd.contains(&want) && cmd.contains(out)).then_some(pid)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_shard_fails_the_run_closed_and_names_it() {
    let mut slow = replay_sim(trajectories());
    slow.time_scale = 0.01;
    let sim = start_sim(slow).await;
    let dir = scratch("shard-kill");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 12",
        "[load]\nconcurrency = 3",
    );
    let out = dir.path().join("out");
    let mut run = spawn_sharded(
        &config,
        &out,
        &["--shards", "3", "--silence-timeout-s", "2"],
    );
    // Shard 2 is killed (-9) once it has journalled some turns.
    let log = out.join("work/2/turns.jsonl");
    wait_for_lines(&log, 5, &mut run).await;
    let pid = shard_pid(&out, 2).expect("shard 2 is running");
    // SAFETY: kill(2) on a pid this test's child started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let kept = lines(&log);
    let done = run.wait_with_output().await.unwrap();
    let output = text(&done);
    assert_eq!(done.status.code(), Some(5), "{output}");
    assert!(
        output.contains("shard 2"),
        "the lost shard is named: {output}"
    );
    // The others' records are uploaded and merged; the run is INVALID.
    for i in [0, 1] {
        assert!(lines(&out.join(format!("shards/{i}/turns.jsonl"))) > 0);
    }
    assert!(lines(&log) >= kept, "the killed shard's journal stays");
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("INVALID: shard 2"), "{report}");
    assert!(report.contains("run INVALID"), "{report}");
    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(
        summary["agentload"]["distributed"]["merged"],
        serde_json::json!([0, 1])
    );
    sim.shutdown().await;
}

/// A forger posts `done` for shard 1 mid-run (it was taken: the real shard
/// was then refused, and shard 0 failed reading `shards/1/shard.json`, exit
/// 1 with no merged report), and a heartbeat for it with absurd values: the
/// coordinator refuses both (they do not carry shard 1's registration
/// token), and the run merges both shards, VALID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_done_or_heartbeat_changes_nothing_in_a_sharded_run() {
    let mut slow = replay_sim(trajectories());
    slow.time_scale = 0.01;
    let sim = start_sim(slow).await;
    let dir = scratch("shard-forged");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 4",
        "[load]\nconcurrency = 2",
    );
    let out = dir.path().join("out");
    let mut run = spawn_sharded(&config, &out, &["--shards", "2", "--require-valid"]);
    wait_for_lines(&out.join("work/1/turns.jsonl"), 1, &mut run).await;
    let addr = std::fs::read_to_string(out.join("coordinator.addr")).unwrap();
    let client = reqwest::Client::new();
    let forged = client
        .post(format!("http://{addr}/v1/done"))
        .json(&serde_json::json!({"index": 1, "files": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403, "{}", forged.text().await.unwrap());
    let beat = serde_json::json!({"index": 1, "phase": "performance",
        "offset": {"offset_ns": 0, "uncertainty_ns": u64::MAX, "samples": 1},
        "live": {"completed": u64::MAX, "failed": 0, "output_tokens": 0, "ttft_us": []}});
    let beat = client
        .post(format!("http://{addr}/v1/heartbeat"))
        .json(&beat)
        .send()
        .await
        .unwrap();
    assert!(beat.status().is_client_error());
    let done = run.wait_with_output().await.unwrap();
    let output = text(&done);
    assert!(done.status.success(), "{output}");
    assert!(output.contains("shards: 2 of 2 merged"), "{output}");
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("run VALID"), "{report}");
    sim.shutdown().await;
}

/// Every upload refused (shard 0's budget of 0 MiB): shard 0's own failure
/// and shard 1's both end the run closed, exit 5, naming the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_whose_uploads_are_refused_fail_the_run_closed() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("shard-budget");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 2",
        "[load]\nconcurrency = 2",
    );
    let out = dir.path().join("out");
    let (coordinator, worker, _) = two_shards(
        dir.path(),
        &config,
        "budget",
        &out,
        &["--silence-timeout-s", "2"],
        &["--upload-budget-mib", "0"],
    )
    .await;
    assert!(!worker.status.success());
    assert!(
        text(&worker).contains("would pass their budget of 0 bytes"),
        "{}",
        text(&worker)
    );
    let done = coordinator.wait_with_output().await.unwrap();
    let output = text(&done);
    assert_eq!(done.status.code(), Some(5), "{output}");
    assert!(output.contains("shard 0: the upload failed"), "{output}");
    let left: Vec<_> = std::fs::read_dir(out.join("shards"))
        .map(|d| {
            d.flatten()
                .flat_map(|e| std::fs::read_dir(e.path()).unwrap().flatten())
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "nothing stored: {left:?}");
    sim.shutdown().await;
}

/// The coordinator's accept loop out of descriptors (`ulimit -n 128`, 200
/// connections that send nothing): it waits between failed accepts instead
/// of spinning (it took a core), and serves again once the silent
/// connections time out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coordinator_out_of_descriptors_does_not_spin() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("shard-emfile");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 2",
        "[load]\nconcurrency = 2",
    );
    let addr_file = dir.path().join("addr");
    let command = format!(
        "ulimit -n 128 && exec {} shard {} --shards 2 --index 0 --run-id emfile \
         --listen 127.0.0.1:0 --addr-file {} --out {} --barrier-timeout-s 120",
        env!("CARGO_BIN_EXE_agentload"),
        config.display(),
        addr_file.display(),
        dir.path().join("out").display()
    );
    let mut shard = tokio::process::Command::new("sh")
        .args(["-c", &command])
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let addr = coordinator_addr(&addr_file).await;
    let pid = shard.id().unwrap();
    // Shard 0 at the start barrier: its files are open, its load waits for shard 1.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let status: Value = reqwest::get(format!("http://{addr}/v1/status"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if status["shards"][0]["phase"] == "performance" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{status}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let mut held = Vec::new();
    for _ in 0..200 {
        if let Ok(Ok(s)) = tokio::time::timeout(
            std::time::Duration::from_millis(200),
            tokio::net::TcpStream::connect(&addr),
        )
        .await
        {
            held.push(s);
        }
    }
    // The coordinator's thread, by name (its CPU apart from the shard's own load).
    let thread = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
        .find(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.starts_with("agentload-coord"))
        })
        .expect("the coordinator's thread")
        .path();
    let ticks = || {
        let stat = std::fs::read_to_string(thread.join("stat")).unwrap();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    };
    // The coordinator accepts what it can (late on a loaded machine: up to a minute).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let open = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count();
        if open >= 120 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{open} descriptors open: the limit was not reached"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let before = ticks();
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let spent = ticks() - before;
    // SAFETY: sysconf has no preconditions.
    let per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    assert!(
        spent * 10 < 3 * per_s,
        "the coordinator's thread took {spent} ticks in 3 s ({per_s}/s)"
    );
    eprintln!("coordinator thread out of descriptors: {spent} ticks in 3 s ({per_s} ticks/s)");
    // Once they close, it serves again.
    drop(held);
    let status = reqwest::get(format!("http://{addr}/v1/status"))
        .await
        .unwrap();
    assert!(status.status().is_success());
    shard.kill().await.unwrap();
    sim.shutdown().await;
}

/// A network namespace joined to this one by a veth pair, removed on drop.
struct Netns {
    name: String,
    host_if: String,
    /// This side's address and the namespace's.
    host: String,
    inside: String,
}

impl Netns {
    fn create() -> Option<Netns> {
        let id = std::process::id() % 200 + 20;
        let n = Netns {
            name: format!("agentload-test-{id}"),
            host_if: format!("alh{id}"),
            host: format!("10.213.{id}.1"),
            inside: format!("10.213.{id}.2"),
        };
        let peer = format!("aln{id}");
        let ip = |args: &[&str]| {
            std::process::Command::new("ip")
                .args(args)
                .status()
                .is_ok_and(|s| s.success())
        };
        // A leftover of an earlier, killed run goes first (quietly: usually there is none).
        for args in [["netns", "del", &n.name], ["link", "del", &n.host_if]] {
            let _ = std::process::Command::new("ip")
                .args(args)
                .stderr(std::process::Stdio::null())
                .status();
        }
        let ok = ip(&["netns", "add", &n.name])
            && ip(&[
                "link", "add", &n.host_if, "type", "veth", "peer", "name", &peer,
            ])
            && ip(&["link", "set", &peer, "netns", &n.name])
            && ip(&["addr", "add", &format!("{}/24", n.host), "dev", &n.host_if])
            && ip(&["link", "set", &n.host_if, "up"])
            && ip(&[
                "netns",
                "exec",
                &n.name,
                "ip",
                "addr",
                "add",
                &format!("{}/24", n.inside),
                "dev",
                &peer,
            ])
            && ip(&["netns", "exec", &n.name, "ip", "link", "set", &peer, "up"])
            && ip(&["netns", "exec", &n.name, "ip", "link", "set", "lo", "up"]);
        ok.then_some(n)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for args in [["link", "del", &self.host_if], ["netns", "del", &self.name]] {
            let _ = std::process::Command::new("ip").args(args).status();
        }
    }
}

/// Two shards on separate network stacks (the second in its own network
/// namespace, on its own address, with its monotonic clock 7 s ahead in its
/// own time namespace): the offset is recovered within its recorded bound,
/// the shards start together on the coordinator's clock, and the merge is
/// exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_on_separate_hosts_with_a_shifted_clock_merge_exactly() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: network and time namespaces need root");
        return;
    }
    let ns = Netns::create().expect("the test creates its network namespace and veth pair");
    let sim = agentload_sim::start(
        replay_sim(trajectories()),
        std::sync::Arc::new(agentload_sim::ApproxTokenCounter),
        std::net::SocketAddr::from(([0, 0, 0, 0], 0)),
    )
    .await
    .unwrap();
    let endpoint = format!(
        "http://{}:{}",
        ns.host,
        sim.url().rsplit(':').next().unwrap()
    );
    let dir = scratch("shard-netns");
    let config = edge_config(
        dir.path(),
        &endpoint,
        "num_trajectories_to_issue = 6",
        "[load]\nconcurrency = 2",
    );
    let out = dir.path().join("out");
    let addr_file = dir.path().join("coordinator.addr");
    let exe = env!("CARGO_BIN_EXE_agentload");
    let shard = |index: &str| {
        vec![
            "shard".to_owned(),
            config.to_str().unwrap().to_owned(),
            "--shards".into(),
            "2".into(),
            "--index".into(),
            index.to_owned(),
            "--run-id".into(),
            "netns".into(),
            "--endpoint".into(),
            endpoint.clone(),
        ]
    };
    let mut zero = shard("0");
    zero.extend([
        "--listen".to_owned(),
        format!("{}:0", ns.host),
        "--addr-file".into(),
        addr_file.to_str().unwrap().into(),
        "--out".into(),
        out.to_str().unwrap().into(),
    ]);
    let coordinator = tokio::process::Command::new(exe)
        .args(&zero)
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .kill_on_drop(true)
        .output();
    let coordinator = tokio::spawn(coordinator);
    let addr = coordinator_addr(&addr_file).await;
    let mut one = shard("1");
    one.extend([
        "--coordinator".to_owned(),
        format!("http://{addr}"),
        "--out".into(),
        dir.path().join("shard1").to_str().unwrap().into(),
    ]);
    let far = tokio::process::Command::new("ip")
        .args([
            "netns",
            "exec",
            &ns.name,
            "unshare",
            "--time",
            "--fork",
            "--monotonic",
            "7",
            exe,
        ])
        .args(&one)
        .env("AGENTLOAD_DATA_DIR", data_dir())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    assert!(far.status.success(), "{}", text(&far));
    let near = coordinator.await.unwrap().unwrap();
    assert!(near.status.success(), "{}", text(&near));

    let summary = json(&out.join("performance/result_summary.json"));
    let d = &summary["agentload"]["distributed"];
    let shard_of = |i: usize| &d["per_shard"][i];
    // Coordinator minus shard 1 is -7 s, within the recorded bound.
    let (o, u) = (
        shard_of(1)["offset_ns"].as_i64().unwrap(),
        shard_of(1)["offset_uncertainty_ns"].as_u64().unwrap(),
    );
    eprintln!(
        "netns shard 1: offset {o} ns ± {u} ns (true -7e9: error {} ns); start skew {} ns",
        o + 7_000_000_000,
        d["start_skew_ns"]
    );
    assert!((o + 7_000_000_000).unsigned_abs() <= u, "offset {o} ± {u}");
    assert!(u < 50_000_000, "a veth round trip is short: ± {u} ns");
    assert!(
        shard_of(0)["offset_ns"].as_i64().unwrap().unsigned_abs()
            <= shard_of(0)["offset_uncertainty_ns"].as_u64().unwrap()
    );
    // Started together on the coordinator's clock (7 s apart without the offset).
    assert!(d["start_skew_ns"].as_u64().unwrap() < 100_000_000, "{d}");
    assert_eq!(d["histogram_check"]["agrees"], true, "{d}");
    let merged = read_jsonl(&out.join("turns.jsonl"));
    assert!(merged.iter().all(|r| r["status"] == "completed"));
    let sessions: BTreeSet<u64> = merged
        .iter()
        .map(|r| r["shard"].as_u64().unwrap())
        .collect();
    assert_eq!(sessions, BTreeSet::from([0, 1]));
    // Latencies are the shard's own durations, untouched by the offset.
    let raw = read_jsonl(&out.join("shards/1/turns.jsonl"));
    let ttft = |rs: &[Value]| -> BTreeSet<(String, u64, u64)> {
        rs.iter()
            .filter(|r| r.get("shard").is_none_or(|s| s == 1))
            .map(|r| {
                (
                    r["session_id"].as_str().unwrap().to_owned(),
                    r["turn"].as_u64().unwrap(),
                    span(r, "issued_ns", "first_token_ns").unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(ttft(&raw), ttft(&merged));
    sim.shutdown().await;
}

/// The emitted objects: pinned by a golden file (rewrite it with
/// `AGENTLOAD_UPDATE_GOLDEN=1`), and valid for Kubernetes by
/// `kubernetes-validate --strict` (offline; scripts/test.sh installs it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_objects_are_valid_and_pinned() {
    let k8s = manifest_dir().join("../../tests/k8s");
    let dir = scratch("k8s");
    let run = agentload(
        &[
            "k8s",
            "manifest",
            k8s.join("run.toml").to_str().unwrap(),
            "--shards",
            "4",
            "--image",
            "registry.example/agentload:0.1.0",
            "--name",
            "golden",
            "--namespace",
            "bench",
            "--data-claim",
            "agentload-data",
            "--cpu",
            "4",
            "--memory",
            "8Gi",
            "--linger-s",
            "600",
        ],
        dir.path(),
    )
    .await;
    assert!(run.status.success(), "{}", text(&run));
    let yaml = String::from_utf8(run.stdout).unwrap();
    let golden = k8s.join("golden.yaml");
    if std::env::var_os("AGENTLOAD_UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &yaml).unwrap();
    }
    assert_eq!(
        yaml,
        std::fs::read_to_string(&golden).unwrap(),
        "the objects changed: review, then rewrite the golden file"
    );
    // The config travels whole; the deadline covers the run, an hour and the linger.
    assert!(yaml.contains("activeDeadlineSeconds: 7800"), "{yaml}");
    assert!(yaml.contains("concurrency = 64"), "{yaml}");

    let file = dir.path().join("objects.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let Some(tool) = k8s_validator() else {
        return;
    };
    let (passed, said) = k8s_validate(&tool, &file);
    assert!(passed, "{said}");
    assert_eq!(said.matches("passed for resource").count(), 3, "{said}");
    // The check bites: a field Kubernetes does not know fails it.
    std::fs::write(
        &file,
        yaml.replace("backoffLimit: 0", "backoffLimit: 0\n  retries: 2"),
    )
    .unwrap();
    let (passed, _) = k8s_validate(&tool, &file);
    assert!(!passed, "an unknown field passed --strict");

    // A split the run cannot have is refused before any object is printed.
    let refused = agentload(
        &[
            "k8s",
            "manifest",
            k8s.join("run.toml").to_str().unwrap(),
            "--shards",
            "65",
            "--image",
            "x",
        ],
        dir.path(),
    )
    .await;
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("load.concurrency = 64"),
        "{}",
        text(&refused)
    );
}

/// Every process of a sharded run killed (-9) mid-run, then `agentload
/// resume DIR`: each shard continues its own journals, the merge is written,
/// and the run is whole: every turn once, the lines journalled before the
/// kill unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_sharded_run_resumes_whole() {
    let mut slow = replay_sim(trajectories());
    slow.time_scale = 0.003;
    let sim = start_sim(slow).await;
    let dir = scratch("shard-resume");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 20",
        "[load]\nconcurrency = 4",
    );
    let out = dir.path().join("out");
    let mut run = spawn_sharded(&config, &out, &["--shards", "2"]);
    wait_for_lines(&out.join("work/1/turns.jsonl"), 40, &mut run).await;
    let pids: Vec<i32> = (0..2).filter_map(|i| shard_pid(&out, i)).collect();
    assert_eq!(pids.len(), 2);
    run.start_kill().unwrap();
    for pid in pids {
        // SAFETY: kill(2) on processes this test's child started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    run.wait().await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let before: Vec<Vec<u8>> = (0..2)
        .map(|i| std::fs::read(out.join(format!("work/{i}/turns.jsonl"))).unwrap())
        .collect();
    let journalled: usize = before
        .iter()
        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
        .sum();
    assert!(journalled < 1007, "killed before the end");

    let done = agentload(
        &["resume", out.to_str().unwrap(), "--require-valid"],
        dir.path(),
    )
    .await;
    assert!(done.status.success(), "{}", text(&done));
    for (i, b) in before.iter().enumerate() {
        let whole = b.len() - b.iter().rev().position(|&c| c == b'\n').unwrap_or(b.len());
        let after = std::fs::read(out.join(format!("work/{i}/turns.jsonl"))).unwrap();
        assert_eq!(
            &after[..whole],
            &b[..whole],
            "shard {i}: lines before the kill unchanged"
        );
    }
    let merged = keys(&out.join("turns.jsonl"));
    let completed: BTreeSet<_> = merged
        .iter()
        .filter(|(_, s)| s == "completed")
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(completed.len(), 1007, "every turn completed");
    assert_eq!(
        merged.iter().filter(|(_, s)| s == "completed").count(),
        1007,
        "none twice"
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("run VALID"), "{report}");
    sim.shutdown().await;
}

/// Shard 0 serves the merged run after writing it (`--linger-s`), and
/// `agentload k8s fetch` brings every file back, each checked against its
/// listed size and digest: the files equal those on shard 0's disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_merged_run_is_fetched_from_the_coordinator() {
    let sim = start_sim(replay_sim(trajectories())).await;
    let dir = scratch("shard-fetch");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 4",
        "[load]\nconcurrency = 2",
    );
    let out = dir.path().join("out");
    let (mut coordinator, worker, url) = two_shards(
        dir.path(),
        &config,
        "fetch",
        &out,
        &[],
        &["--linger-s", "120"],
    )
    .await;
    assert!(worker.status.success(), "{}", text(&worker));
    // Before the merge is written, fetch says why there is nothing yet;
    // then it brings the files.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let fetched = dir.path().join("fetched");
    let fetched_s = fetched.to_str().unwrap();
    let got = loop {
        let f = agentload(&["k8s", "fetch", &url, fetched_s], dir.path()).await;
        if f.status.success() {
            break text(&f);
        }
        assert!(text(&f).contains("no merged results yet"), "{}", text(&f));
        assert!(std::time::Instant::now() < deadline, "no merged results");
        assert!(coordinator.try_wait().unwrap().is_none(), "shard 0 ended");
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert!(got.contains("files in"), "{got}");
    for name in [
        "turns.jsonl",
        "performance/result_summary.json",
        "report.txt",
        "scores.json",
    ] {
        assert_eq!(
            std::fs::read(fetched.join(name)).unwrap(),
            std::fs::read(out.join(name)).unwrap(),
            "{name}"
        );
    }
    assert!(
        !fetched.join("shards").exists(),
        "the shards' uploads stay on shard 0"
    );
    coordinator.start_kill().unwrap();
    sim.shutdown().await;
}
