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
    let (instant, mono) = *ANCHOR
        .get_or_init(|| tightest_anchor(|| (Instant::now(), clock_monotonic_ns(), Instant::now())));
    match at.checked_duration_since(instant) {
        Some(d) => mono + d.as_nanos() as u64,
        None => mono.saturating_sub(instant.duration_since(at).as_nanos() as u64),
    }
}

/// Tries at pairing an `Instant` with `CLOCK_MONOTONIC`, at most.
const ANCHOR_TRIES: usize = 64;

/// A bracket this narrow is as good as the clocks' resolution allows: stop trying.
const ANCHOR_GOOD: Duration = Duration::from_nanos(200);

/// The `Instant` to pair with a `CLOCK_MONOTONIC` reading, from `read` (an `Instant`, the
/// reading, an `Instant`): the narrowest of several brackets, paired at its start. The two
/// clocks cannot be read at once, and a thread preempted between the reads would shift every
/// `*_mono_ns` stamp of the process by the preemption (half a millisecond on a busy machine,
/// enough to put the simulator's receipt of a request before agentload sent it); the pairing
/// errs by at most the bracket's width, towards later stamps.
fn tightest_anchor(mut read: impl FnMut() -> (Instant, u64, Instant)) -> (Instant, u64) {
    let mut best: Option<(Duration, Instant, u64)> = None;
    for _ in 0..ANCHOR_TRIES {
        let (before, mono, after) = read();
        let width = after.saturating_duration_since(before);
        if best.is_none_or(|(narrowest, ..)| width < narrowest) {
            best = Some((width, before, mono));
        }
        if width <= ANCHOR_GOOD {
            break;
        }
    }
    let (_, instant, mono) = best.expect("at least one try");
    (instant, mono)
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

/// Seconds since the Unix epoch of a `YYYY-MM-DDTHH:MM:SSZ` stamp (as
/// [`utc_now_rfc3339`] writes them); `None` for anything else.
pub fn unix_from_rfc3339(stamp: &str) -> Option<i64> {
    let b = stamp.as_bytes();
    if b.len() != 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[19] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| stamp.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((mo + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3_600 + mi * 60 + s)
}

fn rfc3339(secs: u64) -> String {
    let ((year, month, day), (h, m, s)) = pysem::date::utc_from_timestamp(secs as i64);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    #[test]
    fn stamps_read_back_to_their_seconds() {
        for secs in [0, 951_782_400 + 3661, 1_796_083_200, 4_102_444_799] {
            let stamp = super::rfc3339(secs);
            assert_eq!(
                super::unix_from_rfc3339(&stamp),
                Some(secs as i64),
                "{stamp}"
            );
        }
        for bad in [
            "",
            "2026-12-01 00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-12-01T00:00:00",
        ] {
            assert_eq!(super::unix_from_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn known_dates() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(1_796_083_200), "2026-12-01T00:00:00Z");
        assert_eq!(super::rfc3339(951_782_400 + 3661), "2000-02-29T01:01:01Z");
    }

    #[test]
    fn the_anchor_is_the_narrowest_bracket_not_the_first() {
        use std::time::{Duration, Instant};
        let t0 = Instant::now();
        let us = |n: u64| t0 + Duration::from_micros(n);
        // A preempted first try (500 µs between the reads), a fair one, the tightest, then
        // one that must not be read: the tightest is good enough to stop.
        let tries = [
            (us(0), 7_000, us(500)),
            (us(1_000), 9_000, us(1_010)),
            (us(2_000), 10_000, us(2_000)),
            (us(3_000), 1, us(9_000)),
        ];
        let mut reads = tries.iter().copied();
        let anchor = super::tightest_anchor(|| reads.next().expect("stopped in time"));
        assert_eq!(anchor, (us(2_000), 10_000));
        assert_eq!(reads.next(), Some(tries[3]));
        // Without a good one, the narrowest of all the tries.
        let mut n = 0u64;
        let anchor = super::tightest_anchor(|| {
            n += 1;
            let width = if n == 40 { 3 } else { 50 };
            (us(100 * n), n, us(100 * n + width))
        });
        assert_eq!(anchor, (us(4_000), 40));
        assert_eq!(n, super::ANCHOR_TRIES as u64);
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
