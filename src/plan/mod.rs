//! `plan`: turns records into a replay manifest for review. Every message gets an idempotency
//! key, a gate decision and its attempt cap; entries follow the inputs in name order.

pub mod fix;
pub mod policy;
pub mod summary;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use serde::Serialize;

use crate::manifest::Decision;
use crate::profile::Profile;
use crate::signature::Signature;
use crate::source::layout::Layout;
use crate::source::{FullRow, Record};
use fix::Fixes;
use policy::Policy;

/// An entry about to be written; its record may still be the dump's own JSON text.
pub struct PlannedEntry<'a> {
    pub key: String,
    pub decision: Decision,
    pub signature: Signature,
    pub id: String,
    pub attempts: i64,
    pub max_attempts: i64,
    pub record: Record<'a>,
}

#[derive(Serialize)]
struct EntryHead<'a> {
    key: &'a str,
    decision: Decision,
    signature: &'a Signature,
    id: &'a str,
    attempts: i64,
    max_attempts: i64,
}

/// One entry as a manifest line (with its newline), in `Entry`'s field order.
pub fn entry_line(entry: &PlannedEntry) -> Vec<u8> {
    let head = EntryHead {
        key: &entry.key,
        decision: entry.decision,
        signature: &entry.signature,
        id: &entry.id,
        attempts: entry.attempts,
        max_attempts: entry.max_attempts,
    };
    let mut bytes = serde_json::to_vec(&head).expect("entries serialise");
    bytes.pop();
    bytes.extend_from_slice(b",\"record\":");
    match &entry.record {
        Record::Text(text) => bytes.extend_from_slice(text.as_bytes()),
        Record::Object(map) => serde_json::to_writer(&mut bytes, map).expect("records serialise"),
    }
    bytes.extend_from_slice(b"}\n");
    bytes
}

/// `sha256(id|part|part…)` as lowercase hex, first 16 characters (the seed's key).
pub fn idempotency_key(id: &str, parts: &[&str]) -> String {
    let mut text = String::from(id);
    for p in parts {
        text.push('|');
        text.push_str(p);
    }
    let digest = Sha256::digest(text.as_bytes());
    crate::manifest::hex(&digest[..8])
}

pub struct Planner<'a> {
    pub profile: &'a Profile,
    pub layout: &'a Layout,
    pub policy: &'a Policy,
    pub fixes: &'a Fixes,
    pub signature_fields: Vec<String>,
}

impl Planner<'_> {
    /// The manifest entry for one record, or None when the policy's filter leaves it out.
    pub fn entry<'r>(&self, row: FullRow<'r>) -> Option<PlannedEntry<'r>> {
        let values = self.layout.finish_signature(row.key);
        let signature = Signature::new(&self.signature_fields, &values);
        if !self.policy.selects(&signature) {
            return None;
        }
        let reason = self.profile.reason_field.as_deref().and_then(|f| signature.get(f));
        let route = self.policy.routing.then(|| self.layout.classifier().routing(&self.layout.category_of(&values)));
        let decision = self.policy.decide(row.facts.attempts, reason, &signature, route);
        let max_attempts = self.policy.cap(route);
        let key = self.key(&row.facts.id, &signature, &row.record);
        let record = if self.fixes.applies_to(&signature) {
            let mut object = row.record.into_object();
            self.fixes.apply(&signature, &mut object);
            Record::Object(object)
        } else {
            row.record
        };
        Some(PlannedEntry { key, decision, signature, id: row.facts.id.into_owned(), attempts: row.facts.attempts, max_attempts, record })
    }

    fn key(&self, id: &str, signature: &Signature, record: &Record) -> String {
        let parts: Vec<String> = self
            .profile
            .key_fields
            .iter()
            .map(|field| {
                if self.profile.revision_field.as_deref() == Some(field.as_str()) {
                    if let Some(r) = &self.policy.replay_revision {
                        return r.trim().to_string();
                    }
                }
                if let Some(v) = signature.get(field) {
                    return v.to_string();
                }
                let value = match record {
                    Record::Object(map) => map.get(field).cloned(),
                    Record::Text(text) => serde_json::from_str::<Map<String, Value>>(text).ok().and_then(|mut m| m.remove(field)),
                };
                match value {
                    Some(Value::String(s)) => s.trim().to_string(),
                    Some(Value::Null) | None => String::new(),
                    Some(other) => other.to_string(),
                }
            })
            .collect();
        let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
        idempotency_key(id, &refs)
    }
}

#[cfg(test)]
mod tests {
    use super::idempotency_key;

    #[test]
    fn key_is_the_first_16_hex_of_sha256_of_the_seed_string() {
        // sha256("cap-1|inference|det-v8.0"), computed with coreutils' sha256sum.
        assert_eq!(idempotency_key("cap-1", &["inference", "det-v8.0"]), "e5723547563bdd9f");
    }
}
