//! Counts cross-checked against an independent engine: DuckDB (installed by `make test`)
//! computes the same ranking from the same generated dumps.

use std::process::Command;

use serde_json::Value;

use crate::util::{python, support, Dir};

fn expected(dir: &Dir, file: &str) -> Value {
    let out = Command::new(python())
        .arg(support("expected_rank.py"))
        .arg(dir.join(file))
        .output()
        .expect("run python");
    assert!(out.status.success(), "expected_rank.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn assert_same_ranking(dir: &Dir, file: &str) {
    let ours = dir.command().args(["rank", file, "--format", "json"]).json();
    let theirs = expected(dir, file);
    assert_eq!(ours["total"], theirs["total"], "{file}: total");
    assert_eq!(ours["rejected"], theirs["rejected"], "{file}: rejected");
    let (a, b) = (ours["buckets"].as_array().unwrap(), theirs["buckets"].as_array().unwrap());
    assert_eq!(a.len(), b.len(), "{file}: bucket count");
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x, y, "{file}: bucket differs");
    }
    assert!(ours["total"].as_u64().unwrap() > 0);
}

#[test]
#[ignore = "needs DuckDB: make test runs it"]
fn generated_jsonl_with_malformed_rows_matches_duckdb() {
    let dir = Dir::new();
    dir.gen("v.jsonl", &["--rows", "40000", "--seed", "21", "--malformed", "0.01"]);
    assert_same_ranking(&dir, "v.jsonl");
}

#[test]
#[ignore = "needs DuckDB: make test runs it"]
fn generated_parquet_with_null_rows_matches_duckdb() {
    let dir = Dir::new();
    dir.gen("v.parquet", &["--rows", "40000", "--seed", "22", "--malformed", "0.01", "--row-group-rows", "7000"]);
    assert_same_ranking(&dir, "v.parquet");
}

