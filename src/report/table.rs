//! Terminal tables: aligned columns, long values shortened, control characters from dumps
//! escaped so a hostile message cannot rewrite the terminal.

use std::fmt::Write;

use unicode_width::UnicodeWidthStr;

use super::columns::RankColumn;
use super::percent;
use crate::analyze::diff::DiffReport;
use crate::analyze::health::HealthReport;
use crate::analyze::rank::RankReport;
use crate::analyze::trend::TrendReport;

const MAX_CELL: usize = 60;

pub fn rank(report: &RankReport) -> Vec<u8> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "profile {} · {} failures · {} rejected rows",
        report.profile, report.total, report.rejected
    );
    let columns = RankColumn::of(report);
    let headers: Vec<String> = columns.iter().map(|c| c.name(report).to_string()).collect();
    let rows: Vec<Vec<String>> = report.buckets.iter().map(|b| columns.iter().map(|c| c.shown(b).into_owned()).collect()).collect();
    out.push_str(&render(&headers, &rows, 3));
    if let Some(d) = &report.dominant {
        let verdict = if d.alert { "ALERT: one cause dominates; fix it before any replay" } else { "no single cause dominates" };
        let _ = writeln!(out, "dominant: rank {} holds {} (alert at {}): {verdict}", d.rank, percent(d.share), percent(d.alert_share));
    }
    out.into_bytes()
}

pub fn diff(report: &DiffReport, old_name: &str, new_name: &str) -> Vec<u8> {
    let mut out = String::new();
    let _ = writeln!(out, "{} → {} · {}", clean(old_name), clean(new_name), super::diff_counts(report));
    for (title, buckets) in [("new causes", &report.new), ("gone", &report.gone)] {
        if buckets.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{}:", title.to_uppercase());
        let mut headers = vec!["rank".to_string(), "count".into(), "share".into()];
        headers.extend(report.signature_fields.iter().cloned());
        let rows: Vec<Vec<String>> = buckets
            .iter()
            .map(|b| {
                let mut row = vec![b.rank.to_string(), b.count.to_string(), percent(b.share)];
                row.extend(b.signature.values().map(str::to_string));
                row
            })
            .collect();
        out.push_str(&render(&headers, &rows, 3));
    }
    if !report.changed.is_empty() {
        out.push_str("\nIN BOTH:\n");
        let mut headers: Vec<String> = ["rank", "was", "count", "was", "change", "share", "was", "change"].map(String::from).to_vec();
        headers.extend(report.signature_fields.iter().cloned());
        let rows: Vec<Vec<String>> = report
            .changed
            .iter()
            .map(|c| {
                let mut row = vec![
                    c.rank_new.to_string(),
                    c.rank_old.to_string(),
                    c.count_new.to_string(),
                    c.count_old.to_string(),
                    signed(c.count_new as i64 - c.count_old as i64),
                    percent(c.share_new),
                    percent(c.share_old),
                    points(c.share_new - c.share_old),
                ];
                row.extend(c.signature.values().map(str::to_string));
                row
            })
            .collect();
        out.push_str(&render(&headers, &rows, 8));
    }
    out.into_bytes()
}

/// `+5`, `-3`, `0`.
pub fn signed(n: i64) -> String {
    if n > 0 { format!("+{n}") } else { n.to_string() }
}

/// A share difference in percentage points: `+1.25 pp`.
pub fn points(delta: f64) -> String {
    let pp = (delta * 10_000.0).round() / 100.0;
    if pp > 0.0 { format!("+{pp:.2} pp") } else if pp < 0.0 { format!("{pp:.2} pp") } else { "0.00 pp".into() }
}

/// Widest sparkline a terminal row gets; longer series are summed into this many columns.
const SPARK_WIDTH: usize = 48;

