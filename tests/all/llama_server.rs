//! agentload end to end against a real llama.cpp `llama-server` (CPU,
//! SmolLM2-135M Q4_1), built from registry packages by
//! `scripts/llama-server.sh`.
//!
//! Each test starts its own server through the script (one at a time: the
//! tests hold a lock so that timings are not disturbed by a neighbour), or
//! uses the server at `AGENTLOAD_LLAMA_URL` when that is set. Without the
//! cached binary and model the tests fail and say how to get them, unless
//! `AGENTLOAD_SKIP_LLAMA=1`.
//!
//! The assertions are about structure and semantics (streaming, usage and
//! timings recorded, failures and aborts accounted), never about what the
//! 135M model answers, but in the closed-loop tests, which need replies
//! that are tool calls (greedy, under a pinned template whose grammar for
//! `tool_choice: "required"` offers the call first).

use crate::common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// One llama.cpp server at a time in this test binary.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Completion tokens per turn: enough to see a stream, short enough for CI.
const MAX_TOKENS: u32 = 16;

fn root() -> PathBuf {
    crate::common::manifest_dir().join("../..")
}

fn script() -> PathBuf {
    root().join("scripts/llama-server.sh")
}

fn skip() -> bool {
    if std::env::var("AGENTLOAD_SKIP_LLAMA").as_deref() == Ok("1") {
        eprintln!("AGENTLOAD_SKIP_LLAMA=1: skipping the llama-server test");
        true
    } else {
        false
    }
}

