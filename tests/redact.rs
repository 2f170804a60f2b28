//! `dlqf redact`: planted personal and secret values of every kind, in every place a record
//! holds them, are gone from the output; the output ranks as the input does, is the same bytes
//! under one key and other tokens under another, and `plan` refuses it.

use std::collections::HashMap;

use serde_json::{json, Value};

use crate::util::{python, Dir};

const NAMES: [&str; 4] = ["Jane Doe", "John Roe", "Ana María Pérez", "Li Wei"];
const EMAILS: [&str; 3] = ["jane.doe@example.com", "john.roe+dlq@mail.example.org", "ana@empresa.es"];
const CARDS: [&str; 4] = ["4111 1111 1111 1111", "5500-0000-0000-0004", "378282246310005", "4012888888881881"];
const PHONES: [&str; 4] = ["+1 415 555 0100", "(415) 555-0123", "+44 20 7946 0958", "020 7946 0958"];
const IBANS: [&str; 3] = ["DE89 3704 0044 0532 0130 00", "GB82WEST12345698765432", "FR1420041010050500013M02606"];
const IPS: [&str; 4] = ["203.0.113.7", "198.51.100.23", "2001:db8::8a2e:370:7334", "fe80::1ff:fe23:4567:890a"];
const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";
const BEARERS: [&str; 2] = ["sk_live_4eC39HqLyjWDarjtT1zdp7dc", "abcDEF123456ghiJKL789mno"];
const AWS_KEYS: [&str; 2] = ["AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A"];
const GITHUB: &str = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngPurp0s3s01";
const PASSWORD: &str = "hunter2-correct-horse";

/// A profile of the envelope's layout that names two personal fields, one in the payload.
const PROFILE: &str = r#"
name = "payments"
id = "id"
time = "last_failed_at"
attempts = "retry_count"
personal = ["customer_name", "original_value.customer.name"]

[[signature]]
field = "original_topic"
[[signature]]
field = "error_type"
[[signature]]
field = "error_message"
normalize = "template"
[[signature]]
field = "stack_trace"
normalize = "stack"
required = false

[origin]
topic = "original_topic"
key = "original_key"
value = "original_value"
headers = "original_headers"
"#;

/// `n` records with values planted in the payload, key, headers, a personal field, the
/// message and the trace; and every planted value.
fn planted(n: usize) -> (String, Vec<String>) {
    let mut lines = String::new();
    for i in 0..n {
        let pick = |k: usize, len: usize| (i * 7 + k * 3 + i / 5) % len;
        let (name, email, card, phone) = (NAMES[pick(1, 4)], EMAILS[pick(2, 3)], CARDS[pick(3, 4)], PHONES[pick(4, 4)]);
        let (iban, ip, bearer, aws) = (IBANS[pick(5, 3)], IPS[pick(6, 4)], BEARERS[pick(7, 2)], AWS_KEYS[pick(8, 2)]);
        // Values the payload may not hold: found in the message by their shape alone.
        let (other_email, other_phone, other_iban) = (EMAILS[(pick(2, 3) + 1) % 3], PHONES[(pick(4, 4) + 1) % 4], IBANS[(pick(5, 3) + 1) % 3]);
        let message = match i % 9 {
            0 => format!("card {card} declined for {name}"),
            1 => format!("user {other_email} not allowed from {ip}"),
            2 => format!("Authorization Bearer {bearer} rejected by gateway"),
            3 => format!("access key {aws} denied"),
            4 => format!("could not reach {other_phone} for customer {}", i % 37),
            5 => format!("transfer to IBAN {other_iban} failed: insufficient funds"),
            6 => format!("token {JWT} expired"),
            7 => format!("login failed with password={PASSWORD} and {GITHUB}"),
            _ => format!("timeout after {} ms", 100 + i % 50),
        };
        let trace = format!(
            "Traceback (most recent call last):\n  File \"consumer.py\", line {}, in process_message\n    charge(\"{email}\", \"{card}\")\nValueError: {message}",
            40 + i % 9
        );
        let topic = ["payments", "refunds"][i % 2];
        let record = json!({
            "id": format!("id-{i:05}"), "original_topic": topic, "original_partition": i % 4, "original_offset": 1000 + i,
            "original_key": email,
            "original_value": {"customer": {"name": name, "email": email, "phone": phone}, "card": card.replace([' ', '-'], ""),
                "card_number": card.replace([' ', '-'], "").parse::<u64>().unwrap(), "iban": iban, "amount": (i % 1000) as f64 / 4.0, "note": "leave at the door"},
            "original_headers": {"authorization": format!("Bearer {bearer}"), "x-client-ip": ip, "x-aws-key": aws},
            "customer_name": name, "client_ip": ip,
            "error_type": "ValueError", "error_message": message, "stack_trace": trace,
            "last_failed_at": format!("2026-11-{:02}T10:{:02}:00Z", 1 + i % 28, i % 60), "retry_count": i % 5,
        });
        lines.push_str(&record.to_string());
        lines.push('\n');
    }
    let mut values: Vec<String> = [&NAMES[..], &EMAILS, &CARDS, &PHONES, &IBANS, &IPS, &BEARERS, &AWS_KEYS, &[JWT, GITHUB, PASSWORD]].concat().iter().map(|s| s.to_string()).collect();
    values.extend(CARDS.iter().map(|c| c.replace([' ', '-'], "")));
    (lines, values)
}

