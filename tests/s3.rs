//! `s3://` inputs against a real S3-compatible server on loopback (moto, started by
//! `make test`): the same dumps from S3 and from disk give the same reports.

use std::process::Command;

use crate::util::{manifest_entries, python, support, Dir};

fn s3(args: &[&str]) -> Vec<u8> {
    let out = Command::new(python()).arg(support("s3.py")).args(args).output().expect("run s3.py");
    assert!(out.status.success(), "s3.py {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// A bucket of its own for each test.
fn bucket(name: &str) -> String {
    let b = format!("dlqf-{name}-{}", std::process::id());
    s3(&["mkbucket", &b]);
    b
}

fn rank(dir: &Dir, inputs: &[&str]) -> String {
    dir.command().arg("rank").args(inputs).args(["--format", "json"]).ok()
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn dumps_in_s3_rank_exactly_like_the_same_dumps_on_disk() {
    let dir = Dir::new();
    let b = bucket("same");
    dir.gen("local/dt=2026-10-01/part-0.parquet", &["--rows", "3000", "--seed", "31", "--row-group-rows", "700"]);
    dir.gen("local/dt=2026-10-02/part-0.jsonl.gz", &["--rows", "2000", "--seed", "32", "--malformed", "0.01"]);
    dir.gen("local/dt=2026-10-02/part-1.jsonl", &["--rows", "1000", "--seed", "33"]);
    for key in ["dt=2026-10-01/part-0.parquet", "dt=2026-10-02/part-0.jsonl.gz", "dt=2026-10-02/part-1.jsonl"] {
        s3(&["put", &b, &format!("dlq/{key}"), dir.join(&format!("local/{key}")).to_str().unwrap()]);
    }
    s3(&["put", &b, "dlq/dt=2026-10-02/_SUCCESS", dir.join("local/dt=2026-10-02/part-1.jsonl").to_str().unwrap()]);

    let local = rank(&dir, &["local"]);
    let prefix = format!("s3://{b}/dlq/");
    assert_eq!(rank(&dir, &[&prefix]), local, "a prefix reads every dump under it, hive folders included");
    let report: serde_json::Value = serde_json::from_str(&local).unwrap();
    assert_eq!(report["total"].as_u64().unwrap() + report["rejected"].as_u64().unwrap(), 6000);

    let glob = format!("s3://{b}/dlq/dt=2026-10-02/*.jsonl*");
    assert_eq!(rank(&dir, &[&glob]), rank(&dir, &["local/dt=2026-10-02"]));
    let one = format!("s3://{b}/dlq/dt=2026-10-01/part-0.parquet");
    assert_eq!(rank(&dir, &[&one]), rank(&dir, &["local/dt=2026-10-01/part-0.parquet"]));

    // Rejected rows are named by their object.
    let run = dir.command().args(["rank", &glob, "--format", "json"]).run();
    assert!(run.stderr.contains(&format!("s3://{b}/dlq/dt=2026-10-02/part-0.jsonl.gz:")), "{}", run.stderr);

    // Reports can be written to S3.
    let out = format!("s3://{b}/reports/rank.json");
    dir.command().args(["rank", "local", "-o", &out]).ok();
    assert_eq!(String::from_utf8(s3(&["get", &b, "reports/rank.json"])).unwrap(), local);
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn states_of_s3_dumps_record_their_etags_and_merge_from_s3() {
    let dir = Dir::new();
    let b = bucket("states");
    dir.gen("local/dt=2026-10-01/part-0.jsonl", &["--rows", "800", "--seed", "51", "--days", "1"]);
    dir.gen("local/dt=2026-10-02/part-0.parquet", &["--rows", "700", "--seed", "52", "--days", "1", "--start", "2026-10-02"]);
    for key in ["dt=2026-10-01/part-0.jsonl", "dt=2026-10-02/part-0.parquet"] {
        s3(&["put", &b, &format!("dlq/{key}"), dir.join(&format!("local/{key}")).to_str().unwrap()]);
    }
    // Each night's state written straight to S3, then every state under the prefix merged.
    for day in ["2026-10-01", "2026-10-02"] {
        let dumps = format!("s3://{b}/dlq/dt={day}/");
        dir.command().args(["rank", &dumps, "-o", &format!("s3://{b}/states/dt={day}/day.state")]).ok();
    }
    let state = String::from_utf8(s3(&["get", &b, "states/dt=2026-10-01/day.state"])).unwrap();
    let header: serde_json::Value = serde_json::from_str(state.lines().next().unwrap()).unwrap();
    let input = &header["inputs"][0];
    assert_eq!(input["name"], format!("s3://{b}/dlq/dt=2026-10-01/part-0.jsonl"));
    assert!(input["etag"].as_str().is_some_and(|e| !e.is_empty()), "{header}");
    let states = format!("s3://{b}/states/");
    for command in [&["rank"][..], &["trend", "--every", "hour"], &["health"]] {
        let from_states = dir.command().args(command).args([&states, "--format", "json"]).ok();
        assert_eq!(from_states, dir.command().args(command).args(["local", "--format", "json"]).ok(), "{command:?}");
    }
    // The dumps and their states together would count every failure twice.
    let run = dir.command().args(["rank", &states, &format!("s3://{b}/dlq/")]).expect_code(1);
    assert!(run.stderr.contains("covered twice"), "{}", run.stderr);
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn missing_buckets_and_keys_are_errors_naming_the_object_and_never_show_the_secret() {
    let dir = Dir::new();
    let b = bucket("missing");
    let run = dir.command().args(["rank", &format!("s3://{b}/nothing/here.jsonl")]).expect_code(1);
    assert!(run.stderr.contains(&format!("s3://{b}/nothing/here.jsonl")), "{}", run.stderr);
    let run = dir.command().args(["rank", "s3://no-such-bucket-dlqf/dlq/"]).expect_code(1);
    assert!(run.stderr.contains("s3://no-such-bucket-dlqf/dlq/"), "{}", run.stderr);
    let secret = std::env::var("AWS_SECRET_ACCESS_KEY").unwrap();
    assert!(!run.stderr.contains(&secret) && !run.stdout.contains(&secret));
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn a_manifest_can_be_planned_from_and_written_to_s3() {
    let dir = Dir::new();
    let b = bucket("plan");
    dir.gen("dlq.jsonl", &["--rows", "500", "--seed", "34"]);
    s3(&["put", &b, "dlq/dlq.jsonl", dir.join("dlq.jsonl").to_str().unwrap()]);
    dir.create("policy.toml", "cleared_reasons = [\"timeout\"]\n");
    dir.command().args(["plan", "dlq.jsonl", "--policy", "policy.toml", "-o", "local.jsonl"]).ok();
    let url = format!("s3://{b}/manifests/m.jsonl");
    dir.command().args(["plan", &format!("s3://{b}/dlq/"), "--policy", "policy.toml", "-o", &url]).ok();
    let remote = String::from_utf8(s3(&["get", &b, "manifests/m.jsonl"])).unwrap();
    let local = dir.read("local.jsonl");
    assert_eq!(manifest_entries(&remote), manifest_entries(&local), "same entries from S3 as from disk");
    dir.create("remote.jsonl", &remote);
    let show = dir.command().args(["show", "remote.jsonl"]).ok();
    assert!(show.contains("500 entries"), "{show}");
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn a_parquet_dump_in_s3_with_a_big_row_group_plans_as_on_disk() {
    let dir = Dir::new();
    let b = bucket("plan-parquet");
    // One row group more than a part: loaded in two parts from chunks fetched once.
    dir.gen("dlq.parquet", &["--rows", "70000", "--seed", "35", "--row-group-rows", "70000"]);
    s3(&["put", &b, "dlq/dlq.parquet", dir.join("dlq.parquet").to_str().unwrap()]);
    dir.create("policy.toml", "clear_all = true\n");
    dir.command().args(["plan", "dlq.parquet", "--policy", "policy.toml", "-o", "local.jsonl"]).ok();
    dir.command().args(["plan", &format!("s3://{b}/dlq/dlq.parquet"), "--policy", "policy.toml", "-o", "remote.jsonl"]).ok();
    let local = dir.read("local.jsonl");
    assert_eq!(manifest_entries(&local).lines().count(), 70_001, "a newline and 70,000 entries");
    assert!(manifest_entries(&dir.read("remote.jsonl")) == manifest_entries(&local), "same entries from S3 as from disk");
}

/// An s3s-fs server over `dir/store` (buckets are folders), which checks credentials (moto
/// accepts any). Returns the process and its endpoint.
fn start_s3s(dir: &Dir) -> (std::process::Child, String) {
    let s3s = std::env::var("DLQF_S3S_FS").expect("DLQF_S3S_FS is unset: run the tests through `make test`, which installs s3s-fs");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let server = Command::new(s3s)
        .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--access-key", "dlqf-key", "--secret-key", "right-secret-4f2a"])
        .arg(dir.join("store"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start s3s-fs");
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    (server, format!("http://127.0.0.1:{port}"))
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn wrong_credentials_fail_clearly_and_no_secret_is_ever_printed() {
    let dir = Dir::new();
    dir.gen("store/creds/dlq.jsonl", &["--rows", "50", "--seed", "35"]);
    let (mut server, endpoint) = start_s3s(&dir);
    let with = |secret: &str| {
        dir.command()
            .env("AWS_ACCESS_KEY_ID", "dlqf-key")
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env("AWS_ENDPOINT_URL", &endpoint)
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_REGION", "us-east-1")
            .args(["rank", "s3://creds/dlq.jsonl", "--format", "json"])
            .run()
    };
    let good = with("right-secret-4f2a");
    let bad = with("wrong-secret-9c1e");
    server.kill().ok();
    server.wait().ok();
    assert_eq!(good.code, 0, "{}", good.stderr);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&good.stdout).unwrap()["total"], 50);
    assert_eq!(bad.code, 1);
    assert!(bad.stderr.contains("s3://creds/dlq.jsonl"), "{}", bad.stderr);
    assert!(bad.stderr.contains("access denied") && bad.stderr.contains("AWS_SECRET_ACCESS_KEY"), "says why: {}", bad.stderr);
    for run in [&good, &bad] {
        for secret in ["right-secret-4f2a", "wrong-secret-9c1e"] {
            assert!(!run.stderr.contains(secret) && !run.stdout.contains(secret));
        }
    }
}

/// A TCP relay in front of an S3 server that counts the bytes it passes back, and dies
/// (closes every connection and stops listening) once more than `limit` have passed.
struct Relay {
    url: String,
    passed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Relay {
    fn start(upstream: &str, limit: usize) -> Relay {
        use std::io::{Read, Write};
        use std::net::{Shutdown, TcpListener, TcpStream};
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::Arc;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let upstream = upstream.trim_start_matches("http://").to_string();
        let passed = Arc::new(AtomicUsize::new(0));
        let dead = Arc::new(AtomicBool::new(false));
        let counted = passed.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if dead.load(Ordering::SeqCst) {
                    break; // the listener drops: new connections are refused
                }
                let server = TcpStream::connect(&upstream).unwrap();
                let (mut c_in, mut s_out) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut c_in, &mut s_out);
                });
                let (passed, dead) = (counted.clone(), dead.clone());
                std::thread::spawn(move || {
                    let (mut from, mut to) = (server, client);
                    let mut buf = [0u8; 16384];
                    loop {
                        let n = match from.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if dead.load(Ordering::SeqCst) || to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        if passed.fetch_add(n, Ordering::SeqCst).saturating_add(n) > limit {
                            dead.store(true, Ordering::SeqCst);
                            break;
                        }
                    }
                    let _ = to.shutdown(Shutdown::Both);
                    let _ = from.shutdown(Shutdown::Both);
                    // Wake the accept loop so it notices and stops listening.
                    if dead.load(Ordering::SeqCst) {
                        let _ = TcpStream::connect(to.local_addr().unwrap());
                    }
                });
            }
        });
        Relay { url, passed }
    }

    /// Bytes passed back to the client so far.
    fn passed(&self) -> usize {
        self.passed.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn a_server_dying_mid_read_is_an_error_naming_the_object_with_no_report() {
    let dir = Dir::new();
    dir.gen("store/big/dlq.jsonl", &["--rows", "300000", "--seed", "36"]);
    let (mut server, endpoint) = start_s3s(&dir);
    let relay = Relay::start(&endpoint, 20_000_000);
    let run = dir
        .command()
        .env("AWS_ACCESS_KEY_ID", "dlqf-key")
        .env("AWS_SECRET_ACCESS_KEY", "right-secret-4f2a")
        .env("AWS_ENDPOINT_URL", &relay.url)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1")
        .args(["rank", "s3://big/dlq.jsonl", "--format", "json"])
        .run();
    server.kill().ok();
    server.wait().ok();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("s3://big/dlq.jsonl: read error"), "{}", run.stderr);
    assert!(run.stdout.is_empty(), "no partial report");
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn many_small_objects_rank_exactly_like_one_file() {
    let dir = Dir::new();
    let b = bucket("small");
    dir.gen("dlq.jsonl", &["--rows", "5000", "--seed", "37", "--malformed", "0.01"]);
    s3(&["split", &b, "parts", dir.join("dlq.jsonl").to_str().unwrap(), "500"]);
    let local = rank(&dir, &["dlq.jsonl"]);
    let report: serde_json::Value = serde_json::from_str(&local).unwrap();
    assert!(report["rejected"].as_u64().unwrap() > 0);
    assert_eq!(rank(&dir, &[&format!("s3://{b}/parts/")]), local, "500 objects, fetched ahead, in order");
    // Rejected rows are named by their own object and line.
    let run = dir.command().args(["rank", &format!("s3://{b}/parts/"), "--format", "json"]).run();
    assert!(run.stderr.contains(&format!("s3://{b}/parts/part-")), "{}", run.stderr);
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn a_parquet_object_is_read_by_ranges_for_the_columns_needed_not_downloaded() {
    let dir = Dir::new();
    let b = bucket("ranges");
    // 20,000 rows with a 1 KB column of hex noise that no profile field reads.
    dir.gen("base.parquet", &["--rows", "20000", "--seed", "38", "--row-group-rows", "4000"]);
    let script = "import duckdb, sys\nduckdb.sql(f\"COPY (SELECT *, concat_ws('', {', '.join(f'md5(capture_id || {k})' for k in range(32))}) AS blob FROM read_parquet('{sys.argv[1]}')) TO '{sys.argv[2]}' (FORMAT parquet, ROW_GROUP_SIZE 4000)\")";
    let out = Command::new(python()).args(["-c", script]).arg(dir.join("base.parquet")).arg(dir.join("wide.parquet")).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    s3(&["put", &b, "wide.parquet", dir.join("wide.parquet").to_str().unwrap()]);
    let size = std::fs::metadata(dir.join("wide.parquet")).unwrap().len() as usize;

    let relay = Relay::start(&std::env::var("AWS_ENDPOINT_URL").unwrap(), usize::MAX);
    let remote = dir.command().env("AWS_ENDPOINT_URL", &relay.url).args(["rank", &format!("s3://{b}/wide.parquet"), "--format", "json"]).ok();
    assert_eq!(remote, rank(&dir, &["wide.parquet"]));
    let fetched = relay.passed();
    assert!(fetched * 4 < size, "{fetched} bytes fetched of a {size}-byte object: more than the needed columns");
}

#[test]
#[ignore = "needs a loopback S3 server: make test runs it"]
fn a_prefix_in_s3_is_redacted_into_another_as_on_disk() {
    let dir = Dir::new();
    let b = bucket("redact");
    dir.create("key", "a key of more than sixteen bytes");
    dir.gen("local/dt=2026-10-01/part-0.parquet", &["--rows", "800", "--seed", "41"]);
    dir.gen("local/dt=2026-10-02/part-0.jsonl.gz", &["--profile", "envelope", "--rows", "700", "--seed", "42"]);
    for key in ["dt=2026-10-01/part-0.parquet", "dt=2026-10-02/part-0.jsonl.gz"] {
        s3(&["put", &b, &format!("dlq/{key}"), dir.join(&format!("local/{key}")).to_str().unwrap()]);
    }
    dir.command().args(["redact", "local", "--key-file", "key", "-o", "redacted"]).ok();
    let (from, to) = (format!("s3://{b}/dlq/"), format!("s3://{b}/shared/"));
    dir.command().args(["redact", &from, "--key-file", "key", "-o", &to]).ok();
    for key in ["dt=2026-10-01/part-0.parquet", "dt=2026-10-02/part-0.jsonl.gz"] {
        assert_eq!(s3(&["get", &b, &format!("shared/{key}")]), std::fs::read(dir.join(&format!("redacted/{key}"))).unwrap(), "{key}: the same bytes as on disk");
    }
    assert_eq!(rank(&dir, &[&to]), rank(&dir, &["redacted"]));
}
