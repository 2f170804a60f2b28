//! The two built-in profiles, exactly as the product spec describes them.

use super::{CategorySource, FieldType, Normalizer, Profile, SignatureField};
use crate::origin::Origin;

fn field(name: &str, normalizer: Normalizer) -> SignatureField {
    SignatureField { field: name.into(), normalizer, required: true, field_type: FieldType::String }
}

/// The vision pipeline's typed DLQ record (seed `vision-dlq-forensics`).
pub fn vision() -> Profile {
    Profile {
        name: "vision".into(),
        id_field: "capture_id".into(),
        id_type: FieldType::String,
        time_field: "capture_timestamp".into(),
        attempts_field: Some("attempts".into()),
        signature: vec![
            field("stage", Normalizer::Lower),
            field("reject_reason", Normalizer::Lower),
            field("registry_revision", Normalizer::Trim),
        ],
        key_fields: vec!["stage".into(), "registry_revision".into()],
        revision_field: Some("registry_revision".into()),
        reason_field: Some("reject_reason".into()),
        origin: Origin::default(),
        category: CategorySource::Classify { type_field: None, message_field: "reject_reason".into() },
        classifier: Default::default(),
    }
}

/// The production `DeadLetter` envelope (seed `dead-letters-and-poison-pills`).
pub fn envelope() -> Profile {
    Profile {
        name: "envelope".into(),
        id_field: "id".into(),
        id_type: FieldType::String,
        time_field: "last_failed_at".into(),
        attempts_field: Some("retry_count".into()),
        signature: vec![
            field("original_topic", Normalizer::Trim),
            SignatureField {
                field: "error_category".into(),
                normalizer: Normalizer::Category {
                    type_field: "error_type".into(),
                    message_field: "error_message".into(),
                },
                required: false,
                field_type: FieldType::String,
            },
            field("error_type", Normalizer::Trim),
            field("error_message", Normalizer::Template),
        ],
        key_fields: vec!["original_topic".into(), "consumer_version".into()],
        revision_field: Some("consumer_version".into()),
        reason_field: Some("error_type".into()),
        origin: Origin {
            topic: Some("original_topic".into()),
            key: Some("original_key".into()),
            value: Some("original_value".into()),
            headers: Some("original_headers".into()),
        },
        category: CategorySource::Field("error_category".into()),
        classifier: Default::default(),
    }
}