/// A ranking as what must survive redaction: totals, and each bucket's count, share, times
/// and example (its signature's text may hold tokens), in no order.
fn ranking(report: &Value) -> (Value, Value, Vec<String>) {
    let mut buckets: Vec<String> = report["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| format!("{} {} {} {} {}", b["count"], b["share"], b["first_seen"], b["last_seen"], b["example_id"]))
        .collect();
    buckets.sort();
    (report["total"].clone(), report["rejected"].clone(), buckets)
}

/// `text` written gzip-compressed to `name` in `dir`.
fn gzip(dir: &Dir, name: &str, text: &str) {
    let mut encoder = flate2::write::GzEncoder::new(std::fs::File::create(dir.join(name)).unwrap(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, text.as_bytes()).unwrap();
    encoder.finish().unwrap();
}

fn redact(dir: &Dir, input: &str, key: &str, out: &str, extra: &[&str]) -> String {
    dir.command().args(extra).args(["redact", input, "--profile", "payments.toml", "--key-file", key, "-o", out]).ok()
}

#[test]
fn planted_values_are_gone_everywhere_and_the_ranking_stays() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("key", "a key of more than sixteen bytes\n");
    let (lines, values) = planted(900);
    dir.create("in/p.jsonl", &lines);
    redact(&dir, "in", "key", "out", &[]);
    let out = dir.read("out/p.jsonl");
    for value in &values {
        assert!(!out.contains(value.as_str()), "{value} is left in the output");
    }
    for kind in ["email_", "card_", "phone_", "iban_", "ip_", "jwt_", "bearer_", "awskey_", "secret_", "name_", "value_", "key_", "header_"] {
        assert!(out.contains(kind), "no {kind} token in the output");
    }
    // The time and what the signature reads as it is stay as written.
    let first: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    assert_eq!(first["last_failed_at"], "2026-11-01T10:00:00Z");
    assert_eq!(first["original_topic"], "payments");
    assert_eq!(first["dlqf_redacted"].as_str().unwrap().len(), "key_".len() + 16);

    let original = dir.command().args(["rank", "in", "--profile", "payments.toml", "--format", "json", "--top", "100000"]).json();
    let redacted = dir.command().args(["rank", "out", "--profile", "payments.toml", "--format", "json", "--top", "100000"]).json();
    assert!(original["buckets"].as_array().unwrap().len() > 40, "the planted values make many buckets");
    assert_eq!(ranking(&original), ranking(&redacted));
}

/// Each bucket's category beside what `ranking` keeps.
fn categories(report: &Value) -> Vec<String> {
    let mut buckets: Vec<String> = report["buckets"].as_array().unwrap().iter().map(|b| format!("{} {} {}", b["example_id"], b["count"], b["category"])).collect();
    buckets.sort();
    buckets
}

/// Given the classification file the output will be ranked with, no token spells what its
/// rules look for. Names in messages become word tokens, which templates keep as words: a
/// file looking for `q` and any letter after it would otherwise move some of 200 names'
/// buckets (none of them with a `q`) to poison.
#[test]
fn a_classification_files_words_are_never_spelled_by_tokens() {
    let dir = Dir::new();
    dir.create("payments.toml", &PROFILE.replace("attempts = \"retry_count\"\n", "attempts = \"retry_count\"\nclassify = { type = \"error_type\", message = \"error_message\" }\n"));
    dir.create("key", "a key of more than sixteen bytes\n");
    let patterns: Vec<String> = (b'a'..=b'z').map(|c| format!("q{}", c as char)).collect();
    dir.create("classes.toml", &format!("[poison]\npatterns = {patterns:?}\n"));
    let (first, last) = (["Ann", "Bo", "Cleo", "Dan", "Eva", "Finn", "Greta", "Hugo", "Ines", "Jon"], ["Berg", "Costa", "Dahl", "Ekström", "Fonseca", "Gupta", "Holm", "Ito", "Jensen", "Kim"]);
    let mut lines = String::new();
    for i in 0..200 {
        let name = format!("{} {}{}", first[i % 10], last[(i / 10) % 10], ["", " Lund"][i / 100]);
        let record = json!({"id": format!("id-{i:03}"), "original_topic": "payments", "error_type": "ValueError", "error_message": format!("card declined for {name}"),
            "customer_name": name, "last_failed_at": format!("2026-11-01T10:{:02}:00Z", i % 60), "retry_count": 1});
        lines.push_str(&format!("{record}\n"));
    }
    assert!(!lines.contains('q'));
    dir.create("in/p.jsonl", &lines);
    dir.command().args(["redact", "in", "--profile", "payments.toml", "--classification", "classes.toml", "--key-file", "key", "-o", "out"]).ok();
    let rank = |input: &str| dir.command().args(["rank", input, "--profile", "payments.toml", "--classification", "classes.toml", "--format", "json", "--top", "100000"]).json();
    let (original, redacted) = (rank("in"), rank("out"));
    assert_eq!(original["buckets"].as_array().unwrap().len(), 200, "a bucket for each name");
    assert!(categories(&original).iter().all(|b| b.ends_with("\"validation\"")), "ValueError is a validation error");
    assert_eq!(ranking(&original), ranking(&redacted));
    assert_eq!(categories(&original), categories(&redacted));
}

#[test]
fn equal_values_stay_equal_and_distinct_ones_distinct() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("key", "a key of more than sixteen bytes");
    let (lines, _) = planted(200);
    dir.create("in/p.jsonl", &lines);
    redact(&dir, "in/p.jsonl", "key", "out", &[]);
    let before: Vec<Value> = lines.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let after: Vec<Value> = dir.read("out/p.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(before.len(), after.len());
    for field in ["original_key", "customer_name", "client_ip"] {
        let mut tokens: HashMap<&Value, &Value> = HashMap::new();
        let mut back: HashMap<&Value, &Value> = HashMap::new();
        for (b, a) in before.iter().zip(&after) {
            assert_ne!(b[field], a[field], "{field} is replaced");
            assert_eq!(*tokens.entry(&b[field]).or_insert(&a[field]), &a[field], "one {field} gets one token");
            assert_eq!(*back.entry(&a[field]).or_insert(&b[field]), &b[field], "two {field}s get two tokens");
        }
        assert!(tokens.len() > 1);
    }
    // Structure, names and types of the payload stay.
    for (b, a) in before.iter().zip(&after) {
        let (b, a) = (&b["original_value"], &a["original_value"]);
        assert!(a["card_number"].is_u64() && a["amount"].is_f64() && a["customer"]["name"].is_string());
        assert_eq!(a["card_number"].to_string().len(), b["card_number"].to_string().len());
        assert_eq!(a.as_object().unwrap().keys().collect::<Vec<_>>(), b.as_object().unwrap().keys().collect::<Vec<_>>());
    }
}

#[test]
fn one_key_gives_the_same_bytes_on_any_thread_count_and_another_key_other_tokens() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("key", "a key of more than sixteen bytes");
    dir.create("other", "another key, also long enough");
    let (lines, _) = planted(3000);
    dir.create("in/p.jsonl", &lines);
    gzip(&dir, "in/p2.jsonl.gz", &lines);

    redact(&dir, "in", "key", "a", &["--threads", "1"]);
    redact(&dir, "in", "key", "b", &["--threads", "3"]);
    redact(&dir, "in", "other", "c", &[]);
    for name in ["p.jsonl", "p2.jsonl.gz"] {
        let (a, b, c) = (std::fs::read(dir.join(&format!("a/{name}"))).unwrap(), std::fs::read(dir.join(&format!("b/{name}"))).unwrap(), std::fs::read(dir.join(&format!("c/{name}"))).unwrap());
        assert_eq!(a, b, "{name}: the same bytes");
        assert_ne!(a, c, "{name}: another key");
    }
    // Compressed as the input was, holding the same records as the plain file's.
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(std::fs::File::open(dir.join("a/p2.jsonl.gz")).unwrap()), &mut text).unwrap();
    assert_eq!(text, dir.read("a/p.jsonl"));
    let first = |name: &str| -> Value { serde_json::from_str(dir.read(name).lines().next().unwrap()).unwrap() };
    assert_ne!(first("a/p.jsonl")["original_key"], first("c/p.jsonl")["original_key"]);
    assert_ne!(first("a/p.jsonl")["dlqf_redacted"], first("c/p.jsonl")["dlqf_redacted"], "the marker names the key");
}

