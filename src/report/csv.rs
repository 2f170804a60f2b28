//! CSV (RFC 4180) for spreadsheets; any cell that a spreadsheet would run as a formula
//! (`=`, `+`, `-`, `@`, tab, CR first) is prefixed with `'` so it stays text.

use serde_json::{Map, Value};

use super::columns::RankColumn;
use crate::analyze::diff::DiffReport;
use crate::analyze::health::HealthReport;
use crate::analyze::rank::RankReport;
use crate::analyze::trend::TrendReport;

/// One row per bucket, in the report's column order; shares as numbers.
pub fn rank(report: &RankReport) -> Vec<u8> {
    let columns = RankColumn::of(report);
    let mut out = String::new();
    push_row(&mut out, columns.iter().map(|c| text_cell(c.name(report))));
    for b in &report.buckets {
        push_row(&mut out, columns.iter().map(|c| if c.is_number() { c.text(b).into_owned() } else { text_cell(&c.text(b)) }));
    }
    out.into_bytes()
}

/// One row per signature, one column per period (its start time).
pub fn trend(report: &TrendReport) -> Vec<u8> {
    let mut header = vec!["rank".to_string(), "total".into(), "status".into()];
    header.extend(report.signature_fields.iter().cloned());
    if report.category_column {
        header.push("category".into());
    }
    header.extend(report.periods.iter().cloned());
    let mut out = String::new();
    push_row(&mut out, header.iter().map(|h| text_cell(h)));
    for (i, s) in report.series.iter().enumerate() {
        let mut row = vec![(i + 1).to_string(), s.total.to_string(), s.status.name().to_string()];
        row.extend(s.signature.values().map(text_cell));
        if report.category_column {
            row.push(text_cell(&s.category));
        }
        row.extend(s.counts.iter().map(u64::to_string));
        push_row(&mut out, row.into_iter());
    }
    out.into_bytes()
}

/// One row per signature: `new`, `gone` or `both`, with old and new rank, count and share
/// (empty where the signature is absent).
pub fn diff(report: &DiffReport) -> Vec<u8> {
    let mut header: Vec<String> = ["change", "rank_old", "rank_new", "count_old", "count_new", "share_old", "share_new"].map(String::from).to_vec();
    header.extend(report.signature_fields.iter().cloned());
    let mut out = String::new();
    push_row(&mut out, header.iter().map(|h| text_cell(h)));
    let mut row = |change: &str, old: Option<(u64, u64, f64)>, new: Option<(u64, u64, f64)>, signature: &crate::signature::Signature| {
        let part = |v: Option<(u64, u64, f64)>, i: usize| v.map(|(r, c, s)| [r.to_string(), c.to_string(), s.to_string()][i].clone()).unwrap_or_default();
        let mut cells = vec![change.to_string(), part(old, 0), part(new, 0), part(old, 1), part(new, 1), part(old, 2), part(new, 2)];
        cells.extend(signature.values().map(text_cell));
        push_row(&mut out, cells.into_iter());
    };
    for b in &report.new {
        row("new", None, Some((b.rank, b.count, b.share)), &b.signature);
    }
    for b in &report.gone {
        row("gone", Some((b.rank, b.count, b.share)), None, &b.signature);
    }
    for c in &report.changed {
        row("both", Some((c.rank_old, c.count_old, c.share_old)), Some((c.rank_new, c.count_new, c.share_new)), &c.signature);
    }
    out.into_bytes()
}

/// One row per day of the whole; with topics, one more column per topic (its count that day).
pub fn health(report: &HealthReport) -> Vec<u8> {
    let topics = report.topics.as_deref().unwrap_or_default();
    let mut out = String::new();
    push_row(&mut out, ["day".to_string(), "count".into()].into_iter().chain(topics.iter().map(|t| text_cell(&t.topic))));
    let by_day: Vec<std::collections::HashMap<&str, u64>> = topics.iter().map(|t| t.per_day.iter().map(|d| (d.day.as_str(), d.count)).collect()).collect();
    for d in &report.per_day {
        let per_topic = by_day.iter().map(|days| days.get(d.day.as_str()).copied().unwrap_or(0).to_string());
        push_row(&mut out, [d.day.clone(), d.count.to_string()].into_iter().chain(per_topic));
    }
    out.into_bytes()
}

/// Query rows (JSON objects, columns in order) under their column names; nulls are empty.
pub fn rows(names: &[String], rows: &[Map<String, Value>]) -> Vec<u8> {
    let mut out = String::new();
    push_row(&mut out, names.iter().map(|n| text_cell(n)));
    for row in rows {
        push_row(
            &mut out,
            row.values().map(|v| match v {
                Value::Null => String::new(),
                Value::String(s) => text_cell(s),
                other => other.to_string(),
            }),
        );
    }
    out.into_bytes()
}

fn push_row(out: &mut String, cells: impl Iterator<Item = String>) {
    for (i, cell) in cells.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&quote(&cell));
    }
    out.push_str("\r\n");
}

/// A text cell made safe against formula injection.
pub fn text_cell(value: &str) -> String {
    match value.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{value}"),
        _ => value.to_string(),
    }
}

/// An RFC 4180 field: quoted when it holds a comma, a quote or a line break.
fn quote(cell: &str) -> String {
    if cell.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_neutralised_and_quotes_escaped() {
        assert_eq!(text_cell("=HYPERLINK(\"x\")"), "'=HYPERLINK(\"x\")");
        assert_eq!(text_cell("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(text_cell("-1+2"), "'-1+2");
        assert_eq!(text_cell("timeout"), "timeout");
        assert_eq!(quote("a,\"b\""), "\"a,\"\"b\"\"\"");
    }
}
