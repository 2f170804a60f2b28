//! Replay to SQS against the loopback moto server `make test` starts (standard and FIFO
//! queues), read back with boto3; and AWS credentials as users have them: a profile in
//! ~/.aws with no AWS_* variables reaches moto, and no credentials at all says so in one line.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

use crate::proxy::Proxy;
use crate::util::{envelope_dump, nothing_quarantined, python, support, vision_line, Dir};

fn sqs(args: &[&str]) -> String {
    let out = Command::new(python()).arg(support("sqs.py")).args(args).output().expect("run sqs.py");
    assert!(out.status.success(), "sqs.py {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn receive(queue: &str) -> Vec<Value> {
    sqs(&["receive", queue]).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
#[ignore = "needs the loopback moto server: make test runs it"]
fn standard_and_fifo_queues_get_each_payload_once_with_its_key_attribute() {
    for queue in [format!("dlqf-replay-{}", std::process::id()), format!("dlqf-replay-{}.fifo", std::process::id())] {
        let dir = Dir::new();
        sqs(&["create", &queue]);
        let records = envelope_dump(&dir, 25, &["orders"]);
        let keys: BTreeMap<String, String> = dir
            .read("m.jsonl")
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .map(|e| (e["id"].as_str().unwrap().to_string(), e["key"].as_str().unwrap().to_string()))
            .collect();
        let args = ["execute", "m.jsonl", "--target", &format!("sqs://{queue}"), "--ledger", "l.db", "--quarantine", "file:q.jsonl"];
        let run = dir.command().args(args).run();
        assert_eq!(run.code, 0, "{queue}: {}", run.stderr);
        let got = receive(&queue);
        assert_eq!(got.len(), 25, "{queue}: each entry once");
        for message in &got {
            let body: Value = serde_json::from_str(message["body"].as_str().unwrap()).unwrap();
            let i = body["total"].as_u64().unwrap() as usize;
            assert_eq!(message["body"].as_str().unwrap(), records[i]["original_value"].to_string(), "the payload as compact JSON");
            let id = records[i]["id"].as_str().unwrap();
            assert_eq!(message["key"], keys[id].as_str(), "the dlqf-idempotency-key attribute");
            if queue.ends_with(".fifo") {
                assert_eq!(message["attributes"]["MessageDeduplicationId"], keys[id].as_str());
                let group = records[i]["original_key"].as_str().unwrap_or(id);
                assert_eq!(message["attributes"]["MessageGroupId"], group, "the origin key, or the id");
            }
        }
        let again = dir.command().args(args).json();
        assert_eq!(again["outcomes"]["skipped_idempotent"], 25);
        assert!(receive(&queue).is_empty(), "a rerun sends nothing");
    }
}

#[test]
#[ignore = "needs the loopback moto server: make test runs it"]
fn a_missing_queue_fails_the_run_clearly_and_charges_no_key() {
    let dir = Dir::new();
    envelope_dump(&dir, 5, &["orders"]);
    let run = dir.command().args(["execute", "m.jsonl", "--target", "sqs://no-such-queue-dlqf", "--ledger", "l.db", "--quarantine", "file:q.jsonl"]).run();
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("sqs://no-such-queue-dlqf") && run.stderr.contains("QueueDoesNotExist"), "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!((report["outcomes"]["replay_failed"].as_u64(), report["unfinished"].as_u64()), (Some(0), Some(5)), "{report}");
}

/// A command with every AWS_* variable removed and HOME in `dir`.
fn without_aws_env(dir: &Dir) -> crate::util::TestCommand {
    let mut cmd = dir.command().env("HOME", dir.path()).env("AWS_EC2_METADATA_DISABLED", "true");
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") && name != "AWS_EC2_METADATA_DISABLED" {
            cmd = cmd.env_remove(&name);
        }
    }
    cmd
}

