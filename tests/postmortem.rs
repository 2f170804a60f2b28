//! `trend` and `health` on small dumps whose answers are worked out by hand in each test.

use serde_json::{json, Value};

use crate::util::{vision_line, Dir};

/// Writes `rows` of (id, reason, timestamp) as a vision JSON-lines dump.
fn dump(dir: &Dir, name: &str, rows: &[(&str, &str, &str)]) {
    let lines: Vec<String> = rows.iter().map(|(id, reason, ts)| vision_line(id, "inference", reason, "v1", ts, 0)).collect();
    dir.create(name, lines.join("\n") + "\n");
}

fn sig(reason: &str) -> Value {
    json!({"stage": "inference", "reject_reason": reason, "registry_revision": "v1"})
}

#[test]
fn trend_counts_per_utc_day_without_gaps_and_says_what_changed() {
    let dir = Dir::new();
    dump(
        &dir,
        "d.jsonl",
        &[
            ("a1", "timeout", "2026-10-01T10:00:00Z"),
            ("a2", "timeout", "2026-10-02T01:30:00+02:00"), // 2026-10-01T23:30Z: still the 1st
            ("a3", "timeout", "2026-10-04T12:00:00Z"),
            ("b1", "oom", "2026-10-04T08:00:00Z"),
            ("b2", "oom", "2026-10-04T09:00:00Z"),
            ("b3", "oom", "2026-10-04T22:30:00-02:00"), // 2026-10-05T00:30Z
            ("c1", "blur", "2026-10-01T00:00:00Z"),
            ("c2", "blur", "2026-10-02T00:00:00Z"),
            ("c3", "blur", "2026-10-02T05:00:00Z"),
        ],
    );
    let text = dir.command().args(["trend", "d.jsonl", "--every", "day", "--window", "2", "--format", "json"]).ok();
    let report: Value = serde_json::from_str(&text).unwrap();
    let days = ["2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z", "2026-10-03T00:00:00Z", "2026-10-04T00:00:00Z", "2026-10-05T00:00:00Z"];
    // Window 2: recent = 4th+5th, previous = 2nd+3rd.
    let expected = json!({
        "report": "dlqf.trend/1",
        "every": "day",
        "periods": days,
        "series": [
            // 3 each: ties in rank order by signature (blur < oom < timeout).
            {"signature": sig("blur"), "counts": [1, 2, 0, 0, 0], "total": 3, "status": "resolved", "category": "unknown"},
            {"signature": sig("oom"), "counts": [0, 0, 0, 2, 1], "total": 3, "status": "new", "category": "unknown"},
            {"signature": sig("timeout"), "counts": [2, 0, 0, 1, 0], "total": 3, "status": "rising", "category": "transient"},
        ]
    });
    assert_eq!(report, expected);
    let keys: Vec<usize> = ["\"report\"", "\"every\"", "\"periods\"", "\"series\""].iter().map(|k| text.find(k).unwrap()).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "contract key order:\n{text}");

    let table = dir.command().args(["trend", "d.jsonl", "--window", "2"]).ok();
    assert!(table.contains("resolved") && table.contains("new") && table.contains("▄█"), "{table}");
    let csv = dir.command().args(["trend", "d.jsonl", "--format", "csv"]).ok();
    assert!(csv.starts_with("rank,total,status,stage,reject_reason,registry_revision,category,2026-10-01T00:00:00Z,"), "{csv}");
    assert!(csv.contains("\r\n2,3,new,inference,oom,v1,unknown,0,0,0,2,1\r\n"), "{csv}");
}

