//! A workload plugin instance, re-created after a trap so one bad session
//! does not end the run.
//!
//! The plugin may be built against any supported WIT version: the bindings
//! are picked by the version the component declares (`Pre`, `Bindings`),
//! and records of an older version are converted to and from the current
//! ones (`bindings_v0_1_0.rs`, `bindings_v0_2_0.rs`, `bindings_v0_3_0.rs`).
//! Callers see the host's assembled [`TurnRequest`] only, whichever version
//! made it.

use super::api::{WitVersion, World};
use super::bindings::types as wire;
use super::bindings::workload as v0_4_0;
use super::bindings::{SessionPlan, TurnReview, TurnStep, WorkloadPlan};
use super::bindings_v0_1_0 as v0_1_0;
use super::bindings_v0_2_0 as v0_2_0;
use super::bindings_v0_3_0 as v0_3_0;
use super::compiler::{LoadedComponent, PluginEngine};
use super::instance::Sandboxed;
use super::intern::Interner;
use super::log_budget::LogBudget;
use super::request::{self, TurnRequest};
use super::sandbox::StoreState;
use super::types::{PluginConfig, PluginError, PluginInfo, PluginKind, TurnOutcome};
use super::{PluginFailure, PluginIdentity};
use agentload_config::Limits;
use std::future::Future;
use std::sync::Arc;
use wasmtime::component::InstancePre;
use wasmtime::Store;

/// A component linked as a `workload-plugin` of the version it declares.
#[derive(Clone)]
enum Pre {
    V0_1_0(v0_1_0::workload::WorkloadPluginPre<StoreState>),
    V0_2_0(v0_2_0::workload::WorkloadPluginPre<StoreState>),
    V0_3_0(v0_3_0::workload::WorkloadPluginPre<StoreState>),
    V0_4_0(v0_4_0::WorkloadPluginPre<StoreState>),
}

/// A live instance's bindings, of the version it was linked as.
enum Bindings {
    V0_1_0(v0_1_0::workload::WorkloadPlugin),
    V0_2_0(v0_2_0::workload::WorkloadPlugin),
    V0_3_0(v0_3_0::workload::WorkloadPlugin),
    V0_4_0(v0_4_0::WorkloadPlugin),
}

/// What a `result<T, plugin-error>` call returns, in current types.
type CallResult<T> = wasmtime::Result<Result<T, PluginError>>;

impl Pre {
    fn new(version: WitVersion, pre: InstancePre<StoreState>) -> wasmtime::Result<Self> {
        Ok(match version {
            WitVersion::V0_1_0 => Self::V0_1_0(v0_1_0::workload::WorkloadPluginPre::new(pre)?),
            WitVersion::V0_2_0 => Self::V0_2_0(v0_2_0::workload::WorkloadPluginPre::new(pre)?),
            WitVersion::V0_3_0 => Self::V0_3_0(v0_3_0::workload::WorkloadPluginPre::new(pre)?),
            WitVersion::V0_4_0 => Self::V0_4_0(v0_4_0::WorkloadPluginPre::new(pre)?),
        })
    }

    async fn instantiate(&self, store: &mut Store<StoreState>) -> wasmtime::Result<Bindings> {
        Ok(match self {
            Self::V0_1_0(pre) => Bindings::V0_1_0(pre.instantiate_async(store).await?),
            Self::V0_2_0(pre) => Bindings::V0_2_0(pre.instantiate_async(store).await?),
            Self::V0_3_0(pre) => Bindings::V0_3_0(pre.instantiate_async(store).await?),
            Self::V0_4_0(pre) => Bindings::V0_4_0(pre.instantiate_async(store).await?),
        })
    }
}

impl Bindings {
    async fn describe(&self, store: &mut Store<StoreState>) -> wasmtime::Result<PluginInfo> {
        match self {
            Self::V0_1_0(b) => b
                .agentload_plugin_workload()
                .call_describe(store)
                .await
                .map(v0_1_0::plugin_info_up),
            Self::V0_2_0(b) => b
                .agentload_plugin_workload()
                .call_describe(store)
                .await
                .map(v0_2_0::plugin_info_up),
            Self::V0_3_0(b) => b
                .agentload_plugin_workload()
                .call_describe(store)
                .await
                .map(v0_3_0::plugin_info_up),
            Self::V0_4_0(b) => b.agentload_plugin_workload().call_describe(store).await,
        }
    }

