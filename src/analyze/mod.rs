//! Analyses over scanned rows. Rows are grouped on their raw signature first (few distinct
//! values among millions of rows); normalisation then runs once per distinct raw tuple.

pub mod diff;
pub mod explain;
pub mod health;
pub mod periods;
pub mod rank;
pub mod sql;
pub mod summary;
pub mod trend;

use std::collections::{BTreeMap, HashMap};

use crate::source::layout::{Layout, RowFacts};
use crate::source::{Accumulator, NumberedRows};

pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Count, first failure (time, then smallest id) and last failure of one group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupStats {
    pub count: u64,
    pub first_time: i64,
    pub first_id: String,
    pub last_time: i64,
}

impl GroupStats {
    pub(crate) fn new(row: &RowFacts) -> GroupStats {
        GroupStats { count: 1, first_time: row.time, first_id: row.id.to_string(), last_time: row.time }
    }

    pub(crate) fn observe(&mut self, time: i64, id: &str, count: u64, last_time: i64) {
        // Saturating: counts from states are checked on reading, but never wrap.
        self.count = self.count.saturating_add(count);
        if time < self.first_time || (time == self.first_time && id < self.first_id.as_str()) {
            self.first_time = time;
            self.first_id.clear();
            self.first_id.push_str(id);
        }
        self.last_time = self.last_time.max(last_time);
    }

    pub fn merge(&mut self, other: &GroupStats) {
        self.observe(other.first_time, &other.first_id, other.count, other.last_time);
    }

    /// A row that cannot be its bucket's first failure (an earlier one is known): counted,
    /// with no first failure of its own.
    fn later(time: i64) -> GroupStats {
        GroupStats { count: 1, first_time: i64::MAX, first_id: String::new(), last_time: time }
    }

    /// `observe` for a row that cannot be the first failure.
    fn count_later(&mut self, time: i64) {
        self.count += 1;
        self.last_time = self.last_time.max(time);
    }

    /// `observe` for one row of a source's numbered rows: `row` (its id) is fetched only when
    /// the row can be the first failure.
    pub(crate) fn observe_numbered<'r>(&mut self, time: i64, row: impl FnOnce() -> RowFacts<'r>) {
        if time > self.first_time {
            self.count_later(time);
        } else {
            self.observe(time, &row().id, 1, time);
        }
    }
}

/// Rows grouped by their signature key as the source produced it (before deferred
/// normalisation).
///
/// A group's first failure is right only where it can be its bucket's: a row handed over by
/// number that is later than a failure already met in its bucket (its normalised signature)
/// is only counted, so that its id, which a source may read only when asked, is not asked for.
/// `finish` gives every bucket its first failure.
#[derive(Default)]
pub struct SignatureGroups {
    pub groups: FastMap<Box<[u8]>, GroupStats>,
}

impl SignatureGroups {
    /// A key's first row: rare (a dump has a few hundred keys), so kept out of `add`.
    #[cold]
    #[inline(never)]
    fn start_group(&mut self, key: &[u8], row: &RowFacts) {
        self.groups.insert(key.into(), GroupStats::new(row));
    }

    /// The groups under their normalised signature values (raw keys that normalise alike merge).
    pub fn finish(self, layout: &Layout) -> BTreeMap<Vec<String>, GroupStats> {
        let mut buckets: BTreeMap<Vec<String>, GroupStats> = BTreeMap::new();
        for (key, stats) in self.groups {
            merge_into(&mut buckets, layout.finish_signature(&key), stats);
        }
        buckets
    }
}

/// Adds one group's stats to the bucket of `key`.
pub(crate) fn merge_into<K: Ord>(buckets: &mut BTreeMap<K, GroupStats>, key: K, stats: GroupStats) {
    match buckets.get_mut(&key) {
        Some(b) => b.merge(&stats),
        None => {
            buckets.insert(key, stats);
        }
    }
}

impl Accumulator for SignatureGroups {
    fn add(&mut self, key: &[u8], row: &RowFacts) {
        match self.groups.get_mut(key) {
            Some(g) => g.observe(row.time, &row.id, 1, row.time),
            None => self.start_group(key, row),
        }
    }

