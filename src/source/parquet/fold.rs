//! An analysis's fold over one Parquet row group read from its pages: a key per distinct tuple
//! of signature codes instead of one built per row, and a time parsed straight from its bytes.

use std::borrow::Cow;

use super::late::Ids;
use super::micros;
use super::pages::{Codes, Ints, TextTime, TextTimes, NULL};
use crate::source::row::layout::{push_part, Cell, DirectColumns, RowFacts};
use crate::source::row::rows::Rows;
use crate::source::row::tally::PieceTally;
use crate::source::row::{Accumulator, FirstTimes, NumberedRows};
use crate::timestamp::DateCache;

/// The columns an analysis needs of one row group, read from their pages.
pub(in crate::source) struct PageColumns {
    /// In signature order.
    pub signature: Vec<Codes>,
    pub id: Ids,
    pub time: Times,
    /// None when the profile has no attempts field or the file no such column.
    pub attempts: Option<Ints>,
    pub rows: usize,
}

/// A time column: RFC 3339 text (parsed as read), or native values and the factor to
/// microseconds (negative: divide).
pub(in crate::source) enum Times {
    Text(TextTimes),
    Native(Ints, i64),
}

impl PageColumns {
    /// Row `i`'s time when its id, time and attempts are all there and the time reads.
    fn time(&self, i: usize) -> Option<i64> {
        if !self.id.has(i) {
            return None;
        }
        if let Some(attempts) = &self.attempts {
            attempts.values[i]?;
        }
        match &self.time {
            Times::Text(times) => match times.get(i) {
                TextTime::Time(time) => Some(time),
                TextTime::Null | TextTime::Unreadable(_) => None,
            },
            // A time out of the calendar's range goes the slow way, where the layout rejects it.
            Times::Native(values, factor) => Some(micros(values.values[i]?, *factor)).filter(|t| (crate::timestamp::MIN_MICROS..=crate::timestamp::MAX_MICROS).contains(t)),
        }
    }

    /// Row `i`'s facts, once `time` found them.
    fn facts(&self, i: usize, time: i64) -> RowFacts<'_> {
        let attempts = self.attempts.as_ref().and_then(|a| a.values[i]).unwrap_or(0);
        RowFacts { id: Cow::Borrowed(self.id.get(i).unwrap_or_default()), time, attempts }
    }

    /// Row `i`'s cells in the layout's column order, for the layout to judge one by one.
    fn cells<'c>(&'c self, plan: &DirectColumns, width: usize, i: usize, cells: &mut Vec<Cell<'c>>) {
        let text = |t: Option<&'c str>| t.map_or(Cell::Null, |t| Cell::Str(Cow::Borrowed(t)));
        cells.clear();
        cells.extend((0..width).map(|j| match plan.signature.iter().position(|&s| s == j) {
            Some(k) => match self.signature[k].codes[i] {
                NULL => Cell::Null,
                code => Cell::Str(Cow::Borrowed(&*self.signature[k].values[code as usize])),
            },
            // A late id is there and valid in every row: what the layout decides does not hang
            // on its text, which is not read for that (`fold_pages` asks for it only if needed).
            None if j == plan.id => match &self.id {
                Ids::Late(_) => Cell::Str(Cow::Borrowed("")),
                Ids::Read(texts) => text(texts.get(i)),
            },
            None if j == plan.time => match &self.time {
                Times::Text(times) => match times.get(i) {
                    TextTime::Null => Cell::Null,
                    TextTime::Time(time) => Cell::Time(time),
                    TextTime::Unreadable(text) => Cell::Str(Cow::Borrowed(text)),
                },
                Times::Native(values, factor) => values.values[i].map_or(Cell::Null, |v| Cell::Time(micros(v, *factor))),
            },
            None => match &self.attempts {
                Some(a) => a.values[i].map_or(Cell::Null, Cell::Int),
                None => Cell::Missing,
            },
        }));
    }
}

/// Folds one row group read from its pages: one key per distinct tuple of signature codes, the
/// rows handed over with their key numbers. A row with a null or unreadable cell goes through the
/// layout alone, which names what is wrong, as `decode` would, and if it takes the row, the key
/// it built is numbered too. `plan` says where the columns are in the layout, as they were read.
pub(in crate::source) fn fold_pages<A: Accumulator>(rows: &Rows, plan: &DirectColumns, columns: &PageColumns, first_times: &FirstTimes, acc: &mut A) -> PieceTally {
    let layout = rows.layout;
    let height = columns.rows;
    let mut keys = CodeKeys::new(&columns.signature);
    let mut tally = PieceTally { lines: height as u64, ..PieceTally::default() };
    // Each accepted row's key number and time, found in row order (so rejects are named in
    // order); then the accepted rows, in order, with their key numbers.
    let mut key_of = Vec::with_capacity(height);
    let mut times = Vec::with_capacity(height);
    let (mut key, mut cells) = (Vec::new(), Vec::with_capacity(layout.columns.len()));
    let mut dates = DateCache::default();
    for i in 0..height {
        let (k, time) = match keys.find(i).zip(columns.time(i)) {
            Some((k, time)) if rows.window.contains(time) => {
                tally.accepted += 1;
                (k, time)
            }
            Some(_) => {
                tally.outside_window += 1;
                (NO_KEY, 0)
            }
            None => {
                columns.cells(plan, layout.columns.len(), i, &mut cells);
                let mut taken = (NO_KEY, 0);
                rows.take(&cells, &mut key, &mut dates, i as u64 + 1, None, &mut tally, |key, row| taken = (keys.number_built(key), row.time));
                taken
            }
        };
        key_of.push(k);
        times.push(time);
    }
    let facts = |i: usize| columns.facts(i, times[i]);
    acc.add_numbered(&NumberedRows { layout, first_times, keys: &keys.keys, numbers: &key_of, times: &times, facts: &facts });
    tally
}

