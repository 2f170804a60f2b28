//! The PostgreSQL ledger: several executors on one manifest share it, a restart of the server
//! is survived, and TLS is spoken as libpq's sslmode asks. `make test` starts a real server on
//! loopback (TLS on, a throwaway CA) and passes its URL and certificate folder.

use std::collections::BTreeMap;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::stage::Stage;
use crate::util::{vision_line, Dir};

fn postgres_url() -> String {
    std::env::var("DLQF_POSTGRES_URL").expect("DLQF_POSTGRES_URL is unset: run the tests through `make test`, which starts PostgreSQL")
}

#[test]
#[ignore = "needs PostgreSQL: make test runs it"]
fn two_executors_at_once_on_one_postgres_ledger_deliver_every_entry_once() {
    let dir = Dir::new();
    let run_id = std::process::id();
    let text: String = (0..400)
        .map(|i| vision_line(&format!("pg-{run_id}-{i:04}"), "s", if i % 5 == 0 { "open" } else { "timeout" }, "v", "2026-10-01T00:00:00Z", 0) + "\n")
        .collect();
    dir.create("dlq.jsonl", text);
    dir.create("policy.toml", "cleared_reasons = [\"timeout\"]\n");
    dir.command().args(["plan", "dlq.jsonl", "--policy", "policy.toml", "-o", "m.jsonl"]).ok();
    let entries: Vec<Value> = dir.read("m.jsonl").lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect();
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().delay = std::time::Duration::from_millis(5);
    let url = postgres_url();
    let args = ["execute", "m.jsonl", "--target", &stage.url, "--ledger", &url, "--quarantine", "file:q.jsonl", "--concurrency", "4"];
    let spawn = || Command::new(env!("CARGO_BIN_EXE_dlqf")).current_dir(dir.path()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success() && b.status.success(), "{}\n{}", String::from_utf8_lossy(&a.stderr), String::from_utf8_lossy(&b.stderr));
    let outcome = |o: &std::process::Output| serde_json::from_slice::<Value>(&o.stdout).unwrap()["outcomes"].clone();
    let (oa, ob) = (outcome(&a), outcome(&b));
    let sum = |f: &str| oa[f].as_u64().unwrap() + ob[f].as_u64().unwrap();
    let replay = entries.iter().filter(|e| e["decision"] == "replay").count() as u64;
    assert_eq!(sum("replayed"), replay, "{oa} {ob}");
    assert_eq!(sum("poison_uncleared"), 400 - replay);
    assert!(oa["replayed"].as_u64().unwrap() > 0 && ob["replayed"].as_u64().unwrap() > 0, "both executors worked: {oa} {ob}");

    let mut per_key: BTreeMap<String, usize> = BTreeMap::new();
    for k in stage.keys() {
        *per_key.entry(k).or_default() += 1;
    }
    assert_eq!(per_key.len() as u64, replay);
    assert!(per_key.values().all(|&n| n == 1), "every entry delivered once");
    let held = dir.read("q.jsonl");
    assert_eq!(held.lines().count() as u64, 400 - replay, "each poison entry quarantined once");

    // A third run on the shared ledger is a no-op; a dry run agrees without writing.
    let again = dir.command().args(args).json();
    assert_eq!(again["outcomes"]["skipped_idempotent"], 400);
    let dry = dir.command().args(args).arg("--dry-run").json();
    assert_eq!(dry["outcomes"]["skipped_idempotent"], 400);
    assert_eq!(stage.keys().len() as u64, replay);
}

