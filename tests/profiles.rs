//! Profiles: the envelope profile with message templates and classification, and TOML
//! profiles for any other dump.

use serde_json::json;

use crate::util::Dir;

#[test]
fn envelope_templates_collapse_each_generated_cause_into_one_bucket() {
    let dir = Dir::new();
    dir.gen("env.jsonl", &["--profile", "envelope", "--rows", "5000", "--seed", "8"]);
    let report = dir.command().args(["rank", "env.jsonl", "--profile", "envelope", "--format", "json"]).json();
    assert_eq!(report["signature_fields"], json!(["original_topic", "error_category", "error_type", "error_message", "stack_trace"]));
    let buckets = report["buckets"].as_array().unwrap();
    // A generated cause is a (topic, error type) pair; its messages vary in every id and
    // number, yet must share one template. (A category can still split a cause: the seed's
    // classifier calls any message containing "503" transient, uuids included.)
    let mut templates: std::collections::BTreeMap<(String, String), std::collections::BTreeSet<String>> = Default::default();
    let mut counts: std::collections::BTreeMap<(String, String), u64> = Default::default();
    for b in buckets {
        let sig = &b["signature"];
        let cause = (sig["original_topic"].as_str().unwrap().to_string(), sig["error_type"].as_str().unwrap().to_string());
        templates.entry(cause.clone()).or_default().insert(sig["error_message"].as_str().unwrap().to_string());
        *counts.entry(cause).or_default() += b["count"].as_u64().unwrap();
    }
    assert_eq!(templates.len(), 10, "{templates:#?}");
    assert!(templates.values().all(|t| t.len() == 1), "one template per cause: {templates:#?}");
    let find = |ty: &str| buckets.iter().find(|b| b["signature"]["error_type"] == ty).unwrap_or_else(|| panic!("{ty}"));
    assert_eq!(find("TimeoutError")["signature"]["error_message"], "Timed out after <*> calling payments-gateway at <*>");
    assert_eq!(find("TimeoutError")["signature"]["error_category"], "transient");
    assert_eq!(find("RecursionError")["signature"]["error_category"], "poison");
    assert_eq!(find("KeyError")["signature"]["error_message"], "<*>");
    assert_eq!(find("HTTPError")["signature"]["error_message"], "503 Service Unavailable from <*>");
    // The generator raises each error type on its own line of one function.
    assert_eq!(find("HTTPError")["signature"]["stack_trace"], "HTTPError at consumer.process_message (raise HTTPError(msg))");

    // Independent count per cause straight from the dump.
    let text = dir.read("env.jsonl");
    let mut direct: std::collections::BTreeMap<(String, String), u64> = Default::default();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        *direct.entry((v["original_topic"].as_str().unwrap().into(), v["error_type"].as_str().unwrap().into())).or_default() += 1;
    }
    assert_eq!(counts, direct);
}

#[test]
fn a_toml_profile_maps_any_dump() {
    let dir = Dir::new();
    dir.create(
        "orders.toml",
        r#"
name = "orders"
id = "order_id"
time = "failed_at"
attempts = "retry_count"

[[signature]]
field = "error"
normalize = "template"

[[signature]]
field = "consumer_id"
normalize = "lower"
"#,
    );
    dir.create(
        "orders.jsonl",
        [
            json!({"order_id": "ord_1", "error": "ValueError: Invalid item quantity 3", "failed_at": "2024-01-15T10:30:00Z", "retry_count": 3, "consumer_id": "Orders-Consumer-1"}),
            json!({"order_id": "ord_2", "error": "ValueError: Invalid item quantity 12", "failed_at": "2024-01-15T10:31:00Z", "retry_count": 3, "consumer_id": "orders-consumer-1"}),
            json!({"order_id": "ord_3", "error": "KeyError: 'items'", "failed_at": "2024-01-15T10:32:00Z", "consumer_id": "orders-consumer-1"}),
        ]
        .iter()
        .map(|v| v.to_string() + "\n")
        .collect::<String>(),
    );
    let report = dir.command().args(["rank", "orders.jsonl", "--profile", "orders.toml", "--format", "json"]).json();
    assert_eq!(report["profile"], "orders");
    assert_eq!(report["signature_fields"], json!(["error", "consumer_id"]));
    assert_eq!(report["buckets"][0]["signature"], json!({"error": "ValueError: Invalid item quantity <*>", "consumer_id": "orders-consumer-1"}));
    assert_eq!(report["buckets"][0]["count"], 2);
    assert_eq!(report["buckets"][1]["signature"]["error"], "KeyError: <*>");

    dir.create("bad.toml", "id = 'a'\ntime = 't'\n[[signature]]\nfield = 'x'\nnormalize = 'shout'\n");
    let run = dir.command().args(["rank", "orders.jsonl", "--profile", "bad.toml"]).expect_code(1);
    assert!(run.stderr.contains("unknown normaliser `shout`"), "{}", run.stderr);
    let run = dir.command().args(["rank", "orders.jsonl", "--profile", "nosuch"]).expect_code(1);
    assert!(run.stderr.contains("not a built-in profile"), "{}", run.stderr);
}

