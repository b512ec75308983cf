//! Open-loop load: sessions (or single requests) arrive at the due times of a schedule
//! ([`crate::schedule`]), whatever the server does; each then runs closed-loop, its later
//! turns after their answers and delays, as in every other schedule.
//!
//! The dispatcher starts each session [`LEAD`] before its due time, so that the workload's
//! first turn is ready when it is due (never on the due time's path). The session then waits
//! for its due time itself, on the [`crate::precise`] timer (one wake-up between the due time
//! and the send), and for a place under the in-flight cap when there is one: an arrival
//! beyond the cap waits for a session to end, keeps its due time (so its send lag shows the
//! wait) and is counted as held back. Nothing stretches the schedule: a harness that falls
//! behind sends late, and the records' send lag and the delivered rate say so.

use super::pool::{drive_or_restart, PhaseError};
use super::precise;
use super::session::{Engine, SessionEnd, SessionOutcome, SessionTask};
use super::stop::{Stop, StopReason};
use agentload_plugin_host::SessionPlan;
pub use agentload_results::arrivals::Dispatch;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

/// How long before its due time a session is started (its first request prepared).
pub const LEAD: Duration = Duration::from_millis(20);

/// Sessions started and not yet due (or held by the cap) at most: past it the dispatcher
/// waits, and later arrivals start (and are sent) late.
const MAX_WAITING: usize = 4096;

/// One arrival of the schedule.
pub struct Planned {
    /// Its place in the phase's (global) schedule.
    pub index: u64,
    /// When it is due, ns after the phase's origin.
    pub due_ns: u64,
    pub plan: SessionPlan,
}

/// How arrivals are let in.
#[derive(Debug, Clone, Default)]
pub struct OpenLoop {
    /// At most this many sessions in flight.
    pub cap: Option<usize>,
    /// Each arrival is one request: its session ends after its first turn.
    pub one_turn: bool,
    /// Counts the sessions that finished, as they do (a sweep's end rules read it).
    pub finished: Option<Arc<AtomicU64>>,
}

/// A session's open-loop arrival.
pub struct Arrival {
    /// When it is due: its first turn is due then (plus the turn's own delay).
    pub due: Instant,
    /// `of = "requests"`: the session ends after its first turn.
    pub one_turn: bool,
    gate: Arc<Gate>,
    arrived: Arc<AtomicBool>,
}

