//! What an earlier process left of a phase, and what a resume still has
//! to drive.

use super::journal::{self, LoggedTurn};
use super::session::{SessionOutcome, SessionTask};
use crate::TurnStatus;
use agentload_plugin_host::SessionPlan;
use std::collections::{HashMap, HashSet};
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

    /// Checks what an earlier process left before a resume appends to it:
    /// every record belongs to a planned session, was sent by an earlier
    /// segment, and has its times in order and inside that segment's window.
    /// `windows_ns[i]` is the longest segment `i` can have lasted (`None`:
    /// unknown). The error names the line and what is wrong with it.
    pub fn verify(
        &self,
        file: &Path,
        plans: &[SessionPlan],
        windows_ns: &[Option<u64>],
    ) -> Result<(), String> {
        let planned: HashSet<&str> = plans.iter().map(|p| p.id.as_str()).collect();
        for t in &self.turns {
            let r = &t.record;
            let at = |why: String| {
                format!("{}:{}: {why}; the record was not written by this run as it is, so it is not resumed", file.display(), t.line)
            };
            if !planned.contains(r.session_id.as_str()) {
                return Err(at(format!(
                    "session `{}` is not one of the phase's planned sessions",
                    r.session_id
                )));
            }
            let Some(window) = windows_ns.get(r.segment as usize) else {
                return Err(at(format!(
                    "segment {} is not an earlier process of this run ({} so far)",
                    r.segment,
                    windows_ns.len()
                )));
            };
            // Pairs in the order they must be (a later stamp, one it cannot
            // precede). Arrival and read-return stamps are of different
            // sources, so only orders that hold for both are checked.
            let pairs = [
                (("issued_ns", r.issued_ns), ("scheduled_ns", r.scheduled_ns)),
                (
                    ("first_byte_ns", r.first_byte_ns),
                    ("issued_ns", r.issued_ns),
                ),
                (
                    ("first_token_ns", r.first_token_ns),
                    ("issued_ns", r.issued_ns),
                ),
                (
                    ("last_token_ns", r.last_token_ns),
                    ("first_token_ns", r.first_token_ns),
                ),
                (("complete_ns", r.complete_ns), ("issued_ns", r.issued_ns)),
            ];
            for ((name, value), (before, earlier)) in pairs {
                if let (Some(value), Some(earlier)) = (value, earlier) {
                    if value < earlier {
                        return Err(at(format!("{name} {value} is before {before} {earlier}")));
                    }
                }
            }
            let stamps = [
                ("scheduled_ns", r.scheduled_ns),
                ("issued_ns", r.issued_ns),
                ("first_byte_ns", r.first_byte_ns),
                ("first_token_ns", r.first_token_ns),
                ("last_token_ns", r.last_token_ns),
                ("complete_ns", r.complete_ns),
            ];
            if let Some(window) = window {
                for (name, value) in stamps {
                    if let Some(value) = value.filter(|v| v > window) {
                        return Err(at(format!(
                            "{name} is {:.1} s into its segment, which lasted at most {:.1} s",
                            value as f64 / 1e9,
                            *window as f64 / 1e9
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Splits the planned sessions into those already over (their outcomes)
    /// and the tasks to drive, in plan order: a session cut short carries
    /// its recorded turns (interrupted ones left out) to replay. A session's
    /// recorded end is trusted only where the turn log bears it out (its
    /// completed, failed and aborted counts); otherwise the turn log wins and
    /// the session is driven on from its records. With `count_locally`, an
    /// ended session with a completed turn not yet counted (the process was
    /// killed before the phase's end, when counting runs) is replayed too:
    /// its requests are rebuilt, counted, and nothing is sent.
    pub fn split(
        &self,
        plans: Vec<SessionPlan>,
        count_locally: bool,
    ) -> (Vec<SessionOutcome>, Vec<SessionTask>) {
        let mut by_session: HashMap<&str, Vec<&LoggedTurn>> = HashMap::new();
        for t in &self.turns {
            if t.record.status != TurnStatus::Interrupted {
                by_session.entry(&t.record.session_id).or_default().push(t);
            }
        }
        let mut over = Vec::new();
        let mut tasks = Vec::new();
        for plan in plans {
            let history = by_session.get(plan.id.as_str());
            match self.ended.get(&plan.id) {
                Some(o)
                    if o.ended.is_final()
                        && borne_out(o, history.map_or(&[][..], |h| h))
                        && !(count_locally && uncounted(history.map_or(&[][..], |h| h))) =>
                {
                    over.push(o.clone())
                }
                _ => tasks.push(SessionTask {
                    history: history
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

/// Whether a session's recorded outcome matches its records' counts.
fn borne_out(outcome: &SessionOutcome, records: &[&LoggedTurn]) -> bool {
    let count =
        |status: TurnStatus| records.iter().filter(|t| t.record.status == status).count() as u32;
    (outcome.completed, outcome.failed, outcome.aborted)
        == (
            count(TurnStatus::Completed),
            count(TurnStatus::Failed),
            count(TurnStatus::Aborted),
        )
}

/// Whether a completed turn among `records` has no local count yet.
fn uncounted(records: &[&LoggedTurn]) -> bool {
    records
        .iter()
        .any(|t| t.record.status == TurnStatus::Completed && t.record.local_tokens.is_none())
}
