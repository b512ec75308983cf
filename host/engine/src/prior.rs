//! What an earlier process left of a phase, and what a resume still has
//! to drive.

use super::journal::{self, LoggedTurn, Span, TurnLog};
use super::session::{SessionOutcome, SessionTask};
use crate::{Interner, TurnFacts, TurnRecord, TurnStatus};
use agentload_plugin_host::SessionPlan;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The facts of an earlier process's records and the strings they share: what a resumed
/// phase keeps of them ([`Recorder::open`](crate::Recorder::open)).
#[derive(Debug, Default)]
pub struct PriorTurns {
    pub facts: Vec<TurnFacts>,
    pub strings: Interner,
}

/// A phase's log as an earlier process left it. Its records are read one at a time: what
/// is kept of each is its facts and where it is, so that only the sessions a resume
/// drives on are read whole, and only once they are.
#[derive(Debug, Default)]
pub struct Prior {
    /// Every record's facts, with its line (superseded lines left out).
    pub turns: PriorTurns,
    /// The last recorded outcome of each session that ended.
    pub ended: HashMap<String, SessionOutcome>,
    /// Each session's records, interrupted ones left out.
    sessions: HashMap<Arc<str>, Logged>,
    /// The turn log read.
    log: PathBuf,
}

/// A resumed session's records from an earlier process, in log order (interrupted ones left
/// out): their lines and where they lie in the log, each read whole only when the session
/// replays it ([`History::records`]), so a resume holds no session's records at once.
#[derive(Debug, Default)]
pub struct History {
    /// The log, shared by every session a resume drives on; `None` when there is no record.
    log: Option<Arc<TurnLog>>,
    lines: Vec<(u64, Span)>,
}

impl History {
    /// How many records.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether there is none (a session driven from its start).
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The records' lines in the log, in order.
    pub fn lines(&self) -> impl Iterator<Item = u64> + '_ {
        self.lines.iter().map(|&(line, _)| line)
    }

    /// The records, in order, each read from the log when it is reached; an error says
    /// the log changed since the resume read it.
    pub fn records(&self) -> impl Iterator<Item = Result<LoggedTurn, String>> + '_ {
        self.lines.iter().map(|&(line, span)| {
            let log = self.log.as_ref().expect("a history with lines has its log");
            Ok(LoggedTurn {
                line,
                record: log.turn(line, span)?,
            })
        })
    }
}

/// A session's records in the log: their counts, and their lines and bytes.
#[derive(Debug, Default)]
struct Logged {
    completed: u32,
    failed: u32,
    aborted: u32,
    /// A completed record has no local count yet.
    uncounted: bool,
    lines: Vec<(u64, Span)>,
}

impl Logged {
    fn add(&mut self, record: &TurnRecord, line: u64, span: Span) {
        match record.status {
            TurnStatus::Completed => {
                self.completed += 1;
                self.uncounted |= record.local_tokens.is_none();
            }
            TurnStatus::Failed => self.failed += 1,
            TurnStatus::Aborted => self.aborted += 1,
            TurnStatus::Interrupted => return,
        }
        self.lines.push((line, span));
    }
}

impl Prior {
    /// Reads `turns.jsonl` (with its side files) and `sessions.jsonl`, one record at a
    /// time, and checks each record before a resume appends to the log: it belongs to one
    /// of `plans`, was sent by an earlier segment, and has its times in order and inside
    /// that segment's window. `windows_ns[i]` is the longest segment `i` can have lasted
    /// (`None`: unknown). Missing files are empty; the error names the line and what is
    /// wrong with it.
    pub fn read(
        turns: &Path,
        plans: &[SessionPlan],
        windows_ns: &[Option<u64>],
    ) -> Result<Self, String> {
        let ended = journal::read_lines::<SessionOutcome>(&journal::sessions_file(turns))?
            .into_iter()
            .map(|o| (o.id.clone(), o))
            .collect();
        let planned: HashSet<&str> = plans.iter().map(|p| p.id.as_str()).collect();
        let mut prior = Self {
            ended,
            log: turns.to_path_buf(),
            ..Self::default()
        };
        let mut wrong = None;
        journal::each_turn_at(turns, |t, span| {
            if wrong.is_some() {
                return;
            }
            if let Err(why) = check(turns, &t, &planned, windows_ns) {
                wrong = Some(why);
                return;
            }
            let facts = TurnFacts::of(&t.record, t.line, &mut prior.turns.strings);
            prior
                .sessions
                .entry(facts.session_id.clone())
                .or_default()
                .add(&t.record, t.line, span);
            prior.turns.facts.push(facts);
        })?;
        wrong.map_or(Ok(prior), Err)
    }

