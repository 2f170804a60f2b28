//! Replay under faults, against a fault-injecting loopback stage: an outage never poisons a
//! message, a slow target charges no key, a flapping one delivers everything after reruns, a
//! late outage stops the run within about one window, signals stop it gracefully, leases hold
//! while deliveries are slow, executors share one SQLite ledger, and a torn file is repaired.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::stage::{refused_url, Stage};
use crate::util::{vision_line, Dir, Run};

/// `n` replayable entries (cleared, attempts 0, max_attempts 3) in manifest.jsonl; their keys.
pub fn manifest(dir: &Dir, n: usize) -> Vec<String> {
    manifest_with_max_attempts(dir, n, 3)
}

/// `manifest`, each entry quarantined once its key has failed `max_attempts` times (1: a
/// single charge shows in the quarantine on the next run).
pub fn manifest_with_max_attempts(dir: &Dir, n: usize, max_attempts: u32) -> Vec<String> {
    let text: String = (0..n).map(|i| vision_line(&format!("c-{i:05}"), "inference", "timeout", "v1", "2026-10-01T00:00:00Z", 0) + "\n").collect();
    dir.create("dlq.jsonl", text);
    dir.create("policy.toml", format!("clear_all = true\nmax_attempts = {max_attempts}\n"));
    dir.command().args(["plan", "dlq.jsonl", "--policy", "policy.toml", "-o", "manifest.jsonl"]).ok();
    dir.read("manifest.jsonl").lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()["key"].as_str().unwrap().to_string()).collect()
}

fn args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut all = vec!["execute", "manifest.jsonl", "--target", url, "--ledger", "ledger.db", "--quarantine", "file:quarantine.jsonl"];
    all.extend_from_slice(extra);
    all
}

pub fn execute(dir: &Dir, url: &str, extra: &[&str]) -> (Run, Value) {
    let run = dir.command().args(args(url, extra)).run();
    let report = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, report)
}

