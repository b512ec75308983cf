//! What an earlier process left of a phase, and what a resume still has
//! to drive.

use super::journal::{self, LoggedTurn};
use super::session::{SessionOutcome, SessionTask};
use crate::TurnStatus;
use agentload_plugin_host::SessionPlan;
use std::collections::HashMap;
use std::path::Path;

/// A phase's log as an earlier process left it.
#[derive(Default)]
pub struct Prior {
    /// Every record, with its line (superseded lines left out).
    pub turns: Vec<LoggedTurn>,
    /// The last recorded outcome of each session that ended.
    pub ended: HashMap<String, SessionOutcome>,
}

impl Prior {
    /// Reads `turns.jsonl` and `sessions.jsonl`; missing files are empty.
    pub fn read(turns: &Path) -> Result<Self, String> {
        let ended = journal::read_lines::<SessionOutcome>(&journal::sessions_file(turns))?
            .into_iter()
            .map(|o| (o.id.clone(), o))
            .collect();
        Ok(Self {
            turns: journal::read_turns(turns)?,
            ended,
        })
    }

    /// Splits the planned sessions into those already over (their outcomes)
    /// and the tasks to drive, in plan order: a session cut short carries
    /// its recorded turns (interrupted ones left out) to replay.
    pub fn split(&self, plans: Vec<SessionPlan>) -> (Vec<SessionOutcome>, Vec<SessionTask>) {
        let mut by_session: HashMap<&str, Vec<&LoggedTurn>> = HashMap::new();
        for t in &self.turns {
            if t.record.status != TurnStatus::Interrupted {
                by_session.entry(&t.record.session_id).or_default().push(t);
            }
        }
        let mut over = Vec::new();
        let mut tasks = Vec::new();
        for plan in plans {
            match self.ended.get(&plan.id) {
                Some(o) if o.ended.is_final() => over.push(o.clone()),
                _ => tasks.push(SessionTask {
                    history: by_session
                        .get(plan.id.as_str())
                        .map(|h| h.iter().map(|t| (*t).clone()).collect())
                        .unwrap_or_default(),
                    plan,
                    agent: None,
                }),
            }
        }
        (over, tasks)
    }
}