#[test]
#[ignore = "needs the loopback moto server: make test runs it"]
fn a_profile_in_the_shared_files_reaches_s3_and_no_credentials_is_one_clear_line() {
    let dir = Dir::new();
    let bucket = format!("dlqf-profile-{}", std::process::id());
    let out = Command::new(python()).arg(support("s3.py")).args(["mkbucket", &bucket]).output().unwrap();
    assert!(out.status.success());
    dir.create("d.jsonl", vision_line("c-1", "s", "r", "v", "2026-10-01T00:00:00Z", 0) + "\n");
    let out = Command::new(python()).arg(support("s3.py")).args(["put", &bucket, "d.jsonl", dir.join("d.jsonl").to_str().unwrap()]).output().unwrap();
    assert!(out.status.success());
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap();
    dir.create(".aws/credentials", "[ops]\naws_access_key_id = ops-key\naws_secret_access_key = ops-secret-7b2e\n");
    dir.create(".aws/config", format!("[profile ops]\nregion = us-east-1\nendpoint_url = {endpoint}\n"));
    let url = format!("s3://{bucket}/d.jsonl");
    let report = without_aws_env(&dir).env("AWS_PROFILE", "ops").args(["rank", &url, "--format", "json"]).json();
    assert_eq!(report["total"], 1);

    // No profile, no variables, no metadata service: one line that says what to do.
    std::fs::remove_dir_all(dir.join(".aws")).unwrap();
    let run = without_aws_env(&dir).args(["rank", &url, "--format", "json"]).expect_code(1);
    assert!(run.stderr.contains("no AWS credentials found") && run.stderr.contains("AWS_PROFILE"), "{}", run.stderr);
    assert!(!run.stderr.contains("169.254.169.254"), "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
}

/// A FIFO queue costs its server more the more it holds (moto recomputes the queue's
/// attributes over every stored message for each one added), so deliveries slow down as the
/// replay goes: 64 workers and a 2 s timeout must meet a slower and slower target with fewer
/// requests in flight, not with re-sent batches that bury it. Over a canary run, the rest and
/// a rerun, every entry lands once, and the rerun sends nothing.
#[test]
#[ignore = "needs the loopback moto server: make test runs it"]
fn a_fifo_replay_to_a_slowing_queue_finishes_with_every_group_once() {
    let queue = format!("dlqf-slowing-{}.fifo", std::process::id());
    let dir = Dir::new();
    sqs(&["create", &queue]);
    let n = 500;
    let mut records = envelope_dump(&dir, n, &["orders"]);
    // Keys SQS would refuse as a MessageGroupId (a space, non-ASCII, over 128 characters).
    records[1]["original_key"] = Value::String("user 7 ünïcode".into());
    records[2]["original_key"] = Value::String("k".repeat(200));
    dir.create("e.jsonl", records.iter().map(|r| r.to_string() + "\n").collect::<String>());
    dir.command().args(["plan", "e.jsonl", "--profile", "envelope", "-o", "m.jsonl"]).ok();
    let target = format!("sqs://{queue}");
    let args = ["execute", "m.jsonl", "--target", &target, "--ledger", "l.db", "--quarantine", "file:q.jsonl", "--concurrency", "64", "--timeout", "2"];
    // Run 1, a canary: 50 of the one signature. Run 2: the rest, into a fuller queue.
    let canary = dir.command().args(args).args(["--canary", "50"]).run();
    let report: Value = serde_json::from_str(&canary.stdout).unwrap_or(Value::Null);
    assert_eq!((canary.code, report["outcomes"]["replayed"].as_u64()), (0, Some(50)), "{}\n{}", canary.stderr, report["outcomes"]);
    let run = dir.command().args(args).run();
    let report: Value = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    assert_eq!((run.code, report["outcomes"]["replayed"].as_u64()), (0, Some(n as u64 - 50)), "{}\n{}", run.stderr, report["outcomes"]);
    let got = receive(&queue);
    let mut bodies: Vec<u64> = got.iter().map(|m| serde_json::from_str::<Value>(m["body"].as_str().unwrap()).unwrap()["total"].as_u64().unwrap()).collect();
    bodies.sort();
    assert_eq!(bodies, (0..n as u64).collect::<Vec<_>>(), "each entry exactly once");
    let valid_group = |g: &str| !g.is_empty() && g.len() <= 128 && g.bytes().all(|b| (b'!'..=b'~').contains(&b));
    for message in &got {
        let group = message["attributes"]["MessageGroupId"].as_str().unwrap();
        assert!(valid_group(group), "SQS takes 1-128 ASCII letters, digits and punctuation as a MessageGroupId: {group:?}");
    }
    let again = dir.command().args(args).json();
    assert_eq!(again["outcomes"]["skipped_idempotent"], n);
    assert!(receive(&queue).is_empty(), "a rerun sends nothing");
}

/// Once the outage is over, a run through the proxy lands every key's message once and
/// nothing was quarantined (with max_attempts 1, a charge in the outage would show).
fn lands_after_the_outage(dir: &Dir, proxy: &Proxy, args: &[&str], queue: &str, keys: &[String]) {
    let run = dir.command().env("AWS_ENDPOINT_URL_SQS", &proxy.url).args(args).run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(nothing_quarantined(dir));
    each_received_once(queue, keys);
}

/// Every key's message received exactly once.
fn each_received_once(queue: &str, keys: &[String]) {
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    for message in receive(queue) {
        *got.entry(message["key"].as_str().unwrap().to_string()).or_default() += 1;
    }
    assert_eq!(got.len(), keys.len(), "every key received");
    assert!(keys.iter().all(|k| got.get(k) == Some(&1)), "each once");
}

/// An SQS endpoint where SendMessageBatch answers 503 while GetQueueUrl works: three runs
/// charge nothing (with max_attempts 1, a charge would show as a quarantined entry), and once
/// the outage ends everything lands once.
#[test]
#[ignore = "needs the loopback moto server: make test runs it"]
fn an_sqs_outage_charges_nothing_over_three_runs_and_all_land_after() {
    for n in [12, 300] {
        let queue = format!("dlqf-outage-{}-{n}", std::process::id());
        sqs(&["create", &queue]);
        let dir = Dir::new();
        let keys = crate::faults::manifest_with_max_attempts(&dir, n, 1);
        let proxy = Proxy::start(&std::env::var("AWS_ENDPOINT_URL").unwrap(), "SendMessageBatch");
        proxy.faults.lock().unwrap().outage = true;
        let target = format!("sqs://{queue}");
        let args = ["execute", "manifest.jsonl", "--target", &target, "--ledger", "l.db", "--quarantine", "file:q.jsonl", "--retries", "2"];
        for run_no in 1..=3 {
            let run = dir.command().env("AWS_ENDPOINT_URL_SQS", &proxy.url).args(args).run();
            assert_eq!(run.code, 4, "{n} entries, run {run_no}: {}", run.stderr);
            let report: Value = serde_json::from_str(&run.stdout).unwrap();
            assert_eq!((report["outcomes"]["replay_failed"].as_u64(), report["unfinished"].as_u64()), (Some(0), Some(n as u64)), "{report}");
        }
        assert!(proxy.faults.lock().unwrap().failed > 0);
        proxy.faults.lock().unwrap().outage = false;
        lands_after_the_outage(&dir, &proxy, &args, &queue, &keys);
    }
}

/// 300 messages taken, then every SendMessageBatch answers 503: the storm guard stops the
/// run within 150 failed requests, charges nothing, and the rest lands once it is over.
#[test]
#[ignore = "needs the loopback moto server: make test runs it"]
fn the_storm_guard_stops_an_sqs_outage_after_300_messages_within_150_failed_requests() {
    let queue = format!("dlqf-storm-{}", std::process::id());
    sqs(&["create", &queue]);
    let dir = Dir::new();
    let keys = crate::faults::manifest_with_max_attempts(&dir, 600, 1);
    let proxy = Proxy::start(&std::env::var("AWS_ENDPOINT_URL").unwrap(), "SendMessageBatch");
    proxy.faults.lock().unwrap().outage_after = Some(300);
    let target = format!("sqs://{queue}");
    let args = ["execute", "manifest.jsonl", "--target", &target, "--ledger", "l.db", "--quarantine", "file:q.jsonl", "--concurrency", "8"];
    let run = dir.command().env("AWS_ENDPOINT_URL_SQS", &proxy.url).args(args).run();
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("storm guard"), "{}", run.stderr);
    let failed = proxy.faults.lock().unwrap().failed;
    assert!(failed <= 150, "{failed} failed requests after the outage began");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["outcomes"]["replay_failed"], 0, "{report}");
    assert!(report["outcomes"]["replayed"].as_u64().unwrap() >= 300, "{report}");
    proxy.faults.lock().unwrap().outage_after = None;
    lands_after_the_outage(&dir, &proxy, &args, &queue, &keys);
}

