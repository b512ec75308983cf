//! A scorer plugin: every scoring pass runs in a fresh instance, so verdicts
//! depend only on the items given (no state survives between passes).

use super::api::{WitVersion, World};
use super::bindings::scorer::ScorerPluginPre;
use super::bindings::{Report, ScoredItem, Verdict};
use super::engine::{LoadedComponent, PluginEngine};
use super::instance::{Limits, Sandboxed};
use super::log_budget::LogBudget;
use super::types::{PluginConfig, PluginKind};
use super::{PluginFailure, PluginIdentity};
use std::sync::Arc;
use std::time::Instant;

/// A loaded scorer plugin.
pub struct ScorerPlugin {
    engine: Arc<PluginEngine>,
    pre: ScorerPluginPre<super::sandbox::StoreState>,
    limits: Limits,
    log: LogBudget,
    identity: PluginIdentity,
}

/// Verdicts and report of one scoring pass.
pub struct Scored {
    pub verdicts: Vec<Verdict>,
    pub report: Report,
    pub timings: ScoreTimings,
}

/// Where a scoring pass spent its time (host clock, ms).
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct ScoreTimings {
    /// A fresh instance, and `configure`.
    pub instantiate_ms: f64,
    /// `score` over every item, arguments and results passed included.
    pub score_ms: f64,
    /// `aggregate`.
    pub aggregate_ms: f64,
}

impl ScorerPlugin {
    /// Links `loaded` as a `scorer-plugin` and asks it to describe itself.
    pub fn new(
        engine: Arc<PluginEngine>,
        loaded: &LoadedComponent,
        limits: Limits,
    ) -> Result<Self, PluginFailure> {
        let label = loaded
            .path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scorer".into());
        let invalid = |reason: String| PluginFailure::Instantiate {
            plugin: label.clone(),
            world: "scorer-plugin",
            reason,
        };
        // Refuse a component built against a WIT version this host does not
        // know before linking it. Scorers have one bindings set, the current
        // version's: `require` refuses older ones (`WitVersion::supports`).
        match super::api::require(engine.engine(), &loaded.component, &label, World::Scorer)? {
            WitVersion::V0_1_0 => {}
            #[cfg(feature = "test-wit-0-0-9")]
            old @ WitVersion::V0_0_9 => {
                return Err(PluginFailure::UnsupportedWit {
                    plugin: label.clone(),
                    found: format!("{}@{}", super::api::PACKAGE, old.as_str()),
                    supported: super::api::supported_list(World::Scorer),
                })
            }
        }
        let pre = engine
            .linker()
            .instantiate_pre(&loaded.component)
            .map_err(|e| invalid(format!("{e:#}")))?;
        let pre = ScorerPluginPre::new(pre).map_err(|e| invalid(format!("{e:#}")))?;
        let log = LogBudget::new(&limits);
        let mut sandbox = Sandboxed::new(&engine, &label, limits, log.clone());
        let bindings = sandbox.call("instantiate", |store| pre.instantiate(store))?;
        let info = sandbox.call("describe", |store| {
            bindings.agentload_plugin_scorer().call_describe(store)
        })?;
        if info.kind != PluginKind::Scorer {
            return Err(invalid(format!(
                "`{}` describes itself as a workload",
                info.name
            )));
        }
        let identity = PluginIdentity {
            name: info.name,
            version: info.version,
            kind: "scorer".into(),
            digest: loaded.digest.clone(),
            path: loaded.path.clone(),
        };
        Ok(Self {
            engine,
            pre,
            limits,
            log,
            identity,
        })
    }

    /// Name, version and digest.
    pub fn identity(&self) -> &PluginIdentity {
        &self.identity
    }

    /// Configures a fresh instance with `config` and drops it: a bad setting
    /// or grant is found before the run sends anything.
    pub fn check(&self, config: &PluginConfig) -> Result<(), PluginFailure> {
        let mut sandbox = Sandboxed::new(
            &self.engine,
            &self.identity.name,
            self.limits,
            self.log.clone(),
        );
        let b = sandbox.call("instantiate", |store| self.pre.instantiate(store))?;
        let scorer = b.agentload_plugin_scorer();
        sandbox.call_result("configure", |store| scorer.call_configure(store, config))
    }

    /// Scores `items` and aggregates them, in one fresh instance.
    pub fn score(
        &self,
        config: &PluginConfig,
        items: &[ScoredItem],
    ) -> Result<Scored, PluginFailure> {
        let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
        let started = Instant::now();
        let mut sandbox = Sandboxed::new(
            &self.engine,
            &self.identity.name,
            self.limits,
            self.log.clone(),
        );
        let b = sandbox.call("instantiate", |store| self.pre.instantiate(store))?;
        let scorer = b.agentload_plugin_scorer();
        sandbox.call_result("configure", |store| scorer.call_configure(store, config))?;
        let mut timings = ScoreTimings {
            instantiate_ms: ms(started),
            ..ScoreTimings::default()
        };
        let started = Instant::now();
        let verdicts = sandbox.call_result("score", |store| scorer.call_score(store, items))?;
        timings.score_ms = ms(started);
        let bytes = verdicts
            .iter()
            .map(|v| {
                v.item_id.len() + v.detail_json.len() + v.excluded.as_ref().map_or(0, String::len)
            })
            .sum();
        sandbox.check_output(
            "score",
            "verdicts",
            bytes,
            "verdicts_mib",
            self.limits.verdicts_mib,
        )?;
        if verdicts.len() != items.len() {
            return Err(PluginFailure::Reported {
                plugin: self.identity.name.clone(),
                call: "score",
                error: super::types::PluginError::Internal(format!(
                    "returned {} verdicts for {} items",
                    verdicts.len(),
                    items.len()
                )),
            });
        }
        let started = Instant::now();
        let report = sandbox.call_result("aggregate", |store| {
            scorer.call_aggregate(store, items, &verdicts)
        })?;
        timings.aggregate_ms = ms(started);
        sandbox.check_output(
            "aggregate",
            "a report",
            report.report_json.len(),
            "report_mib",
            self.limits.report_mib,
        )?;
        Ok(Scored {
            verdicts,
            report,
            timings,
        })
    }
}
