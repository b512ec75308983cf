//! The reference's aggregation (`BFCLv4Scorer.score`): per-subset means,
//! category scores (non_live hierarchical, live sample-weighted,
//! hallucination unweighted), the overall mean over every issued sample and
//! the normalized mean of the category scores; plus the Edge gate.

use serde_json::{json, Map, Value as Json};

use crate::settings::Settings;
use agentload_sdk::{Gate, GateMetric};

/// `CATEGORY_MAP` (single-turn categories, in the reference's order).
pub const CATEGORIES: [(&str, &[&str]); 3] = [
    (
        "non_live",
        &[
            "simple_python",
            "simple_java",
            "simple_javascript",
            "multiple",
            "parallel",
            "parallel_multiple",
        ],
    ),
    (
        "live",
        &[
            "live_simple",
            "live_multiple",
            "live_parallel",
            "live_parallel_multiple",
        ],
    ),
    ("hallucination", &["irrelevance", "live_irrelevance"]),
];

const SIMPLE_AST: [&str; 3] = ["simple_python", "simple_java", "simple_javascript"];

/// Single-turn subsets scored but outside every category.
const UNSCORED: [&str; 1] = ["live_relevance"];

/// One scored sample.
#[derive(Debug, Clone)]
pub struct Sample {
    pub subset: String,
    pub score: f64,
    /// The sample completed (false: issued but missing).
    pub completed: bool,
    /// Completed with no content, reasoning or tool calls.
    pub empty: bool,
}

/// `np.mean` of a short list: sequential sum over the count.
fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Python `round(x, 2)`.
fn round2(x: f64) -> f64 {
    pysem::num::round(x, 2).unwrap_or(x)
}

fn pct(x: f64) -> Json {
    json!(round2(x * 100.0))
}