/// A session's place under the in-flight cap (none without a cap), held until it ends.
pub struct Place(#[allow(dead_code)] Option<OwnedSemaphorePermit>);

/// The phase's cap and what it held back.
#[derive(Default)]
struct Gate {
    cap: Option<Arc<Semaphore>>,
    /// Started, not yet let in.
    waiting: AtomicUsize,
    released: AtomicU64,
    held_back: AtomicU64,
    held_max_ns: AtomicU64,
    held_total_ns: AtomicU64,
}

impl Arrival {
    /// Waits until the session is due, then for a place under the cap; `None` when the
    /// phase stops first (the session never arrived).
    pub(crate) async fn admit(self, stop: &Stop) -> Option<Place> {
        let gate = &self.gate;
        let admitted = async {
            tokio::select! {
                () = precise::sleep_until(self.due) => {}
                () = stop.halted() => return None,
            }
            let Some(cap) = &gate.cap else {
                return Some(Place(None));
            };
            if let Ok(permit) = cap.clone().try_acquire_owned() {
                return Some(Place(Some(permit)));
            }
            let permit = tokio::select! {
                permit = cap.clone().acquire_owned() => permit.ok()?,
                () = stop.halted() => return None,
            };
            let held = Instant::now()
                .saturating_duration_since(self.due)
                .as_nanos() as u64;
            gate.held_back.fetch_add(1, Ordering::SeqCst);
            gate.held_max_ns.fetch_max(held, Ordering::SeqCst);
            gate.held_total_ns.fetch_add(held, Ordering::SeqCst);
            Some(Place(Some(permit)))
        }
        .await;
        if admitted.is_some() {
            gate.released.fetch_add(1, Ordering::SeqCst);
            self.arrived.store(true, Ordering::SeqCst);
        }
        admitted
    }
}

impl Drop for Arrival {
    /// Let in, never arrived, or its session ended before it was due (a workload error):
    /// it no longer waits.
    fn drop(&mut self) {
        self.gate.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

/// An open-loop phase's sessions and its dispatch.
pub struct OpenLoopRun {
    /// The sessions that arrived, in the order they ended.
    pub outcomes: Vec<SessionOutcome>,
    pub dispatch: Dispatch,
}

/// Starts `arrivals` (in due order) until they run out or the phase stops, then waits for
/// their sessions to end. A record that cannot be written stops every session and is
/// returned.
pub async fn run_arrivals(
    engine: Arc<Engine>,
    arrivals: impl Iterator<Item = Planned>,
    open: OpenLoop,
) -> Result<OpenLoopRun, PhaseError> {
    let origin = engine.sender.origin;
    let stop = engine.stop.clone();
    let gate = Arc::new(Gate {
        cap: open.cap.map(|c| Arc::new(Semaphore::new(c))),
        ..Gate::default()
    });
    let mut sessions = JoinSet::new();
    let mut ended = Ended::default();
    for next in arrivals {
        while let Some(joined) = sessions.try_join_next() {
            ended.take(joined, &engine);
        }
        let due = origin + Duration::from_nanos(next.due_ns);
        let start = due.checked_sub(LEAD).unwrap_or(origin);
        tokio::select! {
            () = tokio::time::sleep_until(start.into()) => {}
            () = stop.halted() => break,
        }
        while gate.waiting.load(Ordering::SeqCst) >= MAX_WAITING {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(1)) => {}
                () = stop.halted() => break,
            }
        }
        if stop.stopped() {
            break;
        }
        gate.waiting.fetch_add(1, Ordering::SeqCst);
        let arrived = Arc::new(AtomicBool::new(false));
        let task = SessionTask {
            arrival: Some(Arrival {
                due,
                one_turn: open.one_turn,
                gate: gate.clone(),
                arrived: arrived.clone(),
            }),
            ..SessionTask::fresh(next.plan, None)
        };
        let (engine, finished) = (engine.clone(), open.finished.clone());
        sessions.spawn(async move {
            let result = drive_or_restart(&engine, task).await;
            if let (Some(count), Ok(o)) = (&finished, &result) {
                if o.ended == SessionEnd::Finished {
                    count.fetch_add(1, Ordering::SeqCst);
                }
            }
            (arrived.load(Ordering::SeqCst), result)
        });
    }
    while let Some(joined) = sessions.join_next().await {
        ended.take(joined, &engine);
    }
    let dispatch = Dispatch {
        released: gate.released.load(Ordering::SeqCst),
        held_back: gate.held_back.load(Ordering::SeqCst),
        held_max_ns: gate.held_max_ns.load(Ordering::SeqCst),
        held_total_ns: gate.held_total_ns.load(Ordering::SeqCst),
    };
    match ended.error {
        Some(e) => Err(e),
        None => Ok(OpenLoopRun {
            outcomes: ended.outcomes,
            dispatch,
        }),
    }
}

/// The sessions that ended.
#[derive(Default)]
struct Ended {
    outcomes: Vec<SessionOutcome>,
    error: Option<PhaseError>,
}

impl Ended {
    fn take(
        &mut self,
        joined: Result<(bool, Result<SessionOutcome, PhaseError>), tokio::task::JoinError>,
        engine: &Engine,
    ) {
        let (arrived, result) = match joined {
            Ok(done) => done,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => return,
        };
        match result {
            // A session stopped before it was due never arrived: no outcome.
            Ok(outcome) if arrived || outcome.ended != SessionEnd::Stopped => {
                self.outcomes.push(outcome)
            }
            Ok(_) => {}
            Err(e) => {
                engine.stop.stop(StopReason::Fatal(e.to_string()));
                self.error.get_or_insert(e);
            }
        }
    }
}
