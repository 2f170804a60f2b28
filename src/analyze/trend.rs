//! `trend`: failures per signature per UTC-aligned period, and whether each cause is new,
//! rising, steady, falling or resolved, so a nightly run says what changed and not only what is big.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub use super::periods::{check_span, Every};
use super::periods::DAY;
use super::FastMap;
use crate::signature::Signature;
use crate::source::layout::{Layout, RowFacts};
use crate::source::{Accumulator, NumberedRows};
use crate::timestamp;

pub const REPORT_ID: &str = "dlqf.trend/1";
pub const DEFAULT_WINDOW: usize = 7;

/// Counts per raw signature key per period start.
pub struct TrendGroups {
    every: Every,
    pub groups: FastMap<Box<[u8]>, FastMap<i64, u64>>,
}

impl TrendGroups {
    pub fn new(every: Every) -> TrendGroups {
        TrendGroups { every, groups: FastMap::default() }
    }

    /// The counts under their normalised signature values.
    pub fn finish(self, layout: &Layout) -> Periods {
        let mut counts: BTreeMap<Vec<String>, BTreeMap<i64, u64>> = BTreeMap::new();
        for (key, periods) in self.groups {
            let merged = counts.entry(layout.finish_signature(&key)).or_default();
            for (period, n) in periods {
                *merged.entry(period).or_insert(0) += n;
            }
        }
        Periods { every: self.every, counts }
    }
}

/// Counts per normalised signature per period start: what a trend is drawn from.
pub struct Periods {
    pub every: Every,
    pub counts: BTreeMap<Vec<String>, BTreeMap<i64, u64>>,
}

impl Periods {
    /// The period length that suits the span of the data, for a report that must choose one:
    /// hours up to 3 days, days up to 26 weeks, weeks beyond.
    pub fn fitting_every(&self) -> Every {
        let starts = self.counts.values().flat_map(|p| p.keys().copied());
        let (first, last) = starts.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
        match last.saturating_sub(first) {
            span if span <= 3 * DAY => Every::Hour,
            span if span <= 26 * 7 * DAY => Every::Day,
            _ => Every::Week,
        }
    }

    /// The same counts in longer periods (hours nest in days, days in weeks).
    pub fn coarsen(self, every: Every) -> Periods {
        let counts = self
            .counts
            .into_iter()
            .map(|(values, periods)| {
                let mut coarse: BTreeMap<i64, u64> = BTreeMap::new();
                for (start, n) in periods {
                    *coarse.entry(every.period_start(start)).or_insert(0) += n;
                }
                (values, coarse)
            })
            .collect();
        Periods { every, counts }
    }
}

impl Accumulator for TrendGroups {
    fn add(&mut self, key: &[u8], row: &RowFacts) {
        let period = self.every.period_start(row.time);
        match self.groups.get_mut(key) {
            Some(periods) => *periods.entry(period).or_insert(0) += 1,
            None => {
                self.groups.insert(key.into(), FastMap::from_iter([(period, 1)]));
            }
        }
    }

    fn add_numbered(&mut self, rows: &NumberedRows) {
        let mut numbered: Vec<FastMap<i64, u64>> = vec![FastMap::default(); rows.keys.len()];
        for (r, n) in rows.accepted() {
            *numbered[n as usize].entry(self.every.period_start(rows.times[r])).or_insert(0) += 1;
        }
        for (key, counted) in rows.keys.iter().zip(numbered).filter(|(_, counted)| !counted.is_empty()) {
            let periods = match self.groups.get_mut(key.as_slice()) {
                Some(periods) => periods,
                None => self.groups.entry(key.as_slice().into()).or_default(),
            };
            add_periods(periods, counted);
        }
    }

    fn merge(&mut self, other: Self) {
        for (key, periods) in other.groups {
            add_periods(self.groups.entry(key).or_default(), periods);
        }
    }
}

