//! Archives laid out as real dead-letter queues write them (each written from its system's own
//! documentation by `support/real_dumps.py`, every record labelled with its true cause): the
//! built-in profiles read every record, group them by cause, and replay Kafka Connect records
//! to a real Kafka-protocol broker byte for byte.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::Command;

use serde_json::Value;

use crate::kafka::Broker;
use crate::util::{python, support, Dir};

/// Writes `n` records of `layout` under `dir/name`; returns the truth file's contents.
fn write(dir: &Dir, layout: &str, name: &str, n: usize, seed: u64) -> Value {
    let out = Command::new(python()).arg(support("real_dumps.py")).args([layout, dir.join(name).to_str().unwrap(), &n.to_string(), &seed.to_string()]).output().unwrap();
    assert!(out.status.success(), "real_dumps.py {layout}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_str(&dir.read(&format!("{name}.truth.json"))).unwrap()
}

#[test]
#[ignore = "needs the test venv's pyarrow: make test runs it"]
fn every_layout_redacted_ranks_as_it_did() {
    let dir = Dir::new();
    dir.create("key", "a key of more than sixteen bytes");
    for (layout, profile) in LAYOUTS {
        write(&dir, layout, layout, 600, 23);
        std::fs::remove_file(dir.join(&format!("{layout}.truth.json"))).ok();
        let out = format!("{layout}.redacted");
        dir.command().args(["redact", layout, "--profile", profile, "--key-file", "key", "-o", &out]).ok();
        let rank = |input: &str| dir.command().args(["rank", input, "--profile", profile, "--format", "json", "--top", "100000"]).json();
        let (before, after) = (rank(layout), rank(&out));
        assert_eq!(before["total"], 600, "{layout}");
        // Nothing personal is in these signatures: they stay as they were, to the byte.
        assert_eq!(before["buckets"], after["buckets"], "{layout}");
        assert_eq!(before["rejected"], after["rejected"], "{layout}");
    }
}

/// Every layout `real_dumps.py` writes, with the built-in profile that reads it.
const LAYOUTS: [(&str, &str); 14] = [
    ("kcat", "kafka-connect"),
    ("s3-json", "kafka-connect"),
    ("s3-parquet", "kafka-connect"),
    ("lambda", "lambda"),
    ("sqs", "sqs"),
    ("pubsub", "pubsub"),
    ("servicebus", "servicebus"),
    ("spring-kafka", "spring-kafka"),
    ("rabbitmq", "rabbitmq"),
    ("sidekiq", "sidekiq"),
    ("eventbridge", "eventbridge"),
    ("eventgrid", "eventgrid"),
    ("nservicebus", "nservicebus"),
    ("masstransit", "masstransit"),
];

const CLEAR_ALL: &str = "clear_all = true\nmax_attempts = 100\n";

/// Every entry's id and signature, from a manifest.
fn signatures(manifest: &str) -> HashMap<String, String> {
    manifest.lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()).map(|e| (e["id"].as_str().unwrap().to_string(), e["signature"].to_string())).collect()
}

/// The ids grouped by a labelling, as sets.
fn groups(labels: &HashMap<String, String>) -> BTreeSet<BTreeSet<String>> {
    let mut by: HashMap<&str, BTreeSet<String>> = HashMap::new();
    for (id, label) in labels {
        by.entry(label).or_default().insert(id.clone());
    }
    by.into_values().collect()
}

