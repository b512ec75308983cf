//! A full edge run (`agentload demo`: 1,007 replay turns and the 995-sample
//! gate against the in-process simulator) in a child process, for its wall
//! time and peak RSS; then its recorded completions re-scored.

use super::Row;
use crate::rescore::{rescore, RescoreOptions};
use anyhow::{Context as _, Result};
use std::path::Path;
use std::time::Instant;

/// Runs the demo into `dir` and re-scores it `repeats` times.
pub fn run(dir: &Path, repeats: usize) -> Result<Vec<Row>> {
    let exe = std::env::current_exe().context("cannot find the agentload binary")?;
    let t = Instant::now();
    let status = std::process::Command::new(exe)
        .args(["demo", "--out"])
        .arg(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .context("cannot run agentload demo")?;
    anyhow::ensure!(status.success(), "agentload demo failed ({status})");
    let wall = t.elapsed().as_secs_f64();
    let mut rows = vec![Row::new("edge", "demo wall time (both phases)", wall, "s")];
    rows.push(Row::new(
        "edge",
        "demo peak RSS",
        super::children_usage().max_rss_kib as f64 / 1024.0,
        "MiB",
    ));
    let mut times: Vec<(String, Vec<f64>)> = Vec::new();
    for i in 0..repeats {
        let out = dir.join(format!("rescore-{i}"));
        let result = rescore(&RescoreOptions {
            run_dir: dir.to_path_buf(),
            scorer: None,
            out: Some(out),
            instances: None,
        })?;
        for p in result.phases {
            let label = format!("score {} ({} items)", p.scorer.name, p.items);
            match times.iter_mut().find(|(l, _)| *l == label) {
                Some((_, v)) => v.push(p.scoring_ms),
                None => times.push((label, vec![p.scoring_ms])),
            }
        }
    }
    for (label, mut v) in times {
        rows.push(Row::new(
            "edge",
            format!("{label}, median"),
            super::percentile(&mut v, 50.0),
            "ms",
        ));
    }
    Ok(rows)
}
