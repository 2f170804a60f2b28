//! The review summary of a manifest (what `plan` prints and `show` renders): digest, counts
//! per decision, and counts per signature and decision.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::manifest::{Decision, DecisionCounts, Header};
use crate::report::markdown::escape;
use crate::report::table;
use crate::signature::Signature;

/// Counts per signature, in order of total count (descending) then signature.
#[derive(Default)]
pub struct Review {
    pub by_signature: BTreeMap<Signature, DecisionCounts>,
}

impl Review {
    pub fn add(&mut self, signature: &Signature, decision: Decision) {
        match self.by_signature.get_mut(signature) {
            Some(counts) => counts.add(decision),
            None => {
                let mut counts = DecisionCounts::default();
                counts.add(decision);
                self.by_signature.insert(signature.clone(), counts);
            }
        }
    }

    fn rows(&self) -> Vec<(&Signature, &DecisionCounts)> {
        let mut rows: Vec<_> = self.by_signature.iter().collect();
        rows.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then_with(|| a.0.cmp(b.0)));
        rows
    }

    pub fn table(&self, header: &Header) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "manifest  {} · {} entries", header.manifest, header.entries);
        let _ = writeln!(out, "digest    {} (manifest_sha256: approve it with execute --expect-digest)", header.manifest_sha256);
        let _ = writeln!(out, "entries   sha256 {}", header.entries_sha256);
        let _ = writeln!(out, "created   {} by dlqf {} · profile {} · {} rejected rows", header.created_at, header.tool_version, header.profile, header.rejected);
        let _ = writeln!(out, "decisions {}", header.counts);
        let _ = writeln!(out, "policy    {}", header.policy);
        let Some((first, _)) = self.by_signature.iter().next() else {
            return out;
        };
        let mut headers: Vec<String> = first.0.iter().map(|(f, _)| f.clone()).collect();
        headers.extend(Decision::ALL.iter().map(|d| d.name().to_string()));
        let rows: Vec<Vec<String>> = self
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

    pub fn markdown(&self, header: &Header) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "## Replay manifest for review\n");
        let _ = writeln!(out, "- digest (manifest_sha256, approve with `execute --expect-digest`): `{}`", header.manifest_sha256);
        let _ = writeln!(out, "- entries: {} ({}), entries_sha256 `{}`; rejected rows: {}", header.entries, header.counts, header.entries_sha256, header.rejected);
        let _ = writeln!(out, "- created {} by dlqf {}, profile `{}`", header.created_at, header.tool_version, escape(&header.profile));
        let _ = writeln!(out, "- policy: `{}`\n", header.policy.to_string().replace('`', "'"));
        let Some((first, _)) = self.by_signature.iter().next() else {
            return out;
        };
        let mut cols: Vec<String> = first.0.iter().map(|(f, _)| escape(f)).collect();
        cols.extend(Decision::ALL.iter().map(|d| escape(d.name())));
        let _ = writeln!(out, "| {} |", cols.join(" | "));
        let _ = writeln!(out, "|{}", " --- |".repeat(cols.len()));
        for (sig, counts) in self.rows() {
            let mut row: Vec<String> = sig.values().map(escape).collect();
            row.extend(Decision::ALL.iter().map(|d| counts.get(*d).to_string()));
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        out
    }
}
