//! BFCL v4 multi-turn end to end: the real binary with the shipped
//! `configs/bfcl-multi-turn.toml`, the bfcl-multi workload and
//! bfcl-multi-score scorer plugins, and the simulator's `script` responder
//! answering every step through the real HTTP path.
//!
//! The script is generated from the ground truth: per entry and BFCL turn,
//! one step whose tool calls are the turn's ground-truth calls (positional
//! arguments named from the function docs), then a step with plain content
//! that ends the turn. A few entries get a mutated script: a wrong argument,
//! a skipped call, an extra state-changing call, a text-only answer, a model
//! that never stops calling tools (force-quit at the step limit), a call
//! with a bad argument (BFCL's error string comes back and the run goes on)
//! and a failed request (the entry counts as failed).

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use bfcl_multi_turn::call::{self, Callee, Parsed};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

const CATEGORIES: [&str; 4] = ["base", "miss_func", "miss_param", "long_context"];

/// The BFCL data folder (data directory, else the agentload cache).
fn bfcl_dir() -> PathBuf {
    agentload_config::data::locate(&data_dir(), "bfcl_v4/possible_answer")
        .and_then(|p| p.parent().map(PathBuf::from))
        .expect("BFCL v4 data missing: run scripts/fetch-bfcl.sh ~/.cache/agentload/data")
}

fn jsonl(path: &Path) -> Vec<Value> {
    read_jsonl(path)
}

struct Entry {
    id: String,
    gt: Vec<Vec<String>>,
    /// method name -> parameter names in doc order.
    params: HashMap<String, Vec<String>>,
}

fn entries(per_category: usize) -> Vec<Entry> {
    let dir = bfcl_dir();
    let doc_file = |class: &str| bfcl_multi_turn::data::doc_file_of(class).unwrap();
    let mut out = Vec::new();
    for cat in CATEGORIES {
        let qs = jsonl(&dir.join(format!("BFCL_v4_multi_turn_{cat}.json")));
        let ans = jsonl(&dir.join(format!("possible_answer/BFCL_v4_multi_turn_{cat}.json")));
        for (q, a) in qs.iter().zip(&ans).take(per_category) {
            let mut params = HashMap::new();
            for class in q["involved_classes"].as_array().unwrap() {
                let path = dir.join(format!(
                    "multi_turn_func_doc/{}.json",
                    doc_file(class.as_str().unwrap())
                ));
                for doc in jsonl(&path) {
                    let names = doc["parameters"]["properties"]
                        .as_object()
                        .unwrap()
                        .keys()
                        .cloned()
                        .collect();
                    params.insert(doc["name"].as_str().unwrap().to_string(), names);
                }
            }
            out.push(Entry {
                id: q["id"].as_str().unwrap().into(),
                gt: serde_json::from_value(a["ground_truth"].clone()).unwrap(),
                params,
            });
        }
    }
    out
}

/// A ground-truth call string as an OpenAI tool call (JSON arguments).
fn tool_call(e: &Entry, call: &str) -> Value {
    let Parsed::Call(Callee::Name(name), args) = call::parse(call) else {
        panic!("{}: cannot parse {call}", e.id)
    };
    let mut arguments = serde_json::Map::new();
    let names = &e.params[&name];
    for (i, v) in args.pos.iter().enumerate() {
        arguments.insert(names[i].clone(), py_json(v));
    }
    for (k, v) in &args.kw {
        arguments.insert(k.clone(), py_json(v));
    }
    json!({"type": "function", "function": {"name": name, "arguments": Value::Object(arguments).to_string()}})
}

fn py_json(v: &bfcl_multi_turn::py::Py) -> Value {
    serde_json::from_str(&v.json_dumps().expect("a JSON value")).unwrap()
}

/// What one entry's scripted model does, turn by turn.
enum Step {
    Calls(Vec<String>),
    Text,
    Fail,
}

