//! The review of a manifest for people: its digest, decisions and policy, then counts per
//! signature and decision (the table `plan` prints and `show` renders, or Markdown).

use std::fmt::Write;

use super::markdown::escape;
use super::table;
use crate::manifest::{Decision, Header};
use crate::manifest::order::Basis;
use crate::plan::summary::{KeyOrder, Review};

pub fn table(review: &Review, header: &Header) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "manifest  {} · {} entries", header.manifest, header.entries);
    let _ = writeln!(out, "digest    {} (manifest_sha256: approve it with execute --expect-digest)", header.manifest_sha256);
    let _ = writeln!(out, "entries   sha256 {}", header.entries_sha256);
    let _ = writeln!(out, "created   {} by dlqf {} · profile {} · {} rejected rows", header.created_at, header.tool_version, header.profile, header.rejected);
    let _ = writeln!(out, "decisions {}", header.counts);
    let _ = writeln!(out, "policy    {}", header.policy);
    if let Some(order) = &review.order {
        let _ = writeln!(out, "order     {}", order_text(order, |k| k.to_string()));
    }
    let Some((first, _)) = review.by_signature.iter().next() else {
        return out;
    };
    let mut headers: Vec<String> = first.0.iter().map(|(f, _)| f.clone()).collect();
    headers.extend(Decision::ALL.iter().map(|d| d.name().to_string()));
    let rows: Vec<Vec<String>> = review
        .rows()
        .into_iter()
        .map(|(sig, counts)| {
            let mut row: Vec<String> = sig.values().map(str::to_string).collect();
            row.extend(Decision::ALL.iter().map(|d| counts.get(*d).to_string()));
            row
        })
        .collect();
    out.push('\n');
    out.push_str(&table::render(&headers, &rows, 0));
    out
}

pub fn markdown(review: &Review, header: &Header) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Replay manifest for review\n");
    let _ = writeln!(out, "- digest (manifest_sha256, approve with `execute --expect-digest`): `{}`", header.manifest_sha256);
    let _ = writeln!(out, "- entries: {} ({}), entries_sha256 `{}`; rejected rows: {}", header.entries, header.counts, header.entries_sha256, header.rejected);
    let _ = writeln!(out, "- created {} by dlqf {}, profile `{}`", header.created_at, header.tool_version, escape(&header.profile));
    let _ = writeln!(out, "- policy: `{}`", header.policy.to_string().replace('`', "'"));
    if let Some(order) = &review.order {
        let _ = writeln!(out, "- order: {}", order_text(order, |k| format!("`{}`", k.replace('`', "'"))));
    }
    out.push('\n');
    let Some((first, _)) = review.by_signature.iter().next() else {
        return out;
    };
    let mut cols: Vec<String> = first.0.iter().map(|(f, _)| escape(f)).collect();
    cols.extend(Decision::ALL.iter().map(|d| escape(d.name())));
    let _ = writeln!(out, "| {} |", cols.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(cols.len()));
    for (sig, counts) in review.rows() {
        let mut row: Vec<String> = sig.values().map(escape).collect();
        row.extend(Decision::ALL.iter().map(|d| counts.get(*d).to_string()));
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out
}

/// What `execute --ordered` keeps in order: `12 keys have more than one message (by offset 10,
/// by time 2); the longest chain has 6 (key ord-7)`.
fn order_text(order: &KeyOrder, quote: impl Fn(&str) -> String) -> String {
    let keys: u64 = order.keys.values().sum();
    if keys == 0 {
        return "no key has more than one message".to_string();
    }
    let by: Vec<String> = order.keys.iter().map(|(basis, n)| format!("by {} {n}", basis_name(*basis))).collect();
    let have = if keys == 1 { "key has" } else { "keys have" };
    let mut text = format!("{keys} {have} more than one message ({})", by.join(", "));
    if let Some((length, key)) = &order.longest {
        text.push_str(&format!("; the longest chain has {length} (key {})", quote(key)));
    }
    text
}

fn basis_name(basis: Basis) -> &'static str {
    match basis {
        Basis::Offset => "offset",
        Basis::Time => "time",
        Basis::Manifest => "manifest order",
    }
}