#[test]
fn a_line_that_is_not_json_is_named_and_stays_rejected_without_its_text() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("key", "a key of more than sixteen bytes");
    let (lines, _) = planted(20);
    let broken = "{\"id\": \"id-x\", \"customer_name\": \"Jane Doe\", \"original_key\": \"jane.doe@example.com\"";
    dir.create("in/p.jsonl", format!("{lines}{broken}\n\n{lines}"));
    let run = dir.command().args(["redact", "in", "--profile", "payments.toml", "--key-file", "key", "-o", "out"]).expect_code(0);
    assert!(run.stderr.contains("in/p.jsonl:21: not JSON"), "{}", run.stderr);
    let out = dir.read("out/p.jsonl");
    assert_eq!(out.lines().count(), 42, "every line has its line");
    assert!(!out.contains("Jane Doe") && !out.contains("jane.doe@example.com"));
    let original = dir.command().args(["rank", "in", "--profile", "payments.toml", "--format", "json"]).json();
    let redacted = dir.command().args(["rank", "out", "--profile", "payments.toml", "--format", "json"]).json();
    assert_eq!(original["rejected"], 1);
    assert_eq!(ranking(&original), ranking(&redacted));
}

/// Lines far into a file, where its lines are redacted by several tasks, are numbered as
/// the file numbers them, whether the file is read where it lies or as a gzip stream; the
/// lines around them keep their places.
#[test]
fn lines_that_are_not_json_are_numbered_across_the_tasks_of_a_file() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("key", "a key of more than sixteen bytes");
    let (lines, _) = planted(2500);
    let text = format!("{lines}not json at all\n{lines}{lines}{{\"id\": \"cut short\"\n{lines}");
    let bad = [2501, 7502];
    assert!(text.len() > 4 << 20, "several tasks' worth: {}", text.len());
    dir.create("in/p.jsonl", &text);
    gzip(&dir, "in/q.jsonl.gz", &text);
    let run = dir.command().args(["redact", "in", "--profile", "payments.toml", "--key-file", "key", "-o", "out"]).expect_code(0);
    for name in ["in/p.jsonl", "in/q.jsonl.gz"] {
        let named: Vec<&str> = run.stderr.lines().filter(|l| l.contains(&format!("{name}:"))).collect();
        assert_eq!(named.len(), 2, "{}", run.stderr);
        for (line, n) in named.iter().zip(bad) {
            assert!(line.contains(&format!("{name}:{n}: not JSON")), "{line}");
        }
    }
    let out = dir.read("out/p.jsonl");
    assert_eq!(out.lines().count(), text.lines().count());
    for (i, line) in out.lines().enumerate() {
        let stub = line.starts_with("{\"dlqf_redacted_line\"");
        assert_eq!(stub, bad.contains(&(i + 1)), "line {}", i + 1);
    }
}

