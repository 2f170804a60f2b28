//! The calendar every time series shares: UTC-aligned hours, days and Monday weeks, and the
//! longest span worth laying out (trend and health both count per period).

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::timestamp;

/// More periods than this is almost always one wrong timestamp far from the rest.
pub const MAX_PERIODS: i64 = 100_000;

pub const HOUR: i64 = 3_600_000_000;
pub const DAY: i64 = 24 * HOUR;
/// 1970-01-01 was a Thursday; weeks start on Monday (ISO 8601), three days earlier.
const MONDAY_OFFSET: i64 = 3 * DAY;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Every {
    Hour,
    Day,
    Week,
}

impl Every {
    pub const NAMES: &'static [&'static str] = &["hour", "day", "week"];

    pub fn from_name(name: &str) -> Option<Every> {
        match name {
            "hour" => Some(Every::Hour),
            "day" => Some(Every::Day),
            "week" => Some(Every::Week),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Every::Hour => "hour",
            Every::Day => "day",
            Every::Week => "week",
        }
    }

    /// A period's length in microseconds.
    pub fn length(self) -> i64 {
        match self {
            Every::Hour => HOUR,
            Every::Day => DAY,
            Every::Week => 7 * DAY,
        }
    }

    /// The start of the period holding `micros` (UTC; weeks start on Monday).
    pub fn period_start(self, micros: i64) -> i64 {
        let shift = if self == Every::Week { MONDAY_OFFSET } else { 0 };
        (micros + shift).div_euclid(self.length()) * self.length() - shift
    }
}

/// Refuses a span of more than `MAX_PERIODS` periods of `every`, naming its ends.
pub fn check_span(first: i64, last: i64, every: Every) -> Result<()> {
    let periods = last.saturating_sub(first) / every.length() + 1;
    if periods > MAX_PERIODS {
        bail!(
            "failures span {} to {}: {periods} {}s, more than {MAX_PERIODS}. A timestamp is probably wrong \
             (rank shows each cause's first_seen, last_seen and example_id); narrow the span with --since/--until",
            timestamp::format_micros(first),
            timestamp::format_micros(last),
            every.name()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_align_to_utc_hours_days_and_monday_weeks() {
        let t = timestamp::parse_rfc3339("2026-11-12T13:45:10Z").unwrap(); // a Thursday
        let at = |s: &str| timestamp::parse_rfc3339(s).unwrap();
        assert_eq!(Every::Hour.period_start(t), at("2026-11-12T13:00:00Z"));
        assert_eq!(Every::Day.period_start(t), at("2026-11-12T00:00:00Z"));
        assert_eq!(Every::Week.period_start(t), at("2026-11-09T00:00:00Z"));
        assert_eq!(Every::Week.period_start(at("2026-11-09T00:00:00Z")), at("2026-11-09T00:00:00Z"));
        assert_eq!(Every::Week.period_start(at("2026-11-08T23:59:59Z")), at("2026-11-02T00:00:00Z"));
        assert_eq!(Every::Day.period_start(at("1969-12-31T23:00:00Z")), at("1969-12-31T00:00:00Z"));
    }
}
