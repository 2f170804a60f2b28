//! `dlqf gen`: deterministic dumps, whatever the thread count.

use crate::util::Dir;

#[test]
fn same_seed_same_bytes_any_thread_count() {
    let dir = Dir::new();
    dir.command().args(["--threads", "1", "gen", "--rows", "50000", "--seed", "9", "-o", "a.jsonl"]).ok();
    dir.command().args(["--threads", "2", "gen", "--rows", "50000", "--seed", "9", "-o", "b.jsonl"]).ok();
    dir.command().args(["gen", "--rows", "50000", "--seed", "10", "-o", "c.jsonl"]).ok();
    let (a, b, c) = (std::fs::read(dir.join("a.jsonl")).unwrap(), std::fs::read(dir.join("b.jsonl")).unwrap(), std::fs::read(dir.join("c.jsonl")).unwrap());
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(a.iter().filter(|&&b| b == b'\n').count(), 50_000);
}

#[test]
fn generated_dumps_carry_drift_unicode_and_a_skewed_pareto() {
    let dir = Dir::new();
    dir.command().args(["gen", "--rows", "20000", "--seed", "4", "-o", "v.jsonl"]).ok();
    let text = dir.read("v.jsonl");
    assert!(text.contains("\"stage\":\"INFERENCE\"") || text.contains("\"stage\":\"Inference\""));
    assert!(text.contains("\"stage\":\"  ") || text.contains("\"stage\":\"\\t"));
    assert!(text.contains("überbelichtet") && text.contains("品番_不一致"));
    let report = dir.command().args(["rank", "v.jsonl", "--format", "json"]).json();
    let buckets = report["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 16, "drift collapses to the 16 generated causes");
    let top = buckets[0]["share"].as_f64().unwrap();
    let last = buckets[15]["share"].as_f64().unwrap();
    assert!(top > 0.15 && top > 8.0 * last, "skewed: top {top}, last {last}");
    let first = buckets[0]["first_seen"].as_str().unwrap();
    let last_seen = buckets[0]["last_seen"].as_str().unwrap();
    assert!(first.starts_with("2026-10-01") && last_seen.starts_with("2026-11-11"), "{first} {last_seen}");
}

#[test]
fn malformed_share_is_honoured() {
    let dir = Dir::new();
    dir.command().args(["gen", "--rows", "10000", "--seed", "2", "--malformed", "0.02", "-o", "m.jsonl.gz"]).ok();
    let report = dir.command().args(["rank", "m.jsonl.gz", "--format", "json"]).json();
    let rejected = report["rejected"].as_u64().unwrap();
    assert!((120..=280).contains(&rejected), "about 2% of 10000: {rejected}");
    assert_eq!(report["total"].as_u64().unwrap() + rejected, 10_000);
}