    /// Splits the planned sessions into those already over (their outcomes)
    /// and the tasks to drive, in plan order: a session cut short carries
    /// its recorded turns (interrupted ones left out) to replay, as a [`History`] that
    /// reads each of them again from the log when the session replays it.
    /// A session's recorded end is trusted only where the turn log bears it out (its
    /// completed, failed and aborted counts); otherwise the turn log wins and
    /// the session is driven on from its records. With `count_locally`, an
    /// ended session with a completed turn not yet counted (the process was
    /// killed before the phase's end, when counting runs) is replayed too:
    /// its requests are rebuilt, counted, and nothing is sent.
    pub fn split(
        &self,
        plans: Vec<SessionPlan>,
        count_locally: bool,
    ) -> Result<(Vec<SessionOutcome>, Vec<SessionTask>), String> {
        let none = Logged::default();
        let mut over = Vec::new();
        let mut tasks = Vec::new();
        let mut replayed = HashSet::new();
        for plan in plans {
            let logged = self.sessions.get(plan.id.as_str()).unwrap_or(&none);
            match self.ended.get(&plan.id) {
                Some(o)
                    if o.ended.is_final()
                        && borne_out(o, logged)
                        && !(count_locally && logged.uncounted) =>
                {
                    over.push(o.clone())
                }
                _ => {
                    replayed.extend(logged.lines.iter().map(|&(line, _)| line));
                    tasks.push(SessionTask {
                        history: History {
                            log: None,
                            lines: logged.lines.clone(),
                        },
                        plan,
                        agent: None,
                        arrival: None,
                    })
                }
            }
        }
        if !replayed.is_empty() {
            // Held while the replays last: only the counts they will read.
            let mut log = TurnLog::open(&self.log)?;
            log.keep_counts(|line| replayed.contains(&line));
            let log = Arc::new(log);
            for task in tasks.iter_mut().filter(|t| !t.history.is_empty()) {
                task.history.log = Some(log.clone());
            }
        }
        Ok((over, tasks))
    }
}

/// Whether a session's recorded outcome matches its records' counts.
fn borne_out(outcome: &SessionOutcome, logged: &Logged) -> bool {
    (outcome.completed, outcome.failed, outcome.aborted)
        == (logged.completed, logged.failed, logged.aborted)
}

