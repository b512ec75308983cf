//! The MLPerf datacenter agentic replay through the real binary: the
//! reference's trajectory salts (coding-replay `enable_salt`) seen by the
//! server, as prefix reuse.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::Value;

const CONV: &str = "astropy__astropy-12907";

/// Runs `CONV` twice (pass 1, then `__repeat_2`) at concurrency 1 and
/// returns, for the repeat's first turn, the cached and prompt tokens, and
/// for every later turn of either instance, its cached tokens and the
/// previous turn's prompt tokens.
async fn repeat_reuse(url: &str, salt: bool) -> ((u64, u64), Vec<(u64, u64)>) {
    let dir = scratch("dc-salt");
    let config = edge_config(
        dir.path(),
        url,
        &format!(
            "conversations = [\"{CONV}\"]\nnum_trajectories_to_issue = 2\nenable_salt = {salt}\n\
             max_completion_tokens = 16"
        ),
        "include_usage = true",
    );
    let out = dir.path().join("out");
    run_ok(&config, &out, &[], dir.path()).await;
    let records = read_jsonl(&out.join("turns.jsonl"));
    let cached = |r: &Value| {
        r["usage"]["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
    };
    let prompt = |r: &Value| r["usage"]["prompt_tokens"].as_u64().unwrap();
    let repeat = format!("{CONV}__repeat_2");
    let first_of_repeat = records
        .iter()
        .find(|r| r["session_id"] == repeat.as_str())
        .expect("the repeat ran");
    let later: Vec<(u64, u64)> = records
        .windows(2)
        .filter(|w| w[0]["session_id"] == w[1]["session_id"])
        .map(|w| (cached(&w[1]), prompt(&w[0])))
        .collect();
    assert!(later.len() > 10, "{later:?}");
    ((cached(first_of_repeat), prompt(first_of_repeat)), later)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_salts_keep_reuse_within_an_instance_and_none_across_passes() {
    let sim = start_sim(SimConfig {
        time_scale: 0.0002,
        responder: ResponderConfig::Echo,
        ..SimConfig::default()
    })
    .await;
    // Unsalted, the second pass's first prompt is what the server just saw.
    let ((plain_cached, prompt), _) = repeat_reuse(&sim.url(), false).await;
    assert!(
        plain_cached * 10 >= prompt * 9,
        "{plain_cached} of {prompt}"
    );
    // Salted, pass 2's prompt differs from its first bytes (`[salt: R]`
    // with another R): only the few tokens before the salt's digits match.
    let ((salted_cached, prompt), later) = repeat_reuse(&sim.url(), true).await;
    assert!(salted_cached * 10 < prompt, "{salted_cached} of {prompt}");
    // Within an instance every turn keeps the same salted prompt: each
    // reuses the whole prompt before it (the simulator, as llama.cpp,
    // processes the last prompt token again).
    assert!(later.iter().all(|(c, p)| c + 1 >= *p), "{later:?}");
    sim.shutdown().await;
}
