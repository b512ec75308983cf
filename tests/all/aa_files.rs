//! AA's (agentperf-local's) result files from a real run's records:
//! `agentload export DIR --aa` on an edge replay against the simulator
//! (a workload without AA's turn facts, so its turns are named by session),
//! checked against the run's own records; and the report's AA section.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use std::os::unix::fs::PermissionsExt;

const CONV: &str = "astropy__astropy-12907";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_aa_writes_aas_files_from_the_records() {
    let dir = scratch("aa-export");
    // Echo answers at 2 ms a token: every answer of several tokens spans reads.
    let sim = start_sim(SimConfig {
        decode_tokens_per_s: 500.0,
        prefill_tokens_per_s: 1e6,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    let config = edge_config(
        dir.path(),
        &sim.url(),
        &format!("conversations = [\"{CONV}\"]\nmax_completion_tokens = 24"),
        "ttft_trigger = \"rules\"",
    );
    let out = dir.path().join("out");
    run_ok(&config, &out, &["--mode", "perf"], dir.path()).await;
    sim.shutdown().await;
    // Not an AA replay: the run wrote no AA files of its own.
    assert!(!out.join("aa").exists());

    let export = agentload(&["export", out.to_str().unwrap(), "--aa"], dir.path()).await;
    let said = text(&export);
    assert!(export.status.success(), "{said}");
    assert!(
        said.contains("AA (agentperf-local) headline: output "),
        "{said}"
    );
    let aa = out.join("aa");
    for name in [
        "turns.jsonl",
        "tasks.json",
        "tools.json",
        "failures.json",
        "summary.json",
    ] {
        let mode = std::fs::metadata(aa.join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
    let records = read_jsonl(&out.join("turns.jsonl"));
    let turns = read_jsonl(&aa.join("turns.jsonl"));
    assert_eq!(turns.len(), records.len());
    let mut measured = 0;
    for (t, r) in turns.iter().zip(&records) {
        assert_eq!(t["kind"], "turn");
        assert_eq!(t["task_id"], CONV);
        assert_eq!(
            t["turn_id"],
            format!("{CONV}:{:04}", r["turn"].as_u64().unwrap())
        );
        let ns = |k: &str| r[k].as_u64().unwrap() as f64;
        let ms = |v: &serde_json::Value| v.as_f64().unwrap();
        // AA's timing is the records' own stamps, in ms.
        let e2e = (ns("complete_ns") - ns("issued_ns")) / 1e6;
        assert!(
            (ms(&t["timing"]["e2e_latency_ms"]) - e2e).abs() < 1e-6,
            "{t}"
        );
        let ttft = (ns("first_token_ns") - ns("issued_ns")) / 1e6;
        assert!((ms(&t["timing"]["time_to_first_token_ms"]) - ttft).abs() < 1e-6);
        // Every JSON event: role, tokens, finish, usage.
        assert_eq!(
            t["response_chunks"],
            r["token_chunks"].as_u64().unwrap() + 3,
            "{t}"
        );
        assert_eq!(
            t["tokens"]["server_output_tokens"],
            r["usage"]["completion_tokens"]
        );
        assert!(t["tokens"]["local_output_tokens"].as_u64().unwrap() > 0);
        if r["token_chunks"].as_u64().unwrap() >= 2 {
            let generation = (ns("last_token_ns") - ns("first_token_ns")) / 1e6;
            assert!((ms(&t["timing"]["generation_ms"]) - generation).abs() < 1e-6);
            measured += 1;
        } else {
            assert!(t["timing"]["generation_ms"].is_null());
        }
    }
    assert!(measured > 0);
    let summary = json(&aa.join("summary.json"));
    assert_eq!(summary["kind"], "run_summary");
    assert_eq!(summary["totals"]["turns"], records.len());
    assert!(summary["output_tokens_per_second"].as_f64().unwrap() > 0.0);
    assert!(
        summary["end_to_end_output_tokens_per_second"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(
        summary["latency_distributions_ms"]["e2e"]["count"],
        records
            .iter()
            .filter(|r| r["status"] == "completed")
            .count()
    );
    // AA's files are never replaced.
    let again = agentload(&["export", out.to_str().unwrap(), "--aa"], dir.path()).await;
    assert!(!again.status.success());
    assert!(text(&again).contains("never replaced"), "{}", text(&again));

    // The page shows AA's headline beside agentload's.
    let page = agentload(&["report", out.to_str().unwrap()], dir.path()).await;
    assert!(page.status.success(), "{}", text(&page));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("AA-AgentPerf (agentperf-local)"));
    assert!(html.contains("end-to-end tok"));
    assert!(html.contains("TTFT p95"));
}
