//! Ordered replay (`execute --ordered`): each origin key's messages reach the target in the
//! order they were first produced, whatever order they failed in, under 503s, dropped
//! connections and a SIGTERM; a message that cannot be done holds the rest of its key; a
//! canary sends a key's first message only; two executors on one PostgreSQL ledger never have
//! two messages of a key in flight; Kafka and SQS FIFO keep the order.

use std::collections::{BTreeMap, HashMap};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::stage::Stage;
use crate::util::Dir;

/// A failure-order dump: `keys` order keys with 2 to 6 messages each (`seq` 0, 1, … at rising
/// original offsets, one partition a key), written in a shuffled order (fixed seed) across two
/// day files, as two consumers failing them at different times would; planned with
/// `clear_all` and `max_attempts`. Returns each order key's message count.
pub fn failure_order_dump(dir: &Dir, keys: usize, max_attempts: u32, tag: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    let mut records = Vec::new();
    let mut draw = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        draw ^= draw << 13;
        draw ^= draw >> 7;
        draw ^= draw << 17;
        draw
    };
    for k in 0..keys {
        let n = 2 + (next() % 5) as usize;
        let order_key = format!("ord-{tag}-{k}");
        for seq in 0..n {
            records.push(json!({
                "id": format!("dl-{tag}-{k}-{seq}"), "original_topic": "orders", "original_partition": k % 4,
                "original_offset": 1000 * k + 7 * seq, "original_key": order_key,
                "original_value": {"order_id": order_key, "seq": seq},
                "original_headers": {"source": "checkout"},
                "error_type": "TimeoutError", "error_message": "timed out", "first_failed_at": "2026-10-01T00:00:00Z",
                "retry_count": 0, "consumer_id": "c", "consumer_version": "1"
            }));
        }
        counts.insert(order_key, n);
    }
    // Failure order: a shuffle (Fisher-Yates), failure times rising along it.
    for i in (1..records.len()).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        records.swap(i, j);
    }
    let half = records.len() / 2;
    for (i, r) in records.iter_mut().enumerate() {
        r["last_failed_at"] = json!(format!("2026-10-{:02}T{:02}:{:02}:{:02}Z", if i < half { 1 } else { 2 }, (i / 3600) % 24, (i / 60) % 60, i % 60));
    }
    let lines = |part: &[Value]| part.iter().map(|r| r.to_string() + "\n").collect::<String>();
    dir.create("dumps/2026-10-01.jsonl", lines(&records[..half]));
    dir.create("dumps/2026-10-02.jsonl", lines(&records[half..]));
    dir.create("p.toml", format!("clear_all = true\nmax_attempts = {max_attempts}\n"));
    dir.command().args(["plan", "dumps", "--profile", "envelope", "--policy", "p.toml", "-o", "m.jsonl"]).ok();
    counts
}

/// `(order key, seq)` of a payload as the stage saw it.
fn message_of(body: &str) -> (String, u64) {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (v["order_id"].as_str().unwrap().to_string(), v["seq"].as_u64().unwrap())
}

/// Messages that reached the target (2xx) after a later message of their own key, counted over
/// the deliveries in the order the stage answered them.
fn inversions(stage: &Stage) -> usize {
    let seen = stage.seen.lock().unwrap();
    let mut last: HashMap<String, u64> = HashMap::new();
    let mut count = 0;
    for ((_, body), (_, status)) in seen.requests.iter().zip(&seen.answers) {
        if !(200..300).contains(status) {
            continue;
        }
        let (key, seq) = message_of(body);
        match last.get(&key) {
            Some(&before) if before > seq => count += 1,
            _ => {
                last.insert(key, seq);
            }
        }
    }
    count
}

/// Each message of each key delivered (2xx) exactly once.
fn each_delivered_once(stage: &Stage, counts: &BTreeMap<String, usize>) {
    let seen = stage.seen.lock().unwrap();
    let mut delivered: BTreeMap<(String, u64), usize> = BTreeMap::new();
    for ((_, body), (_, status)) in seen.requests.iter().zip(&seen.answers) {
        if (200..300).contains(status) {
            *delivered.entry(message_of(body)).or_default() += 1;
        }
    }
    let expected: usize = counts.values().sum();
    assert_eq!(delivered.len(), expected, "every message delivered");
    let twice: Vec<_> = delivered.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "delivered more than once: {twice:?}");
}

fn execute(dir: &Dir, target: &str, extra: &[&str]) -> (crate::util::Run, Value) {
    let run = dir.command().args(["execute", "m.jsonl", "--target", target, "--ledger", "l.db", "--quarantine", "file:q.jsonl"]).args(extra).run();
    let report = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, report)
}

