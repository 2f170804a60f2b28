//! Declared repairs applied at plan time, per signature, so the reviewed manifest shows the
//! record exactly as it will be replayed: set fields, remove fields, a JSON merge-patch.

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::signature::Signature;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fixes {
    #[serde(default)]
    pub fix: Vec<Fix>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fix {
    /// Normalised signature values a message must have for this repair to apply.
    pub signature: Map<String, Value>,
    #[serde(default)]
    pub set: Map<String, Value>,
    #[serde(default)]
    pub remove: Vec<String>,
    /// RFC 7396: objects merge recursively, `null` removes.
    #[serde(default)]
    pub merge_patch: Option<Value>,
}

impl Fixes {
    /// Reads TOML (or JSON when the file name ends in `.json`).
    pub fn load(path: &Path) -> Result<Fixes> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
        let fixes: Fixes = if path.extension().is_some_and(|e| e == "json") {
            serde_json::from_str(&text).with_context(|| format!("fix file {}", path.display()))?
        } else {
            toml::from_str(&text).with_context(|| format!("fix file {}", path.display()))?
        };
        for fix in &fixes.fix {
            if fix.signature.is_empty() {
                bail!("fix file {}: every [[fix]] needs a `signature` to match", path.display());
            }
        }
        Ok(fixes)
    }

    pub fn applies_to(&self, signature: &Signature) -> bool {
        self.fix.iter().any(|fix| fix.matches(signature))
    }

    /// Applies every matching repair in file order; returns whether any applied.
    pub fn apply(&self, signature: &Signature, record: &mut Map<String, Value>) -> bool {
        let mut applied = false;
        for fix in &self.fix {
            if !fix.matches(signature) {
                continue;
            }
            for (field, value) in &fix.set {
                record.insert(field.clone(), value.clone());
            }
            for field in &fix.remove {
                record.shift_remove(field);
            }
            if let Some(patch) = &fix.merge_patch {
                let mut whole = Value::Object(std::mem::take(record));
                merge_patch(&mut whole, patch);
                if let Value::Object(map) = whole {
                    *record = map;
                }
            }
            applied = true;
        }
        applied
    }
}

impl Fix {
    fn matches(&self, signature: &Signature) -> bool {
        self.signature.iter().all(|(f, v)| signature.get(f).is_some_and(|have| v.as_str() == Some(have)))
    }
}

/// RFC 7396 JSON merge-patch.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let map = target.as_object_mut().expect("made an object");
    for (key, value) in patch {
        if value.is_null() {
            map.shift_remove(key);
        } else {
            merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7396_examples() {
        let mut doc = json!({"title": "Goodbye!", "author": {"givenName": "John", "familyName": "Doe"}, "tags": ["example", "sample"], "content": "x"});
        merge_patch(&mut doc, &json!({"title": "Hello!", "phoneNumber": "+01-123-456-7890", "author": {"familyName": null}, "tags": ["example"]}));
        assert_eq!(doc, json!({"title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"], "content": "x", "phoneNumber": "+01-123-456-7890"}));
    }

    #[test]
    fn fixes_apply_only_to_matching_signatures() {
        let fixes: Fixes = toml::from_str(
            "[[fix]]\nsignature = { reject_reason = 'schema_invalid' }\nset = { schema_version = 2 }\nremove = ['legacy']\nmerge_patch = { meta = { repaired = true } }\n",
        )
        .unwrap();
        let sig = |r: &str| Signature(vec![("reject_reason".into(), r.into())]);
        let mut record = json!({"id": "a", "legacy": 1}).as_object().unwrap().clone();
        assert!(fixes.apply(&sig("schema_invalid"), &mut record));
        assert_eq!(Value::Object(record), json!({"id": "a", "schema_version": 2, "meta": {"repaired": true}}));
        let mut other = json!({"id": "b", "legacy": 1}).as_object().unwrap().clone();
        assert!(!fixes.apply(&sig("timeout"), &mut other));
        assert_eq!(Value::Object(other), json!({"id": "b", "legacy": 1}));
    }
}
