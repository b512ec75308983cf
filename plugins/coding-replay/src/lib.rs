//! `coding-replay`: the MLPerf Edge Agentic performance workload.
//!
//! Replays recorded agentic-coding trajectories (flat JSONL, one message per
//! row) the way the reference implementation (`mlcommons/endpoints`) does:
//! every user or tool row is one request carrying the recorded history, and
//! the assistant row after it is the expected output handed to the scorer.

wit_bindgen::generate!({ path: "../../wit/agentload-plugin@0.1.0", world: "workload-plugin" });

pub mod dataset;
pub mod replay;
pub mod session;
pub mod settings;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod tests;

use std::cell::RefCell;

use agentload::plugin::types::{
    PluginConfig, PluginError, PluginInfo, PluginKind, TurnOutcome, TurnRequest,
};
use exports::agentload::plugin::workload::{Guest, SessionPlan};
use session::Run;

thread_local! {
    /// The run set up by the last successful `configure` (the component is single-threaded).
    static RUN: RefCell<Option<Run>> = const { RefCell::new(None) };
}

fn with_run<T>(f: impl FnOnce(&mut Run) -> Result<T, PluginError>) -> Result<T, PluginError> {
    RUN.with_borrow_mut(|run| match run {
        Some(run) => f(run),
        None => Err(PluginError::InvalidInput(
            "configure has not been called".to_owned(),
        )),
    })
}

/// The exported workload.
pub struct CodingReplay;

impl Guest for CodingReplay {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "coding-replay".to_owned(),
            version: "0.1.0".to_owned(),
            kind: PluginKind::Workload,
            description: "MLPerf Edge Agentic: replays recorded agentic-coding trajectories \
                          as the reference does"
                .to_owned(),
        }
    }

    fn configure(config: PluginConfig) -> Result<Vec<SessionPlan>, PluginError> {
        let run = Run::configure(&config)?;
        let plans = run.plans();
        RUN.with_borrow_mut(|slot| *slot = Some(run));
        Ok(plans)
    }

    fn start_session(session_id: String) -> Result<TurnRequest, PluginError> {
        with_run(|run| run.start(&session_id))
    }

    fn next_turn(
        session_id: String,
        _outcome: TurnOutcome,
    ) -> Result<Option<TurnRequest>, PluginError> {
        // Completed, failed or aborted: the next recorded turn either way (see `Run::next`).
        with_run(|run| run.next(&session_id))
    }
}

// Exported only in the component: the WIT export names (`agentload:plugin/...#configure`)
// break the native linker's version script, and native builds exist for the tests.
#[cfg(target_arch = "wasm32")]
export!(CodingReplay);