/// Runs until one exits 0, at most `runs` times.
fn until_done(dir: &Dir, target: &str, extra: &[&str], runs: usize) {
    for run_no in 1..=runs {
        let (run, report) = execute(dir, target, extra);
        if run.code == 0 {
            return;
        }
        assert!([3, 4].contains(&run.code), "run {run_no}: {}", run.stderr);
        assert_eq!(report["outcomes"]["poison_attempts"], 0, "{report}");
    }
    panic!("not done after {runs} runs");
}

#[test]
fn a_keys_messages_arrive_in_origin_order_under_503s_and_dropped_connections() {
    let dir = Dir::new();
    let counts = failure_order_dump(&dir, 300, 5, "a");
    let stage = Stage::start();
    {
        let mut b = stage.behaviour.lock().unwrap();
        b.delay = Duration::from_millis(2);
        b.fail_rate = 0.1;
        b.drop_rate = 0.02;
    }
    until_done(&dir, &stage.url, &["--ordered", "--concurrency", "16", "--timeout", "2"], 6);
    assert_eq!(inversions(&stage), 0, "a message arrived after a later one of its key");
    each_delivered_once(&stage, &counts);

    // The same dump unordered at the same concurrency: the failure order shows (the check can fail).
    let dir = Dir::new();
    failure_order_dump(&dir, 300, 5, "a");
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().delay = Duration::from_millis(2);
    until_done(&dir, &stage.url, &["--concurrency", "16"], 1);
    assert!(inversions(&stage) > 100, "unordered, {} inversions", inversions(&stage));
}

#[test]
fn show_reports_keys_with_more_than_one_message_and_the_longest_chain() {
    let dir = Dir::new();
    let counts = failure_order_dump(&dir, 50, 3, "s");
    let text = dir.command().args(["show", "m.jsonl"]).ok();
    let longest = counts.values().max().unwrap();
    // The first key (by its first message in the manifest) among those of that length.
    let line = text.lines().find(|l| l.starts_with("order")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("50 keys have more than one message (by offset 50)"), "{line}");
    assert!(line.contains(&format!("the longest chain has {longest} (key ord-s-")), "{line}");
}

