//! `run_manifest.json`: what produced a run (plugins and datasets by digest,
//! the agentload version, the resolved config).

use crate::plugin::PluginIdentity;
use serde::Serialize;
use std::path::PathBuf;

/// A dataset file granted to a plugin.
#[derive(Debug, Clone, Serialize)]
pub struct DatasetIdentity {
    /// Logical name in the config.
    pub name: String,
    pub path: PathBuf,
    /// `sha256:<hex>`.
    pub digest: String,
}

/// The identity of a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunManifest {
    pub agentload_version: &'static str,
    pub plugins: Vec<PluginIdentity>,
    pub datasets: Vec<DatasetIdentity>,
    pub endpoint: String,
    pub model: String,
    pub test_started_at: String,
}
