//! Replay to Kafka against a real Kafka-protocol broker on loopback (librdkafka's mock
//! cluster, in a Python process started here), read back by a real Kafka client: topic, key,
//! value, headers and partition, exactly once, kill -9, an unreachable broker.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{envelope_dump, nothing_quarantined, python, support, Dir};

/// The mock cluster, running while this lives.
pub struct Broker {
    child: Child,
    pub bootstrap: String,
}

impl Broker {
    pub fn start(topics: &[&str]) -> Broker {
        let mut child = Command::new(python()).arg(support("kafka.py")).arg("serve").args(topics).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        let bootstrap = line.trim().strip_prefix("BOOTSTRAP ").unwrap_or_else(|| panic!("kafka.py serve said {line:?}")).to_string();
        Broker { child, bootstrap }
    }

    pub fn url(&self, topic: Option<&str>) -> String {
        match topic {
            Some(t) => format!("kafka://{}/{t}", self.bootstrap),
            None => format!("kafka://{}", self.bootstrap),
        }
    }

    /// Every record on `topic` (markers left out), as a real consumer reads it.
    pub fn read(&self, topic: &str) -> Vec<Value> {
        read_topic(&self.bootstrap, topic)
    }

    /// The partitions librdkafka's murmur2_random partitioner (Java's default) picks.
    pub fn partitions_of(&self, keys: &[&str]) -> HashMap<String, i64> {
        let out = Command::new(python()).arg(support("kafka.py")).args(["partitions", &self.bootstrap]).args(keys).output().unwrap();
        assert!(out.status.success(), "kafka.py partitions: {}", String::from_utf8_lossy(&out.stderr));
        let chosen: HashMap<String, Value> = serde_json::from_slice(&out.stdout).unwrap();
        chosen.into_iter().map(|(k, v)| (k, v.as_i64().unwrap())).collect()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every record on `topic` (markers left out), as a real consumer at `bootstrap` reads it.
fn read_topic(bootstrap: &str, topic: &str) -> Vec<Value> {
    let out = Command::new(python()).arg(support("kafka.py")).args(["read", bootstrap, topic]).output().unwrap();
    assert!(out.status.success(), "kafka.py read: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn execute(dir: &Dir, target: &str, extra: &[&str]) -> crate::util::Run {
    dir.command().args(["execute", "m.jsonl", "--target", target, "--ledger", "l.db", "--quarantine", "file:q.jsonl"]).args(extra).run()
}

/// Records read back, by their dlqf-idempotency-key header.
fn by_key(records: Vec<Value>) -> BTreeMap<String, Vec<Value>> {
    let mut all: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for r in records {
        all.entry(r["headers"]["dlqf-idempotency-key"].as_str().unwrap().to_string()).or_default().push(r);
    }
    all
}

#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn replays_land_on_their_original_topic_key_partition_and_headers_once() {
    let dir = Dir::new();
    let broker = Broker::start(&["orders", "payments"]);
    let records = envelope_dump(&dir, 60, &["orders", "payments"]);
    let run = execute(&dir, &broker.url(None), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["outcomes"]["replayed"], 60);

    let keys: Vec<String> = (0..60).filter(|i| i % 5 != 4).map(|i| format!("ord-{i}")).collect();
    let java = broker.partitions_of(&keys.iter().map(String::as_str).collect::<Vec<_>>());
    let mut seen = std::collections::BTreeSet::new();
    for topic in ["orders", "payments"] {
        for record in broker.read(topic) {
            let i: usize = serde_json::from_str::<Value>(record["value"].as_str().unwrap()).unwrap()["total"].as_u64().unwrap() as usize;
            let original = &records[i];
            assert_eq!(original["original_topic"], topic);
            assert_eq!(record["value"].as_str().unwrap(), original["original_value"].to_string(), "the payload, compact, keys in order");
            assert_eq!(record["key"], original["original_key"]);
            assert_eq!(record["headers"]["trace_id"], original["original_headers"]["trace_id"]);
            assert_eq!(record["headers"]["source"], "checkout");
            if let Some(key) = original["original_key"].as_str() {
                assert_eq!(record["partition"].as_i64(), Some(java[key]), "{key}: the partition Java's producer picks");
            }
            assert!(seen.insert(i), "entry {i} arrived twice");
        }
    }
    assert_eq!(seen.len(), 60, "every entry, once");
    // A rerun sends nothing.
    let again = execute(&dir, &broker.url(None), &[]);
    assert_eq!(serde_json::from_str::<Value>(&again.stdout).unwrap()["outcomes"]["skipped_idempotent"], 60);
    assert_eq!(broker.read("orders").len() + broker.read("payments").len(), 60);
}

/// Thousands in flight at once, to every partition of several topics from the first moment
/// (leaders asked for all at once, batches filling side by side): every entry once.
#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn thousands_in_flight_at_once_land_once_each() {
    let dir = Dir::new();
    let topics = ["orders", "payments", "shipments", "users"];
    let broker = Broker::start(&topics);
    envelope_dump(&dir, 3000, &topics);
    let run = execute(&dir, &broker.url(None), &["--concurrency", "2048", "--timeout", "20"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!((report["outcomes"]["replayed"].as_u64(), report["unfinished"].as_u64()), (Some(3000), Some(0)));
    let read: usize = topics.iter().map(|t| broker.read(t).len()).sum();
    assert_eq!(read, 3000);
}

#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn an_unreachable_broker_poisons_nothing_and_the_next_run_delivers_everything_once() {
    let dir = Dir::new();
    let broker = Broker::start(&["orders"]);
    envelope_dump(&dir, 40, &["orders"]);
    let dead = format!("kafka://127.0.0.1:{}", std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
    // With the default timeout (10 s) and retries: a refused port proves the broker down at once.
    let started = Instant::now();
    let run = execute(&dir, &dead, &[]);
    assert!(started.elapsed() < Duration::from_secs(10), "stopped after {:?}", started.elapsed());
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("the target is down"), "{}", run.stderr);
    assert!(run.stderr.contains("kafka://127.0.0.1"), "the broker is named: {}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!((report["outcomes"]["replay_failed"].as_u64(), report["outcomes"]["poison_attempts"].as_u64()), (Some(0), Some(0)), "{report}");
    assert_eq!(report["unfinished"], 40);
    let run = execute(&dir, &broker.url(None), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let read = by_key(broker.read("orders"));
    assert_eq!(read.len(), 40);
    assert!(read.values().all(|r| r.len() == 1));
    assert!(nothing_quarantined(&dir));
}

#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn killed_mid_run_and_rerun_loses_nothing_and_repeats_at_most_the_in_flight() {
    let dir = Dir::new();
    let broker = Broker::start(&["orders"]);
    envelope_dump(&dir, 3000, &["orders"]);
    let args = ["execute", "m.jsonl", "--target", &broker.url(None), "--ledger", "l.db", "--quarantine", "file:q.jsonl", "--concurrency", "8", "--rate", "1000"];
    let mut child = Command::new(env!("CARGO_BIN_EXE_dlqf")).current_dir(dir.path()).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(1200));
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(3), "killed mid-run");
    let sent = broker.read("orders").len();
    assert!(sent > 0 && sent < 3000, "killed mid-run: {sent} sent");
    let rerun = dir.command().args(args).run();
    assert_eq!(rerun.code, 0, "{}", rerun.stderr);
    let read = by_key(broker.read("orders"));
    assert_eq!(read.len(), 3000, "nothing lost");
    let twice = read.values().filter(|r| r.len() > 1).count();
    assert!(twice <= 8, "{twice} entries sent twice, more than --concurrency 8");
}

#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn topics_the_broker_creates_on_demand_are_created_and_replayed_once() {
    // No topic exists yet: like a Kafka broker with auto.create.topics.enable, the mock
    // cluster creates a topic when a client asks for it by name.
    let dir = Dir::new();
    let broker = Broker::start(&[]);
    envelope_dump(&dir, 30, &["orders", "payments"]);
    let run = execute(&dir, &broker.url(None), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["outcomes"]["replayed"], 30, "{report}");
    let read: BTreeMap<String, Vec<Value>> = by_key([broker.read("orders"), broker.read("payments")].concat());
    assert_eq!(read.len(), 30);
    assert!(read.values().all(|r| r.len() == 1), "each once");
}

