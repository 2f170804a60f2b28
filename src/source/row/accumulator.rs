//! What a scan folds accepted rows into (rank, trend and health each have one): rows one by
//! one, or a row group's at once with their keys numbered; parts merged in any order.

use super::layout::{Layout, RowFacts};
use super::first_times::FirstTimes;

/// What a scan folds every accepted row into. Merge must be order-independent, so results do
/// not depend on file order, chunking or thread count.
pub trait Accumulator: Send + Sized {
    fn add(&mut self, signature_key: &[u8], row: &RowFacts);
    fn merge(&mut self, other: Self);

    /// A row group's rows whose keys a source numbered, column by column: an accumulator
    /// keyed by signature can gather them per number, look each key up once, and ask for a
    /// row's id only when it needs it.
    fn add_numbered(&mut self, rows: &NumberedRows) {
        for (r, n) in rows.accepted() {
            self.add(&rows.keys[n as usize], &(rows.facts)(r));
        }
    }
}

/// A row group's rows with numbered keys: row `r` has key number `numbers[r]` (`keys[n]` is
/// key number n; `NOT_ACCEPTED`: the row was rejected or outside the window) and time
/// `times[r]`; `facts(r)` gives its id and attempts too, at a cost (its page may be read only
/// then). `layout` tells which keys normalise alike, and `first_times` what the fold's other
/// parts met in each bucket.
pub struct NumberedRows<'a> {
    pub layout: &'a Layout,
    pub first_times: &'a FirstTimes,
    pub keys: &'a [Vec<u8>],
    pub numbers: &'a [u32],
    pub times: &'a [i64],
    pub facts: &'a dyn Fn(usize) -> RowFacts<'a>,
}

impl NumberedRows<'_> {
    /// The number of a row that is not handed over.
    pub const NOT_ACCEPTED: u32 = u32::MAX;

    /// The accepted rows and their key numbers, in row order.
    pub fn accepted(&self) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.numbers.iter().enumerate().filter(|(_, &n)| n != Self::NOT_ACCEPTED).map(|(r, &n)| (r, n))
    }
}

/// An analysis that may be switched off for a run.
impl<A: Accumulator> Accumulator for Option<A> {
    fn add(&mut self, signature_key: &[u8], row: &RowFacts) {
        if let Some(a) = self {
            a.add(signature_key, row);
        }
    }

    fn add_numbered(&mut self, rows: &NumberedRows) {
        if let Some(a) = self {
            a.add_numbered(rows);
        }
    }

    fn merge(&mut self, other: Self) {
        match (self.as_mut(), other) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => *self = Some(b),
            (_, None) => {}
        }
    }
}

/// Two analyses from one scan (the HTML report needs the ranking and the trend).
impl<A: Accumulator, B: Accumulator> Accumulator for (A, B) {
    fn add(&mut self, signature_key: &[u8], row: &RowFacts) {
        self.0.add(signature_key, row);
        self.1.add(signature_key, row);
    }

    fn add_numbered(&mut self, rows: &NumberedRows) {
        self.0.add_numbered(rows);
        self.1.add_numbered(rows);
    }

    fn merge(&mut self, other: Self) {
        self.0.merge(other.0);
        self.1.merge(other.1);
    }
}
