//! `dlqf returned`: after a replay, a later dump where a known subset of the replayed messages
//! re-appears (with the dlqf-idempotency-key header, without it, with a new cause) is counted
//! per signature; the expected numbers come from how the dump was built, not from a run.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::util::Dir;

/// 40 envelope records over two causes (20 timeouts on payments, 20 bad quantities on
/// orders), planned for replay, and each replayed entry's key by record id.
fn replayed_dump(dir: &Dir) -> (Vec<Value>, BTreeMap<String, String>) {
    let records: Vec<Value> = (0..40)
        .map(|i| {
            let (topic, error_type, message) = if i % 2 == 0 { ("payments", "TimeoutError", "timed out after 30s") } else { ("orders", "ValueError", "bad quantity") };
            json!({
                "id": format!("dl-{i:03}"), "original_topic": topic, "original_partition": 0, "original_offset": i,
                "original_key": format!("k-{i}"), "original_value": {"n": i},
                "original_headers": {"trace_id": format!("t{i}")},
                "error_type": error_type, "error_message": message, "first_failed_at": "2026-10-01T00:00:00Z",
                "last_failed_at": "2026-10-01T00:00:00Z", "retry_count": 0, "consumer_id": "c", "consumer_version": "1"
            })
        })
        .collect();
    dir.create("night1.jsonl", records.iter().map(|r| r.to_string() + "\n").collect::<String>());
    dir.create("policy.toml", "clear_all = true\n");
    dir.command().args(["plan", "night1.jsonl", "--profile", "envelope", "--policy", "policy.toml", "-o", "m.jsonl"]).ok();
    let keys = dir.read("m.jsonl").lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()).map(|e| (e["id"].as_str().unwrap().to_string(), e["key"].as_str().unwrap().to_string())).collect();
    (records, keys)
}

/// The next night: records 0-5 back with the header (0, 2 and 4 timeouts, 1 and 3 bad
/// quantities; 4 and 5 now failing with a SchemaError), records 6-9 back without it (new
/// dead-letter ids, same key and payload; 7's payload as JSON text with spaces), record 10's
/// key and payload under a header naming another replay's key, and 5 messages never replayed.
fn next_night(dir: &Dir, records: &[Value], keys: &BTreeMap<String, String>) {
    let mut next = Vec::new();
    for (i, record) in records.iter().enumerate().take(11) {
        let mut r = record.clone();
        r["id"] = json!(format!("dl-next-{i:03}"));
        r["last_failed_at"] = json!("2026-10-02T00:00:00Z");
        let original_id = record["id"].as_str().unwrap();
        match i {
            0..=5 => r["original_headers"]["dlqf-idempotency-key"] = json!(keys[original_id]),
            6..=9 => {}
            _ => r["original_headers"]["dlqf-idempotency-key"] = json!("0000000000000000"),
        }
        if i == 4 || i == 5 {
            r["error_type"] = json!("SchemaError");
        }
        if i == 7 {
            // The payload written anew, as text with spaces: the same JSON.
            r["original_value"] = json!(format!("{{ \"n\": {i} }}"));
        }
        next.push(r);
    }
    for i in 0..5 {
        let mut r = records[0].clone();
        r["id"] = json!(format!("fresh-{i}"));
        r["original_key"] = json!(format!("fresh-{i}"));
        next.push(r);
    }
    dir.create("night2.jsonl", next.iter().map(|r| r.to_string() + "\n").collect::<String>());
}

fn signature_row<'a>(report: &'a Value, error_type: &str) -> &'a Value {
    report["signatures"].as_array().unwrap().iter().find(|s| s["signature"]["error_type"] == error_type).unwrap()
}

