//! Parity with the real BFCL v4 checker: runs the native scorer on every case
//! of the fixture `tests/bfcl-parity/gen_parity.py` generates (verdicts from
//! bfcl-eval's own `ast_checker` behind the reference's extraction) and
//! requires zero disagreements in `valid` and `error_type`. Also checks the
//! gold answers on the 995-sample Edge gate set (994/995, `simple_java_36`
//! failing) and the reference's known unpassable entries.
//!
//! Inputs: the fixture (`AGENTLOAD_BFCL_PARITY`, default
//! `~/.cache/agentload/bfcl-parity/parity.jsonl`) and the data
//! (`AGENTLOAD_BFCL_DIR`, default `~/.cache/agentload/data/bfcl_v4`).
//! `AGENTLOAD_SKIP_BFCL_PARITY=1` skips the test.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use bfcl_checker::extract::ModelOutput;
use bfcl_checker::settings::Settings;
use bfcl_checker::verdict::{judge, Expected, Judgement, MALFORMED_CALL_ATTEMPT};
use pysem::json::loads;
use pysem::value::{json_string, Value};

const SUBSETS: [&str; 13] = [
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "irrelevance",
    "live_irrelevance",
    "live_relevance",
];

const HOW_TO_GENERATE: &str = "generate it with: python3 tests/bfcl-parity/gen_parity.py \
     ~/.cache/agentload/data/bfcl_eval_src [--data DIR] [--out FILE] \
     (scripts/fetch-bfcl.sh --checker DIR unpacks the checker and data), \
     or set AGENTLOAD_SKIP_BFCL_PARITY=1 to skip";

fn home_path(rel: &str) -> PathBuf {
    PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into())).join(rel)
}

fn category(subset: &str) -> &'static str {
    match subset {
        "irrelevance" | "live_irrelevance" => "hallucination",
        s if s.starts_with("live_") => "live",
        _ => "non_live",
    }
}

fn language(subset: &str) -> &'static str {
    match subset {
        "simple_java" => "java",
        "simple_javascript" => "javascript",
        _ => "python",
    }
}

fn jsonl(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| loads(l).unwrap_or_else(|| panic!("{}: bad JSON line", path.display())))
        .collect()
}

/// Every single-turn entry as the workload's `expected-json` would carry it,
/// in file order per subset.
fn load_entries(
    dir: &Path,
) -> (
    HashMap<String, Expected>,
    BTreeMap<&'static str, Vec<String>>,
) {
    let mut entries = HashMap::new();
    let mut order = BTreeMap::new();
    for subset in SUBSETS {
        let questions = jsonl(&dir.join(format!("BFCL_v4_{subset}.json")));
        let answer_path = dir
            .join("possible_answer")
            .join(format!("BFCL_v4_{subset}.json"));
        let mut answers: HashMap<String, Value> = HashMap::new();
        if answer_path.exists() {
            for a in jsonl(&answer_path) {
                let id = a.get("id").and_then(Value::as_str).unwrap().to_owned();
                answers.insert(id, a.get("ground_truth").cloned().unwrap_or(Value::None));
            }
        }
        let mut ids = Vec::new();
        for q in questions {
            let id = q.get("id").and_then(Value::as_str).unwrap().to_owned();
            let json = format!(
                "{{\"id\":{},\"subset\":{},\"category\":{},\"language\":{},\"functions\":{},\"ground_truth\":{}}}",
                json_string(&id),
                json_string(subset),
                json_string(category(subset)),
                json_string(language(subset)),
                q.get("function").unwrap().to_json(),
                answers.get(&id).map_or("null".into(), Value::to_json),
            );
            entries.insert(id.clone(), Expected::parse(&json).unwrap());
            ids.push(id);
        }
        order.insert(subset, ids);
    }
    (entries, order)
}

