//! The [`Workload`] trait and what it produces.

use crate::{Completion, Config, Error, Info, Message, Sampling, Tool};
use serde_json::Value;

/// How the previous turn of a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered.
    Completed(Completion),
    /// The turn failed (HTTP error, timeout, broken stream); the cause.
    Failed(String),
    /// Not sent: an earlier turn of the session failed. Return the turn that
    /// would have followed (the host records it as missing without sending
    /// it), or `None`.
    Aborted,
}

impl Outcome {
    /// The completion, when the turn completed.
    pub fn completion(&self) -> Option<&Completion> {
        match self {
            Self::Completed(c) => Some(c),
            _ => None,
        }
    }
}

/// A workload: turns data into sessions of chat requests.
///
/// One value lives in the plugin instance from `configure` on (made with
/// `Default`); the host calls `start` for each session it runs, then `next`
/// after every turn. Sessions may interleave (concurrency > 1), so keep
/// per-session state keyed by the session id.
pub trait Workload: Default + 'static {
    /// Self-description. `package` is the plugin crate's Cargo metadata
    /// (name, version, description); return it, or change it.
    fn describe(package: Info) -> Info {
        package
    }

    /// Reads settings ([`Config::settings`](crate::Config::settings)) and
    /// granted files; returns the sessions in issue order.
    fn configure(&mut self, config: Config) -> Result<Vec<Session>, Error>;

    /// The first turn of `session`.
    fn start(&mut self, session: &str) -> Result<Turn, Error>;

    /// The turn after `outcome`, or `None` when the session is over
    /// (normally after a failed turn).
    fn next(&mut self, session: &str, outcome: Outcome) -> Result<Option<Turn>, Error>;

    /// Live-reply replay: the review of the reply `next` was just given
    /// (called right after it; the host records it with that turn). Replay
    /// workloads with `history = "live"` return one for every sent turn;
    /// the default reviews nothing.
    fn review(&mut self, _session: &str) -> Option<crate::live::Review> {
        None
    }

    /// How long the session waits after the turn `next` was just given
    /// (called right after it): before the turn `next` returned (on top of
    /// its `delay_ms`) or, when `next` returned `None`, before the session
    /// ends and its slot takes the next one. The time the agent's tools ran
    /// after the reply; the default is none.
    fn pause_ms(&mut self, _session: &str) -> u64 {
        0
    }

    /// What the workload reports about its data and settings (a dataset's
    /// digest, the options in force), as a JSON object: asked once, right
    /// after `configure`; the host writes it to `run_manifest.json`
    /// (`workload_facts`). The default reports nothing (`{}`).
    fn facts(&self) -> Value {
        Value::Object(serde_json::Map::new())
    }
}

/// A session the workload will run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Unique within the run; sent as `X-Session-ID`.
    pub id: String,
    /// Requests the session issues when every turn succeeds.
    pub expected_turns: u32,
}

impl Session {
    /// A session of `expected_turns` turns.
    pub fn new(id: impl Into<String>, expected_turns: u32) -> Self {
        Self {
            id: id.into(),
            expected_turns,
        }
    }
}

/// One request of a session. The session id is filled in by the SDK.
///
/// A turn carries only what is new: the first [`keep`](Self::keep)
/// messages of the session's previous request (held by the host), then
/// [`messages`](Self::messages). A replay that adds the recorded answer and
/// tool results to its history keeps the whole previous request
/// ([`Turn::after`]), so a turn costs what it adds, not its history.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The turn number within the session (1-based, by convention).
    pub turn: u32,
    /// Key of this turn's verdict; default `<session>:<turn>`.
    pub item_id: Option<String>,
    /// How many leading messages of the session's previous request this
    /// request keeps, in order (0 on a session's first turn).
    pub keep: u32,
    /// The messages after the kept ones.
    pub messages: Vec<Message>,
    /// The `tools` array (JSON text); `None` sends no `tools` key.
    pub tools_json: Option<String>,
    pub sampling: Sampling,
    /// Host-clock wait before sending.
    pub delay_ms: u64,
    /// What the scorer receives with the completion (JSON text).
    pub expected_json: String,
}

impl Turn {
    /// Turn `turn` of exactly these messages (keeping none of the previous
    /// request's), no tools, server-default sampling.
    pub fn new(turn: u32, messages: Vec<Message>) -> Self {
        Self::after(turn, 0, messages)
    }

    /// Turn `turn`: the first `keep` messages of the session's previous
    /// request, then `messages`. The host refuses a turn that keeps more
    /// messages than the previous request had (or any, on a first turn).
    pub fn after(turn: u32, keep: u32, messages: Vec<Message>) -> Self {
        Self {
            turn,
            item_id: None,
            keep,
            messages,
            tools_json: None,
            sampling: Sampling::default(),
            delay_ms: 0,
            expected_json: "{}".into(),
        }
    }

    /// With an item id.
    pub fn with_item_id(mut self, id: impl Into<String>) -> Self {
        self.item_id = Some(id.into());
        self
    }

