//! A profile maps a dump's fields to the roles dlqf needs (id, time, attempts, signature).
//! Built-ins cover the two seed formats and the archives real DLQs write (`profiles/`); any
//! other dump is described in a small TOML file of the same form.

mod builtin;
pub mod classify;
pub mod learned;
mod remember;
mod root_cause;
mod search;
pub mod stack;
pub mod template;

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::path::FieldExpr;
use crate::timestamp::TimeFormat;
pub use builtin::BUILT_IN;
pub use root_cause::root_cause;

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
    /// A stack trace's root cause: the innermost exception's type and the template of its
    /// message (a plain message: its template), so one generic wrapper hides no cause.
    RootCause,
    /// A message template, then the learned pattern it matches, if any (see `learned`).
    LearnedTemplate(Arc<learned::Learned>),
    /// A stack trace as its root cause's type and first in-app frames (see `stack`).
    Stack(stack::StackRules),
    /// An error category: the field's value lowercased when present, otherwise classified
    /// from the error type and message fields named here.
    Category { type_field: FieldExpr, message_field: FieldExpr },
}

impl Normalizer {
    /// Normalisers that need the whole row (or are costly) run per row; the cheap ones run
    /// once per distinct raw value after grouping, which is where the speed comes from.
    pub fn is_per_row(&self) -> bool {
        matches!(self, Normalizer::Template | Normalizer::LearnedTemplate(_) | Normalizer::RootCause | Normalizer::Stack(_) | Normalizer::Category { .. })
    }

    pub fn apply(&self, raw: &str) -> String {
        match self {
            Normalizer::None => raw.to_string(),
            Normalizer::Trim => raw.trim().to_string(),
            Normalizer::Lower => raw.trim().to_lowercase(),
            Normalizer::Template => template::template(raw),
            Normalizer::LearnedTemplate(learned) => {
                let template = template::template(raw);
                let pattern = learned.apply(&template).map(str::to_string);
                pattern.unwrap_or(template)
            }
            Normalizer::RootCause => root_cause(raw),
            Normalizer::Stack(rules) => rules.signature(raw),
            Normalizer::Category { .. } => raw.trim().to_lowercase(),
        }
    }

    /// `with` given `apply(raw)`, for the normalisers that run per row: a template or root
    /// cause remembered by its text, a stack signature by its trace's shape, uncopied.
    pub fn with_applied<T>(&self, raw: &str, with: impl FnOnce(&str) -> T) -> T {
        match self {
            Normalizer::Template => remember::with_remembered(remember::Of::Template, raw, || template::template(raw), with),
            Normalizer::RootCause => remember::with_remembered(remember::Of::RootCause, raw, || root_cause(raw), with),
            Normalizer::LearnedTemplate(learned) => {
                // The template remembered by the message's text, then the pattern by the
                // template's (fewer templates than messages: most rows' ids differ).
                let template = remember::with_remembered(remember::Of::Template, raw, || template::template(raw), str::to_string);
                let refine = || learned.apply(&template).map_or_else(|| template.clone(), str::to_string);
                remember::with_remembered(remember::Of::Learned(learned.serial), &template, refine, with)
            }
            Normalizer::Stack(rules) => rules.with_signature(raw, with),
            other => with(&other.apply(raw)),
        }
    }

