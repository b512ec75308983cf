//! The auditor's flow end to end: a BFCL accuracy run whose model outputs
//! exhibit two documented BFCL checker defects, re-scored with the fixed
//! scorer (`bfcl-ast` 0.2.0, `target/plugins/bfcl_ast_v2.wasm`) and compared
//! with `agentload diff`.
//!
//! 1. The simulator's oracle answers the 995-sample gate with the gold calls;
//!    that run's turn log becomes a `script` for the simulator, with a few
//!    answers altered to exhibit the defects (and a few controls).
//! 2. The scripted run is the run under audit (official `bfcl-ast` 0.1.0).
//! 3. `agentload rescore RUN` with the official scorer reproduces its
//!    accuracy report and per-sample verdicts byte for byte.
//! 4. `agentload rescore RUN --scorer bfcl_ast_v2.wasm`, then
//!    `agentload diff RUN RESCORE --json`: exactly the altered samples change
//!    verdict, and exactly the aggregates they feed move, by what they should.

use crate::common::*;
use agentload_sim::{ResponderConfig, SimConfig};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn bfcl_dir() -> PathBuf {
    let found = agentload_config::data::locate(&data_dir(), "bfcl_v4/possible_answer");
    found
        .and_then(|p| p.parent().map(PathBuf::from))
        .expect("BFCL v4 data missing: run scripts/fetch-bfcl.sh ~/.cache/agentload/data")
}

fn edge_config() -> PathBuf {
    crate::common::manifest_dir().join("../../configs/edge-full-run.toml")
}

/// The non-official fixed scorer, built by scripts/build-plugins.sh.
fn v2_scorer() -> PathBuf {
    let path = test_plugin("misbehave")
        .parent()
        .unwrap()
        .join("../plugins/bfcl_ast_v2.wasm");
    assert!(
        path.is_file(),
        "{} missing: run scripts/build-plugins.sh",
        path.display()
    );
    path
}

/// `agentload run edge-full-run.toml --accuracy-only` against `sim`.
async fn accuracy_run(sim: &agentload_sim::SimHandle, cwd: &Path, out: &Path) {
    run_ok(
        &edge_config(),
        out,
        &["--accuracy-only", "--endpoint", &sim.url()],
        cwd,
    )
    .await;
}

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A recorded completion as a script line for its session.
fn script_line(record: &Value) -> Value {
    let c = &record["completion"];
    let calls: Vec<Value> = c["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            json!({"id": t["id"], "type": "function",
                   "function": {"name": t["name"], "arguments": t["arguments"]}})
        })
        .collect();
    let mut line = json!({
        "session_id": record["session_id"],
        "turn": 1,
        "content": c["content"],
        "reasoning_content": c["reasoning_content"],
    });
    if !calls.is_empty() {
        line["tool_calls"] = json!(calls);
    }
    if let Some(f) = c["finish_reason"].as_str() {
        line["finish_reason"] = json!(f);
    }
    line
}

/// Rewrites the arguments of the scripted call that has `key`.
fn edit_arguments(line: &mut Value, key: &str, edit: impl Fn(&Value) -> Value) {
    let session = line["session_id"].to_string();
    let call = line["tool_calls"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|c| {
            let args: Value =
                serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
            args.get(key).is_some()
        })
        .unwrap_or_else(|| panic!("no call with `{key}` in {session}"));
    let mut args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    args[key] = edit(&args[key]);
    call["function"]["arguments"] = json!(args.to_string());
}

/// `[12.0, 15.0]` -> `[12, 15]`: the same numbers as ints.
fn ints(v: &Value) -> Value {
    let xs: Vec<Value> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let f = x.as_f64().unwrap();
            assert_eq!(f.fract(), 0.0, "{v} has a non-whole number");
            json!(f as i64)
        })
        .collect();
    json!(xs)
}

fn first_function(record: &Value) -> String {
    let expected: Value = serde_json::from_str(record["expected_json"].as_str().unwrap()).unwrap();
    expected["functions"][0]["name"]
        .as_str()
        .unwrap_or("lookup")
        .to_owned()
}