#[test]
fn what_came_back_is_counted_by_header_by_key_and_payload_and_with_its_new_cause() {
    let dir = Dir::new();
    let (records, keys) = replayed_dump(&dir);
    next_night(&dir, &records, &keys);
    let report = dir.command().args(["returned", "m.jsonl", "night2.jsonl", "--format", "json"]).json();
    assert_eq!(report["report"], "dlqf.returned/1");
    assert_eq!(report["replayed_from"]["kind"], "manifest");
    assert_eq!(report["profile"], "envelope", "the manifest's profile reads the later dump");
    assert_eq!((report["replayed"].as_u64(), report["came_back"].as_u64()), (Some(40), Some(10)));
    assert_eq!(report["share"], 0.25);
    assert_eq!((report["matched"]["by_header"].as_u64(), report["matched"]["by_origin_key_and_payload"].as_u64()), (Some(6), Some(4)));
    assert_eq!((report["inputs"]["records"].as_u64(), report["inputs"]["from_this_replay"].as_u64()), (Some(16), Some(10)));
    assert!(report["rule"].as_str().unwrap().contains("dlqf-idempotency-key"));

    // Timeouts back: 0, 2, 4 (header), 6, 8 (key and payload); 4 as a SchemaError.
    let timeouts = signature_row(&report, "TimeoutError");
    assert_eq!((timeouts["replayed"].as_u64(), timeouts["came_back"].as_u64(), timeouts["share"].as_f64()), (Some(20), Some(5), Some(0.25)));
    let with = timeouts["came_back_with"].as_array().unwrap();
    assert_eq!(with.len(), 2, "{with:?}");
    assert_eq!((with[0]["count"].as_u64(), &with[0]["same_cause"]), (Some(4), &json!(true)));
    assert_eq!((with[1]["count"].as_u64(), &with[1]["signature"]["error_type"], &with[1]["same_cause"]), (Some(1), &json!("SchemaError"), &json!(false)));
    // Bad quantities back: 1, 3, 5 (header), 7, 9; 5 as a SchemaError.
    let values = signature_row(&report, "ValueError");
    assert_eq!((values["replayed"].as_u64(), values["came_back"].as_u64()), (Some(20), Some(5)));

    let table = dir.command().args(["returned", "m.jsonl", "night2.jsonl"]).ok();
    assert!(table.contains("10 of 40 replayed messages came back") && table.contains("error_type=SchemaError ×1"), "{table}");
    let markdown = dir.command().args(["returned", "m.jsonl", "night2.jsonl", "--format", "markdown"]).ok();
    assert!(markdown.contains("| original\\_topic |") && markdown.contains("same cause ×4"), "{markdown}");
}

#[test]
fn an_execute_report_counts_what_its_run_delivered_and_fail_on_returned_exits_3() {
    let dir = Dir::new();
    let (records, keys) = replayed_dump(&dir);
    next_night(&dir, &records, &keys);
    // A canary of 3 a signature delivers records 0-5 only (manifest order: by line).
    let run = dir.command().args(["execute", "m.jsonl", "--target", "file:out.jsonl", "--ledger", "l.db", "--quarantine", "file:q.jsonl", "--canary", "3", "--report", "run.json"]).run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, dir.read("run.json"), "--report writes the printed report");
    let delivered: Vec<String> = dir.read("out.jsonl").lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["key"].as_str().unwrap().to_string()).collect();
    let expected: Vec<String> = (0..6).map(|i| keys[&format!("dl-{i:03}")].clone()).collect();
    assert_eq!(delivered.iter().collect::<std::collections::BTreeSet<_>>(), expected.iter().collect());

    let report = dir.command().args(["returned", "run.json", "night2.jsonl", "--format", "json"]).json();
    assert_eq!(report["replayed_from"]["kind"], "execute_report");
    // Of 0-5 all came back (header); 6-9 were never sent by this run.
    assert_eq!((report["replayed"].as_u64(), report["came_back"].as_u64(), report["matched"]["by_header"].as_u64()), (Some(6), Some(6), Some(6)));
    assert_eq!(report["share"], 1.0);

    let alert = dir.command().args(["returned", "m.jsonl", "night2.jsonl", "--fail-on-returned", "0.25", "--format", "json"]).expect_code(3);
    let alert: Value = serde_json::from_str(&alert.stdout).unwrap();
    assert_eq!(alert["alert"], json!({"share": 0.25, "alert": true}));
    dir.command().args(["returned", "m.jsonl", "night2.jsonl", "--fail-on-returned", "0.26"]).ok();
    dir.command().args(["returned", "m.jsonl", "night2.jsonl", "--fail-on-returned", "2"]).expect_code(2);

    // A dry run delivers nothing, and its report says so.
    let dry = dir.command().args(["execute", "m.jsonl", "--target", "file:out.jsonl", "--ledger", "l.db", "--quarantine", "file:q.jsonl", "--dry-run"]).ok();
    dir.create("dry.json", dry);
    let refused = dir.command().args(["returned", "dry.json", "night2.jsonl"]).expect_code(1);
    assert!(refused.stderr.contains("dry.json") && refused.stderr.contains("manifest"), "{}", refused.stderr);
}