/// Keys in failure order to a FIFO queue with --ordered at --concurrency 16: each group's
/// messages are received in their original order (unordered, the failure order shows).
#[test]
#[ignore = "needs the loopback moto server: make test runs it"]
fn ordered_replay_to_a_fifo_queue_keeps_each_groups_order() {
    for ordered in [true, false] {
        let queue = format!("dlqf-ordered-{}-{ordered}.fifo", std::process::id());
        sqs(&["create", &queue]);
        let dir = Dir::new();
        let counts = crate::ordered::failure_order_dump(&dir, 30, 3, "q");
        let target = format!("sqs://{queue}");
        let mut args = vec!["execute", "m.jsonl", "--target", &target, "--ledger", "l.db", "--quarantine", "file:q.jsonl", "--concurrency", "16"];
        if ordered {
            args.push("--ordered");
        }
        let run = dir.command().args(&args).run();
        assert_eq!(run.code, 0, "{}", run.stderr);
        let mut by_group: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for message in receive(&queue) {
            let body: Value = serde_json::from_str(message["body"].as_str().unwrap()).unwrap();
            let group = message["attributes"]["MessageGroupId"].as_str().unwrap().to_string();
            assert_eq!(group, body["order_id"], "grouped by the origin key");
            by_group.entry(group).or_default().push(body["seq"].as_u64().unwrap());
        }
        assert_eq!(by_group.len(), counts.len());
        let out_of_order = by_group.values().filter(|s| s.windows(2).any(|w| w[0] > w[1])).count();
        if ordered {
            for (group, seqs) in &by_group {
                assert_eq!(*seqs, (0..counts[group] as u64).collect::<Vec<_>>(), "{group}: in order, once each");
            }
        } else {
            assert!(out_of_order > 5, "unordered: {out_of_order} groups out of order");
        }
    }
}
