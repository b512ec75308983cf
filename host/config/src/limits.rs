//! `[plugins.limits]`: what the plugin host lets each plugin use.

use serde::{Deserialize, Serialize};

/// Resource limits of each plugin (`[plugins.limits]`). Memory and table
/// limits count a store as a whole: every linear memory and table of every
/// core instance of the component together.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// All linear memories of one instance together, in MiB.
    pub memory_mib: u64,
    /// All table elements of one instance together.
    pub table_elements: u64,
    /// Core instances one component may create.
    pub instances: u64,
    /// Linear memories one component may define.
    pub memories: u64,
    /// Tables one component may define.
    pub tables: u64,
    /// Wall-clock limit of one call, in milliseconds (instantiate and
    /// configure included): an epoch ticker counts elapsed time, so a
    /// call is stopped after this long whether it computes or waits.
    pub call_timeout_ms: u64,
    /// `host.log` lines one call may write.
    pub log_lines_per_call: u64,
    /// `host.log` bytes one call may write.
    pub log_bytes_per_call: u64,
    /// `host.log` bytes over the plugin's whole life (all instances).
    pub log_bytes_per_plugin: u64,
    /// The largest component file loaded, in MiB.
    pub component_mib: u64,
    /// The largest data file granted to a plugin, in MiB.
    pub granted_file_mib: u64,
    /// The largest turn request a workload may return, in MiB.
    pub request_mib: u64,
    /// The largest verdicts (all of one `score` call together) a scorer
    /// may return, in MiB.
    pub verdicts_mib: u64,
    /// The largest report a scorer may return, in MiB.
    pub report_mib: u64,
}

impl Default for Limits {
    /// Far above what the official plugins use (see `SECURITY.md`).
    fn default() -> Self {
        Self {
            memory_mib: 512,
            table_elements: 1_000_000,
            instances: 64,
            memories: 16,
            tables: 64,
            call_timeout_ms: 10_000,
            log_lines_per_call: 1_000,
            log_bytes_per_call: 1 << 20,
            log_bytes_per_plugin: 16 << 20,
            component_mib: 64,
            granted_file_mib: 256,
            request_mib: 16,
            verdicts_mib: 256,
            report_mib: 64,
        }
    }
}

impl Limits {
    /// Every limit with its key, for the config check (none may be 0).
    pub fn entries(&self) -> [(&'static str, u64); 14] {
        [
            ("memory_mib", self.memory_mib),
            ("table_elements", self.table_elements),
            ("instances", self.instances),
            ("memories", self.memories),
            ("tables", self.tables),
            ("call_timeout_ms", self.call_timeout_ms),
            ("log_lines_per_call", self.log_lines_per_call),
            ("log_bytes_per_call", self.log_bytes_per_call),
            ("log_bytes_per_plugin", self.log_bytes_per_plugin),
            ("component_mib", self.component_mib),
            ("granted_file_mib", self.granted_file_mib),
            ("request_mib", self.request_mib),
            ("verdicts_mib", self.verdicts_mib),
            ("report_mib", self.report_mib),
        ]
    }

    /// `mib` MiB in bytes.
    pub fn bytes(mib: u64) -> u64 {
        mib.saturating_mul(1 << 20)
    }
}
