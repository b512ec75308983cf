//! `accuracy/accuracy_results.json` in the reference's wrapper:
//! `{average_accuracy?, osl_tokenization_s?, accuracy_scores: [entry, ...]}`,
//! one entry per scored dataset, the accuracy phase's (its scorer's report,
//! completed with the host's measurements) before the performance phase's
//! inline entry (`dataset_name` and `dataset_type` `"performance"`, left out
//! of `average_accuracy`), as the reference orders them.

use crate::metrics::Series;
use crate::record::{TurnFacts, TurnStatus};
use serde_json::{json, Map, Value};

/// Where the wrapper goes, relative to the run directory.
pub const ACCURACY_RESULTS: &str = "accuracy/accuracy_results.json";

/// The reference's entry keys, in its order.
const ENTRY_KEYS: [&str; 14] = [
    "dataset_name",
    "extractor",
    "ground_truth_column",
    "score",
    "unit_samples",
    "num_repeats",
    "total_samples",
    "duration_s",
    "complete",
    "dataset_type",
    "breakdown",
    "response_counts",
    "output_sequence_lengths",
    "osl_tokenize_s",
];

/// Python's `round(x, 3)` for the seconds fields.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The phase's wall time in seconds: its records' times count from the
/// phase's start, so the last completion (or issue) ends it.
fn phase_seconds(records: &[TurnFacts]) -> f64 {
    let end = records
        .iter()
        .filter_map(|r| r.complete_ns().or(r.issued_ns()))
        .max()
        .unwrap_or(0);
    round3(end as f64 / 1e9)
}

/// The accuracy phase's entry: the scorer's report, when it is a reference
/// entry (it names `dataset_name` and `score`), with the host's
/// `duration_s` and, when local counts were made, the output-length series
/// of the completed non-empty answers and the time spent counting them.
/// The reference's keys come first in its order, the scorer's other keys
/// (agentload's `gate`, ...) after them.
pub fn accuracy_entry(report: &Value, records: &[TurnFacts]) -> Option<Value> {
    let scorer = report.as_object()?;
    if !(scorer.contains_key("dataset_name") && scorer.contains_key("score")) {
        return None;
    }
    let mut host = Map::new();
    host.insert("duration_s".into(), json!(phase_seconds(records)));
    let counted: Vec<_> = records
        .iter()
        .filter(|r| r.status == TurnStatus::Completed)
        .filter_map(|r| r.local_tokens)
        .collect();
    let lengths: Vec<u64> = counted
        .iter()
        .map(|l| u64::from(l.osl))
        .filter(|&n| n > 0)
        .collect();
    if let Some(osl) = Series::of(&lengths, false) {
        let ns: u64 = counted.iter().map(|l| l.osl_count_ns).sum();
        host.insert("output_sequence_lengths".into(), json!(osl));
        host.insert("osl_tokenize_s".into(), json!(round3(ns as f64 / 1e9)));
    }
    let mut entry = Map::new();
    for key in ENTRY_KEYS {
        if let Some(v) = host.get(key).or_else(|| scorer.get(key)) {
            entry.insert(key.into(), v.clone());
        }
    }
    for (k, v) in scorer {
        if !entry.contains_key(k) {
            entry.insert(k.clone(), v.clone());
        }
    }
    Some(Value::Object(entry))
}

/// The performance phase's inline entry: the inline scorer's score over the
/// phase's turns. As the reference: `unit_samples` is the data set's client
/// turns (one pass: each conversation's turns once, whatever the repeats),
/// `total_samples` the phase's issued turns, those skipped after a failure
/// included (the reference issues them).
pub fn performance_entry(score: f64, records: &[TurnFacts]) -> Value {
    let one_pass: std::collections::BTreeSet<(&str, u32)> = records
        .iter()
        .map(|r| (base_conversation(&r.session_id), r.turn))
        .collect();
    let issued = records
        .iter()
        .filter(|r| r.issued_ns().is_some() || r.status == TurnStatus::Aborted)
        .count();
    json!({
        "dataset_name": "performance",
        "extractor": null,
        "ground_truth_column": null,
        "score": score,
        "unit_samples": one_pass.len(),
        "num_repeats": 1,
        "total_samples": issued,
        "duration_s": phase_seconds(records),
        "complete": true,
        "dataset_type": "performance",
    })
}

/// A session's conversation: its id without a `__repeat_<k>` suffix.
fn base_conversation(session_id: &str) -> &str {
    match session_id.rsplit_once("__repeat_") {
        Some((base, k)) if !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => session_id,
    }
}

/// The SWE-bench entry, as the reference writes an external scorer's:
/// `unit_samples` and `total_samples` the evaluated instance count, no
/// phase timing (no request is issued from here), `score` null when the
/// service's run gave none.
pub fn swe_bench_entry(score: Option<f64>, evaluated: usize, complete: bool) -> Value {
    json!({
        "dataset_name": "swe_bench",
        "extractor": null,
        "ground_truth_column": null,
        "score": score,
        "unit_samples": evaluated,
        "num_repeats": 1,
        "total_samples": evaluated,
        "duration_s": 0.0,
        "complete": complete,
        "dataset_type": "accuracy",
    })
}

