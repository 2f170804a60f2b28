//! `dlqf query`: SQL over the raw records. The SQL files in queries/ give the numbers of the
//! matching commands, and run unchanged on DuckDB and Spark SQL with identical rows.

use std::process::Command;

use serde_json::Value;

use crate::util::{python, support, vision_line, Dir};

fn query_file(name: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("queries").join(name).display().to_string()
}

#[test]
fn rank_sql_reproduces_rank_and_runs_unchanged_on_duckdb_and_spark() {
    let dir = Dir::new();
    dir.gen("dlq.parquet", &["--rows", "20000", "--seed", "44"]);
    let ours: Value = serde_json::from_str(&dir.command().args(["query", "dlq.parquet", "--file", &query_file("rank.sql"), "--format", "json"]).ok()).unwrap();
    let rank = dir.command().args(["rank", "dlq.parquet", "--format", "json"]).json();
    let expected: Vec<Value> = rank["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let mut row = b["signature"].as_object().unwrap().clone();
            row.insert("count".into(), b["count"].clone());
            Value::Object(row)
        })
        .collect();
    assert_eq!(ours, Value::Array(expected), "rank.sql gives rank's buckets, in rank's order");

    let out = Command::new(python()).arg(support("duckdb_query.py")).arg(query_file("rank.sql")).arg(dir.join("dlq.parquet")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let duck: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(duck, ours, "DuckDB runs the same file to the same rows");

    let out = Command::new(python()).arg(support("spark_query.py")).arg(query_file("rank.sql")).arg(dir.join("dlq.parquet")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let spark: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(spark, ours, "Spark SQL runs the same file to the same rows");
}

#[test]
fn query_reads_mixed_inputs_and_names_lines_that_are_not_json_objects() {
    let dir = Dir::new();
    dir.gen("a.parquet", &["--rows", "100", "--seed", "1"]);
    let line = vision_line("x", "s", "r", "v", "2026-10-01T00:00:00Z", 0);
    dir.create("b.jsonl", format!("{line}\n{{broken\n{line}\n"));
    let run = dir.command().args(["query", "a.parquet", "b.jsonl", "-e", "SELECT count(*) AS n, count(DISTINCT capture_id) AS ids FROM dlq", "--format", "json"]).expect_code(0);
    let rows: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(rows, serde_json::json!([{"n": 102, "ids": 101}]));
    assert!(run.stderr.contains("b.jsonl:2: invalid JSON"), "{}", run.stderr);
    let csv = dir.command().args(["query", "b.jsonl", "-e", "SELECT reject_reason FROM dlq LIMIT 1", "--format", "csv"]).ok();
    assert_eq!(csv, "reject_reason\r\nr\r\n");
    dir.command().args(["query", "b.jsonl"]).expect_code(2);
    let run = dir.command().args(["query", "b.jsonl", "-e", "SELEC nothing"]).expect_code(1);
    assert!(run.stderr.contains("SQL"), "{}", run.stderr);
}
