//! `agentload check DIR`: a datacenter submission's points (one full run
//! per concurrency, `DIR/r<C>/`) against the Endpoints Rules v1.0 region,
//! count, coverage and duration checks (the EV 2026-10-C1 point and curve
//! checks that result files alone decide).

use agentload_results::regions::{
    check_gates, check_points, gates, Check, OslBands, PointRun, Regions,
};
use anyhow::{Context as _, Result};
use std::path::Path;

/// The points under `dir`: every subdirectory named `r...` with a
/// `result_summary.json` (a submission's layout) or
/// `performance/result_summary.json` (an agentload run directory).
pub fn read_points(dir: &Path) -> Result<Vec<PointRun>> {
    let mut points = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('r') || !entry.file_type()?.is_dir() {
            continue;
        }
        let path = entry.path();
        let summary = ["result_summary.json", "performance/result_summary.json"]
            .iter()
            .map(|f| path.join(f))
            .find(|p| p.is_file())
            .with_context(|| format!("{} has no result_summary.json", path.display()))?;
        let v: serde_json::Value = serde_json::from_slice(&agentload_fs::read::read(&summary)?)
            .with_context(|| format!("{} is not JSON", summary.display()))?;
        let concurrency = v["run_config"]["load_pattern"]["target_concurrency"]
            .as_u64()
            .with_context(|| {
                format!(
                    "{}: no run_config.load_pattern.target_concurrency",
                    summary.display()
                )
            })?;
        let scores: Option<serde_json::Value> = agentload_fs::read::read(path.join("scores.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        let swe_bench_score = swe_bench_score(&path)?;
        points.push(PointRun {
            dir: name,
            concurrency,
            duration_s: v["duration_ns"].as_f64().map(|ns| ns / 1e9),
            inline_score: scores.and_then(|s| s["score"].as_f64()),
            osl_full_run_avg: v["output_sequence_lengths_full_run"]["output_sequence_lengths"]
                ["avg"]
                .as_f64(),
            swe_bench_score,
        });
    }
    points.sort_by_key(|p| p.concurrency);
    Ok(points)
}

/// A point's SWE-bench score: the `swe_bench` entry of its
/// `accuracy_results.json` (a submission's layout) or
/// `accuracy/accuracy_results.json` (an agentload run directory); none
/// without one, or when the run scored nothing (`score` null).
fn swe_bench_score(point: &Path) -> Result<Option<f64>> {
    let Some(file) = ["accuracy_results.json", "accuracy/accuracy_results.json"]
        .iter()
        .map(|f| point.join(f))
        .find(|p| p.is_file())
    else {
        return Ok(None);
    };
    let v: serde_json::Value = serde_json::from_slice(&agentload_fs::read::read(&file)?)
        .with_context(|| format!("{} is not JSON", file.display()))?;
    Ok(v["accuracy_scores"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["dataset_name"] == "swe_bench")
        .and_then(|e| e["score"].as_f64()))
}

/// What `check` applies beyond the regions.
#[derive(Debug, Clone, Copy)]
pub struct Gating<'a> {
    /// A model of `agentload_results::regions::GATES`: its accuracy gates.
    pub model: Option<&'a str>,
    pub bands: OslBands,
    /// The minimum durations are multiplied by this: 1 for the rules, less
    /// for development runs (the check says so).
    pub duration_scale: f64,
}

/// The model whose gates a datacenter ruleset implies.
pub fn model_of_rules(rules: Option<&str>) -> Option<&'static str> {
    match rules? {
        "mlperf-datacenter-agentic-v1.0-qwen3.6" => Some("qwen3.6-35b-a3b"),
        "mlperf-datacenter-agentic-v1.0-kimi-k3" => Some("kimi-k3"),
        _ => None,
    }
}

