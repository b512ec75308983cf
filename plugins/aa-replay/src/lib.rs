//! `aa-replay`: AA-AgentPerf's single-stream replay, as Artificial
//! Analysis's agentperf-local 0.3.4 runs it.
//!
//! Reads an agentperf-local manifest and its traces (the bundled
//! `agentperf-default-v1` and `aa-mini-v1`, or a custom one in the same
//! format), checks them as agentperf-local does, and replays them: one
//! session per task in manifest order, turns in file order, each request's
//! messages exactly as agentperf-local sends them (its key order, its JSON,
//! its cache-isolation prefix), with its `max_tokens`, sampling and
//! `ignore_eos` under the `exact` policy. The host writes the body in
//! agentperf-local's key order and checks each answer as it does
//! (`endpoint.client = "agentperf-local"`; docs/aa-replays.md).

#![forbid(unsafe_code)]

pub mod fields;
pub mod isolation;
pub mod manifest;
pub mod replay;
pub mod settings;
pub mod trace;

#[cfg(test)]
mod tests;

use agentload_sdk::{export_workload, Config, Error, Outcome, Session, Turn, Workload};
use replay::Replay;

/// The workload: the replay set up by `configure`.
#[derive(Debug, Default)]
pub struct AaReplay {
    replay: Option<Replay>,
}

impl AaReplay {
    fn replay(&mut self) -> Result<&mut Replay, Error> {
        self.replay
            .as_mut()
            .ok_or_else(|| Error::input("configure has not been called"))
    }
}

impl Workload for AaReplay {
    fn configure(&mut self, config: Config) -> Result<Vec<Session>, Error> {
        let replay = Replay::configure(&config)?;
        let sessions = replay.sessions();
        agentload_sdk::log::info(&replay.summary_line(&sessions));
        self.replay = Some(replay);
        Ok(sessions)
    }

    fn start(&mut self, session: &str) -> Result<Turn, Error> {
        self.replay()?.start(session)
    }

    /// The next recorded turn whatever the outcome (agentperf-local goes on
    /// after a failed turn; under the host's `abort_session` rule the rest
    /// is recorded as aborted, never sent).
    fn next(&mut self, session: &str, outcome: Outcome) -> Result<Option<Turn>, Error> {
        let answered = matches!(outcome, Outcome::Completed(_));
        self.replay()?.next(session, answered)
    }

    fn pause_ms(&mut self, session: &str) -> u64 {
        self.replay.as_ref().map_or(0, |r| r.pause_ms(session))
    }

    fn facts(&self) -> serde_json::Value {
        self.replay
            .as_ref()
            .map_or_else(|| serde_json::json!({}), Replay::facts)
    }
}

export_workload!(AaReplay);