/// A profile whose every field is a path: nested objects, a header collection, JSON inside a
/// base64 string, an epoch time; the same records as JSON lines and as nested Parquet (structs,
/// lists, a map) rank alike.
#[test]
#[ignore = "needs the test venv's pyarrow: make test runs it"]
fn paths_read_nested_json_and_nested_parquet_alike() {
    let dir = Dir::new();
    dir.create(
        "nested.toml",
        r#"
name = "nested"
id = ["meta.source", "meta.seq"]
id_type = "scalar"
time = "meta.at"
time_format = "epoch_ms"
attempts = 'attrs."retry.count"'
[[signature]]
name = "kind"
field = "error.kind"
[[signature]]
name = "message"
field = "error.detail.message"
normalize = "template"
[[signature]]
name = "stage"
field = 'headers."x.stage"'
[[signature]]
name = "first_tag"
field = "tags[0]"
required = false
"#,
    );
    let mut lines = String::new();
    for i in 0..300 {
        let kind = ["Timeout", "Schema", "Auth"][i % 3];
        let stage = ["parse", "store"][i % 2];
        let record = json!({
            "meta": {"source": "orders", "seq": i, "at": 1_792_454_400_000i64 + i as i64 * 60_000},
            "error": {"kind": kind, "detail": {"message": format!("{kind} failure for order {} after {} ms", 1000 + i, i * 7)}},
            "headers": [{"key": "trace", "value": format!("t{i}")}, {"key": "x.stage", "value": stage}],
            "tags": [format!("t{}", i % 4), "x"],
            "attrs": {"retry.count": (i % 3).to_string()},
        });
        lines.push_str(&(record.to_string() + "\n"));
    }
    dir.create("n.jsonl", &lines);
    let out = std::process::Command::new(crate::util::python()).arg(crate::util::support("nested_parquet.py")).args([dir.join("n.jsonl"), dir.join("n.parquet")]).arg("attrs").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rank = |input: &str| dir.command().args(["rank", input, "--profile", "nested.toml", "--format", "json"]).json();
    let (json_report, parquet_report) = (rank("n.jsonl"), rank("n.parquet"));
    assert_eq!((json_report["total"].as_u64(), json_report["rejected"].as_u64()), (Some(300), Some(0)), "{json_report}");
    assert_eq!(json_report["buckets"], parquet_report["buckets"]);
    // 3 kinds x 2 stages x 4 first tags, each (kind, stage, tag) one bucket: i mod 3, 2, 4.
    assert_eq!(json_report["buckets"].as_array().unwrap().len(), 12);
    let bucket = json_report["buckets"].as_array().unwrap().iter().find(|b| b["signature"]["kind"] == "Timeout" && b["signature"]["stage"] == "parse" && b["signature"]["first_tag"] == "t0").unwrap();
    // (`7 ms` is one duration to the templates.)
    assert_eq!(bucket["signature"]["message"], "Timeout failure for order <*> after <*>");
    // i = 0 is the first of its bucket: id from two fields, time from epoch milliseconds
    // (1792454400 s is 2026-10-20T00:00:00Z: Python's datetime.utcfromtimestamp).
    assert_eq!((&bucket["example_id"], &bucket["first_seen"]), (&json!("orders/0"), &json!("2026-10-20T00:00:00Z")));
    assert_eq!(bucket["count"], 25);
}

