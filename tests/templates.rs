//! Message templates (`dlqf template`, `rank --explain`, the accuracy script): context-free,
//! so a message's bucket never depends on the rest of the input.

use crate::util::Dir;

#[test]
fn template_prints_one_template_per_line_and_explains_the_masks() {
    let dir = Dir::new();
    dir.create("m.txt", "session closed for user cyrus\nTimed out after 4653ms calling gw at 10.0.161.173:8443\n");
    let out = dir.command().args(["template", "m.txt"]).ok();
    assert_eq!(out, "session closed for user <*>\nTimed out after <*> calling gw at <*>\n");
    let stdin = dir.command().arg("template").stdin("session closed for user root\n").ok();
    assert_eq!(stdin, "session closed for user <*>\n", "the same template from stdin, for another user");
    // Any bytes: CRLF line ends, invalid UTF-8 (shown as U+FFFD), no final newline.
    let odd = dir.command().arg("template").stdin(b"bad \xff byte 12\r\nlast line 7".to_vec()).ok();
    assert_eq!(odd, "bad \u{fffd} byte <*>\nlast line <*>\n");
    let explained = dir.command().args(["template", "--explain", "m.txt"]).ok();
    assert!(explained.contains("session closed for user <*>\n    user: cyrus\n"), "{explained}");
    assert!(explained.contains("    number: 4653ms\n    number: 10.0.161.173:8443\n"), "{explained}");
}

/// Our own labelled lines through the accuracy script: every true template is one group.
#[test]
fn the_accuracy_script_scores_a_labelled_set() {
    let dir = Dir::new();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/grouping_accuracy.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(crate::util::support("labelled"))
        .args(["--dlqf", env!("CARGO_BIN_EXE_dlqf")])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("| Dlq | 30 | 18 | 18 | 1.000 |"), "{table}");
}

#[test]
fn envelope_buckets_do_not_depend_on_input_order_or_threads() {
    let dir = Dir::new();
    let dump = dir.gen("e.jsonl", &["--profile", "envelope", "--rows", "3000", "--seed", "12"]);
    let text = std::fs::read_to_string(dump).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.reverse();
    let (a, b) = lines.split_at(1234);
    dir.create("split/b.jsonl", a.join("\n") + "\n");
    dir.create("split/a.jsonl", b.join("\n") + "\n");
    let whole = dir.command().args(["rank", "--profile", "envelope", "e.jsonl", "--format", "json", "--threads", "1"]).ok();
    let split = dir.command().args(["rank", "--profile", "envelope", "split", "--format", "json", "--threads", "3"]).ok();
    assert_eq!(whole, split);
}

#[test]
fn rank_explain_shows_a_buckets_first_messages_and_their_masks() {
    let dir = Dir::new();
    dir.gen("e.jsonl", &["--profile", "envelope", "--rows", "2000", "--seed", "13"]);
    let ranking = dir.command().args(["rank", "--profile", "envelope", "e.jsonl", "--format", "json"]).json();
    let top = &ranking["buckets"][1];
    let message = top["signature"]["error_message"].as_str().unwrap();
    for wanted in ["2", message] {
        let out = dir.command().args(["rank", "--profile", "envelope", "e.jsonl", "--explain", wanted]).ok();
        assert!(out.starts_with(&format!("bucket 2 of {}: {} messages\n", ranking["buckets"].as_array().unwrap().len(), top["count"])), "{out}");
        assert_eq!(out.matches(&format!("  template: {message}\n")).count(), 5, "five examples, each of this template:\n{out}");
        // The first example is the first of the bucket in the file.
        let first_id = out.lines().find(|l| !l.is_empty() && !l.starts_with(' ') && !l.starts_with("bucket") && !l.starts_with("the first")).unwrap();
        let file = dir.read("e.jsonl");
        let first_in_file = file
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .find(|r| r["original_topic"].as_str().map(str::trim) == top["signature"]["original_topic"].as_str()
                && r["error_message"].as_str().is_some_and(|m| dlqf_template(&dir, m) == message)
                && r["error_type"].as_str().map(str::trim) == top["signature"]["error_type"].as_str())
            .unwrap();
        assert_eq!(first_id, first_in_file["id"].as_str().unwrap());
    }
    let run = dir.command().args(["rank", "--profile", "envelope", "e.jsonl", "--explain", "no such template"]).expect_code(2);
    assert!(run.stderr.contains("--explain no such template: no bucket"), "{}", run.stderr);
    dir.command().args(["rank", "--profile", "envelope", "e.jsonl", "-o", "e.state"]).ok();
    let run = dir.command().args(["rank", "--profile", "envelope", "e.state", "--explain", "1"]).expect_code(2);
    assert!(run.stderr.contains("e.state is a partial state, which keeps counts, not messages"), "{}", run.stderr);
}

fn dlqf_template(dir: &Dir, message: &str) -> String {
    dir.command().arg("template").stdin(format!("{message}\n")).ok().trim_end().to_string()
}

