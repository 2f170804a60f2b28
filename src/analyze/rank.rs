//! `rank`: buckets by normalised signature, ordered by count then signature values, with each
//! bucket's share, first and last failure, an example id, and the dominant-cause alert.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::GroupStats;
use crate::signature::Signature;
use crate::source::layout::Layout;
use crate::timestamp;

pub const REPORT_ID: &str = "dlqf.rank/1";
pub const DEFAULT_ALERT_SHARE: f64 = 0.40;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RankReport {
    pub report: String,
    // Defaults let `diff` read a ranking another tool wrote with only the essential fields.
    #[serde(default)]
    pub profile: String,
    #[serde(default)]
    pub signature_fields: Vec<String>,
    #[serde(default)]
    pub total: u64,
    #[serde(default)]
    pub rejected: u64,
    pub buckets: Vec<Bucket>,
    pub dominant: Option<Dominant>,
    /// How many buckets there are, listed or not (`--top` lists fewer; not in the JSON).
    #[serde(skip)]
    pub causes: usize,
    /// Whether people's formats add a category column (not when the signature holds it).
    #[serde(skip)]
    pub category_column: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Bucket {
    pub rank: u64,
    pub signature: Signature,
    pub count: u64,
    pub share: f64,
    #[serde(default)]
    pub example_id: String,
    #[serde(default)]
    pub first_seen: String,
    #[serde(default)]
    pub last_seen: String,
    /// The bucket's error category (see `profile::classify`).
    #[serde(default)]
    pub category: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Dominant {
    pub rank: u64,
    pub share: f64,
    pub alert_share: f64,
    pub alert: bool,
}

/// A normalised bucket before ranking, with times still as microseconds.
#[derive(Clone, Debug)]
pub struct RankedBucket {
    pub values: Vec<String>,
    pub category: String,
    pub stats: GroupStats,
}

/// Sorts normalised buckets: count descending, then the signature values ascending (byte
/// order), field by field. The order is total.
pub fn ranked(buckets: BTreeMap<Vec<String>, GroupStats>, layout: &Layout) -> Vec<RankedBucket> {
    let mut ranked: Vec<RankedBucket> =
        buckets.into_iter().map(|(values, stats)| RankedBucket { category: layout.category_of(&values), values, stats }).collect();
    sort(&mut ranked);
    ranked
}

/// The buckets merged by error category (`rank --by category`): one bucket per category,
/// whose signature is the category alone.
pub fn by_category(buckets: Vec<RankedBucket>) -> Vec<RankedBucket> {
    let mut merged: BTreeMap<String, GroupStats> = BTreeMap::new();
    for b in buckets {
        super::merge_into(&mut merged, b.category, b.stats);
    }
    let mut ranked: Vec<RankedBucket> =
        merged.into_iter().map(|(category, stats)| RankedBucket { values: vec![category.clone()], category, stats }).collect();
    sort(&mut ranked);
    ranked
}

fn sort(buckets: &mut [RankedBucket]) {
    buckets.sort_by(|a, b| b.stats.count.cmp(&a.stats.count).then_with(|| a.values.cmp(&b.values)));
}

/// The seed's `round(count / total, 4)`: the double `count / total`, correctly rounded to 4
/// decimals (exact ties to even), which is what Rust's `{:.4}` formatting does. Rounding the
/// exact fraction instead differs on values such as 195/20000, whose double lies below the tie.
pub fn share(count: u64, total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let ratio = count as f64 / total as f64;
    format!("{ratio:.4}").parse().expect("a formatted float parses")
}

pub struct RankOptions {
    pub profile: String,
    pub signature_fields: Vec<String>,
    pub alert_share: f64,
    pub top: Option<usize>,
    pub category_column: bool,
}

pub fn build(buckets: &[RankedBucket], rejected: u64, options: &RankOptions) -> RankReport {
    let total: u64 = buckets.iter().map(|b| b.stats.count).sum();
    let all: Vec<Bucket> = buckets
        .iter()
        .enumerate()
        .map(|(i, b)| Bucket {
            rank: i as u64 + 1,
            signature: Signature::new(&options.signature_fields, &b.values),
            count: b.stats.count,
            share: share(b.stats.count, total),
            example_id: b.stats.first_id.clone(),
            first_seen: timestamp::format_micros(b.stats.first_time),
            last_seen: timestamp::format_micros(b.stats.last_time),
            category: b.category.clone(),
        })
        .collect();
    let dominant = all.first().map(|top| Dominant {
        rank: top.rank,
        share: top.share,
        alert_share: options.alert_share,
        alert: top.share >= options.alert_share,
    });
    let causes = all.len();
    let mut shown = all;
    if let Some(n) = options.top {
        shown.truncate(n);
    }
    RankReport {
        report: REPORT_ID.into(),
        profile: options.profile.clone(),
        signature_fields: options.signature_fields.clone(),
        total,
        rejected,
        buckets: shown,
        dominant,
        causes,
        category_column: options.category_column,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_rounds_the_double_like_python() {
        assert_eq!(share(1, 32), 0.0312); // 0.03125 is exact in binary: ties to even
        assert_eq!(share(3, 32), 0.0938);
        assert_eq!(share(195, 20000), 0.0097); // the double is just below 0.00975
        assert_eq!(share(73, 20000), 0.0037); // the double is just below 0.00365
        assert_eq!(share(1, 3), 0.3333);
        assert_eq!(share(2, 3), 0.6667);
        assert_eq!(share(4000, 20000), 0.2);
        assert_eq!(share(5, 5), 1.0);
        assert_eq!(share(0, 0), 0.0);
    }

    /// Every count of several totals against Python's own `round(count / total, 4)`.
    #[test]
    fn share_equals_pythons_round_for_every_count() {
        let totals = [7u64, 32, 400, 20000, 33333, 99991];
        let script = "import sys\nfor t in map(int, sys.argv[1:]):\n    print(' '.join(repr(round(c / t, 4)) for c in range(t + 1)))\n";
        let mut cmd = std::process::Command::new("python3");
        cmd.arg("-c").arg(script).args(totals.iter().map(u64::to_string)).stdout(std::process::Stdio::piped());
        let out = cmd.output().expect("python3 runs");
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        let mut differ = Vec::new();
        for (line, &total) in text.lines().zip(&totals) {
            for (count, theirs) in line.split(' ').enumerate() {
                let ours = share(count as u64, total);
                if ours != theirs.parse::<f64>().unwrap() {
                    differ.push(format!("{count}/{total}: dlqf {ours}, python {theirs}"));
                }
            }
        }
        assert!(differ.is_empty(), "{} differ, e.g. {:?}", differ.len(), &differ[..differ.len().min(5)]);
    }

    fn bucket(values: &[&str], count: u64) -> RankedBucket {
        RankedBucket {
            values: values.iter().map(|s| s.to_string()).collect(),
            category: "unknown".into(),
            stats: GroupStats { count, first_time: 0, first_id: "x".into(), last_time: 0 },
        }
    }

    #[test]
    fn dominant_alert_uses_the_rounded_share_and_top_keeps_totals() {
        let fields = vec!["reason".to_string()];
        let buckets = vec![bucket(&["a"], 2), bucket(&["b"], 2), bucket(&["c"], 1)];
        let options = RankOptions { profile: "p".into(), signature_fields: fields, alert_share: 0.4, top: Some(1), category_column: true };
        let report = build(&buckets, 3, &options);
        assert_eq!(report.total, 5);
        assert_eq!(report.rejected, 3);
        assert_eq!(report.buckets.len(), 1);
        assert_eq!(report.dominant, Some(Dominant { rank: 1, share: 0.4, alert_share: 0.4, alert: true }));
    }
}
