//! Whose failure a 5xx or a timeout was, judged by what the target did just after it: a target
//! that delivered other keys right after failing one was up, so that failure was the message's;
//! one that failed what came after was failing for everyone (an outage), and no key pays.

use std::collections::VecDeque;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Mutex;

/// A failure is judged by this many deliveries of other keys that started after it ended…
pub const NEIGHBOURS: usize = 5;
/// …and was the message's when at least this many of them were delivered.
pub const DELIVERED_NEIGHBOURS: usize = 3;

/// How a failed delivery was answered, which decides the evidence it needs to be charged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The application's own failure (HTTP 500): charged beside deliveries of other keys, or
    /// when the target is shown serving by its probe.
    AppFailed,
    /// An outage's answer (502, 503, 504, a timeout): charged beside deliveries of other keys,
    /// or when a health URL answers 2xx.
    Unavailable,
}

/// A failed delivery waiting for its verdict.
#[derive(Debug)]
pub struct Failure {
    pub key: String,
    pub id: String,
    pub why: String,
    pub kind: Kind,
    key_hash: u64,
    /// How many deliveries had ended before this one did: deliveries that started when more
    /// had ended began after it.
    place: usize,
    /// Deliveries of other keys started after it, ended, looked at (at most `NEIGHBOURS`)…
    seen: usize,
    /// …and how many of them were delivered.
    delivered: usize,
}

impl Failure {
    /// Whether other keys were delivered just after it: the target was serving, so this was the
    /// message's failure.
    pub fn beside_deliveries(&self) -> bool {
        self.delivered >= DELIVERED_NEIGHBOURS
    }
}

/// When a delivery started: how many deliveries had ended by then.
#[derive(Clone, Copy, Debug)]
pub struct Mark(usize);

/// How a delivery ended, as evidence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Delivered,
    /// The target answered for the message (a refusal): reached, but not served.
    Refused,
    /// Failed for a reason the run judges later (`Kind`), or never reached the target.
    Failed,
}

/// Every delivery of a run as it ends, and the failures whose verdict waits on later ones.
#[derive(Default)]
pub struct Timeline {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    ended: usize,
    /// Deliveries delivered or refused: the target was reached at least once.
    answered: usize,
    failures: Vec<Failure>,
    /// Failures still looking for neighbours (indices into `failures`), oldest first.
    watching: VecDeque<usize>,
    hasher: std::collections::hash_map::RandomState,
}

impl Timeline {
    /// Marks a delivery's start.
    pub fn start(&self) -> Mark {
        Mark(self.state.lock().expect("timeline lock").ended)
    }

    /// Records how a delivery of `key` started at `started` ended.
    pub fn end(&self, key: &str, started: Mark, ended: Ended) {
        let mut state = self.state.lock().expect("timeline lock");
        let key_hash = state.hash(key);
        state.witness(key_hash, started, ended == Ended::Delivered);
        state.ended += 1;
        if ended != Ended::Failed {
            state.answered += 1;
        }
    }

    /// Records a failed delivery whose cost is decided later.
    pub fn fail(&self, key: &str, id: &str, why: &str, kind: Kind, started: Mark) {
        let mut state = self.state.lock().expect("timeline lock");
        let key_hash = state.hash(key);
        state.witness(key_hash, started, false);
        let place = state.ended;
        state.ended += 1;
        let failure = Failure { key: key.to_string(), id: id.to_string(), why: why.to_string(), kind, key_hash, place, seen: 0, delivered: 0 };
        let index = state.failures.len();
        state.watching.push_back(index);
        state.failures.push(failure);
    }

    /// Whether any delivery reached the target (delivered or refused).
    pub fn answered(&self) -> bool {
        self.state.lock().expect("timeline lock").answered > 0
    }

    /// The failures recorded, for their verdict.
    pub fn take_failures(&self) -> Vec<Failure> {
        let mut state = self.state.lock().expect("timeline lock");
        state.watching.clear();
        std::mem::take(&mut state.failures)
    }
}

