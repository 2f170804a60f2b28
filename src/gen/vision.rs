//! Synthetic vision-pipeline DLQ records (the seed's `DeadLetter`).

use serde_json::{json, Value};

use super::write::ColumnKind::{self, Int, Str};
use super::{drift, Shape, pick, render_time, zipf_cumulative, Generator, Rng};

/// (stage, reject_reason, registry_revision, active from, active until) as fractions of the span.
const CAUSES: &[(&str, &str, &str, f64, f64)] = &[
    ("inference", "timeout", "det-v8.0", 0.0, 1.0),
    ("ingestion", "schema_invalid", "det-v8.1", 0.3, 1.0),
    ("inference", "low_confidence", "det-v7.3", 0.0, 1.0),
    ("postprocess", "planogram_mismatch", "det-v8.1", 0.0, 1.0),
    ("inference", "model_not_found", "det-v8.2", 0.8, 1.0),
    ("ingestion", "image_corrupt", "det-v8.0", 0.0, 1.0),
    ("postprocess", "blur_detected", "det-v7.3", 0.0, 0.5),
    ("ingestion", "überbelichtet", "det-v8.1", 0.0, 1.0),
    ("inference", "gpu_oom", "det-v8.2", 0.6, 1.0),
    ("postprocess", "fixture_unknown", "det-v8.0", 0.0, 1.0),
    ("ingestion", "upload_interrupted", "det-v7.3", 0.0, 0.7),
    ("inference", "tensor_shape_mismatch", "det-v8.1", 0.2, 0.9),
    ("postprocess", "price_tag_unreadable", "det-v8.2", 0.0, 1.0),
    ("ingestion", "duplicate_capture", "det-v8.0", 0.0, 1.0),
    ("inference", "registry_unreachable", "det-v8.1", 0.4, 0.6),
    ("postprocess", "品番_不一致", "det-v8.2", 0.0, 1.0),
];

const STORES: &[&str] = &[
    "store-0001", "store-0002", "store-0017", "store-0042", "store-0108", "store-0233", "zürich-hb-03",
    "東京-渋谷-07", "são-paulo-12", "store-0512", "store-0777", "kraków-01",
];

const SHAPE: Shape = Shape { columns: COLUMNS, required: 5, time: 8, attempts: 9 };

const COLUMNS: &[(&str, ColumnKind)] = &[
    ("capture_id", Str),
    ("store_id", Str),
    ("fixture_id", Str),
    ("planogram_id", Str),
    ("image_uri", Str),
    ("stage", Str),
    ("reject_reason", Str),
    ("registry_revision", Str),
    ("capture_timestamp", Str),
    ("attempts", Int),
    ("trace_id", Str),
];

pub struct Vision {
    start_seconds: i64,
    span_seconds: i64,
    cumulative: Vec<f64>,
    attempts: Vec<f64>,
}

impl Vision {
    pub fn new(start_micros: i64, span_seconds: i64) -> Vision {
        Vision {
            start_seconds: start_micros.div_euclid(1_000_000),
            span_seconds,
            cumulative: zipf_cumulative(CAUSES.len(), 1.1),
            attempts: vec![0.30, 0.55, 0.75, 0.87, 0.95, 1.0],
        }
    }
}

impl Generator for Vision {
    fn shape(&self) -> &Shape {
        &SHAPE
    }

    fn row(&self, rng: &mut Rng) -> Vec<Value> {
        let (stage, reason, revision, from, until) = CAUSES[pick(rng, &self.cumulative)];
        let window = ((until - from) * self.span_seconds as f64) as i64;
        let at = self.start_seconds + (from * self.span_seconds as f64) as i64 + rng.below(window.max(1) as u64) as i64;
        let capture_id = format!("cap-{}", rng.hex(16));
        let store = *rng.choose(STORES);
        let day = chrono::DateTime::from_timestamp(at, 0).unwrap().format("%Y/%m/%d");
        let revision = if rng.unit() < 0.05 { format!("{revision} ") } else { revision.to_string() };
        vec![
            json!(capture_id),
            json!(store),
            json!(format!("fx-{store}-{:02}", rng.below(40))),
            json!(format!("pg-{:04}", rng.below(500))),
            json!(format!("s3://vision-captures/{store}/{day}/{capture_id}.jpg")),
            json!(drift(rng, stage)),
            json!(drift(rng, reason)),
            json!(revision),
            json!(render_time(rng, at)),
            json!(pick(rng, &self.attempts)),
            json!(rng.hex(32)),
        ]
    }
}
