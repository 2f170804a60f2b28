//! Timestamps as i64 microseconds since the Unix epoch, UTC.
//! Dumps carry RFC 3339 text; a hand-rolled parser keeps the hot path allocation-free.

mod formats;

use chrono::{DateTime, SecondsFormat, Utc};

pub use formats::{parse_http_date, partition_time, TimeFormat, MAX_MICROS, MIN_MICROS};

/// Parses `YYYY-MM-DD[T ]HH:MM:SS[.fraction](Z|±HH:MM|±HHMM)`; a missing offset means UTC.
/// Surrounding whitespace is ignored.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.first().is_some_and(u8::is_ascii_whitespace) || b.last().is_some_and(u8::is_ascii_whitespace) {
        return parse_rfc3339(text.trim());
    }
    after_date(b, date(b)?)
}

/// `parse_rfc3339` that remembers the dates it has read: dumps hold few distinct days, so most
/// times skip reading and checking their date.
pub struct DateCache {
    /// By a hash of the date's 10 bytes (a power of two of slots): those bytes (8 and 2) and
    /// the days since the epoch.
    /// The empty slot's bytes are all 0xFF, which no UTF-8 text holds.
    slots: Vec<(u64, u16, i64)>,
}

impl Default for DateCache {
    fn default() -> DateCache {
        DateCache { slots: vec![(u64::MAX, u16::MAX, 0); 256] }
    }
}

impl DateCache {
    /// `parse_rfc3339`. The form most dumps write, `YYYY-MM-DDTHH:MM:SSZ` on a date met
    /// before, is read inline in a few dozen instructions: the time of day checked and read
    /// as one word, the date looked up by its bytes.
    #[inline(always)]
    pub fn parse(&mut self, text: &str) -> Option<i64> {
        if let Ok::<&[u8; 20], _>(b) = text.as_bytes().try_into() {
            if let Some(micros) = self.known_days(b).and_then(|days| whole_seconds_utc(b, days)) {
                return Some(micros);
            }
        }
        self.parse_any(text)
    }

    /// `parse` for any text, noting a date not met before.
    #[inline(never)]
    fn parse_any(&mut self, text: &str) -> Option<i64> {
        let b = text.as_bytes();
        if b.len() < 19 || b[0].is_ascii_whitespace() || b[b.len() - 1].is_ascii_whitespace() {
            return parse_rfc3339(text);
        }
        let days = match self.known_days(b) {
            Some(days) => days,
            None => {
                let days = date(b)?;
                let (slot, head, tail) = self.slot(b);
                self.slots[slot] = (head, tail, days);
                days
            }
        };
        after_date(b, days)
    }

    /// The days since the epoch of the date `b` starts with (at least 10 bytes), if met before.
    #[inline(always)]
    fn known_days(&self, b: &[u8]) -> Option<i64> {
        let (slot, head, tail) = self.slot(b);
        let (known_head, known_tail, known_days) = self.slots[slot];
        (known_head == head && known_tail == tail).then_some(known_days)
    }

    /// Where the date `b` starts with is kept, and its bytes (8 and 2).
    #[inline(always)]
    fn slot(&self, b: &[u8]) -> (usize, u64, u16) {
        let head = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        let tail = u16::from_le_bytes(b[8..10].try_into().expect("2 bytes"));
        // The product's top bits depend on every bit of the date.
        let hash = (head ^ u64::from(tail).rotate_left(24)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((hash >> 56) as usize & (self.slots.len() - 1), head, tail)
    }
}

/// Days since the epoch of a text starting with a valid `YYYY-MM-DD`, at least 19 bytes long.
fn date(b: &[u8]) -> Option<i64> {
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year as i64, month, day))
}

