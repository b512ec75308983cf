//! A scorer plugin: every scoring pass runs in fresh instances, so verdicts
//! depend only on the items given (no state survives between passes).
//!
//! A pass scores its items in up to one instance per core, each given whole
//! sessions (a scorer may judge a session's steps together, never items of
//! different sessions: the SDK's `Scorer::score_all` contract), then
//! aggregates every verdict in one instance.

use super::api::{WitVersion, World};
use super::bindings::scorer as v0_4_0;
use super::bindings::{Report, ScoredItem, Verdict};
use super::bindings_v0_1_0 as v0_1_0;
use super::bindings_v0_2_0 as v0_2_0;
use super::bindings_v0_3_0 as v0_3_0;
use super::compiler::{LoadedComponent, PluginEngine};
use super::instance::Sandboxed;
use super::log_budget::LogBudget;
use super::sandbox::StoreState;
use super::types::{PluginConfig, PluginError, PluginInfo, PluginKind};
use super::{PluginFailure, PluginIdentity};
use agentload_config::Limits;
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::InstancePre;
use wasmtime::Store;

/// A component linked as a `scorer-plugin` of the version it declares.
#[derive(Clone)]
enum Pre {
    V0_1_0(v0_1_0::scorer::ScorerPluginPre<StoreState>),
    V0_2_0(v0_2_0::scorer::ScorerPluginPre<StoreState>),
    V0_3_0(v0_3_0::scorer::ScorerPluginPre<StoreState>),
    V0_4_0(v0_4_0::ScorerPluginPre<StoreState>),
}

/// A live instance's bindings, of the version it was linked as.
enum Bindings {
    V0_1_0(v0_1_0::scorer::ScorerPlugin),
    V0_2_0(v0_2_0::scorer::ScorerPlugin),
    V0_3_0(v0_3_0::scorer::ScorerPlugin),
    V0_4_0(v0_4_0::ScorerPlugin),
}

/// What a `result<T, plugin-error>` call returns, in current types.
type CallResult<T> = wasmtime::Result<Result<T, PluginError>>;

impl Pre {
    fn new(version: WitVersion, pre: InstancePre<StoreState>) -> wasmtime::Result<Self> {
        Ok(match version {
            WitVersion::V0_1_0 => Self::V0_1_0(v0_1_0::scorer::ScorerPluginPre::new(pre)?),
            WitVersion::V0_2_0 => Self::V0_2_0(v0_2_0::scorer::ScorerPluginPre::new(pre)?),
            WitVersion::V0_3_0 => Self::V0_3_0(v0_3_0::scorer::ScorerPluginPre::new(pre)?),
            WitVersion::V0_4_0 => Self::V0_4_0(v0_4_0::ScorerPluginPre::new(pre)?),
        })
    }

    fn instantiate(&self, store: &mut Store<StoreState>) -> wasmtime::Result<Bindings> {
        Ok(match self {
            Self::V0_1_0(pre) => Bindings::V0_1_0(pre.instantiate(store)?),
            Self::V0_2_0(pre) => Bindings::V0_2_0(pre.instantiate(store)?),
            Self::V0_3_0(pre) => Bindings::V0_3_0(pre.instantiate(store)?),
            Self::V0_4_0(pre) => Bindings::V0_4_0(pre.instantiate(store)?),
        })
    }
}

impl Bindings {
    fn describe(&self, store: &mut Store<StoreState>) -> wasmtime::Result<PluginInfo> {
        match self {
            Self::V0_1_0(b) => b
                .agentload_plugin_scorer()
                .call_describe(store)
                .map(v0_1_0::plugin_info_up),
            Self::V0_2_0(b) => b
                .agentload_plugin_scorer()
                .call_describe(store)
                .map(v0_2_0::plugin_info_up),
            Self::V0_3_0(b) => b
                .agentload_plugin_scorer()
                .call_describe(store)
                .map(v0_3_0::plugin_info_up),
            Self::V0_4_0(b) => b.agentload_plugin_scorer().call_describe(store),
        }
    }

    fn configure(&self, store: &mut Store<StoreState>, config: &PluginConfig) -> CallResult<()> {
        match self {
            Self::V0_1_0(b) => Ok(b
                .agentload_plugin_scorer()
                .call_configure(store, &v0_1_0::plugin_config_down(config))?
                .map_err(v0_1_0::plugin_error_up)),
            Self::V0_2_0(b) => Ok(b
                .agentload_plugin_scorer()
                .call_configure(store, &v0_2_0::plugin_config_down(config))?
                .map_err(v0_2_0::plugin_error_up)),
            Self::V0_3_0(b) => Ok(b
                .agentload_plugin_scorer()
                .call_configure(store, &v0_3_0::plugin_config_down(config))?
                .map_err(v0_3_0::plugin_error_up)),
            Self::V0_4_0(b) => b.agentload_plugin_scorer().call_configure(store, config),
        }
    }

