//! The store state every plugin instance runs in: WASI linked with nothing
//! granted, a frozen clock, a fixed entropy stream, captured stderr, a
//! resource limiter that counts the whole store (every linear memory and
//! table of every core instance together, not one memory at a time) and
//! remembers which limit said no, and the budget of `host.log` output.

use super::log_budget::LogBudget;
use agentload_config::Limits;
use wasmtime::component::ResourceTable;
use wasmtime::ResourceLimiter;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{
    Deterministic, HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView,
    WasiView,
};

/// Bytes of guest stderr kept for error messages (panic text).
const STDERR_CAPACITY: usize = 64 * 1024;

/// State of one plugin store.
pub struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    limiter: StoreLimiter,
    stderr: MemoryOutputPipe,
    /// Name used to tag the plugin's log lines.
    pub(crate) plugin_name: String,
    /// What `host.log` may still write.
    pub(crate) log: LogBudget,
    /// Epoch ticks the current call may still run (async stores).
    pub(crate) ticks_left: u64,
}

impl StoreState {
    /// A sandbox for `plugin_name` under `limits`, logging through `log`.
    pub fn new(plugin_name: &str, limits: &Limits, log: LogBudget) -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPACITY);
        let wasi = WasiCtxBuilder::new()
            .stderr(stderr.clone())
            .wall_clock(FrozenClock(0))
            .monotonic_clock(FrozenClock(0))
            .secure_random(fixed_entropy())
            .insecure_random(fixed_entropy())
            .insecure_random_seed(0)
            .build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limiter: StoreLimiter::new(limits),
            stderr,
            plugin_name: plugin_name.to_string(),
            log,
            ticks_left: 0,
        }
    }

    /// A tool environment's sandbox: as a plugin's, but its wall clock
    /// reads the tools' fixed epoch, [`TOOLS_EPOCH`] (never the host's
    /// time), and its entropy is seeded per call ([`Self::reseed`]).
    pub fn for_tools(plugin_name: &str, limits: &Limits, log: LogBudget) -> Self {
        let mut state = Self::new(plugin_name, limits, log);
        state.reseed(0);
        state
    }

    /// Replaces the store's WASI context with one whose entropy is the
    /// stream `seed` gives: a tool call's `mktemp` names and random bytes
    /// depend on its session and its place there, never on which calls
    /// ran before it in the same instance.
    pub fn reseed(&mut self, seed: u64) {
        self.wasi = WasiCtxBuilder::new()
            .stderr(self.stderr.clone())
            .wall_clock(FrozenClock(TOOLS_EPOCH))
            .monotonic_clock(FrozenClock(0))
            .secure_random(seeded_entropy(seed))
            .insecure_random(seeded_entropy(seed ^ 0x5555_5555_5555_5555))
            .insecure_random_seed(u128::from(seed))
            .build();
    }

    /// The limiter to install with `Store::limiter`.
    pub fn limiter(&mut self) -> &mut dyn ResourceLimiter {
        &mut self.limiter
    }

    /// The limit that refused a growth since the store was made, if any.
    pub fn limit_hit(&self) -> Option<LimitHit> {
        self.limiter.hit
    }

    /// The last lines the guest wrote to stderr (a panic message, usually).
    pub fn stderr_tail(&self) -> String {
        let bytes = self.stderr.contents();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(4)..].join(" | ")
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Which store-wide limit refused a growth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    /// The total of all linear memories (`plugins.limits.memory_mib`).
    Memory,
    /// The total of all table elements (`plugins.limits.table_elements`).
    TableElements,
}

/// Counts every linear memory and table of the store together: a component
/// with many core instances gets the same budget as one with a single
/// memory. The instance, memory and table counts are wasmtime's own checks
/// (`instances`, `memories`, `tables`), enforced at instantiation.
struct StoreLimiter {
    memory_limit: usize,
    memory_total: usize,
    table_limit: usize,
    table_total: usize,
    instances: usize,
    memories: usize,
    tables: usize,
    hit: Option<LimitHit>,
}

impl StoreLimiter {
    fn new(limits: &Limits) -> Self {
        let clamp = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        Self {
            memory_limit: clamp(limits.memory_mib.saturating_mul(1 << 20)),
            memory_total: 0,
            table_limit: clamp(limits.table_elements),
            table_total: 0,
            instances: clamp(limits.instances),
            memories: clamp(limits.memories),
            tables: clamp(limits.tables),
            hit: None,
        }
    }
}

