//! `rank --explain`: one bucket's first messages, each templated field raw, its template, and
//! the values each rule masked; a stack trace's root cause and the frames chosen.

use std::fmt::Write;

use crate::analyze::explain::Example;

/// `rank` is the bucket's rank, `of` how many buckets there are, `count` its messages.
pub fn text(rank: usize, of: usize, count: u64, signature: &[(String, String)], examples: &[Example]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "bucket {rank} of {of}: {count} messages");
    for (field, value) in signature {
        let _ = writeln!(out, "  {field}: {value}");
    }
    let _ = writeln!(out, "\nthe first {} in input order:", examples.len());
    for example in examples {
        let _ = writeln!(out, "\n{}", example.id);
        for f in &example.fields {
            // A stack trace's first line stands for it; its frames chosen follow.
            let mut lines = f.raw.lines();
            let first = lines.next().unwrap_or("");
            let more = lines.count();
            let raw = if more > 0 { format!("{first} (and {more} more lines)") } else { first.to_string() };
            let _ = writeln!(out, "  {}: {raw}", f.field);
            let _ = writeln!(out, "  {}: {}", f.label, f.explained.template);
            for mask in &f.explained.masks {
                let _ = writeln!(out, "    {:<15} {}", mask.rule, mask.value);
            }
        }
    }
    out
}