    fn score(
        &self,
        store: &mut Store<StoreState>,
        items: &[ScoredItem],
    ) -> CallResult<Vec<Verdict>> {
        match self {
            Self::V0_1_0(b) => {
                let items: Vec<_> = items.iter().map(v0_1_0::scored_item_down).collect();
                Ok(b.agentload_plugin_scorer()
                    .call_score(store, &items)?
                    .map(|v| v.into_iter().map(v0_1_0::verdict_up).collect())
                    .map_err(v0_1_0::plugin_error_up))
            }
            Self::V0_2_0(b) => {
                let items: Vec<_> = items.iter().map(v0_2_0::scored_item_down).collect();
                Ok(b.agentload_plugin_scorer()
                    .call_score(store, &items)?
                    .map(|v| v.into_iter().map(v0_2_0::verdict_up).collect())
                    .map_err(v0_2_0::plugin_error_up))
            }
            Self::V0_3_0(b) => {
                let items: Vec<_> = items.iter().map(v0_3_0::scored_item_down).collect();
                Ok(b.agentload_plugin_scorer()
                    .call_score(store, &items)?
                    .map(|v| v.into_iter().map(v0_3_0::verdict_up).collect())
                    .map_err(v0_3_0::plugin_error_up))
            }
            Self::V0_4_0(b) => b.agentload_plugin_scorer().call_score(store, items),
        }
    }

    fn aggregate(
        &self,
        store: &mut Store<StoreState>,
        items: &[ScoredItem],
        verdicts: &[Verdict],
    ) -> CallResult<Report> {
        match self {
            Self::V0_1_0(b) => {
                let items: Vec<_> = items.iter().map(v0_1_0::scored_item_down).collect();
                let verdicts: Vec<_> = verdicts.iter().map(v0_1_0::verdict_down).collect();
                Ok(b.agentload_plugin_scorer()
                    .call_aggregate(store, &items, &verdicts)?
                    .map(v0_1_0::report_up)
                    .map_err(v0_1_0::plugin_error_up))
            }
            Self::V0_2_0(b) => {
                let items: Vec<_> = items.iter().map(v0_2_0::scored_item_down).collect();
                let verdicts: Vec<_> = verdicts.iter().map(v0_2_0::verdict_down).collect();
                Ok(b.agentload_plugin_scorer()
                    .call_aggregate(store, &items, &verdicts)?
                    .map(v0_2_0::report_up)
                    .map_err(v0_2_0::plugin_error_up))
            }
            Self::V0_3_0(b) => {
                let items: Vec<_> = items.iter().map(v0_3_0::scored_item_down).collect();
                let verdicts: Vec<_> = verdicts.iter().map(v0_3_0::verdict_down).collect();
                Ok(b.agentload_plugin_scorer()
                    .call_aggregate(store, &items, &verdicts)?
                    .map(v0_3_0::report_up)
                    .map_err(v0_3_0::plugin_error_up))
            }
            Self::V0_4_0(b) => b
                .agentload_plugin_scorer()
                .call_aggregate(store, items, verdicts),
        }
    }
}

/// A loaded scorer plugin.
pub struct ScorerPlugin {
    engine: Arc<PluginEngine>,
    pre: Pre,
    limits: Limits,
    log: LogBudget,
    identity: PluginIdentity,
    /// The most instances one pass scores in (at least 1).
    instances: usize,
}

/// Items per instance below which another instance costs more than it saves
/// (instantiating and configuring a scorer takes milliseconds).
const MIN_ITEMS_PER_INSTANCE: usize = 64;

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
    /// Instances `score` ran in, side by side.
    pub instances: usize,
}