/// The microseconds of a timestamp whose date (the first 10 bytes) is `days` since the epoch.
fn after_date(b: &[u8], days: i64) -> Option<i64> {
    if let Some(micros) = whole_seconds_utc(b, days) {
        return Some(micros);
    }
    if !matches!(b[10], b'T' | b't' | b' ') || b[13] != b':' || b[16] != b':' {
        return None;
    }
    let clock = seconds_of_day(digits(&b[11..13])?, digits(&b[14..16])?, digits(&b[17..19])?)?;
    let mut pos = 19;
    let mut micros: i64 = 0;
    if pos < b.len() && (b[pos] == b'.' || b[pos] == b',') {
        pos += 1;
        let start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            if pos - start < 6 {
                micros = micros * 10 + i64::from(b[pos] - b'0');
            }
            pos += 1;
        }
        let n = pos - start;
        if n == 0 {
            return None;
        }
        for _ in n..6 {
            micros *= 10;
        }
    }
    let offset_seconds: i64 = match b.get(pos) {
        None => 0,
        Some(b'Z' | b'z') if pos + 1 == b.len() => 0,
        Some(&sign @ (b'+' | b'-')) => {
            let rest = &b[pos + 1..];
            let (h, m) = match rest.len() {
                5 if rest[2] == b':' => (digits(&rest[0..2])?, digits(&rest[3..5])?),
                4 => (digits(&rest[0..2])?, digits(&rest[2..4])?),
                2 => (digits(&rest[0..2])?, 0),
                _ => return None,
            };
            if h > 23 || m > 59 {
                return None;
            }
            let s = (h * 3600 + m * 60) as i64;
            if sign == b'+' { s } else { -s }
        }
        _ => return None,
    };
    let secs = days * 86_400 + clock - offset_seconds;
    Some(secs * 1_000_000 + micros)
}

/// The seconds since midnight of a valid time of day (a leap second collapses onto :59).
fn seconds_of_day(hour: u32, minute: u32, second: u32) -> Option<i64> {
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    Some(i64::from(hour * 3600 + minute * 60 + second.min(59)))
}

/// `after_date` for the form most dumps write, `THH:MM:SSZ` and nothing more. None for
/// anything else (`after_date` then reads it).
#[inline(always)]
fn whole_seconds_utc(b: &[u8], days: i64) -> Option<i64> {
    let [b'T', time @ .., b'Z'] = b.get(10..)? else { return None };
    let word = u64::from_le_bytes((*time).try_into().ok()?);
    Some((days * 86_400 + clock_seconds(word)?) * 1_000_000)
}

/// The seconds since midnight of `HH:MM:SS` read as a little-endian word: None unless its
/// digits and colons are where they go and the time is valid (a leap second collapses onto :59).
#[inline(always)]
fn clock_seconds(word: u64) -> Option<i64> {
    // Every byte 0x30..=0x3f; the digits' low halves at most 9 (adding 6 keeps them in their
    // byte: no carry can cross one), and the colons where they go.
    const HIGH: u64 = 0xf0f0_f0f0_f0f0_f0f0;
    const THREES: u64 = 0x3030_3030_3030_3030;
    const COLONS: u64 = 0x0000_ff00_00ff_0000;
    let digits_ok = word & HIGH == THREES && word.wrapping_add(0x0606_0006_0600_0606) & HIGH == THREES;
    if !digits_ok || word & COLONS != 0x0000_3a00_003a_0000 {
        return None;
    }
    let digit = |i: u32| ((word >> (8 * i)) & 0x0f) as u32;
    let (hour, minute, second) = (digit(0) * 10 + digit(1), digit(3) * 10 + digit(4), digit(6) * 10 + digit(7));
    seconds_of_day(hour, minute, second)
}

/// RFC 3339 in UTC with `Z`; fractional seconds only when present (3 or 6 digits).
pub fn format_micros(micros: i64) -> String {
    match DateTime::<Utc>::from_timestamp_micros(micros) {
        Some(t) => t.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        None => micros.to_string(),
    }
}

/// A date given as days since 1970-01-01 (Parquet's and Arrow's DATE), as `YYYY-MM-DD`; a
/// day no calendar holds (a hostile file's) as its number.
pub fn format_date(days: i32) -> String {
    match chrono::NaiveDate::from_ymd_opt(1970, 1, 1).and_then(|epoch| epoch.checked_add_signed(chrono::TimeDelta::try_days(i64::from(days))?)) {
        Some(date) => date.format("%Y-%m-%d").to_string(),
        None => days.to_string(),
    }
}

pub fn now_micros() -> i64 {
    Utc::now().timestamp_micros()
}

