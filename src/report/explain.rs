//! `rank --explain`: one bucket's first messages, each templated field raw, its template, and
//! the values each rule masked.

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
        for (field, raw, explained) in &example.fields {
            let _ = writeln!(out, "  {field}: {raw}");
            let _ = writeln!(out, "  template: {}", explained.template);
            for mask in &explained.masks {
                let _ = writeln!(out, "    {:<15} {}", mask.rule, mask.value);
            }
        }
    }
    out
}
