//! Inputs: formats, compression, directories, globs, hive folders, stdin, and results that do
//! not depend on row order, file split or thread count.

use std::io::Write;

use crate::util::{vision_line, Dir, TestCommand};

fn rank_json(dir: &Dir, args: &[&str]) -> String {
    dir.command().arg("rank").args(args).args(["--format", "json"]).ok()
}

/// 3000 generated rows as JSON lines (no header), with drift but no malformed rows.
fn generated_lines(dir: &Dir) -> Vec<String> {
    dir.gen("base.jsonl", &["--rows", "3000", "--seed", "11"]);
    dir.read("base.jsonl").lines().map(str::to_string).collect()
}

#[test]
fn shuffled_rows_split_files_and_thread_counts_give_identical_json() {
    let dir = Dir::new();
    let lines = generated_lines(&dir);
    let reference = rank_json(&dir, &["base.jsonl"]);

    // A fixed permutation (multiplicative step coprime with the length).
    let n = lines.len();
    let shuffled: Vec<&String> = (0..n).map(|i| &lines[(i * 7919) % n]).collect();
    dir.create("shuffled.jsonl", shuffled.iter().map(|l| format!("{l}\n")).collect::<String>());
    assert_eq!(rank_json(&dir, &["shuffled.jsonl"]), reference);

    for (part, chunk) in shuffled.chunks(700).enumerate() {
        dir.create(&format!("split/part-{part}.jsonl"), chunk.iter().map(|l| format!("{l}\n")).collect::<String>());
    }
    assert_eq!(rank_json(&dir, &["split"]), reference);
    assert_eq!(rank_json(&dir, &["--threads", "1", "split"]), reference);
    assert_eq!(rank_json(&dir, &["--threads", "2", "base.jsonl"]), reference);
    // The portable scanning kernel, forced, reads the same (on a CPU with SIMD kernels, this
    // is the one run that uses it).
    let portable = dir.command().env("DLQF_SIMD", "portable").args(["rank", "shuffled.jsonl", "--format", "json"]).ok();
    assert_eq!(portable, reference);
    // A file's chunks copied out instead of read where they are mapped (what dlqf chooses when
    // the page cache holds the file in 4 KiB pages), forced.
    let copied = dir.command().env("DLQF_JSONL_READ", "copy").args(["rank", "shuffled.jsonl", "--format", "json"]).ok();
    assert_eq!(copied, reference);

    dir.gen("base.parquet", &["--rows", "3000", "--seed", "11", "--row-group-rows", "500"]);
    assert_eq!(rank_json(&dir, &["base.parquet"]), reference);
    assert_eq!(rank_json(&dir, &["--threads", "1", "base.parquet"]), reference);
}

#[test]
fn compressed_stdin_and_mixed_inputs_read_the_same_records() {
    let dir = Dir::new();
    let lines = generated_lines(&dir);
    let reference = rank_json(&dir, &["base.jsonl"]);
    let text = dir.read("base.jsonl");

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(text.as_bytes()).unwrap();
    dir.create("c/dlq.jsonl.gz", gz.finish().unwrap());
    assert_eq!(rank_json(&dir, &["c/dlq.jsonl.gz"]), reference);

    dir.create("c/dlq.ndjson.zst", zstd::encode_all(text.as_bytes(), 3).unwrap());
    assert_eq!(rank_json(&dir, &["c/dlq.ndjson.zst"]), reference);

    let out = dir.command().args(["rank", "-", "--format", "json"]).stdin(text.clone()).ok();
    assert_eq!(out, reference);

    // The same records as Parquet plus JSON-lines in one run, against all JSON-lines.
    dir.gen("more.jsonl", &["--rows", "1000", "--seed", "12"]);
    dir.gen("more.parquet", &["--rows", "1000", "--seed", "12"]);
    let all_jsonl = rank_json(&dir, &["base.jsonl", "more.jsonl"]);
    assert_eq!(rank_json(&dir, &["more.parquet", "base.jsonl"]), all_jsonl);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&all_jsonl).unwrap()["total"], lines.len() + 1000);
}

#[test]
fn directories_globs_and_hive_partitions_are_read_through() {
    let dir = Dir::new();
    let day = |d: u32, id: &str| vision_line(id, "inference", "timeout", "det-v8.0", &format!("2026-11-{d:02}T10:00:00Z"), 0) + "\n";
    dir.create("dlq/dt=2026-11-27/part-0.jsonl", day(27, "a"));
    dir.create("dlq/dt=2026-11-28/part-0.jsonl", day(28, "b") + &day(28, "c"));
    dir.create("dlq/dt=2026-11-28/part-1.jsonl.gz", {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(day(28, "d").as_bytes()).unwrap();
        gz.finish().unwrap()
    });
    dir.create("dlq/dt=2026-11-28/_SUCCESS", "");
    dir.create("dlq/.hidden.jsonl", "not json at all\n");
    dir.create("dlq/README.txt", "not a dump\n");

    let all = dir.command().args(["rank", "dlq", "--format", "json"]).json();
    assert_eq!(all["total"], 4);
    assert_eq!(all["rejected"], 0);
    let glob = dir.command().args(["rank", "dlq/dt=2026-11-28/*.jsonl", "--format", "json"]).json();
    assert_eq!(glob["total"], 2);
    // A file named twice (directly and through its folder) is read once.
    let twice = dir.command().args(["rank", "dlq", "dlq/dt=2026-11-27/part-0.jsonl", "--format", "json"]).json();
    assert_eq!(twice["total"], 4);
}

