//! A workload plugin instance, re-created after a trap so one bad session
//! does not end the run.
//!
//! The plugin may be built against any supported WIT version: the bindings
//! are picked by the version the component declares (`Pre`, `Bindings`),
//! and records of an older version are converted to and from the current
//! ones (`bindings_v0_0_9.rs`), so callers only ever see 0.1.0 types.

use super::api::{WitVersion, World};
use super::bindings::workload as v0_1_0;
use super::bindings::SessionPlan;
#[cfg(feature = "test-wit-0-0-9")]
use super::bindings_v0_0_9 as v0_0_9;
use super::compiler::{LoadedComponent, PluginEngine};
use super::instance::Sandboxed;
use super::log_budget::LogBudget;
use super::sandbox::StoreState;
use super::types::{PluginConfig, PluginError, PluginInfo, PluginKind, TurnOutcome, TurnRequest};
use super::{PluginFailure, PluginIdentity};
use agentload_config::Limits;
use std::sync::Arc;
use wasmtime::component::InstancePre;
use wasmtime::Store;

/// A component linked as a `workload-plugin` of the version it declares.
#[derive(Clone)]
enum Pre {
    #[cfg(feature = "test-wit-0-0-9")]
    V0_0_9(v0_0_9::WorkloadPluginPre<StoreState>),
    V0_1_0(v0_1_0::WorkloadPluginPre<StoreState>),
}

/// A live instance's bindings, of the version it was linked as.
enum Bindings {
    #[cfg(feature = "test-wit-0-0-9")]
    V0_0_9(v0_0_9::WorkloadPlugin),
    V0_1_0(v0_1_0::WorkloadPlugin),
}

/// What a `result<T, plugin-error>` call returns, in current types.
type CallResult<T> = wasmtime::Result<Result<T, PluginError>>;

impl Pre {
    fn new(version: WitVersion, pre: InstancePre<StoreState>) -> wasmtime::Result<Self> {
        Ok(match version {
            #[cfg(feature = "test-wit-0-0-9")]
            WitVersion::V0_0_9 => Self::V0_0_9(v0_0_9::WorkloadPluginPre::new(pre)?),
            WitVersion::V0_1_0 => Self::V0_1_0(v0_1_0::WorkloadPluginPre::new(pre)?),
        })
    }

    fn instantiate(&self, store: &mut Store<StoreState>) -> wasmtime::Result<Bindings> {
        Ok(match self {
            #[cfg(feature = "test-wit-0-0-9")]
            Self::V0_0_9(pre) => Bindings::V0_0_9(pre.instantiate(store)?),
            Self::V0_1_0(pre) => Bindings::V0_1_0(pre.instantiate(store)?),
        })
    }
}

impl Bindings {
    fn describe(&self, store: &mut Store<StoreState>) -> wasmtime::Result<PluginInfo> {
        match self {
            #[cfg(feature = "test-wit-0-0-9")]
            Self::V0_0_9(b) => b
                .agentload_plugin_workload()
                .call_describe(store)
                .map(v0_0_9::plugin_info_up),
            Self::V0_1_0(b) => b.agentload_plugin_workload().call_describe(store),
        }
    }

    fn configure(
        &self,
        store: &mut Store<StoreState>,
        config: &PluginConfig,
    ) -> CallResult<Vec<SessionPlan>> {
        match self {
            #[cfg(feature = "test-wit-0-0-9")]
            Self::V0_0_9(b) => {
                let config = v0_0_9::plugin_config_down(config);
                let result = b
                    .agentload_plugin_workload()
                    .call_configure(store, &config)?;
                Ok(result
                    .map(|plans| plans.into_iter().map(v0_0_9::session_plan_up).collect())
                    .map_err(v0_0_9::plugin_error_up))
            }
            Self::V0_1_0(b) => b.agentload_plugin_workload().call_configure(store, config),
        }
    }

