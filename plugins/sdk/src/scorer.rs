//! The [`Scorer`] trait and its records.

use crate::{Completion, Config, Detail, Error, Info};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// A scorer: verdicts on (expected, completion) pairs, and a report.
///
/// Every scoring pass runs in fresh instances: `Default`, `configure`,
/// `score_all` over a batch of whole sessions (by default `score` on each
/// item; the host may score batches in several instances side by side),
/// then `aggregate` over every item and verdict in one instance. Scorers
/// must be pure: the same items always give the same verdicts, which may
/// depend on the items of their own session but no other.
pub trait Scorer: Default + 'static {
    /// Self-description; `package` is the crate's Cargo metadata.
    fn describe(package: Info) -> Info {
        package
    }

    /// Reads settings. The default accepts no settings at all
    /// ([`Config::no_settings`]: any key is an error naming it).
    fn configure(&mut self, config: Config) -> Result<(), Error> {
        config.no_settings()
    }

    /// The verdict on one item.
    fn score(&mut self, item: &Item) -> Result<Verdict, Error>;

    /// The verdicts on every item of a run, one per item in order. The
    /// default scores each item with [`score`](Self::score); a scorer whose
    /// verdicts depend on other items (the steps of one session, say)
    /// overrides it.
    fn score_all(&mut self, items: &[Item]) -> Result<Vec<Verdict>, Error> {
        items.iter().map(|item| self.score(item)).collect()
    }

    /// The report over a whole run. The default: the mean score of the
    /// items not excluded ([`Report::mean`]).
    fn aggregate(&mut self, items: &[Item], verdicts: &[Verdict]) -> Result<Report, Error> {
        let _ = items;
        Ok(Report::mean(verdicts))
    }
}

/// One turn to score.
#[derive(Debug, Clone)]
pub struct Item {
    pub item_id: String,
    pub session_id: String,
    pub turn: u32,
    /// The workload's expected data for the turn (JSON text).
    pub expected_json: String,
    /// None when the turn was expected but never answered (missing).
    pub completion: Option<Completion>,
}

impl Item {
    /// The expected data, deserialized; an [`Error::Input`] naming the item otherwise.
    pub fn expected<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_str(&self.expected_json)
            .map_err(|e| Error::input(format!("item {}: expected data: {e}", self.item_id)))
    }
}

/// The verdict on one item.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub item_id: String,
    /// In [0, 1].
    pub score: f64,
    /// Set when the item is not scored at all, with the reason.
    pub excluded: Option<String>,
    /// Detail as a JSON object.
    pub detail: Detail,
}

impl Verdict {
    /// A verdict of `score` on `item`.
    pub fn new(item: &Item, score: f64) -> Self {
        Self {
            item_id: item.item_id.clone(),
            score,
            excluded: None,
            detail: Detail::default(),
        }
    }

    /// An item left out of the score, with the reason.
    pub fn excluded(item: &Item, reason: impl Into<String>) -> Self {
        Self {
            excluded: Some(reason.into()),
            ..Self::new(item, 0.0)
        }
    }

    /// With a detail object.
    pub fn with_detail(mut self, detail: Value) -> Self {
        self.detail = detail.into();
        self
    }

    /// With a detail object written as JSON text, handed to the host as is
    /// (a scorer that builds its detail as text need not parse it back).
    pub fn with_detail_json(mut self, json: String) -> Self {
        self.detail = Detail::from_json(json);
        self
    }
}

/// The report of a run. The host checks that `json` is JSON and writes it
/// byte for byte to the phase's report file.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Headline score in [0, 1].
    pub score: f64,
    /// The report file's text (JSON).
    pub json: String,
    /// The run's accuracy gate, for scorers that have one: the host reads
    /// pass or fail from here (and refuses a `json` whose `gate.passed`
    /// says otherwise).
    pub gate: Option<Gate>,
}

/// An accuracy gate: passed when every metric passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub passed: bool,
    pub metrics: Vec<GateMetric>,
}

impl Gate {
    /// A gate over `metrics`, passed when each of them passed.
    pub fn of(metrics: Vec<GateMetric>) -> Self {
        Self {
            passed: metrics.iter().all(|m| m.passed),
            metrics,
        }
    }
}

/// One metric of a gate: passes at `value >= minimum` (when set) and
/// `value <= maximum` (when set).
#[derive(Debug, Clone, PartialEq)]
pub struct GateMetric {
    /// e.g. `bfcl_overall_accuracy`.
    pub name: String,
    pub value: f64,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    /// Where the bounds come from, for humans (e.g. `0.97 x 86.23`).
    pub rule: String,
    pub passed: bool,
}