    async fn configure(
        &self,
        store: &mut Store<StoreState>,
        config: &PluginConfig,
    ) -> CallResult<WorkloadPlan> {
        match self {
            Self::V0_1_0(b) => {
                let config = v0_1_0::plugin_config_down(config);
                let result = b
                    .agentload_plugin_workload()
                    .call_configure(store, &config)
                    .await?;
                Ok(result
                    .map(v0_1_0::workload_plan_up)
                    .map_err(v0_1_0::plugin_error_up))
            }
            Self::V0_2_0(b) => {
                let config = v0_2_0::plugin_config_down(config);
                let result = b
                    .agentload_plugin_workload()
                    .call_configure(store, &config)
                    .await?;
                Ok(result
                    .map(v0_2_0::workload_plan_up)
                    .map_err(v0_2_0::plugin_error_up))
            }
            Self::V0_3_0(b) => {
                let config = v0_3_0::plugin_config_down(config);
                let result = b
                    .agentload_plugin_workload()
                    .call_configure(store, &config)
                    .await?;
                Ok(result
                    .map(v0_3_0::workload_plan_up)
                    .map_err(v0_3_0::plugin_error_up))
            }
            Self::V0_4_0(b) => {
                b.agentload_plugin_workload()
                    .call_configure(store, config)
                    .await
            }
        }
    }

    async fn start_session(
        &self,
        store: &mut Store<StoreState>,
        session_id: &str,
    ) -> CallResult<wire::TurnRequest> {
        match self {
            Self::V0_1_0(b) => {
                let result = b
                    .agentload_plugin_workload()
                    .call_start_session(store, session_id)
                    .await?;
                Ok(result
                    .map(v0_1_0::turn_request_up)
                    .map_err(v0_1_0::plugin_error_up))
            }
            Self::V0_2_0(b) => {
                let result = b
                    .agentload_plugin_workload()
                    .call_start_session(store, session_id)
                    .await?;
                Ok(result
                    .map(v0_2_0::turn_request_up)
                    .map_err(v0_2_0::plugin_error_up))
            }
            Self::V0_3_0(b) => {
                let result = b
                    .agentload_plugin_workload()
                    .call_start_session(store, session_id)
                    .await?;
                Ok(result
                    .map(v0_3_0::turn_request_up)
                    .map_err(v0_3_0::plugin_error_up))
            }
            Self::V0_4_0(b) => {
                b.agentload_plugin_workload()
                    .call_start_session(store, session_id)
                    .await
            }
        }
    }

    async fn next_turn(
        &self,
        store: &mut Store<StoreState>,
        session_id: &str,
        outcome: &TurnOutcome,
    ) -> CallResult<TurnStep> {
        // Versions before 0.3.0 review nothing: their answer is the next request.
        let unreviewed = |next| TurnStep {
            review: None,
            next,
            pause_ms: 0,
        };
        match self {
            Self::V0_1_0(b) => {
                let outcome = v0_1_0::turn_outcome_down(outcome);
                let result = b
                    .agentload_plugin_workload()
                    .call_next_turn(store, session_id, &outcome)
                    .await?;
                Ok(result
                    .map(|next| unreviewed(next.map(v0_1_0::turn_request_up)))
                    .map_err(v0_1_0::plugin_error_up))
            }
            Self::V0_2_0(b) => {
                let outcome = v0_2_0::turn_outcome_down(outcome);
                let result = b
                    .agentload_plugin_workload()
                    .call_next_turn(store, session_id, &outcome)
                    .await?;
                Ok(result
                    .map(|next| unreviewed(next.map(v0_2_0::turn_request_up)))
                    .map_err(v0_2_0::plugin_error_up))
            }
            Self::V0_3_0(b) => {
                let outcome = v0_3_0::turn_outcome_down(outcome);
                let result = b
                    .agentload_plugin_workload()
                    .call_next_turn(store, session_id, &outcome)
                    .await?;
                Ok(result
                    .map(v0_3_0::turn_step_up)
                    .map_err(v0_3_0::plugin_error_up))
            }
            Self::V0_4_0(b) => {
                // No closed-loop sessions yet: no tool results.
                b.agentload_plugin_workload()
                    .call_next_turn(store, session_id, outcome, &[])
                    .await
            }
        }
    }
}

/// What a workload answers to a turn's outcome.
#[derive(Debug)]
pub struct Step {
    /// The reply's review (live-reply replay; WIT 0.3.0 workloads and later).
    pub review: Option<TurnReview>,
    /// The next request; none when the session is over.
    pub next: Option<TurnRequest>,
    /// How long the session waits after the turn before its next request
    /// (or, with none, before it ends): WIT 0.4.0 workloads and later.
    pub pause_ms: u64,
}

/// A loaded workload plugin.
pub struct WorkloadPlugin {
    engine: Arc<PluginEngine>,
    pre: Pre,
    limits: Limits,
    log: LogBudget,
    identity: PluginIdentity,
    /// What the workload reported about its data at its last `configure`
    /// (a JSON object; `{}` before 0.4.0).
    facts_json: Arc<str>,
    /// Shared by every instance forked from this one (the data files are held once).
    config: Option<Arc<PluginConfig>>,
    /// The messages of every request these instances made, one copy each.
    interner: Arc<Interner>,
    live: Option<(Sandboxed, Bindings)>,
}

