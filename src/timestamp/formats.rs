//! The other ways real dumps write a time: epoch numbers in a stated unit (or in a unit the JSON
//! number's type says), HTTP-dates (RFC 7231, as Azure's REST headers write them), a pattern of
//! the writer's own, and hive partition folders (`dt=2026-11-28/hour=07/`).

use super::{days_from_civil, days_in_month, digits, parse_rfc3339};

/// How a profile's time field is written (a native Parquet timestamp is read whatever it says).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeFormat {
    /// RFC 3339 text; an HTTP-date is read too (it cannot be mistaken for anything else).
    #[default]
    Rfc3339,
    /// Seconds since the epoch, as a number or numeric text (a fraction allowed).
    EpochS,
    EpochMs,
    EpochUs,
    EpochNs,
    /// A number with a fraction is seconds, an integer milliseconds: Sidekiq wrote float
    /// seconds up to 7.x and integer milliseconds from 8.0, and tells them apart so.
    EpochSOrMs,
    /// Text in a pattern of chrono's strftime (`%Y-%m-%d %H:%M:%S:%6f Z`, NServiceBus's
    /// `TimeOfFailure`); UTC unless the pattern reads an offset (`%z`, `%:z`).
    Pattern(&'static str),
}

/// The earliest and latest microseconds a time may be: years 1 to 9999, as RFC 3339 writes.
pub const MIN_MICROS: i64 = -62_135_596_800_000_000;
pub const MAX_MICROS: i64 = 253_402_300_799_999_999;

impl TimeFormat {
    pub fn parse(name: &str) -> Option<TimeFormat> {
        Some(match name {
            "rfc3339" => TimeFormat::Rfc3339,
            "epoch_s" => TimeFormat::EpochS,
            "epoch_ms" => TimeFormat::EpochMs,
            "epoch_us" => TimeFormat::EpochUs,
            "epoch_ns" => TimeFormat::EpochNs,
            "epoch_s_or_ms" => TimeFormat::EpochSOrMs,
            // A profile's pattern lives as long as the process: kept once, by name.
            pattern if pattern.contains('%') => TimeFormat::Pattern(Box::leak(pattern.to_string().into_boxed_str())),
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            TimeFormat::Rfc3339 => "rfc3339",
            TimeFormat::EpochS => "epoch_s",
            TimeFormat::EpochMs => "epoch_ms",
            TimeFormat::EpochUs => "epoch_us",
            TimeFormat::EpochNs => "epoch_ns",
            TimeFormat::EpochSOrMs => "epoch_s_or_ms",
            TimeFormat::Pattern(pattern) => pattern,
        }
    }

    /// Units of this format in a second (none for text; an integer's for `EpochSOrMs`).
    fn per_second(self) -> Option<i64> {
        match self {
            TimeFormat::Rfc3339 | TimeFormat::Pattern(_) => None,
            TimeFormat::EpochSOrMs => Some(1_000),
            TimeFormat::EpochS => Some(1),
            TimeFormat::EpochMs => Some(1_000),
            TimeFormat::EpochUs => Some(1_000_000),
            TimeFormat::EpochNs => Some(1_000_000_000),
        }
    }

    /// A time written as text: RFC 3339 or an HTTP-date, or the epoch number the format says.
    pub fn parse_text(self, text: &str) -> Option<i64> {
        if let TimeFormat::Pattern(pattern) = self {
            return parse_pattern(text.trim(), pattern);
        }
        match self.per_second() {
            None => parse_rfc3339(text).or_else(|| parse_http_date(text)),
            Some(_) => {
                let t = text.trim();
                match t.parse::<i64>() {
                    Ok(v) => self.from_int(v),
                    Err(_) if t.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b'-') => self.from_float(t.parse().ok()?),
                    Err(_) => None,
                }
            }
        }
    }

    /// An integer in this format's unit, as microseconds; None out of range (or for text).
    pub fn from_int(self, value: i64) -> Option<i64> {
        let micros = match self.per_second()? {
            n if n <= 1_000_000 => value.checked_mul(1_000_000 / n)?,
            _ => value.div_euclid(1_000),
        };
        (MIN_MICROS..=MAX_MICROS).contains(&micros).then_some(micros)
    }

