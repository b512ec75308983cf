//! The tool pool: where tool calls run, off the request path (what
//! closed-loop sessions will call; today `agentload tools` and the bench).
//!
//! The pool runs `n` instances of the tool environment, each on a thread of
//! its own (never a runtime worker, so a session's `grep -r` never holds up
//! another session's request), at a lower scheduling priority than the
//! harness's own threads (`nice` +10: on a loaded machine the turns'
//! sends and reads get the CPU first). Every instance loads every workspace
//! before the first request, so a refused archive stops the run before it
//! starts. A session is bound to one instance for its life (its files live
//! there); its calls queue on that instance's thread.
//!
//! A call's fuel (executed instructions) moves a little with what its
//! instance ran before: the tables an instance builds on first use, std's
//! hash seeds, the allocator's state. So whether a call runs out of fuel is
//! settled in an instance of its own: a call that spends its fuel, or comes
//! within a tenth of it, in its shared instance is run again in a fresh
//! instance holding only its session, replayed, and that run's outcome
//! (executed, or `error`) is the answer, the same on every run.
//!
//! If an instance traps (its fuel spent, its memory cap, the wall-clock
//! safety net) or ran a call whose answer is `error`, it is made again: its
//! workspaces loaded, and each of its sessions opened and its earlier calls
//! replayed (the environment is deterministic, so this rebuilds exactly the
//! files the sessions had; a replayed call's fuel is not capped, since in
//! another history it may cost a little more than it did). A call answered
//! `error` leaves no changes.
//! Nothing else is lost; the run goes on.

use agentload_plugin_host::tools::{
    CallResult, CallStatus, Metered, SessionStats, ToolCall, ToolEnvironment, ToolFailure,
    ToolInstance, WorkspaceInfo, WorkspaceSpec,
};
use agentload_results::tools::{ExecutedCall, ToolStatus};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// The scheduling priority of the pool's threads (`nice` value).
const NICE: i32 = 10;

/// One call's answer, with what it cost.
#[derive(Debug, Clone)]
pub struct Answered {
    pub call: ExecutedCall,
    /// What the tool printed (goes to the workload, never to the record).
    pub output: String,
    /// The wall time it took here (cost tables only).
    pub wall: Duration,
}

enum Job {
    Open {
        session: String,
        workspace: String,
        seed: u64,
        reply: oneshot::Sender<Result<(), String>>,
    },
    Call {
        session: String,
        calls: Vec<(String, ToolCall)>,
        reply: oneshot::Sender<Vec<Answered>>,
    },
    Stats {
        session: String,
        reply: oneshot::Sender<Option<SessionStats>>,
    },
    Close {
        session: String,
    },
}

/// The pool.
pub struct ToolPool {
    workers: Vec<mpsc::Sender<Job>>,
    next: AtomicUsize,
    bound: Mutex<HashMap<String, usize>>,
    /// What each workspace holds (as the first instance read it).
    pub workspaces: Vec<(String, WorkspaceInfo)>,
}

/// A session as its instance must be able to rebuild it.
struct Replay {
    workspace: String,
    seed: u64,
    calls: Vec<ToolCall>,
}

/// One worker's state, on its thread.
struct Worker {
    env: Arc<ToolEnvironment>,
    workspaces: Arc<Vec<WorkspaceSpec>>,
    instance: Option<ToolInstance>,
    sessions: HashMap<String, Replay>,
}

