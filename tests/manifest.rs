//! The manifest: entries do not depend on the order inputs are named in.

use std::process::Command;

use serde_json::{Map, Value};

use crate::util::{vision_line, Dir};

/// `rows` records: even ones `timeout` with attempts 0, odd ones `low_confidence` with 1.
fn dump(dir: &Dir, name: &str, prefix: &str, rows: usize) {
    let text: String = (0..rows)
        .map(|i| vision_line(&format!("{prefix}-{i:05}"), "inference", if i % 2 == 0 { "timeout" } else { "low_confidence" }, "det-v8.0", "2026-10-01T00:00:00Z", (i % 2) as i64) + "\n")
        .collect();
    dir.create(name, text);
}

fn plan(dir: &Dir, args: &[&str]) -> String {
    dir.command().arg("plan").args(args).args(["-o", "manifest.jsonl"]).ok();
    dir.read("manifest.jsonl")
}

fn header_of(text: &str) -> Map<String, Value> {
    serde_json::from_str(text.lines().next().unwrap()).unwrap()
}

#[test]
fn entries_do_not_depend_on_the_order_inputs_are_named_in() {
    let dir = Dir::new();
    dump(&dir, "a.jsonl", "a", 40);
    dump(&dir, "sub/b.jsonl", "b", 30);
    dump(&dir, "c.jsonl.gz.src", "c", 20);
    let gz = Command::new("gzip").args(["-c", "c.jsonl.gz.src"]).current_dir(dir.path()).output().unwrap();
    dir.create("c.jsonl.gz", gz.stdout);
    let body = |text: &str| text[text.find('\n').unwrap()..].to_string();
    let ids = |text: &str| -> Vec<String> {
        text.lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_string()).collect()
    };

    let forward = plan(&dir, &["a.jsonl", "sub/b.jsonl", "c.jsonl.gz"]);
    let backward = plan(&dir, &["c.jsonl.gz", "sub/b.jsonl", "a.jsonl"]);
    let mixed = plan(&dir, &["sub", "c.jsonl.gz", "a.jsonl", "a.jsonl"]);
    assert!(body(&forward) == body(&backward), "reversed arguments, other entries: {:?}", ids(&backward));
    assert!(body(&forward) == body(&mixed), "a folder and a repeated file, other entries: {:?}", ids(&mixed));
    let (f, b) = (header_of(&forward), header_of(&backward));
    assert_eq!(f["entries_sha256"], b["entries_sha256"]);
    assert_eq!(f["inputs"], b["inputs"], "inputs listed in the same order");
    assert_eq!(f["entries"], 90);
    // The canonical order: inputs by name (byte order), then line.
    let mut expected: Vec<String> = (0..40).map(|i| format!("a-{i:05}")).collect();
    expected.extend((0..20).map(|i| format!("c-{i:05}")));
    expected.extend((0..30).map(|i| format!("b-{i:05}")));
    assert_eq!(ids(&forward), expected, "a.jsonl, c.jsonl.gz, sub/b.jsonl");
}