#[test]
fn plan_refuses_a_redacted_dump() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("key", "a key of more than sixteen bytes");
    let (lines, _) = planted(30);
    dir.create("in/p.jsonl", &lines);
    redact(&dir, "in", "key", "out", &[]);
    dir.command().args(["plan", "in", "--profile", "payments.toml", "-o", "m.jsonl"]).ok();
    let run = dir.command().args(["plan", "out", "--profile", "payments.toml", "-o", "m2.jsonl"]).expect_code(1);
    assert!(run.stderr.contains("written by `dlqf redact`") && run.stderr.contains("cannot be replayed"), "{}", run.stderr);
    assert!(!dir.join("m2.jsonl").exists(), "no manifest written");
}

#[test]
fn a_short_key_an_output_over_an_input_and_two_inputs_on_one_name_are_usage_errors() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("short", "tiny\n");
    dir.create("key", "a key of more than sixteen bytes");
    let (lines, _) = planted(3);
    dir.create("in/p.jsonl", &lines);
    dir.create("in2/p.jsonl", &lines);
    let run = dir.command().args(["redact", "in", "--profile", "payments.toml", "--key-file", "short", "-o", "out"]).expect_code(2);
    assert!(run.stderr.contains("at least 16 bytes"), "{}", run.stderr);
    let run = dir.command().args(["redact", "in", "--profile", "payments.toml", "--key-file", "key", "-o", "in"]).expect_code(2);
    assert!(run.stderr.contains("would overwrite"), "{}", run.stderr);
    let run = dir.command().args(["redact", "in", "in2", "--profile", "payments.toml", "--key-file", "key", "-o", "out"]).expect_code(2);
    assert!(run.stderr.contains("would both be written"), "{}", run.stderr);
}

