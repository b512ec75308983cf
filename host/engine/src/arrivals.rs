//! Open-loop load: sessions (or single requests) arrive at the due times of a schedule
//! ([`crate::schedule`]), whatever the server does; each then runs closed-loop, its later
//! turns after their answers and delays, as in every other schedule.
//!
//! The dispatcher starts each session [`LEAD`] before its due time, so that the workload's
//! first turn is ready when it is due (never on the due time's path). The session then waits
//! on the [`crate::precise`] timer for its due time, takes a place under the in-flight cap
//! when there is one, and sends.
//!
//! At real-time priority (`agentload run --realtime`, [`precise::realtime`]) it does
//! better: it wakes shortly before its due time (the phase's *wake lead*), takes its place,
//! makes its request, takes a connection, and spins until the due time to write it
//! ([`agentload_client::ChatClient::send_json_at`]): neither the wake-up of a thread nor the
//! request's making lies between the due time and the request's first byte. The wake lead is
//! learnt as the phase goes ([`WakeLead`]), so that the spin costs no more CPU than the
//! machine needs.
//!
//! An arrival beyond the cap waits for a session to end, keeps its due time (so its send lag
//! shows the wait) and is counted as held back. Nothing stretches the schedule: a harness
//! that falls behind sends late, and the records' send lag and the delivered rate say so.

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
pub struct Place {
    _permit: Option<OwnedSemaphorePermit>,
    gate: Arc<Gate>,
}

impl Place {
    /// The arrival's request, due at `due`, was ready to write at `ready`: after `due`, the
    /// wake lead was too short for it.
    pub(crate) fn sent(&self, ready: Instant, due: Instant) {
        self.gate.lead.learn(ready > due);
    }
}

/// How long before its due time an arrival is woken: long enough for the wake-up (a thread's
/// and a runtime worker's) and the request's making, learnt from the phase's own sends as
/// the 95th percentile of what they needed (a stochastic quantile estimate: a request ready
/// after its due time lengthens it by 95 % of a step, one ready in time shortens it by 5 %).
/// It starts at [`WakeLead::START`] and stays within [`WakeLead::MIN`] and
/// [`WakeLead::MAX`]: the spin before each write takes at most that much CPU (at 500
/// arrivals/s and the longest lead, a quarter of one CPU), and an arrival that the lead
/// cannot help (its worker busy with another's send) does not drive it further.
pub(crate) struct WakeLead {
    ns: AtomicU64,
}

impl WakeLead {
    const START: Duration = Duration::from_micros(200);
    const MIN: Duration = Duration::from_micros(20);
    const MAX: Duration = Duration::from_micros(500);
    /// The step of the estimate (ns).
    const STEP_NS: u64 = 10_000;
    /// What a send in time takes off (ns): at equilibrium one send in 20 is ready late.
    const LATE_NS: u64 = Self::STEP_NS / 20;

    fn new() -> Self {
        Self {
            ns: AtomicU64::new(Self::START.as_nanos() as u64),
        }
    }

    fn get(&self) -> Duration {
        Duration::from_nanos(self.ns.load(Ordering::Relaxed))
    }

    fn learn(&self, late: bool) {
        let (min, max) = (Self::MIN.as_nanos() as u64, Self::MAX.as_nanos() as u64);
        let _ = self
            .ns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |ns| {
                Some(if late {
                    (ns + Self::STEP_NS - Self::LATE_NS).min(max)
                } else {
                    ns.saturating_sub(Self::LATE_NS).max(min)
                })
            });
    }
}

/// The phase's cap and what it held back, and its wake lead.
struct Gate {
    lead: WakeLead,
    cap: Option<Arc<Semaphore>>,
    /// Started, not yet let in.
    waiting: AtomicUsize,
    released: AtomicU64,
    held_back: AtomicU64,
    held_max_ns: AtomicU64,
    held_total_ns: AtomicU64,
}

impl Arrival {
    /// Waits until `send_at` (the first request's due time), or with `early` until the
    /// phase's wake lead before it, then for a place under the cap; `None` when the phase
    /// stops first (the session never arrived). Woken early, the request is then made and
    /// written at `send_at` ([`crate::turn::TurnSender::send`] with `not_before`), and
    /// [`Place::sent`] says whether it was ready in time.
    pub(crate) async fn admit(self, stop: &Stop, send_at: Instant, early: bool) -> Option<Place> {
        let gate = &self.gate;
        let admitted = async {
            let lead = if early {
                gate.lead.get()
            } else {
                Duration::ZERO
            };
            let wake = send_at.checked_sub(lead).unwrap_or(send_at);
            tokio::select! {
                () = precise::sleep_until(wake) => {}
                () = stop.halted() => return None,
            }
            let place = |permit| Place {
                _permit: permit,
                gate: gate.clone(),
            };
            let Some(cap) = &gate.cap else {
                return Some(place(None));
            };
            if let Ok(permit) = cap.clone().try_acquire_owned() {
                return Some(place(Some(permit)));
            }
            let permit = tokio::select! {
                permit = cap.clone().acquire_owned() => permit.ok()?,
                () = stop.halted() => return None,
            };
            // Held back when the place came after the due time.
            let held = Instant::now()
                .saturating_duration_since(self.due)
                .as_nanos() as u64;
            if held > 0 {
                gate.held_back.fetch_add(1, Ordering::SeqCst);
                gate.held_max_ns.fetch_max(held, Ordering::SeqCst);
                gate.held_total_ns.fetch_add(held, Ordering::SeqCst);
            }
            Some(place(Some(permit)))
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
        lead: WakeLead::new(),
        cap: open.cap.map(|c| Arc::new(Semaphore::new(c))),
        waiting: AtomicUsize::new(0),
        released: AtomicU64::new(0),
        held_back: AtomicU64::new(0),
        held_max_ns: AtomicU64::new(0),
        held_total_ns: AtomicU64::new(0),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wake_lead_settles_where_one_send_in_twenty_is_ready_late() {
        let lead = WakeLead::new();
        assert_eq!(lead.get(), WakeLead::START);
        // Every send late: it grows to its bound and stays there.
        for _ in 0..1000 {
            lead.learn(true);
        }
        assert_eq!(lead.get(), WakeLead::MAX);
        // Every send in time: it shrinks to its floor.
        for _ in 0..100_000 {
            lead.learn(false);
        }
        assert_eq!(lead.get(), WakeLead::MIN);
        // One late in twenty: where it is, it stays (a cycle of twenty sends nets zero).
        for _ in 0..40 {
            lead.learn(true);
        }
        let at = lead.get();
        for k in 0..2000 {
            lead.learn(k % 20 == 0);
        }
        assert_eq!(lead.get(), at);
        // One in ten: it grows.
        for k in 0..200 {
            lead.learn(k % 10 == 0);
        }
        assert!(lead.get() > at);
    }
}