#[test]
fn a_file_named_explicitly_is_sniffed_whatever_its_name() {
    let dir = Dir::new();
    dir.gen("dump.parquet", &["--rows", "100", "--seed", "3"]);
    std::fs::rename(dir.join("dump.parquet"), dir.join("dump.bin")).unwrap();
    dir.create("dump.log", vision_line("x", "s", "r", "v", "2026-10-01T00:00:00Z", 0) + "\n");
    assert_eq!(dir.command().args(["rank", "dump.bin", "--format", "json"]).json()["total"], 100);
    assert_eq!(dir.command().args(["rank", "dump.log", "--format", "json"]).json()["total"], 1);
}

#[test]
fn a_byte_order_mark_and_crlf_line_ends_are_tolerated() {
    let dir = Dir::new();
    let line = |id: &str| vision_line(id, "s", "r", "v", "2026-10-01T00:00:00Z", 0);
    dir.create("bom.jsonl", format!("\u{feff}{}\r\n{}\r\n", line("a"), line("b")));
    let report = dir.command().args(["rank", "bom.jsonl", "--format", "json"]).json();
    assert_eq!(report["total"], 2);
    assert_eq!(report["rejected"], 0);
    // Every reader drops the mark: query too, and plan keeps the first record.
    let rows = dir.command().args(["query", "bom.jsonl", "-e", "SELECT capture_id FROM dlq ORDER BY capture_id", "--format", "json"]).json();
    assert_eq!(rows, serde_json::json!([{"capture_id": "a"}, {"capture_id": "b"}]));
    dir.create("policy.toml", "clear_all = true\n");
    dir.command().args(["plan", "bom.jsonl", "--policy", "policy.toml", "-o", "m.jsonl"]).ok();
    let first: serde_json::Value = serde_json::from_str(dir.read("m.jsonl").lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["record"]["capture_id"], "a");
}

#[test]
fn since_and_until_skip_day_partitions_without_reading_them() {
    let dir = Dir::new();
    let line = |id: &str, day: u32| vision_line(id, "s", "r", "v", &format!("2026-10-{day:02}T12:00:00Z"), 0) + "\n";
    dir.create("dlq/dt=2026-10-01/part-0.jsonl", line("a", 1));
    dir.create("dlq/dt=2026-10-02/part-0.jsonl", line("b", 2));
    dir.create("dlq/dt=2026-10-03/part-0.parquet", "PAR1 not parquet at all PAR1");
    // The corrupt partition is outside the window, so it is never opened.
    let report = dir.command().args(["rank", "dlq", "--format", "json", "--since", "2026-10-02", "--until", "2026-10-03"]).json();
    assert_eq!(report["total"], 1);
    assert_eq!(report["buckets"][0]["example_id"], "b");
    // Inside the window it is read, and named as corrupt.
    let run = dir.command().args(["rank", "dlq", "--since", "2026-10-02"]).expect_code(1);
    assert!(run.stderr.contains("dt=2026-10-03/part-0.parquet: not a readable Parquet file"), "{}", run.stderr);
}

/// Entries after the manifest's header line.
fn planned_entries(dir: &Dir, args: &[&str]) -> Vec<String> {
    dir.command().arg("plan").args(args).args(["--policy", "policy.toml", "-o", "m.jsonl", "--no-progress"]).ok();
    dir.read("m.jsonl").lines().skip(1).map(str::to_string).collect()
}

/// A Parquet row's record read for more than its text (a key field the signature lacks, a
/// fix that rewrites the record) reads as the JSON-lines dump's line does: the same entries.
#[test]
fn a_parquet_record_gives_key_fields_and_takes_fixes_as_its_json_line_does() {
    let dir = Dir::new();
    dir.create("policy.toml", "clear_all = true\nmax_attempts = 1000\n");
    dir.create(
        "p.toml",
        "id = 'capture_id'\ntime = 'capture_timestamp'\nidempotency_key = ['stage', 'store_id']\n\
         [[signature]]\nfield = 'stage'\nnormalize = 'lower'\n[[signature]]\nfield = 'reject_reason'\nnormalize = 'lower'\n",
    );
    dir.create("fixes.toml", "[[fix]]\nsignature = { reject_reason = \"timeout\" }\nset = { schema_version = 2 }\nremove = [\"trace_id\"]\n");
    dir.gen("dlq.jsonl", &["--rows", "3000", "--seed", "11"]);
    dir.gen("dlq.parquet", &["--rows", "3000", "--seed", "11", "--row-group-rows", "1000"]);
    let args = ["--profile", "p.toml", "--fix", "fixes.toml"];
    let reference = planned_entries(&dir, &[&args[..], &["dlq.jsonl"]].concat());
    let entries = planned_entries(&dir, &[&args[..], &["dlq.parquet"]].concat());
    assert_eq!(entries.len(), 3000);
    let fixed = reference.iter().filter(|e| e.contains("\"schema_version\":2")).count();
    assert!(fixed > 0 && fixed < 3000, "{fixed} records fixed");
    if let Some(i) = (0..entries.len()).find(|&i| entries[i] != reference[i]) {
        panic!("entry {} differs:\n{}\n{}", i + 1, entries[i], reference[i]);
    }
}

