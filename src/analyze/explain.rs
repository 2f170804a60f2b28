//! Why messages share a bucket: the first few rows of one signature, each templated field
//! shown raw with what every rule masked (a stack trace: the frames chosen), so a reviewer can
//! see they are one cause.

use anyhow::Result;
use serde_json::Value;

use crate::profile::template::{self, Explained};
use crate::profile::{Normalizer, Profile};
use crate::source::{Input, Scan};

/// One row of the bucket: its id and, per templated field, the raw text and its template.
pub struct Example {
    pub id: String,
    pub fields: Vec<ExplainedField>,
}

/// A templated (or stack) field of one row: its name, raw text, and how it was normalised.
pub struct ExplainedField {
    pub field: String,
    pub raw: String,
    /// What the normalised value is called: `template`, or `stack` for a stack trace's.
    pub label: &'static str,
    pub explained: Explained,
}

/// The first `limit` rows (in input order) whose normalised signature is `values`.
pub fn examples(scan: &Scan, inputs: &[Input], profile: &Profile, values: &[String], limit: usize) -> Result<Vec<Example>> {
    let templated: Vec<(&str, &Normalizer)> = profile
        .signature
        .iter()
        .filter(|s| matches!(s.normalizer, Normalizer::Template | Normalizer::LearnedTemplate(_) | Normalizer::Stack(_)))
        .map(|s| (s.field.as_str(), &s.normalizer))
        .collect();
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
                .map(|(field, normalizer)| {
                    let raw = match object.get(*field) {
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => other.to_string(),
                        None => String::new(),
                    };
                    let (label, explained) = match normalizer {
                        Normalizer::Stack(rules) => ("stack", rules.explain(&raw)),
                        Normalizer::LearnedTemplate(learned) => {
                            let mut explained = template::explain(&raw);
                            learned.refine(&mut explained);
                            ("template", explained)
                        }
                        _ => ("template", template::explain(&raw)),
                    };
                    ExplainedField { field: field.to_string(), raw, label, explained }
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
