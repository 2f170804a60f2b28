//! The compliance suite every target and quarantine sink passes: each message arrives with
//! its key and its record, poison lines arrive once, a rerun adds nothing (amqp:// and
//! redis:// run it in brokers.rs, beside their servers' other tests).

use std::collections::BTreeSet;

use serde_json::Value;

use crate::stage::Stage;
use crate::util::{envelope_dump, vision_line, Dir};

/// What a target received: (key, record) pairs.
pub type Received = Vec<(String, Value)>;

pub fn run_through(dir: &Dir, target: &str, quarantine: &str) -> (Vec<Value>, String) {
    let text: String = (0..12).map(|i| vision_line(&format!("cap-{i}"), "inference", if i % 3 == 0 { "open" } else { "timeout" }, "det-v8.0", "2026-10-01T00:00:00Z", 0) + "\n").collect();
    dir.create("dlq.jsonl", text);
    dir.create("policy.toml", "cleared_reasons = [\"timeout\"]\n");
    dir.command().args(["plan", "dlq.jsonl", "--policy", "policy.toml", "-o", "m.jsonl"]).ok();
    let entries: Vec<Value> = dir.read("m.jsonl").lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    let args = ["execute", "m.jsonl", "--target", target, "--ledger", "l.db", "--quarantine", quarantine];
    let first = dir.command().args(args).ok();
    let second = dir.command().args(args).ok();
    let o: Value = serde_json::from_str(&second).unwrap();
    assert_eq!(o["outcomes"]["skipped_idempotent"], 12, "{first}");
    (entries, first)
}

pub fn check(entries: &[Value], received: Received) {
    let want: BTreeSet<String> = entries.iter().filter(|e| e["decision"] == "replay").map(|e| e["key"].as_str().unwrap().to_string()).collect();
    let got: BTreeSet<String> = received.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(received.len(), want.len(), "each replay delivered once");
    assert_eq!(got, want);
    for (key, record) in received {
        let entry = entries.iter().find(|e| e["key"] == key.as_str()).unwrap();
        assert_eq!(record, entry["record"]);
    }
}

pub fn check_quarantine(entries: &[Value], lines: Vec<Value>) {
    let want: BTreeSet<&str> = entries.iter().filter(|e| e["decision"] != "replay").map(|e| e["key"].as_str().unwrap()).collect();
    assert_eq!(lines.len(), want.len(), "each poison entry once");
    for line in &lines {
        assert!(want.contains(line["key"].as_str().unwrap()));
        for field in ["key", "id", "decision", "detail", "signature", "attempts", "record"] {
            assert!(line.get(field).is_some(), "quarantine line lacks {field}: {line}");
        }
    }
}