fn model_output(completion: &serde_json::Value) -> ModelOutput {
    let s = |k: &str| completion[k].as_str().unwrap_or_default().to_owned();
    let calls = completion["tool_calls"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap().to_owned(),
                        c["arguments"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    ModelOutput::new(&s("content"), &s("reasoning_content"), calls)
}

#[derive(Default)]
struct Tally {
    cases: usize,
    agree: usize,
    valid: usize,
}

/// The fixture and the data folder; `None` when the test is skipped.
fn inputs() -> Option<(PathBuf, PathBuf)> {
    if std::env::var("AGENTLOAD_SKIP_BFCL_PARITY").as_deref() == Ok("1") {
        eprintln!("bfcl parity skipped (AGENTLOAD_SKIP_BFCL_PARITY=1)");
        return None;
    }
    let fixture = std::env::var("AGENTLOAD_BFCL_PARITY")
        .map(PathBuf::from)
        .unwrap_or_else(|_| home_path(".cache/agentload/bfcl-parity/parity.jsonl"));
    assert!(
        fixture.exists(),
        "BFCL parity fixture {} is missing; {HOW_TO_GENERATE}",
        fixture.display()
    );
    let data = std::env::var("AGENTLOAD_BFCL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| home_path(".cache/agentload/data/bfcl_v4"));
    assert!(
        data.join("BFCL_v4_simple_python.json").exists(),
        "BFCL v4 data not found in {} (scripts/fetch-bfcl.sh fetches it; or set AGENTLOAD_BFCL_DIR)",
        data.display()
    );
    Some((fixture, data))
}

#[test]
fn parity_with_the_real_checker() {
    let Some((fixture, data)) = inputs() else {
        return;
    };
    let (entries, order) = load_entries(&data);
    assert_eq!(
        entries.len(),
        3641,
        "single-turn entries with answers or a relevance rule"
    );

    let settings = Settings::default();
    let mut per_case: BTreeMap<String, Tally> = BTreeMap::new();
    let mut cases_per_entry: HashMap<String, usize> = HashMap::new();
    let mut gold: HashMap<String, (Judgement, serde_json::Value)> = HashMap::new();
    let mut disagreements: Vec<String> = Vec::new();
    let mut total = 0usize;

    let text = std::fs::read_to_string(&fixture).unwrap();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = case["id"].as_str().unwrap();
        let name = case["case"].as_str().unwrap();
        let expected = entries
            .get(id)
            .unwrap_or_else(|| panic!("fixture id {id} is not in the data"));
        let output = model_output(&case["completion"]);
        let j = judge(expected, Some(&output), &settings);
        let want_valid = case["valid"].as_bool().unwrap();
        let want_type = case["error_type"].as_str();
        let agree = j.valid == want_valid && j.error_type.as_deref() == want_type;
        total += 1;
        *cases_per_entry.entry(id.to_owned()).or_default() += 1;
        let t = per_case.entry(name.to_owned()).or_default();
        t.cases += 1;
        t.agree += usize::from(agree);
        t.valid += usize::from(j.valid);
        if !agree {
            disagreements.push(format!(
                "{id} [{name}]: reference valid={want_valid} {want_type:?}, port valid={} {:?} {:?}\n    completion: {}",
                j.valid,
                j.error_type,
                j.error.first().map(Value::repr),
                case["completion"]
            ));
        }
        if name == "gold" {
            gold.insert(id.to_owned(), (j, case["completion"].clone()));
        }
    }

    eprintln!(
        "bfcl parity: {} entries, {total} cases",
        cases_per_entry.len()
    );
    for (name, t) in &per_case {
        eprintln!(
            "  {name:28} cases {:6}  agree {:6}  valid {:6}",
            t.cases, t.agree, t.valid
        );
    }
    for d in disagreements.iter().take(25) {
        eprintln!("  DISAGREE {d}");
    }
    assert_eq!(cases_per_entry.len(), 3641, "every entry has cases");
    let thin: Vec<_> = cases_per_entry.iter().filter(|(_, n)| **n < 8).collect();
    assert!(thin.is_empty(), "entries with fewer than 8 cases: {thin:?}");
    assert!(
        disagreements.is_empty(),
        "{} of {total} cases disagree with the real checker",
        disagreements.len()
    );

    // Gold answers on the Edge gate set: first n rows of each subset.
    let pct = |subset: &str| match category(subset) {
        "non_live" => 62,
        _ => 10,
    };
    let mut gate_total = 0;
    let mut gate_failures = Vec::new();
    for (subset, ids) in &order {
        if *subset == "live_relevance" {
            continue;
        }
        let n = if ids.len() <= 25 {
            ids.len()
        } else {
            ids.len() * pct(subset) / 100
        };
        for id in &ids[..n] {
            gate_total += 1;
            let (j, _) = gold
                .get(id)
                .unwrap_or_else(|| panic!("no gold case for {id}"));
            if !j.valid {
                gate_failures.push(id.clone());
            }
        }
    }
    eprintln!(
        "gold on the gate set: {}/{gate_total} (failing: {gate_failures:?})",
        gate_total - gate_failures.len()
    );
    assert_eq!(gate_total, 995);
    assert_eq!(gate_failures, vec!["simple_java_36".to_owned()]);

    // The reference's unpassable entries (reference-bfcl-v4.md section 8).
    for (id, error_type) in [
        (
            "live_simple_106-63-0",
            "simple_function_checker:missing_required",
        ),
        (
            "live_simple_112-68-0",
            "simple_function_checker:missing_required",
        ),
        (
            "live_multiple_862-181-3",
            "simple_function_checker:unexpected_param",
        ),
        (
            "live_multiple_964-207-0",
            "simple_function_checker:missing_required",
        ),
        (
            "live_multiple_507-149-4",
            "simple_function_checker:missing_required",
        ),
    ] {
        let (j, _) = &gold[id];
        assert!(!j.valid, "{id} cannot pass");
        assert_eq!(j.error_type.as_deref(), Some(error_type), "{id}");
    }
    // live_multiple_507-149-4 passes only with an origin that normalises to "".
    let (_, completion) = &gold["live_multiple_507-149-4"];
    let call = &completion["tool_calls"][0];
    let mut args: serde_json::Value =
        serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    args["origin_airport"] = serde_json::json!(" - ");
    let output = ModelOutput::new(
        "",
        "",
        vec![(call["name"].as_str().unwrap().to_owned(), args.to_string())],
    );
    let j = judge(
        &entries["live_multiple_507-149-4"],
        Some(&output),
        &settings,
    );
    assert!(j.valid, "{:?}", j.error);
}

/// The checker fixes (off in the reference) on every fixture case: each fix
/// changes exactly the verdicts of its defect and nothing else.
/// - `fix_int_in_float_arrays`: only cases the reference fails with
///   `type_error:nested` (for the parallel checker, as a sub-error) change,
///   none of them on a hallucination subset, and none to another type error;
/// - `fix_malformed_abstention`: only hallucination cases change, all from
///   credited to `irrelevance_error:malformed_call_attempt`, and exactly the
///   fixture's call attempts written as text (`text_call`,
///   `json_array_content`), never an abstention in prose;
/// - both on: the union of the two.
#[test]
fn checker_fixes_change_only_their_defects() {
    let Some((fixture, data)) = inputs() else {
        return;
    };
    let (entries, _) = load_entries(&data);
    let reference = Settings::default();
    let int_fix = Settings {
        fix_int_in_float_arrays: true,
        ..Settings::default()
    };
    let abstention_fix = Settings {
        fix_malformed_abstention: true,
        ..Settings::default()
    };
    let both = Settings {
        fix_int_in_float_arrays: true,
        fix_malformed_abstention: true,
        ..Settings::default()
    };
    let key = |j: &Judgement| (j.valid, j.error_type.clone());
    let (mut by_int, mut by_abstention, mut by_both) = (Vec::new(), Vec::new(), Vec::new());
    let mut int_changes: BTreeMap<String, usize> = BTreeMap::new();
    let mut abstention_cases: BTreeMap<String, usize> = BTreeMap::new();
    let mut attempts_in_text = 0usize;
    let mut missed: Vec<String> = Vec::new();
    let text = std::fs::read_to_string(&fixture).unwrap();
    for (n, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let case: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = case["id"].as_str().unwrap();
        let name = case["case"].as_str().unwrap();
        let expected = &entries[id];
        let output = model_output(&case["completion"]);
        let before = judge(expected, Some(&output), &reference);
        let hallucination = expected.is_hallucination();
        let attempt = hallucination && matches!(name, "text_call" | "json_array_content");
        attempts_in_text += usize::from(attempt);

        let after = judge(expected, Some(&output), &int_fix);
        if key(&after) != key(&before) {
            by_int.push(n);
            // The parallel checker reports it as a sub-error of its match.
            let nested = before.error_type.as_deref() == Some("type_error:nested")
                || before
                    .error
                    .iter()
                    .any(|e| e.repr().contains("'sub_error_type': 'type_error:nested'"));
            assert!(nested, "{id} [{name}]: {:?}", before.error_type);
            assert!(!hallucination, "{id} [{name}]");
            assert!(
                after.valid
                    || !after
                        .error_type
                        .as_deref()
                        .unwrap_or_default()
                        .starts_with("type_error"),
                "{id} [{name}]: {:?}",
                after.error_type
            );
            let to = after.error_type.unwrap_or_else(|| "valid".into());
            *int_changes.entry(format!("{name} -> {to}")).or_default() += 1;
        }

        let after = judge(expected, Some(&output), &abstention_fix);
        if key(&after) != key(&before) {
            by_abstention.push(n);
            assert!(hallucination && before.valid, "{id} [{name}]");
            assert_eq!(
                after.error_type.as_deref(),
                Some(MALFORMED_CALL_ATTEMPT),
                "{id} [{name}]"
            );
            *abstention_cases.entry(name.to_owned()).or_default() += 1;
        }

        if attempt && key(&after) == key(&before) {
            missed.push(format!("{id} [{name}]: {}", case["completion"]));
        }
        if key(&judge(expected, Some(&output), &both)) != key(&before) {
            by_both.push(n);
        }
    }
    eprintln!("fix_int_in_float_arrays: {} cases changed", by_int.len());
    for (change, count) in &int_changes {
        eprintln!("  {change:60} {count:6}");
    }
    eprintln!(
        "fix_malformed_abstention: {} cases changed {abstention_cases:?}",
        by_abstention.len()
    );
    assert!(!by_int.is_empty(), "the fixture has ints in float arrays");
    assert_eq!(
        abstention_cases.keys().collect::<Vec<_>>(),
        ["json_array_content", "text_call"]
    );
    assert!(
        missed.is_empty(),
        "call attempts still credited: {missed:#?}"
    );
    assert_eq!(by_abstention.len(), attempts_in_text);
    let mut union: Vec<usize> = by_int.iter().chain(&by_abstention).copied().collect();
    union.sort_unstable();
    union.dedup();
    assert_eq!(by_both, union);
}
