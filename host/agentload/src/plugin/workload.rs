//! A workload plugin instance, re-created after a trap so one bad session
//! does not end the run.

use super::api::{WitVersion, World};
use super::bindings::workload::{WorkloadPlugin as Bindings, WorkloadPluginPre};
use super::bindings::SessionPlan;
use super::engine::{LoadedComponent, PluginEngine};
use super::instance::{Limits, Sandboxed};
use super::types::{PluginConfig, PluginKind, TurnOutcome, TurnRequest};
use super::{PluginFailure, PluginIdentity};
use std::sync::Arc;

/// A loaded workload plugin.
pub struct WorkloadPlugin {
    engine: Arc<PluginEngine>,
    pre: WorkloadPluginPre<super::sandbox::StoreState>,
    limits: Limits,
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
        // know before linking it (only 0.1.0 is released: one bindings set).
        match super::api::require(engine.engine(), &loaded.component, &label, World::Workload)? {
            WitVersion::V0_1_0 => {}
        }
        let pre = engine
            .linker()
            .instantiate_pre(&loaded.component)
            .map_err(|e| invalid(format!("{e:#}")))?;
        let pre = WorkloadPluginPre::new(pre).map_err(|e| invalid(format!("{e:#}")))?;
        let mut sandbox = Sandboxed::new(&engine, &label, limits);
        let bindings = sandbox.call("instantiate", |store| pre.instantiate(store))?;
        let info = sandbox.call("describe", |store| {
            bindings.agentload_plugin_workload().call_describe(store)
        })?;
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
        let plans = self.with_instance(|sandbox, b| {
            sandbox.call_result("configure", |store| {
                b.agentload_plugin_workload().call_configure(store, &config)
            })
        })?;
        self.config = Some(config);
        Ok(plans)
    }

    /// The first request of a session.
    pub fn start_session(&mut self, session_id: &str) -> Result<TurnRequest, PluginFailure> {
        self.with_instance(|sandbox, b| {
            sandbox.call_result("start-session", |store| {
                b.agentload_plugin_workload()
                    .call_start_session(store, session_id)
            })
        })
    }

    /// The request after `outcome`, or none when the session is over.
    pub fn next_turn(
        &mut self,
        session_id: &str,
        outcome: &TurnOutcome,
    ) -> Result<Option<TurnRequest>, PluginFailure> {
        self.with_instance(|sandbox, b| {
            sandbox.call_result("next-turn", |store| {
                b.agentload_plugin_workload()
                    .call_next_turn(store, session_id, outcome)
            })
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
        let mut sandbox = Sandboxed::new(&self.engine, &self.identity.name, self.limits);
        let bindings = sandbox.call("instantiate", |store| self.pre.instantiate(store))?;
        if let Some(config) = &self.config {
            sandbox.call_result("configure", |store| {
                bindings
                    .agentload_plugin_workload()
                    .call_configure(store, config)
            })?;
        }
        Ok((sandbox, bindings))
    }
}