/// Two executors replay one failure-order manifest with --ordered on one PostgreSQL ledger:
/// never two messages of one key at the target at once, each key in its original order, each
/// message once.
#[test]
#[ignore = "needs PostgreSQL: make test runs it"]
fn two_ordered_executors_on_one_postgres_ledger_never_send_two_of_a_key_at_once() {
    let dir = Dir::new();
    let counts = crate::ordered::failure_order_dump(&dir, 100, 3, &format!("pg{}", std::process::id()));
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().delay = Duration::from_millis(15);
    let url = postgres_url();
    let args = ["execute", "m.jsonl", "--target", &stage.url, "--ledger", &url, "--quarantine", "file:q.jsonl", "--concurrency", "8", "--ordered"];
    let spawn = || Command::new(env!("CARGO_BIN_EXE_dlqf")).current_dir(dir.path()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success() && b.status.success(), "{}\n{}", String::from_utf8_lossy(&a.stderr), String::from_utf8_lossy(&b.stderr));
    let replayed = |o: &std::process::Output| serde_json::from_slice::<Value>(&o.stdout).unwrap()["outcomes"]["replayed"].as_u64().unwrap();
    assert!(replayed(&a) > 0 && replayed(&b) > 0, "both executors worked");
    assert_eq!(replayed(&a) + replayed(&b), counts.values().sum::<usize>() as u64);
    assert_eq!(stage.seen.lock().unwrap().most_in_flight_of_one_origin_key, 1, "two messages of one key at the target at once");
    let mut by_key: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (_, body) in stage.seen.lock().unwrap().requests.iter() {
        let v: Value = serde_json::from_str(body).unwrap();
        by_key.entry(v["order_id"].as_str().unwrap().to_string()).or_default().push(v["seq"].as_u64().unwrap());
    }
    for (key, seqs) in &by_key {
        assert_eq!(*seqs, (0..counts[key] as u64).collect::<Vec<_>>(), "{key}: in order, once each");
    }
}

#[test]
fn a_wrong_password_fails_clearly_without_printing_it() {
    let dir = Dir::new();
    dir.create("dlq.jsonl", vision_line("x", "s", "timeout", "v", "2026-10-01T00:00:00Z", 0) + "\n");
    dir.create("policy.toml", "cleared_reasons = [\"timeout\"]\n");
    dir.command().args(["plan", "dlq.jsonl", "--policy", "policy.toml", "-o", "m.jsonl"]).ok();
    // Nothing listens on port 1: the connection fails; the password must not appear.
    let run = dir
        .command()
        .args(["execute", "m.jsonl", "--target", "file:t.jsonl", "--ledger", "postgres://dlqf:hunter2secret@127.0.0.1:1/dlqf", "--quarantine", "file:q.jsonl"])
        .expect_code(1);
    assert!(run.stderr.contains("cannot connect"), "{}", run.stderr);
    assert!(!run.stderr.contains("hunter2secret") && !run.stdout.contains("hunter2secret"), "{}", run.stderr);
}

/// A TCP relay in front of PostgreSQL that can be cut: every connection closed and new ones
/// dropped at once, as clients see a server restart.
struct Relay {
    port: u16,
    cut: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(upstream: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (cut, open) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(Vec::new())));
        let (c, o) = (cut.clone(), open.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if c.load(Ordering::SeqCst) {
                    continue; // dropped: the server is "down"
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else { continue };
                o.lock().unwrap().extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                for (mut from, mut to) in [(client.try_clone().unwrap(), server.try_clone().unwrap()), (server, client)] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Relay { port, cut, open }
    }

    /// Closes every connection and refuses new ones for `down`.
    fn restart(&self, down: Duration) {
        self.cut.store(true, Ordering::SeqCst);
        for stream in self.open.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
        std::thread::sleep(down);
        self.cut.store(false, Ordering::SeqCst);
    }
}

fn port_of(url: &str) -> u16 {
    url.rsplit(':').next().unwrap().split('/').next().unwrap().parse().unwrap()
}