fn gt_steps(e: &Entry) -> Vec<Vec<Step>> {
    e.gt.iter()
        .map(|calls| {
            if calls.is_empty() {
                vec![Step::Text]
            } else {
                vec![Step::Calls(calls.clone()), Step::Text]
            }
        })
        .collect()
}

fn write_script(path: &Path, plan: &[(&Entry, Vec<Vec<Step>>)]) {
    let mut text = String::new();
    for (e, turns) in plan {
        let mut k = 0;
        for step in turns.iter().flatten() {
            k += 1;
            let line = match step {
                Step::Calls(calls) => json!({"session_id": e.id, "turn": k,
                    "tool_calls": calls.iter().map(|c| tool_call(e, c)).collect::<Vec<_>>()}),
                Step::Text => json!({"session_id": e.id, "turn": k, "content": "Done."}),
                Step::Fail => json!({"session_id": e.id, "turn": k, "http_status": 500,
                    "error": "scripted failure"}),
            };
            text.push_str(&line.to_string());
            text.push('\n');
        }
    }
    std::fs::write(path, text).unwrap();
}

fn shipped_config() -> PathBuf {
    crate::common::manifest_dir().join("../../configs/bfcl-multi-turn.toml")
}

/// The shipped config with the workload's and the scorer's `categories`
/// and `sample_pct` replaced.
fn config_with(dir: &Path, categories: &str, pct: u32) -> PathBuf {
    let text = std::fs::read_to_string(shipped_config()).unwrap();
    let cats = "categories = [\"base\", \"miss_func\", \"miss_param\", \"long_context\"]\n";
    assert_eq!(text.matches("sample_pct = 100\n").count(), 2);
    assert_eq!(text.matches(cats).count(), 2);
    let path = dir.join("bfcl-multi-turn.toml");
    std::fs::write(
        &path,
        text.replace("sample_pct = 100\n", &format!("sample_pct = {pct}\n"))
            .replace(cats, &format!("categories = {categories}\n")),
    )
    .unwrap();
    path
}

async fn run(config: &Path, script: &Path, dir: &Path) -> (PathBuf, String) {
    let sim = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Script {
            path: script.to_path_buf(),
        },
        ..SimConfig::default()
    })
    .await;
    let out = dir.join("out");
    let started = std::time::Instant::now();
    let output = run_ok(config, &out, &["--endpoint", &sim.url()], dir).await;
    eprintln!(
        "run took {:.1} s\n{output}",
        started.elapsed().as_secs_f64()
    );
    sim.shutdown().await;
    (out, output)
}

