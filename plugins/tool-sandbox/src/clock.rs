//! The sandbox's virtual clock: a fixed epoch that advances only when a
//! command sleeps, never with the host's time. `date`, file times and
//! `sleep` read it, so the same calls give the same bytes however loaded
//! the host is.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The epoch every session starts at: 2026-01-01T00:00:00Z.
pub const EPOCH: i64 = 1_767_225_600;

/// One session's time.
#[derive(Debug)]
pub struct Clock {
    epoch: i64,
    /// Nanoseconds slept since the epoch.
    slept_ns: AtomicU64,
}

impl Clock {
    /// A clock at `epoch` (seconds since the Unix epoch).
    pub fn new(epoch: i64) -> Self {
        Self {
            epoch,
            slept_ns: AtomicU64::new(0),
        }
    }

    /// Seconds since the Unix epoch, now.
    pub fn now_secs(&self) -> i64 {
        self.epoch + (self.slept_ns.load(Ordering::Relaxed) / 1_000_000_000) as i64
    }

    /// Time slept so far.
    pub fn slept(&self) -> Duration {
        Duration::from_nanos(self.slept_ns.load(Ordering::Relaxed))
    }

    /// Moves the clock on by `by` (a `sleep`).
    pub fn advance(&self, by: Duration) {
        let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .slept_ns
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |t| {
                Some(t.saturating_add(ns))
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_moves_only_when_told() {
        let clock = Clock::new(EPOCH);
        assert_eq!(clock.now_secs(), EPOCH);
        clock.advance(Duration::from_millis(1500));
        assert_eq!(clock.now_secs(), EPOCH + 1);
        clock.advance(Duration::from_millis(500));
        assert_eq!(clock.now_secs(), EPOCH + 2);
        assert_eq!(clock.slept(), Duration::from_secs(2));
    }
}
