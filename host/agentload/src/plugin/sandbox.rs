//! The store state every plugin instance runs in: WASI linked with nothing
//! granted, a frozen clock, a fixed entropy stream, captured stderr, and a
//! memory limiter that remembers when it said no.

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
    limiter: MemoryLimiter,
    stderr: MemoryOutputPipe,
    /// Name used to tag the plugin's log lines.
    pub(crate) plugin_name: String,
}

impl StoreState {
    /// A sandbox for `plugin_name` with at most `memory_bytes` of linear memory.
    pub fn new(plugin_name: &str, memory_bytes: usize) -> Self {
        let stderr = MemoryOutputPipe::new(STDERR_CAPACITY);
        let wasi = WasiCtxBuilder::new()
            .stderr(stderr.clone())
            .wall_clock(FrozenClock)
            .monotonic_clock(FrozenClock)
            .secure_random(fixed_entropy())
            .insecure_random(fixed_entropy())
            .insecure_random_seed(0)
            .build();
        Self {
            wasi,
            table: ResourceTable::new(),
            limiter: MemoryLimiter {
                limit: memory_bytes,
                hit: false,
            },
            stderr,
            plugin_name: plugin_name.to_string(),
        }
    }

    /// The limiter to install with `Store::limiter`.
    pub fn limiter(&mut self) -> &mut dyn ResourceLimiter {
        &mut self.limiter
    }

    /// Whether the memory limit refused a growth since the store was made.
    pub fn memory_limit_hit(&self) -> bool {
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

/// Refuses memory growth past a limit and records that it did, so the host
/// can name the limit instead of reporting a bare trap.
struct MemoryLimiter {
    limit: usize,
    hit: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.hit = true;
            wasmtime::bail!(
                "memory limit of {} bytes exceeded (wanted {desired})",
                self.limit
            );
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

/// A clock that always reads zero: plugins get no time source.
struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1)
    }
    fn now(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
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
