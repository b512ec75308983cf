//! `agentload diff A B`: what changed between two results: two runs (their
//! performance and sweep numbers), or a run and its re-score with another
//! scorer version (every per-sample verdict that differs, and every
//! aggregate number that moved).
//!
//! A and B are result directories (a run's output or a rescore's); each
//! report they both hold is compared: `performance/result_summary.json` and
//! `sweep/summary.json` by their headline numbers (percentiles, throughput,
//! token counts; per concurrency level for sweeps), with deltas;
//! `accuracy/accuracy_results.json` with `accuracy/samples.jsonl` (by
//! `item_id`), and `scores.json` with its `per_turn` rows (by conversation,
//! repeat and turn); `turns.jsonl` by the lengths of the turns both
//! completed, turn by turn (a live run against its recorded twin: the ISL
//! drift). The text form summarises (changed numbers, the first sample
//! changes); `--all` lists everything.

use crate::error::{io, ReportError, Result};
use crate::read::RunDir;
use agentload_results::live::DriftStats;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// One sample whose verdict changed.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SampleChange {
    pub key: String,
    pub before: Value,
    pub after: Value,
}

/// One aggregate number that changed (JSON path, e.g. `subset_scores.simple_python`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct AggregateChange {
    pub path: String,
    pub before: Value,
    pub after: Value,
}

/// One headline number in both results (see [`crate::headline`]).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NumberChange {
    pub key: String,
    pub label: String,
    pub unit: &'static str,
    pub before: Option<f64>,
    pub after: Option<f64>,
    /// after − before.
    pub delta: Option<f64>,
    /// The delta in % of before (none when before is 0).
    pub delta_pct: Option<f64>,
}

impl NumberChange {
    /// Whether the number moved (or is only on one side).
    pub fn changed(&self) -> bool {
        self.before != self.after
    }
}

/// The differences of one report.
#[derive(Debug, Clone, Serialize, Default)]
pub struct ReportDiff {
    pub report: String,
    pub samples_compared: usize,
    pub samples: Vec<SampleChange>,
    pub aggregates: Vec<AggregateChange>,
    /// Headline numbers (performance and sweep reports), changed or not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub numbers: Vec<NumberChange>,
    /// Per-turn token drift (`turns.jsonl` of both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turns: Option<TurnDrift>,
}

/// How the turns both results completed differ in length, turn by turn
/// (B − A, tokens): with a recorded run as A and a live run of the same data
/// as B, the ISL drift against the recording and the OSL against the
/// recorded replies' (when A ran against the oracle).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TurnDrift {
    /// (session, turn) pairs completed in both.
    pub paired: usize,
    pub isl: DriftStats,
    pub osl: DriftStats,
}

/// A turn's ISL and OSL.
type Lengths = (Option<u64>, Option<u64>);

/// The drift of the turns `a` and `b` both completed; none without any.
fn turn_drift(a: &RunDir, b: &RunDir) -> Option<TurnDrift> {
    let lengths = |r: &RunDir| -> BTreeMap<(String, u32), Lengths> {
        r.turns
            .iter()
            .filter(|t| t.completed())
            .map(|t| ((t.session_id.clone(), t.turn), (t.isl(), t.osl())))
            .collect()
    };
    let (la, lb) = (lengths(a), lengths(b));
    let pairs: Vec<(&Lengths, &Lengths)> = la
        .iter()
        .filter_map(|(k, va)| Some((va, lb.get(k)?)))
        .collect();
    let delta = |pick: fn(&Lengths) -> Option<u64>| -> Vec<f64> {
        pairs
            .iter()
            .filter_map(|(x, y)| Some(pick(y)? as f64 - pick(x)? as f64))
            .collect()
    };
    Some(TurnDrift {
        paired: pairs.len(),
        isl: DriftStats::of(delta(|v| v.0))?,
        osl: DriftStats::of(delta(|v| v.1))?,
    })
}

/// The headline numbers under `prefix` of two results, side by side.
fn numbers(a: &RunDir, b: &RunDir, prefix: &str) -> Vec<NumberChange> {
    let pick = |r: &RunDir| -> Vec<crate::headline::Headline> {
        crate::headline::headlines(r)
            .into_iter()
            .filter(|h| h.key.starts_with(prefix))
            .collect()
    };
    crate::headline::compare(&[pick(a), pick(b)])
        .into_iter()
        .map(|row| {
            let d = row.delta(1);
            NumberChange {
                before: row.values[0],
                after: row.values[1],
                delta: d.map(|d| d.0),
                delta_pct: d.and_then(|d| d.1),
                key: row.key,
                label: row.label,
                unit: row.unit,
            }
        })
        .collect()
}