/// The key number of a row that is not handed over by key.
const NO_KEY: u32 = NumberedRows::NOT_ACCEPTED;

/// Signature keys by tuple of codes. Each row's tuple is numbered in mixed radix over the
/// dictionaries' sizes (`ParquetSource::page_columns` checked that this fits in 64 bits); a
/// tuple's key is built the first time it is seen.
struct CodeKeys<'a> {
    coded: &'a [Codes],
    /// Each column's place value in a tuple's number.
    radices: Vec<u64>,
    /// Key number by tuple number: a table when there are few tuples, else a map.
    table: Vec<u32>,
    map: std::collections::HashMap<u64, u32, foldhash::fast::RandomState>,
    /// Key numbers of keys the layout built (for rows with a null or unreadable cell).
    built: std::collections::HashMap<Vec<u8>, u32, foldhash::fast::RandomState>,
    keys: Vec<Vec<u8>>,
}

/// The most tuples numbered through a table (256 KiB of key numbers).
const TABLE_TUPLES: u64 = 1 << 16;

impl<'a> CodeKeys<'a> {
    fn new(coded: &'a [Codes]) -> CodeKeys<'a> {
        let mut radix = 1u64;
        let radices = coded
            .iter()
            .map(|c| {
                let place = radix;
                radix = radix.saturating_mul(c.values.len().max(1) as u64);
                place
            })
            .collect();
        let table = if radix <= TABLE_TUPLES { vec![NO_KEY; radix as usize] } else { Vec::new() };
        CodeKeys { coded, radices, table, map: Default::default(), built: Default::default(), keys: Vec::new() }
    }

    /// Row `i`'s key number, or None when a signature cell is null.
    #[inline]
    fn find(&mut self, i: usize) -> Option<u32> {
        let mut tuple = 0u64;
        for (c, &radix) in self.coded.iter().zip(&self.radices) {
            match c.codes[i] {
                NULL => return None,
                code => tuple += u64::from(code) * radix,
            }
        }
        let known = if self.table.is_empty() { self.map.get(&tuple).copied() } else { Some(self.table[tuple as usize]).filter(|&k| k != NO_KEY) };
        Some(match known {
            Some(k) => k,
            None => self.number(i, tuple),
        })
    }

    /// The number of a key the layout built.
    #[cold]
    fn number_built(&mut self, key: &[u8]) -> u32 {
        if let Some(&k) = self.built.get(key) {
            return k;
        }
        let k = self.keys.len() as u32;
        self.keys.push(key.to_vec());
        self.built.insert(key.to_vec(), k);
        k
    }

    /// Numbers the tuple first seen at row `i`, building its key.
    #[cold]
    fn number(&mut self, i: usize, tuple: u64) -> u32 {
        let k = self.keys.len() as u32;
        let mut key = Vec::new();
        for c in self.coded {
            push_part(&mut key, &c.values[c.codes[i] as usize]);
        }
        self.keys.push(key);
        if self.table.is_empty() {
            self.map.insert(tuple, k);
        } else {
            self.table[tuple as usize] = k;
        }
        k
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::row::layout::split_parts;

    fn codes(values: usize, codes: Vec<u32>) -> Codes {
        Codes { values: (0..values).map(|v| format!("v{v}").into()).collect(), codes }
    }

    #[test]
    fn tuples_of_codes_get_one_key_each_through_the_table_and_the_map() {
        // 3 × 3 tuples are numbered through a table, 300 × 300 through a map.
        for size in [3, 300] {
            let coded = [codes(size, vec![0, 2, 0, NULL, 2, 1]), codes(size, vec![1, 1, 1, 0, 1, 2])];
            let mut keys = CodeKeys::new(&coded);
            assert_eq!(keys.table.is_empty(), size == 300);
            let found: Vec<Option<u32>> = (0..6).map(|i| keys.find(i)).collect();
            assert_eq!(found, [Some(0), Some(1), Some(0), None, Some(1), Some(2)]);
            let parts: Vec<Vec<&str>> = keys.keys.iter().map(|k| split_parts(k).collect()).collect();
            assert_eq!(parts, [["v0", "v1"], ["v2", "v1"], ["v1", "v2"]]);
        }
    }
}
