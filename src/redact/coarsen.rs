//! `--coarsen-times HOURS`: the failure time rounded down to a whole period, so a shared dump
//! does not tell when to the second a customer acted; written back in the format it was in.

use crate::timestamp::{format_micros, TimeFormat};

const HOUR_MICROS: i64 = 3_600_000_000;

/// Rounds a time down to a period of whole hours (from the epoch, in UTC).
#[derive(Clone, Copy, Debug)]
pub struct Coarsen {
    period: i64,
    format: TimeFormat,
}

impl Coarsen {
    pub fn new(hours: u32, format: TimeFormat) -> Coarsen {
        Coarsen { period: i64::from(hours.max(1)) * HOUR_MICROS, format }
    }

    fn floor(&self, micros: i64) -> i64 {
        micros - micros.rem_euclid(self.period)
    }

    /// A time's raw JSON value rounded down, in its own form (text in its format, a number in
    /// its unit, seconds with a fraction staying a number with one); None when it is not a
    /// time of the profile's format (it is then left as it is).
    pub fn value(&self, raw: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(raw).ok()?;
        if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
            let floored = self.floor(self.format.parse_text(inner)?);
            let written = match self.format {
                TimeFormat::Pattern(pattern) => chrono::DateTime::from_timestamp_micros(floored)?.format(pattern).to_string(),
                TimeFormat::Rfc3339 => format_micros(floored),
                _ => self.epoch(floored, inner.contains('.')),
            };
            return Some(serde_json::to_vec(&written).expect("strings serialise"));
        }
        let micros = match text.parse::<i64>() {
            Ok(v) => self.format.from_int(v)?,
            Err(_) => self.format.from_float(text.parse().ok()?)?,
        };
        Some(self.epoch(self.floor(micros), text.contains(['.', 'e', 'E'])).into_bytes())
    }

    /// Microseconds as the format's epoch number (a fraction kept as `.0` where it had one).
    fn epoch(&self, micros: i64, fraction: bool) -> String {
        let per_second = match self.format {
            TimeFormat::EpochSOrMs if fraction => 1,
            TimeFormat::EpochSOrMs => 1_000,
            TimeFormat::EpochS => 1,
            TimeFormat::EpochMs => 1_000,
            TimeFormat::EpochUs => 1_000_000,
            _ => 1_000_000_000,
        };
        let value = if per_second <= 1_000_000 { micros / (1_000_000 / per_second) } else { micros * 1_000 };
        if fraction { format!("{value}.0") } else { value.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_is_rounded_down_in_its_own_form() {
        let day = Coarsen::new(24, TimeFormat::Rfc3339);
        assert_eq!(day.value(br#""2026-11-08T16:55:29.123Z""#).unwrap(), br#""2026-11-08T00:00:00Z""#);
        assert_eq!(day.value(br#""2026-11-08T16:55:29+02:00""#).unwrap(), br#""2026-11-08T00:00:00Z""#);
        let hours = Coarsen::new(6, TimeFormat::EpochMs);
        assert_eq!(hours.value(b"1700000000000").unwrap(), b"1699984800000");
        assert_eq!(hours.value(br#""1700000000000""#).unwrap(), br#""1699984800000""#);
        let sidekiq = Coarsen::new(1, TimeFormat::EpochSOrMs);
        assert_eq!(sidekiq.value(b"1700000000.123456").unwrap(), b"1699999200.0", "float seconds stay seconds");
        assert_eq!(sidekiq.value(b"1700000000123").unwrap(), b"1699999200000", "integer milliseconds stay milliseconds");
        let pattern = Coarsen::new(1, TimeFormat::Pattern("%Y-%m-%d %H:%M:%S:%6f Z"));
        assert_eq!(pattern.value(br#""2026-11-08 16:55:29:123456 Z""#).unwrap(), br#""2026-11-08 16:00:00:000000 Z""#);
        assert_eq!(day.value(br#""yesterday""#), None);
    }
}