/// `total` after one item grows from `current` to `desired`, when it stays
/// within `limit`.
fn grown(total: usize, current: usize, desired: usize, limit: usize) -> Option<usize> {
    let total = total.checked_sub(current.min(total))?;
    total.checked_add(desired).filter(|t| *t <= limit)
}

impl ResourceLimiter for StoreLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        match grown(self.memory_total, current, desired, self.memory_limit) {
            Some(total) => {
                self.memory_total = total;
                Ok(true)
            }
            None => {
                self.hit = Some(LimitHit::Memory);
                wasmtime::bail!(
                    "memory limit of {} bytes for all linear memories together exceeded \
                     ({} in use, one memory wants to grow from {current} to {desired})",
                    self.memory_limit,
                    self.memory_total
                )
            }
        }
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        match grown(self.table_total, current, desired, self.table_limit) {
            Some(total) => {
                self.table_total = total;
                Ok(true)
            }
            None => {
                self.hit = Some(LimitHit::TableElements);
                wasmtime::bail!(
                    "table limit of {} elements for all tables together exceeded \
                     ({} in use, one table wants to grow from {current} to {desired})",
                    self.table_limit,
                    self.table_total
                )
            }
        }
    }

    fn instances(&self) -> usize {
        self.instances
    }

    fn memories(&self) -> usize {
        self.memories
    }

    fn tables(&self) -> usize {
        self.tables
    }
}

/// The wall clock of tool environments: 2026-01-01T00:00:00Z, in seconds
/// since the Unix epoch (the tools' own virtual clock starts there too).
pub const TOOLS_EPOCH: u64 = 1_767_225_600;

/// A clock that always reads the same time (seconds): plugins get no time
/// source (zero), tool environments a fixed epoch.
struct FrozenClock(u64);

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1)
    }
    fn now(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.0)
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        self.0.saturating_mul(1_000_000_000)
    }
}

/// The fixed bytes every plugin gets when it asks for entropy (std's hash map
/// keys do): the same on every run, so behaviour is reproducible and no host
/// entropy leaks in.
fn fixed_entropy() -> Deterministic {
    Deterministic::new(
        (0u8..=255)
            .map(|b| b.wrapping_mul(167).wrapping_add(13))
            .collect(),
    )
}

/// 1 KiB drawn from `seed` (SplitMix64), repeated as the entropy stream.
fn seeded_entropy(seed: u64) -> Deterministic {
    let mut state = seed;
    let mut bytes = Vec::with_capacity(1024);
    while bytes.len() < 1024 {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        bytes.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    Deterministic::new(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(memory_mib: u64) -> StoreLimiter {
        StoreLimiter::new(&Limits {
            memory_mib,
            table_elements: 100,
            ..Limits::default()
        })
    }

    #[test]
    fn memories_are_counted_together() {
        let mut l = limiter(64);
        let mib = 1 << 20;
        // Eight fresh memories of 60 MiB: the first fits, the second does not.
        assert!(l.memory_growing(0, 60 * mib, None).unwrap());
        let err = l.memory_growing(0, 60 * mib, None).unwrap_err().to_string();
        assert!(err.contains("all linear memories together"), "{err}");
        assert_eq!(l.hit, Some(LimitHit::Memory));
        // Growing the first one counts only the growth.
        let mut l = limiter(64);
        assert!(l.memory_growing(0, 32 * mib, None).unwrap());
        assert!(l.memory_growing(32 * mib, 64 * mib, None).unwrap());
        assert!(l.memory_growing(64 * mib, 65 * mib, None).is_err());
    }

    #[test]
    fn tables_are_counted_together() {
        let mut l = limiter(64);
        assert!(l.table_growing(0, 60, None).unwrap());
        assert!(l.table_growing(0, 40, None).unwrap());
        assert!(l.table_growing(0, 1, None).is_err());
        assert_eq!(l.hit, Some(LimitHit::TableElements));
    }

    #[test]
    fn counts_come_from_the_limits() {
        let l = StoreLimiter::new(&Limits {
            instances: 3,
            memories: 2,
            tables: 5,
            ..Limits::default()
        });
        assert_eq!((l.instances(), l.memories(), l.tables()), (3, 2, 5));
    }
}
