//! The workload instances a phase's sessions run on. Each session is bound
//! to one instance for its whole life (its state lives there); a session
//! waiting for its instance awaits an async lock, so it never holds a
//! runtime worker. Guest calls are `call_async`: the guest runs on a fiber
//! and yields at every epoch tick.
//!
//! Every instance is configured from the one shared [`PluginConfig`]
//! (the host holds the data files once), but each holds its own copy of
//! the workload's parsed data in its linear memory: `n` instances cost `n`
//! times the workload's memory. One instance is the default; `bench
//! --sections agents` measures both.
//!
//! [`PluginConfig`]: agentload_plugin_host::types::PluginConfig

use agentload_plugin_host::{PluginFailure, WorkloadPlugin};
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::Mutex;

/// A phase's workload instances, shared by its sessions.
pub struct Instances {
    all: Vec<Mutex<WorkloadPlugin>>,
    next: AtomicUsize,
}

impl Instances {
    /// One instance: every session runs on `workload`.
    pub fn one(workload: WorkloadPlugin) -> Self {
        Self {
            all: vec![Mutex::new(workload)],
            next: AtomicUsize::new(0),
        }
    }

    /// `workload` and `n - 1` more instances configured as it is (at least one).
    pub async fn pool(workload: WorkloadPlugin, n: usize) -> Result<Self, PluginFailure> {
        let mut all = Vec::with_capacity(n.max(1));
        for _ in 1..n.max(1) {
            all.push(Mutex::new(workload.forked().await?));
        }
        all.insert(0, Mutex::new(workload));
        Ok(Self {
            all,
            next: AtomicUsize::new(0),
        })
    }

    /// The instance the next session starts on (round robin); the session
    /// keeps it to its end.
    pub fn assign(&self) -> &Mutex<WorkloadPlugin> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.all.len();
        &self.all[i]
    }

    /// A fresh instance, configured as these are, with no session started.
    pub async fn fork(&self) -> Result<WorkloadPlugin, PluginFailure> {
        // The lock is held to copy the instance's configuration only, not
        // while the fork instantiates and configures itself.
        let fork = self.all[0].lock().await.forked();
        fork.await
    }

    /// The first instance back (a sweep keeps it for its next level).
    pub fn into_first(self) -> WorkloadPlugin {
        self.all
            .into_iter()
            .next()
            .expect("there is always one instance")
            .into_inner()
    }
}