/// Checks one record an earlier process left (see [`Prior::read`]).
fn check(
    file: &Path,
    t: &LoggedTurn,
    planned: &HashSet<&str>,
    windows_ns: &[Option<u64>],
) -> Result<(), String> {
    let r = &t.record;
    let at = |why: String| {
        format!(
            "{}:{}: {why}; the record was not written by this run as it is, so it is not resumed",
            file.display(),
            t.line
        )
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::{Durability, Journal};
    use crate::SessionEnd;

    fn plan(id: &str) -> SessionPlan {
        SessionPlan {
            id: id.into(),
            expected_turns: 3,
            workspace: None,
        }
    }

    fn record(session: &str, turn: u32, status: TurnStatus) -> TurnRecord {
        let mut r = TurnRecord::aborted(session, turn, &format!("{session}/{turn}"), "{}");
        r.status = status;
        r.issued_ns = Some(u64::from(turn) * 1_000);
        r.complete_ns = Some(u64::from(turn) * 1_000 + 500);
        r
    }

    fn outcome(id: &str, completed: u32) -> SessionOutcome {
        SessionOutcome {
            id: id.into(),
            expected_turns: 3,
            completed,
            failed: 0,
            aborted: 0,
            ended: SessionEnd::Finished,
            agent: None,
            error: None,
        }
    }

    /// A log of sessions `done` (ended, borne out), `lies` (its outcome counts a turn the
    /// log does not have) and `cut` (in flight at the kill: its third turn interrupted).
    fn log(dir: &Path) -> PathBuf {
        let turns = dir.join("turns.jsonl");
        let mut log = Journal::create_file(&turns, Durability::Write).unwrap();
        use TurnStatus::*;
        for (s, t, status) in [
            ("done", 1, Completed),
            ("cut", 1, Completed),
            ("lies", 1, Completed),
            ("done", 2, Completed),
            ("cut", 2, Failed),
            ("cut", 3, Interrupted),
        ] {
            log.write(&record(s, t, status)).unwrap();
        }
        let mut ended =
            Journal::create_file(&journal::sessions_file(&turns), Durability::Write).unwrap();
        ended.write(&outcome("done", 2)).unwrap();
        ended.write(&outcome("lies", 2)).unwrap();
        turns
    }

    #[test]
    fn a_resume_keeps_facts_and_reads_only_the_sessions_it_drives_on() {
        let dir = tempfile::tempdir().unwrap();
        let turns = log(dir.path());
        let plans = ["done", "lies", "cut", "new"].map(plan);
        let prior = Prior::read(&turns, &plans, &[None]).unwrap();
        let lines: Vec<u64> = prior.turns.facts.iter().map(|f| f.line).collect();
        assert_eq!(
            lines,
            [1, 2, 3, 4, 5, 6],
            "every record's facts, with its line"
        );
        let (over, tasks) = prior.split(plans.to_vec(), false).unwrap();
        assert_eq!(
            over.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(),
            ["done"]
        );
        let driven: Vec<(&str, Vec<(u64, u32)>)> = tasks
            .iter()
            .map(|t| {
                let history = t.history.records().map(|h| h.unwrap());
                (
                    t.plan.id.as_str(),
                    history.map(|h| (h.line, h.record.turn)).collect(),
                )
            })
            .collect();
        assert_eq!(
            driven,
            [
                ("lies", vec![(3, 1)]),
                ("cut", vec![(2, 1), (5, 2)]),
                ("new", vec![]),
            ],
            "the log wins over an outcome it does not bear out; interrupted turns are left out"
        );
        // The records read again are the records written.
        assert_eq!(
            serde_json::to_value(tasks[1].history.records().next().unwrap().unwrap().record)
                .unwrap(),
            serde_json::to_value(record("cut", 1, TurnStatus::Completed)).unwrap()
        );
    }

    /// A session reads its records when it replays them: a log changed since the resume
    /// read it fails the replay, naming the file and the line.
    #[test]
    fn a_log_changed_under_the_resume_fails_the_replay_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let turns = log(dir.path());
        let plans = ["done", "lies", "cut"].map(plan);
        let prior = Prior::read(&turns, &plans, &[None]).unwrap();
        let (_, tasks) = prior.split(plans.to_vec(), false).unwrap();
        let cut = &tasks[1].history;
        assert_eq!(cut.lines().collect::<Vec<_>>(), [2, 5]);
        // The second line's bytes are overwritten in place, its length kept.
        let mut text = std::fs::read(&turns).unwrap();
        let second = text.iter().position(|&b| b == b'\n').unwrap() + 1;
        text[second] = b'[';
        std::fs::write(&turns, &text).unwrap();
        let err = cut.records().next().unwrap().unwrap_err();
        assert!(
            err.contains("turns.jsonl: line 2 changed since it was read"),
            "{err}"
        );
    }

    #[test]
    fn an_uncounted_turn_replays_its_ended_session_when_counting_locally() {
        let dir = tempfile::tempdir().unwrap();
        let turns = log(dir.path());
        let plans = ["done", "lies", "cut"].map(plan);
        let prior = Prior::read(&turns, &plans, &[None]).unwrap();
        let (over, tasks) = prior.split(plans.to_vec(), true).unwrap();
        assert!(over.is_empty(), "{over:?}");
        assert_eq!(tasks[0].history.len(), 2);
    }

    #[test]
    fn a_record_of_another_session_or_process_is_refused_naming_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let turns = log(dir.path());
        let err = Prior::read(&turns, &["done", "cut"].map(plan), &[None]).unwrap_err();
        assert!(err.contains("turns.jsonl:3: session `lies`"), "{err}");
        let err = Prior::read(&turns, &["done", "lies", "cut"].map(plan), &[]).unwrap_err();
        assert!(err.contains("turns.jsonl:1: segment 0"), "{err}");
        let err =
            Prior::read(&turns, &["done", "lies", "cut"].map(plan), &[Some(2_000)]).unwrap_err();
        assert!(err.contains("turns.jsonl:4: complete_ns is"), "{err}");
    }
}
