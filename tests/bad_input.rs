//! Bad input never crashes and is never silently dropped: rejected rows are counted and
//! named as file:line: reason; unreadable files are errors naming the file.

use crate::util::{vision_line, Dir};

fn good(id: &str) -> String {
    vision_line(id, "inference", "timeout", "det-v8.0", "2026-10-01T00:00:00Z", 1)
}

/// The line numbers of the rejected rows named on stderr for one input.
fn named_lines(stderr: &str, prefix: &str) -> Vec<u64> {
    stderr.lines().filter_map(|l| l.strip_prefix(prefix)).map(|l| l.split(':').next().unwrap().parse().unwrap()).collect()
}

#[test]
fn malformed_rows_are_counted_and_named_with_line_numbers() {
    let dir = Dir::new();
    let text = [
        good("a"),
        r#"{"capture_id": "b", "stage": "inference""#.to_string(), // line 2: truncated
        String::new(),                                             // line 3: blank, skipped
        good("c").replace("\"stage\":\"inference\",", ""),         // line 4: missing field
        good("d").replace("\"attempts\":1", "\"attempts\":\"three\""), // line 5: wrong type
        good("e").replace("\"stage\":\"inference\"", "\"stage\":null"), // line 6: null
        good("f").replace("2026-10-01T00:00:00Z", "yesterday"),    // line 7: bad time
        "[1, 2, 3]".to_string(),                                   // line 8: not an object
        good("g"),
    ]
    .join("\n");
    dir.create("dlq.jsonl", text + "\n");
    let run = dir.command().args(["rank", "dlq.jsonl", "--format", "json"]).expect_code(0);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["total"], 2);
    assert_eq!(report["rejected"], 6);
    let named: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("dlq.jsonl:")).collect();
    assert_eq!(named.len(), 6, "{}", run.stderr);
    assert!(named[0].starts_with("dlq.jsonl:2: invalid JSON: EOF while parsing"), "{}", named[0]);
    assert_eq!(named[1], "dlq.jsonl:4: field `stage` is missing");
    assert_eq!(named[2], "dlq.jsonl:5: field `attempts`: expected an integer, got string \"three\"");
    assert_eq!(named[3], "dlq.jsonl:6: field `stage` is null");
    assert_eq!(named[4], "dlq.jsonl:7: field `capture_timestamp`: invalid timestamp \"yesterday\"");
    assert_eq!(named[5], "dlq.jsonl:8: expected a JSON object, got an array");

    let strict = dir.command().args(["rank", "dlq.jsonl", "--strict"]).expect_code(1);
    assert!(strict.stderr.contains("6 rows could not be read (--strict)"), "{}", strict.stderr);
    assert!(strict.stdout.is_empty(), "no report under --strict: {}", strict.stdout);
}

#[test]
fn a_string_field_of_another_type_is_a_rejected_row_naming_the_field_and_type() {
    let dir = Dir::new();
    let text = [
        good("a"),
        good("b").replace("\"stage\":\"inference\"", "\"stage\":7"),
        good("c").replace("\"capture_id\":\"c\"", "\"capture_id\":3"),
        good("d").replace("\"reject_reason\":\"timeout\"", "\"reject_reason\":{\"code\":1}"),
        good("e").replace("\"registry_revision\":\"det-v8.0\"", "\"registry_revision\":true"),
        good("f").replace("\"attempts\":1", "\"attempts\":2"),
    ]
    .join("\n");
    dir.create("dlq.jsonl", text + "\n");
    let run = dir.command().args(["rank", "dlq.jsonl", "--format", "json"]).expect_code(0);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!((report["total"].as_u64(), report["rejected"].as_u64()), (Some(2), Some(4)));
    assert_eq!(report["buckets"].as_array().unwrap().len(), 1, "no bucket `stage = 7`");
    let named: Vec<&str> = run.stderr.lines().filter(|l| l.starts_with("dlq.jsonl:")).collect();
    assert_eq!(
        named,
        [
            "dlq.jsonl:2: field `stage`: expected a string, got number",
            "dlq.jsonl:3: field `capture_id`: expected a string, got number",
            "dlq.jsonl:4: field `reject_reason`: expected a string, got object",
            "dlq.jsonl:5: field `registry_revision`: expected a string, got boolean",
        ]
    );
    // A profile that says `scalar` takes numbers as their text.
    dir.create(
        "p.toml",
        "id = 'capture_id'\nid_type = 'scalar'\ntime = 'capture_timestamp'\n[[signature]]\nfield = 'stage'\ntype = 'scalar'\n",
    );
    let report = dir.command().args(["rank", "dlq.jsonl", "--profile", "p.toml", "--format", "json"]).json();
    assert_eq!((report["total"].as_u64(), report["rejected"].as_u64()), (Some(6), Some(0)));
    assert_eq!(report["buckets"][1]["signature"]["stage"], "7");
}

