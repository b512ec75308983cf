//! Host-side bindings generated from the current WIT contract in `wit/`
//! (`agentload:plugin@0.4.0`): the types the whole host works with (a turn
//! request as it crosses the boundary; the host's assembled one is
//! [`crate::TurnRequest`]). Older supported versions have a module of their
//! own (`bindings_v0_1_0.rs`, `bindings_v0_2_0.rs`, `bindings_v0_3_0.rs`)
//! that converts to and from these.
//!
//! Both worlds share the `types` and `host` interfaces; the scorer bindings
//! reuse the workload bindings' Rust types so records flow between them.

/// Bindings for the `workload-plugin` world (and the shared interfaces).
pub mod workload {
    wasmtime::component::bindgen!({
        path: "../../wit/agentload-plugin@0.4.0",
        world: "workload-plugin",
        // Messages are compared field for field (a session's next body
        // reuses what its previous one wrote for the same messages).
        additional_derives: [PartialEq],
        // Called with `call_async` (the guest on a fiber): a session's call
        // never blocks a runtime worker. Host imports stay synchronous.
        exports: { default: async },
    });
}

/// Bindings for the `scorer-plugin` world.
pub mod scorer {
    wasmtime::component::bindgen!({
        path: "../../wit/agentload-plugin@0.4.0",
        world: "scorer-plugin",
        with: {
            "agentload:plugin/types": super::workload::agentload::plugin::types,
            "agentload:plugin/host": super::workload::agentload::plugin::host,
        },
    });
}

pub use scorer::exports::agentload::plugin::scorer::{
    Gate, GateMetric, Report, ScoredItem, Verdict,
};
pub use workload::agentload::plugin::types;
pub use workload::exports::agentload::plugin::workload::{
    Divergence, LiveAction, SessionPlan, TurnReview, TurnStep, WorkloadPlan,
};

use super::sandbox::StoreState;
use workload::agentload::plugin::host::Host;
pub(super) use workload::agentload::plugin::host::LogLevel;

impl Host for StoreState {
    fn log(&mut self, level: LogLevel, message: String) {
        log(self, level, &message);
    }
}

/// `host.log`, for every supported WIT version (older ones convert the
/// level), within the plugin's log budget.
pub(super) fn log(state: &StoreState, level: LogLevel, message: &str) {
    let level = match level {
        LogLevel::Trace | LogLevel::Debug => {
            if !agentload_console::verbose() {
                return;
            }
            "debug"
        }
        LogLevel::Info => "info",
        LogLevel::Warn => "warn",
        LogLevel::Error => "error",
    };
    if let super::log_budget::Admit::Write(text) = state.log.admit(message) {
        agentload_console::line(&format!("[plugin {}] {level}: {text}", state.plugin_name));
    }
}

/// A one-line description of a plugin's typed error.
pub fn error_text(error: &types::PluginError) -> String {
    use types::PluginError;
    match error {
        PluginError::InvalidConfig(m) => format!("invalid config: {m}"),
        PluginError::InvalidData(e) if e.line > 0 => {
            format!("invalid data: {}:{}: {}", e.file, e.line, e.message)
        }
        PluginError::InvalidData(e) => format!("invalid data: {}: {}", e.file, e.message),
        PluginError::InvalidInput(m) => format!("invalid input: {m}"),
        PluginError::Internal(m) => format!("internal error: {m}"),
    }
}