    /// With tools (none: no `tools` key).
    pub fn with_tools(mut self, tools: Vec<Tool>) -> Self {
        self.tools_json = (!tools.is_empty())
            .then(|| Value::Array(tools.into_iter().map(|t| t.0).collect()).to_string());
        self
    }

    /// With the `tools` array as JSON text, passed on byte for byte: for
    /// tools made once for many turns, or recorded ones sent as recorded.
    pub fn with_tools_json(mut self, tools_json: Option<String>) -> Self {
        self.tools_json = tools_json;
        self
    }

    /// With sampling parameters.
    pub fn with_sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// With a delay before sending.
    pub fn with_delay_ms(mut self, delay_ms: u64) -> Self {
        self.delay_ms = delay_ms;
        self
    }

    /// With the scorer's expected data.
    pub fn with_expected(mut self, expected: Value) -> Self {
        self.expected_json = expected.to_string();
        self
    }

    /// With the scorer's expected data as JSON text, passed on byte for
    /// byte: for data a scorer must see verbatim (numbers with every digit,
    /// `5` apart from `5.0`), or text already made once for many turns.
    pub fn with_expected_json(mut self, expected_json: impl Into<String>) -> Self {
        self.expected_json = expected_json.into();
        self
    }

    /// The request the host receives for this turn of `session`.
    pub fn into_request(self, session: impl Into<String>) -> TurnRequest {
        let session_id = session.into();
        TurnRequest {
            item_id: self
                .item_id
                .unwrap_or_else(|| format!("{session_id}:{}", self.turn)),
            session_id,
            turn: self.turn,
            keep: self.keep,
            messages: self.messages,
            tools_json: self.tools_json,
            sampling: self.sampling,
            delay_ms: self.delay_ms,
            expected_json: self.expected_json,
        }
    }
}

/// A [`Turn`] as the host receives it ([`Turn::into_request`]): the session
/// id and the item id filled in. For tests.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRequest {
    /// Sent as the `X-Session-ID` header.
    pub session_id: String,
    pub turn: u32,
    /// Key of this turn's verdict.
    pub item_id: String,
    /// Leading messages of the session's previous request kept.
    pub keep: u32,
    /// The messages after the kept ones.
    pub messages: Vec<Message>,
    /// The `tools` array (JSON text); `None` sends no `tools` key.
    pub tools_json: Option<String>,
    pub sampling: Sampling,
    /// Host-clock wait before sending.
    pub delay_ms: u64,
    /// What the scorer receives with the completion (JSON text).
    pub expected_json: String,
}

/// A session's messages as the host assembles them, turn by turn (each
/// keeps messages of the previous request, then adds its own): for a
/// workload's tests.
#[derive(Debug, Clone, Default)]
pub struct History {
    messages: Vec<Message>,
}

impl History {
    /// The whole message list a turn or request stands for (its `keep` and
    /// `messages`), after the ones applied before it.
    ///
    /// # Panics
    /// When it keeps more messages than the previous request had (the host
    /// refuses such a turn).
    pub fn apply(&mut self, keep: u32, messages: &[Message]) -> &[Message] {
        let keep = keep as usize;
        assert!(
            keep <= self.messages.len(),
            "a turn keeps {keep} messages of a previous request that had {}",
            self.messages.len()
        );
        self.messages.truncate(keep);
        self.messages.extend(messages.iter().cloned());
        &self.messages
    }
}

/// The export glue's side (used by [`export_workload!`](crate::export_workload)).
#[doc(hidden)]
pub mod glue {
    // The WIT records in and out; the plugin sees the SDK's types, converted
    // here (moved, not copied).

    use super::*;
    use crate::wit::agentload::plugin::types as wit;
    use crate::wit::agentload::plugin::types::{PluginError, PluginInfo, PluginKind};
    use std::cell::RefCell;

    pub fn describe<W: Workload>(package: Info) -> PluginInfo {
        let info = W::describe(package);
        let description = if info.description.is_empty() {
            format!("agentload workload {}", info.name)
        } else {
            info.description
        };
        PluginInfo {
            name: info.name,
            version: info.version,
            kind: PluginKind::Workload,
            description,
        }
    }

    /// The sessions and the facts (JSON text) of a configured workload.
    pub fn configure<W: Workload>(
        state: &RefCell<Option<W>>,
        config: wit::PluginConfig,
    ) -> Result<(Vec<Session>, String), PluginError> {
        let mut workload = W::default();
        let sessions = workload.configure(config.into())?;
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = sessions.iter().find(|s| !seen.insert(s.id.as_str())) {
            return Err(Error::internal(format!("session id `{}` returned twice", dup.id)).into());
        }
        let facts = workload.facts();
        if !facts.is_object() {
            return Err(
                Error::internal(format!("facts must be a JSON object, not {facts}")).into(),
            );
        }
        *state.borrow_mut() = Some(workload);
        Ok((sessions, facts.to_string()))
    }