/// Compares the reports two result directories share.
pub fn diff(a: &Path, b: &Path) -> Result<Vec<ReportDiff>> {
    let mut out = Vec::new();
    let (ra, rb) = (RunDir::read(a)?, RunDir::read(b)?);
    for (report, prefix, both) in [
        (
            "performance/result_summary.json",
            "performance.",
            ra.summary.is_some() && rb.summary.is_some(),
        ),
        (
            "sweep/summary.json",
            "sweep.",
            ra.sweep.is_some() && rb.sweep.is_some(),
        ),
    ] {
        if both {
            out.push(ReportDiff {
                report: report.to_owned(),
                numbers: numbers(&ra, &rb, prefix),
                ..ReportDiff::default()
            });
        }
    }
    if let Some(drift) = turn_drift(&ra, &rb) {
        out.push(ReportDiff {
            report: "turns.jsonl".to_owned(),
            samples_compared: drift.paired,
            turns: Some(drift),
            ..ReportDiff::default()
        });
    }
    if let (Some(ra), Some(rb)) = (
        read_json(&a.join("accuracy/accuracy_results.json"))?,
        read_json(&b.join("accuracy/accuracy_results.json"))?,
    ) {
        let sa = read_samples(&a.join("accuracy/samples.jsonl"))?;
        let sb = read_samples(&b.join("accuracy/samples.jsonl"))?;
        out.push(compare(
            "accuracy/accuracy_results.json",
            &ra,
            &rb,
            &sa,
            &sb,
        ));
    }
    if let (Some(ra), Some(rb)) = (
        read_json(&a.join("scores.json"))?,
        read_json(&b.join("scores.json"))?,
    ) {
        let (sa, sb) = (per_turn(&ra), per_turn(&rb));
        out.push(compare("scores.json", &ra, &rb, &sa, &sb));
    }
    if out.is_empty() {
        return Err(ReportError::Nothing(format!(
            "{} and {} share no report (performance/result_summary.json, sweep/summary.json, \
             accuracy/accuracy_results.json or scores.json)",
            a.display(),
            b.display()
        )));
    }
    Ok(out)
}

fn compare(
    name: &str,
    ra: &Value,
    rb: &Value,
    sa: &BTreeMap<String, Value>,
    sb: &BTreeMap<String, Value>,
) -> ReportDiff {
    let mut d = ReportDiff {
        report: name.to_owned(),
        samples_compared: sa.len().max(sb.len()),
        ..ReportDiff::default()
    };
    for key in sa.keys().chain(sb.keys().filter(|k| !sa.contains_key(*k))) {
        let before = sa.get(key).cloned().unwrap_or(Value::Null);
        let after = sb.get(key).cloned().unwrap_or(Value::Null);
        if before != after {
            d.samples.push(SampleChange {
                key: key.clone(),
                before,
                after,
            });
        }
    }
    walk("", ra, rb, &mut d.aggregates);
    d
}

/// The verdict fields compared per sample.
const VERDICT_KEYS: [&str; 4] = ["score", "valid", "error_type", "excluded"];

fn verdict(row: &Value) -> Value {
    let mut v = serde_json::Map::new();
    for k in VERDICT_KEYS {
        if let Some(x) = row.get(k) {
            v.insert(k.to_owned(), x.clone());
        }
    }
    Value::Object(v)
}

fn read_json(path: &Path) -> Result<Option<Value>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = agentload_fs::read::read_to_string(path).map_err(io("read", path))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| ReportError::Malformed {
            path: path.to_path_buf(),
            message: format!("not JSON: {e}"),
        })
}

fn read_samples(path: &Path) -> Result<BTreeMap<String, Value>> {
    let mut rows = BTreeMap::new();
    if !path.exists() {
        return Ok(rows);
    }
    let text = agentload_fs::read::read_to_string(path).map_err(io("read", path))?;
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let row: Value = serde_json::from_str(line).map_err(|e| ReportError::Malformed {
            path: path.to_path_buf(),
            message: format!("line {}: not JSON: {e}", i + 1),
        })?;
        let key = row["item_id"].as_str().unwrap_or_default().to_owned();
        rows.insert(key, verdict(&row));
    }
    Ok(rows)
}

/// `scores.json` per-turn rows keyed `conversation[#repeat]/turn`.
fn per_turn(report: &Value) -> BTreeMap<String, Value> {
    report["per_turn"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| {
            let key = format!(
                "{}#{}/{}",
                row["conversation_id"].as_str().unwrap_or_default(),
                row["repeat"],
                row["turn"]
            );
            (key, verdict(row))
        })
        .collect()
}

