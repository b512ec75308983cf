//! The one turn engine: every phase (the edge replay, the accuracy gate, a
//! sweep's agents, `plugin check`) drives its sessions through
//! [`session::drive`]. What differs between them is the *schedule*, not the
//! turn: [`pool`] runs sessions at concurrency N; [`arrivals`] starts them
//! open-loop, at the due times of a [`schedule`]; the sweep runs agents
//! through trajectory lists; `plugin check` runs a budget of turns. A
//! schedule adds [`TurnHooks`] (salts, token caps, delays drawn from a
//! distribution) and a [`Stop`] (its end rules).
//!
//! The same everywhere:
//! - the failure rule (a failed turn is reported to the workload; whatever it
//!   returns is recorded as aborted and never sent);
//! - the record ([`TurnRecord`]), with the turn's due time, so send lag and
//!   coordinated omission show in every mode;
//! - durability: each record is in `turns.jsonl` (one `write(2)`, optionally
//!   `fdatasync`) before the session's next request; local token counts go
//!   to a side file, counted when the phase ends (never beside a stream);
//!   nothing is rewritten;
//! - stopping: a soft stop ends issuing, a hard one cuts in-flight turns
//!   (recorded as interrupted); and resuming (sessions replay their recorded
//!   outcomes into the workload, then continue).

pub mod agentperf;
pub mod arrivals;
mod body;
pub mod closed;
mod console;
mod context;
mod counting;
mod instances;
pub mod journal;
mod live;
mod missing;
mod pool;
mod precise;
mod prior;
pub mod progress;
mod recorder;
pub mod schedule;
mod session;
mod stop;
pub mod tokens;
pub mod tool_messages;
pub mod tools;
mod turn;
mod twin;
mod writer;

pub use agentload_results::record::{
    CompletionRecord, CountingStats, Interner, LocalTokens, RecordedTokens, TurnFacts, TurnRecord,
    TurnStatus,
};
pub use body::{request_body, BodyOptions, Layout, SessionBodies};
pub use console::Console;
pub use context::{Checked, ContextWindow, LastPrompt};
pub use counting::RecordedTurn;
pub use instances::Instances;
pub use journal::{each_record, read_records, Durability, WriteError};
pub use missing::missing_turns;
pub use pool::{drive_or_restart, run_pool, run_pool_ramped, PhaseError};
pub use prior::{History, Prior, PriorTurns};
pub use recorder::{Keeping, LogFiles, Recorder};
pub use session::{
    drive, DriveError, Engine, Next, SessionEnd, SessionOutcome, SessionTask, TurnHooks,
    WorkloadDelays,
};
pub use stop::{Stop, StopReason};
pub use turn::completion_for_plugin;
pub use turn::{Sent, TurnSender};