/// A server for one test: ours (stopped on drop) or the one in `AGENTLOAD_LLAMA_URL`.
struct Server {
    url: String,
    /// The port when this test started the server.
    port: Option<u16>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(port) = self.port {
            let _ = std::process::Command::new("bash")
                .arg(script())
                .args(["stop", &port.to_string()])
                .status();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts llama-server with `--ctx-size ctx` (or reuses `AGENTLOAD_LLAMA_URL`).
async fn server(ctx: u32) -> Server {
    server_with(ctx, &[]).await
}

/// Starts llama-server with `--ctx-size ctx` and `args` (or reuses `AGENTLOAD_LLAMA_URL`).
async fn server_with(ctx: u32, args: &[&str]) -> Server {
    if let Ok(url) = std::env::var("AGENTLOAD_LLAMA_URL") {
        return Server {
            url: url.trim_end_matches('/').to_string(),
            port: None,
        };
    }
    own_server(ctx, args).await
}

/// Starts llama-server with `--ctx-size ctx` and `args`, whatever
/// `AGENTLOAD_LLAMA_URL` says.
async fn own_server(ctx: u32, args: &[&str]) -> Server {
    let check = tokio::process::Command::new("bash")
        .arg(script())
        .arg("check")
        .output()
        .await
        .expect("bash runs scripts/llama-server.sh");
    assert!(
        check.status.success(),
        "the llama-server binary or its model is not cached:\n{}\n\
         run `scripts/llama-server.sh build && scripts/llama-server.sh model` \
         (the first build takes about 4 minutes on 2 idle cores), or point \
         AGENTLOAD_LLAMA_URL at a running server, or set AGENTLOAD_SKIP_LLAMA=1 to skip",
        text(&check)
    );
    let port = free_port();
    let started = std::time::Instant::now();
    let out = tokio::process::Command::new("bash")
        .arg(script())
        .args(["start", &port.to_string(), "--ctx-size", &ctx.to_string()])
        .args(args)
        .env("LLAMA_NO_BUILD", "1")
        .output()
        .await
        .expect("bash runs scripts/llama-server.sh");
    assert!(
        out.status.success(),
        "scripts/llama-server.sh start failed:\n{}",
        text(&out)
    );
    let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let scheme = if args.contains(&"--ssl-cert-file") {
        "https"
    } else {
        "http"
    };
    assert_eq!(url, format!("{scheme}://127.0.0.1:{port}"));
    eprintln!(
        "llama-server (ctx {ctx}) healthy at {url} after {:.2} s",
        started.elapsed().as_secs_f64()
    );
    Server {
        url,
        port: Some(port),
    }
}

/// The server's context size per slot, from `/props`.
async fn n_ctx(url: &str) -> u64 {
    let props: Value = reqwest::get(format!("{url}/props"))
        .await
        .expect("GET /props")
        .json()
        .await
        .expect("/props is JSON");
    props["default_generation_settings"]["n_ctx"]
        .as_u64()
        .unwrap_or_else(|| panic!("no n_ctx in /props: {props}"))
}

/// Writes a run config over `data` (holding `file`) and returns its path.
fn config(dir: &Path, url: &str, data: &Path, file: &str, settings: &str) -> PathBuf {
    let text = format!(
        r#"name = "llama-server"
data_dir = "{data}"
[model]
name = "SmolLM2-135M-Instruct.Q4_1"
tokenizer = "none"
[endpoint]
url = "{url}"
stream = true
include_usage = true
[load]
concurrency = 1
turn_timeout_s = 120.0
[performance]
workload = "coding-replay"
scorer = "shell-iou"
[performance.data]
trajectories = "{file}"
[performance.settings]
inject_tool_delay = false
temperature = 0.0
seed = 42
max_completion_tokens = {MAX_TOKENS}
{settings}
"#,
        data = data.display()
    );
    let path = dir.join("run.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A run config over the smoke fixture's two trajectories (copied into
/// `dir/data`), with more workload settings.
fn smoke_config(dir: &Path, url: &str, settings: &str) -> PathBuf {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(
        root().join("tests/fixtures/llama/smoke.jsonl"),
        data.join("smoke.jsonl"),
    )
    .unwrap();
    let settings = format!("num_trajectories_to_issue = 2\n{settings}");
    config(dir, url, &data, "smoke.jsonl", &settings)
}

fn records(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("turns.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ns(record: &Value, key: &str) -> u64 {
    record[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing: {record}"))
}

fn num(value: &Value, key: &str) -> f64 {
    value[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} missing: {value}"))
}

/// agentload's client-side view of a turn beside llama.cpp's own timings.
struct Fidelity {
    /// first token-bearing chunk - issued
    ttft_ms: f64,
    prompt_ms: f64,
    /// last - first token-bearing chunk
    stream_ms: f64,
    predicted_ms: f64,
    chunks: u64,
    completion_tokens: u64,
    /// (chunks - 1) / stream time
    decode_tps: Option<f64>,
    predicted_per_second: f64,
}

/// Checks one completed, streamed turn against llama.cpp's own accounting.
fn check_completed(r: &Value) -> Fidelity {
    assert_eq!(r["status"], "completed", "{r}");
    let issued = ns(r, "issued_ns");
    let first_byte = ns(r, "first_byte_ns");
    let first = ns(r, "first_token_ns");
    let last = ns(r, "last_token_ns");
    let complete = ns(r, "complete_ns");
    assert!(
        issued <= first_byte && first_byte <= first && first <= last && last <= complete,
        "timestamps out of order: {r}"
    );
    let usage = &r["usage"];
    let timings = &r["timings"];
    assert!(usage.is_object(), "server usage recorded: {r}");
    assert!(timings.is_object(), "llama.cpp timings recorded: {r}");
    let prompt_tokens = usage["prompt_tokens"].as_u64().unwrap();
    let completion_tokens = usage["completion_tokens"].as_u64().unwrap();
    assert!(prompt_tokens > 0, "{usage}");
    assert!(
        (1..=u64::from(MAX_TOKENS)).contains(&completion_tokens),
        "max_completion_tokens = {MAX_TOKENS} is honoured: {usage}"
    );
    // llama.cpp's timings describe the same request as its usage.
    assert_eq!(
        timings["predicted_n"].as_u64(),
        Some(completion_tokens),
        "{timings} vs {usage}"
    );
    let prompt_n = timings["prompt_n"].as_u64().unwrap();
    let cache_n = timings["cache_n"].as_u64().unwrap_or(0);
    assert!(prompt_n >= 1, "{timings}");
    assert_eq!(prompt_n + cache_n, prompt_tokens, "{timings} vs {usage}");
    // Streamed: one token-bearing chunk per generated token (llama.cpp sends
    // each token as it is sampled), so several chunks for a multi-token answer.
    let chunks = r["token_chunks"].as_u64().unwrap();
    assert!(chunks >= 1 && chunks <= completion_tokens, "{r}");
    if completion_tokens >= 4 {
        assert!(chunks >= 2, "the answer arrived as a stream: {r}");
    }
    let completion = &r["completion"];
    let reason = completion["finish_reason"].as_str().unwrap();
    assert!(["stop", "length", "tool_calls"].contains(&reason), "{r}");
    if reason == "length" {
        assert_eq!(completion_tokens, u64::from(MAX_TOKENS), "{r}");
    }
    Fidelity {
        ttft_ms: (first - issued) as f64 / 1e6,
        prompt_ms: num(timings, "prompt_ms"),
        stream_ms: (last - first) as f64 / 1e6,
        predicted_ms: num(timings, "predicted_ms"),
        chunks,
        completion_tokens,
        decode_tps: (chunks >= 2).then(|| (chunks - 1) as f64 / ((last - first) as f64 / 1e9)),
        predicted_per_second: num(timings, "predicted_per_second"),
    }
}

/// (a) A shortened edge performance run: two short trajectories, every turn
/// streamed and accounted, llama.cpp's usage and timings kept per turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_edge_run_streams_and_records_llama_timings() {
    if skip() {
        return;
    }
    let _serial = SERIAL.lock().await;
    // With `--metrics`: the run scrapes llama.cpp's counters (telemetry).
    let server = server_with(2048, &["--metrics"]).await;
    let ctx = n_ctx(&server.url).await;
    assert!(
        ctx >= 1024,
        "the fixture needs ~400 tokens of context, server has {ctx}"
    );

    let dir = scratch("llama-edge");
    let config = smoke_config(dir.path(), &server.url, "");
    // A server of our own serves nothing but this run: its counters must
    // equal the turns' usage.
    let scraped = server.port.is_some();
    if scraped {
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!(
            "[telemetry]\ninterval_s = 0.2\n[[telemetry.scrape]]\nurl = \"{}/metrics\"\nname = \"llama\"\n",
            server.url
        ));
        std::fs::write(&config, text).unwrap();
    }
    let out = dir.path().join("out");
    let started = std::time::Instant::now();
    let run = agentload(
        &[
            "run",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--mode",
            "perf",
            "--require-valid",
        ],
        dir.path(),
    )
    .await;
    assert!(run.status.success(), "{}", text(&run));
    eprintln!(
        "agentload run took {:.2} s",
        started.elapsed().as_secs_f64()
    );

    // Two trajectories of two assistant turns each.
    let records = records(&out);
    assert_eq!(records.len(), 4, "{records:?}");
    let sessions: std::collections::BTreeSet<&str> = records
        .iter()
        .map(|r| r["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(sessions.len(), 2, "{sessions:?}");

    let mut fidelity = Vec::new();
    for r in &records {
        fidelity.push(check_completed(r));
    }
    // Later turns of a conversation reuse the cached prefix (the server keeps
    // the conversation's KV cache between turns).
    assert!(
        records
            .iter()
            .any(|r| r["timings"]["cache_n"].as_u64().unwrap_or(0) > 0),
        "no turn reused the prompt cache"
    );

    let summary = json(&out.join("performance/result_summary.json"));
    assert_eq!(summary["n_samples_issued"], 4);
    assert_eq!(summary["n_samples_completed"], summary["n_samples_issued"]);
    assert_eq!(summary["n_samples_failed"], 0);
    assert_eq!(summary["agentload"]["token_count_source"], "server");
    // The harness's timings against llama.cpp's own: every turn compared,
    // and TTFT covers the server's prompt processing.
    let check = &summary["agentload"]["server_timings_check"];
    assert_eq!(check["ttft_minus_prompt_ms"]["n"], 4, "{check}");
    assert!(
        check["ttft_minus_prompt_ms"]["p50"].as_f64().unwrap() >= 0.0,
        "{check}"
    );
    for key in [
        "ttft",
        "tpot",
        "latency",
        "output_sequence_lengths",
        "input_sequence_lengths",
    ] {
        assert!(
            summary[key]["percentiles"]["99.0"].is_f64(),
            "{key}: {}",
            summary[key]
        );
    }
    let osl_sum: u64 = records
        .iter()
        .map(|r| r["usage"]["completion_tokens"].as_u64().unwrap())
        .sum();
    assert!(osl_sum > 0);
    if scraped {
        // llama.cpp's own counters over the phase (prompt: processed plus
        // reused from the cache) equal the sum of the turns' usage.
        let isl_sum: u64 = records
            .iter()
            .map(|r| r["usage"]["prompt_tokens"].as_u64().unwrap())
            .sum();
        let telemetry = &summary["agentload"]["telemetry"];
        let source = &telemetry["sources"][0];
        assert_eq!(source["families"], json!(["llama.cpp"]), "{telemetry}");
        assert_eq!(source["failed"], 0, "{telemetry}");
        let check = &telemetry["usage_check"];
        eprintln!("llama.cpp counters against usage: {check}");
        assert_eq!(check["turns"], 4, "{check}");
        assert_eq!(
            check["usage_prompt_tokens"].as_u64(),
            Some(isl_sum),
            "{check}"
        );
        assert_eq!(
            check["server_prompt_tokens"].as_f64(),
            Some(isl_sum as f64),
            "{check}"
        );
        assert_eq!(
            check["server_completion_tokens"].as_f64(),
            Some(osl_sum as f64),
            "{check}"
        );
        let cached = &source["counters"]["prompt_tokens_cached_total"];
        assert!(cached["increase"].as_f64().unwrap() > 0.0, "{source}");
        assert!(out.join("telemetry.jsonl").exists());
    }
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("VALID") && !report.contains("INVALID"),
        "{report}"
    );
    let scores = json(&out.join("scores.json"));
    assert_eq!(scores["turns"]["missing"], 0, "{}", scores["turns"]);

    // Fidelity: agentload's client-side view against llama.cpp's own timings.
    // (When the model starts something llama.cpp's tool-call parser might
    // complete, e.g. `<tool_response>`, the server holds tokens back and sends
    // them merged: chunks < tokens, and TTFT includes the held-back tokens.)
    eprintln!(
        "item          chunks/tok  TTFT ms  prompt_ms   diff | stream ms  predicted_ms | tok/s  predicted_per_second"
    );
    for (r, f) in records.iter().zip(&fidelity) {
        eprintln!(
            "{:<14} {:>4}/{:<4} {:>8.1} {:>10.1} {:>6.1} | {:>9.1} {:>13.1} | {:>5} {:>21.1}",
            r["item_id"].as_str().unwrap(),
            f.chunks,
            f.completion_tokens,
            f.ttft_ms,
            f.prompt_ms,
            f.ttft_ms - f.prompt_ms,
            f.stream_ms,
            f.predicted_ms,
            f.decode_tps.map_or("-".into(), |d| format!("{d:.1}")),
            f.predicted_per_second,
        );
        // TTFT covers prefill plus the transport, so it is never shorter than
        // the server's prefill time.
        assert!(
            f.ttft_ms + 1.0 >= f.prompt_ms,
            "TTFT {} ms < prompt_ms {}",
            f.ttft_ms,
            f.prompt_ms
        );
    }
}

/// (b) The same smoke replay against llama-server serving HTTPS (`--ssl-key-file`,
/// `--ssl-cert-file`, a CA and leaf made by the test): every turn completes over TLS, each
/// connection's session is recorded, and llama.cpp's `/metrics` is scraped over TLS too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_smoke_replay_and_its_telemetry_over_https() {
    if skip() {
        return;
    }
    if std::env::var_os("AGENTLOAD_LLAMA_URL").is_some() {
        eprintln!("AGENTLOAD_LLAMA_URL is set: this test starts its own TLS server; skipped");
        return;
    }
    let _serial = SERIAL.lock().await;
    let dir = scratch("llama-https");
    let pki = agentload_sim::pki::Pki::new(&dir.path().join("pki")).unwrap();
    let leaf = pki.server().unwrap();
    let (cert, key) = (leaf.cert.to_str().unwrap(), leaf.key.to_str().unwrap());
    let server = server_with(
        2048,
        &["--metrics", "--ssl-key-file", key, "--ssl-cert-file", cert],
    )
    .await;
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let config = smoke_config(dir.path(), &server.url, "");
    let mut toml = std::fs::read_to_string(&config).unwrap().replace(
        "[load]\n",
        &format!(
            "[endpoint.tls]\nca_file = \"{}\"\n[load]\n",
            pki.ca_file().display()
        ),
    );
    toml.push_str(
        "[telemetry]\ninterval_s = 0.2\n[[telemetry.scrape]]\nurl = \"/metrics\"\nname = \"llama\"\n",
    );
    std::fs::write(&config, toml).unwrap();
    let out = dir.path().join("out");
    let run = agentload(
        &[
            "run",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--mode",
            "perf",
            "--require-valid",
        ],
        dir.path(),
    )
    .await;
    assert!(run.status.success(), "{}", text(&run));
    let records = records(&out);
    assert_eq!(records.len(), 4, "{records:?}");
    // The first turn takes the connection the set-up opened (its handshake in no turn).
    // llama-server closes a connection after each streamed answer (over plain HTTP too), so
    // a later turn opens its own and says so, with its TLS session.
    assert!(records[0].get("opened_connection").is_none(), "{records:?}");
    for r in &records {
        check_completed(r);
        if let Some(opened) = r.get("opened_connection") {
            let tls = &opened["tls"];
            assert_eq!(tls["version"], "TLSv1.3", "{r}");
            assert!(num(tls, "handshake_us") > 0.0, "{r}");
        }
    }
    let summary = json(&out.join("performance/result_summary.json"));
    let extra = &summary["agentload"];
    assert_eq!(
        extra["transport"]["scheme"], "https",
        "{}",
        extra["transport"]
    );
    assert_eq!(extra["transport"]["tls"]["insecure"], false);
    let tls = &extra["harness"]["connection_setup"]["tls"];
    assert!(
        tls["versions"].as_object().is_some_and(|v| !v.is_empty()),
        "{tls}"
    );
    eprintln!("llama-server over TLS: {tls}");
    let telemetry = &extra["telemetry"];
    let source = &telemetry["sources"][0];
    assert_eq!(source["families"], json!(["llama.cpp"]), "{telemetry}");
    assert_eq!(source["failed"], 0, "scraped over TLS: {telemetry}");
    assert_eq!(telemetry["usage_check"]["turns"], 4, "{telemetry}");
}

/// A tool-calling assistant turn (`bash` with `command`).
fn bash_call(conversation: &str, turn: u32, command: &str) -> Value {
    json!({"conversation_id": conversation, "turn": turn, "role": "assistant",
           "tool_calls": [{"id": format!("functions.bash:{turn}"), "type": "function",
                           "function": {"name": "bash",
                                        "arguments": json!({"command": command}).to_string()}}]})
}

fn tool_result(conversation: &str, turn: u32, call_turn: u32, content: &str) -> Value {
    json!({"conversation_id": conversation, "turn": turn, "role": "tool",
           "tool_results": [{"tool_call_id": format!("functions.bash:{call_turn}"), "content": content}]})
}

/// (b) A turn over the served context fails with llama.cpp's error, the rest
/// of its conversation is aborted (missing), other conversations go on, and
/// the run is INVALID.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_overflow_fails_the_turn_aborts_the_rest_and_invalidates_the_run() {
    if skip() {
        return;
    }
    let _serial = SERIAL.lock().await;
    let server = server(512).await;
    let ctx = n_ctx(&server.url).await;

    let tools = json!([{"type": "function", "function": {"name": "bash",
        "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                       "required": ["command"]}}}]);
    // A tool result of ~2 tokens per word, well over the context.
    let huge: String = (0..ctx).map(|i| format!("line{i} ")).collect::<String>();
    let o = "overflow";
    let rows = [
        json!({"_type": "dataset_metadata", "version": 1}),
        json!({"conversation_id": o, "turn": 1, "role": "user", "content": "Show the README.",
               "system": "You are a coding agent.", "tools": tools}),
        bash_call(o, 2, "cat README.md"),
        tool_result(o, 3, 2, &huge),
        bash_call(o, 4, "wc -l README.md"),
        tool_result(o, 5, 4, "12 README.md"),
        bash_call(o, 6, "ls"),
        tool_result(o, 7, 6, "README.md"),
        json!({"conversation_id": o, "turn": 8, "role": "assistant", "content": "done"}),
        json!({"conversation_id": "after", "turn": 1, "role": "user", "content": "List the files.",
               "system": "You are a coding agent.", "tools": tools}),
        bash_call("after", 2, "ls"),
    ];
    let dir = scratch("llama-overflow");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let lines: Vec<String> = rows.iter().map(Value::to_string).collect();
    std::fs::write(data.join("overflow.jsonl"), lines.join("\n") + "\n").unwrap();
    let config = config(dir.path(), &server.url, &data, "overflow.jsonl", "");
    let out = dir.path().join("out");
    let run = agentload(
        &[
            "run",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--mode",
            "perf",
            "--require-valid",
        ],
        dir.path(),
    )
    .await;
    assert!(
        !run.status.success(),
        "an invalid run fails --require-valid: {}",
        text(&run)
    );
    assert!(out.join("turns.jsonl").is_file(), "{}", text(&run));

    let records = records(&out);
    // A record's item is `<conversation>/<assistant turn>`.
    let of = |conv: &str, turn: u32| {
        let item = format!("{conv}/{turn}");
        records
            .iter()
            .find(|r| r["item_id"] == item.as_str())
            .unwrap_or_else(|| panic!("no record for {item}: {records:?}"))
    };
    // The first turn fits and is answered.
    check_completed(of(o, 2));
    // The turn after the huge tool result is refused by llama.cpp.
    let failed = of(o, 4);
    assert_eq!(failed["status"], "failed", "{failed}");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.contains("HTTP 400") && error.contains("exceeds the available context size"),
        "llama.cpp's own message is recorded: {error}"
    );
    assert!(
        failed["usage"].is_null() && failed["completion"].is_null(),
        "{failed}"
    );
    // The rest of that conversation is never sent.
    for turn in [6, 8] {
        let r = of(o, turn);
        assert_eq!(r["status"], "aborted", "{r}");
        assert!(r["issued_ns"].is_null(), "{r}");
    }
    // Another conversation is not affected.
    check_completed(of("after", 2));

    let summary = json(&out.join("performance/result_summary.json"));
    // The reference's counters: the two skipped turns are issued, failed
    // and completed too (synthetic events), and so is the failed one.
    assert_eq!(summary["n_samples_issued"], 5, "{summary}");
    assert_eq!(summary["n_samples_completed"], 5);
    assert_eq!(summary["n_samples_failed"], 3);
    assert_eq!(summary["agentload"]["n_samples_succeeded"], 2);
    assert_eq!(summary["agentload"]["n_samples_aborted"], 2);
    let scores = json(&out.join("scores.json"));
    let missing = scores["turns"]["missing"].as_u64().unwrap();
    assert!(
        missing >= 2,
        "the failed and aborted calls are missing: {}",
        scores["turns"]
    );
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(report.contains("INVALID"), "{report}");
}

/// Live-reply replay against the real server: the run completes, every
/// sent turn carries its review and the funnel is written. What the 135M
/// model answers is printed, never asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_run_completes_with_its_divergence_funnel() {
    if skip() {
        return;
    }
    let _serial = SERIAL.lock().await;
    let server = server(2048).await;
    let dir = scratch("llama-live");
    let config = smoke_config(dir.path(), &server.url, "history = \"live\"");
    // Counted locally where the vocabulary is installed: the recorded twin's lengths too.
    let counted = vocabulary();
    if counted {
        let text = std::fs::read_to_string(&config).unwrap();
        let text = text.replace("tokenizer = \"none\"", "tokenizer = \"qwen3.6\"");
        std::fs::write(&config, text).unwrap();
    }
    let out = dir.path().join("out");
    let run = agentload(
        &[
            "run",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--mode",
            "perf",
        ],
        dir.path(),
    )
    .await;
    assert!(run.status.success(), "{}", text(&run));
    let records = records(&out);
    assert_eq!(records.len(), 4, "{records:?}");
    for r in &records {
        assert!(r["live"]["divergence"].is_string(), "no review: {r}");
        eprintln!(
            "{} turn {}: {} -> {} ({}); answered {:?} calls {}",
            r["session_id"],
            r["turn"],
            r["live"]["divergence"],
            r["live"]["action"],
            r["live"]["detail"],
            r["completion"]["content"].as_str().unwrap_or(""),
            r["completion"]["tool_calls"]
        );
    }
    let summary = json(&out.join("performance/result_summary.json"));
    let live = &summary["agentload"]["live"];
    assert_eq!(live["turns_reviewed"], 4, "{live:#}");
    assert_eq!(live["official"], false);
    let funnel: u64 = live["funnel"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["turns"].as_u64().unwrap())
        .sum();
    assert_eq!(funnel, 4, "{live:#}");
    let report = std::fs::read_to_string(out.join("report.txt")).unwrap();
    assert!(
        report.contains("NON-OFFICIAL: live-reply replay"),
        "{report}"
    );
    if counted {
        // Every completed turn is compared with the recording; a session's first request is
        // the recording's own, whatever the model answers.
        let completed = records
            .iter()
            .filter(|r| r["status"] == "completed")
            .count();
        assert_eq!(live["isl_drift"]["turns"], completed, "{live:#}");
        let tokens = read_jsonl(&out.join("turns.tokens.jsonl"));
        let first_turn = |session: &Value| {
            records
                .iter()
                .filter(|r| &r["session_id"] == session)
                .filter_map(|r| r["turn"].as_u64())
                .min()
        };
        for t in &tokens {
            let record = &records[t["line"].as_u64().unwrap() as usize - 1];
            if record["turn"].as_u64() == first_turn(&record["session_id"]) {
                assert_eq!(t["isl"], t["recorded"]["isl"], "{t} {record}");
            }
        }
        eprintln!("ISL drift {}", live["isl_drift"]);
        eprintln!("OSL against the recording {}", live["osl_vs_expected"]);
    }
    eprintln!("{}", live);
}

/// AA's install check, `aa-mini-v1`, as agentperf-local runs it (configs/aa-mini.toml: the
/// `exact` policy, 8,192 tokens of context as its manifest asks) against the real server: the
/// preflight finds that llama.cpp honours `ignore_eos`, and every turn generates exactly its
/// recorded target and ends on `length`; AA's files are written from the records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aa_mini_under_exact_generates_every_turns_target() {
    if skip() {
        return;
    }
    let manifest = "aa_replays/aa-mini-v1/manifest.json";
    if agentload_config::data::locate(&data_dir(), manifest).is_none() {
        bfcl_test_data::skip_without("aa_replays missing: run scripts/fetch-aa-replays.sh DIR");
        return;
    }
    let _serial = SERIAL.lock().await;
    let server = server(8192).await;
    let dir = scratch("llama-aa-mini");
    let preset = std::fs::read_to_string(root().join("configs/aa-mini.toml"))
        .unwrap()
        .replacen(
            "url = \"http://127.0.0.1:8080\"",
            &format!("url = \"{}\"", server.url),
            1,
        );
    let config = dir.path().join("aa-mini.toml");
    std::fs::write(&config, preset).unwrap();
    // The model as the server lists it, so the preflight finds its context there.
    let models: Value = reqwest::get(format!("{}/v1/models", server.url))
        .await
        .expect("GET /v1/models")
        .json()
        .await
        .expect("/v1/models is JSON");
    let model = models["data"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no model listed: {models}"))
        .to_owned();
    let out = dir.path().join("out");
    let said = run_ok(&config, &out, &["--model", &model], dir.path()).await;
    eprintln!("{said}");
    let run_manifest = json(&out.join("run_manifest.json"));
    let pre = &run_manifest["aa_preflight"];
    // llama.cpp keeps generating under ignore_eos. The 135M model does not stop
    // on "hi" within 512 tokens either, so the control may run to the cap too:
    // AA's verdict is then "undetermined" and the run goes on; never "ignored".
    let verdict = pre["ignore_eos_probe"]["verdict"].as_str().unwrap();
    assert!(["honoured", "undetermined"].contains(&verdict), "{pre:#}");
    assert_eq!(
        pre["ignore_eos_probe"]["asked"]["finish_reason"], "length",
        "{pre:#}"
    );
    assert_eq!(
        pre["ignore_eos_probe"]["asked"]["completion_tokens"], 512,
        "{pre:#}"
    );
    assert_eq!(pre["policy"], "exact", "{pre:#}");
    // 8,192 tokens of context is below AA's full benchmark's 65,536.
    assert_eq!(pre["context"]["reduced"], true, "{pre:#}");
    let turns = records(&out);
    assert_eq!(turns.len(), 6);
    for t in &turns {
        assert_eq!(t["status"], "completed", "{t}");
        let expected: Value = serde_json::from_str(t["expected_json"].as_str().unwrap()).unwrap();
        let target = expected["aa"]["max_tokens"].as_u64().unwrap();
        assert_eq!(target, 256, "{expected}");
        assert_eq!(t["usage"]["completion_tokens"], target, "{t}");
        assert_eq!(t["completion"]["finish_reason"], "length", "{t}");
    }
    let summary = json(&out.join("aa/summary.json"));
    eprintln!("{summary:#}");
    assert_eq!(summary["success"], true, "{summary:#}");
}

/// Runs `scripts/llama-server.sh ARGS` and returns what it printed.
async fn script_says(args: &[&str]) -> String {
    let out = tokio::process::Command::new("bash")
        .arg(script())
        .args(args)
        .output()
        .await
        .expect("bash runs scripts/llama-server.sh");
    assert!(
        out.status.success(),
        "llama-server.sh {args:?}:\n{}",
        text(&out)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether the server's log at `path` has `needle`, waiting up to 10 s
/// for its logger thread to write the last answer's lines.
async fn logged(path: &Path, needle: &str) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The closed-loop recording: one task whose first request is a
/// mini-swe-agent-style system prompt, the task and the `bash` tool. Only
/// that request is sent as recorded; the rest is the model's.
fn closed_dataset(dir: &Path) {
    let tools = json!([{"type": "function", "function": {"name": "bash",
        "description": "Execute a bash command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                       "required": ["command"]}}}]);
    let rows = [
        json!({"_type": "dataset_metadata", "version": 1}),
        json!({"conversation_id": "fix-1", "turn": 1, "role": "user",
            "system": "You are a helpful assistant that can interact with a computer shell. \
                       Use the bash tool to run one command at a time, for example `ls` or `cat FILE`.",
            "content": "Make main return 2 in src/app.py.", "tools": tools}),
        json!({"conversation_id": "fix-1", "turn": 2, "role": "assistant",
            "tool_calls": [{"id": "call_0", "type": "function",
                "function": {"name": "bash", "arguments": "{\"command\": \"cat src/app.py\"}"}}]}),
        json!({"conversation_id": "fix-1", "turn": 3, "role": "tool",
            "tool_results": [{"tool_call_id": "call_0",
                "content": "<returncode>0</returncode>\n<output>\ndef main():\n    return 1\n</output>"}]}),
        json!({"conversation_id": "fix-1", "turn": 4, "role": "assistant", "content": "Done."}),
    ];
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(dir.join("closed.jsonl"), text).unwrap();
}

/// Starts a server of our own under Command R+'s tool-use template, with
/// its verbose log (the prompts it rendered); returns it and the log's path.
async fn tool_use_server(ctx: u32) -> (Server, PathBuf) {
    let template = script_says(&["template", "command-r-plus-tool-use"]).await;
    let server = own_server(ctx, &["--chat-template-file", &template, "--verbose"]).await;
    let port = server.port.unwrap().to_string();
    let log = PathBuf::from(script_says(&["log", &port]).await);
    (server, log)
}

/// A closed-loop run of [`closed_dataset`] against a server of our own
/// under Command R+'s tool-use template, with `extra_body` (TOML inline
/// table) and `max_turns`; its turns, checked by [`check_closed_run`].
async fn closed_run(extra_body: &str, max_turns: u32) -> (Vec<Value>, Value) {
    let (server, log) = tool_use_server(4096).await;
    let dir = scratch("llama-closed");
    let (archive, sha) = crate::tools::packed(dir.path()).await;
    closed_dataset(dir.path());
    let config = dir.path().join("closed.toml");
    std::fs::write(
        &config,
        format!(
            r#"name = "llama-closed"
data_dir = "{data}"
[model]
name = "SmolLM2-135M-Instruct.Q4_1"
tokenizer = "none"
[endpoint]
url = "{url}"
extra_body = {extra_body}
[load]
turn_timeout_s = 120.0
[performance]
workload = "coding-replay"
[performance.data]
trajectories = "closed.jsonl"
[performance.settings]
history = "closed"
temperature = 0.0
seed = 42
max_completion_tokens = 96
[tools]
max_turns = {max_turns}
[tools.workspace]
archive = "{archive}"
sha256 = "{sha}"
"#,
            data = dir.path().display(),
            url = server.url,
            archive = archive.display(),
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = run_ok(&config, &out, &[], dir.path()).await;
    let mini_swe_agent = |rc: &Value, printed: &str| {
        let message = format!("<returncode>{rc}</returncode>\n<output>\n{printed}</output>");
        serde_json::to_string(&message).unwrap()
    };
    check_closed_run(&output, &out, &archive, &log, max_turns, &mini_swe_agent).await
}

/// A closed-loop run's turns (in `out`), checked as every closed run must
/// be: each completed at its place; each executed call of a turn with a
/// next one run again on `archive` alone (`tools exec`), the same exit code
/// and output size; its tool message (`message(exit code, output)`, as JSON
/// text) in the prompt the server rendered next (its verbose `log`); the
/// server's answer to that prompt; the end named on the last turn and in
/// `closed_loop.json`. Returns the turns and `closed_loop.json`.
async fn check_closed_run(
    output: &str,
    out: &Path,
    archive: &Path,
    log: &Path,
    max_turns: u32,
    message: &dyn Fn(&Value, &str) -> String,
) -> (Vec<Value>, Value) {
    let turns = records(out);
    for t in &turns {
        for c in t["closed"]["calls"].as_array().into_iter().flatten() {
            eprintln!(
                "closed loop, turn {}: {} -> {}, exit {}, {} bytes",
                t["turn"], c["name"], c["status"], c["exit_code"], c["output_bytes"]
            );
        }
        eprintln!(
            "closed loop, turn {}: reply {}",
            t["turn"],
            serde_json::to_string(&t["completion"]).unwrap()
        );
    }
    assert!(
        !turns.is_empty() && turns.len() <= max_turns as usize,
        "{output}"
    );
    for (i, t) in turns.iter().enumerate() {
        assert_eq!(t["status"], "completed", "{t}");
        assert_eq!(t["closed"]["index"], i + 1, "{t}");
    }
    for pair in turns.windows(2) {
        let (turn, next) = (&pair[0], &pair[1]);
        for call in calls_of(turn) {
            assert_eq!(call["status"], "executed", "{call}");
            let command = command_of(turn, &call);
            let result = exec_on(archive, &command).await;
            assert_eq!(result["exit_code"], call["exit_code"], "{result}");
            let printed = result["output"].as_str().unwrap();
            assert_eq!(printed.len() as u64, call["output_bytes"].as_u64().unwrap());
            let escaped = message(&result["exit_code"], printed);
            assert!(
                logged(log, escaped.trim_matches('"')).await,
                "the server never saw {escaped} for `{command}` (log: {})",
                log.display()
            );
        }
        // The server answered that next request, longer by what was added.
        assert!(
            ns(&next["usage"], "prompt_tokens") > ns(&turn["usage"], "prompt_tokens"),
            "{next}"
        );
    }
    let last = &turns.last().unwrap()["closed"];
    let end = last["end"].as_str().unwrap_or_else(|| panic!("{last}"));
    let summary = json(&out.join("performance/closed_loop.json"));
    assert_eq!(summary["official"], false);
    assert_eq!(summary["ends"][end], 1, "{summary:#}");
    let executed = turns.iter().flat_map(calls_of).count();
    assert_eq!(summary["calls"]["executed"], executed, "{summary:#}");
    eprintln!(
        "closed loop: {} turns, ended {end}; calls {}",
        turns.len(),
        summary["calls"]
    );
    (turns, summary)
}

/// The shell command of `call` (as the sandbox answered it), read from the
/// reply of `turn` that asked for it.
fn command_of(turn: &Value, call: &Value) -> String {
    let asked = turn["completion"]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == call["id"])
        .unwrap_or_else(|| panic!("no reply call with id {}: {turn}", call["id"]));
    let arguments: Value = serde_json::from_str(asked["arguments"].as_str().unwrap()).unwrap();
    arguments["command"].as_str().unwrap().to_owned()
}

/// What `command` gives run alone on `archive` (`tools exec --json`).
async fn exec_on(archive: &Path, command: &str) -> Value {
    let ran = agentload(
        &[
            "tools",
            "exec",
            "--json",
            "--workspace",
            archive.to_str().unwrap(),
            command,
        ],
        archive.parent().unwrap(),
    )
    .await;
    assert!(ran.status.success(), "{}", text(&ran));
    serde_json::from_slice(&ran.stdout).unwrap()
}

/// A closed turn's calls as the sandbox answered them.
fn calls_of(turn: &Value) -> Vec<Value> {
    turn["closed"]["calls"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// (closed loop) A real model's own tool call, run in the sandbox and
/// answered, end to end. SmolLM2-135M never calls a tool by itself: under
/// Qwen2.5's template llama-server's grammar for `tool_choice: "required"`
/// lets free text come first, and the model writes prose until its token
/// limit. Under Command R+'s tool-use template (same llama.cpp source,
/// `scripts/llama-server.sh template command-r-plus-tool-use`) the grammar
/// opens a reply with either the call (`Action:` and JSON) or text wrapped
/// in `<|CHATBOT_TOKEN|>` before one. Greedy, the model's first reply is a
/// `bash` call whose command it writes (`ls`); the sandbox runs it, its
/// output goes into the next request, and the second reply takes the text
/// branch without closing it in 96 tokens: the session ends
/// `no_tool_call`. What the model writes is fixed by the pinned build,
/// model and template at temperature 0. These tests always start their
/// own server (they need that template and the log), whatever
/// `AGENTLOAD_LLAMA_URL` says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_session_runs_the_models_own_tool_calls() {
    if skip() {
        return;
    }
    let _serial = SERIAL.lock().await;
    let (turns, _) = closed_run(r#"{ tool_choice = "required" }"#, 3).await;
    assert!(
        !calls_of(&turns[0]).is_empty(),
        "the first reply called no tool: {}",
        turns[0]
    );
    assert!(turns.len() >= 2, "the call's result was never sent");
    let end = &turns.last().unwrap()["closed"]["end"];
    assert!(end == "no_tool_call" || end == "turn_cap", "{end}");
}

/// (closed loop) The same with `<` banned (`logit_bias`): the grammar's
/// text branch opens with `<|CHATBOT_TOKEN|>`, so every reply is a call
/// (`ls`, then `echo `) and the session runs to its turn cap, the last
/// reply's call not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_loop_session_of_calls_only_ends_at_the_turn_cap() {
    if skip() {
        return;
    }
    let _serial = SERIAL.lock().await;
    let extra = r#"{ tool_choice = "required", logit_bias = [["<", false]] }"#;
    let (turns, summary) = closed_run(extra, 3).await;
    assert_eq!(turns.len(), 3, "{summary:#}");
    for t in &turns[..2] {
        assert!(!calls_of(t).is_empty(), "{t}");
    }
    let last = &turns[2];
    assert_eq!(last["closed"]["end"], "turn_cap", "{last}");
    assert_eq!(last["completion"]["finish_reason"], "tool_calls", "{last}");
    assert!(calls_of(last).is_empty(), "{last}");
    assert_eq!(summary["ends"]["turn_cap"], 1, "{summary:#}");
}

/// An AA-shaped replay in `dir/replay` (AA's manifest, trace and workspace
/// layout, OpenClaw's system prompt opening and AA's `bash` tool) of one
/// task, `task_notes`, whose workspace holds `notes.txt` and
/// `docs/plan.md`; packed by `agentload dataset aa-workspaces`, whose
/// `[tools.workspaces.task_notes]` table is returned with its archive.
async fn aa_notes_replay(dir: &Path) -> (String, PathBuf) {
    let root = dir.join("replay");
    std::fs::create_dir_all(root.join("traces")).unwrap();
    let workspace = root.join("workspaces/task_notes");
    std::fs::create_dir_all(workspace.join("docs")).unwrap();
    std::fs::write(workspace.join("notes.txt"), "the notes of task_notes\n").unwrap();
    std::fs::write(workspace.join("docs/plan.md"), "# plan\n").unwrap();
    let bash = json!({"type": "function", "function": {"name": "bash",
        "description": "Execute a bash command", "parameters": {"type": "object",
        "properties": {"command": {"type": "string", "description": "The bash command to execute"}},
        "required": ["command"]}}});
    let row = json!({"version": 1, "turn_id": "task_notes:0000", "task_id": "task_notes",
        "conversation_id": "task_notes", "conversation_idx": 0,
        "messages": [
            {"role": "system", "content": "You are a personal assistant running inside OpenClaw. \
                Use the bash tool to run one command at a time, for example `ls` or `cat FILE`."},
            {"role": "user", "content": "Summarise the notes in the workspace."}],
        "tools": [bash], "target_output_tokens": 64, "simulated_tool_delay_ms_after": 0,
        "recorded_tool_calls_after": []});
    std::fs::write(root.join("traces/task_notes.jsonl"), format!("{row}\n")).unwrap();
    let manifest = json!({"name": "notes", "source": "generated",
        "mode": "single_user_agentic_replay", "version": 1,
        "tasks": [{"task_id": "task_notes", "trace": "traces/task_notes.jsonl",
            "source_recording": "generated", "model_calls": 1, "tool_calls": 0,
            "total_recorded_tool_delay_ms": 0,
            "tool_environment": {"type": "docker", "image": "agentperf-pinchbench:latest",
                "cwd": "/workspace", "network": "none", "interpreter": ["bash", "-c"],
                "workspace_mount": true, "workspace_path": "workspaces/task_notes"}}]});
    std::fs::write(root.join("manifest.json"), manifest.to_string()).unwrap();
    let packed = agentload(
        &[
            "dataset",
            "aa-workspaces",
            "replay/manifest.json",
            "--out",
            "ws",
        ],
        dir,
    )
    .await;
    assert!(packed.status.success(), "{}", text(&packed));
    let tables = String::from_utf8_lossy(&packed.stdout).into_owned();
    assert!(tables.contains("[tools.workspaces.task_notes]"), "{tables}");
    (tables, dir.join("ws/task_notes.tar"))
}

/// (closed loop, AA) An AA replay's session runs the real model's own
/// call of AA's `bash` tool in its task's workspace. The replay is
/// AA-shaped ([`aa_notes_replay`]: AA's own tasks open with a system prompt
/// of about 7,000 tokens, minutes of prefill for this CPU model per test);
/// agentload's aa-replay workload sends its first request (greedy,
/// `tool_choice: "required"` and a seed through `extra_body`, no cache
/// namespace so that the prompt is the same in every run), and under
/// Command R+'s tool-use template the model's first reply calls `bash`
/// (`ls`). The call runs on the task's own workspace at `/workspace`: the
/// same command run alone on the task's archive gives the recorded result,
/// on an empty workspace another one; its result goes back as the JSON
/// tool message OpenClaw writes, in the prompt the server rendered next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aa_session_runs_the_models_own_tool_call_in_its_tasks_workspace() {
    if skip() {
        return;
    }
    let _serial = SERIAL.lock().await;
    let (server, log) = tool_use_server(4096).await;
    let dir = scratch("llama-aa-closed");
    let (tables, archive) = aa_notes_replay(dir.path()).await;
    let config = dir.path().join("aa-closed.toml");
    let max_turns = 2;
    std::fs::write(
        &config,
        format!(
            r#"name = "llama-aa-closed"
data_dir = "{data}"
[model]
name = "SmolLM2-135M-Instruct.Q4_1"
tokenizer = "none"
[endpoint]
url = "{url}"
extra_body = {{ tool_choice = "required", seed = 42 }}
[load]
turn_timeout_s = 120.0
[performance]
workload = "aa-replay"
[performance.data]
manifest = "replay/manifest.json"
replay = "replay/"
[performance.settings]
history = "closed"
policy = "fixed"
max_output_tokens = 96
sampling = "custom"
temperature = 0.0
cache_isolation = false
[tools]
max_turns = {max_turns}
{tables}"#,
            data = dir.path().display(),
            url = server.url,
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = run_ok(&config, &out, &[], dir.path()).await;
    let openclaw = |rc: &Value, printed: &str| {
        let message = format!(
            "{{\n  \"returncode\": {rc},\n  \"output\": {}\n}}",
            serde_json::to_string(printed).unwrap()
        );
        serde_json::to_string(&message).unwrap()
    };
    let (turns, summary) =
        check_closed_run(&output, &out, &archive, &log, max_turns, &openclaw).await;
    let first = &turns[0];
    assert_eq!(
        first["closed"]["workspace"], "tools.workspaces.task_notes",
        "{first}"
    );
    let calls = calls_of(first);
    assert!(!calls.is_empty(), "the first reply called no tool: {first}");
    assert!(turns.len() >= 2, "the call's result was never sent");
    assert_eq!(
        summary["workspaces"]["tools.workspaces.task_notes"], 1,
        "{summary:#}"
    );
    // What the call gave depends on the task's files: the same command
    // over an empty workspace gives something else.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let empty_tar = dir.path().join("empty.tar");
    let packed = agentload(
        &[
            "dataset",
            "workspace",
            empty.to_str().unwrap(),
            "--out",
            empty_tar.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    assert!(packed.status.success(), "{}", text(&packed));
    for call in &calls {
        let command = command_of(first, call);
        let own = exec_on(&archive, &command).await;
        let bare = exec_on(&empty_tar, &command).await;
        assert_ne!(
            (&own["exit_code"], &own["output"]),
            (&bare["exit_code"], &bare["output"]),
            "`{command}` gives the same without the task's files"
        );
    }
}