/// The mock cluster steered through librdkafka's mock API (`kafka.py serve-faulty`): its
/// brokers answer metadata while every Produce request fails with NOT_ENOUGH_REPLICAS, as a
/// cluster that lost its replicas does.
struct FaultyBroker {
    child: Child,
    bootstrap: String,
    answers: BufReader<std::process::ChildStdout>,
}

impl FaultyBroker {
    fn start(topics: &[&str]) -> FaultyBroker {
        let mut child = Command::new(python()).arg(support("kafka.py")).arg("serve-faulty").args(topics).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
        let mut answers = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        answers.read_line(&mut line).unwrap();
        let bootstrap = line.trim().strip_prefix("BOOTSTRAP ").unwrap_or_else(|| panic!("kafka.py serve-faulty said {line:?}")).to_string();
        FaultyBroker { child, bootstrap, answers }
    }

    /// Sends a command (see kafka.py) and returns its answer.
    fn tell(&mut self, command: &str) -> String {
        use std::io::Write;
        writeln!(self.child.stdin.as_mut().unwrap(), "{command}").unwrap();
        let mut line = String::new();
        self.answers.read_line(&mut line).unwrap();
        line.trim().to_string()
    }

    fn url(&self) -> String {
        format!("kafka://{}", self.bootstrap)
    }

    fn read(&self, topic: &str) -> Vec<Value> {
        read_topic(&self.bootstrap, topic)
    }
}

