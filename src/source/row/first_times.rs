//! The earliest failure met so far in each bucket (normalised signature), shared by the parts of
//! one fold: a row later than it cannot be its bucket's first failure, so its id is not needed.

use std::collections::HashMap;
use std::sync::Mutex;

use super::layout::Layout;

/// Each bucket's earliest failure time met so far, by the parts of one fold on any thread. A
/// time here is that of a row an accumulator took with its id, so the bucket's first failure
/// is never later: a strictly later row can be left without its id.
#[derive(Default)]
pub struct FirstTimes {
    inner: Mutex<Buckets>,
}

#[derive(Default)]
struct Buckets {
    /// The bucket of each raw key met, and each bucket's number by its signature.
    of_key: HashMap<Box<[u8]>, usize, foldhash::fast::RandomState>,
    by_signature: HashMap<Vec<String>, usize, foldhash::fast::RandomState>,
    earliest: Vec<i64>,
}

impl FirstTimes {
    /// The bucket of each of `keys` (raw keys, normalised by `layout`) and its earliest
    /// failure so far (`i64::MAX`: none yet).
    pub fn of(&self, keys: &[Vec<u8>], layout: &Layout) -> Vec<(usize, i64)> {
        let mut buckets = self.inner.lock().expect("first times");
        keys.iter().map(|key| {
            let bucket = buckets.bucket(key, layout);
            (bucket, buckets.earliest[bucket])
        }).collect()
    }

    /// Notes failures taken with their ids: a time for a bucket (as `of` numbered it).
    pub fn lower(&self, firsts: impl IntoIterator<Item = (usize, i64)>) {
        let mut buckets = self.inner.lock().expect("first times");
        for (bucket, time) in firsts {
            buckets.earliest[bucket] = buckets.earliest[bucket].min(time);
        }
    }
}

impl Buckets {
    fn bucket(&mut self, key: &[u8], layout: &Layout) -> usize {
        if let Some(&bucket) = self.of_key.get(key) {
            return bucket;
        }
        let next = self.by_signature.len();
        let bucket = *self.by_signature.entry(layout.finish_signature(key)).or_insert(next);
        if bucket == next {
            self.earliest.push(i64::MAX);
        }
        self.of_key.insert(key.into(), bucket);
        bucket
    }
}
