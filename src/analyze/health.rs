//! `health`: the seed's DLQMonitor over an archive: depth, failures per UTC day, growth per day
//! over the recent days, and a healthy/warning/critical status, for the whole and per topic.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::rank::share;
use super::periods::{self, Every, DAY};
use super::FastMap;
use crate::source::layout::{split_parts, Layout, RowFacts};
use crate::source::Accumulator;

pub const REPORT_ID: &str = "dlqf.health/1";
/// The seed's `DLQConfig`: `dlq_alert_threshold` and `dlq_critical_threshold`.
pub const DEFAULT_WARN: u64 = 100;
pub const DEFAULT_CRITICAL: u64 = 1000;
pub const DEFAULT_WINDOW_DAYS: usize = 7;

/// Accepted failures per UTC day (keyed by days since 1970-01-01).
#[derive(Default)]
pub struct DailyCounts {
    pub days: FastMap<i64, u64>,
}

impl Accumulator for DailyCounts {
    fn add(&mut self, _signature_key: &[u8], row: &RowFacts) {
        *self.days.entry(row.time.div_euclid(DAY)).or_insert(0) += 1;
    }

    fn merge(&mut self, other: Self) {
        for (day, n) in other.days {
            *self.days.entry(day).or_insert(0) += n;
        }
    }
}

/// Failures per UTC day of each value of one signature field (the DLQ topic), keyed by the
/// value as read; `Layout::finish_part` normalises it when the report is built.
pub struct TopicDays {
    /// The field's position in the signature.
    pub part: usize,
    pub topics: FastMap<String, DailyCounts>,
}

impl TopicDays {
    pub fn new(part: usize) -> TopicDays {
        TopicDays { part, topics: FastMap::default() }
    }
}

impl TopicDays {
    /// The counts under each topic's normalised value (raw values that normalise alike merge).
    pub fn finish(self, layout: &Layout) -> BTreeMap<String, DailyCounts> {
        let mut merged: BTreeMap<String, DailyCounts> = BTreeMap::new();
        for (raw, counts) in self.topics {
            merged.entry(layout.finish_part(self.part, &raw)).or_default().merge(counts);
        }
        merged
    }
}

impl Accumulator for TopicDays {
    fn add(&mut self, signature_key: &[u8], row: &RowFacts) {
        let topic = split_parts(signature_key).nth(self.part).expect("the key has every signature part");
        if let Some(days) = self.topics.get_mut(topic) {
            return days.add(signature_key, row);
        }
        self.topics.entry(topic.to_string()).or_default().add(signature_key, row);
    }