fn is_performance(entry: &Value) -> bool {
    entry.get("dataset_type").and_then(Value::as_str) == Some("performance")
}

/// The wrapper: the plain mean of the accuracy entries' scores (none when
/// no accuracy entry has a numeric score), the summed counting time (when
/// any entry has one), and the entries, accuracy ones first.
pub fn accuracy_results(entries: &[Value]) -> Value {
    let mut ordered: Vec<&Value> = entries.iter().filter(|e| !is_performance(e)).collect();
    ordered.extend(entries.iter().filter(|e| is_performance(e)));
    let scores: Vec<f64> = ordered
        .iter()
        .filter(|e| !is_performance(e))
        .filter_map(|e| e.get("score").and_then(Value::as_f64))
        .collect();
    let mut out = Map::new();
    if !scores.is_empty() {
        out.insert(
            "average_accuracy".into(),
            json!(scores.iter().sum::<f64>() / scores.len() as f64),
        );
    }
    let times: Vec<f64> = ordered
        .iter()
        .filter_map(|e| e.get("osl_tokenize_s").and_then(Value::as_f64))
        .collect();
    if !times.is_empty() {
        out.insert(
            "osl_tokenization_s".into(),
            json!(round3(times.iter().sum())),
        );
    }
    out.insert(
        "accuracy_scores".into(),
        Value::Array(ordered.into_iter().cloned().collect()),
    );
    Value::Object(out)
}

/// Writes `entries` into `<out>/accuracy/accuracy_results.json`: the
/// wrapper of the entries already there for other datasets (an earlier
/// phase's, say) and these, an entry replacing the one of its
/// `dataset_name`. Nothing is written when there is no entry at all, as the
/// reference.
pub fn write_accuracy_results(
    out: &agentload_fs::OutDir,
    entries: &[Value],
) -> std::io::Result<()> {
    let path = out.path(ACCURACY_RESULTS);
    let name = |e: &Value| e.get("dataset_name").cloned();
    let mut all: Vec<Value> = agentload_fs::read::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|v| v.get("accuracy_scores")?.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|old| !entries.iter().any(|e| name(e) == name(old)))
        .collect();
    all.extend(entries.iter().cloned());
    if all.is_empty() {
        return Ok(());
    }
    out.write_json(ACCURACY_RESULTS, &accuracy_results(&all))?;
    Ok(())
}

