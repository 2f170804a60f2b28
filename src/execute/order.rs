//! Ordered replay (`--ordered`): a key's messages go out one at a time, in their origin order.
//! An entry waits, parked, until the entry before it in its key's chain is done; an entry that
//! cannot be done (failed, quarantined, left) holds the rest of its key, reported as blocked.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use anyhow::Result;

use crate::manifest::order::{Chains, Place};
use crate::manifest::{Entry, Manifest};

pub(super) struct Order {
    chains: Chains,
    /// Entries with an entry after them: the only ones whose end matters.
    have_after: HashSet<Place>,
    /// Entries the operator released (`--release-after`): what comes after them goes without
    /// waiting for them.
    released: HashSet<Place>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Entries done (delivered, or done before), of those with an entry after them.
    done: HashSet<Place>,
    /// Entries a canary run held, of those with an entry after them.
    held: HashSet<Place>,
    /// Entries waiting for the one before them, by that one's place.
    waiting: HashMap<Place, (Place, Entry)>,
}

/// An entry left waiting at the end of a run, and the entry at the head of what holds it.
pub(super) struct Blocked {
    pub entry: Entry,
    pub by: Place,
    /// The holding entry was held by a canary run (by design, not a failure).
    pub by_canary: bool,
}

impl Order {
    /// The chains of a manifest's keys (one pass over its entries), with the entries whose
    /// idempotency keys are in `release_after` released.
    pub fn of(manifest: &mut Manifest, release_after: &[String]) -> Result<Order> {
        let release: HashSet<&str> = release_after.iter().map(String::as_str).collect();
        let mut released = HashSet::new();
        let mut place = 0;
        let chains = Chains::of(manifest.entries()?.inspect(|entry| {
            if entry.as_ref().is_ok_and(|e| release.contains(e.key.as_str())) {
                released.insert(place);
            }
            place += 1;
        }))?;
        let have_after = chains.predecessors().collect();
        Ok(Order { chains, have_after, released, state: Mutex::default() })
    }

    /// Whether the entry at `place` may go now; if not, it is parked (and None returned) until
    /// the entry before it is done.
    pub fn admit(&self, place: Place, entry: Entry) -> Option<Entry> {
        let Some(before) = self.chains.before(place) else { return Some(entry) };
        if self.released.contains(&before) {
            return Some(entry);
        }
        let mut state = self.state.lock().expect("order lock");
        if state.done.contains(&before) {
            return Some(entry);
        }
        state.waiting.insert(before, (place, entry));
        None
    }

    /// The entry at `place` ended, `done` or not (a canary's hold says `held`): the entry
    /// parked after it, now free to go.
    pub fn ended(&self, place: Place, done: bool, held: bool) -> Option<(Place, Entry)> {
        if !self.have_after.contains(&place) {
            return None;
        }
        let mut state = self.state.lock().expect("order lock");
        if held {
            state.held.insert(place);
        }
        if !done {
            return None;
        }
        state.done.insert(place);
        state.waiting.remove(&place)
    }

    /// The entries still waiting, each with the first entry of its key that holds it.
    pub fn blocked(&self) -> Vec<Blocked> {
        let mut state = self.state.lock().expect("order lock");
        let parked: HashSet<Place> = state.waiting.values().map(|(place, _)| *place).collect();
        let mut blocked: Vec<Blocked> = std::mem::take(&mut state.waiting)
            .into_iter()
            .map(|(mut by, (_, entry))| {
                while parked.contains(&by) {
                    by = self.chains.before(by).expect("a parked entry has one before it");
                }
                Blocked { entry, by, by_canary: state.held.contains(&by) }
            })
            .collect();
        blocked.sort_by(|a, b| (a.by, &a.entry.key).cmp(&(b.by, &b.entry.key)));
        blocked
    }

    /// Whether an entry comes after the one at `place` in its key's order.
    pub fn has_after(&self, place: Place) -> bool {
        self.have_after.contains(&place)
    }

    /// The entry before the one at `place`, if it has one.
    pub fn before(&self, place: Place) -> Option<Place> {
        self.chains.before(place)
    }
}