#[test]
#[ignore = "needs PostgreSQL: make test runs it"]
fn a_postgres_restart_mid_run_is_survived_and_every_entry_delivered_once() {
    let dir = Dir::new();
    let run_id = std::process::id();
    let text: String =
        (0..600).map(|i| vision_line(&format!("restart-{run_id}-{i:04}"), "s", "timeout", "v", "2026-10-01T00:00:00Z", 0) + "\n").collect();
    dir.create("dlq.jsonl", text);
    dir.create("policy.toml", "cleared_reasons = [\"timeout\"]\n");
    dir.command().args(["plan", "dlq.jsonl", "--policy", "policy.toml", "-o", "m.jsonl"]).ok();
    let url = postgres_url();
    let relay = Relay::start(port_of(&url));
    let via_relay = url.replace(&format!(":{}/", port_of(&url)), &format!(":{}/", relay.port));
    let stage = Stage::start();
    stage.behaviour.lock().unwrap().delay = Duration::from_millis(5);
    let args = ["execute", "m.jsonl", "--target", &stage.url, "--ledger", &via_relay, "--quarantine", "file:q.jsonl", "--concurrency", "4"];
    let child = Command::new(env!("CARGO_BIN_EXE_dlqf")).current_dir(dir.path()).args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while stage.keys().len() < 100 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    relay.restart(Duration::from_secs(2));
    // Both pipes are read while it runs: the report (with its delivered list) outgrows a pipe.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("connection lost") && stderr.contains("reconnected"), "{stderr}");
    let delivered = stage.delivered();
    assert_eq!(delivered.len(), 600);
    assert!(delivered.values().all(|&n| n == 1), "every entry delivered once");
}

/// The URL of the TLS-only role's database.
fn tls_url(query: &str) -> String {
    let url = postgres_url().replacen("://dlqf@", "://dlqf_tls@", 1);
    format!("{}/dlqf_tls?{query}", url.rsplit_once('/').unwrap().0)
}

/// The folder with the server's CA (and an unrelated one).
fn tls_dir() -> String {
    std::env::var("DLQF_POSTGRES_TLS").expect("DLQF_POSTGRES_TLS is unset: run the tests through `make test`, which starts PostgreSQL with TLS")
}

#[test]
#[ignore = "needs PostgreSQL: make test runs it"]
fn the_ledger_speaks_tls_as_sslmode_asks_and_verifies_the_server_when_told_to() {
    let dir = Dir::new();
    let run_id = std::process::id();
    dir.create("dlq.jsonl", vision_line(&format!("tls-{run_id}"), "s", "timeout", "v", "2026-10-01T00:00:00Z", 0) + "\n");
    dir.create("policy.toml", "cleared_reasons = [\"timeout\"]\n");
    dir.command().args(["plan", "dlq.jsonl", "--policy", "policy.toml", "-o", "m.jsonl"]).ok();
    let (ca, other) = (format!("{}/ca.pem", tls_dir()), format!("{}/other-ca.pem", tls_dir()));
    let execute = |ledger: &str| dir.command().args(["execute", "m.jsonl", "--target", "file:t.jsonl", "--ledger", ledger, "--quarantine", "file:q.jsonl", "--dry-run"]).run();

    // The role may only connect over TLS: without it the server refuses.
    let plain = execute(&tls_url("sslmode=disable"));
    assert_eq!(plain.code, 1);
    assert!(plain.stderr.contains("no encryption"), "{}", plain.stderr);
    for ok in [tls_url("sslmode=require"), tls_url(&format!("sslmode=verify-ca&sslrootcert={ca}")), tls_url(&format!("sslmode=verify-full&sslrootcert={ca}"))] {
        let run = execute(&ok);
        assert_eq!(run.code, 0, "{ok}: {}", run.stderr);
    }
    // A CA that did not sign the server's certificate: refused, naming the certificate.
    let run = execute(&tls_url(&format!("sslmode=verify-full&sslrootcert={other}")));
    assert_eq!(run.code, 1);
    assert!(run.stderr.to_lowercase().contains("certificate"), "{}", run.stderr);
    let run = execute(&tls_url("sslmode=verify-full&sslrootcert=/nonexistent/ca.pem"));
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("sslrootcert /nonexistent/ca.pem"), "{}", run.stderr);

    // A real run over verify-full: the ledger records it.
    let full = tls_url(&format!("sslmode=verify-full&sslrootcert={ca}"));
    let run = dir.command().args(["execute", "m.jsonl", "--target", "file:t.jsonl", "--ledger", &full, "--quarantine", "file:q.jsonl"]).run();
    assert_eq!(run.code, 0, "{}", run.stderr);
    let again = dir.command().args(["execute", "m.jsonl", "--target", "file:t.jsonl", "--ledger", &full, "--quarantine", "file:q.jsonl"]).json();
    assert_eq!(again["outcomes"]["skipped_idempotent"], 1);
}