    fn merge(&mut self, other: Self) {
        for (topic, days) in other.topics {
            self.topics.entry(topic).or_default().merge(days);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Healthy,
    Warning,
    Critical,
}

impl Status {
    pub fn of(depth: u64, warn: u64, critical: u64) -> Status {
        if depth >= critical {
            Status::Critical
        } else if depth >= warn {
            Status::Warning
        } else {
            Status::Healthy
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Status::Healthy => "healthy",
            Status::Warning => "warning",
            Status::Critical => "critical",
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct HealthReport {
    pub report: String,
    pub depth: u64,
    pub per_day: Vec<DayCount>,
    /// Mean failures per day over the last `window_days` days of `per_day` (all of them when
    /// there are fewer), rounded to 4 decimals: how fast the archive is growing now.
    pub growth_per_day: f64,
    pub status: Status,
    pub warn: u64,
    pub critical: u64,
    pub window_days: usize,
    pub rejected: u64,
    /// The field the topics are values of (with `--by`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// Each topic's health, exactly as the whole is computed but over its failures alone;
    /// depth descending, then name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topics: Option<Vec<TopicHealth>>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TopicHealth {
    pub topic: String,
    pub depth: u64,
    pub per_day: Vec<DayCount>,
    pub growth_per_day: f64,
    pub status: Status,
}

impl HealthReport {
    /// Whether the whole or any topic is critical.
    pub fn any_critical(&self) -> bool {
        self.status == Status::Critical || self.topics.iter().flatten().any(|t| t.status == Status::Critical)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DayCount {
    pub day: String,
    pub count: u64,
}

pub struct HealthOptions {
    pub warn: u64,
    pub critical: u64,
    pub window_days: usize,
}

/// The whole's health, and each topic's when `topics` is given (with the field's name and
/// the counts per normalised topic).
pub fn build(counts: DailyCounts, topics: Option<(String, BTreeMap<String, DailyCounts>)>, rejected: u64, options: &HealthOptions) -> anyhow::Result<HealthReport> {
    let whole = TopicHealth::of(String::new(), &counts, options)?;
    let (by, topics) = match topics {
        Some((field, merged)) => {
            let mut topics = merged.into_iter().map(|(topic, counts)| TopicHealth::of(topic, &counts, options)).collect::<anyhow::Result<Vec<_>>>()?;
            topics.sort_by(|a, b| b.depth.cmp(&a.depth).then_with(|| a.topic.cmp(&b.topic)));
            (Some(field), Some(topics))
        }
        None => (None, None),
    };
    Ok(HealthReport {
        report: REPORT_ID.into(),
        depth: whole.depth,
        per_day: whole.per_day,
        growth_per_day: whole.growth_per_day,
        status: whole.status,
        warn: options.warn,
        critical: options.critical,
        window_days: options.window_days,
        rejected,
        by,
        topics,
    })
}

impl TopicHealth {
    /// Lays the counts over every day from the first failure to the last (empty days count 0).
    fn of(topic: String, counts: &DailyCounts, options: &HealthOptions) -> anyhow::Result<TopicHealth> {
        let per_day: Vec<DayCount> = match (counts.days.keys().min().copied(), counts.days.keys().max().copied()) {
            (Some(first), Some(last)) => {
                periods::check_span(first * DAY, last * DAY, Every::Day)?;
                (first..=last).map(|day| DayCount { day: day_name(day), count: counts.days.get(&day).copied().unwrap_or(0) }).collect()
            }
            _ => Vec::new(),
        };
        let depth = per_day.iter().map(|d| d.count).sum();
        let recent = &per_day[per_day.len().saturating_sub(options.window_days)..];
        let growth_per_day = share(recent.iter().map(|d| d.count).sum(), recent.len() as u64);
        Ok(TopicHealth { topic, depth, per_day, growth_per_day, status: Status::of(depth, options.warn, options.critical) })
    }
}

/// `YYYY-MM-DD` for days since 1970-01-01.
fn day_name(day: i64) -> String {
    crate::timestamp::format_micros(day * DAY)[..10].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_are_inclusive_like_the_seed_monitor() {
        assert_eq!(Status::of(99, 100, 1000), Status::Healthy);
        assert_eq!(Status::of(100, 100, 1000), Status::Warning);
        assert_eq!(Status::of(999, 100, 1000), Status::Warning);
        assert_eq!(Status::of(1000, 100, 1000), Status::Critical);
    }

    #[test]
    fn days_are_contiguous_and_growth_is_the_recent_mean() {
        let mut counts = DailyCounts::default();
        counts.days.extend([(20_000, 4), (20_003, 2), (20_004, 1)]);
        let report = build(counts, None, 0, &HealthOptions { warn: 5, critical: 100, window_days: 2 }).unwrap();
        let days: Vec<(&str, u64)> = report.per_day.iter().map(|d| (d.day.as_str(), d.count)).collect();
        assert_eq!(days, [("2024-10-04", 4), ("2024-10-05", 0), ("2024-10-06", 0), ("2024-10-07", 2), ("2024-10-08", 1)]);
        assert_eq!(report.depth, 7);
        assert_eq!(report.growth_per_day, 1.5);
        assert_eq!(report.status, Status::Warning);
    }
}
