//! `dlqf rank`: the JSON contract, the seed's verification items 1 and 2, options and formats.

use serde_json::{json, Value};

use crate::util::{vision_line, Dir};

fn lines(rows: &[(&str, &str, &str, &str, &str)]) -> String {
    rows.iter().map(|(id, stage, reason, rev, ts)| vision_line(id, stage, reason, rev, ts, 0) + "\n").collect()
}

#[test]
fn json_report_follows_the_contract_to_the_letter() {
    let dir = Dir::new();
    dir.create(
        "dlq.jsonl",
        lines(&[
            ("cap-3", "inference", "timeout", "det-v8.0", "2026-10-02T00:00:00Z"),
            ("cap-2", "inference", "timeout", "det-v8.0", "2026-10-01T00:00:00Z"),
            ("cap-1", "inference", "timeout", "det-v8.0", "2026-10-01T00:00:00Z"),
            ("cap-9", "ingestion", "schema_invalid", "det-v8.1", "2026-11-11T23:59:59Z"),
        ]),
    );
    let out = dir.command().args(["rank", "dlq.jsonl", "--format", "json"]).ok();
    let expected = json!({
        "report": "dlqf.rank/1", "profile": "vision",
        "signature_fields": ["stage", "reject_reason", "registry_revision"],
        "total": 4, "rejected": 0,
        "buckets": [
            {"rank": 1, "signature": {"stage": "inference", "reject_reason": "timeout", "registry_revision": "det-v8.0"},
             "count": 3, "share": 0.75, "example_id": "cap-1",
             "first_seen": "2026-10-01T00:00:00Z", "last_seen": "2026-10-02T00:00:00Z", "category": "transient"},
            {"rank": 2, "signature": {"stage": "ingestion", "reject_reason": "schema_invalid", "registry_revision": "det-v8.1"},
             "count": 1, "share": 0.25, "example_id": "cap-9",
             "first_seen": "2026-11-11T23:59:59Z", "last_seen": "2026-11-11T23:59:59Z", "category": "unknown"}
        ],
        "dominant": {"rank": 1, "share": 0.75, "alert_share": 0.4, "alert": true}
    });
    let actual: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(actual, expected);
    // Key order is part of the contract, not only the values.
    let order: Vec<usize> = ["\"report\"", "\"profile\"", "\"signature_fields\"", "\"total\"", "\"rejected\"", "\"buckets\"", "\"dominant\""]
        .iter()
        .map(|k| out.find(k).unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "top-level key order: {out}");
    let bucket_order: Vec<usize> = ["\"rank\"", "\"signature\"", "\"count\"", "\"share\"", "\"example_id\"", "\"first_seen\"", "\"last_seen\"", "\"category\""]
        .iter()
        .map(|k| out.find(k).unwrap())
        .collect();
    assert!(bucket_order.windows(2).all(|w| w[0] < w[1]), "bucket key order: {out}");
    let sig = out.find("\"stage\": \"inference\"").unwrap();
    assert!(sig < out.find("\"reject_reason\": \"timeout\"").unwrap() && out.find("\"reject_reason\": \"timeout\"").unwrap() < out.find("\"registry_revision\": \"det-v8.0\"").unwrap());
}

