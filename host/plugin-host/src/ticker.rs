//! The thread that advances the engine's epoch, which is how guest calls are timed and how an
//! async guest yields: every [`EPOCH_TICK`] while a guest call runs, every [`IDLE_TICK`] while
//! none does. An idle harness (agents waiting on tool delays or on the server) then wakes for
//! the epoch 20 times a second, not 100: on a virtual machine each wake costs tens of
//! microseconds. A call that starts during an idle tick sees its first tick at most
//! [`IDLE_TICK`] after it started (not [`EPOCH_TICK`]), then one every [`EPOCH_TICK`]: its
//! first yield, and the end of its time limit, can come up to the difference later than with
//! fast ticks throughout.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use wasmtime::EngineWeak;

/// How often the epoch advances while a guest call runs; per-call time limits are counted in
/// these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// How often it advances while no guest call runs.
pub const IDLE_TICK: Duration = Duration::from_millis(50);

/// What the ticker thread and the calls share.
#[derive(Debug, Default)]
struct State {
    stop: AtomicBool,
    /// Guest calls running now.
    calls: AtomicUsize,
}

/// The ticker of one engine; it stops when this is dropped (or the engine is).
#[derive(Debug)]
pub(crate) struct EpochTicker {
    state: Arc<State>,
}

impl EpochTicker {
    /// Starts the thread for `engine`.
    pub(crate) fn start(engine: EngineWeak) -> std::io::Result<Self> {
        let state = Arc::new(State::default());
        let shared = state.clone();
        std::thread::Builder::new()
            .name("agentload-epoch".into())
            .spawn(move || {
                while !shared.stop.load(Ordering::Relaxed) {
                    let busy = shared.calls.load(Ordering::Relaxed) > 0;
                    std::thread::sleep(if busy { EPOCH_TICK } else { IDLE_TICK });
                    match engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                }
            })?;
        Ok(Self { state })
    }

    /// What a store counts its calls with.
    pub(crate) fn calls(&self) -> Calls {
        Calls(self.state.clone())
    }
}

/// Counts the guest calls of an engine's stores for its ticker.
#[derive(Debug, Clone)]
pub(crate) struct Calls(Arc<State>);

impl Calls {
    /// Counts a guest call as running until the returned guard is dropped.
    pub(crate) fn running(&self) -> CallRunning {
        self.0.calls.fetch_add(1, Ordering::Relaxed);
        CallRunning {
            state: self.0.clone(),
        }
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::Relaxed);
    }
}

/// A guest call running: the epoch advances at [`EPOCH_TICK`] while any is held.
#[derive(Debug)]
pub(crate) struct CallRunning {
    state: Arc<State>,
}

impl Drop for CallRunning {
    fn drop(&mut self) {
        self.state.calls.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_while_their_guards_live() {
        let engine = wasmtime::Engine::default();
        let ticker = EpochTicker::start(engine.weak()).unwrap();
        let calls = ticker.calls();
        let (a, b) = (calls.running(), ticker.calls().running());
        assert_eq!(ticker.state.calls.load(Ordering::Relaxed), 2);
        drop(a);
        assert_eq!(ticker.state.calls.load(Ordering::Relaxed), 1);
        drop(b);
        assert_eq!(ticker.state.calls.load(Ordering::Relaxed), 0);
    }
}