impl GateMetric {
    /// `value` against `minimum`, passing at or above it.
    pub fn at_least(
        name: impl Into<String>,
        value: f64,
        minimum: f64,
        rule: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            value,
            minimum: Some(minimum),
            maximum: None,
            rule: rule.into(),
            passed: value >= minimum,
        }
    }
}

impl Report {
    /// A report of `report`, pretty-printed (two-space indent, as
    /// `serde_json::to_string_pretty`).
    pub fn new(score: f64, report: &Value) -> Self {
        Self {
            score,
            json: serde_json::to_string_pretty(report).expect("a JSON value serialises"),
            gate: None,
        }
    }

    /// A report of this exact JSON text, for a report file that must match
    /// another tool's byte for byte (e.g. Python's `json.dumps(x, indent=2)`).
    pub fn from_json(score: f64, json: String) -> Self {
        Self {
            score,
            json,
            gate: None,
        }
    }

    /// The same report with an accuracy gate.
    pub fn with_gate(mut self, gate: Gate) -> Self {
        self.gate = Some(gate);
        self
    }

    /// The mean score of the verdicts not excluded (0 when there are none),
    /// with the counts.
    pub fn mean(verdicts: &[Verdict]) -> Self {
        let scored: Vec<f64> = verdicts
            .iter()
            .filter(|v| v.excluded.is_none())
            .map(|v| v.score)
            .collect();
        let score = if scored.is_empty() {
            0.0
        } else {
            scored.iter().sum::<f64>() / scored.len() as f64
        };
        Self::new(
            score,
            &json!({
                "score": score,
                "items": verdicts.len(),
                "scored": scored.len(),
                "excluded": verdicts.len() - scored.len(),
            }),
        )
    }
}

/// The export glue's side (used by [`export_scorer!`](crate::export_scorer)).
#[doc(hidden)]
pub mod glue {
    // The WIT records in and out; the plugin sees the SDK's types, converted
    // here (moved, not copied).

    use super::*;
    use crate::wit::agentload::plugin::types as wit;
    use crate::wit::agentload::plugin::types::{PluginError, PluginInfo, PluginKind};
    use std::cell::RefCell;

    pub fn describe<S: Scorer>(package: Info) -> PluginInfo {
        let info = S::describe(package);
        let description = if info.description.is_empty() {
            format!("agentload scorer {}", info.name)
        } else {
            info.description
        };
        PluginInfo {
            name: info.name,
            version: info.version,
            kind: PluginKind::Scorer,
            description,
        }
    }

    pub fn configure<S: Scorer>(
        state: &RefCell<Option<S>>,
        config: wit::PluginConfig,
    ) -> Result<(), PluginError> {
        let mut scorer = S::default();
        scorer.configure(config.into())?;
        *state.borrow_mut() = Some(scorer);
        Ok(())
    }

    fn with<S: Scorer, R>(
        state: &RefCell<Option<S>>,
        f: impl FnOnce(&mut S) -> Result<R, Error>,
    ) -> Result<R, PluginError> {
        let mut state = state.borrow_mut();
        let scorer = state
            .as_mut()
            .ok_or_else(|| Error::input("called before configure"))?;
        Ok(f(scorer)?)
    }

    pub fn score<S: Scorer>(
        state: &RefCell<Option<S>>,
        items: &[Item],
    ) -> Result<Vec<Verdict>, PluginError> {
        let verdicts = with(state, |s| s.score_all(items))?;
        if verdicts.len() != items.len() {
            return Err(Error::internal(format!(
                "score_all returned {} verdicts for {} items",
                verdicts.len(),
                items.len()
            ))
            .into());
        }
        Ok(verdicts)
    }

    pub fn aggregate<S: Scorer>(
        state: &RefCell<Option<S>>,
        items: &[Item],
        verdicts: &[Verdict],
    ) -> Result<Report, PluginError> {
        if items.len() != verdicts.len()
            || items
                .iter()
                .zip(verdicts)
                .any(|(i, v)| i.item_id != v.item_id)
        {
            return Err(Error::input("verdicts do not match the items one for one").into());
        }
        with(state, |s| s.aggregate(items, verdicts))
    }

    /// An item from the host's record.
    pub fn item(
        item_id: String,
        session_id: String,
        turn: u32,
        expected_json: String,
        completion: Option<wit::Completion>,
    ) -> Item {
        Item {
            item_id,
            session_id,
            turn,
            expected_json,
            completion: completion.map(Completion::from),
        }
    }

