//! The manifest is the approval: every header field and every entry is sealed, execute runs
//! exactly the bytes it verified, entries do not depend on the order inputs are named in, and
//! the caps that decide an entry's fate at execute time travel sealed with it.

use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::stage::Stage;
use crate::util::{manifest_entries, vision_line, Dir, Run};

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

fn execute(dir: &Dir, stage: &Stage, extra: &[&str]) -> Run {
    dir.command()
        .args(["execute", "manifest.jsonl", "--target", &stage.url, "--ledger", "ledger.db", "--quarantine", "file:quarantine.jsonl", "--retries", "1"])
        .args(extra)
        .run()
}

/// Recomputes manifest_sha256 of a header the way docs/replay.md tells reviewers to (Python).
fn reseal(header: &mut Map<String, Value>) {
    header.remove("manifest_sha256");
    let script = "import hashlib, json, sys\nh = json.loads(sys.stdin.read())\n\
                  print(hashlib.sha256(json.dumps(h, sort_keys=True, separators=(',', ':'), ensure_ascii=False).encode('utf-8')).hexdigest())\n";
    let mut child = Command::new("python3").arg("-c").arg(script).stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), Value::Object(header.clone()).to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    header.insert("manifest_sha256".into(), json!(String::from_utf8(out.stdout).unwrap().trim()));
}

fn with_header(text: &str, header: &Map<String, Value>) -> String {
    with_header_line(text, &Value::Object(header.clone()).to_string())
}

/// `text` (a manifest) with its header line replaced by `line`.
fn with_header_line(text: &str, line: &str) -> String {
    format!("{line}{}", &text[text.find('\n').unwrap()..])
}

#[test]
fn every_header_field_is_sealed_and_a_changed_header_sends_nothing() {
    let dir = Dir::new();
    dump(&dir, "dlq.jsonl", "cap", 200);
    dir.create("policy.toml", "max_attempts = 2\ncleared_reasons = [\"timeout\"]\n");
    let original = plan(&dir, &["dlq.jsonl", "--policy", "policy.toml"]);
    let header = header_of(&original);
    let reviewed = header["manifest_sha256"].as_str().unwrap().to_string();
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().default_status = Some(500);

    type Tamper = fn(&mut Map<String, Value>);
    let tampers: Vec<(&str, Tamper)> = vec![
        ("policy.max_attempts", |h| h["policy"]["max_attempts"] = json!(1_000_000)),
        ("policy.cleared_reasons", |h| h["policy"]["cleared_reasons"] = json!(["timeout", "low_confidence"])),
        ("policy.clear_all", |h| h["policy"]["clear_all"] = json!(true)),
        ("policy.routing", |h| h["policy"]["routing"] = json!(true)),
        ("classification", |h| h["classification"] = json!({"transient": {"retry": true, "max_retries": 99, "alert": false, "page": false}})),
        ("fixes", |h| h["fixes"] = json!({"fix": []})),
        ("counts", |h| h["counts"]["replay"] = json!(101)),
        ("rejected", |h| h["rejected"] = json!(7)),
        ("entries", |h| h["entries"] = json!(201)),
        ("created_at", |h| h["created_at"] = json!("2030-01-01T00:00:00Z")),
        ("tool_version", |h| h["tool_version"] = json!("9.9.9")),
        ("profile", |h| h["profile"] = json!("envelope")),
        ("inputs", |h| h["inputs"][0]["size"] = json!(1)),
        ("an added field", |h| {
            h.insert("max_attempts".into(), json!(1_000_000));
        }),
    ];
    for (field, tamper) in tampers {
        let mut changed = header.clone();
        tamper(&mut changed);
        dir.create("manifest.jsonl", with_header(&original, &changed));
        let run = execute(&dir, &stage, &[]);
        assert_eq!(run.code, 1, "{field} changed: {}", run.stderr);
        assert!(run.stderr.contains("the header does not match its manifest_sha256"), "{field}: {}", run.stderr);
        assert!(run.stderr.contains("nothing was sent"), "{field}: {}", run.stderr);
        assert_eq!(dir.command().args(["show", "manifest.jsonl"]).run().code, 1, "show refuses it too ({field})");

        // Sealed again over the change, it is a different manifest: refused as unreviewed.
        reseal(&mut changed);
        dir.create("manifest.jsonl", with_header(&original, &changed));
        let run = execute(&dir, &stage, &["--expect-digest", &reviewed]);
        assert_eq!(run.code, 1, "{field} changed and resealed: {}", run.stderr);
        assert!(run.stderr.contains(&format!("is not the reviewed {reviewed}")), "{field}: {}", run.stderr);
    }
    let mut zeroed = header.clone();
    zeroed["manifest_sha256"] = json!("0".repeat(64));
    dir.create("manifest.jsonl", with_header(&original, &zeroed));
    assert!(execute(&dir, &stage, &[]).stderr.contains("the header does not match its manifest_sha256"));
    assert!(stage.keys().is_empty(), "nothing reached the target");
    assert!(!dir.join("quarantine.jsonl").exists(), "nothing was quarantined");

    // Resealed counts that disagree with the entries are named as such.
    let mut changed = header.clone();
    changed["counts"]["replay"] = json!(99);
    changed["counts"]["poison_uncleared"] = json!(101);
    reseal(&mut changed);
    dir.create("manifest.jsonl", with_header(&original, &changed));
    let run = execute(&dir, &stage, &[]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("counts (replay 99, poison_attempts 0, poison_uncleared 101) do not match the entries (replay 100"), "{}", run.stderr);

    // The reviewed manifest runs, and its report names the reviewed digest.
    dir.create("manifest.jsonl", &original);
    stage.behaviour.lock().unwrap().default_status = None;
    let run = execute(&dir, &stage, &["--expect-digest", &reviewed]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["manifest"], reviewed.as_str());
    assert_eq!(report["outcomes"]["replayed"], 100, "the even rows: timeout, cleared");
    assert_eq!(report["outcomes"]["poison_uncleared"], 100);
}

