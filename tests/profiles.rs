//! Profiles: the envelope profile with message templates and classification, and TOML
//! profiles for any other dump.

use serde_json::json;

use crate::util::Dir;

#[test]
fn envelope_templates_collapse_each_generated_cause_into_one_bucket() {
    let dir = Dir::new();
    dir.gen("env.jsonl", &["--profile", "envelope", "--rows", "5000", "--seed", "8"]);
    let report = dir.command().args(["rank", "env.jsonl", "--profile", "envelope", "--format", "json"]).json();
    assert_eq!(report["signature_fields"], json!(["original_topic", "error_category", "error_type", "error_message"]));
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
    assert_eq!(find("HTTPError")["signature"]["error_message"], "<*> Service Unavailable from <*>");

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
