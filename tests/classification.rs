//! Error categories: the seed's rules and routing by default, a TOML file's overrides, ranking by
//! category, and `plan` deciding by routing when no policy is given.

use serde_json::{json, Value};

use crate::util::{vision_line, Dir};

fn vision_dump(dir: &Dir) {
    let mut lines = Vec::new();
    for (reason, n) in [("timeout", 3), ("gpu_oom", 2), ("registry_unreachable", 2), ("Schema_Invalid", 1)] {
        for i in 0..n {
            lines.push(vision_line(&format!("{reason}-{i}"), "inference", reason, "v1", "2026-10-01T00:00:00Z", 0));
        }
    }
    dir.create("v.jsonl", lines.join("\n") + "\n");
}

const OVERRIDES: &str = "[validation]\npatterns = ['schema_invalid']\n[poison]\npatterns = ['GPU_OOM']\n[dependency]\npatterns = ['unreachable']\nmax_retries = 4\n";

#[test]
fn rank_by_category_uses_the_seed_rules_or_a_files_overrides() {
    let dir = Dir::new();
    vision_dump(&dir);
    let by_default = dir.command().args(["rank", "v.jsonl", "--by", "category", "--format", "json"]).json();
    // Seed patterns: only "timeout" matches (transient); the rest is unknown.
    assert_eq!(by_default["signature_fields"], json!(["category"]));
    assert_eq!(categories(&by_default), [("unknown".into(), 5), ("transient".into(), 3)]);

    dir.create("classes.toml", OVERRIDES);
    let overridden = dir.command().args(["rank", "v.jsonl", "--by", "category", "--classification", "classes.toml", "--format", "json"]).json();
    // 2 dependency and 2 poison tie: ordered by value.
    assert_eq!(
        categories(&overridden),
        [("transient".into(), 3), ("dependency".into(), 2), ("poison".into(), 2), ("validation".into(), 1)]
    );
    assert_eq!(overridden["buckets"][0]["signature"], json!({"category": "transient"}));
    let full = dir.command().args(["rank", "v.jsonl", "--classification", "classes.toml", "--format", "json"]).json();
    let of = |reason: &str| full["buckets"].as_array().unwrap().iter().find(|b| b["signature"]["reject_reason"] == reason).unwrap()["category"].clone();
    assert_eq!((of("timeout"), of("gpu_oom"), of("registry_unreachable"), of("schema_invalid")), (json!("transient"), json!("poison"), json!("dependency"), json!("validation")));
    let table = dir.command().args(["rank", "v.jsonl", "--classification", "classes.toml"]).ok();
    assert!(table.contains("CATEGORY") && table.contains("dependency"), "{table}");

    let trend = dir.command().args(["trend", "v.jsonl", "--by", "category", "--classification", "classes.toml", "--format", "json"]).json();
    let totals: Vec<(String, u64)> = trend["series"].as_array().unwrap().iter().map(|s| (s["signature"]["category"].as_str().unwrap().to_string(), s["total"].as_u64().unwrap())).collect();
    assert_eq!(totals, categories(&overridden), "trend by category has rank's totals, in rank's order");
    let top = dir.command().args(["trend", "v.jsonl", "--by", "category", "--top", "1", "--format", "json"]).json();
    assert_eq!(top["series"][0]["total"], 5, "--top keeps the largest merged category (5 unknown), not a cut before merging");

    dir.create("bad.toml", "[fatal]\nretry = false\n");
    let run = dir.command().args(["rank", "v.jsonl", "--classification", "bad.toml"]).expect_code(2);
    assert!(run.stderr.contains("bad.toml") && run.stderr.contains("unknown category `fatal`"), "{}", run.stderr);
}

fn categories(report: &Value) -> Vec<(String, u64)> {
    report["buckets"].as_array().unwrap().iter().map(|b| (b["signature"]["category"].as_str().unwrap().to_string(), b["count"].as_u64().unwrap())).collect()
}

