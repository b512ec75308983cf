//! A run's headline numbers (the ones compared across runs by the report's
//! delta table and by `agentload diff`), each with its unit and which way
//! is better.

use super::read::RunDir;
use serde::Serialize;
use serde_json::Value;

/// Which direction is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
    /// Neither (a count that should not move).
    Neither,
}

/// One headline number.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Headline {
    /// Stable key, e.g. `performance.ttft_ms.p99`.
    pub key: String,
    /// For people, e.g. `TTFT p99`.
    pub label: String,
    pub unit: &'static str,
    pub value: f64,
    pub better: Better,
}

fn push(
    out: &mut Vec<Headline>,
    key: String,
    label: String,
    unit: &'static str,
    value: Option<f64>,
    better: Better,
) {
    if let Some(value) = value.filter(|v| v.is_finite()) {
        out.push(Headline {
            key,
            label,
            unit,
            value,
            better,
        });
    }
}

/// The percentiles compared per latency series.
const PERCENTILES: [(&str, &str); 4] = [
    ("50.0", "p50"),
    ("90.0", "p90"),
    ("99.0", "p99"),
    ("99.9", "p99.9"),
];

/// Every headline number the run has.
pub fn headlines(run: &RunDir) -> Vec<Headline> {
    let mut out = Vec::new();
    if let Some(s) = &run.summary {
        performance(&mut out, s);
    }
    if let Some(aa) = &run.aa_summary {
        aa_headlines(&mut out, aa);
    }
    if let Some(score) = run.scores.as_ref().and_then(|s| s["score"].as_f64()) {
        push(
            &mut out,
            "performance.score".into(),
            "inline score".into(),
            "",
            Some(score),
            Better::Higher,
        );
    }
    if let Some(a) = &run.accuracy {
        if let Some(b) = a.bfcl() {
            let br = &b["breakdown"];
            push(
                &mut out,
                "accuracy.overall".into(),
                "BFCL overall".into(),
                "%",
                br["overall_accuracy"].as_f64(),
                Better::Higher,
            );
            push(
                &mut out,
                "accuracy.normalized".into(),
                "BFCL normalized".into(),
                "%",
                br["normalized_single_turn_score"].as_f64(),
                Better::Higher,
            );
            for (name, v) in br["category_scores"].as_object().into_iter().flatten() {
                push(
                    &mut out,
                    format!("accuracy.category.{name}"),
                    format!("BFCL {name}"),
                    "%",
                    v.as_f64(),
                    Better::Higher,
                );
            }
        }
        if let Some(m) = a.multi_turn() {
            let br = &m["breakdown"];
            push(
                &mut out,
                "accuracy.multi_turn".into(),
                "multi-turn accuracy".into(),
                "%",
                br["multi_turn_accuracy"].as_f64(),
                Better::Higher,
            );
            for (name, v) in br["category_scores"].as_object().into_iter().flatten() {
                push(
                    &mut out,
                    format!("accuracy.{name}"),
                    name.replace('_', " "),
                    "%",
                    v["accuracy"].as_f64(),
                    Better::Higher,
                );
            }
        }
    }
    if let Some(sw) = &run.sweep {
        sweep(&mut out, sw);
    }
    out
}

