//! Clocks: the machine-wide monotonic clock shared with the simulator
//! ([`mono_ns`]), wall-clock timestamps for result files (never used for
//! measurements), and the start-up stamps: process start to the first request.

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// CLOCK_MONOTONIC in nanoseconds: the clock `Instant` reads on Linux, shared by every process
/// on the machine, so a client in another process can compare its own stamps with these.
pub fn clock_monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// `at` on the machine-wide monotonic clock (`CLOCK_MONOTONIC`), nanoseconds: comparable
/// across the processes of one machine (the simulator's `*_mono_ns` stamps are on it).
pub fn mono_ns(at: Instant) -> u64 {
    static ANCHOR: OnceLock<(Instant, u64)> = OnceLock::new();
    let (instant, mono) = *ANCHOR.get_or_init(|| (Instant::now(), clock_monotonic_ns()));
    match at.checked_duration_since(instant) {
        Some(d) => mono + d.as_nanos() as u64,
        None => mono.saturating_sub(instant.duration_since(at).as_nanos() as u64),
    }
}
static PROCESS_START: OnceLock<Instant> = OnceLock::new();
static FIRST_REQUEST: OnceLock<Instant> = OnceLock::new();

/// Marks the process's start (`main` calls it first thing).
pub fn mark_process_start() {
    PROCESS_START.get_or_init(Instant::now);
}

/// Marks the first request the process sends (later calls keep the first).
pub fn mark_first_request(at: Instant) {
    FIRST_REQUEST.get_or_init(|| at);
}

/// Process start to the first request, once both happened.
pub fn startup() -> Option<Duration> {
    Some(
        FIRST_REQUEST
            .get()?
            .saturating_duration_since(*PROCESS_START.get()?),
    )
}

/// Now, as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub fn utc_now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    rfc3339(secs)
}

fn rfc3339(secs: u64) -> String {
    let ((year, month, day), (h, m, s)) = pysem::date::utc_from_timestamp(secs as i64);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_dates() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_796_083_200), "2026-12-01T00:00:00Z");
        assert_eq!(super::rfc3339(951_782_400 + 3661), "2000-02-29T01:01:01Z");
    }

    #[test]
    fn monotonic_ns_follows_instants() {
        let a = std::time::Instant::now();
        let b = a + std::time::Duration::from_micros(1500);
        assert_eq!(super::mono_ns(b) - super::mono_ns(a), 1_500_000);
        let now = super::clock_monotonic_ns();
        assert!(super::mono_ns(std::time::Instant::now()).abs_diff(now) < 5_000_000);
    }
}