fn envelope_line(id: &str, error_type: &str, message: &str, retry_count: i64) -> String {
    json!({
        "id": id, "original_topic": "orders", "original_partition": 0, "original_offset": 1,
        "original_key": "k", "original_value": "{}", "original_headers": {},
        "error_type": error_type, "error_message": message, "stack_trace": "",
        "first_failed_at": "2026-10-01T00:00:00Z", "last_failed_at": "2026-10-01T00:00:00Z",
        "retry_count": retry_count, "consumer_id": "c1", "consumer_version": "1.0"
    })
    .to_string()
}

fn decisions(dir: &Dir, args: &[&str]) -> Vec<(String, String)> {
    let mut all = vec!["plan", "e.jsonl", "--profile", "envelope", "-o", "m.jsonl"];
    all.extend_from_slice(args);
    dir.command().args(&all).ok();
    dir.read("m.jsonl").lines().skip(1).map(|l| {
        let e: Value = serde_json::from_str(l).unwrap();
        (e["id"].as_str().unwrap().to_string(), e["decision"].as_str().unwrap().to_string())
    }).collect()
}

#[test]
fn plan_without_a_policy_replays_by_routing_and_holds_validation_poison_and_unknown() {
    let dir = Dir::new();
    let rows = [
        ("validation", envelope_line("validation", "ValueError", "bad quantity 7", 0)),
        ("poison", envelope_line("poison", "MemoryError", "out of memory", 0)),
        ("transient-4", envelope_line("transient-4", "TimeoutError", "timed out", 4)), // cap 5
        ("transient-5", envelope_line("transient-5", "TimeoutError", "timed out", 5)),
        ("unknown-2", envelope_line("unknown-2", "RuntimeError", "boom", 2)), // held, cap 3
        ("unknown-3", envelope_line("unknown-3", "RuntimeError", "boom", 3)),
    ];
    dir.create("e.jsonl", rows.iter().map(|(_, l)| l.clone()).collect::<Vec<_>>().join("\n") + "\n");
    let expect = |pairs: &[(&str, &str)]| pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    assert_eq!(
        decisions(&dir, &[]),
        expect(&[
            ("validation", "poison_uncleared"),
            ("poison", "poison_uncleared"),
            ("transient-4", "replay"),
            ("transient-5", "poison_attempts"),
            ("unknown-2", "poison_uncleared"),
            ("unknown-3", "poison_attempts"),
        ])
    );
    let header: Value = serde_json::from_str(dir.read("m.jsonl").lines().next().unwrap()).unwrap();
    assert_eq!(header["policy"]["routing"], true);
    assert_eq!(header["classification"]["transient"]["max_retries"], 5);

    // Routing from a file: transient no longer retries; unknown retries up to 6 attempts.
    dir.create("classes.toml", "[transient]\nretry = false\n[unknown]\nretry = true\nmax_retries = 6\n");
    let decided = decisions(&dir, &["--classification", "classes.toml"]);
    assert_eq!(decided[2], ("transient-4".into(), "poison_uncleared".into()));
    assert_eq!(decided[5], ("unknown-3".into(), "replay".into()));

    // An explicit clearance replays even a held category; a policy file without routing keeps
    // the rule that an empty allow-list clears nothing.
    dir.create("routing.toml", "routing = true\ncleared_reasons = ['ValueError']\n");
    assert_eq!(decisions(&dir, &["--policy", "routing.toml"])[0], ("validation".into(), "replay".into()));
    dir.create("empty.toml", "");
    let held = decisions(&dir, &["--policy", "empty.toml"]);
    assert!(held.iter().all(|(_, d)| d != "replay"), "{held:?}");
    let header: Value = serde_json::from_str(dir.read("m.jsonl").lines().next().unwrap()).unwrap();
    assert_eq!(header["classification"], Value::Null);
}