#[test]
fn execute_runs_the_bytes_it_verified_when_the_file_is_rewritten_mid_run() {
    let dir = Dir::new();
    dump(&dir, "other.jsonl", "unreviewed", 3000);
    dir.create("policy.toml", "clear_all = true\nmax_attempts = 5\n");
    let unreviewed = plan(&dir, &["other.jsonl", "--policy", "policy.toml"]);
    dump(&dir, "dlq.jsonl", "cap", 3000);
    let reviewed = plan(&dir, &["dlq.jsonl", "--policy", "policy.toml"]);
    let digest = header_of(&reviewed)["manifest_sha256"].as_str().unwrap().to_string();
    let expected: HashSet<String> =
        reviewed.lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()["key"].as_str().unwrap().to_string()).collect();
    assert_eq!(expected.len(), 3000);

    let stage = Stage::start();
    stage.behaviour.lock().unwrap().delay = Duration::from_millis(1);
    let args = ["execute", "manifest.jsonl", "--expect-digest", &digest, "--target", &stage.url, "--ledger", "ledger.db", "--quarantine", "file:q.jsonl", "--concurrency", "2"];
    let mut child = Command::new(env!("CARGO_BIN_EXE_dlqf")).current_dir(dir.path()).args(args).stdout(std::process::Stdio::null()).spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while stage.keys().len() < 20 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    // In place (same file, truncated and rewritten), then renamed over: neither reaches the run.
    std::fs::write(dir.join("manifest.jsonl"), &unreviewed).unwrap();
    dir.create("swap.jsonl", &unreviewed);
    std::fs::rename(dir.join("swap.jsonl"), dir.join("manifest.jsonl")).unwrap();
    assert!(child.wait().unwrap().success());

    let sent = stage.keys();
    let unique: HashSet<String> = sent.iter().cloned().collect();
    let strangers: Vec<&String> = unique.difference(&expected).collect();
    assert!(strangers.is_empty(), "{} unreviewed keys were sent, e.g. {:?}", strangers.len(), strangers.first());
    assert_eq!(unique, expected, "every reviewed entry was sent");
    assert_eq!(sent.len(), 3000, "each once");
}

