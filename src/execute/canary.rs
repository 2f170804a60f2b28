//! A canary run sends the first N replays of each signature and holds the rest: a fix is tried
//! on a few messages of every cause before the whole manifest goes.
//! Which entries go is chosen before the run, in manifest order, so it never depends on timing.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

use anyhow::Result;

use super::gate::{self, Fate};
use super::ledger::{Claim, Ledger};
use super::order::Order;
use super::{CanaryReport, CanarySignature};
use crate::manifest::order::Place;
use crate::manifest::{Entry, Manifest};
use crate::signature::Signature;

/// The entries a canary run sends, and what it sent and held per signature.
pub(super) struct Canary {
    limit: u64,
    picked: HashSet<String>,
    counts: Mutex<BTreeMap<Signature, (u64, u64)>>,
}

impl Canary {
    /// Picks, in manifest order, the first `limit` entries of each signature that would
    /// replay now (those done, quarantined or held as poison by the ledger's state are passed
    /// over and do not count). In an ordered run only a key's first undelivered message may
    /// be picked: one whose entry before it is done.
    pub(super) async fn pick(manifest: &mut Manifest, ledger: &dyn Ledger, limit: u64, order: Option<&Order>) -> Result<Canary> {
        let mut picks = Picks { limit, per_signature: BTreeMap::new(), picked: HashSet::new() };
        // Ordered: whether an entry may go depends on one that may come later in the manifest.
        let mut replayable = Vec::new();
        let mut done = HashSet::new();
        let mut seen = HashSet::new();
        for (place, entry) in manifest.entries()?.enumerate() {
            let (place, entry) = (place as Place, entry?);
            let claim = super::claim_now(ledger.peek(&entry.key).await?);
            if claim == Claim::Done && order.is_some_and(|o| o.has_after(place)) {
                done.insert(place);
            }
            if !seen.insert(entry.key.clone()) || !matches!(gate::fate(&entry, &claim), Fate::Replay | Fate::Busy) {
                continue;
            }
            match order {
                None => picks.offer(entry.key, entry.signature),
                Some(_) => replayable.push((place, entry.key, entry.signature)),
            }
        }
        for (place, key, signature) in replayable {
            // A key's first undelivered message only.
            if order.and_then(|o| o.before(place)).is_none_or(|before| done.contains(&before)) {
                picks.offer(key, signature);
            }
        }
        Ok(Canary { limit, picked: picks.picked, counts: Mutex::default() })
    }

    /// Counts an entry held without being asked about (one an ordered run left waiting behind
    /// an entry this canary held).
    pub(super) fn hold(&self, entry: &Entry) {
        self.counts.lock().unwrap().entry(entry.signature.clone()).or_default().1 += 1;
    }

    /// Whether this entry goes to the target now; counted as sent or held either way. Poison
    /// is always held: a canary run quarantines nothing.
    pub(super) fn takes(&self, entry: &Entry, fate: &Fate) -> bool {
        let sends = matches!(fate, Fate::Replay) && self.picked.contains(&entry.key);
        let mut counts = self.counts.lock().unwrap();
        let (sent, held) = counts.entry(entry.signature.clone()).or_default();
        *if sends { sent } else { held } += 1;
        sends
    }

    pub(super) fn report(&self) -> CanaryReport {
        let counts = std::mem::take(&mut *self.counts.lock().unwrap());
        let held = counts.values().map(|(_, held)| held).sum();
        let signatures = counts.into_iter().map(|(signature, (sent, held))| CanarySignature { signature, sent, held }).collect();
        CanaryReport { limit: self.limit, held, signatures }
    }
}

/// The entries picked so far: at most `limit` of each signature, in the order offered.
struct Picks {
    limit: u64,
    per_signature: BTreeMap<Signature, u64>,
    picked: HashSet<String>,
}

impl Picks {
    fn offer(&mut self, key: String, signature: Signature) {
        let taken = self.per_signature.entry(signature).or_default();
        if *taken < self.limit {
            *taken += 1;
            self.picked.insert(key);
        }
    }
}
