//! Markdown for postmortem documents: a summary line and a pipe table with every value from a
//! dump escaped, so it renders as the text it is.

use std::fmt::Write;

use super::columns::RankColumn;
use super::percent;
use crate::analyze::diff::DiffReport;
use crate::analyze::health::HealthReport;
use crate::analyze::rank::RankReport;
use crate::analyze::trend::TrendReport;

pub fn rank(report: &RankReport) -> Vec<u8> {
    let mut out = String::new();
    let _ = writeln!(out, "## DLQ failure ranking ({})\n", escape(&report.profile));
    let _ = writeln!(out, "{} failures, {} rejected rows.", report.total, report.rejected);
    if let Some(d) = &report.dominant {
        let verdict = if d.alert { "**one cause dominates: fix it before any replay**" } else { "no single cause dominates" };
        let _ = writeln!(out, "Top bucket holds {} (alert at {}): {verdict}.", percent(d.share), percent(d.alert_share));
    }
    out.push('\n');
    let columns = RankColumn::of(report);
    let header: Vec<String> = columns.iter().map(|c| escape(c.name(report))).collect();
    table_head(&mut out, &header, 3);
    for b in &report.buckets {
        let row: Vec<String> = columns.iter().map(|c| escape(&c.shown(b))).collect();
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.into_bytes()
}

pub fn trend(report: &TrendReport) -> Vec<u8> {
    let mut out = String::new();
    let _ = writeln!(out, "## DLQ failure trend ({}, by {})\n", escape(&report.profile), report.every.name());
    match (report.periods.first(), report.periods.last()) {
        (Some(a), Some(b)) => {
            let _ = writeln!(out, "{} periods from {a} to {b}; status compares the last {} with the {} before.\n", report.periods.len(), report.window, report.window);
        }
        _ => out.push_str("No failures.\n\n"),
    }
    let mut header = vec!["rank".to_string(), "total".into(), format!("last {}", report.window), "status".into(), "trend".into()];
    header.extend(report.signature_fields.iter().map(|f| escape(f)));
    if report.category_column {
        header.push("category".into());
    }
    table_head(&mut out, &header, 3);
    for (i, s) in report.series.iter().enumerate() {
        let recent = s.recent(report.window);
        let status = match s.status.name() {
            name @ ("new" | "rising") => format!("**{name}**"),
            name => name.to_string(),
        };
        let mut row = vec![(i + 1).to_string(), s.total.to_string(), recent.to_string(), status, format!("`{}`", super::sparkline::sparkline(&s.counts, 48))];
        row.extend(s.signature.values().map(escape));
        if report.category_column {
            row.push(escape(&s.category));
        }
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.into_bytes()
}

pub fn diff(report: &DiffReport, old_name: &str, new_name: &str) -> Vec<u8> {
    use super::table::{points, signed};
    let mut out = String::new();
    let _ = writeln!(out, "## DLQ causes: {} → {}\n", escape(old_name), escape(new_name));
    let _ = writeln!(out, "{}.\n", super::diff_counts(report));
    for (title, buckets) in [("New causes", &report.new), ("Gone", &report.gone)] {
        if buckets.is_empty() {
            continue;
        }
        let _ = writeln!(out, "### {title}\n");
        let mut header = vec!["rank".to_string(), "count".into(), "share".into()];
        header.extend(report.signature_fields.iter().map(|f| escape(f)));
        table_head(&mut out, &header, 3);
        for b in buckets {
            let mut row = vec![b.rank.to_string(), b.count.to_string(), percent(b.share)];
            row.extend(b.signature.values().map(escape));
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        out.push('\n');
    }
    if !report.changed.is_empty() {
        out.push_str("### In both\n\n");
        let mut header: Vec<String> = ["rank", "count", "share"].map(String::from).to_vec();
        header.extend(report.signature_fields.iter().map(|f| escape(f)));
        table_head(&mut out, &header, 3);
        for c in &report.changed {
            let rank = if c.rank_new == c.rank_old { c.rank_new.to_string() } else { format!("{} (was {})", c.rank_new, c.rank_old) };
            let count = format!("{} ({})", c.count_new, signed(c.count_new as i64 - c.count_old as i64));
            let share = format!("{} ({})", percent(c.share_new), points(c.share_new - c.share_old));
            let mut row = vec![rank, count, share];
            row.extend(c.signature.values().map(escape));
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
    }
    out.into_bytes()
}

pub fn health(report: &HealthReport) -> Vec<u8> {
    let mut out = String::new();
    let _ = writeln!(out, "## DLQ health: {}\n", report.status.name());
    let _ = writeln!(out, "{}.\n", super::health_summary(report));
    if let Some(line) = super::critical_topics(report) {
        let _ = writeln!(out, "**{}**\n", escape(&line));
    }
    if let (Some(by), Some(topics)) = (&report.by, &report.topics) {
        table_head(&mut out, &[escape(by), "status".into(), "depth".into(), "growth/day".into()], 0);
        for t in topics {
            let _ = writeln!(out, "| {} | {} | {} | {} |", escape(&t.topic), t.status.name(), t.depth, t.growth_per_day);
        }
        out.push('\n');
    }
    table_head(&mut out, &["day".into(), "count".into()], 0);
    for d in &report.per_day {
        let _ = writeln!(out, "| {} | {} |", d.day, d.count);
    }
    out.into_bytes()
}

fn table_head(out: &mut String, header: &[String], numeric: usize) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let align: Vec<&str> = header.iter().enumerate().map(|(i, _)| if i < numeric { "---:" } else { "---" }).collect();
    let _ = writeln!(out, "| {} |", align.join(" | "));
}

/// Escapes Markdown and inline-HTML syntax; newlines become spaces.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    if value.is_empty() {
        out.push_str("(empty)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::escape;

    #[test]
    fn dump_values_cannot_break_the_table_or_inject_html() {
        assert_eq!(escape("a|b"), "a\\|b");
        assert_eq!(escape("<script>x</script>"), "&lt;script&gt;x&lt;/script&gt;");
        assert_eq!(escape("low_confidence"), "low\\_confidence");
        assert_eq!(escape("line\nbreak"), "line break");
    }
}