/// The checks, as text; the second value says whether every check passed.
pub fn check(dir: &Path, c_max: u64, gating: Gating<'_>) -> Result<(String, bool)> {
    let points = read_points(dir)?;
    anyhow::ensure!(
        gating.duration_scale >= 0.0 && gating.duration_scale <= 1.0,
        "--min-duration-scale must be within [0, 1]"
    );
    let (regions, mut checks) = check_points(&points, c_max, gating.duration_scale)
        .map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
    if let Some(model) = gating.model {
        let g = gates(model).with_context(|| {
            let known: Vec<&str> = agentload_results::regions::GATES
                .iter()
                .map(|g| g.model)
                .collect();
            format!(
                "--model {model}: no published gates (known: {})",
                known.join(", ")
            )
        })?;
        checks.extend(check_gates(&points, &regions, g, gating.bands));
    }
    Ok((
        text(&regions, &points, &checks),
        checks.iter().all(|c| c.passed),
    ))
}

fn text(r: &Regions, points: &[PointRun], checks: &[Check]) -> String {
    let span = |x: agentload_results::regions::Range| format!("{}-{}", x.lo, x.hi);
    let mut s = format!(
        "regions (C_min {}, C_max {}): Ultra Low {}, Low {}, Medium {}, High {}, margin {}\n",
        r.c_min,
        r.c_max,
        span(r.ultra_low),
        span(r.low),
        span(r.medium),
        span(r.high),
        span(r.margin)
    );
    for p in points {
        let regions: Vec<&str> = r.of(p.concurrency).into_iter().map(|x| x.name()).collect();
        s.push_str(&format!(
            "  {:<8} c{:<6} {:<22} {}\n",
            p.dir,
            p.concurrency,
            if regions.is_empty() {
                "out of range".to_owned()
            } else {
                regions.join(" + ")
            },
            p.duration_s
                .map_or_else(|| "no duration".to_owned(), |d| format!("{d:.0} s"))
        ));
    }
    for c in checks {
        s.push_str(&format!(
            "{} {}: {}\n",
            if c.passed { "pass" } else { "FAIL" },
            c.name,
            c.detail
        ));
    }
    s
}

/// One point's Pareto coordinates (Rules v1.0: Y `system_tps`, X
/// `e2e_interactivity`).
#[derive(Debug, Clone, serde::Serialize)]
pub struct PointResult {
    pub dir: String,
    pub concurrency: u64,
    /// Output tokens per second of the run's window.
    pub system_tps: Option<f64>,
    /// MLPerf `e2e_interactivity` (Σ output tokens / Σ turn seconds).
    pub e2e_interactivity: Option<f64>,
    pub verdict: String,
    /// No other point is at least as good on both axes and better on one.
    pub non_dominated: bool,
}

/// A point's coordinates from its `result_summary.json`: the rules' point
/// metrics when the run wrote them, else the same formulas on its series.
pub fn point_of(
    dir: &str,
    concurrency: u64,
    summary: &serde_json::Value,
    verdict: &str,
) -> PointResult {
    let system_tps = summary["system_tps"].as_f64().or_else(|| {
        let osl = summary["output_sequence_lengths"]["total"].as_f64()?;
        let secs = summary["duration_ns"].as_f64()? / 1e9;
        (secs > 0.0).then(|| osl / secs)
    });
    let e2e_interactivity = summary["e2e_avg_interactivity"]
        .as_f64()
        .or_else(|| summary["agentload"]["interactivity"]["mlperf_e2e_interactivity"].as_f64());
    PointResult {
        dir: dir.to_owned(),
        concurrency,
        system_tps,
        e2e_interactivity,
        verdict: verdict.to_owned(),
        non_dominated: false,
    }
}

/// Marks the points no other point dominates (≥ on both axes, > on one);
/// a point without both coordinates is never on the frontier.
pub fn mark_frontier(points: &mut [PointResult]) {
    let xy: Vec<Option<(f64, f64)>> = points
        .iter()
        .map(|p| Some((p.e2e_interactivity?, p.system_tps?)))
        .collect();
    for (i, p) in points.iter_mut().enumerate() {
        p.non_dominated = xy[i].is_some_and(|(x, y)| {
            !xy.iter()
                .flatten()
                .any(|&(qx, qy)| qx >= x && qy >= y && (qx > x || qy > y))
        });
    }
}

