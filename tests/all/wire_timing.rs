//! Timestamps at the wire, end to end (issue 16): the timing error split by direction
//! against the simulator's syscall stamps, the connection set-up and the start-up reported
//! apart, local token counting never beside a stream, and `agentload bench`'s floor.

use crate::common::*;
use agentload_sim::SimConfig;
use serde_json::Value;

fn oracle() -> SimConfig {
    SimConfig {
        slots: 4,
        ..replay_sim(trajectories())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_by_direction_set_up_and_start_up_are_reported() {
    let sim = start_sim(oracle()).await;
    let dir = scratch("wire");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 3",
        "[load]\nconcurrency = 3\n",
    );
    let out = dir.path().join("out");
    let report = run_ok(&config, &out, &[], dir.path()).await;

    let turns = read_jsonl(&out.join("turns.jsonl"));
    // The summary's series are over the performance window: three
    // sessions on three slots, so tracking stopped at the first session's
    // end and the others' later turns are the tail.
    let stop = json(&out.join("performance/result_summary.json"))["agentload"]["tracking"]
        ["stop_ns"]
        .as_u64()
        .expect("a window");
    let done: Vec<&Value> = turns
        .iter()
        .filter(|t| t["status"] == "completed" && stamp(t, "issued_ns") < stop as i64)
        .collect();
    assert!(done.len() > 20, "{} turns", done.len());
    let mut paths = Vec::new();
    for t in &done {
        let s = &t["server_timestamps"];
        let issued = stamp(t, "issued_mono_ns");
        let ttft = stamp(t, "first_token_ns") - stamp(t, "issued_ns");
        let request = stamp(s, "received_mono_ns") - issued;
        let response = issued + ttft - stamp(s, "first_token_mono_ns");
        let total = ttft - stamp(s, "first_token_ns");
        // The simulator reads the request after agentload sent it, and agentload reads the
        // first token after the request arrived. The response path may be below zero: the
        // simulator's first-token stamp is its write(2)'s return, and loopback delivers the
        // bytes inside that write (a preempted writer returns late; pinning avoids it).
        assert!(request >= 0, "request path {request} ns: {t}");
        assert!(issued + ttft >= stamp(s, "received_mono_ns"), "{t}");
        assert!(
            stamp(s, "first_token_mono_ns") >= stamp(s, "received_mono_ns"),
            "{t}"
        );
        paths.push((request, response, total));
    }

    let summary = json(&out.join("performance/result_summary.json"));
    let extra = &summary["agentload"];
    let err = &extra["timing_error"];
    // The summary's series are the turn log's stamps, recomputed here from the raw values
    // (the simulator defines its first-token time from its own stamps, so the two paths add
    // up to the total by construction: each is checked on its own).
    for (key, pick) in [
        ("request_path_ns", 0),
        ("response_path_ns", 1),
        ("ttft_minus_server_ns", 2),
    ] {
        // The TTFT difference is an unsigned series: below zero counts as 0.
        let values: Vec<i64> = paths.iter().map(|p| [p.0, p.1, p.2.max(0)][pick]).collect();
        let (min, max) = (*values.iter().min().unwrap(), *values.iter().max().unwrap());
        assert_eq!(err[key]["min"].as_f64(), Some(min as f64), "{key}: {err}");
        assert_eq!(err[key]["max"].as_f64(), Some(max as f64), "{key}: {err}");
    }
    for key in [
        "ttft_minus_server_ns",
        "request_path_ns",
        "response_path_ns",
    ] {
        assert!(err[key]["percentiles"]["99.0"].is_number(), "{key}: {err}");
    }
    assert!(
        err["request_path_ns"]["min"].as_f64().unwrap() >= 0.0,
        "{err}"
    );
    // The split sums to the total over the same turns.
    let sum = |k: &str| err[k]["total"].as_f64().unwrap();
    let split = sum("request_path_ns") + sum("response_path_ns");
    let total: i64 = done
        .iter()
        .map(|t| {
            stamp(t, "first_token_ns")
                - stamp(t, "issued_ns")
                - stamp(&t["server_timestamps"], "first_token_ns")
        })
        .sum();
    assert!(
        (split - total as f64).abs() < 1e3,
        "{split} vs {total}: {err}"
    );
    let harness = &extra["harness"];
    // One connection per concurrent session, opened before the first turn.
    assert_eq!(harness["connection_setup"]["connections"], 3, "{harness}");
    // The endpoint check's connection is one of them.
    assert_eq!(harness["connection_setup"]["opened"], 2, "{harness}");
    assert!(harness["connection_setup"]["ms"].as_f64().unwrap() >= 0.0);
    let startup = harness["startup_ms"].as_f64().unwrap();
    assert!(startup > 0.0 && startup < 60_000.0, "{harness}");
    assert!(
        harness["token_counting"].is_null(),
        "tokenizer none: {harness}"
    );
    // Set-up is not inside any turn: no turn opened a connection, and the server saw three.
    assert_eq!(sim.connections_accepted(), 3);
    assert!(report.contains("request path"), "{report}");
    assert!(report.contains("connection set-up"), "{report}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_counting_runs_after_the_streams_and_counts_every_turn() {
    if !vocabulary() {
        eprintln!("note: test skipped: no Qwen3.6 vocabulary");
        return;
    }
    let sim = start_sim(oracle()).await;
    let dir = scratch("wire-count");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 3",
        "[load]\nconcurrency = 2\n",
    );
    edit_config(
        &config,
        &[("tokenizer = \"none\"", "tokenizer = \"qwen3.6\"")],
    );
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;

    let summary = json(&out.join("performance/result_summary.json"));
    let counting = &summary["agentload"]["harness"]["token_counting"];
    // Every answered turn is counted, the window's tail included (the
    // summary's own counts are the window's).
    let turns = read_jsonl(&out.join("turns.jsonl"));
    let completed = turns.iter().filter(|t| t["status"] == "completed").count() as u64;
    assert!(completed > 0);
    assert!(summary["n_samples_completed"].as_u64().unwrap() <= completed);
    assert_eq!(counting["turns"], completed, "{counting}");
    assert_eq!(counting["during_streams"], 0, "{counting}");
    assert_eq!(summary["agentload"]["token_count_source"], "local");
    // Every count is on disk beside the log, one line per answered turn, each a log line.
    let lines = read_jsonl(&out.join("turns.tokens.jsonl"));
    assert_eq!(lines.len() as u64, completed);
    for l in &lines {
        let line = l["line"].as_u64().unwrap() as usize;
        assert_eq!(turns[line - 1]["status"], "completed", "{l}");
        assert!(l["isl"].as_u64().unwrap() > 0, "{l}");
    }
    // Each prompt was counted after its own session's last one (two run at once).
    let isl: u64 = lines.iter().map(|l| l["isl"].as_u64().unwrap()).sum();
    assert_eq!(counting["prompt_tokens"], isl, "{counting}");
    let reused = counting["prompt_tokens_reused"].as_u64().unwrap();
    assert!(reused * 2 > isl && reused < isl, "{counting}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_prints_the_floor_and_the_ratio_to_it() {
    let dir = scratch("wire-bench");
    let (_, v) = bench_ok(
        dir.path(),
        &[
            "--sections",
            "streams",
            "--levels",
            "1,3",
            "--samples",
            "6",
            "--requests",
            "2",
            "--answer-tokens",
            "2",
        ],
        &[
            "floor c=1 (5 req, alternated) TTFT error p99",
            "floor c=1 (5 req, alternated) request path p50",
            "floor c=1 (5 req, alternated) response path p99",
            "c=1 (5 req) TTFT error p99",
            "c=1 p99 error / floor p99",
            "c=3 (3 req) TTFT error p50",
            "c=3 first request TTFT error p99",
            "c=3 connection set-up",
            "c=3 ingest / demand",
            "c=3 harness CPU busy",
            "c=3 simulator CPU busy",
            "c=1 floor CPU",
            "c=3 floor CPU",
            "c=3 harness CPU / floor",
            "c=3 harness CPU in user space",
            "c=3 floor CPU in user space",
            "c=3 harness CPU in the kernel / floor's",
        ],
    )
    .await;
    let streams = &v["streams"];
    assert_eq!(streams["floor"]["after_first"]["requests"], 5, "{streams}");
    assert_eq!(streams["floor"]["first"]["requests"], 1);
    assert_eq!(streams["floor"]["alternated"], true);
    let levels = streams["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    // c=1 sends as many as the floor (6), c=3 two each (the --requests minimum).
    assert_eq!(levels[0]["requests"], 6);
    assert_eq!(levels[1]["requests"], 6);
    assert_eq!(levels[1]["first"]["requests"], 3);
    // A total can be below zero (the response path is measured from the simulator's write
    // returning): a ratio only over a positive floor.
    let floor99 = streams["floor"]["after_first"]["total"]["p99_ms"]
        .as_f64()
        .unwrap();
    for l in levels {
        assert_eq!(l["failed"], 0, "{l}");
        let p99 = l["after_first"]["total"]["p99_ms"].as_f64().unwrap();
        if floor99 > 0.0 {
            let ratio = l["ratio_to_floor_p99"].as_f64().unwrap();
            assert!((ratio - p99 / floor99).abs() < 1e-9, "{l}");
        }
        assert!(l["after_first"]["request_path"]["p50_ms"].as_f64().unwrap() >= 0.0);
        // Demand is streams x the simulator's 100 tokens/s; both sides' CPU is read.
        assert_eq!(
            l["demand_tps"].as_f64().unwrap(),
            l["streams"].as_f64().unwrap() * 100.0
        );
        for side in ["harness_cpu_pct", "sim_cpu_pct"] {
            let pct = l[side].as_f64().unwrap();
            assert!(pct.is_finite() && pct >= 0.0, "{side}: {l}");
        }
        // The floor's CPU at every level: the alternated client's at c=1, a floor at the
        // same concurrency above it.
        let floor_cpu = l["floor_cpu_ms_per_request"].as_f64().unwrap();
        assert!(floor_cpu.is_finite() && floor_cpu > 0.0, "{l}");
        // Above c=1 both sides' CPU is split into user space and the kernel; at c=1 the
        // alternated floor's share is not, and the split is absent (null).
        for (user, all) in [
            (
                "harness_user_cpu_ms_per_request",
                "harness_cpu_ms_per_request",
            ),
            ("floor_user_cpu_ms_per_request", "floor_cpu_ms_per_request"),
        ] {
            match l["streams"].as_u64().unwrap() {
                1 => assert!(l[user].is_null(), "{user}: {l}"),
                _ => {
                    let (user_ms, all_ms) = (l[user].as_f64().unwrap(), l[all].as_f64().unwrap());
                    assert!((0.0..=all_ms + 1e-9).contains(&user_ms), "{user}: {l}");
                }
            }
        }
    }
    assert!(streams["sim_cpus"].is_null());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_and_the_bench_pin_to_the_cpus_asked_for() {
    let cpus = agentload::bench::affinity::allowed_cpus().unwrap();
    if cpus.len() < 2 {
        eprintln!("note: test skipped: one CPU");
        return;
    }
    let dir = scratch("wire-pin");
    let sim_cpu = cpus[cpus.len() - 1].to_string();
    // `agentload sim --cpus`: every thread of the server on that CPU.
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agentload"))
        .args([
            "sim",
            "--port",
            "0",
            "--tokenizer",
            "approx",
            "--cpus",
            &sim_cpu,
        ])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let url = lines.next_line().await.unwrap().unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let pid = child.id().unwrap();
    let tasks: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(tasks.len() > 1, "the runtime's threads");
    for task in tasks {
        let status = std::fs::read_to_string(task.join("status")).unwrap();
        let allowed = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_owned();
        assert_eq!(allowed, sim_cpu, "{}", task.display());
    }
    child.kill().await.unwrap();

    // `agentload bench --sim-cpus`: the client on the others, said in the JSON.
    let (_, v) = bench_ok(
        dir.path(),
        &[
            "--sections",
            "streams",
            "--levels",
            "1",
            "--samples",
            "3",
            "--answer-tokens",
            "2",
            "--sim-cpus",
            &sim_cpu,
        ],
        &[],
    )
    .await;
    let want_sim: Vec<usize> = vec![sim_cpu.parse().unwrap()];
    let got_sim: Vec<usize> = serde_json::from_value(v["streams"]["sim_cpus"].clone()).unwrap();
    let client: Vec<usize> = serde_json::from_value(v["streams"]["client_cpus"].clone()).unwrap();
    assert_eq!(got_sim, want_sim);
    assert!(
        !client.is_empty() && !client.contains(&want_sim[0]),
        "{client:?}"
    );
    // Every CPU asked for must leave one for the client.
    let all: Vec<String> = cpus.iter().map(ToString::to_string).collect();
    let run = agentload(
        &[
            "bench",
            "--sections",
            "streams",
            "--levels",
            "1",
            "--sim-cpus",
            &all.join(","),
        ],
        dir.path(),
    )
    .await;
    assert!(!run.status.success());
    assert!(
        text(&run).contains("leaves no CPU for the client"),
        "{}",
        text(&run)
    );
    let run = agentload(&["sim", "--cpus", "x"], dir.path()).await;
    assert!(!run.status.success());
    assert!(
        text(&run).contains("`x` is not a CPU number"),
        "{}",
        text(&run)
    );
}

/// `bench --sections agents` at a toy size: agentload (a sweep of the
/// synthetic workload, in a child process) and the floor client both keep
/// their agents busy against one simulator, with nothing failed, and every
/// per-unit cost and the rack projection come out as numbers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_agents_measures_agentload_beside_the_floor() {
    let dir = scratch("bench-agents");
    let (table, v) = bench_ok(
        dir.path(),
        &[
            "--sections",
            "agents",
            "--agents",
            "12",
            "--agents-seconds",
            "2",
            "--agents-scale",
            "0.01",
            "--agents-tps",
            "50",
        ],
        &[
            "agentload peak RSS",
            "send lag p99",
            "CPU per turn / floor",
            "CPU per output token / floor",
            "CPU per request KiB / floor",
            "projected cores by CPU per turn (4140 agents",
        ],
    )
    .await;
    let a = &v["agents"];
    assert_eq!(a["agents"], 12);
    assert_eq!(a["failed_turns"], 0, "{table}");
    for client in ["agentload", "floor"] {
        let c = &a[client];
        assert!(c["turns"].as_u64().unwrap() >= 12, "{client}: {c}");
        assert!(c["output_tokens"].as_u64().unwrap() > 0, "{client}: {c}");
        assert!(c["request_bytes"].as_u64().unwrap() > 0, "{client}: {c}");
        assert!(c["cpu_s"].as_f64().unwrap() > 0.0, "{client}: {c}");
    }
    assert!(a["peak_rss_mib"].as_f64().unwrap() > 1.0);
    assert!(a["rack_cores"]["by_turns"].as_f64().unwrap() > 0.0);
}