fn file_lines(dir: &Dir, name: &str) -> Vec<Value> {
    dir.read(name).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn http_target_and_http_quarantine() {
    let dir = Dir::new();
    let (stage, sink) = (Stage::start(), Stage::start());
    let (entries, _) = run_through(&dir, &stage.url, &sink.url);
    let received = stage.seen.lock().unwrap().requests.iter().map(|(k, b)| (k.clone(), serde_json::from_str(b).unwrap())).collect();
    check(&entries, received);
    let lines: Vec<Value> = sink.seen.lock().unwrap().requests.iter().map(|(k, b)| {
        let v: Value = serde_json::from_str(b).unwrap();
        assert_eq!(v["key"], k.as_str(), "the quarantine POST carries the key as Idempotency-Key");
        v
    }).collect();
    check_quarantine(&entries, lines);
}

#[test]
fn file_target_and_file_quarantine() {
    let dir = Dir::new();
    let (entries, _) = run_through(&dir, "file:out.jsonl", "file:q.jsonl");
    let received = file_lines(&dir, "out.jsonl").into_iter().map(|v| (v["key"].as_str().unwrap().to_string(), v["record"].clone())).collect();
    check(&entries, received);
    check_quarantine(&entries, file_lines(&dir, "q.jsonl"));
}

#[test]
fn exec_target_gets_the_record_on_stdin_and_the_key_in_the_environment_without_a_shell() {
    let dir = Dir::new();
    dir.create(
        "sink.py",
        "import json, os, sys\nrecord = json.load(sys.stdin)\nwith open(sys.argv[1], 'a') as f:\n    f.write(json.dumps({'key': os.environ['DLQF_IDEMPOTENCY_KEY'], 'record': record}) + '\\n')\n",
    );
    // A `;` would start a second command in a shell; here it is just an argument.
    let target = "exec:python3 sink.py got.jsonl;touch pwned".to_string();
    let (entries, _) = run_through(&dir, &target, "file:q.jsonl");
    assert!(!dir.join("pwned").exists());
    let received = file_lines(&dir, "got.jsonl;touch").into_iter().map(|v| (v["key"].as_str().unwrap().to_string(), v["record"].clone())).collect::<Received>();
    check(&entries, received);
    check_quarantine(&entries, file_lines(&dir, "q.jsonl"));
}

#[test]
fn http_and_exec_send_the_envelopes_payload_with_its_origin_key_and_headers() {
    let dir = Dir::new();
    let records = envelope_dump(&dir, 5, &["orders"]);
    let by_key: std::collections::HashMap<String, Value> = dir
        .read("m.jsonl")
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| (e["key"].as_str().unwrap().to_string(), e["record"].clone()))
        .collect();
    let stage = Stage::start();
    dir.command().args(["execute", "m.jsonl", "--target", &stage.url, "--ledger", "l.db", "--quarantine", "file:q.jsonl"]).ok();
    let seen = stage.seen.lock().unwrap();
    assert_eq!(seen.requests.len(), 5);
    for (key, body) in &seen.requests {
        let record = &by_key[key];
        assert_eq!(body, &record["original_value"].to_string(), "the body is the original value, compact, keys in order");
        let mut origin = seen.origin[key].clone();
        origin.sort();
        let mut want: Vec<(String, String)> = record["original_headers"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(name, value)| (format!("x-dlqf-origin-header-{}", name.to_lowercase()), value.as_str().unwrap().to_string()))
            .collect();
        if let Some(k) = record["original_key"].as_str() {
            want.push(("x-dlqf-origin-key".to_string(), k.to_string()));
        }
        want.sort();
        assert_eq!(origin, want);
    }
    drop(seen);

    dir.create(
        "sink.py",
        "import json, os, sys\npayload = json.load(sys.stdin)\nwith open('got.jsonl', 'a') as f:\n    f.write(json.dumps({'key': os.environ.get('DLQF_ORIGIN_KEY'), 'headers': json.loads(os.environ['DLQF_ORIGIN_HEADERS']), 'payload': payload}) + '\\n')\n",
    );
    dir.command().args(["execute", "m.jsonl", "--target", "exec:python3 sink.py", "--ledger", "l2.db", "--quarantine", "file:q2.jsonl"]).ok();
    let mut got = file_lines(&dir, "got.jsonl");
    got.sort_by_key(|g| g["payload"]["order_id"].as_str().unwrap().to_string());
    for (g, r) in got.iter().zip(&records) {
        assert_eq!(g["payload"], r["original_value"]);
        assert_eq!(g["key"], r["original_key"]);
        assert_eq!(g["headers"], r["original_headers"]);
    }
}

#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn kafka_target_and_kafka_quarantine() {
    let dir = Dir::new();
    let broker = crate::kafka::Broker::start(&["replays", "poison"]);
    let (entries, _) = run_through(&dir, &broker.url(Some("replays")), &broker.url(Some("poison")));
    let value = |r: &Value| serde_json::from_str::<Value>(r["value"].as_str().unwrap()).unwrap();
    let received = broker.read("replays").iter().map(|r| (r["headers"]["dlqf-idempotency-key"].as_str().unwrap().to_string(), value(r))).collect();
    check(&entries, received);
    let poison = broker.read("poison");
    assert!(poison.iter().all(|r| r["key"] == r["headers"]["dlqf-idempotency-key"]), "a poison record is keyed by its idempotency key");
    check_quarantine(&entries, poison.iter().map(value).collect());
}

#[test]
#[ignore = "needs the loopback moto server: make test runs it"]
fn sqs_target_and_sqs_quarantine() {
    let dir = Dir::new();
    let (replays, poison) = (format!("dlqf-compliance-{}", std::process::id()), format!("dlqf-poison-{}", std::process::id()));
    for queue in [&replays, &poison] {
        let out = std::process::Command::new(crate::util::python()).arg(crate::util::support("sqs.py")).args(["create", queue]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let (entries, _) = run_through(&dir, &format!("sqs://{replays}"), &format!("sqs://{poison}"));
    let receive = |queue: &str| -> Vec<Value> {
        let out = std::process::Command::new(crate::util::python()).arg(crate::util::support("sqs.py")).args(["receive", queue]).output().unwrap();
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    let body = |m: &Value| serde_json::from_str::<Value>(m["body"].as_str().unwrap()).unwrap();
    let received = receive(&replays).iter().map(|m| (m["key"].as_str().unwrap().to_string(), body(m))).collect();
    check(&entries, received);
    check_quarantine(&entries, receive(&poison).iter().map(body).collect());
}
