//! The review summary of a manifest (what `plan` prints and `show` renders): counts per
//! signature and decision, beside the header's digest and counts (`report::review` renders it).

use std::collections::BTreeMap;

use crate::manifest::DecisionCounts;
use crate::signature::Signature;

/// Counts per signature, in order of total count (descending) then signature.
#[derive(Default)]
pub struct Review {
    pub by_signature: BTreeMap<Signature, DecisionCounts>,
    /// What an ordered replay would keep in order, where the entries have origin keys.
    pub order: Option<KeyOrder>,
}

/// Origin keys with more than one message, by what orders them, and the longest chain (its
/// length and origin key, as the manifest writes it).
#[derive(Debug, Default)]
pub struct KeyOrder {
    pub keys: BTreeMap<crate::manifest::order::Basis, u64>,
    pub longest: Option<(u64, String)>,
}

impl Review {
    /// Adds the counts of one signature (copied only the first time it is met: a plan adds
    /// each batch's few hundred).
    pub fn add_counts(&mut self, signature: &Signature, counts: &DecisionCounts) {
        match self.by_signature.get_mut(signature) {
            Some(total) => total.add_counts(counts),
            None => {
                self.by_signature.insert(signature.clone(), counts.clone());
            }
        }
    }

    /// The signatures and their counts, in order of total count (descending) then signature.
    pub fn rows(&self) -> Vec<(&Signature, &DecisionCounts)> {
        let mut rows: Vec<_> = self.by_signature.iter().collect();
        rows.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then_with(|| a.0.cmp(b.0)));
        rows
    }
}