/// A key's message the target refuses (422) fails for good: the key's later messages are not
/// sent, the report lists them as blocked by it, and the run exits 4. The next run quarantines
/// it (max_attempts 1) and still holds the rest; --release-after lets them go, in order. A
/// key whose first message the gate holds (not cleared) holds its rest the same way.
#[test]
fn a_message_that_fails_for_good_holds_the_rest_of_its_key_until_released() {
    let dir = Dir::new();
    let counts = failure_order_dump(&dir, 40, 1, "b");
    let entries: Vec<Value> = dir.read("m.jsonl").lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    let seq_of = |e: &Value| e["record"]["original_value"]["seq"].as_u64().unwrap();
    let key_of = |e: &Value| e["record"]["original_key"].as_str().unwrap().to_string();
    // The second message of the first key with at least four.
    let (broken_key, _) = counts.iter().find(|(_, n)| **n >= 4).unwrap();
    let broken = entries.iter().find(|e| key_of(e) == *broken_key && seq_of(e) == 1).unwrap()["key"].as_str().unwrap().to_string();
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().status.insert(broken.clone(), 422);
    let (run, report) = execute(&dir, &stage.url, &["--ordered", "--concurrency", "8"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    let held = counts[broken_key] - 2;
    assert_eq!((report["outcomes"]["replay_failed"].as_u64(), report["blocked"].as_u64()), (Some(1), Some(held as u64)), "{report}");
    let blocked: Vec<&Value> = report["unfinished_keys"].as_array().unwrap().iter().filter(|u| u["blocked_by"].is_string()).collect();
    assert_eq!(blocked.len(), held);
    assert!(blocked.iter().all(|u| u["blocked_by"] == broken.as_str()), "{blocked:?}");
    let sent_of_key = |stage: &Stage| stage.seen.lock().unwrap().requests.iter().map(|(_, b)| message_of(b)).filter(|(k, _)| k == broken_key).map(|(_, s)| s).collect::<Vec<_>>();
    assert_eq!(sent_of_key(&stage), [0, 1], "nothing of the key after its failed message");
    assert!(run.stderr.contains("--release-after"), "{}", run.stderr);

    // Run 2: the failed message is quarantined (max_attempts 1); its key's rest stays held.
    let (run, report) = execute(&dir, &stage.url, &["--ordered"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!((report["outcomes"]["poison_attempts"].as_u64(), report["blocked"].as_u64()), (Some(1), Some(held as u64)), "{report}");
    assert_eq!(sent_of_key(&stage), [0, 1]);

    // The operator lets the rest go without it: in order, once each.
    let (run, report) = execute(&dir, &stage.url, &["--ordered", "--release-after", &broken]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(report["outcomes"]["replayed"].as_u64(), Some(held as u64), "{report}");
    assert_eq!(sent_of_key(&stage), (0..counts[broken_key] as u64).collect::<Vec<_>>());
    assert_eq!(inversions(&stage), 0);
}

#[test]
fn a_key_whose_first_message_the_gate_holds_sends_nothing_of_it() {
    let dir = Dir::new();
    let counts = failure_order_dump(&dir, 20, 3, "g");
    // Re-plan with the first message of one key held as poison: attempts at the cap.
    let first_key = counts.keys().next().unwrap().clone();
    for day in ["dumps/2026-10-01.jsonl", "dumps/2026-10-02.jsonl"] {
        let text: String = dir
            .read(day)
            .lines()
            .map(|l| {
                let mut r: Value = serde_json::from_str(l).unwrap();
                if r["original_key"] == first_key.as_str() && r["original_value"]["seq"] == 0 {
                    r["retry_count"] = json!(9);
                }
                r.to_string() + "\n"
            })
            .collect();
        dir.create(day, text);
    }
    dir.command().args(["plan", "dumps", "--profile", "envelope", "--policy", "p.toml", "-o", "m.jsonl"]).ok();
    let stage = Stage::start();
    let (run, report) = execute(&dir, &stage.url, &["--ordered"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert_eq!((report["outcomes"]["poison_attempts"].as_u64(), report["blocked"].as_u64()), (Some(1), Some(counts[&first_key] as u64 - 1)), "{report}");
    let sent = stage.seen.lock().unwrap().requests.iter().filter(|(_, b)| message_of(b).0 == first_key).count();
    assert_eq!(sent, 0, "nothing of a key whose first message is held");
    assert_eq!(inversions(&stage), 0);
}

/// SIGTERM mid-run: what was in flight finishes; the rerun completes the rest in order, and no
/// message is delivered twice.
#[test]
fn sigterm_mid_run_then_a_rerun_completes_in_order() {
    let dir = Dir::new();
    let counts = failure_order_dump(&dir, 200, 3, "t");
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().delay = Duration::from_millis(10);
    let args = ["execute", "m.jsonl", "--target", &stage.url, "--ledger", "l.db", "--quarantine", "file:q.jsonl", "--ordered", "--concurrency", "8"];
    let child = Command::new(env!("CARGO_BIN_EXE_dlqf")).current_dir(dir.path()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while stage.keys().len() < 150 {
        assert!(Instant::now() < deadline, "timed out waiting");
        std::thread::sleep(Duration::from_millis(2));
    }
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", String::from_utf8_lossy(&out.stderr));
    let total: usize = counts.values().sum();
    assert!(stage.keys().len() < total, "stopped mid-run");
    let (run, _) = execute(&dir, &stage.url, &["--ordered", "--concurrency", "8"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(inversions(&stage), 0);
    each_delivered_once(&stage, &counts);
}

/// A canary run sends only a key's first undelivered message: never one whose message before
/// it is not done.
#[test]
fn a_canary_sends_only_a_keys_first_undelivered_message() {
    let dir = Dir::new();
    let counts = failure_order_dump(&dir, 30, 3, "c");
    let stage = Stage::start();
    // All share one signature: a canary of 10 sends ten keys' first messages.
    let (run, report) = execute(&dir, &stage.url, &["--ordered", "--canary", "10"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let sent: Vec<(String, u64)> = stage.seen.lock().unwrap().requests.iter().map(|(_, b)| message_of(b)).collect();
    assert_eq!(sent.len(), 10, "{report}");
    assert!(sent.iter().all(|(_, seq)| *seq == 0), "only first messages: {sent:?}");
    let total: usize = counts.values().sum();
    assert_eq!(report["canary"]["held"].as_u64(), Some(total as u64 - 10), "{report}");
    // A second canary: each key's next undelivered message is its first undelivered one.
    let (run, _) = execute(&dir, &stage.url, &["--ordered", "--canary", "40"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(inversions(&stage), 0);
    let (run, _) = execute(&dir, &stage.url, &["--ordered"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(inversions(&stage), 0);
    each_delivered_once(&stage, &counts);
}
