//! Replay back to RabbitMQ (amqp://) and to Sidekiq's Redis (redis://), against real servers
//! `make test` starts on loopback, read back with independent clients (pika, redis-py): the
//! dead letters of RabbitMQ, NServiceBus and MassTransit published byte for byte with their
//! properties, Sidekiq jobs pushed as Sidekiq's retry pushes them; the compliance suite; a
//! dead server and an outage charge nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

use crate::util::{nothing_quarantined, python, support, vision_line, Dir};

/// Held by each test that uses Redis: an outage test pauses the writes of the whole server.
static REDIS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn amqp_url() -> String {
    std::env::var("DLQF_AMQP_URL").expect("DLQF_AMQP_URL is unset: run the tests through `make test`, which starts RabbitMQ")
}

fn redis_url() -> String {
    std::env::var("DLQF_REDIS_URL").expect("DLQF_REDIS_URL is unset: run the tests through `make test`, which starts Redis")
}

/// A vhost of its own for a test (so queues of one test never meet another's), with its URL.
fn vhost(name: &str) -> String {
    let brokers = std::env::var("DLQF_BROKERS_DIR").expect("DLQF_BROKERS_DIR is unset: run the tests through `make test`");
    let out = Command::new("scripts/brokers.sh").current_dir(env!("CARGO_MANIFEST_DIR")).args(["vhost", &brokers, name]).output().unwrap();
    assert!(out.status.success(), "brokers.sh vhost: {}", String::from_utf8_lossy(&out.stderr));
    format!("{}/{name}", amqp_url().trim_end_matches('/'))
}

