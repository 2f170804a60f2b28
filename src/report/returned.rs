//! What came back after a replay, for people: the totals and the matching rule, then per
//! replayed signature how many came back and with which causes (a table, or Markdown).

use std::fmt::Write;

use super::markdown::escape;
use super::table;
use crate::returned::{CameBackWith, ReturnedReport};
use crate::signature::Signature;

/// "same cause ×15; error_type=SchemaError ×5": what a signature's messages came back with,
/// a new cause by the fields that changed.
fn came_back_with(replayed: &Signature, with: &[CameBackWith], escape: fn(&str) -> String) -> String {
    let parts: Vec<String> = with
        .iter()
        .map(|c| {
            let cause = if c.same_cause {
                "same cause".to_string()
            } else {
                let changed = c.signature.0.iter().filter(|(f, v)| replayed.get(f) != Some(v.as_str())).map(|(f, v)| format!("{f}={v}"));
                escape(&changed.collect::<Vec<_>>().join(", "))
            };
            format!("{cause} ×{}", c.count)
        })
        .collect();
    parts.join("; ")
}

fn summary(report: &ReturnedReport) -> [String; 5] {
    let from = &report.replayed_from;
    let kind = if from.kind == "manifest" { "manifest (every replay entry)" } else { "execute report (what the run delivered)" };
    [
        format!("{} of {} replayed messages came back (share {})", report.came_back, report.replayed, report.share),
        format!("{kind} {} · manifest_sha256 {} · profile {}", from.path, from.manifest, report.profile),
        format!("{} records read ({} rejected); {} are messages of this replay", report.inputs.records, report.inputs.rejected, report.inputs.from_this_replay),
        format!("{} by the dlqf-idempotency-key header, {} by origin key + payload SHA-256", report.matched.by_header, report.matched.by_origin_key_and_payload),
        report.rule.clone(),
    ]
}

pub fn table(report: &ReturnedReport) -> String {
    let mut out = String::new();
    for (label, line) in ["returned", "replayed", "later", "matched", "rule"].iter().zip(summary(report)) {
        let _ = writeln!(out, "{label:<9} {line}");
    }
    if let Some(alert) = &report.alert {
        let _ = writeln!(out, "alert     {} (--fail-on-returned {})", if alert.alert { "yes" } else { "no" }, alert.share);
    }
    let Some(first) = report.signatures.first() else {
        return out;
    };
    let mut headers: Vec<String> = ["replayed", "came back", "share"].map(String::from).to_vec();
    headers.extend(first.signature.0.iter().map(|(f, _)| f.clone()));
    headers.push("came back with".into());
    // One cause a row: the first beside its signature, the others on rows of their own.
    let mut rows: Vec<Vec<String>> = Vec::new();
    for s in &report.signatures {
        let mut row = vec![s.replayed.to_string(), s.came_back.to_string(), format!("{:.4}", s.share)];
        row.extend(s.signature.values().map(str::to_string));
        let mut causes = s.came_back_with.iter().map(|c| came_back_with(&s.signature, std::slice::from_ref(c), |v| v.to_string()));
        row.push(causes.next().unwrap_or_default());
        rows.push(row);
        for cause in causes {
            let mut more = vec![String::new(); headers.len() - 1];
            more.push(cause);
            rows.push(more);
        }
    }
    out.push('\n');
    out.push_str(&table::render(&headers, &rows, 3));
    out
}

pub fn markdown(report: &ReturnedReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## What came back after the replay\n");
    for (label, line) in ["returned", "replayed", "later dumps", "matched", "rule"].iter().zip(summary(report)) {
        let _ = writeln!(out, "- {label}: {}", escape(&line));
    }
    if let Some(alert) = &report.alert {
        let _ = writeln!(out, "- alert: {} (`--fail-on-returned {}`)", if alert.alert { "yes" } else { "no" }, alert.share);
    }
    let Some(first) = report.signatures.first() else {
        return out;
    };
    let mut cols: Vec<String> = first.signature.0.iter().map(|(f, _)| escape(f)).collect();
    cols.extend(["replayed", "came back", "share", "came back with"].map(String::from));
    let _ = writeln!(out, "\n| {} |", cols.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(cols.len()));
    for s in &report.signatures {
        let mut row: Vec<String> = s.signature.values().map(escape).collect();
        row.extend([s.replayed.to_string(), s.came_back.to_string(), format!("{:.4}", s.share), came_back_with(&s.signature, &s.came_back_with, escape)]);
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out
}