#[test]
#[ignore = "needs the test venv's pyarrow: make test runs it"]
fn every_layout_is_read_whole_and_grouped_by_its_true_causes() {
    let dir = Dir::new();
    dir.create("all.toml", CLEAR_ALL);
    for (layout, profile) in LAYOUTS {
        let n = 1200;
        let truth = write(&dir, layout, layout, n, 17);
        let report = dir.command().args(["rank", layout, "--profile", profile, "--format", "json"]).json();
        assert_eq!((report["total"].as_u64(), report["rejected"].as_u64()), (Some(n as u64), Some(0)), "{layout}: {report}");
        dir.command().args(["plan", layout, "--profile", profile, "--policy", "all.toml", "-o", &format!("{layout}.m.jsonl")]).ok();
        let predicted = signatures(&dir.read(&format!("{layout}.m.jsonl")));
        let want: HashMap<String, String> = truth["ids"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
        assert_eq!(predicted.keys().collect::<BTreeSet<_>>(), want.keys().collect::<BTreeSet<_>>(), "{layout}: every record, by the id the profile gives it");
        let (got, expected) = (groups(&predicted), groups(&want));
        assert!(expected.len() >= 3, "{layout}: the dump holds several causes");
        assert_eq!(got, expected, "{layout}: one bucket per true cause, no more, no less");
        // The report's buckets are those groups, counted.
        let counts: BTreeSet<u64> = report["buckets"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).collect();
        assert_eq!(counts, expected.iter().map(|g| g.len() as u64).collect(), "{layout}");
    }
}

#[test]
#[ignore = "needs the test venv's pyarrow: make test runs it"]
fn times_come_from_epoch_numbers_http_dates_and_partition_folders() {
    let dir = Dir::new();
    for (layout, profile) in [("kcat", "kafka-connect"), ("s3-json", "kafka-connect"), ("sqs", "sqs"), ("servicebus", "servicebus")] {
        write(&dir, layout, layout, 50, 3);
        let report = dir.command().args(["rank", layout, "--profile", profile, "--format", "json"]).json();
        let first = report["buckets"].as_array().unwrap().iter().map(|b| b["first_seen"].as_str().unwrap().to_string()).min().unwrap();
        // The generator's records start at 2026-11-28T07:00:00Z, a few seconds apart; the S3
        // sink's records carry no time but their dt=2026-11-28/hour=07 folder's.
        assert!(first.starts_with("2026-11-28T07:00:"), "{layout}: {first}");
    }
}

#[test]
#[ignore = "needs the test venv's pyarrow: make test runs it"]
fn an_s3_sink_chunk_in_parquet_reads_as_its_json_twin() {
    let dir = Dir::new();
    write(&dir, "s3-json", "json", 300, 5);
    write(&dir, "s3-parquet", "parquet", 300, 5);
    dir.create("all.toml", CLEAR_ALL);
    let rank = |name: &str| dir.command().args(["rank", name, "--profile", "kafka-connect", "--format", "json"]).ok();
    assert_eq!(rank("json"), rank("parquet"));
    for name in ["json", "parquet"] {
        dir.command().args(["plan", name, "--profile", "kafka-connect", "--policy", "all.toml", "-o", &format!("{name}.m.jsonl")]).ok();
    }
    let origins = |name: &str| -> BTreeMap<String, Value> {
        dir.read(&format!("{name}.m.jsonl")).lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()).map(|e| (e["id"].as_str().unwrap().to_string(), e["origin"].clone())).collect()
    };
    assert_eq!(origins("json"), origins("parquet"), "the same bytes to replay from either format");
}

/// The base64 of a resolved origin's bytes (text or {"base64": …}), as the truth file has them.
pub fn b64(value: &Value) -> Value {
    use base64_text::encode;
    match value {
        Value::Null => Value::Null,
        Value::String(s) => Value::String(encode(s.as_bytes())),
        Value::Object(o) => o["base64"].clone(),
        other => panic!("not bytes: {other}"),
    }
}