impl ToolPool {
    /// Starts `instances` workers of `env`, each with every workspace of
    /// `workspaces` loaded; fails (naming the workspace) before anything
    /// else runs when one cannot be.
    pub fn start(
        env: Arc<ToolEnvironment>,
        workspaces: Vec<WorkspaceSpec>,
        instances: usize,
    ) -> Result<Self, String> {
        let workspaces = Arc::new(workspaces);
        let mut senders = Vec::new();
        let mut ready = Vec::new();
        for i in 0..instances.max(1) {
            let (tx, rx) = mpsc::channel::<Job>();
            let (started_tx, started_rx) = mpsc::channel();
            let (env, workspaces) = (env.clone(), workspaces.clone());
            std::thread::Builder::new()
                .name(format!("agentload-tools-{i}"))
                .stack_size(8 << 20)
                .spawn(move || {
                    lower_priority();
                    let mut worker = Worker {
                        env,
                        workspaces,
                        instance: None,
                        sessions: HashMap::new(),
                    };
                    let started = worker.fresh();
                    let ok = started.is_ok();
                    let _ = started_tx.send(started);
                    if ok {
                        worker.serve(rx);
                    }
                })
                .map_err(|e| format!("cannot start a tool pool thread: {e}"))?;
            senders.push(tx);
            ready.push(started_rx);
        }
        let mut infos = Vec::new();
        for rx in ready {
            let loaded = rx
                .recv()
                .map_err(|_| "a tool pool thread stopped while starting".to_owned())??;
            if infos.is_empty() {
                infos = loaded;
            }
        }
        Ok(Self {
            workers: senders,
            next: AtomicUsize::new(0),
            bound: Mutex::new(HashMap::new()),
            workspaces: infos,
        })
    }

    /// The worker of `session` (bound on first use, round robin).
    fn worker(&self, session: &str) -> &mpsc::Sender<Job> {
        let mut bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.workers.len();
        let i = *bound
            .entry(session.to_owned())
            .or_insert_with(|| self.next.fetch_add(1, Ordering::Relaxed) % n);
        &self.workers[i]
    }

    /// Opens `session` on `workspace`; `seed` seeds its randomness.
    pub async fn open(&self, session: &str, workspace: &str, seed: u64) -> Result<(), String> {
        let (reply, rx) = oneshot::channel();
        let job = Job::Open {
            session: session.to_owned(),
            workspace: workspace.to_owned(),
            seed,
            reply,
        };
        self.worker(session)
            .send(job)
            .map_err(|_| "the tool pool has stopped".to_owned())?;
        rx.await
            .map_err(|_| "the tool pool has stopped".to_owned())?
    }

    /// Runs a reply's calls (`(call id, call)`), in order, in `session`.
    pub async fn call(&self, session: &str, calls: Vec<(String, ToolCall)>) -> Vec<Answered> {
        let (reply, rx) = oneshot::channel();
        let ids: Vec<(String, String)> = calls
            .iter()
            .map(|(id, c)| (id.clone(), c.name.clone()))
            .collect();
        let job = Job::Call {
            session: session.to_owned(),
            calls,
            reply,
        };
        if self.worker(session).send(job).is_err() {
            return stopped(&ids);
        }
        rx.await.unwrap_or_else(|_| stopped(&ids))
    }

    /// What `session` holds now.
    pub async fn stats(&self, session: &str) -> Option<SessionStats> {
        let (reply, rx) = oneshot::channel();
        let job = Job::Stats {
            session: session.to_owned(),
            reply,
        };
        self.worker(session).send(job).ok()?;
        rx.await.ok().flatten()
    }

    /// Ends `session` (its files are dropped).
    pub fn close(&self, session: &str) {
        let _ = self.worker(session).send(Job::Close {
            session: session.to_owned(),
        });
        self.bound
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(session);
    }
}

/// Every call of a reply answered `error`: the pool is gone.
fn stopped(ids: &[(String, String)]) -> Vec<Answered> {
    ids.iter()
        .map(|(id, name)| error_answer(id, name, "the tool pool has stopped"))
        .collect()
}

fn error_answer(id: &str, name: &str, why: &str) -> Answered {
    let output = format!("error: the sandbox could not run this call ({why})");
    Answered {
        call: ExecutedCall {
            id: id.to_owned(),
            name: name.to_owned(),
            status: ToolStatus::Error,
            exit_code: None,
            class: "error".into(),
            output_bytes: output.len() as u64,
            fuel: 0,
            detail: why.to_owned(),
        },
        output,
        wall: Duration::ZERO,
    }
}