/// The report: the reference's accuracy entry for the BFCL dataset, its
/// `breakdown`, and the gate. Returns `(headline score, report JSON)`, the
/// JSON as the reference writes its results (`json.dumps(x, indent=2)`).
pub fn report(samples: &[Sample], settings: &Settings) -> (f64, String, Gate) {
    let mut order: Vec<&str> = Vec::new();
    let mut by_subset: Vec<Vec<f64>> = Vec::new();
    for s in samples {
        match order.iter().position(|o| *o == s.subset) {
            Some(i) => by_subset[i].push(s.score),
            None => {
                order.push(&s.subset);
                by_subset.push(vec![s.score]);
            }
        }
    }
    let subset_mean = |name: &str| -> Option<(f64, usize)> {
        order
            .iter()
            .position(|o| *o == name)
            .map(|i| (mean(&by_subset[i]), by_subset[i].len()))
    };

    let mut categories: Vec<(&str, f64)> = Vec::new();
    for (category, subsets) in CATEGORIES {
        let present: Vec<(&str, f64, usize)> = subsets
            .iter()
            .filter_map(|s| subset_mean(s).map(|(m, n)| (*s, m, n)))
            .collect();
        if present.is_empty() {
            continue;
        }
        let value = match category {
            "live" => {
                let total: usize = present.iter().map(|p| p.2).sum();
                present.iter().map(|p| p.1 * p.2 as f64).sum::<f64>() / total as f64
            }
            "non_live" => {
                let simple: Vec<f64> = SIMPLE_AST
                    .iter()
                    .filter_map(|s| subset_mean(s).map(|m| m.0))
                    .collect();
                let mut top: Vec<f64> = Vec::new();
                if !simple.is_empty() {
                    top.push(mean(&simple));
                }
                top.extend(
                    present
                        .iter()
                        .filter(|p| !SIMPLE_AST.contains(&p.0))
                        .map(|p| p.1),
                );
                mean(&top)
            }
            _ => mean(&present.iter().map(|p| p.1).collect::<Vec<_>>()),
        };
        categories.push((category, value));
    }

    let issued = samples.len();
    let completed = samples.iter().filter(|s| s.completed).count();
    let missing = issued - completed;
    let empty = samples.iter().filter(|s| s.empty).count();
    let overall = if issued == 0 {
        0.0
    } else {
        mean(&samples.iter().map(|s| s.score).collect::<Vec<_>>())
    };
    let normalized = if categories.is_empty() {
        0.0
    } else {
        mean(&categories.iter().map(|c| c.1).collect::<Vec<_>>())
    };

    let mut subset_scores = Map::new();
    let mut unscored = Map::new();
    for (i, name) in order.iter().enumerate() {
        let m = mean(&by_subset[i]);
        subset_scores.insert((*name).into(), pct(m));
        if UNSCORED.contains(name) {
            unscored.insert((*name).into(), pct(m));
        }
    }
    let mut category_scores = Map::new();
    for (name, v) in &categories {
        category_scores.insert((*name).into(), pct(*v));
    }
    let overall_pct = round2(overall * 100.0);
    let normalized_pct = round2(normalized * 100.0);

    let metric = |name: &str, value: f64, golden: f64| {
        let threshold = golden * settings.gate_factor;
        let rule = format!("{} x {golden:.2}", settings.gate_factor);
        let json = json!({"value": value, "golden": golden, "threshold": threshold, "passed": value >= threshold});
        (GateMetric::at_least(name, value, threshold, rule), json)
    };
    let (overall_metric, overall_gate) = metric(
        "bfcl_overall_accuracy",
        overall_pct,
        settings.golden_overall,
    );
    let (normalized_metric, normalized_gate) = metric(
        "bfcl_normalized_accuracy",
        normalized_pct,
        settings.golden_normalized,
    );
    let gate = Gate::of(vec![overall_metric, normalized_metric]);
    let passed = gate.passed;

    let mut report = json!({
        "dataset_name": "bfcl_v4::function_calling",
        "dataset_type": "accuracy",
        "extractor": "function_call_extractor",
        "ground_truth_column": "ground_truth",
        "score": overall,
        "unit_samples": issued,
        "num_repeats": 1,
        "total_samples": completed,
        "complete": missing == 0,
        "breakdown": {
            "overall_accuracy": overall_pct,
            "normalized_single_turn_score": normalized_pct,
            "category_scores": category_scores,
            "subset_scores": subset_scores,
            "unscored_subsets": unscored,
            "total_samples": completed,
            "issued_samples": issued,
            "complete": missing == 0,
        },
        "response_counts": {"issued": issued, "scored": completed, "empty": empty, "missing": missing},
        "gate": {
            "factor": settings.gate_factor,
            "metrics": {
                "bfcl_overall_accuracy": overall_gate,
                "bfcl_normalized_accuracy": normalized_gate,
            },
            "passed": passed,
        },
    });
    // Not the reference's: a scorer with checker fixes on says so (the key is
    // absent with the reference's settings).
    let fixes = settings.fixes();
    if !fixes.is_empty() {
        report["checker_fixes"] = json!(fixes);
    }
    (
        overall,
        pysem::json::dumps_with(&report, &pysem::json::Format::indented(2)),
        gate,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(spec: &[(&str, usize, usize)]) -> Vec<Sample> {
        let mut out = Vec::new();
        for (subset, passed, total) in spec {
            for i in 0..*total {
                out.push(Sample {
                    subset: (*subset).into(),
                    score: if i < *passed { 1.0 } else { 0.0 },
                    completed: true,
                    empty: false,
                });
            }
        }
        out
    }

    #[test]
    fn hierarchy_weights_and_gate() {
        let s = samples(&[
            ("simple_python", 1, 2),
            ("simple_java", 1, 1),
            ("multiple", 0, 2),
            ("live_simple", 1, 1),
            ("live_multiple", 0, 3),
            ("irrelevance", 1, 1),
            ("live_irrelevance", 0, 1),
            ("live_relevance", 1, 1),
        ]);
        let (score, json, gate) = report(&s, &Settings::default());
        let r: Json = serde_json::from_str(&json).unwrap();
        let b = &r["breakdown"];
        // non_live = mean(mean(0.5, 1.0), 0.0) = 0.375
        assert_eq!(b["category_scores"]["non_live"], json!(37.5));
        // live = (1*1 + 0*3) / 4
        assert_eq!(b["category_scores"]["live"], json!(25.0));
        assert_eq!(b["category_scores"]["hallucination"], json!(50.0));
        assert_eq!(b["unscored_subsets"]["live_relevance"], json!(100.0));
        assert_eq!(b["overall_accuracy"], json!(41.67));
        // (37.5 + 25 + 50) / 3
        assert_eq!(b["normalized_single_turn_score"], json!(37.5));
        assert_eq!(score, 5.0 / 12.0);
        assert_eq!(r["gate"]["passed"], json!(false));
        // The typed gate says what the JSON says.
        assert!(!gate.passed);
        assert_eq!(gate.metrics[0].name, "bfcl_overall_accuracy");
        assert_eq!(gate.metrics[0].value, 41.67);
        assert_eq!(gate.metrics[0].minimum, Some(86.23 * 0.97));
        assert_eq!(gate.metrics[0].rule, "0.97 x 86.23");
        assert_eq!(gate.metrics[1].name, "bfcl_normalized_accuracy");
        assert_eq!(
            r["gate"]["metrics"]["bfcl_overall_accuracy"]["threshold"],
            json!(86.23 * 0.97)
        );
        assert!(json.starts_with("{\n  \"dataset_name\": \"bfcl_v4::function_calling\",\n"));
        assert!(r.get("checker_fixes").is_none());
        let fixed = Settings {
            fix_malformed_abstention: true,
            ..Settings::default()
        };
        let (_, with_fix, _) = report(&s, &fixed);
        let r2: Json = serde_json::from_str(&with_fix).unwrap();
        assert_eq!(
            r2["checker_fixes"],
            json!(["fix_malformed_abstention (gorilla#1362, gorilla#443)"])
        );
        assert_eq!(r2["breakdown"], r["breakdown"]);
    }

    #[test]
    fn missing_samples_count_as_issued() {
        let mut s = samples(&[("simple_python", 1, 1)]);
        s.push(Sample {
            subset: "simple_python".into(),
            score: 0.0,
            completed: false,
            empty: false,
        });
        let (score, json, _) = report(&s, &Settings::default());
        let r: Json = serde_json::from_str(&json).unwrap();
        assert_eq!(score, 0.5);
        assert_eq!(r["breakdown"]["total_samples"], json!(1));
        assert_eq!(r["breakdown"]["issued_samples"], json!(2));
        assert_eq!(r["complete"], json!(false));
        assert_eq!(r["response_counts"]["missing"], json!(1));
    }
}