impl WorkloadPlugin {
    /// Links `loaded` as a `workload-plugin` and asks it to describe itself.
    pub async fn new(
        engine: Arc<PluginEngine>,
        loaded: &LoadedComponent,
        limits: Limits,
    ) -> Result<Self, PluginFailure> {
        let label = loaded.label("workload");
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
            .async_linker()
            .instantiate_pre(&loaded.component)
            .map_err(|e| invalid(format!("{e:#}")))?;
        let pre = Pre::new(version, pre).map_err(|e| invalid(format!("{e:#}")))?;
        let log = LogBudget::new(&limits);
        let mut sandbox = Sandboxed::new_async(&engine, &label, limits, log.clone());
        sandbox.begin();
        let bindings = pre.instantiate(&mut sandbox.store).await;
        let bindings = sandbox.finish("instantiate", bindings)?;
        sandbox.begin();
        let info = bindings.describe(&mut sandbox.store).await;
        let info = sandbox.finish("describe", info)?;
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
            facts_json: Arc::from("{}"),
            config: None,
            interner: Arc::default(),
            live: Some((sandbox, bindings)),
        })
    }

    /// Name, version and digest.
    pub fn identity(&self) -> &PluginIdentity {
        &self.identity
    }

    /// Hands the plugin its settings and files; returns its sessions (its
    /// facts: [`WorkloadPlugin::facts_json`]).
    pub async fn configure(
        &mut self,
        config: PluginConfig,
    ) -> Result<Vec<SessionPlan>, PluginFailure> {
        let max = self.limits.request_mib;
        let (sandbox, b) = self.instance().await?;
        sandbox.begin();
        let plan = b.configure(&mut sandbox.store, &config).await;
        let plans = sandbox.finish_result("configure", plan).and_then(|plan| {
            let bytes =
                plan.sessions.iter().map(|p| p.id.len() + 4).sum::<usize>() + plan.facts_json.len();
            sandbox.check_output("configure", "session plans", bytes, "request_mib", max)?;
            let contract = |why: String| PluginFailure::Contract {
                plugin: sandbox.plugin().to_owned(),
                call: "configure",
                why,
            };
            if !serde_json::from_str::<serde_json::Value>(&plan.facts_json)
                .is_ok_and(|v| v.is_object())
            {
                return Err(contract("its facts are not a JSON object".into()));
            }
            if let Some(p) = plan.sessions.iter().find(|p| p.workspace.is_some()) {
                return Err(contract(format!(
                    "session {:?} is closed-loop (workspace {:?}), which this agentload does \
                     not run yet",
                    p.id,
                    p.workspace.as_deref().unwrap_or_default()
                )));
            }
            let plans = plan.sessions;
            if let Some(bad) = plans.iter().find(|p| !sendable_id(&p.id)) {
                return Err(PluginFailure::Contract {
                    plugin: sandbox.plugin().to_owned(),
                    call: "configure",
                    why: format!(
                        "session id {:?} has a control character: it cannot be sent as the \
                         X-Session-ID header",
                        bad.id
                    ),
                });
            }
            Ok((plans, plan.facts_json))
        });
        let (plans, facts) = self.after(plans)?;
        self.facts_json = Arc::from(facts);
        self.config = Some(Arc::new(config));
        Ok(plans)
    }

    /// What the workload reported about its data and settings at its last
    /// `configure`: a JSON object (`{}` when nothing, or before WIT 0.4.0).
    pub fn facts_json(&self) -> &str {
        &self.facts_json
    }

    /// The first request of a session.
    pub async fn start_session(&mut self, session_id: &str) -> Result<TurnRequest, PluginFailure> {
        let (sandbox, b) = self.instance().await?;
        sandbox.begin();
        let request = b.start_session(&mut sandbox.store, session_id).await;
        let request = sandbox.finish_result("start-session", request);
        let request = request.and_then(|r| self.assembled("start-session", None, r));
        self.after(request)
    }

    /// The workload's answer to `outcome`, the answer to `previous` (the
    /// session's last request, as the workload made it: the one its `keep`
    /// counts in): the next request, or none when the session is over, and
    /// in live-reply replay the reply's review.
    pub async fn next_turn(
        &mut self,
        previous: &TurnRequest,
        outcome: &TurnOutcome,
    ) -> Result<Step, PluginFailure> {
        let (sandbox, b) = self.instance().await?;
        sandbox.begin();
        let step = b
            .next_turn(&mut sandbox.store, &previous.session_id, outcome)
            .await;
        let step = sandbox.finish_result("next-turn", step).and_then(|step| {
            let next = step
                .next
                .map(|r| self.assembled("next-turn", Some(previous), r))
                .transpose()?;
            Ok(Step {
                review: step.review,
                next,
                pause_ms: step.pause_ms,
            })
        });
        self.after(step)
    }

    /// The request a turn describes, within `request_mib` both as it crossed
    /// the boundary and as the host holds it.
    fn assembled(
        &mut self,
        call: &'static str,
        previous: Option<&TurnRequest>,
        wire: wire::TurnRequest,
    ) -> Result<TurnRequest, PluginFailure> {
        let max = self.limits.request_mib;
        let (sandbox, _) = self.live.as_mut().expect("the instance just answered");
        sandbox.check_output(
            call,
            "a turn request",
            request::wire_bytes(&wire),
            "request_mib",
            max,
        )?;
        let request = request::assemble(previous, wire, &self.interner).map_err(|why| {
            PluginFailure::Contract {
                plugin: self.identity.name.clone(),
                call,
                why,
            }
        })?;
        sandbox.check_output(
            call,
            "a turn request",
            request.text_bytes(),
            "request_mib",
            max,
        )?;
        Ok(request)
    }

    /// Another instance of the same component, configured as this one was,
    /// with no session started: where a session that must start again (a
    /// resumed one whose replay diverged) runs, since an instance refuses to
    /// start a session twice; and the other instances of a pool.
    pub fn forked(&self) -> impl Future<Output = Result<Self, PluginFailure>> + Send + 'static {
        let mut twin = self.unstarted(self.config.clone());
        async move {
            twin.instance().await?;
            Ok(twin)
        }
    }

    /// Another instance of the same component, configured with `config` instead of this
    /// one's settings: it and its sessions. Equal messages of both are held once.
    pub async fn reconfigured(
        &self,
        config: PluginConfig,
    ) -> Result<(Self, Vec<SessionPlan>), PluginFailure> {
        let mut twin = self.unstarted(None);
        let plans = twin.configure(config).await?;
        Ok((twin, plans))
    }

    /// This component with `config`, not instantiated yet.
    fn unstarted(&self, config: Option<Arc<PluginConfig>>) -> Self {
        Self {
            engine: self.engine.clone(),
            pre: self.pre.clone(),
            limits: self.limits,
            log: self.log.clone(),
            identity: self.identity.clone(),
            facts_json: Arc::clone(&self.facts_json),
            config,
            interner: Arc::clone(&self.interner),
            live: None,
        }
    }

    /// The live instance; after a trap the last one was dropped, and this
    /// is a fresh one, configured again as before.
    async fn instance(&mut self) -> Result<(&mut Sandboxed, &Bindings), PluginFailure> {
        if self.live.is_none() {
            self.live = Some(self.fresh_instance().await?);
        }
        let (sandbox, bindings) = self.live.as_mut().expect("instance just ensured");
        Ok((sandbox, bindings))
    }

    /// Drops the instance when `result` is a failure that poisons it.
    fn after<R>(&mut self, result: Result<R, PluginFailure>) -> Result<R, PluginFailure> {
        if matches!(&result, Err(e) if e.poisons_instance()) {
            self.live = None;
        }
        result
    }

    /// A new instance, configured as this one was (a future that holds no
    /// borrow of `self`: the plugin is not `Sync`).
    fn fresh_instance(
        &self,
    ) -> impl Future<Output = Result<(Sandboxed, Bindings), PluginFailure>> + Send + 'static {
        let mut sandbox = Sandboxed::new_async(
            &self.engine,
            &self.identity.name,
            self.limits,
            self.log.clone(),
        );
        let (pre, config) = (self.pre.clone(), self.config.clone());
        async move {
            sandbox.begin();
            let bindings = pre.instantiate(&mut sandbox.store).await;
            let bindings = sandbox.finish("instantiate", bindings)?;
            if let Some(config) = &config {
                sandbox.begin();
                let plans = bindings.configure(&mut sandbox.store, config).await;
                sandbox.finish_result("configure", plans)?;
            }
            Ok((sandbox, bindings))
        }
    }
}

/// Whether `id` can be an HTTP header value (`X-Session-ID`): no control
/// characters but tab.
fn sendable_id(id: &str) -> bool {
    !id.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7f)
}

#[cfg(test)]
mod tests {
    #[test]
    fn session_ids_with_control_characters_are_not_sendable() {
        for ok in ["s1", "conv/42 __repeat_2", "émoji 🎉", "a\tb", ""] {
            assert!(super::sendable_id(ok), "{ok:?}");
        }
        for bad in ["s1\n", "a\rb", "\0", "x\u{7f}"] {
            assert!(!super::sendable_id(bad), "{bad:?}");
        }
    }
}
