//! Tool environments (`agentload:tools`, `wit/agentload-tools@0.1.0`): the
//! component that runs a closed-loop session's tool calls over its virtual
//! workspace.
//!
//! A [`ToolEnvironment`] is a loaded component; a [`ToolInstance`] is one
//! sandboxed instance of it, called synchronously (the caller is one of the
//! tool pool's own threads, never a runtime worker). Its store is metered
//! (the engine is [`PluginEngine::metered`]): each call gets
//! `fuel_per_call` units of fuel, the deterministic stop of last resort
//! behind the environment's own step budgets, and reports the fuel it
//! spent (the call's sandbox CPU, counted the same under any load). The
//! call's wall-clock limit (`call_timeout_ms`) is only a safety net. WASI
//! is linked with nothing granted, the wall clock reads the tools' fixed
//! epoch, and the entropy stream is reseeded for every call from the seed
//! the caller derives from the session and the call's place in it.

use super::compiler::{LoadedComponent, PluginEngine};
use super::instance::Sandboxed;
use super::log_budget::LogBudget;
use super::sandbox::StoreState;
use super::{PluginFailure, PluginIdentity};
use agentload_config::Limits;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit/agentload-tools@0.1.0",
        world: "tool-environment",
    });
}

pub use bindings::exports::agentload::tools::environment::{
    CallResult, CallStatus, EnvironmentInfo, Limits as GuestLimits, SessionStats, ToolCall,
    ToolError, WorkspaceInfo, WorkspaceSpec,
};

/// The interface a tool environment exports.
pub const INTERFACE: &str = "agentload:tools/environment@0.1.0";

/// What the host gives each instance of a tool environment.
#[derive(Debug, Clone, Copy)]
pub struct ToolLimits {
    /// Memory, table and count caps, and `call_timeout_ms` (the wall-clock
    /// safety net of one call).
    pub host: Limits,
    /// Fuel one call may spend.
    pub fuel_per_call: u64,
    /// What the environment enforces itself: quotas and step budgets.
    pub guest: GuestLimits,
}

/// A call the environment answered, with what it cost.
#[derive(Debug, Clone)]
pub struct Metered<T> {
    pub value: T,
    /// Fuel spent (executed instructions, as wasmtime counts them).
    pub fuel: u64,
    /// Wall time of the call on this host (for the cost tables only; never
    /// enters a schedule).
    pub wall: Duration,
}

/// Why a call into a tool environment did not answer.
#[derive(Debug, thiserror::Error)]
pub enum ToolFailure {
    /// The environment refused the request (its typed error).
    #[error("tool environment {plugin}: `{call}` refused: {message}")]
    Refused {
        plugin: String,
        call: &'static str,
        message: String,
    },
    /// The instance trapped or hit a host limit: it is gone.
    #[error(transparent)]
    Plugin(#[from] PluginFailure),
}

impl ToolFailure {
    /// Whether the instance is unusable now.
    pub fn poisons_instance(&self) -> bool {
        match self {
            ToolFailure::Refused { .. } => false,
            ToolFailure::Plugin(p) => p.poisons_instance(),
        }
    }
}

fn refused(plugin: &str, call: &'static str, e: ToolError) -> ToolFailure {
    let message = match e {
        ToolError::InvalidWorkspace(m) => format!("invalid workspace: {m}"),
        ToolError::Unknown(m) => format!("unknown: {m}"),
        ToolError::InvalidInput(m) => format!("invalid input: {m}"),
    };
    ToolFailure::Refused {
        plugin: plugin.to_owned(),
        call,
        message,
    }
}

/// A loaded tool environment.
pub struct ToolEnvironment {
    engine: Arc<PluginEngine>,
    pre: bindings::ToolEnvironmentPre<StoreState>,
    limits: ToolLimits,
    log: LogBudget,
    identity: PluginIdentity,
    info: EnvironmentInfo,
}

impl ToolEnvironment {
    /// Links `loaded` (compiled by a [`PluginEngine::metered`] engine) as a
    /// tool environment and asks it to describe itself.
    pub fn new(
        engine: Arc<PluginEngine>,
        loaded: &LoadedComponent,
        limits: ToolLimits,
    ) -> Result<Self, PluginFailure> {
        let label = loaded.label("tools");
        let invalid = |reason: String| PluginFailure::Instantiate {
            plugin: label.clone(),
            world: "tool-environment",
            reason,
        };
        let api = super::ComponentApi::inspect(engine.engine(), &loaded.component);
        if !api.exports.iter().any(|e| e == INTERFACE) {
            let tools: Vec<&String> = api.exports.iter().filter(|e| !e.contains('#')).collect();
            return Err(invalid(format!(
                "it does not export `{INTERFACE}` (exports: {tools:?})"
            )));
        }
        let pre = engine
            .linker()
            .instantiate_pre(&loaded.component)
            .map_err(|e| invalid(format!("{e:#}")))?;
        let pre = bindings::ToolEnvironmentPre::new(pre).map_err(|e| invalid(format!("{e:#}")))?;
        let log = LogBudget::new(&limits.host);
        let mut env = Self {
            engine,
            pre,
            limits,
            log,
            identity: PluginIdentity {
                name: label.clone(),
                version: String::new(),
                kind: "tools".into(),
                digest: loaded.digest.clone(),
                path: loaded.path.clone(),
            },
            info: EnvironmentInfo {
                name: label,
                version: String::new(),
                description: String::new(),
                tools: Vec::new(),
            },
        };
        let mut probe = env.store();
        let bindings = probe.call("instantiate", |store| env.pre.instantiate(store))?;
        let info = probe.call("describe", |store| {
            bindings.agentload_tools_environment().call_describe(store)
        })?;
        env.identity.name = info.name.clone();
        env.identity.version = info.version.clone();
        env.info = info;
        Ok(env)
    }