#[test]
fn trend_periods_are_hours_or_monday_weeks_and_status_factors_are_one_and_a_half() {
    let dir = Dir::new();
    // Hours: 3 in hour 10, 2 in hour 12 (one written in +01:00), none in hour 11.
    dump(
        &dir,
        "h.jsonl",
        &[
            ("1", "r", "2026-10-01T10:00:00Z"),
            ("2", "r", "2026-10-01T10:59:59Z"),
            ("3", "r", "2026-10-01T10:30:00Z"),
            ("4", "r", "2026-10-01T12:00:00Z"),
            ("5", "r", "2026-10-01T13:15:00+01:00"),
        ],
    );
    let hourly = dir.command().args(["trend", "h.jsonl", "--every", "hour", "--window", "1", "--format", "json"]).json();
    assert_eq!(hourly["periods"], json!(["2026-10-01T10:00:00Z", "2026-10-01T11:00:00Z", "2026-10-01T12:00:00Z"]));
    // Recent 2 vs previous 0 with 3 earlier: seen before, so not new; 2 ≥ 1.5 × 0: rising.
    assert_eq!(hourly["series"][0]["counts"], json!([3, 0, 2]));
    assert_eq!(hourly["series"][0]["status"], "rising");
    let window2 = dir.command().args(["trend", "h.jsonl", "--every", "hour", "--window", "2", "--format", "json"]).json();
    // Recent = hours 11+12 = 2, previous = hour 10 = 3: 3 ≥ 1.5 × 2, falling.
    assert_eq!(window2["series"][0]["status"], "falling");

    // 2026-10-05 is a Monday; Sunday the 4th belongs to the week of Monday the 28th.
    dump(&dir, "w.jsonl", &[("1", "r", "2026-10-04T23:59:59Z"), ("2", "r", "2026-10-05T00:00:00Z"), ("3", "r", "2026-10-19T08:00:00Z")]);
    let weekly = dir.command().args(["trend", "w.jsonl", "--every", "week", "--window", "1", "--format", "json"]).json();
    assert_eq!(weekly["periods"], json!(["2026-09-28T00:00:00Z", "2026-10-05T00:00:00Z", "2026-10-12T00:00:00Z", "2026-10-19T00:00:00Z"]));
    assert_eq!(weekly["series"][0]["counts"], json!([1, 1, 0, 1]));
    assert_eq!(weekly["series"][0]["status"], "rising"); // 1 vs 0 before, seen earlier

    // Steady: 4 recent vs 3 before (less than 1.5× either way).
    dump(&dir, "s.jsonl", &[("1", "r", "2026-10-01T00:00:00Z"), ("2", "r", "2026-10-01T01:00:00Z"), ("3", "r", "2026-10-01T02:00:00Z"),
        ("4", "r", "2026-10-02T00:00:00Z"), ("5", "r", "2026-10-02T00:00:01Z"), ("6", "r", "2026-10-02T00:00:02Z"), ("7", "r", "2026-10-02T00:00:03Z")]);
    let steady = dir.command().args(["trend", "s.jsonl", "--window", "1", "--format", "json"]).json();
    assert_eq!(steady["series"][0]["status"], "steady");
}

#[test]
fn trend_of_nothing_is_an_empty_report_and_bad_options_are_usage_errors() {
    let dir = Dir::new();
    dir.create("empty.jsonl", "");
    let report = dir.command().args(["trend", "empty.jsonl", "--format", "json"]).json();
    assert_eq!(report, json!({"report": "dlqf.trend/1", "every": "day", "periods": [], "series": []}));
    dir.command().args(["trend", "empty.jsonl", "--window", "0"]).expect_code(2);
    dir.command().args(["trend", "empty.jsonl", "--every", "month"]).expect_code(2);
    dir.command().args(["trend", "empty.jsonl", "--format", "parquet", "-o", "t.parquet"]).expect_code(2);
    // Usage errors are found before any input is read, naming the flag: the missing input
    // is never reached.
    for command in ["trend", "health"] {
        let run = dir.command().args([command, "missing.jsonl", "--format", "html"]).expect_code(2);
        assert!(run.stderr.contains("--format html"), "{}", run.stderr);
    }
    let run = dir.command().args(["diff", "missing-a.json", "missing-b.json", "--format", "parquet"]).expect_code(2);
    assert!(run.stderr.contains("--format parquet"), "{}", run.stderr);
    let run = dir.command().args(["execute", "missing.jsonl", "--target", "ftp://x", "--ledger", "l.db", "--quarantine", "file:q"]).expect_code(2);
    assert!(run.stderr.contains("--target"), "{}", run.stderr);
    let run = dir.command().args(["execute", "missing.jsonl", "--target", "file:t", "--ledger", "l.db", "--quarantine", "file:q", "--lease", "0"]).expect_code(2);
    assert!(run.stderr.contains("--lease must be positive"), "{}", run.stderr);
}

