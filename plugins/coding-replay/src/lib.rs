//! `coding-replay`: the MLPerf Edge Agentic performance workload.
//!
//! Replays recorded agentic-coding trajectories (flat JSONL, one message per
//! row) the way the reference implementation (`mlcommons/endpoints`) does:
//! every user or tool row is one request carrying the recorded history, and
//! the assistant row after it is the expected output handed to the scorer.

#![forbid(unsafe_code)]

pub mod dataset;
pub mod replay;
pub mod salt;
pub mod session;
pub mod settings;

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod live_tests;
#[cfg(test)]
mod tests;

use agentload_sdk::live::Review;
use agentload_sdk::{export_workload, Config, Error, Outcome, Session, Turn, Workload};
use session::Run;

/// The workload: the run set up by `configure`.
#[derive(Debug, Default)]
pub struct CodingReplay {
    run: Option<Run>,
}

impl CodingReplay {
    fn run(&mut self) -> Result<&mut Run, Error> {
        self.run
            .as_mut()
            .ok_or_else(|| Error::input("configure has not been called"))
    }
}

impl Workload for CodingReplay {
    fn configure(&mut self, config: Config) -> Result<Vec<Session>, Error> {
        let run = Run::configure(&config)?;
        let sessions = run.plans();
        self.run = Some(run);
        Ok(sessions)
    }

    fn start(&mut self, session: &str) -> Result<Turn, Error> {
        self.run()?.start(session)
    }

    fn next(&mut self, session: &str, outcome: Outcome) -> Result<Option<Turn>, Error> {
        let run = self.run()?;
        if run.is_live() {
            return run.next_live(session, &outcome);
        }
        // Completed, failed or aborted: the next recorded turn either way (see `Run::next`).
        run.next(session)
    }

    fn review(&mut self, session: &str) -> Option<Review> {
        self.run.as_mut()?.take_review(session)
    }
}

export_workload!(CodingReplay);
