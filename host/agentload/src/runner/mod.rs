//! Runs a phase: sessions from a workload plugin, sent through the client,
//! each turn recorded on disk before the next request goes out.

mod record;
mod session;

pub use record::{CompletionRecord, LocalTokens, TurnLog, TurnRecord, TurnStatus};
pub(crate) use session::completion_for_plugin;
pub use session::{run_phase, PhaseOutcome, PhaseSetup, SessionOutcome, TurnSender};