#[test]
fn entries_do_not_depend_on_the_order_inputs_are_named_in() {
    let dir = Dir::new();
    dump(&dir, "a.jsonl", "a", 40);
    dump(&dir, "sub/b.jsonl", "b", 30);
    dump(&dir, "c.jsonl.gz.src", "c", 20);
    let gz = Command::new("gzip").args(["-c", "c.jsonl.gz.src"]).current_dir(dir.path()).output().unwrap();
    dir.create("c.jsonl.gz", gz.stdout);
    let ids = |text: &str| -> Vec<String> {
        text.lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_string()).collect()
    };

    let forward = plan(&dir, &["a.jsonl", "sub/b.jsonl", "c.jsonl.gz"]);
    let backward = plan(&dir, &["c.jsonl.gz", "sub/b.jsonl", "a.jsonl"]);
    let mixed = plan(&dir, &["sub", "c.jsonl.gz", "a.jsonl", "a.jsonl"]);
    assert!(manifest_entries(&forward) == manifest_entries(&backward), "reversed arguments, other entries: {:?}", ids(&backward));
    assert!(manifest_entries(&forward) == manifest_entries(&mixed), "a folder and a repeated file, other entries: {:?}", ids(&mixed));
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

#[test]
fn a_categorys_cap_is_sealed_in_its_entries_and_execute_applies_it() {
    let dir = Dir::new();
    // "timeout" is transient (replayed until max_retries 5) under the default routing.
    let text: String = (0..3).map(|i| vision_line(&format!("cap-{i}"), "inference", "timeout", "det-v8.0", "2026-10-01T00:00:00Z", 4) + "\n").collect();
    dir.create("dlq.jsonl", text);
    let manifest = plan(&dir, &["dlq.jsonl"]);
    let entries: Vec<Value> = manifest.lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(entries.iter().all(|e| e["decision"] == "replay" && e["max_attempts"] == 5), "{entries:?}");

    let stage = Stage::start();
    stage.behaviour.lock().unwrap().default_status = Some(422);
    for run in 1..=5 {
        let r = execute(&dir, &stage, &["--max-failure-ratio", "1"]);
        assert_eq!(r.code, 3, "run {run}: {}", r.stderr);
    }
    let r = execute(&dir, &stage, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(report["outcomes"]["poison_attempts"], 3, "quarantined after the category's 5 failures, not the default 3");
    assert_eq!(stage.keys().len(), 15);
    let held = dir.read("quarantine.jsonl");
    assert!(held.lines().all(|l| l.contains("\"replay failed 5 times (max 5)\"")), "{held}");
}

/// The counts per signature and decision that `plan` prints are the entries' own, however many
/// batches the rows came in: from a dump with a few hundred keys, and from one whose 94,000
/// keys (fixture and planogram) are more than a batch keeps, many of them met again later.
#[test]
fn plan_reviews_each_entry_once_across_batches() {
    let dir = Dir::new();
    dir.create("policy.toml", "max_attempts = 4\ncleared_reasons = [\"timeout\"]\n");
    dir.create(
        "many-keys.toml",
        "id = 'capture_id'\ntime = 'capture_timestamp'\nattempts = 'attempts'\n[[signature]]\nfield = 'fixture_id'\n[[signature]]\nfield = 'planogram_id'\n",
    );
    dir.gen("dlq.parquet", &["--rows", "240000", "--seed", "4", "--row-group-rows", "60000"]);
    for profile in [&[][..], &["--profile", "many-keys.toml"][..]] {
        let review = dir.command().arg("plan").args(profile).args(["dlq.parquet", "--policy", "policy.toml", "-o", "m.jsonl", "--format", "markdown"]).ok();
        // The counts each signature's entries add up to, counted here from the entries.
        let mut by_signature: HashMap<String, [u64; 3]> = HashMap::new();
        for entry in dir.read("m.jsonl").lines().skip(1) {
            let entry: Value = serde_json::from_str(entry).unwrap();
            let column = ["replay", "poison_attempts", "poison_uncleared"].iter().position(|d| entry["decision"] == *d).unwrap();
            by_signature.entry(entry["signature"].to_string()).or_default()[column] += 1;
        }
        let mut expected: Vec<[u64; 3]> = by_signature.into_values().collect();
        let mut printed: Vec<[u64; 3]> = review
            .lines()
            .skip_while(|l| !l.starts_with("| ---"))
            .skip(1)
            .map(|row| {
                let cells: Vec<&str> = row.trim_matches('|').split(" | ").map(str::trim).collect();
                let count = |i: usize| cells[cells.len() - 3 + i].parse::<u64>().unwrap_or_else(|e| panic!("{e}: {row}"));
                [count(0), count(1), count(2)]
            })
            .collect();
        expected.sort();
        printed.sort();
        assert_eq!(expected.iter().map(|c| c.iter().sum::<u64>()).sum::<u64>(), 240_000, "{profile:?}");
        assert!(expected.len() > if profile.is_empty() { 10 } else { 90_000 }, "{profile:?}: {} signatures", expected.len());
        assert_eq!(printed.len(), expected.len(), "{profile:?}: one row per signature");
        assert_eq!(printed, expected, "{profile:?}");
    }
}

/// Each entry's decision is the gate's for its own attempts, whatever the attempts of the rows
/// of its key met before it in any batch: two keys (one reason cleared, one not) over 20,000
/// rows with attempts 0 to 12, under caps inside and past the few attempt counts a key keeps
/// decisions for in place.
#[test]
fn the_gate_decides_each_entry_by_its_own_attempts() {
    let dir = Dir::new();
    let rows = 20_000;
    let attempts_of = |i: usize| (i * 7 % 13) as i64;
    let reason_of = |i: usize| if i % 3 == 0 { "low_confidence" } else { "timeout" };
    let text: String = (0..rows).map(|i| vision_line(&format!("m-{i:05}"), "inference", reason_of(i), "det-v8.0", "2026-10-01T00:00:00Z", attempts_of(i)) + "\n").collect();
    dir.create("dlq.jsonl", text);
    for cap in [5, 9, 12] {
        dir.create("policy.toml", format!("max_attempts = {cap}\ncleared_reasons = [\"timeout\"]\n"));
        let manifest = plan(&dir, &["dlq.jsonl", "--policy", "policy.toml"]);
        let entries: Vec<Value> = manifest_entries(&manifest).lines().filter(|l| !l.is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(entries.len(), rows, "cap {cap}");
        let mut seen = HashSet::new();
        for entry in &entries {
            let i: usize = entry["id"].as_str().unwrap()["m-".len()..].parse().unwrap();
            let expected = if attempts_of(i) >= cap {
                "poison_attempts"
            } else if reason_of(i) == "timeout" {
                "replay"
            } else {
                "poison_uncleared"
            };
            assert_eq!(entry["attempts"], attempts_of(i), "{entry}");
            assert_eq!(entry["decision"], expected, "cap {cap}: {entry}");
            seen.insert((attempts_of(i), expected));
        }
        assert_eq!(seen.len(), 13 + cap as usize, "cap {cap}: both reasons below the cap, one decision past it");
    }
}

/// A header holding a key twice (the second value sealed, the first what another reader
/// would see) is refused, at the top and inside the policy alike; so is a header line ending
/// in CRLF.
#[test]
fn a_header_with_a_key_written_twice_is_refused_however_it_is_sealed() {
    let dir = Dir::new();
    dump(&dir, "dlq.jsonl", "cap", 20);
    dir.create("policy.toml", "cleared_reasons = [\"timeout\"]\n");
    let original = plan(&dir, &["dlq.jsonl", "--policy", "policy.toml"]);
    let mut header = header_of(&original);
    reseal(&mut header);
    let sealed = Value::Object(header.clone()).to_string();
    for (at, twice) in [("{", r#"{"profile":"vision-but-not","#), (r#""policy":{"#, r#""policy":{"max_attempts":99,"#)] {
        dir.create("twice.jsonl", with_header_line(&original, &sealed.replacen(at, twice, 1)));
        let run = dir.command().args(["show", "twice.jsonl"]).expect_code(1);
        assert!(run.stderr.contains("appears twice"), "{}", run.stderr);
    }
    // The header line alone converted to CRLF (the entries' seal would catch theirs).
    dir.create("crlf.jsonl", original.replacen('\n', "\r\n", 1));
    let run = dir.command().args(["show", "crlf.jsonl"]).expect_code(1);
    assert!(run.stderr.contains("crlf.jsonl:1: a carriage return"), "{}", run.stderr);
}