#[test]
fn line_numbers_stay_right_across_chunks_and_many_rejects_are_all_counted() {
    let dir = Dir::new();
    // ~30 MB so the scanner cuts several chunks; a broken line every 10_000 lines.
    let mut text = String::new();
    let mut broken = Vec::new();
    for i in 1..=90_000u64 {
        if i % 10_000 == 0 {
            text.push_str("{broken\n");
            broken.push(i);
        } else {
            text.push_str(&good(&format!("cap-{i}")));
            text.push_str(&" ".repeat(200));
            text.push('\n');
        }
    }
    dir.create("big.jsonl", &text);
    let run = dir.command().args(["rank", "big.jsonl", "--format", "json"]).expect_code(0);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["rejected"], broken.len());
    assert_eq!(report["total"], 90_000 - broken.len() as u64);
    assert_eq!(named_lines(&run.stderr, "big.jsonl:"), broken);
}

#[test]
fn parquet_rows_with_nulls_are_rejected_with_row_numbers() {
    let dir = Dir::new();
    dir.gen("dlq.parquet", &["--rows", "2000", "--seed", "5", "--malformed", "0.05", "--row-group-rows", "300"]);
    let run = dir.command().args(["rank", "dlq.parquet", "--format", "json"]).expect_code(0);
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let rejected = report["rejected"].as_u64().unwrap();
    assert!(rejected > 50 && rejected < 160, "about 5% of 2000: {rejected}");
    assert_eq!(report["total"].as_u64().unwrap() + rejected, 2000);
    let named = named_lines(&run.stderr, "dlq.parquet:");
    assert_eq!(named.len(), 10);
    assert!(named.windows(2).all(|w| w[0] < w[1]), "{named:?}");
}

#[test]
fn corrupt_missing_and_unreadable_files_are_errors_naming_the_file() {
    let dir = Dir::new();
    dir.create("ok.jsonl", good("a") + "\n");
    dir.create("bad.parquet", b"PAR1 this is not really parquet PAR1");
    let run = dir.command().args(["rank", "ok.jsonl", "bad.parquet"]).expect_code(1);
    assert!(run.stderr.contains("bad.parquet: not a readable Parquet file"), "{}", run.stderr);

    let run = dir.command().args(["rank", "nope.jsonl"]).expect_code(1);
    assert!(run.stderr.contains("nope.jsonl: no such file or directory"), "{}", run.stderr);

    let run = dir.command().args(["rank", "missing/*.jsonl"]).expect_code(1);
    assert!(run.stderr.contains("missing/*.jsonl: no dump files match"), "{}", run.stderr);

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, (good("a") + "\n").repeat(1000).as_bytes()).unwrap();
    let mut bytes = gz.finish().unwrap();
    bytes.truncate(bytes.len() / 2);
    dir.create("cut.jsonl.gz", bytes);
    let run = dir.command().args(["rank", "cut.jsonl.gz"]).expect_code(1);
    assert!(run.stderr.contains("cut.jsonl.gz: read error"), "{}", run.stderr);
}

#[test]
fn a_parquet_file_without_a_required_column_rejects_every_row_and_fails() {
    let dir = Dir::new();
    dir.gen("envelope.parquet", &["--profile", "envelope", "--rows", "50"]);
    let run = dir.command().args(["rank", "envelope.parquet", "--format", "json"]).expect_code(1);
    assert_eq!(run.stdout, "", "no report for a run that accepted nothing");
    assert!(run.stderr.contains("envelope.parquet:1: field `stage` is missing"), "{}", run.stderr);
    assert!(run.stderr.contains("no row accepted: all 50 rows were rejected"), "{}", run.stderr);
    assert!(run.stderr.contains("`stage` is missing in all 50 rows: check the path"), "{}", run.stderr);
}
