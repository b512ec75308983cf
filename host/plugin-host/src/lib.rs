//! The plugin host: loads WebAssembly components with wasmtime and runs them
//! sandboxed, with store-wide memory and table caps, a wall-clock limit on
//! every call, and bounded output (log lines, requests, verdicts, reports).
//!
//! Plugins see only what the WIT contract (`wit/`) passes them; WASI is linked
//! with no files, sockets, environment, clock or entropy (see [`sandbox`]).

pub mod api;
mod bindings;
mod bindings_older;
mod bindings_v0_1_0;
mod bindings_v0_2_0;
mod bindings_v0_3_0;
mod blocking;
mod cache_key;
mod compiler;
mod instance;
mod intern;
mod log_budget;
pub mod message;
pub mod request;
mod sandbox;
mod scorer;
mod ticker;
pub mod tools;
mod workload;

pub use agentload_config::{seal::PluginIdentity, Limits};
pub use api::{ComponentApi, WitVersion, World};
pub use bindings::types;
pub use bindings::{
    Divergence, Gate, GateMetric, LiveAction, Report, ScoredItem, SessionPlan, TurnReview, Verdict,
};
pub use blocking::block_on;
pub use compiler::{read_component, LoadedComponent, PluginEngine};
pub use message::Message;
pub use request::TurnRequest;
pub use sandbox::TOOLS_EPOCH;
pub use scorer::{ScoreTimings, Scored, ScorerPlugin};
pub use workload::{Step, WorkloadPlugin};

use std::path::PathBuf;

/// Why a plugin could not be loaded or a call into it failed.
#[derive(Debug, thiserror::Error)]
pub enum PluginFailure {
    /// The wasmtime engine could not be set up.
    #[error("plugin engine: {0}")]
    Engine(String),
    /// The component could not be read or compiled.
    #[error("cannot load plugin {}: {reason}", path.display())]
    Load { path: PathBuf, reason: String },
    /// The component does not implement the expected world.
    #[error("plugin {plugin}: not a valid {world} component: {reason}")]
    Instantiate {
        plugin: String,
        world: &'static str,
        reason: String,
    },
    /// The component was built against a WIT package version this host
    /// has no bindings for (see `wit/README.md`).
    #[error(
        "plugin {plugin} was built against {found}, which this agentload does not support \
         (supported: {supported}); rebuild it with a supported agentload-sdk / WIT package"
    )]
    UnsupportedWit {
        plugin: String,
        found: String,
        supported: String,
    },
    /// A call ran past its wall-clock limit and was interrupted.
    #[error(
        "plugin {plugin}: `{call}` exceeded its time limit of {limit_ms} ms \
         (plugins.limits.call_timeout_ms, wall time) and was stopped"
    )]
    TimeLimit {
        plugin: String,
        call: &'static str,
        limit_ms: u64,
    },
    /// A tool call spent its fuel (a metered store's deterministic budget of
    /// executed instructions).
    #[error("plugin {plugin}: `{call}` spent its fuel budget and was stopped")]
    FuelLimit { plugin: String, call: &'static str },
    /// A call tried to grow memory past the cap (all linear memories of
    /// the instance together).
    #[error(
        "plugin {plugin}: `{call}` exceeded its memory limit of {limit_mib} MiB \
         (all linear memories together, plugins.limits.memory_mib) and was stopped"
    )]
    MemoryLimit {
        plugin: String,
        call: &'static str,
        limit_mib: u64,
    },
    /// A call went past another store-wide limit: table elements, or the
    /// number of instances, memories or tables.
    #[error(
        "plugin {plugin}: `{call}` exceeded plugins.limits.{limit} = {value} ({detail}) \
         and was stopped"
    )]
    ResourceLimit {
        plugin: String,
        call: &'static str,
        limit: &'static str,
        value: u64,
        detail: String,
    },
    /// A call returned more than the host accepts.
    #[error(
        "plugin {plugin}: `{call}` returned {what} of {bytes} bytes, over \
         plugins.limits.{limit} = {limit_mib} MiB"
    )]
    OutputLimit {
        plugin: String,
        call: &'static str,
        what: &'static str,
        bytes: usize,
        limit: &'static str,
        limit_mib: u64,
    },
    /// The guest trapped (a panic, an unreachable, a bad access).
    #[error("plugin {plugin}: `{call}` trapped: {trap}")]
    Trap {
        plugin: String,
        call: &'static str,
        trap: String,
    },
    /// A call returned what the contract forbids (a turn keeping more
    /// messages than the session's previous request had).
    #[error("plugin {plugin}: `{call}` broke the contract: {why}")]
    Contract {
        plugin: String,
        call: &'static str,
        why: String,
    },
    /// The plugin reported a typed error.
    #[error("plugin {plugin}: `{call}` failed: {}", bindings::error_text(error))]
    Reported {
        plugin: String,
        call: &'static str,
        error: types::PluginError,
    },
}

impl PluginFailure {
    /// Whether the instance is unusable after this failure (it trapped).
    pub fn poisons_instance(&self) -> bool {
        matches!(
            self,
            Self::TimeLimit { .. }
                | Self::FuelLimit { .. }
                | Self::MemoryLimit { .. }
                | Self::ResourceLimit { .. }
                | Self::Trap { .. }
        )
    }
}