    fn add_numbered(&mut self, rows: &NumberedRows) {
        let buckets = rows.first_times.of(rows.keys, rows.layout);
        let mut numbered: Vec<Option<GroupStats>> = vec![None; rows.keys.len()];
        for (r, n) in rows.accepted() {
            let (time, n) = (rows.times[r], n as usize);
            let later = time > buckets[n].1;
            match &mut numbered[n] {
                Some(g) if later => g.count_later(time),
                Some(g) => g.observe_numbered(time, || (rows.facts)(r)),
                none if later => *none = Some(GroupStats::later(time)),
                none => *none = Some(GroupStats::new(&(rows.facts)(r))),
            }
        }
        rows.first_times.lower(numbered.iter().zip(&buckets).filter_map(|(stats, &(bucket, _))| Some((bucket, stats.as_ref()?.first_time))));
        for (key, stats) in rows.keys.iter().zip(numbered) {
            match (self.groups.get_mut(key.as_slice()), stats) {
                (_, None) => {}
                (Some(g), Some(stats)) => g.merge(&stats),
                (None, Some(stats)) => {
                    self.groups.insert(key.as_slice().into(), stats);
                }
            }
        }
    }

    fn merge(&mut self, other: Self) {
        for (key, stats) in other.groups {
            match self.groups.get_mut(&key) {
                Some(g) => g.merge(&stats),
                None => {
                    self.groups.insert(key, stats);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;

    fn row(id: &str, time: i64) -> RowFacts<'_> {
        RowFacts { id: Cow::Borrowed(id), time, attempts: 0 }
    }

    #[test]
    fn first_failure_is_earliest_then_smallest_id_in_any_order() {
        let rows = [row("c", 5), row("b", 3), row("z", 3), row("a", 9), row("y", 3)];
        let mut forward = SignatureGroups::default();
        rows.iter().for_each(|r| forward.add(b"k", r));
        let mut split_a = SignatureGroups::default();
        let mut split_b = SignatureGroups::default();
        rows.iter().rev().enumerate().for_each(|(i, r)| if i % 2 == 0 { split_a.add(b"k", r) } else { split_b.add(b"k", r) });
        split_b.merge(split_a);
        let expected = GroupStats { count: 5, first_time: 3, first_id: "b".into(), last_time: 9 };
        assert_eq!(forward.groups[&b"k"[..]], expected);
        assert_eq!(split_b.groups[&b"k"[..]], expected);
    }

    /// Rows handed over by number to parts that share what they met (two parts, rows in turn;
    /// keys that normalise alike; several rows at a bucket's earliest time, with other ids)
    /// give every bucket the first failure that adding each row with its id gives, while ids
    /// are asked for only of rows not later than what their bucket had met.
    #[test]
    fn rows_later_than_their_buckets_earliest_are_counted_without_their_ids() {
        let layout = Layout::new(&crate::profile::Profile::load("vision").unwrap());
        let keys = vec![key("Inference", "Timeout", "v1"), key("inference", "timeout", "v1"), key("ingestion", "timeout", "v1")];
        let mut state = 5u64;
        let mut next = |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let ids: Vec<String> = (0..4000).map(|i| format!("id-{:04}", (i * 7919) % 4000)).collect();
        // Times fall in 400 hours, so rows share a bucket's earliest.
        let rows: Vec<(u32, RowFacts)> = ids.iter().map(|id| (next(3) as u32, row(id, next(400) as i64 * 3_600_000_000))).collect();
        let mut one = SignatureGroups::default();
        rows.iter().for_each(|(n, r)| one.add(&keys[*n as usize], r));
        // Groups of 250 rows, handed to two parts in turn, sharing what they met or not.
        let by_parts = |shared: bool| {
            let first_times = crate::source::FirstTimes::default();
            let asked = std::cell::Cell::new(0);
            let (mut even, mut odd) = (SignatureGroups::default(), SignatureGroups::default());
            for (g, group) in rows.chunks(250).enumerate() {
                let numbers: Vec<u32> = group.iter().map(|(n, _)| *n).collect();
                let times: Vec<i64> = group.iter().map(|(_, r)| r.time).collect();
                let facts = |i: usize| {
                    asked.set(asked.get() + 1);
                    group[i].1.clone()
                };
                let alone = crate::source::FirstTimes::default();
                let first_times = if shared { &first_times } else { &alone };
                let numbered = NumberedRows { layout: &layout, first_times, keys: &keys, numbers: &numbers, times: &times, facts: &facts };
                if g % 2 == 0 { even.add_numbered(&numbered) } else { odd.add_numbered(&numbered) }
            }
            even.merge(odd);
            (even.finish(&layout), asked.get())
        };
        let want = one.finish(&layout);
        let ((shared, asked_shared), (alone, asked_alone)) = (by_parts(true), by_parts(false));
        assert_eq!(shared, want);
        assert_eq!(alone, want);
        assert_eq!(want.len(), 2);
        assert!(asked_shared * 3 < asked_alone, "ids asked for: {asked_shared} sharing, {asked_alone} not");
    }

    /// A key of the vision profile's three signature parts.
    fn key(stage: &str, reason: &str, revision: &str) -> Vec<u8> {
        let mut key = Vec::new();
        for part in [stage, reason, revision] {
            crate::source::layout::push_part(&mut key, part);
        }
        key
    }

    /// Rows handed over with key numbers (some keys already known, one never used, a row not
    /// accepted) end as they do added one by one, for rank's groups, trend's periods and the
    /// hourly groups of a partial state.
    #[test]
    fn numbered_rows_end_as_rows_added_one_by_one() {
        let layout = Layout::new(&crate::profile::Profile::load("vision").unwrap());
        let keys: Vec<Vec<u8>> = ["a", "b", "c", "unused"].iter().map(|k| key(k, "r", "v")).collect();
        let ids: Vec<String> = (0..300).map(|i| format!("id-{}", (i * 7919) % 300)).collect();
        let mut state = 11u64;
        let mut next = |n: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let rows: Vec<(u32, RowFacts)> = ids.iter().map(|id| (next(3) as u32, row(id, next(5) as i64 * 3_600_000_000))).collect();
        let (mut one, mut numbered) = (SignatureGroups::default(), SignatureGroups::default());
        let (mut one_trend, mut numbered_trend) = (trend::TrendGroups::new(periods::Every::Hour), trend::TrendGroups::new(periods::Every::Hour));
        let (mut one_hourly, mut numbered_hourly) = (summary::HourlyGroups::default(), summary::HourlyGroups::default());
        for acc in [&mut one, &mut numbered] {
            acc.add(&keys[0], &row("early", -1));
            acc.add(&keys[1], &row("late", 99_000_000_000));
        }
        for acc in [&mut one_trend, &mut numbered_trend] {
            acc.add(&keys[0], &row("early", -1));
        }
        for acc in [&mut one_hourly, &mut numbered_hourly] {
            acc.add(&keys[0], &row("early", 7_200_000_000));
            acc.add(&keys[1], &row("late", 7_300_000_000));
        }
        for (n, r) in &rows {
            one.add(&keys[*n as usize], r);
            one_trend.add(&keys[*n as usize], r);
            one_hourly.add(&keys[*n as usize], r);
        }
        let mut numbers: Vec<u32> = rows.iter().map(|(n, _)| *n).collect();
        numbers.push(NumberedRows::NOT_ACCEPTED);
        let mut times: Vec<i64> = rows.iter().map(|(_, r)| r.time).collect();
        times.push(0);
        let facts = |i: usize| rows[i].1.clone();
        let first_times = crate::source::FirstTimes::default();
        let numbered_rows = NumberedRows { layout: &layout, first_times: &first_times, keys: &keys, numbers: &numbers, times: &times, facts: &facts };
        numbered.add_numbered(&numbered_rows);
        numbered_trend.add_numbered(&numbered_rows);
        numbered_hourly.add_numbered(&numbered_rows);
        assert_eq!(numbered.groups.len(), 3);
        assert_eq!(numbered.finish(&layout), one.finish(&layout));
        let periods = |t: &trend::TrendGroups| t.groups.iter().map(|(k, v)| (k.clone(), v.iter().map(|(p, n)| (*p, *n)).collect::<BTreeMap<_, _>>())).collect::<BTreeMap<_, _>>();
        assert_eq!(periods(&numbered_trend), periods(&one_trend));
        assert_eq!(numbered_trend.groups.len(), 3);
        let hours = |h: &summary::HourlyGroups| h.groups.iter().map(|(k, v)| (k.clone(), v.iter().map(|(p, g)| (*p, g.clone())).collect::<BTreeMap<_, _>>())).collect::<BTreeMap<_, _>>();
        assert_eq!(hours(&numbered_hourly), hours(&one_hourly));
        assert_eq!(numbered_hourly.groups.len(), 3);
    }
}
