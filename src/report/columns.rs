//! The rank report's columns, described once in the order every format shows them (rank,
//! count, share, the signature fields, category, first_seen, last_seen, example_id).

use std::borrow::Cow;

use crate::analyze::rank::{Bucket, RankReport};

/// One column of the rank report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RankColumn {
    Rank,
    Count,
    Share,
    /// The signature field at this position.
    Signature(usize),
    /// Only where the signature does not already hold the category.
    Category,
    FirstSeen,
    LastSeen,
    ExampleId,
}

impl RankColumn {
    /// The columns of `report`, in order.
    pub fn of(report: &RankReport) -> Vec<RankColumn> {
        let mut columns = vec![RankColumn::Rank, RankColumn::Count, RankColumn::Share];
        columns.extend((0..report.signature_fields.len()).map(RankColumn::Signature));
        if report.category_column {
            columns.push(RankColumn::Category);
        }
        columns.extend([RankColumn::FirstSeen, RankColumn::LastSeen, RankColumn::ExampleId]);
        columns
    }

    pub fn name(self, report: &RankReport) -> &str {
        match self {
            RankColumn::Rank => "rank",
            RankColumn::Count => "count",
            RankColumn::Share => "share",
            RankColumn::Signature(i) => &report.signature_fields[i],
            RankColumn::Category => "category",
            RankColumn::FirstSeen => "first_seen",
            RankColumn::LastSeen => "last_seen",
            RankColumn::ExampleId => "example_id",
        }
    }

    /// The cell as text, `share` as its number (formats for people show a percentage).
    pub fn text(self, bucket: &Bucket) -> Cow<'_, str> {
        match self {
            RankColumn::Rank => bucket.rank.to_string().into(),
            RankColumn::Count => bucket.count.to_string().into(),
            RankColumn::Share => bucket.share.to_string().into(),
            RankColumn::Signature(i) => bucket.signature.0[i].1.as_str().into(),
            RankColumn::Category => bucket.category.as_str().into(),
            RankColumn::FirstSeen => bucket.first_seen.as_str().into(),
            RankColumn::LastSeen => bucket.last_seen.as_str().into(),
            RankColumn::ExampleId => bucket.example_id.as_str().into(),
        }
    }

    /// The cell for people: `share` as a percentage.
    pub fn shown(self, bucket: &Bucket) -> Cow<'_, str> {
        match self {
            RankColumn::Share => super::percent(bucket.share).into(),
            other => other.text(bucket),
        }
    }

    /// Numbers: right-aligned, never formula-escaped.
    pub fn is_number(self) -> bool {
        matches!(self, RankColumn::Rank | RankColumn::Count | RankColumn::Share)
    }

    /// Text that came from a dump (escaped wherever it is shown).
    pub fn is_from_dump(self) -> bool {
        matches!(self, RankColumn::Signature(_) | RankColumn::Category | RankColumn::ExampleId)
    }
}
