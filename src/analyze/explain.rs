//! Why messages share a bucket: the first few rows of one signature, each templated field
//! shown raw with what every rule masked, so a reviewer can see they are one cause.

use anyhow::Result;
use serde_json::Value;

use crate::profile::template::{self, Explained};
use crate::profile::{Normalizer, Profile};
use crate::source::{Input, Scan};

/// One row of the bucket: its id and, per templated field, the raw text and its template.
pub struct Example {
    pub id: String,
    pub fields: Vec<(String, String, Explained)>,
}

/// The first `limit` rows (in input order) whose normalised signature is `values`.
pub fn examples(scan: &Scan, inputs: &[Input], profile: &Profile, values: &[String], limit: usize) -> Result<Vec<Example>> {
    let templated: Vec<&str> =
        profile.signature.iter().filter(|s| s.normalizer == Normalizer::Template).map(|s| s.field.as_str()).collect();
    let mut found = Vec::new();
    scan.records(
        inputs,
        Vec::new,
        |batch: &mut Vec<Example>, row| {
            if batch.len() >= limit || scan.layout.finish_signature(row.key) != values {
                return;
            }
            let object = row.record.into_object();
            let fields = templated
                .iter()
                .map(|field| {
                    let raw = match object.get(*field) {
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    };
                    let explained = template::explain(&raw);
                    (field.to_string(), raw, explained)
                })
                .collect();
            batch.push(Example { id: row.facts.id.into_owned(), fields });
        },
        |batch| {
            found.extend(batch.into_iter().take(limit - found.len().min(limit)));
            Ok(())
        },
    )?;
    Ok(found)
}
