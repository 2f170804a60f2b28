//! A profile maps a dump's fields to the roles dlqf needs (id, time, attempts, signature).
//! Built-ins cover the two seed formats; any other dump is described in a small TOML file.

mod builtin;
pub mod classify;
pub mod template;

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// How one signature field is normalised so that one cause is one bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Normalizer {
    /// The value as it is.
    None,
    /// Leading and trailing whitespace removed.
    Trim,
    /// Trimmed, then lowercased.
    Lower,
    /// A message template: variable tokens masked to `<*>` (see `template`).
    Template,
    /// An error category: the field's value lowercased when present, otherwise classified
    /// from the error type and message fields named here.
    Category { type_field: String, message_field: String },
}

impl Normalizer {
    /// Normalisers that need the whole row (or are costly) run per row; the cheap ones run
    /// once per distinct raw value after grouping, which is where the speed comes from.
    pub fn is_per_row(&self) -> bool {
        matches!(self, Normalizer::Template | Normalizer::Category { .. })
    }

    pub fn apply(&self, raw: &str) -> String {
        match self {
            Normalizer::None => raw.to_string(),
            Normalizer::Trim => raw.trim().to_string(),
            Normalizer::Lower => raw.trim().to_lowercase(),
            Normalizer::Template => template::template(raw),
            Normalizer::Category { .. } => raw.trim().to_lowercase(),
        }
    }
}

/// Which values a text field (the id, a signature field) takes; anything else rejects the row.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldType {
    /// Strings only, as in the seeds' typed records: `"stage": 7` is a rejected row.
    #[default]
    String,
    /// Strings, numbers and booleans, numbers and booleans read as their text (`404`, `true`),
    /// for dumps whose codes or ids are numbers.
    Scalar,
}

