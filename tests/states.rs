//! Partial states (`dlqf.state/1`): merged states give byte for byte the report of one run over
//! every underlying dump, for any split, order and thread count; what must be refused is.

use std::collections::BTreeMap;
use std::path::Path;

use crate::util::Dir;

/// splitmix64: a small seeded generator, so each split is random and reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// The UTC day of a line's failure time (`field`), if it has a readable one.
fn utc_day(line: &str, field: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    let time = chrono::DateTime::parse_from_rfc3339(value.get(field)?.as_str()?).ok()?;
    Some(time.with_timezone(&chrono::Utc).format("%Y-%m-%d").to_string())
}

/// Spreads `dump`'s lines over `files` files in hive day partitions of `root` (by the UTC day
/// of `time_field`; unreadable lines in `other/`), in random order. Returns the files' names.
fn split(dir: &Dir, dump: &Path, root: &str, time_field: &str, files: usize, rng: &mut Rng) -> Vec<String> {
    let text = std::fs::read_to_string(dump).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    rng.shuffle(&mut lines);
    let mut parts: BTreeMap<String, String> = BTreeMap::new();
    for line in lines {
        let folder = utc_day(line, time_field).map_or("other".to_string(), |day| format!("dt={day}"));
        let name = format!("{root}/{folder}/part-{}.jsonl", rng.below(files));
        let part = parts.entry(name).or_default();
        part.push_str(line);
        part.push('\n');
    }
    for (name, lines) in &parts {
        dir.create(name, lines);
    }
    parts.into_keys().collect()
}

/// Groups `files` at random: some stay dumps, the rest are summarised into states (some of
/// which are merged again into a state of states). Returns the inputs to give, shuffled.
fn summarise_at_random(dir: &Dir, profile: &str, files: &[String], rng: &mut Rng, tag: &str) -> Vec<String> {
    let mut files = files.to_vec();
    rng.shuffle(&mut files);
    let mut inputs = Vec::new();
    let mut states = Vec::new();
    let mut rest = &files[..];
    while !rest.is_empty() {
        let take = 1 + rng.below(rest.len().min(6));
        let (group, after) = rest.split_at(take);
        rest = after;
        if rng.below(4) == 0 {
            inputs.extend(group.iter().cloned());
            continue;
        }
        let name = format!("{tag}-{}.state", states.len() + inputs.len());
        let threads = (1 + rng.below(3)).to_string();
        dir.command().args(["rank", "--profile", profile, "--format", "state", "-o", &name, "--threads", &threads]).args(group).ok();
        states.push(name);
    }
    if states.len() >= 2 && rng.below(2) == 0 {
        let (a, b) = (states.pop().unwrap(), states.pop().unwrap());
        let name = format!("{tag}-merged.state");
        dir.command().args(["rank", "--profile", profile, "-o", &name, &a, &b]).ok();
        states.push(name);
    }
    inputs.extend(states);
    rng.shuffle(&mut inputs);
    inputs
}

fn report(dir: &Dir, command: &[&str], inputs: &[String]) -> String {
    dir.command().args(command).args(inputs).ok()
}

/// Reports every command draws from states, each with the same from the dumps.
fn assert_merge_equals_whole(dir: &Dir, commands: &[Vec<&str>], inputs: &[String], whole: &str, split_no: usize) {
    for command in commands {
        let from_states = report(dir, command, inputs);
        let from_dumps = report(dir, command, &[whole.to_string()]);
        assert_eq!(from_states, from_dumps, "split {split_no}: `{}` differs over {inputs:?}", command.join(" "));
    }
}

