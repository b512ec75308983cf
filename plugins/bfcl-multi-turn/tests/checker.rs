//! The multi-turn checker against BFCL's own `multi_turn_checker` on four
//! synthetic model outputs per entry (the ground truth itself; the ground
//! truth preceded by model-like variants; one ground-truth call dropped; the
//! variants alone), from `tests/bfcl-multi-parity/gen_multi_parity.py`'s
//! `checker_results.jsonl`: verdict, error type, message and details.

use bfcl_multi_turn::checker::{multi_turn_checker, Entry};
use bfcl_multi_turn::py::from_json;
use bfcl_multi_turn::sim::Globals;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

fn fixture_dir() -> PathBuf {
    if let Ok(d) = std::env::var("BFCL_MULTI_PARITY_DIR") {
        return d.into();
    }
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    PathBuf::from(home).join(".cache/agentload/bfcl-multi-parity")
}

struct GtEntry {
    initial_config: serde_json::Value,
    involved: Vec<String>,
    gt: Vec<Vec<String>>,
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|x| x.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn checker_verdicts_match_bfcl() {
    let dir = fixture_dir();
    let (Ok(gt_text), Ok(ck_text), Ok(lc_text)) = (
        std::fs::read_to_string(dir.join("gt_results.jsonl")),
        std::fs::read_to_string(dir.join("checker_results.jsonl")),
        std::fs::read_to_string(dir.join("long_context.json")),
    ) else {
        if std::env::var("AGENTLOAD_SKIP_BFCL_MULTI").as_deref() == Ok("1") {
            eprintln!("bfcl-multi fixtures missing; skipped (AGENTLOAD_SKIP_BFCL_MULTI=1)");
            return;
        }
        panic!(
            "fixtures missing in {}; generate them with:\n  python3 tests/bfcl-multi-parity/gen_multi_parity.py \
             ~/.cache/agentload/data/bfcl_eval_src ~/.cache/agentload/data/bfcl_v4 {}\n\
             (or set AGENTLOAD_SKIP_BFCL_MULTI=1)",
            dir.display(),
            dir.display()
        );
    };
    let lc = from_json(&serde_json::from_str(&lc_text).expect("long_context.json"));
    let mut entries: HashMap<String, GtEntry> = HashMap::new();
    for line in gt_text.lines().filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("gt line");
        let gt = v["turns"]
            .as_array()
            .expect("turns")
            .iter()
            .map(|t| {
                t.as_array()
                    .expect("turn")
                    .iter()
                    .map(|c| c["call"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .collect();
        entries.insert(
            v["id"].as_str().unwrap_or("").to_string(),
            GtEntry {
                initial_config: v["initial_config"].clone(),
                involved: strings(&v["involved_classes"]),
                gt,
            },
        );
    }
    // (scenario) -> (agree, disagree, with not-ported calls)
    let mut counts: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut globals: HashMap<String, Globals> = HashMap::new();
    let mut shown = 0;
    for line in ck_text.lines().filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("checker line");
        let id = v["id"].as_str().unwrap_or("");
        let scenario = v["scenario"].as_str().unwrap_or("").to_string();
        let model = v["model"].as_str().unwrap_or("");
        let e = &entries[id];
        let decoded: Vec<Vec<Vec<String>>> = v["decoded"]
            .as_array()
            .expect("decoded")
            .iter()
            .map(|turn| turn.as_array().expect("turn").iter().map(strings).collect())
            .collect();
        // One Python process per scenario, entries in order.
        let g = globals
            .entry(scenario.clone())
            .or_insert_with(|| Globals::new(lc.clone()));
        let got = multi_turn_checker(
            &decoded,
            &e.gt,
            &Entry {
                id,
                initial_config: &e.initial_config,
                involved_classes: &e.involved,
            },
            model,
            g,
        );
        let mut got_details = got.details.clone();
        if got.error_type.as_deref() == Some("multi_turn:instance_state_mismatch") {
            got_details.sort();
        }
        let same = got.valid == v["valid"].as_bool().unwrap_or(false)
            && got.error_type.as_deref() == v["error_type"].as_str()
            && got.error_message.as_deref() == v["error_message"].as_str()
            && got_details == strings(&v["details"]);
        let c = counts.entry(scenario.clone()).or_default();
        if !got.not_ported.is_empty() {
            c.2 += 1;
        } else if same {
            c.0 += 1;
        } else {
            c.1 += 1;
            if shown < 10 {
                shown += 1;
                println!(
                    "DISAGREE {id} [{scenario}]\n    python: {} {:?} {:?} {}\n    rust:   {} {:?} {:?} {:?}",
                    v["valid"],
                    v["error_type"].as_str(),
                    v["error_message"].as_str(),
                    v["details"],
                    got.valid,
                    got.error_type,
                    got.error_message,
                    got_details
                );
            }
        }
    }
    println!("\nchecker  scenario   agree  disagree  with-not-ported");
    let mut disagree = 0;
    for (k, (a, d, n)) in &counts {
        println!("         {k:<9}{a:>6}  {d:>8}  {n:>15}");
        disagree += d;
    }
    assert_eq!(disagree, 0, "checker verdicts differ from BFCL's");
}