/// `(item_id, score)` of a result's `accuracy/samples.jsonl`, in its order
/// (the scorer's, so that sums come out bit for bit).
fn scores(dir: &Path) -> Vec<(String, f64)> {
    jsonl(&dir.join("accuracy/samples.jsonl"))
        .iter()
        .map(|s| {
            (
                s["item_id"].as_str().unwrap().to_owned(),
                s["score"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Python's `round(100 * x, 2)` as the scorer reports percentages.
fn pct(x: f64) -> f64 {
    format!("{:.2}", x * 100.0).parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rescore_with_the_fixed_scorer_and_diff() {
    let dir = scratch("audit");

    // 1. Gold answers from the oracle, recorded.
    let oracle = start_sim(SimConfig {
        time_scale: 0.0,
        responder: gold_responder(None, Some(bfcl_dir())),
        ..SimConfig::default()
    })
    .await;
    let gold = dir.path().join("gold");
    accuracy_run(&oracle, dir.path(), &gold).await;
    oracle.shutdown().await;
    let records = jsonl(&gold.join("accuracy/turns.jsonl"));
    assert_eq!(records.len(), 995);

    // The script: every gold answer, a few altered.
    let mut lines: BTreeMap<String, Value> = BTreeMap::new();
    let mut live_irrelevance = Vec::new();
    let mut function_of = BTreeMap::new();
    for r in &records {
        let id = r["session_id"].as_str().unwrap().to_owned();
        if id.starts_with("live_irrelevance_") {
            live_irrelevance.push(id.clone());
        }
        function_of.insert(id.clone(), first_function(r));
        lines.insert(id, script_line(r));
    }
    let mut alter = |id: &str, f: &dyn Fn(&mut Value)| {
        f(lines
            .get_mut(id)
            .unwrap_or_else(|| panic!("{id} not in the gate sample")))
    };
    // Defect 1 (BFCL #1049): whole-number floats sent as ints in float arrays.
    alter("simple_python_82", &|l| edit_arguments(l, "numbers", ints));
    alter("simple_python_103", &|l| {
        edit_arguments(l, "polynomial", ints);
        edit_arguments(l, "limits", ints);
    });
    alter("parallel_multiple_67", &|l| {
        edit_arguments(l, "coefficients", ints)
    });
    // Control: ints in a float array with a wrong value fail either way
    // (type_error:nested, then value_error:list/tuple).
    alter("simple_python_13", &|l| {
        edit_arguments(l, "interval", |_| json!([1, 4]))
    });
    // Defect 2 (BFCL #1362/#443): call attempts that are not native calls.
    let f0 = function_of["irrelevance_0"].replace('.', "_");
    let f1 = function_of["irrelevance_1"].replace('.', "_");
    alter("irrelevance_0", &|l| {
        l["content"] = json!(format!(
            "<tool_call>\n{{\"name\": \"{f0}\", \"arguments\": {{\"x\": 1}}}}\n</tool_call>"
        ))
    });
    alter("irrelevance_1", &|l| {
        l["content"] = json!(format!(r#"[{{"name": "{f1}", "arguments": {{}}}}]"#))
    });
    let (li_text, li_tag) = (live_irrelevance[0].clone(), live_irrelevance[1].clone());
    alter(&li_text, &|l| {
        l["content"] = json!("[lookup(query='weather in Boston')]")
    });
    alter(&li_tag, &|l| {
        l["reasoning_content"] =
            json!("<tool_call>\n{\"name\": \"lookup\", \"arguments\": {}}\n</tool_call>");
        l["content"] = json!("");
    });
    // Controls: an abstention in prose with parentheses (credited either
    // way) and a native call with unparseable arguments (failed either way).
    alter("irrelevance_2", &|l| {
        l["content"] = json!("I can't help with that (no suitable function).")
    });
    let f3 = function_of["irrelevance_3"].clone();
    alter("irrelevance_3", &|l| {
        l["content"] = json!("");
        l["tool_calls"] =
            json!([{"type": "function", "function": {"name": f3, "arguments": "{oops"}}]);
    });
    let script = dir.path().join("script.jsonl");
    let text_lines: Vec<String> = lines.values().map(Value::to_string).collect();
    std::fs::write(&script, text_lines.join("\n") + "\n").unwrap();

    // 2. The run under audit: the scripted answers, official scorer.
    let scripted = start_sim(SimConfig {
        time_scale: 0.0,
        responder: ResponderConfig::Script { path: script },
        ..SimConfig::default()
    })
    .await;
    let run = dir.path().join("run");
    accuracy_run(&scripted, dir.path(), &run).await;
    scripted.shutdown().await;
    let official = scores(&run);
    assert_eq!(official.len(), 995);
    let failed: BTreeSet<&str> = official
        .iter()
        .filter(|(_, s)| *s != 1.0)
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(
        failed,
        BTreeSet::from([
            "irrelevance_3",
            "parallel_multiple_67",
            "simple_java_36",
            "simple_python_103",
            "simple_python_13",
            "simple_python_82",
        ]),
        "the official scorer credits the malformed attempts and rejects the int arrays"
    );

    // 3. Re-scoring with the run's own scorer reproduces it byte for byte,
    // in one instance or in several side by side.
    for instances in ["1", "3"] {
        let again = dir.path().join(format!("again-{instances}"));
        let out = agentload(
            &[
                "rescore",
                run.to_str().unwrap(),
                "--out",
                again.to_str().unwrap(),
                "--instances",
                instances,
            ],
            dir.path(),
        )
        .await;
        let out_text = text(&out);
        assert!(out.status.success(), "{out_text}");
        let used = if instances == "1" {
            "in 1 instance,"
        } else {
            "in 3 instances,"
        };
        assert!(out_text.contains(used), "{out_text}");
        for file in ["accuracy/accuracy_results.json", "accuracy/samples.jsonl"] {
            assert_eq!(
                std::fs::read(again.join(file)).unwrap(),
                std::fs::read(run.join(file)).unwrap(),
                "{file} with {instances} instance(s)"
            );
        }
    }

    // 4. The fixed scorer, and the diff.
    let fixed = dir.path().join("fixed");
    let out = agentload(
        &[
            "rescore",
            run.to_str().unwrap(),
            "--scorer",
            v2_scorer().to_str().unwrap(),
            "--out",
            fixed.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    let out_text = text(&out);
    assert!(out.status.success(), "{out_text}");
    assert!(
        out_text.contains("accuracy: bfcl-ast@0.2.0"),
        "the rescore names the scorer version: {out_text}"
    );
    let manifest = json(&fixed.join("rescore_manifest.json"));
    assert_eq!(manifest["phases"][0]["scorer"]["version"], "0.2.0");

    let out = agentload(
        &[
            "diff",
            run.to_str().unwrap(),
            fixed.to_str().unwrap(),
            "--json",
        ],
        dir.path(),
    )
    .await;
    assert!(out.status.success(), "{}", text(&out));
    let diffs: Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&diffs).unwrap());
    let diffs = diffs.as_array().expect("diff --json is a list of reports");
    assert_eq!(diffs.len(), 1, "only the accuracy report");
    let d = &diffs[0];
    assert_eq!(d["report"], "accuracy/accuracy_results.json");
    assert_eq!(d["samples_compared"], 995);

    // Exactly the altered samples change: the defects flip their score,
    // the wrong-valued control only its error type.
    let changes: BTreeMap<&str, &Value> = d["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["key"].as_str().unwrap(), c))
        .collect();
    let expect: BTreeMap<&str, (f64, f64, Value, Value)> = BTreeMap::from([
        (
            "simple_python_82",
            (0.0, 1.0, json!("type_error:nested"), Value::Null),
        ),
        (
            "simple_python_103",
            (0.0, 1.0, json!("type_error:nested"), Value::Null),
        ),
        (
            "parallel_multiple_67",
            (
                0.0,
                1.0,
                json!("parallel_function_checker_no_order:cannot_find_match"),
                Value::Null,
            ),
        ),
        (
            "simple_python_13",
            (
                0.0,
                0.0,
                json!("type_error:nested"),
                json!("value_error:list/tuple"),
            ),
        ),
        (
            "irrelevance_0",
            (
                1.0,
                0.0,
                Value::Null,
                json!("irrelevance_error:malformed_call_attempt"),
            ),
        ),
        (
            "irrelevance_1",
            (
                1.0,
                0.0,
                Value::Null,
                json!("irrelevance_error:malformed_call_attempt"),
            ),
        ),
        (
            li_text.as_str(),
            (
                1.0,
                0.0,
                Value::Null,
                json!("irrelevance_error:malformed_call_attempt"),
            ),
        ),
        (
            li_tag.as_str(),
            (
                1.0,
                0.0,
                Value::Null,
                json!("irrelevance_error:malformed_call_attempt"),
            ),
        ),
    ]);
    assert_eq!(
        changes.keys().collect::<Vec<_>>(),
        expect.keys().collect::<Vec<_>>(),
        "exactly the altered samples change"
    );
    for (key, (before, after, type_before, type_after)) in &expect {
        let c = changes[key];
        assert_eq!(c["before"]["score"], json!(before), "{key}");
        assert_eq!(c["after"]["score"], json!(after), "{key}");
        assert_eq!(c["before"]["valid"], json!(*before == 1.0), "{key}");
        assert_eq!(c["after"]["valid"], json!(*after == 1.0), "{key}");
        assert_eq!(&c["before"]["error_type"], type_before, "{key}");
        assert_eq!(&c["after"]["error_type"], type_after, "{key}");
    }

    // The aggregates: exactly those the changed samples feed, by the
    // amounts their scores give; the fixes are named in the new report.
    let v2 = scores(&fixed);
    let mean = |s: &[(String, f64)], prefix: Option<&str>| {
        let xs: Vec<f64> = s
            .iter()
            .filter(|(k, _)| prefix.is_none_or(|p| subset_of(k) == p))
            .map(|(_, v)| *v)
            .collect();
        xs.iter().sum::<f64>() / xs.len() as f64
    };
    let moved: BTreeMap<&str, &Value> = d["aggregates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["path"].as_str().unwrap(), c))
        .collect();
    // Paths inside the gate's entry of the reference's wrapper.
    const ENTRY: &str = "accuracy_scores[bfcl_v4::function_calling]";
    let mut want = BTreeMap::new();
    for p in ["average_accuracy".to_owned(), format!("{ENTRY}.score")] {
        want.insert(p, (json!(mean(&official, None)), json!(mean(&v2, None))));
    }
    for p in [
        "breakdown.overall_accuracy",
        "gate.metrics.bfcl_overall_accuracy.value",
    ] {
        want.insert(
            format!("{ENTRY}.{p}"),
            (
                json!(pct(mean(&official, None))),
                json!(pct(mean(&v2, None))),
            ),
        );
    }
    for subset in [
        "simple_python",
        "parallel_multiple",
        "irrelevance",
        "live_irrelevance",
    ] {
        want.insert(
            format!("{ENTRY}.breakdown.subset_scores.{subset}"),
            (
                json!(pct(mean(&official, Some(subset)))),
                json!(pct(mean(&v2, Some(subset)))),
            ),
        );
    }
    want.insert(
        format!("{ENTRY}.checker_fixes"),
        (
            Value::Null,
            json!([
                "fix_int_in_float_arrays (gorilla#1049)",
                "fix_malformed_abstention (gorilla#1362, gorilla#443)"
            ]),
        ),
    );
    for (path, (before, after)) in &want {
        let c = moved
            .get(path.as_str())
            .unwrap_or_else(|| panic!("{path} did not move"));
        if path.ends_with("score") || path == "average_accuracy" {
            // A fraction: serde_json here parses floats to within an ulp
            // (no `float_roundtrip`), so compare closely, not exactly.
            for (got, want) in [(&c["before"], before), (&c["after"], after)] {
                let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
                assert!((g - w).abs() < 1e-12, "{path}: {g} vs {w}");
            }
        } else {
            assert_eq!((&c["before"], &c["after"]), (before, after), "{path}");
        }
    }
    // Category and normalized scores move too (non_live and hallucination);
    // live is untouched, and nothing else moves.
    let derived = [
        "breakdown.category_scores.non_live",
        "breakdown.category_scores.hallucination",
        "breakdown.normalized_single_turn_score",
        "gate.metrics.bfcl_normalized_accuracy.value",
    ]
    .map(|p| format!("{ENTRY}.{p}"));
    let expected_paths: BTreeSet<&str> = want
        .keys()
        .chain(derived.iter())
        .map(String::as_str)
        .collect();
    assert_eq!(
        moved.keys().copied().collect::<BTreeSet<_>>(),
        expected_paths,
        "exactly these aggregates move"
    );
    let fixed_results = json(&fixed.join("accuracy/accuracy_results.json"));
    let fixed_report = agentload_results::find_breakdown_entry(&fixed_results)
        .expect("the gate's entry")
        .clone();
    let b = &fixed_report["breakdown"];
    let non_live = {
        let simple = ["simple_python", "simple_java", "simple_javascript"]
            .map(|s| mean(&v2, Some(s)))
            .iter()
            .sum::<f64>()
            / 3.0;
        (simple
            + mean(&v2, Some("multiple"))
            + mean(&v2, Some("parallel"))
            + mean(&v2, Some("parallel_multiple")))
            / 4.0
    };
    assert_eq!(b["category_scores"]["non_live"], json!(pct(non_live)));
    let hallucination =
        (mean(&v2, Some("irrelevance")) + mean(&v2, Some("live_irrelevance"))) / 2.0;
    assert_eq!(
        b["category_scores"]["hallucination"],
        json!(pct(hallucination))
    );
    assert_eq!(fixed_report["gate"]["passed"], true);
}

/// The BFCL subset of a gate item id (`live_irrelevance_12-2-0` ->
/// `live_irrelevance`, `simple_python_82` -> `simple_python`).
fn subset_of(id: &str) -> &str {
    let cut = id
        .rfind('_')
        .filter(|&i| id[i + 1..].chars().all(|c| c.is_ascii_digit() || c == '-'))
        .unwrap_or(id.len());
    &id[..cut]
}

/// `--phase accuracy` re-scores an edge run's accuracy phase alone with a
/// BFCL scorer; the performance phase (whose items are not BFCL samples) is
/// left as it was, and a phase the run does not have is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_phase_of_a_two_phase_run_is_rescored_alone() {
    bfcl_dir();
    let dir = scratch("rescore-phase");
    let run = dir.path().join("demo");
    let demo = agentload(
        &[
            "demo",
            "--out",
            run.to_str().unwrap(),
            "--time-scale",
            "0.0005",
        ],
        dir.path(),
    )
    .await;
    assert!(demo.status.success(), "{}", text(&demo));
    assert!(run.join("turns.jsonl").is_file() && run.join("accuracy/turns.jsonl").is_file());

    let v2 = dir.path().join("v2");
    let out = agentload(
        &[
            "rescore",
            run.to_str().unwrap(),
            "--phase",
            "accuracy",
            "--scorer",
            v2_scorer().to_str().unwrap(),
            "--out",
            v2.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    let out_text = text(&out);
    assert!(out.status.success(), "{out_text}");
    assert!(out_text.contains("accuracy: bfcl-ast@0.2.0"), "{out_text}");
    let manifest = json(&v2.join("rescore_manifest.json"));
    let phases = manifest["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 1, "{manifest}");
    assert_eq!(phases[0]["phase"], "accuracy");
    assert_eq!(phases[0]["scorer"]["version"], "0.2.0");
    assert!(v2.join("accuracy/samples.jsonl").is_file());

    let again = dir.path().join("perf");
    let out = agentload(
        &[
            "rescore",
            run.to_str().unwrap(),
            "--phase",
            "performance",
            "--out",
            again.to_str().unwrap(),
        ],
        dir.path(),
    )
    .await;
    let out_text = text(&out);
    assert!(out.status.success(), "{out_text}");
    let manifest = json(&again.join("rescore_manifest.json"));
    assert_eq!(
        manifest["phases"].as_array().unwrap().len(),
        1,
        "{manifest}"
    );
    assert_eq!(manifest["phases"][0]["phase"], "performance");

    let bad = agentload(
        &["rescore", run.to_str().unwrap(), "--phase", "warmup"],
        dir.path(),
    )
    .await;
    assert!(!bad.status.success());
    assert!(text(&bad).contains("--phase"), "{}", text(&bad));
}