/// Every entry's verdict (the rows that are not excluded steps), by id.
fn verdicts(out: &Path) -> HashMap<String, Value> {
    read_jsonl(&out.join("accuracy/samples.jsonl"))
        .into_iter()
        .filter(|r| r.get("valid").is_some())
        .map(|r| (r["id"].as_str().unwrap().to_string(), r))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ground_truth_passes_on_all_800_entries() {
    let all = entries(200);
    assert_eq!(all.len(), 800);
    let dir = scratch("bfcl-multi-gt");
    let plan: Vec<(&Entry, Vec<Vec<Step>>)> = all.iter().map(|e| (e, gt_steps(e))).collect();
    let script = dir.path().join("script.jsonl");
    write_script(&script, &plan);
    // For benchmarks outside the test: keep the ground-truth script.
    if let Some(keep) = std::env::var_os("AGENTLOAD_KEEP_SCRIPT") {
        std::fs::copy(&script, keep).unwrap();
    }
    let (out, output) = run(&shipped_config(), &script, dir.path()).await;
    assert!(output.contains("bfcl-multi-score score 1.0000"), "{output}");
    let v = verdicts(&out);
    assert_eq!(v.len(), 800, "one verdict per entry");
    let failed: Vec<String> = v
        .values()
        .filter(|r| r["valid"] != true)
        .map(|r| format!("{} {} {}", r["id"], r["error_type"], r["error_message"]))
        .collect();
    assert!(failed.is_empty(), "{}", failed.join("\n"));
    let report = json(&out.join("accuracy/multi_turn_results.json"));
    assert_eq!(report["gated"], false);
    assert_eq!(report["breakdown"]["multi_turn_accuracy"], 100.0);
    assert_eq!(report["breakdown"]["total_count"], 800);
    assert_eq!(report["breakdown"]["never_issued"], 0);
    for c in CATEGORIES {
        assert_eq!(
            report["breakdown"]["category_scores"][format!("multi_turn_{c}")],
            json!({"accuracy": 100.0, "correct_count": 200, "total_count": 200})
        );
    }
    // The scorer judges a session's steps together: scored in four instances
    // side by side (whole sessions each), every verdict and the report are
    // the one instance's, byte for byte.
    let again = dir.path().join("again");
    let rescore = agentload(
        &[
            "rescore",
            out.to_str().unwrap(),
            "--out",
            again.to_str().unwrap(),
            "--instances",
            "4",
        ],
        dir.path(),
    )
    .await;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&rescore.stdout),
        String::from_utf8_lossy(&rescore.stderr)
    );
    assert!(
        rescore.status.success() && text.contains("in 4 instances,"),
        "{text}"
    );
    for file in ["accuracy/multi_turn_results.json", "accuracy/samples.jsonl"] {
        assert_eq!(
            std::fs::read(again.join(file)).unwrap(),
            std::fs::read(out.join(file)).unwrap(),
            "{file}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutated_answers_fail_as_bfcl_says() {
    // The first 10 base entries.
    let all: Vec<Entry> = entries(10)
        .into_iter()
        .filter(|e| e.id.starts_with("multi_turn_base_"))
        .collect();
    let dir = scratch("bfcl-multi");
    let mut plan: Vec<(&Entry, Vec<Vec<Step>>)> = Vec::new();
    let mut expect: HashMap<&str, &str> = HashMap::new();
    for e in &all {
        let mut turns = gt_steps(e);
        match e.id.as_str() {
            // A wrong argument: a string value of the turn's last call changes.
            "multi_turn_base_1" | "multi_turn_base_4" => {
                let Step::Calls(calls) = &mut turns[1][0] else {
                    panic!()
                };
                let last = calls.last_mut().unwrap();
                let i = last.find("='").expect("a string argument") + 2;
                last.insert_str(i, "zz_");
            }
            // A skipped call: the first turn's last call is dropped.
            "multi_turn_base_2" | "multi_turn_base_5" => {
                let Step::Calls(calls) = &mut turns[0][0] else {
                    panic!()
                };
                calls.pop();
            }
            // An extra state-changing call in the first turn.
            "multi_turn_base_0" => {
                let Step::Calls(calls) = &mut turns[0][0] else {
                    panic!()
                };
                calls.push("mkdir(dir_name='agentload_extra')".into());
            }
            // A text answer where a call is due.
            "multi_turn_base_6" => turns[1] = vec![Step::Text],
            // Never stops calling tools: 25 steps of `pwd()` in the first
            // turn; force-quit after the 21st.
            "multi_turn_base_7" => {
                turns[0] = (0..25).map(|_| Step::Calls(vec!["pwd()".into()])).collect()
            }
            // Force-quit on the last turn: BFCL still has every turn and
            // checks the entry as usual (it passes).
            "multi_turn_base_3" => {
                turns[1].truncate(1);
                turns[1].extend((0..24).map(|_| Step::Calls(vec!["pwd()".into()])));
            }
            // A bad argument first: BFCL's error string comes back, the
            // entry goes on and passes.
            "multi_turn_base_8" => turns[0].insert(0, Step::Calls(vec!["cd(folders='x')".into()])),
            // A failed request in the second turn.
            "multi_turn_base_9" => turns[1].insert(0, Step::Fail),
            _ => {}
        }
        plan.push((e, turns));
    }
    for (id, kind) in [
        ("multi_turn_base_0", "multi_turn:instance_state_mismatch"),
        ("multi_turn_base_1", "multi_turn:instance_state_mismatch"),
        (
            "multi_turn_base_4",
            "multi_turn:execution_response_mismatch",
        ),
        ("multi_turn_base_2", "multi_turn:instance_state_mismatch"),
        ("multi_turn_base_5", "multi_turn:instance_state_mismatch"),
        ("multi_turn_base_6", "multi_turn:empty_turn_model_response"),
        ("multi_turn_base_7", "multi_turn:force_terminated"),
        ("multi_turn_base_9", "multi_turn:inference_error"),
    ] {
        expect.insert(id, kind);
    }
    let script = dir.path().join("script.jsonl");
    write_script(&script, &plan);
    let config = config_with(dir.path(), "[\"base\"]", 5);
    let (out, output) = run(&config, &script, dir.path()).await;
    assert!(output.contains("bfcl-multi-score score"), "{output}");
    // The failed request and the turn after it (aborted, never sent).
    assert!(output.contains("104 completed, 2 missing"), "{output}");
    // Missing accuracy requests make the run invalid.
    assert!(output.contains("run INVALID"), "{output}");

    let v = verdicts(&out);
    assert_eq!(v.len(), 10, "one verdict per entry");
    let mut wrong = Vec::new();
    for e in &all {
        let got = &v[&e.id];
        let want = expect.get(e.id.as_str()).copied();
        let ok = match want {
            None => got["valid"] == true,
            Some(kind) => got["valid"] == false && got["error_type"] == kind,
        };
        if !ok {
            wrong.push(format!(
                "{}: want {:?}, got {} {} {}",
                e.id, want, got["valid"], got["error_type"], got["error_message"]
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );

    // The force-quit entry: 21 executed steps in its first turn, then no
    // more requests.
    let fq = &v["multi_turn_base_7"];
    assert_eq!(fq["force_quit_turn"], 0, "{fq}");
    assert_eq!(fq["requests"], 21, "{fq}");
    let last = &v["multi_turn_base_3"];
    assert_eq!(last["force_quit_turn"], 1, "{last}");
    assert_eq!(last["requests"], 2 + 21, "{last}");
    assert_eq!(last["valid"], true, "{last}");
    // The bad argument: BFCL's error string is the call's result, and the
    // entry's later calls ran.
    let bad = &v["multi_turn_base_8"];
    assert_eq!(
        bad["trace"][0]["model"][0][0]["result"],
        "Error during execution: GorillaFileSystem.cd() got an unexpected keyword argument 'folders'",
        "{bad}"
    );
    assert_eq!(bad["valid"], true);
    // The failed request: the entry's remaining turns are recorded missing.
    let failed = &v["multi_turn_base_9"];
    assert!(
        failed["missing_requests"].as_u64().unwrap() >= 1,
        "{failed}"
    );

    let report = json(&out.join("accuracy/multi_turn_results.json"));
    let b = &report["breakdown"];
    assert_eq!(b["total_count"], 10);
    assert_eq!(b["correct_count"], 10 - expect.len());
    assert_eq!(b["error_types"]["multi_turn:instance_state_mismatch"], 4);

    // Re-scoring the recorded steps (the scorer is granted the data again)
    // reproduces the report and the verdicts byte for byte.
    let rescore = agentload(
        &["rescore", out.to_str().unwrap(), "--out", "again"],
        dir.path(),
    )
    .await;
    assert!(rescore.status.success(), "{}", text(&rescore));
    for file in ["accuracy/multi_turn_results.json", "accuracy/samples.jsonl"] {
        assert_eq!(
            std::fs::read(dir.path().join("again").join(file)).unwrap(),
            std::fs::read(out.join(file)).unwrap(),
            "{file}"
        );
    }
}