impl ScorerPlugin {
    /// Links `loaded` as a `scorer-plugin` and asks it to describe itself.
    pub fn new(
        engine: Arc<PluginEngine>,
        loaded: &LoadedComponent,
        limits: Limits,
    ) -> Result<Self, PluginFailure> {
        let label = loaded.label("scorer");
        let invalid = |reason: String| PluginFailure::Instantiate {
            plugin: label.clone(),
            world: "scorer-plugin",
            reason,
        };
        // Refuse a component built against a WIT version this host does not
        // know before linking it; otherwise link it with that version's bindings.
        let version =
            super::api::require(engine.engine(), &loaded.component, &label, World::Scorer)?;
        let pre = engine
            .linker()
            .instantiate_pre(&loaded.component)
            .map_err(|e| invalid(format!("{e:#}")))?;
        let pre = Pre::new(version, pre).map_err(|e| invalid(format!("{e:#}")))?;
        let log = LogBudget::new(&limits);
        let mut sandbox = Sandboxed::new(&engine, &label, limits, log.clone());
        let bindings = sandbox.call("instantiate", |store| pre.instantiate(store))?;
        let info = sandbox.call("describe", |store| bindings.describe(store))?;
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
            instances: default_instances(),
        })
    }

    /// Scores in at most `n` instances side by side (`0`: one per core).
    pub fn with_instances(mut self, n: usize) -> Self {
        self.instances = if n == 0 { default_instances() } else { n };
        self
    }

    /// Name, version and digest.
    pub fn identity(&self) -> &PluginIdentity {
        &self.identity
    }

    /// Configures a fresh instance with `config` and drops it: a bad setting
    /// or grant is found before the run sends anything.
    pub fn check(&self, config: &PluginConfig) -> Result<(), PluginFailure> {
        self.configured(config).map(drop)
    }

    /// A fresh instance configured with `config`.
    fn configured(&self, config: &PluginConfig) -> Result<(Sandboxed, Bindings), PluginFailure> {
        let mut sandbox = Sandboxed::new(
            &self.engine,
            &self.identity.name,
            self.limits,
            self.log.clone(),
        );
        let b = sandbox.call("instantiate", |store| self.pre.instantiate(store))?;
        sandbox.call_result("configure", |store| b.configure(store, config))?;
        Ok((sandbox, b))
    }

    /// Scores `items` (whole sessions) in a fresh instance.
    fn score_chunk(
        &self,
        config: &PluginConfig,
        items: &[ScoredItem],
    ) -> Result<Vec<Verdict>, PluginFailure> {
        let (mut sandbox, b) = self.configured(config)?;
        self.verdicts(&mut sandbox, &b, items)
    }

    /// `score` over `items` in an instance, its output checked.
    fn verdicts(
        &self,
        sandbox: &mut Sandboxed,
        b: &Bindings,
        items: &[ScoredItem],
    ) -> Result<Vec<Verdict>, PluginFailure> {
        let verdicts = sandbox.call_result("score", |store| b.score(store, items))?;
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
        Ok(verdicts)
    }

    /// Scores `items` and aggregates them: the items in up to
    /// [`with_instances`](Self::with_instances) fresh instances side by side
    /// (whole sessions each, see [`session_chunks`]), the aggregate in the
    /// first.
    pub fn score(
        &self,
        config: &PluginConfig,
        items: &[ScoredItem],
    ) -> Result<Scored, PluginFailure> {
        let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
        let started = Instant::now();
        let (mut sandbox, b) = self.configured(config)?;
        let mut timings = ScoreTimings {
            instantiate_ms: ms(started),
            ..ScoreTimings::default()
        };
        let chunks = session_chunks(items, self.instances);
        timings.instances = chunks.len().max(1);
        let started = Instant::now();
        let verdicts = match chunks.as_slice() {
            [] | [_] => self.verdicts(&mut sandbox, &b, items)?,
            [first, rest @ ..] => {
                let batches = std::thread::scope(|scope| {
                    let others: Vec<_> = rest
                        .iter()
                        .map(|chunk| {
                            scope.spawn(|| self.score_chunk(config, &gather(items, chunk)))
                        })
                        .collect();
                    let mut batches =
                        vec![self.verdicts(&mut sandbox, &b, &gather(items, first))?];
                    for other in others {
                        batches.push(
                            other
                                .join()
                                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?,
                        );
                    }
                    Ok::<_, PluginFailure>(batches)
                })?;
                // Back into the items' order.
                let mut placed: Vec<Option<Verdict>> = vec![None; items.len()];
                for (chunk, batch) in chunks.iter().zip(batches) {
                    for (&i, verdict) in chunk.iter().zip(batch) {
                        placed[i] = Some(verdict);
                    }
                }
                placed
                    .into_iter()
                    .map(|v| v.expect("every item is in one batch"))
                    .collect()
            }
        };
        timings.score_ms = ms(started);
        let started = Instant::now();
        let report =
            sandbox.call_result("aggregate", |store| b.aggregate(store, items, &verdicts))?;
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

/// One instance per core the host may use (at least 1).
fn default_instances() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// `items` split into at most `n` batches of whole sessions, as indices
/// into `items` in their order there: sessions in the order they first
/// appear, packed into batches of about the same number of items, none
/// under [`MIN_ITEMS_PER_INSTANCE`] items (so a small pass stays in one
/// instance). Empty for no items.
fn session_chunks(items: &[ScoredItem], n: usize) -> Vec<Vec<usize>> {
    if items.is_empty() {
        return Vec::new();
    }
    let n = n.clamp(1, items.len().div_ceil(MIN_ITEMS_PER_INSTANCE).max(1));
    let mut order: Vec<&str> = Vec::new();
    let mut sessions: std::collections::HashMap<&str, Vec<usize>> = Default::default();
    for (i, item) in items.iter().enumerate() {
        sessions
            .entry(item.session_id.as_str())
            .or_insert_with(|| {
                order.push(item.session_id.as_str());
                Vec::new()
            })
            .push(i);
    }
    let target = items.len().div_ceil(n);
    let mut chunks: Vec<Vec<usize>> = vec![Vec::new()];
    for session in order {
        let current = chunks.last_mut().expect("one chunk at least");
        if current.len() >= target {
            chunks.push(Vec::new());
        }
        chunks
            .last_mut()
            .expect("one chunk at least")
            .extend(&sessions[session]);
    }
    for chunk in &mut chunks {
        chunk.sort_unstable();
    }
    chunks
}

/// The items at `indices` (increasing): borrowed when they are one run of
/// `items`, copied otherwise.
fn gather<'a>(items: &'a [ScoredItem], indices: &[usize]) -> Cow<'a, [ScoredItem]> {
    match (indices.first(), indices.last()) {
        (Some(&first), Some(&last)) if last - first + 1 == indices.len() => {
            Cow::Borrowed(&items[first..=last])
        }
        _ => Cow::Owned(indices.iter().map(|&i| items[i].clone()).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(sessions: &[(&str, usize)]) -> Vec<ScoredItem> {
        sessions
            .iter()
            .flat_map(|&(session, turns)| {
                (0..turns).map(move |turn| ScoredItem {
                    item_id: format!("{session}-{turn}"),
                    session_id: session.into(),
                    turn: turn as u32,
                    expected_json: "{}".into(),
                    completion: None,
                })
            })
            .collect()
    }

    fn sizes(chunks: &[Vec<usize>]) -> Vec<usize> {
        chunks.iter().map(|c| c.len()).collect()
    }

    #[test]
    fn chunks_hold_whole_sessions_and_cover_every_item_once() {
        let one_turn: Vec<(String, usize)> = (0..300).map(|i| (format!("s{i}"), 1)).collect();
        let one_turn: Vec<(&str, usize)> = one_turn.iter().map(|(s, n)| (s.as_str(), *n)).collect();
        assert_eq!(sizes(&session_chunks(&items(&one_turn), 2)), [150, 150]);
        assert_eq!(
            sizes(&session_chunks(&items(&one_turn), 3)),
            [100, 100, 100]
        );
        // A session is never cut: the batch takes all of it.
        let long = items(&[("a", 100), ("b", 100), ("c", 10)]);
        assert_eq!(sizes(&session_chunks(&long, 2)), [200, 10]);
        // Interleaved sessions (concurrency > 1): grouped by session, every
        // index once, each batch in the items' order.
        let mut mixed = Vec::new();
        for turn in 0..100 {
            for session in ["a", "b", "c"] {
                mixed.extend(items(&[(session, 1)]).into_iter().map(|mut i| {
                    i.turn = turn;
                    i
                }));
            }
        }
        let chunks = session_chunks(&mixed, 3);
        assert_eq!(sizes(&chunks), [100, 100, 100]);
        for chunk in &chunks {
            let session = &mixed[chunk[0]].session_id;
            assert!(chunk.iter().all(|&i| &mixed[i].session_id == session));
            assert!(chunk.windows(2).all(|w| w[0] < w[1]));
            assert!(matches!(gather(&mixed, chunk), Cow::Owned(_)));
        }
        let mut all: Vec<usize> = chunks.concat();
        all.sort_unstable();
        assert_eq!(all, (0..300).collect::<Vec<_>>());
        let contiguous = session_chunks(&long, 2);
        assert!(matches!(gather(&long, &contiguous[0]), Cow::Borrowed(s) if s.len() == 200));
    }

    #[test]
    fn small_passes_stay_in_one_instance() {
        assert_eq!(
            sizes(&session_chunks(&items(&[("a", 1), ("b", 1)]), 8)),
            [2]
        );
        assert!(session_chunks(&[], 4).is_empty());
        assert_eq!(sizes(&session_chunks(&items(&[("a", 500)]), 4)), [500]);
        assert_eq!(
            sizes(&session_chunks(&items(&[("a", 100), ("b", 28)]), 4)),
            [100, 28]
        );
    }
}