/// A `--since`/`--until` bound: RFC 3339, a bare date (midnight UTC), or `N[smhdw]` before `now`.
pub fn parse_bound(text: &str, now: i64) -> Result<i64, String> {
    let t = text.trim();
    if let Some(v) = parse_rfc3339(t) {
        return Ok(v);
    }
    if t.len() == 10 {
        if let Some(v) = parse_rfc3339(&format!("{t}T00:00:00Z")) {
            return Ok(v);
        }
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: i64 = number.parse().map_err(|_| bound_error(text))?;
    let unit_seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(bound_error(text)),
    };
    n.checked_mul(unit_seconds * 1_000_000).and_then(|age| now.checked_sub(age)).filter(|t| *t >= MIN_MICROS).ok_or_else(|| bound_error(text))
}

fn bound_error(text: &str) -> String {
    format!("invalid time bound `{text}`: expected RFC 3339 (2026-11-01T00:00:00Z), a date (2026-11-01) or a relative age like 7d, 12h, 2w")
}

fn digits(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u32::from(c - b'0'))?;
    }
    Some(v)
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// Howard Hinnant's days-from-civil: days since 1970-01-01 for a proleptic Gregorian date.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chrono_micros(s: &str) -> i64 {
        DateTime::parse_from_rfc3339(s).unwrap().timestamp_micros()
    }

    #[test]
    fn dates_are_days_since_1970_and_days_past_any_calendar_are_their_number() {
        assert_eq!(format_date(0), "1970-01-01");
        assert_eq!(format_date(-1), "1969-12-31");
        assert_eq!(format_date(20_423), "2025-12-01");
        assert_eq!(format_date(i32::MAX), i32::MAX.to_string());
        assert_eq!(format_date(i32::MIN), i32::MIN.to_string());
    }

    #[test]
    fn agrees_with_chrono_on_rfc3339() {
        for s in [
            "2026-10-01T00:00:00Z",
            "1970-01-01T00:00:00Z",
            "2024-02-29T23:59:59.5Z",
            "2026-11-11T23:59:59.123456Z",
            "2026-11-11T23:59:59.123456789Z",
            "2026-03-01T01:02:03+02:00",
            "2026-03-01T01:02:03-05:30",
            "1969-12-31T23:59:59Z",
        ] {
            assert_eq!(parse_rfc3339(s), Some(chrono_micros(s)), "{s}");
        }
    }

    /// Every month of three years (a leap one, a century) with invalid months and days (0,
    /// 29–32 of short months), each followed by every one of `rests`; and NUL bytes for a date.
    fn dates_valid_or_not(rests: &[&str]) -> Vec<String> {
        let mut texts = Vec::new();
        for year in [1999, 2000, 2024] {
            for month in 0..=13 {
                for day in [0, 1, 15, 28, 29, 30, 31, 32] {
                    texts.extend(rests.iter().map(|rest| format!("{year:04}-{month:02}-{day:02}{rest}")));
                }
            }
        }
        texts.push(format!("{}T00:00:00Z", "\0".repeat(10)));
        texts
    }

    /// Dates valid or not, against chrono.
    #[test]
    fn every_date_valid_or_not_agrees_with_chrono() {
        let texts = dates_valid_or_not(&["T23:59:59.5+01:00", " 00:00:00Z"]);
        for text in &texts {
            let theirs = DateTime::parse_from_rfc3339(text).ok().map(|t| t.timestamp_micros());
            assert_eq!(parse_rfc3339(text), theirs, "{text:?}");
        }
    }

    /// The cache gives what the parser gives, for every text of the tests above read three
    /// times over in a shuffled order (so dates are met again, after others, with other times
    /// and offsets), with a cache small enough to collide.
    #[test]
    fn the_date_cache_agrees_with_the_parser() {
        let mut texts = dates_valid_or_not(&["T23:59:59.5+01:00", " 00:00:00Z", "T25:00:00Z", "T01:00:00Z\t"]);
        texts.extend(dates_valid_or_not(&["T01:00:00Z"]).iter().map(|t| format!(" {t}")));
        texts.extend(["", "yesterday", "2026-10-01T00:00:00.Z", "2026-10-01T00:00:00", "2026-10-01X00:00:00Z"].map(String::from));
        let mut order: Vec<usize> = (0..texts.len() * 3).map(|i| i % texts.len()).collect();
        let mut state = 7u64;
        for i in (1..order.len()).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            order.swap(i, (state >> 33) as usize % (i + 1));
        }
        let mut cache = DateCache::default();
        cache.slots.truncate(16);
        for &i in &order {
            assert_eq!(cache.parse(&texts[i]), parse_rfc3339(&texts[i]), "{:?}", texts[i]);
        }
        // Every byte of the usual form changed to every ASCII byte, its date known (the form
        // read inline) and not: the same as the parser.
        let base = "2026-10-21T11:29:24Z";
        for i in 0..base.len() {
            for v in 0..0x80u8 {
                let mut b = base.as_bytes().to_vec();
                b[i] = v;
                let text = std::str::from_utf8(&b).expect("ASCII");
                let mut fresh = DateCache::default();
                assert_eq!(fresh.parse(text), parse_rfc3339(text), "{text:?}, date not met before");
                cache.parse(base);
                assert_eq!(cache.parse(text), parse_rfc3339(text), "{text:?}, date met before");
            }
        }
    }

    /// The word-at-a-time reading of `THH:MM:SSZ` gives what the byte-by-byte one gives (or
    /// leaves the text to it), for every byte of the time replaced by every value.
    #[test]
    fn whole_seconds_in_utc_read_at_once_agree_with_the_general_reading() {
        let base = b"2026-10-21T11:29:24Z";
        let days = date(base).unwrap();
        let general = |b: &[u8]| {
            let s = std::str::from_utf8(b).ok()?;
            DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp_micros())
        };
        let mut fast = 0;
        for i in 10..base.len() {
            for v in 0..=255u8 {
                let mut b = base.to_vec();
                b[i] = v;
                let ours = after_date(&b, days);
                if let Some(micros) = whole_seconds_utc(&b, days) {
                    fast += 1;
                    assert_eq!(Some(micros), general(&b), "{:?}", String::from_utf8_lossy(&b));
                }
                // Chrono refuses a leap second and `t`; elsewhere the general reading agrees.
                if b[i] != b't' && !(i == 17 && v == b'6') {
                    assert_eq!(ours, general(&b), "{:?}", String::from_utf8_lossy(&b));
                }
            }
        }
        assert!(fast > 40, "the word reading took {fast} texts");
        for text in ["2026-10-21T23:59:59Z", "2026-10-21T00:00:00Z", "2026-10-21T24:00:00Z", "2026-10-21T12:60:00Z", "2026-10-21T12:00:61Z"] {
            assert_eq!(after_date(text.as_bytes(), days), general(text.as_bytes()), "{text}");
        }
    }

    #[test]
    fn accepts_space_separator_and_missing_offset() {
        assert_eq!(parse_rfc3339("2026-10-01 00:00:00"), Some(chrono_micros("2026-10-01T00:00:00Z")));
        assert_eq!(parse_rfc3339("2026-10-01T00:00:00+0000"), Some(chrono_micros("2026-10-01T00:00:00Z")));
    }

    #[test]
    fn ignores_surrounding_whitespace() {
        assert_eq!(parse_rfc3339(" 2026-10-01T00:00:00Z\t"), Some(chrono_micros("2026-10-01T00:00:00Z")));
    }

    #[test]
    fn rejects_garbage() {
        for s in ["", "yesterday", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-10-01T00:00:00Q", "2026-10-01T25:00:00Z", "2026-10-01T00:00:00.Z"] {
            assert_eq!(parse_rfc3339(s), None, "{s}");
        }
    }

    #[test]
    fn formats_whole_seconds_without_fraction() {
        assert_eq!(format_micros(chrono_micros("2026-10-01T00:00:00Z")), "2026-10-01T00:00:00Z");
        assert_eq!(format_micros(chrono_micros("2026-10-01T00:00:00.25Z")), "2026-10-01T00:00:00.250Z");
        assert_eq!(format_micros(chrono_micros("2026-10-01T00:00:00.000001Z")), "2026-10-01T00:00:00.000001Z");
    }

    #[test]
    fn bounds_accept_dates_and_relative_ages() {
        let now = chrono_micros("2026-11-29T12:00:00Z");
        assert_eq!(parse_bound("2026-11-01", now).unwrap(), chrono_micros("2026-11-01T00:00:00Z"));
        assert_eq!(parse_bound("7d", now).unwrap(), chrono_micros("2026-11-22T12:00:00Z"));
        assert_eq!(parse_bound("2h", now).unwrap(), chrono_micros("2026-11-29T10:00:00Z"));
        assert!(parse_bound("7y", now).is_err());
        assert!(parse_bound("soon", now).is_err());
    }
}