impl Drop for FaultyBroker {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `n` envelope entries to `orders`, each quarantined once its key failed once (so one charge
/// shows in the quarantine on the next run).
fn charge_once_manifest(dir: &Dir, n: usize) {
    envelope_dump(dir, n, &["orders"]);
    dir.create("p.toml", "clear_all = true\nmax_attempts = 1\n");
    dir.command().args(["plan", "e.jsonl", "--profile", "envelope", "--policy", "p.toml", "-o", "m.jsonl"]).ok();
}

/// Brokers that answer metadata but fail every Produce request: three runs charge nothing,
/// and once they take records again every entry lands once and nothing is quarantined.
#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn a_cluster_failing_every_produce_charges_nothing_over_three_runs_and_all_land_after() {
    for n in [12, 300] {
        let dir = Dir::new();
        let mut broker = FaultyBroker::start(&["orders"]);
        charge_once_manifest(&dir, n);
        assert_eq!(broker.tell("outage"), "OK");
        for run_no in 1..=3 {
            let run = execute(&dir, &broker.url(), &["--retries", "2"]);
            assert_eq!(run.code, 4, "{n} entries, run {run_no}: {}", run.stderr);
            let report: Value = serde_json::from_str(&run.stdout).unwrap();
            assert_eq!((report["outcomes"]["replay_failed"].as_u64(), report["unfinished"].as_u64()), (Some(0), Some(n as u64)), "{report}");
        }
        assert!(broker.tell("failed").parse::<usize>().unwrap() > 0, "the brokers were asked");
        assert_eq!(broker.tell("recover"), "OK");
        let run = execute(&dir, &broker.url(), &[]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(nothing_quarantined(&dir));
        let read = by_key(broker.read("orders"));
        assert_eq!(read.len(), n);
        assert!(read.values().all(|r| r.len() == 1), "each once");
    }
}

/// 1,500 records taken, then every Produce request fails: the storm guard stops the run within
/// 150 failed requests at --concurrency 8, nothing is charged, and the rest lands after.
#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn the_storm_guard_stops_a_kafka_outage_after_1500_records_within_150_failed_requests() {
    let dir = Dir::new();
    let mut broker = FaultyBroker::start(&["orders"]);
    charge_once_manifest(&dir, 2000);
    assert_eq!(broker.tell("outage-after 1500"), "OK");
    let run = execute(&dir, &broker.url(), &["--concurrency", "8"]);
    assert_eq!(run.code, 4, "{}", run.stderr);
    assert!(run.stderr.contains("storm guard"), "{}", run.stderr);
    let failed: usize = broker.tell("failed").parse().unwrap();
    assert!(failed <= 150, "{failed} failed Produce requests after the outage began");
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(report["outcomes"]["replay_failed"], 0, "{report}");
    assert!(report["outcomes"]["replayed"].as_u64().unwrap() >= 1500, "{report}");
    assert_eq!(broker.tell("recover"), "OK");
    let run = execute(&dir, &broker.url(), &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(nothing_quarantined(&dir));
    let read = by_key(broker.read("orders"));
    assert_eq!(read.len(), 2000);
    assert!(read.values().all(|r| r.len() == 1), "each once");
}

/// Per key, the order its records were read back in (one partition a key: offset order).
fn seqs_by_key(records: &[Value]) -> BTreeMap<String, Vec<u64>> {
    let mut by: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for r in records {
        let value: Value = serde_json::from_str(r["value"].as_str().unwrap()).unwrap();
        by.entry(value["order_id"].as_str().unwrap().to_string()).or_default().push(value["seq"].as_u64().unwrap());
    }
    by
}

/// Keys in failure order, replayed with --ordered while the brokers fail some Produce requests
/// (retried, some left for a rerun): read back, each key's records are in its original order,
/// once each. Unordered, the failure order shows.
#[test]
#[ignore = "needs confluent-kafka's mock broker: make test runs it"]
fn ordered_replay_keeps_each_keys_records_in_order_on_its_partition() {
    let dir = Dir::new();
    let mut broker = FaultyBroker::start(&["orders"]);
    let counts = crate::ordered::failure_order_dump(&dir, 200, 5, "k");
    assert_eq!(broker.tell("fail 40"), "OK");
    let mut runs = 0;
    loop {
        runs += 1;
        let run = execute(&dir, &broker.url(), &["--ordered", "--concurrency", "16"]);
        if run.code == 0 {
            break;
        }
        assert!(runs < 5 && [3, 4].contains(&run.code), "run {runs}: {}", run.stderr);
    }
    let by_key = seqs_by_key(&broker.read("orders"));
    assert_eq!(by_key.len(), counts.len());
    for (key, seqs) in &by_key {
        assert_eq!(*seqs, (0..counts[key] as u64).collect::<Vec<_>>(), "{key}: in order, once each");
    }

    let dir = Dir::new();
    let broker = FaultyBroker::start(&["orders"]);
    crate::ordered::failure_order_dump(&dir, 200, 5, "k");
    assert_eq!(execute(&dir, &broker.url(), &["--concurrency", "16"]).code, 0);
    let out_of_order = seqs_by_key(&broker.read("orders")).values().filter(|s| s.windows(2).any(|w| w[0] > w[1])).count();
    assert!(out_of_order > 20, "unordered: {out_of_order} keys out of order");
}