#[test]
fn seed_item_1_buckets_are_stable_and_case_drift_is_one_bucket() {
    let dir = Dir::new();
    dir.create(
        "dlq.jsonl",
        lines(&[
            ("a", "inference", "Low_Confidence", "det-v7.3", "2026-10-01T00:00:00Z"),
            ("b", " Inference", "low_confidence ", "det-v7.3 ", "2026-10-01T00:00:01Z"),
            ("c", "INFERENCE\t", "LOW_CONFIDENCE", " det-v7.3", "2026-10-01T00:00:02Z"),
        ]),
    );
    let first = dir.command().args(["rank", "dlq.jsonl", "--format", "json"]).json();
    let second = dir.command().args(["rank", "dlq.jsonl", "--format", "json"]).json();
    assert_eq!(first, second);
    let buckets = first["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 1, "{first:#}");
    assert_eq!(buckets[0]["count"], 3);
    assert_eq!(buckets[0]["signature"], json!({"stage": "inference", "reject_reason": "low_confidence", "registry_revision": "det-v7.3"}));
}

#[test]
fn seed_item_2_ranking_is_count_descending_with_a_total_tie_break() {
    let dir = Dir::new();
    // Two buckets of 2 that differ only in reason, two of 1 that differ only in revision.
    let rows = [
        ("1", "inference", "zeta", "r1", "2026-10-01T00:00:00Z"),
        ("2", "inference", "zeta", "r1", "2026-10-01T00:00:00Z"),
        ("3", "inference", "alpha", "r1", "2026-10-01T00:00:00Z"),
        ("4", "inference", "alpha", "r1", "2026-10-01T00:00:00Z"),
        ("5", "ingestion", "x", "r2", "2026-10-01T00:00:00Z"),
        ("6", "ingestion", "x", "r10", "2026-10-01T00:00:00Z"),
        ("7", "ingestion", "big", "r1", "2026-10-01T00:00:00Z"),
        ("8", "ingestion", "big", "r1", "2026-10-01T00:00:00Z"),
        ("9", "ingestion", "big", "r1", "2026-10-01T00:00:00Z"),
    ];
    dir.create("a.jsonl", lines(&rows));
    let mut reversed = rows;
    reversed.reverse();
    dir.create("b.jsonl", lines(&reversed));
    let a = dir.command().args(["rank", "a.jsonl", "--format", "json"]).json();
    let b = dir.command().args(["rank", "b.jsonl", "--format", "json"]).json();
    assert_eq!(a, b);
    let order: Vec<(u64, String)> = a["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["count"].as_u64().unwrap(), b["signature"].as_object().unwrap().values().map(|v| v.as_str().unwrap()).collect::<Vec<_>>().join("/")))
        .collect();
    let expected: Vec<(u64, String)> = vec![
        (3, "ingestion/big/r1".into()),
        (2, "inference/alpha/r1".into()),
        (2, "inference/zeta/r1".into()),
        (1, "ingestion/x/r10".into()), // byte order: "r10" < "r2"
        (1, "ingestion/x/r2".into()),
    ];
    assert_eq!(order, expected);
    let ranks: Vec<u64> = a["buckets"].as_array().unwrap().iter().map(|b| b["rank"].as_u64().unwrap()).collect();
    assert_eq!(ranks, [1, 2, 3, 4, 5]);
}

#[test]
fn example_id_is_the_earliest_failure_with_ties_to_the_smallest_id() {
    let dir = Dir::new();
    dir.create(
        "dlq.jsonl",
        lines(&[
            ("cap-b", "s", "r", "v", "2026-10-01T02:00:00+02:00"), // 00:00Z, tie
            ("cap-c", "s", "r", "v", "2026-10-02T00:00:00Z"),
            ("cap-a", "s", "r", "v", "2026-10-01T00:00:00Z"), // 00:00Z, tie, smallest id
            ("cap-0", "s", "r", "v", "2026-10-01T00:00:00.001Z"),
        ]),
    );
    let report = dir.command().args(["rank", "dlq.jsonl", "--format", "json"]).json();
    assert_eq!(report["buckets"][0]["example_id"], "cap-a");
    assert_eq!(report["buckets"][0]["first_seen"], "2026-10-01T00:00:00Z");
    assert_eq!(report["buckets"][0]["last_seen"], "2026-10-02T00:00:00Z");
}

#[test]
fn revision_is_trimmed_but_not_lowercased() {
    let dir = Dir::new();
    dir.create(
        "dlq.jsonl",
        lines(&[("1", "s", "r", "DET-v8", "2026-10-01T00:00:00Z"), ("2", "s", "r", "det-v8", "2026-10-01T00:00:00Z")]),
    );
    let report = dir.command().args(["rank", "dlq.jsonl", "--format", "json"]).json();
    assert_eq!(report["buckets"].as_array().unwrap().len(), 2);
}

#[test]
fn fail_on_dominant_exits_3_only_when_the_top_share_reaches_the_alert_share() {
    let dir = Dir::new();
    dir.create(
        "dlq.jsonl",
        lines(&[
            ("1", "s", "a", "v", "2026-10-01T00:00:00Z"),
            ("2", "s", "a", "v", "2026-10-01T00:00:00Z"),
            ("3", "s", "b", "v", "2026-10-01T00:00:00Z"),
            ("4", "s", "c", "v", "2026-10-01T00:00:00Z"),
            ("5", "s", "d", "v", "2026-10-01T00:00:00Z"),
        ]),
    );
    // Top share is exactly 0.4: "reaches" the default alert share.
    let run = dir.command().args(["rank", "dlq.jsonl", "--format", "json", "--fail-on-dominant"]).expect_code(3);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["dominant"], json!({"rank": 1, "share": 0.4, "alert_share": 0.4, "alert": true}));
    dir.command().args(["rank", "dlq.jsonl", "--fail-on-dominant", "--alert-share", "0.41"]).ok();
    dir.command().args(["rank", "dlq.jsonl", "--alert-share", "0.2"]).ok();
    dir.command().args(["rank", "dlq.jsonl", "--alert-share", "1.5"]).expect_code(2);
}

#[test]
fn top_limits_buckets_but_not_totals() {
    let dir = Dir::new();
    dir.create("dlq.jsonl", lines(&[("1", "s", "a", "v", "2026-10-01T00:00:00Z"), ("2", "s", "a", "v", "2026-10-01T00:00:00Z"), ("3", "s", "b", "v", "2026-10-01T00:00:00Z")]));
    let report = dir.command().args(["rank", "dlq.jsonl", "--format", "json", "--top", "1"]).json();
    assert_eq!(report["total"], 3);
    assert_eq!(report["buckets"].as_array().unwrap().len(), 1);
    assert_eq!(report["buckets"][0]["share"], 0.6667);
}

#[test]
fn since_and_until_select_a_half_open_window() {
    let dir = Dir::new();
    dir.create(
        "dlq.jsonl",
        lines(&[
            ("1", "s", "a", "v", "2026-10-01T00:00:00Z"),
            ("2", "s", "a", "v", "2026-10-02T00:00:00Z"),
            ("3", "s", "a", "v", "2026-10-03T00:00:00Z"),
        ]),
    );
    let report = dir.command().args(["rank", "dlq.jsonl", "--format", "json", "--since", "2026-10-02", "--until", "2026-10-03T00:00:00Z"]).json();
    assert_eq!(report["total"], 1);
    assert_eq!(report["buckets"][0]["example_id"], "2");
    let none = dir.command().args(["rank", "dlq.jsonl", "--format", "json", "--since", "1d"]).json();
    assert_eq!(none["total"], 0, "everything is older than a day");
    dir.command().args(["rank", "dlq.jsonl", "--since", "last tuesday"]).expect_code(2);
    dir.command().args(["rank", "dlq.jsonl", "--since", "2026-10-03", "--until", "2026-10-01"]).expect_code(2);
}

#[test]
fn table_csv_markdown_and_parquet_outputs() {
    let dir = Dir::new();
    dir.create(
        "dlq.jsonl",
        lines(&[
            ("1", "s", "=cmd|' /C calc'!A0", "v", "2026-10-01T00:00:00Z"),
            ("2", "s", "<script>alert(1)</script>", "v", "2026-10-01T00:00:00Z"),
            ("3", "s", "<script>alert(1)</script>", "v", "2026-10-01T00:00:00Z"),
        ]),
    );
    let table = dir.command().args(["rank", "dlq.jsonl"]).ok();
    assert!(table.lines().any(|l| l.starts_with("RANK") && l.contains("REJECT_REASON")), "{table}");
    assert!(table.contains("66.67%"), "{table}");

    let csv = dir.command().args(["rank", "dlq.jsonl", "--format", "csv"]).ok();
    let mut rows = csv.lines();
    let columns = "rank,count,share,stage,reject_reason,registry_revision,category,first_seen,last_seen,example_id";
    assert_eq!(rows.next().unwrap(), columns);
    assert_eq!(rows.next().unwrap(), "1,2,0.6667,s,<script>alert(1)</script>,v,unknown,2026-10-01T00:00:00Z,2026-10-01T00:00:00Z,2");
    assert_eq!(rows.next().unwrap(), "2,1,0.3333,s,'=cmd|' /c calc'!a0,v,unknown,2026-10-01T00:00:00Z,2026-10-01T00:00:00Z,1");
    // Every format shows the same columns in the same order.
    let names: Vec<String> = columns.split(',').map(str::to_string).collect();
    let table_head: Vec<String> = table.lines().find(|l| l.starts_with("RANK")).unwrap().split_whitespace().map(str::to_lowercase).collect();
    assert_eq!(table_head, names);
    let md_head = dir.command().args(["rank", "dlq.jsonl", "--format", "markdown"]).ok();
    let md_head: Vec<String> =
        md_head.lines().find(|l| l.starts_with("| rank")).unwrap().trim_matches('|').split('|').map(|c| c.trim().replace('\\', "")).collect();
    assert_eq!(md_head, names);
    let html = dir.command().args(["rank", "dlq.jsonl", "--format", "html"]).ok();
    let html_head: Vec<String> = html.split("<th>").skip(1).map(|c| c.split("</th>").next().unwrap().to_string()).collect();
    assert_eq!(html_head, names);

    let md = dir.command().args(["rank", "dlq.jsonl", "--format", "markdown"]).ok();
    assert!(md.contains("| rank | count | share | stage | reject\\_reason | registry\\_revision |"), "{md}");
    assert!(md.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{md}");
    assert!(md.contains("=cmd\\|' /c calc'!a0"), "{md}");

    dir.command().args(["rank", "dlq.jsonl", "-o", "rank.parquet"]).ok();
    let bytes = std::fs::read(dir.join("rank.parquet")).unwrap();
    assert_eq!(&bytes[..4], b"PAR1");
    use polars::prelude::{ParquetReader, SerReader};
    let schema = ParquetReader::new(std::fs::File::open(dir.join("rank.parquet")).unwrap()).schema().unwrap();
    let parquet_names: Vec<String> = schema.iter_names().map(|n| n.to_string()).collect();
    assert_eq!(parquet_names, names);
    // The format follows the -o file name; JSON written to a file equals JSON on stdout.
    dir.command().args(["rank", "dlq.jsonl", "-o", "rank.json"]).ok();
    assert_eq!(dir.read("rank.json"), dir.command().args(["rank", "dlq.jsonl", "--format", "json"]).ok());
}

#[test]
fn empty_input_is_a_valid_report_with_total_zero() {
    let dir = Dir::new();
    dir.create("empty.jsonl", "");
    let report = dir.command().args(["rank", "empty.jsonl", "--format", "json", "--fail-on-dominant"]).json();
    assert_eq!(report["total"], 0);
    assert_eq!(report["rejected"], 0);
    assert_eq!(report["buckets"], json!([]));
    assert_eq!(report["dominant"], Value::Null);
}

#[test]
fn usage_errors_exit_2() {
    let dir = Dir::new();
    dir.command().args(["rank"]).expect_code(2);
    dir.command().args(["rank", "x.jsonl", "--format", "xml"]).expect_code(2);
    dir.command().args(["frobnicate"]).expect_code(2);
    let help = dir.command().args(["rank", "--help"]).ok();
    assert!(help.contains("--fail-on-dominant") && help.contains("--since"), "{help}");
}

#[test]
fn shares_are_the_seeds_round_of_the_double_on_exact_ties() {
    // 195/20000 and 73/20000 are ties in decimal but not as doubles: the seed's
    // round(count / total, 4) gives 0.0097 and 0.0037, as Python computes below.
    let counts = [18_700u64, 1_029, 195, 73, 3];
    let dir = Dir::new();
    let mut text = String::new();
    for (k, &n) in counts.iter().enumerate() {
        for i in 0..n {
            text.push_str(&vision_line(&format!("{k}-{i}"), "inference", &format!("reason-{k}"), "v", "2026-10-01T00:00:00Z", 0));
            text.push('\n');
        }
    }
    dir.create("dlq.jsonl", text);
    let report = dir.command().args(["rank", "dlq.jsonl", "--format", "json"]).json();
    let args: Vec<String> = counts.iter().map(u64::to_string).collect();
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys\nc = [int(a) for a in sys.argv[1:]]\nprint(' '.join(repr(round(n / sum(c), 4)) for n in c))"])
        .args(&args)
        .output()
        .unwrap();
    let python: Vec<f64> = String::from_utf8(out.stdout).unwrap().split_whitespace().map(|s| s.parse().unwrap()).collect();
    let ours: Vec<f64> = report["buckets"].as_array().unwrap().iter().map(|b| b["share"].as_f64().unwrap()).collect();
    assert_eq!(ours, python);
    assert_eq!(ours[2..4], [0.0097, 0.0037]);
    let csv = dir.command().args(["rank", "dlq.jsonl", "--format", "csv"]).ok();
    assert!(csv.lines().nth(3).unwrap().starts_with("3,195,0.0097,"), "{csv}");
    let md = dir.command().args(["rank", "dlq.jsonl", "--format", "markdown"]).ok();
    assert!(md.contains("| 3 | 195 | 0.97% |"), "{md}");
}