/// The seed of a session's `n`-th call (from 1).
pub fn call_seed(session_seed: u64, n: usize) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ session_seed;
    for b in (n as u64).to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Worker {
    /// A fresh instance with every workspace loaded, the sessions it had
    /// opened again and replayed.
    fn fresh(&mut self) -> Result<Vec<(String, WorkspaceInfo)>, String> {
        self.instance = None;
        let mut instance = self.env.instance().map_err(|e| e.to_string())?;
        let mut infos = Vec::new();
        for spec in self.workspaces.iter() {
            let info = instance
                .load_workspace(spec)
                .map_err(|e| format!("workspace `{}`: {e}", spec.name))?;
            infos.push((spec.name.clone(), info.value));
        }
        for (id, replay) in &self.sessions {
            instance
                .open_session(id, &replay.workspace, replay.seed)
                .map_err(|e| format!("session {id} could not be opened again: {e}"))?;
            for (n, call) in replay.calls.iter().enumerate() {
                instance
                    .replay(id, call, call_seed(replay.seed, n + 1))
                    .map_err(|e| format!("session {id} could not be replayed: {e}"))?;
            }
        }
        self.instance = Some(instance);
        Ok(infos)
    }

    fn serve(&mut self, jobs: mpsc::Receiver<Job>) {
        while let Ok(job) = jobs.recv() {
            match job {
                Job::Open {
                    session,
                    workspace,
                    seed,
                    reply,
                } => {
                    let opened = self.open(&session, &workspace, seed);
                    let _ = reply.send(opened);
                }
                Job::Call {
                    session,
                    calls,
                    reply,
                } => {
                    let answers = calls
                        .into_iter()
                        .map(|(id, call)| self.call(&session, &id, call))
                        .collect();
                    let _ = reply.send(answers);
                }
                Job::Stats { session, reply } => {
                    let stats = self
                        .instance
                        .as_mut()
                        .and_then(|i| i.session_stats(&session).ok());
                    let _ = reply.send(stats);
                }
                Job::Close { session } => {
                    self.sessions.remove(&session);
                    if let Some(instance) = self.instance.as_mut() {
                        let _ = instance.close_session(&session);
                    }
                }
            }
        }
    }

    fn instance(&mut self) -> Result<&mut ToolInstance, String> {
        if self.instance.is_none() {
            self.fresh()?;
        }
        self.instance
            .as_mut()
            .ok_or_else(|| "no tool instance".to_owned())
    }

    fn open(&mut self, session: &str, workspace: &str, seed: u64) -> Result<(), String> {
        self.instance()?
            .open_session(session, workspace, seed)
            .map_err(|e| e.to_string())?;
        self.sessions.insert(
            session.to_owned(),
            Replay {
                workspace: workspace.to_owned(),
                seed,
                calls: Vec::new(),
            },
        );
        Ok(())
    }

    fn call(&mut self, session: &str, id: &str, call: ToolCall) -> Answered {
        let Some(n) = self.sessions.get(session).map(|r| r.calls.len() + 1) else {
            return error_answer(id, &call.name, &format!("session {session} is not open"));
        };
        let seed = call_seed(self.sessions[session].seed, n);
        let settle_at = self.env.limits().fuel_per_call / 10 * 9;
        let shared = match self.instance() {
            Ok(instance) => instance.call(session, &call, seed),
            Err(e) => return error_answer(id, &call.name, &e),
        };
        let settle = match &shared {
            Ok(metered) => metered.fuel >= settle_at,
            Err(failure) => settles_alone(failure),
        };
        let (outcome, rebuild) = if settle {
            let alone = self.alone(session, &call, seed);
            // The shared instance must hold what the answer says happened.
            let rebuild = !(shared.is_ok() && alone.is_ok());
            if let (Err(failure), Ok(_)) = (&shared, &alone) {
                agentload_console::line(&format!(
                    "note: session {session}: {failure} in a shared tool instance; in an \
                     instance of its own the call completed, and the shared instance is made \
                     again (its sessions replayed)"
                ));
            }
            (alone, rebuild)
        } else {
            let rebuild = shared.as_ref().is_err_and(ToolFailure::poisons_instance);
            (shared, rebuild)
        };
        if outcome.is_ok() {
            if let Some(replay) = self.sessions.get_mut(session) {
                replay.calls.push(call.clone());
            }
        }
        if let Err(failure) = &outcome {
            if rebuild {
                agentload_console::line(&format!(
                    "note: session {session}: {failure}; the call answers an error and the tool \
                     instance is made again (its sessions replayed)"
                ));
            }
        }
        if rebuild {
            if let Err(e) = self.fresh() {
                agentload_console::line(&format!("tool pool: {e}"));
            }
        }
        match outcome {
            Ok(metered) => {
                let result = metered.value;
                Answered {
                    call: ExecutedCall {
                        id: id.to_owned(),
                        name: call.name,
                        status: match result.status {
                            CallStatus::Executed => ToolStatus::Executed,
                            CallStatus::Stubbed => ToolStatus::Stubbed,
                        },
                        exit_code: result.exit_code,
                        class: result.class,
                        output_bytes: result.output.len() as u64,
                        fuel: metered.fuel,
                        detail: result.detail,
                    },
                    output: result.output,
                    wall: metered.wall,
                }
            }
            Err(failure) => error_answer(id, &call.name, &short(&failure)),
        }
    }

    /// `call` (the session's next, with `seed`) in a fresh instance that
    /// holds only `session`, replayed: the answer that does not depend on
    /// what other sessions ran or keep.
    fn alone(
        &self,
        session: &str,
        call: &ToolCall,
        seed: u64,
    ) -> Result<Metered<CallResult>, ToolFailure> {
        let replay = &self.sessions[session];
        let mut instance = self.env.instance()?;
        for spec in self.workspaces.iter() {
            instance.load_workspace(spec)?;
        }
        instance.open_session(session, &replay.workspace, replay.seed)?;
        for (n, earlier) in replay.calls.iter().enumerate() {
            instance.replay(session, earlier, call_seed(replay.seed, n + 1))?;
        }
        instance.call(session, call, seed)
    }
}

