//! Terminal tables: aligned columns, long values shortened, control characters from dumps
//! escaped so a hostile message cannot rewrite the terminal.

use std::fmt::Write;

use unicode_width::UnicodeWidthStr;

use super::percent;
use crate::analyze::rank::RankReport;

const MAX_CELL: usize = 60;

pub fn rank(report: &RankReport) -> Vec<u8> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "profile {} · {} failures · {} rejected rows",
        report.profile, report.total, report.rejected
    );
    let mut headers = vec!["rank".to_string(), "count".into(), "share".into()];
    headers.extend(report.signature_fields.iter().cloned());
    headers.extend(["first_seen".into(), "last_seen".into(), "example_id".into()]);
    let rows: Vec<Vec<String>> = report
        .buckets
        .iter()
        .map(|b| {
            let mut row = vec![b.rank.to_string(), b.count.to_string(), percent(b.share)];
            row.extend(b.signature.values().map(str::to_string));
            row.extend([b.first_seen.clone(), b.last_seen.clone(), b.example_id.clone()]);
            row
        })
        .collect();
    out.push_str(&render(&headers, &rows, 3));
    if let Some(d) = &report.dominant {
        let verdict = if d.alert { "ALERT: one cause dominates; fix it before any replay" } else { "no single cause dominates" };
        let _ = writeln!(out, "dominant: rank {} holds {} (alert at {}): {verdict}", d.rank, percent(d.share), percent(d.alert_share));
    }
    out.into_bytes()
}

/// Aligns `rows` under `headers`; the first `numeric` columns are right-aligned.
pub fn render(headers: &[String], rows: &[Vec<String>], numeric: usize) -> String {
    let cells: Vec<Vec<String>> = std::iter::once(headers.iter().map(|h| h.to_uppercase()).collect())
        .chain(rows.iter().map(|r| r.iter().map(|c| clean(c)).collect()))
        .collect();
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