    /// Name, version and digest.
    pub fn identity(&self) -> &PluginIdentity {
        &self.identity
    }

    /// What it said of itself.
    pub fn info(&self) -> &EnvironmentInfo {
        &self.info
    }

    /// The limits its instances run under.
    pub fn limits(&self) -> &ToolLimits {
        &self.limits
    }

    fn store(&self) -> Sandboxed {
        let mut host = self.limits.host;
        // The wall-clock limit of a call: the safety net.
        host.call_timeout_ms = self.limits.host.call_timeout_ms;
        let state = StoreState::for_tools(&self.identity.name, &host, self.log.clone());
        let mut sandboxed = Sandboxed::with_state(&self.engine, &self.identity.name, host, state);
        // Fuel is armed per call; none is spent outside one.
        let _ = sandboxed.store.set_fuel(u64::MAX / 2);
        sandboxed
    }

    /// A fresh instance, configured with the environment's limits.
    pub fn instance(&self) -> Result<ToolInstance, ToolFailure> {
        let mut sandbox = self.store();
        let bindings = sandbox.call("instantiate", |store| self.pre.instantiate(store))?;
        let guest = self.limits.guest;
        let configured = sandbox.call("configure", |store| {
            bindings
                .agentload_tools_environment()
                .call_configure(store, guest)
        })?;
        configured.map_err(|e| refused(&self.identity.name, "configure", e))?;
        Ok(ToolInstance {
            sandbox,
            bindings,
            plugin: self.identity.name.clone(),
            fuel_per_call: self.limits.fuel_per_call,
        })
    }
}

/// One instance of a tool environment, with its workspaces and sessions.
pub struct ToolInstance {
    sandbox: Sandboxed,
    bindings: bindings::ToolEnvironment,
    plugin: String,
    fuel_per_call: u64,
}

impl ToolInstance {
    /// Runs one metered call: `fuel` armed, entropy reseeded with `seed`.
    fn metered<T>(
        &mut self,
        fuel: u64,
        call: &'static str,
        seed: u64,
        f: impl FnOnce(
            &bindings::ToolEnvironment,
            &mut wasmtime::Store<StoreState>,
        ) -> wasmtime::Result<Result<T, ToolError>>,
    ) -> Result<Metered<T>, ToolFailure> {
        self.sandbox.store.data_mut().reseed(seed);
        self.sandbox
            .store
            .set_fuel(fuel)
            .map_err(|e| PluginFailure::Engine(e.to_string()))?;
        let started = Instant::now();
        let bindings = &self.bindings;
        let answer = self.sandbox.call(call, |store| f(bindings, store));
        let wall = started.elapsed();
        let left = self.sandbox.store.get_fuel().unwrap_or(0);
        let _ = self.sandbox.store.set_fuel(u64::MAX / 2);
        let value = answer?.map_err(|e| refused(&self.plugin, call, e))?;
        Ok(Metered {
            value,
            fuel: fuel.saturating_sub(left),
            wall,
        })
    }

    /// Reads a workspace archive into this instance.
    pub fn load_workspace(
        &mut self,
        spec: &WorkspaceSpec,
    ) -> Result<Metered<WorkspaceInfo>, ToolFailure> {
        self.metered(self.fuel_per_call, "load-workspace", 0, |b, store| {
            b.agentload_tools_environment()
                .call_load_workspace(store, spec)
        })
    }

    /// Opens a session on a loaded workspace.
    pub fn open_session(
        &mut self,
        session: &str,
        workspace: &str,
        seed: u64,
    ) -> Result<(), ToolFailure> {
        self.metered(self.fuel_per_call, "open-session", seed, |b, store| {
            b.agentload_tools_environment()
                .call_open_session(store, session, workspace, seed)
        })
        .map(|_| ())
    }

    /// Runs a tool call; `seed` seeds the call's entropy.
    pub fn call(
        &mut self,
        session: &str,
        call: &ToolCall,
        seed: u64,
    ) -> Result<Metered<CallResult>, ToolFailure> {
        self.call_with(self.fuel_per_call, session, call, seed)
    }

    /// Runs a call again that completed before, to rebuild its session in
    /// another instance. Its fuel is not capped: it ran to its end once,
    /// and with another history before it may cost a little more than then.
    pub fn replay(
        &mut self,
        session: &str,
        call: &ToolCall,
        seed: u64,
    ) -> Result<Metered<CallResult>, ToolFailure> {
        self.call_with(u64::MAX / 4, session, call, seed)
    }

    fn call_with(
        &mut self,
        fuel: u64,
        session: &str,
        call: &ToolCall,
        seed: u64,
    ) -> Result<Metered<CallResult>, ToolFailure> {
        self.metered(fuel, "call", seed, |b, store| {
            b.agentload_tools_environment()
                .call_call(store, session, call)
        })
    }

    /// What a session holds.
    pub fn session_stats(&mut self, session: &str) -> Result<SessionStats, ToolFailure> {
        self.metered(self.fuel_per_call, "session-stats", 0, |b, store| {
            b.agentload_tools_environment().call_stats(store, session)
        })
        .map(|m| m.value)
    }

    /// Ends a session.
    pub fn close_session(&mut self, session: &str) -> Result<(), ToolFailure> {
        self.metered(self.fuel_per_call, "close-session", 0, |b, store| {
            b.agentload_tools_environment()
                .call_close_session(store, session)
                .map(Ok)
        })
        .map(|_| ())
    }
}
