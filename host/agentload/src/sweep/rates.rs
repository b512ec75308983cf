//! One rate level of an open-loop sweep (`sweep.rates`): sessions (or requests) arriving at
//! the level's rate on its own seeded schedule, each running closed-loop with the sweep's
//! salts, token cap and delays, until the phase's end rules hold: at least
//! `min_trajectories` sessions finished and `steady_state_s` of steady state behind (after
//! the ramp and `warmup_s`), or `max_phase_s` (reported as cut). A shard runs arrivals
//! `k ≡ index (mod count)` of the one schedule and keeps them coming until every shard's
//! end rules hold (the phase-end barrier).

use super::agents::{self, PhaseRun};
use super::{Barriers, PhaseInput};
use agentload_config::SweepConfig;
use agentload_engine::arrivals::{run_arrivals, Dispatch, OpenLoop, Planned};
use agentload_engine::schedule::{Endless, Spec};
use agentload_engine::{PhaseError, SessionEnd, Stop, StopReason, TurnHooks};
use agentload_plugin_host::TurnRequest;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a phase at a rate level needs.
pub struct RateInput {
    /// What every phase needs: arrival `k` starts `plan[k]`.
    pub phase: PhaseInput,
    /// The level's schedule (its rate, law, seed and ramp).
    pub spec: Spec,
    /// The in-flight cap (this process's share) and whether arrivals are single requests.
    pub open: OpenLoop,
    /// This shard's arrivals (`k mod count == index`), and its share of `min_trajectories`.
    pub slice: Option<(u32, u32)>,
}

/// The sweep's additions to every turn of a rate phase.
struct RateHooks {
    config: SweepConfig,
    index: usize,
}

impl TurnHooks for RateHooks {
    fn shape(&self, req: &mut TurnRequest) -> Duration {
        agents::shape(&self.config, self.index, req)
    }
}

/// Runs one rate phase to its end rules; returns it, its dispatch and its workload.
pub async fn run(
    config: &SweepConfig,
    input: RateInput,
) -> Result<(PhaseRun, Dispatch, agentload_plugin_host::WorkloadPlugin), PhaseError> {
    let started = input.phase.sender.origin;
    let stop = input.phase.stop.clone();
    let finished = Arc::new(AtomicU64::new(0));
    let (index, end) = (input.phase.index, input.phase.end.clone());
    let hooks = Box::new(RateHooks {
        config: config.clone(),
        index,
    });
    let (engine, plan) = input.phase.into_engine(hooks);
    let engine = Arc::new(engine);
    let ramp_s = input.spec.ramp_end_s();
    let steady_at =
        started + Duration::from_secs_f64(ramp_s + config.warmup_s + config.steady_state_s);
    let cap_at = started + Duration::from_secs_f64(config.max_phase_s);
    let (shard, shards) = input.slice.unwrap_or((0, 1));
    // This process's share of the sessions the end rules ask for.
    let wanted = u64::from(config.min_trajectories).div_ceil(u64::from(shards));
    let held = Arc::new(AtomicU64::new(u64::MAX));
    let monitor = tokio::spawn(watch(
        held.clone(),
        started,
        stop.clone(),
        finished.clone(),
        wanted,
        steady_at,
        cap_at,
        config.max_phase_s,
        end.clone().map(|end| (end, index)),
    ));
    let planned = plan.len();
    let arrivals = Endless::new(&input.spec)
        .zip(plan)
        .enumerate()
        .filter(move |(k, _)| *k as u64 % u64::from(shards) == u64::from(shard))
        .map(|(k, (due_ns, plan))| Planned {
            index: k as u64,
            due_ns,
            plan,
        });
    let open = OpenLoop {
        finished: Some(finished),
        ..input.open
    };
    let ran = run_arrivals(engine.clone(), arrivals, open).await;
    let drained = Instant::now();
    monitor.abort();
    let run = ran?;
    super::arrive(end.as_ref(), index).await;
    let (end_reason, stopped_at) = stop.reason().map_or_else(
        || {
            (
                format!(
                    "the level's {planned} planned arrivals (1.5 × its ramp, warm-up and \
                     steady state at its rate) ran out before min_trajectories sessions finished"
                ),
                drained,
            )
        },
        |(reason, at)| (reason.to_string(), at),
    );
    let engine = Arc::try_unwrap(engine).unwrap_or_else(|_| unreachable!("sessions joined"));
    let (facts, _) = engine.recorder.finish()?;
    let ns = |t: Instant| t.saturating_duration_since(started).as_nanos() as u64;
    let cut = run
        .outcomes
        .iter()
        .filter(|o| matches!(o.ended, SessionEnd::Stopped | SessionEnd::Interrupted))
        .count() as u32;
    let failed = run
        .outcomes
        .iter()
        .filter(|o| {
            matches!(
                o.ended,
                SessionEnd::Failed | SessionEnd::PluginError | SessionEnd::Diverged
            )
        })
        .count() as u32;
    let completed = run
        .outcomes
        .iter()
        .filter(|o| o.ended == SessionEnd::Finished)
        .count() as u32;
    Ok((
        PhaseRun {
            facts,
            sessions: run.outcomes,
            // Open loop has no agents to wait for: steady state starts when the ramp ends.
            all_active_ns: Some((ramp_s * 1e9) as u64),
            stopped_ns: ns(stopped_at),
            drained_ns: ns(drained),
            rules_held_ns: Some(held.load(Ordering::SeqCst)).filter(|&n| n != u64::MAX),
            end_reason,
            completed,
            min_per_agent: completed,
            trajectories_cut: cut,
            trajectories_failed: failed,
        },
        run.dispatch,
        engine.workload.into_first(),
    ))
}

/// Stops the phase once `wanted` sessions finished and steady state lasted long enough
/// (through the shards' barrier when there is one; `held` says when they did, ns after
/// `started`), or at the time cap.
#[allow(clippy::too_many_arguments)]
async fn watch(
    held: Arc<AtomicU64>,
    started: Instant,
    stop: Stop,
    finished: Arc<AtomicU64>,
    wanted: u64,
    steady_at: Instant,
    cap_at: Instant,
    max_phase_s: f64,
    end: Option<(Arc<dyn Barriers>, usize)>,
) {
    let cut = || super::cut(&stop, max_phase_s);
    let check = Duration::from_millis(50);
    loop {
        let now = Instant::now();
        if now >= cap_at {
            return cut();
        }
        if now >= steady_at && finished.load(Ordering::SeqCst) >= wanted {
            held.store(
                now.saturating_duration_since(started).as_nanos() as u64,
                Ordering::SeqCst,
            );
            break;
        }
        let wake = if now < steady_at {
            steady_at
        } else {
            now + check
        };
        tokio::select! {
            () = tokio::time::sleep_until(wake.min(cap_at).into()) => {}
            () = stop.halted() => return,
        }
    }
    match end {
        None => stop.stop(StopReason::Done("end rules met".to_owned())),
        Some((end, index)) => {
            tokio::select! {
                met = end.end(index) => super::stop_with_shards(&stop, met).await,
                () = tokio::time::sleep_until(cap_at.into()) => cut(),
            }
        }
    }
}
