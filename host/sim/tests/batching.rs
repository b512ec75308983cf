//! The multi-slot batching model, end to end: concurrency sweeps against `slots = 8`, chunked
//! prefill competing with decode, and the shared prefix cache with eviction.
//!
//! Timing assertions compare ratios between runs with generous tolerances; the simulated step (a
//! few milliseconds) stays well above the timer resolution. A loaded machine still upsets them
//! (one run slowed more than the other), so those tests run alone, after the suite
//! (scripts/test.sh).

use std::sync::Arc;
use std::time::{Duration, Instant};

use agentload_sim::{start, ApproxTokenCounter, SimConfig, SimHandle};
use serde_json::{json, Value};

async fn sim(config: SimConfig) -> SimHandle {
    start(
        config,
        Arc::new(ApproxTokenCounter),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .expect("sim starts")
}

fn user(content: &str) -> Value {
    json!({ "role": "user", "content": content })
}

/// Eight slots; a lone sequence decodes one token per 5 ms (50 tok/s scaled by 0.25), each
/// extra generating sequence adds 10 % to the step.
fn eight_slots() -> SimConfig {
    SimConfig {
        slots: 8,
        decode_tokens_per_s: 50.0,
        decode_batch_slowdown: 0.1,
        prefill_tokens_per_s: 20_000.0,
        time_scale: 0.25,
        ..SimConfig::default()
    }
}

/// What one streamed request reports in its closing chunks.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    completion_tokens: u64,
    first_token: Duration,
    last_token: Duration,
    queued: Duration,
}

impl Outcome {
    /// Streamed tokens per second after the first one, from the server's timestamps.
    fn decode_speed(&self) -> f64 {
        // completion_tokens counts the unstreamed end-of-generation token.
        let streamed = self.completion_tokens - 1;
        (streamed - 1) as f64 / (self.last_token - self.first_token).as_secs_f64()
    }
}

async fn stream(client: &reqwest::Client, url: &str, body: Value) -> Outcome {
    let mut body = body;
    body["stream"] = json!(true);
    body["stream_options"] = json!({"include_usage": true});
    let text = client
        .post(format!("{url}/v1/chat/completions"))
        .json(&body)
        .send()
        .await
        .expect("request sent")
        .text()
        .await
        .expect("body read");
    let usage_chunk: Value = text
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("data: "))
        .filter(|e| e.starts_with('{'))
        .map(|e| serde_json::from_str::<Value>(e).unwrap())
        .find(|c| c.get("usage").is_some())
        .expect("a usage chunk");
    let stamps = &usage_chunk["agentload_sim"];
    let ns = |key: &str| Duration::from_nanos(stamps[key].as_u64().unwrap());
    Outcome {
        completion_tokens: usage_chunk["usage"]["completion_tokens"].as_u64().unwrap(),
        first_token: ns("first_token_ns"),
        last_token: ns("last_token_ns"),
        queued: ns("queued_ns"),
    }
}

/// One level of the sweep: `concurrency` identical streams sent together to a fresh server.
struct Level {
    concurrency: usize,
    /// Generated tokens per second over the whole level, all requests together.
    aggregate: f64,
    /// Median per-request decode speed.
    per_request: f64,
    outcomes: Vec<Outcome>,
}

