//! `agentload check DIR`: a datacenter submission's points (one full run
//! per concurrency, `DIR/r<C>/`) against the Endpoints Rules v1.0 region,
//! count, coverage and duration checks (the EV 2026-10-C1 point and curve
//! checks that result files alone decide).

use agentload_results::regions::{check_points, Check, PointRun, Regions};
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
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary)?)
            .with_context(|| format!("{} is not JSON", summary.display()))?;
        let concurrency = v["run_config"]["load_pattern"]["target_concurrency"]
            .as_u64()
            .with_context(|| {
                format!(
                    "{}: no run_config.load_pattern.target_concurrency",
                    summary.display()
                )
            })?;
        points.push(PointRun {
            dir: name,
            concurrency,
            duration_s: v["duration_ns"].as_f64().map(|ns| ns / 1e9),
        });
    }
    points.sort_by_key(|p| p.concurrency);
    Ok(points)
}

/// The checks, as text; the second value says whether every check passed.
pub fn check(dir: &Path, c_max: u64) -> Result<(String, bool)> {
    let points = read_points(dir)?;
    let (regions, checks) =
        check_points(&points, c_max).map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
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
