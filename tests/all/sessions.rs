//! Per-session metrics and the three interactivity definitions, checked
//! against values recomputed from `turns.jsonl` of a real run.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::Value;
use std::collections::BTreeMap;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_metrics_and_interactivity_match_the_turns() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0005,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let dir = scratch("sessions");
    let config = edge_config(
        dir.path(),
        &sim.url(),
        "num_trajectories_to_issue = 4",
        "include_usage = true\n[load]\nconcurrency = 2\n\
         [session_slo]\nttft_ms = 1000.0\ntpot_ms = 1000.0\n",
    );
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let turns = read_jsonl(&out.join("turns.jsonl"));
    let metrics = read_jsonl(&out.join("session_metrics.jsonl"));
    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(metrics.len(), 4);
    // The engine's own journal of outcomes is untouched (resume reads it).
    for line in read_jsonl(&out.join("sessions.jsonl")) {
        assert!(
            line["id"].is_string() && line["ended"].is_string(),
            "{line}"
        );
    }

    let mut by_session: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for t in &turns {
        by_session
            .entry(t["session_id"].as_str().unwrap())
            .or_default()
            .push(t);
    }
    let ns = |t: &Value, k: &str| u(&t[k]) as f64;
    let mut slo_ok = 0;
    for m in &metrics {
        let id = m["session_id"].as_str().unwrap();
        let mut ts = by_session[id].clone();
        ts.sort_by_key(|t| u(&t["turn"]));
        assert_eq!(u(&m["turns"]) as usize, ts.len(), "{id}");
        assert_eq!(m["end_reason"], "finished");
        let model: f64 = ts
            .iter()
            .map(|t| ns(t, "complete_ns") - ns(t, "issued_ns"))
            .sum::<f64>()
            / 1e9;
        let queue: f64 = ts
            .iter()
            .map(|t| ns(t, "issued_ns") - ns(t, "scheduled_ns"))
            .sum::<f64>()
            / 1e9;
        let tool: f64 = ts
            .windows(2)
            .map(|w| ns(w[1], "scheduled_ns") - ns(w[0], "complete_ns"))
            .sum::<f64>()
            / 1e9;
        let wall = (ns(ts[ts.len() - 1], "complete_ns") - ns(ts[0], "scheduled_ns")) / 1e9;
        assert!(
            close(m["model_s"].as_f64().unwrap(), model),
            "{id} model {m}"
        );
        assert!(
            close(m["queue_s"].as_f64().unwrap(), queue),
            "{id} queue {m}"
        );
        assert!(close(m["tool_s"].as_f64().unwrap(), tool), "{id} tool {m}");
        assert!(close(m["wall_s"].as_f64().unwrap(), wall), "{id} wall {m}");
        let cold = (ns(ts[0], "first_token_ns") - ns(ts[0], "issued_ns")) / 1e6;
        assert!(
            close(m["ttft_cold_ms"].as_f64().unwrap(), cold),
            "{id} cold {m}"
        );
        let out_tokens: u64 = ts.iter().map(|t| u(&t["usage"]["completion_tokens"])).sum();
        let in_tokens: u64 = ts.iter().map(|t| u(&t["usage"]["prompt_tokens"])).sum();
        assert_eq!(u(&m["output_tokens"]), out_tokens, "{id}");
        assert_eq!(u(&m["input_tokens"]), in_tokens, "{id}");
        assert!(
            close(
                m["e2e_interactivity"].as_f64().unwrap(),
                out_tokens as f64 / model
            ),
            "{id}"
        );
        // The SLO is judged from the turns' own stamps: 1 s TTFT (1 s per
        // token is never missed by the echo responder, but a machine busy
        // enough can miss the TTFT, and then the session says so).
        let meeting = ts
            .iter()
            .filter(|t| (ns(t, "first_token_ns") - ns(t, "issued_ns")) / 1e6 <= 1000.0)
            .count();
        assert_eq!(u(&m["turns_meeting_slo"]) as usize, meeting, "{id}: {m}");
        assert_eq!(m["slo_ok"], meeting == ts.len(), "{id}: {m}");
        slo_ok += usize::from(meeting == ts.len());
    }
    let s = &summary["agentload"]["sessions"];
    assert_eq!(s["sessions"], 4);
    assert_eq!(u(&s["slo_ok"]) as usize, slo_ok, "{s}");
    assert_eq!(s["slo_attainment_pct"], slo_ok as f64 * 25.0, "{s}");
    let seconds = u(&summary["duration_ns"]) as f64 / 1e9;
    assert!(close(
        s["session_goodput_per_hour"].as_f64().unwrap(),
        slo_ok as f64 * 3600.0 / seconds
    ));
    let first_turns = s["ttft_by_turn"][0]["n"].as_u64().unwrap();
    assert_eq!(first_turns, 4, "{s}");

    // The performance window: 4 sessions on 2 slots, so tracking stopped
    // at the third session end; the summary's metrics count the turns
    // issued before it, the sessions above every turn.
    let tracking = &summary["agentload"]["tracking"];
    let mut ends: Vec<u64> = by_session
        .values()
        .map(|ts| ts.iter().map(|t| u(&t["complete_ns"])).max().unwrap())
        .collect();
    ends.sort_unstable();
    let stop = u(&tracking["stop_ns"]);
    assert_eq!(stop, ends[2], "{tracking}");
    let turns: Vec<Value> = turns
        .iter()
        .filter(|t| u(&t["issued_ns"]) < stop)
        .cloned()
        .collect();
    assert_eq!(u(&tracking["tracked"]) as usize, turns.len());
    assert_eq!(u(&summary["n_samples_issued"]) as usize, turns.len());
    assert_eq!(
        u(&tracking["tail"]) as usize,
        read_jsonl(&out.join("turns.jsonl")).len() - turns.len()
    );
    // MLPerf e2e interactivity: a ratio of sums over the window's completed turns.
    let i = &summary["agentload"]["interactivity"];
    let osl: u64 = turns
        .iter()
        .map(|t| u(&t["usage"]["completion_tokens"]))
        .sum();
    let e2e: f64 = turns
        .iter()
        .map(|t| ns(t, "complete_ns") - ns(t, "issued_ns"))
        .sum::<f64>()
        / 1e9;
    assert_eq!(u(&i["output_tokens_per_turn_total"]), osl);
    assert!(close(
        i["e2e_turn_time_seconds_total"].as_f64().unwrap(),
        e2e
    ));
    assert!(close(
        i["mlperf_e2e_interactivity"].as_f64().unwrap(),
        osl as f64 / e2e
    ));
    // The checker's fallback (no failed turns): osl.total / latency.total.
    let fallback = summary["output_sequence_lengths"]["total"]
        .as_f64()
        .unwrap()
        / (summary["latency"]["total"].as_f64().unwrap() / 1e9);
    assert!((fallback / i["mlperf_e2e_interactivity"].as_f64().unwrap() - 1.0).abs() < 0.01);
    // tps_per_user from the summary's own TPOT p90.
    let tpot_p90_ms = summary["tpot"]["percentiles"]["90.0"].as_f64().unwrap() / 1e6;
    assert!(close(
        i["mlperf_tps_per_user"].as_f64().unwrap(),
        1000.0 / tpot_p90_ms
    ));
    // AgentX: 1 / numpy-default P90 of e2e / OSL.
    let mut r: Vec<f64> = turns
        .iter()
        .filter(|t| u(&t["usage"]["completion_tokens"]) > 0)
        .map(|t| {
            (ns(t, "complete_ns") - ns(t, "issued_ns"))
                / 1e9
                / u(&t["usage"]["completion_tokens"]) as f64
        })
        .collect();
    r.sort_by(f64::total_cmp);
    let rank = 0.9 * (r.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    let p90 = r[lo] + (r[hi] - r[lo]) * (rank - lo as f64);
    assert!(close(
        i["agentx_e2e_normalized_p90"].as_f64().unwrap(),
        1.0 / p90
    ));
    assert!(i["aa_output_speed_p25"].as_f64().unwrap() > 0.0);
}
