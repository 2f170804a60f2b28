//! Replay: plan → show → execute, against a real loopback HTTP stage and a real SQLite ledger.
//! Covers the seed's verification items 3 to 5, refusal of altered manifests, failures,
//! storm guard, dry runs, and kill -9 in the middle of a run.

use std::collections::{BTreeMap, HashSet};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::stage::Stage;
use crate::util::{manifest_entries, support, vision_line, Dir};

const REASONS: [&str; 3] = ["timeout", "low_confidence", "Schema_Invalid"];

/// 60 clean records: reason cycles through 3 causes, attempts through 0..=4.
fn dump(dir: &Dir) {
    let text: String = (0..60)
        .map(|i| vision_line(&format!("cap-{i:03}"), "Inference", REASONS[i % 3], "det-v8.0", "2026-10-01T00:00:00Z", (i % 5) as i64) + "\n")
        .collect();
    dir.create("dlq.jsonl", text);
    dir.create("policy.toml", "max_attempts = 3\ncleared_reasons = [\"timeout\", \"schema_invalid\"]\n");
}

/// The gate computed here, independently: attempts first, then the allow-list.
fn expected_decision(i: usize) -> &'static str {
    if i % 5 >= 3 {
        "poison_attempts"
    } else if REASONS[i % 3] == "low_confidence" {
        "poison_uncleared"
    } else {
        "replay"
    }
}

fn plan(dir: &Dir) -> (Value, Vec<Value>) {
    dir.command().args(["plan", "dlq.jsonl", "--policy", "policy.toml", "-o", "manifest.jsonl"]).ok();
    let text = dir.read("manifest.jsonl");
    let mut lines = text.lines().map(|l| serde_json::from_str::<Value>(l).unwrap());
    let header = lines.next().unwrap();
    (header, lines.collect())
}

fn execute(dir: &Dir, stage: &Stage, extra: &[&str]) -> crate::util::Run {
    dir.command()
        .args(["execute", "manifest.jsonl", "--target", &stage.url, "--ledger", "ledger.db", "--quarantine", "file:quarantine.jsonl"])
        .args(extra)
        .run()
}

fn outcomes(run: &crate::util::Run) -> Value {
    let report: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    assert_eq!(report["report"], "dlqf.execute/1");
    report["outcomes"].clone()
}

