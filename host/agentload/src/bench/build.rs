//! Host + plugin time to produce each request of the edge replay (the
//! workload's `next-turn` call and the request body's JSON), per turn and
//! at the dataset's peak input length; and component load times.

use super::Row;
use crate::config::table_json;
use crate::engine::{request_body, BodyOptions};
use crate::plugin::types::{GrantedFile, PluginConfig, TurnOutcome};
use crate::plugin::{Limits, PluginEngine, WorkloadPlugin};
use anyhow::Result;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Times every turn of every conversation of the edge dataset.
pub fn requests(data_dir: &Path) -> Result<Vec<Row>> {
    let engine = Arc::new(PluginEngine::new(PluginEngine::default_cache_dir())?);
    let path = crate::plugins::resolve("coding-replay", None).map_err(anyhow::Error::msg)?;
    let max = Limits::bytes(Limits::default().component_mib);
    let mut workload =
        WorkloadPlugin::new(engine.clone(), &engine.load(&path, max)?, Limits::default())?;
    let data = crate::data::read(
        data_dir,
        "agentic_coding_2.5h.jsonl",
        Limits::bytes(Limits::default().granted_file_mib),
    )?;
    let plans = workload.configure(PluginConfig {
        settings_json: table_json(&toml::Table::new()),
        files: vec![GrantedFile {
            name: "trajectories".into(),
            file_name: "agentic_coding_2.5h.jsonl".into(),
            bytes: data.bytes,
        }],
    })?;
    let opts = BodyOptions {
        model: "bench".into(),
        stream: true,
        include_usage: true,
        extra: Default::default(),
    };
    // (ms to produce the request, body bytes) per turn.
    let mut turns: Vec<(f64, usize)> = Vec::new();
    for plan in &plans {
        let t = Instant::now();
        let mut next = Some(workload.start_session(&plan.id)?);
        let mut started = t;
        while let Some(req) = next {
            let bytes = request_body(&req, &opts).map_err(anyhow::Error::msg)?.len();
            turns.push((started.elapsed().as_secs_f64() * 1e3, bytes));
            started = Instant::now();
            next = workload.next_turn(&plan.id, &TurnOutcome::Aborted)?;
        }
    }
    let (peak_ms, peak_bytes) = turns
        .iter()
        .copied()
        .max_by_key(|&(_, bytes)| bytes)
        .unwrap_or_default();
    let mean = turns.iter().map(|t| t.0).sum::<f64>() / turns.len().max(1) as f64;
    let mut all: Vec<f64> = turns.iter().map(|t| t.0).collect();
    Ok(vec![
        Row::new("build", "request, mean over 1,007 turns", mean, "ms"),
        Row::new(
            "build",
            "request, p99",
            super::percentile(&mut all, 99.0),
            "ms",
        ),
        Row::new("build", "request at the peak input", peak_ms, "ms"),
        Row::new(
            "build",
            "peak request body",
            peak_bytes as f64 / 1024.0,
            "KiB",
        ),
    ])
}

/// Component load time: compiling (empty cache) vs from the cache.
pub fn loads() -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let max = Limits::bytes(Limits::default().component_mib);
    for name in ["coding-replay", "shell-iou", "bfcl-single", "bfcl-ast"] {
        let path = crate::plugins::resolve(name, None).map_err(anyhow::Error::msg)?;
        let cache = std::env::temp_dir().join(format!(
            "agentload-bench-cache-{}-{name}",
            std::process::id()
        ));
        std::fs::remove_dir_all(&cache).ok();
        std::fs::create_dir_all(&cache)?;
        let engine = PluginEngine::new(Some(cache.clone()))?;
        let t = Instant::now();
        let cold = engine.load(&path, max)?;
        let cold_ms = t.elapsed().as_secs_f64() * 1e3;
        let engine = PluginEngine::new(Some(cache.clone()))?;
        let t = Instant::now();
        let warm = engine.load(&path, max)?;
        let warm_ms = t.elapsed().as_secs_f64() * 1e3;
        anyhow::ensure!(
            !cold.from_cache && warm.from_cache,
            "the compile cache was not used"
        );
        std::fs::remove_dir_all(&cache).ok();
        rows.push(Row::new(
            "load",
            format!("{name} compile (cold)"),
            cold_ms,
            "ms",
        ));
        rows.push(Row::new(
            "load",
            format!("{name} from cache"),
            warm_ms,
            "ms",
        ));
    }
    Ok(rows)
}