/// The accuracy entry of an `accuracy_results.json` wrapper that carries a
/// per-subset breakdown, as the reference's readers find it.
pub fn find_breakdown_entry(results: &Value) -> Option<&Value> {
    results
        .get("accuracy_scores")?
        .as_array()?
        .iter()
        .find(|e| {
            e.get("breakdown")
                .is_some_and(|b| b.get("subset_scores").is_some())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::LocalTokens;
    use crate::TurnRecord;

    fn done(at_ms: u64, osl: u32) -> TurnRecord {
        let mut r = TurnRecord::aborted("s", 1, "s:1", "{}");
        r.status = TurnStatus::Completed;
        r.issued_ns = Some(at_ms * 1_000_000);
        r.complete_ns = Some((at_ms + 500) * 1_000_000);
        r.local_tokens = Some(LocalTokens {
            isl: 10,
            osl,
            osl_after_first: osl.saturating_sub(1),
            osl_count_ns: 1_000_000,
        });
        r
    }

    fn bfcl_report() -> Value {
        json!({"dataset_name": "bfcl_v4::function_calling", "dataset_type": "accuracy",
               "extractor": "function_call_extractor", "ground_truth_column": "ground_truth",
               "score": 0.9, "unit_samples": 3, "num_repeats": 1, "total_samples": 3,
               "complete": true, "breakdown": {"overall_accuracy": 90.0, "subset_scores": {"simple_python": 90.0}},
               "response_counts": {"issued": 3, "scored": 3, "empty": 0, "missing": 0},
               "gate": {"passed": true}})
    }

    #[test]
    fn accuracy_entry_in_reference_order_with_host_measurements() {
        let records = vec![
            done(0, 12),
            done(1000, 0),
            TurnRecord::aborted("t", 1, "t:1", "{}"),
        ];
        let entry = accuracy_entry(&bfcl_report(), &TurnFacts::all(&records)).unwrap();
        let keys: Vec<&str> = entry
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "dataset_name",
                "extractor",
                "ground_truth_column",
                "score",
                "unit_samples",
                "num_repeats",
                "total_samples",
                "duration_s",
                "complete",
                "dataset_type",
                "breakdown",
                "response_counts",
                "output_sequence_lengths",
                "osl_tokenize_s",
                "gate"
            ]
        );
        assert_eq!(entry["duration_s"], 1.5);
        // The empty answer is not counted.
        assert_eq!(entry["output_sequence_lengths"]["total"], 12);
        assert_eq!(entry["osl_tokenize_s"], 0.002);
        assert!(accuracy_entry(&json!({"score": 1.0}), &TurnFacts::all(&records)).is_none());
        assert!(accuracy_entry(&json!([1]), &TurnFacts::all(&records)).is_none());
    }

    /// As the reference: `unit_samples` the data set's client turns once
    /// (repeats are the same turns), `total_samples` every issued turn of
    /// the phase, the ones skipped after a failure included.
    #[test]
    fn the_performance_entry_counts_as_the_reference() {
        let turn = |session: &str, turn: u32, status: TurnStatus| {
            let mut r = done(1, 5);
            r.session_id = session.into();
            r.turn = turn;
            r.status = status;
            if status == TurnStatus::Aborted {
                r.issued_ns = None;
            }
            r
        };
        let records = [
            turn("a", 1, TurnStatus::Completed),
            turn("a", 2, TurnStatus::Completed),
            turn("a__repeat_2", 1, TurnStatus::Failed),
            turn("a__repeat_2", 2, TurnStatus::Aborted),
            turn("b__repeat_x", 1, TurnStatus::Completed),
        ];
        let e = performance_entry(0.5, &TurnFacts::all(&records));
        assert_eq!(e["unit_samples"], 3, "a/1, a/2, b__repeat_x/1: {e}");
        assert_eq!(e["total_samples"], 5);
    }

    #[test]
    fn no_local_counts_no_output_lengths() {
        let mut r = done(0, 5);
        r.local_tokens = None;
        let entry = accuracy_entry(&bfcl_report(), &TurnFacts::all(&[r])).unwrap();
        assert!(entry.get("output_sequence_lengths").is_none());
        assert!(entry.get("osl_tokenize_s").is_none());
        let wrapper = accuracy_results(&[entry]);
        assert!(wrapper.get("osl_tokenization_s").is_none());
    }

    #[test]
    fn phases_add_their_entries_to_the_file() {
        let dir = std::env::temp_dir().join(format!("agentload-accres-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = agentload_fs::OutDir::new(&dir);
        let records = vec![done(0, 3)];
        write_accuracy_results(&out, &[]).unwrap();
        assert!(!dir.join(ACCURACY_RESULTS).exists(), "no entry, no file");
        write_accuracy_results(&out, &[performance_entry(0.5, &TurnFacts::all(&records))]).unwrap();
        let acc = accuracy_entry(&bfcl_report(), &TurnFacts::all(&records)).unwrap();
        write_accuracy_results(&out, &[acc]).unwrap();
        // The performance phase scored again replaces its own entry.
        write_accuracy_results(&out, &[performance_entry(0.75, &TurnFacts::all(&records))])
            .unwrap();
        let text = std::fs::read_to_string(dir.join(ACCURACY_RESULTS)).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let names: Vec<&str> = v["accuracy_scores"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["dataset_name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["bfcl_v4::function_calling", "performance"]);
        assert_eq!(v["accuracy_scores"][1]["score"], 0.75);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn the_swe_bench_entry_has_the_reference_keys_and_comes_before_the_inline_one() {
        let entry = swe_bench_entry(Some(0.5), 4, true);
        let keys: Vec<&str> = entry
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ENTRY_KEYS[..10]);
        assert_eq!(
            (
                entry["unit_samples"].clone(),
                entry["total_samples"].clone()
            ),
            (json!(4), json!(4))
        );
        let perf = performance_entry(0.25, &TurnFacts::all(&[done(0, 3)]));
        let wrapper = accuracy_results(&[perf, entry]);
        assert_eq!(wrapper["average_accuracy"], 0.5);
        assert_eq!(wrapper["accuracy_scores"][0]["dataset_name"], "swe_bench");
        // No score from the service: null, and no average.
        let failed = accuracy_results(&[swe_bench_entry(None, 4, false)]);
        assert!(failed.get("average_accuracy").is_none(), "{failed}");
        assert_eq!(failed["accuracy_scores"][0]["score"], Value::Null);
    }

    #[test]
    fn wrapper_orders_entries_and_averages_accuracy_only() {
        let mut second = done(1000, 4);
        second.turn = 2;
        let records = vec![done(0, 3), second];
        let perf = performance_entry(0.6335, &TurnFacts::all(&records));
        assert_eq!(perf["unit_samples"], 2);
        assert_eq!(perf["total_samples"], 2);
        assert_eq!(perf["dataset_type"], "performance");
        let wrapper = accuracy_results(std::slice::from_ref(&perf));
        assert!(wrapper.get("average_accuracy").is_none(), "{wrapper}");
        assert_eq!(wrapper["accuracy_scores"][0], perf);
        let acc = accuracy_entry(&bfcl_report(), &TurnFacts::all(&records)).unwrap();
        let wrapper = accuracy_results(&[perf, acc]);
        let keys: Vec<&str> = wrapper
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            ["average_accuracy", "osl_tokenization_s", "accuracy_scores"]
        );
        assert_eq!(wrapper["average_accuracy"], 0.9);
        assert_eq!(
            wrapper["accuracy_scores"][0]["dataset_name"],
            "bfcl_v4::function_calling"
        );
        assert_eq!(wrapper["accuracy_scores"][1]["dataset_name"], "performance");
        assert_eq!(find_breakdown_entry(&wrapper).unwrap()["score"], 0.9);
    }
}