pub fn trend(report: &TrendReport) -> Vec<u8> {
    let mut out = String::new();
    let span = match (report.periods.first(), report.periods.last()) {
        (Some(a), Some(b)) => format!("{} periods from {a} to {b}", report.periods.len()),
        _ => "no failures".into(),
    };
    let _ = writeln!(out, "profile {} · by {} · {span} · status: last {} vs the {} before", report.profile, report.every.name(), report.window, report.window);
    let recent = format!("last_{}", report.window);
    let mut headers = vec!["rank".to_string(), "total".into(), recent, "status".into(), "trend".into()];
    headers.extend(report.signature_fields.iter().cloned());
    if report.category_column {
        headers.push("category".into());
    }
    let rows: Vec<Vec<String>> = report
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let recent = s.recent(report.window);
            let mut row = vec![(i + 1).to_string(), s.total.to_string(), recent.to_string(), s.status.name().into(), super::sparkline::sparkline(&s.counts, SPARK_WIDTH)];
            row.extend(s.signature.values().map(str::to_string));
            if report.category_column {
                row.push(s.category.clone());
            }
            row
        })
        .collect();
    out.push_str(&render(&headers, &rows, 3));
    out.into_bytes()
}

pub fn health(report: &HealthReport) -> Vec<u8> {
    let mut out = String::new();
    let _ = writeln!(out, "status {} · {}", report.status.name().to_uppercase(), super::health_summary(report));
    if let Some(line) = super::critical_topics(report) {
        let _ = writeln!(out, "{line}");
    }
    if let (Some(by), Some(topics)) = (&report.by, &report.topics) {
        let rows: Vec<Vec<String>> = topics
            .iter()
            .map(|t| vec![t.depth.to_string(), t.growth_per_day.to_string(), t.status.name().to_uppercase(), t.topic.clone()])
            .collect();
        out.push('\n');
        out.push_str(&render(&["depth".into(), "growth/day".into(), "status".into(), by.clone()], &rows, 2));
        out.push('\n');
    }
    let peak = report.per_day.iter().map(|d| d.count).max().unwrap_or(0).max(1);
    let rows: Vec<Vec<String>> = report
        .per_day
        .iter()
        .map(|d| vec![d.day.clone(), format!("{:>5}", d.count), "█".repeat((d.count * 40).div_ceil(peak) as usize)])
        .collect();
    out.push_str(&render(&["day".into(), "count".into(), String::new()], &rows, 0));
    out.into_bytes()
}

/// Aligns `rows` under `headers`; the first `numeric` columns are right-aligned.
pub fn render(headers: &[String], rows: &[Vec<String>], numeric: usize) -> String {
    // Every row as wide as the headers: a short one padded, a long one cut.
    let fit = |r: &Vec<String>| (0..headers.len()).map(|i| r.get(i).map(|c| clean(c)).unwrap_or_default()).collect();
    let cells: Vec<Vec<String>> = std::iter::once(headers.iter().map(|h| h.to_uppercase()).collect()).chain(rows.iter().map(fit)).collect();
    let widths: Vec<usize> = (0..headers.len()).map(|i| cells.iter().map(|r| r[i].width()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in &cells {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            let pad = " ".repeat(widths[i] - cell.width());
            if i > 0 {
                line.push_str("  ");
            }
            if i < numeric {
                line.push_str(&pad);
                line.push_str(cell);
            } else {
                line.push_str(cell);
                line.push_str(&pad);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Escapes control characters and shortens long values for display.
pub fn clean(value: &str) -> String {
    let mut out = String::new();
    for (n, c) in value.chars().enumerate() {
        if n == MAX_CELL {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_long_values_cut() {
        assert_eq!(clean("a\u{1b}[31mred\nx"), "a\\u{1b}[31mred\\nx");
        assert_eq!(clean(&"x".repeat(100)).chars().count(), MAX_CELL + 1);
    }

    #[test]
    fn columns_align_by_display_width() {
        let text = render(&["n".into(), "name".into()], &[vec!["10".into(), "東京".into()], vec!["2".into(), "ab".into()]], 1);
        assert_eq!(text, " N  NAME\n10  東京\n 2  ab\n");
    }
}
