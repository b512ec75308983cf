//! Wall-clock timestamps for result files (never used for measurements:
//! those use the monotonic clock in [`crate::client`]), and the start-up
//! stamps: process start to the first request.

use std::sync::OnceLock;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
}
