//! `bfcl-single`: the BFCL v4 single-turn accuracy gate of MLPerf Edge
//! Agentic as an agentload workload.
//!
//! Issues the reference's 995 samples (per category 62 % / 10 % / 10 % of
//! each subset's first rows, subsets of at most 25 rows whole, subsets in
//! alphabetical order), one single-turn session per BFCL entry, with tools
//! converted from the raw function docs as the reference converts them. The
//! expected data handed to the scorer carries the entry's raw function docs
//! and ground truth verbatim.

wit_bindgen::generate!({ path: "../../wit/agentload-plugin@0.1.0", world: "workload-plugin" });

pub mod dataset;
pub mod gate;
pub mod settings;
pub mod subsets;
/// The tool conversion and Python `json.dumps`, shared with bfcl-multi.
pub use bfcl_tools::tools;

use std::cell::RefCell;

use agentload::plugin::types::{
    PluginConfig, PluginError, PluginInfo, PluginKind, TurnOutcome, TurnRequest,
};
use exports::agentload::plugin::workload::{Guest, SessionPlan};
use gate::Gate;
use settings::Settings;

thread_local! {
    /// The gate set up by the last successful `configure`.
    static GATE: RefCell<Option<Gate>> = const { RefCell::new(None) };
}

/// The exported workload.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
struct BfclSingle;

impl Guest for BfclSingle {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "bfcl-single".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            kind: PluginKind::Workload,
            description: "MLPerf Edge Agentic accuracy gate: BFCL v4 single-turn samples \
                          (non_live, live, hallucination) as the reference issues them"
                .to_owned(),
        }
    }

    fn configure(config: PluginConfig) -> Result<Vec<SessionPlan>, PluginError> {
        let settings =
            Settings::parse(&config.settings_json).map_err(PluginError::InvalidConfig)?;
        let gate = Gate::configure(settings, &config.files)?;
        let plans = gate
            .samples
            .iter()
            .map(|s| SessionPlan {
                id: s.entry.id.clone(),
                expected_turns: 1,
            })
            .collect();
        GATE.with_borrow_mut(|slot| *slot = Some(gate));
        Ok(plans)
    }

    fn start_session(session_id: String) -> Result<TurnRequest, PluginError> {
        GATE.with_borrow(|gate| match gate {
            Some(gate) => gate.request(&session_id),
            None => Err(PluginError::InvalidInput(
                "configure has not been called".into(),
            )),
        })
    }

    fn next_turn(
        _session_id: String,
        _outcome: TurnOutcome,
    ) -> Result<Option<TurnRequest>, PluginError> {
        // Every sample is one turn.
        Ok(None)
    }
}

#[cfg(target_arch = "wasm32")]
export!(BfclSingle);

#[cfg(test)]
mod tests;