    fn start_session(
        &self,
        store: &mut Store<StoreState>,
        session_id: &str,
    ) -> CallResult<TurnRequest> {
        match self {
            #[cfg(feature = "test-wit-0-0-9")]
            Self::V0_0_9(b) => {
                let result = b
                    .agentload_plugin_workload()
                    .call_start_session(store, session_id)?;
                Ok(result
                    .map(v0_0_9::turn_request_up)
                    .map_err(v0_0_9::plugin_error_up))
            }
            Self::V0_1_0(b) => b
                .agentload_plugin_workload()
                .call_start_session(store, session_id),
        }
    }

    fn next_turn(
        &self,
        store: &mut Store<StoreState>,
        session_id: &str,
        outcome: &TurnOutcome,
    ) -> CallResult<Option<TurnRequest>> {
        match self {
            #[cfg(feature = "test-wit-0-0-9")]
            Self::V0_0_9(b) => {
                let outcome = v0_0_9::turn_outcome_down(outcome);
                let result = b
                    .agentload_plugin_workload()
                    .call_next_turn(store, session_id, &outcome)?;
                Ok(result
                    .map(|next| next.map(v0_0_9::turn_request_up))
                    .map_err(v0_0_9::plugin_error_up))
            }
            Self::V0_1_0(b) => b
                .agentload_plugin_workload()
                .call_next_turn(store, session_id, outcome),
        }
    }
}

/// A loaded workload plugin.
pub struct WorkloadPlugin {
    engine: Arc<PluginEngine>,
    pre: Pre,
    limits: Limits,
    log: LogBudget,
    identity: PluginIdentity,
    config: Option<PluginConfig>,
    live: Option<(Sandboxed, Bindings)>,
}

