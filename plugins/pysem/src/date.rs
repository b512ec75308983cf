//! Calendar arithmetic as Python's `datetime` does it: the proleptic
//! Gregorian calendar, days counted from 1970-01-01 (UTC timestamps).

/// `calendar.isleap(year)`.
pub fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// `calendar.monthrange(year, month)[1]`: the days in `month` (1..=12).
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The civil date `(year, month, day)` of the day `days` days after
/// 1970-01-01 (negative: before it), as
/// `datetime.fromtimestamp(days * 86400, timezone.utc).date()` gives it
/// (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M:%S")`
/// split in its parts: the civil date and `(hour, minute, second)`.
pub fn utc_from_timestamp(ts: i64) -> ((i64, u32, u32), (u32, u32, u32)) {
    let secs = ts.rem_euclid(86_400) as u32;
    (
        civil_from_days(ts.div_euclid(86_400)),
        (secs / 3600, secs / 60 % 60, secs % 60),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(11_017), (2000, 3, 1));
        assert_eq!(civil_from_days(20_788), (2026, 12, 1));
        assert_eq!(civil_from_days(-719_162), (1, 1, 1));
        assert_eq!(civil_from_days(2_932_896), (9999, 12, 31));
        assert_eq!(
            utc_from_timestamp(951_782_400 + 3661),
            ((2000, 2, 29), (1, 1, 1))
        );
        assert_eq!(utc_from_timestamp(-1), ((1969, 12, 31), (23, 59, 59)));
    }

    #[test]
    fn every_day_follows_the_previous_one() {
        let mut prev = civil_from_days(-800_000);
        for days in -799_999..800_000 {
            let (y, m, d) = civil_from_days(days);
            let next = if prev.2 < days_in_month(prev.0, prev.1) {
                (prev.0, prev.1, prev.2 + 1)
            } else if prev.1 < 12 {
                (prev.0, prev.1 + 1, 1)
            } else {
                (prev.0 + 1, 1, 1)
            };
            assert_eq!((y, m, d), next, "day {days}");
            prev = next;
        }
    }

    #[test]
    fn leap_years() {
        assert!(is_leap(2000) && is_leap(2024) && is_leap(-4));
        assert!(!is_leap(1900) && !is_leap(2023) && !is_leap(2100));
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(2023, 2), 28);
        assert_eq!(days_in_month(2023, 4), 30);
        assert_eq!(days_in_month(2023, 12), 31);
    }
}