/// The same rows written by pyarrow in other encodings than dlqf's own writer uses (no
/// dictionary; data page v2; a dictionary that overflows into plain pages mid-chunk; small
/// pages; other codecs) give the same reports, rejects and row numbers as the original:
/// dictionary-coded signature columns and polars' decoding agree row for row. Every file is
/// also read by polars alone (`DLQF_PARQUET_PAGES=off`), to the same bytes. Native
/// timestamps in three units agree with the same file read through polars.
#[test]
#[ignore = "needs pyarrow: make test runs it"]
fn parquet_in_every_encoding_gives_the_same_reports() {
    let dir = Dir::new();
    dir.gen("v.parquet", &["--rows", "30000", "--seed", "31", "--malformed", "0.02", "--row-group-rows", "4000", "--days", "3"]);
    // (file, pyarrow's options, how reject_reason's first chunk is encoded)
    let variants: [(&str, &[&str], Dictionary); 5] = [
        ("plain.parquet", &["--plain"], Dictionary::None),
        ("v2.parquet", &["--page-version", "2.0", "--compression", "snappy"], Dictionary::Whole),
        ("overflow.parquet", &["--dictionary-page-limit", "200", "--data-page-size", "2048", "--compression", "none", "--row-group-rows", "7000"], Dictionary::Overflowed),
        ("small-pages.parquet", &["--data-page-size", "512", "--compression", "none"], Dictionary::Whole),
        ("gzip-v1.parquet", &["--compression", "gzip", "--row-group-rows", "30000"], Dictionary::Whole),
    ];
    let runs: [&[&str]; 5] = [
        &["rank", "--format", "json"],
        &["rank", "--format", "json", "--since", "2026-10-02T06:00:00Z", "--until", "2026-10-03T00:00:00Z"],
        &["trend", "--every", "hour", "--format", "json"],
        &["health", "--format", "json"],
        &["rank", "--format", "json", "--by", "category"],
    ];
    // Each file read from its pages and, with DLQF_PARQUET_PAGES=off, by polars alone.
    let report = |file: &str, args: &[&str]| {
        let run = dir.command().args(args).arg(file).expect_code(0);
        let polars = dir.command().env("DLQF_PARQUET_PAGES", "off").args(args).arg(file).expect_code(0);
        assert_eq!((&run.stdout, &run.stderr), (&polars.stdout, &polars.stderr), "{file}: pages and polars differ: {args:?}");
        (run.stdout, run.stderr.replace(file, "FILE"))
    };
    let rewrite = |name: &str, options: &[&str]| -> Value {
        let out = Command::new(python()).arg(support("rewrite_parquet.py")).arg(dir.join("v.parquet")).arg(dir.join(name)).args(options).output().unwrap();
        assert!(out.status.success(), "rewrite_parquet.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // Native times (null where the text was unreadable): read from pages, and with no
    // dictionary anywhere through polars.
    for unit in ["ms", "us", "ns"] {
        let (pages, plain) = (format!("native-{unit}.parquet"), format!("native-{unit}-plain.parquet"));
        rewrite(&pages, &["--native-times", unit]);
        rewrite(&plain, &["--native-times", unit, "--plain"]);
        for args in runs {
            let (ours, theirs) = (report(&pages, args), report(&plain, args));
            assert!(ours.1.contains("FILE:") && ours.1.contains("is null"), "rejects are named: {}", ours.1);
            assert_eq!(ours, theirs, "{unit}: {args:?}");
        }
    }
    for (name, options, encoding) in variants {
        let chunks = rewrite(name, options);
        let (dictionary, distinct) = (chunks["reject_reason"]["dictionary_bytes"].as_u64().unwrap(), chunks["reject_reason"]["distinct_bytes"].as_u64().unwrap());
        // Sizes compare only uncompressed, as the overflowing file is written.
        let made = match encoding {
            Dictionary::None => dictionary == 0,
            Dictionary::Whole => dictionary > 0,
            Dictionary::Overflowed => dictionary > 0 && dictionary < distinct,
        };
        assert!(made, "{name}: not {encoding:?}: {chunks}");
        for args in runs {
            let (ours, theirs) = (report("v.parquet", args), report(name, args));
            assert!(ours.1.contains("FILE:"), "rejects are named: {}", ours.1);
            assert_eq!(ours, theirs, "{name}: {args:?}");
        }
    }
}

/// Runs a Python script (pyarrow's writers) that writes its files into the directory it is
/// given as its first argument, after `BREAK_TEXT`.
fn write_files(dir: &Dir, script: &str) {
    let out = Command::new(python()).arg("-c").arg(format!("{BREAK_TEXT}{script}")).arg(dir.join("")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `break_text(path, text)` for the scripts: the first byte of `text`, found once in the file,
/// made 0xFF (a page that holds it no longer reads).
const BREAK_TEXT: &str = r#"
def break_text(path, text):
    data = bytearray(open(path, "rb").read())
    assert data.count(text) == 1
    data[data.find(text)] = 0xFF
    open(path, "wb").write(data)
"#;

#[derive(Debug)]
enum Dictionary {
    None,
    Whole,
    /// The dictionary filled up and later pages hold plain values.
    Overflowed,
}

/// Ids are read from the pages a first failure needs: a page of ids no bucket's first failure
/// is in is never read (a broken id there changes nothing, read on one thread, so that the
/// earliest group is met first), and a broken id that is a first failure stops the run,
/// naming the file, the row group and the column.
#[test]
#[ignore = "needs pyarrow: make test runs it"]
fn id_pages_are_read_only_where_a_first_failure_is() {
    let dir = Dir::new();
    let script = r#"
import sys
import pyarrow as pa, pyarrow.parquet as pq
n = 3000
schema = pa.schema([pa.field("capture_id", pa.string(), nullable=False), ("stage", pa.string()),
                    ("reject_reason", pa.string()), ("registry_revision", pa.string()), ("capture_timestamp", pa.string())])
for name, early in [("clean", None), ("later", None), ("first", 2500)]:
    # The first row group on 1 October, the two others on the 2nd; row 2500 the earliest of all.
    times = [f"2026-10-0{1 if i < 1000 else 2}T{i % 24:02d}:00:00Z" for i in range(n)]
    if early is not None:
        times[early] = "2026-09-30T00:00:00Z"
    table = pa.table({"capture_id": [f"id-{i:05d}" for i in range(n)], "stage": ["a" if i % 2 else "b" for i in range(n)],
                      "reject_reason": ["r"] * n, "registry_revision": ["v"] * n, "capture_timestamp": times}, schema=schema)
    path = f"{sys.argv[1]}/{name}.parquet"
    pq.write_table(table, path, compression="none", use_dictionary=["stage", "reject_reason", "registry_revision"],
                   data_page_size=1024, row_group_size=1000, write_statistics=False)
    if name != "clean":
        break_text(path, b"id-02500")
"#;
    write_files(&dir, script);
    let rank = |file: &str| dir.command().args(["--threads", "1", "rank", "--format", "json", file]);
    let clean = rank("clean.parquet").expect_code(0);
    let polars = rank("clean.parquet").env("DLQF_PARQUET_PAGES", "off").expect_code(0);
    assert_eq!(clean.stdout, polars.stdout);
    let report: Value = serde_json::from_str(&clean.stdout).unwrap();
    let examples: Vec<&str> = report["buckets"].as_array().unwrap().iter().map(|b| b["example_id"].as_str().unwrap()).collect();
    assert_eq!(examples, ["id-00001", "id-00000"]);
    assert_eq!(rank("later.parquet").expect_code(0).stdout, clean.stdout);
    let run = rank("first.parquet").expect_code(1);
    assert!(run.stderr.contains("first.parquet: corrupt row group at row 2001: a page of column `capture_id` cannot be read"), "{}", run.stderr);
}

/// A row group that cannot be read stops `plan` whichever part of the dump it is in (the parts
/// of a dump are loaded ahead of the rows being planned), naming the file, and leaves no
/// manifest behind; the same dump unbroken plans every row.
#[test]
#[ignore = "needs pyarrow: make test runs it"]
fn plan_stops_at_a_row_group_it_cannot_read_and_writes_no_manifest() {
    let dir = Dir::new();
    let script = r#"
import sys
import pyarrow as pa, pyarrow.parquet as pq
n = 40000
table = pa.table({"capture_id": [f"id-{i:05d}" for i in range(n)], "stage": ["a" if i % 2 else "b" for i in range(n)],
                  "reject_reason": ["r"] * n, "registry_revision": ["v"] * n,
                  "capture_timestamp": [f"2026-10-01T{i % 24:02d}:00:00Z" for i in range(n)]})
for name, broken in [("clean", None), ("early", "id-00100"), ("late", "id-39000")]:
    path = f"{sys.argv[1]}/{name}.parquet"
    pq.write_table(table, path, compression="none", use_dictionary=False, row_group_size=5000)
    if broken is not None:
        break_text(path, broken.encode())
"#;
    write_files(&dir, script);
    dir.create("policy.toml", "clear_all = true\nmax_attempts = 1000\n");
    let plan = |file: &str| dir.command().args(["plan", file, "--policy", "policy.toml", "-o", "m.jsonl", "--no-progress"]);
    plan("clean.parquet").expect_code(0);
    assert_eq!(dir.read("m.jsonl").lines().count(), 40_001, "a header and every row");
    std::fs::remove_file(dir.join("m.jsonl")).unwrap();
    // Rows 101 and 39,001 are in the groups of 5,000 rows that start at rows 1 and 35,001.
    for (name, group) in [("early", 1), ("late", 35_001)] {
        let run = plan(&format!("{name}.parquet")).expect_code(1);
        assert!(run.stderr.contains(&format!("{name}.parquet: corrupt row group at row {group}:")), "{name}: {}", run.stderr);
        assert!(!dir.join("m.jsonl").exists(), "{name}: no manifest is left");
    }
}

/// A nested column where the profile expects a number or a string (a struct of one field or of
/// two) rejects every row, naming the field, whether the row group is read from its pages or
/// by polars alone.
#[test]
#[ignore = "needs pyarrow: make test runs it"]
fn nested_columns_are_rejected_by_both_parquet_readers() {
    let dir = Dir::new();
    let script = r#"
import sys
import pyarrow as pa, pyarrow.parquet as pq
n = 300
base = {"capture_id": [f"c{i}" for i in range(n)], "stage": ["s"] * n, "reject_reason": ["r"] * n,
        "registry_revision": ["v"] * n, "capture_timestamp": ["2026-10-01T00:00:00Z"] * n, "attempts": [1] * n}
two = pa.struct([("a", pa.int64()), ("b", pa.int64())])
one = pa.struct([pa.field("a", pa.int64(), nullable=True)])
for name, field, column in [("two", "attempts", pa.array([{"a": 1, "b": 2}] * n, type=two)),
                            ("one", "attempts", pa.array([{"a": 1}] * n, type=one)),
                            ("id", "capture_id", pa.array([{"a": 1}] * n, type=one))]:
    table = pa.table(base)
    table = table.set_column(table.schema.get_field_index(field), pa.field(field, column.type, nullable=False), column)
    pq.write_table(table, f"{sys.argv[1]}/{name}.parquet")
"#;
    write_files(&dir, script);
    for (name, field) in [("two", "attempts"), ("one", "attempts"), ("id", "capture_id")] {
        let file = format!("{name}.parquet");
        // Every row rejected: the run fails, alike with either reader, naming the field.
        let pages = dir.command().args(["rank", "--format", "json", &file]).expect_code(1);
        let polars = dir.command().env("DLQF_PARQUET_PAGES", "off").args(["rank", "--format", "json", &file]).expect_code(1);
        assert_eq!((&pages.stdout, &pages.stderr), (&polars.stdout, &polars.stderr), "{file}");
        assert!(pages.stderr.contains(&format!("{file}:1: field `{field}`")), "{}", pages.stderr);
        assert!(pages.stderr.contains("no row accepted: all 300 rows were rejected"), "{}", pages.stderr);
    }
}

/// pyarrow writes an empty table, or an empty row group between full ones, with chunks of no
/// values whose data page offset is 0 (and a dictionary page alone where dictionaries are
/// on): the footer checks take them as empty, and every reader counts their rows as none.
#[test]
#[ignore = "needs pyarrow: make test runs it"]
fn empty_row_groups_as_pyarrow_writes_them_read_as_no_rows() {
    let dir = Dir::new();
    let script = r#"
import sys
import pyarrow as pa, pyarrow.parquet as pq
table = pa.table({"capture_id": [f"id-{i:03d}" for i in range(200)], "stage": ["a", "b"] * 100, "reject_reason": ["r"] * 200,
                  "registry_revision": ["v"] * 200, "capture_timestamp": [f"2026-10-01T{i % 24:02d}:00:00Z" for i in range(200)]})
pq.write_table(table.slice(0, 0), f"{sys.argv[1]}/empty-dictionary.parquet")
pq.write_table(table.slice(0, 0), f"{sys.argv[1]}/empty-plain-v2.parquet", use_dictionary=False, data_page_version="2.0")
with pq.ParquetWriter(f"{sys.argv[1]}/gap.parquet", table.schema) as w:
    w.write_table(table.slice(0, 100))
    w.write_table(table.slice(0, 0))
    w.write_table(table.slice(100, 100))
"#;
    write_files(&dir, script);
    for (file, rows) in [("empty-dictionary.parquet", 0), ("empty-plain-v2.parquet", 0), ("gap.parquet", 200)] {
        let report: Value = serde_json::from_str(&dir.command().args(["rank", "--format", "json", file]).expect_code(0).stdout).unwrap();
        assert_eq!(report["total"], rows, "{file}");
        let count: Value = serde_json::from_str(&dir.command().args(["query", file, "--execute", "SELECT count(*) AS n FROM dlq", "--format", "json"]).expect_code(0).stdout).unwrap();
        assert_eq!(count[0]["n"], rows, "{file}");
    }
}
