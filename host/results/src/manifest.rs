//! `run_manifest.json`: what produced a run (plugins and datasets by digest,
//! the agentload version, the resolved config).

use agentload_config::seal::PluginIdentity;
use agentload_config::seal::Seal;
use agentload_config::RunKind;
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
    /// Whether every plugin is an official, locked one.
    pub seal: SealRecord,
    /// The benchmark rules checked, their version, the deviations and the
    /// digest of `config.toml`.
    pub compliance: agentload_config::rules::Compliance,
    /// The run's nonce, handed to its workloads (`plugin-config.nonce`).
    pub nonce: String,
    /// What each phase's workload reported about its data and settings,
    /// by phase (`performance`, `accuracy`): a JSON object each.
    pub workload_facts: std::collections::BTreeMap<String, serde_json::Value>,
    /// agentperf-local's preflight of the server (`endpoint.client =
    /// "agentperf-local"`): the served context, the Ollama check, the
    /// `ignore_eos` probe.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aa_preflight: Option<serde_json::Value>,
    /// The context window live-reply and closed-loop requests were checked
    /// against, and its source (`model.context_window`, or the server's
    /// answer that reported it); absent when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_window: Option<ContextWindowFact>,
}

/// A context window and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextWindowFact {
    pub tokens: u64,
    pub source: String,
}

/// The run's sealing: its mode and each plugin's status against
/// `plugins/official.lock`.
#[derive(Debug, Clone, Serialize)]
pub struct SealRecord {
    pub mode: RunKind,
    /// Every plugin is in the lock.
    pub sealed: bool,
    pub plugins: Vec<PluginSeal>,
}

/// One plugin file's seal.
#[derive(Debug, Clone, Serialize)]
pub struct PluginSeal {
    pub file: String,
    pub digest: String,
    #[serde(flatten)]
    pub seal: Seal,
}
