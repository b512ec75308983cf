//! The tool sandbox on the host side: the tool environment loaded under
//! its limits, workspace archives read and checked against their digest;
//! and the `agentload tools` commands.

pub mod aa_workspaces;
pub mod cli;
pub mod closed;
pub mod fidelity;

use agentload_config::tools::ToolLimitsConfig;
use agentload_plugin_host::tools::{GuestLimits, ToolEnvironment, ToolLimits, WorkspaceSpec};
use agentload_plugin_host::{Limits, PluginEngine};
use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// The limits of `[tools.limits]`, split between the host and the guest.
pub fn limits(config: &ToolLimitsConfig) -> ToolLimits {
    let host = Limits {
        memory_mib: config.memory_mib,
        call_timeout_ms: config.call_timeout_ms,
        // Workspaces arrive as archives, not grants, but are as large.
        granted_file_mib: config.archive_mib.saturating_mul(2).max(16),
        ..Limits::default()
    };
    ToolLimits {
        host,
        fuel_per_call: config.fuel_per_call,
        guest: GuestLimits {
            session_bytes: config.session_mib << 20,
            file_bytes: config.file_mib << 20,
            session_entries: config.session_entries,
            archive_entries: config.archive_entries,
            archive_bytes: config.archive_mib << 20,
            commands: config.commands,
            loop_iterations: config.loop_iterations,
            total_loop_iterations: config.total_loop_iterations,
            work_units: config.work_units,
            output_bytes: config.output_kib.saturating_mul(1024),
        },
    }
}

/// Loads the environment `spec` (a name found where plugins are, or a
/// path), compiled by a metered engine.
pub fn environment(
    spec: &str,
    plugin_dir: Option<&Path>,
    limits: ToolLimits,
) -> Result<Arc<ToolEnvironment>> {
    let path =
        agentload_config::plugin_path::resolve(spec, plugin_dir).map_err(anyhow::Error::msg)?;
    let engine = Arc::new(PluginEngine::metered(agentload_config::cache_dir())?);
    let loaded = engine.load(&path, Limits::bytes(limits.host.component_mib))?;
    Ok(Arc::new(ToolEnvironment::new(engine, &loaded, limits)?))
}

/// A workspace archive read from `path` and, where `sha256` locks it,
/// checked against that digest: another archive is refused before any
/// call runs.
pub fn read_workspace(
    name: &str,
    path: &Path,
    sha256: Option<&str>,
    mount: &str,
    branch: &str,
) -> Result<WorkspaceSpec> {
    let archive = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(want) = sha256 {
        let want = want
            .strip_prefix("sha256:")
            .unwrap_or(want)
            .to_ascii_lowercase();
        let got = hex::encode(Sha256::digest(&archive));
        if got != want {
            bail!(
                "workspace {}: its sha256 is {got}, {want} was asked for: refused",
                path.display()
            );
        }
    }
    Ok(WorkspaceSpec {
        name: name.to_owned(),
        archive,
        mount: mount.to_owned(),
        branch: branch.to_owned(),
    })
}
