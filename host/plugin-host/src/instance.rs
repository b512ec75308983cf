//! One sandboxed instance of a component, and the guard around every call:
//! a time limit in epoch ticks (wall clock for sync calls; for async ones
//! the ticks the guest ran, since it yields at each), store-wide memory and table
//! accounting, bounded outputs, and classification of whatever went wrong
//! into a [`PluginFailure`] naming plugin, call and limit.

use super::compiler::PluginEngine;
use super::log_budget::LogBudget;
use super::sandbox::{LimitHit, StoreState};
use super::ticker::{CallRunning, Calls, EPOCH_TICK};
use super::PluginFailure;
use agentload_config::Limits;
use wasmtime::{Store, Trap, UpdateDeadline};

/// A store holding one instance of a plugin, with its limits.
pub(crate) struct Sandboxed {
    pub(crate) store: Store<StoreState>,
    plugin: String,
    limits: Limits,
    /// Called with `call_async`: yields at every epoch tick.
    yields: bool,
    calls: Calls,
    /// The call [`begin`](Self::begin) armed, until [`finish`](Self::finish).
    running: Option<CallRunning>,
}

impl Sandboxed {
    /// A fresh store for `plugin` under `limits`, logging through `log`
    /// (the plugin's budget, shared by all its stores).
    pub(crate) fn new(engine: &PluginEngine, plugin: &str, limits: Limits, log: LogBudget) -> Self {
        let state = StoreState::new(plugin, &limits, log);
        Self::with_state(engine, plugin, limits, state)
    }

    /// A fresh store for `plugin` under `limits` with `state` (a tool
    /// environment's).
    pub(crate) fn with_state(
        engine: &PluginEngine,
        plugin: &str,
        limits: Limits,
        state: StoreState,
    ) -> Self {
        let mut store = Store::new(engine.engine(), state);
        store.limiter(|state| state.limiter());
        store.epoch_deadline_trap();
        store.set_epoch_deadline(ticks(limits.call_timeout_ms));
        Self {
            store,
            plugin: plugin.to_string(),
            limits,
            yields: false,
            calls: engine.calls(),
            running: None,
        }
    }

    /// The plugin's name, as errors give it.
    pub(crate) fn plugin(&self) -> &str {
        &self.plugin
    }

    /// Renames the plugin in error messages (once `describe` told its name).
    pub(crate) fn set_name(&mut self, name: &str) {
        self.plugin = name.to_string();
        self.store.data_mut().plugin_name = name.to_string();
    }

    /// A fresh store whose calls are made with `call_async` (workloads):
    /// past each epoch tick the guest yields to the executor, and the call
    /// is interrupted once its time limit has passed.
    pub(crate) fn new_async(
        engine: &PluginEngine,
        plugin: &str,
        limits: Limits,
        log: LogBudget,
    ) -> Self {
        let mut sandboxed = Self::new(engine, plugin, limits, log);
        sandboxed.store.epoch_deadline_callback(|mut store| {
            let left = &mut store.data_mut().ticks_left;
            if *left <= 1 {
                return Ok(UpdateDeadline::Interrupt);
            }
            *left -= 1;
            Ok(UpdateDeadline::Yield(1))
        });
        sandboxed.yields = true;
        sandboxed
    }

    /// Runs one call under the time limit and classifies its failure; a
    /// note says how much of its `host.log` output was dropped, if any.
    pub(crate) fn call<R>(
        &mut self,
        call: &'static str,
        f: impl FnOnce(&mut Store<StoreState>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginFailure> {
        self.begin();
        let store = &mut self.store;
        let result = off_the_runtime(|| f(store));
        self.finish(call, result)
    }

    /// Arms the time limit and the log budget for a call made on
    /// [`store`](Self::store); [`finish`](Self::finish) ends it.
    pub(crate) fn begin(&mut self) {
        let limit = ticks(self.limits.call_timeout_ms);
        self.store.data_mut().ticks_left = limit;
        // Async stores count the limit down one tick at a time (yielding
        // at each); sync ones trap at the deadline.
        self.store
            .set_epoch_deadline(if self.yields { 1 } else { limit });
        self.store.data().log.begin_call();
        self.running = Some(self.calls.running());
    }

    /// Ends a call [`begin`](Self::begin) armed: the log note, and its
    /// failure classified.
    pub(crate) fn finish<R>(
        &mut self,
        call: &'static str,
        result: wasmtime::Result<R>,
    ) -> Result<R, PluginFailure> {
        self.running = None;
        let state = self.store.data();
        if let Some(note) = state.log.end_call(call) {
            agentload_console::line(&format!("[plugin {}] {note}", state.plugin_name));
        }
        result.map_err(|err| self.classify(call, err))
    }

    /// [`finish`](Self::finish) for calls that return a WIT `result`.
    pub(crate) fn finish_result<R>(
        &mut self,
        call: &'static str,
        result: wasmtime::Result<Result<R, super::types::PluginError>>,
    ) -> Result<R, PluginFailure> {
        let plugin = self.plugin.clone();
        self.finish(call, result)?
            .map_err(|error| PluginFailure::Reported {
                plugin,
                call,
                error,
            })
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

    /// Refuses a returned value of `bytes` over `limit_mib` (`key` in
    /// `[plugins.limits]`); `what` names the value.
    pub(crate) fn check_output(
        &self,
        call: &'static str,
        what: &'static str,
        bytes: usize,
        key: &'static str,
        limit_mib: u64,
    ) -> Result<(), PluginFailure> {
        if bytes as u64 <= Limits::bytes(limit_mib) {
            return Ok(());
        }
        Err(PluginFailure::OutputLimit {
            plugin: self.plugin.clone(),
            call,
            what,
            bytes,
            limit: key,
            limit_mib,
        })
    }

    fn classify(&self, call: &'static str, err: wasmtime::Error) -> PluginFailure {
        let plugin = self.plugin.clone();
        match self.store.data().limit_hit() {
            Some(LimitHit::Memory) => {
                return PluginFailure::MemoryLimit {
                    plugin,
                    call,
                    limit_mib: self.limits.memory_mib,
                }
            }
            Some(LimitHit::TableElements) => {
                return PluginFailure::ResourceLimit {
                    plugin,
                    call,
                    limit: "table_elements",
                    value: self.limits.table_elements,
                    detail: "all tables together".into(),
                }
            }
            None => {}
        }
        if let Some((limit, value, detail)) = self.count_limit(&err) {
            return PluginFailure::ResourceLimit {
                plugin,
                call,
                limit,
                value,
                detail,
            };
        }
        match err.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => PluginFailure::TimeLimit {
                plugin,
                call,
                limit_ms: self.limits.call_timeout_ms,
            },
            Some(Trap::OutOfFuel) => PluginFailure::FuelLimit { plugin, call },
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

    /// wasmtime's own count checks at instantiation ("resource limit
    /// exceeded: instance count too high at 65"), by the limit they hit.
    fn count_limit(&self, err: &wasmtime::Error) -> Option<(&'static str, u64, String)> {
        let text = format!("{err:#}");
        let at = text.find("resource limit exceeded: ")?;
        let detail = text[at + "resource limit exceeded: ".len()..]
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        let (limit, value) = if detail.starts_with("instance count") {
            ("instances", self.limits.instances)
        } else if detail.starts_with("memory count") {
            ("memories", self.limits.memories)
        } else if detail.starts_with("table count") {
            ("tables", self.limits.tables)
        } else {
            return None;
        };
        Some((limit, value, detail))
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