fn performance(out: &mut Vec<Headline>, s: &Value) {
    let n = |k: &str| s[k].as_f64();
    push(
        out,
        "performance.turns_completed".into(),
        "turns completed".into(),
        "",
        crate::read::succeeded(s),
        Better::Higher,
    );
    push(
        out,
        "performance.turns_failed".into(),
        "turns failed".into(),
        "",
        n("n_samples_failed"),
        Better::Lower,
    );
    push(
        out,
        "performance.turns_aborted".into(),
        "turns aborted".into(),
        "",
        s["agentload"]["n_samples_aborted"].as_f64(),
        Better::Lower,
    );
    push(
        out,
        "performance.duration_s".into(),
        "duration".into(),
        "s",
        n("duration_ns").map(|v| v / 1e9),
        Better::Lower,
    );
    push(
        out,
        "performance.qps".into(),
        "turns per second".into(),
        "1/s",
        n("qps"),
        Better::Higher,
    );
    push(
        out,
        "performance.tps".into(),
        "output tokens per second".into(),
        "tok/s",
        n("tps"),
        Better::Higher,
    );
    let series = [
        ("ttft", "TTFT", &s["ttft"]),
        ("tpot", "TPOT", &s["tpot"]),
        ("tpot_decode", "TPOT decode", &s["agentload"]["tpot_decode"]),
        ("latency", "latency", &s["latency"]),
    ];
    for (key, label, v) in series {
        if v.is_null() {
            continue;
        }
        for (p, pl) in PERCENTILES {
            push(
                out,
                format!("performance.{key}_ms.{pl}"),
                format!("{label} {pl}"),
                "ms",
                v["percentiles"][p].as_f64().map(|x| x / 1e6),
                Better::Lower,
            );
        }
        push(
            out,
            format!("performance.{key}_ms.mean"),
            format!("{label} mean"),
            "ms",
            v["avg"].as_f64().map(|x| x / 1e6),
            Better::Lower,
        );
    }
    for (key, label, v) in [
        ("isl", "ISL", &s["input_sequence_lengths"]),
        ("osl", "OSL", &s["output_sequence_lengths"]),
    ] {
        push(
            out,
            format!("performance.{key}.total"),
            format!("{label} total"),
            "tokens",
            v["total"].as_f64(),
            Better::Neither,
        );
        push(
            out,
            format!("performance.{key}.mean"),
            format!("{label} mean"),
            "tokens",
            v["avg"].as_f64(),
            Better::Neither,
        );
        push(
            out,
            format!("performance.{key}.max"),
            format!("{label} max"),
            "tokens",
            v["max"].as_f64(),
            Better::Neither,
        );
    }
}

fn sweep(out: &mut Vec<Headline>, sw: &super::read::Sweep) {
    for p in sw.phases() {
        if p["level"].as_u64().is_none() {
            continue;
        }
        // `c16` (agents) or `r2.5` (arrivals per second).
        let level = super::sweep::label(p);
        let k = |name: &str| format!("sweep.{level}.{name}");
        let l = |name: &str| format!("{level} {name}");
        push(
            out,
            k("total_tps"),
            l("total throughput"),
            "tok/s",
            p["throughput"]["total_tps"].as_f64(),
            Better::Higher,
        );
        push(
            out,
            k("output_tps"),
            l("output throughput"),
            "tok/s",
            p["throughput"]["output_tps"].as_f64(),
            Better::Higher,
        );
        push(
            out,
            k("speed_p25_tps"),
            l("P25 output speed"),
            "tok/s",
            p["output_speed_tps"]["p25"].as_f64(),
            Better::Higher,
        );
        push(
            out,
            k("ttft_p50_ms"),
            l("TTFT p50"),
            "ms",
            p["ttft_ms"]["p50"].as_f64(),
            Better::Lower,
        );
        push(
            out,
            k("ttft_p90_ms"),
            l("TTFT p90"),
            "ms",
            p["ttft_ms"]["p90"].as_f64(),
            Better::Lower,
        );
        push(
            out,
            k("cached_fraction"),
            l("cached prompt share"),
            "%",
            p["throughput"]["cached_fraction"]
                .as_f64()
                .map(|f| f * 100.0),
            Better::Neither,
        );
        push(
            out,
            k("requests"),
            l("requests"),
            "",
            p["requests"].as_f64(),
            Better::Neither,
        );
        push(
            out,
            k("failed"),
            l("failed turns"),
            "",
            p["errors"]["failed_turns"].as_f64(),
            Better::Lower,
        );
        push(
            out,
            k("send_lag_p99_ms"),
            l("send lag p99"),
            "ms",
            p["send_lag_ms"]["p99"].as_f64(),
            Better::Lower,
        );
    }
    for s in sw.summary["slo"].as_array().into_iter().flatten() {
        let tier = s["tier"].as_str().unwrap_or("?");
        push(
            out,
            format!("sweep.slo.{tier}"),
            format!("SLO {tier}: max agents"),
            "agents",
            s["max_agents"].as_f64().or(Some(0.0)),
            Better::Higher,
        );
    }
}

/// One row of a comparison: the value in each run, by key.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub key: String,
    pub label: String,
    pub unit: &'static str,
    pub better: Better,
    /// One value per run (none where the run lacks it).
    pub values: Vec<Option<f64>>,
}