#[test]
fn a_path_no_row_has_fails_the_run_and_is_named() {
    let dir = Dir::new();
    dir.create("lines.jsonl", (0..40).map(|i| json!({"id": i.to_string(), "t": "2026-10-01T00:00:00Z", "error": {"type": "X"}}).to_string() + "\n").collect::<String>());
    dir.create("typo.toml", "id = 'id'\ntime = 't'\n[[signature]]\nfield = 'error.kind'\n");
    let run = dir.command().args(["rank", "lines.jsonl", "--profile", "typo.toml"]).expect_code(1);
    assert!(run.stderr.contains("no row accepted: all 40 rows were rejected"), "{}", run.stderr);
    assert!(run.stderr.contains("40 rows: field `error.kind` is missing (`error.kind` is missing in all 40 rows: check the path"), "{}", run.stderr);
    // An optional field no row has is said, not refused.
    dir.create("optional.toml", "id = 'id'\ntime = 't'\n[[signature]]\nfield = 'error.type'\n[[signature]]\nfield = 'error.kind'\nrequired = false\n");
    let run = dir.command().args(["rank", "lines.jsonl", "--profile", "optional.toml"]).expect_code(0);
    assert!(run.stderr.contains("signature field `error.kind` (`error.kind`) is missing or empty in all 40 rows: check the path"), "{}", run.stderr);
    // Read as it should be, the same dump ranks.
    dir.create("right.toml", "id = 'id'\ntime = 't'\n[[signature]]\nfield = 'error.type'\n");
    let report = dir.command().args(["rank", "lines.jsonl", "--profile", "right.toml", "--format", "json"]).json();
    assert_eq!(report["buckets"][0]["signature"], json!({"error.type": "X"}));
}

#[test]
fn plan_refuses_an_origin_payload_no_record_has() {
    let dir = Dir::new();
    dir.create("lines.jsonl", (0..10).map(|i| json!({"id": i.to_string(), "t": "2026-10-01T00:00:00Z", "e": "X", "body": {"n": i}}).to_string() + "\n").collect::<String>());
    dir.create("p.toml", "id = 'id'\ntime = 't'\n[[signature]]\nfield = 'e'\n[origin]\nvalue = 'payload'\nkey = 'k'\n");
    dir.create("all.toml", "clear_all = true\n");
    let run = dir.command().args(["plan", "lines.jsonl", "--profile", "p.toml", "--policy", "all.toml", "-o", "m.jsonl"]).expect_code(1);
    assert!(run.stderr.contains("origin value `payload` is in none of the 10 records: check the path"), "{}", run.stderr);
    assert!(!dir.join("m.jsonl").exists(), "no manifest written");
    // A key no record has is said, not refused.
    dir.create("p.toml", "id = 'id'\ntime = 't'\n[[signature]]\nfield = 'e'\n[origin]\nvalue = 'body'\nkey = 'k'\n");
    let run = dir.command().args(["plan", "lines.jsonl", "--profile", "p.toml", "--policy", "all.toml", "-o", "m.jsonl"]).expect_code(0);
    assert!(run.stderr.contains("origin key `k` is in none of the 10 records"), "{}", run.stderr);
    let entry: serde_json::Value = serde_json::from_str(dir.read("m.jsonl").lines().nth(1).unwrap()).unwrap();
    assert_eq!(entry["origin"], json!({"key": null, "value": "{\"n\":0}", "headers": []}));
}

