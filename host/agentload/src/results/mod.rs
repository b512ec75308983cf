//! Result files, with the reference's names and keys where it has them:
//! `performance/result_summary.json`, `scores.json`, `config.yaml`, plus
//! agentload's `turns.jsonl`, `run_manifest.json` and `report.txt`.

mod manifest;
mod report;
mod summary;

pub use manifest::{DatasetIdentity, PluginSeal, RunManifest, SealRecord};
pub use report::write_report;
pub use summary::{reference_config, summarize, PerformanceSummary, TimingError};

use std::path::Path;

/// Writes `value` as pretty JSON to `path`, creating parent directories.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    text.push('\n');
    std::fs::write(path, text)
}
