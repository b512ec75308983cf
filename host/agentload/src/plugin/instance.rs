//! One sandboxed instance of a component, and the guard around every call:
//! a time limit in epoch ticks, memory accounting, and classification of
//! whatever went wrong into a [`PluginFailure`] naming plugin, call and limit.

use super::engine::{PluginEngine, EPOCH_TICK};
use super::sandbox::StoreState;
use super::PluginFailure;
use serde::{Deserialize, Serialize};
use wasmtime::{Store, Trap};

/// Resource limits applied to each plugin call.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Linear memory cap per instance, in MiB.
    pub memory_mib: u64,
    /// CPU-time limit of one call, in milliseconds (configure included).
    pub call_timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_mib: 512,
            call_timeout_ms: 10_000,
        }
    }
}

/// A store holding one instance of a plugin, with its limits.
pub(crate) struct Sandboxed {
    pub(crate) store: Store<StoreState>,
    plugin: String,
    limits: Limits,
}

impl Sandboxed {
    /// A fresh store for `plugin` under `limits`.
    pub(crate) fn new(engine: &PluginEngine, plugin: &str, limits: Limits) -> Self {
        let memory = usize::try_from(limits.memory_mib << 20).unwrap_or(usize::MAX);
        let mut store = Store::new(engine.engine(), StoreState::new(plugin, memory));
        store.limiter(|state| state.limiter());
        store.epoch_deadline_trap();
        store.set_epoch_deadline(ticks(limits.call_timeout_ms));
        Self {
            store,
            plugin: plugin.to_string(),
            limits,
        }
    }

    /// Renames the plugin in error messages (once `describe` told its name).
    pub(crate) fn set_name(&mut self, name: &str) {
        self.plugin = name.to_string();
        self.store.data_mut().plugin_name = name.to_string();
    }

    /// Runs one call under the time limit and classifies its failure.
    pub(crate) fn call<R>(
        &mut self,
        call: &'static str,
        f: impl FnOnce(&mut Store<StoreState>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginFailure> {
        self.store
            .set_epoch_deadline(ticks(self.limits.call_timeout_ms));
        let store = &mut self.store;
        off_the_runtime(|| f(store)).map_err(|err| self.classify(call, err))
    }

    /// As [`call`](Self::call), for calls that return a WIT `result`.
    pub(crate) fn call_result<R>(
        &mut self,
        call: &'static str,
        f: impl FnOnce(&mut Store<StoreState>) -> wasmtime::Result<Result<R, super::types::PluginError>>,
    ) -> Result<R, PluginFailure> {
        let plugin = self.plugin.clone();
        self.call(call, f)?
            .map_err(|error| PluginFailure::Reported {
                plugin,
                call,
                error,
            })
    }

    fn classify(&self, call: &'static str, err: wasmtime::Error) -> PluginFailure {
        let plugin = self.plugin.clone();
        if self.store.data().memory_limit_hit() {
            return PluginFailure::MemoryLimit {
                plugin,
                call,
                limit_mib: self.limits.memory_mib,
            };
        }
        match err.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => PluginFailure::TimeLimit {
                plugin,
                call,
                limit_ms: self.limits.call_timeout_ms,
            },
            trap => {
                let stderr = self.store.data().stderr_tail();
                let what = match trap {
                    Some(t) => t.to_string(),
                    None => format!("{err:#}"),
                };
                let trap = if stderr.is_empty() {
                    what
                } else {
                    format!("{what} (guest stderr: {stderr})")
                };
                PluginFailure::Trap { plugin, call, trap }
            }
        }
    }
}

/// Runs a guest call outside the async executor's scheduling: WASI's sync
/// bindings (guest stderr, say) block on the tokio runtime themselves, which
/// a runtime worker thread may not do. Needs the multi-thread runtime.
fn off_the_runtime<R>(f: impl FnOnce() -> R) -> R {
    match tokio::runtime::Handle::try_current() {
        Ok(_) => tokio::task::block_in_place(f),
        Err(_) => f(),
    }
}

/// Epoch ticks for a time limit, rounded up, at least one.
fn ticks(limit_ms: u64) -> u64 {
    let tick = EPOCH_TICK.as_millis() as u64;
    limit_ms.div_ceil(tick).max(1)
}