#[test]
#[ignore = "needs the test venv's pyarrow: make test runs it"]
fn parquet_in_parquet_out_read_back_by_pyarrow() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("key", "a key of more than sixteen bytes");
    let (lines, values) = planted(600);
    dir.create("p.jsonl", &lines);
    std::fs::create_dir_all(dir.join("in")).unwrap();
    let script = "import sys, pyarrow.json as pj, pyarrow.parquet as pq\npq.write_table(pj.read_json(sys.argv[1]), sys.argv[2], compression='zstd')\n";
    let status = std::process::Command::new(python()).args(["-c", script, "p.jsonl", "in/p.parquet"]).current_dir(dir.path()).status().unwrap();
    assert!(status.success());
    redact(&dir, "in", "key", "out", &[]);
    let read = "import sys, json, pyarrow.parquet as pq\nf = pq.ParquetFile(sys.argv[1])\nmeta = {k.decode(): v.decode() for k, v in f.metadata.metadata.items() if not k.startswith(b'ARROW')}\nprint(json.dumps({'meta': meta, 'codec': f.metadata.row_group(0).column(0).compression, 'rows': f.read().to_pylist()}, default=str))\n";
    let out = std::process::Command::new(python()).args(["-c", read, "out/p.parquet"]).current_dir(dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    for value in &values {
        assert!(!text.contains(value.as_str()), "{value} is left in the Parquet output");
    }
    let read_back: Value = serde_json::from_str(&text).unwrap();
    assert!(read_back["meta"]["dlqf_redacted"].as_str().unwrap().starts_with("key_"));
    assert_eq!(read_back["codec"], "ZSTD");
    let rows = read_back["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 600);
    assert_eq!(rows[0]["original_topic"], "payments");
    assert!(rows[0]["original_value"]["card_number"].is_u64());

    let original = dir.command().args(["rank", "in", "--profile", "payments.toml", "--format", "json", "--top", "100000"]).json();
    let redacted = dir.command().args(["rank", "out", "--profile", "payments.toml", "--format", "json", "--top", "100000"]).json();
    assert_eq!(ranking(&original), ranking(&redacted));
    let run = dir.command().args(["plan", "out", "--profile", "payments.toml", "-o", "m.jsonl"]).expect_code(1);
    assert!(run.stderr.contains("written by `dlqf redact`"), "{}", run.stderr);
}

#[test]
fn coarsened_times_are_whole_periods_and_the_counts_stay() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("key", "a key of more than sixteen bytes");
    let (lines, _) = planted(300);
    dir.create("in/p.jsonl", &lines);
    dir.command().args(["redact", "in", "--profile", "payments.toml", "--key-file", "key", "--coarsen-times", "24", "-o", "out"]).ok();
    let out = dir.read("out/p.jsonl");
    for (before, after) in lines.lines().zip(out.lines()) {
        let (before, after): (Value, Value) = (serde_json::from_str(before).unwrap(), serde_json::from_str(after).unwrap());
        let day = &before["last_failed_at"].as_str().unwrap()[..10];
        assert_eq!(after["last_failed_at"], format!("{day}T00:00:00Z"));
    }
    let counts = |input: &str| {
        let report = dir.command().args(["rank", input, "--profile", "payments.toml", "--format", "json", "--top", "100000"]).json();
        let mut counts: Vec<u64> = report["buckets"].as_array().unwrap().iter().map(|b| b["count"].as_u64().unwrap()).collect();
        counts.sort();
        counts
    };
    assert_eq!(counts("in"), counts("out"));
}

