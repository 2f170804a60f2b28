//! `diff`: yesterday's ranking against today's, so a nightly message says which causes are new,
//! which are gone, and how the rest moved in rank and share.

use std::collections::HashMap;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use super::rank::{self, Bucket, RankReport};
use crate::signature::Signature;

pub const REPORT_ID: &str = "dlqf.diff/1";

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct DiffReport {
    pub report: String,
    /// In NEW's rank order.
    pub new: Vec<Bucket>,
    /// In OLD's rank order.
    pub gone: Vec<Bucket>,
    /// Every signature in both reports, in NEW's rank order.
    pub changed: Vec<Change>,
    pub total_old: u64,
    pub total_new: u64,
    pub signature_fields: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Change {
    pub signature: Signature,
    pub count_old: u64,
    pub count_new: u64,
    pub share_old: f64,
    pub share_new: f64,
    pub rank_old: u64,
    pub rank_new: u64,
    /// NEW's category for the signature.
    #[serde(default)]
    pub category: String,
}

/// Checks that a parsed report is a ranking this version understands.
pub fn check_rank_report(report: &RankReport, name: &str) -> Result<()> {
    if report.report != rank::REPORT_ID {
        bail!("{name}: is a `{}` report, not `{}` (make it with dlqf rank --format json)", report.report, rank::REPORT_ID);
    }
    Ok(())
}

/// Fills what a hand-written ranking may leave out: the fields (from the first bucket's
/// signature) and the total (the sum of the buckets).
pub fn fill_missing(report: &mut RankReport) {
    if report.signature_fields.is_empty() {
        if let Some(first) = report.buckets.first() {
            report.signature_fields = first.signature.0.iter().map(|(field, _)| field.clone()).collect();
        }
    }
    if report.total == 0 {
        report.total = report.buckets.iter().map(|b| b.count).sum();
    }
}

/// A report made with `--top` lists fewer buckets than it counted: signatures past its end
/// would show as new or gone. Returns how many of its failures are listed, if not all.
pub fn listed_part(report: &RankReport) -> Option<u64> {
    let listed: u64 = report.buckets.iter().map(|b| b.count).sum();
    (listed < report.total).then_some(listed)
}

pub fn diff(old: &RankReport, new: &RankReport) -> Result<DiffReport> {
    if old.signature_fields != new.signature_fields {
        bail!(
            "the reports group by different fields ({} vs {}): diff reports made with the same profile",
            old.signature_fields.join(", "),
            new.signature_fields.join(", ")
        );
    }
    let old_by_signature: HashMap<&Signature, &Bucket> = old.buckets.iter().map(|b| (&b.signature, b)).collect();
    let new_by_signature: HashMap<&Signature, &Bucket> = new.buckets.iter().map(|b| (&b.signature, b)).collect();
    let mut added = Vec::new();
    let mut changed = Vec::new();
    for bucket in &new.buckets {
        match old_by_signature.get(&bucket.signature) {
            None => added.push(bucket.clone()),
            Some(before) => changed.push(Change {
                signature: bucket.signature.clone(),
                count_old: before.count,
                count_new: bucket.count,
                share_old: before.share,
                share_new: bucket.share,
                rank_old: before.rank,
                rank_new: bucket.rank,
                category: bucket.category.clone(),
            }),
        }
    }
    let gone = old.buckets.iter().filter(|b| !new_by_signature.contains_key(&b.signature)).cloned().collect();
    Ok(DiffReport {
        report: REPORT_ID.into(),
        new: added,
        gone,
        changed,
        total_old: old.total,
        total_new: new.total,
        signature_fields: new.signature_fields.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranking(buckets: &[(&str, u64)]) -> RankReport {
        let total = buckets.iter().map(|b| b.1).sum();
        let buckets = buckets
            .iter()
            .enumerate()
            .map(|(i, (reason, count))| Bucket {
                rank: i as u64 + 1,
                signature: Signature(vec![("reason".into(), reason.to_string())]),
                count: *count,
                share: rank::share(*count, total),
                example_id: String::new(),
                first_seen: String::new(),
                last_seen: String::new(),
                category: "unknown".into(),
            })
            .collect();
        RankReport {
            report: rank::REPORT_ID.into(),
            profile: "p".into(),
            signature_fields: vec!["reason".into()],
            total,
            rejected: 0,
            buckets,
            dominant: None,
            causes: 0,
            category_column: false,
        }
    }

    #[test]
    fn new_causes_in_new_order_gone_in_old_order_and_the_rest_moved() {
        let old = ranking(&[("a", 5), ("b", 3), ("c", 2)]);
        let new = ranking(&[("d", 6), ("b", 4), ("a", 1), ("e", 1)]);
        let d = diff(&old, &new).unwrap();
        let reasons = |bs: &[Bucket]| bs.iter().map(|b| b.signature.0[0].1.clone()).collect::<Vec<_>>();
        assert_eq!(reasons(&d.new), ["d", "e"]);
        assert_eq!(reasons(&d.gone), ["c"]);
        let moved: Vec<(String, u64, u64, u64, u64)> =
            d.changed.iter().map(|c| (c.signature.0[0].1.clone(), c.rank_old, c.rank_new, c.count_old, c.count_new)).collect();
        assert_eq!(moved, [("b".into(), 2, 2, 3, 4), ("a".into(), 1, 3, 5, 1)]);
        assert_eq!((d.total_old, d.total_new), (10, 12));
    }

    #[test]
    fn reports_of_other_fields_are_refused_and_a_cut_report_is_noticed() {
        let mut other = ranking(&[("a", 1)]);
        other.signature_fields = vec!["stage".into()];
        assert!(diff(&ranking(&[("a", 1)]), &other).is_err());
        let mut cut = ranking(&[("a", 5), ("b", 3)]);
        cut.buckets.truncate(1);
        assert_eq!(listed_part(&cut), Some(5));
        let mut minimal = ranking(&[("a", 5), ("b", 3)]);
        (minimal.total, minimal.signature_fields) = (0, Vec::new());
        fill_missing(&mut minimal);
        assert_eq!((minimal.total, minimal.signature_fields.clone()), (8, vec!["reason".to_string()]));
        assert!(check_rank_report(&RankReport { report: "dlqf.trend/1".into(), ..ranking(&[]) }, "x.json").is_err());
    }
}
