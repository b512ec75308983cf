//! `agentload telemetry CONFIG`: every telemetry source read once, and what
//! each maps to.

use agentload_config::{base_url, RunConfig};
use agentload_results::exit;
use anyhow::{Context as _, Result};
use std::fmt::Write as _;
use std::path::Path;

/// Reads the config's sources once and prints them; fails when one fails.
pub(super) async fn probe(config: &Path, endpoint: Option<String>) -> Result<u8> {
    let mut cfg = RunConfig::load(config)?;
    if let Some(url) = endpoint {
        cfg.endpoint.url = url;
    }
    cfg.endpoint.url = base_url(&cfg.endpoint.url).map_err(|e| anyhow::anyhow!("endpoint: {e}"))?;
    let telemetry = crate::run::open_telemetry(&cfg)?.with_context(|| {
        format!(
            "{} has no telemetry source ([[telemetry.scrape]], [telemetry.nvml] or \
             sweep.normalize.power_command)",
            config.display()
        )
    })?;
    let probes = telemetry.probe().await;
    let mut text = String::new();
    for p in &probes {
        let what = p.url.as_deref().unwrap_or(&p.kind);
        let families = if p.families.is_empty() {
            String::new()
        } else {
            format!(" [{}]", p.families.join(", "))
        };
        let _ = writeln!(
            text,
            "{} ({what}){families}, {:.1} ms:",
            p.name, p.sample.took_ms
        );
        if let Some(e) = &p.sample.error {
            let _ = writeln!(text, "  FAILED: {e}");
        }
        for note in &p.sample.notes {
            let _ = writeln!(text, "  note: {note}");
        }
        for (field, v) in &p.sample.fields {
            let _ = writeln!(text, "  {field} = {v}");
        }
        for g in &p.sample.gpus {
            let _ = writeln!(text, "  GPU {}: {}", g.index, serde_json::to_string(g)?);
        }
        for (name, v) in &p.sample.captured {
            let _ = writeln!(text, "  {name} = {v}");
        }
        if p.sample.ok() && p.sample.fields.is_empty() && p.sample.captured.is_empty() {
            let _ = writeln!(
                text,
                "  (answered, but with no metric agentload knows or captures)"
            );
        }
    }
    agentload_console::out(&text);
    let failed = probes.iter().filter(|p| !p.sample.ok()).count();
    if failed > 0 {
        anyhow::bail!("{failed} of {} telemetry sources failed", probes.len());
    }
    Ok(exit::SUCCESS)
}