#[test]
fn health_reports_depth_days_growth_and_fails_on_critical_only_when_asked() {
    let dir = Dir::new();
    let mut rows = Vec::new();
    // 2026-10-01: 3, 10-02: 0, 10-03: 1, 10-04: 2 (one of them 23:00-05:00 on the 3rd).
    for (i, ts) in ["2026-10-01T01:00:00Z", "2026-10-01T02:00:00Z", "2026-10-01T03:00:00Z", "2026-10-03T00:00:00Z", "2026-10-04T12:00:00Z", "2026-10-03T23:00:00-05:00"]
        .iter()
        .enumerate()
    {
        rows.push((i.to_string(), *ts));
    }
    let rows: Vec<(&str, &str, &str)> = rows.iter().map(|(id, ts)| (id.as_str(), "r", *ts)).collect();
    dump(&dir, "d.jsonl", &rows);
    dir.create("bad.jsonl", "{not json\n");
    let report = dir.command().args(["health", "d.jsonl", "bad.jsonl", "--warn", "5", "--critical", "6", "--window-days", "2", "--format", "json"]).json();
    assert_eq!(report["report"], "dlqf.health/1");
    assert_eq!(report["depth"], 6);
    assert_eq!(
        report["per_day"],
        json!([{"day": "2026-10-01", "count": 3}, {"day": "2026-10-02", "count": 0}, {"day": "2026-10-03", "count": 1}, {"day": "2026-10-04", "count": 2}])
    );
    assert_eq!(report["growth_per_day"], 1.5); // (1 + 2) / 2
    assert_eq!(report["status"], "critical");
    assert_eq!(report["rejected"], 1);

    let warn = dir.command().args(["health", "d.jsonl", "--warn", "5", "--critical", "7", "--format", "json", "--fail-on-critical"]).json();
    assert_eq!(warn["status"], "warning");
    assert_eq!(warn["growth_per_day"], 1.5); // 6 over 4 days: fewer days than the default 7
    let healthy = dir.command().args(["health", "d.jsonl", "--format", "json"]).json();
    assert_eq!(healthy["status"], "healthy"); // defaults 100 / 1000 (the seed's DLQConfig)
    assert_eq!((healthy["warn"].as_u64(), healthy["critical"].as_u64()), (Some(100), Some(1000)));

    dir.command().args(["health", "d.jsonl", "--warn", "1", "--critical", "6"]).expect_code(0);
    let run = dir.command().args(["health", "d.jsonl", "--warn", "1", "--critical", "6", "--fail-on-critical"]).expect_code(3);
    assert!(run.stdout.contains("CRITICAL"), "{}", run.stdout);
    dir.command().args(["health", "d.jsonl", "--warn", "7", "--critical", "6"]).expect_code(2);
    // Only --critical, below the default warning level: warning follows it down.
    let low = dir.command().args(["health", "d.jsonl", "--critical", "5", "--format", "json"]).json();
    assert_eq!((low["status"].as_str(), low["warn"].as_u64()), (Some("critical"), Some(5)));
    let md = dir.command().args(["health", "d.jsonl", "--format", "markdown"]).ok();
    assert!(md.contains("| 2026-10-02 | 0 |"), "{md}");
}