#[test]
fn a_cards_last_four_are_kept_only_where_the_profile_says() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("last4.toml", PROFILE.replace("personal = [", "keep_card_last_four = true\npersonal = ["));
    dir.create("key", "a key of more than sixteen bytes");
    let (lines, _) = planted(20);
    dir.create("in/p.jsonl", &lines);
    redact(&dir, "in", "key", "plain", &[]);
    dir.command().args(["redact", "in", "--profile", "last4.toml", "--key-file", "key", "-o", "last4"]).ok();
    let (plain, last4) = (dir.read("plain/p.jsonl"), dir.read("last4/p.jsonl"));
    let card = |text: &str| text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| w.starts_with("card_") && *w != "card_number").map(str::to_string).collect::<Vec<_>>();
    assert!(card(&plain).iter().all(|t| t.len() == "card_".len() + 16), "{:?}", card(&plain));
    let kept = card(&last4);
    // A card written in groups is a token a group, the last one ending in the last four.
    assert!(!kept.is_empty() && kept.iter().all(|t| t.len() == "card_".len() + 16 || t.len() == "card_".len() + 16 + 5));
    assert!(last4.lines().all(|line| card(line).last().is_none_or(|t| t.len() == "card_".len() + 16 + 5)), "{last4}");
    assert!(kept.iter().any(|t| t.ends_with("_1111")) && kept.iter().any(|t| t.ends_with("_0004")), "{kept:?}");
    for full in CARDS {
        assert!(!last4.contains(full) && !last4.contains(&full.replace([' ', '-'], "")));
    }
}

#[test]
fn one_email_is_one_token_in_the_payload_the_key_and_another_records_message() {
    let dir = Dir::new();
    dir.create("payments.toml", PROFILE);
    dir.create("key", "a key of more than sixteen bytes");
    let record = |id: &str, email: &str, message: &str| {
        json!({"id": id, "original_topic": "t", "original_key": email, "original_value": {"email": email}, "error_type": "E",
               "error_message": message, "last_failed_at": "2026-11-01T00:00:00Z"})
        .to_string()
    };
    let lines = [record("a", "jane.doe@example.com", "no such user"), record("b", "x@example.org", "user jane.doe@example.com is locked")].join("\n");
    dir.create("in/p.jsonl", lines + "\n");
    redact(&dir, "in", "key", "out", &[]);
    let out: Vec<Value> = dir.read("out/p.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let token = out[0]["original_value"]["email"].as_str().unwrap();
    assert!(token.starts_with("email_"), "{token}");
    assert_eq!(out[0]["original_key"], token);
    assert_eq!(out[1]["error_message"], format!("user {token} is locked"));
}