impl WorkloadPlugin {
    /// Links `loaded` as a `workload-plugin` and asks it to describe itself.
    pub fn new(
        engine: Arc<PluginEngine>,
        loaded: &LoadedComponent,
        limits: Limits,
    ) -> Result<Self, PluginFailure> {
        let label = loaded
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "workload".into());
        let invalid = |reason: String| PluginFailure::Instantiate {
            plugin: label.clone(),
            world: "workload-plugin",
            reason,
        };
        // Refuse a component built against a WIT version this host does not
        // know before linking it; otherwise link it with that version's bindings.
        let version =
            super::api::require(engine.engine(), &loaded.component, &label, World::Workload)?;
        let pre = engine
            .linker()
            .instantiate_pre(&loaded.component)
            .map_err(|e| invalid(format!("{e:#}")))?;
        let pre = Pre::new(version, pre).map_err(|e| invalid(format!("{e:#}")))?;
        let log = LogBudget::new(&limits);
        let mut sandbox = Sandboxed::new(&engine, &label, limits, log.clone());
        let bindings = sandbox.call("instantiate", |store| pre.instantiate(store))?;
        let info = sandbox.call("describe", |store| bindings.describe(store))?;
        if info.kind != PluginKind::Workload {
            return Err(invalid(format!(
                "`{}` describes itself as a scorer",
                info.name
            )));
        }
        sandbox.set_name(&info.name);
        let identity = PluginIdentity {
            name: info.name,
            version: info.version,
            kind: "workload".into(),
            digest: loaded.digest.clone(),
            path: loaded.path.clone(),
        };
        Ok(Self {
            engine,
            pre,
            limits,
            log,
            identity,
            config: None,
            live: Some((sandbox, bindings)),
        })
    }

    /// Name, version and digest.
    pub fn identity(&self) -> &PluginIdentity {
        &self.identity
    }

    /// Hands the plugin its settings and files; returns its sessions.
    pub fn configure(&mut self, config: PluginConfig) -> Result<Vec<SessionPlan>, PluginFailure> {
        let max = self.limits.request_mib;
        let plans = self.with_instance(|sandbox, b| {
            let plans = sandbox.call_result("configure", |store| b.configure(store, &config))?;
            let bytes = plans.iter().map(|p| p.id.len() + 4).sum();
            sandbox.check_output("configure", "session plans", bytes, "request_mib", max)?;
            Ok(plans)
        })?;
        self.config = Some(config);
        Ok(plans)
    }

    /// The first request of a session.
    pub fn start_session(&mut self, session_id: &str) -> Result<TurnRequest, PluginFailure> {
        let max = self.limits.request_mib;
        self.with_instance(|sandbox, b| {
            let request =
                sandbox.call_result("start-session", |store| b.start_session(store, session_id))?;
            let bytes = request_bytes(&request);
            sandbox.check_output("start-session", "a turn request", bytes, "request_mib", max)?;
            Ok(request)
        })
    }

    /// The request after `outcome`, or none when the session is over.
    pub fn next_turn(
        &mut self,
        session_id: &str,
        outcome: &TurnOutcome,
    ) -> Result<Option<TurnRequest>, PluginFailure> {
        let max = self.limits.request_mib;
        self.with_instance(|sandbox, b| {
            let next = sandbox
                .call_result("next-turn", |store| b.next_turn(store, session_id, outcome))?;
            let bytes = next.as_ref().map_or(0, request_bytes);
            sandbox.check_output("next-turn", "a turn request", bytes, "request_mib", max)?;
            Ok(next)
        })
    }

    /// Another instance of the same component, configured as this one was,
    /// with no session started: where a session that must start again (a
    /// resumed one whose replay diverged) runs, since an instance refuses to
    /// start a session twice.
    pub fn forked(&self) -> Result<Self, PluginFailure> {
        Ok(Self {
            engine: self.engine.clone(),
            pre: self.pre.clone(),
            limits: self.limits,
            log: self.log.clone(),
            identity: self.identity.clone(),
            config: self.config.clone(),
            live: Some(self.fresh_instance()?),
        })
    }

    /// Runs `f` on a live instance; after a trap the instance is dropped, and
    /// the next call gets a fresh one, configured again as before.
    fn with_instance<R>(
        &mut self,
        f: impl FnOnce(&mut Sandboxed, &Bindings) -> Result<R, PluginFailure>,
    ) -> Result<R, PluginFailure> {
        if self.live.is_none() {
            self.live = Some(self.fresh_instance()?);
        }
        let (sandbox, bindings) = self.live.as_mut().expect("instance just ensured");
        let result = f(sandbox, bindings);
        if matches!(&result, Err(e) if e.poisons_instance()) {
            self.live = None;
        }
        result
    }

    fn fresh_instance(&self) -> Result<(Sandboxed, Bindings), PluginFailure> {
        let mut sandbox = Sandboxed::new(
            &self.engine,
            &self.identity.name,
            self.limits,
            self.log.clone(),
        );
        let bindings = sandbox.call("instantiate", |store| self.pre.instantiate(store))?;
        if let Some(config) = &self.config {
            sandbox.call_result("configure", |store| bindings.configure(store, config))?;
        }
        Ok((sandbox, bindings))
    }
}

/// The bytes of a turn request's text fields (what the host copies into
/// the request body and the turn log).
pub(crate) fn request_bytes(r: &TurnRequest) -> usize {
    let opt = |s: &Option<String>| s.as_ref().map_or(0, String::len);
    let messages: usize = r
        .messages
        .iter()
        .map(|m| {
            opt(&m.content)
                + opt(&m.reasoning_content)
                + opt(&m.tool_call_id)
                + opt(&m.name)
                + m.tool_calls
                    .iter()
                    .map(|c| c.id.len() + c.name.len() + c.arguments.len())
                    .sum::<usize>()
        })
        .sum();
    r.session_id.len()
        + r.item_id.len()
        + messages
        + opt(&r.tools_json)
        + opt(&r.sampling.tool_choice_json)
        + r.expected_json.len()
}