/// Numbers, booleans and strings that differ between two report trees;
/// `per_turn` lists are compared per sample instead.
fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<AggregateChange>) {
    let join = |k: &str| {
        if path.is_empty() {
            k.to_owned()
        } else {
            format!("{path}.{k}")
        }
    };
    match (a, b) {
        (Value::Object(ma), Value::Object(mb)) => {
            for (k, va) in ma {
                if k == "per_turn" {
                    continue;
                }
                walk(&join(k), va, mb.get(k).unwrap_or(&Value::Null), out);
            }
            for (k, vb) in mb.iter().filter(|(k, _)| !ma.contains_key(*k)) {
                walk(&join(k), &Value::Null, vb, out);
            }
        }
        // `accuracy_results.json`'s entries, matched by dataset name.
        (Value::Array(xa), Value::Array(xb))
            if path.ends_with("accuracy_scores") && named(xa) && named(xb) =>
        {
            let name = |e: &Value| e["dataset_name"].as_str().unwrap_or_default().to_owned();
            for ea in xa {
                let eb = xb.iter().find(|eb| name(eb) == name(ea));
                walk(
                    &format!("{path}[{}]", name(ea)),
                    ea,
                    eb.unwrap_or(&Value::Null),
                    out,
                );
            }
            for eb in xb
                .iter()
                .filter(|eb| !xa.iter().any(|ea| name(ea) == name(eb)))
            {
                walk(&format!("{path}[{}]", name(eb)), &Value::Null, eb, out);
            }
        }
        (Value::Array(xa), Value::Array(xb)) if xa.len() == xb.len() => {
            for (i, (va, vb)) in xa.iter().zip(xb).enumerate() {
                walk(&join(&i.to_string()), va, vb, out);
            }
        }
        _ if a != b => out.push(AggregateChange {
            path: path.to_owned(),
            before: a.clone(),
            after: b.clone(),
        }),
        _ => {}
    }
}

/// Every item is an object with a string `dataset_name`.
fn named(entries: &[Value]) -> bool {
    entries
        .iter()
        .all(|e| e.get("dataset_name").is_some_and(Value::is_string))
}

/// Sample and aggregate changes listed per report unless `--all`.
const SUMMARY_ROWS: usize = 10;