impl Row {
    /// Run `i` minus the first run, absolute and in % of the first.
    pub fn delta(&self, i: usize) -> Option<(f64, Option<f64>)> {
        let base = self.values.first().copied().flatten()?;
        let v = self.values.get(i).copied().flatten()?;
        let d = v - base;
        Some((d, (base != 0.0).then(|| d / base.abs() * 100.0)))
    }

    /// Whether run `i` is worse than the first (by `better`).
    pub fn worse(&self, i: usize) -> bool {
        match (self.delta(i), self.better) {
            (Some((d, _)), Better::Higher) => d < 0.0,
            (Some((d, _)), Better::Lower) => d > 0.0,
            _ => false,
        }
    }
}

/// The union of the runs' headlines, in first-seen order.
pub fn compare(runs: &[Vec<Headline>]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for (i, hs) in runs.iter().enumerate() {
        for h in hs {
            let row = match rows.iter_mut().position(|r| r.key == h.key) {
                Some(at) => &mut rows[at],
                None => {
                    rows.push(Row {
                        key: h.key.clone(),
                        label: h.label.clone(),
                        unit: h.unit,
                        better: h.better,
                        values: vec![None; runs.len()],
                    });
                    rows.last_mut().expect("just pushed")
                }
            };
            row.values[i] = Some(h.value);
        }
    }
    rows
}

/// A number for a table: 4 significant digits at most, thousands grouped.
pub fn number(v: f64) -> String {
    let a = v.abs();
    let s = if a >= 1000.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    };
    group(&s)
}

fn group(s: &str) -> String {
    let (sign, rest) = s.strip_prefix('-').map_or(("", s), |r| ("-", r));
    let (int, frac) = rest
        .split_once('.')
        .map_or((rest, None), |(a, b)| (a, Some(b)));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    match frac {
        Some(f) => format!("{sign}{out}.{f}"),
        None => format!("{sign}{out}"),
    }
}

/// AA's (agentperf-local's) headline, from `aa/summary.json`.
fn aa_headlines(out: &mut Vec<Headline>, s: &Value) {
    for (key, label, value) in [
        (
            "aa.output_tps",
            "AA output tok/s",
            &s["output_tokens_per_second"],
        ),
        (
            "aa.e2e_tps",
            "AA end-to-end tok/s",
            &s["end_to_end_output_tokens_per_second"],
        ),
    ] {
        push(
            out,
            key.into(),
            label.into(),
            "tok/s",
            value.as_f64(),
            Better::Higher,
        );
    }
    let d = &s["latency_distributions_ms"];
    for (key, label, series) in [
        ("ttft", "TTFT", "time_to_first_token"),
        ("e2e", "e2e", "e2e"),
    ] {
        for p in ["p50", "p95"] {
            push(
                out,
                format!("aa.{key}_ms.{p}"),
                format!("AA {label} {p}"),
                "ms",
                d[series][p].as_f64(),
                Better::Lower,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(key: &str, value: f64, better: Better) -> Headline {
        Headline {
            key: key.into(),
            label: key.into(),
            unit: "ms",
            value,
            better,
        }
    }

    #[test]
    fn compare_aligns_keys_and_computes_deltas() {
        let a = vec![
            h("ttft", 100.0, Better::Lower),
            h("only_a", 1.0, Better::Higher),
        ];
        let b = vec![
            h("ttft", 125.0, Better::Lower),
            h("only_b", 2.0, Better::Higher),
        ];
        let rows = compare(&[a, b]);
        let keys: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["ttft", "only_a", "only_b"]);
        assert_eq!(rows[0].delta(1), Some((25.0, Some(25.0))));
        assert!(rows[0].worse(1));
        assert_eq!(rows[1].delta(1), None);
        assert_eq!(rows[2].values, [None, Some(2.0)]);
        let zero = compare(&[
            vec![h("x", 0.0, Better::Higher)],
            vec![h("x", 3.0, Better::Higher)],
        ]);
        assert_eq!(zero[0].delta(1), Some((3.0, None)));
        assert!(!zero[0].worse(1));
    }

    #[test]
    fn numbers_are_grouped_and_rounded() {
        assert_eq!(number(1234567.8), "1,234,568");
        assert_eq!(number(-1234.0), "-1,234");
        assert_eq!(number(123.456), "123.5");
        assert_eq!(number(12.3456), "12.35");
        assert_eq!(number(0.63351), "0.6335");
        assert_eq!(number(42.0), "42");
    }
}