/// A tiny base64 encoder for the tests (standard alphabet, padded).
mod base64_text {
    pub fn encode(bytes: &[u8]) -> String {
        const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
            for i in 0..4 {
                out.push(if i <= chunk.len() { A[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
            }
        }
        out
    }
}

#[test]
#[ignore = "needs the test venv's pyarrow: make test runs it"]
fn plans_carry_the_original_key_payload_and_headers_of_every_record() {
    let dir = Dir::new();
    dir.create("all.toml", CLEAR_ALL);
    for layout in ["kcat", "s3-json", "s3-parquet"] {
        let truth = write(&dir, layout, layout, 400, 11);
        dir.command().args(["plan", layout, "--profile", "kafka-connect", "--policy", "all.toml", "-o", &format!("{layout}.m.jsonl")]).ok();
        let mut checked = 0;
        for line in dir.read(&format!("{layout}.m.jsonl")).lines().skip(1) {
            let entry: Value = serde_json::from_str(line).unwrap();
            let origin = &entry["origin"];
            let want = &truth["records"][entry["id"].as_str().unwrap()];
            let headers: Vec<Value> = origin["headers"].as_array().unwrap().iter().map(|h| serde_json::json!([h[0], b64(&h[1])])).collect();
            assert_eq!(
                (&origin["topic"], b64(&origin["key"]), b64(&origin["value"]), Value::Array(headers)),
                (&want["topic"], want["key"].clone(), want["value"].clone(), want["headers"].clone()),
                "{layout}: {line}"
            );
            checked += 1;
        }
        assert_eq!(checked, 400);
    }
    // Tombstones are planned as null values, never the whole record.
    let kcat = dir.read("kcat.m.jsonl");
    assert!(kcat.lines().skip(1).any(|l| serde_json::from_str::<Value>(l).unwrap()["origin"]["value"].is_null()));
}

/// The frameworks' and brokers' layouts plan what their generator wrote to be sent back: the
/// topic (an exchange, a queue), key (a routing key), payload and headers or broker properties
/// byte for byte, a keyed Spring dead letter's original partition and offset (decoded from its
/// binary headers), a Sidekiq job as it is in the dead set.
#[test]
#[ignore = "needs the test venv's pyarrow: make test runs it"]
fn framework_layouts_plan_the_bytes_their_generators_wrote() {
    let dir = Dir::new();
    dir.create("all.toml", CLEAR_ALL);
    for layout in ["spring-kafka", "rabbitmq", "sidekiq", "eventbridge", "eventgrid", "nservicebus", "masstransit"] {
        let truth = write(&dir, layout, layout, 300, 29);
        dir.command().args(["plan", layout, "--profile", layout, "--policy", "all.toml", "-o", &format!("{layout}.m.jsonl")]).ok();
        let mut checked = 0;
        for line in dir.read(&format!("{layout}.m.jsonl")).lines().skip(1) {
            let entry: Value = serde_json::from_str(line).unwrap();
            let (origin, want) = (&entry["origin"], &truth["records"][entry["id"].as_str().unwrap()]);
            for (field, expected) in want.as_object().unwrap() {
                let got = match field.as_str() {
                    "key" | "value" => b64(&origin[field]),
                    "headers" => origin["headers"].as_array().unwrap().iter().map(|h| serde_json::json!([h[0], b64(&h[1])])).collect(),
                    // Only a keyed message is ordered, so only it carries its position.
                    "partition" | "offset" if origin["key"].is_null() => expected.clone(),
                    "queue" => origin["topic"].clone(),
                    "job" => entry["record"].clone(),
                    _ => origin[field].clone(),
                };
                assert_eq!(&got, expected, "{layout} {field}: {line}");
            }
            checked += 1;
        }
        assert_eq!(checked, 300, "{layout}");
    }
}

#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn kafka_connect_records_replay_byte_for_byte_tombstones_as_tombstones() {
    for layout in ["kcat", "s3-json"] {
        let dir = Dir::new();
        let broker = Broker::start(&["payments"]);
        let truth = write(&dir, layout, "dump", 240, 23);
        dir.create("all.toml", CLEAR_ALL);
        dir.command().args(["plan", "dump", "--profile", "kafka-connect", "--policy", "all.toml", "-o", "m.jsonl"]).ok();
        let run = dir.command().args(["execute", "m.jsonl", "--target", &broker.url(None), "--ledger", "l.db", "--quarantine", "file:q.jsonl"]).run();
        assert_eq!(run.code, 0, "{layout}: {}", run.stderr);
        let read = read_raw(&broker, "payments");
        assert_eq!(read.len(), 240, "{layout}: every record once");
        let want: Vec<&Value> = truth["records"].as_object().unwrap().values().collect();
        assert_eq!(as_sent(&read), as_originals(&want), "{layout}");
        if layout == "kcat" {
            // (The S3 sink writes no tombstones where it stores keys.)
            assert!(read.iter().any(|r| r["value"].is_null()), "{layout}: tombstones arrive as null values");
        }
    }
}

/// Spring's dead letters go back to `kafka_dlt-original-topic` (or `kafka_original-topic`),
/// keys, values and the application's headers byte for byte, the recoverer's headers left out.
#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn spring_dead_letters_replay_to_their_original_topics_byte_for_byte() {
    let dir = Dir::new();
    let broker = Broker::start(&["orders", "payments"]);
    let truth = write(&dir, "spring-kafka", "dump", 300, 31);
    dir.create("all.toml", CLEAR_ALL);
    dir.command().args(["plan", "dump", "--profile", "spring-kafka", "--policy", "all.toml", "-o", "m.jsonl"]).ok();
    let run = dir.command().args(["execute", "m.jsonl", "--target", &broker.url(None), "--ledger", "l.db", "--quarantine", "file:q.jsonl"]).run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut total = 0;
    for topic in ["orders", "payments"] {
        let read = read_raw(&broker, topic);
        let want: Vec<&Value> = truth["records"].as_object().unwrap().values().filter(|r| r["topic"] == topic).collect();
        assert!(!want.is_empty(), "the generator wrote dead letters of {topic}");
        assert_eq!(as_sent(&read), as_originals(&want), "{topic}");
        total += read.len();
    }
    assert_eq!(total, 300, "every dead letter once");
}