/// The differences as text: changed numbers with their deltas, the first
/// changes of each report; `all` lists every number and change.
pub fn render(diffs: &[ReportDiff], all: bool) -> String {
    use crate::headline::number;
    let mut s = String::new();
    let signed = |d: f64| {
        if d > 0.0 {
            format!("+{}", number(d))
        } else {
            number(d)
        }
    };
    for d in diffs {
        if let Some(t) = &d.turns {
            s.push_str(&format!(
                "{}: {} turns completed in both; per turn, B − A (tokens):\n",
                d.report, t.paired
            ));
            for (name, x) in [("ISL", &t.isl), ("OSL", &t.osl)] {
                s.push_str(&format!(
                    "  {name} differs on {} turns: mean {}  p50 {}  p90 {}  min {}  max {}\n",
                    x.changed,
                    signed(x.mean),
                    signed(x.p50),
                    signed(x.p90),
                    signed(x.min),
                    signed(x.max)
                ));
            }
            continue;
        }
        if !d.numbers.is_empty() {
            let changed = d.numbers.iter().filter(|n| n.changed()).count();
            s.push_str(&format!(
                "{}: {changed} of {} numbers changed\n",
                d.report,
                d.numbers.len()
            ));
            let shown: Vec<&NumberChange> =
                d.numbers.iter().filter(|n| all || n.changed()).collect();
            let width = shown.iter().map(|n| n.label.len()).max().unwrap_or(0);
            for n in shown {
                let v = |x: Option<f64>| x.map_or("-".into(), number);
                let delta = match (n.delta, n.delta_pct) {
                    (Some(d), Some(p)) => format!("{} ({p:+.1} %)", signed(d)),
                    (Some(d), None) => signed(d),
                    _ => String::new(),
                };
                s.push_str(&format!(
                    "  {:<width$} {:>6} {:>12} -> {:<12} {delta}\n",
                    n.label,
                    n.unit,
                    v(n.before),
                    v(n.after),
                ));
            }
            if !all && changed < d.numbers.len() {
                s.push_str(&format!(
                    "  ({} unchanged; --all lists them)\n",
                    d.numbers.len() - changed
                ));
            }
            continue;
        }
        s.push_str(&format!(
            "{}: {} of {} samples changed, {} aggregate values changed\n",
            d.report,
            d.samples.len(),
            d.samples_compared,
            d.aggregates.len()
        ));
        let limit = if all { usize::MAX } else { SUMMARY_ROWS };
        for c in d.samples.iter().take(limit) {
            s.push_str(&format!(
                "  sample {}: {} -> {}\n",
                c.key, c.before, c.after
            ));
        }
        if d.samples.len() > limit {
            s.push_str(&format!(
                "  ... {} more samples (--all lists them)\n",
                d.samples.len() - limit
            ));
        }
        for c in d.aggregates.iter().take(limit) {
            s.push_str(&format!("  {}: {} -> {}\n", c.path, c.before, c.after));
        }
        if d.aggregates.len() > limit {
            s.push_str(&format!(
                "  ... {} more aggregate values (--all lists them)\n",
                d.aggregates.len() - limit
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn drift_statistics_are_of_the_per_turn_differences() {
        let d = DriftStats::of(vec![0.0, 5.0, -3.0, 0.0, 10.0]).unwrap();
        assert_eq!(d.changed, 3);
        assert_eq!((d.min, d.max, d.mean), (-3.0, 10.0, 2.4));
        // Lower percentiles over -3, 0, 0, 5, 10.
        assert_eq!((d.p50, d.p90), (0.0, 5.0));
        assert!(DriftStats::of(Vec::new()).is_none());
    }

    #[test]
    fn finds_changed_samples_and_aggregates() {
        let dir = std::env::temp_dir().join(format!("agentload-diff-{}", std::process::id()));
        let (a, b) = (dir.join("a"), dir.join("b"));
        for (d, score, valid) in [(&a, 50.0, false), (&b, 100.0, true)] {
            std::fs::create_dir_all(d.join("accuracy")).unwrap();
            std::fs::write(
                d.join("accuracy/accuracy_results.json"),
                json!({"overall_accuracy": score, "subset_scores": {"x": score, "y": 10.0}})
                    .to_string(),
            )
            .unwrap();
            std::fs::write(
                d.join("accuracy/samples.jsonl"),
                format!(
                    "{}\n{}\n",
                    json!({"item_id": "x_0", "score": 1.0, "valid": true, "error_type": null, "decoded": [1]}),
                    json!({"item_id": "x_1", "score": if valid {1.0} else {0.0}, "valid": valid, "error_type": if valid {Value::Null} else {json!("type_error:nested")}})
                ),
            )
            .unwrap();
        }
        let diffs = diff(&a, &b).unwrap();
        assert_eq!(diffs.len(), 1);
        let d = &diffs[0];
        assert_eq!(d.samples_compared, 2);
        assert_eq!(d.samples.len(), 1);
        assert_eq!(d.samples[0].key, "x_1");
        let paths: Vec<&str> = d.aggregates.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["overall_accuracy", "subset_scores.x"]);
        assert!(render(&diffs, false).contains("1 of 2 samples changed"));
        assert!(diff(&a, &a).unwrap()[0].samples.is_empty());
        // The reference's wrapper: entries are matched by dataset name.
        let mut out = Vec::new();
        walk(
            "",
            &json!({"accuracy_scores": [{"dataset_name": "bfcl", "score": 0.5}, {"dataset_name": "performance", "score": 1.0}]}),
            &json!({"accuracy_scores": [{"dataset_name": "performance", "score": 1.0}, {"dataset_name": "bfcl", "score": 0.75}]}),
            &mut out,
        );
        let paths: Vec<&str> = out.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["accuracy_scores[bfcl].score"]);
        assert!(diff(&a, &dir.join("none")).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn performance_numbers_with_deltas_summarised_unless_all() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for (d, p50, tps) in [(&a, 2_000_000u64, 100.0), (&b, 3_000_000, 100.0)] {
            std::fs::create_dir_all(d.join("performance")).unwrap();
            std::fs::write(
                d.join("performance/result_summary.json"),
                json!({"n_samples_completed": 10, "tps": tps,
                    "ttft": {"percentiles": {"50.0": p50, "99.0": 9_000_000}, "avg": 2.5e6}})
                .to_string(),
            )
            .unwrap();
        }
        let diffs = diff(&a, &b).unwrap();
        assert_eq!(diffs.len(), 1);
        let d = &diffs[0];
        assert_eq!(d.report, "performance/result_summary.json");
        let p50 = d
            .numbers
            .iter()
            .find(|n| n.key == "performance.ttft_ms.p50")
            .unwrap();
        assert_eq!(
            (p50.before, p50.after, p50.delta),
            (Some(2.0), Some(3.0), Some(1.0))
        );
        assert_eq!(p50.delta_pct, Some(50.0));
        let text = render(&diffs, false);
        assert!(
            text.starts_with("performance/result_summary.json: 1 of 5 numbers changed\n"),
            "{text}"
        );
        assert!(
            text.contains("TTFT p50") && text.contains("+1 (+50.0 %)"),
            "{text}"
        );
        assert!(
            !text.contains("TTFT p99"),
            "unchanged numbers are left out: {text}"
        );
        assert!(text.contains("(4 unchanged; --all lists them)"), "{text}");
        let all = render(&diffs, true);
        assert!(
            all.contains("TTFT p99") && !all.contains("unchanged"),
            "{all}"
        );
        // JSON keeps every number.
        assert_eq!(
            serde_json::to_value(&diffs).unwrap()[0]["numbers"]
                .as_array()
                .unwrap()
                .len(),
            5
        );
    }
}