#[test]
fn merged_states_give_the_whole_runs_reports_for_any_split_order_and_threads() {
    let dir = Dir::new();
    let dump = dir.gen("vision.jsonl", &["--rows", "3000", "--seed", "41", "--days", "4", "--malformed", "0.01"]);
    let json = |cmd: &[&'static str]| [cmd, &["--format", "json"][..]].concat();
    let commands: Vec<Vec<&str>> = vec![
        json(&["rank"]),
        json(&["rank", "--by", "category", "--top", "3"]),
        vec!["rank", "--format", "csv"],
        vec!["rank", "--format", "html"],
        vec!["trend", "--every", "day", "--format", "markdown"],
        json(&["rank", "--since", "2026-10-02T05:00:00Z", "--until", "2026-10-04"]),
        json(&["trend", "--every", "hour"]),
        json(&["trend", "--every", "week"]),
        json(&["trend", "--every", "day", "--since", "2026-10-02", "--window", "2"]),
        json(&["health", "--window-days", "2"]),
        json(&["health", "--until", "2026-10-03T13:00:00Z"]),
    ];
    let mut rng = Rng(7);
    for split_no in 0..8 {
        let root = format!("v{split_no}");
        let files = split(&dir, &dump, &root, "capture_timestamp", 1 + rng.below(5), &mut rng);
        let inputs = summarise_at_random(&dir, "vision", &files, &mut rng, &root);
        assert_merge_equals_whole(&dir, &commands, &inputs, &root, split_no);
    }
}

#[test]
fn envelope_states_merge_exactly_with_templates_categories_and_topics() {
    let dir = Dir::new();
    let dump = dir.gen("envelope.jsonl", &["--profile", "envelope", "--rows", "3000", "--seed", "42", "--days", "3", "--malformed", "0.01"]);
    let commands: Vec<Vec<&str>> = vec![
        vec!["rank", "--profile", "envelope", "--format", "json"],
        vec!["trend", "--profile", "envelope", "--every", "hour", "--format", "json"],
        vec!["health", "--profile", "envelope", "--format", "json"],
        vec!["health", "--profile", "envelope", "--by", "error_type", "--format", "json"],
    ];
    let mut rng = Rng(8);
    for split_no in 0..4 {
        let root = format!("e{split_no}");
        let files = split(&dir, &dump, &root, "last_failed_at", 2 + rng.below(4), &mut rng);
        let inputs = summarise_at_random(&dir, "envelope", &files, &mut rng, &root);
        assert_merge_equals_whole(&dir, &commands, &inputs, &root, split_no);
    }
    // Over states as over dumps, --by takes only a signature field.
    dir.command().args(["rank", "--profile", "envelope", "-o", "all.state", "e0"]).ok();
    let run = dir.command().args(["health", "--profile", "envelope", "--by", "consumer_id", "all.state"]).expect_code(2);
    assert!(run.stderr.contains("--by consumer_id: not a signature field"), "{}", run.stderr);
}

#[test]
fn states_concatenated_in_one_file_read_as_separate_states() {
    let dir = Dir::new();
    dir.gen("d/a.jsonl", &["--rows", "500", "--seed", "1"]);
    dir.gen("d/b.parquet", &["--rows", "500", "--seed", "2"]);
    let a = dir.command().args(["rank", "d/a.jsonl", "--format", "state", "-o", "-"]).ok();
    let b = dir.command().args(["trend", "d/b.parquet", "--format", "state"]).ok();
    dir.create("both.txt", format!("{a}{b}"));
    let expected = dir.command().args(["rank", "d", "--format", "json"]).ok();
    assert_eq!(dir.command().args(["rank", "both.txt", "--format", "json"]).ok(), expected, "sniffed by content when named explicitly");
    // Through a pipe: states on stdin are told from a dump by their first bytes.
    assert_eq!(dir.command().args(["rank", "-", "--format", "json"]).stdin(format!("{a}{b}")).ok(), expected);
    let dump = dir.read("d/a.jsonl");
    let from_pipe = dir.command().args(["rank", "-", "--format", "json"]).stdin(dump).ok();
    assert_eq!(from_pipe, dir.command().args(["rank", "d/a.jsonl", "--format", "json"]).ok(), "a dump on stdin is still a dump");
    // A state read twice in one file is caught like any other overlap.
    dir.create("twice.state", format!("{a}{a}"));
    let run = dir.command().args(["rank", "twice.state"]).expect_code(1);
    assert!(run.stderr.contains("twice.state:1 and by twice.state:") && run.stderr.contains("a.jsonl"), "{}", run.stderr);
}

#[test]
fn states_made_with_other_rules_are_refused_naming_both() {
    let dir = Dir::new();
    dir.gen("d.jsonl", &["--rows", "200"]);
    dir.command().args(["rank", "d.jsonl", "-o", "v.state"]).ok();
    let run = dir.command().args(["rank", "v.state", "--profile", "envelope"]).expect_code(1);
    assert!(run.stderr.contains("v.state: made with profile `vision`") && run.stderr.contains("this run uses profile `envelope`"), "{}", run.stderr);
    // Two states made with different profiles: the second is named with the first.
    dir.gen("e.jsonl", &["--profile", "envelope", "--rows", "100"]);
    dir.command().args(["rank", "e.jsonl", "--profile", "envelope", "-o", "e.state"]).ok();
    let run = dir.command().args(["rank", "e.state", "v.state", "--profile", "envelope"]).expect_code(1);
    assert!(
        run.stderr.contains("v.state: made with profile `vision`") && run.stderr.contains("but e.state and this run use profile `envelope`"),
        "{}",
        run.stderr
    );

    dir.create("rules.toml", "[transient]\npatterns = [\"timeout\", \"gpu_oom\"]\n");
    let run = dir.command().args(["rank", "v.state", "--classification", "rules.toml"]).expect_code(1);
    assert!(run.stderr.contains("v.state: made with profile `vision`") && run.stderr.contains("--classification"), "{}", run.stderr);
    // Routing alone does not change a bucket, so it does not split states.
    dir.create("routing.toml", "[transient]\nmax_retries = 9\n");
    dir.command().args(["rank", "v.state", "--classification", "routing.toml"]).ok();

    dir.create("p.toml", "name = \"vision\"\nid = \"capture_id\"\ntime = \"capture_timestamp\"\n[[signature]]\nfield = \"stage\"\n");
    let run = dir.command().args(["rank", "v.state", "--profile", "p.toml"]).expect_code(1);
    assert!(run.stderr.contains("signature stage, reject_reason, registry_revision") && run.stderr.contains("(signature stage;"), "{}", run.stderr);
}

#[test]
fn a_dump_covered_twice_is_refused() {
    let dir = Dir::new();
    dir.gen("d/dt=2026-10-01/a.jsonl", &["--rows", "100", "--days", "1"]);
    dir.gen("d/dt=2026-10-01/b.jsonl", &["--rows", "100", "--days", "1", "--seed", "2"]);
    dir.command().args(["rank", "d/dt=2026-10-01/a.jsonl", "-o", "a.state"]).ok();
    dir.command().args(["rank", "d", "-o", "ab.state"]).ok();
    let run = dir.command().args(["rank", "a.state", "ab.state"]).expect_code(1);
    assert!(run.stderr.contains("a.jsonl is covered twice, by a.state and by ab.state"), "{}", run.stderr);
    let run = dir.command().args(["rank", "a.state", "d"]).expect_code(1);
    assert!(run.stderr.contains("a.jsonl is covered twice, by this run's inputs and by a.state"), "{}", run.stderr);
    // The same dump under another path (here through `..`) is the same dump.
    std::fs::create_dir(dir.join("sub")).unwrap();
    let run = dir.command().args(["rank", "a.state", "sub/../d/dt=2026-10-01/a.jsonl"]).expect_code(1);
    assert!(run.stderr.contains("covered twice"), "{}", run.stderr);
    // A copy of a state under another name covers the same dumps.
    std::fs::copy(dir.join("a.state"), dir.join("copy.state")).unwrap();
    dir.command().args(["rank", "a.state", "copy.state"]).expect_code(1);
    // Different dumps merge.
    dir.command().args(["rank", "d/dt=2026-10-01/b.jsonl", "-o", "b.state"]).ok();
    assert_eq!(dir.command().args(["rank", "a.state", "b.state"]).ok(), dir.command().args(["rank", "d"]).ok());
}

#[test]
fn cut_altered_or_foreign_states_are_refused_with_the_file_named() {
    let dir = Dir::new();
    dir.gen("d.jsonl", &["--rows", "300"]);
    dir.command().args(["rank", "d.jsonl", "-o", "good.state"]).ok();
    let good = std::fs::read(dir.join("good.state")).unwrap();
    let lines = good.iter().filter(|&&b| b == b'\n').count();
    assert!(lines > 3);

    dir.create("cut.state", &good[..good.len() / 2]);
    let run = dir.command().args(["rank", "cut.state"]).expect_code(1);
    assert!(run.stderr.contains("cut.state: truncated"), "{}", run.stderr);

    let whole_lines: Vec<&[u8]> = good.split_inclusive(|&b| b == b'\n').collect();
    dir.create("short.state", whole_lines[..lines - 1].concat());
    let run = dir.command().args(["rank", "short.state"]).expect_code(1);
    assert!(run.stderr.contains("short.state: truncated: the state at line 1 holds"), "{}", run.stderr);

    let text = String::from_utf8(good.clone()).unwrap();
    let altered = text.replacen(",1,", ",2,", 1);
    assert_ne!(altered, text);
    dir.create("altered.state", altered);
    let run = dir.command().args(["rank", "altered.state"]).expect_code(1);
    assert!(run.stderr.contains("altered.state: the state at line 1 was altered"), "{}", run.stderr);

    dir.create("newer.state", text.replacen("dlqf.state/1", "dlqf.state/2", 1));
    let run = dir.command().args(["rank", "newer.state"]).expect_code(1);
    assert!(run.stderr.contains("newer.state:1: a state in format dlqf.state/2, from a newer dlqf"), "{}", run.stderr);

    // Converted to CRLF: the content is the same, the bytes are not; a manifest would fail its
    // seal, and so does a state, naming the line.
    dir.create("crlf.state", text.replace('\n', "\r\n"));
    let run = dir.command().args(["rank", "crlf.state"]).expect_code(1);
    assert!(run.stderr.contains("crlf.state:1: a carriage return"), "{}", run.stderr);

    dir.create("junk.state", "{\"capture_id\": \"x\"}\n");
    let run = dir.command().args(["rank", "junk.state"]).expect_code(1);
    assert!(run.stderr.contains("junk.state:1: not a dlqf state header"), "{}", run.stderr);

    dir.create("empty.state", "");
    let run = dir.command().args(["rank", "empty.state"]).expect_code(1);
    assert!(run.stderr.contains("empty.state: empty"), "{}", run.stderr);
}

#[test]
fn a_window_over_states_must_fall_on_whole_hours() {
    let dir = Dir::new();
    dir.gen("d.jsonl", &["--rows", "300"]);
    dir.command().args(["rank", "d.jsonl", "-o", "s.state"]).ok();
    let run = dir.command().args(["rank", "s.state", "--since", "2026-10-02T10:30:00Z"]).expect_code(2);
    assert!(run.stderr.contains("--since 2026-10-02T10:30:00Z: states count failures per whole hour") && run.stderr.contains("2026-10-02T10:00:00Z"), "{}", run.stderr);
    let run = dir.command().args(["trend", "s.state", "--until", "2026-10-09T00:00:01Z"]).expect_code(2);
    assert!(run.stderr.contains("--until 2026-10-09T00:00:01Z"), "{}", run.stderr);
    // An age ends now, which is rarely on the hour.
    dir.command().args(["health", "s.state", "--since", "2h"]).expect_code(2);
    // Dumps alone take any window; a state is never written for one.
    dir.command().args(["rank", "d.jsonl", "--since", "2026-10-02T10:30:00Z"]).ok();
    let run = dir.command().args(["rank", "d.jsonl", "--since", "2026-10-02", "-o", "w.state"]).expect_code(2);
    assert!(run.stderr.contains("--since: a state keeps every hour of its inputs"), "{}", run.stderr);
}

#[test]
fn commands_that_read_rows_refuse_states() {
    let dir = Dir::new();
    dir.gen("d.jsonl", &["--rows", "100"]);
    dir.command().args(["rank", "d.jsonl", "-o", "s.state"]).ok();
    let run = dir.command().args(["plan", "s.state", "-o", "m.jsonl"]).expect_code(2);
    assert!(run.stderr.contains("s.state: a partial state holds counts, not rows: plan reads dumps"), "{}", run.stderr);
    let run = dir.command().args(["query", "s.state", "-e", "select count(*) from dlq"]).expect_code(2);
    assert!(run.stderr.contains("s.state: a partial state holds counts, not rows: query reads dumps"), "{}", run.stderr);
}

/// The Spark recipe (examples/spark) in local mode: a task per group of dumps writes a state,
/// the driver merges them with dlqf, and the result is one `rank`'s answer to the byte.
#[test]
#[ignore = "needs pyspark: make test installs it"]
fn spark_running_dlqf_per_partition_gives_one_ranks_exact_answer() {
    let dir = Dir::new();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/spark/dlqf_states.py");
    let mut rng = Rng(9);
    for (profile, time_field, seed) in [("vision", "capture_timestamp", "43"), ("envelope", "last_failed_at", "44")] {
        let dump = dir.gen(&format!("{profile}.jsonl"), &["--profile", profile, "--rows", "6000", "--seed", seed, "--days", "3", "--malformed", "0.005"]);
        let files = split(&dir, &dump, profile, time_field, 100, &mut rng);
        assert!(files.len() >= 250, "a few hundred dumps: {}", files.len());
        let out = std::process::Command::new(crate::util::python())
            .current_dir(dir.path())
            .env("SPARK_LOCAL_IP", "127.0.0.1")
            .env("PYSPARK_SUBMIT_ARGS", "--master local[2] --conf spark.driver.host=127.0.0.1 --conf spark.driver.bindAddress=127.0.0.1 --conf spark.ui.enabled=false pyspark-shell")
            .arg(&script)
            .args(["--out", "merged.state", "--dlqf", env!("CARGO_BIN_EXE_dlqf"), "--partitions", "7", &format!("--profile={profile}"), profile])
            .output()
            .expect("run the Spark job");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let header: serde_json::Value = serde_json::from_str(dir.read("merged.state").lines().next().unwrap()).unwrap();
        assert_eq!(header["inputs"].as_array().unwrap().len(), files.len(), "every dump once");
        let merged = dir.command().args(["rank", "--profile", profile, "merged.state", "--format", "json"]).ok();
        assert_eq!(merged, dir.command().args(["rank", "--profile", profile, profile, "--format", "json"]).ok(), "{profile}");
    }
}

#[test]
fn diff_ranks_states_as_rank_does() {
    let dir = Dir::new();
    dir.gen("d/dt=2026-10-01/a.jsonl", &["--profile", "envelope", "--rows", "600", "--seed", "3", "--days", "1"]);
    dir.gen("d/dt=2026-10-02/b.jsonl", &["--profile", "envelope", "--rows", "700", "--seed", "4", "--days", "1", "--start", "2026-10-02"]);
    for day in ["2026-10-01", "2026-10-02"] {
        dir.command().args(["rank", "--profile", "envelope", &format!("d/dt={day}"), "-o", &format!("{day}.state")]).ok();
        dir.command().args(["rank", "--profile", "envelope", &format!("d/dt={day}"), "-o", &format!("{day}.json")]).ok();
    }
    for format in ["json", "markdown"] {
        let from_reports = dir.command().args(["diff", "2026-10-01.json", "2026-10-02.json", "--format", format]).ok();
        // The profile comes from the states; the names differ only in the headings.
        let from_states = dir.command().args(["diff", "2026-10-01.state", "2026-10-02.state", "--format", format]).ok();
        assert_eq!(from_states.replace(".state", ".json"), from_reports, "{format}");
    }
    let run = dir.command().args(["diff", "2026-10-01.state", "2026-10-02.state", "--profile", "vision"]).expect_code(1);
    assert!(run.stderr.contains("2026-10-01.state: made with profile `envelope`"), "{}", run.stderr);
}

/// States written as parts of a set (`--part I/N`, one per job of an array) merge whole; a
/// file of them cut between two states, or a set missing a part or holding one twice, is
/// refused, where unnumbered states would read as whatever is left.
#[test]
fn a_set_of_numbered_states_is_read_whole_or_refused() {
    let dir = Dir::new();
    let mut whole = Vec::new();
    for i in 1..=3 {
        dir.gen(&format!("d{i}.jsonl"), &["--rows", "200", "--seed", &i.to_string()]);
        dir.command().args(["rank", &format!("d{i}.jsonl"), "--format", "state", "--part", &format!("{i}/3"), "-o", &format!("p{i}.state")]).ok();
        whole.extend(std::fs::read(dir.join(&format!("p{i}.state"))).unwrap());
    }
    dir.create("all.state", &whole);
    let merged = dir.command().args(["rank", "all.state", "--format", "json"]).json();
    let direct = dir.command().args(["rank", "d1.jsonl", "d2.jsonl", "d3.jsonl", "--format", "json"]).json();
    assert_eq!(merged, direct, "a whole set is the run over its dumps");

    dir.create("cut.state", &whole[..whole.len() - std::fs::read(dir.join("p3.state")).unwrap().len()]);
    let run = dir.command().args(["rank", "cut.state"]).expect_code(1);
    assert!(run.stderr.contains("2 of a set of 3: part 3 is missing"), "{}", run.stderr);
    let run = dir.command().args(["rank", "p1.state", "p3.state"]).expect_code(1);
    assert!(run.stderr.contains("part 2 is missing"), "{}", run.stderr);
    // Two jobs that both wrote part 2 (of different dumps).
    dir.command().args(["rank", "d3.jsonl", "--format", "state", "--part", "2/3", "-o", "p2-again.state"]).ok();
    let run = dir.command().args(["rank", "p1.state", "p2.state", "p2-again.state"]).expect_code(1);
    assert!(run.stderr.contains("part 2 of 3 is read twice"), "{}", run.stderr);

    dir.command().args(["rank", "d1.jsonl", "--part", "1/3"]).expect_code(2);
    dir.command().args(["rank", "d1.jsonl", "--format", "state", "--part", "4/3"]).expect_code(2);
}