#[test]
fn diff_lists_new_gone_and_moved_causes_from_two_rankings() {
    let dir = Dir::new();
    let rows = |spec: &[(&str, usize)]| -> Vec<(String, String)> {
        spec.iter().flat_map(|(reason, n)| (0..*n).map(move |i| (format!("{reason}-{i}"), reason.to_string()))).collect()
    };
    for (name, spec) in [("old", &[("a", 3), ("b", 2), ("c", 1)][..]), ("new", &[("a", 1), ("b", 4), ("d", 2)][..])] {
        let rows = rows(spec);
        let rows: Vec<(&str, &str, &str)> = rows.iter().map(|(id, r)| (id.as_str(), r.as_str(), "2026-10-01T00:00:00Z")).collect();
        dump(&dir, &format!("{name}.jsonl"), &rows);
        dir.command().args(["rank", &format!("{name}.jsonl"), "-o", &format!("{name}.json")]).ok();
    }
    let text = dir.command().args(["diff", "old.json", "new.json", "--format", "json"]).ok();
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["report"], "dlqf.diff/1");
    // NEW ranks b (4/7), d (2/7), a (1/7); OLD ranked a (3/6), b (2/6), c (1/6).
    assert_eq!(report["new"].as_array().unwrap().len(), 1);
    assert_eq!((&report["new"][0]["signature"], &report["new"][0]["rank"], &report["new"][0]["count"], &report["new"][0]["share"]), (&sig("d"), &json!(2), &json!(2), &json!(0.2857)));
    assert_eq!(report["gone"].as_array().unwrap().len(), 1);
    assert_eq!((&report["gone"][0]["signature"], &report["gone"][0]["rank"], &report["gone"][0]["share"]), (&sig("c"), &json!(3), &json!(0.1667)));
    assert_eq!(
        report["changed"],
        json!([
            {"signature": sig("b"), "count_old": 2, "count_new": 4, "share_old": 0.3333, "share_new": 0.5714, "rank_old": 2, "rank_new": 1, "category": "unknown"},
            {"signature": sig("a"), "count_old": 3, "count_new": 1, "share_old": 0.5, "share_new": 0.1429, "rank_old": 1, "rank_new": 3, "category": "unknown"},
        ])
    );
    let keys: Vec<usize> = ["\"report\"", "\"new\"", "\"gone\"", "\"changed\""].iter().map(|k| text.find(k).unwrap()).collect();
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "contract key order:\n{text}");

    dir.command().args(["diff", "old.json", "new.json"]).ok();
    dir.command().args(["diff", "old.json", "new.json", "--fail-on-new"]).expect_code(3);
    dir.command().args(["diff", "new.json", "new.json", "--fail-on-new"]).expect_code(0);
    let md = dir.command().args(["diff", "old.json", "new.json", "--format", "markdown"]).ok();
    assert!(md.contains("### New causes") && md.contains("| 1 (was 2) | 4 (+2) | 57.14% (+23.81 pp) | inference | b | v1 |"), "{md}");
    let csv = dir.command().args(["diff", "old.json", "new.json", "--format", "csv"]).ok();
    assert!(csv.contains("\r\nnew,,2,,2,,0.2857,inference,d,v1\r\ngone,3,,1,,0.1667,,inference,c,v1\r\n"), "{csv}");

    // A report that is not a ranking, a ranking cut with --top, rankings by different fields.
    dir.command().args(["trend", "old.jsonl", "-o", "trend.json"]).ok();
    let run = dir.command().args(["diff", "trend.json", "new.json"]).expect_code(1);
    assert!(run.stderr.contains("trend.json"), "{}", run.stderr);
    dir.command().args(["rank", "new.jsonl", "--top", "1", "-o", "top.json"]).ok();
    let run = dir.command().args(["diff", "old.json", "top.json"]).expect_code(0);
    assert!(run.stderr.contains("top.json lists 4 of its 7 failures"), "{}", run.stderr);
    // A ranking by the envelope's fields.
    dir.gen("envelope.jsonl", &["--profile", "envelope", "--rows", "20"]);
    dir.command().args(["rank", "envelope.jsonl", "--profile", "envelope", "-o", "envelope.json"]).ok();
    let run = dir.command().args(["diff", "old.json", "envelope.json"]).expect_code(1);
    assert!(run.stderr.contains("different fields"), "{}", run.stderr);
    // A ranking written by another tool with only the essential fields.
    dir.create("minimal.json", r#"{"report": "dlqf.rank/1", "buckets": [{"rank": 1, "signature": {"stage": "inference", "reject_reason": "d", "registry_revision": "v1"}, "count": 9, "share": 1.0}]}"#);
    let minimal = dir.command().args(["diff", "new.json", "minimal.json", "--format", "json"]).json();
    assert_eq!((minimal["total_new"].as_u64(), minimal["changed"][0]["count_old"].as_u64(), minimal["gone"].as_array().map(Vec::len)), (Some(9), Some(2), Some(2)));
    let run = dir.command().args(["diff", "old.json", "missing.json"]).expect_code(1);
    assert!(run.stderr.contains("missing.json"), "{}", run.stderr);
}

