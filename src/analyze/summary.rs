//! What a scan found per normalised signature and UTC hour: the form a partial state saves and
//! merges, from which rank, trend and health are drawn exactly for any window on whole hours.

use std::collections::BTreeMap;

use super::health::DailyCounts;
use super::periods::{Every, DAY};
use super::trend::Periods;
use super::{merge_into, FastMap, GroupStats};
use crate::source::layout::{Layout, RowFacts};
use crate::source::{Accumulator, Window};

/// Each signature's failures per UTC hour (keyed by the hour's start, in microseconds): count,
/// first failure (time, then smallest id) and last failure. Merging is exact and
/// order-independent, like the groups it is made of.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub signatures: BTreeMap<Vec<String>, BTreeMap<i64, GroupStats>>,
}

impl Summary {
    pub fn merge(&mut self, other: Summary) {
        for (values, hours) in other.signatures {
            let mine = self.signatures.entry(values).or_default();
            for (hour, stats) in hours {
                merge_into(mine, hour, stats);
            }
        }
    }

    /// Accepted failures.
    pub fn total(&self) -> u64 {
        self.signatures.values().flat_map(|h| h.values()).map(|s| s.count).sum()
    }

    /// Only the hours inside `window`; exact when its bounds are on whole hours (a failure lies
    /// inside exactly when its hour does).
    pub fn within(self, window: Window) -> Summary {
        if window.since.is_none() && window.until.is_none() {
            return self;
        }
        let signatures = self
            .signatures
            .into_iter()
            .filter_map(|(values, mut hours)| {
                hours.retain(|&hour, _| window.contains(hour));
                (!hours.is_empty()).then_some((values, hours))
            })
            .collect();
        Summary { signatures }
    }

    /// Each signature's hours merged: what `rank` orders.
    pub fn groups(&self) -> BTreeMap<Vec<String>, GroupStats> {
        let mut groups = BTreeMap::new();
        for (values, hours) in &self.signatures {
            for stats in hours.values() {
                merge_into(&mut groups, values.clone(), stats.clone());
            }
        }
        groups
    }

    /// Counts per signature per period of `every` (hours nest in days and Monday weeks).
    pub fn periods(&self, every: Every) -> Periods {
        let counts = self
            .signatures
            .iter()
            .map(|(values, hours)| {
                let mut periods: BTreeMap<i64, u64> = BTreeMap::new();
                for (&hour, stats) in hours {
                    *periods.entry(every.period_start(hour)).or_insert(0) += stats.count;
                }
                (values.clone(), periods)
            })
            .collect();
        Periods { every, counts }
    }

    /// Failures per UTC day.
    pub fn days(&self) -> DailyCounts {
        let mut days = DailyCounts::default();
        self.signatures.values().for_each(|hours| add_days(&mut days, hours));
        days
    }

    /// Failures per UTC day per value of signature field `part` (values already normalised).
    pub fn topic_days(&self, part: usize) -> BTreeMap<String, DailyCounts> {
        let mut topics: BTreeMap<String, DailyCounts> = BTreeMap::new();
        for (values, hours) in &self.signatures {
            add_days(topics.entry(values[part].clone()).or_default(), hours);
        }
        topics
    }
}

fn add_days(days: &mut DailyCounts, hours: &BTreeMap<i64, GroupStats>) {
    for (hour, stats) in hours {
        *days.days.entry(hour.div_euclid(DAY)).or_insert(0) += stats.count;
    }
}

/// The accumulator that makes a summary from dumps: groups by raw key and hour, normalised once
/// per distinct key by `finish`.
#[derive(Default)]
pub struct HourlyGroups {
    groups: FastMap<Box<[u8]>, FastMap<i64, GroupStats>>,
}

impl HourlyGroups {
    pub fn finish(self, layout: &Layout) -> Summary {
        let mut summary = Summary::default();
        for (key, hours) in self.groups {
            let mine = summary.signatures.entry(layout.finish_signature(&key)).or_default();
            for (hour, stats) in hours {
                merge_into(mine, hour, stats);
            }
        }
        summary
    }
}

impl Accumulator for HourlyGroups {
    fn add(&mut self, key: &[u8], row: &RowFacts) {
        let hour = Every::Hour.period_start(row.time);
        let hours = match self.groups.get_mut(key) {
            Some(hours) => hours,
            None => self.groups.entry(key.into()).or_default(),
        };
        match hours.get_mut(&hour) {
            Some(stats) => stats.observe(row.time, &row.id, 1, row.time),
            None => {
                hours.insert(hour, GroupStats::new(row));
            }
        }
    }

    fn merge(&mut self, other: Self) {
        for (key, hours) in other.groups {
            let mine = self.groups.entry(key).or_default();
            for (hour, stats) in hours {
                match mine.get_mut(&hour) {
                    Some(s) => s.merge(&stats),
                    None => {
                        mine.insert(hour, stats);
                    }
                }
            }
        }
    }
}