/// `templates learn` over dumps finds the word that varies in one cause's messages; rank with
/// the file (by --templates or a profile's `templates`) puts them in one bucket, and the file's
/// digest is part of the rules a state is sealed with.
#[test]
fn learned_templates_group_words_that_vary_and_enter_the_rules() {
    let dir = Dir::new();
    let tables = ["users", "orders", "sessions", "ledger", "carts", "refunds"];
    let mut lines = String::new();
    for (i, table) in tables.iter().chain(&tables).enumerate() {
        lines.push_str(&format!(
            "{{\"id\":\"m{i}\",\"original_topic\":\"orders\",\"error_type\":\"OperationalError\",\"error_message\":\"Failed to drop {table}\",\"original_value\":{{\"n\":{i}}},\"last_failed_at\":\"2026-10-01T00:00:0{}Z\",\"retry_count\":1}}\n",
            i % 10
        ));
    }
    for (i, word) in ["refused", "refused", "refused", "reset"].iter().enumerate() {
        lines.push_str(&format!(
            "{{\"id\":\"c{i}\",\"original_topic\":\"orders\",\"error_type\":\"ConnectionError\",\"error_message\":\"connection {word} by peer\",\"original_value\":{{\"n\":{i}}},\"last_failed_at\":\"2026-10-01T00:00:00Z\",\"retry_count\":1}}\n"
        ));
    }
    dir.create("d.jsonl", &lines);
    let run = dir.command().args(["templates", "learn", "--profile", "envelope", "d.jsonl", "-o", "t.toml"]).expect_code(0);
    assert!(run.stderr.contains("1 patterns learned from 16 messages"), "{}", run.stderr);
    let file = dir.read("t.toml");
    assert!(file.contains("template = \"Failed to drop <?>\""), "{file}");
    assert!(!file.contains("connection"), "two causes that differ by a word stay apart: {file}");

    let buckets = |extra: &[&str]| {
        let report = dir.command().args(["rank", "--profile", "envelope", "d.jsonl", "--format", "json"]).args(extra).json();
        let mut messages: Vec<(String, u64)> =
            report["buckets"].as_array().unwrap().iter().map(|b| (b["signature"]["error_message"].as_str().unwrap().to_string(), b["count"].as_u64().unwrap())).collect();
        messages.sort();
        messages
    };
    assert_eq!(buckets(&[]).len(), 8, "six tables and two connection causes");
    let learned = buckets(&["--templates", "t.toml"]);
    assert_eq!(learned, [("Failed to drop <*>".to_string(), 12), ("connection refused by peer".to_string(), 3), ("connection reset by peer".to_string(), 1)]);
    // A profile naming the file, relative to its folder, reads the same.
    dir.create("p/orders.toml", "id = \"id\"\ntime = \"last_failed_at\"\n[[signature]]\nfield = \"error_message\"\nnormalize = \"template\"\ntemplates = \"../t.toml\"\n");
    let report = dir.command().args(["rank", "--profile", "p/orders.toml", "d.jsonl", "--format", "json"]).json();
    assert_eq!(report["buckets"][0]["signature"]["error_message"], "Failed to drop <*>");
    // States made with and without the file do not merge.
    dir.command().args(["rank", "--profile", "envelope", "d.jsonl", "--templates", "t.toml", "-o", "with.state"]).ok();
    dir.create("e.jsonl", lines.replace("\"id\":\"", "\"id\":\"e"));
    dir.command().args(["rank", "--profile", "envelope", "e.jsonl", "-o", "without.state"]).ok();
    let run = dir.command().args(["rank", "with.state", "without.state"]).expect_code(1);
    assert!(run.stderr.contains("made with profile `envelope`"), "{}", run.stderr);
    // A manifest records the rules its signatures were made with, the file's digest in them.
    let rules = |extra: &[&str], name: &str| {
        dir.command().args(["plan", "--profile", "envelope", "d.jsonl", "-o", name]).args(extra).ok();
        let header: serde_json::Value = serde_json::from_str(dir.read(name).lines().next().unwrap()).unwrap();
        header["rules"].as_str().unwrap().to_string()
    };
    let (with, without) = (rules(&["--templates", "t.toml"], "with.manifest"), rules(&[], "without.manifest"));
    assert!(with.starts_with("sha256:") && without.starts_with("sha256:") && with != without, "{with} {without}");
    // A file that is not one is a usage error naming it.
    dir.create("bad.toml", "format = \"other\"\n");
    let run = dir.command().args(["rank", "--profile", "envelope", "d.jsonl", "--templates", "bad.toml"]).expect_code(2);
    assert!(run.stderr.contains("--templates: bad.toml"), "{}", run.stderr);
}

/// Learning from lines of text, and `template --templates` applying the file to each line.
#[test]
fn templates_learn_reads_lines_and_template_applies_the_file() {
    let dir = Dir::new();
    dir.create("m.txt", "Failed to drop users\nFailed to drop orders\nFailed to drop carts\nFailed to drop jobs\n");
    dir.command().args(["templates", "learn", "--lines", "m.txt", "-o", "t.toml"]).ok();
    let out = dir.command().args(["template", "--templates", "t.toml", "--explain"]).stdin("Failed to drop invoices\nFailed to create users\n").ok();
    assert_eq!(out, "Failed to drop <*>\n    learned: Failed to drop <*>\nFailed to create users\n");
}