    /// How the normaliser enters a state's rules digest (as it always has for the forms
    /// before paths, so states saved then still merge).
    pub fn describe(&self) -> String {
        match self {
            Normalizer::Category { type_field, message_field } => {
                format!("Category {{ type_field: {:?}, message_field: {:?} }}", type_field.text, message_field.text)
            }
            other => format!("{other:?}"),
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
    /// The field's name in reports (and the name policies and key fields use).
    pub field: String,
    /// Where its value is read from.
    pub expr: FieldExpr,
    pub normalizer: Normalizer,
    /// A missing or null required field rejects the row; an optional one reads as "".
    pub required: bool,
    pub field_type: FieldType,
}

/// A message's id: one field, or several joined with `/` (`topic/partition/offset`).
#[derive(Clone, Debug)]
pub struct IdSpec {
    /// None: every record's id is its digest.
    pub parts: Vec<FieldExpr>,
    /// What a record without every part gets.
    pub missing: IdMissing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdMissing {
    /// The row is rejected, naming the field.
    Reject,
    /// The id is `sha256:` and the first 16 hex digits of the SHA-256 of the record's JSON
    /// (the line as written; a Parquet row as the manifest writes it).
    Digest,
}

impl IdSpec {
    fn one(field: &str) -> IdSpec {
        IdSpec { parts: vec![FieldExpr::top_level(field)], missing: IdMissing::Reject }
    }

    /// How the id is named in messages and digests: the field, or the parts joined by ` + `.
    pub fn describe(&self) -> String {
        match self.parts.as_slice() {
            [] => "sha256 of the record".to_string(),
            parts => parts.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join(" + "),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Profile {
    pub name: String,
    pub id: IdSpec,
    pub id_type: FieldType,
    pub time: FieldExpr,
    pub time_format: TimeFormat,
    pub attempts: Option<FieldExpr>,
    pub signature: Vec<SignatureField>,
    /// Fields whose values, after the id, make the idempotency key `sha256(id|f1|f2…)`;
    /// signature fields (by name) count with their normalised value, others (expressions into
    /// the record) trimmed.
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
    /// Fields that hold personal values (`customer.name`): `redact` replaces them whole.
    pub personal: Vec<FieldExpr>,
    /// `redact` ends a card's token with the card's last four digits (`card_…_1111`), as a
    /// receipt prints them, so a reader can match a failure to a customer's card.
    pub keep_card_last_four: bool,
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
    /// A built-in profile by name (`BUILT_IN`), or a path to a TOML profile.
    pub fn load(name_or_path: &str) -> Result<Profile> {
        match builtin::load(name_or_path) {
            Some(profile) => Ok(profile),
            None => from_toml_file(Path::new(name_or_path)),
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

    /// The profile with learned templates applied after every `template` field's rules.
    pub fn with_learned(mut self, learned: Arc<learned::Learned>) -> Result<Profile> {
        let mut any = false;
        for field in &mut self.signature {
            if matches!(field.normalizer, Normalizer::Template | Normalizer::LearnedTemplate(_)) {
                field.normalizer = Normalizer::LearnedTemplate(learned.clone());
                any = true;
            }
        }
        if !any {
            bail!("profile `{}` has no field normalised with `template`: learned templates apply to none", self.name);
        }
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
    /// What the profile reads, and the public sources of its layout (documentation only).
    #[serde(default)]
    #[allow(dead_code)]
    about: Vec<String>,
    id: Option<OneOrMany>,
    id_missing: Option<String>,
    #[serde(default = "default_type")]
    id_type: String,
    time: String,
    time_format: Option<String>,
    attempts: Option<String>,
    signature: Vec<SignatureFile>,
    idempotency_key: Option<Vec<String>>,
    revision: Option<String>,
    reason: Option<String>,
    /// Which signature fields a bucket's category is classified from (else the reason).
    classify: Option<ClassifyFile>,
    #[serde(default)]
    origin: crate::origin::Origin,
    /// Fields `redact` always replaces, beside the values it detects.
    #[serde(default)]
    personal: Vec<String>,
    #[serde(default)]
    keep_card_last_four: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClassifyFile {
    #[serde(rename = "type")]
    error_type: Option<String>,
    message: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SignatureFile {
    name: Option<String>,
    field: String,
    #[serde(default = "default_normalize")]
    normalize: String,
    #[serde(default = "default_true")]
    required: bool,
    #[serde(rename = "type", default = "default_type")]
    field_type: String,
    type_field: Option<String>,
    message_field: Option<String>,
    /// For `normalize = "template"`: a file of learned templates (`dlqf templates learn`),
    /// relative to the profile's folder.
    templates: Option<String>,
    /// For `normalize = "stack"`: how many frames, and which are the application's.
    frames: Option<usize>,
    in_app: Option<Vec<String>>,
    not_in_app: Option<Vec<String>>,
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
        format!("profile `{}`: not a built-in profile ({}) and not a readable file", path.display(), BUILT_IN.join(", "))
    })?;
    from_toml_in(&text, &path.display().to_string(), path.parent().unwrap_or(Path::new(".")))
}

/// A field expression of a profile, or an error naming the profile and what is wrong.
fn expr(text: &str, origin: &str) -> Result<FieldExpr> {
    FieldExpr::parse(text).map_err(|e| anyhow::anyhow!("profile {origin}: {e}"))
}

pub fn from_toml(text: &str, origin: &str) -> Result<Profile> {
    from_toml_in(text, origin, Path::new("."))
}

/// A profile's TOML, the files it names (learned templates) read from `base`.
fn from_toml_in(text: &str, origin: &str, base: &Path) -> Result<Profile> {
    let file: ProfileFile = toml::from_str(text).with_context(|| format!("profile {origin}"))?;
    if file.signature.is_empty() {
        bail!("profile {origin}: `signature` needs at least one field");
    }
    let mut signature: Vec<SignatureField> = Vec::new();
    for s in file.signature {
        let normalizer = match s.normalize.as_str() {
            "none" => Normalizer::None,
            "trim" => Normalizer::Trim,
            "lower" => Normalizer::Lower,
            "template" => Normalizer::Template,
            "root_cause" => Normalizer::RootCause,
            "stack" => Normalizer::Stack(stack::StackRules::new(
                s.frames.unwrap_or(stack::DEFAULT_FRAMES),
                stack::InApp { in_app: s.in_app.clone().unwrap_or_default(), not_in_app: s.not_in_app.clone().unwrap_or_default() },
            )),
            "category" => Normalizer::Category {
                type_field: expr(s.type_field.as_deref().unwrap_or("error_type"), origin)?,
                message_field: expr(s.message_field.as_deref().unwrap_or("error_message"), origin)?,
            },
            other => bail!(
                "profile {origin}: field `{}`: unknown normaliser `{other}` (expected none, trim, lower, template, root_cause, stack or category)",
                s.field
            ),
        };
        let normalizer = match (&s.templates, normalizer) {
            (None, normalizer) => normalizer,
            (Some(file), Normalizer::Template) => {
                let path = base.join(file);
                Normalizer::LearnedTemplate(Arc::new(learned::Learned::load(&path).with_context(|| format!("profile {origin}: field `{}`", s.field))?))
            }
            (Some(_), _) => bail!("profile {origin}: field `{}`: templates apply to normalize = \"template\" only", s.field),
        };
        let stack_options = s.frames.is_some() || s.in_app.is_some() || s.not_in_app.is_some();
        if stack_options && !matches!(normalizer, Normalizer::Stack(_)) {
            bail!("profile {origin}: field `{}`: frames, in_app and not_in_app apply to normalize = \"stack\" only", s.field);
        }

        let Some(field_type) = FieldType::parse(&s.field_type) else {
            bail!("profile {origin}: field `{}`: unknown type `{}` (expected string or scalar)", s.field, s.field_type);
        };
        let expr = expr(&s.field, origin)?;
        let name = s.name.unwrap_or_else(|| expr.text.clone());
        if signature.iter().any(|f| f.field == name) {
            bail!("profile {origin}: two signature fields are named `{name}` (give one a `name`)");
        }
        signature.push(SignatureField { field: name, expr, normalizer, required: s.required, field_type });
    }
    let Some(id_type) = FieldType::parse(&file.id_type) else {
        bail!("profile {origin}: unknown id_type `{}` (expected string or scalar)", file.id_type);
    };
    let names: Vec<&str> = signature.iter().map(|s| s.field.as_str()).collect();
    if let Some(r) = &file.reason {
        if !names.contains(&r.as_str()) {
            bail!("profile {origin}: reason field `{r}` is not one of the signature fields ({})", names.join(", "));
        }
    }
    let parts = match file.id {
        None => Vec::new(),
        Some(OneOrMany::One(one)) => vec![expr(&one, origin)?],
        Some(OneOrMany::Many(many)) => many.iter().map(|p| expr(p, origin)).collect::<Result<_>>()?,
    };
    let missing = match (file.id_missing.as_deref(), parts.is_empty()) {
        (None, false) | (Some("reject"), false) => IdMissing::Reject,
        (None | Some("digest"), _) => IdMissing::Digest,
        (Some("reject"), true) => bail!("profile {origin}: id_missing = \"reject\" needs an `id`"),
        (Some(other), _) => bail!("profile {origin}: unknown id_missing `{other}` (expected reject or digest)"),
    };
    let time_format = match file.time_format.as_deref() {
        None => TimeFormat::Rfc3339,
        Some(name) => TimeFormat::parse(name).with_context(|| {
            format!("profile {origin}: unknown time_format `{name}` (expected rfc3339, epoch_s, epoch_ms, epoch_us, epoch_ns, epoch_s_or_ms, or a strftime pattern such as \"%Y-%m-%d %H:%M:%S:%6f Z\")")
        })?,
    };
    for key_field in file.idempotency_key.iter().flatten() {
        if !names.contains(&key_field.as_str()) {
            expr(key_field, origin)?;
        }
    }
    file.origin.check().map_err(|e| anyhow::anyhow!("profile {origin}: {e}"))?;
    let key_fields = file.idempotency_key.unwrap_or_else(|| names.iter().map(|s| s.to_string()).collect());
    let category_field = signature.iter().find(|s| matches!(s.normalizer, Normalizer::Category { .. }));
    if let Some(classify) = &file.classify {
        for name in classify.error_type.iter().chain([&classify.message]) {
            if !names.contains(&name.as_str()) {
                bail!("profile {origin}: classify field `{name}` is not one of the signature fields ({})", names.join(", "));
            }
        }
    }
    let category = match (category_field, &file.reason) {
        (Some(f), _) => CategorySource::Field(f.field.clone()),
        (None, _) if file.classify.is_some() => {
            let classify = file.classify.as_ref().expect("checked");
            CategorySource::Classify { type_field: classify.error_type.clone(), message_field: classify.message.clone() }
        }
        (None, Some(reason)) => CategorySource::Classify { type_field: None, message_field: reason.clone() },
        (None, None) => CategorySource::Classify { type_field: None, message_field: names.last().expect("a signature field").to_string() },
    };
    Ok(Profile {
        category,
        classifier: Arc::default(),
        name: file.name.unwrap_or_else(|| origin.to_string()),
        id: IdSpec { parts, missing },
        id_type,
        time: expr(&file.time, origin)?,
        time_format,
        attempts: file.attempts.as_deref().map(|a| expr(a, origin)).transpose()?,
        signature,
        key_fields,
        revision_field: file.revision,
        reason_field: file.reason,
        origin: file.origin,
        personal: file.personal.iter().map(|p| expr(p, origin)).collect::<Result<_>>()?,
        keep_card_last_four: file.keep_card_last_four,
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
