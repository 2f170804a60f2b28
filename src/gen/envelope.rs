//! Synthetic production `DeadLetter` envelopes: error messages full of ids, IPs and numbers,
//! categories sometimes missing (so they must be classified).

use serde_json::{json, Value};

use super::write::ColumnKind::{self, Int, Json, Str};
use super::{drift, Shape, pick, render_time, zipf_cumulative, Generator, Rng};

const SHAPE: Shape = Shape { columns: COLUMNS, required: 1, time: 12, attempts: 13 };

const COLUMNS: &[(&str, ColumnKind)] = &[
    ("id", Str),
    ("original_topic", Str),
    ("original_partition", Int),
    ("original_offset", Int),
    ("original_key", Str),
    ("original_value", Json),
    ("original_headers", Json),
    ("error_category", Str),
    ("error_type", Str),
    ("error_message", Str),
    ("stack_trace", Str),
    ("first_failed_at", Str),
    ("last_failed_at", Str),
    ("retry_count", Int),
    ("consumer_id", Str),
    ("consumer_version", Str),
];

/// (topic, error type, category, message maker)
type Cause = (&'static str, &'static str, &'static str, fn(&mut Rng) -> String);

const CAUSES: &[Cause] = &[
    ("orders", "ValueError", "validation", |r| format!("Invalid item quantity {} for order ord_{}", r.below(50) as i64 - 10, r.below(100000))),
    ("payments", "TimeoutError", "transient", |r| format!("Timed out after {}ms calling payments-gateway at 10.0.{}.{}:8443", 1000 + r.below(9000), r.below(255), r.below(255))),
    ("orders", "KeyError", "validation", |r| format!("'{}'", r.choose(&["items", "order_id", "total"]))),
    ("payments", "HTTPError", "transient", |r| format!("503 Service Unavailable from https://psp.example.com/v2/charges/{}", r.uuid())),
    ("shipments", "ConnectionError", "transient", |r| format!("connection refused: 172.16.{}.{}:5432 (attempt {})", r.below(255), r.below(255), r.below(5))),
    ("orders", "RecursionError", "poison", |r| format!("maximum recursion depth exceeded while serializing order ord_{}", r.below(100000))),
    ("inventory", "RuntimeError", "unknown", |r| format!("reservation {} failed for sku=SKU-{} warehouse='{}' at 2026-11-{:02}T{:02}:00:00Z", r.uuid(), r.below(9999), r.choose(&["north hub", "south", "west-2"]), 1 + r.below(28), r.below(24))),
    ("orders", "JSONDecodeError", "validation", |r| format!("Expecting value: line 1 column {} (char {})", r.below(300), r.below(300))),
    ("payments", "MemoryError", "poison", |r| format!("out of memory allocating {} bytes for batch 0x{}", r.below(1 << 30), r.hex(8))),
    ("users", "ValueError", "validation", |r| format!("email user{}@example.com is not deliverable", r.below(10000))),
];

pub struct Envelope {
    start_seconds: i64,
    span_seconds: i64,
    cumulative: Vec<f64>,
}

impl Envelope {
    pub fn new(start_micros: i64, span_seconds: i64) -> Envelope {
        Envelope { start_seconds: start_micros.div_euclid(1_000_000), span_seconds, cumulative: zipf_cumulative(CAUSES.len(), 1.0) }
    }
}

impl Generator for Envelope {
    fn shape(&self) -> &Shape {
        &SHAPE
    }

    fn row(&self, rng: &mut Rng) -> Vec<Value> {
        let (topic, error_type, category, message) = CAUSES[pick(rng, &self.cumulative)];
        let last = self.start_seconds + rng.below(self.span_seconds as u64) as i64;
        let first = last - rng.below(3600) as i64;
        let order = format!("ord_{}", rng.below(1_000_000));
        let category = match rng.below(10) {
            0..=5 => json!(drift(rng, category)),
            6 => Value::Null,
            7 => json!(""),
            _ => Value::Null,
        };
        let message = message(rng);
        let retries = rng.below(8);
        vec![
            json!(rng.uuid()),
            json!(topic),
            json!(rng.below(12)),
            json!(rng.below(5_000_000)),
            if rng.below(5) == 0 { Value::Null } else { json!(order.clone()) },
            json!({"order_id": order, "user_id": format!("usr_{}", rng.below(10000)), "items": if rng.below(4) == 0 { json!("INVALID - should be array, got string") } else { json!([{"sku": format!("SKU-{}", rng.below(9999)), "qty": 1 + rng.below(5)}]) }, "total": (rng.below(100000) as f64) / 100.0}),
            json!({"retry_count": retries.to_string(), "trace_id": rng.hex(32)}),
            category,
            json!(error_type),
            json!(message),
            json!(format!("Traceback (most recent call last):\n  File \"consumer.py\", line {}, in process_message\n    raise {error_type}(msg)\n{error_type}: {message}", 40 + rng.below(200))),
            json!(render_time(rng, first)),
            json!(render_time(rng, last)),
            json!(retries),
            json!(format!("{topic}-consumer-{}", 1 + rng.below(4))),
            json!(format!("1.4.{}", rng.below(3))),
        ]
    }
}
