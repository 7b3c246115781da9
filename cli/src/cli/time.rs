//! Times as people write them: RFC 3339 in UTC for what the command line prints, and RFC 3339
//! or epoch milliseconds for what it reads (`--since`, `--until`). Hand-written, as the crate
//! carries no date library for two conversions; the calendar is the proleptic Gregorian one
//! RFC 3339 uses, from 1970 (a record's `at_ms` cannot be earlier).

/// Milliseconds in a day.
const DAY_MS: u64 = 86_400_000;

/// `ms` since the Unix epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn rfc3339(ms: u64) -> String {
    let (days, in_day) = (ms / DAY_MS, ms % DAY_MS);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (second, milli) = (in_day / 1000 % 60, in_day % 1000);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{milli:03}Z")
}

/// Reads a time given on the command line: epoch milliseconds (digits only), or RFC 3339
/// (`2026-01-01T12:00:00Z`, with optional fraction and any `±HH:MM` offset; `T` or a space
/// between date and time), or a date alone (`2026-01-01`, midnight UTC).
pub(crate) fn parse_time(text: &str) -> Result<u64, String> {
    let refuse = || {
        format!(
            "{text}: not a time: expected RFC 3339 (2026-01-01T12:00:00Z, or a date \
             2026-01-01) or milliseconds since the Unix epoch"
        )
    };
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().map_err(|_| refuse());
    }
    parse_rfc3339(text).ok_or_else(refuse)
}

fn parse_rfc3339(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let number = |from: usize, len: usize| -> Option<u64> {
        let digits = bytes.get(from..from + len)?;
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| std::str::from_utf8(digits).ok()?.parse().ok())?
    };
    let (year, month, day) = (number(0, 4)?, number(5, 2)?, number(8, 2)?);
    if bytes.get(4) != Some(&b'-') || bytes.get(7) != Some(&b'-') {
        return None;
    }
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day)?;
    if bytes.len() == 10 {
        return days.checked_mul(DAY_MS);
    }
    if !matches!(bytes.get(10), Some(b'T' | b't' | b' ')) {
        return None;
    }
    let (hour, minute, second) = (number(11, 2)?, number(14, 2)?, number(17, 2)?);
    if bytes.get(13) != Some(&b':') || bytes.get(16) != Some(&b':') {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let mut at = 19;
    let mut milli = 0;
    if bytes.get(at) == Some(&b'.') {
        let digits = bytes[at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 {
            return None;
        }
        // Only milliseconds are kept: a finer fraction is cut, not rounded.
        for place in 0..3 {
            milli = milli * 10
                + number(at + 1 + place, 1)
                    .filter(|_| place < digits)
                    .unwrap_or(0);
        }
        at += 1 + digits;
    }
    let offset_minutes: i64 = match &text[at..] {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && matches!(zone.as_bytes()[0], b'+' | b'-') => {
            let (hours, minutes) = (number(at + 1, 2)?, number(at + 4, 2)?);
            if zone.as_bytes()[3] != b':' || hours > 23 || minutes > 59 {
                return None;
            }
            let minutes = (hours * 60 + minutes) as i64;
            if zone.starts_with('-') {
                -minutes
            } else {
                minutes
            }
        }
        _ => return None,
    };
    let local = days * DAY_MS + ((hour * 60 + minute) * 60 + second) * 1000 + milli;
    let utc = i128::from(local) - i128::from(offset_minutes) * 60_000;
    u64::try_from(utc).ok()
}

fn is_leap(year: u64) -> bool {
    year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400))
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a date from 1970 on (`None` before it).
fn days_from_civil(year: u64, month: u64, day: u64) -> Option<u64> {
    if year < 1970 {
        return None;
    }
    let whole_years: u64 = (1970..year)
        .map(|y| if is_leap(y) { 366 } else { 365 })
        .sum();
    let whole_months: u64 = (1..month).map(|m| days_in_month(year, m)).sum();
    Some(whole_years + whole_months + day - 1)
}

/// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`, for days ≥ 0).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::{parse_time, rfc3339};

    #[test]
    fn printed_times_read_back_to_the_same_millisecond() {
        for ms in [
            0,
            1,
            86_399_999,
            951_782_400_000,
            1_700_000_000_123,
            4_102_444_800_000,
        ] {
            assert_eq!(parse_time(&rfc3339(ms)), Ok(ms), "{}", rfc3339(ms));
        }
        assert_eq!(rfc3339(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn offsets_dates_and_milliseconds_are_read() {
        let check = |text: &str, ms: Option<u64>| assert_eq!(parse_time(text).ok(), ms, "{text}");
        check("1700000000000", Some(1_700_000_000_000));
        check("2023-11-14", Some(1_699_920_000_000));
        check("2023-11-14T23:13:20+01:00", Some(1_700_000_000_000));
        check("2023-11-14 22:13:20.5Z", Some(1_700_000_000_500));
        check("2023-11-14T22:13:20.123456Z", Some(1_700_000_000_123));
        check("1970-01-01T00:00:00-00:01", Some(60_000));
        check("1970-01-01T00:00:00+00:01", None);
        check("2023-02-29", None);
        check("2023-11-14T24:00:00Z", None);
        check("2023-11-14T22:13:20", None);
        check("1969-12-31", None);
        check("yesterday", None);
        check("", None);
    }
}