/// The binary picks its CPU extensions at run time: on qemu's baseline x86-64 CPU it reads
/// JSON-lines and Parquet to the same reports and named rejects, and writes the same manifest
/// entries, as on this CPU (SHA-NI, AVX2 and BMI here), and each verifies the other's manifest.
#[test]
#[ignore = "needs qemu-user: make test runs it"]
fn a_cpu_without_simd_extensions_gives_the_same_reports_and_manifests() {
    let qemu = std::env::var("DLQF_QEMU").expect("DLQF_QEMU is unset: run the tests through `make test`, which installs qemu-user");
    let dir = Dir::new();
    dir.gen("d.jsonl", &["--rows", "20000", "--seed", "3", "--malformed", "0.01"]);
    dir.gen("d.parquet", &["--rows", "20000", "--seed", "3", "--row-group-rows", "5000"]);
    dir.create("policy.toml", "clear_all = true\nmax_attempts = 1000\n");
    for args in [["rank", "d.jsonl", "--format", "json"], ["rank", "d.parquet", "--format", "json"], ["trend", "d.jsonl", "--format", "json"]] {
        let here = dir.command().args(args).expect_code(0);
        let baseline = dir.command_on_baseline_cpu(&qemu).args(args).expect_code(0);
        assert_eq!((&baseline.stdout, &baseline.stderr), (&here.stdout, &here.stderr), "{args:?}");
        assert!(here.stderr.contains("d.jsonl:") || args[1] == "d.parquet", "rejects are named: {}", here.stderr);
    }
    for input in ["d.jsonl", "d.parquet"] {
        let plan = |command: TestCommand, manifest: &str| command.args(["plan", input, "--policy", "policy.toml", "-o", manifest, "--no-progress"]).expect_code(0);
        plan(dir.command(), "here.jsonl");
        plan(dir.command_on_baseline_cpu(&qemu), "baseline.jsonl");
        let entries = |name: &str| dir.read(name).lines().skip(1).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(entries("baseline.jsonl"), entries("here.jsonl"), "{input}");
        dir.command_on_baseline_cpu(&qemu).args(["show", "here.jsonl"]).expect_code(0);
        dir.command().args(["show", "baseline.jsonl"]).expect_code(0);
    }
}

/// A row group of half a million rows or more has its ids and its other columns read as two
/// tasks: it ranks as the same rows in groups of the usual size, at any thread count.
#[test]
fn a_parquet_row_group_read_as_two_tasks_ranks_as_small_groups_do() {
    let dir = Dir::new();
    dir.gen("small.parquet", &["--rows", "600000", "--seed", "9"]);
    dir.gen("one-group.parquet", &["--rows", "600000", "--seed", "9", "--row-group-rows", "600000"]);
    let reference = dir.command().args(["--threads", "1", "rank", "small.parquet", "--format", "json"]).json();
    assert_eq!(reference["total"], 600_000);
    for threads in ["1", "2"] {
        let report = dir.command().args(["--threads", threads, "rank", "one-group.parquet", "--format", "json"]).json();
        assert_eq!(report, reference, "threads {threads}");
    }
}

/// A Parquet row group too big to load at once is read in parts, and a record written from
/// its columns is the line the JSON-lines dump holds: every entry of both plans is the same,
/// in the same order, at any thread count.
#[test]
fn a_parquet_dump_with_big_row_groups_plans_the_entries_of_its_json_lines() {
    let dir = Dir::new();
    dir.create("policy.toml", "clear_all = true\nmax_attempts = 1000\n");
    dir.gen("dlq.jsonl", &["--rows", "150000", "--seed", "7"]);
    dir.gen("dlq.parquet", &["--rows", "150000", "--seed", "7", "--row-group-rows", "140000"]);
    let reference = planned_entries(&dir, &["dlq.jsonl"]);
    assert_eq!(reference.len(), 150_000);
    for threads in ["1", "2"] {
        let entries = planned_entries(&dir, &["--threads", threads, "dlq.parquet"]);
        assert_eq!(entries.len(), reference.len(), "threads {threads}");
        if let Some(i) = (0..entries.len()).find(|&i| entries[i] != reference[i]) {
            panic!("threads {threads}: entry {} differs:\n{}\n{}", i + 1, entries[i], reference[i]);
        }
    }
}
