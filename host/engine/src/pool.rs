//! The edge and accuracy schedule: up to `concurrency` sessions at once,
//! each worker taking the next planned session when its session ends.

use super::journal::WriteError;
use super::session::{drive, drive_on, DriveError, Engine, SessionOutcome, SessionTask};
use super::stop::StopReason;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Mutex as AsyncMutex;

/// Why a phase stopped every session: the run stops on it.
#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    /// A record could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A resumed session's record could not be read again from the log.
    #[error("{0}")]
    Reread(String),
}

/// Drives every task; returns the outcomes in the order sessions ended.
/// A record that cannot be written (or, resuming, read again) stops every session and
/// is returned.
pub async fn run_pool(
    engine: Arc<Engine>,
    tasks: Vec<SessionTask>,
    concurrency: usize,
) -> Result<Vec<SessionOutcome>, PhaseError> {
    run_pool_ramped(engine, tasks, &vec![Duration::ZERO; concurrency.max(1)]).await
}

/// As [`run_pool`], worker `w` starting `starts[w]` after the phase's origin (a concurrency
/// ramp: [`crate::schedule::ramp_starts`]).
pub async fn run_pool_ramped(
    engine: Arc<Engine>,
    tasks: Vec<SessionTask>,
    starts: &[Duration],
) -> Result<Vec<SessionOutcome>, PhaseError> {
    let queue = Arc::new(Mutex::new(VecDeque::from(tasks)));
    let origin = engine.sender.origin;
    let workers: Vec<_> = starts
        .iter()
        .map(|&start| {
            let (engine, queue) = (engine.clone(), queue.clone());
            tokio::spawn(async move {
                let mut done = Vec::new();
                if !start.is_zero() && !engine.stop.wait_until(origin + start).await {
                    return Ok(done);
                }
                loop {
                    let next = queue.lock().expect("queue lock").pop_front();
                    let Some(task) = next else { break };
                    match drive_or_restart(&engine, task).await {
                        Ok(outcome) => done.push(outcome),
                        Err(e) => {
                            engine.stop.stop(StopReason::Fatal(e.to_string()));
                            return Err(e);
                        }
                    }
                }
                Ok(done)
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    let mut first_error = None;
    for w in workers {
        match w.await.expect("session worker panicked") {
            Ok(done) => outcomes.extend(done),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(outcomes), Err)
}

/// Drives a task; a resumed session whose replay diverges from its records
/// restarts whole, its earlier records kept aside (superseded, not counted),
/// in a fresh instance of the workload (the phase's has started it already).
pub async fn drive_or_restart(
    engine: &Engine,
    task: SessionTask,
) -> Result<SessionOutcome, PhaseError> {
    let lines: Vec<u64> = task.history.lines().collect();
    let (plan, agent) = (task.plan.clone(), task.agent);
    match drive(engine, task).await {
        Ok(outcome) => Ok(outcome),
        Err(DriveError::Write(e)) => Err(e.into()),
        Err(e @ DriveError::Reread { .. }) => Err(PhaseError::Reread(e.to_string())),
        Err(e @ DriveError::Diverged { .. }) => {
            agentload_console::line(&format!("resume: {e}; restarting it whole"));
            engine.recorder.supersede(&lines)?;
            let fresh = SessionTask::fresh(plan, agent);
            let forked = engine.workload.fork().await;
            let restarted = match forked {
                Ok(own) => drive_on(engine, &AsyncMutex::new(own), fresh).await,
                Err(e) => {
                    // Without an instance of its own it fails where it must: starting again.
                    agentload_console::line(&format!("resume: no fresh workload instance: {e}"));
                    drive(engine, fresh).await
                }
            };
            match restarted {
                Ok(outcome) => Ok(outcome),
                Err(DriveError::Write(e)) => Err(e.into()),
                Err(DriveError::Diverged { .. } | DriveError::Reread { .. }) => {
                    unreachable!("a fresh session has no history")
                }
            }
        }
    }
}