    fn with<W: Workload, R>(
        state: &RefCell<Option<W>>,
        f: impl FnOnce(&mut W) -> Result<R, Error>,
    ) -> Result<R, PluginError> {
        let mut state = state.borrow_mut();
        let workload = state
            .as_mut()
            .ok_or_else(|| Error::input("called before configure"))?;
        Ok(f(workload)?)
    }

    pub fn start<W: Workload>(
        state: &RefCell<Option<W>>,
        session: String,
    ) -> Result<wit::TurnRequest, PluginError> {
        with(state, |w| w.start(&session)).map(|t| t.into_request(session).into())
    }

    /// The next turn, the review of the reply just given, and the pause after it.
    pub type Step = (Option<crate::live::Review>, Option<wit::TurnRequest>, u64);

    pub fn next<W: Workload>(
        state: &RefCell<Option<W>>,
        session: String,
        outcome: wit::TurnOutcome,
    ) -> Result<Step, PluginError> {
        with(state, |w| {
            let next = w.next(&session, outcome.into())?;
            Ok((w.review(&session), next, w.pause_ms(&session)))
        })
        .map(|(review, next, pause)| (review, next.map(|t| t.into_request(session).into()), pause))
    }
}

/// Exports `$ty` (a [`Workload`] + `Default`) as the plugin's
/// `agentload:plugin/workload` implementation. Invoke once, at the crate
/// root (or any module where `$ty` is in scope). The component export is
/// compiled only for `wasm32`; native builds (unit tests) keep the glue.
#[macro_export]
macro_rules! export_workload {
    ($ty:ty) => {
        #[doc(hidden)]
        type __AgentloadWorkload = $ty;

        #[doc(hidden)]
        #[allow(dead_code, unused_imports, unused_qualifications, clippy::all)]
        mod __agentload_workload_export {
            $crate::__agentload_generate_workload_plugin!();

            use exports::agentload::plugin::workload::{
                Divergence, Guest, LiveAction, SessionPlan, TurnReview, TurnStep, WorkloadPlan,
            };
            use $crate::live::{Divergence as D, LiveAction as A};
            use $crate::__private::types as t;
            use $crate::__private::workload as glue;
            type Plugin = super::__AgentloadWorkload;

            ::std::thread_local! {
                static STATE: ::core::cell::RefCell<::core::option::Option<Plugin>> =
                    const { ::core::cell::RefCell::new(::core::option::Option::None) };
            }

            struct Component;

            impl Guest for Component {
                fn describe() -> t::PluginInfo {
                    glue::describe::<Plugin>($crate::package_info!())
                }

                fn configure(
                    config: t::PluginConfig,
                ) -> ::core::result::Result<WorkloadPlan, t::PluginError> {
                    STATE.with(|s| glue::configure::<Plugin>(s, config)).map(|(sessions, facts)| {
                        WorkloadPlan {
                            sessions: sessions
                                .into_iter()
                                .map(|s| SessionPlan {
                                    id: s.id,
                                    expected_turns: s.expected_turns,
                                    workspace: ::core::option::Option::None,
                                })
                                .collect(),
                            facts_json: facts,
                        }
                    })
                }

                fn start_session(
                    session_id: ::std::string::String,
                ) -> ::core::result::Result<t::TurnRequest, t::PluginError> {
                    STATE.with(|s| glue::start::<Plugin>(s, session_id))
                }

                fn next_turn(
                    session_id: ::std::string::String,
                    outcome: t::TurnOutcome,
                    _tool_results: ::std::vec::Vec<t::ToolResult>,
                ) -> ::core::result::Result<TurnStep, t::PluginError> {
                    let (review, next, pause_ms) =
                        STATE.with(|s| glue::next::<Plugin>(s, session_id, outcome))?;
                    let review = review.map(|r| TurnReview {
                        divergence: match r.divergence {
                            D::Error => Divergence::Error,
                            D::Truncated => Divergence::Truncated,
                            D::Empty => Divergence::Empty,
                            D::MalformedArgs => Divergence::MalformedArgs,
                            D::TextForCall => Divergence::TextForCall,
                            D::CallForText => Divergence::CallForText,
                            D::MissingCalls => Divergence::MissingCalls,
                            D::ExtraCalls => Divergence::ExtraCalls,
                            D::NameDiff => Divergence::NameDiff,
                            D::ArgsDiff => Divergence::ArgsDiff,
                            D::Match => Divergence::Match,
                        },
                        action: match r.action {
                            A::Kept => LiveAction::Kept,
                            A::Substituted => LiveAction::Substituted,
                            A::Ended => LiveAction::Ended,
                            A::Failed => LiveAction::Failed,
                        },
                        paired_results: r.paired_results,
                        dropped_results: r.dropped_results,
                        placeholder_results: r.placeholder_results,
                        detail: r.detail,
                    });
                    ::core::result::Result::Ok(TurnStep { review, next, pause_ms })
                }
            }

            #[cfg(target_arch = "wasm32")]
            export!(Component with_types_in self);
        }
    };
}