/// Why every point sends byte-identical prompts, when it does: a replay's
/// salts are the same at every point (the reference's take no seed,
/// `seeded64` takes the one `salt_seed`), and without salts nothing
/// differs, so a server kept up between points can serve a later point from
/// the prefix cache an earlier one filled (datacenter spec §8 row 2).
fn same_prompts_every_point(config: &agentload_config::RunConfig) -> Option<String> {
    let phase = config.performance.as_ref()?;
    (phase.workload == "coding-replay").then(|| {
        let salted = phase.settings.get("enable_salt").and_then(|v| v.as_bool()) == Some(true);
        format!(
            "every point sends the same prompts ({}): restart or flush the server between \
             points, or its prefix cache carries one point's prompts into the next",
            if salted {
                "the salts are the same at every point"
            } else {
                "no salts"
            }
        )
    })
}

/// `agentload run CONFIG --points C1,C2,...`: one full run per concurrency
/// into `OUT/r<C>/` (each as `agentload run` would write it), then
/// `OUT/points.json` with each point's Pareto coordinates and, with
/// `c_max`, the region checks. Returns the exit code.
pub async fn run_points(
    config: agentload_config::RunConfig,
    levels: &[u64],
    c_max: Option<u64>,
    duration_scale: f64,
    overrides: &crate::run::Overrides,
    require_valid: bool,
) -> Result<u8> {
    let out = overrides
        .out
        .clone()
        .unwrap_or_else(|| config.report_dir.clone());
    let reuse = same_prompts_every_point(&config).filter(|_| levels.len() > 1);
    if let Some(why) = &reuse {
        agentload_console::line(&format!("warning: {why}"));
    }
    let mut results = Vec::new();
    let mut code = agentload_results::exit::SUCCESS;
    for &c in levels {
        anyhow::ensure!(c >= 1, "--points: a concurrency must be at least 1");
        let mut cfg = config.clone();
        cfg.load.concurrency = c as usize;
        let dir = format!("r{c}");
        agentload_console::line(&format!("point {dir}: concurrency {c}"));
        let result = crate::run::run(
            cfg,
            &crate::run::Overrides {
                out: Some(out.join(&dir)),
                ..overrides.clone()
            },
        )
        .await
        .with_context(|| format!("point {dir}"))?;
        let summary = out.join(&dir).join("performance/result_summary.json");
        let v: serde_json::Value = match agentload_fs::read::read(&summary) {
            Ok(bytes) => serde_json::from_slice(&bytes)?,
            Err(_) => serde_json::Value::Null,
        };
        results.push(point_of(&dir, c, &v, result.verdict()));
        code = code.max(result.exit_code(require_valid));
        if result.interrupted.is_some() {
            break;
        }
    }
    mark_frontier(&mut results);
    let mut text = String::from("points (Y system_tps, X e2e_interactivity; * not dominated):\n");
    for p in &results {
        let f = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1}"));
        text.push_str(&format!(
            "{} {:<8} system_tps {:>10}  e2e_interactivity {:>8}  {}\n",
            if p.non_dominated { '*' } else { ' ' },
            p.dir,
            f(p.system_tps),
            f(p.e2e_interactivity),
            p.verdict
        ));
    }
    if let Some(why) = &reuse {
        text.push_str(&format!("warning: {why}\n"));
    }
    let mut checks = None;
    if let Some(c_max) = c_max {
        let gating = Gating {
            model: model_of_rules(config.rules.as_deref()),
            bands: OslBands::Checker,
            duration_scale,
        };
        let (t, passed) = check(&out, c_max, gating)?;
        text.push_str(&t);
        checks = Some(passed);
        if !passed && (overrides.submission || require_valid) {
            code = code.max(agentload_results::exit::INVALID);
        }
    }
    agentload_fs::OutDir::new(&out).write_json(
        "points.json",
        &serde_json::json!({ "points": results, "region_checks_passed": checks }),
    )?;
    // The page reads the files just written; failing to draw it loses nothing.
    match agentload_report::write_for_run(&out) {
        Ok(path) => text.push_str(&format!("report: {}\n", path.display())),
        Err(e) => agentload_console::line(&format!("error: report.html not written: {e:#}")),
    }
    agentload_console::out(&text);
    Ok(code)
}