fn helper(script: &str, args: &[&str]) -> String {
    let out = Command::new(python()).arg(support(script)).args(args).output().unwrap();
    assert!(out.status.success(), "{script} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Every message on `queue`, as pika reads it (and takes it off).
fn read_queue(url: &str, queue: &str) -> Vec<Value> {
    helper("amqp.py", &["read", url, queue]).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn write_layout(dir: &Dir, layout: &str, n: usize) -> Value {
    helper("real_dumps.py", &[layout, dir.join(layout).to_str().unwrap(), &n.to_string(), "31"]);
    dir.create("all.toml", "clear_all = true\nmax_attempts = 100\n");
    dir.command().args(["plan", layout, "--profile", layout, "--policy", "all.toml", "-o", "m.jsonl"]).ok();
    serde_json::from_str(&dir.read(&format!("{layout}.truth.json"))).unwrap()
}

fn execute(dir: &Dir, target: &str, extra: &[&str]) -> (crate::util::Run, Value) {
    let run = dir.command().args(["execute", "m.jsonl", "--target", target, "--ledger", "l.db", "--quarantine", "file:q.jsonl"]).args(extra).run();
    let report = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    (run, report)
}

/// Each message read back is the dead letter its generator wrote, sent back as the layout's
/// profile says: the payload's bytes, the original properties and headers (those of the
/// dead-lettering left out) with `dlqf-idempotency-key`, persistent; every one once.
fn check_messages(truth: &Value, manifest: &str, messages: Vec<Value>, exchange_of: impl Fn(&Value) -> String) {
    let ids: BTreeMap<String, String> =
        manifest.lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()).map(|e| (e["key"].as_str().unwrap().to_string(), e["id"].as_str().unwrap().to_string())).collect();
    let mut seen = BTreeSet::new();
    for m in &messages {
        let mut properties = m["properties"].clone();
        let key = properties["headers"].as_object_mut().unwrap().remove("dlqf-idempotency-key").expect("the idempotency key header");
        let id = &ids[key.as_str().unwrap()];
        assert!(seen.insert(id.clone()), "{id} arrived twice");
        let want = &truth["records"][id];
        assert_eq!(m["body"], want["value"], "{id}: the payload's bytes");
        assert_eq!(properties["delivery_mode"], 2, "{id}: persistent");
        let mut expected = want["properties"].clone();
        expected["delivery_mode"] = Value::from(2);
        // The broker leaves out what a publisher did not set; the original's zero priority too.
        assert_eq!(properties["headers"], expected["headers"], "{id}: headers");
        for name in ["content_type", "message_id", "timestamp", "type"] {
            assert_eq!(properties[name], expected[name], "{id}: {name}");
        }
        assert_eq!(m["exchange"].as_str().unwrap(), exchange_of(want), "{id}: the exchange");
        if let Some(key) = want["key"].as_str() {
            assert_eq!(crate::real_dumps::b64(&m["routing_key"]), Value::from(key), "{id}: the routing key");
        }
    }
    assert_eq!(seen.len(), ids.len(), "every entry once");
}

#[test]
#[ignore = "needs RabbitMQ: make test runs it"]
fn rabbitmq_nservicebus_and_masstransit_dead_letters_go_back_byte_for_byte() {
    // RabbitMQ's own dead letters: to the exchange and routing key of their first death.
    let dir = Dir::new();
    let url = vhost("replay-rabbitmq");
    let truth = write_layout(&dir, "rabbitmq", 120);
    helper("amqp.py", &["setup", &url, "shop:direct:orders.created:q-orders", "shop:direct:billing.charge:q-billing", "retry:direct:orders.created:q-orders", "retry:direct:billing.charge:q-billing"]);
    let (run, report) = execute(&dir, &url, &["--concurrency", "16"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(report["outcomes"]["replayed"], 120);
    let messages = [read_queue(&url, "q-orders"), read_queue(&url, "q-billing")].concat();
    check_messages(&truth, &dir.read("m.jsonl"), messages, |want| want["topic"].as_str().unwrap().to_string());

    // NServiceBus: the default exchange, routed by the failed queue's name.
    let dir = Dir::new();
    let url = vhost("replay-nservicebus");
    let truth = write_layout(&dir, "nservicebus", 60);
    helper("amqp.py", &["setup", &url, ":direct:Sales:Sales", ":direct:Billing:Billing"]);
    assert_eq!(execute(&dir, &url, &[]).0.code, 0);
    check_messages(&truth, &dir.read("m.jsonl"), [read_queue(&url, "Sales"), read_queue(&url, "Billing")].concat(), |_| String::new());

    // MassTransit: the exchange of the queue that faulted it, bound to that queue (fanout).
    let dir = Dir::new();
    let url = vhost("replay-masstransit");
    let truth = write_layout(&dir, "masstransit", 60);
    helper("amqp.py", &["setup", &url, "orders:fanout::orders", "payments:fanout::payments"]);
    assert_eq!(execute(&dir, &url, &[]).0.code, 0);
    check_messages(&truth, &dir.read("m.jsonl"), [read_queue(&url, "orders"), read_queue(&url, "payments")].concat(), |want| want["topic"].as_str().unwrap().to_string());
}

#[test]
#[ignore = "needs Redis: make test runs it"]
fn sidekiq_jobs_go_back_on_their_queues_as_sidekiqs_retry_pushes_them() {
    let dir = Dir::new();
    let _redis = REDIS.lock().unwrap_or_else(|e| e.into_inner());
    let url = format!("{}/1", redis_url());
    helper("redis_jobs.py", &["flush", &url]);
    let truth = write_layout(&dir, "sidekiq", 80);
    let (run, report) = execute(&dir, &url, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(report["outcomes"]["replayed"], 80);
    let read: Value = serde_json::from_str(&helper("redis_jobs.py", &["read", &url])).unwrap();
    assert_eq!(read["queues"], serde_json::json!(["critical", "default"]));
    let mut seen = 0;
    for (queue, jobs) in read["jobs"].as_object().unwrap() {
        for job in jobs.as_array().unwrap() {
            let jid = job["jid"].as_str().unwrap();
            let want = &truth["records"][jid];
            assert_eq!(want["queue"], queue.as_str(), "{jid}: on its own queue");
            let mut original = want["job"].clone();
            // As Sidekiq's SortedEntry#retry and Client#atomic_push change a dead job.
            original["retry_count"] = Value::from(original["retry_count"].as_i64().unwrap() - 1);
            let mut got = job.clone();
            let enqueued = got.as_object_mut().unwrap().remove("enqueued_at").unwrap();
            original.as_object_mut().unwrap().remove("enqueued_at");
            assert!(got.as_object_mut().unwrap().remove("dlqf-idempotency-key").is_some());
            assert_eq!(got, original, "{jid}: the job as it was in the dead set");
            // Sidekiq 8's integer milliseconds stay integers, Sidekiq 7's float seconds floats.
            assert_eq!(enqueued.is_f64(), want["job"]["created_at"].is_f64(), "{jid}: {enqueued}");
            seen += 1;
        }
    }
    assert_eq!(seen, 80, "every job once");
}

/// The compliance suite's records (vision's, sent whole) through an exchange and a queue the
/// URL names.
#[test]
#[ignore = "needs RabbitMQ and Redis: make test runs it"]
fn amqp_and_redis_targets_pass_the_compliance_suite() {
    let url = vhost("compliance");
    helper("amqp.py", &["setup", &url, "replays:fanout::replays"]);
    let _redis = REDIS.lock().unwrap_or_else(|e| e.into_inner());
    let redis = format!("{}/2/replays", redis_url());
    helper("redis_jobs.py", &["flush", &format!("{}/2", redis_url())]);
    for (target, read) in [(format!("{url}/replays"), "amqp"), (redis.clone(), "redis")] {
        let dir = Dir::new();
        let (entries, _) = crate::targets::run_through(&dir, &target, "file:q.jsonl");
        let received = match read {
            "amqp" => read_queue(&url, "replays")
                .iter()
                .map(|m| {
                    let body = crate::real_dumps::unb64(m["body"].as_str().unwrap());
                    (m["properties"]["headers"]["dlqf-idempotency-key"].as_str().unwrap().to_string(), serde_json::from_slice(&body).unwrap())
                })
                .collect(),
            _ => {
                let read: Value = serde_json::from_str(&helper("redis_jobs.py", &["read", &format!("{}/2", redis_url())])).unwrap();
                read["jobs"]["replays"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|job| {
                        let mut record = job.clone();
                        let key = record.as_object_mut().unwrap().remove("dlqf-idempotency-key").unwrap();
                        record.as_object_mut().unwrap().remove("enqueued_at");
                        (key.as_str().unwrap().to_string(), record)
                    })
                    .collect()
            }
        };
        crate::targets::check(&entries, received);
        crate::targets::check_quarantine(&entries, dir.read("q.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect());
    }
}

/// `n` vision entries (max_attempts 1: one charge shows in the quarantine on the next run).
fn vision_manifest(dir: &Dir, n: usize) {
    let text: String = (0..n).map(|i| vision_line(&format!("c-{i:04}"), "inference", "timeout", "v1", "2026-10-01T00:00:00Z", 0) + "\n").collect();
    dir.create("dlq.jsonl", text);
    dir.create("p.toml", "clear_all = true\nmax_attempts = 1\n");
    dir.command().args(["plan", "dlq.jsonl", "--policy", "p.toml", "-o", "m.jsonl"]).ok();
}

/// A server nobody listens for stops the run at once; a broker that refuses every message
/// (a queue full with reject-publish nacks them) or holds writes (a paused Redis) is an outage:
/// three runs charge nothing, and once it is over everything lands.
#[test]
#[ignore = "needs RabbitMQ and Redis: make test runs it"]
fn a_dead_server_and_an_outage_charge_nothing() {
    let _redis = REDIS.lock().unwrap_or_else(|e| e.into_inner());
    let url = vhost("outage");
    let redis = format!("{}/3", redis_url());
    helper("redis_jobs.py", &["flush", &redis]);
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    for server in ["amqp", "redis"] {
        let (live, dead) = match server {
            "amqp" => (format!("{url}/replays"), format!("amqp://guest:guest@127.0.0.1:{dead_port}/%2F/replays")),
            _ => (format!("{redis}/replays"), format!("redis://127.0.0.1:{dead_port}/3/replays")),
        };
        let dir = Dir::new();
        vision_manifest(&dir, 40);
        let started = std::time::Instant::now();
        let (run, report) = execute(&dir, &dead, &[]);
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{dead}: a refused connection stops the run at once");
        assert_eq!((run.code, report["outcomes"]["replay_failed"].as_u64()), (4, Some(0)), "{dead}: {}", run.stderr);
        assert!(run.stderr.contains("the target is down"), "{}", run.stderr);

        match server {
            "amqp" => helper("amqp.py", &["refuse", &url, "replays", "replays"]),
            _ => helper("redis_jobs.py", &["pause", &redis, "600000"]),
        };
        for run_no in 1..=3 {
            let (run, report) = execute(&dir, &live, &["--timeout", "0.5", "--retries", "2"]);
            assert_eq!(run.code, 4, "{live}, run {run_no}: {}", run.stderr);
            assert_eq!(report["outcomes"]["replay_failed"], 0, "{live}: {report}");
        }
        match server {
            "amqp" => helper("amqp.py", &["accept", &url, "replays", "replays"]),
            _ => helper("redis_jobs.py", &["unpause", &redis]),
        };
        let (run, _) = execute(&dir, &live, &[]);
        assert_eq!(run.code, 0, "{live}: {}", run.stderr);
        assert!(nothing_quarantined(&dir), "{live}: an outage poisons nothing");
        // Every entry arrived (at least once: a write the outage held may land when it ends,
        // under the same idempotency key).
        let keys: BTreeSet<String> = match server {
            "amqp" => read_queue(&url, "replays").iter().map(|m| m["properties"]["headers"]["dlqf-idempotency-key"].as_str().unwrap().to_string()).collect(),
            _ => {
                let read: Value = serde_json::from_str(&helper("redis_jobs.py", &["read", &redis])).unwrap();
                read["jobs"]["replays"].as_array().unwrap().iter().map(|j| j["dlqf-idempotency-key"].as_str().unwrap().to_string()).collect()
            }
        };
        assert_eq!(keys.len(), 40, "{live}");
    }
}

/// 1,500 messages taken, then the broker nacks every one (the queue full, reject-publish): the
/// storm guard stops the run within 150 failed publishes at --concurrency 8, nothing is charged,
/// and the rest lands once the queue takes them. A second queue on the fanout exchange is
/// given every publish, refused or not, so it counts the refused ones.
#[test]
#[ignore = "needs RabbitMQ and Redis: make test runs it"]
fn the_storm_guard_stops_an_amqp_outage_after_1500_messages_within_150_failed_publishes() {
    let url = vhost("storm");
    helper("amqp.py", &["refuse", &url, "replays", "replays", "1500"]);
    helper("amqp.py", &["accept", &url, "replays", "tally"]);
    let dir = Dir::new();
    vision_manifest(&dir, 2000);
    let target = format!("{url}/replays");
    let (run, report) = execute(&dir, &target, &["--concurrency", "8"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("storm guard"), "{}", run.stderr);
    assert_eq!((report["outcomes"]["replayed"].as_u64(), report["outcomes"]["replay_failed"].as_u64()), (Some(1500), Some(0)), "{report}");
    let failed = read_queue(&url, "tally").len() - 1500;
    assert!(failed <= 150, "{failed} publishes refused after the outage began");
    let key = |m: &Value| m["properties"]["headers"]["dlqf-idempotency-key"].as_str().unwrap().to_string();
    let first: Vec<String> = read_queue(&url, "replays").iter().map(key).collect();
    assert_eq!(first.len(), 1500);

    helper("amqp.py", &["accept", &url, "replays", "replays"]);
    let (run, report) = execute(&dir, &target, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(report["outcomes"]["replayed"], 500, "{report}");
    assert!(nothing_quarantined(&dir), "an outage poisons nothing");
    let all: Vec<String> = first.into_iter().chain(read_queue(&url, "replays").iter().map(key)).collect();
    let distinct: BTreeSet<&String> = all.iter().collect();
    assert_eq!((all.len(), distinct.len()), (2000, 2000), "every entry once");
}