impl State {
    fn hash(&self, key: &str) -> u64 {
        let mut h = self.hasher.build_hasher();
        key.hash(&mut h);
        h.finish()
    }

    /// A delivery of `key_hash` started at `started` ended: it is a neighbour of each failure
    /// of another key that had ended before it started.
    fn witness(&mut self, key_hash: u64, started: Mark, delivered: bool) {
        let State { failures, watching, .. } = self;
        watching.retain(|&i| {
            let f = &mut failures[i];
            if f.place < started.0 && f.key_hash != key_hash {
                f.seen += 1;
                f.delivered += usize::from(delivered);
            }
            f.seen < NEIGHBOURS
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs deliveries one after another: `(key, outcome)` with None for a failure.
    fn sequential(steps: &[(&str, Option<bool>)]) -> Vec<(String, bool)> {
        let t = Timeline::default();
        for (key, outcome) in steps {
            let mark = t.start();
            match outcome {
                Some(true) => t.end(key, mark, Ended::Delivered),
                Some(false) => t.end(key, mark, Ended::Refused),
                None => t.fail(key, key, "503", Kind::Unavailable, mark),
            }
        }
        t.take_failures().into_iter().map(|f| (f.key.clone(), f.beside_deliveries())).collect()
    }

    #[test]
    fn a_failure_among_deliveries_is_the_messages_and_an_outage_is_nobodys() {
        let ok = |k: &'static str| (k, Some(true));
        let fail = |k: &'static str| (k, None);
        // Poison among deliveries: charged.
        assert_eq!(sequential(&[ok("a"), fail("p"), ok("b"), ok("c"), ok("d")]), [("p".into(), true)]);
        // An outage that begins after many deliveries, until the run ends: nobody's.
        let outage: Vec<_> = (0..20).map(|_| ok("x")).chain(["f1", "f2", "f3", "f4", "f5", "f6", "f7"].map(fail)).collect();
        assert!(sequential(&outage).iter().all(|(_, charged)| !charged));
        // The last failures of a run, with nothing after them: not judged beside deliveries.
        assert_eq!(sequential(&[ok("a"), ok("b"), fail("p")]), [("p".into(), false)]);
        // Two deliveries after are not enough; three of five are; refusals are not deliveries.
        assert_eq!(sequential(&[fail("p"), ok("a"), ok("b")]), [("p".into(), false)]);
        assert_eq!(sequential(&[fail("p"), ok("a"), ("r", Some(false)), ok("b"), ("s", Some(false)), ok("c")]), [("p".into(), true)]);
        assert_eq!(sequential(&[fail("p"), ok("a"), ("r", Some(false)), ok("b"), ("s", Some(false)), ("t", Some(false)), ok("c")]), [("p".into(), false)]);
        // Only the five just after count: deliveries after a long outage do not charge its start.
        let recovered: Vec<_> = std::iter::once(fail("first")).chain((0..10).map(|_| fail("o"))).chain((0..10).map(|_| ok("y"))).collect();
        assert!(!sequential(&recovered)[0].1);
    }

    #[test]
    fn deliveries_started_before_a_failure_ended_or_of_its_own_key_are_no_evidence() {
        let t = Timeline::default();
        // Five deliveries in flight with the failure: they started before it ended.
        let marks: Vec<Mark> = (0..6).map(|_| t.start()).collect();
        t.fail("p", "p", "503", Kind::Unavailable, marks[0]);
        for (i, mark) in marks[1..].iter().enumerate() {
            t.end(&format!("k{i}"), *mark, Ended::Delivered);
        }
        // The same key delivered after (a copy dead-lettered twice) is no evidence either.
        for _ in 0..5 {
            let mark = t.start();
            t.end("p", mark, Ended::Delivered);
        }
        assert!(!t.take_failures()[0].beside_deliveries());
    }
}