async fn level(concurrency: usize, text: &'static str) -> Level {
    let sim = sim(eight_slots()).await;
    let url = sim.url();
    let client = reqwest::Client::new();
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(
                async move { stream(&client, &url, json!({"messages": [user(text)]})).await },
            )
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    sim.shutdown().await;
    let tokens: u64 = outcomes.iter().map(|o| o.completion_tokens).sum();
    let mut speeds: Vec<f64> = outcomes.iter().map(Outcome::decode_speed).collect();
    speeds.sort_by(f64::total_cmp);
    Level {
        concurrency,
        aggregate: tokens as f64 / elapsed,
        per_request: speeds[speeds.len() / 2],
        outcomes,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing: run alone, after the suite (scripts/test.sh)"]
async fn concurrency_sweep_shows_batching_and_queueing() {
    // About 80 tokens to echo back: 0.4 s of decode alone.
    let text = "Batching lets one server decode many sequences at once; each step serves every \
                active sequence, so total throughput grows with concurrency while each agent \
                sees its own tokens arrive a little more slowly than it would alone on the box.";
    let mut levels = Vec::new();
    for c in [1, 2, 4, 8, 16] {
        levels.push(level(c, text).await);
    }
    eprintln!("concurrency  aggregate tok/s  per-request tok/s  max queued");
    for l in &levels {
        let queued = l.outcomes.iter().map(|o| o.queued).max().unwrap();
        eprintln!(
            "{:>11}  {:>15.1}  {:>17.1}  {:>10.1?}",
            l.concurrency, l.aggregate, l.per_request, queued
        );
    }
    let [l1, l2, l4, l8, l16] = &levels[..] else {
        unreachable!()
    };
    // Model: step(n) = (1 + 0.1 (n - 1)) * 5 ms, so aggregate ∝ n / (1 + 0.1 (n - 1)):
    // 1, 1.82, 3.08, 4.71 for n = 1, 2, 4, 8, and per-request speed ∝ 1 / (1 + 0.1 (n - 1)).
    assert!(l2.aggregate > 1.4 * l1.aggregate, "aggregate 1 -> 2");
    assert!(l4.aggregate > 1.3 * l2.aggregate, "aggregate 2 -> 4");
    assert!(l8.aggregate > 1.2 * l4.aggregate, "aggregate 4 -> 8");
    // Beyond the slots throughput saturates: 16 runs as two waves of 8.
    assert!(
        l16.aggregate < 1.2 * l8.aggregate && l16.aggregate > 0.7 * l8.aggregate,
        "aggregate 8 -> 16"
    );
    assert!(l2.per_request < 0.97 * l1.per_request, "per request 1 -> 2");
    assert!(l4.per_request < 0.95 * l2.per_request, "per request 2 -> 4");
    assert!(l8.per_request < 0.9 * l4.per_request, "per request 4 -> 8");
    let slowdown = l1.per_request / l8.per_request;
    assert!(
        (1.7 * 0.85..1.7 * 1.15).contains(&slowdown),
        "a batch of 8 decodes 1.7 times slower per sequence: {slowdown}"
    );
    // Up to the slot count nobody waits for a slot; beyond it half the requests wait for a
    // whole generation (about 80 steps of 8.5 ms).
    for l in [l1, l2, l4, l8] {
        for o in &l.outcomes {
            assert!(o.queued < Duration::from_millis(20), "{o:?}");
        }
    }
    let waited = l16
        .outcomes
        .iter()
        .filter(|o| o.queued > Duration::from_millis(300))
        .count();
    assert_eq!(waited, 8, "{:?}", l16.outcomes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "timing: run alone, after the suite (scripts/test.sh)"]
async fn prefill_chunks_stretch_the_others_decode_steps() {
    // One generating sequence alone vs the same with a long prompt arriving meanwhile: the
    // prompt's chunks ride in the same iterations and make them longer.
    let config = SimConfig {
        slots: 2,
        decode_tokens_per_s: 50.0,
        prefill_tokens_per_s: 2_000.0,
        prefill_chunk_tokens: 64,
        time_scale: 0.25,
        ..SimConfig::default()
    };
    let text = "short answer of some twenty tokens to echo back while a long prompt arrives";
    let client = reqwest::Client::new();

    let sim_alone = sim(config.clone()).await;
    let alone = stream(&client, &sim_alone.url(), json!({"messages": [user(text)]})).await;
    sim_alone.shutdown().await;

    let sim = sim(config).await;
    let url = sim.url();
    let first = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move { stream(&client, &url, json!({"messages": [user(text)]})).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    // About 1,000 prompt tokens: 16 chunks of 8 ms each (64 tokens at 2,000 tok/s, scaled).
    let long = "word ".repeat(1000);
    let second = stream(
        &client,
        &url,
        json!({"messages": [user(&long)], "max_tokens": 1}),
    )
    .await;
    let contended = first.await.unwrap();
    sim.shutdown().await;
    assert_eq!(second.completion_tokens, 1);
    let ratio = alone.decode_speed() / contended.decode_speed();
    // Alone: ~19 steps of 5 ms. Contended: ~16 of them also carry 8 ms of prefill.
    assert!(ratio > 1.5, "decode slowed by the prefill: {ratio}");
}

/// A config for cache tests: fast, eight slots.
fn fast_slots(cache_tokens: u64) -> SimConfig {
    SimConfig {
        slots: 8,
        cache_tokens,
        prefill_tokens_per_s: 100_000.0,
        decode_tokens_per_s: 1_000.0,
        ..SimConfig::default()
    }
}

async fn complete(sim: &SimHandle, body: Value) -> Value {
    reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", sim.url()))
        .json(&body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn cached(body: &Value) -> u64 {
    let cached = body["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert_eq!(body["timings"]["cache_n"], cached);
    assert_eq!(
        body["timings"]["prompt_n"].as_u64().unwrap(),
        prompt_tokens(body) - cached
    );
    cached
}

fn prompt_tokens(body: &Value) -> u64 {
    body["usage"]["prompt_tokens"].as_u64().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_cache_serves_a_prefix_computed_on_another_slot() {
    let system = json!({"role": "system", "content": "You are a coding agent. ".repeat(30)});
    for cache_tokens in [0, 100_000] {
        let sim = sim(SimConfig {
            // 20 ms per token: the first request is still generating when the second comes.
            decode_tokens_per_s: 50.0,
            ..fast_slots(cache_tokens)
        })
        .await;
        let mut a = reqwest::Client::new()
            .post(format!("{}/v1/chat/completions", sim.url()))
            .json(&json!({
                "messages": [system.clone(), user(&"fix the parser ".repeat(10))],
                "stream": true,
            }))
            .send()
            .await
            .unwrap();
        // The first token is out: A's prompt is processed and A holds its slot.
        assert!(a.chunk().await.unwrap().is_some());
        let b = complete(
            &sim,
            json!({"messages": [system.clone(), user("write the tests")], "max_tokens": 2}),
        )
        .await;
        let system_tokens = 30 * 5;
        if cache_tokens == 0 {
            // Per-slot memory: B's slot has never seen the system prompt.
            assert_eq!(cached(&b), 0);
        } else {
            assert!(
                cached(&b) >= system_tokens,
                "the system prompt is reused: {} of {}",
                cached(&b),
                prompt_tokens(&b)
            );
        }
        drop(a);
        sim.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_cache_reuses_prompt_and_answer_and_evicts_lru() {
    let sim_big = sim(fast_slots(100_000)).await;
    let first = vec![user(
        "Please repeat: the quick brown fox jumps over the lazy dog",
    )];
    let body = complete(&sim_big, json!({ "messages": first })).await;
    let answer = body["choices"][0]["message"]["content"].clone();
    let n_first = prompt_tokens(&body);
    let second = json!({"messages": [first[0].clone(), {"role": "assistant", "content": answer}, user("again")]});
    let body = complete(&sim_big, second).await;
    assert!(
        cached(&body) > n_first,
        "prompt and answer are reused: {} vs {n_first}",
        cached(&body)
    );
    sim_big.shutdown().await;

    // Three unrelated ~100-token prompts (one-token answers) in a cache of 150 tokens.
    let prompt = |topic: &str| json!({"messages": [user(&format!("{topic}: {}", "lorem ipsum dolor sit amet ".repeat(14)))], "max_tokens": 1});
    let sim = sim(fast_slots(150)).await;
    let x = complete(&sim, prompt("xylophones")).await;
    let n = prompt_tokens(&x);
    assert!((80..=150).contains(&n), "{n}");
    assert_eq!(cached(&x), 0);
    // Still cached: everything but the one token always evaluated.
    assert_eq!(cached(&complete(&sim, prompt("xylophones")).await), n - 1);
    complete(&sim, prompt("yachts")).await;
    complete(&sim, prompt("zebras")).await;
    // The most recent is whole; the least recently used was evicted (only the shared role
    // marker may be left of it).
    let z_again = complete(&sim, prompt("zebras")).await;
    assert_eq!(cached(&z_again), prompt_tokens(&z_again) - 1);
    let x_again = cached(&complete(&sim, prompt("xylophones")).await);
    assert!(
        x_again < n / 2,
        "xylophones evicted: {x_again} of {n} cached"
    );
    sim.shutdown().await;
}

/// 1,000 concurrent streams on 1,000 slots (`cargo test --release -- --ignored thousand`): the
/// scheduler keeps to the model's step times. Prints the measured speeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "load check, run in release mode"]
async fn thousand_concurrent_streams() {
    let n = 1000;
    let config = SimConfig {
        slots: n as u32,
        decode_tokens_per_s: 50.0,
        decode_batch_slowdown: 0.01,
        prefill_tokens_per_s: 20_000.0,
        prefill_chunk_tokens: 2048,
        time_scale: 0.25,
        ..SimConfig::default()
    };
    // 1,000 generating: a step is (1 + 0.01 * 999) * 5 ms = 54.95 ms.
    let expected_speed = 1.0 / 0.054_95;
    let sim = sim(config).await;
    let url = sim.url();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(n)
        .build()
        .unwrap();
    // About 170 tokens: 9 s in one full batch, so the ramp-up of 1,000 connections matters little.
    let text =
        "thirty tokens or so of text to echo back, all streams in one batch together. ".repeat(6);
    let text: &'static str = Box::leak(text.into_boxed_str());
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let (client, url) = (client.clone(), url.clone());
            tokio::spawn(
                async move { stream(&client, &url, json!({"messages": [user(text)]})).await },
            )
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    let elapsed = started.elapsed();
    sim.shutdown().await;
    let mut speeds: Vec<f64> = outcomes.iter().map(Outcome::decode_speed).collect();
    speeds.sort_by(f64::total_cmp);
    let tokens: u64 = outcomes.iter().map(|o| o.completion_tokens).sum();
    let queued = outcomes.iter().map(|o| o.queued).max().unwrap();
    eprintln!(
        "{n} streams: {elapsed:?}, {tokens} tokens, aggregate {:.0} tok/s, per-request p10 {:.2} \
         p50 {:.2} p90 {:.2} tok/s (model {expected_speed:.2}), max queued {queued:?}",
        tokens as f64 / elapsed.as_secs_f64(),
        speeds[n / 10],
        speeds[n / 2],
        speeds[n * 9 / 10],
    );
    assert!(queued < Duration::from_millis(50));
    // Slowest requests ran in the full batch the whole time; none is slower than the model.
    let p10 = speeds[n / 10];
    assert!(
        p10 > 0.9 * expected_speed && p10 < 1.15 * expected_speed,
        "p10 speed {p10}"
    );
}