#[test]
fn one_timestamp_centuries_away_is_a_clear_error_not_a_huge_report() {
    let dir = Dir::new();
    dump(&dir, "d.jsonl", &[("1", "r", "0001-01-01T00:00:00Z"), ("2", "r", "2026-10-01T00:00:00Z")]);
    let run = dir.command().args(["trend", "d.jsonl", "--every", "hour"]).expect_code(1);
    assert!(run.stderr.contains("0001-01-01T00:00:00Z") && run.stderr.contains("--since"), "{}", run.stderr);
    assert!(run.stdout.is_empty());
    dir.command().args(["health", "d.jsonl"]).expect_code(1);
    // The HTML report is still written, without trend lines, and says why.
    let run = dir.command().args(["rank", "d.jsonl", "-o", "r.html"]).expect_code(0);
    assert!(run.stderr.contains("no trend lines"), "{}", run.stderr);
    assert!(!dir.read("r.html").contains("<svg id=\"trend\""));
    dir.command().args(["trend", "d.jsonl", "--since", "2026-01-01"]).ok();
}

#[test]
fn html_with_top_counts_every_cause() {
    let dir = Dir::new();
    let rows: Vec<(String, String)> = (0..6).flat_map(|k| (0..=k).map(move |i| (format!("{k}-{i}"), format!("reason-{k}")))).collect();
    let rows: Vec<(&str, &str, &str)> = rows.iter().map(|(id, r)| (id.as_str(), r.as_str(), "2026-10-01T00:00:00Z")).collect();
    dump(&dir, "d.jsonl", &rows);
    let html = dir.command().args(["rank", "d.jsonl", "--top", "2", "--format", "html"]).ok();
    // 21 failures in 6 causes (1+2+…+6); the top two hold 6+5, the other four 10.
    assert!(html.contains("21 failures in 6 causes"), "{html}");
    assert!(html.contains("<title>4 other causes — 10</title>"), "{html}");
    assert!(html.contains("the 2 largest of 6"), "{html}");
}

/// An envelope record on `topic`, failed at `ts`.
fn envelope_line(id: &str, topic: &str, ts: &str) -> String {
    json!({"id": id, "original_topic": topic, "original_partition": 0, "original_offset": 1, "original_key": null,
           "original_value": {}, "original_headers": {}, "error_type": "ValueError", "error_message": "bad",
           "first_failed_at": ts, "last_failed_at": ts, "retry_count": 0, "consumer_id": "c", "consumer_version": "1"})
    .to_string()
}

