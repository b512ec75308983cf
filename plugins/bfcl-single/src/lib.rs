//! `bfcl-single`: the BFCL v4 single-turn accuracy gate of MLPerf Edge
//! Agentic as an agentload workload.
//!
//! Issues the reference's 995 samples (per category 62 % / 10 % / 10 % of
//! each subset's first rows, subsets of at most 25 rows whole, subsets in
//! alphabetical order), one single-turn session per BFCL entry, with tools
//! converted from the raw function docs as the reference converts them. The
//! expected data handed to the scorer carries the entry's raw function docs
//! and ground truth verbatim.

#![forbid(unsafe_code)]

pub mod dataset;
pub mod gate;
pub mod settings;
pub mod subsets;
/// The tool conversion and Python `json.dumps`, shared with bfcl-multi.
pub use bfcl_tools::tools;

use agentload_sdk::{export_workload, Config, Error, Outcome, Session, Turn, Workload};
use gate::Gate;
use settings::Settings;

/// The workload: the configured gate.
#[derive(Debug, Default)]
pub struct BfclSingle {
    gate: Option<Gate>,
}

impl Workload for BfclSingle {
    fn configure(&mut self, config: Config) -> Result<Vec<Session>, Error> {
        let gate = Gate::configure(Settings::from_config(&config)?, &config)?;
        let sessions = gate
            .samples
            .iter()
            .map(|s| Session::new(s.entry.id.clone(), 1))
            .collect();
        self.gate = Some(gate);
        Ok(sessions)
    }

    fn start(&mut self, session: &str) -> Result<Turn, Error> {
        self.gate
            .as_ref()
            .ok_or_else(|| Error::input("called before configure"))?
            .request(session)
    }

    fn next(&mut self, _session: &str, _outcome: Outcome) -> Result<Option<Turn>, Error> {
        // Every sample is one turn.
        Ok(None)
    }
}

export_workload!(BfclSingle);

#[cfg(test)]
mod tests;