    /// A number with a fraction in this format's unit, as microseconds (rounded down).
    pub fn from_float(self, value: f64) -> Option<i64> {
        let per_second = if self == TimeFormat::EpochSOrMs { 1 } else { self.per_second()? };
        let micros = (value * 1_000_000.0 / per_second as f64).floor();
        (micros.is_finite() && micros >= MIN_MICROS as f64 && micros <= MAX_MICROS as f64).then_some(micros as i64)
    }
}

/// Text read with a strftime pattern: with an offset when the pattern has one, else as UTC.
fn parse_pattern(text: &str, pattern: &str) -> Option<i64> {
    let micros = match chrono::DateTime::parse_from_str(text, pattern) {
        Ok(t) => t.timestamp_micros(),
        Err(_) => chrono::NaiveDateTime::parse_from_str(text, pattern).ok()?.and_utc().timestamp_micros(),
    };
    (MIN_MICROS..=MAX_MICROS).contains(&micros).then_some(micros)
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/// An HTTP-date in any of RFC 7231's three forms — `Sun, 06 Nov 1994 08:49:37 GMT`,
/// `Sunday, 06-Nov-94 08:49:37 GMT`, `Sun Nov  6 08:49:37 1994` — or with a numeric zone
/// (`+0000`, RFC 5322); a two-digit year is 1970–2069.
pub fn parse_http_date(text: &str) -> Option<i64> {
    let t = text.trim();
    let (day_name, rest) = t.split_once([',', ' '])?;
    if !DAYS.contains(&day_name) && !LONG_DAYS.contains(&day_name) {
        return None;
    }
    let words: Vec<&str> = rest.split_ascii_whitespace().collect();
    let (year, month, day, clock, zone) = match words.as_slice() {
        // IMF-fixdate (and RFC 5322 with a numeric zone).
        [day, month, year, clock, zone] if year.len() == 4 => (digits(year.as_bytes())?, month_number(month)?, *day, *clock, Some(*zone)),
        // RFC 850: `06-Nov-94`.
        [date, clock, zone] => {
            let mut parts = date.split('-');
            let (day, month, year) = (parts.next()?, parts.next()?, parts.next()?);
            if parts.next().is_some() || year.len() != 2 {
                return None;
            }
            let yy = digits(year.as_bytes())?;
            (if yy < 70 { 2000 + yy } else { 1900 + yy }, month_number(month)?, day, *clock, Some(*zone))
        }
        // asctime: `Nov  6 08:49:37 1994`, no zone (GMT).
        [month, day, clock, year] if year.len() == 4 => (digits(year.as_bytes())?, month_number(month)?, *day, *clock, None),
        _ => return None,
    };
    let day = Some(day).filter(|d| (1..=2).contains(&d.len())).and_then(|d| digits(d.as_bytes())).filter(|d| *d >= 1 && *d <= days_in_month(year, month))?;
    let clock = clock.as_bytes();
    if clock.len() != 8 || clock[2] != b':' || clock[5] != b':' {
        return None;
    }
    let (h, m, s) = (digits(&clock[0..2])?, digits(&clock[3..5])?, digits(&clock[6..8])?);
    if h > 23 || m > 59 || s > 60 {
        return None;
    }
    let offset = match zone {
        None | Some("GMT" | "UTC" | "UT" | "Z") => 0,
        Some(z) if z.len() == 5 && (z.starts_with('+') || z.starts_with('-')) => {
            let (zh, zm) = (i64::from(digits(&z.as_bytes()[1..3])?), i64::from(digits(&z.as_bytes()[3..5])?));
            if zh > 23 || zm > 59 {
                return None;
            }
            let s = zh * 3600 + zm * 60;
            if z.starts_with('+') { s } else { -s }
        }
        Some(_) => return None,
    };
    let seconds = days_from_civil(i64::from(year), month, day) * 86_400 + i64::from(h * 3600 + m * 60 + s.min(59)) - offset;
    Some(seconds * 1_000_000)
}

fn month_number(name: &str) -> Option<u32> {
    MONTHS.iter().position(|m| *m == name).map(|i| i as u32 + 1)
}

/// The start of the period a file's hive partition folders name: `dt=`/`date=` (`2026-11-28`,
/// `20261128` or `2026-11-28-07`), else `year=`, `month=`, `day=`; then `hour=` and `minute=`
/// when present. None when the folders name no day.
pub fn partition_time(folders: &[(String, String)]) -> Option<i64> {
    let get = |name: &str| folders.iter().rev().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    let number = |name: &str, max: u32| get(name).filter(|v| (1..=4).contains(&v.len())).and_then(|v| digits(v.as_bytes()).filter(|n| *n <= max));
    let (year, month, day, mut hour) = match get("dt").or_else(|| get("date")) {
        Some(v) => {
            let b = v.as_bytes();
            match b.len() {
                10 | 13 if b[4] == b'-' && b[7] == b'-' && (b.len() == 10 || b[10] == b'-' || b[10] == b'T') => {
                    let hour = if b.len() == 13 { Some(digits(&b[11..13])?) } else { None };
                    (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?, hour)
                }
                8 => (digits(&b[0..4])?, digits(&b[4..6])?, digits(&b[6..8])?, None),
                _ => return None,
            }
        }
        None => (number("year", 9999)?, number("month", 12)?, number("day", 31)?, None),
    };
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    if let Some(h) = number("hour", 23) {
        hour = Some(h);
    }
    let minute = number("minute", 59).unwrap_or(0);
    let hour = hour.filter(|h| *h <= 23);
    let seconds = days_from_civil(i64::from(year), month, day) * 86_400 + i64::from(hour.unwrap_or(0) * 3600 + minute * 60);
    Some(seconds * 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::super::format_micros;

    #[test]
    fn numbers_typed_by_json_and_patterns_of_the_writers_own() {
        let f = TimeFormat::parse("epoch_s_or_ms").unwrap();
        // Sidekiq 7: float seconds; Sidekiq 8: integer milliseconds; the same instant.
        assert_eq!(f.from_float(1_790_812_800.5).map(format_micros).as_deref(), Some("2026-10-01T00:00:00.500Z"));
        assert_eq!(f.from_int(1_790_812_800_500).map(format_micros).as_deref(), Some("2026-10-01T00:00:00.500Z"));
        assert_eq!(f.parse_text("1790812800.5"), f.parse_text("1790812800500"));
        // NServiceBus's TimeOfFailure, `yyyy-MM-dd HH:mm:ss:ffffff Z`.
        let nsb = TimeFormat::parse("%Y-%m-%d %H:%M:%S:%6f Z").unwrap();
        assert_eq!(nsb.parse_text("2026-10-01 12:34:56:123456 Z").map(format_micros).as_deref(), Some("2026-10-01T12:34:56.123456Z"));
        assert_eq!(nsb.name(), "%Y-%m-%d %H:%M:%S:%6f Z");
        assert_eq!(nsb.parse_text("2026-10-01T12:34:56Z"), None);
        let zoned = TimeFormat::parse("%d/%m/%Y %H:%M %z").unwrap();
        assert_eq!(zoned.parse_text("01/10/2026 14:00 +0200").map(format_micros).as_deref(), Some("2026-10-01T12:00:00Z"));
        assert_eq!(TimeFormat::parse("epoch_minutes"), None);
    }

    #[test]
    fn seven_fraction_digits_read_as_dotnet_and_azure_write_them() {
        // MassTransit's "O" format and Event Grid's publishTime: 100 ns ticks, kept to the µs.
        assert_eq!(parse_rfc3339("2026-10-01T12:34:56.1234567Z").map(format_micros).as_deref(), Some("2026-10-01T12:34:56.123456Z"));
        assert_eq!(parse_rfc3339("2026-10-01T12:34:56.1234567+00:00"), parse_rfc3339("2026-10-01T12:34:56.123456Z"));
        assert_eq!(parse_rfc3339("2026-10-01T12:34:56.1Z").map(format_micros).as_deref(), Some("2026-10-01T12:34:56.100Z"));
    }

    use super::*;

    fn rfc(s: &str) -> i64 {
        parse_rfc3339(s).unwrap()
    }

    #[test]
    fn epoch_numbers_in_each_unit() {
        let t = rfc("2026-10-21T01:32:27.123456Z");
        assert_eq!(TimeFormat::EpochS.from_int(1_792_546_347), Some(rfc("2026-10-21T01:32:27Z")));
        assert_eq!(TimeFormat::EpochMs.from_int(1_792_546_347_123), Some(rfc("2026-10-21T01:32:27.123Z")));
        assert_eq!(TimeFormat::EpochUs.from_int(1_792_546_347_123_456), Some(t));
        assert_eq!(TimeFormat::EpochNs.from_int(1_792_546_347_123_456_789), Some(t));
        assert_eq!(TimeFormat::EpochMs.parse_text(" 1792546347123 "), Some(rfc("2026-10-21T01:32:27.123Z")));
        assert_eq!(TimeFormat::EpochS.parse_text("1792546347.5"), Some(rfc("2026-10-21T01:32:27.5Z")));
        assert_eq!(TimeFormat::EpochS.from_float(1_792_546_347.25), Some(rfc("2026-10-21T01:32:27.25Z")));
        assert_eq!(TimeFormat::EpochMs.from_int(-1), Some(-1000));
        assert_eq!(TimeFormat::EpochNs.from_int(-1), Some(-1), "nanoseconds round down");
        // Out of range or not a number: no time, never a wrapped one.
        assert_eq!(TimeFormat::EpochS.from_int(i64::MAX / 1000), None);
        assert_eq!(TimeFormat::EpochMs.from_int(9_200_000_000_000_000), None);
        assert_eq!(TimeFormat::EpochS.from_float(f64::NAN), None);
        assert_eq!(TimeFormat::EpochMs.parse_text("soon"), None);
        assert_eq!(TimeFormat::EpochMs.parse_text("2026-10-21T01:32:27Z"), None);
        assert_eq!(TimeFormat::Rfc3339.from_int(5), None);
    }

    #[test]
    fn http_dates_in_all_three_forms() {
        let want = rfc("1994-11-06T08:49:37Z");
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), Some(want));
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), Some(want));
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), Some(want));
        assert_eq!(parse_http_date("Wed, 21 Oct 2026 01:32:27 GMT"), Some(rfc("2026-10-21T01:32:27Z")));
        assert_eq!(parse_http_date("Wed, 21 Oct 2026 03:32:27 +0200"), Some(rfc("2026-10-21T01:32:27Z")));
        assert_eq!(TimeFormat::Rfc3339.parse_text("Wed, 02 Jul 2014 01:32:27 GMT"), Some(rfc("2014-07-02T01:32:27Z")));
        for bad in ["Sun, 31 Nov 1994 08:49:37 GMT", "Foo, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 24:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT", "Sun, 06 Nox 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 PST", ""] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn partition_folders_give_the_start_of_their_period() {
        let folders = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<Vec<_>>();
        assert_eq!(partition_time(&folders(&[("dt", "2026-11-28"), ("hour", "07")])), Some(rfc("2026-11-28T07:00:00Z")));
        assert_eq!(partition_time(&folders(&[("date", "20261128")])), Some(rfc("2026-11-28T00:00:00Z")));
        assert_eq!(partition_time(&folders(&[("dt", "2026-11-28-07")])), Some(rfc("2026-11-28T07:00:00Z")));
        assert_eq!(partition_time(&folders(&[("year", "2015"), ("month", "12"), ("day", "07"), ("hour", "15")])), Some(rfc("2015-12-07T15:00:00Z")));
        assert_eq!(partition_time(&folders(&[("partition", "3"), ("dt", "2026-02-28"), ("hour", "23"), ("minute", "45")])), Some(rfc("2026-02-28T23:45:00Z")));
        assert_eq!(partition_time(&folders(&[("dt", "2026-02-30")])), None);
        assert_eq!(partition_time(&folders(&[("partition", "3")])), None);
        assert_eq!(partition_time(&folders(&[("year", "2015"), ("month", "13"), ("day", "07")])), None);
    }
}