/// A layout without an id gets a documented, deterministic one: `sha256:` and the first 16 hex
/// digits of the SHA-256 of the record's line as written; with an id, its parts joined by `/`.
#[test]
fn ids_are_composite_or_the_records_digest() {
    use sha2::{Digest, Sha256};
    let dir = Dir::new();
    let lines = [
        r#"{"topic":"orders","partition":3,"offset":17,"t":"2026-10-01T00:00:00Z","e":"X"}"#,
        r#"{"t":"2026-10-01T00:00:01Z","e":"X","note":"no coordinates"}"#,
        r#"{"topic":"orders","partition":-2,"offset":2.5,"t":"2026-10-01T00:00:02Z","e":"X"}"#,
        r#"{"topic":"orders","partition":4,"t":"2026-10-01T00:00:03Z","e":"X","note":"no offset"}"#,
    ];
    dir.create("d.jsonl", lines.join("\n") + "\n");
    dir.create("p.toml", "id = ['topic', 'partition', 'offset']\nid_type = 'scalar'\nid_missing = 'digest'\ntime = 't'\n[[signature]]\nfield = 'e'\n");
    dir.create("all.toml", "clear_all = true\n");
    dir.command().args(["plan", "d.jsonl", "--profile", "p.toml", "--policy", "all.toml", "-o", "m.jsonl"]).ok();
    let ids: Vec<String> = dir.read("m.jsonl").lines().skip(1).map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["id"].as_str().unwrap().to_string()).collect();
    let digest = |line: &str| -> String { format!("sha256:{}", Sha256::digest(line.as_bytes())[..8].iter().map(|b| format!("{b:02x}")).collect::<String>()) };
    assert_eq!(ids, ["orders/3/17".to_string(), digest(lines[1]), "orders/-2/2.5".to_string(), digest(lines[3])]);
    // Without `id_missing`, a record without its id is rejected, naming the field.
    dir.create("strict.toml", "id = ['topic', 'partition', 'offset']\nid_type = 'scalar'\ntime = 't'\n[[signature]]\nfield = 'e'\n");
    let run = dir.command().args(["rank", "d.jsonl", "--profile", "strict.toml"]).expect_code(0);
    assert!(run.stderr.contains("d.jsonl:2: field `topic` is missing"), "{}", run.stderr);
}

/// Field expressions decode what frameworks write: big-endian binary headers as kcat prints
/// them (bytes below 0x20 escaped, the rest raw, so the line is not UTF-8), a sum over an
/// array of objects, a segment of the input's path; the plan's attempts come out summed.
#[test]
fn binary_headers_arrays_and_path_segments_are_read_by_stages() {
    let dir = Dir::new();
    // Offset 456 (0x1c8) and 2026-10-01T00:00:00Z (1790812800000 ms = 0x1a0f4c2c400), each
    // holding a byte at or above 0x80.
    let mut line = br#"{"topic":"orders-dlt","partition":0,"offset":5,"ts":1,"headers":["kafka_dlt-original-offset","\u0000\u0000\u0000\u0000\u0000\u0000\u0001"#.to_vec();
    line.push(0xc8);
    line.extend_from_slice(br#"","kafka_dlt-original-timestamp","\u0000\u0000\u0001"#);
    line.extend_from_slice(&[0xa0, 0xf4, 0xc2, 0xc4]);
    line.extend_from_slice(br#"\u0000","e","boom"],"key":"k","payload":"v","deaths":[{"count":2},{"count":3}]}"#);
    line.push(b'\n');
    dir.create("SUB-1/d.jsonl", &line);
    dir.create(
        "p.toml",
        r#"name = "t"
id = 'headers."kafka_dlt-original-offset" | int_be'
id_type = "scalar"
time = 'headers."kafka_dlt-original-timestamp" | int_be'
time_format = "epoch_ms"
attempts = "deaths | map(count) | add"
[[signature]]
name = "e"
field = "headers.e"
[[signature]]
name = "folder"
field = "$path[-2]"
"#,
    );
    let report = dir.command().args(["rank", "SUB-1/d.jsonl", "--profile", "p.toml", "--format", "json"]).json();
    assert_eq!(report["rejected"], 0, "{report}");
    let bucket = &report["buckets"][0];
    assert_eq!((&bucket["example_id"], &bucket["first_seen"]), (&json!("456"), &json!("2026-10-01T00:00:00Z")));
    assert_eq!(bucket["signature"], json!({"e": "boom", "folder": "SUB-1"}));
    dir.create("policy.toml", "clear_all = true\nmax_attempts = 9\n");
    dir.command().args(["plan", "SUB-1/d.jsonl", "--profile", "p.toml", "--policy", "policy.toml", "-o", "m.jsonl"]).ok();
    let entry: serde_json::Value = serde_json::from_str(dir.read("m.jsonl").lines().nth(1).unwrap()).unwrap();
    assert_eq!((&entry["id"], &entry["attempts"]), (&json!("456"), &json!(5)));
}
