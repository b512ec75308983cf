//! The concurrency sweep end to end: the real binary, coding-replay, the
//! embedded simulator. Shortened windows so the phases take a second or so.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// A coding-replay sweep at `levels` with the short end rules, and `extra` `[sweep]` keys.
fn sweep_config(dir: &Path, url: &str, levels: &str, extra: &str) -> std::path::PathBuf {
    RunToml {
        name: "sweep-test",
        url,
        workload: CODING_REPLAY,
        sweep: Some(&format!("levels = {levels}\n{SHORT_AGENT_RULES}{extra}\n")),
        ..RunToml::default()
    }
    .write(&dir.join("sweep.toml"))
}

fn records(out: &Path, phase: &Value) -> Vec<Value> {
    let path = out.join("sweep").join(phase["turns"].as_str().unwrap());
    read_jsonl(&path)
}

/// Agent -> its trajectories (session ids) in order.
fn assignment(records: &[Value]) -> BTreeMap<u64, Vec<String>> {
    let mut by_agent: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for r in records {
        let list = by_agent.entry(r["agent"].as_u64().unwrap()).or_default();
        let s = r["session_id"].as_str().unwrap().to_owned();
        if list.last() != Some(&s) {
            list.push(s);
        }
    }
    by_agent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phases_end_by_their_rules_measure_steady_state_and_assign_deterministically() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0002,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let dir = scratch("sweep");
    let config = sweep_config(dir.path(), &sim.url(), "[1, 2, 4]", "");
    let mut text_cfg = std::fs::read_to_string(&config).unwrap();
    text_cfg.push_str("[session_slo]\nttft_ms = 10000.0\n");
    std::fs::write(&config, text_cfg).unwrap();
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let summary = json(&out.join("sweep/summary.json"));
    let phases = summary["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 3);
    let pareto = json(&out.join("sweep/pareto.json"));
    assert_eq!(pareto["points"].as_array().unwrap().len(), 3);
    assert!(!pareto["frontier"].as_array().unwrap().is_empty());
    // Every point carries the three interactivity definitions; the sweep's
    // own frontier is over AA's P25 speed, another can be asked for.
    assert_eq!(pareto["x"], "aa_p25");
    // Each phase's sessions, from its facts: one per trajectory an agent
    // ran, ended as the engine says, with their time split.
    for phase in phases {
        let s = &phase["sessions"];
        let ended: u64 = s["ended"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum();
        assert_eq!(ended, s["sessions"].as_u64().unwrap(), "{s}");
        assert!(
            s["sessions"].as_u64().unwrap() >= phase["trajectories_completed"].as_u64().unwrap()
        );
        assert!(s["ended"]["finished"].as_u64().unwrap() >= 3, "{s}");
        assert!(s["model_s"].as_f64().unwrap() > 0.0, "{s}");
        assert!(s["ttft_by_turn"][0]["n"].as_u64().unwrap() > 0, "{s}");
        // The run sets [session_slo]: every finished session meets 10 s TTFT.
        assert!(s["slo_ok"].as_u64().unwrap() >= 3, "{s}");
        assert!(s["session_goodput_per_hour"].as_f64().unwrap() > 0.0, "{s}");
    }
    for point in pareto["points"].as_array().unwrap() {
        let i = &point["interactivity"];
        for key in [
            "mlperf_e2e_interactivity",
            "mlperf_tps_per_user",
            "agentx_e2e_normalized_p90",
        ] {
            assert!(i[key].as_f64().unwrap() > 0.0, "{key}: {point}");
        }
    }
    let by_e2e = agentload(
        &["pareto", out.to_str().unwrap(), "--x", "mlperf-e2e"],
        dir.path(),
    )
    .await;
    assert!(by_e2e.status.success(), "{}", text(&by_e2e));
    assert!(
        text(&by_e2e).contains("MLPerf e2e interactivity (tok/s)"),
        "{}",
        text(&by_e2e)
    );

    for (phase, level) in phases.iter().zip([1u64, 2, 4]) {
        assert_eq!(phase["level"], level);
        // The end rules held: 3 trajectories, 1 per agent, 0.3 s of steady state.
        assert_eq!(phase["end_reason"], "end rules met", "{phase}");
        assert!(phase["trajectories_completed"].as_u64().unwrap() >= 3);
        assert!(phase["min_trajectories_per_agent"].as_u64().unwrap() >= 1);
        let window = &phase["window"];
        let (start, end) = (
            window["start_ns"].as_u64().unwrap(),
            window["end_ns"].as_u64().unwrap(),
        );
        assert!(end - start >= 300_000_000, "{window}");
        let all_active = (phase["all_active_s"].as_f64().unwrap() * 1e9) as u64;
        assert!(
            start >= all_active + 100_000_000 - 1_000,
            "warm-up excluded"
        );

        // Steady-state exclusion: exactly the requests issued inside the window count.
        let recs = records(&out, phase);
        let inside = recs
            .iter()
            .filter(|r| {
                let t = r["issued_ns"].as_u64().unwrap();
                t >= start && t <= end
            })
            .count();
        let before = recs
            .iter()
            .filter(|r| r["issued_ns"].as_u64().unwrap() < start)
            .count();
        assert_eq!(window["measured"].as_u64().unwrap() as usize, inside);
        assert_eq!(window["ramp_up"].as_u64().unwrap() as usize, before);
        assert!(before > 0 && inside > 0);
        assert_eq!(phase["ttft_ms"]["n"].as_u64().unwrap() as usize, inside);
        assert!(phase["throughput"]["total_tps"].as_f64().unwrap() > 0.0);

        // Deterministic assignment: agent i's j-th trajectory is plan[i + j * level];
        // the plan is the 20 conversations in file order, then their repeats.
        let by_agent = assignment(&recs);
        assert_eq!(by_agent.len() as u64, level);
        let first_pass: Vec<String> = records(&out, &phases[0])
            .iter()
            .map(|r| r["session_id"].as_str().unwrap().to_owned())
            .fold(Vec::new(), |mut v, s| {
                if v.last() != Some(&s) {
                    v.push(s);
                }
                v
            });
        for (agent, sessions) in &by_agent {
            for (j, s) in sessions.iter().enumerate() {
                let k = *agent as usize + j * level as usize;
                if k < first_pass.len() {
                    assert_eq!(s, &first_pass[k], "agent {agent} trajectory {j}");
                }
            }
        }
    }

    // The same sweep again assigns the same trajectories to the same agents.
    let again = dir.path().join("again");
    run_ok(&config, &again, &[], dir.path()).await;
    let again_phases = json(&again.join("sweep/summary.json"))["phases"].clone();
    for (a, b) in phases.iter().zip(again_phases.as_array().unwrap()) {
        let (ra, rb) = (
            assignment(&records(&out, a)),
            assignment(&records(&again, b)),
        );
        for (agent, list) in &ra {
            let other = &rb[agent];
            let n = list.len().min(other.len());
            assert_eq!(list[..n], other[..n], "agent {agent}");
        }
    }
    sim.shutdown().await;
}

/// Phase 2's first request (trajectory 0, turn 1) right after phase 1 ended
/// on trajectory 0's last turn: (cached tokens, prompt tokens), and the
/// cached counts of phase 1's later turns.
async fn second_phase_reuse(url: &str, salt: bool) -> ((u64, u64), Vec<u64>) {
    let dir = scratch("salt");
    let extra = format!("salt = {salt}");
    let config = sweep_config(dir.path(), url, "[1, 1]", &extra);
    edit_config(
        &config,
        &[
            ("min_trajectories = 3\n", "min_trajectories = 1\n"),
            (
                "steady_state_s = 0.3\nwarmup_s = 0.1\n",
                "steady_state_s = 0.0\nwarmup_s = 0.0\n",
            ),
        ],
    );
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let summary = json(&out.join("sweep/summary.json"));
    let phases = summary["phases"].as_array().unwrap();
    let usage = |r: &Value, k: &str| r["usage"][k].as_u64().unwrap();
    let cached = |r: &Value| {
        r["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
    };
    let first = records(&out, &phases[0]);
    let second = records(&out, &phases[1]);
    // Phase 1 ran exactly trajectory 0 and stopped; phase 2 starts it again.
    assert!(first
        .iter()
        .all(|r| r["session_id"] == first[0]["session_id"]));
    assert_eq!(first[0]["session_id"], second[0]["session_id"]);
    (
        (cached(&second[0]), usage(&second[0], "prompt_tokens")),
        first.iter().skip(1).map(cached).collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn salts_change_the_prefix_per_phase_but_not_within_a_trajectory() {
    // The simulator's prefix reuse shows what a server could cache.
    let sim = start_sim(SimConfig {
        time_scale: 0.0002,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let ((plain_cached, prompt), _) = second_phase_reuse(&sim.url(), false).await;
    // Without salts phase 2's first prompt is a prefix of what the server just saw.
    assert!(
        plain_cached * 10 >= prompt * 9,
        "{plain_cached} of {prompt}"
    );
    let ((salted_cached, prompt), within) = second_phase_reuse(&sim.url(), true).await;
    // With salts only the few tokens before the salt match.
    assert!(salted_cached * 10 < prompt, "{salted_cached} of {prompt}");
    // Within a trajectory the salt is the same on every turn: each turn
    // reuses the previous prompt.
    assert!(within.iter().all(|&c| c > prompt / 2), "{within:?}");
    sim.shutdown().await;
}

/// A level whose turns fail (the context overflows): its failed turns abort
/// the rest of their trajectory (recorded, never sent), every issued turn
/// has its due time, and the sweep's files are still written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_level_records_aborted_turns_and_still_writes_the_pareto_file() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0002,
        responder: ResponderConfig::Echo,
        ctx_size: 3000,
        ..SimConfig::default()
    })
    .await;
    let dir = scratch("sweep-fail");
    let config = sweep_config(dir.path(), &sim.url(), "[1, 2]", "");
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let summary = json(&out.join("sweep/summary.json"));
    let phases = summary["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    assert!(out.join("sweep/pareto.json").is_file());
    let mut aborted = 0;
    for phase in phases {
        assert!(
            phase["trajectories_failed"].as_u64().unwrap() > 0,
            "{phase}"
        );
        let recs = records(&out, phase);
        for (i, r) in recs.iter().enumerate() {
            match r["status"].as_str().unwrap() {
                "failed" => {
                    assert!(r["error"].as_str().unwrap().contains("context"), "{r}");
                    // The next record of the same trajectory, if any, is aborted.
                    if let Some(next) = recs[i + 1..]
                        .iter()
                        .find(|n| n["session_id"] == r["session_id"] && n["agent"] == r["agent"])
                    {
                        assert_eq!(next["status"], "aborted", "{next}");
                    }
                }
                "aborted" => {
                    aborted += 1;
                    assert!(r["issued_ns"].is_null(), "never sent: {r}");
                }
                _ => {}
            }
            if !r["issued_ns"].is_null() {
                assert!(r["scheduled_ns"].as_u64().unwrap() <= r["issued_ns"].as_u64().unwrap());
            }
        }
    }
    assert!(
        aborted > 0,
        "the failed trajectories' later turns are recorded as aborted"
    );
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_sweep_is_labelled_and_funnels_each_phase() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0002,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let dir = scratch("sweep-live");
    let config = sweep_config(dir.path(), &sim.url(), "[1, 2]", "");
    edit_config(
        &config,
        &[(
            "[sweep]",
            "[performance.settings]\nhistory = \"live\"\n[sweep]",
        )],
    );
    let out = dir.path().join("out");
    let console = run_ok(&config, &out, &[], dir.path()).await;
    let summary = json(&out.join("sweep/summary.json"));
    let label = serde_json::json!({"history": "live", "official": false});
    assert_eq!(summary["live"], label);
    let pareto = json(&out.join("sweep/pareto.json"));
    assert_eq!(pareto["live"], label);
    assert!(pareto["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["live"] == true));
    let phases = summary["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 2);
    for phase in phases {
        // The funnel is every reviewed turn of the phase's log.
        let records = records(&out, phase);
        let reviewed: Vec<&Value> = records.iter().filter(|r| r.get("live").is_some()).collect();
        assert!(!reviewed.is_empty());
        let live = &phase["live"];
        assert_eq!(live["official"], false, "{live:#}");
        assert_eq!(live["turns_reviewed"], reviewed.len(), "{live:#}");
        let by_rows: u64 = live["funnel"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["turns"].as_u64().unwrap())
            .sum();
        assert_eq!(by_rows, reviewed.len() as u64);
        let substituted = reviewed
            .iter()
            .filter(|r| r["live"]["action"] == "substituted")
            .count();
        assert_eq!(live["substitutions"], substituted, "{live:#}");
        // The echo runs into the sweep's 64-token cap: truncated replies,
        // substituted by the recorded ones (a trajectory's last one kept).
        let row = live["funnel"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["class"] == "truncated")
            .unwrap();
        assert!(row["substituted"].as_u64().unwrap() > 0, "{live:#}");
    }
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("NON-OFFICIAL: live-reply replay") && report.contains("live: "),
        "{report}\n{console}"
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("NON-OFFICIAL: live-reply replay"));
    // Joined with other sweeps, its points stay labelled.
    let joined = dir.path().join("joined.json");
    let args = [
        "pareto",
        out.to_str().unwrap(),
        "--out",
        joined.to_str().unwrap(),
    ];
    let run = agentload(&args, dir.path()).await;
    assert!(run.status.success(), "{}", text(&run));
    let joined = json(&joined);
    assert_eq!(joined["live"], label);
    assert!(joined["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p["live"] == true));
    let listed = agentload(&["pareto", out.to_str().unwrap()], dir.path()).await;
    assert!(
        text(&listed).contains("(live replies: not official)"),
        "{}",
        text(&listed)
    );
}

/// A phase whose end rules cannot hold is cut at `max_phase_s`: the monitor
/// wakes at the cap itself (it no longer looks every 20 ms), not much later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phase_whose_rules_cannot_hold_is_cut_at_its_time_cap() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0002,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let dir = scratch("sweep-cap");
    let config = sweep_config(dir.path(), &sim.url(), "[2]", "max_phase_s = 0.8");
    edit_config(
        &config,
        &[
            ("min_trajectories = 3\n", "min_trajectories = 1000000\n"),
            (
                "max_trajectories_per_agent = 20\n",
                "max_trajectories_per_agent = 200\n",
            ),
        ],
    );
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let summary = json(&out.join("sweep/summary.json"));
    let phase = &summary["phases"][0];
    assert_eq!(
        phase["end_reason"], "cut at max_phase_s = 0.8 s before the end rules held",
        "{phase}"
    );
    let stopped = phase["stopped_s"].as_f64().unwrap();
    assert!((0.8..1.3).contains(&stopped), "stopped at {stopped} s");
    sim.shutdown().await;
}
