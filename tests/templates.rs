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
    assert!(table.contains("| Dlq | 30 | 17 | 17 | 1.000 |"), "{table}");
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