/// What a test reader reads back of TOPIC: kafka.py read-raw's records.
fn read_raw(broker: &Broker, topic: &str) -> Vec<Value> {
    let out = Command::new(python()).arg(support("kafka.py")).args(["read-raw", &broker.bootstrap, topic]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Records read back as sorted key/value/headers texts, dlqf's own header (asserted last) off:
/// matched up with the originals as a whole, as no field names a record.
fn as_sent(read: &[Value]) -> Vec<String> {
    let mut got: Vec<String> = read
        .iter()
        .map(|r| {
            let mut headers = r["headers"].as_array().unwrap().clone();
            assert_eq!(headers.pop().map(|h| h[0].clone()), Some(Value::from("dlqf-idempotency-key")), "dlqf's header comes last");
            serde_json::json!({"key": r["key"], "value": r["value"], "headers": headers}).to_string()
        })
        .collect();
    got.sort();
    got
}

/// The generator's originals as the same sorted texts as [`as_sent`].
fn as_originals(records: &[&Value]) -> Vec<String> {
    let mut want: Vec<String> =
        records.iter().map(|r| serde_json::json!({"key": r["key"], "value": r["value"], "headers": r["headers"]}).to_string()).collect();
    want.sort();
    want
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn an_s3_sink_archive_in_s3_reads_as_on_disk() {
    let dir = Dir::new();
    write(&dir, "s3-json", "local", 450, 9);
    let bucket = format!("dlqf-sink-{}", std::process::id());
    let s3 = |args: &[&str]| {
        let out = Command::new(python()).arg(support("s3.py")).args(args).output().unwrap();
        assert!(out.status.success(), "s3.py {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    s3(&["mkbucket", &bucket]);
    s3(&["putdir", &bucket, "archive", dir.join("local").to_str().unwrap()]);
    let rank = |input: &str| dir.command().args(["rank", input, "--profile", "kafka-connect", "--format", "json"]).json();
    let (local, remote) = (rank("local"), rank(&format!("s3://{bucket}/archive/")));
    assert_eq!(remote["total"], 450);
    assert_eq!(remote["buckets"], local["buckets"], "values, keys and headers objects of a chunk read together, times from the dt=/hour= prefixes");
}

/// The bytes of standard base64 text.
pub fn unb64(text: &str) -> Vec<u8> {
    dlqf::path::base64_decode(text.as_bytes()).expect("base64")
}