#[test]
fn health_per_topic_is_the_seed_monitors_view_and_each_topic_is_health_over_its_messages_alone() {
    let dir = Dir::new();
    // payments: 6 failures on three days (critical at 6); orders: 2 on one day; audit: 1.
    let rows = [
        ("p1", "payments", "2026-10-01T01:00:00Z"),
        ("p2", "payments", "2026-10-01T02:00:00Z"),
        ("p3", "payments", "2026-10-03T02:00:00Z"),
        ("p4", "payments", "2026-10-03T03:00:00Z"),
        ("p5", "payments", "2026-10-03T04:00:00Z"),
        ("p6", "payments", "2026-10-04T04:00:00Z"),
        ("o1", "orders", "2026-10-02T00:00:00Z"),
        ("o2", "orders", "2026-10-02T05:00:00Z"),
        ("a1", "audit", "2026-10-02T00:00:00Z"),
    ];
    let lines: Vec<String> = rows.iter().map(|(id, topic, ts)| envelope_line(id, topic, ts)).collect();
    dir.create("d.jsonl", lines.join("\n") + "\n");
    let args = ["--profile", "envelope", "--warn", "2", "--critical", "6", "--window-days", "2"];
    let report = dir.command().args(["health", "d.jsonl", "--format", "json"]).args(args).json();
    assert_eq!((report["depth"].as_u64(), report["status"].as_str()), (Some(9), Some("critical")));
    assert_eq!(report["by"], "original_topic", "the envelope's default");
    let topics = report["topics"].as_array().unwrap();
    let names: Vec<&str> = topics.iter().map(|t| t["topic"].as_str().unwrap()).collect();
    assert_eq!(names, ["payments", "orders", "audit"], "depth descending, then name");
    assert_eq!(
        topics[0],
        json!({"topic": "payments", "depth": 6, "per_day": [{"day": "2026-10-01", "count": 2}, {"day": "2026-10-02", "count": 0},
               {"day": "2026-10-03", "count": 3}, {"day": "2026-10-04", "count": 1}], "growth_per_day": 2.0, "status": "critical"})
    );
    assert_eq!(topics[1], json!({"topic": "orders", "depth": 2, "per_day": [{"day": "2026-10-02", "count": 2}], "growth_per_day": 2.0, "status": "warning"}));
    assert_eq!(topics[2]["status"], "healthy");

    // Each topic is exactly `health` over that topic's messages alone.
    for (i, topic) in names.iter().enumerate() {
        let alone: Vec<String> = rows.iter().filter(|r| r.1 == *topic).map(|(id, t, ts)| envelope_line(id, t, ts)).collect();
        dir.create("alone.jsonl", alone.join("\n") + "\n");
        let single = dir.command().args(["health", "alone.jsonl", "--format", "json"]).args(args).json();
        for field in ["depth", "per_day", "growth_per_day", "status"] {
            assert_eq!(topics[i][field], single[field], "{topic}: {field}");
        }
    }

    // The table names the critical topic; --fail-on-critical fires.
    let run = dir.command().args(["health", "d.jsonl", "--fail-on-critical"]).args(args).expect_code(3);
    assert!(run.stdout.contains("critical original_topic: payments (depth 6)"), "{}", run.stdout);
    let csv = dir.command().args(["health", "d.jsonl", "--format", "csv"]).args(args).ok();
    assert_eq!(csv.lines().next(), Some("day,count,payments,orders,audit"));
    assert_eq!(csv.lines().nth(2), Some("2026-10-02,3,0,2,1"));

    // --by another signature field; a field that is not one is a usage error naming the fields.
    let by_type = dir.command().args(["health", "d.jsonl", "--by", "error_type", "--format", "json"]).args(args).json();
    assert_eq!(by_type["topics"][0]["topic"], "ValueError");
    let run = dir.command().args(["health", "d.jsonl", "--by", "consumer_id"]).args(args).expect_code(2);
    assert!(run.stderr.contains("original_topic, error_category, error_type, error_message"), "{}", run.stderr);
    // The vision profile has no topic: no topics unless asked.
    dump(&dir, "v.jsonl", &[("1", "r", "2026-10-01T00:00:00Z")]);
    let vision = dir.command().args(["health", "v.jsonl", "--format", "json"]).json();
    assert!(vision.get("topics").is_none() && vision.get("by").is_none(), "{vision}");
}
