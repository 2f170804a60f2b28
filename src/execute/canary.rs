//! A canary run sends the first N replays of each signature and holds the rest: a fix is tried
//! on a few messages of every cause before the whole manifest goes.
//! Which entries go is chosen before the run, in manifest order, so it never depends on timing.

use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

use anyhow::Result;

use super::gate::{self, Fate};
use super::ledger::Ledger;
use super::{CanaryReport, CanarySignature};
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
    /// over and do not count).
    pub(super) async fn pick(manifest: &mut Manifest, ledger: &dyn Ledger, limit: u64) -> Result<Canary> {
        let mut per_signature: BTreeMap<Signature, u64> = BTreeMap::new();
        let mut picked = HashSet::new();
        let mut seen = HashSet::new();
        for entry in manifest.entries()? {
            let entry = entry?;
            if !seen.insert(entry.key.clone()) {
                continue;
            }
            let claim = super::claim_now(ledger.peek(&entry.key).await?);
            if !matches!(gate::fate(&entry, &claim), Fate::Replay | Fate::Busy) {
                continue;
            }
            let taken = per_signature.entry(entry.signature.clone()).or_default();
            if *taken < limit {
                *taken += 1;
                picked.insert(entry.key);
            }
        }
        Ok(Canary { limit, picked, counts: Mutex::default() })
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