/// Adds one key's counts per period to another's.
fn add_periods(mine: &mut FastMap<i64, u64>, periods: FastMap<i64, u64>) {
    for (period, n) in periods {
        *mine.entry(period).or_insert(0) += n;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    New,
    Rising,
    Steady,
    Falling,
    Resolved,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::New => "new",
            Status::Rising => "rising",
            Status::Steady => "steady",
            Status::Falling => "falling",
            Status::Resolved => "resolved",
        }
    }

    /// Compares the last `window` periods with the `window` before them: `resolved` when the
    /// recent window is empty, `new` when nothing came before it, `rising`/`falling` at a
    /// factor of at least 1.5 either way, else `steady`. When fewer than `window` periods come
    /// before, the rates per period are compared, so a flat series is steady.
    pub fn of(counts: &[u64], window: usize) -> Status {
        let split = counts.len().saturating_sub(window);
        let (earlier, recent) = counts.split_at(split);
        let before = &earlier[earlier.len().saturating_sub(window)..];
        // recent/len(recent) against before/len(before), cross-multiplied to stay in integers.
        let recent_scaled = u128::from(recent.iter().sum::<u64>()) * before.len() as u128;
        let before_scaled = u128::from(before.iter().sum::<u64>()) * recent.len() as u128;
        if recent.iter().all(|&n| n == 0) {
            Status::Resolved
        } else if earlier.iter().all(|&n| n == 0) {
            Status::New
        } else if 2 * recent_scaled >= 3 * before_scaled {
            Status::Rising
        } else if 2 * before_scaled >= 3 * recent_scaled {
            Status::Falling
        } else {
            Status::Steady
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TrendReport {
    pub report: String,
    pub every: Every,
    pub periods: Vec<String>,
    pub series: Vec<Series>,
    /// How many periods the status compares (not part of the JSON contract).
    #[serde(skip, default)]
    pub window: usize,
    #[serde(skip, default)]
    pub profile: String,
    #[serde(skip, default)]
    pub signature_fields: Vec<String>,
    /// Whether people's formats add a category column (not when the signature holds it).
    #[serde(skip, default)]
    pub category_column: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Series {
    pub signature: Signature,
    pub counts: Vec<u64>,
    pub total: u64,
    pub status: Status,
    /// The cause's error category (see `profile::classify`).
    #[serde(default)]
    pub category: String,
}

impl Series {
    /// Failures in the last `window` periods.
    pub fn recent(&self, window: usize) -> u64 {
        self.counts[self.counts.len().saturating_sub(window)..].iter().sum()
    }
}

pub struct TrendOptions {
    pub profile: String,
    pub signature_fields: Vec<String>,
    pub every: Every,
    pub window: usize,
    pub category_column: bool,
}

/// Lays every series over the same contiguous periods (from the first failure's period to
/// the last's) and orders series as `rank` orders buckets.
pub fn build(periods: Periods, layout: &Layout, options: &TrendOptions) -> Result<TrendReport> {
    debug_assert_eq!(periods.every, options.every);
    let by_signature = periods.counts;
    let first = by_signature.values().filter_map(|p| p.keys().next()).min().copied();
    let last = by_signature.values().filter_map(|p| p.keys().next_back()).max().copied();
    let starts: Vec<i64> = match (first, last) {
        (Some(first), Some(last)) => {
            check_span(first, last, options.every)?;
            (0..).map(|i| first + i * options.every.length()).take_while(|&t| t <= last).collect()
        }
        _ => Vec::new(),
    };
    let index = |period: i64| ((period - starts[0]) / options.every.length()) as usize;
    let mut series: Vec<Series> = by_signature
        .into_iter()
        .map(|(values, periods)| {
            let mut counts = vec![0u64; starts.len()];
            for (period, n) in periods {
                counts[index(period)] += n;
            }
            let total = counts.iter().sum();
            let status = Status::of(&counts, options.window);
            let category = layout.category_of(&values);
            Series { signature: Signature::new(&options.signature_fields, &values), counts, total, status, category }
        })
        .collect();
    // Stable sort over signature order: count descending, then signature values ascending.
    series.sort_by_key(|s| std::cmp::Reverse(s.total));
    Ok(TrendReport {
        report: REPORT_ID.into(),
        every: options.every,
        periods: starts.iter().map(|&t| timestamp::format_micros(t)).collect(),
        series,
        window: options.window,
        profile: options.profile.clone(),
        signature_fields: options.signature_fields.clone(),
        category_column: options.category_column,
    })
}

impl TrendReport {
    /// A trend with no periods (nothing to draw).
    pub fn empty(every: Every) -> TrendReport {
        TrendReport { report: REPORT_ID.into(), every, periods: Vec::new(), series: Vec::new(), window: DEFAULT_WINDOW, profile: String::new(), signature_fields: Vec::new(), category_column: false }
    }
}

/// The trend a page draws beside a ranking: the hourly counts coarsened to the period length
/// that suits their span. A span too long to lay out gives no periods, and the reason.
pub fn for_page(hourly: Periods, layout: &Layout, options: TrendOptions, by_category: bool) -> (TrendReport, Option<anyhow::Error>) {
    let every = hourly.fitting_every();
    let options = TrendOptions { every, ..options };
    let (trend, why) = match build(hourly.coarsen(every), layout, &options) {
        Ok(trend) => (trend, None),
        Err(e) => (TrendReport::empty(every), Some(e)),
    };
    (if by_category { self::by_category(trend) } else { trend }, why)
}

/// The series merged by error category (one series per category, its signature the category).
pub fn by_category(report: TrendReport) -> TrendReport {
    let mut merged: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for s in report.series {
        let counts = merged.entry(s.category).or_insert_with(|| vec![0; s.counts.len()]);
        counts.iter_mut().zip(&s.counts).for_each(|(a, b)| *a += b);
    }
    let fields = vec!["category".to_string()];
    let mut series: Vec<Series> = merged
        .into_iter()
        .map(|(category, counts)| Series {
            signature: Signature::new(&fields, std::slice::from_ref(&category)),
            total: counts.iter().sum(),
            status: Status::of(&counts, report.window),
            counts,
            category,
        })
        .collect();
    series.sort_by_key(|s| std::cmp::Reverse(s.total));
    TrendReport { series, signature_fields: fields, category_column: false, ..report }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_compares_the_recent_window_with_the_one_before() {
        assert_eq!(Status::of(&[0, 0, 0, 1, 2], 2), Status::New);
        assert_eq!(Status::of(&[3, 1, 2, 0, 0], 2), Status::Resolved);
        assert_eq!(Status::of(&[9, 2, 2, 3, 3], 2), Status::Rising); // 6 vs 4: exactly 1.5×
        assert_eq!(Status::of(&[0, 3, 3, 2, 2], 2), Status::Falling); // 4 vs 6
        assert_eq!(Status::of(&[0, 3, 3, 3, 2], 2), Status::Steady); // 5 vs 6
        assert_eq!(Status::of(&[5, 0, 0, 0, 1], 2), Status::Rising); // seen before, not just before
        assert_eq!(Status::of(&[4, 4], 7), Status::New); // fewer periods than the window
        assert_eq!(Status::of(&[1; 10], 7), Status::Steady); // 7 in 7 periods vs 3 in 3
        assert_eq!(Status::of(&[1, 1, 1, 2, 2, 2, 1, 2, 2, 1], 7), Status::Rising); // 12/7 vs 3/3: 1.71×
        assert_eq!(Status::of(&[3, 3, 3, 2, 2, 2, 2, 2, 2, 2], 7), Status::Falling); // 14/7 vs 9/3
    }

}
