//! What a scan found per normalised signature and UTC hour: the form a partial state saves and
//! merges, from which rank, trend and health are drawn exactly for any window on whole hours.

use std::collections::BTreeMap;

use super::health::DailyCounts;
use super::periods::{Every, DAY};
use super::trend::Periods;
use super::{merge_into, FastMap, GroupStats};
use crate::source::layout::{Layout, RowFacts};
use crate::source::{Accumulator, NumberedRows, Window};

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
        self.signatures.values().flat_map(|h| h.values()).fold(0u64, |sum, s| sum.saturating_add(s.count))
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
    pub(super) groups: FastMap<Box<[u8]>, FastMap<i64, GroupStats>>,
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

    fn add_numbered(&mut self, rows: &NumberedRows) {
        let mut numbered: Vec<FastMap<i64, GroupStats>> = vec![FastMap::default(); rows.keys.len()];
        for (r, n) in rows.accepted() {
            let (time, hours) = (rows.times[r], &mut numbered[n as usize]);
            let hour = Every::Hour.period_start(time);
            match hours.get_mut(&hour) {
                Some(stats) => stats.observe_numbered(time, || (rows.facts)(r)),
                None => {
                    hours.insert(hour, GroupStats::new(&(rows.facts)(r)));
                }
            }
        }
        for (key, hours) in rows.keys.iter().zip(numbered).filter(|(_, hours)| !hours.is_empty()) {
            let mine = match self.groups.get_mut(key.as_slice()) {
                Some(mine) => mine,
                None => self.groups.entry(key.as_slice().into()).or_default(),
            };
            merge_hours(mine, hours);
        }
    }

    fn merge(&mut self, other: Self) {
        for (key, hours) in other.groups {
            merge_hours(self.groups.entry(key).or_default(), hours);
        }
    }
}

/// Adds one key's hours to another's.
fn merge_hours(mine: &mut FastMap<i64, GroupStats>, hours: FastMap<i64, GroupStats>) {
    for (hour, stats) in hours {
        match mine.get_mut(&hour) {
            Some(s) => s.merge(&stats),
            None => {
                mine.insert(hour, stats);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::analyze::health::DailyCounts;
    use crate::analyze::trend::TrendGroups;
    use crate::analyze::SignatureGroups;
    use crate::source::layout::push_part;

    /// 2026-09-21T14:00:00Z, on the hour.
    const BASE: i64 = 1_789_999_200_000_000;

    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    /// Raw keys that normalise alike (case, spaces) and times over five days, some on the hour.
    fn rows(rng: &mut Rng, n: usize) -> Vec<(Vec<u8>, String, i64)> {
        let stages = ["Inference", "inference ", "ingestion"];
        let reasons = ["timeout", "TIMEOUT", "gpu_oom"];
        (0..n)
            .map(|_| {
                let mut key = Vec::new();
                push_part(&mut key, stages[rng.below(3) as usize]);
                push_part(&mut key, reasons[rng.below(3) as usize]);
                push_part(&mut key, " det-v8 ");
                let time = BASE + rng.below(5 * 24) as i64 * 3_600_000_000 + rng.below(4) as i64 * 1_799_999_999;
                (key, format!("cap-{}", rng.below(50)), time)
            })
            .collect()
    }

    fn fold<A: Accumulator>(rows: &[(Vec<u8>, String, i64)], mut acc: A, window: Window) -> A {
        for (key, id, time) in rows.iter().filter(|r| window.contains(r.2)) {
            acc.add(key, &RowFacts { id: Cow::Borrowed(id), time: *time, attempts: 0 });
        }
        acc
    }

    /// Rows split at random into summaries merged in any order give, for any window on whole
    /// hours, what the analyses' own accumulators give over the rows in the window.
    #[test]
    fn merged_summaries_equal_the_analyses_over_all_rows() {
        let layout = Layout::new(&crate::profile::Profile::load("vision").unwrap());
        let mut rng = Rng(3);
        for _ in 0..200 {
            let n = 1 + rng.below(300) as usize;
            let all = rows(&mut rng, n);
            let count = 1 + rng.below(6);
            let mut parts: Vec<HourlyGroups> = (0..count).map(|_| HourlyGroups::default()).collect();
            for row in &all {
                let part = rng.below(parts.len() as u64) as usize;
                parts[part] = fold(std::slice::from_ref(row), std::mem::take(&mut parts[part]), Window::default());
            }
            let mut merged = Summary::default();
            while !parts.is_empty() {
                let part = parts.swap_remove(rng.below(parts.len() as u64) as usize);
                merged.merge(part.finish(&layout));
            }
            let hour = |h: u64| Some(BASE + h as i64 * 3_600_000_000);
            let (since, until) = (rng.below(60), 60 + rng.below(60));
            let window = match rng.below(3) {
                0 => Window::default(),
                1 => Window { since: hour(since), until: None },
                _ => Window { since: hour(since), until: hour(until) },
            };
            let within = merged.clone().within(window);
            assert_eq!(within.groups(), fold(&all, SignatureGroups::default(), window).finish(&layout));
            for every in [Every::Hour, Every::Day, Every::Week] {
                assert_eq!(within.periods(every).counts, fold(&all, TrendGroups::new(every), window).finish(&layout).counts);
            }
            assert_eq!(within.days().days, fold(&all, DailyCounts::default(), window).days);
            assert_eq!(within.total(), all.iter().filter(|r| window.contains(r.2)).count() as u64);
        }
    }
}