fn spawn(dir: &Dir, url: &str, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_dlqf")).current_dir(dir.path()).args(args(url, extra)).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

pub fn quarantined(dir: &Dir) -> usize {
    std::fs::read_to_string(dir.join("quarantine.jsonl")).map(|t| t.lines().count()).unwrap_or(0)
}

/// Outcomes and unfinished add up to the manifest.
fn accounted(report: &Value) -> u64 {
    let o = &report["outcomes"];
    ["replayed", "skipped_idempotent", "poison_attempts", "poison_uncleared", "replay_failed"].iter().map(|f| o[f].as_u64().unwrap()).sum::<u64>()
        + report["unfinished"].as_u64().unwrap()
}

fn wait_for(what: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !what() {
        assert!(Instant::now() < deadline, "timed out waiting");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn an_outage_over_three_runs_poisons_nothing_and_everything_is_delivered_once_it_is_back() {
    let dir = Dir::new();
    let keys = manifest(&dir, 120);
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().default_status = Some(503);
    // Three runs against a refused port, three against a target answering 503 to everything.
    for url in [refused_url(), refused_url(), refused_url(), stage.url.clone(), stage.url.clone(), stage.url.clone()] {
        let (run, report) = execute(&dir, &url, &["--retries", "2"]);
        assert_eq!(run.code, 4, "entries left for a later run: {}", run.stderr);
        assert_eq!(report["outcomes"]["replay_failed"], 0, "{report}");
        assert_eq!(report["outcomes"]["poison_attempts"], 0, "{report}");
        assert_eq!(report["unfinished"], 120, "{report}");
        assert!(report["target_failures"].as_u64().unwrap() > 0, "{report}");
        assert!(run.stderr.contains("no key was charged"), "{}", run.stderr);
    }
    assert_eq!(quarantined(&dir), 0);
    stage.behaviour.lock().unwrap().default_status = None;
    let (run, report) = execute(&dir, &stage.url, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(report["outcomes"]["replayed"], 120, "{report}");
    assert_eq!(quarantined(&dir), 0, "an outage poisons nothing");
    let delivered = stage.delivered();
    assert!(keys.iter().all(|k| delivered.get(k) == Some(&1)), "each delivered once");
}

#[test]
fn a_slow_target_charges_no_key_and_is_not_retried_past_retries_per_run() {
    let dir = Dir::new();
    let keys = manifest(&dir, 40);
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().delay = Duration::from_millis(1200);
    for run_no in 1..=3 {
        let (run, report) = execute(&dir, &stage.url, &["--timeout", "0.3", "--retries", "2"]);
        assert_eq!(run.code, 4, "run {run_no}: {}", run.stderr);
        assert_eq!((report["outcomes"]["replay_failed"].as_u64(), report["outcomes"]["poison_attempts"].as_u64()), (Some(0), Some(0)), "{report}");
    }
    std::thread::sleep(Duration::from_millis(1500)); // let the stage finish the last slow requests
    for k in &keys {
        assert!(stage.count(k) <= 6, "{k} sent {} times over 3 runs with --retries 2", stage.count(k));
    }
    stage.behaviour.lock().unwrap().delay = Duration::ZERO;
    let (run, report) = execute(&dir, &stage.url, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(report["outcomes"]["replayed"], 40, "{report}");
    assert_eq!(quarantined(&dir), 0);
}

#[test]
fn a_flapping_target_gets_every_entry_after_reruns_and_nothing_is_quarantined() {
    let dir = Dir::new();
    let keys = manifest(&dir, 300);
    let stage = Stage::start();
    {
        let mut b = stage.behaviour.lock().unwrap();
        b.fail_rate = 0.3;
        b.drop_rate = 0.05;
    }
    let mut runs = 0;
    loop {
        runs += 1;
        let (run, report) = execute(&dir, &stage.url, &["--timeout", "2"]);
        assert_eq!(accounted(&report), 300, "{report}");
        if run.code == 0 {
            break;
        }
        assert!([3, 4].contains(&run.code), "{}", run.stderr);
        assert!(runs < 8, "still not done after {runs} runs: {report}");
    }
    let delivered = stage.delivered();
    assert!(keys.iter().all(|k| delivered.contains_key(k)), "every entry delivered");
    assert_eq!(quarantined(&dir), 0, "none quarantined");
}

#[test]
fn an_outage_late_in_a_long_run_stops_it_within_about_one_window() {
    let dir = Dir::new();
    let keys = manifest(&dir, 1500);
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().fail_after = Some(400);
    let (run, report) = execute(&dir, &stage.url, &["--concurrency", "8"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("storm guard"), "{}", run.stderr);
    let failed = stage.failed();
    // 26 failed entries trip the guard (more than half of 50); each is tried 3 times, and up
    // to 8 more are in flight.
    assert!(failed <= (26 + 8) * 3, "{failed} failed requests before the stop");
    assert_eq!(report["outcomes"]["replayed"], 400, "{report}");
    assert_eq!(report["outcomes"]["replay_failed"], 0, "{report}");
    assert_eq!(report["unfinished"], 1100, "{report}");
    stage.behaviour.lock().unwrap().fail_after = None;
    let (run, report) = execute(&dir, &stage.url, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(report["outcomes"]["replayed"], 1100, "{report}");
    let delivered = stage.delivered();
    assert!(keys.iter().all(|k| delivered.get(k) == Some(&1)), "the rest delivered, each once");
}

#[test]
fn sigterm_and_sigint_finish_what_is_in_flight_report_and_leave_no_duplicates() {
    for (signal, code) in [("TERM", 143), ("INT", 130)] {
        let dir = Dir::new();
        let keys = manifest(&dir, 400);
        let stage = Stage::start();
        stage.behaviour.lock().unwrap().delay = Duration::from_millis(30);
        let child = spawn(&dir, &stage.url, &["--concurrency", "8"]);
        wait_for(|| stage.keys().len() >= 60);
        Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]).status().unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", String::from_utf8_lossy(&out.stderr));
        let report: Value = serde_json::from_slice(&out.stdout).expect("a partial report");
        assert_eq!(accounted(&report), 400, "{report}");
        let unfinished = report["unfinished"].as_u64().unwrap();
        assert!(unfinished > 0 && unfinished < 340, "{report}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("stopped by SIG{signal}")));
        assert_eq!(report["outcomes"]["replayed"].as_u64().unwrap() as usize, stage.keys().len(), "every request sent was recorded");

        let (run, _) = execute(&dir, &stage.url, &[]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let delivered = stage.delivered();
        assert!(keys.iter().all(|k| delivered.get(k) == Some(&1)), "no duplicates: in-flight entries were finished and recorded");
    }
}

#[test]
fn a_second_signal_stops_at_once() {
    let dir = Dir::new();
    manifest(&dir, 40);
    let stage = Stage::start();
    // Deliveries take 20 s: after one signal the run would wait for them (up to --timeout).
    stage.behaviour.lock().unwrap().delay = Duration::from_secs(20);
    let child = spawn(&dir, &stage.url, &["--concurrency", "4", "--timeout", "30"]);
    std::thread::sleep(Duration::from_millis(1000));
    let pid = child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let second = Instant::now();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143));
    assert!(second.elapsed() < Duration::from_secs(10), "the second signal did not stop it at once");
}

#[test]
fn claims_are_renewed_while_deliveries_outlast_the_lease_so_two_executors_send_each_key_once() {
    let dir = Dir::new();
    let keys = manifest(&dir, 24);
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().delay = Duration::from_millis(1500);
    let extra = ["--lease", "0.5", "--concurrency", "4", "--timeout", "5", "--retries", "1"];
    let (a, b) = (spawn(&dir, &stage.url, &extra), spawn(&dir, &stage.url, &extra));
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success() && b.status.success(), "{}\n{}", String::from_utf8_lossy(&a.stderr), String::from_utf8_lossy(&b.stderr));
    let replayed = |o: &std::process::Output| serde_json::from_slice::<Value>(&o.stdout).unwrap()["outcomes"]["replayed"].as_u64().unwrap();
    assert_eq!(replayed(&a) + replayed(&b), 24, "the reports add up to the keys");
    let delivered = stage.delivered();
    assert!(keys.iter().all(|k| delivered.get(k) == Some(&1)), "each key delivered once: {delivered:?}");
    assert!(String::from_utf8_lossy(&a.stderr).contains("more than --lease"), "the lease warning");
}

#[test]
fn seven_executors_starting_together_on_a_new_sqlite_ledger_all_run() {
    let dir = Dir::new();
    let keys = manifest(&dir, 200);
    let stage = Stage::start();
    let children: Vec<Child> = (0..7).map(|_| spawn(&dir, &stage.url, &["--concurrency", "2"])).collect();
    let mut replayed = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        replayed += serde_json::from_slice::<Value>(&out.stdout).unwrap()["outcomes"]["replayed"].as_u64().unwrap();
    }
    assert_eq!(replayed, 200);
    let delivered: HashMap<String, usize> = stage.delivered();
    assert!(keys.iter().all(|k| delivered.get(k) == Some(&1)));
}

#[test]
fn a_torn_last_line_in_a_file_target_is_cut_before_the_rerun_appends() {
    let dir = Dir::new();
    let keys = manifest(&dir, 30);
    // What a full disk or a crash mid-write leaves: whole lines, then half of one.
    dir.create("target.jsonl", "{\"key\":\"earlier\",\"record\":{}}\n{\"key\":\"torn\",\"rec");
    let (run, report) = execute(&dir, "file:target.jsonl", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(report["outcomes"]["replayed"], 30);
    let text = dir.read("target.jsonl");
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    assert_eq!(lines.len(), 31);
    assert_eq!(lines[0]["key"], "earlier");
    let written: Vec<&str> = lines[1..].iter().map(|l| l["key"].as_str().unwrap()).collect();
    assert!(keys.iter().all(|k| written.contains(&k.as_str())));
}
