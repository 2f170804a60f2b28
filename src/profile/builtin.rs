//! The built-in profiles: the two seed formats, as the product spec describes them, and the
//! archives real dead-letter queues write, as TOML files in `profiles/` (each cites its sources).

use super::stack::StackRules;
use super::{CategorySource, FieldType, IdSpec, Normalizer, Profile, SignatureField};
use crate::origin::Origin;
use crate::path::FieldExpr;
use crate::timestamp::TimeFormat;

/// Every built-in profile's name, in the order `--help` lists them.
pub const BUILT_IN: [&str; 14] = [
    "vision", "envelope", "kafka-connect", "lambda", "sqs", "pubsub", "servicebus", "spring-kafka", "rabbitmq", "sidekiq", "eventbridge", "eventgrid",
    "nservicebus", "masstransit",
];

/// The TOML text of the built-in profiles that are files.
const FILES: [(&str, &str); 12] = [
    ("kafka-connect", include_str!("../../profiles/kafka-connect.toml")),
    ("lambda", include_str!("../../profiles/lambda.toml")),
    ("sqs", include_str!("../../profiles/sqs.toml")),
    ("pubsub", include_str!("../../profiles/pubsub.toml")),
    ("servicebus", include_str!("../../profiles/servicebus.toml")),
    ("spring-kafka", include_str!("../../profiles/spring-kafka.toml")),
    ("rabbitmq", include_str!("../../profiles/rabbitmq.toml")),
    ("sidekiq", include_str!("../../profiles/sidekiq.toml")),
    ("eventbridge", include_str!("../../profiles/eventbridge.toml")),
    ("eventgrid", include_str!("../../profiles/eventgrid.toml")),
    ("nservicebus", include_str!("../../profiles/nservicebus.toml")),
    ("masstransit", include_str!("../../profiles/masstransit.toml")),
];

/// A built-in profile by name.
pub fn load(name: &str) -> Option<Profile> {
    match name {
        "vision" => Some(vision()),
        "envelope" => Some(envelope()),
        _ => {
            let (_, text) = FILES.iter().find(|(n, _)| *n == name)?;
            Some(super::from_toml(text, name).expect("built-in profiles parse"))
        }
    }
}

fn field(name: &str, normalizer: Normalizer) -> SignatureField {
    SignatureField { field: name.into(), expr: FieldExpr::top_level(name), normalizer, required: true, field_type: FieldType::String }
}

/// The vision pipeline's typed DLQ record (seed `vision-dlq-forensics`).
pub fn vision() -> Profile {
    Profile {
        name: "vision".into(),
        id: IdSpec::one("capture_id"),
        id_type: FieldType::String,
        time: FieldExpr::top_level("capture_timestamp"),
        time_format: TimeFormat::Rfc3339,
        attempts: Some(FieldExpr::top_level("attempts")),
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
        personal: Vec::new(),
        keep_card_last_four: false,
    }
}

/// The production `DeadLetter` envelope (seed `dead-letters-and-poison-pills`).
pub fn envelope() -> Profile {
    Profile {
        name: "envelope".into(),
        id: IdSpec::one("id"),
        id_type: FieldType::String,
        time: FieldExpr::top_level("last_failed_at"),
        time_format: TimeFormat::Rfc3339,
        attempts: Some(FieldExpr::top_level("retry_count")),
        signature: vec![
            field("original_topic", Normalizer::Trim),
            SignatureField {
                required: false,
                ..field(
                    "error_category",
                    Normalizer::Category { type_field: FieldExpr::top_level("error_type"), message_field: FieldExpr::top_level("error_message") },
                )
            },
            field("error_type", Normalizer::Trim),
            field("error_message", Normalizer::Template),
            // Where the envelope carries a stack trace: its root cause's type and in-app frames.
            SignatureField { required: false, ..field("stack_trace", Normalizer::Stack(StackRules::default())) },
        ],
        key_fields: vec!["original_topic".into(), "consumer_version".into()],
        revision_field: Some("consumer_version".into()),
        reason_field: Some("error_type".into()),
        origin: Origin {
            topic: Some("original_topic".into()),
            key: Some("original_key".into()),
            value: Some("original_value".into()),
            headers: Some("original_headers".into()),
            partition: Some("original_partition".into()),
            offset: Some("original_offset".into()),
            ..Origin::default()
        },
        category: CategorySource::Field("error_category".into()),
        classifier: Default::default(),
        personal: Vec::new(),
        keep_card_last_four: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_loads_and_names_itself() {
        for name in BUILT_IN {
            let profile = load(name).expect("built in");
            assert_eq!(profile.name, name);
        }
        assert!(load("orders.toml").is_none());
    }
}