    /// A verdict from the host's record.
    pub fn verdict(
        item_id: String,
        score: f64,
        excluded: Option<String>,
        detail_json: String,
    ) -> Verdict {
        Verdict {
            item_id,
            score,
            excluded,
            detail: Detail::from_json(detail_json),
        }
    }
}

/// Exports `$ty` (a [`Scorer`] + `Default`) as the plugin's
/// `agentload:plugin/scorer` implementation. See
/// [`export_workload!`](crate::export_workload).
///
/// ```
/// use agentload_sdk::{export_scorer, Error, Item, Scorer, Verdict};
///
/// /// 1 when the model answered with any text.
/// #[derive(Default)]
/// struct Answered;
///
/// impl Scorer for Answered {
///     fn score(&mut self, item: &Item) -> Result<Verdict, Error> {
///         Ok(match &item.completion {
///             Some(c) => Verdict::new(item, if c.content.is_empty() { 0.0 } else { 1.0 }),
///             None => Verdict::excluded(item, "missing"),
///         })
///     }
/// }
///
/// export_scorer!(Answered);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! export_scorer {
    ($ty:ty) => {
        #[doc(hidden)]
        type __AgentloadScorer = $ty;

        #[doc(hidden)]
        #[allow(dead_code, unused_imports, unused_qualifications, clippy::all)]
        mod __agentload_scorer_export {
            $crate::__agentload_generate_scorer_plugin!();

            use exports::agentload::plugin::scorer::{
                Gate, GateMetric, Guest, Report, ScoredItem, Verdict,
            };
            use $crate::__private::scorer as glue;
            use $crate::__private::types as t;
            type Plugin = super::__AgentloadScorer;

            ::std::thread_local! {
                static STATE: ::core::cell::RefCell<::core::option::Option<Plugin>> =
                    const { ::core::cell::RefCell::new(::core::option::Option::None) };
            }

            fn items(items: ::std::vec::Vec<ScoredItem>) -> ::std::vec::Vec<$crate::Item> {
                items
                    .into_iter()
                    .map(|i| {
                        glue::item(
                            i.item_id,
                            i.session_id,
                            i.turn,
                            i.expected_json,
                            i.completion,
                        )
                    })
                    .collect()
            }

            struct Component;

            impl Guest for Component {
                fn describe() -> t::PluginInfo {
                    glue::describe::<Plugin>($crate::package_info!())
                }

                fn configure(config: t::PluginConfig) -> ::core::result::Result<(), t::PluginError> {
                    STATE.with(|s| glue::configure::<Plugin>(s, config))
                }

                fn score(
                    list: ::std::vec::Vec<ScoredItem>,
                ) -> ::core::result::Result<::std::vec::Vec<Verdict>, t::PluginError> {
                    let list = items(list);
                    let verdicts = STATE.with(|s| glue::score::<Plugin>(s, &list))?;
                    ::core::result::Result::Ok(
                        verdicts
                            .into_iter()
                            .map(|v| Verdict {
                                item_id: v.item_id,
                                score: v.score,
                                excluded: v.excluded,
                                detail_json: v.detail.into_json(),
                            })
                            .collect(),
                    )
                }

                fn aggregate(
                    list: ::std::vec::Vec<ScoredItem>,
                    verdicts: ::std::vec::Vec<Verdict>,
                ) -> ::core::result::Result<Report, t::PluginError> {
                    let list = items(list);
                    let verdicts: ::std::vec::Vec<$crate::Verdict> = verdicts
                        .into_iter()
                        .map(|v| glue::verdict(v.item_id, v.score, v.excluded, v.detail_json))
                        .collect();
                    let report = STATE.with(|s| glue::aggregate::<Plugin>(s, &list, &verdicts))?;
                    ::core::result::Result::Ok(Report {
                        score: report.score,
                        report_json: report.json,
                        gate: report.gate.map(|g| Gate {
                            passed: g.passed,
                            metrics: g
                                .metrics
                                .into_iter()
                                .map(|m| GateMetric {
                                    name: m.name,
                                    value: m.value,
                                    minimum: m.minimum,
                                    maximum: m.maximum,
                                    rule: m.rule,
                                    passed: m.passed,
                                })
                                .collect(),
                        }),
                    })
                }
            }

            #[cfg(target_arch = "wasm32")]
            export!(Component with_types_in self);
        }
    };
}