/// Whether a failure in a shared instance may be its history's doing: a
/// call's fuel moves a little with what the instance ran before, so an
/// instance of the call's own decides whether it ran out. (Memory and
/// tables are the instance's sessions' together; a trap, the memory cap and
/// the wall-clock safety net are an `error` as they are.)
fn settles_alone(failure: &ToolFailure) -> bool {
    use agentload_plugin_host::PluginFailure as P;
    matches!(failure, ToolFailure::Plugin(P::FuelLimit { .. }))
}

/// A failure in the words the model sees.
fn short(failure: &ToolFailure) -> String {
    use agentload_plugin_host::PluginFailure as P;
    match failure {
        ToolFailure::Plugin(P::FuelLimit { .. }) => "it spent the call's fuel".into(),
        ToolFailure::Plugin(P::TimeLimit { limit_ms, .. }) => {
            format!("the wall-clock safety net of {limit_ms} ms fired")
        }
        ToolFailure::Plugin(P::MemoryLimit { limit_mib, .. }) => {
            format!("the sandbox's memory cap of {limit_mib} MiB")
        }
        other => other.to_string(),
    }
}

/// Lowers this thread's scheduling priority (Linux: `nice` is per thread).
fn lower_priority() {
    // SAFETY: setpriority(2) on the calling thread (who = 0) reads no
    // memory of ours; a failure only leaves the priority as it was.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, NICE);
    }
}