fn quarantined(dir: &Dir) -> Vec<Value> {
    std::fs::read_to_string(dir.join("quarantine.jsonl")).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn plan_decides_per_the_gate_and_keys_match_the_seed() {
    let dir = Dir::new();
    dump(&dir);
    let (header, entries) = plan(&dir);
    assert_eq!(header["manifest"], "dlqf.manifest/1");
    assert_eq!(header["entries"], 60);
    assert_eq!(entries.len(), 60);
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(e["id"], format!("cap-{i:03}"), "input order");
        assert_eq!(e["decision"], expected_decision(i), "entry {i}");
        assert_eq!(e["attempts"], (i % 5) as i64);
        assert_eq!(e["record"]["reject_reason"], REASONS[i % 3], "the original record, unnormalised");
    }
    let count = |d: &str| (0..60).filter(|&i| expected_decision(i) == d).count();
    assert_eq!(header["counts"]["replay"], count("replay"));
    assert_eq!(header["counts"]["poison_attempts"], count("poison_attempts"));
    assert_eq!(header["counts"]["poison_uncleared"], count("poison_uncleared"));

    // Keys recomputed with the seed's own function (the data is clean, so they agree).
    let out = Command::new("python3").arg(support("seed_keys.py")).arg(dir.join("manifest.jsonl")).output().unwrap();
    let pairs = String::from_utf8(out.stdout).unwrap();
    assert_eq!(pairs.lines().count(), 60);
    for line in pairs.lines() {
        let (ours, seeds) = line.split_once(' ').unwrap();
        assert_eq!(ours, seeds);
    }

    // The digest seals the entry lines.
    let text = dir.read("manifest.jsonl");
    let body = &text[text.find('\n').unwrap() + 1..];
    let out = Command::new("sha256sum").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(|mut c| {
        std::io::Write::write_all(c.stdin.as_mut().unwrap(), body.as_bytes())?;
        c.wait_with_output()
    });
    let digest = String::from_utf8(out.unwrap().stdout).unwrap();
    assert_eq!(header["entries_sha256"], digest.split_whitespace().next().unwrap());
    // manifest_sha256 seals the header's canonical JSON (which holds entries_sha256),
    // recomputed here by Python's json module.
    let canonical = "import hashlib, json, sys\nh = json.loads(open(sys.argv[1], encoding='utf-8').readline())\nsealed = h.pop('manifest_sha256')\n\
                     text = json.dumps(h, sort_keys=True, separators=(',', ':'), ensure_ascii=False)\n\
                     print(sealed, hashlib.sha256(text.encode('utf-8')).hexdigest())\n";
    let out = Command::new("python3").arg("-c").arg(canonical).arg(dir.join("manifest.jsonl")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let (sealed, python) = text.trim().split_once(' ').unwrap();
    assert_eq!(sealed, python);
    assert_eq!(header["manifest_sha256"], sealed);

    // Same inputs, same policy: the same entries byte for byte; `show` renders the review.
    std::fs::rename(dir.join("manifest.jsonl"), dir.join("first.jsonl")).unwrap();
    plan(&dir);
    let first = dir.read("first.jsonl");
    assert_eq!(manifest_entries(&first), manifest_entries(&dir.read("manifest.jsonl")));
    let show = dir.command().args(["show", "manifest.jsonl"]).ok();
    assert!(show.contains(header["entries_sha256"].as_str().unwrap()), "{show}");
    let sealed: Value = serde_json::from_str(dir.read("manifest.jsonl").lines().next().unwrap()).unwrap();
    assert!(show.contains(&format!("digest    {}", sealed["manifest_sha256"].as_str().unwrap())), "{show}");
    assert!(show.lines().any(|l| l.starts_with("inference") && l.contains("low_confidence")), "{show}");
}

#[test]
fn replay_revision_changes_the_key_so_a_fixed_reprocess_is_not_blocked() {
    let dir = Dir::new();
    dump(&dir);
    dir.create("policy.toml", "max_attempts = 3\ncleared_reasons = [\"timeout\", \"schema_invalid\"]\nreplay_revision = \"det-v8.1\"\n");
    let (_, entries) = plan(&dir);
    let out = Command::new("python3").arg(support("seed_keys.py")).arg(dir.join("manifest.jsonl")).arg("det-v8.1").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let pairs = String::from_utf8(out.stdout).unwrap();
    assert_eq!(pairs.lines().count(), 60);
    for line in pairs.lines() {
        let (ours, seeds) = line.split_once(' ').unwrap();
        assert_eq!(ours, seeds, "the key is the seed's over the replay revision");
    }
    // The message's own revision gives other keys: the reprocess under det-v8.1 is new work.
    let out = Command::new("python3").arg(support("seed_keys.py")).arg(dir.join("manifest.jsonl")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let old_keys: HashSet<String> = String::from_utf8(out.stdout).unwrap().lines().map(|l| l.split_once(' ').unwrap().1.to_string()).collect();
    assert_eq!(old_keys.len(), 60);
    for e in &entries {
        assert!(!old_keys.contains(e["key"].as_str().unwrap()), "key {} is the det-v8.0 key", e["key"]);
    }
}

#[test]
fn seed_items_3_to_5_replay_once_poison_is_quarantined_once_and_never_sent() {
    let dir = Dir::new();
    dump(&dir);
    let (header, entries) = plan(&dir);
    let stage = Stage::start();
    let digest = header["manifest_sha256"].as_str().unwrap();

    let first = execute(&dir, &stage, &["--expect-digest", digest, "--report", "report.json"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(dir.read("report.json"), first.stdout, "--report writes the printed report");
    assert_eq!(serde_json::from_str::<Value>(&first.stdout).unwrap()["manifest"], digest);
    let o = outcomes(&first);
    assert_eq!(o["replayed"], header["counts"]["replay"]);
    assert_eq!(o["poison_attempts"], header["counts"]["poison_attempts"]);
    assert_eq!(o["poison_uncleared"], header["counts"]["poison_uncleared"]);
    assert_eq!(o["skipped_idempotent"], 0);
    assert_eq!(o["replay_failed"], 0);

    let replay_keys: HashSet<String> = entries.iter().filter(|e| e["decision"] == "replay").map(|e| e["key"].as_str().unwrap().to_string()).collect();
    let sent: Vec<String> = stage.keys();
    assert_eq!(sent.len(), replay_keys.len(), "each replay entry sent once, nothing else");
    assert_eq!(sent.iter().cloned().collect::<HashSet<_>>(), replay_keys);
    // The body is the original record.
    let (key, body) = stage.seen.lock().unwrap().requests[0].clone();
    let entry = entries.iter().find(|e| e["key"] == key.as_str()).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap(), entry["record"]);

    let held = quarantined(&dir);
    let poison: Vec<&Value> = entries.iter().filter(|e| e["decision"] != "replay").collect();
    assert_eq!(held.len(), poison.len());
    for p in &poison {
        let line = held.iter().find(|q| q["key"] == p["key"]).unwrap();
        assert_eq!(line["decision"], p["decision"]);
        assert_eq!(line["record"], p["record"]);
        assert_eq!(line["id"], p["id"]);
        assert!(line["detail"].as_str().unwrap().len() > 5);
    }

    // Item 3: the second run is a no-op: no request, no new quarantine line.
    let again = execute(&dir, &stage, &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    let o = outcomes(&again);
    assert_eq!(o["skipped_idempotent"], 60);
    assert_eq!(o["replayed"], 0);
    assert_eq!(stage.keys().len(), replay_keys.len());
    assert_eq!(quarantined(&dir).len(), poison.len());
}

#[test]
fn altered_truncated_or_unreviewed_manifests_are_refused_with_nothing_sent() {
    let dir = Dir::new();
    dump(&dir);
    plan(&dir);
    let stage = Stage::start();
    let original = dir.read("manifest.jsonl");

    let tampered = original.replacen("\"decision\":\"poison_uncleared\"", "\"decision\":\"replay\"", 1);
    assert_ne!(tampered, original);
    dir.create("manifest.jsonl", &tampered);
    let run = execute(&dir, &stage, &[]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("altered or truncated"), "{}", run.stderr);

    let truncated: String = original.lines().take(30).map(|l| format!("{l}\n")).collect();
    dir.create("manifest.jsonl", &truncated);
    assert_eq!(execute(&dir, &stage, &[]).code, 1);

    dir.create("manifest.jsonl", &original);
    let run = execute(&dir, &stage, &["--expect-digest", "00ff"]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("is not the reviewed 00ff"), "{}", run.stderr);
    // entries_sha256 alone is not the approval: it does not seal the header.
    let header: Value = serde_json::from_str(original.lines().next().unwrap()).unwrap();
    assert_eq!(execute(&dir, &stage, &["--expect-digest", header["entries_sha256"].as_str().unwrap()]).code, 1);

    assert!(stage.keys().is_empty());
    assert!(!dir.join("quarantine.jsonl").exists() || quarantined(&dir).is_empty());
}

#[test]
fn failing_keys_are_counted_retried_next_run_and_quarantined_after_max_attempts() {
    let dir = Dir::new();
    dump(&dir);
    let (_, entries) = plan(&dir);
    let stage = Stage::start();
    let replay: Vec<String> = entries.iter().filter(|e| e["decision"] == "replay").map(|e| e["key"].as_str().unwrap().to_string()).collect();
    let (broken, rejected, conflict) = (replay[0].clone(), replay[1].clone(), replay[2].clone());
    {
        let mut b = stage.behaviour.lock().unwrap();
        // The application's own error, for one key while the others land.
        b.status.insert(broken.clone(), 500);
        b.status.insert(rejected.clone(), 422);
        b.status.insert(conflict.clone(), 409);
    }
    let retries = ["--retries", "2"];
    let run = execute(&dir, &stage, &retries);
    assert_eq!(run.code, 3, "replay failures exit 3: {}", run.stderr);
    let o = outcomes(&run);
    assert_eq!(o["replay_failed"], 2);
    assert_eq!(o["skipped_idempotent"], 1, "409 means the target already has it");
    assert_eq!(o["replayed"], replay.len() as u64 - 3);
    assert_eq!(stage.count(&broken), 2, "5xx retried within the run");
    assert_eq!(stage.count(&rejected), 1, "4xx is permanent");
    assert!(run.stderr.contains(&broken) && run.stderr.contains("500"), "{}", run.stderr);

    // Runs 2 and 3 retry the two failing keys only; after 3 failures they are quarantined.
    for _ in 0..2 {
        let o = outcomes(&execute(&dir, &stage, &retries));
        assert_eq!(o["replay_failed"], 2);
    }
    let run = execute(&dir, &stage, &retries);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let o = outcomes(&run);
    assert_eq!(o["poison_attempts"], 2, "failed max_attempts times: quarantined, not looped");
    assert_eq!(o["replay_failed"], 0);
    assert_eq!(stage.count(&rejected), 3);
    let held = quarantined(&dir);
    let line = held.iter().find(|q| q["key"] == broken.as_str()).unwrap();
    assert_eq!(line["detail"], "replay failed 3 times (max 3)");
}

#[test]
fn the_storm_guard_stops_a_run_that_mostly_fails() {
    let dir = Dir::new();
    let text: String = (0..200).map(|i| vision_line(&format!("c{i}"), "s", "timeout", "v", "2026-10-01T00:00:00Z", 0) + "\n").collect();
    dir.create("dlq.jsonl", text);
    dir.create("policy.toml", "cleared_reasons = [\"timeout\"]\n");
    plan(&dir);
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().default_status = Some(500);
    let run = execute(&dir, &stage, &["--retries", "1", "--concurrency", "2"]);
    assert_eq!(run.code, 4, "entries left for a later run");
    assert!(run.stderr.contains("storm guard"), "{}", run.stderr);
    let sent = stage.keys().len();
    assert!((20..40).contains(&sent), "stopped soon after 20 attempts, sent {sent}");
}

#[test]
fn dry_run_decides_and_reports_but_sends_and_writes_nothing() {
    let dir = Dir::new();
    dump(&dir);
    let (header, _) = plan(&dir);
    let stage = Stage::start();
    let run = execute(&dir, &stage, &["--dry-run"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let o = outcomes(&run);
    assert_eq!(o["replayed"], header["counts"]["replay"]);
    assert_eq!(o["poison_uncleared"], header["counts"]["poison_uncleared"]);
    assert!(stage.keys().is_empty());
    assert!(!dir.join("ledger.db").exists());
    assert!(!dir.join("quarantine.jsonl").exists());
}

#[test]
fn killed_at_any_moment_then_rerun_loses_nothing_and_duplicates_at_most_the_in_flight() {
    // Kill when the stage has seen this many of the 225 replays: early, middle, late.
    for (kill_at, concurrency) in [(5usize, 4usize), (110, 4), (210, 8)] {
        let dir = Dir::new();
        let text: String = (0..300)
            .map(|i| vision_line(&format!("c{i:04}"), "s", if i % 4 == 0 { "uncleared" } else { "timeout" }, "v", "2026-10-01T00:00:00Z", 0) + "\n")
            .collect();
        dir.create("dlq.jsonl", text);
        dir.create("policy.toml", "cleared_reasons = [\"timeout\"]\n");
        let (_, entries) = plan(&dir);
        let stage = Stage::start();
        stage.behaviour.lock().unwrap().delay = Duration::from_millis(5);
        let c = concurrency.to_string();
        let args = ["execute", "manifest.jsonl", "--target", &stage.url, "--ledger", "ledger.db", "--quarantine", "file:quarantine.jsonl", "--concurrency", &c];
        let mut child = Command::new(env!("CARGO_BIN_EXE_dlqf")).current_dir(dir.path()).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while stage.keys().len() < kill_at && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let before = stage.keys().len();
        assert!(before >= kill_at && before < 225, "killed mid-run at {kill_at}: {before} sent");

        let rerun = dir.command().args(args).run();
        assert_eq!(rerun.code, 0, "{}", rerun.stderr);
        let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
        for k in stage.keys() {
            *per_key.entry(k).or_default() += 1;
        }
        let replay: Vec<&str> = entries.iter().filter(|e| e["decision"] == "replay").map(|e| e["key"].as_str().unwrap()).collect();
        for k in &replay {
            assert!(per_key.contains_key(*k), "replay entry {k} never reached the target");
        }
        let twice = per_key.values().filter(|&&n| n > 1).count();
        assert!(twice <= concurrency, "{twice} keys sent twice, more than --concurrency {concurrency}");
        assert!(per_key.values().all(|&n| n <= 2));
        let held = quarantined(&dir);
        let poison = entries.iter().filter(|e| e["decision"] != "replay").count();
        let unique: HashSet<&str> = held.iter().map(|q| q["key"].as_str().unwrap()).collect();
        assert_eq!(held.len(), poison, "each poison entry quarantined exactly once");
        assert_eq!(unique.len(), poison);
    }
}

#[test]
fn fixes_repair_matching_records_in_the_reviewed_manifest_and_leave_others_byte_for_byte() {
    let dir = Dir::new();
    dump(&dir);
    dir.create(
        "fixes.toml",
        "[[fix]]\nsignature = { reject_reason = \"schema_invalid\" }\nset = { schema_version = 2 }\nremove = [\"trace_id\"]\nmerge_patch = { meta = { repaired = true } }\n",
    );
    dir.command().args(["plan", "dlq.jsonl", "--policy", "policy.toml", "--fix", "fixes.toml", "-o", "manifest.jsonl"]).ok();
    let text = dir.read("manifest.jsonl");
    let originals: Vec<String> = dir.read("dlq.jsonl").lines().map(str::to_string).collect();
    for (i, line) in text.lines().skip(1).enumerate() {
        let entry: Value = serde_json::from_str(line).unwrap();
        if REASONS[i % 3] == "Schema_Invalid" {
            assert_eq!(entry["record"]["schema_version"], 2);
            assert_eq!(entry["record"]["meta"], serde_json::json!({"repaired": true}));
            assert!(entry["record"].get("trace_id").is_none());
        } else {
            assert!(line.ends_with(&format!("\"record\":{}}}", originals[i])), "record kept as its original text");
        }
    }
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["fixes"]["fix"][0]["set"]["schema_version"], 2);
}

#[test]
fn a_message_dead_lettered_several_times_is_replayed_once_in_one_run() {
    // 20 messages, each in the dump three times (same id, stage and revision: one key), slow
    // to deliver so that every copy of a key could be in flight at once.
    let dir = Dir::new();
    let text: String = (0..60)
        .map(|i| vision_line(&format!("cap-{:03}", i % 20), "Inference", "timeout", "det-v8.0", "2026-10-01T00:00:00Z", 0) + "\n")
        .collect();
    dir.create("dlq.jsonl", text);
    dir.create("policy.toml", "cleared_reasons = [\"timeout\"]\n");
    let (header, entries) = plan(&dir);
    assert_eq!(header["counts"]["replay"], 60);
    let keys: HashSet<&str> = entries.iter().map(|e| e["key"].as_str().unwrap()).collect();
    assert_eq!(keys.len(), 20);
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().delay = Duration::from_millis(200);

    // A dry run says what the run then does.
    let dry = execute(&dir, &stage, &["--dry-run"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let o = outcomes(&dry);
    assert_eq!((o["replayed"].as_u64(), o["skipped_idempotent"].as_u64()), (Some(20), Some(40)), "dry run: {o}");
    assert!(stage.keys().is_empty());

    let run = execute(&dir, &stage, &["--concurrency", "60"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let o = outcomes(&run);
    assert_eq!((o["replayed"].as_u64(), o["skipped_idempotent"].as_u64()), (Some(20), Some(40)), "{o}");
    let delivered = stage.delivered();
    assert_eq!(delivered.len(), 20);
    assert!(delivered.values().all(|&n| n == 1), "each key sent once: {delivered:?}");
}

/// The first `n` replay entries of each signature after `skip` of them, in manifest order,
/// computed here from the manifest alone.
fn canary_picks(entries: &[Value], skip: usize, n: usize) -> (HashSet<String>, BTreeMap<String, usize>) {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut picks = HashSet::new();
    for e in entries.iter().filter(|e| e["decision"] == "replay") {
        let i = seen.entry(e["signature"].to_string()).or_default();
        if (skip..skip + n).contains(i) {
            picks.insert(e["key"].as_str().unwrap().to_string());
        }
        *i += 1;
    }
    (picks, seen)
}

#[test]
fn a_canary_sends_the_first_n_of_each_signature_and_the_next_run_sends_the_rest() {
    let dir = Dir::new();
    dump(&dir);
    let (_, entries) = plan(&dir);
    let stage = Stage::start();
    let (first, per_signature) = canary_picks(&entries, 0, 2);
    assert!(per_signature.len() >= 2 && per_signature.values().all(|&n| n > 4), "{per_signature:?}");

    let run = execute(&dir, &stage, &["--canary", "2"]);
    assert_eq!(run.code, 0, "a canary that delivered all it sent: {}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(stage.keys().into_iter().collect::<HashSet<_>>(), first, "the first two of each signature, whatever the concurrency");
    assert_eq!(report["outcomes"]["replayed"], first.len() as u64);
    assert!(quarantined(&dir).is_empty(), "a canary quarantines nothing");
    let canary = &report["canary"];
    assert_eq!(canary["limit"], 2);
    assert_eq!(canary["held"].as_u64().unwrap() as usize, entries.len() - first.len(), "{canary}");
    assert_eq!(report["unfinished"], canary["held"]);
    for s in canary["signatures"].as_array().unwrap() {
        let replays = per_signature.get(&s["signature"].to_string()).copied().unwrap_or(0);
        let all = entries.iter().filter(|e| e["signature"] == s["signature"]).count();
        assert_eq!(s["sent"].as_u64().unwrap() as usize, replays.min(2), "{s}");
        assert_eq!(s["held"].as_u64().unwrap() as usize, all - replays.min(2), "poison is held too: {s}");
    }
    assert!(run.stderr.contains("canary"), "{}", run.stderr);

    // A second canary sends the next two of each: what is done does not count.
    let (second, _) = canary_picks(&entries, 2, 2);
    let run = execute(&dir, &stage, &["--canary", "2", "--concurrency", "1"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(stage.keys().into_iter().collect::<HashSet<_>>(), &first | &second);

    // The run after, no canary: the rest is sent, poison quarantined, no key twice.
    let run = execute(&dir, &stage, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let replays = entries.iter().filter(|e| e["decision"] == "replay").count();
    assert_eq!(outcomes(&run)["replayed"].as_u64().unwrap() as usize, replays - first.len() - second.len());
    assert_eq!(stage.keys().len(), replays);
    assert!(stage.delivered().values().all(|&n| n == 1));
    assert_eq!(quarantined(&dir).len(), entries.len() - replays);
}