impl FieldType {
    fn parse(name: &str) -> Option<FieldType> {
        match name {
            "string" => Some(FieldType::String),
            "scalar" => Some(FieldType::Scalar),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct SignatureField {
    /// The field's name in the dump, and in the report.
    pub field: String,
    pub normalizer: Normalizer,
    /// A missing or null required field rejects the row; an optional one reads as "".
    pub required: bool,
    pub field_type: FieldType,
}

#[derive(Clone, Debug)]
pub struct Profile {
    pub name: String,
    pub id_field: String,
    pub id_type: FieldType,
    pub time_field: String,
    pub attempts_field: Option<String>,
    pub signature: Vec<SignatureField>,
    /// Fields whose values, after the id, make the idempotency key `sha256(id|f1|f2…)`;
    /// signature fields count with their normalised value, others trimmed.
    pub key_fields: Vec<String>,
    /// The key field a policy's `replay_revision` replaces (the revision the work runs under).
    pub revision_field: Option<String>,
    /// The signature field holding the failure reason (what `cleared_reasons` matches).
    pub reason_field: Option<String>,
    /// Where a record came from (topic, key, payload, headers): what replay sends back, and
    /// the topic health groups by when no `--by` is given.
    pub origin: crate::origin::Origin,
    /// Where a bucket's error category comes from.
    pub category: CategorySource,
    pub classifier: Arc<classify::Classifier>,
}

/// How a bucket's category follows from its (normalised) signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CategorySource {
    /// A signature field that holds the category (classified per row when the dump has none).
    Field(String),
    /// Classified from signature fields: the message, and the error type if there is one.
    Classify { type_field: Option<String>, message_field: String },
}

impl Profile {
    /// `vision`, `envelope`, or a path to a TOML profile.
    pub fn load(name_or_path: &str) -> Result<Profile> {
        match name_or_path {
            "vision" => Ok(builtin::vision()),
            "envelope" => Ok(builtin::envelope()),
            path => from_toml_file(Path::new(path)),
        }
    }

    /// Whether a signature field holds the category (so reports need no extra column).
    pub fn category_in_signature(&self) -> bool {
        matches!(self.category, CategorySource::Field(_))
    }

    /// Replaces the default classification rules with a file's overrides.
    pub fn with_classification(mut self, path: &Path) -> Result<Profile> {
        self.classifier = Arc::new(classify::Classifier::load(path)?);
        Ok(self)
    }

    pub fn signature_names(&self) -> Vec<String> {
        self.signature.iter().map(|s| s.field.clone()).collect()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: Option<String>,
    id: String,
    #[serde(default = "default_type")]
    id_type: String,
    time: String,
    attempts: Option<String>,
    signature: Vec<SignatureFile>,
    idempotency_key: Option<Vec<String>>,
    revision: Option<String>,
    reason: Option<String>,
    #[serde(default)]
    origin: crate::origin::Origin,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignatureFile {
    field: String,
    #[serde(default = "default_normalize")]
    normalize: String,
    #[serde(default = "default_true")]
    required: bool,
    #[serde(rename = "type", default = "default_type")]
    field_type: String,
    type_field: Option<String>,
    message_field: Option<String>,
}

fn default_normalize() -> String {
    "trim".into()
}
fn default_type() -> String {
    "string".into()
}
fn default_true() -> bool {
    true
}

fn from_toml_file(path: &Path) -> Result<Profile> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!("profile `{}`: not a built-in profile (vision, envelope) and not a readable file", path.display())
    })?;
    from_toml(&text, &path.display().to_string())
}

pub fn from_toml(text: &str, origin: &str) -> Result<Profile> {
    let file: ProfileFile = toml::from_str(text).with_context(|| format!("profile {origin}"))?;
    if file.signature.is_empty() {
        bail!("profile {origin}: `signature` needs at least one field");
    }
    let mut signature = Vec::new();
    for s in file.signature {
        let normalizer = match s.normalize.as_str() {
            "none" => Normalizer::None,
            "trim" => Normalizer::Trim,
            "lower" => Normalizer::Lower,
            "template" => Normalizer::Template,
            "category" => Normalizer::Category {
                type_field: s.type_field.clone().unwrap_or_else(|| "error_type".into()),
                message_field: s.message_field.clone().unwrap_or_else(|| "error_message".into()),
            },
            other => bail!(
                "profile {origin}: field `{}`: unknown normaliser `{other}` (expected none, trim, lower, template or category)",
                s.field
            ),
        };
        let Some(field_type) = FieldType::parse(&s.field_type) else {
            bail!("profile {origin}: field `{}`: unknown type `{}` (expected string or scalar)", s.field, s.field_type);
        };
        signature.push(SignatureField { field: s.field, normalizer, required: s.required, field_type });
    }
    let Some(id_type) = FieldType::parse(&file.id_type) else {
        bail!("profile {origin}: unknown id_type `{}` (expected string or scalar)", file.id_type);
    };
    let names: Vec<&str> = signature.iter().map(|s| s.field.as_str()).collect();
    if let Some(r) = &file.reason {
        if !names.contains(&r.as_str()) {
            bail!("profile {origin}: reason field `{r}` is not one of the signature fields");
        }
    }
    let key_fields = file.idempotency_key.unwrap_or_else(|| names.iter().map(|s| s.to_string()).collect());
    let category_field = signature.iter().find(|s| matches!(s.normalizer, Normalizer::Category { .. }));
    let category = match (category_field, &file.reason) {
        (Some(f), _) => CategorySource::Field(f.field.clone()),
        (None, Some(reason)) => CategorySource::Classify { type_field: None, message_field: reason.clone() },
        (None, None) => CategorySource::Classify { type_field: None, message_field: names.last().expect("a signature field").to_string() },
    };
    Ok(Profile {
        category,
        classifier: Arc::default(),
        name: file.name.unwrap_or_else(|| origin.to_string()),
        id_field: file.id,
        id_type,
        time_field: file.time,
        attempts_field: file.attempts,
        signature,
        key_fields,
        revision_field: file.revision,
        reason_field: file.reason,
        origin: file.origin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_profile_names_roles_and_normalisers() {
        let p = from_toml(
            r#"
            name = "orders"
            id = "order_id"
            time = "failed_at"
            attempts = "retry_count"
            [[signature]]
            field = "error_type"
            [[signature]]
            field = "error"
            normalize = "template"
            "#,
            "test",
        )
        .unwrap();
        assert_eq!(p.name, "orders");
        assert_eq!(p.signature_names(), ["error_type", "error"]);
        assert_eq!(p.signature[0].normalizer, Normalizer::Trim);
        assert_eq!(p.signature[1].normalizer, Normalizer::Template);
    }

    #[test]
    fn toml_profile_rejects_unknown_normaliser_by_name() {
        let err = from_toml("id='a'\ntime='t'\n[[signature]]\nfield='x'\nnormalize='upper'\n", "p.toml").unwrap_err();
        assert!(format!("{err:#}").contains("unknown normaliser `upper`"), "{err:#}");
    }

    #[test]
    fn lower_trims_and_lowercases_unicode() {
        assert_eq!(Normalizer::Lower.apply("  Low_Confidence \t"), "low_confidence");
        assert_eq!(Normalizer::Lower.apply("ÜBERBELICHTET"), "überbelichtet");
        assert_eq!(Normalizer::Trim.apply(" det-v8.0 "), "det-v8.0");
        assert_eq!(Normalizer::None.apply(" X "), " X ");
    }
}
