//! The reference-shaped result files end to end: local token counts with the
//! model's chat template as the default source (the server's beside them),
//! a configured template file, the server as the configured source,
//! `config.yaml` in the reference's schema, the performance phase's entry in
//! `accuracy_results.json`, and `agentload submission` on the run.

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A short conversation of the edge set.
const CONV: &str = "astropy__astropy-12907";

/// The ISLs of `CONV`'s turns as `transformers` renders and counts them
/// (the tokenizer fixtures), in order.
fn reference_isls() -> Vec<u64> {
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(
            crate::common::manifest_dir().join("../tokenizer/tests/fixtures/chat.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let all: Vec<u64> = serde_json::from_value(fixture["dataset"]["isl"].clone()).unwrap();
    // One request per user or tool row, conversations in file order.
    let mut offset = 0;
    let mut count = 0;
    for line in std::fs::read_to_string(trajectories()).unwrap().lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        if row["role"] == "assistant" {
            continue;
        }
        if row["conversation_id"] == CONV {
            count += 1;
        } else if count == 0 {
            offset += 1;
        }
    }
    all[offset..offset + count].to_vec()
}

/// The local ISL of each turn, in log order: from `turns.tokens.jsonl`
/// (`{line, isl, osl, ...}`) where the engine writes the counts beside the log,
/// else from the records' `local_tokens`.
fn local_isls(out: &Path) -> Vec<u64> {
    let side = out.join("turns.tokens.jsonl");
    if side.is_file() {
        let mut lines: Vec<(u64, u64)> = read_jsonl(&side)
            .iter()
            .map(|l| (l["line"].as_u64().unwrap(), l["isl"].as_u64().unwrap()))
            .collect();
        lines.sort_unstable();
        return lines.into_iter().map(|(_, isl)| isl).collect();
    }
    read_jsonl(&out.join("turns.jsonl"))
        .iter()
        .map(|r| r["local_tokens"]["isl"].as_u64().unwrap())
        .collect()
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

async fn oracle() -> agentload_sim::SimHandle {
    start_sim(replay_sim(trajectories())).await
}

/// The one-conversation replay config with the Qwen3.6 tokenizer and
/// `model` lines added.
fn config(dir: &Path, url: &str, model: &str) -> PathBuf {
    let path = edge_config(dir, url, &format!("conversations = [\"{CONV}\"]"), "");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        "tokenizer = \"none\"",
        &format!("tokenizer = \"qwen3.6\"\n{model}"),
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_counts_are_the_reference_and_the_tools_get_their_files() {
    if !vocabulary() {
        return;
    }
    let sim = oracle().await;
    let dir = scratch("reffiles");
    let out = dir.path().join("out");
    run_ok(&config(dir.path(), &sim.url(), ""), &out, &[], dir.path()).await;

    // ISL from the chat template, turn for turn the reference's count.
    let want = reference_isls();
    let turns = read_jsonl(&out.join("turns.jsonl"));
    assert_eq!(local_isls(&out), want);
    let summary = json(&out.join("performance/result_summary.json"));
    let isl = &summary["input_sequence_lengths"];
    assert_eq!(isl["max"], *want.iter().max().unwrap());
    assert_eq!(isl["total"], want.iter().sum::<u64>());
    let extra = &summary["agentload"];
    assert_eq!(extra["token_count_source"], "local");
    assert_eq!(extra["token_counts"]["configured"], "local");
    assert_eq!(
        extra["token_counts"]["chat_template_sha256"],
        agentload_tokenizer::QWEN3_6_TEMPLATE_SHA256
    );
    // The server's counts beside them, and the check between the two.
    let other = &extra["token_counts"]["other"];
    assert_eq!(other["source"], "server");
    let server_total: u64 = turns
        .iter()
        .map(|r| r["usage"]["prompt_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(other["input_sequence_lengths"]["total"], server_total);
    assert_eq!(extra["token_count_check"]["turns_compared"], turns.len());
    // tps is the local OSL total over the window.
    let osl_total = summary["output_sequence_lengths"]["total"]
        .as_f64()
        .unwrap();
    let secs = summary["duration_ns"].as_f64().unwrap() / 1e9;
    assert!((summary["tps"].as_f64().unwrap() - osl_total / secs).abs() < 1e-6);

    // config.yaml: YAML in the reference's schema.
    let yaml = std::fs::read_to_string(out.join("config.yaml")).unwrap();
    let reference = agentload_results::yaml::from_yaml(&yaml).unwrap();
    assert_eq!(
        reference["model_params"]["tokenizer_name"],
        "Qwen/Qwen3.6-27B"
    );
    assert_eq!(reference["model_params"]["streaming"], "on");
    assert_eq!(reference["datasets"][0]["type"], "performance");
    assert_eq!(
        reference["datasets"][0]["agentic_inference"]["turn_timeout_s"],
        600.0
    );
    assert_eq!(
        reference["settings"]["load_pattern"]["type"],
        "agentic_inference"
    );
    assert_eq!(
        summary["run_config"]["load_pattern"]["target_qps"],
        Value::Null
    );

    // The inline scorer's entry in the reference's wrapper.
    let acc = json(&out.join("accuracy/accuracy_results.json"));
    let entry = &acc["accuracy_scores"][0];
    assert_eq!(entry["dataset_name"], "performance");
    assert_eq!(entry["score"], json(&out.join("scores.json"))["score"]);
    assert_eq!(entry["total_samples"], turns.len());

    // The submission tree from the performance run; the run is no accuracy
    // submission (its only entry has no breakdown), and the command says so.
    let sub = dir.path().join("sub");
    let args = |flag: &'static str| {
        vec![
            "submission".to_string(),
            flag.to_string(),
            out.display().to_string(),
            "--output".into(),
            sub.display().to_string(),
            "--submitter".into(),
            "Org".into(),
            "--system".into(),
            "Box".into(),
            "--benchmark".into(),
            "qwen3.6-27b".into(),
            // A development run: the closed division would refuse it (unsealed).
            "--division".into(),
            "open".into(),
        ]
    };
    let published = agentload(&strs(&args("--performance-run")), dir.path()).await;
    assert!(published.status.success(), "{}", text(&published));
    let run_1 = sub.join("open/Org/results/Box/qwen3.6-27b/SingleStream/performance/run_1");
    assert_eq!(
        std::fs::read(run_1.join("result_summary.json")).unwrap(),
        std::fs::read(out.join("performance/result_summary.json")).unwrap()
    );
    assert!(run_1.join("config.yaml").is_file());
    assert!(text(&published).contains("TTFT p99"));
    let refused = agentload(&strs(&args("--run")), dir.path()).await;
    assert!(!refused.status.success());
    assert!(text(&refused).contains("breakdown"), "{}", text(&refused));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_template_and_the_server_source() {
    if !vocabulary() {
        return;
    }
    let sim = oracle().await;
    let dir = scratch("template");
    // A model whose template renders only the message contents.
    let template = "{% for m in messages %}{{ m.content }}{% endfor %}";
    std::fs::write(dir.path().join("plain.jinja"), template).unwrap();
    let out = dir.path().join("out");
    let cfg = config(
        dir.path(),
        &sim.url(),
        "chat_template = \"plain.jinja\"\ntoken_counts = \"server\"",
    );
    run_ok(&cfg, &out, &[], dir.path()).await;
    let summary = json(&out.join("performance/result_summary.json"));
    let extra = &summary["agentload"];
    assert_eq!(extra["token_counts"]["configured"], "server");
    assert_eq!(extra["token_count_source"], "server");
    let sha = agentload_tokenizer::ChatTemplate::new(template).unwrap();
    assert_eq!(extra["token_counts"]["chat_template_sha256"], sha.sha256());
    // The reference-shaped ISL is the server's; the local one, rendered with
    // the configured template (no tools, no framing), is far smaller.
    let turns = read_jsonl(&out.join("turns.jsonl"));
    let server: u64 = turns
        .iter()
        .map(|r| r["usage"]["prompt_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(summary["input_sequence_lengths"]["total"], server);
    let local = extra["token_counts"]["other"]["input_sequence_lengths"]["total"]
        .as_u64()
        .unwrap();
    let builtin: u64 = reference_isls().iter().sum();
    assert!(local < builtin, "{local} vs {builtin}");

    // A template that does not compile stops the run, naming the file.
    std::fs::write(dir.path().join("plain.jinja"), "{% for %}").unwrap();
    let run = agentload(&["run", cfg.to_str().unwrap(), "--out", "out2"], dir.path()).await;
    assert!(!run.status.success());
    let msg = text(&run);
    assert!(
        msg.contains("model.chat_template") && msg.contains("plain.jinja"),
        "{msg}"
    );
    sim.shutdown().await;
}

/// A model's own Hugging Face `tokenizer.json` (`model.tokenizer = PATH`)
/// counts through the `tokenizers` crate, rendered with the
/// `chat_template` of the `tokenizer_config.json` beside it. The test's
/// tokenizer makes every character one token and its template renders the
/// contents only, so the first turn's ISL is the characters of the system
/// prompt and the first user message. `config.yaml` names the folder as
/// the reference's `tokenizer_name`. A missing file, and a folder without a
/// template, are refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_models_tokenizer_json_counts_with_its_own_template() {
    let sim = oracle().await;
    let dir = scratch("tokenizer-json");
    let model = dir.path().join("model");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(
        model.join("tokenizer.json"),
        serde_json::json!({
            "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
            "normalizer": null,
            "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(?s)."},
                              "behavior": "Isolated", "invert": false},
            "post_processor": null, "decoder": null,
            "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
        })
        .to_string(),
    )
    .unwrap();
    let template = "{% for m in messages %}{{ m.content }}{% endfor %}";
    std::fs::write(
        model.join("tokenizer_config.json"),
        serde_json::json!({"chat_template": template}).to_string(),
    )
    .unwrap();
    let path = edge_config(
        dir.path(),
        &sim.url(),
        &format!("conversations = [\"{CONV}\"]"),
        "",
    );
    let cfg = std::fs::read_to_string(&path).unwrap().replace(
        "tokenizer = \"none\"",
        "tokenizer = \"model/tokenizer.json\"",
    );
    std::fs::write(&path, &cfg).unwrap();
    let out = dir.path().join("out");
    run_ok(&path, &out, &[], dir.path()).await;
    let summary = json(&out.join("performance/result_summary.json"));
    let extra = &summary["agentload"];
    assert_eq!(extra["token_count_source"], "local", "{extra}");
    let sha = agentload_tokenizer::ChatTemplate::new(template).unwrap();
    assert_eq!(extra["token_counts"]["chat_template_sha256"], sha.sha256());
    let rows: Vec<Value> = std::fs::read_to_string(trajectories())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["conversation_id"] == CONV)
        .collect();
    let chars = |v: &Value| v.as_str().unwrap_or("").chars().count() as u64;
    let first = chars(&rows[0]["system"]) + chars(&rows[0]["content"]);
    assert_eq!(local_isls(&out)[0], first);
    let yaml = std::fs::read_to_string(out.join("config.yaml")).unwrap();
    assert!(yaml.contains("tokenizer_name: model"), "{yaml}");

    std::fs::remove_file(model.join("tokenizer_config.json")).unwrap();
    let run = agentload(
        &["run", path.to_str().unwrap(), "--out", "out2"],
        dir.path(),
    )
    .await;
    assert!(!run.status.success());
    assert!(
        text(&run).contains("model.chat_template: not set")
            && text(&run).contains("tokenizer_config.json"),
        "{}",
        text(&run)
    );
    std::fs::write(
        &path,
        cfg.replace("model/tokenizer.json", "nowhere/tokenizer.json"),
    )
    .unwrap();
    let run = agentload(
        &["run", path.to_str().unwrap(), "--out", "out3"],
        dir.path(),
    )
    .await;
    assert!(!run.status.success());
    assert!(
        text(&run).contains("model.tokenizer: no file nowhere/tokenizer.json"),
        "{}",
        text(&run)
    );
    sim.shutdown().await;
}
